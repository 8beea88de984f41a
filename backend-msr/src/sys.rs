//! Everything `unsafe` in this crate: thread pinning.
//!
//! # Safety
//! Each function here wraps one foreign call whose preconditions are met locally: the libc
//! calls get pointers to live, correctly sized values owned by the caller's stack frame. Nothing here
//! hands out raw pointers or file descriptors. MSR access itself needs no `unsafe`: it is
//! `pread`/`pwrite` on a file, through `std::os::unix::fs::FileExt`.

/// A thread's CPU affinity, saved to be restored.
#[cfg(target_os = "linux")]
pub(crate) struct Affinity {
    thread: libc::pid_t,
    mask: libc::cpu_set_t,
}

#[cfg(target_os = "linux")]
impl std::fmt::Debug for Affinity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Affinity {{ thread: {} }}", self.thread)
    }
}

/// The calling thread's id (`gettid`).
#[cfg(target_os = "linux")]
pub(crate) fn current_thread() -> libc::pid_t {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as libc::pid_t }
}

/// Pins the calling thread to the CPU it runs on now; returns that CPU and the affinity to
/// restore.
#[cfg(target_os = "linux")]
pub(crate) fn pin_current_thread() -> std::io::Result<(u32, Affinity)> {
    let thread = current_thread();
    // SAFETY: cpu_set_t is plain data for which all-zero bytes are a valid (empty) set.
    let mut saved: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `saved` is a live cpu_set_t of `size` bytes that the call fills.
    if unsafe { libc::sched_getaffinity(thread, size, &mut saved) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    let cpu = u32::try_from(cpu).map_err(|_| std::io::Error::last_os_error())?;
    // SAFETY: as above, all-zero bytes are an empty set.
    let mut only: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit inside `only`; `cpu` comes from the kernel and is below
    // CPU_SETSIZE on any system whose affinity mask fits a cpu_set_t.
    unsafe { libc::CPU_SET(cpu as usize, &mut only) };
    // SAFETY: `only` is a live cpu_set_t of `size` bytes that the call reads.
    if unsafe { libc::sched_setaffinity(thread, size, &only) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((
        cpu,
        Affinity {
            thread,
            mask: saved,
        },
    ))
}

/// Restores a saved affinity (from any thread of the process).
#[cfg(target_os = "linux")]
pub(crate) fn restore_affinity(affinity: &Affinity) -> std::io::Result<()> {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `affinity.mask` is a live cpu_set_t of `size` bytes that the call reads.
    if unsafe { libc::sched_setaffinity(affinity.thread, size, &affinity.mask) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The CPUs the calling thread may run on, lowest first.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn current_affinity() -> std::io::Result<Vec<u32>> {
    // SAFETY: all-zero bytes are an empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a live cpu_set_t of `size` bytes that the call fills.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let cpus = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads one bit of a live set; the index is below CPU_SETSIZE.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .map(|cpu| cpu as u32)
        .collect();
    Ok(cpus)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use counterhal_conformance::skip::Need;

    #[test]
    fn pin_and_restore() {
        let before = super::current_affinity().unwrap();
        let (cpu, saved) = match super::pin_current_thread() {
            Ok(pinned) => pinned,
            Err(error) => counterhal_conformance::skip!(
                Need::Privilege,
                "cannot change affinity here: {error}"
            ),
        };
        assert_eq!(super::current_affinity().unwrap(), vec![cpu]);
        assert!(before.contains(&cpu));
        super::restore_affinity(&saved).unwrap();
        assert_eq!(super::current_affinity().unwrap(), before);
    }
}
