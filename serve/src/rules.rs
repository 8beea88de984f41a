//! `counterhal serve --rules -M METRICS`: the model's metrics as Prometheus recording rules
//! over what the exporter serves. Each event a formula reads becomes its per-second rate over
//! the window, scaled for multiplexing by its times enabled and running
//! (`rate(value) * rate(enabled) / rate(running)`), summed over CPUs and PMUs per host and
//! cgroup; `duration_time` is 1 (the rates are per second), a clock counted in seconds is
//! read back in nanoseconds as perf's formulas read it; `min`, `max`, `d_ratio` and
//! `if`-`else` become PromQL's set operators and clamps, series by series; a machine fact
//! (`#smt_on`) is the host's `counterhal_machine_fact`, matched to each of its places. A
//! metric whose formula needs what the exporter does not serve (a fact it does not know,
//! `has_event`) is left out, saying why, in a comment of the output.

use std::fmt::Write as _;

use counterhal_events::expression::{Expr, Function, Op};

use counterhal::metrics::{DEPTH, MetricDef, event_name, portable, referenced};

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

/// What a formula's PromQL stands for, which PromQL's operators and functions tell apart: a
/// scalar (numbers alone), a vector per host (a machine fact: `instance` and `job` labels),
/// or a vector per place (an event's rate: per host and, counted per cgroup, `cgroup` too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Scalar,
    Host,
    Place,
}

/// A formula in PromQL: its text and its [`Level`].
struct Promql {
    text: String,
    level: Level,
}

impl Promql {
    fn scalar(text: String) -> Promql {
        Promql {
            text,
            level: Level::Scalar,
        }
    }

    fn vector(&self) -> bool {
        self.level != Level::Scalar
    }

    /// This formula's text as a vector of `like`'s level and labels (`like` a vector at
    /// least as fine): a scalar as `like * 0 + x`, a host's fact matched to each of its
    /// places.
    fn lifted(&self, like: &Promql) -> String {
        match (self.level, like.level) {
            (Level::Scalar, _) => format!("(({}) * 0 + ({}))", like.text, self.text),
            (Level::Host, Level::Place) => format!(
                "(({}) * 0 + on (instance, job) group_left () ({}))",
                like.text, self.text
            ),
            _ => self.text.clone(),
        }
    }
}

/// The vector-matching modifier of a binary operator between `left` and `right`: a place's
/// series against its host's fact, many to one.
fn matching(left: Level, right: Level) -> &'static str {
    match (left, right) {
        (Level::Place, Level::Host) => " on (instance, job) group_left ()",
        (Level::Host, Level::Place) => " on (instance, job) group_right ()",
        _ => "",
    }
}

/// `left op right`, a place's series matched to its host's fact where one side is each.
fn join(left: Promql, op: &str, right: Promql) -> Promql {
    Promql {
        text: format!(
            "({} {op}{} {})",
            left.text,
            matching(left.level, right.level),
            right.text
        ),
        level: left.level.max(right.level),
    }
}

/// A machine fact (`#smt_on`) as the exporter serves it: `counterhal_machine_fact{fact=...}`
/// of each host.
fn fact(name: &str) -> Promql {
    Promql {
        text: format!(
            "max without (fact) (counterhal_machine_fact{{fact=\"{}\"}})",
            label_value(name.trim_start_matches('#'))
        ),
        level: Level::Host,
    }
}

/// The formula of `metric` in PromQL, or why it cannot be.
fn promql(metric: &MetricDef, window: &str, depth: usize) -> Result<String, String> {
    Ok(formula(metric, window, depth)?.text)
}

fn formula(metric: &MetricDef, window: &str, depth: usize) -> Result<Promql, String> {
    let formula = metric.formula().map_err(str::to_string)?;
    expression(metric, formula, window, depth)
}

/// The per-second rate of event `event` over `window`, scaled for multiplexing, summed over
/// CPUs and PMUs (a clock in nanoseconds, as perf's formulas read it), per host and cgroup.
///
/// Each place (a CPU, of the host or of a cgroup) adds its count's rate times its enabled
/// over its running time, where its counter ran (`rate(running) > 0`); a place where it did
/// not run adds nothing, where the scaling would divide by 0. The times are its group's
/// (exported once a group, labelled by the group its count names: joined `ignoring(event)`,
/// so the rule needs no knowledge of which events the exporter grouped). A place exported
/// without its times (an event the kernel never multiplexes, `--times multiplexed`) adds its
/// count's rate as it is (`unless` its group's enabled time: never where it has one). A host
/// or cgroup where the event's group was enabled nowhere in the window (an idle cgroup: the
/// kernel enables a cgroup's counters only while its tasks are on a CPU) is 0
/// (`sum(rate(value) * 0 + rate(enabled)) == 0`, a 0 with its labels, only where the event
/// is counted at all): nothing happened there to count. Without it, an idle cgroup
/// would be no series at all, and a dashboard would lose it instead of showing 0. One
/// enabled but never on the PMU (multiplexed out the whole window) stays missing: its count
/// is unknown, perf's "not counted". A ratio of two rates of an idle cgroup (IPC) is 0 / 0,
/// NaN: the series is there with no number, as `stat` (and perf) print no metric for a
/// division by 0.
fn event_rate(event: &str, window: &str) -> String {
    let e = label_value(event);
    let places = "sum without (cpu, pmu, event, group)";
    let value = format!(
        "(rate(counterhal_event_total{{event=\"{e}\"}}[{window}]) \
         or rate(counterhal_event_seconds_total{{event=\"{e}\"}}[{window}]) * 1e9)"
    );
    let enabled = format!("rate(counterhal_event_enabled_seconds_total[{window}])");
    let running = format!("rate(counterhal_event_running_seconds_total[{window}])");
    format!(
        "({places} ({value} * ignoring(event) {enabled} / ignoring(event) ({running} > 0) \
         or ({value} unless ignoring(event) {enabled})) \
         or {places} ({value} * 0 + ignoring(event) {enabled}) == 0)"
    )
}

/// `min` or `max` of two (`smaller`: min). Two vectors: the one that compares so, series by
/// series (`(a <= b) or b`); a vector and a scalar: `clamp_max`/`clamp_min`; two scalars: the
/// same through a one-sample vector, read back by `scalar()`.
fn extreme(a: Promql, b: Promql, smaller: bool) -> Promql {
    let (compare, clamp) = if smaller {
        ("<=", "clamp_max")
    } else {
        (">=", "clamp_min")
    };
    let level = a.level.max(b.level);
    let text = match (a.vector(), b.vector()) {
        (true, true) => {
            let like = if a.level >= b.level { &a } else { &b };
            let (a, b) = (a.lifted(like), b.lifted(like));
            format!("(({a}) {compare} ({b}) or ({b}))")
        }
        (true, false) => format!("{clamp}({}, {})", a.text, b.text),
        (false, true) => format!("{clamp}({}, {})", b.text, a.text),
        (false, false) => format!("scalar({clamp}(vector({}), {}))", a.text, b.text),
    };
    Promql { text, level }
}

/// `then if condition else otherwise` (the condition holds when not 0). With a vector
/// condition, series by series: `then` where it holds, `otherwise` where it does not, a
/// scalar branch given the condition's labels (`condition * 0 + x`); with a scalar one,
/// `then * c + otherwise * (1 - c)` over its 0 or 1.
fn choice(then: Promql, condition: Promql, otherwise: Promql) -> Promql {
    let level = then.level.max(condition.level).max(otherwise.level);
    if !condition.vector() {
        let (t, o) = (&then.text, &otherwise.text);
        let c = &condition.text;
        let text = match (then.level, otherwise.level) {
            (a, b) if a == b || a == Level::Scalar || b == Level::Scalar => {
                format!("(({t}) * (({c}) != bool 0) + ({o}) * (({c}) == bool 0))")
            }
            _ => {
                let like = if then.level >= otherwise.level {
                    &then
                } else {
                    &otherwise
                };
                let (t, o) = (then.lifted(like), otherwise.lifted(like));
                format!("(({t}) * (({c}) != bool 0) + ({o}) * (({c}) == bool 0))")
            }
        };
        return Promql { text, level };
    }
    // Every part as a vector of the finest level among them, the condition a filter.
    let like = [&then, &condition, &otherwise]
        .into_iter()
        .max_by_key(|p| p.level)
        .unwrap_or(&condition);
    let holds = format!("(({}) != 0)", condition.lifted(like));
    Promql {
        text: format!(
            "(({}) and {holds} or ({}) unless {holds})",
            then.lifted(like),
            otherwise.lifted(like)
        ),
        level,
    }
}

/// perf's `d_ratio(a, b)`: `a / b`, or 0 where `b` is 0 (PromQL's division would give Inf or
/// NaN there).
fn d_ratio(a: Promql, b: Promql) -> Promql {
    let level = a.level.max(b.level);
    let text = match b.vector() {
        true => {
            let like = if a.level >= b.level { &a } else { &b };
            let (a, b) = (a.lifted(like), b.lifted(like));
            format!("(({a}) / (({b}) != 0) or ({a}) * ({b}) * 0)")
        }
        false => format!("(({}) / ({}))", a.text, b.text),
    };
    Promql { text, level }
}

fn expression(
    scope: &MetricDef,
    expr: &Expr,
    window: &str,
    depth: usize,
) -> Result<Promql, String> {
    let inner = |e: &Expr| expression(scope, e, window, depth);
    Ok(match expr {
        Expr::Number(n) => Promql::scalar(format!("{n}")),
        Expr::Name(name) if name == "duration_time" => Promql::scalar("1".to_string()),
        Expr::Name(name) if name.starts_with('#') => {
            if counterhal::metrics::machine::meaning(name).is_none() {
                return Err(format!(
                    "reads {name}, a fact of the machine the exporter does not serve"
                ));
            }
            fact(name)
        }
        Expr::Name(name) => match referenced(scope, name) {
            Some(_) if depth >= DEPTH => return Err("metrics nest too deep".to_string()),
            Some(other) => {
                let nested = formula(other, window, depth + 1)?;
                Promql {
                    text: format!("({})", nested.text),
                    level: nested.level,
                }
            }
            None => Promql {
                text: event_rate(&event_name(scope, name), window),
                level: Level::Place,
            },
        },
        Expr::Negate(x) => {
            let x = inner(x)?;
            Promql {
                text: format!("-({})", x.text),
                level: x.level,
            }
        }
        Expr::Chain { first, rest } => {
            // The operators of one chain have one precedence: left to right.
            let mut joined = inner(first)?;
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
                    Op::And | Op::Or | Op::Xor => {
                        return Err("uses perf's `&`, `|` or `^`".to_string());
                    }
                };
                joined = join(joined, op, inner(operand)?);
            }
            joined
        }
        Expr::Call(Function::DRatio, a, b) => d_ratio(inner(a)?, inner(b)?),
        Expr::Call(Function::Min, a, b) => extreme(inner(a)?, inner(b)?, true),
        Expr::Call(Function::Max, a, b) => extreme(inner(a)?, inner(b)?, false),
        Expr::If {
            then,
            condition,
            otherwise,
        } => choice(inner(then)?, inner(condition)?, inner(otherwise)?),
        Expr::HasEvent(_) | Expr::SourceCount(_) => {
            return Err("uses has_event or source_count".to_string());
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal::metrics::chosen;
    use counterhal_conformance::fixtures::prometheus::Release;

    /// `min`, `max`, `d_ratio` and `if`-`else` as PromQL, evaluated by Prometheus' own engine
    /// (`promtool test rules` of Prometheus 2.42 and of 3.5) on two hosts' series, against
    /// perf's meaning of each (tools/perf/util/expr.y: min, max, d_ratio's 0 for a 0
    /// divisor, `a if c else b`).
    #[test]
    fn min_max_d_ratio_and_if_mean_what_perf_means() {
        // Each series as the rules read an event: an expression's result, with no metric name.
        let vector = |name: &str| Promql {
            text: format!("({name} + 0)"),
            level: Level::Place,
        };
        let scalar = |n: f64| Promql::scalar(format!("{n}"));
        // Host h1: a 3, b 5, c 0; host h2: a 7, b 2, c 2.
        let hosts = [("h1", 3.0, 5.0, 0.0), ("h2", 7.0, 2.0, 2.0)];
        let perf_if = |t: f64, c: f64, o: f64| if c != 0.0 { t } else { o };
        type Case = (Promql, fn(f64, f64, f64) -> Option<f64>);
        let cases: Vec<Case> = vec![
            (extreme(vector("a"), vector("b"), false), |a, b, _| {
                Some(a.max(b))
            }),
            (extreme(vector("a"), vector("b"), true), |a, b, _| {
                Some(a.min(b))
            }),
            (extreme(vector("a"), scalar(4.0), true), |a, _, _| {
                Some(a.min(4.0))
            }),
            (extreme(scalar(4.0), vector("a"), false), |a, _, _| {
                Some(a.max(4.0))
            }),
            (d_ratio(vector("a"), vector("c")), |a, _, c| {
                Some(if c == 0.0 { 0.0 } else { a / c })
            }),
            (
                choice(vector("a"), vector("(a > bool b)"), vector("b")),
                |a, b, _| Some(if a > b { a } else { b }),
            ),
            (
                choice(scalar(1.0), vector("(a > bool b)"), vector("b")),
                |a, b, _| Some(if a > b { 1.0 } else { b }),
            ),
            (choice(vector("a"), vector("c"), scalar(-1.0)), |a, _, c| {
                Some(if c != 0.0 { a } else { -1.0 })
            }),
        ];
        let mut tests = String::from(
            "rule_files: []\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    \
             input_series:\n",
        );
        for (host, a, b, c) in hosts {
            for (name, value) in [("a", a), ("b", b), ("c", c)] {
                _ = write!(
                    tests,
                    "      - series: '{name}{{instance=\"{host}\"}}'\n        values: '{value} {value}'\n"
                );
            }
        }
        // Places below the hosts (two cgroups each, p the place's own value) and a fact of
        // each host, as the exporter serves it (f: 2 on h1, 0 on h2).
        for (host, fact, places) in [("h1", 2.0, [1.0, 10.0]), ("h2", 0.0, [4.0, 8.0])] {
            _ = write!(
                tests,
                "      - series: 'counterhal_machine_fact{{fact=\"f\",instance=\"{host}\"}}'\n        \
                 values: '{fact} {fact}'\n"
            );
            for (cgroup, value) in ["/x", "/y"].into_iter().zip(places) {
                _ = write!(
                    tests,
                    "      - series: 'p{{instance=\"{host}\",cgroup=\"{cgroup}\"}}'\n        \
                     values: '{value} {value}'\n"
                );
            }
        }
        tests.push_str("    promql_expr_test:\n");
        for (promql, perf) in &cases {
            assert!(promql.vector(), "{}", promql.text);
            _ = write!(
                tests,
                "      - expr: {}\n        eval_time: 1m\n        exp_samples:\n",
                yaml_string(&promql.text)
            );
            for (host, a, b, c) in hosts {
                if let Some(value) = perf(a, b, c) {
                    _ = write!(
                        tests,
                        "          - labels: '{{instance=\"{host}\"}}'\n            value: {value}\n"
                    );
                }
            }
        }
        // A place against its host's fact: p * #f, max(p, #f * 3), p if #f else -p, and
        // #f + 1 (a host's own series).
        let place = || Promql {
            text: "(p + 0)".to_string(),
            level: Level::Place,
        };
        let places = [
            ("h1", "/x", 2.0, 1.0),
            ("h1", "/y", 2.0, 10.0),
            ("h2", "/x", 0.0, 4.0),
            ("h2", "/y", 0.0, 8.0),
        ];
        type PlaceCase = (Promql, fn(f64, f64) -> f64);
        let place_cases: Vec<PlaceCase> = vec![
            (join(place(), "*", fact("#f")), |f, p| p * f),
            (join(fact("#f"), "*", place()), |f, p| f * p),
            (
                extreme(place(), join(fact("#f"), "*", scalar(3.0)), false),
                |f, p| p.max(f * 3.0),
            ),
            (
                choice(place(), fact("#f"), join(scalar(0.0), "-", place())),
                |f, p| if f != 0.0 { p } else { -p },
            ),
        ];
        for (promql, perf) in &place_cases {
            assert_eq!(promql.level, Level::Place, "{}", promql.text);
            _ = write!(
                tests,
                "      - expr: {}\n        eval_time: 1m\n        exp_samples:\n",
                yaml_string(&promql.text)
            );
            for (host, cgroup, f, p) in places {
                _ = write!(
                    tests,
                    "          - labels: '{{instance=\"{host}\",cgroup=\"{cgroup}\"}}'\n            \
                     value: {}\n",
                    perf(f, p)
                );
            }
        }
        let host_level = join(fact("#f"), "+", scalar(1.0));
        assert_eq!(host_level.level, Level::Host);
        _ = write!(
            tests,
            "      - expr: {}\n        eval_time: 1m\n        exp_samples:\n          \
             - labels: '{{instance=\"h1\"}}'\n            value: 3\n          \
             - labels: '{{instance=\"h2\"}}'\n            value: 1\n",
            yaml_string(&host_level.text)
        );
        // Two scalars stay a scalar: max(2, 9) and 5 if 0 else 6.
        for (promql, value) in [
            (extreme(scalar(2.0), scalar(9.0), false), 9.0),
            (
                choice(scalar(5.0), scalar(0.0), scalar(6.0)),
                perf_if(5.0, 0.0, 6.0),
            ),
        ] {
            assert!(!promql.vector(), "{}", promql.text);
            _ = write!(
                tests,
                "      - expr: {}\n        eval_time: 1m\n        exp_samples:\n          \
                 - labels: '{{}}'\n            value: {value}\n",
                yaml_string(&format!("vector({})", promql.text))
            );
        }
        for release in Release::ALL {
            promtool_test_rules(release, "semantics", &tests, None);
        }
    }

    /// `promtool test rules` of `release` on the unit tests `tests` (YAML), with the rules
    /// file `rules` beside them as `rules.yml` where given; fails the test with what promtool
    /// said, and skips this release through the door where its promtool is not here.
    fn promtool_test_rules(release: Release, name: &str, tests: &str, rules: Option<&str>) {
        let mut promtool = counterhal_conformance::prometheus_tool_or_skip!(release, "promtool");
        let dir = std::env::temp_dir().join(format!(
            "counterhal-rules-{name}-{}-{}",
            release.tag(),
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(rules) = rules {
            std::fs::write(dir.join("rules.yml"), rules).unwrap();
        }
        std::fs::write(dir.join("tests.yml"), tests).unwrap();
        let out = promtool
            .args(["test", "rules", "tests.yml"])
            .current_dir(&dir)
            .output()
            .unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            out.status.success(),
            "{}'s promtool test rules:\n{}{}\n{tests}\n{}",
            release.name(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            rules.unwrap_or_default()
        );
    }

    /// The rules of CPUs_utilized, page_faults_per_second and IPC over the series of a host
    /// (counted system-wide, summed over its CPUs: no `cpu` label) and three cgroups on two
    /// CPUs each: `/busy` (one CPU busy, its page faults counted half the time on CPU 0 and
    /// never on CPU 1), `/idle` (no task ran: every counter and time stays 0) and `/starved`
    /// (page faults enabled, never on the PMU); instructions count in the group cycles leads,
    /// whose times alone are exported (labelled `group`, as every count they scale). The idle
    /// cgroup's rates are 0 and its IPC 0 / 0, a series with no number; the busy one's are its
    /// counts scaled by enabled over running (instructions by its group's), CPU 1 left out;
    /// the starved cgroup's count is unknown, so it has no series.
    /// A second host, `t`, has the same series less the times that `--times multiplexed`
    /// leaves out, those of places whose time running is their time enabled: every rule gives
    /// it what it gives `h`.
    ///
    /// Oracle: the engines of Prometheus 2.42 and 3.5 (`promtool test rules`) evaluating the
    /// rules `rules` writes; the expected values are worked from the inputs (each rises
    /// linearly over the minute): task-clock 15 s per 15 s is 1 CPU, 600 page faults per 15 s
    /// counted half the time are 80 per second, 30,000 instructions over 15,000 cycles an IPC
    /// of 2. Each is compared rounded to 1e-6 (`round(..., 1e-6)`, which drops the series'
    /// name; 1 / 1e-6 is exactly 1e6 as a float): promtool compares floats exactly, and
    /// Prometheus 3's range, open at its start, leaves out the sample at 0 s, so its rate
    /// extrapolates over one sample fewer and lands a rounding away (0.9999999999999999 for 1).
    #[test]
    fn an_idle_cgroup_rates_0_and_a_busy_one_its_scaled_counts() {
        let names = ["CPUs_utilized", "page_faults_per_second", "IPC"].map(String::from);
        let rules = rules(&chosen(&names, None).unwrap(), "1m", None);
        let mut tests = String::from(
            "rule_files: [rules.yml]\nevaluation_interval: 15s\ntests:\n  - interval: 15s\n    \
             input_series:\n",
        );
        // Family (`-`: a count), event, the event leading its group (`=`: itself), place
        // (cgroup,cpu; `-`: the host, summed over its CPUs), value, enabled, running: each as
        // promtool's `start+step x4`, five samples over the minute. A group's members have no
        // times of their own (`-`): the exporter writes its leader's once, labelled with the
        // group; instructions' are cycles', on the PMU half the time, which scale both.
        let places = "\
            seconds task-clock = - 100+30x4 100+30x4 100+30x4
            seconds task-clock = /busy,0 100+15x4 100+15x4 100+15x4
            seconds task-clock = /busy,1 100+0x4 100+0x4 100+0x4
            - page-faults = /busy,0 1000+600x4 100+15x4 100+7.5x4
            - page-faults = /busy,1 100+0x4 100+15x4 100+0x4
            - instructions cycles /busy,0 1000+30000x4 - -
            - cycles = /busy,0 1000+15000x4 100+15x4 100+7.5x4
            - page-faults = /starved,0 0+0x4 100+15x4 100+0x4
            seconds task-clock = /idle,0 0+0x4 0+0x4 0+0x4
            seconds task-clock = /idle,1 0+0x4 0+0x4 0+0x4
            - page-faults = /idle,0 0+0x4 0+0x4 0+0x4
            - instructions cycles /idle,0 0+0x4 - -
            - cycles = /idle,0 0+0x4 0+0x4 0+0x4";
        let lines: Vec<Vec<&str>> = places
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        // The times of the group `leader` leads at `place`.
        let times_of = |leader: &str, place: &str| {
            let line = lines
                .iter()
                .find(|w| w[1] == leader && w[2] == "=" && w[3] == place)
                .unwrap_or_else(|| panic!("no leader {leader} at {place}"));
            (line[5], line[6])
        };
        for words in &lines {
            let [family, event, group, place, value, _, _] = words[..] else {
                panic!("{words:?}");
            };
            let leads = group == "=";
            let group = if leads { event } else { group };
            let (enabled, running) = times_of(group, place);
            let labels = match place.split_once(',') {
                Some((cgroup, cpu)) => format!(",cpu=\"{cpu}\",cgroup=\"{cgroup}\""),
                None => String::new(),
            };
            let family = match family {
                "-" => String::new(),
                unit => format!("_{unit}"),
            };
            let value_metric = format!("counterhal_event{family}_total");
            for host in ["h", "t"] {
                let times = host == "h" || enabled != running;
                let grouped = match times {
                    true => format!(",group=\"{group}\""),
                    false => String::new(),
                };
                _ = write!(
                    tests,
                    "      - series: '{value_metric}{{event=\"{event}\",pmu=\"software\",\
                     instance=\"{host}\",job=\"counterhal\"{grouped}{labels}}}'\n        \
                     values: '{value}'\n"
                );
                if !times || !leads {
                    continue;
                }
                for (metric, values) in [
                    ("counterhal_event_enabled_seconds_total", enabled),
                    ("counterhal_event_running_seconds_total", running),
                ] {
                    _ = write!(
                        tests,
                        "      - series: '{metric}{{group=\"{group}\",pmu=\"software\",\
                         instance=\"{host}\",job=\"counterhal\"{labels}}}'\n        \
                         values: '{values}'\n"
                    );
                }
            }
        }
        tests.push_str("    alert_rule_test: []\n    promql_expr_test:\n");
        // Each query, and the value of each series it gives, by cgroup ("": the host). NaN is
        // equal to nothing, itself included: the idle cgroup's IPC is the series where
        // `x != bool x` is 1.
        let (cpus, faults, ipc) = (
            record_name("CPUs_utilized", "1m"),
            record_name("page_faults_per_second", "1m"),
            record_name("IPC", "1m"),
        );
        type Query<'a> = (String, &'a [(&'a str, &'a str)]);
        let expected: [Query<'_>; 4] = [
            (cpus.clone(), &[("", "2"), ("/busy", "1"), ("/idle", "0")]),
            (faults.clone(), &[("/busy", "80"), ("/idle", "0")]),
            (format!("{ipc}{{cgroup=\"/busy\"}}"), &[("/busy", "2")]),
            (
                format!("{ipc} != bool {ipc}"),
                &[("/busy", "0"), ("/idle", "1")],
            ),
        ];
        for (expr, samples) in expected {
            _ = write!(
                tests,
                "      - expr: 'round({expr}, 1e-6)'\n        eval_time: 1m\n        \
                 exp_samples:\n"
            );
            for host in ["h", "t"] {
                for (cgroup, value) in samples {
                    let cgroup = match *cgroup {
                        "" => String::new(),
                        cgroup => format!(",cgroup=\"{cgroup}\""),
                    };
                    _ = write!(
                        tests,
                        "          - labels: '{{instance=\"{host}\",job=\"counterhal\"{cgroup}}}'\n            \
                         value: {value}\n"
                    );
                }
            }
        }
        for release in Release::ALL {
            promtool_test_rules(release, "idle", &tests, Some(&rules));
        }
    }

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
        assert!(ipc.starts_with("((sum without (cpu, pmu, event, group) ((rate(counterhal_event_total{event=\"instructions\"}[1m])"), "{ipc}");
        assert!(ipc.contains(") / (sum without"), "{ipc}");
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
