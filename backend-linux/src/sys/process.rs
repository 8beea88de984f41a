//! Processes and limits: the child that waits before `exec`, `wait4`, signals, pipes, the
//! descriptor limit, the user id and the CPU count. See the parent module's `# Safety` note.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

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

/// A child created by [`fork_waiting`]: stopped before `exec` until released.
#[derive(Debug)]
pub struct ForkedChild {
    /// Its process id.
    pub pid: i32,
    /// Writing one byte here lets it exec; closing it without writing makes it exit 127.
    pub release: OwnedFd,
    /// Reads EOF when the exec succeeded, or the child's errno (4 bytes) when it failed.
    pub exec_status: OwnedFd,
}

fn pipe_cloexec() -> Result<(OwnedFd, OwnedFd), Errno> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two fds into the valid 2-element array.
    let ret = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if ret < 0 {
        return Err(last_errno());
    }
    // SAFETY: the kernel just created fds[0]; nothing else owns it.
    let read = unsafe { OwnedFd::from_raw_fd(fds[0]) };
    // SAFETY: the kernel just created fds[1]; nothing else owns it.
    let write = unsafe { OwnedFd::from_raw_fd(fds[1]) };
    Ok((read, write))
}

/// Forks a child that waits on a pipe, then `execv(program, argv)` (environment inherited).
///
/// # Errors
/// The errno of `pipe2` or `fork`.
pub fn fork_waiting(program: &CStr, argv: &[CString]) -> Result<ForkedChild, Errno> {
    let (release_read, release_write) = pipe_cloexec()?;
    let (status_read, status_write) = pipe_cloexec()?;
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    pointers.push(std::ptr::null());
    let release_read_fd = release_read.as_raw_fd();
    let release_write_fd = release_write.as_raw_fd();
    let status_read_fd = status_read.as_raw_fd();
    let status_write_fd = status_write.as_raw_fd();

    // SAFETY: the child runs only async-signal-safe calls on memory prepared above.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(last_errno());
    }
    if pid == 0 {
        child_after_fork(
            release_read_fd,
            release_write_fd,
            status_read_fd,
            status_write_fd,
            program,
            &pointers,
        );
    }
    drop(release_read);
    drop(status_write);
    Ok(ForkedChild {
        pid,
        release: release_write,
        exec_status: status_read,
    })
}

/// The child's side: wait for the release byte, exec, report exec's errno. Never returns.
fn child_after_fork(
    release_read: i32,
    release_write: i32,
    status_read: i32,
    status_write: i32,
    program: &CStr,
    argv: &[*const libc::c_char],
) -> ! {
    // SAFETY: closing the parent's pipe ends in the child, which owns its copies.
    unsafe { libc::close(release_write) };
    // SAFETY: as above.
    unsafe { libc::close(status_read) };
    let mut byte = 0u8;
    let got = loop {
        let ptr: *mut u8 = &mut byte;
        // SAFETY: reads at most one byte into a live local.
        let n = unsafe { libc::read(release_read, ptr.cast(), 1) };
        // Reading errno allocates nothing and is async-signal-safe.
        if n < 0 && last_errno() == libc::EINTR {
            continue;
        }
        break n;
    };
    if got == 1 {
        // SAFETY: `program` and `argv` (NULL-terminated) were built before the fork and stay
        // valid; execv only returns on failure.
        unsafe { libc::execv(program.as_ptr(), argv.as_ptr()) };
        let errno = last_errno();
        let bytes = errno.to_ne_bytes();
        // SAFETY: writes 4 bytes from a live local to a pipe the child owns.
        unsafe { libc::write(status_write, bytes.as_ptr().cast(), bytes.len()) };
    }
    // SAFETY: _exit is async-signal-safe and ends the child without running atexit handlers.
    unsafe { libc::_exit(127) }
}

/// `wait4(pid)`: the raw wait status and the child's user and system time in microseconds.
///
/// # Errors
/// The errno.
pub fn wait4(pid: i32) -> Result<(i32, u64, u64), Errno> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let status_ptr: *mut i32 = &mut status;
        let usage_ptr: *mut libc::rusage = &mut usage;
        // SAFETY: both pointers are valid for writes for the call.
        let ret = unsafe { libc::wait4(pid, status_ptr, 0, usage_ptr) };
        if ret >= 0 {
            break;
        }
        let errno = last_errno();
        if errno != libc::EINTR {
            return Err(errno);
        }
    }
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Ok((status, micros(usage.ru_utime), micros(usage.ru_stime)))
}

/// While alive, this process ignores SIGINT and SIGQUIT; dropping it restores what was there.
///
/// `perf stat -- cmd` does this: the user's Ctrl-C reaches the measured command (already
/// running with its own dispositions), and the counts can still be read and printed.
pub struct IgnoreInterrupts {
    saved: Vec<(libc::c_int, libc::sigaction)>,
}

impl IgnoreInterrupts {
    /// Starts ignoring SIGINT and SIGQUIT (a signal whose disposition cannot be read is left
    /// alone).
    pub fn start() -> IgnoreInterrupts {
        let mut saved = Vec::new();
        for signal in [libc::SIGINT, libc::SIGQUIT] {
            // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
            let mut ignore: libc::sigaction = unsafe { std::mem::zeroed() };
            ignore.sa_sigaction = libc::SIG_IGN;
            // SAFETY: as above.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: both pointers are valid for the call; SIG_IGN needs no handler code.
            if unsafe { libc::sigaction(signal, &ignore, &mut old) } == 0 {
                saved.push((signal, old));
            }
        }
        IgnoreInterrupts { saved }
    }
}

impl Drop for IgnoreInterrupts {
    fn drop(&mut self) {
        for (signal, old) in &self.saved {
            // SAFETY: `old` is the disposition sigaction reported for this signal.
            unsafe { libc::sigaction(*signal, old, std::ptr::null_mut()) };
        }
    }
}

/// Sends SIGKILL to `pid` (errors ignored: the child may be gone already).
pub fn kill(pid: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Writes `bytes` to `fd`.
///
/// # Errors
/// The errno.
pub fn write_all(fd: BorrowedFd<'_>, bytes: &[u8]) -> Result<(), Errno> {
    // SAFETY: `bytes` is valid for reads of its length; `fd` is open for the call.
    let ret = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    if ret < 0 { Err(last_errno()) } else { Ok(()) }
}

/// Reads up to `buf.len()` bytes from `fd` (EINTR retried).
///
/// # Errors
/// The errno.
pub fn read_bytes(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    loop {
        // SAFETY: `buf` is valid for writes of its length; `fd` is open for the call.
        let ret = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if ret >= 0 {
            return Ok(ret as usize);
        }
        let errno = last_errno();
        if errno != libc::EINTR {
            return Err(errno);
        }
    }
}
