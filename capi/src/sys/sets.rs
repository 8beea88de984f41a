//! The set functions beyond add, start, read and stop (its size, each event's name and unit,
//! options, removal, where each row counts) and the library's version; the module note of
//! [`super`] holds for every `unsafe` block here.

use counterhal_cboundary as boundary;
use std::ffi::{c_char, c_int};

use counterhal_hal::Reading;

use crate::{Failure, SetCell, code};

use super::{guard, put, readings, set_mut, set_ref, string};

/// The most entries an `argv` may have before its NULL (Linux's own bound on a command's
/// arguments is smaller): an array without its NULL is refused, not read without end.
const MAX_ARGS: usize = 1 << 17;

/// The calling thread's id, where the OS gives it (Linux `gettid`).
pub(crate) fn this_thread_id() -> Option<u32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // The system call, not glibc's wrapper (added in glibc 2.30), so that libcounterhal
        // loads on glibc 2.28 (docs/install.md).
        // SAFETY: gettid takes no arguments and cannot fail.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
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
    set: *mut SetCell,
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
pub unsafe extern "C" fn counterhal_set_get_option(set: *mut SetCell, option: c_int) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        unsafe { set_mut(set) }?.option(option)
    })
}

/// What opening the set did that the caller should know, in a sentence (where the kernel may
/// not be counted, which events count user space only), or NULL: the note of the set's last
/// start, until the set is changed (an event added or removed, an option set) or destroyed.
///
/// # Safety
/// See the module note of [`super`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_note(set: *mut SetCell) -> *const c_char {
    boundary::catch(
        || {
            // SAFETY: NULL or a live set of this thread.
            match unsafe { set_ref(set) }.and_then(|s| s.note.as_ref()) {
                Some(note) => note.as_ptr(),
                None => std::ptr::null(),
            }
        },
        std::ptr::null,
    )
}

/// Removes the event at `index` (those after it move down one).
///
/// # Safety
/// See the module note of [`super`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_remove(set: *mut SetCell, index: usize) -> c_int {
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
pub unsafe extern "C" fn counterhal_set_place(
    set: *mut SetCell,
    row: usize,
    id: *mut u32,
) -> c_int {
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

/// Runs the command `argv` (ended by NULL; `argv[0]` searched in `PATH`) with the set's events
/// counted from its `exec` to its end, following it as `follow` (`COUNTERHAL_FOLLOW_*`)
/// says; one reading per event into `out[0..n)`, the wait status into `status` (NULL: not
/// wanted). An event that could not be counted reads 0 and the call returns its code, after
/// the command ran.
///
/// # Safety
/// See the module note of [`super`]; `argv` is a NULL-terminated array of NUL-terminated
/// strings; `out` is valid for `n` writes; `status` is NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_run(
    set: *mut SetCell,
    argv: *const *const c_char,
    follow: c_int,
    out: *mut Reading,
    n: usize,
    status: *mut c_int,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        let set = unsafe { set_mut(set) }?;
        let events = set.len();
        // SAFETY: `out` is valid for `n` writes.
        let out = unsafe { readings(out, n, events) }?;
        if out.len() < events {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "the buffer holds {} readings, the set has {events} events",
                    out.len()
                ),
            ));
        }
        // SAFETY: `argv` is NULL-terminated; each entry a NUL-terminated string.
        let argv = unsafe { arguments(argv) }?;
        let run = set.run(&argv, follow)?;
        if !status.is_null() {
            // SAFETY: `status` is valid for one write.
            unsafe { put(status, run.status, "status") }?;
        }
        let mut first_failure = None;
        for (slot, reading) in out.iter_mut().zip(run.readings) {
            *slot = match reading {
                Ok(reading) => reading,
                Err(failure) => {
                    first_failure.get_or_insert(failure);
                    Reading::default()
                }
            };
        }
        first_failure.map_or(Ok(code::OK), Err)
    })
}

/// The strings of a NULL-terminated `argv`.
///
/// # Safety
/// `argv` is NULL or a NULL-terminated array of NUL-terminated strings.
unsafe fn arguments(argv: *const *const c_char) -> Result<Vec<String>, Failure> {
    if argv.is_null() {
        return Err(Failure::new(code::INVALID_ARGUMENT, "argv is NULL"));
    }
    let mut args = Vec::new();
    for i in 0..MAX_ARGS {
        // SAFETY: the array holds entries up to its NULL, and `i` has not passed it.
        let entry = unsafe { argv.add(i) };
        // SAFETY: `entry` points into the array, before or at its NULL.
        let arg = unsafe { *entry };
        if arg.is_null() {
            return Ok(args);
        }
        // SAFETY: a NUL-terminated string.
        args.push(unsafe { string(arg, "an argument of argv") }?.to_owned());
    }
    Err(Failure::new(
        code::INVALID_ARGUMENT,
        format!("argv has no NULL within its first {MAX_ARGS} entries: end it with NULL"),
    ))
}

/// The library's version as `MAJOR * 10000 + MINOR * 100 + PATCH`
/// (`COUNTERHAL_VERSION_NUMBER` is the header's).
#[unsafe(no_mangle)]
pub extern "C" fn counterhal_version() -> c_int {
    boundary::catch(|| crate::VERSION_NUMBER, || code::INTERNAL)
}

/// The library's version as text, `"MAJOR.MINOR.PATCH"` (static).
#[unsafe(no_mangle)]
pub extern "C" fn counterhal_version_string() -> *const c_char {
    boundary::catch(|| crate::VERSION_TEXT.as_ptr(), std::ptr::null)
}

/// How many events the set holds.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_size(set: *mut SetCell) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        let set = unsafe { set_mut(set) }?;
        Ok(c_int::try_from(set.len()).unwrap_or(c_int::MAX))
    })
}

/// The name of event `index`, or NULL (a NULL set or an index out of range).
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_event_name(
    set: *mut SetCell,
    index: usize,
) -> *const c_char {
    boundary::catch(
        || {
            // SAFETY: NULL or a live set of this thread.
            match unsafe { set_ref(set) }.and_then(|s| s.names.get(index)) {
                Some(name) => name.as_ptr(),
                None => std::ptr::null(),
            }
        },
        std::ptr::null,
    )
}

/// The privilege levels event `index` counts (`COUNTERHAL_DOMAIN_*` or-ed: every level its
/// PMU counts for an event without a modifier, `COUNTERHAL_DOMAIN_USER` alone where the OS
/// refused the kernel), or `COUNTERHAL_EINVAL` for an index out of range.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_event_domain(set: *mut SetCell, index: usize) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        let set = unsafe { set_mut(set) }?;
        set.counted_domain(index).ok_or_else(|| {
            Failure::new(
                code::INVALID_ARGUMENT,
                format!("no event {index}: the set holds {}", set.len()),
            )
        })
    })
}

/// What the count of event `index` is in: its unit ("" for a plain count), with what one
/// count is in it stored in `*scale` (1.0 for a plain count) where `scale` is not NULL; NULL
/// for a NULL set or an index out of range.
///
/// # Safety
/// See the module note; `scale` is NULL or points at a writable double.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_event_unit(
    set: *mut SetCell,
    index: usize,
    scale: *mut f64,
) -> *const c_char {
    boundary::catch(
        || {
            // SAFETY: NULL or a live set of this thread.
            let Some((unit, factor)) = unsafe { set_ref(set) }.and_then(|s| s.unit(index)) else {
                return std::ptr::null();
            };
            // SAFETY: NULL or a writable double, as the caller promises.
            if let Some(scale) = unsafe { scale.as_mut() } {
                *scale = factor;
            }
            unit.as_ptr()
        },
        std::ptr::null,
    )
}
