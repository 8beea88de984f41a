//! The two functions libsde looks for in libpapi (`papi_sde_check_overflow_status`,
//! `papi_sde_set_timer_for_overflow`; src/sde_lib/sde_lib.c, `obtain_papi_symbols`): the
//! `sde` component's side that C calls ([`crate::sde`] holds the component, `crate::sys`'s
//! `sde` finds libsde's own interface).
//!
//! # Safety
//! The overflow handler is called through the address `PAPI_overflow` was given, as a
//! `PAPI_overflow_handler_t`.

use super::guard;
use std::ffi::{c_int, c_longlong, c_void};

/// `PAPI_overflow_handler_t`.
type Handler = unsafe extern "C" fn(c_int, *mut c_void, c_longlong, *mut c_void);

/// Called by libsde each time a created counter changes (`papi_sde_inc_counter`), with its
/// id and value: when a set this thread runs overflows on that counter and the value passed
/// the next multiple of the threshold, the set's handler is called, as PAPI 7.0's component
/// does (with this function's address as the overflow address and no context).
#[unsafe(no_mangle)]
pub extern "C" fn papi_sde_check_overflow_status(counter: u32, latest: c_longlong) {
    guard(|| {
        let overflows = &crate::unlocked::UNLOCKED;
        let Some((handler, set, vector)) = overflows
            .sde_watches
            .overflowed(counter, latest)
            .and_then(|slot| overflows.overflows.handler_of(slot))
        else {
            return;
        };
        // SAFETY: `overflow::Table::handler_of` gives only the address of a
        // `PAPI_overflow_handler_t` given to PAPI_overflow (not NULL, not the profiles'
        // placeholder).
        let handler: Handler = unsafe { std::mem::transmute::<usize, Handler>(handler) };
        let address = papi_sde_check_overflow_status as *const () as *mut c_void;
        // SAFETY: the caller of PAPI_overflow promised a handler callable on the counting
        // thread; no library lock is held here.
        unsafe { handler(set, address, vector, std::ptr::null_mut()) };
    })
}

/// Called by libsde when a library registers a counter a running set already overflows on
/// (it was a placeholder): PAPI 7.0 then starts a timer that polls it. Ours does not poll
/// registered counters (their overflow is `PAPI_ENOSUPP`): `PAPI_OK`, as PAPI answers where
/// no set of this thread needs the timer.
#[unsafe(no_mangle)]
pub extern "C" fn papi_sde_set_timer_for_overflow() -> c_int {
    guard(|| crate::codes::OK)
}
