//! `counterhal_event_info_t.description` from C (`tests/c/descriptions.c`) with
//! `COUNTERHAL_DESCRIPTIONS` naming the kernel's perf JSON for this machine's CPU model.
//! Oracle: the JSON's BriefDescription (Debian's linux-source-6.12,
//! tools/perf/pmu-events/arch/x86), read with serde_json.

use std::path::Path;
use std::process::Command;

use crate::common::c_program;

use counterhal_conformance::fixtures;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The program's rows (section, name, description) and the model it names, run with the
/// description source `source` (none: the variable unset).
fn listing(source: Option<&Path>) -> (Vec<(String, String, String)>, String) {
    let mut command = Command::new(c_program("descriptions"));
    command.env_remove("COUNTERHAL_DESCRIPTIONS");
    if let Some(source) = source {
        command.env("COUNTERHAL_DESCRIPTIONS", source);
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}");
    let mut rows = Vec::new();
    let mut model = String::new();
    for line in stdout.lines() {
        if let Some(m) = line.strip_prefix("model ") {
            model = m.to_string();
            continue;
        }
        let fields: Vec<&str> = line.splitn(3, '\t').collect();
        rows.push((
            fields[0].to_string(),
            fields[1].to_string(),
            fields.get(2).unwrap_or(&"").to_string(),
        ));
    }
    (rows, model)
}

/// Every unit mask the C listing shows with a description has the JSON's BriefDescription
/// for its name (or, listed under another spelling, one of the JSON's); without the variable none has one (the shipped data holds none).
#[test]
fn unit_masks_carry_the_kernels_descriptions() {
    let (plain, model) = listing(None);
    if model == "none" {
        skip!(Need::System, "no CPU model is detected here");
    }
    assert!(
        plain
            .iter()
            .filter(|r| r.0 == "umask")
            .all(|r| r.2.is_empty()),
        "descriptions without a source"
    );
    let Some(dir) = counterhal_events::model_aliases::aliases_of(&model)
        .first()
        .copied()
    else {
        skip!(
            Need::System,
            "the kernel's perf JSON has no directory for CPU model {model}"
        );
    };
    let source = match fixtures::kernel_source() {
        Ok(tree) => tree.join("tools/perf/pmu-events/arch/x86").join(dir),
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let mut briefs = std::collections::HashMap::new();
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        let Ok(value) =
            serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&path).unwrap())
        else {
            continue;
        };
        for event in value.as_array().into_iter().flatten() {
            if let (Some(name), Some(brief), None) = (
                event["EventName"].as_str(),
                event["BriefDescription"].as_str(),
                event.get("Unit"),
            ) {
                briefs.insert(name.to_ascii_uppercase(), brief.trim().to_string());
            }
        }
    }
    let (rows, _) = listing(Some(&source));
    // A unit mask listed under the JSON's name has that name's text; one listed under another
    // spelling (libpfm4's names of AMD models, whose perf names are aliases) has one of the
    // JSON's texts, never one made up.
    let texts: std::collections::HashSet<&String> = briefs.values().collect();
    let mut described = 0;
    for (section, name, description) in &rows {
        if section != "umask" || description.is_empty() {
            continue;
        }
        match briefs.get(&name.to_ascii_uppercase()) {
            Some(brief) => assert_eq!(description, brief, "{name}"),
            None => assert!(texts.contains(description), "{name}: {description}"),
        }
        described += 1;
    }
    assert!(
        described > 20,
        "{described} unit masks described on {model}"
    );
}

/// A variable naming no directory makes opening fail with a message naming it.
#[test]
fn a_bad_source_fails_the_open_with_its_name() {
    let (_, model) = listing(None);
    if model == "none" {
        skip!(Need::System, "no CPU model is detected here");
    }
    let out = Command::new(c_program("descriptions"))
        .env("COUNTERHAL_DESCRIPTIONS", "/nonexistent/perf-json")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout.contains("descriptions /nonexistent/perf-json: not a directory"),
        "{stdout}"
    );
}
