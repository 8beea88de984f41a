//! `counterhal serve --rules -M METRICS`: the model's metrics as Prometheus recording rules
//! over what the exporter serves. Each event a formula reads becomes its per-second rate over
//! the window, scaled for multiplexing by its times enabled and running
//! (`rate(value) * rate(enabled) / rate(running)`), summed over CPUs and PMUs per host and
//! cgroup; `duration_time` is 1 (the rates are per second), a clock counted in seconds is
//! read back in nanoseconds as perf's formulas read it. A metric whose formula needs what
//! PromQL lacks (a machine fact such as `#slots`, `if`, `min`, `max`) is left out, saying
//! why, in a comment of the output.

use std::fmt::Write as _;

use counterhal_events::expression::{Expr, Function, Op};

use crate::stat::named_metrics::{DEPTH, MetricDef, event_name, portable, referenced};

/// The rules file for `metrics` (YAML, as `promtool check rules` reads it), with rates over
/// `window` (a PromQL duration: `1m`). The header names the CPU model `model` only where a
/// metric is the model's: rules of portable metrics alone are the same on every host.
pub fn rules(metrics: &[&'static MetricDef], window: &str, model: Option<&str>) -> String {
    let source = if metrics.iter().all(|m| is_portable(m)) {
        "portable metrics".to_string()
    } else {
        format!("CPU model {}", model.unwrap_or("none"))
    };
    let mut out = format!(
        "# Recording rules for counterhal serve (counterhal {}, {source}): each metric\n\
         # from rate() over {window} of the exported counters, per host and cgroup.\n\
         groups:\n  - name: counterhal\n    rules:\n",
        env!("CARGO_PKG_VERSION"),
    );
    let mut left_out = String::new();
    for metric in metrics {
        match promql(metric, window, 0) {
            Ok(expr) => {
                let scaled = match metric.scale {
                    1.0 => expr,
                    scale => format!("({expr}) * {scale}"),
                };
                _ = writeln!(
                    out,
                    "      - record: {}\n        expr: {}",
                    record_name(metric.name, window),
                    yaml_string(&scaled)
                );
            }
            Err(why) => _ = writeln!(left_out, "# left out: {}: {why}", metric.name),
        }
    }
    out + &left_out
}

/// Whether `metric` is one of the portable metrics (not a CPU model's).
fn is_portable(metric: &MetricDef) -> bool {
    portable().iter().any(|p| std::ptr::eq(p, metric))
}

/// The series a metric's rule records: `counterhal:NAME:rateWINDOW`, characters Prometheus'
/// names lack as `_`.
pub fn record_name(metric: &str, window: &str) -> String {
    let name: String = metric
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("counterhal:{name}:rate{window}")
}

/// A YAML double-quoted string.
fn yaml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A PromQL string literal's content.
fn label_value(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The formula of `metric` in PromQL, or why it cannot be.
fn promql(metric: &MetricDef, window: &str, depth: usize) -> Result<String, String> {
    let formula = metric.formula().map_err(str::to_string)?;
    expression(metric, formula, window, depth)
}

/// The per-second rate of event `event` over `window`, scaled for multiplexing, summed over
/// CPUs and PMUs (a clock in nanoseconds, as perf's formulas read it); a place where the
/// counter did not run (a cgroup's counter on a CPU its tasks did not use) is left out of
/// the sum, where its scaling would divide by 0.
fn event_rate(event: &str, window: &str) -> String {
    let e = label_value(event);
    format!(
        "sum without (cpu, pmu, event) ((rate(counterhal_event_total{{event=\"{e}\"}}[{window}]) \
         or rate(counterhal_event_seconds_total{{event=\"{e}\"}}[{window}]) * 1e9) \
         * rate(counterhal_event_enabled_seconds_total{{event=\"{e}\"}}[{window}]) \
         / (rate(counterhal_event_running_seconds_total{{event=\"{e}\"}}[{window}]) > 0))"
    )
}

fn expression(
    scope: &MetricDef,
    expr: &Expr,
    window: &str,
    depth: usize,
) -> Result<String, String> {
    let inner = |e: &Expr| expression(scope, e, window, depth);
    Ok(match expr {
        Expr::Number(n) => format!("{n}"),
        Expr::Name(name) if name == "duration_time" => "1".to_string(),
        Expr::Name(name) if name.starts_with('#') => {
            return Err(format!(
                "reads {name}, a fact of the machine PromQL does not have"
            ));
        }
        Expr::Name(name) => match referenced(scope, name) {
            Some(_) if depth >= DEPTH => return Err("metrics nest too deep".to_string()),
            Some(other) => format!("({})", promql(other, window, depth + 1)?),
            None => event_rate(&event_name(scope, name), window),
        },
        Expr::Negate(x) => format!("-({})", inner(x)?),
        Expr::Chain { first, rest } => {
            let mut text = format!("({}", inner(first)?);
            for (op, operand) in rest {
                let op = match op {
                    Op::Add => "+",
                    Op::Subtract => "-",
                    Op::Multiply => "*",
                    Op::Divide => "/",
                    Op::Less => "< bool",
                    Op::Greater => "> bool",
                    Op::LessEqual => "<= bool",
                    Op::GreaterEqual => ">= bool",
                };
                _ = write!(text, " {op} {}", inner(operand)?);
            }
            text + ")"
        }
        Expr::Call(Function::DRatio, a, b) => format!("({} / {})", inner(a)?, inner(b)?),
        Expr::Call(function, _, _) => return Err(format!("uses {function:?}, which PromQL lacks")),
        Expr::If { .. } => return Err("uses if-else, which PromQL lacks".to_string()),
        Expr::HasEvent(_) | Expr::SourceCount(_) => {
            return Err("uses has_event or source_count".to_string());
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::named_metrics::chosen;

    /// The portable metrics' rules: IPC is instructions' rate over cycles', each scaled for
    /// multiplexing and summed over CPUs; CPUs_utilized reads task-clock's seconds back in
    /// nanoseconds over 1e9 (`duration_time` is 1); a metric of metrics nests.
    #[test]
    fn portable_metrics_become_rules() {
        let metrics = chosen(&["IPC".into(), "CPUs_utilized".into()], None).unwrap();
        let text = rules(&metrics, "1m", None);
        assert!(text.contains("record: counterhal:IPC:rate1m"), "{text}");
        // The same text whichever model the host is: the portable metrics read no model's.
        assert_eq!(text, rules(&metrics, "1m", Some("skl")));
        assert!(text.contains(", portable metrics): each metric"), "{text}");
        let dram = chosen(&["Info_System_DRAM_BW_Use".into()], Some("spr")).unwrap();
        let of_model = rules(&dram, "1m", Some("spr"));
        assert!(
            of_model.contains(", CPU model spr): each metric"),
            "{of_model}"
        );
        assert!(
            text.contains("record: counterhal:CPUs_utilized:rate1m"),
            "{text}"
        );
        let ipc = promql(metrics[0], "1m", 0).unwrap();
        assert!(ipc.starts_with("(sum without (cpu, pmu, event) ((rate(counterhal_event_total{event=\"instructions\"}[1m])"), "{ipc}");
        assert!(ipc.contains(") / sum without"), "{ipc}");
        let cpus = promql(metrics[1], "1m", 0).unwrap();
        assert!(
            cpus.contains("counterhal_event_seconds_total{event=\"task-clock\"}[1m]) * 1e9"),
            "{cpus}"
        );
        assert!(cpus.ends_with(" / (1 * 1000000000))"), "{cpus}");
        let backend = chosen(&["backend_bound".into()], None).unwrap();
        assert!(
            promql(backend[0], "1m", 0)
                .unwrap()
                .contains("topdown-fetch-bubbles")
        );
    }
}
