//! The sampler functions (`counterhal_sampler_*`); the module note of [`super`] holds for every
//! `unsafe` block here, and: a `counterhal_sampler_t *` is NULL (refused) or a live pointer
//! this library returned, used by one thread at a time; a C callback is a valid function of
//! its declared type, which does not unwind.

use std::ffi::{c_char, c_int, c_void};

use facade::Rate;

use crate::{CResult, Failure, Handle, SampleC, SamplerC, code};

use super::{forked, forks, guard, handle, null, put, string};

/// `counterhal_sample_fn`.
pub type SampleFn = unsafe extern "C" fn(sample: *const SampleC, arg: *mut c_void);
/// `counterhal_overflow_fn`.
pub type OverflowFn = unsafe extern "C" fn(address: u64, arg: *mut c_void);

/// The sampler behind `s`, or the refusal of NULL or of a parent's sampler after `fork()`.
///
/// # Safety
/// `s` is NULL or a live sampler of this thread.
unsafe fn sampler<'a>(s: *mut SamplerC) -> CResult<&'a mut SamplerC> {
    // SAFETY: a live sampler this library returned, used by one thread at a time.
    let sampler = unsafe { s.as_mut() }.ok_or_else(|| null("the sampler"))?;
    match sampler.generation == forks() {
        true => Ok(sampler),
        false => Err(forked("this sampler")),
    }
}

/// Opens a sampler at `rate`: the common part of the two `open` functions.
///
/// # Safety
/// As [`counterhal_sampler_open`].
unsafe fn open(
    ch: *mut Handle,
    event: *const c_char,
    rate: Rate,
    fields: u32,
    pages: usize,
    out: *mut *mut SamplerC,
) -> CResult<c_int> {
    // SAFETY: NULL or a live handle.
    let handle = unsafe { handle(ch) }?;
    // SAFETY: a NUL-terminated string valid for the call.
    let name = unsafe { string(event, "the event name") }?;
    if out.is_null() {
        return Err(null("out"));
    }
    let sampler = Box::into_raw(Box::new(SamplerC::open(handle, name, rate, fields, pages)?));
    // SAFETY: `out` is valid for one write.
    unsafe { put(out, sampler, "out") }?;
    Ok(code::OK)
}

/// A sampler of `event` on the calling thread, recording every `period` events.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_sampler_open(
    ch: *mut Handle,
    event: *const c_char,
    period: u64,
    fields: u32,
    ring_pages: usize,
    out: *mut *mut SamplerC,
) -> c_int {
    // SAFETY: the caller's pointers, as the module note says.
    guard(|| unsafe { open(ch, event, Rate::Period(period), fields, ring_pages, out) })
}

/// A sampler of `event` on the calling thread, recording about `hz` times a second.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_sampler_open_frequency(
    ch: *mut Handle,
    event: *const c_char,
    hz: u64,
    fields: u32,
    ring_pages: usize,
    out: *mut *mut SamplerC,
) -> c_int {
    // SAFETY: the caller's pointers, as the module note says.
    guard(|| unsafe { open(ch, event, Rate::Frequency(hz), fields, ring_pages, out) })
}

/// Starts sampling.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_sampler_start(s: *mut SamplerC) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live sampler.
        facade::Sampler::enable(&mut unsafe { sampler(s) }?.sampler)?;
        Ok(code::OK)
    })
}

/// Stops sampling; the records stay to be read.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_sampler_stop(s: *mut SamplerC) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live sampler.
        facade::Sampler::disable(&mut unsafe { sampler(s) }?.sampler)?;
        Ok(code::OK)
    })
}

/// Hands each sample recorded since the last read to `callback` with `arg`; how many.
///
/// # Safety
/// See the module note; `callback` is a valid `counterhal_sample_fn`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_sampler_read(
    s: *mut SamplerC,
    callback: Option<SampleFn>,
    arg: *mut c_void,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live sampler.
        let sampler = unsafe { sampler(s) }?;
        let callback = callback.ok_or_else(|| null("the callback"))?;
        let handed = sampler.read(&mut |sample| {
            // SAFETY: the caller's callback, given a sample valid for the call.
            unsafe { callback(sample, arg) }
        })?;
        Ok(c_int::try_from(handed).unwrap_or(c_int::MAX))
    })
}

/// The samples the kernel could not write (a full ring) since the sampler opened.
///
/// # Safety
/// See the module note; `lost` is valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_sampler_lost(s: *mut SamplerC, lost: *mut u64) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live sampler.
        let value = unsafe { sampler(s) }?.lost()?;
        // SAFETY: `lost` is NULL (refused) or valid for one write.
        unsafe { put(lost, value, "lost") }?;
        Ok(code::OK)
    })
}

/// The event's count so far (every event, not only those sampled).
///
/// # Safety
/// See the module note; `count` is valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_sampler_count(s: *mut SamplerC, count: *mut u64) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live sampler.
        let value = unsafe { sampler(s) }?.count()?;
        // SAFETY: `count` is NULL (refused) or valid for one write.
        unsafe { put(count, value, "count") }?;
        Ok(code::OK)
    })
}

/// The Rust side of a C overflow callback: `token` is the address of the sampler's
/// `(callback, arg)` pair.
fn relay(overflow: &facade::Overflow) {
    let pair = overflow.token as *const (usize, usize);
    // SAFETY: the token is the address of the boxed pair `counterhal_sampler_overflow` stored
    // in the sampler, which outlives its signals (the sampler stops them when destroyed).
    let (callback, arg) = unsafe { *pair };
    // SAFETY: `callback` was stored from a valid `counterhal_overflow_fn`.
    let callback: OverflowFn = unsafe { std::mem::transmute::<usize, OverflowFn>(callback) };
    // SAFETY: the caller's callback, with the caller's argument.
    unsafe { callback(overflow.address, arg as *mut c_void) };
}

/// Calls `callback(address, arg)` at each overflow, in a signal handler on the calling
/// thread. Once per sampler.
///
/// # Safety
/// See the module note; `callback` is a valid, async-signal-safe `counterhal_overflow_fn`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_sampler_overflow(
    s: *mut SamplerC,
    callback: Option<OverflowFn>,
    arg: *mut c_void,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live sampler.
        let sampler = unsafe { sampler(s) }?;
        let callback = callback.ok_or_else(|| null("the callback"))?;
        if sampler.overflow.is_some() {
            return Err(Failure::new(
                code::STATE,
                "the sampler has an overflow callback already",
            ));
        }
        let pair = Box::new((callback as usize, arg as usize));
        let token = &*pair as *const (usize, usize) as usize;
        sampler.overflow = Some(pair);
        if let Err(e) = sampler.sampler.on_overflow(relay, token) {
            sampler.overflow = None;
            return Err(e.into());
        }
        Ok(code::OK)
    })
}

/// Enables the sampler for `overflows` more overflows, after which it stops itself.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_sampler_refresh(s: *mut SamplerC, overflows: c_int) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live sampler.
        let sampler = unsafe { sampler(s) }?;
        let overflows = u32::try_from(overflows)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                Failure::new(
                    code::INVALID_ARGUMENT,
                    format!("{overflows} overflows: refresh for at least 1"),
                )
            })?;
        sampler.sampler.refresh(overflows)?;
        Ok(code::OK)
    })
}

/// Destroys a sampler (its overflow signals stop first); NULL is a no-op.
///
/// # Safety
/// See the module note; `s` is not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_sampler_destroy(s: *mut SamplerC) {
    let _ = guard(|| {
        if s.is_null() {
            return Ok(code::OK);
        }
        // SAFETY: a live sampler this library returned, not used after this call; the
        // sampler inside is dropped (stopping its signals) before the callback pair.
        let boxed = unsafe { Box::from_raw(s) };
        let SamplerC {
            sampler, overflow, ..
        } = *boxed;
        // The sampler first: on Linux its drop stops the signals that read the pair. (Where no
        // backend samples, its type holds nothing to drop, which clippy notes.)
        #[allow(clippy::drop_non_drop)]
        drop(sampler);
        drop(overflow);
        Ok(code::OK)
    });
}
