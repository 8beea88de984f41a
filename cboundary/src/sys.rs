//! The system calls and C strings of the boundary.
//!
//! # Safety
//!
//! `pthread_setcancelstate` and `pthread_atfork` are called as POSIX documents them, on the
//! calling thread, with a valid or NULL out-pointer and a handler that lives as long as the
//! process. The C strings and buffers are the callers' ([`text`], [`write_text`]): each
//! function's `# Safety` section says what its caller promises.

use std::ffi::{CStr, c_char, c_int};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

unsafe extern "C" {
    /// POSIX `pthread_setcancelstate` (the libc crate does not declare it for every target).
    fn pthread_setcancelstate(state: c_int, old_state: *mut c_int) -> c_int;
}

/// `PTHREAD_CANCEL_DISABLE`: 1 in glibc, musl and the BSDs' `<pthread.h>` (`ENABLE` is 0).
const PTHREAD_CANCEL_DISABLE: c_int = 1;

/// Runs `f` with this thread's cancellation held off, as C libraries hold it off inside
/// functions that are not cancellation points: the system calls counterhal makes (`open`,
/// `close`, `read`, `write`) are, and a cancellation acted on inside one unwinds through Rust
/// frames that cannot unwind into C, aborting the process (or leaves a lock held). A
/// cancellation asked for meanwhile stays pending and is acted on at the caller's next
/// cancellation point.
#[inline]
pub fn without_cancellation<R>(f: impl FnOnce() -> R) -> R {
    let mut old: c_int = 0;
    // SAFETY: sets the calling thread's cancelability state and writes the previous one into
    // `old`, a valid `int`.
    let held = unsafe { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut old) } == 0;
    let result = f();
    if held {
        // SAFETY: restores the state saved above; the previous state is not wanted (NULL is
        // allowed by glibc, musl and the BSDs).
        unsafe { pthread_setcancelstate(old, std::ptr::null_mut()) };
    }
    result
}

/// Whether this thread's cancellation is held off now (for the tests).
#[cfg(test)]
pub(crate) fn cancellation_disabled() -> bool {
    let mut old: c_int = 0;
    // SAFETY: as in `without_cancellation`; the state is put back at once.
    unsafe { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut old) };
    // SAFETY: restores the state read above.
    unsafe { pthread_setcancelstate(old, std::ptr::null_mut()) };
    old == PTHREAD_CANCEL_DISABLE
}

/// How many times this process's line of ancestors forked since the boundary first counted:
/// each child counts one more (a `pthread_atfork` handler).
static FORKS: AtomicU64 = AtomicU64::new(0);

/// Runs in the child of every `fork()`: one more fork. Async-signal-safe (one atomic add),
/// as a handler run in the child of a threaded process must be.
extern "C" fn after_fork_in_child() {
    FORKS.fetch_add(1, Ordering::SeqCst);
}

/// This process's fork count, watching forks from the first call on: a handle or set made
/// before a `fork()` and stamped with the count then is known in the child by its older
/// count (nothing of a parent's counters carries over to a child).
#[inline]
pub fn forks() -> u64 {
    static WATCH: Once = Once::new();
    WATCH.call_once(|| {
        // SAFETY: registers a plain function with the C ABI that lives as long as the
        // process and only adds to an atomic (allowed in a child of a threaded process); no
        // prepare or parent handler.
        let _ = unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    });
    FORKS.load(Ordering::SeqCst)
}

/// Why a C string is not text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextError {
    /// The pointer is NULL.
    Null,
    /// The bytes are not UTF-8.
    NotUtf8,
}

/// The C string at `p` as UTF-8.
///
/// # Errors
/// [`TextError::Null`] for NULL, [`TextError::NotUtf8`] for bytes that are not UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid (and not changed) while the result is used.
#[inline]
pub unsafe fn text<'a>(p: *const c_char) -> Result<&'a str, TextError> {
    if p.is_null() {
        return Err(TextError::Null);
    }
    // SAFETY: non-NULL, and NUL-terminated and valid by the caller's promise.
    let bytes = unsafe { CStr::from_ptr(p) };
    bytes.to_str().map_err(|_| TextError::NotUtf8)
}

/// Writes `text` into `buf[0..len)`, cut to fit and NUL-terminated when `len` > 0, as
/// `snprintf` does; whether it fit whole, its NUL included.
///
/// # Safety
/// `buf` is valid for `len` writes when `len` > 0, and `len` is at most `isize::MAX`.
pub unsafe fn write_text(buf: *mut c_char, len: usize, text: &str) -> bool {
    let bytes = text.as_bytes();
    if len > 0 {
        let written = len.min(bytes.len() + 1);
        // SAFETY: valid for `written` writes (no more than the caller's `len`).
        let buffer = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), written) };
        let kept = bytes.len().min(written - 1);
        buffer[..kept].copy_from_slice(&bytes[..kept]);
        buffer[kept] = 0;
    }
    bytes.len() < len
}

/// Runs `child` in a child of `fork()` and gives back its answer, `None` when the child did
/// not answer (for the tests).
#[cfg(test)]
pub(crate) fn fork_and_report(child: impl FnOnce() -> bool) -> Option<bool> {
    // SAFETY: the child only calls `child` (an atomic load) and `_exit`.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = if child() { 0 } else { 1 };
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    if pid < 0 {
        return None;
    }
    let mut status: c_int = 0;
    // SAFETY: waits for the child just made; `status` is a valid `int`.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    match waited == pid && libc::WIFEXITED(status) {
        true => Some(libc::WEXITSTATUS(status) == 0),
        false => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// C strings in: NULL and bytes that are not UTF-8 are told apart from text.
    #[test]
    fn text_in_tells_null_and_bad_bytes_apart() {
        // SAFETY: NULL.
        assert_eq!(unsafe { text(std::ptr::null()) }, Err(TextError::Null));
        // SAFETY: a NUL-terminated string that lives for the test.
        assert_eq!(unsafe { text(c"cycles".as_ptr()) }, Ok("cycles"));
        // SAFETY: as above.
        assert_eq!(unsafe { text(c"\xff".as_ptr()) }, Err(TextError::NotUtf8));
    }

    /// C strings out: cut to fit and NUL-terminated, as C's `snprintf` does.
    #[test]
    fn text_out_is_cut_as_snprintf_cuts() {
        let mut buffer = [b'x'; 4];
        let out = buffer.as_mut_ptr().cast();
        // SAFETY: a buffer of 4 bytes, told as 4.
        assert!(!unsafe { write_text(out, 4, "cycles") });
        assert_eq!(&buffer, b"cyc\0");
        // SAFETY: as above.
        assert!(unsafe { write_text(out, 4, "ab") });
        assert_eq!(&buffer[..3], b"ab\0");
        // SAFETY: told as 0: nothing is written.
        assert!(!unsafe { write_text(out, 0, "ab") });
    }
}
