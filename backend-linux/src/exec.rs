//! A [`BackendTarget::Exec`](counterhal_hal::BackendTarget::Exec) checked before counters open on it.

#[cfg(feature = "command")]
use counterhal_hal::Error;
use counterhal_hal::Result;

/// A [`BackendTarget::Exec`](counterhal_hal::BackendTarget::Exec) pid, checked: a child of this process (held before `exec` by a
/// [`WaitingChild`](counterhal_process::WaitingChild)), never this process or init, whose
/// counters would start at some later exec of a process this caller does not control.
#[cfg(feature = "command")]
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

/// A build without the `command` feature counts no command held before exec: asking names it.
#[cfg(not(feature = "command"))]
pub(crate) fn exec_child(_pid: u32) -> Result<u32> {
    Err(crate::left_out::left_out(
        "counting a command held before exec",
        "command",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Init is no command held before exec; a build without the `command` feature refuses
    /// every such target, naming the feature.
    #[test]
    fn init_is_refused_and_a_build_without_commands_names_its_feature() {
        let refused = exec_child(1).unwrap_err();
        let expected = match cfg!(feature = "command") {
            true => "process 1 (init) cannot be a BackendTarget::Exec",
            false => "it needs counterhal's `command` feature",
        };
        assert!(refused.to_string().contains(expected), "{refused}");
    }
}
