//! The system calls behind a measured command: pipes, `fork` and `exec`, `wait4`, `kill`,
//! `sigaction`. Everything `unsafe` in this crate is here.
//!
//! # Safety
//!
//! The invariants every `unsafe` block here relies on:
//! - Pointers passed to the kernel point at live locals or at buffers valid for the length
//!   passed with them, for the duration of the call.
//! - File descriptors are passed in as [`BorrowedFd`] (open for the call) and returned as
//!   [`OwnedFd`] (created by the kernel in that call, owned by exactly one value).
//! - After `fork` the child calls only async-signal-safe functions (`close`, `read`, `write`,
//!   `sigprocmask`, `sigaction`, `execv`, `_exit`) on data prepared before the fork.
//! - The signal handler calls only `kill`, which is async-signal-safe, and reads only atomics.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use std::sync::atomic::AtomicI32;

/// An OS error number (`errno`).
pub type Errno = i32;

/// The calling thread's `errno` after a failed system call.
fn last_errno() -> Errno {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
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
    if raw_pipe_cloexec(&mut fds) < 0 {
        return Err(last_errno());
    }
    // SAFETY: the kernel just created fds[0]; nothing else owns it.
    let read = unsafe { OwnedFd::from_raw_fd(fds[0]) };
    // SAFETY: the kernel just created fds[1]; nothing else owns it.
    let write = unsafe { OwnedFd::from_raw_fd(fds[1]) };
    Ok((read, write))
}

#[cfg(not(target_vendor = "apple"))]
fn raw_pipe_cloexec(fds: &mut [i32; 2]) -> libc::c_int {
    // SAFETY: pipe2 writes two fds into the valid 2-element array.
    unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }
}

/// macOS has no `pipe2`: a pipe, then close-on-exec on each end (no other thread of this
/// crate forks meanwhile).
#[cfg(target_vendor = "apple")]
fn raw_pipe_cloexec(fds: &mut [i32; 2]) -> libc::c_int {
    // SAFETY: pipe writes two fds into the valid 2-element array.
    let ret = unsafe { libc::pipe(fds.as_mut_ptr()) };
    if ret == 0 {
        for fd in *fds {
            // SAFETY: fcntl on an fd just created; F_SETFD takes an int argument.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
    }
    ret
}

/// Forks a child that waits on a pipe, then `execv(program, argv)` (environment inherited),
/// with `SIGPIPE` at its default and an empty signal mask, as a shell starts a command.
///
/// # Errors
/// The errno of `pipe2` or `fork`.
pub fn fork_waiting(program: &CStr, argv: &[CString]) -> Result<ForkedChild, Errno> {
    let (release_read, release_write) = pipe_cloexec()?;
    let (status_read, status_write) = pipe_cloexec()?;
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    pointers.push(std::ptr::null());
    let fds = ChildFds {
        release_read: release_read.as_raw_fd(),
        release_write: release_write.as_raw_fd(),
        status_read: status_read.as_raw_fd(),
        status_write: status_write.as_raw_fd(),
    };

    // SAFETY: the child runs only async-signal-safe calls on memory prepared above.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(last_errno());
    }
    if pid == 0 {
        child_after_fork(&fds, program, &pointers);
    }
    drop(release_read);
    drop(status_write);
    Ok(ForkedChild {
        pid,
        release: release_write,
        exec_status: status_read,
    })
}

/// The pipe ends as the child sees them after the fork.
struct ChildFds {
    release_read: i32,
    release_write: i32,
    status_read: i32,
    status_write: i32,
}

/// The child's side: restore the signal state a command expects, wait for the release byte,
/// exec, report exec's errno. Never returns.
fn child_after_fork(fds: &ChildFds, program: &CStr, argv: &[*const libc::c_char]) -> ! {
    // SAFETY: closing the parent's pipe ends in the child, which owns its copies.
    unsafe { libc::close(fds.release_write) };
    // SAFETY: as above.
    unsafe { libc::close(fds.status_read) };
    restore_signals_for_exec();
    let mut byte = 0u8;
    let got = loop {
        let ptr: *mut u8 = &mut byte;
        // SAFETY: reads at most one byte into a live local.
        let n = unsafe { libc::read(fds.release_read, ptr.cast(), 1) };
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
        unsafe { libc::write(fds.status_write, bytes.as_ptr().cast(), bytes.len()) };
    }
    // SAFETY: _exit is async-signal-safe and ends the child without running atexit handlers.
    unsafe { libc::_exit(127) }
}

/// In the child before `exec`: `SIGPIPE` back to its default (Rust's runtime ignores it, and
/// an ignored signal stays ignored across `exec`, so `cmd | head` would never end) and no
/// signal blocked. Handlers need no reset: `exec` resets every handled signal to its default.
fn restore_signals_for_exec() {
    // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
    let mut default: libc::sigaction = unsafe { std::mem::zeroed() };
    default.sa_sigaction = libc::SIG_DFL;
    // SAFETY: a valid action pointer and a null old-action pointer; SIG_DFL runs no code.
    unsafe { libc::sigaction(libc::SIGPIPE, &default, std::ptr::null_mut()) };
    // SAFETY: an all-zero sigset_t is a valid value; sigemptyset initializes it fully.
    let mut none: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `none` is a live local.
    unsafe { libc::sigemptyset(&mut none) };
    // SAFETY: a valid set pointer and a null old-set pointer.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) };
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

/// Sends SIGKILL to `pid` (errors ignored: the child may be gone already).
pub fn kill(pid: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// This process's id.
pub fn own_pid() -> u32 {
    std::process::id()
}

/// This process's effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail and has no preconditions.
    unsafe { libc::geteuid() }
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

/// How many commands signals can be passed on to at once (one per measuring thread); a
/// guard beyond that still keeps this process alive but passes nothing on.
const SLOTS: usize = 32;

/// The process ids signals are passed on to (0: a free slot). The handler reads only these.
pub static CHILDREN: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

/// A signal's disposition as it was before [`install_forwarder`] replaced it.
pub struct SavedAction {
    signal: libc::c_int,
    action: libc::sigaction,
}

/// Replaces `signal`'s disposition with the forwarding handler, unless the signal is ignored
/// (`nohup`: the user asked for it to be, and the command inherited that) or its disposition
/// cannot be read. Returns what to restore.
pub fn install_forwarder(signal: libc::c_int) -> Option<SavedAction> {
    // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one into the live local.
    if unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) } != 0
        || old.sa_sigaction == libc::SIG_IGN
    {
        return None;
    }
    // SAFETY: as above.
    let mut forward: libc::sigaction = unsafe { std::mem::zeroed() };
    let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
        forward_to_children;
    forward.sa_sigaction = handler as libc::sighandler_t;
    forward.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: a valid action whose handler only reads atomics and calls kill.
    if unsafe { libc::sigaction(signal, &forward, std::ptr::null_mut()) } != 0 {
        return None;
    }
    Some(SavedAction {
        signal,
        action: old,
    })
}

/// Puts back the disposition [`install_forwarder`] replaced.
pub fn restore(saved: &SavedAction) {
    // SAFETY: `saved.action` is the disposition sigaction reported for this signal.
    unsafe { libc::sigaction(saved.signal, &saved.action, std::ptr::null_mut()) };
}

/// The handler: a signal another process sent to this one alone (`si_code` <= 0: `kill`,
/// `sigqueue`, `tgkill`) is passed on to every registered child; one the kernel sent (the
/// terminal's Ctrl-C or hangup, to the whole foreground group) has reached them already.
extern "C" fn forward_to_children(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo_t for the handler's duration.
    let sent_by_a_process = info.is_null() || unsafe { (*info).si_code } <= 0;
    if !sent_by_a_process {
        return;
    }
    for slot in &CHILDREN {
        let pid = slot.load(std::sync::atomic::Ordering::Relaxed);
        if pid > 0 {
            // SAFETY: kill is async-signal-safe and has no memory-safety preconditions.
            unsafe { libc::kill(pid, signal) };
        }
    }
}
