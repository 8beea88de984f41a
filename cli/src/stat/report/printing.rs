//! How `counterhal stat` writes its results: perf's table (with its metric column, per
//! interval and per place), perf's `-x SEP` and `-j` lines ([`separated`](super::separated)) or
//! the whole-run JSON document ([`document`](super::document)), to standard error (as perf
//! does, so that the command's own output stays clean) or to the file `-o` names.

use std::fmt::Write as _;

use counterhal::Error;

use super::default_metrics::{default_metric, generic_metric};
use super::document;
use super::metric_only;
use super::metrics::{Beside, Metric, Style};
use super::separated::{self, interval_time};
use super::summary::{EventSummary, Section, Summary};
use super::thresholds;
use super::topology::{label_width, line_order};
use crate::error::CliError;
use crate::format::{seconds, thousands};
use crate::output::{OutputFile, emit_to_stderr};
use crate::stat::arguments::Format;
use crate::stat::measure::results::Place;
use crate::stat::report::{MetricWords, Report};
use counterhal::metrics::Machine;
use counterhal::metrics::{classify, evaluate};

/// The results as `report` asks for them: table, CSV or JSON.
pub fn render(report: &Report, summary: &Summary) -> String {
    let metrics = &report.metrics;
    let mut out = String::new();
    match &report.format {
        Format::Table => table(&mut out, report, summary),
        Format::Csv { separator } if report.metric_only => {
            metric_only::csv(&mut out, separator, summary, metrics);
        }
        Format::Csv { separator } => separated::csv(&mut out, separator, summary, metrics),
        Format::JsonLines if report.metric_only => {
            metric_only::json_lines(&mut out, summary, metrics);
        }
        Format::JsonLines => separated::json_lines(&mut out, summary, metrics),
        Format::Json => document::json(&mut out, report, summary),
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

/// The heading of `-I`'s table: perf's columns, with the place's after the time.
fn interval_heading(report: &Report) -> String {
    format!(
        "#           time{}             counts unit events\n",
        report.place_heading
    )
}

/// One interval of `-I` (`interval`: a summary of that interval alone), as it ends, in the
/// layout `report` asks for: the table's heading (or `--metric-only`'s, or its `-x` units) when
/// `first` (perf's: the first interval and every 25th; each with `--interval-clear`, after
/// clearing the screen); `--json`'s interval objects, each after a comma but the first (`objects`: how many
/// were written before, counted on).
pub fn render_interval(
    report: &Report,
    interval: &Summary,
    first: bool,
    objects: &mut usize,
) -> String {
    let metrics = &report.metrics;
    let mut out = String::new();
    let without_heading = |text: String| match text.split_once('\n') {
        Some((_, rest)) if !first => rest.to_string(),
        _ => text,
    };
    match &report.format {
        Format::Table if report.metric_only => {
            metric_only::table(&mut out, report, interval);
            return without_heading(out);
        }
        Format::Table => {
            if report.interval_clear {
                out.push_str(CLEAR);
            }
            if first || report.interval_clear {
                out.push_str(&interval_heading(report));
            }
            for section in &interval.sections {
                section_lines(&mut out, report, &interval.system, section);
            }
        }
        Format::Csv { separator } if report.metric_only => {
            metric_only::csv(&mut out, separator, interval, metrics);
            return without_heading(out);
        }
        Format::Csv { separator } => separated::csv(&mut out, separator, interval, metrics),
        Format::JsonLines if report.metric_only => {
            metric_only::json_lines(&mut out, interval, metrics);
        }
        Format::JsonLines => separated::json_lines(&mut out, interval, metrics),
        Format::Json => document::interval(&mut out, interval, metrics, objects),
    }
    out
}

/// What follows `-I`'s intervals once the run has ended (`whole`: the whole run, `printed`:
/// how many `--json` objects were written): in the table, why each unsupported event is so,
/// as comment lines (`# `), which readers of the intervals' columns pass over as they pass
/// over the heading (perf 7.2's stat+std_output.sh takes every other line for an event's);
/// in `--json`, the rest of the document the intervals began.
pub fn render_after_intervals(report: &Report, whole: &Summary, objects: usize) -> String {
    let mut out = String::new();
    match report.format {
        Format::Table => not_supported(&mut out, &whole.events, "#"),
        Format::Json => document::after_intervals(&mut out, report, whole, objects > 0),
        Format::Csv { .. } | Format::JsonLines => {}
    }
    out
}

/// perf's table of the whole run (or each place's): one line per event, the times with
/// their spread, the command's end when it failed, and once each reason an event is not
/// supported.
fn table(out: &mut String, report: &Report, summary: &Summary) {
    let what = &report.counted;
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
    if report.metric_only {
        metric_only::table(out, report, summary);
    } else {
        for section in &summary.sections {
            section_lines(out, report, &summary.system, section);
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
            if report.runs_table {
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
    let alone = report.alone && summary.elapsed_spread.is_none();
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
    not_supported(out, &summary.events, "");
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
pub fn render_summary(report: &Report, whole: &Summary) -> String {
    let metrics = &report.metrics;
    let mut out = String::new();
    match &report.format {
        Format::Table => table(&mut out, report, whole),
        Format::Csv { separator } => {
            let mut lines = String::new();
            separated::csv(&mut lines, separator, whole, metrics);
            for line in lines.lines() {
                if !report.no_csv_summary {
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
fn section_lines(out: &mut String, report: &Report, system: &Machine, section: &Section) {
    let (big, colour, words) = (report.big_numbers, report.colour, report.words);
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
            line.push_str(&table_line(entry, metric.as_ref(), big, unit_width, words));
            _ = writeln!(out, "{}", line.trim_end());
        }
    }
    for place in &section.places {
        for def in &report.metrics {
            let mut line = String::new();
            if let Some(at_ns) = section.at_ns {
                _ = write!(line, "{} ", interval_time(at_ns));
            }
            if let Some(place) = &place.place {
                _ = write!(line, "{:<11}", place.label());
            }
            // perf 7.2's number (`nan` where the metric's events did not count).
            let value = evaluate(system, def, &place.events, section.length_ns);
            let threshold =
                value.and_then(|_| classify(system, def, &place.events, section.length_ns));
            let number = generic_metric(value, def.unit);
            let number = thresholds::painted(&number, threshold, colour);
            _ = write!(
                line,
                "{:>18} {:<4} {:<32} # {number} {}",
                "", "", def.name, def.unit
            );
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
    words: MetricWords,
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
    let perf72 = match (words, metric) {
        (MetricWords::Perf72Defaults, Some(metric)) => Some(default_metric(&entry.name, metric)),
        _ => None,
    };
    let column = match (perf72, metric) {
        // perf 7.2's print_metric_std: ` # `, the value, and the words in what is left of
        // METRIC_LEN (38) columns.
        (Some(Some((value, decimals, words))), _) => {
            let number = format!("{value:>8.decimals$}");
            let width = 38usize.saturating_sub(3 + number.len() + 1);
            format!(" # {number} {words:<width$}")
        }
        (Some(None), _) => format!("{:38}", ""),
        (None, Some(Metric { value, unit, style })) => {
            let number = match style {
                Style::Rate => format!("{value:>8.3}"),
                Style::Ratio => format!("{value:>7.2} "),
                Style::Percent => format!("{value:>7.2}%"),
            };
            format!(" # {number} {unit:<23}")
        }
        (None, None) => format!("{:35}", ""),
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

/// Below the table, why each unsupported event is so, each distinct reason once; each line
/// after `prefix`.
fn not_supported(out: &mut String, events: &[EventSummary], prefix: &str) {
    let reasons: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| Some((e.name.as_str(), e.reading.as_ref().err()?.as_str())))
        .collect();
    if reasons.is_empty() {
        return;
    }
    _ = writeln!(out, "{prefix} Not supported here:");
    let mut seen: Vec<&str> = Vec::new();
    for (name, reason) in reasons {
        // Messages start with the event's name.
        let reason = reason
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(": "))
            .unwrap_or(reason);
        if seen.contains(&reason) {
            _ = writeln!(out, "{prefix}   {name}: as above");
        } else {
            _ = writeln!(out, "{prefix}   {name}: {reason}");
            seen.push(reason);
        }
    }
    out.push('\n');
}

#[cfg(test)]
#[path = "printing_tests.rs"]
mod tests;
