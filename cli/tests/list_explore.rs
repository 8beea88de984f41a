//! `list` and `encode` as a user explores with them, perf 6.1 (`perf list`, `perf stat`) the
//! oracle where perf has the behaviour: the names `list` shows are the ones `stat` takes,
//! perf's software and tool events and aliases among them; presets without a mapping marked;
//! metrics short unless asked; `encode` going on past a bad name; `cpu/terms/` as the raw
//! event; `:p` as perf's `precise_ip`; model names people type.

use std::collections::BTreeSet;
use std::process::Command;

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use serde_json::Value;

/// `counterhal ARGS`, which must succeed, as text.
fn run_ok(args: &[&str]) -> String {
    let out = counterhal(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// The names of the text listing's sections `sections`, each alias (`A OR B`) apart.
fn listed_names(text: &str, sections: &[&str]) -> Vec<String> {
    let mut names = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            current = line.trim_end_matches(':').to_string();
            continue;
        }
        if !sections.contains(&current.as_str()) || line.trim().is_empty() {
            continue;
        }
        // `  * name OR alias   description`: the mark, then names joined by ` OR `.
        let rest = line[4..].trim_start();
        let mut words = rest.split_whitespace().peekable();
        while let Some(word) = words.next() {
            names.push(word.to_string());
            if words.peek() != Some(&"OR") {
                break;
            }
            words.next();
        }
    }
    names
}

/// The names `perf list sw` prints in its software and tool sections (`A OR B` apart).
fn perf_software_names() -> BTreeSet<String> {
    let out = Command::new("perf")
        .args(["list", "--no-desc", "sw"])
        .output()
        .expect("perf list");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter(|l| l.contains("[Software event]") || l.contains("[Tool event]"))
        .flat_map(|l| {
            let names = l.split('[').next().unwrap_or_default();
            names
                .split(" OR ")
                .map(|n| n.trim().to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Oracle: perf 6.1's `perf list sw`: every name of its software and tool sections (aliases
/// too) is in our listing's software and tool sections.
#[test]
fn list_shows_perfs_software_and_tool_names() {
    perf_or_skip!();
    let theirs = perf_software_names();
    assert!(
        theirs.contains("cs") && theirs.contains("duration_time"),
        "{theirs:?}"
    );
    let ours: BTreeSet<String> = listed_names(&run_ok(&["list"]), &["software", "tool"])
        .into_iter()
        .collect();
    let missing: Vec<&String> = theirs.difference(&ours).collect();
    assert!(missing.is_empty(), "perf lists, we do not: {missing:?}");
}

/// The breakpoint form as `list` shows it, written out with an address, lengths and accesses.
fn breakpoint_examples(form: &str) -> Vec<String> {
    assert_eq!(form, "mem:ADDR[/LEN][:rwx]");
    [
        "mem:0x401000",
        "mem:0x401000/4",
        "mem:0x401000:x",
        "mem:0x401000/8:rw",
        "mem:0x401000:w",
    ]
    .map(str::to_string)
    .to_vec()
}

/// Whether a `stat` run refused the name itself (as opposed to counting failing here: no PMU,
/// no permission).
fn refused_as_a_name(out: &std::process::Output) -> bool {
    let text = stderr(out);
    out.status.code() == Some(2)
        || text.contains("unknown event")
        || text.contains("event syntax error")
}

/// Oracle: perf 6.1's `perf stat -e NAME -- true`: every name `list` shows in its hardware,
/// software, tool and breakpoint sections (aliases too, the breakpoint form written out) is
/// taken by our `stat`, and by perf's.
#[test]
fn every_name_list_shows_is_taken_by_stat() {
    perf_or_skip!();
    let text = run_ok(&["list"]);
    let mut names = listed_names(&text, &["hardware", "software", "tool"]);
    let breakpoints = listed_names(&text, &["breakpoint"]);
    assert_eq!(breakpoints.len(), 1, "{text}");
    names.extend(breakpoint_examples(&breakpoints[0]));
    assert!(names.len() > 20, "{names:?}");
    let mut wrong = Vec::new();
    for name in &names {
        let ours = counterhal(&["stat", "-e", name, "--", "true"]);
        if refused_as_a_name(&ours) {
            wrong.push(format!("ours refuses {name}: {}", stderr(&ours)));
        }
        let theirs = perf(&["-e", name, "--", "true"]);
        if refused_as_a_name(&theirs) {
            wrong.push(format!("perf refuses {name}: {}", stderr(&theirs)));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The text listing marks a preset (or generalized event) `no mapping on MODEL` exactly where
/// `--json` gives it no encoding. Oracle: our own JSON, whose reasons come from the model's
/// mappings (the events crate's preset tests check those against PAPI's table).
#[test]
fn text_list_marks_presets_without_a_mapping() {
    let text = run_ok(&["list", "--cpu-model", "skl"]);
    let json: Vec<Value> =
        serde_json::from_str(&run_ok(&["list", "--json", "--cpu-model", "skl"])).unwrap();
    let mut unmapped = 0;
    for entry in &json {
        let section = entry["section"].as_str().unwrap();
        if !matches!(section, "hardware" | "cache" | "preset") {
            continue;
        }
        let name = entry["name"].as_str().unwrap();
        let line = text
            .lines()
            .find(|l| {
                l.split_whitespace()
                    .nth(usize::from(l.trim_start().starts_with('*')))
                    == Some(name)
            })
            .unwrap_or_else(|| panic!("{name} not in the text listing"));
        let marked = line.ends_with("(no mapping on skl)");
        assert_eq!(marked, entry["encoding"].is_null(), "{line}");
        unmapped += usize::from(marked);
    }
    assert!(unmapped > 5, "{unmapped} presets marked");
}

/// `list --metrics` shows each metric's name, groups and unit, the formula only with
/// `--details` (perf list's option): the formulas shown are `--json`'s expressions.
#[test]
fn metric_formulas_only_when_asked() {
    let short = run_ok(&["list", "--metrics", "--cpu-model", "skl", "IPC"]);
    let details = run_ok(&[
        "list",
        "--metrics",
        "--details",
        "--cpu-model",
        "skl",
        "IPC",
    ]);
    let json: Value = serde_json::from_str(&run_ok(&[
        "list",
        "--metrics",
        "--json",
        "--cpu-model",
        "skl",
        "IPC",
    ]))
    .unwrap();
    let metrics = json["metrics"].as_array().unwrap();
    assert!(!metrics.is_empty());
    for metric in metrics {
        let expression = metric["expression"].as_str().unwrap();
        assert!(!short.contains(expression), "{short}");
        assert!(
            details.lines().any(|l| l.trim() == expression),
            "{expression} not in {details}"
        );
        let name = metric["name"].as_str().unwrap();
        assert!(
            short
                .lines()
                .any(|l| l.split_whitespace().next() == Some(name))
        );
    }
    assert!(short.contains("--details"), "{short}");
}

/// `encode` prints every event it can and names each it cannot on standard error, with status
/// 2; JSON holds an object with the error for it.
#[test]
fn encode_goes_on_past_a_bad_name() {
    let out = counterhal(&[
        "encode",
        "--cpu-model",
        "skl",
        "task-clock",
        "bogus",
        "INST_RETIRED.ANY_P",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.lines().any(|l| l.starts_with("task-clock ")), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("INST_RETIRED.ANY_P ")),
        "{text}"
    );
    assert!(
        stderr(&out).contains("bogus: unknown event"),
        "{}",
        stderr(&out)
    );
    let out = counterhal(&[
        "encode",
        "--json",
        "--cpu-model",
        "skl",
        "bogus",
        "task-clock",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let array: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(array.len(), 2);
    assert!(
        array[0]["error"]
            .as_str()
            .unwrap()
            .contains("unknown event")
    );
    assert_eq!(array[1]["event"], "task-clock");
    let out = counterhal(&["encode", "--cpu-model", "skl", "task-clock"]);
    assert!(out.status.success());
}

/// The encoding words of `encode --cpu-model MODEL NAME`'s first line, after the name.
fn encoding_words(model: &str, name: &str) -> String {
    let text = run_ok(&["encode", "--cpu-model", model, name]);
    let line = text.lines().next().unwrap();
    let (_, words) = line.split_once("]: ").unwrap();
    words.to_string()
}

/// perf's `cpu` PMU is the raw event's: `cpu/event=0xc0,umask=0x0/u` is `r00c0:u`, word for
/// word, on the skl model (through the machine's `cpu` PMU where it has one, else from the
/// model's event format). Oracle: perf's own equivalence of the two spellings, as `perf stat
/// -vv` prints their attrs (type, config, exclude bits), where perf has a `cpu` PMU.
#[test]
fn cpu_pmu_terms_encode_as_the_raw_event() {
    for (terms, raw) in [
        ("cpu/event=0xc0,umask=0x0/u", "r00c0:u"),
        ("cpu/event=0xc4,umask=0x4/", "r04c4"),
        ("cpu/event=0x3c,umask=0x0,cmask=1,edge/k", "r104003c:k"),
    ] {
        assert_eq!(
            encoding_words("skl", terms),
            encoding_words("skl", raw),
            "{terms}"
        );
    }
    if !has_core_pmu() || !perf_available() {
        return;
    }
    let attr = |name: &str| -> Vec<String> {
        let out = Command::new("perf")
            .args(["stat", "-vv", "-e", name, "--", "true"])
            .output()
            .expect("perf");
        stderr(&out)
            .lines()
            .filter(|l| {
                ["type", "config", "exclude_"]
                    .iter()
                    .any(|k| l.trim_start().starts_with(k))
            })
            .map(str::to_string)
            .collect()
    };
    assert_eq!(attr("cpu/event=0xc0,umask=0x0/u"), attr("r00c0:u"));
}

/// Oracle: perf 6.1's `perf stat -vv`, which prints `precise_ip N` for `:p`, `:pp`, `:ppp`:
/// `encode` shows the same `precise_ip=N`.
#[test]
fn precise_modifiers_show_perfs_precise_ip() {
    perf_or_skip!();
    for modifier in ["p", "pp", "ppp"] {
        let name = format!("task-clock:{modifier}");
        let out = Command::new("perf")
            .args(["stat", "-vv", "-e", &name, "--", "true"])
            .output()
            .expect("perf");
        let theirs = stderr(&out)
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("precise_ip")
                    .map(|v| v.trim().to_string())
            })
            .unwrap_or_else(|| panic!("perf -vv shows no precise_ip for {name}"));
        for event in [name.clone(), format!("INST_RETIRED.ANY_P:{modifier}")] {
            let text = run_ok(&["encode", "--cpu-model", "skl", &event]);
            assert!(
                text.contains(&format!("precise_ip={theirs} ")),
                "{event}: {text}"
            );
        }
    }
    let text = run_ok(&["encode", "--cpu-model", "skl", "INST_RETIRED.ANY_P"]);
    assert!(!text.contains("precise_ip"), "{text}");
}

/// Names people type for a model resolve (`--cpu-model zen4` is `amd64_fam19h_zen4`; the
/// events crate's `model_aliases` test checks perf's directory names against the kernel's
/// mapfile), and `list --models` shows them.
#[test]
fn model_names_people_type_resolve() {
    for (typed, id) in [
        ("zen4", "amd64_fam19h_zen4"),
        ("zen5", "amd64_fam1ah_zen5"),
        ("zen3", "amd64_fam19h_zen3"),
        ("sapphirerapids", "spr"),
        ("icelake-server", "icx"),
        ("skylake", "skl"),
        ("icelakex", "icx"),
    ] {
        let text = run_ok(&["encode", "--cpu-model", typed, "cycles"]);
        assert!(text.contains(&format!(", {id}]")), "{typed}: {text}");
    }
    let models = run_ok(&["list", "--models"]);
    assert!(models.contains("named amdzen4, zen4, znver4"), "{models}");
}

/// An unknown event's "did you mean" offers event names, not model ids (`sklx` is one edit
/// from the model `skx`).
#[test]
fn did_you_mean_offers_event_names() {
    let out = counterhal(&["encode", "--cpu-model", "skl", "sklx", "INST_RETIRD"]);
    let text = stderr(&out);
    assert!(!text.contains("skx"), "{text}");
    assert!(text.contains("did you mean: INST_RETIRED"), "{text}");
}

/// The tool events are listed for every backend (`stat` fills them in itself); the breakpoint
/// form only for the Linux backend, whose `stat` takes it.
#[test]
fn breakpoints_are_listed_for_the_linux_backend_only() {
    let msr = run_ok(&["list", "--backend", "msr", "--cpu-model", "skl", "_time"]);
    assert!(msr.contains("\ntool:\n"), "{msr}");
    assert!(!msr.contains("breakpoint:"), "{msr}");
    let msr = run_ok(&["list", "--backend", "msr", "--cpu-model", "skl", "mem:"]);
    assert!(!msr.contains("mem:ADDR"), "{msr}");
    if linux_usable() {
        let linux = run_ok(&["list", "--backend", "linux", "mem:"]);
        assert!(
            linux.contains("\nbreakpoint:\n  * mem:ADDR[/LEN][:rwx] "),
            "{linux}"
        );
    }
}
