//! perf 7.2's words and digits for metrics (tools/perf/util/stat-shadow.c's
//! `generic_metric`): its default metrics beside perf's default events, and the number of
//! every metric it computes from a JSON formula (`-M`).

use super::metrics::Metric;

/// perf 7.2's number for a metric computed from its formula, as `generic_metric` prints it
/// (perf 6.1's the same): `%8.1f` where the metric has a unit, `%8.2f` where it has none;
/// `nan` (C's `printf` of a NaN) where it could not be computed, as perf 7.2 prints a metric
/// whose events did not count.
pub fn generic_metric(value: Option<f64>, unit: &str) -> String {
    match value.filter(|v| !v.is_nan()) {
        Some(value) if unit.is_empty() => format!("{value:>8.2}"),
        Some(value) => format!("{value:>8.1}"),
        None => format!("{:>8}", "nan"),
    }
}

/// The factor of a rate's prefix: `K/sec` 1e3, `M/sec` 1e6, `G/sec` 1e9, `/sec` 1; `None` for
/// a unit that is no rate.
pub fn rate_factor(unit: &str) -> Option<f64> {
    let prefix = unit.strip_suffix("/sec")?;
    match prefix {
        "" => Some(1.0),
        "K" => Some(1e3),
        "M" => Some(1e6),
        "G" => Some(1e9),
        _ => None,
    }
}

/// perf 7.2's default metric beside a default event (`name`), from the metric perf 6.1
/// prints beside it: its value, its `printf` format's decimals and its words (unit and
/// name). perf 7.2's metrics are `pmu-events/arch/common/common/metrics.json`'s of the groups
/// `Default` to `Default4`, each printed by stat-shadow.c's `generic_metric`: scaled by its
/// `ScaleUnit`, `%8.1f` and `UNIT  NAME`, or `%8.2f` and `NAME` where it has no unit. `None`
/// for an event beside which perf 7.2 prints none (`L1-dcache-loads`).
pub fn default_metric(name: &str, metric: &Metric) -> Option<(f64, usize, String)> {
    let base = name.split(':').next().unwrap_or(name);
    let per_second = || Some(metric.value * rate_factor(&metric.unit)?);
    let with_unit =
        |value: f64, unit: &str, name: &str| Some((value, 1, format!("{unit}  {name}")));
    let share = metric.value / 100.0;
    match (base, metric.unit.as_str()) {
        ("task-clock" | "cpu-clock", "CPUs utilized") => {
            with_unit(metric.value, "CPUs", "CPUs_utilized")
        }
        ("context-switches", _) => with_unit(per_second()?, "cs/sec", "cs_per_second"),
        ("cpu-migrations", _) => {
            with_unit(per_second()?, "migrations/sec", "migrations_per_second")
        }
        ("page-faults", _) => with_unit(per_second()?, "faults/sec", "page_faults_per_second"),
        ("cycles" | "cpu-cycles", "GHz") => with_unit(metric.value, "GHz", "cycles_frequency"),
        ("instructions", "insn per cycle") => {
            with_unit(metric.value, "instructions", "insn_per_cycle")
        }
        ("instructions", _) => Some((metric.value, 2, "stalled_cycles_per_instruction".into())),
        ("branches", _) => with_unit(per_second()? / 1e6, "M/sec", "branch_frequency"),
        ("branch-misses", _) => with_unit(metric.value, "%", "branch_miss_rate"),
        ("stalled-cycles-frontend", _) => Some((share, 2, "frontend_cycles_idle".into())),
        ("stalled-cycles-backend", _) => Some((share, 2, "backend_cycles_idle".into())),
        ("L1-dcache-load-misses", _) => with_unit(metric.value, "%", "l1d_miss_rate"),
        ("LLC-load-misses", _) => with_unit(metric.value, "%", "llc_miss_rate"),
        ("L1-icache-load-misses", _) => with_unit(metric.value, "%", "l1i_miss_rate"),
        ("dTLB-load-misses", _) => with_unit(metric.value, "%", "dtlb_miss_rate"),
        ("iTLB-load-misses", _) => with_unit(metric.value, "%", "itlb_miss_rate"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: perf 7.2.13's tools/perf/util/stat-shadow.c, `generic_metric`: `"%8.1f"` for a
    /// metric with a unit, `"%8.2f"` for one without; C's `printf` writes a NaN as `nan`.
    #[test]
    fn numbers_are_written_as_perf_s_generic_metric_writes_them() {
        assert_eq!(generic_metric(Some(76157.84), "faults/sec"), " 76157.8");
        assert_eq!(generic_metric(Some(0.5), ""), "    0.50");
        assert_eq!(generic_metric(None, "faults/sec"), "     nan");
        assert_eq!(generic_metric(Some(f64::NAN), ""), "     nan");
    }
}
