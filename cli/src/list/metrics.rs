//! `list --metrics`: the metrics `stat -M` takes here, each marked where it cannot run.

use std::fmt::Write as _;

use counterhal::metrics::MetricDef;
use serde_json::json;

use crate::error::CliError;
use crate::stat::plan::runnable::{is_uncore, offered};

/// `list --metrics`: the metrics of `model` and the portable ones whose name or group holds
/// `pattern` (any case), then their groups; or the same as one JSON document.
pub(super) fn metrics(
    system: &counterhal_system::System,
    model: Option<&str>,
    pattern: &str,
    json: bool,
    details: bool,
    resolve: &dyn Fn(&str) -> Option<counterhal::Error>,
) -> Result<String, CliError> {
    let lower = pattern.to_ascii_lowercase();
    let (offered, hidden) =
        offered(&system.clone().into(), model, resolve).map_err(CliError::failed)?;
    let matches = |m: &MetricDef| {
        std::iter::once(m.name)
            .chain(m.groups.iter().copied())
            .any(|n| n.to_ascii_lowercase().contains(&lower))
    };
    let (metrics, cannot): (Vec<&MetricDef>, Vec<Option<String>>) = offered
        .into_iter()
        .filter(|(m, _)| matches(m))
        .map(|(m, why)| (m, why.map(|e| cannot_run(&e))))
        .unzip();
    let hidden: Vec<(&MetricDef, String)> = hidden
        .into_iter()
        .filter(|(m, _)| matches(m))
        .map(|(m, e)| (m, cannot_run(&e)))
        .collect();
    let mut groups: Vec<&str> = metrics
        .iter()
        .flat_map(|m| m.groups.iter().copied())
        .collect();
    groups.sort_unstable_by_key(|g| g.to_ascii_lowercase());
    groups.dedup();
    let mut out = String::new();
    if json {
        let list: Vec<_> = metrics
            .iter()
            .zip(&cannot)
            .map(|(m, why)| {
                json!({
                    "name": m.name,
                    "groups": m.groups,
                    "expression": m.expression(),
                    "scale": m.scale,
                    "unit": m.unit,
                    "model": m.model,
                    "cannot_run": why,
                })
            })
            .collect();
        let not_offered: Vec<_> = hidden
            .iter()
            .map(|(m, why)| json!({ "name": m.name, "groups": m.groups, "cannot_run": why }))
            .collect();
        let document = json!({
            "model": model,
            "groups": groups,
            "metrics": list,
            "portable_not_offered": not_offered,
        });
        _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&document).expect("JSON of plain values")
        );
        return Ok(out);
    }
    let own = metrics.iter().filter(|m| m.model.is_some()).count();
    _ = writeln!(
        out,
        "metrics for CPU model {} ({own} of the model, {} portable)",
        model.unwrap_or("none (portable metrics only)"),
        metrics.len() - own
    );
    for (heading, portable) in [("model metrics", false), ("portable metrics", true)] {
        let section: Vec<(&&MetricDef, &Option<String>)> = metrics
            .iter()
            .zip(&cannot)
            .filter(|(m, _)| m.model.is_none() == portable)
            .collect();
        if section.is_empty() {
            continue;
        }
        _ = writeln!(out, "\n{heading}:");
        for (m, why) in section {
            let unit = match (m.scale, m.unit) {
                (1.0, unit) => unit.to_string(),
                (scale, unit) => format!("{scale} {unit}"),
            };
            let groups = match m.groups.is_empty() {
                true => "no group".to_string(),
                false => m.groups.join(", "),
            };
            _ = writeln!(out, "  {:<40} [{groups}] {unit}", m.name);
            if details {
                _ = writeln!(out, "      {}", m.expression());
            }
            if let Some(why) = why {
                _ = writeln!(out, "      cannot run here: {why}");
            }
        }
    }
    if !hidden.is_empty() {
        _ = writeln!(out, "\nportable metrics not offered with this model:");
        for (m, why) in &hidden {
            _ = writeln!(out, "  {:<40} {why}", m.name);
        }
    }
    _ = writeln!(out, "\ngroups ({}): {}", groups.len(), groups.join(", "));
    let marked = cannot.iter().flatten().count();
    _ = writeln!(
        out,
        "\n{} metrics listed ({marked} marked `cannot run here`); `stat -M NAME|GROUP` counts them{}",
        metrics.len(),
        match details {
            true => "",
            false => "; --details shows their formulas",
        }
    );
    Ok(out)
}

/// Why a metric cannot run, as `list --metrics` marks it: the error, and `uncore PMU` first
/// when an uncore event or fact is the reason: the PMU absent here where its events resolve
/// (the model's uncore table), else not in the event database (AMD's uncore events of the
/// kernel's tables, which count only by their PMU's terms).
fn cannot_run(error: &counterhal::Error) -> String {
    if is_uncore_name(error) {
        format!("uncore PMU not here: {error}")
    } else if is_uncore(error) {
        format!("uncore PMU (its events are not in the event database): {error}")
    } else {
        error.to_string()
    }
}

/// Whether `error` is an uncore event's whose PMU is absent (the model's uncore table has
/// it), an absent PMU's (`power`, `uncore_cha_0`), or a fact that counts the PMUs of a kind
/// absent here (the Linux backend's and the metrics' words).
fn is_uncore_name(error: &counterhal::Error) -> bool {
    let message = error.message();
    [
        "is an uncore event of PMU",
        "no PMU `",
        "`#chas_per_socket`",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}
