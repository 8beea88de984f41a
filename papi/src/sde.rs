//! PAPI 7.0's `sde` component: software-defined events, the counters a library exports
//! through libsde (`papi_sde_init`, `papi_sde_register_counter`, `papi_sde_create_counter`,
//! recorders, counting sets, groups), read by a tool beside hardware events as
//! `sde:::LIBRARY::COUNTER`.
//!
//! As PAPI 7.0 splits it, the counters live in libsde (Debian's libsde.so.1 serves unchanged)
//! and this component reaches them through libsde's tools interface, found in the process at
//! initialisation (`sys::sde`): names become libsde's ids (`sde_ti_name_to_code`, which makes
//! a placeholder for a counter not registered yet, read as -1), reads are libsde's
//! (`sde_ti_read_counter`: a recorder or counting set reads as the address of a buffer the
//! caller frees), a start or reset takes the counters' current values as their zero. Each
//! event has a native code in the library's table (its `sde` field holds libsde's id), and a
//! set holds the events of one component: an `sde:::` event beside another component's is
//! `PAPI_EINVAL`, as PAPI answers. A created counter overflows as libsde reports its new
//! values (`sde_watch`); a registered counter, which PAPI 7.0 polls with a timer, does not
//! overflow here (`PAPI_ENOSUPP`).

use crate::codes::{ECMP, EINVAL, EISRUN, ENOEVNT, ENOSUPP, ENOTRUN, OK};
use crate::info::{ComponentInfo, EventInfo, set_str};
use crate::library::{DOM_USER, GRN_THR, Library, PapiSet, RUNNING, STOPPED, SetUp, with};
use crate::names::{self, Code, Native};
use crate::sys::sde::Api;

/// The component's index here (PAPI 7.0 numbers it after its CPU components: 2 on an x86
/// machine with an uncore PMU).
pub const CIDX: i32 = crate::library::SDE_COMPONENT;

/// How many components the library has with this one: `PAPI_num_components`.
pub const COMPONENTS: i32 = CIDX + 1;

/// The component's name.
pub const NAME: &str = "sde";

/// The prefix of its events' names.
const PREFIX: &str = "sde:::";

/// How many events a set of this component holds (PAPI 7.0's
/// `SDE_MAX_SIMULTANEOUS_COUNTERS`).
pub const MAX_COUNTERS: usize = 40;

/// `PAPI_INT_SIGNAL` (SIGPROF), the component's `hardware_intr_sig`.
const INT_SIGNAL: i32 = 27;

/// Why the component is disabled when no libsde is in the process (PAPI 7.0's words, which
/// `papi_component_avail` prints).
pub const DISABLED_REASON: &str = "libsde API not found. No SDEs exist in this executable.";

/// The name after `sde:::`, for a name of this component.
pub fn strip(name: &str) -> Option<&str> {
    name.strip_prefix(PREFIX)
}

/// Initialises the component (at `PAPI_library_init`): looks libsde's interface up in the
/// process and describes the component in `library.sde_component`, disabled where libsde is
/// not found (`PAPI_ECMP`, with PAPI's reason) or `PAPI_disable_component` disabled it.
pub fn set_up(setup: &mut SetUp<'_>) {
    let disabled = setup.disabled(CIDX);
    let api = if disabled {
        None
    } else {
        crate::sys::sde::load()
    };
    let library = &mut *setup.library;
    library.components.sde = api;
    let info = &mut library.sde_component;
    **info = component_description();
    info.initialized = 1;
    if disabled {
        info.disabled = 1;
        set_str(&mut info.disabled_reason, crate::library::DISABLED_BY_CALL);
    } else if api.is_none() {
        info.disabled = ECMP;
        set_str(&mut info.disabled_reason, DISABLED_REASON);
    }
}

/// The component's description before initialisation, as PAPI 7.0 lists its compiled-in
/// components (`PAPI_get_component_info` before `PAPI_library_init`).
pub fn before_init() -> *const ComponentInfo {
    crate::library::kept_description(component_description())
}

/// The component's description, neither initialised nor disabled.
fn component_description() -> ComponentInfo {
    let mut info = crate::library::component_info();
    set_str(&mut info.name, NAME);
    set_str(&mut info.short_name, NAME);
    set_str(
        &mut info.description,
        "Software Defined Events (SDE) component",
    );
    set_str(&mut info.version, "1.15");
    set_str(&mut info.support_version, "n/a");
    set_str(&mut info.kernel_version, "n/a");
    info.cmp_idx = CIDX;
    info.num_cntrs = MAX_COUNTERS as i32;
    info.num_mpx_cntrs = MAX_COUNTERS as i32;
    info.default_domain = DOM_USER;
    info.available_domains = DOM_USER;
    info.default_granularity = GRN_THR;
    info.available_granularities = GRN_THR;
    info.hardware_intr_sig = INT_SIGNAL;
    // `hardware_intr` (bit 0): overflow is offered.
    info.flags = 1;
    info
}

/// Ends the component (at `PAPI_shutdown`): libsde's `sde_ti_shutdown`.
/// (Called outside the library's lock, as libsde takes its own.)
pub fn shutdown() {
    if let Ok(Some(api)) = with(|library| Ok(library.components.sde)) {
        api.shutdown();
    }
}

/// libsde's interface, or `err` where the component is disabled.
fn interface(api: Option<Api>, err: i32) -> Result<Api, i32> {
    api.ok_or(err)
}

/// The native code of libsde's counter `id`, added to the table if new.
fn register(library: &mut Library, api: &Api, id: u32) -> Result<i32, i32> {
    if let Some(i) = library.natives.iter().position(|n| n.sde == Some(id)) {
        return Ok(names::native_code(i));
    }
    let name = api.name(id).ok_or(ENOEVNT)?;
    library.natives.push(Native {
        name: format!("{PREFIX}{name}"),
        backend_name: name,
        description: String::new(),
        placement: Default::default(),
        sde: Some(id),
        powercap: None,
        uncore: false,
    });
    Ok(names::native_code(library.natives.len() - 1))
}

/// `PAPI_event_name_to_code` of `sde:::LIBRARY::COUNTER` (`rest` is what follows `sde:::`).
pub fn code_of(library: &mut Library, rest: &str) -> Result<i32, i32> {
    let api = interface(library.components.sde, ENOEVNT)?;
    let name = std::ffi::CString::new(rest).map_err(|_| ENOEVNT)?;
    let id = api.name_to_code(&name)?;
    register(library, &api, id)
}

/// libsde's id of event `code`, for an event of this component.
pub fn counter_of(library: &Library, code: i32) -> Option<u32> {
    match names::decode(code) {
        Some(Code::Native(i)) => library.natives.get(i).and_then(|n| n.sde),
        _ => None,
    }
}

/// `PAPI_get_event_component`'s answer for `code` (`None`: not this component's).
pub fn event_component(code: i32) -> Option<i32> {
    with(|library| Ok(counter_of(library, code).map(|_| CIDX)))
        .ok()
        .flatten()
}

/// Fills `info` for native `native`, one of this component's: its description is the one
/// libsde holds now (`papi_sde_describe_counter` may come after the name was looked up).
pub fn describe(api: Option<Api>, native: &Native, info: &mut EventInfo) {
    let description = native
        .sde
        .and_then(|id| api.and_then(|api| api.description(id)));
    set_str(&mut info.long_descr, description.as_deref().unwrap_or(""));
    info.component_index = CIDX;
}

/// `PAPI_enum_cmp_event` on this component, as PAPI 7.0's: `PAPI_ENUM_FIRST` gives the first
/// counter libsde has, `PAPI_ENUM_EVENTS` the next one with a name (unregistered ones leave
/// holes); past the last, with no counter or another modifier, `PAPI_EINVAL` (PAPI's
/// framework answers so whatever the component said); `PAPI_ENOCMP` where the component is
/// disabled.
pub fn enumerate(library: &mut Library, code: i32, modifier: i32) -> Result<i32, i32> {
    let api = interface(library.components.sde, crate::codes::ENOCMP)?;
    next_event(library, &api, code, modifier).map_err(|_| EINVAL)
}

fn next_event(library: &mut Library, api: &Api, code: i32, modifier: i32) -> Result<i32, i32> {
    let count = u32::try_from(api.num_events()).unwrap_or(0);
    let from = match modifier {
        // PAPI_ENUM_FIRST
        1 => 0,
        // PAPI_ENUM_EVENTS
        0 => {
            let current = counter_of(library, code).ok_or(EINVAL)?;
            if current + 1 >= count {
                return Err(ENOEVNT);
            }
            current + 1
        }
        _ => return Err(EINVAL),
    };
    match (from..count).find(|&id| api.name(id).is_some()) {
        Some(id) => register(library, api, id),
        None => Err(ENOEVNT),
    }
}

/// Whether `set` counts this component's events.
pub fn owns(set: &PapiSet) -> bool {
    set.component == CIDX
}

/// `PAPI_start`: each counter's current value becomes its zero.
pub fn start(api: Option<Api>, handle: i32, set: &mut PapiSet) -> Result<i32, i32> {
    if set.state & RUNNING != 0 {
        return Err(EISRUN);
    }
    if set.events.is_empty() {
        return Err(EINVAL);
    }
    let api = interface(api, ECMP)?;
    reset_all(&api, set)?;
    set.own_values = vec![0; set.events.len()];
    set.state = (set.state & !STOPPED) | RUNNING;
    crate::unlocked::UNLOCKED.sde_watches.run(handle, true);
    Ok(OK)
}

fn reset_all(api: &Api, set: &PapiSet) -> Result<(), i32> {
    for &id in &set.own_counters {
        let status = api.reset(id);
        if status != OK {
            return Err(status);
        }
    }
    Ok(())
}

/// Each count of `set` handed to `put` with its index: libsde's values while it runs, else
/// those of its last stop (zeros before its first start), as PAPI keeps them.
pub fn read_each(
    api: Option<Api>,
    set: &mut PapiSet,
    mut put: impl FnMut(usize, i64),
) -> Result<i32, i32> {
    if set.state & RUNNING == 0 {
        for i in 0..set.events.len() {
            put(i, set.own_values.get(i).copied().unwrap_or(0));
        }
        return Ok(OK);
    }
    let api = interface(api, ECMP)?;
    for (i, &id) in set.own_counters.iter().enumerate() {
        put(i, api.read(id)?);
    }
    Ok(OK)
}

/// `PAPI_stop`: the counts, kept for later reads.
pub fn stop(api: Option<Api>, handle: i32, set: &mut PapiSet) -> Result<Vec<i64>, i32> {
    if set.state & RUNNING == 0 {
        return Err(ENOTRUN);
    }
    let mut values = vec![0; set.events.len()];
    read_each(api, set, |i, v| values[i] = v)?;
    set.own_values.clone_from(&values);
    set.state = (set.state & !RUNNING) | STOPPED;
    crate::unlocked::UNLOCKED.sde_watches.run(handle, false);
    Ok(values)
}

/// `PAPI_reset`: a running set's counters start again from their current values; a stopped
/// set's kept counts become zeros.
pub fn reset(api: Option<Api>, set: &mut PapiSet) -> Result<i32, i32> {
    if set.state & RUNNING == 0 {
        set.own_values.iter_mut().for_each(|v| *v = 0);
        return Ok(OK);
    }
    reset_all(&interface(api, ECMP)?, set)?;
    Ok(OK)
}

/// `PAPI_write` on a set of this component: while it runs, each counter a library
/// registered writable takes its value through libsde (`sde_ti_write_counter`, which refuses
/// other counters with `PAPI_EINVAL`); a stopped set takes nothing, as PAPI 7.0's.
pub fn write(api: Option<Api>, set: &PapiSet, values: &[i64]) -> Result<i32, i32> {
    if set.state & RUNNING == 0 {
        return Ok(OK);
    }
    let api = interface(api, ECMP)?;
    for (&id, &value) in set.own_counters.iter().zip(values) {
        let status = api.write(id, value);
        if status != OK {
            return Err(status);
        }
    }
    Ok(OK)
}

/// `PAPI_overflow` on this component's event at `index` of set `handle`, once the overflow
/// slot `slot` holds the handler: a created counter overflows as libsde reports its values;
/// a placeholder is remembered by libsde (its overflow starts when a library creates it);
/// a registered counter, which PAPI 7.0 polls with a timer, is `PAPI_ENOSUPP`.
/// `threshold` 0 turns the overflow off.
pub fn overflow(
    api: Option<Api>,
    handle: i32,
    set: &PapiSet,
    index: usize,
    threshold: i32,
    slot: Option<usize>,
) -> i32 {
    let (Some(&id), Ok(api)) = (set.own_counters.get(index), interface(api, ECMP)) else {
        return ECMP;
    };
    let status = api.set_overflow(id, threshold);
    if status < OK {
        return status;
    }
    match slot {
        Some(_) if status > OK => {
            api.set_overflow(id, 0);
            ENOSUPP
        }
        Some(slot) => {
            crate::unlocked::UNLOCKED
                .sde_watches
                .watch(handle, id, i64::from(threshold), slot);
            OK
        }
        None => OK,
    }
}
