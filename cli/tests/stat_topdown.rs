//! `stat --topdown` and `--td-level` against perf 7.2.13 (Debian sid's, the current-releases
//! lab's root) under another machine's PMU tree: perf runs in a private mount namespace with
//! the tree over /sys/bus/event_source/devices and `PERF_CPUID` naming the CPU, counterhal
//! with `--sysfs TREE --cpu-model CPUID`; both with the preloaded `syscall` of
//! counterhal-conformance's perf_tree fixture, which opens every event as cpu-clock, so that
//! each goes on to count and print as on that machine.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use counterhal_conformance::fixtures::perf_tree::{build_shim, unready};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use serde_json::Value;

use crate::common::{bin, output_under, perf_7_2, perf_7_2_under};
use crate::sysfs_root::machines;

/// One open: the attr's type and config.
type Open = (u64, u64);

/// perf 7.2's `stat ARGS -a true` under `tree`'s PMUs for `cpuid`, with the shim: its exit
/// status, standard output and standard error.
fn perf(tree: &Path, cpuid: &str, shim: &Path, args: &[&str]) -> (bool, String, String) {
    perf_over(tree, cpuid, shim, args, &["true"])
}

/// perf 7.2's `stat ARGS -a WORKLOAD` under `tree`'s PMUs for `cpuid`, with the shim.
fn perf_over(
    tree: &Path,
    cpuid: &str,
    shim: &Path,
    args: &[&str],
    workload: &[&str],
) -> (bool, String, String) {
    let devices = tree.join("bus/event_source/devices");
    let mut perf = perf_7_2_under(&devices, cpuid, Some(shim)).unwrap();
    let output = output_under(perf.arg("stat").args(args).arg("-a").args(workload));
    said(&output)
}

/// A run's exit status, standard output and standard error.
fn said(output: &std::process::Output) -> (bool, String, String) {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        output.status.success(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// counterhal's `stat ARGS -a --timeout 10` over `tree` for `cpuid`, with the shim: its exit
/// status, standard output and standard error.
fn ours(tree: &Path, cpuid: &str, shim: &Path, args: &[&str]) -> (bool, String, String) {
    ours_over(tree, cpuid, shim, args, &["--timeout", "10"])
}

/// counterhal's `stat ARGS -a WORKLOAD` over `tree` for `cpuid`, with the shim.
fn ours_over(
    tree: &Path,
    cpuid: &str,
    shim: &Path,
    args: &[&str],
    workload: &[&str],
) -> (bool, String, String) {
    let output = Command::new(bin())
        .arg("stat")
        .arg("--sysfs")
        .arg(tree)
        .args(["--cpu-model", cpuid])
        .args(args)
        .arg("-a")
        .args(workload)
        .env_remove("COUNTERHAL_EVENTS")
        .env("LD_PRELOAD", shim)
        .output()
        .unwrap();
    said(&output)
}

/// The events perf's `-vv` shows it opening on CPUs (pid -1; its probes open with pid 0).
/// On a hybrid tree perf 7.2 prints the first event's attr in two parts with its probes'
/// attrs and opens between them (`type 4 (cpu_core)`, then the probes, then `config 0x400
/// (slots)`): each attr is taken to be open until its `sys_perf_event_open` line, the
/// innermost first.
fn perf_opens(vv: &str) -> BTreeSet<Open> {
    let number = |t: &str| match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
        None => t.parse().unwrap(),
    };
    let mut opens = BTreeSet::new();
    let mut attrs: Vec<Open> = Vec::new();
    for line in vv.lines() {
        let words = line.split_whitespace().collect::<Vec<_>>();
        match (words.as_slice(), attrs.last_mut()) {
            (["perf_event_attr:"], _) => attrs.push((0, 0)),
            // perf 7.2 names the PMU or event after the number: `type 4 (cpu)`.
            (["type", t, ..], Some(attr)) => attr.0 = number(t),
            (["config", c, ..], Some(attr)) => attr.1 = number(c),
            (["sys_perf_event_open:", "pid", pid, ..], Some(_)) => {
                let attr = attrs.pop().unwrap();
                if *pid == "-1" {
                    opens.insert(attr);
                }
            }
            _ => {}
        }
    }
    opens
}

/// The events `-v` shows counterhal opening (`NAME on linux: perf type=T config=C ...`).
fn our_opens(v: &str) -> BTreeSet<Open> {
    v.lines()
        .filter_map(|line| {
            let attr = line.split(": perf ").nth(1)?;
            let field = |key: &str| {
                let value = attr.split_whitespace().find_map(|w| w.strip_prefix(key))?;
                match value.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16).ok(),
                    None => value.parse().ok(),
                }
            };
            Some((field("type=")?, field("config=")?))
        })
        .collect()
}

/// The keys of `-j`'s metric-only line (the metrics' headings).
fn headings(json: &str) -> BTreeSet<String> {
    let line = json.lines().find(|l| l.starts_with('{')).unwrap_or("{}");
    // perf's keys are unique here; a repeated key would be lost by a map, so count them.
    let keys = line.matches("\" : ").count();
    let parsed: serde_json::Map<String, Value> =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    assert_eq!(parsed.len(), keys, "a key repeated: {line}");
    parsed.keys().cloned().collect()
}

/// Oracle: perf 7.2.13, `PERF_CPUID=... perf stat -vv --topdown [--td-level N] -a true`
/// under the Sapphire Rapids tree (`GenuineIntel-6-8F-8`: slots, the eight perf-metrics
/// events at level 2, INT_MISC.UOP_DROPPING) and the Skylake client tree
/// (`GenuineIntel-6-5E-3`: five raw events), and its `-j` headings (`%  tma_retiring`...).
/// counterhal opens the same events and prints the same metrics, by the same names where
/// its table has perf's (Sapphire Rapids; Skylake's level 1 has perfmon's, which perf 7.2's
/// names reach through `-M`'s aliases). Before, `--topdown` and `--td-level` were refused,
/// and `--metric-only`'s `-j` keyed every `%` metric `"%"`; later, Skylake's levels 2 and 3
/// were refused and Sapphire Rapids' level 6 past its deepest (perf's top-down metrics
/// were aliases of perfmon's, which are in no `TopdownL2` to `TopdownL6` group).
#[test]
fn topdown_opens_and_prints_what_perf_7_2_does() {
    if let Err(why) = perf_7_2() {
        skip!(Need::Tools, "{why}");
    }
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    let shim = build_shim("stat-topdown").unwrap();
    let rows: [(&str, &str, &[&str], bool); 7] = [
        ("spr-2s", "GenuineIntel-6-8F-8", &[], true),
        ("spr-2s", "GenuineIntel-6-8F-8", &["--td-level", "2"], true),
        ("spr-2s", "GenuineIntel-6-8F-8", &["--td-level", "0"], true),
        ("spr-2s", "GenuineIntel-6-8F-8", &["--td-level", "6"], true),
        (
            "skl-client",
            "GenuineIntel-6-5E-3",
            &["--td-level", "1"],
            false,
        ),
        (
            "skl-client",
            "GenuineIntel-6-5E-3",
            &["--td-level", "2"],
            true,
        ),
        (
            "skl-client",
            "GenuineIntel-6-5E-3",
            &["--td-level", "3"],
            true,
        ),
    ];
    for (machine, cpuid, level, same_names) in rows {
        let tree = machines().join(machine);
        let mut args = vec!["--topdown"];
        args.extend(level);
        let (ok, _, theirs) = perf(&tree, cpuid, &shim, &[&args[..], &["-vv"]].concat());
        assert!(ok, "perf {args:?} on {machine}: {theirs}");
        let (ok, _, mine) = ours(&tree, cpuid, &shim, &[&args[..], &["-v"]].concat());
        assert!(ok, "counterhal {args:?} on {machine}: {mine}");
        let (theirs, mine) = (perf_opens(&theirs), our_opens(&mine));
        assert!(
            !theirs.is_empty(),
            "{machine} {args:?}: perf opened nothing"
        );
        assert_eq!(mine, theirs, "{machine} {args:?}: ours, perf 7.2's");
        let (_, _, their_json) = perf(&tree, cpuid, &shim, &[&args[..], &["-j"]].concat());
        let (_, _, our_json) = ours(&tree, cpuid, &shim, &[&args[..], &["-j"]].concat());
        let (their_heads, our_heads) = (headings(&their_json), headings(&our_json));
        assert_eq!(their_heads.len(), our_heads.len(), "{their_json}{our_json}");
        if same_names {
            assert_eq!(our_heads, their_heads, "{machine} {args:?}");
        }
    }
    std::fs::remove_dir_all(shim.parent().unwrap()).unwrap();
}

/// Oracle: perf 7.2.13 refuses `--topdown` where the CPU's table has no TopdownL group
/// (`AuthenticAMD-25-11-1`, Zen 4: "Topdown requested but the topdown metric groups aren't
/// present.") and a level past its deepest ("Invalid top-down metrics level. The max level
/// is 6." on Sapphire Rapids), both failing; counterhal refuses both with perf's words (the
/// same deepest level, 6).
#[test]
fn topdown_is_refused_where_perf_7_2_refuses_it() {
    if let Err(why) = perf_7_2() {
        skip!(Need::Tools, "{why}");
    }
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    let shim = build_shim("stat-topdown-refused").unwrap();
    for (machine, cpuid, args, words) in [
        (
            "zen4",
            "AuthenticAMD-25-11-1",
            &["--topdown"][..],
            "the topdown metric groups aren't present",
        ),
        (
            "spr-2s",
            "GenuineIntel-6-8F-8",
            &["--topdown", "--td-level", "7"][..],
            "Invalid top-down metrics level. The max level is 6.",
        ),
    ] {
        let tree = machines().join(machine);
        let (ok, _, theirs) = perf(&tree, cpuid, &shim, args);
        assert!(!ok && theirs.contains(words), "perf {args:?}: {theirs}");
        let (ok, _, mine) = ours(&tree, cpuid, &shim, args);
        assert!(!ok && mine.contains(words), "counterhal {args:?}: {mine}");
    }
    // --td-level alone changes nothing (perf's `topdown_level` is read only by --topdown).
    let tree = machines().join("spr-2s");
    let alone = ["--td-level", "2", "-e", "cpu-clock"];
    let (ok, _, mine) = ours(&tree, "GenuineIntel-6-8F-8", &shim, &alone);
    assert!(
        ok && mine.contains("cpu-clock") && !mine.contains("tma_"),
        "{mine}"
    );
    std::fs::remove_dir_all(shim.parent().unwrap()).unwrap();
}

/// The Alder Lake tree (`machines/adl`) made a hybrid machine of this one's CPUs under `dir`:
/// `cpu_core` on CPU 0, `cpu_atom` on CPU 1 (both exist here, so `-a` opens on them, as
/// perf does under the shim). For Meteor Lake (`meteorlake`), what Linux 7.2's
/// `intel_pmu_init` (arch/x86/events/intel/core.c, `case INTEL_METEORLAKE`) makes otherwise
/// than Alder Lake's: `caps/pmu_name` `meteorlake_hybrid`, `mtl_hybrid_mem_attrs` (no
/// `mem-loads-aux`) and the Atom PMU's `snoop_rsp` format (`config1:0-63`,
/// `mtl_hybrid_extra_attr`); the same topdown events (`adl_hybrid_events_attrs`).
pub(crate) fn hybrid_tree(dir: &Path, meteorlake: bool) -> std::path::PathBuf {
    let tree = dir.join(if meteorlake { "mtl" } else { "adl" });
    let copied = Command::new("cp")
        .arg("-r")
        .arg(machines().join("adl"))
        .arg(&tree)
        .status()
        .unwrap();
    assert!(copied.success());
    let devices = tree.join("bus/event_source/devices");
    let write = |path: &str, text: &str| std::fs::write(devices.join(path), text).unwrap();
    write("cpu_core/cpus", "0\n");
    write("cpu_atom/cpus", "1\n");
    if meteorlake {
        write("cpu_core/caps/pmu_name", "meteorlake_hybrid\n");
        write("cpu_atom/caps/pmu_name", "meteorlake_hybrid\n");
        std::fs::remove_file(devices.join("cpu_core/events/mem-loads-aux")).unwrap();
        write("cpu_atom/format/snoop_rsp", "config1:0-63\n");
    }
    tree
}

/// Oracle: perf 7.2.13, `PERF_CPUID=GenuineIntel-6-97-2` (Alder Lake) and
/// `GenuineIntel-6-AA-4` (Meteor Lake) `perf stat -vv --cputype core|atom --topdown
/// [--td-level 2] -a true` under the hybrid trees of [`hybrid_tree`]: the Core cores'
/// TopdownL1 on `cpu_core` (slots,
/// the perf-metrics events, INT_MISC.UOP_DROPPING) and, for `atom`, the Atom cores' own
/// (`Unit` `cpu_atom` in perf's JSON) on `cpu_atom`; counterhal opens the same events and
/// prints the same metric names. Before, each was refused (`cpu_core/INT_MISC.UOP_DROPPING/`:
/// "unknown term", the JSON event read as a sysfs term; `--cputype atom`: the Core cores'
/// metrics kept; `--cputype core --td-level 2`: the Atom cores' tma_ifetch_bandwidth kept,
/// its cpu_atom event then refused).
#[test]
fn topdown_on_one_kind_of_hybrid_core_opens_what_perf_7_2_does() {
    if let Err(why) = perf_7_2() {
        skip!(Need::Tools, "{why}");
    }
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    let shim = build_shim("stat-topdown-hybrid").unwrap();
    let dir = shim.parent().unwrap();
    for (meteorlake, cpuid, cputypes) in [
        (false, "GenuineIntel-6-97-2", &["core", "atom"][..]),
        (true, "GenuineIntel-6-AA-4", &["core", "atom"][..]),
    ] {
        let tree = hybrid_tree(dir, meteorlake);
        let levels = cputypes.iter().flat_map(|c| [(c, "1"), (c, "2")]);
        for (cputype, level) in levels {
            let args = ["--cputype", cputype, "--topdown", "--td-level", level];
            let (ok, _, theirs) = perf(&tree, cpuid, &shim, &[&args[..], &["-vv"]].concat());
            assert!(ok, "perf {args:?} on {cpuid}: {theirs}");
            let (ok, _, mine) = ours(&tree, cpuid, &shim, &[&args[..], &["-v"]].concat());
            assert!(ok, "counterhal {args:?} on {cpuid}: {mine}");
            let (theirs, mine) = (perf_opens(&theirs), our_opens(&mine));
            assert!(!theirs.is_empty(), "{cpuid} {args:?}: perf opened nothing");
            assert_eq!(mine, theirs, "{cpuid} {args:?}: ours, perf 7.2's");
            let (_, _, their_json) = perf(&tree, cpuid, &shim, &[&args[..], &["-j"]].concat());
            let (_, _, our_json) = ours(&tree, cpuid, &shim, &[&args[..], &["-j"]].concat());
            assert_eq!(
                headings(&our_json),
                headings(&their_json),
                "{cpuid} {args:?}"
            );
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Whether `line` is a metric-only table's heading line (`%  tma_retiring ...`).
fn is_heading(line: &str) -> bool {
    line.trim_start().starts_with('%') && line.contains("tma_")
}

/// The metric-only table's columns in `text`: each heading's metric (`tma_retiring` of
/// `%  tma_retiring`) with the number under it, from the heading line and the next line.
fn columns(text: &str) -> Vec<(String, f64)> {
    let mut lines = text.lines().skip_while(|l| !is_heading(l));
    let names: Vec<String> = lines
        .next()
        .unwrap_or("")
        .split_whitespace()
        .filter(|w| w.starts_with("tma_"))
        .map(String::from)
        .collect();
    let values: Vec<f64> = lines
        .next()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(
        names.len(),
        values.len(),
        "a column without a number: {text}"
    );
    let mut columns: Vec<(String, f64)> = names.into_iter().zip(values).collect();
    columns.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    columns
}

/// Holds counterhal's `stat ARGS` (`--topdown` without `--cputype`) to perf 7.2's under the
/// hybrid tree `tree` of the chip `cpuid`: the opens, the columns (with their numbers where
/// `numbers`), the Core cores' columns first.
fn both_kinds_as_perf_does(tree: &Path, cpuid: &str, shim: &Path, args: &[&str], numbers: bool) {
    let (ok, _, theirs) = perf(tree, cpuid, shim, &[args, &["-vv"]].concat());
    assert!(ok, "perf on {cpuid} {args:?}: {theirs}");
    let (ok, _, mine) = ours(tree, cpuid, shim, &[args, &["-v"]].concat());
    assert!(ok, "counterhal on {cpuid} {args:?}: {mine}");
    let (their_opens, my_opens) = (perf_opens(&theirs), our_opens(&mine));
    let pmus = |opens: &BTreeSet<Open>| opens.iter().map(|o| o.0).collect::<BTreeSet<_>>();
    assert_eq!(pmus(&their_opens), BTreeSet::from([4, 10]), "{theirs}");
    assert_eq!(my_opens, their_opens, "{cpuid} {args:?}: ours, perf 7.2's");
    // The table, without -vv's lines among it. Every event counts CPU 0's clock from its own
    // enable to its own disable, so a number is its formula of nearly equal counts, and a
    // formula of differences moves with the skew between them (2026-11-28, on a busy 2-CPU CI
    // machine: perf's `-a true`, about a millisecond, gave Alder Lake's tma_fetch_latency
    // -73.5 beside counterhal's -75.0 over 10 ms). Both count over the same half second, so
    // that a skew of milliseconds moves a number by a fraction of a point.
    let half_second = ["sleep", "0.5"];
    let (_, _, theirs) = perf_over(tree, cpuid, shim, args, &half_second);
    let (_, _, mine) = ours_over(tree, cpuid, shim, args, &half_second);
    let (their_columns, my_columns) = (columns(&theirs), columns(&mine));
    assert!(their_columns.len() >= 8, "{theirs}");
    let names = |c: &[(String, f64)]| c.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&my_columns),
        names(&their_columns),
        "{cpuid} {args:?}"
    );
    for (mine, theirs) in my_columns.iter().zip(&their_columns).filter(|_| numbers) {
        let close = (mine.1 - theirs.1).abs() < 1.5;
        assert!(close, "{cpuid} {args:?}: {mine:?}, perf's {theirs:?}");
    }
    // The Core cores' first: their columns are perf's with `--cputype core`.
    let (_, _, core) = perf(tree, cpuid, shim, &[args, &["--cputype", "core"]].concat());
    let core = columns(&core);
    let heading = mine.lines().find(|l| is_heading(l)).unwrap();
    let mut leading: Vec<&str> = heading
        .split_whitespace()
        .filter(|w| w.starts_with("tma_"))
        .take(core.len())
        .collect();
    leading.sort_unstable();
    assert_eq!(leading, names(&core), "{cpuid} {args:?}: {heading}");
}

/// Oracle: perf 7.2.13, `PERF_CPUID=GenuineIntel-6-97-2` (Alder Lake) and
/// `GenuineIntel-6-AA-4` (Meteor Lake) `perf stat -vv --topdown --td-level 1|2 -a true` under
/// the hybrid trees of [`hybrid_tree`], no `--cputype`: it opens both kinds of core's events
/// (slots, the perf-metrics events and INT_MISC.UOP_DROPPING on `cpu_core`, the Atom cores'
/// TOPDOWN_*.ALL and CPU_CLK_UNHALTED.CORE on `cpu_atom`) and prints each metric twice in
/// one metric-only table, once per kind, with no PMU named; each kind is told by its
/// number (under the shim every event counts the same clock, so each number is what the
/// kind's formula makes of equal counts: the Core cores' tma_bad_speculation 125, the Atom
/// cores' 40 on Alder Lake; at level 2 the Core cores' eight and the Atom cores' six).
/// counterhal opens the same events and prints the same columns, each with its kind's
/// number (within 1.5 points), the Core cores' first. Before, it opened and printed the
/// Core cores' alone (at level 2 with three of the Atom cores' among them).
#[test]
fn topdown_on_a_hybrid_chip_opens_and_prints_both_kinds_as_perf_7_2_does() {
    if let Err(why) = perf_7_2() {
        skip!(Need::Tools, "{why}");
    }
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    let shim = build_shim("stat-topdown-both").unwrap();
    let dir = shim.parent().unwrap();
    for (meteorlake, cpuid) in [
        (false, "GenuineIntel-6-97-2"),
        (true, "GenuineIntel-6-AA-4"),
    ] {
        let tree = hybrid_tree(dir, meteorlake);
        for level in ["1", "2"] {
            let args = ["--topdown", "--td-level", level];
            both_kinds_as_perf_does(&tree, cpuid, &shim, &args, true);
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Oracle: perf 7.2.13, `PERF_CPUID=GenuineIntel-6-97-2` (Alder Lake) and
/// `GenuineIntel-6-AA-4` (Meteor Lake) `perf stat -vv --topdown --td-level 3 -a true` under
/// the hybrid trees of [`hybrid_tree`]: counterhal opens the same events and prints the same
/// columns, the Core cores' first. perf reads Meteor Lake's `tma_cond_nt_mispredicts` and
/// `tma_cond_tk_mispredicts` retire latencies (`cpu_core@BR_MISP_RETIRED.COND_NTAKEN_COST@R`)
/// without opening them: without `--record-tpebs` an `R` event is the JSON's
/// `RetirementLatencyMean`, 0 where the event has none (`evsel__tpebs_read`,
/// tools/perf/util/intel-tpebs.c), as counterhal reads it. (The numbers are not compared:
/// several level-3 formulas read counts that the shim's clock makes differ run to run.)
/// Before, Meteor Lake's level 3 was refused (the `R` taken as a modifier), and Alder Lake's
/// lacked tma_l1_bound, tma_few_uops_instructions and tma_other_light_ops (the generator
/// made perf's names aliases of perfmon's metrics, which are in no `TopdownL3` group).
#[test]
fn topdown_level_3_on_a_hybrid_chip_opens_and_prints_what_perf_7_2_does() {
    if let Err(why) = perf_7_2() {
        skip!(Need::Tools, "{why}");
    }
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    let shim = build_shim("stat-topdown-level-3").unwrap();
    let dir = shim.parent().unwrap();
    for (meteorlake, cpuid) in [
        (false, "GenuineIntel-6-97-2"),
        (true, "GenuineIntel-6-AA-4"),
    ] {
        let tree = hybrid_tree(dir, meteorlake);
        let args = ["--topdown", "--td-level", "3"];
        both_kinds_as_perf_does(&tree, cpuid, &shim, &args, false);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Oracle: perf 7.2.13's `perf stat -M tma_code_l2_miss --metric-only` with `PERF_CPUID`
/// `GenuineIntel-6-AD-1` (Granite Rapids, perf's `graniterapids` table) under the Sapphire
/// Rapids tree (a core PMU of the same format) and the shim, which counts every event as
/// cpu-clock: `FRONTEND_RETIRED.L2_MISS:R` reads perf 7.2's JSON's `RetirementLatencyMean`,
/// 137.41 (linux-source-7.2 7.2.13-1, tools/perf/pmu-events/arch/x86/graniterapids/
/// frontend.json; `evsel__tpebs_read`, tools/perf/util/intel-tpebs.c), so the metric,
/// `100 * FRONTEND_RETIRED.L2_MISS * FRONTEND_RETIRED.L2_MISS:R / CPU_CLK_UNHALTED.THREAD`,
/// is about 13,741% with two clocks' counts; counterhal prints what perf does (within the
/// clocks' difference). Before, counterhal read the latency as 0 and printed 0.
#[test]
fn a_retire_latency_reads_perf_7_2s_mean_as_perf_does() {
    if let Err(why) = perf_7_2() {
        skip!(Need::Tools, "{why}");
    }
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    let shim = build_shim("stat-retire-latency").unwrap();
    let tree = machines().join("spr-2s");
    let cpuid = "GenuineIntel-6-AD-1";
    let args = ["-M", "tma_code_l2_miss", "--metric-only"];
    let (ok, _, theirs) = perf(&tree, cpuid, &shim, &args);
    assert!(ok, "perf: {theirs}");
    let (ok, _, mine) = ours(&tree, cpuid, &shim, &args);
    assert!(ok, "counterhal: {mine}");
    let (theirs, mine) = (columns(&theirs), columns(&mine));
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(mine.len(), 1, "{mine:?}");
    let (their_value, my_value) = (theirs[0].1, mine[0].1);
    assert!(their_value > 10_000.0, "perf's {theirs:?}");
    let close = (my_value - their_value).abs() < 0.1 * their_value;
    assert!(close, "{mine:?}, perf's {theirs:?}");
    std::fs::remove_dir_all(shim.parent().unwrap()).unwrap();
}
