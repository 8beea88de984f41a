//! The C functions: each turns its pointers into Rust values, runs the matching code of the
//! crate root inside the boundary's guard (`counterhal_cboundary`: no panic crosses into C,
//! thread cancellation held off), records a failure as this
//! thread's last error and returns its code. Everything `unsafe` in this crate is here.
//!
//! # Safety
//!
//! The invariants every `unsafe` block here relies on, which the header states as the
//! caller's part of the contract:
//! - A `counterhal_t *` or `counterhal_set_t *` is NULL (refused) or a pointer this library
//!   returned and that was not yet closed or destroyed, used by one thread at a time (a
//!   `counterhal_t` may be shared: its functions take it shared, apart from `counterhal_list`,
//!   whose results the header says live until the next listing of that handle).
//! - A `const char *` is NULL (refused) or a NUL-terminated string valid for the call.
//! - An output array `out` of `n` elements is NULL (refused) or valid for writes of `n`
//!   elements for the call; `counterhal_reading_t` has [`Reading`]'s layout (checked below).
//! - An output pointer (`counterhal_t **`, `counterhal_set_t **`) is NULL (refused) or valid
//!   for one write.
//!
//! No slice is ever built longer than `isize::MAX` bytes (a larger `n` is refused), nor
//! longer than the call needs.

use std::ffi::{c_char, c_int};

use counterhal_cboundary::{self as boundary, forks, without_cancellation, write_text};
use counterhal_hal::Reading;

use crate::{CResult, Choice, Failure, Handle, Set, SetCell, code, fail, one_call_at_a_time};

mod events;
mod metrics;
mod open;
mod regions;
mod samplers;
mod sets;
pub(crate) use sets::this_thread_id;

/// `counterhal_reading_t` is three `uint64_t`s, as [`Reading`] is (`#[repr(C)]`).
const _: () = assert!(size_of::<Reading>() == 24 && align_of::<Reading>() == align_of::<u64>());

/// `counterhal_event_info_t`: one listed event; the strings live until the next
/// `counterhal_list` on the same handle, or its close.
#[repr(C)]
pub struct EventInfo {
    section: *const c_char,
    name: *const c_char,
    description: *const c_char,
    encoding: *const c_char,
    reason: *const c_char,
    usable: c_int,
}

/// Runs `f` inside the boundary's guard (no panic crosses into C, cancellation held off),
/// turning a failure or a panic into its code (recorded as the last error); a call made
/// inside another on this thread (from a signal handler) is refused with `COUNTERHAL_EBUSY`
/// before anything runs.
fn guard(f: impl FnOnce() -> CResult<c_int>) -> c_int {
    without_cancellation(|| {
        one_call_at_a_time(|| boundary::catch(|| f().unwrap_or_else(fail), panicked))
    })
}

/// The answer to a panic caught at the C boundary.
#[cold]
fn panicked() -> c_int {
    fail(Failure::new(
        code::INTERNAL,
        "counterhal failed inside (a panic was caught at the C boundary): please report it",
    ))
}

/// The refusal of a handle or set (`what`) made in the parent before a fork.
fn forked(what: &str) -> Failure {
    Failure::new(
        code::STATE,
        format!(
            "{what} was made in the parent process before fork(): nothing carries over to a \
             child (hint: in the child open a new handle with counterhal_open and make new \
             sets; counterhal_close and counterhal_set_destroy still free the parent's)"
        ),
    )
}

/// The refusal of a NULL `what`.
fn null(what: &str) -> Failure {
    Failure::new(code::INVALID_ARGUMENT, format!("{what} is NULL"))
}

/// `text` as UTF-8, or the refusal naming `what`.
///
/// # Safety
/// `text` is NULL or a NUL-terminated string valid for the call (module note).
unsafe fn string<'a>(text: *const c_char, what: &str) -> CResult<&'a str> {
    // SAFETY: NULL or NUL-terminated and valid for the call by the caller's contract.
    unsafe { boundary::text(text) }.map_err(|error| match error {
        boundary::TextError::Null => null(what),
        boundary::TextError::NotUtf8 => {
            Failure::new(code::INVALID_ARGUMENT, format!("{what} is not UTF-8"))
        }
    })
}

/// The set behind `set`, or the refusal of NULL.
///
/// # Safety
/// `set` is NULL or a live set used by this thread alone (module note), and no other
/// reference to its set lives (the calls that take it run one at a time on a thread:
/// [`guard`]).
#[inline]
unsafe fn set_mut<'a>(set: *mut SetCell) -> CResult<&'a mut Set> {
    // SAFETY: a live set this library returned; its cell is shared (a signal handler's
    // counterhal_set_read reads beside it, never into the cell).
    let cell = unsafe { set.as_ref() }.ok_or_else(|| null("the set"))?;
    match cell.generation == forks() {
        // SAFETY: one call at a time changes the set in its cell (see above).
        true => Ok(unsafe { &mut *cell.set.get() }),
        false => Err(forked("this set")),
    }
}

/// The set behind `set` to read its names, or `None` for NULL.
///
/// # Safety
/// `set` is NULL or a live set used by this thread alone, not changed during the call.
#[inline]
unsafe fn set_ref<'a>(set: *mut SetCell) -> Option<&'a Set> {
    // SAFETY: a live set this library returned, or NULL.
    let cell = unsafe { set.as_ref() }?;
    // SAFETY: no call changes the set while this one reads it (the caller's promise).
    Some(unsafe { &*cell.set.get() })
}

/// The handle behind `ch`, or the refusal of NULL.
///
/// # Safety
/// `ch` is NULL or a live handle (module note).
unsafe fn handle<'a>(ch: *const Handle) -> CResult<&'a Handle> {
    // SAFETY: a live handle this library returned.
    let handle = unsafe { ch.as_ref() }.ok_or_else(|| null("the counterhal handle"))?;
    match handle.generation == forks() {
        true => Ok(handle),
        false => Err(forked("this counterhal handle")),
    }
}

/// `n` as the length of a slice of `T`, refused when no buffer can hold `n` of them (more
/// than `isize::MAX` bytes); `what` names the buffer.
#[inline]
fn room<T>(n: usize, what: &str) -> CResult<usize> {
    match n <= most::<T>() {
        true => Ok(n),
        false => Err(too_many::<T>(n, what)),
    }
}

/// The most `T`s a buffer can hold (`isize::MAX` bytes).
const fn most<T>() -> usize {
    isize::MAX.unsigned_abs()
        / if size_of::<T>() == 0 {
            1
        } else {
            size_of::<T>()
        }
}

/// The refusal of [`room`], out of the read path.
#[cold]
#[inline(never)]
fn too_many<T>(n: usize, what: &str) -> Failure {
    let most = most::<T>();
    Failure::new(
        code::INVALID_ARGUMENT,
        format!(
            "{what} of {n} elements is more than any buffer can hold (at most {most}): \
             pass the number of elements the buffer has"
        ),
    )
}

/// The first `n.min(needed)` of the `n` readings at `out`, or the refusal of NULL or of an
/// `n` no buffer can hold.
///
/// # Safety
/// `out` is NULL or valid for writes of `n` readings (module note).
unsafe fn readings<'a>(out: *mut Reading, n: usize, needed: usize) -> CResult<&'a mut [Reading]> {
    if out.is_null() {
        return Err(null("the readings buffer"));
    }
    let n = room::<Reading>(n, "the readings buffer")?.min(needed);
    // SAFETY: non-NULL and valid for writes of `n` readings for the call (no more than the
    // caller's `n`, which is within `isize::MAX` bytes).
    Ok(unsafe { std::slice::from_raw_parts_mut(out, n) })
}

/// Writes `value` through `out`, or refuses NULL.
///
/// # Safety
/// `out` is NULL or valid for one write (module note).
unsafe fn put<T>(out: *mut T, value: T, what: &str) -> CResult<()> {
    if out.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-NULL and valid for one write.
    unsafe { out.write(value) };
    Ok(())
}

/// Opens the backend named `backend` (NULL: the first usable one).
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_open(out: *mut *mut Handle, backend: *const c_char) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(null("out"));
        }
        let choice = Choice {
            // SAFETY: NULL or a NUL-terminated string valid for the call.
            backend: unsafe { optional(backend, "backend") }?,
            ..Choice::default()
        };
        // SAFETY: `out` is valid for one write.
        unsafe { open_into(out, &choice) }
    })
}

/// `text` as UTF-8 where it is not NULL; `None` for NULL.
///
/// # Safety
/// `text` is NULL or a NUL-terminated string valid for the call (module note).
unsafe fn optional<'a>(text: *const c_char, what: &str) -> CResult<Option<&'a str>> {
    match text.is_null() {
        true => Ok(None),
        // SAFETY: non-NULL, NUL-terminated and valid for the call.
        false => Ok(Some(unsafe { string(text, what) }?)),
    }
}

/// Opens a handle as `choice` says and writes it through `out`.
///
/// # Safety
/// `out` is NULL (refused) or valid for one write.
unsafe fn open_into(out: *mut *mut Handle, choice: &Choice<'_>) -> CResult<c_int> {
    if out.is_null() {
        return Err(null("out"));
    }
    let handle = Box::into_raw(Box::new(Handle::open(choice, forks())?));
    // SAFETY: `out` is non-NULL and valid for one write.
    unsafe { out.write(handle) };
    Ok(code::OK)
}

/// Frees what `value` points at, as one C call: a call from a signal handler while it frees
/// is refused, and a free asked inside another call (from a handler) is not done (the
/// value stays alive; the last error says why) rather than risk the allocator's lock.
///
/// # Safety
/// `value` is NULL or a live pointer this library returned from `Box::into_raw`, given back
/// once and not used again.
unsafe fn free<T>(value: *mut T) {
    if value.is_null() {
        return;
    }
    without_cancellation(|| {
        one_call_at_a_time(|| {
            // SAFETY: a live pointer this library boxed, given back once (the caller's
            // contract).
            let boxed = unsafe { Box::from_raw(value) };
            boundary::catch(move || drop(boxed), || ());
            code::OK
        })
    });
}

/// Closes a handle; NULL is a no-op.
///
/// # Safety
/// See the module note; `ch` is not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_close(ch: *mut Handle) {
    // SAFETY: NULL or a live handle this library returned, given back once.
    unsafe { free(ch) }
}

/// The backend's label (its name, with the CPU model after it for a device model:
/// `msr (model skl)`), or NULL for a NULL handle.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_backend(ch: *const Handle) -> *const c_char {
    boundary::catch(
        || {
            // SAFETY: NULL or a live handle.
            match unsafe { ch.as_ref() } {
                Some(handle) => handle.inner.label.as_ptr(),
                None => std::ptr::null(),
            }
        },
        std::ptr::null,
    )
}

/// The CPU model the names resolve against, or NULL when none matched (or a NULL handle).
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_cpu_model(ch: *const Handle) -> *const c_char {
    boundary::catch(
        || {
            // SAFETY: NULL or a live handle.
            match unsafe { ch.as_ref() }.and_then(|h| h.inner.model.as_ref()) {
                Some(model) => model.as_ptr(),
                None => std::ptr::null(),
            }
        },
        std::ptr::null,
    )
}

/// An empty set counting the thread that starts it.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_create(ch: *mut Handle, out: *mut *mut SetCell) -> c_int {
    // SAFETY: forwarded under the same contract.
    unsafe { counterhal_set_create_for(ch, crate::target::THIS_THREAD, 0, std::ptr::null(), out) }
}

/// An empty set counting on a target: `COUNTERHAL_TARGET_*`, with `id` (thread or process)
/// or `cpus` (a CPU list) where the kind needs one.
///
/// # Safety
/// See the module note; `cpus` may be NULL unless the kind is `COUNTERHAL_TARGET_CPUS`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_create_for(
    ch: *mut Handle,
    kind: c_int,
    id: u32,
    cpus: *const c_char,
    out: *mut *mut SetCell,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live handle.
        let handle = unsafe { handle(ch) }?;
        if out.is_null() {
            return Err(null("out"));
        }
        let cpus = match cpus.is_null() {
            true => None,
            // SAFETY: a NUL-terminated string valid for the call.
            false => Some(unsafe { string(cpus, "cpus") }?),
        };
        let set = Box::into_raw(Box::new(SetCell::new(Set::new(handle, kind, id, cpus)?)));
        // SAFETY: `out` is valid for one write.
        unsafe { put(out, set, "out") }?;
        Ok(code::OK)
    })
}

/// An empty set counting what runs in a control group, on the CPUs of `cpus` (every online
/// CPU where NULL).
///
/// # Safety
/// See the module note; `cpus` may be NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_create_cgroup(
    ch: *mut Handle,
    cgroup: *const c_char,
    cpus: *const c_char,
    out: *mut *mut SetCell,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live handle.
        let handle = unsafe { handle(ch) }?;
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: a NUL-terminated string valid for the call.
        let cgroup = unsafe { string(cgroup, "the cgroup") }?;
        let cpus = match cpus.is_null() {
            true => None,
            // SAFETY: a NUL-terminated string valid for the call.
            false => Some(unsafe { string(cpus, "cpus") }?),
        };
        let set = Box::into_raw(Box::new(SetCell::new(Set::for_cgroup(
            handle, cgroup, cpus,
        )?)));
        // SAFETY: `out` is valid for one write.
        unsafe { put(out, set, "out") }?;
        Ok(code::OK)
    })
}

/// Adds an event by name; its index, or a negative code (the set is unchanged).
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_add(set: *mut SetCell, event: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        let set = unsafe { set_mut(set) }?;
        // SAFETY: a NUL-terminated string valid for the call.
        let name = unsafe { string(event, "the event name") }?;
        set.add(name)
    })
}

/// `counterhal_set_read` of a published set (started, on one thread or CPU): through a
/// shared reference to the set's cell, never into the set, so it takes no lock, allocates
/// nothing and runs beside any other call on the set (the one its signal handler
/// interrupted); its message on failure is static. `None` where the set is NULL, of a parent
/// before `fork()`, not published or being changed, or `out` is too short: the guarded call
/// then answers.
///
/// # Safety
/// `set` is NULL or a live set; `out` is NULL or valid for `n` writes.
#[inline]
unsafe fn read_in_handler(set: *mut SetCell, out: *mut Reading, n: usize) -> Option<c_int> {
    // SAFETY: NULL or a live set; its cell's shared part only is read.
    let cell = unsafe { set.as_ref() }?;
    if out.is_null() || n > most::<Reading>() || cell.generation != forks() {
        return None;
    }
    // SAFETY: `out` is non-NULL and valid for `n` writes (the caller's contract), within
    // `isize::MAX` bytes.
    let out = unsafe { std::slice::from_raw_parts_mut(out, n) };
    match crate::read_published(&cell.reads, out) {
        Ok(()) => Some(code::OK),
        Err(facade::advanced::SharedReadError::NotPublished) => None,
        Err(facade::advanced::SharedReadError::Busy) => None,
        Err(error) => {
            let (code, message) = crate::read_failure(&error);
            crate::record(message);
            Some(code)
        }
    }
}

/// Starts counting from zero.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_start(set: *mut SetCell) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        unsafe { set_mut(set) }?.start()?;
        Ok(code::OK)
    })
}

/// Reads every event into `out[0..size)`; `n` must be at least the set's size.
/// Async-signal-safe on a started set (see [`read_in_handler`]): a signal handler may call
/// it, on top of any other call on the set too.
///
/// # Safety
/// See the module note; a signal handler may call it while its thread is inside another
/// call on the set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_read(
    set: *mut SetCell,
    out: *mut Reading,
    n: usize,
) -> c_int {
    boundary::guard(
        || {
            // SAFETY: as this function's.
            if let Some(code) = unsafe { read_in_handler(set, out, n) } {
                return code;
            }
            guard(|| {
                // SAFETY: NULL or a live set of this thread.
                let set = unsafe { set_mut(set) }?;
                // SAFETY: NULL or valid for `n` writes.
                let out = unsafe { readings(out, n, set.len()) }?;
                set.read(out)?;
                Ok(code::OK)
            })
        },
        panicked,
    )
}

/// Stops counting and reads the final counts into `out`.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_stop(
    set: *mut SetCell,
    out: *mut Reading,
    n: usize,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        let set = unsafe { set_mut(set) }?;
        // SAFETY: NULL or valid for `n` writes.
        let out = unsafe { readings(out, n, set.len()) }?;
        set.stop(out)?;
        Ok(code::OK)
    })
}

/// Zeroes the counts.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_reset(set: *mut SetCell) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        unsafe { set_mut(set) }?.reset()?;
        Ok(code::OK)
    })
}

/// How many places the set counts on (a process's threads, CPUs); 1 for a thread.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_targets(set: *mut SetCell) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        let places = unsafe { set_mut(set) }?.targets()?;
        Ok(c_int::try_from(places).unwrap_or(c_int::MAX))
    })
}

/// Each place's readings, one row of `size` readings per place, into `out[0..n)`; the
/// number of rows.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_read_each(
    set: *mut SetCell,
    out: *mut Reading,
    n: usize,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live set of this thread.
        let set = unsafe { set_mut(set) }?;
        // SAFETY: NULL or valid for `n` writes.
        let out = unsafe { readings(out, n, usize::MAX) }?;
        let rows = set.read_each(out)?;
        Ok(c_int::try_from(rows).unwrap_or(c_int::MAX))
    })
}

/// Destroys a set; NULL is a no-op.
///
/// # Safety
/// See the module note; `set` is not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_set_destroy(set: *mut SetCell) {
    // SAFETY: NULL or a live set this library returned, given back once.
    unsafe { free(set) }
}

/// The estimate a reading implies (value x enabled / running); 0 for NULL or a reading
/// that never ran.
///
/// # Safety
/// `r` is NULL or points at a reading valid for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_scaled(r: *const Reading) -> u64 {
    boundary::catch(
        || {
            // SAFETY: NULL or a reading valid for the call.
            unsafe { r.as_ref() }.map_or(0, crate::scaled)
        },
        || 0,
    )
}

/// The meaning of a code, as a static string.
#[unsafe(no_mangle)]
pub extern "C" fn counterhal_strerror(code: c_int) -> *const c_char {
    boundary::catch(
        || {
            code::ALL
                .iter()
                .find(|(known, ..)| *known == code)
                .map_or(c"unknown error code", |(_, _, meaning)| meaning)
                .as_ptr()
        },
        std::ptr::null,
    )
}

/// This thread's last failure (message and hint); "" before any. The pointer is valid as
/// long as the thread; the text is replaced by its next failing call.
#[unsafe(no_mangle)]
pub extern "C" fn counterhal_last_error() -> *const c_char {
    boundary::catch(|| crate::last_error_pointer().cast(), std::ptr::null)
}

/// Copies this thread's last failure into `buf[0..len)`, cut to fit and NUL-terminated
/// (when `len` > 0), as `snprintf` does; returns its whole length without the NUL.
///
/// # Safety
/// `buf` is NULL (then nothing is written) or valid for `len` writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_last_error_copy(buf: *mut c_char, len: usize) -> usize {
    boundary::catch(
        || {
            let len = match buf.is_null() {
                true => 0,
                // A `len` no buffer can hold is cut to what the message needs (written no further).
                false => len.min(crate::LAST_ERROR_ROOM),
            };
            let out: &mut [u8] = match len {
                0 => &mut [],
                // SAFETY: `buf` is non-NULL and valid for `len` writes by the caller's contract;
                // `len` is at most the caller's.
                len => unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) },
            };
            crate::copy_last_error(out)
        },
        || 0,
    )
}
