//! `PAPI_overflow` and `PAPI_sprofil` on an event set: PAPI 7.0's checks in its order, the
//! set's overflowing events (each an overflow slot, [`crate::overflow`], whose sampler
//! the set opens at `PAPI_start`) and the handler they share, the set's.

use crate::codes::{EINVAL, EISRUN, ENOEVNT, OK};
use crate::library::{
    ATTACHED, CPU_ATTACHED, OVERFLOWING, PROFILING, PapiSet, RUNNING, find_set, with_handle,
    with_set,
};
use counterhal_hal::BackendExt;

/// `PAPI_overflow`: a `threshold` of 0 turns the event's overflow off. `handler` is the C
/// handler's address; `callback` the function the sampler calls with the slot.
pub fn overflow(
    handle: i32,
    code: i32,
    threshold: i32,
    handler: usize,
    callback: facade::OverflowCallback,
) -> i32 {
    with_handle(|library| {
        let (chosen, sde_api) = (&library.chosen, library.components.sde);
        let set = find_set(&mut library.sets, handle)?;
        // PAPI 7.0's order (papi.c `PAPI_overflow`): the set, its component, whether it runs,
        // whether it is attached to a thread or a CPU (PAPI_EINVAL), the event, the
        // threshold; then a set with no overflow yet needs a handler and a threshold, and a
        // threshold of 0 turns off an event that overflows. A set that overflows already
        // takes a NULL handler (see crate::overflow).
        set.assigned()?;
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        if set.state & (ATTACHED | CPU_ATTACHED) != 0 {
            return Err(EINVAL);
        }
        let index = set
            .events
            .iter()
            .position(|(c, _, _)| *c == code)
            .ok_or(ENOEVNT)?;
        if threshold < 0 {
            return Err(EINVAL);
        }
        if set.overflows.is_empty() && (handler == 0 || threshold == 0) {
            return Err(EINVAL);
        }
        if threshold == 0 && !set.overflows.iter().any(|s| s.code == code) {
            return Err(EINVAL);
        }
        let sde = crate::sde::owns(set);
        if let Some(at) = set.overflows.iter().position(|s| s.code == code) {
            crate::unlocked::UNLOCKED
                .sde_watches
                .forget(set.overflows[at].slot);
            crate::unlocked::UNLOCKED
                .overflows
                .free_slot(set.overflows[at].slot);
            set.overflows.remove(at);
            // Its sampler (kept after a stop for the counts) goes with it.
            set.samplers.clear();
        }
        if threshold == 0 {
            if sde {
                crate::sde::overflow(sde_api, handle, set, index, 0, None);
            }
            if set.overflows.is_empty() {
                set.state &= !OVERFLOWING;
            }
            give_handler(set, handler);
            return Ok(OK);
        }
        if !sde && !chosen.backend().dyn_capabilities().sampling() {
            return Err(crate::codes::ENOSUPP);
        }
        let slot = crate::unlocked::UNLOCKED
            .overflows
            .take_slot(handle, handler, 1i64 << index.min(62))
            .ok_or(crate::codes::ECOUNT)?;
        if sde {
            let status = crate::sde::overflow(sde_api, handle, set, index, threshold, Some(slot));
            if status != OK {
                crate::unlocked::UNLOCKED.overflows.free_slot(slot);
                return Err(status);
            }
        }
        // Before any start: the first start's own call already holds the signal back.
        if let Some(signal) = chosen
            .backend()
            .sampling()
            .and_then(|sampling| sampling.overflow_signal())
        {
            crate::unlocked::UNLOCKED
                .overflow_signal
                .store(signal, std::sync::atomic::Ordering::Relaxed);
        }
        set.overflows.push(crate::overflow::Spec {
            code,
            threshold: threshold as u64,
            slot,
            callback,
        });
        set.state |= OVERFLOWING;
        give_handler(set, handler);
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// Gives every overflowing event of `set` the C handler `handler`: PAPI 7.0 keeps one handler
/// per set, the one the last `PAPI_overflow` call named (tests/c/overflow_handlers.c).
fn give_handler(set: &PapiSet, handler: usize) {
    for spec in &set.overflows {
        crate::unlocked::UNLOCKED
            .overflows
            .set_handler(spec.slot, handler);
    }
}

/// Whether event `code` of set `handle` is profiled (`PAPI_ENOEVST` for no set).
pub fn profiled(handle: i32, code: i32) -> Result<bool, i32> {
    with_set(handle, |_, set| {
        Ok(set
            .overflows
            .iter()
            .any(|s| s.code == code && crate::unlocked::UNLOCKED.overflows.profiles(s.slot)))
    })
}

/// `PAPI_sprofil`'s checks and its overflow, as PAPI 7.0's: `PAPI_ENOEVST`, `PAPI_EISRUN`,
/// `PAPI_EINVAL` for an attached set, `PAPI_ENOCMP` for one not tied to the component,
/// `PAPI_ENOEVNT` for an event not in it, then `buffers`' answer (the checks of the buffers'
/// scales and of the flags, all `PAPI_EINVAL`), `PAPI_EINVAL` for a negative threshold or for
/// 0 when the event is not profiled. Then the event overflows every `threshold` events (0: no
/// more); the overflow slot it took, to which the caller ties the buffers.
pub fn profile(
    handle: i32,
    code: i32,
    threshold: i32,
    buffers: Result<(), i32>,
    callback: facade::OverflowCallback,
) -> Result<Option<usize>, i32> {
    with_set(handle, |_, set| {
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        if set.state & (ATTACHED | CPU_ATTACHED) != 0 {
            return Err(EINVAL);
        }
        set.assigned()?;
        if !set.events.iter().any(|(c, _, _)| *c == code) {
            return Err(ENOEVNT);
        }
        buffers?;
        let profiled = set
            .overflows
            .iter()
            .any(|s| s.code == code && crate::unlocked::UNLOCKED.overflows.profiles(s.slot));
        if threshold < 0 || (threshold == 0 && !profiled) {
            return Err(EINVAL);
        }
        Ok(())
    })?;
    // A handler address no C function has: the dispatch finds the slot's profile first.
    let status = overflow(
        handle,
        code,
        threshold,
        crate::overflow::PROFILE_HANDLER,
        callback,
    );
    if status != OK {
        return Err(status);
    }
    with_set(handle, |_, set| {
        let slot = set
            .overflows
            .iter()
            .find(|s| s.code == code)
            .map(|s| s.slot);
        if slot.is_some() {
            set.state |= PROFILING;
        } else if set.overflows.is_empty() {
            set.state &= !PROFILING;
        }
        Ok(slot)
    })
}

/// `PAPI_get_overflow_event_index`: the indices in the set of the events whose bits are in
/// `vector`.
pub fn overflow_indices(handle: i32, vector: i64) -> Result<Vec<i32>, i32> {
    with_set(handle, |_, set| {
        Ok((0..set.events.len().min(63))
            .filter(|i| vector & (1i64 << i) != 0)
            .map(|i| i as i32)
            .collect())
    })
}
