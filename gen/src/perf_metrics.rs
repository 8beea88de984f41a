//! perf's metric table of one x86 model of a kernel tree, as perf's build makes it
//! (`tools/perf/pmu-events/Build`): the metrics of the model directory's JSON files
//! (`arch/x86/DIR/*.json`), the metrics perf's own Python scripts generate for the directory
//! (`intel_metrics.py` or `amd_metrics.py`: the `lpm_*` metrics, `smi_*`, `tsx_*`, ...), run
//! as the build runs them, and the common metrics every model has
//! (`arch/common/common/metrics.json`: perf's `Default` metrics, `insn_per_cycle`,
//! `cs_per_second`, ...). perf keeps every metric of a name and computes them all; a table of
//! ours holds one a name: the model's own JSON first (on a hybrid chip the Core cores' before
//! the Atom cores'), then the scripts', then the common ones, and each later one is left out
//! with the reason.
//!
//! A formula is written in the evaluator's syntax ([`ours`]) as jevents.py writes perf's
//! (`metric.py`'s `ParsePerfJson`): the terms of an event written `EVENT@terms@` escaped
//! (`X@umask\=0xff\,name\=Y@`), a `#literal` in lower case (perf looks them up in any case),
//! `NaN` (no value) as `(0 / 0)`, which has no value in counterhal's evaluator either, and
//! `has_event(A) & has_event(B)` as the product of the two. A formula perf's evaluator takes
//! and ours cannot (`aggr_nr`, `strcmp_cpuid_str`, another `&`, `|`, `^`, `%`) leaves its
//! metric out, with the reason.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::GenError;
use crate::metrics::{GenMetric, groups, scale_unit};

/// One metric of perf's table, with its description (compared, never written) and the core
/// PMU of a hybrid chip it is for (`cpu_core`, `cpu_atom`; empty elsewhere).
#[derive(Clone, Debug, PartialEq)]
pub struct PerfMetric {
    /// The metric, its formula in our syntax.
    pub metric: GenMetric,
    /// perf's `BriefDescription`.
    pub description: String,
    /// perf's `Unit` (`cpu_core`, `cpu_atom`), empty for none.
    pub core: String,
}

/// One model directory's metrics as perf's build makes them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PerfTable {
    /// The directory (`skylakex`).
    pub dir: String,
    /// The metrics, one a name, sorted by name.
    pub metrics: Vec<PerfMetric>,
    /// The metrics left out, each with why, sorted.
    pub left_out: Vec<(String, String)>,
    /// The script whose metrics were read (`intel_metrics.py`), if one was run.
    pub script: Option<String>,
    /// Whether the tree's common metrics were read (Linux 6.15 on has them).
    pub common: bool,
    /// The directory's events with a `RetirementLatencyMean` (Granite Rapids' in 7.2), each
    /// with it: what `perf stat` reads for `EVENT:R` without `--record-tpebs`
    /// (`evsel__tpebs_read`, tools/perf/util/intel-tpebs.c); sorted by event. None for the
    /// Atom cores' table.
    pub retire_latency: Vec<(String, f64)>,
}

/// perf's common metrics that counterhal's portable metrics of the same name answer on every
/// model (the facade's `src/metrics/mod.rs`), left out of the models' tables: a model's metric
/// of the name would be chosen before the portable one, and perf 7.2's read `#target_cpu`,
/// whether perf counts CPUs rather than a command's threads, which a formula of counterhal's
/// cannot tell (docs/event-data-errata.md).
pub const PORTABLE: [&str; 3] = [
    "CPUs_utilized",
    "branch_miss_rate",
    "page_faults_per_second",
];

/// Where a metric of perf's table comes from, in the order a name's first is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Origin {
    /// The directory's JSON (on a hybrid chip, the Core cores' and the unit-less ones).
    Json,
    /// The directory's JSON, for the Atom cores of a hybrid chip.
    AtomJson,
    /// perf's script for the directory.
    Script,
    /// The common metrics.
    Common,
}

/// The script perf's build runs for the x86 directory `dir`.
pub fn script_for(dir: &str) -> &'static str {
    if dir.starts_with("amdzen") {
        "amd_metrics.py"
    } else {
        "intel_metrics.py"
    }
}

fn read_array(path: &Path) -> Result<Vec<Value>, GenError> {
    let text = std::fs::read_to_string(path).map_err(|e| GenError::io(path, &e))?;
    array(&text, &path.display().to_string())
}

fn array(text: &str, what: &str) -> Result<Vec<Value>, GenError> {
    match serde_json::from_str(text) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(_) => Err(GenError::Data(format!("{what}: not a JSON array"))),
        Err(e) => Err(GenError::Data(format!("{what}: {e}"))),
    }
}

/// The metrics perf's script `script` (under `pmu_events`, `tools/perf/pmu-events`) prints
/// for directory `dir`, run by `python` as perf's build runs it.
fn script_metrics(
    python: &Path,
    pmu_events: &Path,
    script: &str,
    dir: &str,
) -> Result<Vec<Value>, GenError> {
    let path = pmu_events.join(script);
    let output = Command::new(python)
        .arg(&path)
        .arg(dir)
        .arg(pmu_events.join("arch"))
        .output()
        .map_err(|e| GenError::io(python, &e))?;
    if !output.status.success() {
        return Err(GenError::Data(format!(
            "{} {} {dir}: {}: {}",
            python.display(),
            path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    array(
        &String::from_utf8_lossy(&output.stdout),
        &format!("{script} {dir}"),
    )
}

/// The directory `dir`'s metrics under `x86` (`tools/perf/pmu-events/arch/x86`): its JSON, its
/// script's metrics where `python` is given and the tree has the script, and the common
/// metrics where the tree has them.
///
/// # Errors
/// A file that cannot be read or is not JSON, the script failing, an entry without a name or
/// formula, a malformed `ScaleUnit`.
pub fn read_dir(x86: &Path, dir: &str, python: Option<&Path>) -> Result<PerfTable, GenError> {
    read_metrics(x86, dir, python, false)
}

/// The Atom cores' metrics of the hybrid chip's directory `dir` (its JSON's entries whose
/// `Unit` is `cpu_atom`, each over `cpu_atom@EVENT@`): what perf 7.2 computes on the Atom
/// cores beside the Core cores' metrics of the same names ([`read_dir`] keeps the Core cores').
///
/// # Errors
/// As [`read_dir`].
pub fn read_atom_dir(x86: &Path, dir: &str) -> Result<PerfTable, GenError> {
    read_metrics(x86, dir, None, true)
}

/// [`read_dir`], or with `atom` [`read_atom_dir`].
fn read_metrics(
    x86: &Path,
    dir: &str,
    python: Option<&Path>,
    atom: bool,
) -> Result<PerfTable, GenError> {
    let path = x86.join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
        .map_err(|e| GenError::io(&path, &e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        // The groups' descriptions (an object, as jevents.py reads it), no metrics.
        .filter(|p| !p.ends_with("metricgroups.json"))
        .collect();
    files.sort();
    let mut entries: Vec<(Origin, Value)> = Vec::new();
    let mut latencies: Vec<(String, f64)> = Vec::new();
    for file in &files {
        for entry in read_array(file)? {
            if entry.get("MetricName").is_some() {
                let origin = match text(&entry, "Unit") {
                    "cpu_atom" => Origin::AtomJson,
                    _ => Origin::Json,
                };
                entries.push((origin, entry));
            } else if let Some(mean) = retirement_latency_mean(&entry)
                && !atom
                && text(&entry, "Unit") != "cpu_atom"
            {
                latencies.push((text(&entry, "EventName").to_string(), mean));
            }
        }
    }
    latencies.sort_by(|a, b| a.0.cmp(&b.0));
    latencies.dedup_by(|a, b| a.0 == b.0);
    let pmu_events = x86.join("../..");
    let script = script_for(dir);
    let mut ran = None;
    if let Some(python) = python
        && pmu_events.join(script).is_file()
    {
        for entry in script_metrics(python, &pmu_events, script, dir)? {
            entries.push((Origin::Script, entry));
        }
        ran = Some(script.to_string());
    }
    let common = x86.join("../common/common/metrics.json");
    let has_common = !atom && common.is_file();
    if has_common {
        for entry in read_array(&common)? {
            entries.push((Origin::Common, entry));
        }
    }
    if atom {
        entries.retain(|(origin, _)| *origin == Origin::AtomJson);
    }
    // A name's first metric is kept: the directory's own, then the script's, then the common.
    entries.sort_by_key(|(origin, _)| *origin);
    let mut table = PerfTable {
        dir: dir.to_string(),
        script: ran,
        common: has_common,
        retire_latency: latencies,
        ..PerfTable::default()
    };
    let mut kept: Vec<(String, Origin)> = Vec::new();
    for (origin, entry) in &entries {
        let name = text(entry, "MetricName");
        let formula = text(entry, "MetricExpr");
        if name.is_empty() || formula.is_empty() {
            return Err(GenError::Data(format!(
                "{dir}: a metric without `MetricName` or `MetricExpr`"
            )));
        }
        if *origin == Origin::Common && PORTABLE.contains(&name) {
            table.left_out.push((
                name.to_string(),
                "counterhal's portable metric of the name answers it".to_string(),
            ));
            continue;
        }
        if let Some((_, first)) = kept.iter().find(|(n, _)| n == name) {
            let same = table.metrics.iter().any(|m| {
                m.metric.name == name
                    && Ok(&m.metric.expression) == ours(formula).as_ref()
                    && entry
                        .get("ScaleUnit")
                        .and_then(Value::as_str)
                        .map_or(Ok((1.0, String::new())), scale_unit)
                        == Ok((m.metric.scale, m.metric.unit.clone()))
            });
            if same {
                // The same metric twice (a script's beside the directory's): one.
                continue;
            }
            let why = match (first, origin) {
                (Origin::Json, Origin::AtomJson) => {
                    "the Atom cores' metric of a name the Core cores' have (perf computes both on \
                     a hybrid chip; this table keeps the Core cores')"
                }
                _ => "a second metric of the name (perf computes both; this table keeps the first)",
            };
            table.left_out.push((name.to_string(), why.to_string()));
            continue;
        }
        let expression = match ours(formula) {
            Ok(expression) => expression,
            Err(why) => {
                table.left_out.push((name.to_string(), why));
                continue;
            }
        };
        let (scale, unit) = match entry.get("ScaleUnit").and_then(Value::as_str) {
            Some(text) => {
                scale_unit(text).map_err(|why| GenError::Data(format!("{dir}: {name}: {why}")))?
            }
            None => (1.0, String::new()),
        };
        kept.push((name.to_string(), *origin));
        table.metrics.push(PerfMetric {
            metric: GenMetric {
                name: name.to_string(),
                groups: groups(text(entry, "MetricGroup")),
                expression,
                scale,
                unit,
                threshold: threshold(entry),
            },
            description: text(entry, "BriefDescription").to_string(),
            core: match text(entry, "Unit") {
                unit @ ("cpu_core" | "cpu_atom") => unit.to_string(),
                _ => String::new(),
            },
        });
    }
    drop_readers_of_left_out(&mut table);
    table
        .metrics
        .sort_by(|a, b| a.metric.name.cmp(&b.metric.name));
    table.left_out.sort();
    Ok(table)
}

/// Leaves out, with the reason, every metric whose formula reads a metric left out (by its
/// name), until none does.
fn drop_readers_of_left_out(table: &mut PerfTable) {
    loop {
        let out: Vec<String> = table.left_out.iter().map(|(n, _)| n.clone()).collect();
        let kept: Vec<String> = table
            .metrics
            .iter()
            .map(|m| m.metric.name.clone())
            .collect();
        let mut dropped = false;
        table.metrics.retain(|m| {
            let Ok(formula) = counterhal_events::expression::parse(&m.metric.expression) else {
                return true;
            };
            let Some(read) = formula
                .names()
                .into_iter()
                .find(|n| out.contains(n) && !kept.contains(n))
            else {
                return true;
            };
            table.left_out.push((
                m.metric.name.clone(),
                format!("it reads `{read}`, left out"),
            ));
            dropped = true;
            false
        });
        if !dropped {
            break;
        }
    }
}

/// perf's `MetricThreshold` of `entry` in our syntax ([`ours`], with perf's `&`, `|` and `^`,
/// which thresholds use and counterhal's evaluator takes), if it has one our evaluator takes.
fn threshold(entry: &Value) -> Option<String> {
    match text(entry, "MetricThreshold") {
        "" => None,
        threshold => convert(threshold, true).ok(),
    }
}

/// An event entry's `RetirementLatencyMean` (a number, or a number as a string), where it has
/// a name and a finite one.
fn retirement_latency_mean(entry: &Value) -> Option<f64> {
    let mean = entry.get("RetirementLatencyMean")?;
    let mean = mean
        .as_f64()
        .or_else(|| mean.as_str().and_then(|s| s.trim().parse().ok()))?;
    (mean.is_finite() && !text(entry, "EventName").is_empty()).then_some(mean)
}

fn text<'v>(entry: &'v Value, key: &str) -> &'v str {
    entry.get(key).and_then(Value::as_str).unwrap_or("")
}

/// perf's formula `text` in our evaluator's syntax, as the module's documentation says, or
/// why it cannot be.
///
/// # Errors
/// A function or operator our evaluator lacks, or a formula our parser refuses.
pub fn ours(text: &str) -> Result<String, String> {
    convert(text, false)
}

/// [`ours`], with perf's `&`, `|` and `^` kept as they are where `logic` (a threshold's).
fn convert(text: &str, logic: bool) -> Result<String, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
            i += 1;
        } else if c == '#' {
            // A literal: perf looks it up in any case (`#SMT_on` is `#smt_on`).
            out.push('#');
            i += 1;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                out.push(chars[i].to_ascii_lowercase());
                i += 1;
            }
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            while i < chars.len() {
                let c = chars[i];
                let sign = matches!(c, '+' | '-') && matches!(chars[i - 1], 'e' | 'E');
                if !(c.is_ascii_alphanumeric() || c == '.' || sign) {
                    break;
                }
                out.push(c);
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' || c == '\\' {
            let (name, next) = name_at(&chars, i);
            i = next;
            match name.as_str() {
                "NaN" => out.push_str("(0 / 0)"),
                "aggr_nr" | "strcmp_cpuid_str" => {
                    return Err(format!(
                        "its formula calls perf's `{name}`, which counterhal's evaluator lacks"
                    ));
                }
                _ => out.push_str(&with_terms(&name)),
            }
        } else if logic && matches!(c, '&' | '|' | '^') {
            out.push(c);
            i += 1;
        } else if c == '&' {
            // `has_event(A) & has_event(B)`: both 0 or 1, so their product.
            let before = out.trim_end();
            let after: String = chars[i + 1..].iter().collect();
            let called = before
                .rfind("has_event(")
                .is_some_and(|at| !before[at + 10..].contains(['(', ' ']) && before.ends_with(')'));
            if !(called && after.trim_start().starts_with("has_event(")) {
                return Err(
                    "its formula uses perf's `&` other than between two `has_event`s, \
                            which counterhal's evaluator lacks"
                        .to_string(),
                );
            }
            out.push('*');
            i += 1;
        } else if matches!(c, '|' | '^' | '%') {
            return Err(format!(
                "its formula uses perf's operator `{c}`, which counterhal's evaluator lacks"
            ));
        } else {
            out.push(c);
            i += 1;
        }
    }
    let out = out.trim().to_string();
    counterhal_events::expression::parse(&out)
        .map_err(|e| format!("its formula does not parse in counterhal's evaluator: {e}"))?;
    Ok(out)
}

/// The name starting at `chars[start]` in our syntax, and where it ends: perf's name
/// characters and escapes, and an `@terms@` part whole, its unescaped `,`, `=`, `-` and `/`
/// escaped (jevents.py's `_FixEscapes`).
fn name_at(chars: &[char], start: usize) -> (String, usize) {
    let mut name = String::new();
    let mut i = start;
    let mut in_terms = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            name.push('\\');
            if let Some(&escaped) = chars.get(i + 1) {
                name.push(escaped);
            }
            i += 2;
            continue;
        }
        if c == '@' {
            in_terms = !in_terms;
        } else if in_terms && matches!(c, ',' | '=' | '-' | '/') {
            name.push('\\');
        } else if !(c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '@') || in_terms) {
            break;
        }
        name.push(c);
        i += 1;
    }
    (name, i)
}

/// `name` (in our syntax, escaped) as our event strings take it, where perf gives an event
/// terms (`EVENT@terms@`, jevents.py's form of `EVENT/terms/`):
///
/// - a software event by its name and `name=` (which only names perf's evsel,
///   `software@cpu\-clock\,name\=cpu\-clock@`) is that event (`cpu\-clock`);
/// - the msr PMU's `cpu=` term (the hybrid core PMU whose CPUs read it: the TSC is one on
///   every core, `msr@tsc\,cpu\=cpu_core@`) is dropped;
/// - an event's own name with terms (`INST_RETIRED.ANY_P@cmask\=1@`: a name with an upper-case
///   letter or a `.`, where a PMU's has neither) is the event with modifiers: `cmask` and
///   `thresh` are `:c=`, `inv` `:i=`, `edge` `:e=`, `offcore_rsp` perfmon's `:ocr_msr_val=`,
///   `name` is dropped, and any other term (an uncore box's filter) is `:term=value`.
///
/// A PMU's event with terms (`cpu@X\,cmask\=1@`, `cha@...@`, `power@energy\-pkg@`) stays:
/// counterhal opens it as `PMU/terms/`.
fn with_terms(name: &str) -> String {
    let Some((head, rest)) = name.split_once('@') else {
        return name.to_string();
    };
    let Some(terms) = rest.strip_suffix('@').filter(|t| !t.contains('@')) else {
        return name.to_string();
    };
    let unescaped = |t: &str| t.replace('\\', "");
    let terms: Vec<(String, Option<String>)> = terms
        .split("\\,")
        .map(|term| match term.split_once("\\=") {
            Some((field, value)) => (unescaped(field), Some(unescaped(value))),
            None => (unescaped(term), None),
        })
        .collect();
    let escaped = |text: &str| -> String {
        let mut out = String::new();
        for c in text.chars() {
            if !(c.is_alphanumeric() || matches!(c, '_' | '.' | ':')) {
                out.push('\\');
            }
            out.push(c);
        }
        out
    };
    let term = |(field, value): &(String, Option<String>)| match value {
        Some(value) => format!("{field}={value}"),
        None => field.clone(),
    };
    match head {
        "software" if terms.iter().skip(1).all(|(field, _)| field == "name") => {
            match terms.first() {
                Some((event, None)) => escaped(event),
                _ => name.to_string(),
            }
        }
        "msr" => {
            let kept: Vec<String> = terms
                .iter()
                .filter(|(field, _)| field != "cpu")
                .map(term)
                .collect();
            format!("msr@{}@", escaped(&kept.join(",")))
        }
        event if event.contains(|c: char| c.is_ascii_uppercase() || c == '.') => {
            let mut out = event.to_string();
            for (field, value) in &terms {
                let value = value.as_deref().unwrap_or("1");
                let modifier = match field.as_str() {
                    "name" => continue,
                    "cmask" | "thresh" => format!("c={value}"),
                    "inv" => format!("i={value}"),
                    "edge" => format!("e={value}"),
                    "offcore_rsp" => format!("ocr_msr_val={value}"),
                    other => format!("{other}={value}"),
                };
                out.push(':');
                out.push_str(&escaped(&modifier));
            }
            out
        }
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_with_terms_become_our_event_strings() {
        for (perf, expected) in [
            (r"software@cpu\-clock\,name\=cpu\-clock@", r"cpu\-clock"),
            (r"msr@tsc\,cpu\=cpu_core@", "msr@tsc@"),
            (r"INST_RETIRED.ANY_P@cmask\=2@", r"INST_RETIRED.ANY_P:c\=2"),
            (
                "UNC_M2M_DIRECTORY_HIT.DIRTY_I@umask=0xFF,name=UNC_M2M_DIRECTORY_HIT.ANY@",
                r"UNC_M2M_DIRECTORY_HIT.DIRTY_I:umask\=0xFF",
            ),
            (
                r"UNC_CHA_TOR_OCCUPANCY.IA_MISS_DRD@thresh\=1@",
                r"UNC_CHA_TOR_OCCUPANCY.IA_MISS_DRD:c\=1",
            ),
            (r"OCR.X@offcore_rsp\=0x10@", r"OCR.X:ocr_msr_val\=0x10"),
            (r"cpu@X.Y\,cmask\=1@", r"cpu@X.Y\,cmask\=1@"),
            (r"power@energy\-pkg@", r"power@energy\-pkg@"),
        ] {
            assert_eq!(ours(perf).unwrap(), expected, "{perf}");
        }
    }

    #[test]
    fn perfs_forms_become_ours() {
        assert_eq!(
            ours("d_ratio(X.Y@umask=0xFF,name=X.ANY@, duration_time)").unwrap(),
            "d_ratio(X.Y:umask\\=0xFF, duration_time)"
        );
        assert_eq!(
            ours("cpu@A.B\\,cmask\\=1@ / #SMT_on").unwrap(),
            "cpu@A.B\\,cmask\\=1@ / #smt_on"
        );
        assert_eq!(
            ours("(power@energy\\-pkg@ if has_event(power@energy\\-pkg@) else NaN) * 2e-10")
                .unwrap(),
            "(power@energy\\-pkg@ if has_event(power@energy\\-pkg@) else (0 / 0)) * 2e-10"
        );
        assert_eq!(
            ours("a if (has_event(b\\-c) & has_event(d)) else 0").unwrap(),
            "a if (has_event(b\\-c) * has_event(d)) else 0"
        );
        assert_eq!(
            ours("cpu\\-cycles:kHh +\n  1").unwrap(),
            "cpu\\-cycles:kHh + 1"
        );
    }

    #[test]
    fn forms_our_evaluator_lacks_say_so() {
        for (formula, needle) in [
            ("a / aggr_nr(b)", "aggr_nr"),
            ("1 if strcmp_cpuid_str(0x1) else 0", "strcmp_cpuid_str"),
            ("a & b", "`&`"),
            ("a | b", "`|`"),
            ("a % b", "`%`"),
            ("a +", "does not parse"),
        ] {
            let why = ours(formula).unwrap_err();
            assert!(why.contains(needle), "{formula}: {why}");
        }
    }
}
