//! Printing a report: perf's table, `-x` CSV, and `--json`.

use std::fmt::Write as _;

use serde_json::json;

use super::args::StatArgs;
use super::measure::Run;
use super::summary::{Summary, is_clock, ratio_note};
use crate::format::{seconds, thousands};

pub(super) fn print_table(
    out: &mut String,
    args: &StatArgs,
    summary: &[Summary],
    last: &Run,
    runs: usize,
) {
    out.push('\n');
    let what = args.counted();
    if runs > 1 {
        _ = writeln!(out, " Performance counter stats for {what} ({runs} runs):");
    } else {
        _ = writeln!(out, " Performance counter stats for {what}:");
    }
    out.push('\n');
    let mut reasons: Vec<(String, String)> = Vec::new();
    for entry in summary {
        match &entry.reading {
            Err(reason) => {
                _ = writeln!(out, "{:>18}      {}", "<not supported>", entry.name);
                reasons.push((entry.name.clone(), reason.clone()));
            }
            Ok(reading) => match reading.scaled() {
                None => _ = writeln!(out, "{:>18}      {}", "<not counted>", entry.name),
                Some(value) => {
                    let shown = if is_clock(&entry.name) {
                        format!("{:.2} msec", value as f64 / 1e6)
                    } else {
                        thousands(value)
                    };
                    let mut line = format!(
                        "{shown:>18}      {:<32} {}",
                        entry.name,
                        ratio_note(summary, entry)
                    );
                    if let Some(spread) = entry.stddev_percent {
                        line.push_str(&format!(" ( +- {spread:.2}% )"));
                    }
                    if reading.is_multiplexed() {
                        let percent = 100.0 * reading.fraction_running().unwrap_or(0.0);
                        line.push_str(&format!("  ({percent:.2}%)"));
                    }
                    _ = writeln!(out, "{}", line.trim_end());
                }
            },
        }
    }
    out.push('\n');
    if let Some(note) = &last.note {
        _ = writeln!(out, " Note: {note}.");
        out.push('\n');
    }
    _ = writeln!(out, "{:>18} seconds time elapsed", seconds(last.elapsed_ns));
    if let (Some(user), Some(sys)) = (last.user_ns, last.sys_ns) {
        out.push('\n');
        _ = writeln!(out, "{:>18} seconds user", seconds(user));
        _ = writeln!(out, "{:>18} seconds sys", seconds(sys));
    }
    out.push('\n');
    if last.exit_code != 0 {
        _ = writeln!(out, " The command {}.", last.exit_description);
        out.push('\n');
    }
    if !reasons.is_empty() {
        _ = writeln!(out, " Not supported here:");
        let mut seen: Vec<&str> = Vec::new();
        for (name, reason) in &reasons {
            // Say each distinct reason once (messages start with the event's name).
            let reason = reason.strip_prefix(&format!("{name}: ")).unwrap_or(reason);
            if seen.contains(&reason) {
                _ = writeln!(out, "   {name}: as above");
            } else {
                _ = writeln!(out, "   {name}: {reason}");
                seen.push(reason);
            }
        }
        out.push('\n');
    }
}

/// One line per event: value, unit, name, time running (ns), percent running, and with -r the
/// spread (stddev of the mean, %).
pub(super) fn print_csv(out: &mut String, separator: &str, summary: &[Summary]) {
    for entry in summary {
        let (value, unit, running, percent) = match &entry.reading {
            Err(_) => ("<not supported>".to_string(), "", 0, 0.0),
            Ok(reading) => match reading.scaled() {
                None => ("<not counted>".to_string(), "", reading.time_running, 0.0),
                Some(value) => {
                    let unit = if is_clock(&entry.name) { "ns" } else { "" };
                    let percent = 100.0 * reading.fraction_running().unwrap_or(0.0);
                    (value.to_string(), unit, reading.time_running, percent)
                }
            },
        };
        // With -r, perf's CSV puts the spread (stddev of the mean, in %) between the value and
        // the unit... after the name here, as a sixth field, so the first five stay fixed.
        let spread = entry
            .stddev_percent
            .map_or(String::new(), |spread| format!("{separator}{spread:.2}"));
        _ = writeln!(
            out,
            "{value}{separator}{unit}{separator}{}{separator}{running}{separator}{percent:.2}{spread}",
            entry.name
        );
    }
}

pub(super) fn print_json(out: &mut String, args: &StatArgs, summary: &[Summary], last: &Run) {
    let command = args.command_words();
    let events: Vec<serde_json::Value> = summary
        .iter()
        .map(|entry| match &entry.reading {
            Ok(reading) => json!({
                "name": entry.name,
                "backend": entry.backend,
                "value": reading.value,
                "time_enabled": reading.time_enabled,
                "time_running": reading.time_running,
                "scaled": reading.scaled(),
                "supported": true,
                "reason": null,
                "stddev_percent": entry.stddev_percent,
            }),
            Err(reason) => json!({
                "name": entry.name,
                "backend": entry.backend,
                "value": null,
                "time_enabled": null,
                "time_running": null,
                "scaled": null,
                "supported": false,
                "reason": reason,
            }),
        })
        .collect();
    let object = json!({
        "command": command,
        "exit_status": last.exit_code,
        "elapsed_ns": last.elapsed_ns,
        "runs": args.repeat,
        "note": last.note,
        "events": events,
    });
    _ = writeln!(out, "{object}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::args::tests::parse;
    use crate::stat::summary::mean_run;
    use crate::stat::summary::summarize;
    use crate::stat::summary::tests::run;

    #[test]
    fn csv_has_five_fields_and_the_spread_as_a_sixth() {
        let runs = [run(&[("task-clock", 2_000_000), ("page-faults", 7)], 1)];
        let mut out = String::new();
        print_csv(&mut out, ";", &summarize(&runs));
        assert_eq!(
            out,
            "2000000;ns;task-clock;1000;100.00\n7;;page-faults;1000;100.00\n"
        );
        let runs = [run(&[("page-faults", 6)], 1), run(&[("page-faults", 8)], 1)];
        let mut out = String::new();
        print_csv(&mut out, ",", &summarize(&runs));
        assert_eq!(out, "7,,page-faults,1000,100.00,14.29\n");
    }

    #[test]
    fn the_table_shows_counts_reasons_and_times() {
        let args = parse(&["--", "true"]);
        let mut runs = [run(
            &[("page-faults", 1_234_567), ("cycles", 0)],
            2_500_000_000,
        )];
        runs[0].events[1].outcome = Err(counterhal::Error::unsupported("cycles: no PMU"));
        let mut out = String::new();
        print_table(&mut out, &args, &summarize(&runs), &mean_run(&runs), 1);
        assert!(
            out.contains(" Performance counter stats for 'true':"),
            "{out}"
        );
        assert!(out.contains("         1,234,567      page-faults"), "{out}");
        assert!(out.contains("   <not supported>      cycles"), "{out}");
        assert!(
            out.contains("       2.500000000 seconds time elapsed"),
            "{out}"
        );
        assert!(out.contains("   cycles: no PMU"), "{out}");
    }

    #[test]
    fn json_has_the_documented_fields() {
        let args = parse(&["-r", "1", "--", "true"]);
        let runs = [run(&[("page-faults", 3)], 10)];
        let mut out = String::new();
        print_json(&mut out, &args, &summarize(&runs), &mean_run(&runs));
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["command"], serde_json::json!(["true"]));
        assert_eq!(value["elapsed_ns"], 10);
        assert_eq!(value["events"][0]["value"], 3);
        assert_eq!(value["events"][0]["scaled"], 3);
        assert_eq!(value["events"][0]["supported"], true);
    }
}
