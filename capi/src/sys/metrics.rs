//! The metric functions (`counterhal_metrics_*`); the module note of [`super`] holds for every
//! `unsafe` block here, and: a `counterhal_metrics_t *` is NULL (refused) or a live pointer
//! this library returned, used by one thread at a time; `counterhal_metric_value_t` is
//! [`MetricValueC`] (`#[repr(C)]`, its layout checked below).

use counterhal_cboundary as boundary;
use std::ffi::{c_char, c_int};

use counterhal_hal::Reading;

use crate::{CResult, Failure, Handle, MetricValueC, MetricsC, code};

use super::{
    forked, forks, guard, handle, null, optional, put, readings, room, string, write_text,
};

/// `counterhal_metric_value_t` is a `double` then an `int`, padded to the `double`'s
/// alignment (16 bytes on x86_64 and aarch64; 12 on i686, whose `double` aligns to 4).
const _: () = assert!(
    size_of::<MetricValueC>() == (8 + size_of::<c_int>()).next_multiple_of(align_of::<f64>())
        && align_of::<MetricValueC>() == align_of::<f64>()
        && std::mem::offset_of!(MetricValueC, status) == 8
);

/// The metric set behind `m`, or the refusal of NULL or of a parent's set after `fork()`.
///
/// # Safety
/// `m` is NULL or a live metric set of this thread.
unsafe fn metrics<'a>(m: *mut MetricsC) -> CResult<&'a mut MetricsC> {
    // SAFETY: a live metric set this library returned, used by one thread at a time.
    let set = unsafe { m.as_mut() }.ok_or_else(|| null("the metric set"))?;
    match set.generation == forks() {
        true => Ok(set),
        false => Err(forked("this metric set")),
    }
}

/// The C string at `index` of `texts` of the set `m`, or NULL (a NULL set or an index out of
/// range).
///
/// # Safety
/// `m` is NULL or a live metric set, not changed during the call.
unsafe fn text_at(
    m: *const MetricsC,
    index: usize,
    texts: fn(&MetricsC) -> &[std::ffi::CString],
) -> *const c_char {
    // SAFETY: NULL or a live metric set.
    match unsafe { m.as_ref() }.and_then(|set| texts(set).get(index)) {
        Some(text) => text.as_ptr(),
        None => std::ptr::null(),
    }
}

/// Opens the metrics or groups `names` (comma-separated) on a `COUNTERHAL_TARGET_*`, disabled.
///
/// # Safety
/// See the module note; `cpus` may be NULL unless the kind is `COUNTERHAL_TARGET_CPUS`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_metrics_open(
    ch: *mut Handle,
    names: *const c_char,
    kind: c_int,
    id: u32,
    cpus: *const c_char,
    out: *mut *mut MetricsC,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live handle.
        let handle = unsafe { handle(ch) }?;
        // SAFETY: a NUL-terminated string valid for the call.
        let names = unsafe { string(names, "the metric names") }?;
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: NULL or a NUL-terminated string valid for the call.
        let cpus = unsafe { optional(cpus, "cpus") }?;
        let set = Box::into_raw(Box::new(MetricsC::open(handle, names, kind, id, cpus)?));
        // SAFETY: `out` is valid for one write.
        unsafe { put(out, set, "out") }?;
        Ok(code::OK)
    })
}

/// Writes the events the metrics `names` read on the handle's CPU model into `buf[0..len)`,
/// one a line, NUL-terminated; their number.
///
/// # Safety
/// See the module note; `buf` is NULL (only when `len` is 0) or valid for `len` writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_metrics_events_needed(
    ch: *mut Handle,
    names: *const c_char,
    buf: *mut c_char,
    len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live handle.
        let handle = unsafe { handle(ch) }?;
        // SAFETY: a NUL-terminated string valid for the call.
        let names = unsafe { string(names, "the metric names") }?;
        if buf.is_null() && len > 0 {
            return Err(null("the buffer"));
        }
        let len = room::<u8>(len, "the buffer")?;
        let events = crate::metrics::events_needed(handle, names)?;
        let text = events.join("\n");
        // SAFETY: `buf` is non-NULL where `len` > 0 (checked above) and valid for `len`
        // writes, within `isize::MAX` bytes.
        if !unsafe { write_text(buf, len, &text) } {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "the buffer holds {len} bytes; the events of `{names}` need {} with the \
                     NUL (written cut): pass a buffer of at least that many",
                    text.len() + 1
                ),
            ));
        }
        Ok(c_int::try_from(events.len()).unwrap_or(c_int::MAX))
    })
}

/// How many metrics the set holds.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_metrics_size(m: *mut MetricsC) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live metric set of this thread.
        let set = unsafe { metrics(m) }?;
        Ok(c_int::try_from(set.names.len()).unwrap_or(c_int::MAX))
    })
}

/// The name of metric `index`, or NULL.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_metrics_name(m: *mut MetricsC, index: usize) -> *const c_char {
    boundary::catch(
        || {
            // SAFETY: NULL or a live metric set of this thread.
            unsafe { text_at(m, index, |set| &set.names) }
        },
        std::ptr::null,
    )
}

/// The unit of metric `index` (`insn per cycle`, `faults/sec`, `%`), or NULL.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_metrics_unit(m: *mut MetricsC, index: usize) -> *const c_char {
    boundary::catch(
        || {
            // SAFETY: NULL or a live metric set of this thread.
            unsafe { text_at(m, index, |set| &set.units) }
        },
        std::ptr::null,
    )
}

/// How many events the set counts for its metrics.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_metrics_event_count(m: *mut MetricsC) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live metric set of this thread.
        let set = unsafe { metrics(m) }?;
        Ok(c_int::try_from(set.events.len()).unwrap_or(c_int::MAX))
    })
}

/// The name of event `index` behind the metrics, or NULL.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_metrics_event_name(
    m: *mut MetricsC,
    index: usize,
) -> *const c_char {
    boundary::catch(
        || {
            // SAFETY: NULL or a live metric set of this thread.
            unsafe { text_at(m, index, |set| &set.events) }
        },
        std::ptr::null,
    )
}

/// Starts counting.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_metrics_enable(m: *mut MetricsC) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live metric set of this thread.
        unsafe { metrics(m) }?.enable()?;
        Ok(code::OK)
    })
}

/// Stops counting.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_metrics_disable(m: *mut MetricsC) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live metric set of this thread.
        unsafe { metrics(m) }?.disable()?;
        Ok(code::OK)
    })
}

/// Reads the events and writes each metric's value into `out[0..n)`.
///
/// # Safety
/// See the module note; `out` is NULL or valid for `n` writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_metrics_read(
    m: *mut MetricsC,
    out: *mut MetricValueC,
    n: usize,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live metric set of this thread.
        let set = unsafe { metrics(m) }?;
        if out.is_null() {
            return Err(null("the values buffer"));
        }
        let n = room::<MetricValueC>(n, "the values buffer")?.min(set.names.len());
        // SAFETY: non-NULL and valid for writes of `n` values (no more than the caller's).
        let out = unsafe { std::slice::from_raw_parts_mut(out, n) };
        set.read(out)?;
        Ok(code::OK)
    })
}

/// The events' readings of the last `counterhal_metrics_read` into `out[0..n)`.
///
/// # Safety
/// See the module note; `out` is NULL or valid for `n` writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_metrics_readings(
    m: *mut MetricsC,
    out: *mut Reading,
    n: usize,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live metric set of this thread.
        let set = unsafe { metrics(m) }?;
        let needed = set.readings.len();
        // SAFETY: NULL or valid for `n` writes.
        let out = unsafe { readings(out, n, needed) }?;
        if out.len() < needed {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "the readings buffer holds {n} readings; the set has {needed} events: pass \
                     counterhal_metrics_event_count's number"
                ),
            ));
        }
        out.copy_from_slice(&set.readings);
        Ok(code::OK)
    })
}

/// Destroys a metric set; NULL is a no-op.
///
/// # Safety
/// See the module note; `m` is not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_metrics_destroy(m: *mut MetricsC) {
    // SAFETY: NULL or a live metric set this library returned, given back once.
    unsafe { super::free(m) }
}
