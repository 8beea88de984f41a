//! The set functions beyond add, start, read and stop (options, removal, where each row
//! counts) and the library's version; the module note of [`super`] holds for every `unsafe`
//! block here.

use std::ffi::{c_char, c_int};

use crate::{Set, code};

use super::{guard, put, set_mut};

/// The calling thread's id, where the OS gives it (Linux `gettid`).
pub(crate) fn this_thread_id() -> Option<u32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: gettid takes no arguments and cannot fail.
        let tid = unsafe { libc::gettid() };
        u32::try_from(tid).ok()
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        None
    }
}

/// Sets option `option` (`COUNTERHAL_OPTION_*`) of the set to `value` (0 or 1).
///
/// # Safety
/// See the module note of [`super`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_option(
    set: *mut Set,
    option: c_int,
    value: c_int,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        unsafe { set_mut(set) }?.set_option(option, value)?;
        Ok(code::OK)
    })
}

/// The value (0 or 1) of option `option` (`COUNTERHAL_OPTION_*`) of the set.
///
/// # Safety
/// See the module note of [`super`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_get_option(set: *mut Set, option: c_int) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        unsafe { set_mut(set) }?.option(option)
    })
}

/// Removes the event at `index` (those after it move down one).
///
/// # Safety
/// See the module note of [`super`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_remove(set: *mut Set, index: usize) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        unsafe { set_mut(set) }?.remove(index)?;
        Ok(code::OK)
    })
}

/// Where row `row` of `counterhal_set_read_each` counts: a `COUNTERHAL_PLACE_*` (>= 0), with
/// the thread or CPU id written to `id` (NULL: not wanted).
///
/// # Safety
/// See the module note of [`super`]; `id` is NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_place(set: *mut Set, row: usize, id: *mut u32) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        let (kind, number) = unsafe { set_mut(set) }?.place(row)?;
        if !id.is_null() {
            // SAFETY: `id` is valid for one write.
            unsafe { put(id, number, "id") }?;
        }
        Ok(kind)
    })
}

/// The library's version as `MAJOR * 10000 + MINOR * 100 + PATCH`
/// (`COUNTERHAL_VERSION_NUMBER` is the header's).
#[unsafe(no_mangle)]
pub extern "C" fn counterhal_version() -> c_int {
    crate::VERSION_NUMBER
}

/// The library's version as text, `"MAJOR.MINOR.PATCH"` (static).
#[unsafe(no_mangle)]
pub extern "C" fn counterhal_version_string() -> *const c_char {
    crate::VERSION_TEXT.as_ptr()
}
