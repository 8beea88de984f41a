//! Every uncore event of a CPU model by name (`UNC_M_CAS_COUNT.RD`), encoded by counterhal and
//! by perf 6.1 under the machines' sysfs trees (tests/machines.rs), as tests/perf_pmus.rs runs
//! perf: `PERF_CPUID` names the model whose JSON events perf takes, and `perf stat -vv -a -e
//! NAME true` prints what the name stands for on each PMU (`NAME -> uncore_imc_0/event=...`),
//! each attr and the CPU of each open. [`counterhal_linux::uncore_pmu_events`] (what `counterhal
//! encode --sysfs DIR --cpu-model M` prints and the Linux backend opens) must give the same
//! attrs on the same CPUs, wherever perf's table and ours give the event the same terms.

use std::collections::BTreeMap;

use counterhal_conformance::skip::Need;
use counterhal_events::Database;
use counterhal_hal::ErrorKind;
use counterhal_linux::uncore_pmu_events;
use counterhal_system::PmuDevices;

use counterhal_conformance::fixtures::perf_tree::{
    Asked, Open, build_shim, open_of, parse_perf, run_perf,
};

use crate::machines;

/// The machines' trees, the model of each and the `PERF_CPUID` perf is given for it.
const MACHINES: &[(&str, &str, &str)] = &[
    ("spr-2s", "spr", "GenuineIntel-6-8F-8"),
    ("skl-client", "skl", "GenuineIntel-6-5E-3"),
    ("adl", "adl_glc", "GenuineIntel-6-97-2"),
    ("zen4", "amd64_fam19h_zen4", "AuthenticAMD-25-11-1"),
    // perf 6.1 takes Zen 4 for Zen 3 (its mapfile predates Zen 4's JSON), so its names are
    // Zen 3's: the same PMUs (amd_l3, amd_df) compared by Zen 3's names on the Zen 4 tree.
    ("zen4", "amd64_fam19h_zen3", "AuthenticAMD-25-1-1"),
];

/// How ours and perf's compared, by kind, with an example of each.
#[derive(Default)]
struct Figures {
    compared: usize,
    /// The same attrs on the same CPUs.
    equal: usize,
    /// Both refuse (a term the tree's PMU lacks).
    refused_alike: usize,
    /// perf 6.1's table has no such event (its JSON is older than Linux 6.12's).
    not_in_perf: Vec<String>,
    /// Of those, the events whose terms perf 6.1 opens alike in its PMU syntax
    /// (`uncore_imc/event=4,umask=3/`).
    terms_equal: usize,
    /// perf 6.1's table gives the event other terms (encoded as each gives them).
    other_terms: Vec<String>,
    /// Anything else: a fault of ours.
    wrong: Vec<String>,
}

/// Terms as their values: each `name=value` (`event=0x1` and `event=1` alike), sorted.
pub(crate) type Terms = Vec<(String, Option<u64>)>;

pub(crate) fn normalized(terms: &str) -> Terms {
    let mut out: Terms = terms
        .split(',')
        .map(|term| {
            let (name, value) = term.split_once('=').unwrap_or((term, "1"));
            let value = match value.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => value.parse().ok(),
            };
            (name.to_ascii_lowercase(), value)
        })
        .collect();
    out.sort();
    out
}

/// The terms of each `NAME -> PMU/terms/` line perf printed, without the PMU, each once.
fn perf_terms(aliases: &[String]) -> Vec<Terms> {
    let mut terms: Vec<Terms> = aliases
        .iter()
        .filter_map(|a| a.split_once('/'))
        .map(|(_, t)| normalized(t.trim_end_matches('/')))
        .collect();
    terms.sort();
    terms.dedup();
    terms
}

/// Each open of `events`: type, config words, CPU and exclude bits, sorted.
pub(crate) fn opens(events: &[counterhal_linux::PmuEvent]) -> Vec<Open> {
    let mut out: Vec<Open> = events
        .iter()
        .flat_map(|e| {
            let attr = &e.attr;
            e.open_cpus().into_iter().map(move |cpu| open_of(attr, cpu))
        })
        .collect();
    out.sort_unstable();
    out
}

/// Oracle: perf 6.1 (Debian's linux-perf) with `PERF_CPUID` of Sapphire Rapids, Skylake client,
/// Alder Lake and Zen 4 under those machines' sysfs trees. Every uncore event of the model's table whose
/// PMU the tree has is opened by name by both: where perf's table gives it the terms ours
/// does, the attrs (type, config, config1, config2) and CPUs must be the same, and a refusal
/// must be perf's too; an event perf 6.1 does not know by name (its JSON is older) is opened
/// by perf in its PMU syntax with our terms (`uncore_imc/event=4,umask=3/`), and must open
/// alike there; events perf knows with other terms are counted and shown, not failed.
#[test]
fn uncore_events_by_name_encode_as_perf_6_1_opens_them() {
    if let Some((need, why)) = counterhal_conformance::fixtures::perf_tree::unready() {
        counterhal_conformance::skip!(need, "{why}");
    }
    let db = Database::shipped().unwrap();
    let shim = build_shim("uncore").unwrap();
    let mut all = Figures::default();
    for &(machine, model, cpuid) in MACHINES {
        let devices = machines::devices(machine);
        // Every event of the model whose PMU the tree has.
        let events: Vec<String> = db
            .uncore_table(model)
            .into_iter()
            .map(|e| e.name)
            .filter(|name| {
                !matches!(uncore_pmu_events(&PmuDevices::at(&devices), &db, Some(model), name),
                    Some(Err(e)) if e.kind() == ErrorKind::DeviceMissing)
            })
            .collect();
        let output = match run_perf(&devices, &shim, Asked::Events, &events, Some(cpuid)) {
            Ok(output) => output,
            Err(why) if all.compared == 0 => {
                counterhal_conformance::skip!(Need::Privilege, "{why}")
            }
            Err(why) => panic!("{machine}: {why}"),
        };
        let perf = parse_perf(&output);
        let mut figures = Figures::default();
        for name in &events {
            figures.compared += 1;
            let saw = perf
                .get(name)
                .unwrap_or_else(|| panic!("perf said nothing of {name}"));
            let ours = uncore_pmu_events(&PmuDevices::at(&devices), &db, Some(model), name)
                .expect("an event of the model's table");
            let our_terms: Vec<Terms> = db
                .uncore_events(model, name)
                .iter()
                .map(|e| normalized(&e.terms))
                .collect();
            let theirs = perf_terms(&saw.aliases);
            if theirs.is_empty() && saw.opens.is_empty() {
                figures.not_in_perf.push(format!("{model} {name}"));
                continue;
            }
            if !theirs.iter().all(|t| our_terms.contains(t)) {
                figures.other_terms.push(format!(
                    "{model} {name}: perf 6.1 {theirs:?}, ours {our_terms:?}"
                ));
                continue;
            }
            let ours = match (ours, &saw.refused) {
                (Err(_), Some(_)) => {
                    figures.refused_alike += 1;
                    continue;
                }
                (Ok(ours), None) if !saw.opens.is_empty() => ours,
                (ours, refused) => {
                    figures.wrong.push(format!(
                        "{model} {name}: ours {ours:?}, perf refused {refused:?}"
                    ));
                    continue;
                }
            };
            let expected = opens(&ours);
            let mut opened = saw.opens.clone();
            opened.sort_unstable();
            if expected == opened {
                figures.equal += 1;
            } else {
                figures.wrong.push(format!(
                    "{model} {name}: ours {expected:x?}, perf {opened:x?}"
                ));
            }
        }
        // The events perf 6.1 does not know by name: their terms in perf's PMU syntax.
        let by_terms: Vec<(String, String)> = figures
            .not_in_perf
            .iter()
            .filter_map(|e| e.split_once(' '))
            .flat_map(|(_, name)| {
                db.uncore_events(model, name)
                    .into_iter()
                    .map(|e| (e.name.clone(), e.on_pmu(e.pmu, "")))
            })
            .collect();
        let written: Vec<String> = by_terms.iter().map(|(_, w)| w.clone()).collect();
        let output = run_perf(&devices, &shim, Asked::Events, &written, None).unwrap();
        let perf = parse_perf(&output);
        for (name, written) in &by_terms {
            let saw = &perf[written];
            let ours: Vec<Open> =
                match uncore_pmu_events(&PmuDevices::at(&devices), &db, Some(model), name) {
                    Some(Ok(ours)) => opens(&ours),
                    _ => Vec::new(),
                };
            let mut opened = saw.opens.clone();
            opened.sort_unstable();
            if ours == opened && !ours.is_empty() || ours.is_empty() && saw.refused.is_some() {
                figures.terms_equal += 1;
            } else {
                figures.wrong.push(format!(
                    "{model} {name} as {written}: ours {ours:x?}, perf {opened:x?} {:?}",
                    saw.refused
                ));
            }
        }
        println!(
            "{machine} ({model}, PERF_CPUID={cpuid}): {} uncore events compared, {} equal \
             ({} refused alike), {} not in perf 6.1's table ({} opened alike by their terms), \
             {} with other terms in perf 6.1's table, {} differing",
            figures.compared,
            figures.equal,
            figures.refused_alike,
            figures.not_in_perf.len(),
            figures.terms_equal,
            figures.other_terms.len(),
            figures.wrong.len()
        );
        for example in figures.other_terms.iter().take(3) {
            println!("  other terms: {example}");
        }
        all.compared += figures.compared;
        all.equal += figures.equal;
        all.refused_alike += figures.refused_alike;
        all.not_in_perf.extend(figures.not_in_perf);
        all.terms_equal += figures.terms_equal;
        all.other_terms.extend(figures.other_terms);
        all.wrong.extend(figures.wrong);
    }
    std::fs::remove_dir_all(shim.parent().unwrap()).unwrap();
    println!(
        "all: {} compared, {} equal ({} refused alike), {} not in perf 6.1 ({} opened alike by \
         their terms), {} other terms, {} differing",
        all.compared,
        all.equal,
        all.refused_alike,
        all.not_in_perf.len(),
        all.terms_equal,
        all.other_terms.len(),
        all.wrong.len()
    );
    let by_model: BTreeMap<&str, usize> =
        all.not_in_perf.iter().fold(BTreeMap::new(), |mut m, e| {
            *m.entry(e.split(' ').next().unwrap_or_default())
                .or_default() += 1;
            m
        });
    println!("not in perf 6.1's tables, by model: {by_model:?}");
    assert!(
        all.wrong.is_empty(),
        "{} differ:\n{}",
        all.wrong.len(),
        all.wrong.join("\n")
    );
    assert!(all.equal > 0, "no event compared equal");
}
