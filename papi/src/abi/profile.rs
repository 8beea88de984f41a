//! `PAPI_profil` and `PAPI_sprofil` ([`crate::profile`]): the buffers read from C, and the
//! overflow callback of `PAPI_overflow` and of profiling, which adds each sample to its bucket
//! or calls the C handler, from the signal handler.

use std::ffi::{c_int, c_longlong, c_uint, c_void};
use std::sync::atomic::Ordering;

use super::guard;
use crate::codes::{EINVAL, OK};
use crate::profile::{self, Buffer, Profile};
use crate::set_overflow;
use crate::unlocked::UNLOCKED;

/// `PAPI_sprofil_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Sprofil {
    /// `pr_base`.
    pub base: *mut c_void,
    /// `pr_size`.
    pub size: c_uint,
    /// `pr_off`.
    pub offset: usize,
    /// `pr_scale`.
    pub scale: c_uint,
}
const _: () =
    assert!(std::mem::size_of::<Sprofil>() == 32 || cfg!(not(target_pointer_width = "64")));

/// Adds a sample at `pc` to the profile of overflow slot `slot`; whether the slot profiles.
/// Async-signal-safe: atomics and plain writes to the caller's buffer.
pub fn record(slot: usize, pc: usize) -> bool {
    let Some(address) = UNLOCKED
        .overflows
        .get(slot)
        .map(|s| s.profile.load(Ordering::Acquire))
    else {
        return false;
    };
    if address == 0 {
        return false;
    }
    // SAFETY: a nonzero entry is a leaked `Profile`, never freed.
    let profile = unsafe { &*(address as *const Profile) };
    let Some((buffer, index, width)) = profile::bucket(profile, pc) else {
        return true;
    };
    let at = buffer.base + index * width;
    let flags = profile.flags;
    // `bucket` checked `index * width < size`, so the bucket lies inside the caller's buffer
    // of `size` bytes, valid while profiling (PAPI_sprofil's contract).
    match width {
        2 => {
            let add = |v: u16| {
                v.wrapping_add(UNLOCKED.profile_generator.increment(flags, u64::from(v)) as u16)
            };
            // SAFETY: inside the caller's buffer (above).
            unsafe { bump(at as *mut u16, add) };
        }
        4 => {
            let add = |v: u32| {
                v.wrapping_add(UNLOCKED.profile_generator.increment(flags, u64::from(v)) as u32)
            };
            // SAFETY: inside the caller's buffer (above).
            unsafe { bump(at as *mut u32, add) };
        }
        _ => {
            let add = |v: u64| v.wrapping_add(UNLOCKED.profile_generator.increment(flags, v));
            // SAFETY: inside the caller's buffer (above).
            unsafe { bump(at as *mut u64, add) };
        }
    }
    true
}

/// Replaces the bucket at `at` by `add` of it.
///
/// # Safety
/// `at` is valid for a read and a write of `T` (alignment not needed).
unsafe fn bump<T: Copy>(at: *mut T, add: impl FnOnce(T) -> T) {
    // SAFETY: the caller's promise.
    let value = unsafe { at.read_unaligned() };
    // SAFETY: as above.
    unsafe { at.write_unaligned(add(value)) };
}

fn profile_with(
    buffers: Vec<Buffer>,
    event_set: c_int,
    event: c_int,
    threshold: c_int,
    flags: c_int,
) -> c_int {
    // A buffer at NULL, which PAPI 7.0 takes and writes to at the first sample, is refused
    // with its other checks of the buffers and flags (all PAPI_EINVAL, after the set's and the
    // event's: set_overflow::profile).
    let null = threshold > 0 && buffers.iter().any(|b| b.base == 0);
    let settled =
        profile::settle(buffers, flags).and_then(|p| if null { Err(EINVAL) } else { Ok(p) });
    let checked = settled.as_ref().map(|_| ()).map_err(|&e| e);
    match (
        set_overflow::profile(event_set, event, threshold, checked, dispatch),
        settled,
    ) {
        (Ok(Some(slot)), Ok(settled)) => {
            if let Some(overflow) = UNLOCKED.overflows.get(slot) {
                let leaked = Box::into_raw(Box::new(settled)) as usize;
                overflow.profile.store(leaked, Ordering::Release);
            }
            OK
        }
        (Ok(_), _) => OK,
        (Err(e), _) => e,
    }
}

/// `PAPI_sprofil`: each sample of `event` every `threshold` events goes to a bucket of one of
/// `count` buffers ([`crate::profile`]); a threshold of 0 stops profiling the event.
///
/// # Safety
/// `prof` is NULL or points at `count` `PAPI_sprofil_t`, whose buffers stay valid while
/// profiling.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_sprofil(
    prof: *mut Sprofil,
    count: c_int,
    event_set: c_int,
    event: c_int,
    threshold: c_int,
    flags: c_int,
) -> c_int {
    guard(|| {
        let count = if prof.is_null() {
            0
        } else {
            count.max(0) as usize
        };
        let buffers: Vec<Buffer> = if count == 0 {
            Vec::new()
        } else {
            // SAFETY: `count` structures at `prof` (the caller's promise).
            unsafe { std::slice::from_raw_parts(prof, count) }
                .iter()
                .map(|p| Buffer {
                    base: p.base as usize,
                    size: p.size,
                    offset: p.offset,
                    scale: p.scale,
                })
                .collect()
        };
        profile_with(buffers, event_set, event, threshold, flags)
    })
}

/// `PAPI_profil`: `PAPI_sprofil` with one buffer.
///
/// # Safety
/// `buf` is valid for `bufsiz` bytes while profiling.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_profil(
    buf: *mut c_void,
    bufsiz: c_uint,
    offset: *mut c_void,
    scale: c_uint,
    event_set: c_int,
    event: c_int,
    threshold: c_int,
    flags: c_int,
) -> c_int {
    guard(|| {
        // As PAPI 7.0's: a threshold of 0 or below turns off an event that is profiled (and is
        // PAPI_EINVAL for one that is not, once the set is known), through PAPI_sprofil with no
        // buffer.
        if threshold <= 0 {
            return match set_overflow::profiled(event_set, event) {
                Ok(true) => profile_with(Vec::new(), event_set, event, 0, flags),
                Ok(false) => crate::library::fail(EINVAL),
                Err(e) => e,
            };
        }
        let buffers = vec![Buffer {
            base: buf as usize,
            size: bufsiz,
            offset: offset as usize,
            scale,
        }];
        profile_with(buffers, event_set, event, threshold, flags)
    })
}

/// `PAPI_overflow_handler_t`.
type Handler = unsafe extern "C" fn(c_int, *mut c_void, c_longlong, *mut c_void);

/// The sampler's overflow callback: adds the sample to the slot's profile, if it has one,
/// else calls the slot's C handler. Async-signal-safe: it reads
/// atomics and calls.
pub fn dispatch(overflow: &facade::Overflow) {
    if record(overflow.token, overflow.address as usize) {
        return;
    }
    let Some((handler, set, vector)) = UNLOCKED.overflows.handler_of(overflow.token) else {
        return;
    };
    // SAFETY: `handler_of` gives only the address of a `PAPI_overflow_handler_t` given to
    // PAPI_overflow (not NULL, not the profiles' placeholder).
    let handler: Handler = unsafe { std::mem::transmute::<usize, Handler>(handler) };
    // SAFETY: the caller of PAPI_overflow promised a handler callable here.
    unsafe {
        handler(
            set,
            overflow.address as usize as *mut c_void,
            vector,
            std::ptr::null_mut(),
        )
    };
}
