//! How `counterhal stat` writes its results: perf's table (with its metric column, per
//! interval and per place), perf's `-x SEP` and `-j` lines ([`separated`](super::separated)) or
//! the whole-run JSON document ([`document`](super::document)), to standard error (as perf
//! does, so that the command's own output stays clean) or to the file `-o` names.

use std::fmt::Write as _;

use counterhal::Error;

use super::arguments::{Format, StatArgs};
use super::document;
use super::metric_only;
use super::metrics::{Beside, Metric, Style};
use super::results::Place;
use super::separated::{self, interval_time};
use super::summary::{EventSummary, Section, Summary};
use super::topology::line_order;
use crate::error::CliError;
use crate::format::{seconds, thousands};
use crate::output::{OutputFile, emit_to_stderr};
use counterhal::metrics::{MetricDef, evaluate};
use counterhal_system::System;

/// The results as `args` ask for them: table, CSV or JSON.
pub fn render(args: &StatArgs, summary: &Summary, metrics: &[&'static MetricDef]) -> String {
    let mut out = String::new();
    match args.format() {
        Format::Table => table(&mut out, args, summary, metrics),
        Format::Csv { separator } if args.more.metric_only => {
            metric_only::csv(&mut out, separator, summary, metrics);
        }
        Format::Csv { separator } => separated::csv(&mut out, separator, summary, metrics),
        Format::JsonLines if args.more.metric_only => {
            metric_only::json_lines(&mut out, summary, metrics);
        }
        Format::JsonLines => separated::json_lines(&mut out, summary, metrics),
        Format::Json => document::json(&mut out, args, summary, metrics),
    }
    out
}

/// Writes the results to the `-o` file, or to standard error where perf writes them. A file
/// that cannot take them leaves them on standard error instead, so nothing is lost.
///
/// # Errors
/// A write that failed (exit 1), naming where.
pub fn write(output: Option<OutputFile>, text: &str) -> Result<(), CliError> {
    match output {
        Some(file) => file.replace_with(text).inspect_err(|_| {
            emit_to_stderr(text);
        }),
        None if emit_to_stderr(text) => Ok(()),
        None => Err(CliError::failed(Error::new(
            counterhal::ErrorKind::Other,
            "cannot write the results to standard error",
        ))),
    }
}

/// The terminal's codes to move home and clear the screen (`--interval-clear`).
const CLEAR: &str = "\x1b[H\x1b[2J";

/// What was counted, for the table's heading: the command, or (with -p, -a, -C) the process
/// or CPUs while it ran.
fn counted(args: &StatArgs) -> String {
    if let Some(pid) = &args.pid {
        format!("process id '{pid}'")
    } else if let Some(tid) = &args.more.tid {
        format!("thread id '{tid}'")
    } else if args.all_cpus {
        "'system wide'".to_string()
    } else if let Some(list) = &args.cpu_list {
        format!("CPUs '{list}'")
    } else if args.command.is_empty() {
        "'system wide'".to_string()
    } else {
        format!("'{}'", args.command_words().join(" "))
    }
}

/// The heading of `-I`'s table: perf's columns, with the place's after the time.
fn interval_heading(args: &StatArgs) -> String {
    let place = match args.more.aggregation() {
        Some(by) => format!(" {:<w$}cpus", by.key(), w = label_width(by.key())),
        None if args.no_aggregate => " CPU   ".to_string(),
        None if args.per_thread => " thread           ".to_string(),
        None => String::new(),
    };
    format!("#           time{place}             counts unit events\n")
}

/// One interval of `-I` (`interval`: a summary of that interval alone), as it ends, in the
/// layout `args` ask for: the table's heading (or `--metric-only`'s, or its `-x` units) when
/// `first` (perf's: the first interval and every 25th; each with `--interval-clear`, after
/// clearing the screen); `--json`'s interval objects, each after a comma but the first (`objects`: how many
/// were written before, counted on).
pub fn render_interval(
    args: &StatArgs,
    interval: &Summary,
    metrics: &[&'static MetricDef],
    first: bool,
    objects: &mut usize,
) -> String {
    let mut out = String::new();
    let without_heading = |text: String| match text.split_once('\n') {
        Some((_, rest)) if !first => rest.to_string(),
        _ => text,
    };
    match args.format() {
        Format::Table if args.more.metric_only => {
            metric_only::table(&mut out, interval, metrics);
            return without_heading(out);
        }
        Format::Table => {
            if args.more.interval_clear {
                out.push_str(CLEAR);
            }
            if first || args.more.interval_clear {
                out.push_str(&interval_heading(args));
            }
            for section in &interval.sections {
                let big = args.more.big_numbers();
                section_lines(&mut out, &interval.system, section, metrics, big);
            }
        }
        Format::Csv { separator } if args.more.metric_only => {
            metric_only::csv(&mut out, separator, interval, metrics);
            return without_heading(out);
        }
        Format::Csv { separator } => separated::csv(&mut out, separator, interval, metrics),
        Format::JsonLines if args.more.metric_only => {
            metric_only::json_lines(&mut out, interval, metrics);
        }
        Format::JsonLines => separated::json_lines(&mut out, interval, metrics),
        Format::Json => document::interval(&mut out, interval, metrics, objects),
    }
    out
}

/// What follows `-I`'s intervals once the run has ended (`whole`: the whole run, `printed`:
/// how many `--json` objects were written): in the table, why each unsupported event is so;
/// in `--json`, the rest of the document the intervals began.
pub fn render_after_intervals(
    args: &StatArgs,
    whole: &Summary,
    metrics: &[&'static MetricDef],
    objects: usize,
) -> String {
    let mut out = String::new();
    match args.format() {
        Format::Table => not_supported(&mut out, &whole.events),
        Format::Json => document::after_intervals(&mut out, args, whole, metrics, objects > 0),
        Format::Csv { .. } | Format::JsonLines => {}
    }
    out
}

/// perf's table of the whole run (or each place's): one line per event, the times with
/// their spread, the command's end when it failed, and once each reason an event is not
/// supported.
fn table(out: &mut String, args: &StatArgs, summary: &Summary, metrics: &[&'static MetricDef]) {
    let what = counted(args);
    out.push('\n');
    if summary.runs > 1 {
        _ = writeln!(
            out,
            " Performance counter stats for {what} ({} runs):",
            summary.runs
        );
    } else {
        _ = writeln!(out, " Performance counter stats for {what}:");
    }
    out.push('\n');
    if args.more.metric_only {
        metric_only::table(out, summary, metrics);
    } else {
        for section in &summary.sections {
            section_lines(
                out,
                &summary.system,
                section,
                metrics,
                args.more.big_numbers(),
            );
        }
    }
    if !summary.events.is_empty() {
        // After the events (a null run, -n, has none: the times follow the heading).
        out.push('\n');
    }
    let end = &summary.end;
    if let Some(note) = &end.note {
        _ = writeln!(out, " Note: {note}.");
        out.push('\n');
    }
    match summary.elapsed_spread {
        Some((stddev_ns, percent)) => {
            let mean = end.elapsed_ns as f64 / 1e9;
            let stddev = stddev_ns / 1e9;
            let precision = precision(stddev) + 2;
            if args.more.table {
                runs_table(out, &summary.elapsed_each_ns, mean, precision);
            }
            _ = writeln!(
                out,
                " {mean:>17.precision$} +- {stddev:.precision$} seconds time elapsed  ( +-{percent:>6.2}% )"
            );
        }
        None => _ = writeln!(out, "{:>18} seconds time elapsed", seconds(end.elapsed_ns)),
    }
    // perf shows the command's user and system times for a single run of a command counted
    // alone (no -p, -t, -a, -C): `run_count == 1 && target__none` in builtin-stat.c.
    let alone = args.pid.is_none() && args.more.tid.is_none() && !args.all_cpus;
    let alone = alone && args.cpu_list.is_none() && summary.elapsed_spread.is_none();
    if let (true, Some(user), Some(sys)) = (alone, end.user_ns, end.sys_ns) {
        out.push('\n');
        _ = writeln!(out, "{:>18} seconds user", seconds(user));
        _ = writeln!(out, "{:>18} seconds sys", seconds(sys));
    }
    out.push('\n');
    if end.exit_code != 0 {
        _ = writeln!(out, " The command {}.", end.exit_description);
        out.push('\n');
    }
    not_supported(out, &summary.events);
}

/// The width of a `--per-core` (`--per-socket`...) label in perf's table, before the number
/// of CPUs it added up.
fn label_width(key: &str) -> usize {
    match key {
        "core" => 16,
        "die" => 9,
        _ => 7,
    }
}

/// `--table`: each run's elapsed time in seconds, its distance from the mean, and a bar of
/// one `#` plus one per 5% of the run that distance is (perf's table), then the heading of
/// the final result.
fn runs_table(out: &mut String, each_ns: &[u64], mean: f64, precision: usize) {
    // The headings start where the mean's digits do.
    let mean_line = format!(" {mean:>17.precision$}");
    let indent = mean_line.len() - mean_line.trim_start().len();
    _ = writeln!(out, "{:indent$}# Table of individual measurements:", "");
    for &ns in each_ns {
        let run = ns as f64 / 1e9;
        let share = if run > 0.0 {
            (100.0 * (run - mean) / run) as i64
        } else {
            0
        };
        let bar = "#".repeat(1 + usize::try_from(share.unsigned_abs() / 5).unwrap_or(0));
        _ = writeln!(
            out,
            " {run:>17.precision$} ({:+.precision$}) {bar}",
            run - mean
        );
    }
    out.push('\n');
    _ = writeln!(out, "{:indent$}# Final result:", "");
}

/// After `-I`'s intervals, `--summary`'s whole run: the table as without `-I`, the `-x` lines
/// with `summary` first (unless `--no-csv-summary`), or the `-j` lines without `interval`
/// (`--json` holds the whole run already).
pub fn render_summary(args: &StatArgs, whole: &Summary, metrics: &[&'static MetricDef]) -> String {
    let mut out = String::new();
    match args.format() {
        Format::Table => table(&mut out, args, whole, metrics),
        Format::Csv { separator } => {
            let mut lines = String::new();
            separated::csv(&mut lines, separator, whole, metrics);
            for line in lines.lines() {
                if !args.more.no_csv_summary {
                    _ = write!(out, "{:>16}{separator}", "summary");
                }
                _ = writeln!(out, "{line}");
            }
        }
        Format::JsonLines => separated::json_lines(&mut out, whole, metrics),
        Format::Json => {}
    }
    out
}

/// perf's decimals for a spread: as many as its first significant digit needs (0 above 1).
fn precision(spread: f64) -> usize {
    if spread > 1.0 || spread <= 0.0 || !spread.is_finite() {
        return 0;
    }
    (-spread.log10()).ceil().max(0.0) as usize
}

/// One section's lines in perf's order ([`line_order`]), then each place's `-M` metrics.
fn section_lines(
    out: &mut String,
    system: &System,
    section: &Section,
    metrics: &[&'static MetricDef],
    big: bool,
) {
    let beside: Vec<Beside<'_>> = section
        .places
        .iter()
        .map(|p| Beside::new(&p.events))
        .collect();
    // perf's unit column is as wide as the widest unit, and at least 4 (`msec`).
    let unit_width = section
        .places
        .iter()
        .flat_map(|p| p.events.iter().map(|e| e.unit().len()))
        .fold(4, usize::max);
    for (index, at) in line_order(section) {
        let place = &section.places[at];
        {
            let mut line = String::new();
            if let Some(at_ns) = section.at_ns {
                _ = write!(line, "{} ", interval_time(at_ns));
            }
            match place.place.as_ref().map(|p| (p, p.cpus_added(index))) {
                Some((place, Some(cpus))) => {
                    let width = label_width(place.json_field().0);
                    _ = write!(line, "{:<width$}{cpus:>4} ", place.label());
                }
                // perf's "%*s-%-*d " (stat-display.c: the command right-aligned in 16, the id
                // left-aligned), with the id's width Debian's perf 6.1 prints (8: its values
                // start one column later than 6.12's PID_LEN 7 would put them).
                Some((Place::Thread { tid, name }, None)) => {
                    _ = write!(line, "{name:>16}-{tid:<8} ");
                }
                Some((place, None)) => _ = write!(line, "{:<11}", place.label()),
                None => {}
            }
            let metric = beside[at].metric(index, section.length_ns);
            let entry = &place.events[index];
            line.push_str(&table_line(entry, metric.as_ref(), big, unit_width));
            _ = writeln!(out, "{}", line.trim_end());
        }
    }
    for place in &section.places {
        for def in metrics {
            let mut line = String::new();
            if let Some(at_ns) = section.at_ns {
                _ = write!(line, "{} ", interval_time(at_ns));
            }
            if let Some(place) = &place.place {
                _ = write!(line, "{:<11}", place.label());
            }
            match evaluate(system, def, &place.events, section.length_ns) {
                Some(value) => {
                    _ = write!(
                        line,
                        "{:>18} {:<4} {:<32} # {value:>8.3} {}",
                        "", "", def.name, def.unit
                    )
                }
                None => _ = write!(line, "{:>18} {:<4} {}", "<not counted>", "", def.name),
            }
            _ = writeln!(out, "{}", line.trim_end());
        }
    }
}

/// One event's line of the table: the value (milliseconds for a clock, scaled by its alias;
/// digits grouped when `big`), the unit (in a column `unit_width` wide), the name, the
/// metric, the spread and, when the event was multiplexed, the share of time it ran.
fn table_line(
    entry: &EventSummary,
    metric: Option<&Metric>,
    big: bool,
    unit_width: usize,
) -> String {
    let unit = entry.unit();
    // perf pads the name to 25 columns before the cgroup of an event without a value.
    let unvalued = |what: &str| match &entry.cgroup {
        Some(cgroup) => format!("{what:>18} {unit:<unit_width$} {:<25} {cgroup}", entry.name),
        None => format!("{what:>18} {unit:<unit_width$} {}", entry.name),
    };
    let reading = match &entry.reading {
        Err(_) => return unvalued("<not supported>"),
        Ok(reading) => reading,
    };
    let (Some(value), Some((number, decimals))) = (reading.scaled(), entry.shown_value()) else {
        return unvalued("<not counted>");
    };
    let shown = if decimals {
        let digits = format!("{number:.2}");
        match digits.split_once('.') {
            // perf's `%'18.2f`: the whole part grouped.
            Some((whole, fraction)) if big && entry.scale.is_some() => {
                let whole = whole.parse().map_or_else(|_| whole.to_string(), thousands);
                format!("{whole}.{fraction}")
            }
            _ => digits,
        }
    } else if entry.scale.is_some() {
        let whole = format!("{number:.0}");
        match whole.parse() {
            Ok(whole) if big => thousands(whole),
            _ => whole,
        }
    } else if entry.unit() == "ns" || !big {
        // perf never groups a tool event's nanoseconds.
        value.to_string()
    } else {
        thousands(value)
    };
    let mut line = format!("{shown:>18} {unit:<unit_width$} {:<32}", entry.name);
    if let Some(cgroup) = &entry.cgroup {
        _ = write!(line, " {cgroup}");
    }
    let column = match metric {
        Some(Metric { value, unit, style }) => {
            let number = match style {
                Style::Rate => format!("{value:>8.3}"),
                Style::Ratio => format!("{value:>7.2} "),
                Style::Percent => format!("{value:>7.2}%"),
            };
            format!(" # {number} {unit:<23}")
        }
        None => format!("{:35}", ""),
    };
    line.push_str(&column);
    // A spread of exactly 0 is left blank, as perf's print_noise_pct_std does (`if (pct)`).
    if let Some(spread) = entry.stddev_percent.filter(|s| *s != 0.0) {
        _ = write!(line, "  ( +-{spread:>6.2}% )");
    }
    if reading.is_multiplexed() {
        let percent = 100.0 * reading.fraction_running().unwrap_or(0.0);
        _ = write!(line, "  ({percent:.2}%)");
    }
    line.trim_end().to_string()
}

/// Below the table, why each unsupported event is so, each distinct reason once.
fn not_supported(out: &mut String, events: &[EventSummary]) {
    let reasons: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| Some((e.name.as_str(), e.reading.as_ref().err()?.as_str())))
        .collect();
    if reasons.is_empty() {
        return;
    }
    _ = writeln!(out, " Not supported here:");
    let mut seen: Vec<&str> = Vec::new();
    for (name, reason) in reasons {
        // Messages start with the event's name.
        let reason = reason
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(": "))
            .unwrap_or(reason);
        if seen.contains(&reason) {
            _ = writeln!(out, "   {name}: as above");
        } else {
            _ = writeln!(out, "   {name}: {reason}");
            seen.push(reason);
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use counterhal_hal::BackendExt;
    use serde_json::json;

    use super::*;
    use crate::stat::arguments::parse;
    use crate::stat::results::{Counts, Place, Snapshot};
    use crate::stat::summary::tests::{intervals, run};
    use counterhal_hal::Reading;

    fn render_with(words: &[&str], summary: &Summary) -> String {
        let args = parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"));
        render(&args, summary, &[])
    }

    /// page-faults and task-clock 1.5 ms counted, cycles not supported, in one run of 2 s.
    fn one_run() -> Summary {
        Summary::of(&[run(
            &[
                ("page-faults", Some(1_234_567)),
                ("task-clock", Some(1_500_000)),
                ("cycles", None),
            ],
            2_000_000_000,
        )])
    }

    #[test]
    fn the_runs_table_bars_grow_by_five_percent_of_the_run() {
        let mut out = String::new();
        // perf's rows for runs of 11.63, 10.99 and 1.22 ms around a mean of 7.95 ms.
        runs_table(&mut out, &[11_630_000, 10_990_000, 1_220_000], 0.00795, 5);
        let bars: Vec<usize> = out
            .lines()
            .filter(|l| l.contains('('))
            .map(|l| l.matches('#').count())
            .collect();
        assert_eq!(bars, [7, 6, 111], "{out}");
        assert!(out.contains("0.01163 (+0.00368) #######\n"), "{out}");
        assert!(
            out.starts_with("           # Table"),
            "under the digits: {out}"
        );
        let mut six = String::new();
        runs_table(&mut six, &[1_000_000], 0.001, 6);
        assert!(six.starts_with("          # Table"), "{six}");
    }

    #[test]
    fn the_formats_follow_the_options() {
        let csv = render_with(&["-x", ";", "--", "true"], &one_run());
        assert_eq!(csv.lines().next().unwrap().split(';').count(), 7, "{csv}");
        let lines = render_with(&["-j", "--", "true"], &one_run());
        assert_eq!(lines.lines().count(), 3, "{lines}");
        assert!(
            lines.starts_with("{\"counter-value\" : \"1234567.000000\""),
            "{lines}"
        );
    }

    #[test]
    fn the_table_reads_as_perfs() {
        let text = render_with(&["--", "sh", "-c", "true"], &one_run());
        // The count is grouped as this process's locale groups numbers (perf's `%'`).
        let count = format!("{:>18}", thousands(1_234_567));
        let expected = "
 Performance counter stats for 'sh -c true':

COUNT      page-faults                      #  823.045 M/sec
              1.50 msec task-clock                       #    0.001 CPUs utilized
   <not supported>      cycles

       2.000000000 seconds time elapsed

 Not supported here:
   cycles: no PMU here

"
        .replace("COUNT", &count);
        assert_eq!(text, expected);
    }

    #[test]
    fn the_table_shows_runs_spreads_ratios_times_and_the_end() {
        let mut runs = [
            run(
                &[("cycles", Some(1_000)), ("instructions", Some(400))],
                1_000_000,
            ),
            run(
                &[("cycles", Some(1_000)), ("instructions", Some(600))],
                3_000_000,
            ),
        ];
        for run in &mut runs {
            run.end.sys_ns = Some(0);
            run.end.exit_code = 3;
            run.end.exit_description = "exited with status 3".to_string();
        }
        let text = render_with(
            &["-r", "2", "-C", "0,2-3", "--", "true"],
            &Summary::of(&runs),
        );
        assert!(text.contains("for CPUs '0,2-3' (2 runs):"), "{text}");
        let instructions = text.lines().find(|l| l.contains("instructions")).unwrap();
        assert_eq!(
            instructions,
            "               500      instructions                     #    0.50  insn per cycle           ( +- 20.00% )"
        );
        // Elapsed 1 and 3 ms: mean 2 ms, stddev of the mean 1 ms (50%), in perf's digits.
        assert!(
            text.contains("           0.00200 +- 0.00100 seconds time elapsed  ( +- 50.00% )\n"),
            "{text}"
        );
        // perf shows user and system times for one run of a command alone, not for -r or -C
        // (builtin-stat.c: `run_count == 1 && target__none`).
        assert!(!text.contains("seconds user\n"), "{text}");
        assert!(
            text.contains(" The command exited with status 3."),
            "{text}"
        );
        assert!(!text.contains("Not supported"), "{text}");
        assert_eq!(precision(0.00147), 3);
        assert_eq!(precision(2.0), 0);
    }

    #[test]
    fn intervals_and_places_print_with_their_columns() {
        let one = run(&[("cpu-clock", Some(30))], 10);
        let place = |cpu, v: u64| Counts {
            place: Some(Place::Cpu(cpu)),
            readings: vec![Ok(Reading::new(v, 100_000_000, 100_000_000))],
        };
        let snapshot = Snapshot {
            at_ns: 100_000_000,
            counts: vec![place(0, 100_000_000), place(1, 50_000_000)],
        };
        let (summary, mut sections) = intervals(&one, &[snapshot]);
        let interval = Summary::of_interval(&summary.events, sections.remove(0));
        let args = parse(&["-a", "-A", "-I", "100"]).unwrap();
        let text = render_interval(&args, &interval, &[], true, &mut 0);
        let again = render_interval(&args, &interval, &[], false, &mut 0);
        assert_eq!(again.lines().count(), 2, "the heading once: {again}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "#           time CPU                counts unit events"
        );
        assert_eq!(
            lines[1],
            "     0.100000000 CPU0                   100.00 msec cpu-clock                        #    1.000 CPUs utilized"
        );
        assert!(
            lines[2].starts_with("     0.100000000 CPU1                    50.00 msec"),
            "{text}"
        );
        assert!(!text.contains("seconds time elapsed"), "{text}");
    }

    #[test]
    fn one_reason_shared_by_several_events_is_said_once() {
        let summary = Summary::of(&[run(&[("cycles", None), ("instructions", None)], 1)]);
        let text = render_with(&["-p", "42", "--", "true"], &summary);
        assert!(text.contains("for process id '42':"), "{text}");
        assert!(text.contains("   cycles: no PMU here\n"), "{text}");
        // The reasons differ only in the name they start with: the same reason.
        assert!(text.contains("   instructions: as above\n"), "{text}");
        let system_wide = render_with(&["-a"], &summary);
        assert!(system_wide.contains("for 'system wide':"), "{system_wide}");
    }

    #[test]
    fn json_has_the_documented_fields() {
        let text = render_with(&["--json", "--", "true", "x"], &one_run());
        let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(value["command"], json!(["true", "x"]));
        assert_eq!(value["exit_status"], 0);
        assert_eq!(value["elapsed_ns"], 2_000_000_000u64);
        assert_eq!(value["user_ns"], 1_000_000_000u64);
        assert!(value["sys_ns"].is_null(), "not told: {value}");
        assert!(value["elapsed_stddev_percent"].is_null());
        assert_eq!(value["runs"], 1);
        assert!(value["note"].is_null());
        assert!(value.get("intervals").is_none());
        let faults = &value["events"][0];
        assert_eq!(faults["name"], "page-faults");
        assert_eq!(faults["backend"], "test");
        assert_eq!(faults["value"], 1_234_567);
        assert_eq!(faults["scaled"], 1_234_567);
        assert_eq!(faults["supported"], true);
        assert_eq!(faults["metric_unit"], "M/sec");
        assert!(faults["stddev_percent"].is_null());
        let cycles = &value["events"][2];
        assert_eq!(cycles["supported"], false);
        assert!(cycles["value"].is_null());
        assert_eq!(cycles["reason"], "cycles: no PMU here");
    }

    /// Where the backend multiplexes in software (the device models of the registry's
    /// backends, fed the conformance suite's steady work, on an Intel, an AMD and a P6 CPU
    /// model): one more copy of `branches` than the model has general-purpose counters,
    /// ungrouped, counted over ten turns, then printed as `stat` prints it. Every copy ran part
    /// of the time, and every format says so: `(xx.xx%)` in the table, the fifth field of
    /// `-x,`, `pcnt-running` of `-j`, each strictly between 0 and 100.
    #[test]
    fn software_multiplexing_on_the_device_models_shows_in_every_format() {
        use counterhal_hal::{Backend, Group};
        let mut readings: Vec<(String, Vec<Reading>)> = Vec::new();
        for model in ["skl", "amd64_fam17h_zen2", "p6"] {
            let context = counterhal::Context::new(None, Some(model)).unwrap();
            for registration in counterhal::REGISTRY {
                // A backend without models, or none of this CPU model's kind.
                let Some(Ok(fed)) = registration.fed_model.map(|fed| fed(&context)) else {
                    continue;
                };
                let Some(slots) = fed.backend.capabilities().general_counters() else {
                    continue;
                };
                let names = vec!["branches"; slots as usize + 1];
                let options = counterhal::OpenOptions::ungrouped();
                let mut set = fed
                    .backend
                    .open_named(&names, &fed.target, &options)
                    .unwrap_or_else(|e| panic!("{}: {e}", fed.description));
                set.enable().unwrap();
                // 40 ms of the models' time (each unit is 10 ns): ten 4 ms turns.
                for _ in 0..4_000 {
                    (fed.work)(1_000);
                }
                set.disable().unwrap();
                readings.push((fed.description.clone(), set.read_to_vec().unwrap()));
            }
        }
        assert!(
            readings.len() >= 3,
            "a model subject per CPU model at least: {}",
            readings.len()
        );
        let within = |percent: f64, what: &str| {
            assert!(percent > 0.0 && percent < 100.0, "{what}: {percent}");
        };
        for (what, readings) in readings {
            let names: Vec<String> = (0..readings.len()).map(|i| format!("copy{i}")).collect();
            let values: Vec<(&str, Option<u64>)> =
                names.iter().map(|name| (name.as_str(), Some(0))).collect();
            let mut one = run(&values, 40_000_000);
            for (result, reading) in one.events.iter_mut().zip(&readings) {
                result.outcome = Ok(*reading);
            }
            let summary = Summary::of(&[one]);
            let table = render_with(&["--", "true"], &summary);
            let shares: Vec<f64> = table
                .lines()
                .filter(|line| line.contains("copy"))
                .map(|line| {
                    let share = line.rsplit_once("  (").map(|(_, share)| share);
                    let share = share.and_then(|s| s.strip_suffix("%)"));
                    share
                        .unwrap_or_else(|| panic!("{what}: {line}"))
                        .parse()
                        .unwrap()
                })
                .collect();
            assert_eq!(shares.len(), readings.len(), "{what}: {table}");
            shares.iter().for_each(|&share| within(share, &what));
            let csv = render_with(&["-x,", "--", "true"], &summary);
            for line in csv.lines() {
                within(line.split(',').nth(4).unwrap().parse().unwrap(), &what);
            }
            let lines = render_with(&["-j", "--", "true"], &summary);
            for line in lines.lines() {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                within(value["pcnt-running"].as_f64().unwrap(), &what);
            }
        }
    }
}
