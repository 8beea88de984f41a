//! perf's machine-readable layouts, line for line: `-x SEP` (value, unit, event, [spread,]
//! time running, percent running, metric value, metric unit; with `-I` the interval's time
//! first, with `-A` or `--per-thread` the CPU or thread before the value) and `-j` (one JSON
//! object per event per line, with perf's keys and value types: `counter-value` a string,
//! `event-runtime` an integer, `pcnt-running`, `metric-value` numbers, `interval`, `cpu`,
//! `thread` and `variance` where perf writes them).

use std::fmt::Write as _;

use counterhal_hal::Reading;

use super::default_metrics::generic_metric;
use super::metrics::{Beside, Metric};
use super::summary::{EventSummary, Section, Summary};
use super::thresholds;
use super::topology::line_order;
use crate::stat::measure::results::Place;
use counterhal::metrics::{MetricDef, Threshold, classify, evaluate};

/// A line of `-M` metric: its value over one place and stretch (`None`: not counted).
struct MetricLine<'a> {
    at_ns: Option<u64>,
    place: Option<&'a Place>,
    def: &'static MetricDef,
    value: Option<f64>,
    /// How the value stands against the metric's threshold (`-j` says; `-x` does not).
    threshold: Option<Threshold>,
}

/// What prints, line by line: an event, or a metric of `-M`.
enum Row<'a> {
    Event(Line<'a>),
    Metric(MetricLine<'a>),
}

/// One event's line, as both layouts need it.
struct Line<'a> {
    at_ns: Option<u64>,
    place: Option<&'a Place>,
    entry: &'a EventSummary,
    metric: Option<Metric>,
    /// With `-r`, the spread (0 where none could be computed: perf writes it for every event).
    spread: Option<f64>,
    /// Where CPUs were added up, how many counted the event.
    cpus: Option<u32>,
}

impl Line<'_> {
    /// perf's unit: the alias's, `msec` for a clock, `ns` for a tool event, nothing for a
    /// count.
    fn unit(&self) -> &str {
        self.entry.unit()
    }

    /// The reading, when the event could be counted.
    fn reading(&self) -> Option<&Reading> {
        self.entry.reading.as_ref().ok()
    }

    /// `<not supported>`, `<not counted>` (never ran), or `None` for a value.
    fn missing(&self) -> Option<&'static str> {
        match self.reading() {
            None => Some("<not supported>"),
            Some(reading) if reading.scaled().is_none() => Some("<not counted>"),
            Some(_) => None,
        }
    }

    /// Time running in nanoseconds (0 when not supported).
    fn runtime(&self) -> u64 {
        self.reading().map_or(0, |r| r.time_running)
    }

    /// The share of time running in percent: 100 when the event was never enabled (perf's
    /// rule, which also covers `<not supported>`).
    fn percent_running(&self) -> f64 {
        match self.reading() {
            Some(reading) if reading.time_enabled > 0 => {
                100.0 * reading.fraction_running().unwrap_or(0.0)
            }
            _ => 100.0,
        }
    }

    /// The value in the line's unit (milliseconds for a clock, scaled by the alias) as
    /// `write` writes it (given whether perf prints two decimals), or what stands for a
    /// missing one.
    fn shown(&self, write: impl Fn(f64, bool) -> String) -> String {
        match (self.missing(), self.entry.shown_value()) {
            (None, Some((value, decimals))) => write(value, decimals),
            (missing, _) => missing.unwrap_or("<not counted>").to_string(),
        }
    }
}

/// Every line of a summary, in perf's order: section by section, and in each, event by event
/// with every place of the event together.
fn lines<'a>(summary: &'a Summary, metrics: &[&'static MetricDef]) -> Vec<Row<'a>> {
    let mut lines = Vec::new();
    for section in &summary.sections {
        section_lines(section, summary.runs > 1, &mut lines);
        for place in &section.places {
            for &def in metrics {
                lines.push(Row::Metric(MetricLine {
                    at_ns: section.at_ns,
                    place: place.place.as_ref(),
                    def,
                    value: evaluate(&summary.system, def, &place.events, section.length_ns),
                    threshold: classify(&summary.system, def, &place.events, section.length_ns),
                }));
            }
        }
    }
    lines
}

fn section_lines<'a>(section: &'a Section, repeated: bool, lines: &mut Vec<Row<'a>>) {
    let beside: Vec<Beside<'_>> = section
        .places
        .iter()
        .map(|p| Beside::new(&p.events))
        .collect();
    for (index, at) in line_order(section) {
        let place = &section.places[at];
        lines.push(Row::Event(Line {
            at_ns: section.at_ns,
            place: place.place.as_ref(),
            entry: &place.events[index],
            metric: beside[at].metric(index, section.length_ns),
            spread: repeated.then(|| place.events[index].stddev_percent.unwrap_or(0.0)),
            cpus: place.place.as_ref().and_then(|p| p.cpus_added(index)),
        }));
    }
}

/// perf's time column: seconds and nanoseconds, the seconds right-aligned in 6.
pub fn interval_time(at_ns: u64) -> String {
    format!("{:>6}.{:09}", at_ns / 1_000_000_000, at_ns % 1_000_000_000)
}

/// `-x SEP`: one line per event (per interval, per place).
pub fn csv(out: &mut String, separator: &str, summary: &Summary, metrics: &[&'static MetricDef]) {
    for row in lines(summary, metrics) {
        let line = match row {
            Row::Event(line) => line,
            Row::Metric(m) => {
                // Perf's seven fields, with the metric's name where the event's stands.
                let mut fields = lead(m.at_ns, m.place, most_cpus(m.place));
                // perf 7.2's number, its unit also where the events did not count (perf's
                // print_metric_csv leaves a `nan` empty).
                let value = generic_metric(m.value, m.def.unit).replace("nan", "");
                fields.extend([String::new(), String::new(), m.def.name.to_string()]);
                let (value, unit) = (value.trim_start().to_string(), m.def.unit.to_string());
                fields.extend([String::new(), String::new(), value, unit]);
                _ = writeln!(out, "{}", fields.join(separator));
                continue;
            }
        };
        let mut fields = lead(line.at_ns, line.place, line.cpus);
        fields.push(line.shown(|value, decimals| {
            if decimals {
                format!("{value:.2}")
            } else {
                format!("{value:.0}")
            }
        }));
        fields.push(line.unit().to_string());
        fields.push(line.entry.name.clone());
        if let Some(cgroup) = &line.entry.cgroup {
            fields.push(cgroup.clone());
        }
        if let Some(spread) = line.spread {
            fields.push(format!("{spread:.2}%"));
        }
        fields.push(line.runtime().to_string());
        fields.push(format!("{:.2}", line.percent_running()));
        match &line.metric {
            Some(metric) => {
                fields.push(metric.digits());
                fields.push(metric.unit.clone());
            }
            None => fields.extend([String::new(), String::new()]),
        }
        _ = writeln!(out, "{}", fields.join(separator));
    }
}

/// `-j`: one JSON object per line, keys and spacing as perf writes them.
pub fn json_lines(out: &mut String, summary: &Summary, metrics: &[&'static MetricDef]) {
    for row in lines(summary, metrics) {
        let line = match row {
            Row::Event(line) => line,
            Row::Metric(m) => {
                let mut fields = json_lead(m.at_ns, m.place, most_cpus(m.place));
                fields.push(format!("\"metric-value\" : {:.6}", m.value.unwrap_or(0.0)));
                let unit = if m.value.is_some() { m.def.unit } else { "" };
                fields.push(format!("\"metric-unit\" : {}", quote(unit)));
                if m.value.is_some() {
                    fields.extend(thresholds::json_field(m.threshold));
                }
                _ = writeln!(out, "{{{}}}", fields.join(", "));
                continue;
            }
        };
        let mut fields = json_lead(line.at_ns, line.place, line.cpus);
        let value = line.shown(|value, _| format!("{value:.6}"));
        fields.push(format!("\"counter-value\" : {}", quote(&value)));
        fields.push(format!("\"unit\" : {}", quote(line.unit())));
        fields.push(format!("\"event\" : {}", quote(&line.entry.name)));
        if let Some(cgroup) = &line.entry.cgroup {
            fields.push(format!("\"cgroup\" : {}", quote(cgroup)));
        }
        if let Some(spread) = line.spread {
            fields.push(format!("\"variance\" : {spread:.2}"));
        }
        fields.push(format!("\"event-runtime\" : {}", line.runtime()));
        fields.push(format!("\"pcnt-running\" : {:.2}", line.percent_running()));
        let (value, unit) = line
            .metric
            .as_ref()
            .map_or((0.0, ""), |m| (m.value, m.unit.as_str()));
        fields.push(format!("\"metric-value\" : {value:.6}"));
        fields.push(format!("\"metric-unit\" : {}", quote(unit)));
        _ = writeln!(out, "{{{}}}", fields.join(", "));
    }
}

/// How many CPUs a place added up for its most widely counted event (a metric line's count).
fn most_cpus(place: Option<&Place>) -> Option<u32> {
    match place? {
        Place::Aggregate { cpus, .. } => cpus.iter().copied().max(),
        _ => None,
    }
}

/// The fields before the value in `-x`: the interval's time, the CPU or thread (or the
/// socket, die, core or node and `cpus`, how many CPUs it added up).
fn lead(at_ns: Option<u64>, place: Option<&Place>, cpus: Option<u32>) -> Vec<String> {
    at_ns
        .map(interval_time)
        .into_iter()
        .chain(place.map(Place::label))
        .chain(cpus.map(|n| n.to_string()))
        .collect()
}

/// The keys before the value in `-j`: `interval`, `cpu` or `thread` (or the socket, die,
/// core, node, cache or cluster and `counters`, how many CPUs it added up).
fn json_lead(at_ns: Option<u64>, place: Option<&Place>, cpus: Option<u32>) -> Vec<String> {
    let mut fields = Vec::new();
    if let Some(at_ns) = at_ns {
        let time = interval_time(at_ns);
        fields.push(format!("\"interval\" : {}", time.trim_start()));
    }
    if let Some(place) = place {
        let (key, value) = place.json_field();
        fields.push(format!("\"{key}\" : {}", quote(&value)));
        if let Some(cpus) = cpus {
            // perf 7.2's key (perf 6.1's `aggregate-number`, which 7.2's lint refuses).
            fields.push(format!("\"counters\" : {cpus}"));
        }
    }
    fields
}

/// A JSON string.
fn quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::measure::results::{Counts, Snapshot};
    use crate::stat::report::summary::tests::{intervals, run};

    /// page-faults and task-clock counted, cycles not supported, in 2 ms.
    fn one_run() -> Summary {
        Summary::of(
            crate::stat::plan::machine_here(),
            &[run(
                &[
                    ("task-clock", Some(1_500_000)),
                    ("page-faults", Some(1_234)),
                    ("cycles", None),
                ],
                2_000_000,
            )],
        )
    }

    #[test]
    fn csv_has_perfs_seven_fields() {
        let mut text = String::new();
        csv(&mut text, ",", &one_run(), &[]);
        let lines: Vec<&str> = text.lines().collect();
        // The reading helper gives every event 1000 ns enabled and running.
        assert_eq!(
            lines,
            [
                "1.50,msec,task-clock,1000,100.00,0.750,CPUs utilized",
                "1234,,page-faults,1000,100.00,822.667,K/sec",
                "<not supported>,,cycles,0,100.00,,",
            ]
        );
    }

    #[test]
    fn csv_puts_the_spread_fourth_and_the_time_and_place_first() {
        let runs = [90, 110].map(|faults| run(&[("page-faults", Some(faults))], 1));
        let mut text = String::new();
        csv(
            &mut text,
            ";",
            &Summary::of(crate::stat::plan::machine_here(), &runs),
            &[],
        );
        assert_eq!(text, "100;;page-faults;10.00%;1000;100.00;;\n");

        let one = run(&[("cpu-clock", Some(30))], 10);
        let place = |cpu, v: u64| Counts {
            place: Some(Place::Cpu(cpu)),
            readings: vec![Ok(Reading::new(v, 1_000_000_000, 500_000_000))],
        };
        let snapshot = Snapshot {
            at_ns: 1_500_000_000,
            counts: vec![place(0, 1_000_000), place(1, 2_000_000)],
        };
        let (summary, mut sections) = intervals(&one, &[snapshot]);
        let mut text = String::new();
        let interval = Summary::of_interval(
            crate::stat::plan::machine_here(),
            &summary.events,
            sections.remove(0),
        );
        csv(&mut text, ",", &interval, &[]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "     1.500000000,CPU0,2.00,msec,cpu-clock,500000000,50.00,0.001,CPUs utilized"
        );
        assert!(
            lines[1].starts_with("     1.500000000,CPU1,4.00,msec,"),
            "{text}"
        );
    }

    #[test]
    fn json_lines_have_perfs_keys_and_types() {
        let mut text = String::new();
        json_lines(&mut text, &one_run(), &[]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "{\"counter-value\" : \"1.500000\", \"unit\" : \"msec\", \"event\" : \"task-clock\", \
             \"event-runtime\" : 1000, \"pcnt-running\" : 100.00, \"metric-value\" : 0.750000, \
             \"metric-unit\" : \"CPUs utilized\"}"
        );
        for line in &lines {
            let value: serde_json::Value = serde_json::from_str(line).expect(line);
            assert!(value["counter-value"].is_string(), "{line}");
            assert!(value["event-runtime"].is_u64(), "{line}");
            assert!(value["pcnt-running"].is_f64(), "{line}");
            assert!(value["metric-value"].is_f64(), "{line}");
        }
        let cycles: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(cycles["counter-value"], "<not supported>");
        assert_eq!(cycles["metric-unit"], "");
    }

    /// Oracle: perf 7.2.13's stat-shadow.c (`generic_metric`'s `"%8.1f"` for a metric with a
    /// unit) and stat-display.c (`print_metric_csv`: the number's digits alone, so a `nan` is
    /// empty, and the unit after it).
    #[test]
    fn metrics_of_dash_m_print_in_the_metric_fields() {
        use counterhal::metrics::portable;
        let summary = one_run();
        let metrics: Vec<&MetricDef> = portable()
            .iter()
            .filter(|m| m.name == "CPUs_utilized" || m.name == "IPC")
            .collect();
        let mut text = String::new();
        csv(&mut text, ",", &summary, &metrics);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[3], ",,IPC,,,,insn per cycle",
            "cycles not counted: {text}"
        );
        assert_eq!(lines[4], ",,CPUs_utilized,,,0.8,CPUs utilized");
        let mut text = String::new();
        json_lines(&mut text, &summary, &metrics);
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["metric-value"], 0.75);
        assert_eq!(last["metric-unit"], "CPUs utilized");
    }

    #[test]
    fn never_running_is_not_counted_and_multiplexing_shows() {
        let mut one = run(&[("page-faults", Some(1)), ("idle", Some(0))], 1);
        one.events[0].outcome = Ok(Reading::new(100, 1000, 250));
        one.events[1].outcome = Ok(Reading::new(0, 1000, 0));
        let mut text = String::new();
        csv(
            &mut text,
            ",",
            &Summary::of(crate::stat::plan::machine_here(), &[one]),
            &[],
        );
        assert_eq!(
            text,
            "400,,page-faults,250,25.00,,\n<not counted>,,idle,0,0.00,,\n"
        );
        assert_eq!(interval_time(12_000_000_123), "    12.000000123");
    }
}
