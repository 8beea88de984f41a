//! Cross-check against libpfm4: every shipped event (and each of its unit masks) of the CPU
//! models libpfm4 also knows is encoded by libpfm4 (forcing the PMU, LIBPFM_ENCODE_INACTIVE=1,
//! pfm_get_os_event_encoding with PFM_OS_NONE) and by us; the EVTSEL values must agree with
//! the interrupt bit 20 masked (libpfm4 sets it, a counting EVTSEL does not).
//!
//! Needs a C compiler and libpfm4 (Debian `libpfm4-dev`); without them the test prints why it
//! skipped.

mod common;

use counterhal_conformance::skip::Need;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use counterhal_events::{Database, UnitMaskClass};
use counterhal_hal::Encoding;

const PROGRAM: &str = r#"
#include <perfmon/pfmlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    char line[1024];
    if (pfm_initialize() != PFM_SUCCESS) { printf("INIT-FAILED\n"); return 1; }
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        pfm_pmu_encode_arg_t arg;
        memset(&arg, 0, sizeof arg);
        arg.size = sizeof arg;
        int ret = pfm_get_os_event_encoding(line, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg);
        if (ret != PFM_SUCCESS) { printf("ERR %d\n", ret); continue; }
        printf("OK 0x%llx\n", (unsigned long long)arg.codes[0]);
        free(arg.codes);
    }
    return 0;
}
"#;

/// Our model id -> the libpfm4 PMU its events are compared under. Every shipped model whose
/// events carry libpfm4's names is here; `p5` and `p6` are not (libpfm4 has no P5 table and
/// builds its P6 tables only for 32-bit x86).
const PMUS: &[(&str, &str)] = &[
    ("skl", "skl"),
    ("amd64_k7", "amd64_k7"),
    ("k8", "amd64_k8_revg"),
    ("amd64_fam17h_zen1", "amd64_fam17h_zen1"),
    ("amd64_fam17h_zen2", "amd64_fam17h_zen2"),
    ("amd64_fam19h_zen3", "amd64_fam19h_zen3"),
    ("amd64_fam19h_zen4", "amd64_fam19h_zen4"),
    // libpfm4's `ix86arch` has no events unless CPUID reports architectural perfmon (not on
    // AMD hosts), so the architectural events are compared under Skylake's table, where the
    // names are the same, except for the three renamed below.
    ("intel-arch", "skl"),
];

/// Events whose libpfm4 name differs in the PMU they are compared under:
/// (model id, our name, libpfm4 string).
const RENAMED: &[(&str, &str, &str)] = &[
    (
        "intel-arch",
        "LLC_REFERENCES",
        "skl::LONGEST_LAT_CACHE:REFERENCE",
    ),
    ("intel-arch", "LLC_MISSES", "skl::LONGEST_LAT_CACHE:MISS"),
    // Skylake has no top-down slots event; Ice Lake is the first core with it.
    ("intel-arch", "TOPDOWN_SLOTS", "icl::TOPDOWN:SLOTS_P"),
];

/// Shipped models libpfm4 has no table for (on x86-64 builds).
const NOT_IN_LIBPFM4: &[&str] = &["p5", "p6"];

fn build_helper() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("counterhal-libpfm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let source = dir.join("encode.c");
    std::fs::write(&source, PROGRAM)
        .map_err(|e| format!("cannot write {}: {e}", source.display()))?;
    let binary = dir.join("encode");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let output = Command::new(&cc)
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .arg("-lpfm")
        .output()
        .map_err(|e| format!("cannot run the C compiler `{cc}`: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`{cc} ... -lpfm` failed (is libpfm4-dev installed?): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(binary)
}

fn run_libpfm(binary: &PathBuf, lines: &[String]) -> Result<Vec<String>, String> {
    let mut child = Command::new(binary)
        .env("LIBPFM_ENCODE_INACTIVE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run the libpfm4 helper: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let input = lines.join("\n") + "\n";
    stdin
        .write_all(input.as_bytes())
        .map_err(|e| e.to_string())?;
    drop(stdin);
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    if text.starts_with("INIT-FAILED") {
        return Err("pfm_initialize failed".to_string());
    }
    Ok(text.lines().map(str::to_string).collect())
}

#[test]
fn evtsel_matches_libpfm4() {
    let binary = match build_helper() {
        Ok(binary) => binary,
        Err(why) => counterhal_conformance::skip!(
            Need::Tools,
            "libpfm4 cross-check not run (libpfm4-dev and gcc build it): {why}"
        ),
    };
    let database = Database::shipped().expect("shipped database loads");
    for model in database.models() {
        assert!(
            PMUS.iter().any(|(id, _)| *id == model.id)
                || NOT_IN_LIBPFM4.contains(&model.id.as_str()),
            "shipped model {} is neither cross-checked against libpfm4 nor listed as absent there",
            model.id
        );
    }
    // (our string, libpfm4 string, our EVTSEL)
    let mut cases: Vec<(String, String, u64)> = Vec::new();
    for (model_id, pmu) in PMUS {
        let model = database.model(model_id).expect("model exists");
        for event in model.events() {
            let mut names = vec![event.name.clone()];
            for mask in event.unit_masks() {
                if mask.class == UnitMaskClass::Plain {
                    names.push(format!("{}:{}", event.name, mask.name));
                }
            }
            for name in names {
                let Ok(resolved) = database.resolve(Some(model_id), &name, &common::X86) else {
                    continue;
                };
                let Encoding::Evtsel(evtsel) = &resolved.terms[0].request.encoding else {
                    continue;
                };
                let theirs = RENAMED
                    .iter()
                    .find(|(m, ours, _)| m == model_id && *ours == name)
                    .map_or_else(|| format!("{pmu}::{name}"), |(_, _, t)| t.to_string());
                cases.push((
                    format!("{model_id}: {name}"),
                    theirs,
                    evtsel.register_value(),
                ));
            }
        }
    }
    let lines: Vec<String> = cases.iter().map(|c| c.1.clone()).collect();
    let answers = match run_libpfm(&binary, &lines) {
        Ok(answers) => answers,
        Err(why) => counterhal_conformance::skip!(
            Need::Tools,
            "libpfm4 cross-check not run (libpfm4-dev and gcc build it): {why}"
        ),
    };
    assert_eq!(answers.len(), cases.len(), "one answer per query");
    let mut compared = 0;
    let mut unknown = Vec::new();
    let mut mismatches = Vec::new();
    for ((ours, theirs, evtsel), answer) in cases.iter().zip(&answers) {
        match answer
            .strip_prefix("OK 0x")
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        {
            Some(code) => {
                compared += 1;
                if code & !(1 << 20) != *evtsel {
                    mismatches.push(format!(
                        "{ours}: ours {evtsel:#x}, libpfm4 {code:#x} ({theirs})"
                    ));
                }
            }
            None => unknown.push(format!("{theirs} ({answer})")),
        }
    }
    println!(
        "libpfm4 cross-check: compared {compared} encodings over {} CPU models",
        PMUS.len()
    );
    assert!(
        unknown.is_empty(),
        "{} shipped events are unknown to libpfm4 under the names we give them:\n{}",
        unknown.len(),
        unknown.join("\n")
    );
    assert!(
        mismatches.is_empty(),
        "{} EVTSEL mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(
        compared > 0,
        "nothing was compared; libpfm4 answered: {answers:?}"
    );
}
