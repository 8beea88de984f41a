//! `counterhal_open_with`: a handle opened with a versioned options struct
//! (`counterhal_options_t`) naming the backend, the CPU model and an events file. The module
//! note of [`super`] holds for every `unsafe` block here, and: `options` is NULL or points at
//! `options->size` readable bytes, the first of them a `counterhal_options_t` of at least the
//! first version's size.
//!
//! The struct grows as the kernel's `openat2` and `clone3` structs grow: the caller sets
//! `size` to `sizeof(counterhal_options_t)` of its header, so a library older than the header
//! sees a larger size and accepts it when every byte past the fields it knows is zero (those
//! fields then mean their default), and refuses it otherwise rather than ignore what was
//! asked; a library newer than the header reads only the fields the caller's size covers.

use std::ffi::{CStr, c_char, c_int};
use std::os::unix::ffi::OsStrExt;

use crate::{CResult, Choice, Failure, Handle, code};

use super::{guard, open_into, optional};

/// `counterhal_options_t`, version 1: the fields in the header's order.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OptionsC {
    /// `sizeof(counterhal_options_t)` as the caller's header has it.
    pub size: usize,
    /// The backend's name, or NULL for the first usable.
    pub backend: *const c_char,
    /// The CPU model names resolve against, or NULL for this machine's.
    pub cpu_model: *const c_char,
    /// A TOML events file to read beside the shipped database, or NULL.
    pub events_file: *const c_char,
}

/// The size of the first version, the smallest a caller may pass.
pub const OPTIONS_V1: usize = size_of::<OptionsC>();

/// The largest size taken: a size past it is no `counterhal_options_t` (a caller that forgot
/// to set it), refused rather than read.
pub const OPTIONS_MOST: usize = 4096;

// The header's layout: a size_t, then three pointers, without padding on any ABI.
const _: () = assert!(
    OPTIONS_V1 == size_of::<usize>() + 3 * size_of::<*const c_char>()
        && std::mem::offset_of!(OptionsC, backend) == size_of::<usize>()
        && std::mem::offset_of!(OptionsC, events_file) == OPTIONS_V1 - size_of::<*const c_char>()
);

/// What `options` asks for, as fields this library knows.
///
/// # Safety
/// `options` is non-NULL, aligned, and points at `options->size` readable bytes (the module
/// note).
unsafe fn read_options(options: *const OptionsC) -> CResult<OptionsC> {
    // SAFETY: the caller's struct begins with its size, a size_t, readable and aligned.
    let size = unsafe { options.cast::<usize>().read() };
    if size < OPTIONS_V1 {
        return Err(Failure::new(
            code::INVALID_ARGUMENT,
            format!(
                "the options' size is {size}, less than any counterhal_options_t \
                 ({OPTIONS_V1}): set size to sizeof(counterhal_options_t)"
            ),
        ));
    }
    if size > OPTIONS_MOST {
        return Err(Failure::new(
            code::INVALID_ARGUMENT,
            format!(
                "the options' size is {size}, more than a counterhal_options_t can be \
                 ({OPTIONS_MOST}): set size to sizeof(counterhal_options_t)"
            ),
        ));
    }
    // SAFETY: `size` >= OPTIONS_V1 bytes are readable, so the first version's fields are.
    let known = unsafe { options.read() };
    // SAFETY: OPTIONS_V1 <= size, so the offset is within the caller's struct.
    let past_known = unsafe { options.cast::<u8>().add(OPTIONS_V1) };
    // SAFETY: bytes OPTIONS_V1..size are within the caller's `size` readable bytes (none
    // when the sizes are equal); u8 has no alignment.
    let newer = unsafe { std::slice::from_raw_parts(past_known, size - OPTIONS_V1) };
    if let Some(at) = newer.iter().position(|byte| *byte != 0) {
        return Err(Failure::new(
            code::UNSUPPORTED,
            format!(
                "the options come from a newer counterhal.h (size {size}; this library, {}, \
                 knows {OPTIONS_V1} bytes) and set a field it does not know (byte {}): \
                 link with the library of that header, or leave the newer fields 0",
                env!("CARGO_PKG_VERSION"),
                OPTIONS_V1 + at
            ),
        ));
    }
    Ok(known)
}

/// Opens a handle as `options` says (NULL, or a NULL field: as `counterhal_open` chooses).
///
/// # Safety
/// See the module notes; `options` is NULL or a `counterhal_options_t` of `options->size`
/// readable bytes whose strings are NULL or NUL-terminated and valid for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_open_with(
    out: *mut *mut Handle,
    options: *const OptionsC,
) -> c_int {
    guard(|| {
        let known = match options.is_null() {
            true => None,
            // SAFETY: non-NULL, and `size` readable bytes by the caller's contract.
            false => Some(unsafe { read_options(options) }?),
        };
        let Some(known) = known else {
            // SAFETY: `out` is NULL or valid for one write.
            return unsafe { open_into(out, &Choice::default()) };
        };
        let events_file = match known.events_file.is_null() {
            true => None,
            // SAFETY: non-NULL, NUL-terminated and valid for the call.
            false => Some(std::path::Path::new(std::ffi::OsStr::from_bytes(
                unsafe { CStr::from_ptr(known.events_file) }.to_bytes(),
            ))),
        };
        let choice = Choice {
            // SAFETY: NULL or NUL-terminated strings valid for the call.
            backend: unsafe { optional(known.backend, "options->backend") }?,
            // SAFETY: as above.
            cpu_model: unsafe { optional(known.cpu_model, "options->cpu_model") }?,
            events_file,
        };
        // SAFETY: `out` is NULL or valid for one write.
        unsafe { open_into(out, &choice) }
    })
}
