//! The system calls behind a measured command: pipes, `clone` or `fork` and `exec`, `wait4`
//! (blocking or not), `kill`, `sigaction`. Everything `unsafe` in this crate is here and in
//! its part `held`.
//!
//! # Safety
//!
//! The invariants every `unsafe` block here relies on:
//! - Pointers passed to the kernel point at live locals or at buffers valid for the length
//!   passed with them, for the duration of the call.
//! - File descriptors are passed in as [`BorrowedFd`] (open for the call) and returned as
//!   [`OwnedFd`] (created by the kernel in that call, owned by exactly one value).
//! - Between `fork` and `exec` (the standard library's spawn, with our `pre_exec` hook) the
//!   child calls only async-signal-safe functions (`close`, `getpid`, `write`, `read`) on descriptors
//!   the parent keeps open until the spawn returns.
//! - A child of [`fork_held`] makes only async-signal-safe system calls (`close`,
//!   `sigaction`, `sigprocmask`, `signal`, `read`, `execve`, `write`, `_exit`), on descriptors
//!   it owns and on the program's path, arguments and environment made before the child was;
//!   it never returns. Where it shares this process's memory, see `held`'s note.
//! - The signal handler calls only `kill`, which is async-signal-safe, and reads and writes
//!   only atomics.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use std::sync::atomic::AtomicI32;

mod held;
pub use held::{ExecWatch, Prepared, fork_held};

/// An OS error number (`errno`).
pub type Errno = i32;

/// The calling thread's `errno` after a failed system call.
fn last_errno() -> Errno {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
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

/// The pipes a command is held by: the child writes its process id into one and waits for a
/// byte on the other before `exec`.
#[derive(Debug)]
pub struct Hold {
    /// The parent reads the child's process id here (4 bytes), or EOF when it never ran.
    pub pid_read: OwnedFd,
    /// The child's end of the pid pipe: kept alive until `spawn` returns, then dropped.
    pub pid_write: OwnedFd,
    /// The child's end of the release pipe: kept alive until `spawn` returns, then dropped.
    pub release_read: OwnedFd,
    /// Writing one byte here lets the child exec; closing it unwritten makes the spawn fail.
    pub release_write: OwnedFd,
}

/// Makes `command` stop before `exec` until released: between fork and exec the child writes
/// its process id to [`Hold::pid_read`] and waits for a byte on [`Hold::release_write`]. The
/// standard library has already reset the child's signal mask and `SIGPIPE` by then.
///
/// # Errors
/// The errno of `pipe2`.
pub fn hold_before_exec(command: &mut std::process::Command) -> Result<Hold, Errno> {
    use std::os::unix::process::CommandExt;
    let (pid_read, pid_write) = pipe_cloexec()?;
    let (release_read, release_write) = pipe_cloexec()?;
    let (pid_fd, release_fd) = (pid_write.as_raw_fd(), release_read.as_raw_fd());
    let parents_ends = [pid_read.as_raw_fd(), release_write.as_raw_fd()];
    let wait_for_release = move || -> std::io::Result<()> {
        // The parent's ends, inherited by the fork: closed, so that the parent closing the
        // release pipe unwritten reads as EOF here.
        for fd in parents_ends {
            // SAFETY: close is async-signal-safe; these are the child's copies of the fds.
            unsafe { libc::close(fd) };
        }
        // SAFETY: getpid is async-signal-safe and has no preconditions.
        let pid = unsafe { libc::getpid() };
        let bytes = pid.to_ne_bytes();
        // SAFETY: writes 4 bytes from a live local to an fd the child holds until exec.
        unsafe { libc::write(pid_fd, bytes.as_ptr().cast(), bytes.len()) };
        let mut byte = 0u8;
        loop {
            let ptr: *mut u8 = &mut byte;
            // SAFETY: reads at most one byte into a live local from an fd held until exec.
            let n = unsafe { libc::read(release_fd, ptr.cast(), 1) };
            match n {
                1 => return Ok(()),
                n if n < 0 && last_errno() == libc::EINTR => continue,
                // Released without a byte: the parent gave up on the command.
                _ => return Err(std::io::Error::from_raw_os_error(libc::ECANCELED)),
            }
        }
    };
    // SAFETY: the closure runs in the child between fork and exec and calls only close,
    // getpid, write and read, which are async-signal-safe, on descriptors that stay open until exec
    // (the parent keeps its copies until `spawn` returns); it allocates nothing.
    unsafe { command.pre_exec(wait_for_release) };
    Ok(Hold {
        pid_read,
        pid_write,
        release_read,
        release_write,
    })
}

/// What `wait4` tells of a child that ended: the raw wait status and its user and system
/// time in microseconds.
pub type Waited = (i32, u64, u64);

/// `wait4(pid)`, blocking until the child ends.
///
/// # Errors
/// The errno.
pub fn wait4(pid: i32) -> Result<Waited, Errno> {
    wait4_with(pid, 0).map(|waited| waited.unwrap_or((0, 0, 0)))
}

/// `wait4(pid, WNOHANG)`: `None` while the child runs.
///
/// # Errors
/// The errno.
pub fn try_wait4(pid: i32) -> Result<Option<Waited>, Errno> {
    wait4_with(pid, libc::WNOHANG)
}

fn wait4_with(pid: i32, options: libc::c_int) -> Result<Option<Waited>, Errno> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let ret = loop {
        let status_ptr: *mut i32 = &mut status;
        let usage_ptr: *mut libc::rusage = &mut usage;
        // SAFETY: both pointers are valid for writes for the call.
        let ret = unsafe { libc::wait4(pid, status_ptr, options, usage_ptr) };
        if ret >= 0 {
            break ret;
        }
        let errno = last_errno();
        if errno != libc::EINTR {
            return Err(errno);
        }
    };
    if ret == 0 {
        // WNOHANG and the child still runs.
        return Ok(None);
    }
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Ok(Some((
        status,
        micros(usage.ru_utime),
        micros(usage.ru_stime),
    )))
}

/// Waits up to `timeout_ms` milliseconds for child `pid` to end, without reaping it: poll(2)
/// on its pidfd (`pidfd_open`, Linux 5.3), which turns readable as the child ends. It returns
/// early, `Ok`, when a signal interrupts the poll, so that the caller can answer it.
///
/// # Errors
/// The errno of `pidfd_open` (`ENOSYS` before Linux 5.3) or of `poll`.
#[cfg(target_os = "linux")]
pub fn wait_exit(pid: i32, timeout_ms: i32) -> Result<(), Errno> {
    // SAFETY: pidfd_open takes a pid and flags (0) and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(last_errno());
    }
    // SAFETY: the kernel just created this descriptor (an int); nothing else owns it.
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let mut ready = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `ready` is one live pollfd for the call; the pidfd is open for the call.
    let ret = unsafe { libc::poll(&mut ready, 1, timeout_ms) };
    match ret >= 0 || last_errno() == libc::EINTR {
        true => Ok(()),
        false => Err(last_errno()),
    }
}

/// Whether `pid` is a child of this process: `waitid(P_PID, pid, WEXITED | WNOHANG |
/// WNOWAIT)`, which fails with `ECHILD` for a process that is not one (or does not exist), and
/// otherwise changes nothing (a child that has ended stays to be waited for).
///
/// # Errors
/// Any errno but `ECHILD`.
#[cfg(target_os = "linux")]
pub fn is_child(pid: i32) -> Result<bool, Errno> {
    let Ok(id) = libc::id_t::try_from(pid) else {
        return Ok(false);
    };
    loop {
        // SAFETY: an all-zero siginfo_t is a valid value of this plain C struct.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let info_ptr: *mut libc::siginfo_t = &mut info;
        let options = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: the pointer is valid for writes of one siginfo_t for the call.
        let ret = unsafe { libc::waitid(libc::P_PID, id, info_ptr, options) };
        if ret == 0 {
            return Ok(true);
        }
        match last_errno() {
            libc::EINTR => continue,
            libc::ECHILD => return Ok(false),
            errno => return Err(errno),
        }
    }
}

/// Sends SIGKILL to `pid` (errors ignored: the child may be gone already).
pub fn kill(pid: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Sends SIGTERM to `pid` (errors ignored: the child may be gone already).
pub fn terminate(pid: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(pid, libc::SIGTERM) };
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

/// Waits until `fd` can be written (`write`) or read, or has hung up or failed (the next
/// read or write then says which): poll(2) on the one descriptor, EINTR retried.
///
/// # Errors
/// The errno.
pub fn wait_ready(fd: BorrowedFd<'_>, write: bool) -> Result<(), Errno> {
    let events = if write { libc::POLLOUT } else { libc::POLLIN };
    let mut ready = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    loop {
        // SAFETY: `ready` is one live pollfd for the call; `fd` is open for the call.
        let ret = unsafe { libc::poll(&mut ready, 1, -1) };
        if ret >= 0 {
            return Ok(());
        }
        let errno = last_errno();
        if errno != libc::EINTR {
            return Err(errno);
        }
    }
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

/// The last signal the handler received (0: none yet), whoever sent it. The handler writes
/// only this.
pub static RECEIVED: AtomicI32 = AtomicI32::new(0);

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
    RECEIVED.store(signal, std::sync::atomic::Ordering::Relaxed);
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

/// Registers `hook` to run when the process exits through `exit` (a return from `main`
/// included); false when the C library has no room for it.
pub fn at_exit(hook: extern "C" fn()) -> bool {
    // SAFETY: `hook` is a plain function with the C ABI, valid for the life of the process
    // (module note: no pointers to locals are kept).
    unsafe { libc::atexit(hook) == 0 }
}
