//! `stat --cputype` and `--hybrid-merge` against perf 7.2.13 (Debian sid's, the
//! current-releases lab's root) under the Alder Lake PMU tree (`cpu_core` type 4, `cpu_atom`
//! type 10) and the Meteor Lake one made from it, perf in a private mount namespace with the
//! tree over /sys/bus/event_source/devices and `PERF_CPUID` naming the chip, counterhal with
//! `--sysfs TREE`; both with the perf_tree fixture's preloaded `syscall`, which opens every
//! event as cpu-clock.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use counterhal_conformance::fixtures::perf_tree::{build_shim, unready};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

use crate::common::{bin, on_cpu_0, output_under, perf_7_2, perf_7_2_under};
use crate::stat_topdown::hybrid_tree;
use crate::sysfs_root::machines;

/// Alder Lake's signature, as perf takes it.
const CPUID: &str = "GenuineIntel-6-97-2";

/// Meteor Lake's signature, as perf takes it.
const METEOR_LAKE: &str = "GenuineIntel-6-AA-4";

/// The events compared.
const EVENTS: &str = "cycles,branches,cache-misses,instructions";

/// One open: the PMU's type (a generic event's extended type, `config` bits 63:32), and the
/// attr's type and config.
type Open = (u64, u64, u64);

fn open(type_: u64, config: u64) -> Open {
    let pmu = if type_ == 0 { config >> 32 } else { type_ };
    (pmu, type_, config)
}

/// What perf 7.2's `stat ARGS` prints on its standard error under `tree` for the chip
/// `cpuid`, run on CPU 0 (where the shim opens every event).
fn perf_stat(tree: &Path, cpuid: &str, shim: &Path, args: &[&str]) -> String {
    let devices = tree.join("bus/event_source/devices");
    let perf = perf_7_2_under(&devices, cpuid, Some(shim)).unwrap();
    let output = output_under(on_cpu_0(&perf).arg("stat").args(args));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What perf 7.2's `stat -vv ARGS -e EVENTS true` opens for the workload (pid > 0) on the
/// chip `cpuid`.
fn perf(tree: &Path, cpuid: &str, shim: &Path, args: &[&str]) -> (BTreeSet<Open>, String) {
    let args = [&["-vv"], args, &["-e", EVENTS, "true"]].concat();
    let text = perf_stat(tree, cpuid, shim, &args);
    let number = |t: &str| match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
        None => t.parse().unwrap(),
    };
    let (mut opens, mut attr) = (BTreeSet::new(), (0, 0));
    for line in text.lines() {
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["perf_event_attr:"] => attr = (0, 0),
            ["type", t, ..] => attr.0 = number(t),
            ["config", c, ..] => attr.1 = number(c),
            ["sys_perf_event_open:", "pid", pid, ..] if *pid != "0" && *pid != "-1" => {
                opens.insert(open(attr.0, attr.1));
            }
            _ => {}
        }
    }
    (opens, text)
}

/// What counterhal's `stat -v ARGS -e EVENTS -- true` opens (`-v`'s `perf type=T config=C`)
/// on the chip `cpuid`.
fn ours(tree: &Path, cpuid: &str, shim: &Path, args: &[&str]) -> (BTreeSet<Open>, String) {
    let output = Command::new(bin())
        .arg("stat")
        .arg("--sysfs")
        .arg(tree)
        .args(["--cpu-model", cpuid, "-v"])
        .args(args)
        .args(["-e", EVENTS, "--", "true"])
        .env_remove("COUNTERHAL_EVENTS")
        .env("LD_PRELOAD", shim)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{args:?}: {text}");
    let field = |word: &str, key: &str| -> Option<u64> {
        let value = word.strip_prefix(key)?;
        u64::from_str_radix(value.trim_start_matches("0x"), 16).ok()
    };
    let mut opens = BTreeSet::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2) {
            let type_ = pair[0]
                .strip_prefix("type=")
                .and_then(|t| t.parse::<u64>().ok());
            if let (Some(type_), Some(config)) = (type_, field(pair[1], "config=")) {
                opens.insert(open(type_, config));
            }
        }
    }
    (opens, text)
}

/// Holds counterhal's opens and lines to perf 7.2's under `tree` for the chip `cpuid`, with
/// `--cputype atom|core|cpu_atom` and `--hybrid-merge`.
fn opens_as_perf_does(tree: &Path, cpuid: &str, shim: &Path) {
    let pmus = |opens: &BTreeSet<Open>| opens.iter().map(|o| o.0).collect::<BTreeSet<u64>>();
    let generic = |opens: &BTreeSet<Open>| {
        opens
            .iter()
            .filter(|o| o.1 == 0 && matches!(o.2 & 0xffff_ffff, 0 | 4))
            .copied()
            .collect::<BTreeSet<Open>>()
    };
    for (args, pmu) in [
        (&["--cputype", "atom"][..], Some(10)),
        (&["--cputype", "core"], Some(4)),
        (&["--cputype", "cpu_atom"], Some(10)),
        (&["--hybrid-merge"], None),
    ] {
        let (theirs, their_text) = perf(tree, cpuid, shim, args);
        let (mine, my_text) = ours(tree, cpuid, shim, args);
        assert!(!theirs.is_empty(), "perf {args:?}: {their_text}");
        assert_eq!(
            pmus(&mine),
            pmus(&theirs),
            "{cpuid} {args:?}: PMUs, ours and perf's"
        );
        if let Some(pmu) = pmu {
            assert_eq!(pmus(&mine), BTreeSet::from([pmu]), "{args:?}");
        }
        assert_eq!(
            generic(&mine),
            generic(&theirs),
            "{cpuid} {args:?}: cycles, branches"
        );
        assert_eq!(generic(&mine).len(), if pmu.is_some() { 2 } else { 4 });
        if pmu.is_none() {
            // One line per event in both (perf merges the PMUs' counts under the name).
            for text in [&their_text, &my_text] {
                // A count line: a count (or `<not counted>`) and the name.
                let line = |l: &&str| {
                    let words: Vec<&str> = l.split_whitespace().collect();
                    let counted = words.first().is_some_and(|w| {
                        *w == "<not" || w.chars().all(|c| c.is_ascii_digit() || c == ',')
                    });
                    counted && words.contains(&"cycles")
                };
                let cycles = text.lines().filter(line).count();
                assert_eq!(cycles, 1, "{args:?}: {text}");
            }
        }
    }
}

/// Oracle: perf 7.2.13, `perf stat -vv --cputype atom|core -e
/// cycles,branches,cache-misses,instructions true` under the Alder Lake tree and the Meteor
/// Lake one (`GenuineIntel-6-AA-4`, [`hybrid_tree`]: the same PMU types): each event is
/// opened on that kind of core's PMU alone (type 10 or 4), cycles and branches with the same
/// attr as counterhal's (perf opens cache-misses and instructions through the PMU's sysfs
/// aliases, `cpu_atom/instructions/` as type 10 config 0xc0, counterhal as the generic event of
/// that PMU: the same PMU, compared as such); `--hybrid-merge` opens both PMUs' events and
/// prints one line per event, as counterhal does with or without it. Before, both options
/// were refused (exit 2); Meteor Lake was not compared (it opens as Alder Lake does).
#[test]
fn cputype_and_hybrid_merge_open_what_perf_7_2_opens() {
    if let Err(why) = perf_7_2() {
        skip!(Need::Tools, "{why}");
    }
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    let shim = build_shim("stat-hybrid").unwrap();
    let dir = shim.parent().unwrap();
    let adl = machines().join("adl");
    for (tree, cpuid) in [(adl.clone(), CPUID), (hybrid_tree(dir, true), METEOR_LAKE)] {
        opens_as_perf_does(&tree, cpuid, &shim);
    }
    let tree = adl;
    // An event with no part on that core, and a type no PMU has.
    let refuse = |args: &[&str], events: &str, words: &str| {
        let output = Command::new(bin())
            .arg("stat")
            .arg("--sysfs")
            .arg(&tree)
            .args(["--cpu-model", CPUID])
            .args(args)
            .args(["-e", events, "--", "true"])
            .env("LD_PRELOAD", &shim)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.code() == Some(2) && text.contains(words),
            "{args:?}: {text}"
        );
    };
    refuse(
        &["--cputype", "xyz"],
        "cycles",
        "--cputype xyz is not supported!",
    );
    refuse(
        &["--cputype", "atom"],
        "cycles,topdown-fetch-lat",
        "none of them atom",
    );
    std::fs::remove_dir_all(shim.parent().unwrap()).unwrap();
}

/// The runtime (`-x,`'s fourth field) of each of `events` in `text`, in order.
fn runtimes(text: &str, events: &[&str]) -> Vec<u64> {
    events
        .iter()
        .map(|event| {
            let line = text
                .lines()
                .find(|l| l.split(',').nth(2) == Some(*event))
                .unwrap_or_else(|| panic!("no {event} in {text}"));
            line.split(',').nth(3).unwrap().parse().unwrap()
        })
        .collect()
}

/// Oracle: perf 7.2.13's `perf stat -x, --hybrid-merge -e
/// cycles,cpu_core/cycles/,cpu_atom/cycles/` under the Alder Lake tree, run on CPU 0 where
/// the shim counts every event: the merged `cycles` line's runtime is the sum of its two
/// PMUs' (tools/perf/util/stat.c, `evsel__merge_aggr_counters`, sums `ena` and `run`), twice
/// either PMU's own, and counterhal's is too. Before, counterhal printed the longest of
/// the two, half perf's.
#[test]
fn hybrid_merge_sums_the_pmus_running_times_as_perf_7_2_does() {
    if let Err(why) = perf_7_2() {
        skip!(Need::Tools, "{why}");
    }
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    let shim = build_shim("stat-hybrid-times").unwrap();
    let tree = machines().join("adl");
    let events = ["cycles", "cpu_core/cycles/", "cpu_atom/cycles/"];
    let args = ["-x,", "--hybrid-merge", "-e", &events.join(",")];
    let theirs = perf_stat(&tree, CPUID, &shim, &[&args[..], &["true"]].concat());
    let counterhal = Command::new(bin());
    let output = on_cpu_0(&counterhal)
        .arg("stat")
        .arg("--sysfs")
        .arg(&tree)
        .args(["--cpu-model", CPUID])
        .args(args)
        .args(["--", "true"])
        .env_remove("COUNTERHAL_EVENTS")
        .env("LD_PRELOAD", &shim)
        .output()
        .unwrap();
    let mine = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{mine}");
    for (who, text) in [("perf", &theirs), ("counterhal", &mine)] {
        let times = runtimes(text, &events);
        // The merged counter's own times differ from the single ones' by microseconds.
        let ratio = times[0] as f64 / (times[1] + times[2]) as f64;
        assert!((0.9..1.1).contains(&ratio), "{who}: {times:?}\n{text}");
    }
    std::fs::remove_dir_all(shim.parent().unwrap()).unwrap();
}
