//! Every metric of the machines' CPU models, encoded by counterhal and by perf 6.1 under the
//! machines' sysfs trees (backend-linux's tests/data/machines), as counterhal-conformance's
//! `fixtures::perf_tree` runs perf: `PERF_CPUID` names the model whose metric table perf takes,
//! and `perf stat -vv -a -M METRIC true` prints the formulas it reads (`metric expr ... for
//! NAME`), the events it found in them, each attr it opens and the CPU of each open, or its
//! refusal. `counterhal encode --sysfs ROOT --cpu-model M -M METRIC,... --json` prints every
//! attr the metrics' events open, each object naming its metric, and `counterhal list
//! --metrics --json` which metrics cannot run on the tree. For each metric, the attrs (type,
//! config, config1, config2, exclude_user, exclude_kernel, exclude_hv) and CPUs must be the
//! same set in both, and a metric counterhal cannot run must be one perf cannot open either.
//!
//! perf 6.1's tables are older versions of the same metrics, some renamed: a metric of ours is
//! perf's of the same name (any case), `tma_` and its name (the top-down nodes), or its name
//! without perfmon's `Info_<Area>_` prefix (`Info_System_DRAM_BW_Use` is perf 6.1's
//! `DRAM_BW_Use`); one perf 6.1 does not have is counted, not compared. Where the two tables
//! give a metric other formulas (other events by name, an event's terms counted as part of
//! its name: `OFFCORE_REQUESTS_OUTSTANDING.ALL_DATA_RD:c=12` is not perf 6.1's
//! `cpu@OFFCORE_REQUESTS_OUTSTANDING.ALL_DATA_RD\,cmask\=4@`), the metric is counted and
//! shown, not failed.
//!
//! The trees have the core PMU `cpu` the kernel registers (type 4, no cpumask), so perf opens
//! the metrics' core events, as raw events of type 4 (the tables name no generic event), on
//! every online CPU of this machine: perf reads `/sys/devices/system/cpu/online`, which the
//! tree does not replace, and counterhal's core events name no CPU. What perf adds and this
//! comparison leaves aside: it opens a metric's events in weak groups (`read_format` with
//! `GROUP` and `ID`, a leader's `group_fd`), sets `exclude_guest`, and opens `duration_time`
//! as the software event `dummy` (type 1, config 9) once.
//!
//! The adl tree is a hybrid Alder Lake: `cpu_core` (type 4, `cpus` 0-15) and `cpu_atom`
//! (type 10, `cpus` 16-23). perf 6.1 opens an event of a formula on each of them whose table
//! (the Core cores' JSON, the Atom cores') has it, on that PMU's `cpus` (`-M IPC`:
//! `INST_RETIRED.ANY` as event 0xc0 on both, `CPU_CLK_UNHALTED.CORE`, an Atom name, as 0x3c on
//! cpu_atom alone), and counterhal (backend-linux's `intel_hybrid`) the same from `adl_glc`
//! and `adl_grt`. perf 6.1 also takes every table's metric of a name: where the two give it
//! other formulas (`IpFarBranch`: the Core cores' `BR_INST_RETIRED.FAR_BRANCH:u`, the Atom
//! cores' `BR_INST_RETIRED.FAR_BRANCH / 2`) perf opens both, and where its older Atom table
//! lacks an event ours has (`BR_INST_RETIRED.NEAR_TAKEN`, `UOPS_ISSUED.ANY`) it opens it on
//! cpu_core alone (its `-vv` `NAME -> PMU/terms/` lines say where): both are counted as
//! another definition. `adl_grt`, the Atom cores' table, has no metrics of its own.
//!
//! Figures (perf 6.1, Debian's linux-perf): spr 308 compared, 157 equal, 47 another
//! definition, 2 cannot run alike, 102 not in perf 6.1; skl 207, 127, 20, 0, 60; zen4 73, 8,
//! 3, 0, 62; zen3 13, 13, 0, 0, 0; adl (adl_glc) 231, 42, 113, 0, 76; 0 wrong on every
//! tree.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use counterhal_conformance::fixtures::perf_tree::{
    Asked, PerfSaw, build_shim, parse_perf, perf_metric_names, run_perf,
};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use counterhal_events::expression;
use serde_json::Value;

use crate::common::{counterhal, stderr};
use crate::sysfs_root::machines;

/// The machines' trees, the model of each and the `PERF_CPUID` perf is given for it.
const MACHINES: &[(&str, &str, &str)] = &[
    ("spr-2s", "spr", "GenuineIntel-6-8F-8"),
    ("skl-client", "skl", "GenuineIntel-6-5E-3"),
    // perf 6.1 takes Zen 4 for Zen 3 (its mapfile predates Zen 4's JSON): its metrics are
    // Zen 3's for both, compared with ours of each on the Zen 4 tree.
    ("zen4", "amd64_fam19h_zen4", "AuthenticAMD-25-11-1"),
    ("zen4", "amd64_fam19h_zen3", "AuthenticAMD-25-1-1"),
    // Alder Lake, hybrid: the Core cores' table (the Atom cores' has no metrics).
    ("adl", "adl_glc", "GenuineIntel-6-97-2"),
];

/// One open: type, config, config1, config2, CPU, and exclude_user, exclude_kernel and
/// exclude_hv.
type Open = (u64, u64, u64, u64, i64, [bool; 3]);

/// How ours and perf's compared, by kind, with the metrics of each.
#[derive(Default)]
struct Figures {
    compared: usize,
    /// The same attrs on the same CPUs.
    equal: Vec<String>,
    /// How many of those read a core event.
    equal_reading_core: usize,
    /// How many of those open events on both core PMUs of a hybrid chip.
    equal_on_both_core_pmus: usize,
    /// perf refuses it; counterhal cannot run it.
    cannot_run_alike: Vec<String>,
    /// perf 6.1's table has no such metric.
    not_in_perf: Vec<String>,
    /// perf 6.1's table reads other events for it.
    other_definition: Vec<String>,
    /// counterhal cannot run it; perf opens it.
    ours_cannot_perf_opens: Vec<String>,
    /// Anything else: a fault of ours.
    wrong: Vec<String>,
    /// Every metric counterhal cannot run on the tree, with why.
    cannot_run: Vec<String>,
}

impl Figures {
    fn add(&mut self, other: Figures) {
        self.compared += other.compared;
        self.equal.extend(other.equal);
        self.equal_reading_core += other.equal_reading_core;
        self.equal_on_both_core_pmus += other.equal_on_both_core_pmus;
        self.cannot_run_alike.extend(other.cannot_run_alike);
        self.not_in_perf.extend(other.not_in_perf);
        self.other_definition.extend(other.other_definition);
        self.ours_cannot_perf_opens
            .extend(other.ours_cannot_perf_opens);
        self.wrong.extend(other.wrong);
        self.cannot_run.extend(other.cannot_run);
    }

    fn line(&self) -> String {
        format!(
            "{} metrics compared: {} equal ({} reading core events, {} on both hybrid core PMUs), \
             {} cannot run alike, {} not in perf 6.1, {} with \
             another definition in perf 6.1, {} ours cannot run but perf opens, {} wrong; {} \
             ours cannot run",
            self.compared,
            self.equal.len(),
            self.equal_reading_core,
            self.equal_on_both_core_pmus,
            self.cannot_run_alike.len(),
            self.not_in_perf.len(),
            self.other_definition.len(),
            self.ours_cannot_perf_opens.len(),
            self.wrong.len(),
            self.cannot_run.len()
        )
    }
}

/// The areas of perfmon's `Info_` metrics (`Info_System_DRAM_BW_Use`), which perf 6.1's tables
/// left out of the names, the longer first.
const INFO_AREAS: &[&str] = &[
    "Memory_Core",
    "Memory_Latency",
    "Memory_Mix",
    "Memory_Prefetches",
    "Memory_SoC",
    "Memory_TLB",
    "Inst_Mix",
    "Bad_Spec",
    "Botlnk_L0",
    "Botlnk_L2",
    "Branches",
    "Core",
    "Frontend",
    "Memory",
    "Pipeline",
    "System",
    "Thread",
];

/// perf 6.1's name for our metric `name`, among `perf_names`: the same (any case), `tma_` and
/// it, or it without `Info_` and its area.
fn perf_name(name: &str, perf_names: &[String]) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    let mut candidates = vec![lower.clone(), format!("tma_{lower}")];
    if let Some(area) = INFO_AREAS
        .iter()
        .find(|area| name.starts_with(&format!("Info_{area}_")))
    {
        candidates.push(lower["info_".len() + area.len() + 1..].to_string());
    }
    candidates.into_iter().find_map(|candidate| {
        perf_names
            .iter()
            .find(|p| p.to_ascii_lowercase() == candidate)
            .cloned()
    })
}

/// The online CPUs of this machine: where perf -a opens an event of a PMU without a cpumask.
fn online() -> Vec<i64> {
    let list = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    list.trim()
        .split(',')
        .flat_map(|range| {
            let (low, high) = range.split_once('-').unwrap_or((range, range));
            low.parse::<i64>().unwrap()..=high.parse::<i64>().unwrap()
        })
        .collect()
}

/// What encode printed for one metric: its opens, its events by name, and the events that
/// did not encode (with why).
#[derive(Default)]
struct Ours {
    opens: BTreeSet<Open>,
    events: BTreeSet<String>,
    refused: Vec<String>,
    /// Whether an event is a core event: a raw one of the core PMU (type 4), or a generic
    /// hardware or cache event (types 0 and 3).
    reads_core: bool,
    /// Each event (as [`spelled`]) and the hybrid core PMU it opens on.
    placed: BTreeSet<(String, String)>,
}

/// `encode --json -M` of every metric of `model` on `root`, by metric.
fn ours(root: &Path, model: &str, metrics: &[String]) -> BTreeMap<String, Ours> {
    let list = metrics.join(",");
    let root = root.to_str().unwrap();
    let out = counterhal(&[
        "encode",
        "--json",
        "--sysfs",
        root,
        "--cpu-model",
        model,
        "-M",
        &list,
    ]);
    let array: Vec<Value> = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{model}: {e}: {}", stderr(&out)));
    let online = online();
    let mut by_metric: BTreeMap<String, Ours> = BTreeMap::new();
    for object in &array {
        let metric = object["metric"].as_str().unwrap().to_string();
        let ours = by_metric.entry(metric).or_default();
        let event = object["event"].as_str().unwrap().to_string();
        if let Some(error) = object.get("error") {
            ours.refused
                .push(format!("{event}: {}", error.as_str().unwrap()));
            ours.events.insert(event);
            continue;
        }
        let number = |key: &str| object[key].as_u64().unwrap_or_else(|| panic!("{object}"));
        let attr = (
            number("type"),
            number("config"),
            number("config1"),
            number("config2"),
        );
        let excluded = ["exclude_user", "exclude_kernel", "exclude_hv"]
            .map(|key| object[key].as_bool().unwrap_or_else(|| panic!("{object}")));
        ours.reads_core |= matches!(attr.0, 0 | 3 | 4);
        if let Some(pmu) = object["pmu"].as_str().filter(|pmu| is_hybrid_core(pmu)) {
            ours.placed.insert((spelled(&event), pmu.to_string()));
        }
        // Each object names its CPU, -1 for any (a core event by name, a PMU without a
        // cpumask such as the core PMU `cpu`): perf -a opens those on every online CPU.
        let cpus = match object["cpu"].as_i64() {
            Some(cpu) if cpu >= 0 => vec![cpu],
            _ => online.clone(),
        };
        for cpu in cpus {
            ours.opens
                .insert((attr.0, attr.1, attr.2, attr.3, cpu, excluded));
        }
        ours.events.insert(event);
    }
    by_metric
}

/// `list --metrics --json` on `root` for `model`: each metric of the model that cannot run,
/// with why.
fn cannot_run(root: &Path, model: &str) -> BTreeMap<String, Option<String>> {
    let out = counterhal(&[
        "list",
        "--metrics",
        "--json",
        "--sysfs",
        root.to_str().unwrap(),
        "--cpu-model",
        model,
    ]);
    let document: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{model}: {e}: {}", stderr(&out)));
    document["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["model"].as_str() == Some(model))
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["cannot_run"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// An event name as both tables may spell it, so that two spellings of one event are one
/// name: ASCII upper case, perf's `@` as `/` and its escapes dropped; a core event in the
/// core PMU's terms (`cpu@OFFCORE_REQUESTS_OUTSTANDING.ALL_DATA_RD\,cmask\=4@`) and one
/// with perfmon's modifiers (`OFFCORE_REQUESTS_OUTSTANDING.ALL_DATA_RD:c=12`) as the name and
/// its terms (`...ALL_DATA_RD,CMASK=4`: `c` is `cmask`, `e` `edge`, `i` `inv`, numbers
/// in decimal), without the privilege modifiers (`:u`, `:k`) and perfmon's others.
fn spelled(name: &str) -> String {
    let name = name
        .replace('@', "/")
        .replace('\\', "")
        .to_ascii_uppercase();
    // A term as `FIELD=N` in decimal, a flag set to 1 as `FIELD`.
    let term = |field: &str, value: &str| {
        let field = match field {
            "C" => "CMASK",
            "E" => "EDGE",
            "I" => "INV",
            other => other,
        };
        let number = match value.strip_prefix("0X") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => value.parse().ok(),
        };
        match number {
            Some(1) if matches!(field, "EDGE" | "INV" | "ANY") => field.to_string(),
            Some(n) => format!("{field}={n}"),
            None => format!("{field}={value}"),
        }
    };
    let (event, mut terms): (&str, Vec<String>) =
        match name.strip_prefix("CPU/").and_then(|r| r.strip_suffix('/')) {
            Some(inner) => {
                let mut parts = inner.split(',');
                let event = parts.next().unwrap_or_default();
                let terms = parts
                    .map(|t| {
                        let (field, value) = t.split_once('=').unwrap_or((t, "1"));
                        term(field, value)
                    })
                    .collect();
                (event, terms)
            }
            None if !name.contains('/') => {
                let mut parts = name.split(':');
                let event = parts.next().unwrap_or_default();
                let terms = parts
                    .filter_map(|m| m.split_once('='))
                    .filter(|(field, _)| matches!(*field, "C" | "E" | "I"))
                    .map(|(field, value)| term(field, value))
                    .collect();
                (event, terms)
            }
            None => return name,
        };
    terms.sort();
    std::iter::once(event.to_string())
        .chain(terms)
        .collect::<Vec<_>>()
        .join(",")
}

/// The events perf's formulas for a metric read (every `metric expr FORMULA for NAME` line:
/// the metric's and those it reads), by name: the names of the formulas that are not metrics,
/// `#` facts or perf's tool events.
fn perf_events(output: &str) -> BTreeSet<String> {
    let formulas: Vec<(&str, &str)> = output
        .lines()
        .filter_map(|l| l.strip_prefix("metric expr "))
        .filter_map(|l| l.rsplit_once(" for "))
        .collect();
    let metrics: BTreeSet<&str> = formulas.iter().map(|(_, name)| *name).collect();
    formulas
        .iter()
        .filter_map(|(formula, _)| expression::parse(formula).ok())
        .flat_map(|parsed| parsed.names())
        .filter(|n| !n.starts_with('#') && !metrics.contains(n.as_str()) && !is_tool(n))
        .map(|n| spelled(&n))
        .collect()
}

/// Whether `pmu` is a core PMU of an Intel hybrid chip (the adl tree's).
fn is_hybrid_core(pmu: &str) -> bool {
    matches!(pmu, "cpu_core" | "cpu_atom")
}

/// Each event of perf's formulas (as [`spelled`]) and the hybrid core PMU its table's alias
/// puts it on: perf 6.1's `-vv` prints `NAME -> PMU/terms/` for each PMU whose table has
/// NAME.
fn perf_placed(output: &str) -> BTreeSet<(String, String)> {
    output
        .lines()
        .filter_map(|l| l.split_once(" -> "))
        .filter_map(|(name, alias)| Some((name, alias.split_once('/')?.0)))
        .filter(|(name, pmu)| !name.contains(' ') && is_hybrid_core(pmu))
        .map(|(name, pmu)| (spelled(name), pmu.to_string()))
        .collect()
}

/// The metrics perf 6.1 read two formulas for: on a hybrid chip it takes every table's
/// metric of the name (the Core cores' and the Atom cores'), and opens the events of both.
fn perf_formulas_differ(output: &str) -> Vec<String> {
    let mut formulas: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (formula, name) in output
        .lines()
        .filter_map(|l| l.strip_prefix("metric expr "))
        .filter_map(|l| l.rsplit_once(" for "))
    {
        formulas.entry(name).or_default().insert(formula);
    }
    formulas
        .into_iter()
        .filter(|(_, formulas)| formulas.len() > 1)
        .map(|(name, formulas)| format!("{name} = {formulas:?}"))
        .collect()
}

/// perf's tool events, which open no counter of a PMU.
fn is_tool(name: &str) -> bool {
    matches!(name, "duration_time" | "user_time" | "system_time")
}

/// perf's opens, without those of its tool events (duration_time opens the software event
/// `dummy`, 9, once).
fn perf_opens(saw: &PerfSaw) -> BTreeSet<Open> {
    saw.opens
        .iter()
        .filter(|o| (o.0, o.1) != (1, 9))
        .map(|o| (u64::from(o.0), o.1, o.2, o.3, i64::from(o.4), o.5))
        .collect()
}

/// Oracle: perf 6.1 (Debian's linux-perf) with `PERF_CPUID` of Sapphire Rapids, Skylake client,
/// Zen 4, Zen 3 and Alder Lake under those machines' sysfs trees. Every metric of the model's table is
/// encoded by counterhal (`encode -M --json`) and, where perf 6.1's table has it, opened by
/// perf (`stat -vv -a -M`): the attrs (type, config, config1, config2, exclude_user,
/// exclude_kernel, exclude_hv) and CPUs must be the same set (perf's tool events aside), a
/// metric counterhal cannot run (`list --metrics`) must be one perf refuses, and one perf
/// refuses must be one counterhal cannot run; metrics perf 6.1 lacks or defines with other
/// events are counted and shown. The trees' core PMU lets perf open the core events: metrics
/// that read them must compare equal too.
#[test]
fn every_metric_encodes_as_perf_6_1_opens_it() {
    if let Some((need, why)) = counterhal_conformance::fixtures::perf_tree::unready() {
        counterhal_conformance::skip!(need, "{why}");
    }
    let started = Instant::now();
    let shim = build_shim("metrics").unwrap();
    let mut all = Figures::default();
    for &(machine, model, cpuid) in MACHINES {
        let root = machines().join(machine);
        let devices = root.join("bus/event_source/devices");
        let cannot = cannot_run(&root, model);
        let metrics: Vec<String> = cannot.keys().cloned().collect();
        let encoded = ours(&root, model, &metrics);
        let perf_names = perf_metric_names(cpuid).unwrap();
        let mapped: BTreeMap<&String, String> = metrics
            .iter()
            .filter_map(|m| perf_name(m, &perf_names).map(|p| (m, p)))
            .collect();
        let mut asked: Vec<String> = mapped.values().cloned().collect();
        asked.sort();
        asked.dedup();
        let output = match run_perf(&devices, &shim, Asked::Metrics, &asked, Some(cpuid)) {
            Ok(output) => output,
            Err(why) if all.compared == 0 => skip!(Need::Privilege, "{why}"),
            Err(why) => panic!("{machine}: {why}"),
        };
        let saw = parse_perf(&output);
        let texts: BTreeMap<&str, &str> = output
            .split("=== ")
            .skip(1)
            .filter_map(|chunk| chunk.split_once('\n'))
            .collect();
        let mut figures = Figures::default();
        for metric in &metrics {
            figures.compared += 1;
            let label = format!("{model} {metric}");
            if let Some(why) = &cannot[metric] {
                figures.cannot_run.push(format!("{label}: {why}"));
            }
            let Some(perf) = mapped.get(metric) else {
                figures.not_in_perf.push(label);
                continue;
            };
            let label = format!("{label} (perf 6.1's {perf})");
            let seen = &saw[perf];
            let empty = Ours::default();
            let ours = encoded.get(metric).unwrap_or(&empty);
            let why_not = &cannot[metric];
            let perf_refused = seen.refused.is_some() || seen.fell_back_to_defaults();
            let their_events = perf_events(texts[perf.as_str()]);
            let our_events: BTreeSet<String> = ours.events.iter().map(|e| spelled(e)).collect();
            let theirs = perf_opens(seen);
            match (why_not, perf_refused) {
                (Some(_), true) => figures.cannot_run_alike.push(label),
                (Some(why), false) => figures
                    .ours_cannot_perf_opens
                    .push(format!("{label}: {why}; perf opens {theirs:x?}")),
                _ if ours.opens == theirs && ours.refused.is_empty() => {
                    figures.equal_reading_core += usize::from(ours.reads_core);
                    let pmus: BTreeSet<&str> =
                        ours.placed.iter().map(|(_, p)| p.as_str()).collect();
                    figures.equal_on_both_core_pmus += usize::from(pmus.len() > 1);
                    figures
                        .equal
                        .push(format!("{label}: {} opens", theirs.len()));
                }
                _ if our_events != their_events => figures.other_definition.push(format!(
                    "{label}: ours reads {our_events:?}, perf 6.1 {their_events:?}"
                )),
                _ if !perf_formulas_differ(texts[perf.as_str()]).is_empty() => {
                    figures.other_definition.push(format!(
                        "{label}: perf 6.1 reads both hybrid tables' formulas: {:?}",
                        perf_formulas_differ(texts[perf.as_str()])
                    ))
                }
                _ if ours.placed != perf_placed(texts[perf.as_str()]) => {
                    let theirs = perf_placed(texts[perf.as_str()]);
                    figures.other_definition.push(format!(
                        "{label}: the event tables differ: ours places {:?}, perf 6.1's {:?}",
                        ours.placed.difference(&theirs).collect::<Vec<_>>(),
                        theirs.difference(&ours.placed).collect::<Vec<_>>()
                    ))
                }
                (None, true) => figures.wrong.push(format!(
                    "{label}: perf refuses ({:?}); ours {:x?}",
                    seen.refused, ours.opens
                )),
                (None, false) => figures.wrong.push(format!(
                    "{label}: ours {:x?} {:?}, perf {theirs:x?}",
                    ours.opens, ours.refused
                )),
            }
        }
        println!(
            "{machine} ({model}, PERF_CPUID={cpuid}): {}",
            figures.line()
        );
        for (kind, list) in [
            ("equal", &figures.equal),
            ("other definition", &figures.other_definition),
            ("cannot run alike", &figures.cannot_run_alike),
            ("ours cannot run", &figures.cannot_run),
            (
                "ours cannot run, perf opens",
                &figures.ours_cannot_perf_opens,
            ),
            ("wrong", &figures.wrong),
        ] {
            for example in list {
                println!("  {kind}: {example}");
            }
        }
        all.add(figures);
    }
    std::fs::remove_dir_all(shim.parent().unwrap()).unwrap();
    println!("all: {}", all.line());
    println!("in {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        all.ours_cannot_perf_opens.is_empty(),
        "{} metrics counterhal cannot run open in perf:\n{}",
        all.ours_cannot_perf_opens.len(),
        all.ours_cannot_perf_opens.join("\n")
    );
    // What counterhal cannot run on the trees reads a PMU the tree lacks, whose events perf
    // cannot open either (backend-linux's tests/perf_uncore.rs refuses them alike).
    let other_reasons: Vec<&String> = all
        .cannot_run
        .iter()
        .filter(|why| !why.contains(": uncore PMU not here: "))
        .collect();
    assert!(
        other_reasons.is_empty(),
        "metrics that cannot run for a reason other than a PMU the tree lacks: {other_reasons:#?}"
    );
    assert!(
        all.wrong.is_empty(),
        "{} metrics differ:\n{}",
        all.wrong.len(),
        all.wrong.join("\n")
    );
    assert!(!all.equal.is_empty(), "no metric compared equal");
    assert!(
        all.equal_reading_core > 0,
        "no metric reading a core event compared equal (does each tree still have its `cpu` PMU?)"
    );
    assert!(
        all.equal_on_both_core_pmus > 0,
        "no metric opening events on both of the adl tree's core PMUs compared equal"
    );
}

/// Oracle: perf 6.1's own metric tables (`perf list --raw-dump metrics` with `PERF_CPUID` of
/// Ice Lake-SP, Skylake-SP, Broadwell-EP and Tiger Lake): the names a user of perf 6.1 types.
/// Each that the event database's aliases take (`counterhal_events::metric_alias`, matched
/// from perf 6.1's and Linux 6.12's tables by counterhal-gen) is a name `-M` takes: `encode
/// -M` of perf 6.1's names prints what it prints for the metrics they stand for, each object
/// naming our metric. Before, `-M DRAM_BW_Use` was an unknown metric.
#[test]
fn perf_6_1s_metric_names_are_taken() {
    const MODELS: &[(&str, &str)] = &[
        ("icx", "GenuineIntel-6-6A-6"),
        ("skx", "GenuineIntel-6-55-4"),
        ("bdw_ep", "GenuineIntel-6-4F-1"),
        ("tgl", "GenuineIntel-6-8C-1"),
    ];
    if let Some((need, why)) = counterhal_conformance::fixtures::perf_tree::unready() {
        skip!(need, "{why}");
    }
    // Each object as text, sorted: `-M` prints metrics in the table's order.
    let encode = |model: &str, names: &[&str]| {
        let out = counterhal(&[
            "encode",
            "--json",
            "--cpu-model",
            model,
            "-M",
            &names.join(","),
        ]);
        let objects = serde_json::from_slice::<Vec<Value>>(&out.stdout)
            .unwrap_or_else(|e| panic!("{model}: {e}: {}", stderr(&out)));
        let mut texts: Vec<String> = objects.iter().map(Value::to_string).collect();
        texts.sort();
        texts
    };
    for &(model, cpuid) in MODELS {
        let perf_names = perf_metric_names(cpuid).unwrap();
        let table = counterhal_events::shipped_metrics(model).unwrap().unwrap();
        let listed = counterhal(&["list", "--metrics", "--json", "--cpu-model", model]);
        let listed: Value = serde_json::from_slice(&listed.stdout).expect("list's JSON");
        let portable_names: Vec<&str> = listed["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["model"].as_str() != Some(model))
            .filter_map(|m| m["name"].as_str())
            .collect();
        let aliased: Vec<(&str, &str)> = perf_names
            .iter()
            .filter(|name| table.get(name).is_none())
            .filter_map(|name| counterhal_events::metric_alias(model, name))
            .map(|alias| (alias.alias, alias.metric))
            .collect();
        let unknown = perf_names.len() - aliased.len();
        println!(
            "{model}: perf 6.1 names {} metrics, {} of them by a name of ours' aliases, {unknown} \
             others (ours by name, or not matched)",
            perf_names.len(),
            aliased.len()
        );
        assert!(
            aliased
                .iter()
                .any(|(alias, _)| *alias == "Kernel_Utilization"),
            "{model}: {aliased:?}"
        );
        // A name counterhal's portable metrics answer first (`IPC`, `CPI`) is theirs, and one
        // that is a group of the model's metrics names the group (`-M` takes groups too).
        let groups = table.groups();
        type Pairs<'a> = Vec<(&'a str, &'a str)>;
        let (aliased, answered): (Pairs<'_>, Pairs<'_>) =
            aliased.into_iter().partition(|(alias, _)| {
                !portable_names.iter().any(|p| p.eq_ignore_ascii_case(alias))
                    && !groups.iter().any(|g| g.eq_ignore_ascii_case(alias))
            });
        println!("  answered by a portable metric or a group: {answered:?}");
        let (perfs, ours): (Vec<&str>, Vec<&str>) = aliased.iter().copied().unzip();
        let (by_perfs, by_ours) = (encode(model, &perfs), encode(model, &ours));
        let only = |a: &[String], b: &[String]| -> Vec<String> {
            a.iter()
                .filter(|x| !b.contains(x))
                .take(3)
                .cloned()
                .collect()
        };
        assert!(
            by_perfs == by_ours,
            "{model}: perf 6.1's names alone print {:?}; ours alone {:?}",
            only(&by_perfs, &by_ours),
            only(&by_ours, &by_perfs)
        );
    }
}

/// perf 6.1's metrics for `cpuid` (`perf list --details metrics`): name -> formula (the last
/// bracketed line under the name).
fn perf_6_1_formulas(cpuid: &str) -> BTreeMap<String, String> {
    let out = std::process::Command::new("perf")
        .args(["list", "--details", "metrics"])
        .env("PERF_CPUID", cpuid)
        .env("LC_ALL", "C")
        .output()
        .expect("perf runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut formulas = BTreeMap::new();
    let mut name: Option<&str> = None;
    for line in text.lines() {
        match line
            .trim()
            .strip_prefix('[')
            .and_then(|l| l.strip_suffix(']'))
        {
            Some(bracketed) if line.starts_with("       ") => {
                if let Some(name) = name {
                    formulas.insert(name.to_string(), bracketed.to_string());
                }
            }
            _ if line.starts_with("  ") && !line[2..].starts_with(' ') => name = Some(line.trim()),
            _ => name = None,
        }
    }
    formulas
}

/// The events perf 6.1's formula of `metric` reads, following the metrics it reads by name
/// (`Socket_CLKS`): the dotted event names; `None` where a formula reads a PMU's raw terms
/// (`cha@event\=0x36...@`), which name no event.
fn perf_6_1_events(formulas: &BTreeMap<String, String>, metric: &str) -> Option<BTreeSet<String>> {
    let formula = &formulas[metric];
    if formula.contains('@') {
        return None;
    }
    let mut events = BTreeSet::new();
    let words = formula.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'));
    for word in words.filter(|w| !w.is_empty()) {
        if formulas.contains_key(word) && word != metric {
            events.extend(perf_6_1_events(formulas, word)?);
        } else if word.contains('.') && word.starts_with(|c: char| c.is_ascii_uppercase()) {
            events.insert(word.to_string());
        }
    }
    Some(events)
}

/// Issue 66: perf 6.1's `MEM_Read_Latency`, `UNCORE_FREQ`, `DRAM_BW_Use`, `IO_Read_BW` and
/// `IO_Write_BW`. Oracle: perf 6.1's own tables (`PERF_CPUID=... perf list --details metrics`,
/// Debian's perf 6.1) of Ice Lake-SP, Skylake-SP, Broadwell-EP and Tiger Lake: every one of
/// these names perf 6.1 lists is taken by `-M`, and where perf 6.1's formula names its events
/// (no raw PMU terms), ours reads exactly those: Ice Lake-SP's `IO_Read_BW` keeps perf 6.1's
/// ItoM requests, which Intel's later tables call writes (docs/event-data-errata.md). Before,
/// `-M MEM_Read_Latency` was an unknown metric on Skylake-SP and Broadwell-EP.
#[test]
fn perf_6_1s_renamed_system_metrics_keep_their_meaning() {
    const NAMES: &[&str] = &[
        "MEM_Read_Latency",
        "UNCORE_FREQ",
        "DRAM_BW_Use",
        "IO_Read_BW",
        "IO_Write_BW",
    ];
    if let Some((need, why)) = counterhal_conformance::fixtures::perf_tree::unready() {
        skip!(need, "{why}");
    }
    let mut compared = 0;
    for (model, cpuid) in [
        ("icx", "GenuineIntel-6-6A-6"),
        ("skx", "GenuineIntel-6-55-4"),
        ("bdw_ep", "GenuineIntel-6-4F-1"),
        ("tgl", "GenuineIntel-6-8C-1"),
    ] {
        let formulas = perf_6_1_formulas(cpuid);
        for name in NAMES.iter().filter(|n| formulas.contains_key(**n)) {
            let out = counterhal(&["encode", "--json", "--cpu-model", model, "-M", name]);
            let objects: Vec<Value> = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{model} -M {name}: {e}: {}", stderr(&out)));
            assert!(!objects.is_empty(), "{model} -M {name}: {}", stderr(&out));
            let Some(theirs) = perf_6_1_events(&formulas, name) else {
                println!("{model} {name}: taken (perf 6.1's formula reads raw PMU terms)");
                continue;
            };
            let ours: BTreeSet<String> = objects
                .iter()
                .filter_map(|o| o["event"].as_str())
                .filter(|e| e.contains('.'))
                .map(str::to_string)
                .collect();
            assert_eq!(
                ours, theirs,
                "{model} -M {name}: ours reads, perf 6.1's reads"
            );
            println!("{model} {name}: reads perf 6.1's {theirs:?}");
            compared += 1;
        }
    }
    assert!(compared >= 4, "only {compared} names compared");
}

/// `[PERF_COUNT_HW_NAME] = 0xCODE,` lines of the C array `array` in `source`: each generic
/// event's name and the raw code the kernel programs for it.
fn event_map(source: &str, array: &str) -> BTreeMap<String, u64> {
    let start = source
        .find(&format!("{array}[PERF_COUNT_HW_MAX]"))
        .unwrap_or_else(|| panic!("no {array}"));
    let body = &source[start..];
    let body = &body[..body.find("};").unwrap()];
    body.lines()
        .filter_map(|line| {
            let (name, code) = line.trim().strip_prefix('[')?.split_once(']')?;
            let code = code.trim().strip_prefix('=')?.split(',').next()?.trim();
            let code = u64::from_str_radix(code.strip_prefix("0x")?, 16).ok()?;
            Some((name.to_string(), code))
        })
        .collect()
}

/// The generic hardware events of the system's `<linux/perf_event.h>` by their config:
/// `enum perf_hw_id`'s names in order.
fn generic_names() -> Vec<String> {
    let header = std::fs::read_to_string("/usr/include/linux/perf_event.h").unwrap_or_default();
    let Some(start) = header.find("enum perf_hw_id {") else {
        return Vec::new();
    };
    header[start..]
        .lines()
        .map_while(|l| (!l.starts_with('}')).then_some(l))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with("PERF_COUNT_HW_") && *w != "PERF_COUNT_HW_MAX")
        .map(str::to_string)
        .collect()
}

/// Issue 55, item 24: the portable `-M IPC` and `-M CPI` open the generic `instructions` and
/// `cycles`, where perf 6.1 opens its model table's `INST_RETIRED.ANY` and
/// `CPU_CLK_UNHALTED.THREAD` as raw events of the core PMU: they count the same, since the
/// kernel programs the generic events as those very codes. counterhal keeps the generic
/// events on purpose (docs/command.md, where stat differs from perf): one meaning with every
/// model and with none, and on a hybrid chip the kernel opens them on each core type's PMU.
/// Oracle: perf 6.1 under the Sapphire Rapids and Skylake trees (`PERF_CPUID`), the attrs its
/// `-vv` opens for `-M IPC` and `-M CPI`; the kernel's `intel_perfmon_event_map`
/// (arch/x86/events/intel/core.c, 6.12) and the system's `<linux/perf_event.h>`.
#[test]
fn ipc_and_cpi_count_the_codes_perf_6_1_opens_for_them() {
    if let Some((need, why)) = counterhal_conformance::fixtures::perf_tree::unready() {
        skip!(need, "{why}");
    }
    let tree = match counterhal_conformance::fixtures::kernel_source() {
        Ok(tree) => tree,
        Err(why) => skip!(Need::Source, "{why}"),
    };
    let core = std::fs::read_to_string(tree.join("arch/x86/events/intel/core.c")).unwrap();
    let map = event_map(&core, "intel_perfmon_event_map");
    let names = generic_names();
    if names.is_empty() {
        skip!(
            Need::Tools,
            "no <linux/perf_event.h> (Debian's linux-libc-dev)"
        );
    }
    let shim = build_shim("ipc").unwrap();
    let metrics = ["IPC".to_string(), "CPI".to_string()];
    let mut compared = 0;
    for (machine, model, cpuid) in [
        ("spr-2s", "spr", "GenuineIntel-6-8F-8"),
        ("skl-client", "skl", "GenuineIntel-6-5E-3"),
    ] {
        let root = machines().join(machine);
        let devices = root.join("bus/event_source/devices");
        let output = match run_perf(&devices, &shim, Asked::Metrics, &metrics, Some(cpuid)) {
            Ok(output) => output,
            Err(why) => skip!(Need::Privilege, "{why}"),
        };
        let saw = parse_perf(&output);
        let encoded = ours(&root, model, &metrics);
        for metric in &metrics {
            let seen = &saw[metric];
            let label = format!("{model} -M {metric}");
            let theirs: BTreeSet<(u64, u64)> =
                perf_opens(seen).iter().map(|o| (o.0, o.1)).collect();
            assert!(
                seen.refused.is_none() && !theirs.is_empty(),
                "{label}: perf 6.1 opened nothing: {seen:?}"
            );
            // Ours: generic events (type 0), as the kernel programs them on the core PMU.
            let ours: BTreeSet<(u64, u64)> = encoded[metric]
                .opens
                .iter()
                .map(|o| {
                    assert_eq!(o.0, 0, "{label}: not a generic event: {o:x?}");
                    let name = &names[o.1 as usize];
                    let code = map.get(name);
                    (4, *code.unwrap_or_else(|| panic!("{name} not in {map:x?}")))
                })
                .collect();
            assert_eq!(
                ours, theirs,
                "{label}: ours (programmed as) vs perf 6.1's opens"
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 4);
}
