//! PAPI 7.0's `perf_event_uncore` component: the CPU's uncore PMUs under libpfm4's names
//! (`skx_unc_imc0::UNC_M_CAS_COUNT:RD:cpu=0`), each counting the event database's uncore
//! event (`UNC_M_CAS_COUNT.RD`, the kernel's perf JSON) on the one kernel PMU box libpfm4's PMU
//! stands for (`uncore_imc_0`, [`UncoreBox`]). As PAPI's component: every privilege
//! level (`PAPI_DOM_ALL`), system wide (`PAPI_GRN_SYS`: pid -1 on one CPU, the `cpu`
//! qualifier's, else `PAPI_CPU_ATTACH`'s, else the first of the box's `cpumask`), and a set
//! holds this component's events alone. Disabled, as PAPI's, where this machine has none of
//! the CPU model's uncore boxes ("No uncore PMUs or events found").
//!
//! A name is `PMU::EVENT[:UMASK...][:QUALIFIER...]`, in any case as libpfm4 reads it: the
//! table's `EVENT.UMASK` (several unit masks of one event ORed, as libpfm4 combines them), and
//! libpfm4's qualifiers of these PMUs: `cpu=N`, `e` (edge), `i` (invert), `t=N` (threshold),
//! which become the kernel format's `edge`, `inv` and `thresh` terms. (libpfm4 refuses `e`,
//! `i` and `t` on the few events whose tables forbid them, `UNC_C_CLOCKTICKS`; ours passes
//! them to the kernel.)
//!
//! libpfm4's uncore PMU families of each CPU model (their names, boxes, the kernel PMUs they
//! open and the database's PMUs that have their events) are the shipped tables'
//! (`events/data/papi/uncore_families.toml`, written from libpfm4 4.13's sources, and libpfm4
//! head's for Ice Lake-X, Sapphire and Emerald Rapids and Granite Rapids, which 4.13 lacks).

use std::sync::{Mutex, RwLock};

use counterhal_events::Database;

use crate::codes::{ECMP, EINVAL, ENOCMP, ENOEVNT};
use crate::info::{ComponentInfo, EventInfo, set_str};
use crate::library::{DOM_ALL, DOM_KERNEL, DOM_USER, GRN_SYS, Library, PapiSet, with};
use crate::names::{self, Code, Native, PMU_DEVICES};
use crate::perf_natives::Placement;
pub use counterhal_events::papi::{UncoreFamily, uncore_families, uncore_models};

/// The component's index: after the core component, as PAPI 7.0 numbers it.
pub const CIDX: i32 = crate::library::UNCORE_COMPONENT;

/// How many components the library has with this one.
pub const COMPONENTS: i32 = CIDX + 1;

/// The component's name.
pub const NAME: &str = "perf_event_uncore";

/// `PAPI_DOM_SUPERVISOR`.
const DOM_SUPERVISOR: i32 = 8;

/// The domains a set of the component takes (PAPI 7.0's `available_domains`: user, kernel
/// and supervisor). Each counts every level here: the boxes filter none.
pub const AVAILABLE_DOMAINS: i32 = DOM_USER | DOM_KERNEL | DOM_SUPERVISOR;

/// Why the component is disabled where none of the model's uncore boxes is here (PAPI 7.0's
/// words, as Debian's papi_component_avail prints them).
const NO_UNCORE: &str = "No uncore PMUs or events found";

/// Why it is disabled where the system forbids a user CPU-wide counting (PAPI 7.0's words).
const NO_PERMISSION: &str = "Insufficient permissions for uncore access.  Set /proc/sys/kernel/perf_event_paranoid to 0 or run as root.";

/// One of libpfm4's uncore PMUs: a box of a family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UncoreBox {
    /// Its family.
    pub family: UncoreFamily,
    /// Its box number (`None` for a family of one PMU).
    pub number: Option<u8>,
}

impl UncoreBox {
    /// libpfm4's name of the PMU (`skx_unc_imc0`, `skx_unc_pcu`).
    pub fn libpfm4_name(&self) -> String {
        match self.number {
            Some(n) => format!("{}{n}", self.family.libpfm4()),
            None => self.family.libpfm4().to_string(),
        }
    }

    /// The kernel PMU it opens (`uncore_imc_0`, `uncore_pcu`).
    pub fn kernel_name(&self) -> String {
        match self.number {
            Some(n) => format!("{}_{n}", self.family.kernel()),
            None => self.family.kernel().to_string(),
        }
    }
}

/// Every box of `families`, in order.
pub fn boxes(families: impl Iterator<Item = UncoreFamily>) -> impl Iterator<Item = UncoreBox> {
    families.flat_map(|family| {
        let numbered = family.boxes() > 0;
        (0..family.boxes().max(1)).map(move |n| UncoreBox {
            family,
            number: numbered.then_some(n),
        })
    })
}

/// The box libpfm4 names `pmu` (`skx_unc_imc0`, in any case, as libpfm4 matches PMU names)
/// among `families`.
pub fn find_box(families: impl Iterator<Item = UncoreFamily>, pmu: &str) -> Option<UncoreBox> {
    // Only the families whose name starts `pmu` are spelled out, box by box.
    let of_family = |f: &UncoreFamily| {
        pmu.get(..f.libpfm4().len())
            .is_some_and(|p| p.eq_ignore_ascii_case(f.libpfm4()))
    };
    boxes(families.filter(of_family)).find(|b| b.libpfm4_name().eq_ignore_ascii_case(pmu))
}

/// Whether `pmu` is one of libpfm4's uncore PMUs of the table, on any model.
pub fn is_libpfm4_uncore(pmu: &str) -> bool {
    uncore_models().any(|model| find_box(uncore_families(model), pmu).is_some())
}

/// An uncore name read: the box it opens, the backend's name for it and where it counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UncoreName {
    /// libpfm4's PMU and the kernel's box it opens.
    pub pmu: UncoreBox,
    /// The event database's event (`UNC_M_CAS_COUNT.RD`).
    pub event: String,
    /// Its terms with the qualifiers' (`event=4,umask=3,edge=1`).
    pub terms: String,
    /// The `cpu` qualifier's CPU.
    pub cpu: Option<u32>,
}

impl UncoreName {
    /// What the backend opens: the terms on the box (`uncore_imc_0/event=4,umask=3/`).
    pub fn backend_name(&self) -> String {
        format!("{}/{}/", self.pmu.kernel_name(), self.terms)
    }
}

/// Reads `name` as an uncore event of CPU model `model`: `None` for a name whose PMU is none
/// of libpfm4's uncore PMUs listed (another component's name); `PAPI_ENOEVNT` for a PMU the
/// model lacks, an event or unit mask its table lacks, an unknown or malformed qualifier.
pub fn read(
    database: &Database,
    model: Option<&str>,
    name: &str,
) -> Option<Result<UncoreName, i32>> {
    let (pmu, rest) = name.split_once("::")?;
    if !is_libpfm4_uncore(pmu) {
        return None;
    }
    Some(read_on(database, model, pmu, rest))
}

fn read_on(
    database: &Database,
    model: Option<&str>,
    pmu: &str,
    rest: &str,
) -> Result<UncoreName, i32> {
    let model = model.ok_or(ENOEVNT)?;
    let the_box = find_box(uncore_families(model), pmu).ok_or(ENOEVNT)?;
    let mut parts = rest.split(':');
    let event = parts.next().filter(|e| !e.is_empty()).ok_or(ENOEVNT)?;
    let (mut unit_masks, mut cpu) = (Vec::new(), None);
    let mut extra: Vec<(&str, u64)> = Vec::new();
    for part in parts {
        let (key, value) = match part.split_once('=') {
            Some((k, v)) => (k, Some(number(v).ok_or(ENOEVNT)?)),
            None => (part, None),
        };
        let term = match key {
            "cpu" => {
                let value = value.ok_or(ENOEVNT)?;
                cpu = Some(u32::try_from(value).map_err(|_| ENOEVNT)?);
                continue;
            }
            "e" => "edge",
            "i" => "inv",
            "t" => "thresh",
            _ if value.is_none() => {
                unit_masks.push(key);
                continue;
            }
            _ => return Err(ENOEVNT),
        };
        // A bare `e` or `i` is `=1`; a threshold needs its value and fits 8 bits.
        let value = match (term, value) {
            ("thresh", None) => return Err(ENOEVNT),
            ("thresh", Some(v)) if v > 0xff => return Err(ENOEVNT),
            (_, Some(v)) if term != "thresh" && v > 1 => return Err(ENOEVNT),
            (_, v) => v.unwrap_or(1),
        };
        if extra.iter().any(|(t, _)| *t == term) {
            return Err(ENOEVNT);
        }
        if value != 0 {
            extra.push((term, value));
        }
    }
    let (name, mut terms) = event_terms(database, model, the_box, event, &unit_masks)?;
    for (term, value) in extra {
        terms.push_str(&format!(",{term}={value:#x}"));
    }
    Ok(UncoreName {
        pmu: the_box,
        event: name,
        terms,
        cpu,
    })
}

/// The database's event `event` with `unit_masks` on `the_box`'s PMU (`EVENT.UMASK`, any
/// case, as libpfm4 matches), its name and terms. Several unit masks of one event are ORed,
/// as libpfm4 combines them, where their events differ in the unit mask alone.
fn event_terms(
    database: &Database,
    model: &str,
    the_box: UncoreBox,
    event: &str,
    unit_masks: &[&str],
) -> Result<(String, String), i32> {
    let find = |wanted: String| {
        database
            .uncore_events(model, &wanted)
            .into_iter()
            .find(|e| e.pmu == the_box.family.database())
            .ok_or(ENOEVNT)
    };
    let Some((first, others)) = unit_masks.split_first() else {
        let found = find(event.to_string())?;
        return Ok((found.name, found.terms));
    };
    let found = find(format!("{event}.{first}"))?;
    if others.is_empty() {
        return Ok((found.name, found.terms));
    }
    let (rest, mut umask) = split_unit_mask(&found.terms).ok_or(ENOEVNT)?;
    let mut names = vec![found.name];
    for mask in others {
        let other = find(format!("{event}.{mask}"))?;
        let (other_rest, other_umask) = split_unit_mask(&other.terms).ok_or(ENOEVNT)?;
        if other_rest != rest {
            return Err(ENOEVNT);
        }
        umask |= other_umask;
        names.push(other.name);
    }
    Ok((names.join("+"), format!("{rest},umask={umask:#x}")))
}

/// `terms` without their `umask` term, and its value.
fn split_unit_mask(terms: &str) -> Option<(String, u64)> {
    let mut umask = None;
    let mut rest = Vec::new();
    for term in terms.split(',') {
        match term.strip_prefix("umask=") {
            Some(value) => umask = Some(number(value)?),
            None => rest.push(term),
        }
    }
    Some((rest.join(","), umask?))
}

/// A qualifier's value as libpfm4 reads it (decimal, or hexadecimal after `0x`).
fn number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The first CPU of kernel PMU `pmu`'s `cpumask` (`0`, `0,18`, `0-3`), where perf opens its
/// events; `None` where the PMU is not here.
pub fn first_cpu(pmu: &str) -> Option<u32> {
    let mask = std::fs::read_to_string(std::path::Path::new(PMU_DEVICES).join(pmu).join("cpumask"))
        .ok()?;
    let first = mask.trim().split([',', '-']).next()?;
    first.parse().ok()
}

/// The component's events, as `PAPI_enum_cmp_event` lists them (`skx_unc_imc0::UNC_M_CAS_COUNT`):
/// each event of each box this machine has, by its name before the unit mask.
static EVENTS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// The component's description since `PAPI_library_init` (kept for the process, so that a
/// pointer to it stays valid).
static INFO: Mutex<Option<&'static ComponentInfo>> = Mutex::new(None);

/// The component's description, as PAPI 7.0's perf_event_uncore.c gives it.
fn description() -> ComponentInfo {
    let mut info = crate::library::component_info();
    set_str(&mut info.name, NAME);
    set_str(&mut info.short_name, "peu");
    set_str(
        &mut info.description,
        "Linux perf_event CPU uncore and northbridge",
    );
    set_str(&mut info.version, "5.0");
    info.cmp_idx = CIDX;
    info.default_domain = DOM_ALL;
    info.available_domains = AVAILABLE_DOMAINS;
    info.default_granularity = GRN_SYS;
    info.available_granularities = GRN_SYS;
    info.num_mpx_cntrs = 384;
    // attach (bit 8), attach_must_ptrace (9), cntr_umasks (10), cpu (11), inherit (12).
    info.flags = (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);
    info
}

/// The component's description: as the last initialisation made it, else as before one.
pub fn info() -> *const ComponentInfo {
    static BEFORE: std::sync::OnceLock<ComponentInfo> = std::sync::OnceLock::new();
    let made = *INFO.lock().unwrap_or_else(|e| e.into_inner());
    made.map_or_else(
        || BEFORE.get_or_init(description) as *const ComponentInfo,
        |info| info as *const ComponentInfo,
    )
}

/// Whether the system lets this process count a whole CPU: perf_event_paranoid at most 0, or
/// root, as PAPI 7.0's component checks.
fn may_count_cpus() -> bool {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|t| t.trim().parse::<i32>().ok())
        .unwrap_or(2);
    paranoid <= 0 || effective_user_is_root()
}

/// Whether the process's effective user is root (the second `Uid:` of /proc/self/status,
/// proc(5)).
fn effective_user_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

/// Initialises the component (at `PAPI_library_init`, after the library): lists the events of
/// the model's boxes this machine has; disabled, saying why, where there is none, where the
/// system forbids CPU-wide counting, or where `PAPI_disable_component` disabled it.
pub fn init() {
    let by_call = crate::library::disabled(CIDX);
    let _ = with(|library| {
        let mut info = description();
        info.initialized = 1;
        let events = if by_call { Vec::new() } else { listed(library) };
        info.num_native_events = events.len() as i32;
        // "PMUs supported": libpfm4's names of the boxes here, as PAPI lists the PMUs its
        // libpfm4 detects (leaked once per initialisation: the description points at them).
        if !by_call {
            let present = present_boxes(library);
            for (slot, name) in info.pmu_names.iter_mut().zip(present) {
                let name = std::ffi::CString::new(name.libpfm4_name()).unwrap_or_default();
                *slot = Box::leak(name.into_boxed_c_str()).as_ptr() as usize;
            }
        }
        if by_call {
            info.disabled = 1;
            set_str(&mut info.disabled_reason, crate::library::DISABLED_BY_CALL);
        } else if !may_count_cpus() {
            info.disabled = ECMP;
            set_str(&mut info.disabled_reason, NO_PERMISSION);
        } else if events.is_empty() {
            info.disabled = ECMP;
            set_str(&mut info.disabled_reason, NO_UNCORE);
        }
        *INFO.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::leak(Box::new(info)));
        *EVENTS.write().unwrap_or_else(|e| e.into_inner()) = if info.disabled == 0 {
            events
        } else {
            Vec::new()
        };
        Ok(())
    });
}

/// `PAPI_num_cmp_hwctrs` of the component: its description's counters (none are counted
/// here, as Debian's PAPI 7.0 answers for its disabled component: 0).
pub fn counters() -> i32 {
    INFO.lock()
        .unwrap_or_else(|e| e.into_inner())
        .map_or(0, |info| info.num_cntrs)
}

/// Ends the component (at `PAPI_shutdown`).
pub fn shutdown() {
    *INFO.lock().unwrap_or_else(|e| e.into_inner()) = None;
    EVENTS.write().unwrap_or_else(|e| e.into_inner()).clear();
}

/// Whether the component is enabled now.
fn enabled() -> bool {
    INFO.lock()
        .unwrap_or_else(|e| e.into_inner())
        .is_some_and(|info| info.disabled == 0)
}

/// The CPU model's boxes this machine has.
fn present_boxes(library: &Library) -> Vec<UncoreBox> {
    let Some(model) = library.chosen.context().model() else {
        return Vec::new();
    };
    boxes(uncore_families(model))
        .filter(|b| first_cpu(&b.kernel_name()).is_some())
        .collect()
}

/// The model's events on the boxes this machine has, by name before the unit mask, in the
/// table's order (each once per box).
fn listed(library: &Library) -> Vec<String> {
    let Some(model) = library.chosen.context().model() else {
        return Vec::new();
    };
    let present = present_boxes(library);
    if present.is_empty() {
        return Vec::new();
    }
    let table = library.chosen.context().database().uncore_table(model);
    let mut events = Vec::new();
    for the_box in present {
        let pmu = the_box.libpfm4_name();
        let mut last = "";
        for event in table.iter().filter(|e| e.pmu == the_box.family.database()) {
            let base = event.name.split('.').next().unwrap_or(&event.name);
            if base != last {
                events.push(format!("{pmu}::{base}"));
                last = base;
            }
        }
    }
    events
}

/// The code of uncore name `name`, added to the native table if new; `None` for a name of
/// another component.
pub fn code_of(library: &mut Library, name: &str) -> Option<Result<i32, i32>> {
    let context = library.chosen.context();
    let read = read(context.database(), context.model(), name)?;
    if !enabled() {
        return Some(Err(ENOEVNT));
    }
    // A box this machine lacks names no event, as libpfm4 finds events of the PMUs it
    // detects alone.
    let read = read.and_then(|r| match first_cpu(&r.pmu.kernel_name()) {
        Some(_) => Ok(r),
        None => Err(ENOEVNT),
    });
    // A name the enumeration listed (an event before its unit masks) keeps its code.
    if let Some(i) = library.natives.iter().position(|n| n.name == name) {
        return Some(Ok(names::native_code(i)));
    }
    Some(read.map(|read| register(library, name, &read)))
}

fn register(library: &mut Library, name: &str, read: &UncoreName) -> i32 {
    if let Some(i) = library.natives.iter().position(|n| n.name == name) {
        return names::native_code(i);
    }
    library.natives.push(Native {
        name: name.to_string(),
        backend_name: read.backend_name(),
        description: String::new(),
        placement: Placement {
            cpu: read.cpu,
            system_cpu: first_cpu(&read.pmu.kernel_name()),
            ..Placement::default()
        },
        sde: None,
        powercap: None,
        uncore: true,
    });
    names::native_code(library.natives.len() - 1)
}

/// Whether event `code` is this component's.
pub fn owns_event(library: &Library, code: i32) -> bool {
    match names::decode(code) {
        Some(Code::Native(i)) => library.natives.get(i).is_some_and(|n| n.uncore),
        _ => false,
    }
}

/// `PAPI_get_event_component`'s answer for `code` (`None`: not this component's).
pub fn event_component(code: i32) -> Option<i32> {
    with(|library| Ok(owns_event(library, code).then_some(CIDX)))
        .ok()
        .flatten()
}

/// Fills `info` for one of this component's events.
pub fn describe(info: &mut EventInfo) {
    info.component_index = CIDX;
}

/// Ties `set` to this component, with its domain and granularity (every level, system
/// wide), where it is tied to no component; `PAPI_EINVAL` for a set of another component's, as
/// PAPI 7.0's `_papi_hwi_add_event` answers.
pub fn tie(set: &mut PapiSet) -> Result<(), i32> {
    if set.component < 0 {
        set.component = CIDX;
        set.domain = DOM_ALL;
        set.granularity = GRN_SYS;
        return Ok(());
    }
    if set.component == CIDX {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

/// `PAPI_assign_eventset_component(set, CIDX)`: as PAPI 7.0, a set tied already is
/// `PAPI_EINVAL` (a plain `return`).
pub fn assign(handle: i32) -> i32 {
    crate::library::with_set(handle, |_, set| {
        if set.component >= 0 {
            return Ok(EINVAL);
        }
        tie(set)?;
        Ok(crate::codes::OK)
    })
    .unwrap_or_else(|e| e)
}

/// `PAPI_enum_cmp_event` on this component: `PAPI_ENUM_FIRST` the first event,
/// `PAPI_ENUM_EVENTS` the next, `PAPI_NTV_ENUM_UMASKS` an event's unit masks
/// (`PMU::EVENT:UMASK`); past the last `PAPI_EINVAL` (PAPI's framework's answer);
/// `PAPI_ENOCMP` where the component is disabled.
pub fn enumerate(library: &mut Library, code: i32, modifier: i32) -> Result<i32, i32> {
    if !enabled() {
        return Err(ENOCMP);
    }
    let current = match names::decode(code) {
        Some(Code::Native(i)) => library.natives.get(i).map(|n| n.name.clone()),
        _ => None,
    };
    let events = EVENTS.read().unwrap_or_else(|e| e.into_inner()).clone();
    let next = match modifier {
        // PAPI_ENUM_FIRST
        1 => events.first().cloned(),
        // PAPI_ENUM_EVENTS
        0 => {
            let current = current.ok_or(EINVAL)?;
            let at = events.iter().position(|e| *e == current).ok_or(EINVAL)?;
            events.get(at + 1).cloned()
        }
        // PAPI_NTV_ENUM_UMASKS
        15 => next_unit_mask(library, &current.ok_or(EINVAL)?),
        _ => None,
    };
    let next = next.ok_or(EINVAL)?;
    match code_of(library, &next) {
        Some(Ok(code)) => Ok(code),
        // An event the table has only with unit masks (`UNC_M_CAS_COUNT.RD`): listed by its
        // name, as libpfm4 lists it, with no event of its own to count (adding it is
        // `PAPI_ENOEVNT`, as libpfm4 encodes no such event without its unit mask).
        _ => Ok(register_listed(library, &next)),
    }
}

/// The code of listed name `name` that names no event by itself (an event's name before its
/// unit masks), added to the native table if new.
fn register_listed(library: &mut Library, name: &str) -> i32 {
    if let Some(i) = library.natives.iter().position(|n| n.name == name) {
        return names::native_code(i);
    }
    library.natives.push(Native {
        name: name.to_string(),
        backend_name: String::new(),
        description: String::new(),
        placement: Placement::default(),
        sde: None,
        powercap: None,
        uncore: true,
    });
    names::native_code(library.natives.len() - 1)
}

/// The unit mask after `name`'s (`PMU::EVENT` or `PMU::EVENT:UMASK`), as a full name.
fn next_unit_mask(library: &Library, name: &str) -> Option<String> {
    let (pmu, rest) = name.split_once("::")?;
    let model = library.chosen.context().model()?;
    let the_box = find_box(uncore_families(model), pmu)?;
    let (event, current) = match rest.split_once(':') {
        Some((e, m)) => (e, Some(m)),
        None => (rest, None),
    };
    let masks: Vec<String> = library
        .chosen
        .context()
        .database()
        .uncore_table(model)
        .into_iter()
        .filter(|e| e.pmu == the_box.family.database())
        .filter_map(|e| {
            let (base, mask) = e.name.split_once('.')?;
            (base.eq_ignore_ascii_case(event)).then(|| mask.to_string())
        })
        .collect();
    let next = match current {
        None => 0,
        Some(c) => masks.iter().position(|m| m == c)? + 1,
    };
    masks.get(next).map(|m| format!("{pmu}::{event}:{m}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_skx(name: &str) -> Result<UncoreName, i32> {
        let database = Database::shipped().unwrap();
        read(&database, Some("skx"), name).expect("an uncore name")
    }

    /// libpfm4's PMUs open the kernel boxes their `perf_name`s give
    /// (lib/pfmlib_intel_skx_unc_{imc,cha,pcu,ubo}.c), with the event the kernel's perf JSON
    /// gives the name (skylakex/uncore-memory.json: UNC_M_CAS_COUNT.RD, event 4, umask 3).
    #[test]
    fn names_open_libpfm4s_box_with_the_jsons_event() {
        let cas = read_skx("skx_unc_imc0::UNC_M_CAS_COUNT:RD:cpu=2").unwrap();
        assert_eq!(cas.backend_name(), "uncore_imc_0/event=4,umask=3/");
        assert_eq!(
            (cas.event.as_str(), cas.cpu),
            ("UNC_M_CAS_COUNT.RD", Some(2))
        );
        let boxes = [
            ("skx_unc_cha5::UNC_CHA_CLOCKTICKS", "uncore_cha_5"),
            ("skx_unc_pcu::UNC_P_CLOCKTICKS", "uncore_pcu"),
            ("skx_unc_ubo::UNC_U_EVENT_MSG:VLW_RCVD", "uncore_ubox"),
            ("skx_unc_imc5::UNC_M_CLOCKTICKS", "uncore_imc_5"),
        ];
        for (name, pmu) in boxes {
            assert_eq!(read_skx(name).unwrap().pmu.kernel_name(), pmu, "{name}");
        }
        let qualified = read_skx("skx_unc_imc0::UNC_M_CAS_COUNT:RD:e:i=1:t=0x10").unwrap();
        assert_eq!(
            qualified.terms,
            "event=4,umask=3,edge=0x1,inv=0x1,thresh=0x10"
        );
        // Two unit masks of one event, ORed (RD is 3, WR 0xc).
        let both = read_skx("skx_unc_imc0::UNC_M_CAS_COUNT:RD:WR").unwrap();
        assert_eq!(both.terms, "event=4,umask=0xf");
    }

    /// Bad names are `PAPI_ENOEVNT`, never a panic; another component's name is not read.
    #[test]
    fn bad_names_are_no_event() {
        for name in [
            "skx_unc_imc0::",
            "skx_unc_imc0::UNC_M_CLOCKTICKS:u",
            "skx_unc_imc0::UNC_M_CLOCKTICKS:cpu=-1",
            "skx_unc_imc0::UNC_M_CLOCKTICKS:cpu=99999999999",
            "skx_unc_imc0::UNC_M_CLOCKTICKS:t",
            "skx_unc_imc0::UNC_M_CLOCKTICKS:t=256",
            "skx_unc_imc0::UNC_M_CLOCKTICKS:e=2",
            "skx_unc_imc0::UNC_M_CLOCKTICKS:e:e",
            "skx_unc_imc0::UNC_M_CLOCKTICKS:zz=1",
            "skx_unc_imc0::UNC_M_CAS_COUNT:RD:UNC_P_CLOCKTICKS",
            "bdx_unc_imc0::UNC_M_CLOCKTICKS",
        ] {
            assert_eq!(read_skx(name), Err(ENOEVNT), "{name}");
        }
        let database = Database::shipped().unwrap();
        assert_eq!(
            read(&database, None, "skx_unc_imc0::UNC_M_CLOCKTICKS"),
            Some(Err(ENOEVNT))
        );
        assert_eq!(read(&database, Some("skx"), "perf::CYCLES"), None);
        // No box 6 in libpfm4's SKX IMC: no uncore PMU of libpfm4's (the backend's to refuse).
        assert_eq!(
            read(&database, Some("skx"), "skx_unc_imc6::UNC_M_CLOCKTICKS"),
            None
        );
        assert_eq!(read(&database, Some("skx"), "msr/tsc/"), None);
    }
}
