//! PAPI's high-level functions over [`crate::hl`]: the C strings, the clocks, the thread id,
//! the local time of an older report folder's new name, and the report written at exit.

use std::ffi::{c_char, c_int};
use std::sync::atomic::Ordering;

use super::guard;
use super::{info, text, threads};
use crate::codes;
use crate::hl::{self, Clocks, Mark};

/// The local time as `YYYYMMDD-HHMMSS`, as PAPI names an older report folder.
fn local_stamp(now: libc::time_t) -> String {
    // SAFETY: an all-zero `tm` is a valid value to be overwritten.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to locals; localtime_r is thread-safe.
    if unsafe { libc::localtime_r(&now, &mut tm) }.is_null() {
        return String::from("00000000-000000");
    }
    format!(
        "{}{:02}{:02}-{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// Writes the report at exit (registered with `atexit` by the first region).
extern "C" fn write_at_exit() {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let fallback = (seconds as u32).wrapping_add(std::process::id());
    hl::write_output(&info::hardware(), fallback);
}

/// The library initialised (as PAPI's high-level calls do) and the one-time set-up done.
fn initiate() -> c_int {
    let version = super::release().ver_current();
    if crate::unlocked::init_state() == 0 && super::PAPI_library_init(version) != version {
        return codes::ENOINIT;
    }
    crate::unlocked::UNLOCKED
        .init_state
        .fetch_or(2, Ordering::SeqCst);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if hl::initiate(&local_stamp(now as libc::time_t), now) {
        // SAFETY: registers a function of no arguments that lives as long as the library.
        unsafe { libc::atexit(write_at_exit) };
    }
    codes::OK
}

fn clocks() -> Clocks {
    Clocks {
        cycles: info::PAPI_get_real_cyc(),
        nsec: info::PAPI_get_real_nsec(),
    }
}

/// # Safety
/// `region` is NULL or a C string.
unsafe fn marked(mark: Mark, region: *const c_char) -> c_int {
    // Only a region's beginning sets the interface up, as PAPI's.
    if mark == Mark::Begin {
        let status = initiate();
        if status != codes::OK {
            return status;
        }
    }
    // SAFETY: as this function's.
    let name = unsafe { text(region) };
    hl::mark(mark, name, threads::PAPI_thread_id() as u64, clocks)
}

/// `PAPI_hl_region_begin`: counts this thread's events from here (see [`crate::hl`]).
///
/// # Safety
/// `region` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_hl_region_begin(region: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: as this function's.
        unsafe { marked(Mark::Begin, region) }
    })
}

/// `PAPI_hl_read`: the counts since the region began, kept as the region's next read.
///
/// # Safety
/// `region` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_hl_read(region: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: as this function's.
        unsafe { marked(Mark::Read, region) }
    })
}

/// `PAPI_hl_region_end`.
///
/// # Safety
/// `region` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_hl_region_end(region: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: as this function's.
        unsafe { marked(Mark::End, region) }
    })
}

/// `PAPI_hl_stop`: stops this thread's high-level counting (`PAPI_ENOEVNT` when it does not
/// run), so that low-level calls may follow.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_hl_stop() -> c_int {
    guard(hl::stop)
}
