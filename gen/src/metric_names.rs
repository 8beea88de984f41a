//! The names perf's releases gave the metrics of our tables, so that `-M` takes what a user's
//! perf prints: perf 6.1's own tables (compiled into Debian 12's perf, read with
//! `PERF_CPUID=CPUID perf list --details metrics`) and Linux 6.12's perf JSON (the kernel
//! tree's `tools/perf/pmu-events/arch/x86/DIR`). perf 6.1 calls Intel's `Info_System_DRAM_BW_Use`
//! `DRAM_BW_Use`, Linux 6.12 `tma_info_system_dram_bw_use`.
//!
//! Nothing is matched by a rule on names. A release's metric is ours when ([`matched`]):
//!
//! 1. it has the name of one of ours (any case): nothing to add;
//! 2. (perf 6.1) Linux 6.12 has a metric of that name (any case), matched to ours by 4;
//! 3. (perf 6.1) Linux 6.12 has exactly one metric of the same description (case and spaces
//!    aside), matched to ours by 4: the same metric in both releases, whatever its formula
//!    became (perf 6.1's `IO_Read_BW` read the events Intel's later tables give its writes);
//! 4. its formula computes what exactly one of ours computes, as printed (times its scale:
//!    Linux 6.12's top-down nodes are fractions printed as `100%`, ours percentages;
//!    [`crate::formula`]: the metrics it reads put in place, evaluated where each event has a
//!    value of its own), or, among several of ours that do, the one whose name and its name
//!    share the longest ending where one name ends with the other, if exactly one.
//!
//! Anything else is not matched, and the table's header lists it. Descriptions are only
//! compared, never written.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::GenError;
use crate::formula::{Formulas, same_values};
use crate::write::{GENERATED_MARK, quoted};

/// Our metric tables, the kernel's directory of each model and the `PERF_CPUID` that makes
/// perf take its tables.
pub const MODELS: &[(&str, &str, &str)] = &[
    ("adl_glc", "alderlake", "GenuineIntel-6-97-2"),
    ("amd64_fam17h_zen1", "amdzen1", "AuthenticAMD-23-1-2"),
    ("amd64_fam17h_zen2", "amdzen2", "AuthenticAMD-23-31-0"),
    ("amd64_fam19h_zen3", "amdzen3", "AuthenticAMD-25-1-1"),
    ("amd64_fam19h_zen4", "amdzen4", "AuthenticAMD-25-17-1"),
    ("amd64_fam1ah_zen5", "amdzen5", "AuthenticAMD-26-2-0"),
    ("bdw", "broadwell", "GenuineIntel-6-3D-4"),
    ("bdw_ep", "broadwellx", "GenuineIntel-6-4F-1"),
    ("clx", "cascadelakex", "GenuineIntel-6-55-7"),
    ("emr", "emeraldrapids", "GenuineIntel-6-CF-2"),
    ("gnr", "graniterapids", "GenuineIntel-6-AD-1"),
    ("grr", "grandridge", "GenuineIntel-6-B6-0"),
    ("hsw", "haswell", "GenuineIntel-6-3C-3"),
    ("hsw_ep", "haswellx", "GenuineIntel-6-3F-2"),
    ("icl", "icelake", "GenuineIntel-6-7E-5"),
    ("icx", "icelakex", "GenuineIntel-6-6A-6"),
    ("lnl_lnc", "lunarlake", "GenuineIntel-6-BD-1"),
    ("mtl_rwc", "meteorlake", "GenuineIntel-6-AA-4"),
    ("rkl", "rocketlake", "GenuineIntel-6-A7-1"),
    ("skl", "skylake", "GenuineIntel-6-5E-3"),
    ("skx", "skylakex", "GenuineIntel-6-55-4"),
    ("spr", "sapphirerapids", "GenuineIntel-6-8F-8"),
    ("srf", "sierraforest", "GenuineIntel-6-AF-3"),
    ("tgl", "tigerlake", "GenuineIntel-6-8C-1"),
];

/// One metric of a release (or of ours): its name, formula, the scale its value is printed
/// with, and description.
#[derive(Clone, Debug, PartialEq)]
pub struct ReleaseMetric {
    /// Its name.
    pub name: String,
    /// Its formula, in perf's syntax.
    pub formula: String,
    /// What its value is multiplied by to print (perf's `ScaleUnit`: 100 for `100%`; 1 where
    /// the source gives none, as `perf list --details` does).
    pub scale: f64,
    /// Its description (compared, never written).
    pub description: String,
}

/// perf's version line (`perf version 6.1.192`) as a release (`perf 6.1`), and the line.
///
/// # Errors
/// perf cannot run, or prints no version.
pub fn perf_release(perf: &Path) -> Result<(String, String), GenError> {
    let output = Command::new(perf)
        .arg("--version")
        .output()
        .map_err(|e| GenError::io(perf, &e))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let version = text
        .trim()
        .strip_prefix("perf version ")
        .ok_or_else(|| GenError::Data(format!("`perf --version` printed `{}`", text.trim())))?;
    let release: Vec<&str> = version.split('.').take(2).collect();
    Ok((
        format!("perf {}", release.join(".")),
        text.trim().to_string(),
    ))
}

/// The metrics `perf list --details metrics` prints: each a line `  NAME` and, indented
/// under it, `[description]` and `[formula]` (the last bracketed line is the formula).
pub fn parse_perf_list(text: &str) -> Vec<ReleaseMetric> {
    let mut out: Vec<ReleaseMetric> = Vec::new();
    let mut lines: Vec<&str> = Vec::new();
    let mut flush = |name: Option<&str>, lines: &mut Vec<&str>| {
        if let (Some(name), Some(formula)) = (name, lines.last()) {
            out.push(ReleaseMetric {
                name: name.to_string(),
                formula: formula.to_string(),
                scale: 1.0,
                description: if lines.len() > 1 { lines[0] } else { "" }.to_string(),
            });
        }
        lines.clear();
    };
    let mut name = None;
    for line in text.lines() {
        let bracketed = line
            .trim()
            .strip_prefix('[')
            .and_then(|l| l.strip_suffix(']'));
        match bracketed {
            Some(inner) if line.starts_with("       ") => lines.push(inner),
            _ if line.starts_with("  ") && !line[2..].starts_with(' ') => {
                flush(name, &mut lines);
                name = Some(line.trim());
            }
            _ => {
                flush(name, &mut lines);
                name = None;
            }
        }
    }
    flush(name, &mut lines);
    out
}

/// perf's own metrics for the CPU `cpuid` (`PERF_CPUID=cpuid perf list --details metrics`).
///
/// # Errors
/// perf cannot run or fails.
pub fn perf_metrics(perf: &Path, cpuid: &str) -> Result<Vec<ReleaseMetric>, GenError> {
    let output = Command::new(perf)
        .args(["list", "--details", "metrics"])
        .env("PERF_CPUID", cpuid)
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| GenError::io(perf, &e))?;
    if !output.status.success() {
        return Err(GenError::Data(format!(
            "PERF_CPUID={cpuid} perf list --details metrics: {}",
            output.status
        )));
    }
    Ok(parse_perf_list(&String::from_utf8_lossy(&output.stdout)))
}

/// The metrics of the kernel's JSON directory `root/dir` (a hybrid chip's Atom cores'
/// metrics, `Unit` `cpu_atom`, are left out), sorted by name.
///
/// # Errors
/// A file that cannot be read or is not JSON.
pub fn kernel_metrics(root: &Path, dir: &str) -> Result<Vec<ReleaseMetric>, GenError> {
    let path = root.join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&path)
        .map_err(|e| GenError::io(&path, &e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| GenError::io(&file, &e))?;
        if !text.contains("\"MetricName\"") {
            continue;
        }
        let json: Value = serde_json::from_str(&text)
            .map_err(|e| GenError::Data(format!("{}: {e}", file.display())))?;
        for entry in json.as_array().into_iter().flatten() {
            let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("");
            if text("MetricName").is_empty() || text("Unit") == "cpu_atom" {
                continue;
            }
            out.push(ReleaseMetric {
                name: text("MetricName").to_string(),
                formula: text("MetricExpr").to_string(),
                scale: match entry.get("ScaleUnit").and_then(Value::as_str) {
                    Some(unit) => {
                        crate::metrics::scale_unit(unit)
                            .map_err(|why| GenError::Data(format!("{}: {why}", file.display())))?
                            .0
                    }
                    None => 1.0,
                },
                description: text("BriefDescription").to_string(),
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Our metrics (name, formula, scale) of a generated table (`metrics/ID.toml`).
///
/// # Errors
/// The file cannot be read or is not a metrics table.
pub fn our_metrics(path: &Path) -> Result<Vec<ReleaseMetric>, GenError> {
    let text = std::fs::read_to_string(path).map_err(|e| GenError::io(path, &e))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| GenError::Data(format!("{}: {e}", path.display())))?;
    let metrics = table.get("metric").and_then(|m| m.as_array());
    Ok(metrics
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let field = |key: &str| m.get(key).and_then(|v| v.as_str()).map(str::to_string);
            Some(ReleaseMetric {
                name: field("name")?,
                formula: field("expression")?,
                scale: m.get("scale").and_then(|v| v.as_float()).unwrap_or(1.0),
                description: String::new(),
            })
        })
        .collect())
}

/// How a release's name was matched to ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum How {
    /// The newer release has a metric of that name, matched by formula.
    NewerName,
    /// The newer release has one metric of the same description, matched by formula.
    Description,
    /// The same formula.
    Formula,
}

/// One model's aliases and what was not matched.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Matched {
    /// (alias, our metric, release, how), sorted by alias.
    pub aliases: Vec<(String, String, String, How)>,
    /// (release, name) of the names not matched.
    pub unmatched: Vec<(String, String)>,
}

/// A metric's printed values: its values times its scale.
fn printed(formulas: &Formulas, metric: &ReleaseMetric) -> Option<[f64; crate::formula::POINTS]> {
    formulas
        .values(&metric.name)
        .map(|values| values.map(|v| v * metric.scale))
}

/// Our metric whose values are `values`, as rule 4 of the module's documentation picks it.
fn by_formula(
    name: &str,
    values: Option<[f64; crate::formula::POINTS]>,
    ours: &[(String, Option<[f64; crate::formula::POINTS]>)],
) -> Option<String> {
    let values = values?;
    let same: Vec<&String> = ours
        .iter()
        .filter(|(_, v)| v.as_ref().is_some_and(|v| same_values(v, &values)))
        .map(|(n, _)| n)
        .collect();
    if let [one] = same.as_slice() {
        return Some((*one).clone());
    }
    // Among several, the one whose name and `name` share the longest ending, where one
    // name ends with the other (`tma_info_thread_cpi` is `Info_Thread_CPI`, not `cpi`).
    let lower = name.to_ascii_lowercase();
    let shared = |n: &String| {
        let n = n.to_ascii_lowercase();
        (n.ends_with(&lower) || lower.ends_with(&n)).then(|| n.len().min(lower.len()))
    };
    let longest = same.iter().filter_map(|n| shared(n)).max()?;
    let ending: Vec<&&String> = same.iter().filter(|n| shared(n) == Some(longest)).collect();
    match ending.as_slice() {
        [one] => Some((**one).clone()),
        _ => None,
    }
}

/// Matches the metrics of an older release (`older`, perf 6.1's) and a newer one (`newer`,
/// Linux 6.12's) to `ours`, as the module's documentation says.
pub fn matched(
    ours: &[ReleaseMetric],
    (older_release, older): (&str, &[ReleaseMetric]),
    (newer_release, newer): (&str, &[ReleaseMetric]),
) -> Matched {
    let our_formulas = Formulas::new(
        ours.iter().map(|m| (m.name.as_str(), m.formula.as_str())),
        false,
    );
    let our_values: Vec<(String, Option<_>)> = ours
        .iter()
        .map(|m| (m.name.clone(), printed(&our_formulas, m)))
        .collect();
    let is_ours = |name: &str| ours.iter().any(|m| m.name.eq_ignore_ascii_case(name));
    let newer_formulas = Formulas::new(
        newer.iter().map(|m| (m.name.as_str(), m.formula.as_str())),
        true,
    );
    let mut newer_match: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Matched::default();
    for metric in newer.iter().filter(|m| !is_ours(&m.name)) {
        match by_formula(&metric.name, printed(&newer_formulas, metric), &our_values) {
            Some(our) => {
                newer_match.insert(metric.name.to_ascii_lowercase(), our.clone());
                out.aliases.push((
                    metric.name.clone(),
                    our,
                    newer_release.to_string(),
                    How::Formula,
                ));
            }
            None => out
                .unmatched
                .push((newer_release.to_string(), metric.name.clone())),
        }
    }
    let describe = |d: &str| {
        d.trim_end_matches('.')
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_ascii_lowercase()
    };
    let mut by_description: BTreeMap<String, Vec<&ReleaseMetric>> = BTreeMap::new();
    for metric in newer.iter().filter(|m| !m.description.is_empty()) {
        by_description
            .entry(describe(&metric.description))
            .or_default()
            .push(metric);
    }
    let older_formulas = Formulas::new(
        older.iter().map(|m| (m.name.as_str(), m.formula.as_str())),
        false,
    );
    for metric in older.iter().filter(|m| !is_ours(&m.name)) {
        let same_name = newer_match.get(&metric.name.to_ascii_lowercase());
        let described = match metric.description.is_empty() {
            true => None,
            false => by_description.get(&describe(&metric.description)),
        };
        let same_description = match described.map(Vec::as_slice) {
            Some([one]) => newer_match.get(&one.name.to_ascii_lowercase()),
            _ => None,
        };
        let found = match (same_name, same_description) {
            (Some(our), _) => Some((our.clone(), How::NewerName)),
            (None, Some(our)) => Some((our.clone(), How::Description)),
            (None, None) => by_formula(&metric.name, printed(&older_formulas, metric), &our_values)
                .map(|our| (our, How::Formula)),
        };
        match found {
            Some((our, how)) => {
                out.aliases
                    .push((metric.name.clone(), our, older_release.to_string(), how));
            }
            None => out
                .unmatched
                .push((older_release.to_string(), metric.name.clone())),
        }
    }
    // A name both releases give one metric is one alias (the older release's); a name they
    // give two metrics is none.
    out.aliases.sort();
    out.aliases
        .dedup_by(|later, first| later.0 == first.0 && later.1 == first.1);
    let twice: Vec<String> = out
        .aliases
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| w[0].0.clone())
        .collect();
    for name in twice {
        out.aliases.retain(|a| a.0 != name);
        out.unmatched
            .push(("both releases, two metrics".to_string(), name));
    }
    out.unmatched.sort();
    out.unmatched.dedup();
    out
}

/// The TOML text of one model's aliases: headed by the sources (`sources`, one line each),
/// then the model, the names not matched by release (`[not_matched]`), and `[aliases]`: each
/// alias with the metric it names, its release and the rule that matched it.
pub fn aliases_toml(model: &str, sources: &[String], matched: &Matched) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {GENERATED_MARK} (counterhal-gen metric-names)");
    for source in sources {
        let _ = writeln!(out, "# source: {source}");
    }
    out.push('\n');
    let _ = writeln!(out, "model = {}", quoted(model));
    let mut by_release: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (release, name) in &matched.unmatched {
        by_release.entry(release).or_default().push(name);
    }
    out.push_str("\n[not_matched]\n");
    for (release, names) in by_release {
        let _ = writeln!(out, "{} = [", quoted(release));
        for name in names {
            let _ = writeln!(out, "    {},", quoted(name));
        }
        out.push_str("]\n");
    }
    out.push_str("\n[aliases]\n");
    for (alias, ours, release, how) in &matched.aliases {
        let how = match how {
            How::NewerName => "newer name",
            How::Description => "description",
            How::Formula => "formula",
        };
        let _ = writeln!(
            out,
            "{} = {{ metric = {}, release = {}, by = {} }}",
            quoted(alias),
            quoted(ours),
            quoted(release),
            quoted(how)
        );
    }
    out
}

/// Where [`table`] reads: perf (its release, `perf 6.1`, and version line), the kernel's
/// `tools/perf/pmu-events/arch/x86` and its version, and our metric tables
/// (`events/data/generated/metrics`).
pub struct Sources<'a> {
    /// The perf whose own tables are read.
    pub perf: &'a Path,
    /// The kernel's JSON directory.
    pub kernel: &'a Path,
    /// The kernel's version (`linux-source-6.12 6.12.117-1~deb12u1 (Debian)`).
    pub kernel_version: &'a str,
    /// Our metric tables.
    pub metrics: &'a Path,
}

/// The TOML text of the aliases of `(model, dir, cpuid)`, a row of [`MODELS`]; `None` where
/// we have no table for the model or the kernel no directory.
///
/// # Errors
/// perf cannot run, or a file cannot be read.
pub fn table(sources: &Sources<'_>, row: (&str, &str, &str)) -> Result<Option<String>, GenError> {
    let (model, dir, cpuid) = row;
    let ours_path = sources.metrics.join(format!("{model}.toml"));
    if !ours_path.is_file() || !sources.kernel.join(dir).is_dir() {
        return Ok(None);
    }
    let (older_release, version) = perf_release(sources.perf)?;
    let newer_release = format!("perf {}", kernel_release(sources.kernel_version));
    let ours = our_metrics(&ours_path)?;
    let older = perf_metrics(sources.perf, cpuid)?;
    let newer = kernel_metrics(sources.kernel, dir)?;
    let found = matched(&ours, (&older_release, &older), (&newer_release, &newer));
    let lines = [
        format!(
            "{older_release}'s own tables, `PERF_CPUID={cpuid} perf list --details metrics` ({version})"
        ),
        format!(
            "{newer_release}'s JSON, Linux kernel tools/perf/pmu-events/arch/x86/{dir} \
             ({}; GPL-2.0-only, names only)",
            sources.kernel_version
        ),
        format!("ours: events/data/generated/metrics/{model}.toml"),
    ];
    Ok(Some(aliases_toml(model, &lines, &found)))
}

/// Every model's table of [`MODELS`] ([`table`]), as (model, TOML text), in [`MODELS`]'
/// order.
///
/// # Errors
/// perf cannot run, or a file cannot be read.
pub fn tables(sources: &Sources<'_>) -> Result<Vec<(String, String)>, GenError> {
    let mut out = Vec::new();
    for &row in MODELS {
        if let Some(text) = table(sources, row)? {
            out.push((row.0.to_string(), text));
        }
    }
    Ok(out)
}

/// The release (`6.12`) of a kernel version text (`linux-source-6.12 6.12.117-1~deb12u1`):
/// the first word's last two dotted numbers after its last `-`, else the text.
fn kernel_release(version: &str) -> &str {
    let first = version.split_whitespace().next().unwrap_or(version);
    first.rsplit_once('-').map_or(first, |(_, r)| r)
}

/// Writes each table to `out/MODEL.toml`; returns the paths written, in order.
///
/// # Errors
/// The directory or a file cannot be written.
pub fn write_tables(tables: &[(String, String)], out: &Path) -> Result<Vec<String>, GenError> {
    std::fs::create_dir_all(out).map_err(|e| GenError::io(out, &e))?;
    let mut written = Vec::new();
    for (model, text) in tables {
        let path = out.join(format!("{model}.toml"));
        std::fs::write(&path, text).map_err(|e| GenError::io(&path, &e))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(name: &str, formula: &str, description: &str) -> ReleaseMetric {
        ReleaseMetric {
            name: name.into(),
            formula: formula.into(),
            scale: 1.0,
            description: description.into(),
        }
    }

    #[test]
    fn perf_lists_name_description_and_formula() {
        let text = "\nMetrics:\n\n  CPI\n       [Cycles Per Instruction]\n       [1 / IPC]\n  IPC\n       [Instructions Per Cycle]\n       [INST_RETIRED.ANY / CPU_CLK_UNHALTED.THREAD]\n";
        let listed = parse_perf_list(text);
        assert_eq!(listed.len(), 2);
        assert_eq!(
            listed[0],
            metric("CPI", "1 / IPC", "Cycles Per Instruction")
        );
    }

    #[test]
    fn names_match_by_formula_then_description() {
        let ours = [
            metric("Info_System_Read_BW", "A * 64 / ( 1000000000 )", ""),
            metric("Info_System_Write_BW", "B * 64 / ( 1000000000 )", ""),
            metric("Info_Thread_IPC", "I / C", ""),
            metric("Other", "I / C", ""),
            metric("Retiring", "100 * ( R / S )", ""),
        ];
        let newer = [
            metric(
                "tma_info_system_read_bw",
                "a * 64 / 1e9",
                "Reads [GB / sec]",
            ),
            metric(
                "tma_info_system_write_bw",
                "b * 64 / 1e9",
                "Writes [GB / sec]",
            ),
            metric("tma_info_thread_ipc", "i / c", ""),
            metric("unknown", "z", ""),
            // Printed as a percentage (`ScaleUnit` `100%`), as ours computes it.
            ReleaseMetric {
                scale: 100.0,
                ..metric("tma_retiring", "r / s", "")
            },
        ];
        let older = [
            // The older release gave the reads' name the writes' formula.
            metric("Read_BW", "B * 64 / 1000000000", "Reads  [GB / sec]."),
            metric("IPC", "I / C", ""),
            metric("Lost", "Q", ""),
        ];
        let found = matched(&ours, ("perf 6.1", &older), ("perf 6.12", &newer));
        let alias = |a: &str| {
            found
                .aliases
                .iter()
                .find(|x| x.0 == a)
                .map(|x| (x.1.as_str(), x.3))
        };
        assert_eq!(
            alias("Read_BW"),
            Some(("Info_System_Read_BW", How::Description))
        );
        assert_eq!(alias("IPC"), Some(("Info_Thread_IPC", How::Formula)));
        assert_eq!(alias("tma_retiring"), Some(("Retiring", How::Formula)));
        assert_eq!(
            alias("tma_info_system_write_bw"),
            Some(("Info_System_Write_BW", How::Formula))
        );
        assert_eq!(
            found.unmatched,
            [
                ("perf 6.1".to_string(), "Lost".to_string()),
                ("perf 6.12".to_string(), "unknown".to_string())
            ]
        );
    }
}
