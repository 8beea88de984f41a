//! `encode` of perf's PMU syntax (`pmu/terms/`, `power/energy-pkg/`,
//! `uncore_imc/cas_count_read/`): every attr perf opens for it system-wide, on each PMU it
//! names (each box of a wildcard) and each CPU of that PMU's cpumask, with the alias's scale
//! and unit, read from the PMU tree (`/sys`, or `--sysfs DIR`).

use std::fmt::Write as _;

use counterhal_hal::{Encoding, PmuEvent};
use serde_json::{Value, json};

/// One JSON object per attr and CPU perf opens: `pmu`, `type`, `config`, `config1`, `config2`
/// (`config3` where set), `cpu` (-1: any CPU), `scale` and `unit` where the alias gives them,
/// `snapshot` and `per_pkg` where set, and the exclude bits.
pub fn to_json(name: &str, events: &[PmuEvent], backend: &str, model: Option<&str>) -> Vec<Value> {
    let mut objects = Vec::new();
    for event in events {
        let attr = &event.attr;
        let bits = attr.exclude_bits();
        for cpu in event.open_cpus() {
            let mut object = json!({
                "event": name,
                "backend": backend,
                "cpu_model": model,
                "family": "perf",
                "text": Encoding::Perf(attr.clone()).to_string(),
                "pmu": event.pmu,
                "type": attr.type_,
                "config": attr.config,
                "config1": attr.config1,
                "config2": attr.config2,
                "cpu": cpu,
                "exclude_user": bits.user,
                "exclude_kernel": bits.kernel,
                "exclude_hv": bits.hv,
                "exclude_idle": bits.idle,
                "exclude_host": bits.host,
                "exclude_guest": bits.guest,
            });
            if attr.config3 != 0 {
                object["config3"] = json!(attr.config3);
            }
            if let Some(scale) = event.scale {
                object["scale"] = json!(scale);
            }
            if let Some(unit) = &event.unit {
                object["unit"] = json!(unit);
            }
            if event.snapshot {
                object["snapshot"] = json!(true);
            }
            if event.per_pkg {
                object["per_pkg"] = json!(true);
            }
            objects.push(object);
        }
    }
    objects
}

/// The text: the attr on the first line (one PMU), or the PMUs and an attr a line (a
/// wildcard's boxes); then where perf opens it and how its count is shown.
pub fn to_text(name: &str, events: &[PmuEvent], label: &str, model: Option<&str>) -> String {
    let model = model.unwrap_or("generic");
    let mut out = String::new();
    let encoding = |event: &PmuEvent| Encoding::Perf(event.attr.clone()).to_string();
    match events {
        [one] => _ = writeln!(out, "{name} [{label}, {model}]: {}", encoding(one)),
        many => {
            let pmus: Vec<&str> = many.iter().map(|e| e.pmu.as_str()).collect();
            _ = writeln!(
                out,
                "{name} [{label}, {model}]: on {} PMUs ({}), as perf opens it",
                many.len(),
                pmus.join(", ")
            );
            for event in many {
                _ = writeln!(out, "  {}", encoding(event));
            }
        }
    }
    let mut shown: Vec<String> = Vec::new();
    for event in events {
        let mut lines = Vec::new();
        if let Some(cpus) = &event.cpus {
            lines.push(format!(
                "  CPUs: {cpus} (the PMU's cpumask or cpus: one open on each, system-wide)"
            ));
        }
        match (event.scale, &event.unit) {
            (Some(scale), Some(unit)) => lines.push(format!("  scale: {scale:e} {unit}")),
            (Some(scale), None) => lines.push(format!("  scale: {scale:e}")),
            (None, Some(unit)) => lines.push(format!("  unit: {unit}")),
            (None, None) => {}
        }
        if event.snapshot {
            lines.push("  snapshot: the count is a reading, not a sum".to_string());
        }
        if event.per_pkg {
            lines.push("  per-pkg: one count per package".to_string());
        }
        for line in lines {
            if !shown.contains(&line) {
                _ = writeln!(out, "{line}");
                shown.push(line);
            }
        }
    }
    out
}
