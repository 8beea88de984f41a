//! `--descriptions DIR` and `COUNTERHAL_DESCRIPTIONS`: `list` shows the descriptions of the
//! kernel's perf JSON and its PATTERN finds an event by a word of one, as `perf list PATTERN`
//! does. Oracle: the JSON (Debian's linux-source-6.12, tools/perf/pmu-events/arch/x86/skylake),
//! read with serde_json.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use counterhal_conformance::fixtures;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use serde_json::Value;

/// The BriefDescription of `name` in the skylake JSON, read with serde_json.
fn brief(x86: &Path, name: &str) -> String {
    for entry in std::fs::read_dir(x86.join("skylake")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        for event in value.as_array().into_iter().flatten() {
            if event["EventName"] == name {
                return event["BriefDescription"].as_str().unwrap().to_string();
            }
        }
    }
    panic!("{name} is not in the skylake JSON")
}

/// Oracle: the skylake JSON. With `--descriptions` (or the variable) `list` shows a unit
/// mask's BriefDescription, in text and JSON, and `list WORD` finds it by a word only its
/// description holds; without, it does not. `encode` shows it under the encoding.
#[test]
fn list_shows_and_matches_the_kernels_descriptions() {
    let x86 = match fixtures::kernel_source() {
        Ok(tree) => tree.join("tools/perf/pmu-events/arch/x86"),
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let dir = x86.to_str().unwrap();
    let name = "ARITH.DIVIDER_ACTIVE";
    let description = brief(&x86, name);
    assert!(description.contains("square root"), "{description}");
    let word = "square root";
    let without = counterhal(&["list", "--cpu-model", "skl", word]);
    assert!(!stdout(&without).contains(name), "{}", stdout(&without));
    let with = counterhal(&["list", "--cpu-model", "skl", "--descriptions", dir, word]);
    assert!(with.status.success(), "{}", stderr(&with));
    let line = stdout(&with)
        .lines()
        .find(|l| l.trim_start().starts_with(name))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{name} not found by `{word}`: {}", stdout(&with)));
    assert!(line.ends_with(&format!("  {description}")), "{line}");
    let json = Command::new(bin())
        .args(["list", "--json", "--cpu-model", "skl", "ARITH"])
        .env("COUNTERHAL_DESCRIPTIONS", dir)
        .output()
        .unwrap();
    let array: Vec<Value> = serde_json::from_slice(&json.stdout).unwrap();
    let mask = array
        .iter()
        .flat_map(|e| e["umasks"].as_array().into_iter().flatten())
        .find(|m| m["name"] == name)
        .unwrap();
    assert_eq!(mask["description"], description.as_str());
    // encode says it too, modifiers and all.
    for typed in [name, "ARITH.DIVIDER_ACTIVE:u", "arith.divider_active"] {
        let text = stdout(&counterhal(&[
            "encode",
            "--cpu-model",
            "skl",
            "--descriptions",
            dir,
            typed,
        ]));
        assert!(
            text.contains(&format!("\n  description: {description}\n")),
            "{typed}: {text}"
        );
    }
    let plain = stdout(&counterhal(&["encode", "--cpu-model", "skl", name]));
    assert!(!plain.contains("description"), "{plain}");
}

/// A bad source is a usage error (status 2) naming the directory and what would do, never a
/// panic; from the variable as from the option.
#[test]
fn a_bad_source_is_a_clear_error() {
    let out = counterhal(&[
        "list",
        "--cpu-model",
        "skl",
        "--descriptions",
        "/nonexistent/x86",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    assert!(
        text.contains("descriptions /nonexistent/x86: not a directory"),
        "{text}"
    );
    assert!(text.contains("tools/perf/pmu-events/arch/x86"), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    let empty = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-empty-desc-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let out = Command::new(bin())
        .args(["encode", "--cpu-model", "skl", "cycles"])
        .env("COUNTERHAL_DESCRIPTIONS", &empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no description files for CPU model `skl`"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(empty).unwrap();
}
