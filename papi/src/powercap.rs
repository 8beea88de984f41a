//! PAPI 7.0's `powercap` component: energy and power limits as Linux's powercap class shows
//! them (`/sys/class/powercap`, the kernel's intel_rapl driver, on Intel and AMD), read as
//! files, as PAPI reads them.
//!
//! The events are PAPI's (its `linux-powercap.c`): for each socket `S` whose zone
//! `intel-rapl:S` exists, `ENERGY_UJ:ZONES`, `MAX_ENERGY_RANGE_UJ`, `MAX_POWER_A_UW`,
//! `POWER_LIMIT_A_UW`, `TIME_WINDOW_A_US`, `MAX_POWER_B_UW`, `POWER_LIMIT_B_UW`,
//! `TIME_WINDOW_B`, `ENABLED` and `NAME` (each where its file exists: `energy_uj`,
//! `max_energy_range_uj`, `constraint_0_max_power_uw`, ...); for each of its subzones
//! `intel-rapl:S:C` (cores, uncore, DRAM), the first five of those and `ENABLED`, `NAME` as
//! `NAME:ZONES_SUBZONEC`. A `NAME` event's description is the zone's name (`package-0`,
//! `dram`). Each is `powercap:::NAME` to a caller.
//!
//! A set of this component counts system wide (`PAPI_DOM_ALL`, `PAPI_GRN_SYS`). An energy
//! event reads what the zone used since the start or the last reset, in microjoules, across
//! one wrap of its counter at `max_energy_range_uj`; the other events read the file's value.
//! Where PAPI 7.0 differs, this follows the kernel's numbers: an energy counter that has not
//! moved reads 0 (PAPI's reads its absolute value then), a `NAME` event's description has
//! no newline, and `PAPI_write` changes no power limit (`PAPI_ENOSUPP`, as for the backend's
//! counters: nothing here changes the machine's state). With no zone at all the component is disabled, saying so.
//!
//! `COUNTERHAL_SYSFS=DIR` reads `DIR/class/powercap` instead (and the sockets of
//! `DIR/devices/system` where it has them), as the command's `--sysfs` does, and by its rules
//! for a tree that may be hostile: a link is followed only where it stays inside the tree,
//! only regular files of at most a page are read (never a FIFO or a device), and a file
//! refused so is no event.

use counterhal_system::System;

use crate::codes::{ECMP, EINVAL, EISRUN, ENOEVNT, ENOTRUN, OK};
use crate::info::{ComponentInfo, EventInfo, set_str};
use crate::library::{DOM_ALL, GRN_SYS, Library, PapiSet, RUNNING, STOPPED, with};
use crate::names::{self, Code, Native};
use crate::powercap_zones::{ZoneEvent, count, discover, value};

/// The component's index: after the `sde` component, before `sysdetect`.
pub const CIDX: i32 = crate::sde::COMPONENTS;

/// How many components the library has with this one.
pub const COMPONENTS: i32 = CIDX + 1;

/// The component's name.
pub const NAME: &str = "powercap";

/// The prefix of its events' names.
const PREFIX: &str = "powercap:::";

/// `PAPI_INT_SIGNAL` (SIGPROF), the component's `hardware_intr_sig`.
const INT_SIGNAL: i32 = 27;

/// `PAPI_DATATYPE_UINT64`, its events' data type.
const DATATYPE_UINT64: i32 = 1;

/// Why the component is disabled when it finds no zone.
const NO_ZONES: &str = "No powercap zones found (/sys/class/powercap/intel-rapl:N)";

/// The system the zones are read in, `system` with its sysfs at the tree `COUNTERHAL_SYSFS`
/// names, if any; and its sockets (the tree's where it has CPUs, else `system`'s).
fn machine(system: &System) -> (System, i32) {
    let tree = std::env::var_os("COUNTERHAL_SYSFS")
        .filter(|r| !r.is_empty())
        .map(|root| system.clone().with_sysfs(root));
    let with_cpus = tree.as_ref().filter(|t| t.has_cpu(0)).unwrap_or(system);
    let sockets = crate::topology::read(with_cpus).sockets;
    (tree.unwrap_or_else(|| system.clone()), sockets)
}

/// The component's description: as the last initialisation made it, else as before one.
pub fn info() -> *const ComponentInfo {
    let made = crate::library::initialised(|library| library.components.powercap.info).flatten();
    made.map_or_else(before_init, |info| info as *const ComponentInfo)
}

/// The component's description, neither initialised nor disabled (PAPI 7.0's words).
fn description() -> ComponentInfo {
    let mut info = crate::library::component_info();
    set_str(&mut info.name, NAME);
    set_str(&mut info.short_name, NAME);
    set_str(&mut info.description, "Linux powercap energy measurements");
    set_str(&mut info.version, "5.3.0");
    info.cmp_idx = CIDX;
    info.default_domain = DOM_ALL;
    info.available_domains = DOM_ALL;
    info.default_granularity = GRN_SYS;
    info.available_granularities = GRN_SYS;
    info.hardware_intr_sig = INT_SIGNAL;
    info
}

/// The component's description before initialisation, as PAPI 7.0 lists its compiled-in
/// components.
pub fn before_init() -> *const ComponentInfo {
    crate::library::kept_description(description())
}

/// Initialises the component (at `PAPI_library_init`): finds the zones' events, disabled
/// where there is none (`PAPI_ECMP`, saying so) or `PAPI_disable_component` disabled it.
pub fn set_up(setup: &mut crate::library::SetUp<'_>) {
    let disabled = setup.disabled(CIDX);
    let (library, kept) = (&mut *setup.library, &mut *setup.kept);
    let events = if disabled {
        Vec::new()
    } else {
        let (tree, sockets) = machine(library.system);
        discover(&tree, sockets)
    };
    let mut info = description();
    info.initialized = 1;
    let count = events.iter().filter(|e| !e.rapl).count() as i32;
    (info.num_native_events, info.num_cntrs, info.num_mpx_cntrs) = (count, count, count);
    if disabled {
        info.disabled = 1;
        set_str(&mut info.disabled_reason, crate::library::DISABLED_BY_CALL);
    } else if count == 0 {
        info.disabled = ECMP;
        set_str(&mut info.disabled_reason, NO_ZONES);
    }
    // Kept for the process: a caller may hold the pointer PAPI_get_component_info gave.
    let powercap = &mut library.components.powercap;
    powercap.info = Some(kept.description(info));
    powercap.events = events;
}

/// The prefix of PAPI's `rapl` component's names, which this component takes where its zones
/// give them.
const RAPL_PREFIX: &str = "rapl:::";

/// The name after `powercap:::`, for a name of this component; a name of PAPI's `rapl`
/// component (`rapl:::PACKAGE_ENERGY:PACKAGE0`, or without its prefix) as itself.
pub fn strip(name: &str) -> Option<&str> {
    name.strip_prefix(PREFIX)
        .or_else(|| name.strip_prefix(RAPL_PREFIX))
        .or_else(|| {
            let event = name.split(':').next()?;
            ["PACKAGE_ENERGY", "PP0_ENERGY", "PP1_ENERGY", "DRAM_ENERGY"]
                .contains(&event)
                .then_some(name)
        })
}

/// The native code of the component's event `index`, added to the table if new.
fn register(library: &mut Library, index: u32) -> Result<i32, i32> {
    if let Some(i) = library
        .natives
        .iter()
        .position(|n| n.powercap == Some(index))
    {
        return Ok(names::native_code(i));
    }
    let event = library
        .components
        .powercap
        .events
        .get(index as usize)
        .cloned()
        .ok_or(ENOEVNT)?;
    let prefix = if event.rapl { RAPL_PREFIX } else { PREFIX };
    library.natives.push(Native {
        name: format!("{prefix}{}", event.name),
        backend_name: event.name.clone(),
        description: event.description.clone(),
        placement: Default::default(),
        sde: None,
        powercap: Some(index),
        uncore: false,
    });
    Ok(names::native_code(library.natives.len() - 1))
}

/// `PAPI_event_name_to_code` of `powercap:::NAME` (`rest` is what follows the prefix).
pub fn code_of(library: &mut Library, rest: &str) -> Result<i32, i32> {
    let index = library
        .components
        .powercap
        .events
        .iter()
        .position(|e| e.name == rest)
        .ok_or(ENOEVNT)?;
    register(library, index as u32)
}

/// The component's index of event `code`, for an event of this component.
pub fn event_of(library: &Library, code: i32) -> Option<u32> {
    match names::decode(code) {
        Some(Code::Native(i)) => library.natives.get(i).and_then(|n| n.powercap),
        _ => None,
    }
}

/// `PAPI_get_event_component`'s answer for `code` (`None`: not this component's).
pub fn event_component(code: i32) -> Option<i32> {
    with(|library| Ok(event_of(library, code).map(|_| CIDX)))
        .ok()
        .flatten()
}

/// Fills `info` for one of this component's events, as PAPI's `ntv_code_to_info`.
pub fn describe(info: &mut EventInfo) {
    info.component_index = CIDX;
    info.data_type = DATATYPE_UINT64;
}

/// `PAPI_enum_cmp_event` on this component: `PAPI_ENUM_FIRST` the first event,
/// `PAPI_ENUM_EVENTS` the next; past the last or with another modifier `PAPI_EINVAL` (PAPI's
/// framework's answer whatever the component said); `PAPI_ENOCMP` where it is disabled.
pub fn enumerate(library: &mut Library, code: i32, modifier: i32) -> Result<i32, i32> {
    if !library.components.powercap.enabled() {
        return Err(crate::codes::ENOCMP);
    }
    let next = match modifier {
        // PAPI_ENUM_FIRST
        1 => 0,
        // PAPI_ENUM_EVENTS
        0 => event_of(library, code).ok_or(EINVAL)? + 1,
        _ => return Err(EINVAL),
    };
    let events = &library.components.powercap.events;
    if events.get(next as usize).is_none_or(|e| e.rapl) {
        return Err(EINVAL);
    }
    register(library, next)
}

/// Whether `set` counts this component's events.
pub fn owns(set: &PapiSet) -> bool {
    set.component == CIDX
}

/// The events of `set`, from the library's table.
fn events_of<'a>(events: &'a [ZoneEvent], set: &PapiSet) -> Result<Vec<&'a ZoneEvent>, i32> {
    set.own_counters
        .iter()
        .map(|&i| events.get(i as usize).ok_or(ECMP))
        .collect()
}

/// Each event's value now.
fn now(events: &[ZoneEvent], set: &PapiSet) -> Result<Vec<i64>, i32> {
    Ok(events_of(events, set)?.iter().map(|e| value(e)).collect())
}

/// `PAPI_start`: each counter's value now becomes its start.
pub fn start(events: &[ZoneEvent], set: &mut PapiSet) -> Result<i32, i32> {
    if set.state & RUNNING != 0 {
        return Err(EISRUN);
    }
    if set.events.is_empty() {
        return Err(EINVAL);
    }
    set.own_starts = now(events, set)?;
    set.own_values = vec![0; set.events.len()];
    set.state = (set.state & !STOPPED) | RUNNING;
    Ok(OK)
}

/// Each count of `set` handed to `put` with its index: the counts now while it runs, else
/// those of its last stop (zeros before its first start).
pub fn read_each(
    events: &[ZoneEvent],
    set: &PapiSet,
    mut put: impl FnMut(usize, i64),
) -> Result<i32, i32> {
    if set.state & RUNNING == 0 {
        for i in 0..set.events.len() {
            put(i, set.own_values.get(i).copied().unwrap_or(0));
        }
        return Ok(OK);
    }
    for (i, event) in events_of(events, set)?.into_iter().enumerate() {
        let start = set.own_starts.get(i).copied().unwrap_or(0);
        put(i, count(event, start, value(event)));
    }
    Ok(OK)
}

/// `PAPI_stop`: the counts, kept for later reads.
pub fn stop(events: &[ZoneEvent], set: &mut PapiSet) -> Result<Vec<i64>, i32> {
    if set.state & RUNNING == 0 {
        return Err(ENOTRUN);
    }
    let mut values = vec![0; set.events.len()];
    read_each(events, set, |i, v| values[i] = v)?;
    set.own_values.clone_from(&values);
    set.state = (set.state & !RUNNING) | STOPPED;
    Ok(values)
}

/// `PAPI_reset`: a running set counts from now; a stopped set's kept counts become zeros.
pub fn reset(events: &[ZoneEvent], set: &mut PapiSet) -> Result<i32, i32> {
    if set.state & RUNNING == 0 {
        set.own_values.iter_mut().for_each(|v| *v = 0);
        return Ok(OK);
    }
    set.own_starts = now(events, set)?;
    Ok(OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::powercap_zones::number;
    use counterhal_conformance::fixtures::Scratch;

    /// A zone tree as the kernel's powercap class lays it out (Documentation/ABI/testing/
    /// sysfs-class-powercap): a package zone with both constraints, two subzones.
    fn tree(name: &str) -> Scratch {
        let root = Scratch::new(&format!("papi-powercap-{name}"));
        let zone = |dir: &str, files: &[(&str, &str)]| {
            let dir = root.join("class/powercap").join(dir);
            std::fs::create_dir_all(&dir).unwrap();
            for (file, text) in files {
                std::fs::write(dir.join(file), text).unwrap();
            }
        };
        zone(
            "intel-rapl:0",
            &[
                ("name", "package-0\n"),
                ("energy_uj", "1000\n"),
                ("max_energy_range_uj", "262143328850\n"),
                ("constraint_0_power_limit_uw", "65000000\n"),
                ("constraint_1_power_limit_uw", "90000000\n"),
                ("enabled", "1\n"),
            ],
        );
        zone(
            "intel-rapl:0:0",
            &[("name", "core\n"), ("energy_uj", "7\n")],
        );
        zone(
            "intel-rapl:0:1",
            &[("name", "dram\n"), ("energy_uj", "9\n")],
        );
        root
    }

    /// Oracle: PAPI 7.0's linux-powercap.c, its event tables and its names: each package
    /// event whose file exists as `EVENT:ZONE0` in its table's order, then each subzone's as
    /// `EVENT:ZONE0_SUBZONEC`, a `NAME` event described by the zone's name.
    #[test]
    fn zones_give_papis_events_in_papis_order() {
        let root = tree("order");
        let events = discover(&System::host().with_sysfs(root.path()), 1);
        let names: Vec<&str> = events
            .iter()
            .filter(|e| !e.rapl)
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "ENERGY_UJ:ZONE0",
                "MAX_ENERGY_RANGE_UJ:ZONE0",
                "POWER_LIMIT_A_UW:ZONE0",
                "POWER_LIMIT_B_UW:ZONE0",
                "ENABLED:ZONE0",
                "NAME:ZONE0",
                "ENERGY_UJ:ZONE0_SUBZONE0",
                "NAME:ZONE0_SUBZONE0",
                "ENERGY_UJ:ZONE0_SUBZONE1",
                "NAME:ZONE0_SUBZONE1",
            ]
        );
        assert_eq!(events[5].description, "package-0");
        assert_eq!(events[9].description, "dram");
        assert_eq!(events[0].wraps_at, Some(262_143_328_850));
        assert_eq!(events[2].wraps_at, None);
        // PAPI's rapl names the zones give: the package's, its cores', its DRAM's.
        let rapl: Vec<&str> = events
            .iter()
            .filter(|e| e.rapl)
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(
            rapl,
            [
                "PACKAGE_ENERGY:PACKAGE0",
                "PP0_ENERGY:PACKAGE0",
                "DRAM_ENERGY:PACKAGE0"
            ]
        );
        // A socket past the machine's is not looked for, one without a zone is skipped.
        assert_eq!(
            discover(&System::host().with_sysfs(root.path()), 0).len(),
            13
        );
        assert!(discover(&System::host().with_sysfs(root.join("none")), 2).is_empty());
    }

    /// A tree `COUNTERHAL_SYSFS` names is read by sysfs's own rules, as the backend reads a
    /// PMU tree: a link out of it, a FIFO and a device give no event (and no wait, no endless
    /// read), a link inside it is followed as the real class's are.
    ///
    /// Oracle: the kernel's sysfs (fs/sysfs/file.c: an attribute is a regular file of at most
    /// a page) and its powercap class, whose zones are links into `/sys/devices/virtual`
    /// (Documentation/ABI/testing/sysfs-class-powercap).
    #[test]
    fn a_hostile_tree_neither_blocks_nor_leaks() {
        use std::os::unix::fs::symlink;
        let root = tree("hostile");
        let class = root.join("class/powercap");
        let zone = class.join("intel-rapl:0");
        let outside = Scratch::new("papi-powercap-outside");
        let secret = outside.join("secret");
        std::fs::write(&secret, "123456789\n").unwrap();
        symlink(&secret, zone.join("constraint_0_max_power_uw")).unwrap();
        symlink("/dev/zero", zone.join("constraint_1_max_power_uw")).unwrap();
        let fifo = zone.join("constraint_0_time_window_us");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
        // The DRAM subzone where the kernel keeps it, linked from the class.
        let devices = root.join("devices/virtual/powercap/intel-rapl");
        std::fs::create_dir_all(&devices).unwrap();
        std::fs::rename(class.join("intel-rapl:0:1"), devices.join("intel-rapl:0:1")).unwrap();
        symlink(
            "../../devices/virtual/powercap/intel-rapl/intel-rapl:0:1",
            class.join("intel-rapl:0:1"),
        )
        .unwrap();
        let (sent, events) = std::sync::mpsc::channel();
        let tree = root.to_path_buf();
        std::thread::spawn(move || sent.send(discover(&System::host().with_sysfs(tree), 1)));
        let events = events
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("discover blocked for 30 s on the tree's FIFO");
        let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
        for refused in [
            "MAX_POWER_A_UW:ZONE0",
            "MAX_POWER_B_UW:ZONE0",
            "TIME_WINDOW_A_US:ZONE0",
        ] {
            assert!(!names.contains(&refused), "{refused} in {names:?}");
        }
        for kept in [
            "ENERGY_UJ:ZONE0",
            "NAME:ZONE0_SUBZONE1",
            "DRAM_ENERGY:PACKAGE0",
        ] {
            assert!(names.contains(&kept), "{kept} not in {names:?}");
        }
        assert!(
            events.iter().all(|e| value(e) != 123_456_789),
            "the secret outside the tree was read"
        );
    }

    /// An energy counter counts from its start, across a wrap at its range; other files read
    /// as they are; numbers as `atoll` reads them.
    #[test]
    fn energy_counts_from_the_start_across_a_wrap() {
        let energy = ZoneEvent {
            name: "ENERGY_UJ:ZONE0".into(),
            rapl: false,
            zone: "package-0".into(),
            source: None,
            file: counterhal_system::RaplAttribute::Energy,
            description: String::new(),
            wraps_at: Some(1_000),
        };
        assert_eq!(count(&energy, 100, 350), 250);
        assert_eq!(count(&energy, 100, 100), 0);
        assert_eq!(count(&energy, 900, 50), 150);
        let nanojoules = ZoneEvent {
            rapl: true,
            ..energy.clone()
        };
        assert_eq!(count(&nanojoules, 900, 50), 150_000);
        let limit = ZoneEvent {
            wraps_at: None,
            ..energy
        };
        assert_eq!(count(&limit, 100, 65), 65);
        assert_eq!(number("65000000\n"), 65_000_000);
        assert_eq!(number("package-0\n"), 0);
        assert_eq!(number("  -12x"), -12);
    }
}
