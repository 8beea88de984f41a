//! The metrics of the kernel's Arm cores (`tools/perf/pmu-events/arch/arm64/*/*/metrics.json`),
//! as perf's `jevents.py` builds them: an entry naming an `ArchStdEvent` takes the standard
//! metric of that name (`sbsa.json`'s topdown level 1) for every field it does not give itself.
//! A formula that calls `strcmp_cpuid_str` (perf compares the running CPU's MIDR there, which a
//! table shared by two cores cannot fix) is left out and counted in the file's header.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::GenError;
use crate::arm64::model_id;
use crate::metrics::{GenMetric, GenMetrics, groups, scale_unit, table};

/// The source line of the generated Arm metric files.
pub const SOURCE: &str = "Linux kernel perf JSON (tools/perf/pmu-events/arch/arm64, GPL-2.0; facts only: names, groups, formulas, units)";

fn read(path: &Path) -> Result<Vec<Value>, GenError> {
    let text = std::fs::read_to_string(path).map_err(|e| GenError::io(path, &e))?;
    match serde_json::from_str(&text) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(_) => Err(GenError::Data(format!("{}: not an array", path.display()))),
        Err(e) => Err(GenError::Data(format!("{}: {e}", path.display()))),
    }
}

fn field<'v>(entry: &'v Value, key: &str) -> Option<&'v str> {
    entry
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// The metric tables of every core directory of `mapfile.csv` with a `metrics.json`, in
/// `mapfile.csv`'s order; `version` goes into each header.
///
/// # Errors
/// Unreadable files, an `ArchStdEvent` naming no standard metric, an entry without a name or
/// formula, a malformed `ScaleUnit`.
pub fn tables(arch: &Path, version: &str) -> Result<Vec<GenMetrics>, GenError> {
    let map_path = arch.join("mapfile.csv");
    let map = std::fs::read_to_string(&map_path).map_err(|e| GenError::io(&map_path, &e))?;
    // The standard metrics: every metric of the JSON files at the top of the tree.
    let mut standard: BTreeMap<String, Value> = BTreeMap::new();
    let mut top: Vec<_> = std::fs::read_dir(arch)
        .map_err(|e| GenError::io(arch, &e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    top.sort();
    for file in &top {
        for entry in read(file)? {
            if let Some(name) = field(&entry, "MetricName") {
                standard.insert(name.to_ascii_lowercase(), entry);
            }
        }
    }
    let mut dirs: Vec<String> = Vec::new();
    for entry in crate::arm64::mapfile(&map)? {
        if !dirs.contains(&entry.dir) {
            dirs.push(entry.dir);
        }
    }
    let mut out = Vec::new();
    for dir in dirs {
        let path = arch.join(&dir).join("metrics.json");
        if !path.is_file() {
            continue;
        }
        let relative = format!("tools/perf/pmu-events/arch/arm64/{dir}/metrics.json");
        let mut metrics = Vec::new();
        let mut left_out = 0;
        let mut from_standard = 0;
        for entry in read(&path)? {
            let std = match field(&entry, "ArchStdEvent") {
                Some(name) => {
                    from_standard += 1;
                    Some(standard.get(&name.to_ascii_lowercase()).ok_or_else(|| {
                        GenError::Data(format!("{relative}: no standard metric `{name}`"))
                    })?)
                }
                None => None,
            };
            let get = |key: &str| field(&entry, key).or_else(|| std.and_then(|s| field(s, key)));
            let (Some(name), Some(expression)) = (get("MetricName"), get("MetricExpr")) else {
                return Err(GenError::Data(format!(
                    "{relative}: a metric without a name or formula"
                )));
            };
            if expression.contains("strcmp_cpuid_str") {
                left_out += 1;
                continue;
            }
            let (scale, unit) = match get("ScaleUnit") {
                Some(text) => scale_unit(text)
                    .map_err(|why| GenError::Data(format!("{relative}: {name}: {why}")))?,
                None => (1.0, String::new()),
            };
            metrics.push(GenMetric {
                name: name.to_string(),
                groups: groups(get("MetricGroup").unwrap_or("")),
                expression: expression.split_whitespace().collect::<Vec<_>>().join(" "),
                scale,
                unit,
                threshold: None,
            });
        }
        let mut file = relative;
        if from_standard > 0 {
            file.push_str(&format!(
                " with sbsa.json ({from_standard} standard metrics named)"
            ));
        }
        if left_out > 0 {
            file.push_str(&format!(
                "; left out: {left_out} metrics whose formula calls strcmp_cpuid_str"
            ));
        }
        out.push(table(
            model_id(&dir),
            SOURCE,
            &format!("Linux {version}"),
            &file,
            metrics,
        )?);
    }
    Ok(out)
}
