//! The device interface's C functions (PAPI 7.0's sysdetect component): each turns the
//! handle into the device type it points at and writes the answer of [`crate::devices`]
//! in the C type the attribute's name says.

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void};

use super::guard;
use crate::codes::{EINVAL, OK};
use crate::device_types::DevType;
use crate::devices::{self, Value};

/// The index of the device type `handle` points at, if it is one of ours.
fn type_index(handle: *mut c_void) -> Option<usize> {
    devices::this_machine()
        .ok()?
        .iter()
        .position(|t| std::ptr::eq(t as *const DevType as *const c_void, handle))
}

/// Writes `value` through `out` in its C type.
///
/// # Safety
/// `out` is NULL or valid for a write of the value's C type.
unsafe fn write(out: *mut c_void, value: Value) -> c_int {
    if out.is_null() {
        return EINVAL;
    }
    match value {
        // SAFETY: `out` is non-NULL and points at an int (the caller's promise).
        Value::Int(v) => unsafe { out.cast::<c_int>().write(v) },
        // SAFETY: `out` is non-NULL and points at an unsigned int (the caller's promise).
        Value::Uint(v) => unsafe { out.cast::<c_uint>().write(v) },
        // SAFETY: `out` is non-NULL and points at an unsigned long (the caller's promise).
        Value::Ulong(v) => unsafe { out.cast::<c_ulong>().write(v as c_ulong) },
        // SAFETY: `out` is non-NULL and points at a `const char *` (the caller's promise).
        Value::Text(v) => unsafe { out.cast::<*const c_char>().write(v.as_ptr()) },
    }
    OK
}

/// `PAPI_enum_dev_type`: the next device type whose bit `modifier` has (any with
/// `PAPI_DEV_TYPE_ENUM__FIRST`), its handle written to `handle`; `PAPI_EINVAL` past the last
/// (the handle set to NULL).
///
/// # Safety
/// `handle` is NULL or valid for a write of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_enum_dev_type(modifier: c_int, handle: *mut *mut c_void) -> c_int {
    guard(|| {
        if handle.is_null() {
            return EINVAL;
        }
        let found = devices::enumerate(modifier)
            .and_then(|i| Ok(&devices::this_machine()?[i] as *const DevType as *mut c_void));
        let (found, code) = match found {
            Ok(t) => (t, OK),
            Err(e) => (std::ptr::null_mut(), e),
        };
        // SAFETY: checked non-NULL; the caller's pointer variable.
        unsafe { handle.write(found) };
        code
    })
}

/// `PAPI_get_dev_type_attr`: an attribute of the device type `handle`.
///
/// # Safety
/// `handle` came from `PAPI_enum_dev_type` (another is `PAPI_EINVAL`); `value` is NULL or
/// points at a variable of the attribute's type (`int` or `const char *`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_dev_type_attr(
    handle: *mut c_void,
    attr: c_int,
    value: *mut c_void,
) -> c_int {
    guard(|| {
        let Some(index) = type_index(handle) else {
            return EINVAL;
        };
        match devices::type_attr(index, attr) {
            // SAFETY: as this function's.
            Ok(v) => unsafe { write(value, v) },
            Err(e) => e,
        }
    })
}

/// `PAPI_get_dev_attr`: an attribute of device `id` of the type `handle`.
///
/// # Safety
/// `handle` came from `PAPI_enum_dev_type` (another is `PAPI_EINVAL`); `value` is NULL or
/// points at a variable of the attribute's type (`unsigned int`, `unsigned long` or
/// `const char *`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_dev_attr(
    handle: *mut c_void,
    id: c_int,
    attr: c_int,
    value: *mut c_void,
) -> c_int {
    guard(|| {
        let Some(index) = type_index(handle) else {
            return EINVAL;
        };
        match devices::dev_attr(index, id, attr) {
            // SAFETY: as this function's.
            Ok(v) => unsafe { write(value, v) },
            Err(e) => e,
        }
    })
}
