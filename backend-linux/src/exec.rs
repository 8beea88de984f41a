//! A [`BackendTarget::Exec`](counterhal_hal::BackendTarget::Exec) checked before counters open on it.

use counterhal_hal::{Error, Result};

/// A [`BackendTarget::Exec`](counterhal_hal::BackendTarget::Exec) pid, checked: a child of this process (held before `exec` by a
/// [`WaitingChild`](counterhal_process::WaitingChild)), never this process or init, whose
/// counters would start at some later exec of a process this caller does not control.
pub(crate) fn exec_child(pid: u32) -> Result<u32> {
    let hint = "BackendTarget::Exec is a command held before exec: spawn it with WaitingChild and use \
                its target(); for a running process use BackendTarget::process(pid)";
    if pid == std::process::id() || pid == 1 {
        let who = if pid == 1 {
            "init"
        } else {
            "this process itself"
        };
        return Err(Error::invalid_input(format!(
            "process {pid} ({who}) cannot be a BackendTarget::Exec"
        ))
        .with_hint(hint));
    }
    match counterhal_process::is_child_of_this_process(pid) {
        Ok(false) => Err(Error::invalid_input(format!(
            "process {pid} is not a child of this process, so it is no command held before exec"
        ))
        .with_hint(hint)),
        Ok(true) | Err(_) => Ok(pid),
    }
}
