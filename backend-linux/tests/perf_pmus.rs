//! Every PMU event of other machines, encoded by counterhal and by perf 6.1 under their sysfs
//! trees (tests/machines.rs), as counterhal-conformance's `fixtures::perf_tree` runs perf: in
//! a private mount namespace, each tree's `bus/event_source/devices` is bind-mounted over the
//! real one and `perf stat -vv -a -e EVENT true` prints each `perf_event_attr` it opens and
//! the CPU of each open; a preloaded `syscall` lets each open succeed as a software event, so
//! perf goes on to every CPU of the PMU's cpumask and every box of a wildcard, and counts, so
//! its table shows each event's unit and scaled count. [`counterhal_linux::pmu_events`] (what
//! `counterhal encode --sysfs DIR --json` prints) must give the same attrs on the same CPUs,
//! refuse what perf refuses, and carry the unit and scale perf shows.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use counterhal_conformance::fixtures::perf_tree::{
    Asked, Open, build_shim, open_of, parse_perf, run_perf,
};
use counterhal_conformance::skip::Need;
use counterhal_hal::CpuList;
use counterhal_linux::pmu_events;
use counterhal_system::PmuDevices;

use crate::machines;

/// Where ours and perf 6.1 part, on purpose: (event's terms and modifiers, why).
const KNOWN: &[(&str, &str)] = &[
    (
        "config3=1",
        "perf 6.1 has no config3 term (perf 6.3 added it with the attr field); counterhal takes it",
    ),
    (
        "event=1,event=2",
        "perf ORs a term given twice (event 3); counterhal refuses it",
    ),
];

/// The events tried on a tree: every alias of every PMU; each kind of box by its wildcard
/// (`uncore_imc/cas_count_read/`, `imc/clockticks/`); each PMU's every format field at its
/// largest value, one bare (1), its words set directly, a modifier; and perf's refusals.
fn events(devices: &Path) -> Vec<String> {
    let mut events = Vec::new();
    let mut kinds: BTreeMap<String, String> = BTreeMap::new();
    for entry in read_dir(devices) {
        let pmu = entry.file_name().unwrap().to_string_lossy().into_owned();
        let aliases: Vec<String> = read_dir(&entry.join("events"))
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .filter(|n| !n.contains('.'))
            .collect();
        let formats: Vec<(String, u32)> = read_dir(&entry.join("format"))
            .iter()
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                let text = std::fs::read_to_string(p).unwrap();
                (name, width(&text))
            })
            .collect();
        for alias in &aliases {
            events.push(format!("{pmu}/{alias}/"));
        }
        // A hybrid core PMU's generic hardware events, which are no alias of it.
        if entry.join("cpus").exists() {
            events.extend(["cycles/", "branches/"].map(|e| format!("{pmu}/{e}")));
        }
        // The first box of a kind stands for the kind.
        let kind = pmu
            .rsplit_once('_')
            .filter(|(_, n)| n.parse::<u32>().is_ok())
            .map(|(kind, _)| kind);
        if let Some(kind) = kind
            && !kinds.contains_key(kind)
        {
            let term = aliases.first().cloned().unwrap_or("event=1".into());
            kinds.insert(kind.to_string(), term.clone());
            events.push(format!("{kind}/{term}/"));
            if let Some(short) = kind.strip_prefix("uncore_") {
                events.push(format!("{short}/{term}/"));
            }
        }
        let largest: Vec<String> = formats
            .iter()
            .map(|(name, width)| format!("{name}={:#x}", max(*width)))
            .collect();
        if !largest.is_empty() {
            events.push(format!("{pmu}/{}/", largest.join(",")));
        }
        if let Some((name, _)) = formats.iter().find(|(_, w)| *w == 1) {
            events.push(format!("{pmu}/event=0x1,{name}/"));
        }
        events.push(format!(
            "{pmu}/config=0x1200,config1=0x5,config2=0x7,event=0x3/"
        ));
        events.push(format!("{pmu}/event=0x2/u"));
        events.push(format!("{pmu}/event=0x2/k"));
        if let Some(alias) = aliases.first() {
            events.push(format!("{pmu}/{},event=0x1/", alias.to_uppercase()));
        }
        events.push(format!("{pmu}/bogus=1/"));
        events.push(format!("{pmu}/nosuch-alias/"));
        if let Some((name, width)) = formats.iter().find(|(_, w)| *w < 64) {
            events.push(format!("{pmu}/{name}={:#x}/", max(*width) + 1));
        }
        events.push(format!("{pmu}/config3=1/"));
        events.push(format!("{pmu}/event=1,event=2/"));
    }
    events
}

fn read_dir(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|e| e.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    paths.sort();
    paths
}

/// The width of a `format/` file's field.
fn width(text: &str) -> u32 {
    let (_, bits) = text.trim().split_once(':').unwrap();
    bits.split(',')
        .map(|range| {
            let (low, high) = range.split_once('-').unwrap_or((range, range));
            high.parse::<u32>().unwrap() - low.parse::<u32>().unwrap() + 1
        })
        .sum()
}

fn max(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1 << width) - 1
    }
}

/// The figures of one tree.
#[derive(Default)]
struct Figures {
    events: usize,
    equal: usize,
    opens: usize,
    refused_alike: usize,
    known: usize,
    units: usize,
    scales: usize,
}

/// Oracle: perf 6.1 (Debian's linux-perf) under each machine's sysfs tree, the trees written
/// from the kernel's own PMU definitions (tests/machines.rs). Every alias of every PMU of the
/// Sapphire Rapids (two sockets), Skylake client, Zen 4 and Alder Lake trees (and of the hand-written
/// hybrid tree, whose core PMUs have `cpus`), every kind of box by its wildcard, every format field at its widest, raw words, modifiers and perf's refusals
/// encode alike in counterhal (`pmu_events`, what `counterhal encode --sysfs --json` prints):
/// the same attrs (type, config, config1, config2, exclude_user/kernel/hv) opened on the same
/// CPUs, the same refusals, the unit perf prints and, where perf scales a count, the same
/// scale; the two differences on purpose are [`KNOWN`].
#[test]
fn pmu_events_encode_as_perf_6_1_opens_them() {
    if let Some((need, why)) = counterhal_conformance::fixtures::perf_tree::unready() {
        counterhal_conformance::skip!(need, "{why}");
    }
    let shim = build_shim("pmus").unwrap();
    let online: CpuList = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut total = Figures::default();
    let mut refusals: BTreeMap<String, String> = BTreeMap::new();
    // The machines' trees, and the hand-written hybrid one (cpu_core and cpu_atom, with
    // `cpus` instead of a cpumask).
    let hybrid = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sysfs-hybrid");
    let trees = machines::names()
        .into_iter()
        .map(|name| (name, machines::devices(name)))
        .chain([("sysfs-hybrid", hybrid)]);
    for (name, devices) in trees {
        let events = events(&devices);
        let output = match run_perf(&devices, &shim, Asked::Events, &events, None) {
            Ok(output) => output,
            // Where the first tree cannot be mounted, none can (a container without
            // CAP_SYS_ADMIN); after it, a failure is the test's.
            Err(why) if total.events == 0 => {
                counterhal_conformance::skip!(Need::Privilege, "{why}")
            }
            Err(why) => panic!("{name}: {why}"),
        };
        let perf = parse_perf(&output);
        let mut figures = Figures::default();
        let mut wrong = Vec::new();
        for event in &events {
            let saw = perf
                .get(event)
                .unwrap_or_else(|| panic!("perf said nothing of {event}"));
            figures.events += 1;
            let known = KNOWN.iter().find(|(terms, _)| event.contains(terms));
            let ours = pmu_events(&PmuDevices::at(&devices), event)
                .expect("every event names a PMU of the tree");
            let ours = match (ours, &saw.refused, known) {
                (Err(error), Some(perf_says), _) => {
                    // perf's words, once each (the PMU's name and the value made general).
                    let general = perf_says
                        .replace(&format!("'{}'", event.split('/').next().unwrap()), "'PMU'")
                        .split(" maximum is ")
                        .next()
                        .unwrap()
                        .to_string();
                    refusals.entry(general).or_insert_with(|| {
                        format!("{event}: perf \"{perf_says}\"; counterhal \"{error}\"")
                    });
                    figures.refused_alike += 1;
                    figures.equal += 1;
                    continue;
                }
                // perf 6.1 knows no config3; counterhal sets it.
                (Ok(ours), Some(perf_says), Some(_))
                    if perf_says.contains("unknown term 'config3'")
                        && ours.iter().all(|e| e.attr.config3 == 1) =>
                {
                    figures.known += 1;
                    continue;
                }
                // perf ORs the twice-given term's values (1 | 2); counterhal refuses.
                (Err(error), None, Some(_))
                    if error.to_string().contains("given twice")
                        && !saw.opens.is_empty()
                        && saw.opens.iter().all(|o| o.1 & 0x3 == 0x3) =>
                {
                    figures.known += 1;
                    continue;
                }
                (Ok(ours), None, None) => ours,
                (ours, refused, _) => {
                    wrong.push(format!("{event}: ours {ours:?}, perf refused {refused:?}"));
                    continue;
                }
            };
            let mut expected: Vec<Open> = ours
                .iter()
                .flat_map(|e| {
                    let attr = &e.attr;
                    let cpus: Vec<i32> = match e.open_cpus().as_slice() {
                        // Any CPU: perf -a opens it on every online CPU of this machine.
                        [-1] => online.iter().map(|c| c as i32).collect(),
                        cpus => cpus.to_vec(),
                    };
                    cpus.into_iter().map(move |cpu| open_of(attr, cpu))
                })
                .collect();
            let mut opened = saw.opens.clone();
            expected.sort_unstable();
            opened.sort_unstable();
            if expected != opened {
                wrong.push(format!("{event}: ours {expected:x?}, perf {opened:x?}"));
                continue;
            }
            figures.opens += opened.len();
            let unit = ours.iter().find_map(|e| e.unit.clone());
            let scale = ours.iter().find_map(|e| e.scale);
            match &saw.printed {
                Some((count, printed_unit)) => {
                    if *printed_unit != unit {
                        wrong.push(format!("{event}: unit {unit:?}, perf {printed_unit:?}"));
                        continue;
                    }
                    figures.units += usize::from(unit.is_some());
                    if let Some(scale) = scale {
                        let scaled = saw.total as f64 * scale;
                        if (count - scaled).abs() > 0.005 + scaled * 1e-9 {
                            wrong.push(format!(
                                "{event}: {} x {scale} = {scaled}, perf printed {count}",
                                saw.total
                            ));
                            continue;
                        }
                        figures.scales += 1;
                    }
                }
                None => {
                    wrong.push(format!("{event}: perf printed no count"));
                    continue;
                }
            }
            figures.equal += 1;
        }
        println!(
            "{name}: {} events compared, {} equal ({} opens alike, {} refused alike, {} units \
             and {} scales as perf shows them), {} differing on purpose",
            figures.events,
            figures.equal,
            figures.opens,
            figures.refused_alike,
            figures.units,
            figures.scales,
            figures.known
        );
        assert!(
            wrong.is_empty(),
            "{name}: {} differ:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
        total.events += figures.events;
        total.equal += figures.equal;
        total.opens += figures.opens;
        total.refused_alike += figures.refused_alike;
        total.known += figures.known;
        total.units += figures.units;
        total.scales += figures.scales;
    }
    std::fs::remove_dir_all(shim.parent().unwrap()).unwrap();
    for example in refusals.values() {
        println!("refused alike: {example}");
    }
    println!(
        "all trees: {} events compared, {} equal ({} opens alike, {} refused alike, {} units, \
         {} scales), {} differing on purpose ({})",
        total.events,
        total.equal,
        total.opens,
        total.refused_alike,
        total.units,
        total.scales,
        total.known,
        KNOWN
            .iter()
            .map(|(t, why)| format!("{t}: {why}"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    assert_eq!(total.equal + total.known, total.events);
}
