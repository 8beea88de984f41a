//! The Fortran subroutines of the device interface (see the parent module for the
//! conventions): `PAPIF_enum_dev_type`, `PAPIF_get_dev_type_attr`, `PAPIF_get_dev_attr`.
//!
//! As PAPI 7.0's wrappers (`src/papi_fwrappers.c`): Fortran has no pointer for the C
//! functions' handle, so the library keeps the one the last `PAPIF_enum_dev_type` wrote (one
//! per process; NULL once the walk has ended) and the two attribute subroutines read it;
//! each answers 0 in `handle_index`. A numeric attribute is written to the `INTEGER` value, a
//! name or status to the `CHARACTER` string, blank-padded to its length (the value left
//! alone); an attribute the wrapper does not take is `PAPI_EINVAL`, as PAPI's: among the
//! CPU's, `PAPI_DEV_ATTR__CPU_UINT_NUMA_MEM_SIZE` and `PAPI_DEV_ATTR__CPU_UINT_THR_NUMA_AFFINITY`,
//! which its switch omits.
//!
//! Where this differs from PAPI 7.0, on purpose: a type's name and status are padded with
//! blanks to the string's length (PAPI 7.0 copies them with `strncpy`, padding with NULs, and
//! then writes blanks up to 128 bytes, past a shorter string); a device's name is cut at the
//! string's length (PAPI 7.0 writes blanks up to 128 bytes whatever the length); an attribute
//! asked before any enumeration, or after its end, is the C function's `PAPI_EINVAL` (PAPI 7.0
//! stops the program on an assertion); `PAPI_DEV_ATTR__CUDA_CHAR_DEVICE_NAME` is a string
//! (PAPI 7.0 writes the C string's address into the `INTEGER`); an unsigned long (the GPU
//! types' `UID`s) is cut to the `INTEGER`'s 32 bits (PAPI 7.0 writes 64 bits into it).

use std::ffi::{CStr, c_char, c_int, c_ulong, c_void};

use super::{By, f_string};
use crate::abi::info as c_info;
use crate::codes::{EINVAL, OK};
use crate::library;

/// The device type handle the last `PAPIF_enum_dev_type` received, which the attribute
/// subroutines read: kept by the process's PAPI ([`library::with_fortran_dev_type`]), NULL
/// before any (and from a signal handler that interrupted a call holding the library's lock).
fn kept_dev_type() -> *mut c_void {
    library::with_fortran_dev_type(|kept| *kept).unwrap_or(0) as *mut c_void
}

/// `PAPI_DEV_TYPE_ATTR__CHAR_NAME` and `PAPI_DEV_TYPE_ATTR__CHAR_STATUS`: a type's strings.
const TYPE_STRINGS: [c_int; 2] = [2, 4];

/// The type attributes PAPI 7.0's wrapper reads as `INTEGER`s: `PAPI_DEV_TYPE_ATTR__INT_PAPI_ID`,
/// `__INT_VENDOR_ID`, `__INT_COUNT`.
const TYPE_NUMBERS: [c_int; 3] = [0, 1, 3];

/// `PAPI_DEV_ATTR__CPU_CHAR_NAME`, `PAPI_DEV_ATTR__CUDA_CHAR_DEVICE_NAME` and
/// `PAPI_DEV_ATTR__ROCM_CHAR_DEVICE_NAME`: a device's strings.
const DEVICE_STRINGS: [c_int; 3] = [0, 28, 49];

/// `PAPI_DEV_ATTR__CUDA_ULONG_UID` and `PAPI_DEV_ATTR__ROCM_ULONG_UID`: unsigned longs.
const DEVICE_ULONGS: [c_int; 2] = [27, 48];

/// `PAPI_DEV_ATTR__CPU_UINT_NUMA_MEM_SIZE` and `PAPI_DEV_ATTR__CPU_UINT_THR_NUMA_AFFINITY`,
/// which PAPI 7.0's wrapper does not take.
const DEVICE_NOT_TAKEN: [c_int; 2] = [24, 25];

/// The last device attribute PAPI 7.0 defines (`PAPI_DEV_ATTR__ROCM_UINT_COMP_CAP_MINOR`).
const DEVICE_LAST: c_int = 63;

/// Asks `query` (a C attribute function bound to the kept handle) for a string attribute and
/// copies it, blank-padded, into the Fortran string of `len` bytes at `string`.
///
/// # Safety
/// `string` is NULL or valid for `len` bytes.
unsafe fn string_answer(
    query: impl FnOnce(*mut c_void) -> c_int,
    string: *mut c_char,
    len: usize,
) -> c_int {
    let mut text: *const c_char = std::ptr::null();
    let code = query((&raw mut text).cast());
    if code == OK && !text.is_null() {
        // SAFETY: the C function wrote the address of one of its NUL-terminated strings,
        // which live as long as the library.
        let text = unsafe { CStr::from_ptr(text) };
        // SAFETY: the caller's string of `len` bytes.
        unsafe { f_string(string, len, text.to_bytes()) };
    }
    code
}

/// Asks `query` for a numeric attribute (an `int`, `unsigned int` or, when `wide`, an
/// `unsigned long`) and writes it to the Fortran `INTEGER` `value`, an unsigned long cut to
/// its 32 bits.
fn number_answer(query: impl FnOnce(*mut c_void) -> c_int, value: &By<c_int>, wide: bool) -> c_int {
    // Room for the widest answer; an int or unsigned int lands in its first four bytes.
    let mut answer: c_ulong = 0;
    let code = query((&raw mut answer).cast());
    if code == OK {
        let number = if wide {
            answer as c_int
        } else {
            // SAFETY: `answer` is a local of at least four bytes, aligned for an int.
            unsafe { (&raw const answer).cast::<c_int>().read() }
        };
        value.set(number);
    }
    code
}

fortran! {
    /// `PAPIF_enum_dev_type(modifier, handle_index, check)`: the next device type (the first
    /// with `PAPI_DEV_TYPE_ENUM__FIRST`), kept for the attribute subroutines; `handle_index`
    /// is 0.
    [papif_enum_dev_type, papif_enum_dev_type_, papif_enum_dev_type__, PAPIF_ENUM_DEV_TYPE]
    (modifier: By<c_int>, handle_index: By<c_int>, check: By<c_int>) {
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: a local handle.
        check.set(unsafe { c_info::PAPI_enum_dev_type(modifier.get(), &raw mut handle) });
        library::with_fortran_dev_type(|kept| *kept = handle as usize);
        handle_index.set(0);
    }
    /// `PAPIF_get_dev_type_attr(handle_index, attribute, value, string, check)`: an attribute
    /// of the type the last enumeration reached, a number in `value` or a string in `string`.
    [papif_get_dev_type_attr, papif_get_dev_type_attr_, papif_get_dev_type_attr__, PAPIF_GET_DEV_TYPE_ATTR]
    (handle_index: By<c_int>, attribute: By<c_int>, value: By<c_int>,
     string: *mut c_char, check: By<c_int>, string_len: usize) {
        let handle = kept_dev_type();
        let attribute = attribute.get();
        // SAFETY: the handle the C function gave (or NULL, which it refuses); `out` is a
        // local of the attribute's C type (see `string_answer` and `number_answer`).
        let query = |out| unsafe { c_info::PAPI_get_dev_type_attr(handle, attribute, out) };
        let code = if TYPE_STRINGS.contains(&attribute) {
            // SAFETY: the caller's string of `string_len` bytes.
            unsafe { string_answer(query, string, string_len) }
        } else if TYPE_NUMBERS.contains(&attribute) {
            number_answer(query, &value, false)
        } else {
            EINVAL
        };
        check.set(code);
        handle_index.set(0);
    }
    /// `PAPIF_get_dev_attr(handle_index, id, attribute, value, string, check)`: an attribute
    /// of device (or thread, or node) `id` of the type the last enumeration reached, a number
    /// in `value` or a string in `string`.
    [papif_get_dev_attr, papif_get_dev_attr_, papif_get_dev_attr__, PAPIF_GET_DEV_ATTR]
    (handle_index: By<c_int>, id: By<c_int>, attribute: By<c_int>, value: By<c_int>,
     string: *mut c_char, check: By<c_int>, string_len: usize) {
        let handle = kept_dev_type();
        let (id, attribute) = (id.get(), attribute.get());
        // SAFETY: as in `papif_get_dev_type_attr`.
        let query = |out| unsafe { c_info::PAPI_get_dev_attr(handle, id, attribute, out) };
        let code = if !(0..=DEVICE_LAST).contains(&attribute) || DEVICE_NOT_TAKEN.contains(&attribute) {
            EINVAL
        } else if DEVICE_STRINGS.contains(&attribute) {
            // SAFETY: the caller's string of `string_len` bytes.
            unsafe { string_answer(query, string, string_len) }
        } else {
            number_answer(query, &value, DEVICE_ULONGS.contains(&attribute))
        };
        check.set(code);
        handle_index.set(0);
    }
}
