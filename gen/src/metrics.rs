//! Metrics per CPU model: Intel perfmon's `*/metrics/*_metrics*.json` (each formula over
//! aliases the entry binds to event names and constants), and the table format every metric
//! source writes (perf's tables of the x86 and Arm models too). Facts
//! carry over (the metric's name, groups, formula, scale and unit); description sentences do
//! not. One deterministic TOML file per model, `metrics/ID.toml`, headed like the event
//! tables.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::GenError;
use crate::model::Provenance;
use crate::write::{GENERATED_MARK, quoted};

/// The perfmon metric files we generate and the model ids they belong to.
pub const PERFMON_FILES: &[(&str, &str)] = &[
    ("alderlake_metrics_goldencove_core.json", "adl_glc"),
    ("arrowlake_metrics_lioncove_core.json", "arl_lnc"),
    ("broadwell_metrics.json", "bdw"),
    ("broadwellx_metrics.json", "bdw_ep"),
    ("cascadelakex_metrics.json", "clx"),
    ("clearwaterforest_metrics.json", "cwf"),
    ("emeraldrapids_metrics.json", "emr"),
    ("grandridge_metrics.json", "grr"),
    ("graniterapids_metrics.json", "gnr"),
    ("haswell_metrics.json", "hsw"),
    ("haswellx_metrics.json", "hsw_ep"),
    ("icelake_metrics.json", "icl"),
    ("icelakex_metrics.json", "icx"),
    ("lunarlake_metrics_lioncove_core.json", "lnl_lnc"),
    ("meteorlake_metrics_redwoodcove_core.json", "mtl_rwc"),
    ("rocketlake_metrics.json", "rkl"),
    ("sapphirerapids_metrics.json", "spr"),
    ("sierraforest_metrics.json", "srf"),
    ("skylake_metrics.json", "skl"),
    ("skylakex_metrics.json", "skx"),
    ("tigerlake_metrics.json", "tgl"),
];

/// The source line of the kernel's tables.
pub const KERNEL_SOURCE: &str =
    "Linux kernel tools/perf/pmu-events (https://git.kernel.org, GPL-2.0-only; facts only)";

/// perfmon's constants and the names our evaluator gives them (`None`: taken as written, a
/// number).
const PERFMON_CONSTANTS: &[(&str, &str)] = &[
    ("HYPERTHREADING_ON", "#smt_on"),
    ("THREADS_PER_CORE", "#threads_per_core"),
    ("DURATIONTIMEINMILLISECONDS", "(duration_time * 1000)"),
    ("DURATIONTIMEINSECONDS", "duration_time"),
    ("SYSTEM_TSC_FREQ", "#system_tsc_freq"),
    ("SOCKET_COUNT", "#num_packages"),
    ("CHAS_PER_SOCKET", "#chas_per_socket"),
    ("CORES_PER_SOCKET", "#cores_per_socket"),
    (
        "system.sockets[0].cpus.count * system.socket_count",
        "#num_cpus_online",
    ),
];

/// One generated metric.
#[derive(Clone, Debug, PartialEq)]
pub struct GenMetric {
    /// The name `-M` takes.
    pub name: String,
    /// Its groups, sorted, each once.
    pub groups: Vec<String>,
    /// The formula in our evaluator's syntax (perf's).
    pub expression: String,
    /// What the value is multiplied by to print.
    pub scale: f64,
    /// The unit printed after it.
    pub unit: String,
    /// perf's `MetricThreshold` in our syntax (0 where the value is good), if it has one.
    pub threshold: Option<String>,
}

/// One model's metrics.
#[derive(Clone, Debug, PartialEq)]
pub struct GenMetrics {
    /// The model id they belong to.
    pub model: String,
    /// Where they came from.
    pub source: Provenance,
    /// The events the formulas read that the model's database may not name, as raw events
    /// (perf's kernel names of AMD core events), sorted.
    pub events: Vec<(String, String)>,
    /// The metrics, sorted by name.
    pub metrics: Vec<GenMetric>,
    /// perf's JSON's mean retire latency of each event that has one, sorted by event
    /// (`[retire_latency]`, which a formula's `EVENT:R` reads).
    pub retire_latency: Vec<(String, f64)>,
    /// More lines of the header (more sources, what was added or left out), each written
    /// after `# `.
    pub notes: Vec<String>,
}

/// A name in our syntax: perf's escapes before anything a name cannot hold.
fn escaped(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '#' | '@' | ':')) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A perfmon event with its modifiers as our event strings write them: `:c1` is `:c=1`,
/// `:e1` `:e=1`, `:i1` `:i=1`, `:SUP` `:k`, `:USER` `:u`; others stay as written (perf's own,
/// which the database refuses by name).
fn perfmon_event(name: &str) -> String {
    let mut parts = name.split(':');
    let mut out = parts.next().unwrap_or_default().to_string();
    for modifier in parts {
        out.push(':');
        let (letter, digits) = modifier.split_at(modifier.len().min(1));
        match modifier {
            "SUP" => out.push('k'),
            "USER" => out.push('u'),
            _ if matches!(letter, "c" | "e" | "i")
                && !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit()) =>
            {
                out.push_str(letter);
                out.push('=');
                out.push_str(digits);
            }
            _ => out.push_str(modifier),
        }
    }
    out
}

/// perfmon's formula with each alias replaced by its event (escaped) or constant.
fn substituted(formula: &str, aliases: &[(String, String)]) -> String {
    let chars: Vec<char> = formula.chars().collect();
    let mut out = String::with_capacity(formula.len() * 2);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            // A number, with its exponent (`1e9` holds no alias `e9`).
            while i < chars.len() {
                let c = chars[i];
                let sign = matches!(c, '+' | '-') && matches!(chars[i - 1], 'e' | 'E');
                if c.is_ascii_alphanumeric() || c == '.' || sign {
                    out.push(c);
                    i += 1;
                } else {
                    break;
                }
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            match aliases.iter().find(|(alias, _)| *alias == word) {
                Some((_, value)) => out.push_str(value),
                None => match PERFMON_CONSTANTS.iter().find(|(name, _)| *name == word) {
                    Some((_, ours)) => out.push_str(ours),
                    None => out.push_str(&word),
                },
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    // perfmon spaces every token (`> =` too); one space between tokens is enough.
    out.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("> =", ">=")
        .replace("< =", "<=")
}

/// perfmon's threshold of `entry` (its `Threshold`: a `Formula` over `ThresholdMetrics`, each
/// the `LegacyName` of a metric of the file, in the metrics' own units as perfmon's formulas
/// are) in our syntax, each metric read by its name (`names`: `LegacyName` to `MetricName`);
/// `None` where it has none, names a metric the file lacks or does not parse.
fn perfmon_threshold(entry: &Value, names: &HashMap<&str, &str>) -> Option<String> {
    let threshold = entry.get("Threshold")?;
    let formula = text(threshold, "Formula");
    if formula.is_empty() {
        return None;
    }
    let mut aliases = Vec::new();
    for item in threshold.get("ThresholdMetrics")?.as_array()? {
        let name = escaped(names.get(text(item, "Value"))?);
        // A name starting with a digit (`4K_Aliasing`) would read as a number.
        let name = match name.starts_with(|c: char| c.is_ascii_digit()) {
            true => format!("\\{name}"),
            false => name,
        };
        aliases.push((text(item, "Alias").to_string(), name));
    }
    let ours = substituted(formula, &aliases);
    counterhal_events::expression::parse(&ours).ok()?;
    Some(ours)
}

fn text<'v>(entry: &'v Value, key: &str) -> &'v str {
    entry.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Groups from perf's `A;B` list, sorted, each once, without empty ones.
pub(crate) fn groups(list: &str) -> Vec<String> {
    let mut out: Vec<String> = list
        .split([';', ','])
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(String::from)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// One perfmon metric entry.
fn perfmon_metric(entry: &Value, file: &str) -> Result<GenMetric, GenError> {
    let name = text(entry, "MetricName");
    let formula = text(entry, "Formula");
    if name.is_empty() || formula.is_empty() {
        return Err(GenError::Data(format!(
            "{file}: a metric without `MetricName` or `Formula`"
        )));
    }
    let mut aliases = Vec::new();
    for (list, is_event) in [("Events", true), ("Constants", false)] {
        for item in entry
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (alias, value) = (text(item, "Alias"), text(item, "Name"));
            let ours = if is_event {
                escaped(&perfmon_event(value))
            } else {
                match PERFMON_CONSTANTS.iter().find(|(n, _)| *n == value) {
                    Some((_, ours)) => (*ours).to_string(),
                    None if value.parse::<f64>().is_ok() => value.to_string(),
                    None => {
                        return Err(GenError::Data(format!(
                            "{file}: metric `{name}`: unknown constant `{value}`; add it to \
                             metrics::PERFMON_CONSTANTS"
                        )));
                    }
                }
            };
            aliases.push((alias.to_string(), ours));
        }
    }
    let mut groups = groups(text(entry, "MetricGroup"));
    // perf calls TMA's first level (the four top-down shares) TopdownL1.
    if groups.iter().any(|g| g == "TmaL1") && !name.starts_with("Info_") {
        groups.push("TopdownL1".to_string());
        groups.sort();
    }
    Ok(GenMetric {
        name: name.to_string(),
        groups,
        expression: substituted(formula, &aliases),
        scale: 1.0,
        unit: text(entry, "UnitOfMeasure").to_string(),
        threshold: None,
    })
}

fn read_json(path: &Path) -> Result<Value, GenError> {
    let text = std::fs::read_to_string(path).map_err(|e| GenError::io(path, &e))?;
    serde_json::from_str(&text).map_err(|e| GenError::Data(format!("{}: {e}", path.display())))
}

/// The metrics of every file of [`PERFMON_FILES`] found under `root/*/metrics/`, in the
/// table's order (a file missing from the snapshot is skipped).
///
/// # Errors
/// A file that cannot be read or is not perfmon's layout.
pub fn perfmon(root: &Path, commit: &str) -> Result<Vec<GenMetrics>, GenError> {
    let mut dirs: Vec<String> = std::fs::read_dir(root)
        .map_err(|e| GenError::io(root, &e))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for &(file, model) in PERFMON_FILES {
        let Some(dir) = dirs
            .iter()
            .find(|d| root.join(d).join("metrics").join(file).is_file())
        else {
            continue;
        };
        let relative = format!("{dir}/metrics/{file}");
        let json = read_json(&root.join(&relative))?;
        let entries = json
            .get("Metrics")
            .and_then(Value::as_array)
            .ok_or_else(|| GenError::Data(format!("{relative}: no `Metrics` array")))?;
        let mut metrics = entries
            .iter()
            .map(|e| perfmon_metric(e, &relative))
            .collect::<Result<Vec<_>, _>>()?;
        // A threshold names the metrics it reads by their `LegacyName`.
        let names: HashMap<&str, &str> = entries
            .iter()
            .map(|e| (text(e, "LegacyName"), text(e, "MetricName")))
            .collect();
        for (metric, entry) in metrics.iter_mut().zip(entries) {
            metric.threshold = perfmon_threshold(entry, &names);
        }
        out.push(table(
            model,
            crate::perfmon::SOURCE,
            commit,
            &relative,
            metrics,
        )?);
    }
    Ok(out)
}

/// perf's `ScaleUnit` (`100%`, `1e3per_1k_instr`, `6.1e-5MiB`) as scale and unit.
pub(crate) fn scale_unit(text: &str) -> Result<(f64, String), String> {
    let bytes = text.as_bytes();
    let mut end = 0;
    while end < bytes.len() {
        let c = bytes[end];
        let sign = matches!(c, b'+' | b'-') && end > 0 && matches!(bytes[end - 1], b'e' | b'E');
        let exponent = matches!(c, b'e' | b'E')
            && bytes
                .get(end + 1)
                .is_some_and(|n| n.is_ascii_digit() || matches!(n, b'+' | b'-'));
        if c.is_ascii_digit() || c == b'.' || sign || exponent {
            end += 1;
        } else {
            break;
        }
    }
    let scale = text[..end]
        .parse::<f64>()
        .map_err(|_| format!("`ScaleUnit` `{text}` does not start with a number"))?;
    Ok((scale, text[end..].to_string()))
}

/// One model's table, its metrics sorted by name (a name given twice with different facts is
/// an error).
pub(crate) fn table(
    model: &str,
    source: &str,
    commit: &str,
    file: &str,
    mut metrics: Vec<GenMetric>,
) -> Result<GenMetrics, GenError> {
    metrics.sort_by(|a, b| a.name.cmp(&b.name));
    // The same metric in two files of one directory counts once.
    metrics.dedup();
    if let Some(pair) = metrics.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(GenError::Data(format!(
            "{file}: metric `{}` is given twice",
            pair[0].name
        )));
    }
    Ok(GenMetrics {
        model: model.to_string(),
        source: Provenance {
            source: source.to_string(),
            commit: commit.to_string(),
            file: file.to_string(),
        },
        events: Vec::new(),
        metrics,
        retire_latency: Vec::new(),
        notes: Vec::new(),
    })
}

/// The TOML text of one model's metrics.
pub fn metrics_toml(table: &GenMetrics) -> String {
    let mut out = String::new();
    let p = &table.source;
    let _ = writeln!(out, "# {GENERATED_MARK} (counterhal-gen metrics)");
    let _ = writeln!(out, "# source: {}", p.source);
    let _ = writeln!(out, "# commit: {}", p.commit);
    let _ = writeln!(out, "# file: {}", p.file);
    for note in &table.notes {
        let _ = writeln!(out, "# {note}");
    }
    out.push('\n');
    let _ = writeln!(out, "model = {}", quoted(&table.model));
    if !table.events.is_empty() {
        out.push_str("\n[events]\n");
        for (name, raw) in &table.events {
            let _ = writeln!(out, "{} = {}", quoted(name), quoted(raw));
        }
    }
    if !table.retire_latency.is_empty() {
        out.push_str("\n[retire_latency]\n");
        for (event, mean) in &table.retire_latency {
            let _ = writeln!(out, "{} = {mean:?}", quoted(event));
        }
    }
    for metric in &table.metrics {
        out.push_str("\n[[metric]]\n");
        let _ = writeln!(out, "name = {}", quoted(&metric.name));
        if !metric.groups.is_empty() {
            let list: Vec<String> = metric.groups.iter().map(|g| quoted(g)).collect();
            let _ = writeln!(out, "groups = [{}]", list.join(", "));
        }
        let _ = writeln!(out, "expression = {}", quoted(&metric.expression));
        if metric.scale != 1.0 {
            let _ = writeln!(out, "scale = {:?}", metric.scale);
        }
        if !metric.unit.is_empty() {
            let _ = writeln!(out, "unit = {}", quoted(&metric.unit));
        }
        if let Some(threshold) = &metric.threshold {
            let _ = writeln!(out, "threshold = {}", quoted(threshold));
        }
    }
    out
}

/// Writes each table to `out/ID.toml`; returns the paths written, in order.
///
/// # Errors
/// The directory or a file cannot be written.
pub fn write_metrics(tables: &[GenMetrics], out: &Path) -> Result<Vec<String>, GenError> {
    std::fs::create_dir_all(out).map_err(|e| GenError::io(out, &e))?;
    let mut written = Vec::new();
    for table in tables {
        let path = out.join(format!("{}.toml", table.model));
        std::fs::write(&path, metrics_toml(table)).map_err(|e| GenError::io(&path, &e))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_become_events_and_constants_and_numbers_stay() {
        let aliases = vec![
            ("a".to_string(), escaped("UOPS.X:c1")),
            ("e".to_string(), escaped("OCR.Y:msr=0x1")),
            ("smt_on".to_string(), "#smt_on".to_string()),
        ];
        assert_eq!(
            substituted(
                "100 * ( a / 1e9 ) if smt_on else e + DURATIONTIMEINSECONDS",
                &aliases
            ),
            "100 * ( UOPS.X:c1 / 1e9 ) if #smt_on else OCR.Y:msr\\=0x1 + duration_time"
        );
    }

    #[test]
    fn perfmon_modifiers_become_ours() {
        assert_eq!(perfmon_event("A.B:c1:e1"), "A.B:c=1:e=1");
        assert_eq!(perfmon_event("A.B:i1:c12"), "A.B:i=1:c=12");
        assert_eq!(perfmon_event("A:SUP"), "A:k");
        assert_eq!(perfmon_event("A:USER"), "A:u");
        assert_eq!(perfmon_event("A:perf_metrics"), "A:perf_metrics");
        assert_eq!(perfmon_event("A:u0xfc"), "A:u0xfc");
        assert_eq!(perfmon_event("A.B"), "A.B");
    }

    #[test]
    fn scale_units_split_as_perf_writes_them() {
        assert_eq!(scale_unit("100%").unwrap(), (100.0, "%".to_string()));
        assert_eq!(
            scale_unit("1e3per_1k_instr").unwrap(),
            (1000.0, "per_1k_instr".to_string())
        );
        assert_eq!(
            scale_unit("6.103515625e-5MiB").unwrap(),
            (6.103515625e-5, "MiB".to_string())
        );
        assert!(scale_unit("MiB").unwrap_err().contains("`MiB`"));
    }

    /// Oracle: Intel perfmon's SKX metrics (commit 6dadedf): `Core_Bound`'s threshold is
    /// `a > 10 & b > 20`, `a` its own `LegacyName` `metric_TMA_..Core_Bound(%)`, `b`
    /// `Backend_Bound`'s.
    #[test]
    fn perfmon_thresholds_read_metrics_by_their_names() {
        let threshold = |formula: &str, values: &[(&str, &str)]| {
            let metrics: Vec<Value> = values
                .iter()
                .map(|(alias, value)| serde_json::json!({"Alias": alias, "Value": value}))
                .collect();
            serde_json::json!({
                "MetricName": "M",
                "Threshold": {"Formula": formula, "ThresholdMetrics": metrics},
            })
        };
        let names = HashMap::from([
            ("metric_TMA_..Core_Bound(%)", "Core_Bound"),
            ("metric_TMA_Backend_Bound(%)", "Backend_Bound"),
            ("metric_4K_Aliasing", "4K_Aliasing"),
        ]);
        let core_bound = threshold(
            "a > 10 & b > 20",
            &[
                ("a", "metric_TMA_..Core_Bound(%)"),
                ("b", "metric_TMA_Backend_Bound(%)"),
            ],
        );
        assert_eq!(
            perfmon_threshold(&core_bound, &names).as_deref(),
            Some("Core_Bound > 10 & Backend_Bound > 20")
        );
        let digit = threshold("a > 20", &[("a", "metric_4K_Aliasing")]);
        assert_eq!(
            perfmon_threshold(&digit, &names).as_deref(),
            Some("\\4K_Aliasing > 20")
        );
        let unknown = threshold("a > 20", &[("a", "metric_TMA_Nowhere(%)")]);
        assert_eq!(perfmon_threshold(&unknown, &names), None);
        assert_eq!(perfmon_threshold(&serde_json::json!({}), &names), None);
    }

    #[test]
    fn groups_are_sorted_and_unique() {
        assert_eq!(groups("b;a;;b"), ["a", "b"]);
    }
}
