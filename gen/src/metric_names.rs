//! The names perf's releases gave the metrics of our tables, so that `-M` takes what a user's
//! perf prints: perf 6.1's own tables (compiled into Debian 12's perf, read with
//! `PERF_CPUID=CPUID perf list --details metrics`) and the perf JSON of newer kernel trees
//! (Linux 6.12's, 7.2's: the tree's `tools/perf/pmu-events/arch/x86/DIR` with perf's script's
//! and common metrics, as [`crate::perf_metrics`] reads them). perf 6.1 calls Intel's
//! `Info_System_DRAM_BW_Use` `DRAM_BW_Use`, Linux 6.12 and 7.2 `tma_info_system_dram_bw_use`.
//!
//! Nothing is matched by a rule on names. A release's metric is ours when ([`matched`]):
//!
//! 1. it has the name of one of ours (any case): nothing to add;
//! 2. its formula computes what exactly one of ours computes, as printed (times its scale:
//!    perf's top-down nodes are fractions printed as `100%`, perfmon's percentages;
//!    [`crate::formula`]: the metrics it reads put in place, evaluated where each event has a
//!    value of its own), or, among several of ours that do, the one whose name and its name
//!    share the longest ending where one name ends with the other, if exactly one
//!    ([`by_formula`]); for a newer release, among ours that do not have a name of that
//!    release (those are the release's own metrics, [`crate::perf_tables`]);
//! 3. (perf 6.1) a newer release has a metric of that name (any case), matched to ours by 2;
//! 4. (perf 6.1) a newer release has exactly one metric of the same description (case and
//!    spaces aside), matched to ours by 2: the same metric in both releases, whatever its
//!    formula became;
//! 5. (perf 6.1) where its formula reads an uncore PMU's raw terms (`cha@event\=0x36...@`,
//!    which no table of ours names, so that 2 cannot compare it), a newer release has
//!    exactly one metric whose description is its description's first sentence, and no other
//!    metric of perf 6.1 has that first sentence: Intel's later tables keep a metric's first
//!    sentence as its `BriefDescription` and move the rest to `PublicDescription` (perf 6.1's
//!    Skylake-SP `MEM_Read_Latency`, "Average latency of data read request to external memory
//!    (in nanoseconds). Accounts for demand loads and L1/L2 prefetches", is Linux 7.2's
//!    `tma_info_system_mem_read_latency`, "Average latency of data read request to external
//!    memory (in nanoseconds)").
//!
//! The formula comes first: a name keeps what its release computed for it. perf 6.1's
//! `IO_Read_BW` on Ice Lake-SP reads the ItoM requests, which Intel's later tables count as
//! writes (`Info_System_IO_Write_BW`), and so it is that metric, not the newer
//! `Info_System_IO_Read_BW` its description names (docs/event-data-errata.md). A name two
//! releases give two of our metrics is the newest release's, and the older release's meaning
//! is listed as not matched. Anything else is not matched, and the table's header lists it.
//! Descriptions are only compared, never written.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::GenError;
use crate::formula::{Formulas, POINTS, by_formula};
pub use crate::perf_tables::MODELS;
use crate::perf_tables::release_of;
use crate::write::{GENERATED_MARK, quoted};

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

/// The metrics of perf's table of the kernel tree's directory `x86/dir`
/// ([`crate::perf_metrics::read_dir`], its script run by `python` where given), sorted by
/// name.
///
/// # Errors
/// As [`crate::perf_metrics::read_dir`].
pub fn release_metrics(
    x86: &Path,
    dir: &str,
    python: Option<&Path>,
) -> Result<Vec<ReleaseMetric>, GenError> {
    let table = crate::perf_metrics::read_dir(x86, dir, python)?;
    Ok(table
        .metrics
        .into_iter()
        .map(|m| ReleaseMetric {
            name: m.metric.name,
            formula: m.metric.expression,
            scale: m.metric.scale,
            description: m.description,
        })
        .collect())
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
    /// The newer release has one metric whose description is the first sentence of its
    /// description, matched by formula.
    FirstSentence,
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
fn printed(formulas: &Formulas, metric: &ReleaseMetric) -> Option<[f64; POINTS]> {
    formulas
        .values(&metric.name)
        .map(|values| values.map(|v| v * metric.scale))
}

/// A release's number as numbers (`perf 6.12` is `[6, 12]`), to order releases.
fn release_number(release: &str) -> Vec<u32> {
    release
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .split('.')
        .map(|n| n.parse().unwrap_or(0))
        .collect()
}

/// A description as descriptions are compared: without its final stop, spaces and case.
fn describe(text: &str) -> String {
    text.trim_end_matches('.')
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase()
}

/// Whether `formula` reads an event in an uncore PMU's raw terms (`cha@event\=0x36...@`,
/// perf's `@` spelling of `PMU/terms/`, a PMU other than the core PMUs `cpu`, `cpu_core`,
/// `cpu_atom`).
fn reads_raw_uncore(formula: &str) -> bool {
    formula
        .split('@')
        .collect::<Vec<_>>()
        .chunks(2)
        .filter_map(|pair| pair.first().filter(|_| pair.len() == 2))
        .any(|before| {
            let start = before
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            let pmu = &before[start..];
            !pmu.is_empty() && !matches!(pmu, "cpu" | "cpu_core" | "cpu_atom")
        })
}

/// A description's first sentence (up to its first `. `), where it has more than one.
fn first_sentence(text: &str) -> Option<&str> {
    text.split_once(". ").map(|(first, _)| first)
}

/// Matches the metrics of perf 6.1's own tables (`older`) and of newer releases' JSON
/// (`newer`, each a release and its metrics) to `ours`, as the module's documentation says.
pub fn matched(
    ours: &[ReleaseMetric],
    (older_release, older): (&str, &[ReleaseMetric]),
    newer: &[(String, Vec<ReleaseMetric>)],
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
    // The newest release first: a name's match in the newest release that has it.
    let mut newer: Vec<&(String, Vec<ReleaseMetric>)> = newer.iter().collect();
    newer.sort_by_key(|(release, _)| std::cmp::Reverse(release_number(release)));
    let mut newer_match: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Matched::default();
    for (release, metrics) in &newer {
        // Ours that the release does not name: a metric of the release's own name is the
        // release's own (added from its table), not another name's meaning.
        let candidates: Vec<(String, Option<_>)> = our_values
            .iter()
            .filter(|(name, _)| !metrics.iter().any(|m| m.name.eq_ignore_ascii_case(name)))
            .cloned()
            .collect();
        let formulas = Formulas::new(
            metrics
                .iter()
                .map(|m| (m.name.as_str(), m.formula.as_str())),
            true,
        );
        for metric in metrics {
            if let Some(our) = ours
                .iter()
                .find(|m| m.name.eq_ignore_ascii_case(&metric.name))
            {
                // Ours by name: an older release's name for it is that metric.
                newer_match
                    .entry(metric.name.to_ascii_lowercase())
                    .or_insert_with(|| our.name.clone());
                continue;
            }
            match by_formula(&metric.name, printed(&formulas, metric), &candidates) {
                Some(our) => {
                    newer_match
                        .entry(metric.name.to_ascii_lowercase())
                        .or_insert_with(|| our.clone());
                    out.aliases
                        .push((metric.name.clone(), our, release.clone(), How::Formula));
                }
                None => out.unmatched.push((release.clone(), metric.name.clone())),
            }
        }
    }
    let older_formulas = Formulas::new(
        older.iter().map(|m| (m.name.as_str(), m.formula.as_str())),
        false,
    );
    for metric in older.iter().filter(|m| !is_ours(&m.name)) {
        let by_name = || newer_match.get(&metric.name.to_ascii_lowercase());
        // The one metric of the newest release with this description, matched.
        let by_description = || {
            if metric.description.is_empty() {
                return None;
            }
            let wanted = describe(&metric.description);
            newer.iter().find_map(|(_, metrics)| {
                match metrics
                    .iter()
                    .filter(|m| describe(&m.description) == wanted)
                    .collect::<Vec<_>>()
                    .as_slice()
                {
                    [one] => newer_match.get(&one.name.to_ascii_lowercase()),
                    _ => None,
                }
            })
        };
        // The one metric of the newest release whose description is this one's first
        // sentence, matched.
        let by_first_sentence = || {
            if !reads_raw_uncore(&metric.formula) {
                return None;
            }
            let wanted = describe(first_sentence(&metric.description)?);
            let sharing = older
                .iter()
                .filter(|m| {
                    first_sentence(&m.description).map(describe).as_ref() == Some(&wanted)
                        || describe(&m.description) == wanted
                })
                .count();
            if sharing != 1 {
                return None;
            }
            newer.iter().find_map(|(_, metrics)| {
                match metrics
                    .iter()
                    .filter(|m| describe(&m.description) == wanted)
                    .collect::<Vec<_>>()
                    .as_slice()
                {
                    [one] => newer_match.get(&one.name.to_ascii_lowercase()),
                    _ => None,
                }
            })
        };
        let found = by_formula(&metric.name, printed(&older_formulas, metric), &our_values)
            .map(|our| (our, How::Formula))
            .or_else(|| by_name().map(|our| (our.clone(), How::NewerName)))
            .or_else(|| by_description().map(|our| (our.clone(), How::Description)))
            .or_else(|| by_first_sentence().map(|our| (our.clone(), How::FirstSentence)));
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
    one_meaning_a_name(&mut out);
    out.unmatched.sort();
    out.unmatched.dedup();
    out
}

/// One alias a name: a name two releases give one metric is the oldest release's alias; a
/// name two releases give two metrics is the newest release's, the others' meanings listed
/// as not matched.
fn one_meaning_a_name(out: &mut Matched) {
    out.aliases.sort_by(|a, b| {
        (&a.0, &a.1, release_number(&a.2)).cmp(&(&b.0, &b.1, release_number(&b.2)))
    });
    out.aliases
        .dedup_by(|later, first| later.0 == first.0 && later.1 == first.1);
    let aliases = std::mem::take(&mut out.aliases);
    for group in aliases.chunk_by(|a, b| a.0 == b.0) {
        let Some(newest) = group.iter().max_by_key(|a| release_number(&a.2)) else {
            continue;
        };
        for other in group.iter().filter(|a| a.1 != newest.1) {
            out.unmatched.push((
                format!("{}, another metric than {}'s", other.2, newest.2),
                format!("{} ({})", other.0, other.1),
            ));
        }
        out.aliases.push(newest.clone());
    }
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
            How::FirstSentence => "first sentence of its description",
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

/// Where [`table`] reads: perf (its own tables: perf 6.1's), newer kernel trees' x86 perf JSON
/// with their versions, the Python that runs perf's scripts, and our metric tables
/// (`events/data/generated/metrics`).
pub struct Sources<'a> {
    /// The perf whose own tables are read.
    pub perf: &'a Path,
    /// Each kernel tree's `tools/perf/pmu-events/arch/x86` and its version (`linux-source-7.2
    /// 7.2.13-1 (Debian)`).
    pub kernels: &'a [(PathBuf, String)],
    /// The Python that runs perf's metric scripts ([`crate::perf_metrics`]); none: their
    /// metrics are not read.
    pub python: Option<&'a Path>,
    /// Our metric tables.
    pub metrics: &'a Path,
}

/// The TOML text of the aliases of `(model, dir, cpuid)`, a row of [`MODELS`]; `None` where
/// we have no table for the model or no kernel tree a directory for it.
///
/// # Errors
/// perf cannot run, or a file cannot be read.
pub fn table(sources: &Sources<'_>, row: (&str, &str, &str)) -> Result<Option<String>, GenError> {
    let (model, dir, cpuid) = row;
    let ours_path = sources.metrics.join(format!("{model}.toml"));
    let kernels: Vec<&(PathBuf, String)> = sources
        .kernels
        .iter()
        .filter(|(x86, _)| x86.join(dir).is_dir())
        .collect();
    if !ours_path.is_file() || kernels.is_empty() {
        return Ok(None);
    }
    let (older_release, version) = perf_release(sources.perf)?;
    let ours = our_metrics(&ours_path)?;
    let older = perf_metrics(sources.perf, cpuid)?;
    let mut lines = vec![format!(
        "{older_release}'s own tables, `PERF_CPUID={cpuid} perf list --details metrics` ({version})"
    )];
    let mut newer = Vec::new();
    for (x86, kernel_version) in kernels {
        let release = release_of(kernel_version);
        let mut files = format!("arch/x86/{dir}");
        if sources.python.is_some()
            && x86
                .join("../..")
                .join(crate::perf_metrics::script_for(dir))
                .is_file()
        {
            files.push_str(&format!(", {} {dir}", crate::perf_metrics::script_for(dir)));
        }
        if x86.join("../common/common/metrics.json").is_file() {
            files.push_str(", arch/common/common/metrics.json");
        }
        lines.push(format!(
            "{release}'s JSON, Linux kernel tools/perf/pmu-events: {files} ({kernel_version}; \
             GPL-2.0-only, names only)"
        ));
        newer.push((release, release_metrics(x86, dir, sources.python)?));
    }
    lines.push(format!("ours: events/data/generated/metrics/{model}.toml"));
    let found = matched(&ours, (&older_release, &older), &newer);
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
    fn names_match_by_formula_then_name_then_description() {
        let ours = [
            metric("Info_System_Read_BW", "A * 64 / ( 1000000000 )", ""),
            metric("Info_System_Write_BW", "B * 64 / ( 1000000000 )", ""),
            metric("Info_Thread_IPC", "I / C", ""),
            metric("Other", "I / C", ""),
            metric("Retiring", "100 * ( R / S )", ""),
            // A newer release's own metric, added to our table by its name.
            metric("insn_per_cycle", "I / C", ""),
        ];
        let newer_6_12 = vec![
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
            metric("io_bw", "b * 64 / 1e9", ""),
            // Printed as a percentage (`ScaleUnit` `100%`), as ours computes it.
            ReleaseMetric {
                scale: 100.0,
                ..metric("tma_retiring", "r / s", "")
            },
        ];
        let newer_7_2 = vec![
            metric("insn_per_cycle", "i / c", ""),
            metric("tma_info_thread_ipc", "i / c", ""),
            // The name meant writes in 6.12 and reads in 7.2: the newest meaning.
            metric("io_bw", "a * 64 / 1e9", ""),
        ];
        let older = [
            // perf 6.1 gave the reads' name the writes' formula: what it computed.
            metric("Read_BW", "B * 64 / 1000000000", "Reads  [GB / sec]."),
            // Another formula, the description of a newer release's metric.
            metric("Old_Read_BW", "A * 32 / 1000000000", "Reads [GB / sec]"),
            metric("IPC", "I / C", ""),
            metric("Lost", "Q", ""),
        ];
        let newer = [
            ("perf 6.12".to_string(), newer_6_12),
            ("perf 7.2".to_string(), newer_7_2),
        ];
        let found = matched(&ours, ("perf 6.1", &older), &newer);
        let alias = |a: &str| {
            found
                .aliases
                .iter()
                .find(|x| x.0 == a)
                .map(|x| (x.1.as_str(), x.2.as_str(), x.3))
        };
        assert_eq!(
            alias("Read_BW"),
            Some(("Info_System_Write_BW", "perf 6.1", How::Formula))
        );
        assert_eq!(
            alias("Old_Read_BW"),
            Some(("Info_System_Read_BW", "perf 6.1", How::Description))
        );
        // `I / C` is `Info_Thread_IPC`, `Other` and `insn_per_cycle`: the name's ending picks
        // one.
        assert_eq!(
            alias("IPC"),
            Some(("Info_Thread_IPC", "perf 6.1", How::Formula))
        );
        // Two releases, one metric: the older release's alias.
        assert_eq!(
            alias("tma_info_thread_ipc"),
            Some(("Info_Thread_IPC", "perf 6.12", How::Formula))
        );
        assert_eq!(
            alias("tma_retiring"),
            Some(("Retiring", "perf 6.12", How::Formula))
        );
        assert_eq!(
            alias("io_bw"),
            Some(("Info_System_Read_BW", "perf 7.2", How::Formula))
        );
        assert_eq!(alias("insn_per_cycle"), None);
        assert_eq!(
            found.unmatched,
            [
                ("perf 6.1".to_string(), "Lost".to_string()),
                ("perf 6.12".to_string(), "unknown".to_string()),
                (
                    "perf 6.12, another metric than perf 7.2's".to_string(),
                    "io_bw (Info_System_Write_BW)".to_string()
                ),
            ]
        );
    }

    /// Oracle: perf 6.1's Skylake-SP table (`PERF_CPUID=GenuineIntel-6-55-4 perf list
    /// --details metrics`, Debian's perf 6.1) and Linux 7.2's skylakex JSON: perf 6.1's
    /// `MEM_Read_Latency`, whose formula reads raw `cha@...@` terms, has the description
    /// whose first sentence is the 7.2 metric's `BriefDescription`. Before, it was not
    /// matched and `-M MEM_Read_Latency` was an unknown metric.
    #[test]
    fn a_description_whose_first_sentence_a_newer_release_kept_matches() {
        let ours = [metric(
            "tma_info_system_mem_read_latency",
            "1e9 * (OCC / INS) / (CLKS / duration_time)",
            "",
        )];
        let newer = [(
            "perf 7.2".to_string(),
            vec![
                metric(
                    "tma_info_system_mem_read_latency",
                    "1e9 * (OCC / INS) / (CLKS / duration_time)",
                    "Average latency of data read request to external memory (in nanoseconds)",
                ),
                metric("tma_other", "X", "Something else"),
                metric("tma_twin_a", "A", "Twin"),
                metric("tma_twin_b", "B", "Twin"),
            ],
        )];
        let older = [
            metric(
                "MEM_Read_Latency",
                "1000000000 * (cha@event\\=0x36@ / cha@event\\=0x35@) / (Socket_CLKS / duration_time)",
                "Average latency of data read request to external memory (in nanoseconds). \
                 Accounts for demand loads and L1/L2 prefetches",
            ),
            // A first sentence two newer metrics share matches neither.
            metric("Twin_Old", "cbox@event\\=0x1@", "Twin. More words"),
            // One sentence only: no first sentence to compare.
            metric("Something", "S", "Something"),
        ];
        let found = matched(&ours, ("perf 6.1", &older), &newer);
        assert_eq!(
            found.aliases,
            [(
                "MEM_Read_Latency".to_string(),
                "tma_info_system_mem_read_latency".to_string(),
                "perf 6.1".to_string(),
                How::FirstSentence
            )]
        );
        assert!(found.unmatched.iter().any(|(_, name)| name == "Twin_Old"));
        assert!(reads_raw_uncore("1e9 * (cha@event\\=0x36@ / X)"));
        assert!(!reads_raw_uncore(
            "cpu@UOPS_EXECUTED.THREAD\\,cmask\\=1@ / X"
        ));
        assert!(!reads_raw_uncore("A / B"));
        assert!(!reads_raw_uncore("cpu_core@MEM_LOAD_RETIRED.L1_MISS@ / X"));
    }
}
