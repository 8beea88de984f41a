//! Metric thresholds against perf 7.2.13 (Debian sid's, the current-releases lab's root): both
//! count `-a -M insn_per_cycle,l1d_miss_rate` for the Zen 3 model (perf's `PERF_CPUID`, our
//! `--cpu-model`), whose thresholds are perf's common metrics' (`insn_per_cycle < 1`,
//! `l1d_miss_rate > 0.05`), under counterhal-conformance's preloaded `syscall`, which opens
//! every event as a software one: cpu-clock, or dummy (which counts 0) for the events
//! `COUNTERHAL_SHIM_AS` names. So each case's counts give a known class, and both tools must
//! give it: `-j`'s `"metric-threshold"` (good, bad, or none where the threshold has no value),
//! the table's colour under a terminal (red bad, green good), and nothing in `-x`. And
//! `list -j` gives the thresholds perf 7.2's gives.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use counterhal_conformance::fixtures::perf_tree::build_shim;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

use crate::common::{bin, perf_7_2};

/// perf 7.2's signature of a Zen 3 core, and the model counterhal detects from it.
const ZEN3: &str = "AuthenticAMD-25-1-1";

/// The metrics counted, in `-M`'s order.
const METRICS: [&str; 2] = ["insn_per_cycle", "l1d_miss_rate"];

/// The events opened as dummy, and each metric's class (`None`: none).
type Case = (
    &'static str,
    &'static [(&'static str, Option<&'static str>)],
);

/// The events opened as dummy (`TYPE:CONFIG`, as the shim reads them), and the class each
/// metric then has (`None`: the threshold has no value); a metric whose class the counts do
/// not settle (an IPC of cpu-clock over cpu-clock, about 1) is left out.
const CASES: [Case; 4] = [
    // instructions: IPC 0, below 1; misses and loads both cpu-clock: about 1, above 0.05.
    (
        "0:1=9",
        &[
            ("insn_per_cycle", Some("bad")),
            ("l1d_miss_rate", Some("bad")),
        ],
    ),
    // cpu-cycles: IPC divides by 0.
    ("0:0=9", &[("insn_per_cycle", None)]),
    // L1-dcache-load-misses (cache 0, read 0, miss 1): a rate of 0.
    ("3:65536=9", &[("l1d_miss_rate", Some("good"))]),
    // L1-dcache-loads: the rate divides by 0.
    ("3:0=9", &[("l1d_miss_rate", None)]),
];

/// `tool ARGS` with the shim opening `dummy`'s events as dummy, under a terminal when
/// `terminal` (`script`, which gives the command a pseudo-terminal): what it printed, both
/// streams.
fn run(tool: Command, shim: &Path, dummy: &str, args: &[&str], terminal: bool) -> String {
    let words: Vec<String> = std::iter::once(tool.get_program())
        .chain(tool.get_args())
        .chain(args.iter().map(std::ffi::OsStr::new))
        .map(|w| format!("'{}'", w.to_string_lossy()))
        .collect();
    let mut command = match terminal {
        true => {
            let mut script = Command::new("script");
            script.args(["-qec", &words.join(" "), "/dev/null"]);
            script
        }
        false => tool,
    };
    if !terminal {
        command.args(args);
    }
    let output = command
        .env("LD_PRELOAD", shim)
        .env("COUNTERHAL_SHIM_AS", dummy)
        .env("PERF_CPUID", ZEN3)
        .env("LC_ALL", "C")
        .env_remove("COUNTERHAL_EVENTS")
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    format!("{}{}", text(&output.stdout), text(&output.stderr))
}

/// perf 7.2, or counterhal, with the arguments both take before `-M`'s.
fn tool(ours: bool) -> Command {
    if ours {
        let mut command = Command::new(bin());
        command.args(["stat", "--cpu-model", ZEN3]);
        command
    } else {
        let mut command = perf_7_2().unwrap();
        command.arg("stat");
        command
    }
}

/// The arguments after `stat` (and our `--cpu-model`).
fn args<'a>(layout: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["-a", "-M", "insn_per_cycle,l1d_miss_rate"];
    args.extend(layout);
    args.push("true");
    args
}

/// Each metric's `"metric-threshold"` in `-j` lines: perf's metric lines name it at the end of
/// `metric-unit` (`instructions  insn_per_cycle`); ours are the lines with a metric and no
/// counter, in `-M`'s order.
fn json_classes(text: &str, ours: bool) -> BTreeMap<String, Option<String>> {
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &serde_json::Value| v.get("metric-unit").is_some())
        .collect();
    let class = |v: &serde_json::Value| v["metric-threshold"].as_str().map(str::to_string);
    if ours {
        let metric_lines = lines.iter().filter(|v| v.get("counter-value").is_none());
        return METRICS
            .iter()
            .zip(metric_lines)
            .map(|(name, v)| (name.to_string(), class(v)))
            .collect();
    }
    lines
        .iter()
        .filter_map(|v| {
            let unit = v["metric-unit"].as_str()?;
            let name = METRICS.iter().find(|m| unit.ends_with(*m))?;
            Some((name.to_string(), class(v)))
        })
        .collect()
}

/// Each metric's colour in the table: the class of the escape on the line that names it.
fn table_classes(text: &str) -> BTreeMap<String, Option<String>> {
    METRICS
        .iter()
        .filter_map(|name| {
            let line = text.lines().find(|l| l.contains(name))?;
            let class = if line.contains("\x1b[31m") {
                Some("bad".to_string())
            } else if line.contains("\x1b[32m") {
                Some("good".to_string())
            } else {
                None
            };
            Some((name.to_string(), class))
        })
        .collect()
}

/// Why the test cannot run here, if it cannot.
fn unready() -> Option<(Need, String)> {
    if let Err(why) = perf_7_2() {
        return Some((Need::Tools, why));
    }
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            == Some("0")
    });
    if !root {
        return Some((
            Need::Privilege,
            "counting system-wide (-a) needs root".to_string(),
        ));
    }
    let script = Command::new("script").arg("--version").output();
    if !script.is_ok_and(|o| o.status.success()) {
        return Some((
            Need::Tools,
            "no `script` (util-linux) to give a terminal".to_string(),
        ));
    }
    None
}

/// Oracle: perf 7.2.13's `-j` and its table under a terminal, in each case: the class of each
/// metric the counts settle is the same in ours, and is the case's (good, bad and none each
/// seen); `-x` prints no class and no colour in either, even under a terminal.
#[test]
fn thresholds_classify_and_print_as_perf_7_2_does() {
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    let shim = match build_shim("stat_threshold") {
        Ok(shim) => shim,
        Err(why) => skip!(Need::Tools, "cannot build the preload: {why}"),
    };
    for (dummy, expected) in CASES {
        let expected: BTreeMap<String, Option<String>> = expected
            .iter()
            .map(|(m, c)| (m.to_string(), c.map(str::to_string)))
            .collect();
        let settled = |all: BTreeMap<String, Option<String>>| -> BTreeMap<_, _> {
            all.into_iter()
                .filter(|(m, _)| expected.contains_key(m))
                .collect()
        };
        for ours in [false, true] {
            let who = if ours { "counterhal" } else { "perf 7.2" };
            let json = run(tool(ours), &shim, dummy, &args(&["-j"]), false);
            assert_eq!(
                settled(json_classes(&json, ours)),
                expected,
                "{who} -j, {dummy} as dummy:\n{json}"
            );
            let table = run(tool(ours), &shim, dummy, &args(&[]), true);
            assert_eq!(
                settled(table_classes(&table)),
                expected,
                "{who}'s table under a terminal, {dummy} as dummy:\n{table}"
            );
            // Not under a terminal: no colour.
            let plain = run(tool(ours), &shim, dummy, &args(&[]), false);
            assert!(!plain.contains('\x1b'), "{who}, no terminal:\n{plain}");
            let csv = run(tool(ours), &shim, dummy, &args(&["-x,"]), true);
            assert!(
                !csv.contains('\x1b') && !csv.contains("good") && !csv.contains("bad"),
                "{who} -x, {dummy} as dummy:\n{csv}"
            );
        }
    }
}

/// Each metric's threshold in a `list -j` (`MetricName` to `MetricThreshold`).
fn listed_thresholds(json: &[u8]) -> BTreeMap<String, String> {
    let list: serde_json::Value = serde_json::from_slice(json).expect("list -j's JSON");
    list.as_array()
        .expect("an array")
        .iter()
        .filter_map(|o| {
            let name = o["MetricName"].as_str()?;
            Some((name.to_string(), o["MetricThreshold"].as_str()?.to_string()))
        })
        .collect()
}

/// Oracle: perf 7.2.13's `list -j` (`MetricThreshold`, builtin-list.c) under `PERF_CPUID` of
/// models whose tables are perf 7.2's (Zen 3, Zen 4, Alder Lake-N's Gracemont): every metric
/// of perf's with a threshold that ours lists has it, the same formula (both parsed by
/// counterhal's parser: perf's `&` and `|` bind as perf's grammar binds them), and ours lists
/// none perf lacks; perf's `branch_miss_rate` is counterhal's portable metric, which has none.
#[test]
fn list_j_gives_perf_7_2_s_thresholds() {
    if let Err(why) = perf_7_2() {
        skip!(Need::Tools, "{why}");
    }
    for cpuid in [ZEN3, "AuthenticAMD-25-17-1", "GenuineIntel-6-BE-0"] {
        let theirs = perf_7_2()
            .unwrap()
            .args(["list", "-j"])
            .env("PERF_CPUID", cpuid)
            .output()
            .unwrap();
        let theirs = listed_thresholds(&theirs.stdout);
        let ours = Command::new(bin())
            .args(["list", "-j", "--cpu-model", cpuid])
            .env_remove("COUNTERHAL_EVENTS")
            .output()
            .unwrap();
        assert!(ours.status.success(), "{cpuid}: {:?}", ours);
        let ours = listed_thresholds(&ours.stdout);
        assert!(ours.len() >= 9, "{cpuid}: {ours:?}");
        for (name, threshold) in &ours {
            let Some(perf_s) = theirs.get(name) else {
                panic!("{cpuid}: {name} has threshold {threshold}, perf 7.2's none");
            };
            let parse = |t: &str| counterhal_events::expression::parse(t).unwrap();
            assert_eq!(parse(threshold), parse(perf_s), "{cpuid}: {name}");
        }
        let portable = ["branch_miss_rate"];
        let missing: Vec<&String> = theirs
            .keys()
            .filter(|n| !ours.contains_key(*n) && !portable.contains(&n.as_str()))
            .collect();
        // Metrics of perf's that counterhal's table leaves out (each named in its header)
        // list no threshold either.
        let left_out = Command::new(bin())
            .args(["list", "--metrics", "--cpu-model", cpuid])
            .env_remove("COUNTERHAL_EVENTS")
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&left_out.stdout);
        for name in missing {
            assert!(
                !listed.contains(&format!("{name} ")) && !listed.contains(&format!("{name}\n")),
                "{cpuid}: ours lists {name} without perf 7.2's threshold"
            );
        }
    }
}
