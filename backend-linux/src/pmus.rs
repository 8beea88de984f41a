//! Dynamic PMUs as perf discovers them in `/sys/bus/event_source/devices`, from the facts
//! `counterhal_system::PmuDevices` answers with (this module reads no file itself): each PMU's
//! `type`, `format/` fields (`config:0-7,32-35`, [`mod@format`]), `events/` aliases with their
//! `.scale`, `.unit`, `.snapshot` and `.per-pkg` ([`alias`]), `cpumask` (or a hybrid core
//! PMU's `cpus`), `alias` name and `caps/`; and the `pmu/term=value,alias/` event syntax built
//! on them ([`event`]).
//!
//! The tree may be any machine's: a sysfs root's `bus/event_source/devices`
//! (`counterhal_system::PmuDevices`, of `System::host().with_sysfs(DIR)`), so that its PMUs
//! encode here. Every file of it is read by
//! `counterhal_system`'s one rule (inside the tree, regular files of at most a page, never
//! blocking: `counterhal_system::Refused`), whoever names the tree.

mod alias;
mod event;
mod format;
mod pmu;
mod refused;
mod uncore;

use counterhal_system::PmuDevices;

pub use alias::Alias;
pub(crate) use event::find_pmus;
// The two parsers serve the Linux backend's opens (and this module's tests) alone.
#[cfg_attr(not(target_os = "linux"), allow(unused_imports))]
pub use event::{PmuEvent, apply_modifiers, parse_pmu_event, pmu_events};
pub use format::{ConfigWord, FormatField};
pub use pmu::{Pmu, list_pmus};
pub use uncore::uncore_pmu_events;

/// Every PMU's event aliases under `devices`, as `pmu/alias/` with the PMU, its terms and how
/// its count is shown (`msr/tsc/`, "msr PMU: event=0x00"; `power/energy-pkg/`, "power PMU:
/// event=0x02, in Joules, scale 2.3283064365386962890625e-10"), PMU by PMU, sorted.
pub fn aliases(devices: &PmuDevices) -> Vec<(String, String)> {
    let mut events = Vec::new();
    for name in list_pmus(devices) {
        let Ok(pmu) = Pmu::open(devices, &name) else {
            continue;
        };
        for name in pmu.alias_names() {
            // An alias whose files break the tree's rules is left out (`encode` names why).
            let Ok(Some(alias)) = pmu.alias(&name) else {
                continue;
            };
            let mut text = format!("{} PMU: {}", pmu.name, alias.terms);
            if let Some(unit) = &alias.unit {
                text.push_str(&format!(", in {unit}"));
            }
            // The kernel's text, not the number written again (Rust's float formatting, 17 KB
            // of code, would be built into every program that lists).
            if let Some(scale) = &alias.scale_text {
                text.push_str(&format!(", scale {scale}"));
            }
            if alias.snapshot {
                text.push_str(", a reading (snapshot)");
            }
            if alias.per_pkg {
                text.push_str(", one per package");
            }
            events.push((format!("{}/{name}/", pmu.name), text));
        }
    }
    events
}

/// The core (CPU) PMUs, found by what they are, as perf's `is_pmu_core` finds them: `cpu`, or
/// any PMU with a `cpus` file (the CPUs it counts on). That is `cpu` on most x86 machines,
/// `cpu_core` and `cpu_atom` on hybrid Intel chips, `armv8_pmuv3` or one PMU per core type
/// (`armv8_cortex_a53`, `armv8_cortex_a72`) on Arm; uncore PMUs have a `cpumask` instead.
pub fn core_pmus(devices: &PmuDevices) -> Vec<Pmu> {
    devices
        .names()
        .into_iter()
        .filter_map(|name| devices.device(&name).ok().flatten())
        .filter(|device| device.name() == "cpu" || device.lists_core_cpus())
        .map(Pmu::of)
        .collect()
}

/// The CPUs perf's `-a` opens an event of PMU type `type_` on ([`Pmu::cpus`]: an uncore or
/// energy PMU's `cpumask`, a hybrid core PMU's `cpus`), for a PMU under `devices` with that
/// type and such a list; `None` for the kernel's software, tracepoint and breakpoint types
/// (they count on every CPU) and a type no PMU with a list has.
pub fn system_wide_cpus(devices: &PmuDevices, type_: u32) -> Option<Vec<u32>> {
    // PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT, PERF_TYPE_BREAKPOINT.
    if [1, 2, 5].contains(&type_) {
        return None;
    }
    list_pmus(devices)
        .into_iter()
        .filter_map(|name| Pmu::named(devices, &name))
        .filter(|pmu| pmu.type_ == type_)
        .find_map(|pmu| pmu.cpus().ok().flatten())
        .map(|cpus| cpus.iter().collect())
}

/// The core PMUs of a hybrid CPU among `cores` (as [`core_pmus`] lists them): more than one,
/// Intel's `cpu_core` and `cpu_atom` or a big.LITTLE Arm system's one per core type; else
/// empty.
pub fn hybrid_of(cores: Vec<Pmu>) -> Vec<Pmu> {
    let pmus: Vec<Pmu> = cores.into_iter().filter(|p| p.name != "cpu").collect();
    if pmus.len() > 1 { pmus } else { Vec::new() }
}

/// Whether `cpu` is online, from `system`'s `devices/system/cpu/online`; `None` when
/// unreadable.
pub fn cpu_online(system: &counterhal_system::System, cpu: u32) -> Option<bool> {
    Some(system.online_cpus()?.contains(&cpu))
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_hal::{Domain, ErrorKind};
    use std::fs;
    use std::path::Path;

    /// The PMUs of the fixture tree `name` (`sysfs-hybrid`).
    fn fixture(name: &str) -> PmuDevices {
        PmuDevices::at(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data")
                .join(name),
        )
    }

    #[test]
    fn pmu_events_from_a_fixture_tree() {
        let devices = fixture("sysfs-hybrid");
        let e = parse_pmu_event(&devices, "cpu_core/event=0xc0,umask=0x1/")
            .unwrap()
            .attr;
        assert_eq!((e.type_, e.config), (4, 0x1c0));
        assert_eq!(e.pmu.as_deref(), Some("cpu_core"));
        let e = parse_pmu_event(&devices, "cpu_core/topdown-retiring/")
            .unwrap()
            .attr;
        assert_eq!(e.config, 0x8000);
        let e = parse_pmu_event(&devices, "cpu_core/inst-retired,cmask=2,edge/u")
            .unwrap()
            .attr;
        assert_eq!(e.config, 0xc0 | (2 << 24) | (1 << 18));
        assert_eq!(e.domain, Domain::DEFAULT.with_levels(Domain::USER));
        let e = parse_pmu_event(&devices, "cpu_atom/config=0x1234,config1=5/")
            .unwrap()
            .attr;
        assert_eq!((e.type_, e.config, e.config1), (10, 0x1234, 5));
        // A generic hardware event on a hybrid core PMU: the extended type, perf 6.1's way.
        let e = parse_pmu_event(&devices, "cpu_atom/branches/k")
            .unwrap()
            .attr;
        assert_eq!((e.type_, e.config), (0, (10 << 32) | 4));
        assert_eq!(e.domain, Domain::DEFAULT.with_levels(Domain::KERNEL));
        // And a cache event: perf 6.1 under the Alder Lake tree opens cpu_atom/LLC-load-misses/
        // as type 3, config 0xa00010002 (after a probe open of the same attr).
        let e = parse_pmu_event(&devices, "cpu_atom/LLC-load-misses/")
            .unwrap()
            .attr;
        assert_eq!((e.type_, e.config), (3, 0xa_0001_0002));

        let cases = [
            ("nosuch/event=1/", "no PMU `nosuch`"),
            (
                "cpu_core/bogus=1/",
                "unknown term `bogus` for PMU `cpu_core`",
            ),
            ("cpu_core/event=0x1ff/", "does not fit"),
            ("cpu_core/event=1,event=2/", "given twice"),
            ("cpu_core/event=zz/", "not a number"),
            ("cpu_core/event=1/q", "unknown modifier"),
            ("cpu_core/event=1", "malformed"),
            ("cpu_core/cycles,edge/", "unknown term `cycles`"),
            ("cpu/cycles/", "no PMU `cpu`"),
        ];
        for (event, expected) in cases {
            let error = parse_pmu_event(&devices, event).unwrap_err();
            assert!(error.to_string().contains(expected), "{event}: {error}");
        }
        let error = parse_pmu_event(&devices, "cpu/cycles/").unwrap_err();
        assert!(error.hint().unwrap().contains("no hardware counters"));
        // A core PMU this machine lacks is unsupported here, as a raw code is; a name no PMU
        // has is a bad event name.
        assert_eq!(error.kind(), ErrorKind::Unsupported);
        let error = parse_pmu_event(&devices, "nosuch/event=1/").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidEvent);
    }

    #[test]
    fn hybrid_detection() {
        let devices = fixture("sysfs-hybrid");
        let names: Vec<String> = hybrid_of(core_pmus(&devices))
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(names, ["cpu_atom", "cpu_core"]);
        // This machine: hybrid exactly when sysfs shows two or more PMUs with a `cpus` mask
        // (cpu_core + cpu_atom on Alder Lake and later, one per core type on big.LITTLE Arm),
        // and then those are the ones.
        let devices = &counterhal_system::System::host().pmus();
        let real: Vec<String> = hybrid_of(core_pmus(devices))
            .into_iter()
            .map(|p| p.name)
            .collect();
        let shown: Vec<String> = fs::read_dir(devices.path())
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .filter(|e| e.path().join("cpus").is_file())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name != "cpu")
                    .collect()
            })
            .unwrap_or_default();
        if shown.len() >= 2 {
            let mut shown = shown;
            shown.sort();
            assert_eq!(real, shown);
        } else {
            assert!(real.is_empty(), "sysfs shows {shown:?}, detected {real:?}");
        }
    }

    #[test]
    fn arm_core_pmus_are_found_by_their_cpus_file() {
        // One PMUv3 for every CPU (a Neoverse server, QEMU's virt machine): a core PMU, not
        // hybrid.
        let devices = fixture("sysfs-arm");
        let core: Vec<(String, u32)> = core_pmus(&devices)
            .into_iter()
            .map(|p| (p.name, p.type_))
            .collect();
        assert_eq!(core, [("armv8_pmuv3".to_string(), 8)]);
        assert!(hybrid_of(core_pmus(&devices)).is_empty());
        // big.LITTLE: one per core type, each its own type; the uncore CMN (a `cpumask`, no
        // `cpus`) is not a core PMU.
        let devices = fixture("sysfs-arm-biglittle");
        let hybrid: Vec<(String, u32)> = hybrid_of(core_pmus(&devices))
            .into_iter()
            .map(|p| (p.name, p.type_))
            .collect();
        assert_eq!(
            hybrid,
            [
                ("armv8_cortex_a53".to_string(), 8),
                ("armv8_cortex_a72".to_string(), 9)
            ]
        );
    }

    #[test]
    fn cpu_lists() {
        let host = counterhal_system::System::host();
        assert_eq!(cpu_online(&host, 0), Some(true));
        assert_eq!(cpu_online(&host, 100_000), Some(false));
    }

    /// A PMU is found by its directory or its `alias` file; its CPUs come from `cpumask`, else
    /// `cpus`; its `caps/` are read. Oracle: the kernel's files, as the machine trees have
    /// them (Sapphire Rapids' `uncore_imc_0` is also `uncore_type_6_0`).
    #[test]
    fn discovery() {
        let spr = fixture("machines/spr-2s/bus/event_source/devices");
        let imc = Pmu::named(&spr, "uncore_type_6_0").unwrap();
        assert_eq!((imc.name.as_str(), imc.type_), ("uncore_imc_0", 12));
        assert_eq!(imc.alias_name().as_deref(), Some("uncore_type_6_0"));
        assert_eq!(imc.cpus().unwrap().unwrap().to_string(), "0,56");
        assert!(Pmu::named(&spr, "uncore_type_6").is_none());
        // perf 7.2 ignores the `uncore_` prefix when it matches a PMU (tools/perf/util/pmu.c,
        // `perf_pmu__wildcard_match`): its metric tables' `cha_0@event=0x1@` is `uncore_cha_0`,
        // and `type_6_0` its alias.
        assert_eq!(Pmu::named(&spr, "cha_0").unwrap().name, "uncore_cha_0");
        assert_eq!(Pmu::named(&spr, "type_6_0").unwrap().name, "uncore_imc_0");
        assert!(Pmu::named(&spr, "cpu_cha_0").is_none());
        let missing = Pmu::open(&spr, "cbox_0").unwrap_err().to_string();
        assert!(
            missing.contains("no PMU `cbox_0` or `uncore_cbox_0`"),
            "{missing}"
        );
        let msr = Pmu::named(&spr, "msr").unwrap();
        assert_eq!(msr.cpus().unwrap(), None);
        assert_eq!(
            msr.alias_names(),
            ["aperf", "cpu_thermal_margin", "mperf", "smi", "tsc"]
        );
        let therm = msr.alias("CPU_Thermal_Margin").unwrap().unwrap();
        assert_eq!((therm.terms.as_str(), therm.snapshot), ("event=0x07", true));
        assert_eq!(therm.unit.as_deref(), Some("C"));
        let hybrid = fixture("sysfs-hybrid");
        let core = Pmu::named(&hybrid, "cpu_core").unwrap();
        assert_eq!(core.cpus().unwrap().unwrap().to_string(), "0-7");
        assert!(core.caps().is_empty());

        let dir = std::env::temp_dir().join(format!("counterhal-caps-{}", std::process::id()));
        fs::create_dir_all(dir.join("cpu/caps")).unwrap();
        fs::write(dir.join("cpu/type"), "4\n").unwrap();
        fs::write(dir.join("cpu/caps/max_precise"), "3\n").unwrap();
        fs::write(dir.join("cpu/caps/pmu_name"), "sapphire_rapids\n").unwrap();
        let cpu = Pmu::named(&PmuDevices::at(&dir), "cpu").unwrap();
        assert_eq!(
            cpu.caps(),
            [
                ("max_precise".to_string(), "3".to_string()),
                ("pmu_name".to_string(), "sapphire_rapids".to_string())
            ]
        );
        fs::remove_dir_all(&dir).unwrap();

        let listed = aliases(&spr);
        let pkg = listed
            .iter()
            .find(|(n, _)| n == "power/energy-pkg/")
            .unwrap();
        assert_eq!(
            pkg.1,
            "power PMU: event=0x02, in Joules, scale 2.3283064365386962890625e-10"
        );
    }
}
