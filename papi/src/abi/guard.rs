//! The guard every C function of libpapi runs its body in ([`counterhal_cboundary::guard`],
//! which the C API's functions run in too): a panic inside is caught and answered with PAPI's
//! internal error, `PAPI_EBUG` ("internal error, please send mail to the developers"), never
//! unwound into the C caller (which aborts the process); the thread's cancellation is held
//! off inside, so a `pthread_cancel` never unwinds through Rust or leaves a lock held.

#[cfg(test)]
use std::ffi::c_char;

use crate::codes::EBUG;

/// Runs `f`, the body of one of libpapi's C functions, inside the C boundary's guard; a
/// panic answers [`OnPanic::on_panic`] of its return type.
#[inline]
pub(crate) fn guard<R: OnPanic>(f: impl FnOnce() -> R) -> R {
    counterhal_cboundary::guard(f, R::on_panic)
}

/// What a C function of libpapi answers when its body panicked, by its return type.
pub(crate) trait OnPanic {
    /// The answer: `PAPI_EBUG` where the type carries a PAPI code, NULL for a pointer.
    fn on_panic() -> Self;
}

/// `int`: `PAPI_EBUG`.
impl OnPanic for i32 {
    fn on_panic() -> Self {
        EBUG
    }
}

/// `long long` (the timers, which PAPI answers a code in too): `PAPI_EBUG`.
impl OnPanic for i64 {
    fn on_panic() -> Self {
        EBUG.into()
    }
}

/// `unsigned long` (`PAPI_thread_id`): `PAPI_EBUG` as PAPI casts a code to it.
impl OnPanic for std::ffi::c_ulong {
    fn on_panic() -> Self {
        EBUG as Self
    }
}

/// `void`.
impl OnPanic for () {
    fn on_panic() -> Self {}
}

/// A string or a structure PAPI describes (hardware, executable, libraries, components): NULL.
impl<T> OnPanic for *const T {
    fn on_panic() -> Self {
        std::ptr::null()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic inside a guarded body answers `PAPI_EBUG`, PAPI 7.2's "internal error" code
    /// (`papi.h`: `#define PAPI_EBUG -6`), and NULL for a pointer; no unwind leaves it.
    #[test]
    fn a_panic_inside_answers_papi_ebug() {
        assert_eq!(guard(|| -> i32 { panic!("deliberate") },), -6);
        assert_eq!(guard(|| -> i64 { panic!("deliberate") }), -6);
        assert!(guard(|| -> *const c_char { panic!("deliberate") }).is_null());
        assert_eq!(guard(|| 3), 3);
    }
}
