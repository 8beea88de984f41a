#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

#[cfg(unix)]
mod child;
#[cfg(unix)]
mod signals;
#[cfg(unix)]
#[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
mod sys;

#[cfg(unix)]
pub use child::{
    ChildExit, Launch, WaitingChild, command_for, exit_code_for, is_child_of_this_process,
};
#[cfg(unix)]
pub use signals::ForwardSignals;

/// Waits until `fd` is ready for `write` (or, with `write` false, for reading): for a
/// descriptor opened `O_NONBLOCK` by whoever gave it, whose read or write answered
/// `EWOULDBLOCK`. Returns at once where it has hung up or failed; the next read or write
/// says which.
///
/// # Errors
/// The OS error of poll(2).
#[cfg(unix)]
pub fn wait_ready(fd: std::os::fd::BorrowedFd<'_>, write: bool) -> std::io::Result<()> {
    sys::wait_ready(fd, write).map_err(std::io::Error::from_raw_os_error)
}

/// Runs `hook` when the process exits through `exit` (a return from `main` included), after
/// the hooks registered later; false when the C library has no room for it. The hook must not
/// unwind (catch panics inside it).
#[cfg(unix)]
pub fn at_exit(hook: extern "C" fn()) -> bool {
    sys::at_exit(hook)
}
