//! Process limits and facts: the descriptor limit, the user id and the CPU count (the
//! measured command itself is counterhal-process's), and mounting tracefs. See the parent
//! module's `# Safety` note.

use super::os_error::{Errno, last_errno};

/// How many CPUs the system may have (`_SC_NPROCESSORS_CONF`).
pub fn configured_cpus() -> u32 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    if n > 0 { n as u32 } else { 1 }
}

/// The effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail and has no preconditions.
    unsafe { libc::geteuid() }
}

/// The soft and hard `RLIMIT_NOFILE`.
pub fn fd_limit() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    let ptr: *mut libc::rlimit = &mut limit;
    // SAFETY: getrlimit writes one rlimit through a valid pointer.
    let ret = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, ptr) };
    (ret == 0).then_some((limit.rlim_cur, limit.rlim_max))
}

/// Mounts tracefs at `target` (a system's `kernel/tracing`), as perf does when it finds it
/// absent (root only).
///
/// # Errors
/// The errno of `mount` (EINVAL for a path with a NUL byte).
pub fn mount_tracefs(target: &std::path::Path) -> Result<(), Errno> {
    use std::os::unix::ffi::OsStrExt;
    let target = std::ffi::CString::new(target.as_os_str().as_bytes()).map_err(|_| libc::EINVAL)?;
    // SAFETY: every pointer is a NUL-terminated string that outlives the call; tracefs takes
    // no data.
    let ret = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if ret < 0 { Err(last_errno()) } else { Ok(()) }
}

/// Keeps the calling thread on CPU `cpu` (`sched_setaffinity`), for tests that run a BPF
/// program on the CPU they are on.
///
/// # Errors
/// The errno of `sched_setaffinity` (EINVAL for a CPU not online).
#[cfg(test)]
pub fn pin_thread_to(cpu: u32) -> Result<(), Errno> {
    if cpu as usize >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
        return Err(libc::EINVAL);
    }
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit inside `set`; `cpu` is below its size (checked above).
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    let ptr: *const libc::cpu_set_t = &set;
    // SAFETY: sched_setaffinity reads one cpu_set_t through a valid pointer; 0 is the
    // calling thread.
    let ret = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), ptr) };
    if ret == 0 { Ok(()) } else { Err(last_errno()) }
}
