//! PAPI's C functions: each turns its C arguments (pointers, C strings, arrays) into a call of
//! [`crate::library`] and [`crate::sets`], and writes the results back, inside the C
//! boundary's guard (`guard`: a panic answers `PAPI_EBUG`, cancellation is held off).
//!
//! # Safety
//! Every function is `unsafe extern "C"`: the caller passes pointers as PAPI documents them
//! (valid for the sizes PAPI gives, or NULL where PAPI allows it). Each function checks for
//! NULL before it reads or writes, and writes no more than PAPI's documented sizes.

use std::ffi::{CStr, c_char, c_int, c_longlong};

use crate::codes::{EINVAL, OK};
use crate::release::Release;
use crate::{library, sets};

mod devices;
mod fortran;
mod guard;
use guard::guard;
mod hl;
mod info;
mod options;
mod profile;
mod sde;
pub(crate) mod threads;

/// Reads a C string, or `None` for NULL or text that is not UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid while the result is used.
unsafe fn text<'a>(p: *const c_char) -> Option<&'a str> {
    // SAFETY: NULL or NUL-terminated (the caller's promise).
    unsafe { counterhal_cboundary::text(p) }.ok()
}

/// Reads an event name: `PAPI_EINVAL` for NULL, `PAPI_ENOEVNT` for bytes that are not UTF-8
/// (no event is named so: PAPI 7.0 finds none, `perf::PAGE-FAULTS\xff` included).
///
/// # Safety
/// As [`text`].
unsafe fn event_name<'a>(p: *const c_char) -> Result<&'a str, c_int> {
    if p.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: non-NULL, and NUL-terminated (the caller's promise).
    unsafe { text(p) }.ok_or(crate::codes::ENOEVNT)
}

/// Writes `value` through `p` unless it is NULL; whether it wrote.
///
/// # Safety
/// `p` is NULL or valid for a write of `T`.
unsafe fn put<T>(p: *mut T, value: T) -> bool {
    if p.is_null() {
        return false;
    }
    // SAFETY: `p` is non-NULL and valid for a write (the caller's promise).
    unsafe { p.write(value) };
    true
}

/// Writes `values` to the array at `p` (no-op for NULL).
///
/// # Safety
/// `p` is NULL or valid for `values.len()` writes.
unsafe fn put_all<T: Copy>(p: *mut T, values: &[T]) {
    if p.is_null() {
        return;
    }
    // SAFETY: `p` holds room for `values.len()` items (the caller's promise).
    let out = unsafe { std::slice::from_raw_parts_mut(p, values.len()) };
    out.copy_from_slice(values);
}

/// Copies `name` as a C string into `out`, which PAPI sizes `PAPI_MAX_STR_LEN` (128); a
/// longer name is cut.
///
/// # Safety
/// `out` is valid for 128 bytes.
unsafe fn put_name(out: *mut c_char, name: &str) {
    let mut buffer = [0u8; 128];
    crate::info::set_str(&mut buffer, name);
    let len = name.len().min(127) + 1;
    // SAFETY: `out` has room for 128 bytes (PAPI_MAX_STR_LEN) and `len` <= 128.
    unsafe { put_all(out.cast::<u8>(), &buffer[..len]) };
}

/// `PAPI_OK` when a result was written, else `PAPI_EINVAL` (a NULL pointer).
fn wrote(wrote: bool) -> c_int {
    if wrote { OK } else { library::fail(EINVAL) }
}

fn code(result: Result<i32, i32>) -> c_int {
    result.unwrap_or_else(|e| e)
}

/// The release the program speaks ([`crate::release`]): the one its last
/// `PAPI_library_init` chose; before any, the one whose SONAME this library was loaded by
/// (`libpapi.so.7.2`: a program linked against PAPI 7.2), else 7.0.
pub(crate) fn release() -> Release {
    crate::unlocked::UNLOCKED
        .chosen_release
        .get()
        .unwrap_or_else(loaded_as)
}

/// The release named by the file this library was loaded from, as the dynamic loader
/// opened it (the SONAME a program asked for, through its link), else 7.0.
fn loaded_as() -> Release {
    let loaded = &crate::unlocked::UNLOCKED.loaded_release;
    if let Some(release) = loaded.get() {
        return release;
    }
    // The dynamic loader's answer is the same at every call: two first calls at once set the
    // same release.
    let release = file_release();
    let _ = loaded.set(release);
    release
}

/// The release of the file the dynamic loader mapped this library from (`dladdr`).
fn file_release() -> Release {
    // SAFETY: an all-zero Dl_info is valid (NULL pointers).
    let mut found: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: the address of a function of this library; dladdr writes `found`.
    let known = unsafe { libc::dladdr(PAPI_library_init as *const libc::c_void, &mut found) };
    if known == 0 || found.dli_fname.is_null() {
        return Release::V7_0;
    }
    // SAFETY: dladdr's file name is a C string that lives as long as the mapping.
    let file = unsafe { CStr::from_ptr(found.dli_fname) }.to_string_lossy();
    Release::of_file_name(&file).unwrap_or(Release::V7_0)
}

/// `PAPI_library_init`: `version` on success, one of the `PAPI_VER_CURRENT` of PAPI 7.0, 7.1
/// and 7.2; the first that succeeds chooses the release the process is answered in, and
/// another release's version is `PAPI_EINVAL` from then on. A call on an initialised library
/// returns at once; one racing another waits for its set-up to end.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_library_init(version: c_int) -> c_int {
    guard(|| {
        // The components are set up under the library's lock, within the initialisation, so
        // that a second caller returns once it is done.
        let set_up = |setup: &mut library::SetUp<'_>| {
            // Forks counted from here on, before any set (`counterhal_cboundary::forks`).
            let _ = counterhal_cboundary::forks();
            crate::sde::set_up(setup);
            crate::uncore::set_up(setup);
            crate::powercap::set_up(setup);
            crate::components::fill_zero(setup.library, setup.kept);
        };
        let this_thread = threads::PAPI_thread_id();
        match library::library_init(version, || threads::own_id(), this_thread, set_up) {
            Ok(library::Init::Already | library::Init::Made) => version,
            Err(code) => code,
        }
    })
}

/// `PAPI_shutdown`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_shutdown() {
    guard(|| {
        crate::sde::shutdown();
        library::shutdown();
        threads::forget_threads();
    })
}

/// `PAPI_is_initialized`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_is_initialized() -> c_int {
    guard(crate::unlocked::init_state)
}

/// `PAPI_set_debug`: allowed before initialisation.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_set_debug(level: c_int) -> c_int {
    guard(|| {
        if !(0..=2).contains(&level) {
            return library::fail(EINVAL);
        }
        library::set_debug_level(level)
    })
}

/// `PAPI_create_eventset`.
///
/// # Safety
/// `event_set` is NULL or points at an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_create_eventset(event_set: *mut c_int) -> c_int {
    guard(|| {
        if event_set.is_null() {
            return library::fail(EINVAL);
        }
        // SAFETY: checked non-NULL; the caller's int.
        if unsafe { *event_set } != -1 {
            return library::fail(EINVAL);
        }
        match sets::create_eventset() {
            // SAFETY: checked non-NULL.
            Ok(handle) => wrote(unsafe { put(event_set, handle) }),
            Err(e) => e,
        }
    })
}

/// `PAPI_destroy_eventset`: sets `*event_set` to `PAPI_NULL`.
///
/// # Safety
/// `event_set` is NULL or points at an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_destroy_eventset(event_set: *mut c_int) -> c_int {
    guard(|| {
        if event_set.is_null() {
            return library::fail(EINVAL);
        }
        // SAFETY: checked non-NULL.
        let handle = unsafe { *event_set };
        let result = sets::destroy_eventset(handle);
        if result == OK {
            // SAFETY: checked non-NULL.
            unsafe { put(event_set, -1) };
        }
        result
    })
}

/// `PAPI_add_event`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_add_event(event_set: c_int, event: c_int) -> c_int {
    guard(|| sets::add_event(event_set, event))
}

/// `PAPI_add_named_event`.
///
/// # Safety
/// `name` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_add_named_event(event_set: c_int, name: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: the caller's C string or NULL.
        match unsafe { event_name(name) } {
            Ok(name) => sets::add_named_event(event_set, name),
            Err(e) => e,
        }
    })
}

/// `PAPI_add_events`: `PAPI_OK`, or the number added before the first failure (the failure's
/// code when none was).
///
/// # Safety
/// `events` is NULL or holds `number` ints.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_add_events(
    event_set: c_int,
    events: *mut c_int,
    number: c_int,
) -> c_int {
    guard(|| {
        if events.is_null() || number <= 0 {
            return library::fail(EINVAL);
        }
        // SAFETY: `events` holds `number` ints (the caller's promise).
        let codes = unsafe { std::slice::from_raw_parts(events, number as usize) };
        for (i, &event) in codes.iter().enumerate() {
            let result = sets::add_event(event_set, event);
            if result != OK {
                return if i == 0 { result } else { i as c_int };
            }
        }
        OK
    })
}

/// `PAPI_remove_event`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_remove_event(event_set: c_int, event: c_int) -> c_int {
    guard(|| sets::remove_event(event_set, event))
}

/// `PAPI_remove_named_event`.
///
/// # Safety
/// `name` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_remove_named_event(event_set: c_int, name: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: the caller's C string or NULL.
        match unsafe { event_name(name) }.and_then(crate::natives::name_to_code) {
            Ok(code) => sets::remove_event(event_set, code),
            Err(e) => e,
        }
    })
}

/// `PAPI_remove_events`.
///
/// # Safety
/// `events` is NULL or holds `number` ints.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_remove_events(
    event_set: c_int,
    events: *mut c_int,
    number: c_int,
) -> c_int {
    guard(|| {
        if events.is_null() || number <= 0 {
            return library::fail(EINVAL);
        }
        // SAFETY: `events` holds `number` ints (the caller's promise).
        let codes = unsafe { std::slice::from_raw_parts(events, number as usize) };
        for (i, &event) in codes.iter().enumerate() {
            let result = sets::remove_event(event_set, event);
            if result != OK {
                return if i == 0 { result } else { i as c_int };
            }
        }
        OK
    })
}

/// `PAPI_cleanup_eventset`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_cleanup_eventset(event_set: c_int) -> c_int {
    guard(|| sets::cleanup_eventset(event_set))
}

/// `PAPI_start`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_start(event_set: c_int) -> c_int {
    guard(|| sets::start(event_set))
}

/// Writes `result`'s values to `values` (when not NULL); PAPI's code.
///
/// # Safety
/// `values` is NULL or has room for the set's events.
unsafe fn give(result: Result<Vec<i64>, i32>, values: *mut c_longlong) -> c_int {
    match result {
        Ok(counts) => {
            // SAFETY: room for the set's events (the caller's promise).
            unsafe { put_all(values, &counts) };
            OK
        }
        Err(e) => e,
    }
}

/// `PAPI_stop`.
///
/// # Safety
/// `values` is NULL or has room for one `long long` per event of the set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_stop(event_set: c_int, values: *mut c_longlong) -> c_int {
    guard(|| {
        // SAFETY: as this function's.
        unsafe { give(sets::stop(event_set), values) }
    })
}

/// `PAPI_read`.
///
/// # Safety
/// `values` has room for one `long long` per event of the set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_read(event_set: c_int, values: *mut c_longlong) -> c_int {
    guard(|| {
        if values.is_null() {
            return sets::refuse_null_values(event_set);
        }
        // Allocation-free: an overflow handler may call this.
        sets::read_each(event_set, |i, value| {
            // SAFETY: room for the set's events (the caller's promise); `i` is below their number.
            let slot = unsafe { values.add(i) };
            // SAFETY: as above: `slot` is within the caller's array.
            unsafe { slot.write(value) };
        })
    })
}

/// `PAPI_read_ts`: the counts and `PAPI_get_real_cyc` at the read.
///
/// # Safety
/// As `PAPI_read`; `cyc` points at a `long long`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_read_ts(
    event_set: c_int,
    values: *mut c_longlong,
    cyc: *mut c_longlong,
) -> c_int {
    guard(|| {
        if values.is_null() || cyc.is_null() {
            return sets::refuse_null_values(event_set);
        }
        // SAFETY: as this function's (PAPI_read's promise); allocation-free as it is.
        let result = unsafe { PAPI_read(event_set, values) };
        // SAFETY: checked non-NULL.
        unsafe { put(cyc, info::PAPI_get_real_cyc()) };
        result
    })
}

/// `PAPI_accum`: adds the counts since the last reset to `values`, then resets.
///
/// # Safety
/// `values` has room for one `long long` per event of the set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_accum(event_set: c_int, values: *mut c_longlong) -> c_int {
    guard(|| {
        if values.is_null() {
            return sets::refuse_null_values(event_set);
        }
        // Allocation-free, as PAPI_read.
        sets::accum_each(event_set, |i, count| {
            // SAFETY: room for the set's events (the caller's promise); `i` is below their number.
            let slot = unsafe { values.add(i) };
            // SAFETY: as above: `slot` is within the caller's array.
            unsafe { *slot += count };
        })
    })
}

/// `PAPI_reset`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_reset(event_set: c_int) -> c_int {
    guard(|| sets::reset(event_set))
}

/// `PAPI_write`: the counters of a set of the `sde` component take `values`; the backend's
/// cannot be written here (`PAPI_ENOSUPP`).
///
/// # Safety
/// `values` is NULL or holds a value per event of the set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_write(event_set: c_int, values: *mut c_longlong) -> c_int {
    guard(|| {
        let count = match sets::write_count(event_set) {
            Ok(count) => count,
            Err(e) => return e,
        };
        if values.is_null() {
            return library::fail(EINVAL);
        }
        // SAFETY: non-NULL, with a value per event of the set (the caller's promise).
        let values = unsafe { std::slice::from_raw_parts(values, count) };
        sets::write(event_set, values)
    })
}

/// `PAPI_num_events`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_num_events(event_set: c_int) -> c_int {
    guard(|| sets::num_events(event_set))
}

/// `PAPI_list_events`: up to `*number` codes; `*number` becomes the set's size.
///
/// # Safety
/// `events` has room for `*number` ints; `number` points at an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_list_events(
    event_set: c_int,
    events: *mut c_int,
    number: *mut c_int,
) -> c_int {
    guard(|| {
        if number.is_null() {
            return library::fail(EINVAL);
        }
        // SAFETY: checked non-NULL.
        let room = unsafe { *number };
        if room < 0 || (room > 0 && events.is_null()) {
            return library::fail(EINVAL);
        }
        match sets::list_events(event_set) {
            Ok(codes) => {
                let n = codes.len().min(room as usize);
                // SAFETY: `events` has room for `room` >= `n` ints.
                unsafe { put_all(events, &codes[..n]) };
                // SAFETY: checked non-NULL.
                unsafe { put(number, codes.len() as c_int) };
                OK
            }
            Err(e) => e,
        }
    })
}

/// `PAPI_state`.
///
/// # Safety
/// `status` points at an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_state(event_set: c_int, status: *mut c_int) -> c_int {
    guard(|| {
        if status.is_null() {
            return library::fail(EINVAL);
        }
        match sets::state(event_set) {
            // SAFETY: checked non-NULL.
            Ok(state) => wrote(unsafe { put(status, state) }),
            Err(e) => e,
        }
    })
}

/// `PAPI_event_name_to_code`.
///
/// # Safety
/// `name` is a C string; `out` points at an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_event_name_to_code(name: *const c_char, out: *mut c_int) -> c_int {
    guard(|| {
        if out.is_null() {
            return library::fail(EINVAL);
        }
        // SAFETY: the caller's C string or NULL.
        let name = match unsafe { event_name(name) } {
            Ok(name) => name,
            Err(e) => return e,
        };
        match crate::natives::name_to_code(name) {
            // SAFETY: checked non-NULL.
            Ok(c) => wrote(unsafe { put(out, c) }),
            Err(e) => e,
        }
    })
}

/// `PAPI_event_code_to_name`.
///
/// # Safety
/// `out` has room for `PAPI_MAX_STR_LEN` (128) bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_event_code_to_name(event: c_int, out: *mut c_char) -> c_int {
    guard(|| {
        if out.is_null() {
            return library::fail(EINVAL);
        }
        let name = match crate::natives::code_to_name(event) {
            Ok(name) => name,
            Err(e) => return e,
        };
        match crate::natives::fitted(event, &name) {
            Ok(whole) => {
                // SAFETY: 128 bytes of room (the caller's promise).
                unsafe { put_name(out, whole) };
                OK
            }
            Err((e, part)) => {
                if let Some(part) = part {
                    // SAFETY: as above.
                    unsafe { put_name(out, part) };
                }
                e
            }
        }
    })
}

/// `PAPI_query_event`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_query_event(event: c_int) -> c_int {
    guard(|| crate::natives::query_event(event))
}

/// `PAPI_query_named_event`.
///
/// # Safety
/// `name` is a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_query_named_event(name: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: the caller's C string or NULL.
        match unsafe { event_name(name) }.and_then(crate::natives::name_to_code) {
            Ok(c) => crate::natives::query_event(c),
            Err(e) => e,
        }
    })
}

/// `PAPI_enum_event`: component 0's events.
///
/// # Safety
/// `event` points at an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_enum_event(event: *mut c_int, modifier: c_int) -> c_int {
    guard(|| {
        // SAFETY: as this function's.
        unsafe { enum_event(event, modifier, 0, true) }
    })
}

/// `PAPI_enum_cmp_event`.
///
/// # Safety
/// `event` points at an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_enum_cmp_event(
    event: *mut c_int,
    modifier: c_int,
    cidx: c_int,
) -> c_int {
    guard(|| {
        // SAFETY: as this function's.
        unsafe { enum_event(event, modifier, cidx, false) }
    })
}

/// `PAPI_enum_event` (`any`) and `PAPI_enum_cmp_event`, in the release the program speaks.
///
/// # Safety
/// `event` points at an int.
unsafe fn enum_event(event: *mut c_int, modifier: c_int, cidx: c_int, any: bool) -> c_int {
    if event.is_null() {
        return library::fail(EINVAL);
    }
    // SAFETY: checked non-NULL.
    let current = unsafe { *event };
    let release = release();
    // Whether the component is disabled, which 7.2's walks of presets ask (a preset's code is
    // negative: PAPI_PRESET_MASK is its high bit).
    let info = if release.is_7_2() && current < 0 {
        info::component_info(cidx)
    } else {
        std::ptr::null()
    };
    let walk = crate::natives::Walk {
        release,
        cidx,
        enum_event: any,
        // SAFETY: NULL, or a description that lives while the library is initialised.
        disabled: !info.is_null() && unsafe { (*info).disabled } != 0,
    };
    match crate::natives::enumerate_in(walk, current, modifier) {
        // SAFETY: checked non-NULL.
        Ok(next) => wrote(unsafe { put(event, next) }),
        Err(e) => e,
    }
}

/// `PAPI_get_event_info`.
///
/// # Safety
/// `info` points at a `PAPI_event_info_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_event_info(
    event: c_int,
    info: *mut crate::info::EventInfo,
) -> c_int {
    guard(|| {
        if info.is_null() {
            return library::fail(EINVAL);
        }
        match crate::natives::event_info(event) {
            Ok(filled) if release().is_7_2() => {
                let filled = crate::release::event_info_7_2(*filled);
                // SAFETY: checked non-NULL; the caller's PAPI_event_info_t, 7.2's (its papi.h's
                // PAPI_VER_CURRENT chose the release).
                wrote(unsafe { put(info.cast::<crate::release::EventInfo72>(), *filled) })
            }
            // SAFETY: checked non-NULL; the caller's PAPI_event_info_t.
            Ok(filled) => wrote(unsafe { put(info, *filled) }),
            Err(e) => e,
        }
    })
}

/// `PAPI_set_multiplex`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_set_multiplex(event_set: c_int) -> c_int {
    guard(|| crate::set_options::set_multiplex(event_set, None))
}

/// `PAPI_get_multiplex`: 1 when the set multiplexes, else 0, a missing set included (as
/// PAPI 7.0's, which answers 0 for any error of the `PAPI_get_opt` it asks; the error is kept
/// for `PAPI_perror`).
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_multiplex(event_set: c_int) -> c_int {
    guard(|| crate::set_options::get_multiplex(event_set).max(0))
}

/// `PAPI_multiplex_init`: the backend's own multiplexing needs no set-up.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_multiplex_init() -> c_int {
    guard(|| code(library::with(|_| Ok(OK))))
}

/// `PAPI_attach`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_attach(event_set: c_int, tid: std::ffi::c_ulong) -> c_int {
    guard(|| crate::set_options::attach(event_set, Some(tid)))
}

/// `PAPI_detach`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_detach(event_set: c_int) -> c_int {
    guard(|| crate::set_options::attach(event_set, None))
}
