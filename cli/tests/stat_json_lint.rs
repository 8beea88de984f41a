//! `stat -j` in every layout counterhal prints, read by perf 7.2's own linter: the oracle is
//! perf 7.2.13's tools/perf/tests/shell/lib/perf_json_output_lint.py, as Debian sid's
//! `linux-perf` 7.2.13-1 installs it (`/usr/lib/perf-core/tests/shell/lib`) in the
//! current-releases lab's root (`scripts/current-lab`; `COUNTERHAL_CURRENT_LAB`, by default
//! /var/cache/counterhal-lab), run by this machine's `python3`. Each layout gets the flag perf
//! 7.2's stat+json_output.sh gives the linter for it; a layout that script does not try (`-G`,
//! `-I` with `-A`) gets none, which checks each key and value but not how many there are (perf
//! 7.2's own output fails the counts there: a `cgroup` key is one more, `-I -A` two). `-r` is
//! not linted: its `variance` key, which perf 7.2 prints too, is one the linter does not know;
//! nor `--metric-only` with `--per-socket`..., whose `counters` key (perf 7.2's too) is one
//! more than `--metric-only`'s count and unknown without it.
//! And perf 7.2.13 itself (the root's, run by its loader) prints the same keys for the layouts
//! that add up CPUs (`counters`, not perf 6.1's `aggregate-number`).

use std::path::PathBuf;
use std::process::Command;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use serde_json::Value;

use crate::common::*;

/// perf 7.2's linter in the lab's sid root, or why there is none.
fn linter() -> Result<PathBuf, String> {
    let lab = std::env::var_os("COUNTERHAL_CURRENT_LAB")
        .map_or_else(|| PathBuf::from("/var/cache/counterhal-lab"), PathBuf::from);
    let script = lab.join("sid/usr/lib/perf-core/tests/shell/lib/perf_json_output_lint.py");
    if !script.is_file() {
        return Err(format!(
            "no {} (scripts/current-lab makes the Debian sid root with linux-perf)",
            script.display()
        ));
    }
    let python = Command::new("python3").arg("--version").output();
    if !python.is_ok_and(|o| o.status.success()) {
        return Err("no python3 to run perf's linter".to_string());
    }
    Ok(script)
}

/// A temporary file's path for one layout's output.
fn scratch(name: &str) -> PathBuf {
    counterhal_conformance::fixtures::temp_dir().join(format!(
        "counterhal-json-lint-{}-{name}",
        std::process::id()
    ))
}

/// `stat -j -o FILE ARGS` by `program` (its words before `stat`): the lines it wrote.
fn json_of(program: Command, name: &str, args: &[&str]) -> String {
    let file = scratch(name);
    let mut program = program;
    let out = program
        .arg("stat")
        .args(["-j", "-o"])
        .arg(&file)
        .args(args)
        .output()
        .expect("run stat");
    assert!(
        out.status.success(),
        "stat -j {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    std::fs::remove_file(&file).ok();
    text
}

/// Whether perf's linter, given `flag`, accepts `text`: `Err` with what it said.
fn lint(script: &PathBuf, flag: Option<&str>, text: &str) -> Result<(), String> {
    let file = scratch("lint-input");
    std::fs::write(&file, text).expect("write the output");
    let out = Command::new("python3")
        .arg(script)
        .args(flag)
        .arg("--file")
        .arg(&file)
        .output()
        .expect("run python3");
    std::fs::remove_file(&file).ok();
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

/// The layouts: a name, the linter's flag, stat's arguments, and whether they count CPUs.
fn layouts(pid: &str) -> Vec<(&'static str, Option<&'static str>, Vec<String>, bool)> {
    let words = |a: &[&str]| a.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    vec![
        ("plain", Some("--no-args"), words(&["true"]), false),
        (
            "event",
            Some("--event"),
            words(&["-e", "cpu-clock", "true"]),
            false,
        ),
        (
            "interval",
            Some("--interval"),
            words(&["-I", "1000", "true"]),
            false,
        ),
        (
            "per-thread",
            Some("--per-thread"),
            words(&["--per-thread", "-p", pid, "true"]),
            false,
        ),
        (
            "metric-only",
            Some("--metric-only"),
            words(&["--metric-only", "-M", "page_faults_per_second", "true"]),
            false,
        ),
        (
            "metric-only-interval",
            Some("--metric-only"),
            words(&[
                "--metric-only",
                "-M",
                "page_faults_per_second",
                "-I",
                "100",
                "--",
                "sleep",
                "0.25",
            ]),
            false,
        ),
        (
            "metrics",
            Some("--event"),
            words(&["-M", "page_faults_per_second", "true"]),
            false,
        ),
        (
            "system-wide",
            Some("--system-wide"),
            words(&["-a", "true"]),
            true,
        ),
        (
            "no-aggr",
            Some("--system-wide-no-aggr"),
            words(&["-A", "-a", "--no-merge", "true"]),
            true,
        ),
        (
            "no-aggr-interval",
            None,
            words(&["-A", "-a", "-I", "100", "--", "sleep", "0.25"]),
            true,
        ),
        (
            "per-core",
            Some("--per-core"),
            words(&["--per-core", "-a", "true"]),
            true,
        ),
        (
            "per-die",
            Some("--per-die"),
            words(&["--per-die", "-a", "true"]),
            true,
        ),
        (
            "per-node",
            Some("--per-node"),
            words(&["--per-node", "-a", "true"]),
            true,
        ),
        (
            "per-socket",
            Some("--per-socket"),
            words(&["--per-socket", "-a", "true"]),
            true,
        ),
        (
            "per-cache",
            Some("--per-cache"),
            words(&["--per-cache", "-a", "true"]),
            true,
        ),
        (
            "per-cluster",
            Some("--per-cluster"),
            words(&["--per-cluster", "-a", "true"]),
            true,
        ),
        (
            "cgroup",
            None,
            words(&["-a", "-e", "cpu-clock,page-faults", "-G", "/", "true"]),
            true,
        ),
    ]
}

/// Oracle: perf 7.2.13's perf_json_output_lint.py (module doc) accepts every `-j` layout.
/// Before: `--per-core`, `--per-die`, `--per-node` and `--per-socket` were refused
/// ("Unexpected key: key=aggregate-number", perf 6.1's key).
#[test]
fn perf_7_2_s_linter_accepts_every_json_layout() {
    linux_or_skip!();
    let script = match linter() {
        Ok(script) => script,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let all_cpus = may_count_cpus();
    let mut target = Command::new("sleep").arg("30").spawn().expect("run sleep");
    let pid = target.id().to_string();
    let mut refused = Vec::new();
    let mut linted = 0;
    for (name, flag, args, cpus) in layouts(&pid) {
        if cpus && !all_cpus {
            continue;
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let text = json_of(Command::new(bin()), name, &args);
        assert!(!text.trim().is_empty(), "{name}: no output");
        if let Err(said) = lint(&script, flag, &text) {
            refused.push(format!("{name} ({flag:?}): {said}"));
        }
        linted += 1;
    }
    target.kill().ok();
    target.wait().ok();
    assert!(refused.is_empty(), "{}", refused.join("\n"));
    if !all_cpus {
        skip!(
            Need::Privilege,
            "{linted} layouts linted; those counting every CPU take root or \
             perf_event_paranoid <= 0"
        );
    }
}

/// The keys of each line of `-j` output, metric keys left out (perf 7.2 prints none for an
/// event given with `-e`, counterhal perf 6.1's `metric-value` and `metric-unit`).
fn keys(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"));
            v.as_object()
                .expect("an object")
                .keys()
                .filter(|k| !k.starts_with("metric-"))
                .cloned()
                .collect()
        })
        .collect()
}

/// Oracle: perf 7.2.13 (the lab's sid root, module doc) on this machine: the layouts that add
/// up CPUs carry the same keys (`"core" : "S0-D0-C0", "counters" : 1`), in the same order.
#[test]
fn layouts_adding_up_cpus_have_perf_7_2_s_keys() {
    linux_or_skip!();
    let perf = match perf_7_2() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    if !may_count_cpus() {
        skip!(
            Need::Privilege,
            "counting every CPU takes root or perf_event_paranoid <= 0"
        );
    }
    for mode in [
        "--per-core",
        "--per-die",
        "--per-node",
        "--per-socket",
        "--per-cache",
    ] {
        let args = [mode, "-a", "-e", "cpu-clock", "true"];
        let ours = keys(&json_of(Command::new(bin()), "ours", &args));
        let mut theirs = Command::new(perf.get_program());
        theirs.args(perf.get_args());
        let theirs = keys(&json_of(theirs, "perf", &args));
        assert!(!ours.is_empty(), "{mode}");
        assert_eq!(ours[0], theirs[0], "{mode}");
        assert!(ours[0].iter().any(|k| k == "counters"), "{mode}: {ours:?}");
    }
}
