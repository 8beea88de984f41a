//! Each x86 model's metric table from perf's ([`crate::perf_metrics`], of one kernel tree),
//! so that `-M` takes every metric name that perf prints for the model, with perf's meaning.
//!
//! A model with a table of Intel perfmon's ([`crate::metrics::PERFMON_FILES`]) keeps perfmon's
//! metrics and gets perf's that compute what none of perfmon's does, as printed
//! ([`crate::formula`]: the same values where every event has a value of its own, rule 2 of
//! `metric-names`), and its top-down nodes (group `TopdownLN`, what `--topdown` prints)
//! whose perfmon metric is not in that group; perf's other names compute what one of
//! perfmon's does and become its aliases (`counterhal-gen metric-names`), and a metric added
//! that reads one of them reads perfmon's metric instead, times the factor between their
//! values (perf's top-down nodes are fractions, perfmon's percentages: `tma_backend_bound`
//! is `(Backend_Bound * 0.01)`), so that a name stays one metric and runs as perfmon's
//! does. Every other
//! model of [`MODELS`] gets perf's whole table; the AMD ones with the raw event of each core
//! event their formulas read by perf's name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::GenError;
use crate::formula::{Formulas, POINTS, by_formula, same_values};
use crate::metrics::{GenMetric, GenMetrics, KERNEL_SOURCE, PERFMON_FILES, table};
use crate::perf_metrics::{PerfTable, read_atom_dir, read_dir};

/// Our models with a metric table from perf's, perf's x86 directory of each (the third column
/// of `mapfile.csv`) and a `PERF_CPUID` that makes perf take the directory's tables.
pub const MODELS: &[(&str, &str, &str)] = &[
    ("adl_glc", "alderlake", "GenuineIntel-6-97-2"),
    ("adl_grt", "alderlaken", "GenuineIntel-6-BE-0"),
    ("amd64_fam17h_zen1", "amdzen1", "AuthenticAMD-23-1-2"),
    ("amd64_fam17h_zen2", "amdzen2", "AuthenticAMD-23-31-0"),
    ("amd64_fam19h_zen3", "amdzen3", "AuthenticAMD-25-1-1"),
    ("amd64_fam19h_zen4", "amdzen4", "AuthenticAMD-25-17-1"),
    ("amd64_fam1ah_zen5", "amdzen5", "AuthenticAMD-26-2-0"),
    ("amd64_fam1ah_zen6", "amdzen6", "AuthenticAMD-26-30-0"),
    ("arl_lnc", "arrowlake", "GenuineIntel-6-C6-2"),
    ("atom", "bonnell", "GenuineIntel-6-1C-0"),
    ("bdw", "broadwell", "GenuineIntel-6-3D-4"),
    ("bdw_de", "broadwellde", "GenuineIntel-6-56-0"),
    ("bdw_ep", "broadwellx", "GenuineIntel-6-4F-1"),
    ("clx", "cascadelakex", "GenuineIntel-6-55-7"),
    ("cwf", "clearwaterforest", "GenuineIntel-6-DD-0"),
    ("ehl", "elkhartlake", "GenuineIntel-6-96-0"),
    ("emr", "emeraldrapids", "GenuineIntel-6-CF-2"),
    ("glm", "goldmont", "GenuineIntel-6-5C-0"),
    ("glp", "goldmontplus", "GenuineIntel-6-7A-0"),
    ("gnr", "graniterapids", "GenuineIntel-6-AD-1"),
    ("grr", "grandridge", "GenuineIntel-6-B6-0"),
    ("hsw", "haswell", "GenuineIntel-6-3C-3"),
    ("hsw_ep", "haswellx", "GenuineIntel-6-3F-2"),
    ("icl", "icelake", "GenuineIntel-6-7E-5"),
    ("icx", "icelakex", "GenuineIntel-6-6A-6"),
    ("ivb", "ivybridge", "GenuineIntel-6-3A-0"),
    ("ivb_ep", "ivytown", "GenuineIntel-6-3E-0"),
    ("knl", "knightslanding", "GenuineIntel-6-57-0"),
    ("lnl_lnc", "lunarlake", "GenuineIntel-6-BD-1"),
    ("mtl_rwc", "meteorlake", "GenuineIntel-6-AA-4"),
    ("nhm", "nehalemep", "GenuineIntel-6-1A-0"),
    ("nhm_ex", "nehalemex", "GenuineIntel-6-2E-0"),
    ("ptl_cgc", "pantherlake", "GenuineIntel-6-CC-0"),
    ("rkl", "rocketlake", "GenuineIntel-6-A7-1"),
    ("skl", "skylake", "GenuineIntel-6-5E-3"),
    ("skx", "skylakex", "GenuineIntel-6-55-4"),
    ("slm", "silvermont", "GenuineIntel-6-37-0"),
    ("snb", "sandybridge", "GenuineIntel-6-2A-0"),
    ("snb_ep", "jaketown", "GenuineIntel-6-2D-0"),
    ("spr", "sapphirerapids", "GenuineIntel-6-8F-8"),
    ("srf", "sierraforest", "GenuineIntel-6-AF-3"),
    ("tgl", "tigerlake", "GenuineIntel-6-8C-1"),
    ("tmt", "snowridgex", "GenuineIntel-6-86-0"),
    ("wsm", "westmereep-sp", "GenuineIntel-6-25-0"),
    ("wsm_dp", "westmereep-dp", "GenuineIntel-6-2C-0"),
    ("wsm_ex", "westmereex", "GenuineIntel-6-2F-0"),
];

/// The Atom cores' models of hybrid chips whose perf directory holds metrics for them (`Unit`
/// `cpu_atom`), each with that directory: their table is those metrics alone
/// ([`read_atom_dir`]), what perf 7.2 computes on `cpu_atom` (`--cputype atom`). Alder Lake's
/// Gracemont (`adl_grt`) has the table of perf's Alder Lake-N, a chip of those cores alone.
pub const ATOM_MODELS: &[(&str, &str)] = &[
    ("arl_skt", "arrowlake"),
    ("lnl_skt", "lunarlake"),
    ("mtl_cmt", "meteorlake"),
];

/// perf's x86 directory of our model `model`.
pub fn dir_of(model: &str) -> Option<&'static str> {
    MODELS.iter().find(|m| m.0 == model).map(|m| m.1)
}

/// The perf release (`perf 7.2`) of a kernel version text (`linux-source-7.2 7.2.13-1
/// (Debian)`): the number after the last `-` of its first word, else the first word.
pub fn release_of(version: &str) -> String {
    let first = version.split_whitespace().next().unwrap_or(version);
    format!("perf {}", first.rsplit_once('-').map_or(first, |(_, r)| r))
}

/// The header line naming where perf's table of `perf` came from.
fn source_line(perf: &PerfTable, version: &str) -> String {
    let mut files = format!("arch/x86/{}/*.json", perf.dir);
    if let Some(script) = &perf.script {
        files.push_str(&format!(", {script} {}", perf.dir));
    }
    if perf.common {
        files.push_str(", arch/common/common/metrics.json");
    }
    format!(
        "{}'s table: {KERNEL_SOURCE}, {version}: {files}",
        release_of(version)
    )
}

/// The header lines of the metrics `perf` left out.
fn left_out_lines(perf: &PerfTable) -> Vec<String> {
    perf.left_out
        .iter()
        .map(|(name, why)| format!("left out: `{name}`: {why}"))
        .collect()
}

/// The table of every model of [`MODELS`] without a perfmon table whose directory is under
/// `x86` (`tools/perf/pmu-events/arch/x86` of the tree `version` names), in [`MODELS`] order:
/// perf's whole table ([`read_dir`], its script run by `python` where given).
///
/// # Errors
/// As [`read_dir`]; a name given twice.
pub fn kernel(
    x86: &Path,
    version: &str,
    python: Option<&Path>,
) -> Result<Vec<GenMetrics>, GenError> {
    let mut out = Vec::new();
    for &(model, dir, _) in MODELS {
        if PERFMON_FILES.iter().any(|(_, m)| *m == model) || !x86.join(dir).is_dir() {
            continue;
        }
        let perf = read_dir(x86, dir, python)?;
        let metrics: Vec<GenMetric> = perf.metrics.iter().map(|m| m.metric.clone()).collect();
        let mut file = format!("tools/perf/pmu-events/arch/x86/{dir}/*.json");
        if let Some(script) = &perf.script {
            file.push_str(&format!(", tools/perf/pmu-events/{script} {dir}"));
        }
        if perf.common {
            file.push_str(", tools/perf/pmu-events/arch/common/common/metrics.json");
        }
        let mut table = table(model, KERNEL_SOURCE, version, &file, metrics)?;
        if dir.starts_with("amdzen") {
            table.events = read_events(&table.metrics, &amd_events(&x86.join(dir))?);
        }
        table.notes = left_out_lines(&perf);
        table.retire_latency.clone_from(&perf.retire_latency);
        out.push(table);
    }
    for &(model, dir) in ATOM_MODELS {
        if !x86.join(dir).is_dir() {
            continue;
        }
        let perf = read_atom_dir(x86, dir)?;
        let metrics: Vec<GenMetric> = perf.metrics.iter().map(|m| m.metric.clone()).collect();
        let file = format!("tools/perf/pmu-events/arch/x86/{dir}/*.json (`Unit` `cpu_atom`)");
        let mut table = table(model, KERNEL_SOURCE, version, &file, metrics)?;
        table.notes = left_out_lines(&perf);
        out.push(table);
    }
    Ok(out)
}

/// Adds perf's metrics to `ours`, perfmon's table of a model, as the module's documentation
/// says, and heads it with what was added (`version` names perf's tree).
pub fn merge(ours: &mut GenMetrics, perf: &PerfTable, version: &str) {
    let release = release_of(version);
    let our_formulas = Formulas::new(
        ours.metrics
            .iter()
            .map(|m| (m.name.as_str(), m.expression.as_str())),
        false,
    );
    let our_values: Vec<(String, Option<[f64; POINTS]>)> = ours
        .metrics
        .iter()
        .map(|m| (m.name.clone(), printed(&our_formulas, m)))
        .collect();
    let perf_formulas = Formulas::new(
        perf.metrics
            .iter()
            .map(|m| (m.metric.name.as_str(), m.metric.expression.as_str())),
        true,
    );
    // An alias names a metric of perfmon's that perf's table does not name itself (as
    // `metric-names` matches them): perf's metric of that name is that metric's.
    let candidates: Vec<(String, Option<[f64; POINTS]>)> = our_values
        .iter()
        .filter(|(name, _)| {
            !perf
                .metrics
                .iter()
                .any(|m| m.metric.name.eq_ignore_ascii_case(name))
        })
        .cloned()
        .collect();
    let mut added: BTreeSet<String> = BTreeSet::new();
    // perf's metrics that compute what one of perfmon's does: the formula that reads it by
    // perf's name reads perfmon's (its value times this factor: perf's top-down nodes are
    // fractions printed as `100%`, perfmon's percentages).
    let mut alike: BTreeMap<String, String> = BTreeMap::new();
    let (mut same_name, mut other_meaning) = (0, Vec::new());
    for metric in perf.metrics.iter().map(|m| &m.metric) {
        let values = printed(&perf_formulas, metric);
        if let Some((_, ours)) = our_values
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(&metric.name))
        {
            same_name += 1;
            if let (Some(a), Some(b)) = (values, ours)
                && !same_values(&a, b)
            {
                other_meaning.push(metric.name.clone());
            }
            continue;
        }
        // A top-down node of perf's (its group `TopdownLN`, which `--topdown` prints) whose
        // perfmon metric is not in that group is added too, so that the group holds it.
        let outside_its_level = |our: &String| {
            let level = metric.groups.iter().find(|g| g.starts_with("TopdownL"));
            let groups = ours
                .metrics
                .iter()
                .find(|m| m.name == *our)
                .map(|m| &m.groups);
            level.is_some_and(|level| groups.is_none_or(|groups| !groups.contains(level)))
        };
        match by_formula(&metric.name, values, &candidates).filter(|our| !outside_its_level(our)) {
            Some(our) => {
                let scale = ours
                    .metrics
                    .iter()
                    .find(|m| m.name == our)
                    .map_or(1.0, |m| m.scale);
                alike.insert(metric.name.clone(), reading(&our, scale / metric.scale));
            }
            None => {
                added.insert(metric.name.clone());
            }
        }
    }
    ours.metrics.extend(
        perf.metrics
            .iter()
            .filter(|m| added.contains(&m.metric.name))
            .map(|m| GenMetric {
                expression: replace_reads(&m.metric.expression, &|name| alike.get(name).cloned()),
                threshold: m
                    .metric
                    .threshold
                    .as_ref()
                    .map(|t| replace_reads(t, &|name| alike.get(name).cloned())),
                ..m.metric.clone()
            }),
    );
    ours.metrics.sort_by(|a, b| a.name.cmp(&b.name));
    ours.notes.push(source_line(perf, version));
    ours.notes.push(format!(
        "{release}: {} metrics added (computing what none of perfmon's does; where one reads \
         another of perf's that computes what one of perfmon's does, it reads perfmon's), {} \
         computing what one of perfmon's does (their names are its aliases, \
         metric_aliases/{}.toml), {same_name} with a name of perfmon's",
        added.len(),
        alike.len(),
        ours.model
    ));
    for name in other_meaning {
        ours.notes.push(format!(
            "{release}: `{name}`: its formula reads otherwise than perfmon's metric of the \
             name, which is kept"
        ));
    }
    ours.notes.extend(left_out_lines(perf));
    if !perf.retire_latency.is_empty() {
        ours.notes.push(format!(
            "{release}: {} events' `RetirementLatencyMean` ([retire_latency])",
            perf.retire_latency.len()
        ));
        ours.retire_latency.clone_from(&perf.retire_latency);
    }
}

/// How a formula reads our metric `name` for a metric of perf's whose value is `factor` times
/// ours: the name (escaped where it starts with a digit, `4K_Aliasing`), times the factor.
fn reading(name: &str, factor: f64) -> String {
    let name = match name.starts_with(|c: char| c.is_ascii_digit()) {
        true => format!("\\{name}"),
        false => name.to_string(),
    };
    match factor == 1.0 {
        true => name,
        false => format!("({name} * {factor:?})"),
    }
}

/// `expression` (our syntax) with each name `replace` gives another text for replaced by it.
fn replace_reads(expression: &str, replace: &dyn Fn(&str) -> Option<String>) -> String {
    let chars: Vec<char> = expression.chars().collect();
    let mut out = String::with_capacity(expression.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // A name starts where no name or number goes on (`1e9` holds no name `e9`).
        let continues =
            i > 0 && (chars[i - 1].is_alphanumeric() || matches!(chars[i - 1], '_' | '.'));
        if !(c.is_alphabetic() || c == '_' || c == '\\') || continues {
            out.push(c);
            i += 1;
            continue;
        }
        let (mut raw, mut name) = (String::new(), String::new());
        while i < chars.len() {
            let c = chars[i];
            if c == '\\' && i + 1 < chars.len() {
                raw.push(c);
                raw.push(chars[i + 1]);
                name.push(chars[i + 1]);
                i += 2;
            } else if c.is_alphanumeric() || matches!(c, '_' | '.' | '#' | '@' | ':') {
                raw.push(c);
                name.push(c);
                i += 1;
            } else {
                break;
            }
        }
        out.push_str(&replace(&name).unwrap_or(raw));
    }
    out
}

/// A metric's printed values: its values times its scale.
fn printed(formulas: &Formulas, metric: &GenMetric) -> Option<[f64; POINTS]> {
    formulas
        .values(&metric.name)
        .map(|values| values.map(|v| v * metric.scale))
}

/// Adds perf's tables to every table of `tables` (perfmon's) whose model has a directory of
/// [`MODELS`] under `x86` ([`merge`]).
///
/// # Errors
/// As [`read_dir`].
pub fn merge_all(
    tables: &mut [GenMetrics],
    x86: &Path,
    version: &str,
    python: Option<&Path>,
) -> Result<(), GenError> {
    for table in tables {
        let Some(dir) = dir_of(&table.model).filter(|d| x86.join(d).is_dir()) else {
            continue;
        };
        let perf = read_dir(x86, dir, python)?;
        merge(table, &perf, version);
    }
    Ok(())
}

/// The core events (entries without a `Unit`) of an AMD directory's JSON, each as our raw
/// event ([`raw_event`]).
fn amd_events(dir: &Path) -> Result<Vec<(String, String)>, GenError> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| GenError::io(dir, &e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut raw = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| GenError::io(&file, &e))?;
        let json: Value = serde_json::from_str(&text)
            .map_err(|e| GenError::Data(format!("{}: {e}", file.display())))?;
        for entry in json.as_array().into_iter().flatten() {
            if entry.get("Unit").is_none()
                && let Some(event) = raw_event(entry)
            {
                raw.push(event);
            }
        }
    }
    Ok(raw)
}

/// A core event of perf's AMD JSON as our raw syntax: `rHEX` with the event code's low byte,
/// the unit mask at bit 8 and the code's high nibble at bit 32 (`None`: no event code).
fn raw_event(entry: &Value) -> Option<(String, String)> {
    let name = entry.get("EventName")?.as_str()?;
    let number = |key: &str| {
        let text = entry.get(key).and_then(Value::as_str).unwrap_or("");
        u64::from_str_radix(text.trim_start_matches("0x"), 16).ok()
    };
    let code = number("EventCode")?;
    let umask = match entry.get("UMask") {
        None => 0,
        Some(_) => number("UMask")?,
    };
    let value = (code & 0xff) | (umask & 0xff) << 8 | (code >> 8 & 0xf) << 32;
    Some((name.to_string(), format!("r{value:x}")))
}

/// The raw events of `raw` that `metrics` read by name, sorted.
fn read_events(metrics: &[GenMetric], raw: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for metric in metrics {
        let words = metric
            .expression
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'));
        for word in words {
            if let Some(event) = raw.iter().find(|(name, _)| name == word)
                && !out.contains(event)
            {
                out.push(event.clone());
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amd_events_become_raw_events() {
        let entry = serde_json::json!({"EventName": "x.y", "EventCode": "0x1a0", "UMask": "0x1e"});
        assert_eq!(
            raw_event(&entry),
            Some(("x.y".to_string(), "r100001ea0".to_string()))
        );
        let entry = serde_json::json!({"EventName": "c", "EventCode": "0x76"});
        assert_eq!(
            raw_event(&entry),
            Some(("c".to_string(), "r76".to_string()))
        );
        assert_eq!(raw_event(&serde_json::json!({"EventName": "m"})), None);
    }

    #[test]
    fn reads_are_replaced_by_whole_names() {
        let replace = |name: &str| (name == "a_b").then(|| "X".to_string());
        assert_eq!(
            replace_reads("a_b + a_bc * 1e9 / cpu@a_b@ + \\a_b", &replace),
            "X + a_bc * 1e9 / cpu@a_b@ + X"
        );
        assert_eq!(reading("4K_Aliasing", 0.01), "(\\4K_Aliasing * 0.01)");
        assert_eq!(reading("IPC", 1.0), "IPC");
    }

    #[test]
    fn releases_are_read_from_the_version() {
        assert_eq!(release_of("linux-source-7.2 7.2.13-1 (Debian)"), "perf 7.2");
        assert_eq!(
            release_of("linux-source-6.12 6.12.117-1~deb12u1"),
            "perf 6.12"
        );
    }

    fn metric(name: &str, expression: &str, scale: f64) -> GenMetric {
        GenMetric {
            name: name.into(),
            groups: Vec::new(),
            expression: expression.into(),
            scale,
            unit: String::new(),
            threshold: None,
        }
    }

    #[test]
    fn perfs_metrics_join_perfmons_where_none_computes_them() {
        let mut ours = table(
            "x",
            "perfmon",
            "c",
            "f",
            vec![
                metric("Retiring", "100 * ( R / S )", 1.0),
                metric("Backend_Bound", "100 * ( B / S )", 1.0),
                metric("Info_Thread_IPC", "I / C", 1.0),
            ],
        )
        .unwrap();
        let perf = PerfTable {
            dir: "d".into(),
            metrics: [
                // A fraction printed as a percentage: perfmon's `Retiring`.
                metric("tma_retiring", "r / s", 100.0),
                // Computes what none of perfmon's does, and reads another of perf's, which
                // computes what perfmon's `Backend_Bound` does: it reads perfmon's.
                metric("tma_core_bound", "tma_backend_bound - 0.1", 100.0),
                metric("tma_backend_bound", "b / s", 100.0),
                metric("lpm_x", "d_ratio(X, duration_time)", 1.0),
            ]
            .into_iter()
            .map(|metric| crate::perf_metrics::PerfMetric {
                metric,
                description: String::new(),
                core: String::new(),
            })
            .collect(),
            ..PerfTable::default()
        };
        merge(&mut ours, &perf, "linux-source-7.2 7.2.13-1");
        let names: Vec<&str> = ours.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Backend_Bound",
                "Info_Thread_IPC",
                "Retiring",
                "lpm_x",
                "tma_core_bound"
            ]
        );
        let core_bound = ours.metrics.iter().find(|m| m.name == "tma_core_bound");
        assert_eq!(
            core_bound.unwrap().expression,
            "(Backend_Bound * 0.01) - 0.1"
        );
        assert!(
            ours.notes[1].starts_with("perf 7.2: 2 metrics added"),
            "{:?}",
            ours.notes
        );
    }
}
