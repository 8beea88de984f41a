//! `counterhal list` in perf's own layouts, as perf 7.2's shell tests read them
//! (tools/perf/tests/shell/stat_all_metricgroups.sh, stat_all_metrics.sh, stat_all_pmu.sh:
//! `--raw-dump WORD`; list.sh: `-j -o FILE`), side by side with perf 7.2.13 (the lab's sid
//! root) and perf 6.1 (Debian 12's) where they run here.

use std::collections::BTreeSet;
use std::process::Command;

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// A raw dump's text and its names.
fn names_of(out: &std::process::Output) -> (String, BTreeSet<String>) {
    let text = stdout(out);
    let names = text.split_whitespace().map(str::to_string).collect();
    (text, names)
}

/// perf's `list --raw-dump WORD` (`PERF_CPUID` set where given).
fn raw_dump(mut perf: Command, word: &str, cpuid: Option<&str>) -> (String, BTreeSet<String>) {
    if let Some(cpuid) = cpuid {
        perf.env("PERF_CPUID", cpuid);
    }
    names_of(
        &perf
            .args(["list", "--raw-dump", word])
            .output()
            .expect("run perf"),
    )
}

/// Ours: `counterhal list --raw-dump WORD [--cpu-model MODEL]`.
fn ours_dump(word: &str, model: Option<&str>) -> (String, BTreeSet<String>) {
    let mut command = Command::new(bin());
    command.args(["list", "--raw-dump", word]);
    if let Some(model) = model {
        command.args(["--cpu-model", model]);
    }
    names_of(&command.output().expect("run counterhal"))
}

/// Whether `text` is perf's raw dump: names, each followed by one space, no newline.
fn dump_shaped(text: &str) -> bool {
    text.is_empty()
        || (text.ends_with(' ')
            && !text.contains('\n')
            && text.split(' ').rev().skip(1).all(|name| !name.is_empty()))
}

/// Oracle: perf 7.2.13 (Debian sid's, the lab's sid root), `perf list --raw-dump WORD` on
/// this machine for pmu, sw, hw and cache (each of our names one perf lists too: perf 7.2's
/// tool PMU has more, `num_cpus` and its kind, which counterhal does not count), and under
/// `PERF_CPUID` of Skylake-X, Sapphire Rapids and Zen 3 against `--cpu-model` for metric
/// groups (most of perf's groups ours too; the two event databases are not one release).
/// Both print names each followed by a space and no newline.
#[test]
fn raw_dumps_list_what_perf_7_2_lists() {
    let perf = match perf_7_2() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let perf = || {
        let mut command = Command::new(perf.get_program());
        command.args(perf.get_args());
        command
    };
    for word in ["pmu", "sw", "hw", "cache"] {
        let (text, ours) = ours_dump(word, None);
        let (perf_text, theirs) = raw_dump(perf(), word, None);
        assert!(dump_shaped(&text), "{word}: {text:?}");
        assert!(dump_shaped(&perf_text), "perf's {word}: {perf_text:?}");
        let only_ours: Vec<_> = ours.difference(&theirs).collect();
        assert!(only_ours.is_empty(), "{word}: ours alone: {only_ours:?}");
    }
    for (cpuid, model) in [
        ("GenuineIntel-6-55-4", "skx"),
        ("GenuineIntel-6-8F-8", "spr"),
        ("AuthenticAMD-25-1-1", "amd64_fam19h_zen3"),
    ] {
        let (text, ours) = ours_dump("metricgroups", Some(model));
        let (perf_text, theirs) = raw_dump(perf(), "metricgroups", Some(cpuid));
        assert!(dump_shaped(&text) && dump_shaped(&perf_text), "{model}");
        let shared = ours.intersection(&theirs).count();
        assert!(
            shared * 2 > theirs.len(),
            "{model}: {shared} of perf's {} groups: ours {ours:?}",
            theirs.len()
        );
    }
}

/// Oracle: perf 7.2.13's tools/perf/tests/shell/stat_all_pmu.sh and
/// stat_all_metricgroups.sh, their loops run here with counterhal in perf's place: each
/// name of `--raw-dump pmu` given to `stat -e NAME true` is counted (exit 0, the name in the
/// output) or `<not supported>`; each of `--raw-dump metricgroups` is a group `stat -M`
/// takes (never "unknown": exit 0, or 1 where its events cannot count here), and there is at
/// least one, so the scripts' loops run.
#[test]
fn raw_dump_names_are_what_stat_takes() {
    linux_or_skip!();
    let (_, pmu) = ours_dump("pmu", None);
    assert!(!pmu.is_empty(), "the tool events at least");
    for name in &pmu {
        let o = ours(&["-e", name, "true"]);
        let said = stderr(&o);
        assert!(said.contains(name.as_str()), "{name}: {said}");
        assert!(
            o.status.code() == Some(0) || said.contains("<not supported>"),
            "{name}: {said}"
        );
    }
    let (_, groups) = ours_dump("metricgroups", None);
    assert!(!groups.is_empty(), "the portable metrics' groups at least");
    for group in groups.iter().take(8) {
        let o = ours(&["-M", group, "-a", "sleep", "0.01"]);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{group}: {}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("unknown metric"), "{group}");
    }
}

/// The keys perf 7.2's builtin-list.c writes (`json_print_event`, `json_print_metric`).
const PERF_KEYS: [&str; 14] = [
    "Unit",
    "Topic",
    "EventName",
    "EventAlias",
    "ScaleUnit",
    "EventType",
    "Deprecated",
    "BriefDescription",
    "PublicDescription",
    "Encoding",
    "MetricGroup",
    "MetricName",
    "MetricExpr",
    "MetricThreshold",
];

/// Oracle: perf 7.2.13's tools/perf/tests/shell/list.sh (`perf list -j -o FILE`, valid JSON)
/// and builtin-list.c's keys; and perf 7.2's own `list -j` here: the same software events
/// (`Unit` software, the aliases `cs`, `faults`, `migrations` as events of their own).
#[test]
fn list_j_is_perf_s_json() {
    let file = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-list-j-{}", std::process::id()));
    let o = counterhal(&["list", "-j", "-o", file.to_str().expect("a UTF-8 path")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&file).expect("-o's file");
    std::fs::remove_file(&file).ok();
    let ours: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let ours = ours.as_array().expect("an array");
    assert!(!ours.is_empty());
    for object in ours {
        let object = object.as_object().expect("objects");
        for (key, value) in object {
            assert!(PERF_KEYS.contains(&key.as_str()), "{key} in {object:?}");
            assert!(value.is_string(), "{key}: {value}");
        }
        assert!(
            object.contains_key("EventName") || object.contains_key("MetricName"),
            "{object:?}"
        );
    }
    let software = |list: &[serde_json::Value]| -> BTreeSet<String> {
        list.iter()
            .filter(|o| o["Unit"] == "software")
            .filter_map(|o| Some(o["EventName"].as_str()?.to_string()))
            .collect()
    };
    let mut perf = match perf_7_2() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let theirs = perf.args(["list", "-j"]).output().expect("run perf 7.2");
    let theirs: serde_json::Value = serde_json::from_slice(&theirs.stdout).expect("perf's JSON");
    let theirs = theirs.as_array().expect("perf's array");
    assert_eq!(software(ours), software(theirs), "ours, perf 7.2's");
}
