//! The timers beside the counters and the named regions (`counterhal_real_nsec`,
//! `counterhal_region_begin`, ...). The module note of [`super`] holds here.

use counterhal_cboundary as boundary;
use std::ffi::{c_char, c_int};

use super::{guard, string};
use crate::code;

/// Wall-clock nanoseconds from a fixed point (PAPI's `PAPI_get_real_nsec`).
#[unsafe(no_mangle)]
pub extern "C" fn counterhal_real_nsec() -> u64 {
    boundary::catch(facade::time::real_ns, || 0)
}

/// The calling thread's CPU time in nanoseconds (PAPI's `PAPI_get_virt_nsec`).
#[unsafe(no_mangle)]
pub extern "C" fn counterhal_virt_nsec() -> u64 {
    boundary::catch(facade::time::thread_cpu_ns, || 0)
}

/// The time-stamp counter where it is a clock (invariant TSC), else 0 (PAPI's
/// `PAPI_get_real_cyc`).
#[unsafe(no_mangle)]
pub extern "C" fn counterhal_real_cyc() -> u64 {
    boundary::catch(|| facade::time::cycles().unwrap_or(0), || 0)
}

/// Enters region `name` on the calling thread (events from `COUNTERHAL_REGION_EVENTS`; the
/// report is written at exit).
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_region_begin(name: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: a NUL-terminated string valid for the call.
        facade::region::begin(unsafe { string(name, "the region name") }?)?;
        Ok(code::OK)
    })
}

/// Leaves region `name` on the calling thread.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_region_end(name: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: a NUL-terminated string valid for the call.
        facade::region::end(unsafe { string(name, "the region name") }?)?;
        Ok(code::OK)
    })
}

/// Writes the regions' report now, as `COUNTERHAL_REGION_OUTPUT` and
/// `COUNTERHAL_REGION_FORMAT` ask (it is also written at exit).
#[unsafe(no_mangle)]
pub extern "C" fn counterhal_region_report() -> c_int {
    guard(|| {
        facade::region::write_report()?;
        Ok(code::OK)
    })
}
