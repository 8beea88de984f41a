#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

use std::panic::{AssertUnwindSafe, catch_unwind};

#[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
mod sys;

pub use sys::{TextError, forks, text, without_cancellation, write_text};

/// Runs `f`, the body of a function C calls, with this thread's cancellation held off
/// ([`without_cancellation`]); a panic inside is caught and answered by `on_panic` (the face's
/// internal-error value), which runs with cancellation still held off.
///
/// ```
/// let answer = counterhal_cboundary::guard(|| -> i32 { panic!("a bug") }, || -6);
/// assert_eq!(answer, -6);
/// ```
#[inline]
pub fn guard<R>(f: impl FnOnce() -> R, on_panic: impl FnOnce() -> R) -> R {
    without_cancellation(|| catch(f, on_panic))
}

/// Runs `f`, answering a panic inside with `on_panic`: the half of [`guard`] for a face
/// that holds cancellation off itself, around more than the body (the C API's one call at a
/// time on a thread).
#[inline]
pub fn catch<R>(f: impl FnOnce() -> R, on_panic: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(_) => on_panic(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic inside the guard is the face's error value, not an unwind out of it.
    #[test]
    fn a_panic_is_answered_with_the_error_value() {
        let answer = guard(|| -> i32 { panic!("deliberate") }, || -6);
        assert_eq!(answer, -6);
        assert_eq!(guard(|| 7, || -6), 7);
        // Nested guards (a C function calling another) each answer for their own body.
        let outer = guard(|| guard(|| -> i32 { panic!("inner") }, || -6) + 1, || -100);
        assert_eq!(outer, -5);
    }

    /// Cancellation is held off inside the guard and restored after it, panic or not. The
    /// oracle is POSIX's `pthread_setcancelstate`, which returns the previous state.
    #[test]
    fn cancellation_is_held_off_inside_and_restored_after() {
        assert!(!sys::cancellation_disabled());
        assert!(guard(sys::cancellation_disabled, || false));
        assert!(!sys::cancellation_disabled());
        let _ = guard(
            || -> bool { panic!("deliberate") },
            sys::cancellation_disabled,
        );
        assert!(!sys::cancellation_disabled());
    }

    /// The fork count: one more in a child of `fork()`, the same in the parent.
    #[test]
    fn a_child_of_fork_counts_one_more() {
        let before = forks();
        match sys::fork_and_report(|| forks() == before + 1) {
            Some(true) => {}
            other => panic!("the child counted wrong: {other:?}"),
        }
        assert_eq!(forks(), before);
    }
}
