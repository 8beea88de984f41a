//! The OS error number every system call here returns on failure.

/// An OS error number (`errno`).
pub type Errno = i32;

/// The calling thread's `errno` after a failed system call.
pub(super) fn last_errno() -> Errno {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
