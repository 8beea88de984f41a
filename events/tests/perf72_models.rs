//! Every CPU perf 7.2 knows is detected as the model perf names, and a CPU no row covers is
//! refused. Oracle: Linux 7.2's perf mapfiles (`tools/perf/pmu-events/arch/x86/mapfile.csv` and
//! `arch/arm64/mapfile.csv`), from Debian sid's `linux-source-7.2` tarball in the
//! current-releases lab's root (`scripts/current-lab` makes it under `COUNTERHAL_CURRENT_LAB`,
//! by default /var/cache/counterhal-lab). Each x86 row maps a POSIX extended regular expression
//! over `Vendor-Family-Model[-Stepping]` to a directory, the first row that matches winning;
//! each arm64 row a MIDR (any variant and revision) to one. For every signature a row is the
//! first to match (models 0-0xff, steppings 0-15 of its vendor and family) and every MIDR of an
//! arm64 row, `Database::model_id` (what `--cpu-model` takes) must give the model
//! `tests/data/perf72-models.toml` maps the directory to, but for the exceptions it lists; the
//! CPUs it lists as covered by no row detect the model it says, or are refused with a message
//! that names the CPU.
//!
//! Before Zen 6 and the Arm cores of Linux 7.2 were added, 75 of the 81 rows were detected as
//! perf names them: x86 44 of 46 (`amdzen4`: family 19h models 0x30-0x3f were Zen 3, 0xb0-0xff
//! nothing; `amdzen6`: Zen 5), arm64 31 of 35 (Neoverse V3, N3, Fujitsu Monaka, NVIDIA's
//! 0x4e0f0100: nothing); and `AuthenticAMD-27-0-0` was "unknown CPU model".

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use counterhal_conformance::skip::Need;
use counterhal_events::{CpuIdentity, Database, unknown_model_message};

use crate::model_aliases::{compile, matches_all};

/// The data file: perf's directories and our models.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Data {
    x86: Vec<Directory>,
    arm64: Vec<Directory>,
    #[serde(default)]
    exceptions: Vec<Exception>,
    uncovered: Vec<Uncovered>,
}

/// A perf directory and the model id its CPUs detect as.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Directory {
    dir: String,
    model: String,
}

/// A signature whose row counterhal does not follow, and why.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Exception {
    signature: String,
    #[allow(dead_code)]
    why: String,
}

/// A CPU no row covers: the model it detects (refused where absent), and why.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Uncovered {
    signature: String,
    model: Option<String>,
    why: String,
}

/// The two mapfiles of Linux 7.2 (x86, arm64), read from the lab's sid root, or why not.
fn mapfiles() -> Result<(String, String), String> {
    let lab = std::env::var_os("COUNTERHAL_CURRENT_LAB")
        .map_or_else(|| PathBuf::from("/var/cache/counterhal-lab"), PathBuf::from);
    let tarball = lab.join("sid/usr/src/linux-source-7.2.tar.xz");
    if !tarball.is_file() {
        return Err(format!(
            "{} is absent (scripts/current-lab installs linux-source-7.2 in the sid root)",
            tarball.display()
        ));
    }
    let members = [
        "linux-source-7.2/tools/perf/pmu-events/arch/x86/mapfile.csv",
        "linux-source-7.2/tools/perf/pmu-events/arch/arm64/mapfile.csv",
    ];
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-perf72-models-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let status = Command::new("tar")
        .arg("-xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(&dir)
        .args(members)
        .status();
    let read = |member: &str| std::fs::read_to_string(dir.join(member));
    let out = match status {
        Ok(s) if s.success() => match (read(members[0]), read(members[1])) {
            (Ok(x86), Ok(arm64)) => Ok((x86, arm64)),
            _ => Err(format!("tar left no mapfiles in {}", dir.display())),
        },
        Ok(s) => Err(format!("tar -xJf {}: {s}", tarball.display())),
        Err(e) => Err(format!("tar cannot run: {e}")),
    };
    _ = std::fs::remove_dir_all(&dir);
    out
}

fn data() -> Data {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perf72-models.toml");
    toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The model our data maps `dir` to (a directory missing from the data file is a failure);
/// an x86 directory must also name that model as `--cpu-model` takes it
/// (`model_aliases::PERF_DIRECTORIES`).
fn ours<'a>(dirs: &'a [Directory], dir: &str, wrong: &mut Vec<String>) -> Option<&'a str> {
    let found = dirs.iter().find(|d| d.dir == dir).map(|d| d.model.as_str());
    if found.is_none() {
        wrong.push(format!("{dir}: not in tests/data/perf72-models.toml"));
    }
    let alias = counterhal_events::model_aliases::model_for_alias(dir);
    if !dir.contains('/') && alias != found {
        wrong.push(format!("--cpu-model {dir} is {alias:?}, not {found:?}"));
    }
    found
}

/// The x86 rows: (pattern, directory); each row's signatures the first to match it.
fn x86_rows(mapfile: &str, db: &Database, data: &Data, wrong: &mut Vec<String>) -> (usize, usize) {
    let rows: Vec<(&str, &str)> = mapfile
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            (fields[0], fields[2])
        })
        .collect();
    let compiled: Vec<_> = rows.iter().map(|(pattern, _)| compile(pattern)).collect();
    let mut first_row: HashMap<String, Option<usize>> = HashMap::new();
    let mut good_rows = 0;
    for (index, (pattern, dir)) in rows.iter().enumerate() {
        let Some(model) = ours(&data.x86, dir, wrong) else {
            continue;
        };
        let mut parts = pattern.splitn(3, '-');
        let vendor_family = format!("{}-{}-", parts.next().unwrap(), parts.next().unwrap());
        let (mut checked, before) = (0, wrong.len());
        for number in 0..=0xffu32 {
            for stepping in 0..=15u32 {
                let signature = format!("{vendor_family}{number:X}-{stepping:X}");
                let without = format!("{vendor_family}{number:X}");
                let first = *first_row.entry(signature.clone()).or_insert_with(|| {
                    compiled.iter().zip(&rows).position(|(pieces, (p, _))| {
                        let stepped = p.matches('-').count() == 3;
                        matches_all(pieces, if stepped { &signature } else { &without })
                    })
                });
                if first != Some(index) || data.exceptions.iter().any(|e| e.signature == signature)
                {
                    continue;
                }
                checked += 1;
                let detected = db.model_id(&signature);
                if detected != Some(model) {
                    wrong.push(format!(
                        "{signature} ({dir}): detected {detected:?}, not {model}"
                    ));
                }
            }
        }
        if checked == 0 {
            wrong.push(format!(
                "{pattern} ({dir}): no signature is first to match it"
            ));
        }
        if wrong.len() == before {
            good_rows += 1;
        }
    }
    (good_rows, rows.len())
}

/// The arm64 rows: each MIDR, with another variant and revision too.
fn arm64_rows(
    mapfile: &str,
    db: &Database,
    data: &Data,
    wrong: &mut Vec<String>,
) -> (usize, usize) {
    let mut rows = 0;
    let mut good_rows = 0;
    for line in mapfile.lines().map(str::trim) {
        let fields: Vec<&str> = line.split(',').collect();
        if line.starts_with('#') || fields.len() != 4 || fields[3] != "core" {
            continue;
        }
        rows += 1;
        let (midr, dir) = (fields[0], fields[2]);
        let Some(model) = ours(&data.arm64, dir, wrong) else {
            continue;
        };
        let value = u64::from_str_radix(midr.trim_start_matches("0x"), 16).unwrap();
        let before = wrong.len();
        for signature in [midr.to_string(), format!("{:#018x}", value | 0x0030_0002)] {
            if data.exceptions.iter().any(|e| e.signature == signature) {
                continue;
            }
            let detected = db.model_id(&signature);
            if detected != Some(model) {
                wrong.push(format!(
                    "{signature} ({dir}): detected {detected:?}, not {model}"
                ));
            }
        }
        if wrong.len() == before {
            good_rows += 1;
        }
    }
    (good_rows, rows)
}

/// Oracle: Linux 7.2's perf mapfiles (see the module's documentation).
#[test]
fn every_cpu_perf_7_2_knows_is_detected_as_perf_names_it() {
    let (x86, arm64) = match mapfiles() {
        Ok(files) => files,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "{why}"),
    };
    let db = Database::shipped().unwrap();
    let data = data();
    let mut wrong = Vec::new();
    let (x86_good, x86_rows) = x86_rows(&x86, &db, &data, &mut wrong);
    let (arm_good, arm_rows) = arm64_rows(&arm64, &db, &data, &mut wrong);
    println!(
        "perf 7.2's rows detected as perf names them: x86 {x86_good} of {x86_rows}, arm64 {arm_good} of {arm_rows}"
    );
    assert!(
        x86_rows >= 46 && arm_rows >= 35,
        "{x86_rows} x86 rows, {arm_rows} arm64 rows"
    );
    for uncovered in &data.uncovered {
        let detected = db.model_id(&uncovered.signature);
        if detected != uncovered.model.as_deref() {
            wrong.push(format!(
                "{} ({}): detected {detected:?}, not {:?}",
                uncovered.signature, uncovered.why, uncovered.model
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A CPU no model matches is refused with a message that names it and says no model matches.
/// Oracle: Linux 7.2's perf mapfiles, as above (the data file's uncovered CPUs are no row's).
#[test]
fn a_cpu_no_model_matches_is_refused_by_name() {
    for uncovered in data().uncovered.iter().filter(|u| u.model.is_none()) {
        let signature = &uncovered.signature;
        assert!(
            CpuIdentity::from_signature_with_core(signature).is_some(),
            "{signature}"
        );
        assert_eq!(
            Database::shipped().unwrap().model_id(signature),
            None,
            "{signature}"
        );
        let message = unknown_model_message(signature);
        assert!(message.contains(signature.as_str()), "{message}");
        assert!(message.contains("no CPU model"), "{message}");
    }
}
