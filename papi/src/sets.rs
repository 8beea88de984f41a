//! Event sets: PAPI's calls that build, start, read and stop them, and their options.

use counterhal_hal::BackendTarget;
use facade::Group;

use crate::codes::{
    EBUG, ECMP, ECNFLCT, EINVAL, EISRUN, ENOCMP, ENOEVNT, ENOEVST, ENOTRUN, OK, from_error,
};
use crate::library::{
    Components, GRN_SYS, GRN_THR, Library, MULTIPLEXING, PapiSet, RUNNING, STOPPED, Sampled, with,
    with_handle, with_set,
};
use crate::names::{self, Code};
use crate::own::Own;

/// An empty set of thread `master` (PAPI's `master`) at `handle`, tied to no component, with
/// no options: a new set, and what `PAPI_cleanup_eventset` leaves.
fn empty_set(master: std::ffi::c_ulong, handle: usize) -> PapiSet {
    PapiSet {
        events: Vec::new(),
        state: STOPPED,
        group: None,
        // Set when the set is tied to a component, as PAPI 7.0's (0 until then).
        domain: 0,
        granularity: 0,
        system_cpu: None,
        attached: None,
        master,
        cpu: None,
        inherit: false,
        component: -1,
        overflows: Vec::new(),
        samplers: Vec::new(),
        readings: Vec::new(),
        own_counters: Vec::new(),
        own_values: Vec::new(),
        own_starts: Vec::new(),
        generation: forks(),
        reads: crate::unlocked::UNLOCKED.reads.slot_of(handle),
    }
}

/// The library's count of forks now: a set published in another count is a parent's.
fn forks() -> u64 {
    counterhal_cboundary::forks()
}

/// `PAPI_create_eventset`.
pub fn create_eventset() -> Result<i32, i32> {
    with(|library| {
        // The lowest handle free, one a destroyed set left included, as PAPI 7.0 numbers
        // them (papi_internal.c `add_EventSet`: the first empty slot of its table).
        let handle = library
            .sets
            .iter()
            .position(Option::is_none)
            .unwrap_or(library.sets.len());
        // PAPI's `master`: the creating thread.
        let set = empty_set((library.thread_id)(), handle);
        match library.sets.get_mut(handle) {
            Some(free) => *free = Some(set),
            None => library.sets.push(Some(set)),
        }
        Ok(handle as i32)
    })
}

/// `PAPI_add_event`: checks that the event opens beside the set's (a trial open, closed at
/// once), so that the set holds only what counts together.
pub fn add_event(handle: i32, code: i32) -> i32 {
    let result = with_handle(|library| {
        // PAPI 7.0's order (papi.c `PAPI_add_event`, papi_internal.c `_papi_hwi_add_event`):
        // the set, the code's kind, whether the set runs, the code's component, then the
        // event itself.
        let index = set_index(library, handle)?;
        if code as u32 & (names::PRESET_MASK | names::NATIVE_MASK) == 0 {
            return Err(EINVAL);
        }
        if library.sets[index].as_ref().ok_or(EBUG)?.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        match names::decode(code) {
            // A native code past the table names no component.
            Some(Code::Native(i)) if i >= library.natives.len() => return Err(ENOCMP),
            Some(_) => {}
            None => return refuse_unknown(library, index, code),
        }
        if let Some((own, id)) = Own::of_event(library, code) {
            let set = library.sets[index].as_mut().ok_or(EBUG)?;
            return own.add(set, code, id);
        }
        let name = crate::natives::backend_name_of(library, code)?;
        let placement = crate::natives::placement_of(library, code);
        let uncore = crate::uncore::owns_event(library, code);
        // (An uncore name listed without an event of its own: no unit mask given.)
        if library.component.disabled != 0 && !uncore || name.is_empty() {
            return Err(ENOEVNT);
        }
        let set = library.sets[index].as_mut().ok_or(EBUG)?;
        // A set holds one component's events (PAPI 7.0: PAPI_EINVAL).
        // (An uncore event beside another component's, or another's beside uncore events.)
        if set.component >= 0
            && (Own::of(set).is_some() || (set.component == crate::uncore::CIDX) != uncore)
        {
            return Err(EINVAL);
        }
        if uncore {
            crate::uncore::tie(set)?;
        }
        if set.events.iter().any(|(c, _, _)| *c == code) {
            return Err(ECNFLCT);
        }
        if uncore {
            // An uncore set counts on one CPU: its events' `cpu` qualifiers agree.
            if placement.cpu.is_some() && set.event_cpu().is_some_and(|c| Some(c) != placement.cpu)
            {
                return Err(ECNFLCT);
            }
        } else if !set.binds_alike(&placement) {
            return Err(EINVAL);
        }
        // PAPI 7.0 would count an attached thread or a process's children on that CPU alone,
        // which no target here expresses: refused rather than counted otherwise.
        if placement.cpu.is_some() && (set.attached.is_some() || set.inherit) {
            return Err(ECMP);
        }
        tie(
            (library.default_domain, library.default_granularity),
            library.system,
            set,
        );
        // Tried with the event in place (its target and options may be its qualifiers'),
        // taken out again if it does not open.
        set.events.push((code, name, placement));
        let tried = try_open(&library.chosen, set);
        if tried.is_err() {
            set.events.pop();
        }
        tried?;
        set.forget_counters();
        Ok(OK)
    });
    result.unwrap_or_else(|e| e)
}

/// The index of event set `handle`, or `PAPI_ENOEVST`.
fn set_index(library: &Library, handle: i32) -> Result<usize, i32> {
    let index = usize::try_from(handle)
        .ok()
        .filter(|&i| matches!(library.sets.get(i), Some(Some(_))))
        .ok_or(ENOEVST)?;
    library.sets[index].as_ref().ok_or(EBUG)?.made_here()?;
    Ok(index)
}

/// `PAPI_add_event`'s answer for a code of neither kind alone: a preset code past the table or
/// a user-defined one (both bits; none is defined here). As PAPI 7.0, the set is tied to
/// component 0 first (`PAPI_EINVAL` for a set of another component's); then a preset slot
/// PAPI has room for but no preset in is `PAPI_ENOEVNT`, a code past the room or a
/// user-defined index `PAPI_EINVAL`, and `PAPI_NULL` (-1) `PAPI_ECNFLCT`: PAPI finds it in
/// the set's first empty slot, which holds `PAPI_NULL`, and takes it for an event already
/// there.
fn refuse_unknown(library: &mut Library, index: usize, code: i32) -> Result<i32, i32> {
    let defaults = (library.default_domain, library.default_granularity);
    let set = library.sets[index].as_mut().ok_or(EBUG)?;
    if Own::of(set).is_some() {
        return Err(EINVAL);
    }
    tie(defaults, library.system, set);
    let bits = code as u32;
    Err(if code == -1 {
        ECNFLCT
    } else if bits & names::NATIVE_MASK == 0
        && bits & !names::PRESET_MASK < crate::natives::MAX_PRESET_EVENTS
    {
        ENOEVNT
    } else {
        EINVAL
    })
}

/// Opens `set` once and closes it: its events must open together on its target and count.
fn try_open(chosen: &facade::Chosen, set: &PapiSet) -> Result<(), i32> {
    let names = set.in_domain(set.events.iter().map(|(_, n, _)| n.as_str()));
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    // One backend target (PAPI attaches to one thread), not the facade's process.
    let target = set.target();
    let trial = counterhal_hal::BackendExt::open_named(chosen, &names, &target, &set.options());
    let mut trial = trial.map_err(|e| from_error(&e))?;
    // A thread counted on one CPU may be elsewhere during the trial: nothing to conclude.
    let checked =
        set.state & MULTIPLEXING == 0 && !matches!(target, BackendTarget::ThisThreadOnCpu(_));
    if checked && never_scheduled(&mut trial) {
        return Err(ECNFLCT);
    }
    Ok(())
}

/// Whether a trial set never got onto the counters: enabled and disabled at once and read, as
/// PAPI 7.0's perf_event component checks each event it opens (`check_scheduability`, its
/// group leader pinned so that a group that does not fit reads nothing). An event that was
/// enabled for a while and ran for none of it does not fit beside the others: the kernel
/// accepts such a group and never counts it, which would read as zeros. A set the backend
/// multiplexes is not checked (its events take turns by design), nor one whose target did not
/// run in the window (an attached thread that is stopped: nothing to conclude).
fn never_scheduled(trial: &mut facade::EventSet<facade::AnyGroup>) -> bool {
    if trial.enable().is_err() {
        return false;
    }
    let _ = trial.disable();
    match trial.read_to_vec() {
        Ok(readings) => readings
            .iter()
            .any(|r| r.time_enabled > 0 && r.time_running == 0),
        Err(e) => e.kind() == facade::ErrorKind::NotCounted,
    }
}

/// `PAPI_add_named_event`.
pub fn add_named_event(handle: i32, name: &str) -> i32 {
    match crate::natives::name_to_code(name) {
        Ok(code) => add_event(handle, code),
        Err(e) => e,
    }
}

/// `PAPI_remove_event`.
pub fn remove_event(handle: i32, code: i32) -> i32 {
    with_set(handle, |_, set| {
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        let at = set
            .events
            .iter()
            .position(|(c, _, _)| *c == code)
            .ok_or(EINVAL)?;
        set.events.remove(at);
        if at < set.own_counters.len() {
            set.own_counters.remove(at);
            set.own_values.clear();
        }
        set.forget_counters();
        if let Some(o) = set.overflows.iter().position(|s| s.code == code) {
            crate::unlocked::UNLOCKED
                .sde_watches
                .forget(set.overflows[o].slot);
            crate::unlocked::UNLOCKED
                .overflows
                .free_slot(set.overflows[o].slot);
            set.overflows.remove(o);
        }
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// `PAPI_cleanup_eventset`: the set emptied and untied, as new but for its thread. As PAPI
/// 7.0's (papi_internal.c `_papi_hwi_cleanup_eventset`), it leaves its component
/// (`PAPI_assign_eventset_component` takes one again), multiplexing, overflows, domain,
/// granularity, attached thread, CPU and inheritance; its counters are closed.
pub fn cleanup_eventset(handle: i32) -> i32 {
    with_set(handle, |_, set| {
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        for spec in set.overflows.drain(..) {
            crate::unlocked::UNLOCKED.sde_watches.forget(spec.slot);
            crate::unlocked::UNLOCKED.overflows.free_slot(spec.slot);
        }
        *set = empty_set(set.master, handle as usize);
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// `PAPI_destroy_eventset`: the set must be empty.
pub fn destroy_eventset(handle: i32) -> i32 {
    with_handle(|library| {
        let index = set_index(library, handle)?;
        let set = library.sets[index].as_ref().ok_or(EBUG)?;
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        if !set.events.is_empty() {
            return Err(EINVAL);
        }
        library.sets[index] = None;
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// Ties `set` to component 0 if it is not yet, taking the component's default domain and
/// granularity, as PAPI 7.0 does on the first event added or `PAPI_assign_eventset_component`.
///
/// A default granularity of `PAPI_GRN_SYS` binds the set to the CPU the caller is on now, as
/// the `PAPI_GRANUL` option does. (PAPI 7.0 opens such a set on no CPU, which the kernel
/// refuses: its adds answer `PAPI_EINVAL`. Ours counts what the granularity documents.)
fn tie((domain, granularity): (i32, i32), system: &counterhal_system::System, set: &mut PapiSet) {
    if set.component < 0 {
        set.component = 0;
        set.domain = domain;
        set.system_cpu = if granularity == GRN_SYS {
            crate::library::current_cpu(system)
        } else {
            None
        };
        // The thread where no CPU could be known: the set says what it counts.
        set.granularity = if set.system_cpu.is_some() {
            GRN_SYS
        } else {
            GRN_THR
        };
    }
}

/// `PAPI_assign_eventset_component` of component 0. As PAPI 7.0, a set tied to a component
/// already is `PAPI_EINVAL`, by a plain `return` that leaves `PAPI_perror`'s error as it was.
pub fn assign_component(handle: i32) -> i32 {
    with_handle(|library| {
        let defaults = (library.default_domain, library.default_granularity);
        let set = crate::library::find_set(&mut library.sets, handle)?;
        if set.component >= 0 {
            return Ok(EINVAL);
        }
        tie(defaults, library.system, set);
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// `PAPI_start`: opens the set where needed, zeroes and enables it.
pub fn start(handle: i32) -> i32 {
    with_handle(|library| {
        let index = set_index(library, handle)?;
        library.sets[index].as_ref().ok_or(EBUG)?.assigned()?;
        // One set runs per thread and component (PAPI 7.0 checks it before the set's events).
        if library.thread_busy(index) {
            return Err(EISRUN);
        }
        let Library {
            chosen,
            sets,
            components,
            ..
        } = library;
        let set = sets[index].as_mut().ok_or(EBUG)?;
        if let Some(own) = Own::of(set) {
            return own.start(components, handle, set);
        }
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        if set.events.is_empty() {
            return Err(EINVAL);
        }
        if set.group.is_none() {
            let names = set.in_domain(set.events.iter().map(|(_, n, _)| n.as_str()));
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let group = counterhal_hal::BackendExt::open_named(
                chosen,
                &names,
                &set.target(),
                &set.options(),
            )
            .map_err(|e| from_error(&e))?;
            set.group = Some(std::sync::Arc::new(group));
        }
        start_samplers(chosen, set)?;
        // The read buffer, sized here so that a read (from an overflow handler too) does not
        // allocate.
        set.readings
            .resize(set.events.len(), counterhal_hal::Reading::default());
        let group = set.group_mut()?;
        group.reset().map_err(|e| from_error(&e))?;
        if let Err(e) = group.enable() {
            set.samplers.clear();
            return Err(from_error(&e));
        }
        set.state = (set.state & !STOPPED) | RUNNING;
        // Read from now on without the lock (a signal handler's PAPI_read too).
        set.publish();
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

fn values_of(set: &mut PapiSet) -> Result<Vec<i64>, i32> {
    let mut values = vec![0; set.events.len()];
    each_value(set, |i, value| values[i] = value)?;
    Ok(values)
}

/// Reads the set's counters into its own buffer (sized when the set started) and hands each
/// event's count to `put` with its index, allocating nothing: PAPI lets an overflow handler
/// call `PAPI_read`, and a handler must not allocate (the thread it interrupted may be inside
/// `malloc`). Under the lock: the read of a set that is not published for reads without it
/// (an overflowing set), and of one being stopped; a published set is published again after.
fn each_value(set: &mut PapiSet, mut put: impl FnMut(usize, i64)) -> Result<(), i32> {
    let multiplexed = set.state & MULTIPLEXING != 0;
    if set.readings.len() != set.events.len() {
        set.readings
            .resize(set.events.len(), counterhal_hal::Reading::default());
    }
    // (Moved out and back, allocating nothing, beside the group borrowed from the set.)
    let mut readings = std::mem::take(&mut set.readings);
    let read = set
        .group_mut()
        .and_then(|group| group.read(&mut readings).map_err(|e| from_error(&e)));
    set.readings = readings;
    set.publish();
    read?;
    for (i, r) in set.readings.iter().enumerate() {
        put(i, crate::shared_reads::value(r, multiplexed));
    }
    // An overflowing event counts on its sampler's counter (see `Sampled`), where the
    // backend can read a sampler's count; else the group's count stands.
    for sampled in &mut set.samplers {
        if let Ok(count) = facade::Sampler::count(&mut sampled.sampler)
            && sampled.index < set.events.len()
        {
            put(sampled.index, count.wrapping_sub(sampled.base) as i64);
        }
    }
    Ok(())
}

/// Runs `f` on event set `handle` with the library's components beside it, whose events a
/// set of a component the library reads itself ([`Own`]) reads (`PAPI_ENOEVST` when there
/// is no set, as [`with_set`]).
fn with_set_beside<T>(
    handle: i32,
    f: impl FnOnce(&Components, &mut PapiSet) -> Result<T, i32>,
) -> Result<T, i32> {
    with_handle(|library| {
        let Library {
            sets, components, ..
        } = library;
        f(components, crate::library::find_set(sets, handle)?)
    })
}

/// `PAPI_read` without allocating (a handler may call it): each count handed to `put` with its
/// index; a set never started reads zeros. A started set is read without the lock
/// ([`crate::shared_reads`]); any other under it.
pub fn read_each(handle: i32, mut put: impl FnMut(usize, i64)) -> i32 {
    if let Some(code) = crate::unlocked::UNLOCKED
        .reads
        .read(handle, forks(), &mut put)
    {
        return crate::library::fail(code);
    }
    with_set_beside(handle, |components, set| {
        set.assigned()?;
        if let Some(own) = Own::of(set) {
            return own.read_each(components, set, &mut put);
        }
        if set.group.is_none() {
            (0..set.events.len()).for_each(|i| put(i, 0));
            return Ok(OK);
        }
        each_value(set, &mut put).map(|()| OK)
    })
    .unwrap_or_else(|e| e)
}

/// The answer of `PAPI_read`, `PAPI_read_ts` and `PAPI_accum` given no array for the values:
/// as PAPI 7.0 checks, the set (`PAPI_ENOEVST`) and its component (`PAPI_ENOCMP`) first, then
/// `PAPI_EINVAL`.
pub fn refuse_null_values(handle: i32) -> i32 {
    with_set(handle, |_, set| {
        set.assigned()?;
        Err::<i32, i32>(EINVAL)
    })
    .unwrap_or_else(|e| e)
}

/// Resets the set's counters: the group's, and the samplers' by taking their counts now as
/// their zero.
fn reset_counters(set: &mut PapiSet) -> Result<(), i32> {
    if set.group.is_some() {
        let reset = set.group_mut()?.reset().map_err(|e| from_error(&e));
        set.publish();
        reset?;
    }
    for sampled in &mut set.samplers {
        if let Ok(count) = facade::Sampler::count(&mut sampled.sampler) {
            sampled.base = count;
        }
    }
    Ok(())
}

/// `PAPI_stop`: disables the set and returns its counts.
pub fn stop(handle: i32) -> Result<Vec<i64>, i32> {
    with_set_beside(handle, |components, set| {
        set.assigned()?;
        if let Some(own) = Own::of(set) {
            return own.stop(components, handle, set);
        }
        if set.state & RUNNING == 0 {
            return Err(ENOTRUN);
        }
        let group = set.group_mut()?;
        let disabled = group.disable().map_err(|e| from_error(&e));
        if let Err(e) = disabled {
            set.publish();
            return Err(e);
        }
        for sampled in &mut set.samplers {
            let _ = facade::Sampler::disable(&mut sampled.sampler);
        }
        set.state = (set.state & !RUNNING) | STOPPED;
        values_of(set)
    })
}

/// `PAPI_read`: the counts since the start or the last reset.
pub fn read(handle: i32) -> Result<Vec<i64>, i32> {
    with_set_beside(handle, |components, set| {
        set.assigned()?;
        if let Some(own) = Own::of(set) {
            let mut values = vec![0; set.events.len()];
            own.read_each(components, set, |i, v| values[i] = v)?;
            return Ok(values);
        }
        if set.group.is_none() {
            // Never started: PAPI reads zeros.
            return Ok(vec![0; set.events.len()]);
        }
        values_of(set)
    })
}

/// `PAPI_reset`.
pub fn reset(handle: i32) -> i32 {
    with_set_beside(handle, |components, set| {
        set.assigned()?;
        if let Some(own) = Own::of(set) {
            return own.reset(components, set);
        }
        reset_counters(set)?;
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// `PAPI_accum` without allocating (a handler may call it, as `PAPI_read`): each count since
/// the last reset handed to `put` with its event's index, then a reset. A started set is read
/// without the lock, then reset under it.
pub fn accum_each(handle: i32, mut put: impl FnMut(usize, i64)) -> i32 {
    match crate::unlocked::UNLOCKED
        .reads
        .read(handle, forks(), &mut put)
    {
        Some(OK) => return reset(handle),
        Some(error) => return crate::library::fail(error),
        None => {}
    }
    with_set_beside(handle, |components, set| {
        set.assigned()?;
        if let Some(own) = Own::of(set) {
            return own.accum_each(components, set, &mut put);
        }
        if set.group.is_none() {
            (0..set.events.len()).for_each(|i| put(i, 0));
            return Ok(OK);
        }
        each_value(set, &mut put)?;
        reset_counters(set)?;
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// How many values `PAPI_write` takes for set `handle`: as PAPI 7.0 checks, `PAPI_ENOEVST`
/// for no set and `PAPI_ENOCMP` for one tied to no component; a set of the `sde` component
/// takes a value per event; the backend's counters cannot be written (`PAPI_ENOSUPP`).
pub fn write_count(handle: i32) -> Result<usize, i32> {
    with_set(handle, |_, set| {
        set.assigned()?;
        if crate::sde::owns(set) {
            Ok(set.events.len())
        } else {
            Err(crate::codes::ENOSUPP)
        }
    })
}

/// `PAPI_write` on a set [`write_count`] accepted, with its values.
pub fn write(handle: i32, values: &[i64]) -> i32 {
    with_set_beside(handle, |components, set| {
        crate::sde::write(components.sde, set, values)
    })
    .unwrap_or_else(|e| e)
}

/// `PAPI_num_events`.
pub fn num_events(handle: i32) -> i32 {
    with_set(handle, |_, set| Ok(set.events.len() as i32)).unwrap_or_else(|e| e)
}

/// `PAPI_list_events`.
pub fn list_events(handle: i32) -> Result<Vec<i32>, i32> {
    with_set(handle, |_, set| {
        Ok(set.events.iter().map(|(c, _, _)| *c).collect())
    })
}

/// `PAPI_state`.
pub fn state(handle: i32) -> Result<i32, i32> {
    with_set(handle, |_, set| Ok(set.state))
}

/// `PAPI_num_cmp_hwctrs`: as PAPI 7.0's, `PAPI_ECMP` for an index past the components and
/// 0 before initialisation (PAPI reads its components' still empty descriptions); the uncore
/// component's its description's.
pub fn num_counters(cidx: i32) -> i32 {
    if cidx == crate::uncore::CIDX {
        return crate::uncore::counters();
    }
    if cidx != 0 {
        return crate::codes::ECMP;
    }
    match with(|library| Ok(library.component.num_cntrs)) {
        Ok(n) => n,
        Err(crate::codes::ENOINIT) => 0,
        Err(e) => e,
    }
}

/// Opens and enables one sampler per overflowing event of `set`, each calling its slot's
/// handler every `threshold` events.
fn start_samplers(chosen: &facade::Chosen, set: &mut PapiSet) -> Result<(), i32> {
    set.samplers.clear();
    for spec in set.overflows.clone() {
        let name = set
            .events
            .iter()
            .find(|(c, _, _)| *c == spec.code)
            .map(|(_, n, _)| n.clone())
            .ok_or(EBUG)?;
        let options =
            facade::SampleOptions::period(spec.threshold, facade::SampleFields::profile());
        let index = set
            .events
            .iter()
            .position(|(c, _, _)| *c == spec.code)
            .ok_or(EBUG)?;
        let opened = chosen
            .open_sampler(
                &[set.in_domain([name.as_str()])[0].as_str()],
                &set.sampled_target(),
                &options,
            )
            .and_then(|mut sampler| {
                sampler.on_overflow(spec.callback, spec.slot)?;
                facade::Sampler::enable(&mut sampler)?;
                Ok(sampler)
            });
        match opened {
            Ok(sampler) => set.samplers.push(Sampled {
                sampler,
                index,
                base: 0,
            }),
            Err(e) => {
                set.samplers.clear();
                return Err(from_error(&e));
            }
        }
    }
    Ok(())
}
