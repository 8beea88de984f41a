//! libpfm4's `perf::` events (its perf_event PMU), which PAPI 7.0's perf_event component lists
//! and adds: the table (the shipped tables', `events/data/papi/perf_natives.toml`, generated
//! from libpfm4 by `papi/gen/perf_natives.c`) and the reading of a
//! `perf::EVENT[:UNIT_MASK]...[:qualifier=value]...` name into the backend's perf name and
//! the set's placement.
//!
//! The qualifiers are libpfm4's for the event's kind (the table's `software` and `hardware`
//! modifier lists): `u`, `k`, `h` choose the privilege levels (given, they replace the
//! set's domain); `mg=0` leaves out guests and `mh=0` the host; `precise` is perf's `:p`;
//! `excl` and `pinned` ask the kernel to give the set's group the PMU to itself or to keep it
//! on the counters; `cpu` counts on that CPU; `period` and `freq` are sampling rates, which
//! change nothing in a count and are taken and checked only.
//!
//! libpfm4 gives its perf PMU the privilege levels of the core PMU it detects
//! (`pfm_perf_pmu_supported_plm`): where that PMU filters no hypervisor level (every Intel
//! x86 PMU, AMD's K7 and K8), hardware and cache events take no `h`, and PAPI neither lists
//! nor adds it. [`qualifiers`] is the table's list less `h` there.

use crate::codes::{EINVAL, ENOEVNT};
use crate::libpfm4::HypervisorLevel;
pub use counterhal_events::papi::{PerfNative, PerfType, perf_natives, perf_raw};

/// `perf::` as PAPI 7.0 matches a PMU prefix: as written (`PERF::PAGE-FAULTS` is no event
/// there); the rest of `name`, if it has it.
pub fn strip_perf(name: &str) -> Option<&str> {
    name.strip_prefix("perf::")
}

/// `perf_raw::` as PAPI 7.0 matches libpfm4's raw PMU (as written); the rest of `name`, if
/// it has it.
pub fn strip_raw(name: &str) -> Option<&str> {
    name.strip_prefix("perf_raw::")
}

/// The config a `perf_raw::` event name gives (`rc0`, `r00c0`, `r0x10`: 0xc0, 0xc0, 0x10), as
/// libpfm4 4.13 reads it (`pfm_perf_raw_match_event`, and Debian's PAPI 7.0 adding the same
/// names): `r`, a hexadecimal digit, then hexadecimal to the end (a `0x` prefix taken, either
/// case), short of 2^64 - 1; `None` for anything else (`R00c0`, `r00c0zz`, `r-1`).
pub fn raw_config(event: &str) -> Option<u64> {
    let hex = event.strip_prefix('r')?;
    if !hex.starts_with(|c: char| c.is_ascii_hexdigit()) {
        return None;
    }
    let digits = hex
        .strip_prefix("0x")
        .or_else(|| hex.strip_prefix("0X"))
        .unwrap_or(hex);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, 16)
        .ok()
        .filter(|&config| config != u64::MAX)
}

/// The event of libpfm4's perf PMUs that `name` names (a `perf::` event of the table, in any
/// case; `perf_raw::`'s pseudo-event for a name in perf's raw syntax) and what follows the
/// event (its unit masks and qualifiers, `READ:MISS:u=0`), if anything. `None` for any other
/// name.
pub fn event_of(name: &str) -> Option<(PerfNative, Option<&str>)> {
    if let Some(rest) = strip_raw(name) {
        let (event, after) = split_event(rest);
        raw_config(event)?;
        return Some((perf_raw()?, after));
    }
    let (event, after) = split_event(strip_perf(name)?);
    Some((find(event)?, after))
}

/// An event name without its PMU split at its first `:`.
fn split_event(rest: &str) -> (&str, Option<&str>) {
    match rest.split_once(':') {
        Some((event, after)) => (event, Some(after)),
        None => (rest, None),
    }
}

/// Where a set must run for an event's qualifiers (`pinned`, `excl`, `cpu`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// `pinned=1`: the group stays on the counters.
    pub pinned: bool,
    /// `excl=1`: the group has the PMU to itself.
    pub exclusive: bool,
    /// `cpu=N`: counted on CPU N.
    pub cpu: Option<u32>,
    /// For an event of a PMU that counts a whole CPU (an uncore box), the CPU it counts on
    /// where neither its `cpu` qualifier nor the set names one: the first of the PMU's
    /// `cpumask`, as perf opens it.
    pub system_cpu: Option<u32>,
}

/// A `perf::` name read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfName {
    /// The event in libpfm4's table.
    pub event: PerfNative,
    /// perf's name for it, with the privilege and host/guest modifiers given (`cs:u=1`).
    pub backend_name: String,
    /// Whether `u`, `k` or `h` was given (then the set's domain does not apply).
    pub levels_given: bool,
    /// Where the set must run.
    pub placement: Placement,
}

/// The table's event named `name` (`perf::` and case aside, as libpfm4 matches).
pub fn find(name: &str) -> Option<PerfNative> {
    perf_natives().find(|e| strip_perf(e.name()).is_some_and(|e| e.eq_ignore_ascii_case(name)))
}

/// The qualifiers `event` takes on this machine, as libpfm4 gives them: the table's, less
/// `h` where the core PMU libpfm4 detects here filters no hypervisor level
/// (`hypervisor`, [`HypervisorLevel`]).
pub fn qualifiers(
    event: &PerfNative,
    hypervisor: &HypervisorLevel,
) -> impl Iterator<Item = (&'static str, &'static str)> + use<> {
    // libpfm4's perf_raw PMU takes every level (`PERF_PLM_ALL`), whatever the core PMU.
    let h = event.kind() == PerfType::Raw || hypervisor.filtered();
    event.modifiers().filter(move |(m, _)| h || *m != "h")
}

/// How many qualifiers and unit masks a name takes (libpfm4's `PFMLIB_MAX_ATTRS`: PAPI 7.0
/// adds `perf::PAGE-FAULTS` with 64 `:u` and refuses it with 65).
const MAX_ATTRIBUTES: usize = 64;

/// perf's name for an event of the table: the lower-case alias of the same type and config
/// (`PERF_COUNT_SW_CONTEXT_SWITCHES` is `context-switches`).
fn perf_name(kind: PerfType, config: u64) -> Option<String> {
    perf_natives()
        .find(|e| {
            e.kind() == kind
                && e.config() == config
                && e.unit_masks().len() == 0
                && !e.name().starts_with("perf::PERF_COUNT_")
        })
        .and_then(|e| strip_perf(e.name()))
        .map(str::to_ascii_lowercase)
}

/// A boolean qualifier's value as libpfm4 reads it: `1`, `y` or `t` (any case) for true, `0`,
/// `n` or `f` for false; a bare name is true.
fn flag(value: Option<&str>) -> Result<bool, i32> {
    match value.map(str::to_ascii_lowercase).as_deref() {
        None | Some("1" | "y" | "t") => Ok(true),
        Some("0" | "n" | "f") => Ok(false),
        Some(_) => Err(ENOEVNT),
    }
}

/// An integer qualifier's value as libpfm4 reads it (`strtoull` in base 0: decimal, `0x`
/// hexadecimal or `0` octal, a sign taken, a value past 64 bits the largest): `PAPI_ENOEVNT`
/// for text that is no number (`cpu=abc`), as libpfm4's refusal reaches PAPI 7.0's add. A
/// negative value wraps (`period=-1` is 2^64 - 1, which the kernel's limit then refuses).
fn number(value: Option<&str>) -> Result<u64, i32> {
    let text = value.ok_or(ENOEVNT)?;
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (radix, digits) = match unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
    {
        Some(hex) => (16, hex),
        None if unsigned.len() > 1 && unsigned.starts_with('0') => (8, &unsigned[1..]),
        None => (10, unsigned),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(ENOEVNT);
    }
    let magnitude = u64::from_str_radix(digits, radix).unwrap_or(u64::MAX);
    Ok(if negative {
        magnitude.wrapping_neg()
    } else {
        magnitude
    })
}

/// Reads a `perf::` name: `None` when `name` is no `perf::` name of libpfm4's table, else the
/// backend's name and the set's placement, or PAPI's error for a unit mask or qualifier the
/// event does not take (`PAPI_ENOEVNT`) or a value out of range (`PAPI_EINVAL`).
///
/// As PAPI 7.0 reads them: `perf::` as written, the event in any case (libpfm4's
/// `strcasecmp`), each unit mask and qualifier as libpfm4 spells it (PAPI's perf_event
/// component looks each up with `strncmp`: `READ`, `u`, `period`; `:U` and `:read` are no
/// qualifiers there), at most `MAX_ATTRIBUTES` (64) of them.
///
/// A `perf_raw::` name (`perf_raw::rc0:u=1`) is always read: its event is perf's raw
/// encoding (`rc0`, [`raw_config`]) with the qualifiers of libpfm4's raw PMU, and a name
/// libpfm4 does not match is `PAPI_ENOEVNT`.
/// `hypervisor` says whether the `h` qualifier is libpfm4's here ([`qualifiers`]).
pub fn read(name: &str, hypervisor: &HypervisorLevel) -> Option<Result<PerfName, i32>> {
    let (event, config, rest) = match strip_raw(name) {
        Some(rest) => {
            let mut parts = rest.split(':');
            match (parts.next().and_then(raw_config), perf_raw()) {
                (Some(config), Some(raw)) => (raw, config, rest),
                _ => return Some(Err(ENOEVNT)),
            }
        }
        None => {
            let rest = strip_perf(name)?;
            let event = find(rest.split(':').next()?)?;
            (event, event.config(), rest)
        }
    };
    let parts = rest.split(':').skip(1);
    if parts.clone().count() > MAX_ATTRIBUTES {
        return Some(Err(ENOEVNT));
    }
    Some(read_parts(event, config, parts, hypervisor))
}

fn read_parts<'a>(
    event: PerfNative,
    config: u64,
    parts: impl Iterator<Item = &'a str>,
    hypervisor: &HypervisorLevel,
) -> Result<PerfName, i32> {
    let mut operation = None;
    let mut result = None;
    let mut levels = String::new();
    let mut seen: Vec<(&str, u64)> = Vec::new();
    let mut levels_given = false;
    let mut guest = true;
    let mut host = true;
    let mut precise = 0;
    let mut placement = Placement::default();
    for part in parts {
        let (key, value) = match part.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (part, None),
        };
        if value.is_none() && event.unit_masks().any(|(m, _)| m == key) {
            // A unit mask is the cache's operation or result, by its name: the kernel's
            // PERF_COUNT_HW_CACHE_OP_{READ,WRITE,PREFETCH} (0, 1, 2) and
            // PERF_COUNT_HW_CACHE_RESULT_{ACCESS,MISS} (0, 1). An event lists the ones its
            // cache has (L1I: READ, PREFETCH, ACCESS, MISS), so a mask's place is not its
            // number.
            let (slot, number) = match key {
                "READ" => (&mut operation, 0),
                "WRITE" => (&mut operation, 1),
                "PREFETCH" => (&mut operation, 2),
                "ACCESS" => (&mut result, 0),
                "MISS" => (&mut result, 1),
                _ => return Err(ENOEVNT),
            };
            if slot.replace(number).is_some() {
                return Err(ENOEVNT);
            }
            continue;
        }
        if !qualifiers(&event, hypervisor).any(|(m, _)| m == key) {
            return Err(ENOEVNT);
        }
        let given = match key {
            "u" | "k" | "h" | "mg" | "mh" | "excl" | "pinned" | "hw_smpl" => {
                u64::from(flag(value)?)
            }
            _ => number(value)?,
        };
        // Given twice, a qualifier must say the same (PAPI 7.0 adds `:u:u=1` and refuses
        // `:u=1:u=0` and `:period=5:period=6`).
        match seen.iter().find(|(k, _)| *k == key) {
            Some(&(_, before)) if before != given => return Err(ENOEVNT),
            Some(_) => continue,
            None => seen.push((key, given)),
        }
        let on = given != 0;
        match key {
            "u" | "k" | "h" => {
                levels.push_str(&format!(":{key}={given}"));
                levels_given = true;
            }
            "mg" => guest = on,
            "mh" => host = on,
            "excl" => placement.exclusive = on,
            "pinned" => placement.pinned = on,
            "precise" => precise = given.min(4),
            // Hardware sampling asks for a precise event (libpfm4 sets `precise=1`).
            "hw_smpl" => precise = precise.max(u64::from(on)),
            // A CPU number past 32 bits is none (PAPI 7.0: PAPI_ENOEVNT for `cpu=-1`); one
            // past the machine's is refused when the set opens (PAPI_EINVAL).
            "cpu" => placement.cpu = Some(u32::try_from(given).map_err(|_| ENOEVNT)?),
            // Sampling rates: a count is the same whatever they are; libpfm4 refuses zero and
            // the kernel a period past 2^63 - 1.
            _ => {
                if given == 0 {
                    return Err(ENOEVNT);
                }
                if given > i64::MAX as u64 {
                    return Err(EINVAL);
                }
            }
        }
    }
    if precise > 3 {
        return Err(EINVAL);
    }
    let base = match event.kind() {
        // An alias (`perf::L1-ICACHE-LOADS`) is libpfm4's whole encoding, its operation and
        // result in its config; a cache's own event takes them from its unit masks.
        PerfType::Cache if event.unit_masks().next().is_none() => {
            perf_name(PerfType::Cache, config)
        }
        PerfType::Cache => {
            let config = config
                | (operation.ok_or(ENOEVNT)? as u64) << 8
                | (result.ok_or(ENOEVNT)? as u64) << 16;
            perf_name(PerfType::Cache, config)
        }
        // perf's raw syntax, which the backend reads as `PERF_TYPE_RAW`.
        PerfType::Raw => Some(format!("r{config:x}")),
        kind => perf_name(kind, config),
    }
    .ok_or(ENOEVNT)?;
    let mut backend_name = base + &levels;
    match (host, guest) {
        (true, true) => {}
        (true, false) => backend_name.push_str(":H"),
        (false, true) => backend_name.push_str(":G"),
        // Neither host nor guest: software events ignore both (the kernel checks the privilege
        // levels alone for them), hardware events would count nothing.
        (false, false) if event.kind() == PerfType::Software => {}
        (false, false) => return Err(EINVAL),
    }
    if precise > 0 {
        backend_name.push(':');
        backend_name.push_str(&"p".repeat(precise as usize));
    }
    Ok(PerfName {
        event,
        backend_name,
        levels_given,
        placement,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// libpfm4's perf events read as on this machine.
    fn read(name: &str) -> Option<Result<PerfName, i32>> {
        super::read(name, &HypervisorLevel::default())
    }

    fn backend(name: &str) -> Result<String, i32> {
        read(name).expect("a perf:: name").map(|n| n.backend_name)
    }

    /// libpfm4's perf PMU names (the table generated from libpfm4) reach perf's names (the
    /// oracle: perf's own event list, `perf list sw hw cache`).
    #[test]
    fn names_and_aliases_reach_perf_names() {
        assert_eq!(backend("perf::TASK-CLOCK").unwrap(), "task-clock");
        assert_eq!(
            backend("perf::PERF_COUNT_SW_PAGE_FAULTS").unwrap(),
            "page-faults"
        );
        assert_eq!(backend("perf::FAULTS").unwrap(), "page-faults");
        assert_eq!(backend("perf::cs").unwrap(), "context-switches");
        assert_eq!(
            backend("perf::PERF_COUNT_SW_PAGE_FAULTS_MIN").unwrap(),
            "minor-faults"
        );
        assert_eq!(
            backend("perf::PERF_COUNT_HW_REF_CPU_CYCLES").unwrap(),
            "ref-cycles"
        );
        assert_eq!(backend("perf::CYCLES").unwrap(), "cycles");
        assert_eq!(
            backend("perf::PERF_COUNT_HW_CACHE_L1D:READ:MISS").unwrap(),
            "l1-dcache-load-misses"
        );
        assert_eq!(
            backend("perf::PERF_COUNT_HW_CACHE_LL:WRITE:ACCESS").unwrap(),
            "llc-stores"
        );
        // The event in any case, its unit masks and qualifiers as libpfm4 spells them, the
        // PMU as written (as PAPI 7.0 reads them: papi/tests/c/names.c on both libraries).
        assert_eq!(
            backend("perf::perf_count_hw_cache_ll:WRITE:ACCESS").unwrap(),
            "llc-stores"
        );
        assert_eq!(
            backend("perf::PERF_COUNT_HW_CACHE_LL:write:access"),
            Err(ENOEVNT)
        );
        assert_eq!(backend("perf::TASK-CLOCK:U"), Err(ENOEVNT));
        assert_eq!(backend("perf::TASK-CLOCK:Period=5"), Err(ENOEVNT));
        assert!(read("PERF::TASK-CLOCK").is_none());
        // At most 64 qualifiers (libpfm4's PFMLIB_MAX_ATTRS), one value for each.
        let many = |n: usize| format!("perf::PAGE-FAULTS{}", ":u".repeat(n));
        assert_eq!(backend(&many(64)).unwrap(), "page-faults:u=1");
        assert_eq!(backend(&many(65)), Err(ENOEVNT));
        assert_eq!(backend("perf::TASK-CLOCK:u:u=y").unwrap(), "task-clock:u=1");
        assert_eq!(backend("perf::TASK-CLOCK:u=1:u=0"), Err(ENOEVNT));
        assert_eq!(backend("perf::TASK-CLOCK:period=5:period=6"), Err(ENOEVNT));
        // A cache event needs its operation and result.
        assert_eq!(backend("perf::PERF_COUNT_HW_CACHE_L1D:READ"), Err(ENOEVNT));
        assert!(read("INST_RETIRED:ANY_P").is_none());
        assert!(read("perf::NOT_AN_EVENT").is_none());
    }

    /// Oracle: libpfm4's own encodings, which its perf_event PMU lists as the cache events'
    /// aliases (`perf::L1-ICACHE-PREFETCH-MISSES` is config 0x10201; the table is libpfm4's,
    /// papi/tests/unit_masks.rs `the_perf_table_is_libpfm4s`). Every operation and result a
    /// cache event lists, each pair, reaches the perf event of one of its aliases, and every
    /// alias is reached: L1I, whose masks are READ, PREFETCH, ACCESS and MISS, counts its
    /// prefetches with PREFETCH (not its stores, as when a mask's place was its number).
    #[test]
    fn every_cache_operation_and_result_is_one_of_libpfm4s_aliases() {
        let cache = |e: &PerfNative| e.kind() == PerfType::Cache;
        let masked: Vec<PerfNative> = perf_natives()
            .filter(|e| cache(e) && e.unit_masks().next().is_some())
            .collect();
        assert_eq!(masked.len(), 7, "libpfm4's seven caches");
        for event in masked {
            let id = event.config();
            let (operations, results): (Vec<&str>, Vec<&str>) = event
                .unit_masks()
                .map(|(m, _)| m)
                .partition(|m| !["ACCESS", "MISS"].contains(m));
            let mut reached = std::collections::BTreeSet::new();
            for operation in &operations {
                for result in &results {
                    let name = format!("{}:{operation}:{result}", event.name());
                    assert!(reached.insert(backend(&name).unwrap()), "{name}");
                }
            }
            let aliases: std::collections::BTreeSet<String> = perf_natives()
                .filter(|e| cache(e) && e.unit_masks().next().is_none())
                .filter(|e| e.config() & 0xff == id)
                .map(|e| backend(e.name()).unwrap())
                .collect();
            assert_eq!(reached, aliases, "{}", event.name());
        }
        assert_eq!(
            backend("perf::PERF_COUNT_HW_CACHE_L1I:PREFETCH:MISS").unwrap(),
            "l1-icache-prefetch-misses"
        );
        assert_eq!(
            backend("perf::PERF_COUNT_HW_CACHE_ITLB:READ:ACCESS").unwrap(),
            "itlb-loads"
        );
        assert_eq!(
            backend("perf::PERF_COUNT_HW_CACHE_ITLB:WRITE:ACCESS"),
            Err(ENOEVNT)
        );
    }

    /// libpfm4's perf_raw names (Debian's PAPI 7.0 takes and refuses the same:
    /// papi/tests/side_by_side.rs `perf_raw_names_answer_as_papi`): perf's raw syntax, the
    /// raw PMU's qualifiers, `h` included.
    #[test]
    fn raw_names_as_libpfm4_reads_them() {
        assert_eq!(raw_config("r00c0"), Some(0xc0));
        assert_eq!(raw_config("rC0"), Some(0xc0));
        assert_eq!(raw_config("r0x10"), Some(0x10));
        assert_eq!(raw_config("r01234567890123456"), Some(0x1234567890123456));
        for refused in [
            "R00c0",
            "r",
            "rzz",
            "r00c0zz",
            "r0x",
            "r-1",
            "rffffffffffffffff",
        ] {
            assert_eq!(raw_config(refused), None, "{refused}");
        }
        assert_eq!(raw_config("r123456789012345678"), None);
        assert_eq!(backend("perf_raw::r00c0").unwrap(), "rc0");
        assert_eq!(backend("perf_raw::r00c0:u=1:h=0").unwrap(), "rc0:u=1:h=0");
        assert_eq!(backend("perf_raw::r00c0:hw_smpl").unwrap(), "rc0:p");
        assert_eq!(backend("perf_raw::r00c0zz"), Err(ENOEVNT));
        assert_eq!(backend("perf_raw::r1:u=1:u=0"), Err(ENOEVNT));
        assert!(read("PERF_RAW::r00c0").is_none());
        let (event, after) = event_of("perf_raw::rc0:u=0").unwrap();
        assert_eq!((event.name(), after), ("perf_raw::r0000", Some("u=0")));
        assert!(event_of("perf_raw::rzz").is_none());
    }

    /// Each qualifier PAPI 7.0 takes through libpfm4 (Debian's PAPI adds each on
    /// perf::TASK-CLOCK; papi/tests/unit_masks.rs runs them on both), and the refusals.
    #[test]
    fn qualifiers_as_libpfm4_takes_them() {
        let name = |n: &str| read(n).unwrap();
        assert_eq!(backend("perf::TASK-CLOCK:u=0").unwrap(), "task-clock:u=0");
        assert_eq!(backend("perf::TASK-CLOCK:u").unwrap(), "task-clock:u=1");
        assert!(name("perf::TASK-CLOCK:k=1").unwrap().levels_given);
        assert!(!name("perf::TASK-CLOCK:period=100").unwrap().levels_given);
        assert_eq!(backend("perf::TASK-CLOCK:freq=100").unwrap(), "task-clock");
        assert_eq!(backend("perf::TASK-CLOCK:mg=0").unwrap(), "task-clock:H");
        assert_eq!(backend("perf::TASK-CLOCK:mh=0").unwrap(), "task-clock:G");
        assert_eq!(backend("perf::TASK-CLOCK:mg=0:mh=0").unwrap(), "task-clock");
        assert_eq!(backend("perf::CYCLES:mg=0:mh=0"), Err(EINVAL));
        assert_eq!(backend("perf::CYCLES:precise=2").unwrap(), "cycles:pp");
        let placed = name("perf::TASK-CLOCK:excl=1:pinned=1:cpu=1").unwrap();
        assert_eq!(
            placed.placement,
            Placement {
                pinned: true,
                exclusive: true,
                cpu: Some(1),
                system_cpu: None,
            }
        );
        // Software events take no `h` and no `precise`; values out of range.
        assert_eq!(backend("perf::TASK-CLOCK:h=1"), Err(ENOEVNT));
        assert_eq!(backend("perf::TASK-CLOCK:precise=1"), Err(ENOEVNT));
        assert_eq!(backend("perf::TASK-CLOCK:u=2"), Err(ENOEVNT));
        assert_eq!(backend("perf::TASK-CLOCK:bogus=1"), Err(ENOEVNT));
        assert_eq!(backend("perf::TASK-CLOCK:period=0"), Err(ENOEVNT));
        assert_eq!(backend("perf::TASK-CLOCK:freq=0"), Err(ENOEVNT));
        assert_eq!(backend("perf::TASK-CLOCK:period=-1"), Err(EINVAL));
        assert_eq!(
            backend("perf::TASK-CLOCK:period=99999999999999999999999"),
            Err(EINVAL)
        );
        // Numbers as libpfm4's strtoull reads them (PAPI 7.0's adds: papi/tests/c/names.c).
        assert_eq!(backend("perf::TASK-CLOCK:cpu=99999999999"), Err(ENOEVNT));
        assert_eq!(backend("perf::TASK-CLOCK:cpu=-1"), Err(ENOEVNT));
        assert_eq!(backend("perf::TASK-CLOCK:cpu=abc"), Err(ENOEVNT));
        assert_eq!(backend("perf::TASK-CLOCK:period=abc"), Err(ENOEVNT));
        let placed = |n: &str| read(n).unwrap().unwrap().placement.cpu;
        assert_eq!(placed("perf::TASK-CLOCK:cpu=0x1"), Some(1));
        assert_eq!(placed("perf::TASK-CLOCK:cpu=010"), Some(8));
        assert_eq!(placed("perf::TASK-CLOCK:cpu=+2"), Some(2));
    }
}
