//! How `counterhal stat` writes its results: perf's table, one CSV line per event (`-x SEP`)
//! or one JSON object (`--json`), to standard error (as perf does, so that the command's own
//! output stays clean) or to the file `-o` names.

use std::fmt::Write as _;

use counterhal::Error;
use serde_json::json;

use super::arguments::{Format, StatArgs};
use super::summary::{EventSummary, Ratio, Summary};
use crate::error::CliError;
use crate::format::{seconds, thousands};
use crate::output::{OutputFile, emit_to_stderr};

/// The results as `args` ask for them: table, CSV or JSON.
pub fn render(args: &StatArgs, summary: &Summary) -> String {
    let mut out = String::new();
    match args.format() {
        Format::Table => table(&mut out, args, summary),
        Format::Csv { separator } => csv(&mut out, separator, summary),
        Format::Json => json(&mut out, args, summary),
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

/// What was counted, for the table's heading: the command, or (with -p, -a, -C) the process
/// or CPUs while it ran.
fn counted(args: &StatArgs) -> String {
    if let Some(pid) = args.pid {
        format!("process id '{pid}'")
    } else if args.all_cpus {
        "'system wide'".to_string()
    } else if let Some(list) = &args.cpu_list {
        format!("CPUs '{list}'")
    } else {
        format!("'{}'", args.command_words().join(" "))
    }
}

/// perf's table: one line per event, the times, the command's end when it failed, and once
/// each reason an event is not supported.
fn table(out: &mut String, args: &StatArgs, summary: &Summary) {
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
    for entry in &summary.events {
        _ = writeln!(out, "{}", table_line(summary, entry));
    }
    out.push('\n');
    let end = &summary.end;
    if let Some(note) = &end.note {
        _ = writeln!(out, " Note: {note}.");
        out.push('\n');
    }
    _ = writeln!(out, "{:>18} seconds time elapsed", seconds(end.elapsed_ns));
    if let (Some(user), Some(sys)) = (end.user_ns, end.sys_ns) {
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

/// One event's line of the table: the value (milliseconds for a clock), the name, the derived
/// ratio, the spread and, when the event was multiplexed, the share of time it ran.
fn table_line(summary: &Summary, entry: &EventSummary) -> String {
    let reading = match &entry.reading {
        Err(_) => return format!("{:>18}      {}", "<not supported>", entry.name),
        Ok(reading) => reading,
    };
    let Some(value) = reading.scaled() else {
        return format!("{:>18}      {}", "<not counted>", entry.name);
    };
    let shown = if entry.is_clock() {
        format!("{:.2} msec", value as f64 / 1e6)
    } else {
        thousands(value)
    };
    let ratio = match summary.ratio(entry) {
        Some(Ratio::Per { value, what }) => format!("#  {value:.2}  {what}"),
        Some(Ratio::Percent { percent, what }) => format!("#  {percent:.2}% {what}"),
        None => String::new(),
    };
    let mut line = format!("{shown:>18}      {:<32} {ratio}", entry.name);
    if let Some(spread) = entry.stddev_percent {
        _ = write!(line, " ( +- {spread:.2}% )");
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

/// One line per event: value, unit, name, time running (ns), percent running, and with -r the
/// spread (stddev of the mean, %).
fn csv(out: &mut String, separator: &str, summary: &Summary) {
    for entry in &summary.events {
        let (value, unit, running, percent) = match &entry.reading {
            Err(_) => ("<not supported>".to_string(), "", 0, 0.0),
            Ok(reading) => match reading.scaled() {
                None => ("<not counted>".to_string(), "", reading.time_running, 0.0),
                Some(value) => {
                    let unit = if entry.is_clock() { "ns" } else { "" };
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

/// One JSON object: the command, its exit status, the mean elapsed time, the number of runs,
/// the note, and per event its reading or the reason it is not supported.
fn json(out: &mut String, args: &StatArgs, summary: &Summary) {
    let events: Vec<serde_json::Value> = summary
        .events
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
        "command": args.command_words(),
        "exit_status": summary.end.exit_code,
        "elapsed_ns": summary.end.elapsed_ns,
        "runs": args.repeat,
        "note": summary.end.note,
        "events": events,
    });
    _ = writeln!(out, "{object}");
}

#[cfg(test)]
mod tests {
    use counterhal::hal::Reading;

    use super::*;
    use crate::stat::arguments::parse;
    use crate::stat::summary::tests::run;

    fn render_with(words: &[&str], summary: &Summary) -> String {
        let args = parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"));
        render(&args, summary)
    }

    /// page-faults 50 and task-clock 1.5 ms counted, cycles not supported, in one run.
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
    fn csv_has_five_fixed_fields_per_event() {
        let text = render_with(&["-x", ";", "--", "true"], &one_run());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "1234567;;page-faults;1000;100.00",
                "1500000;ns;task-clock;1000;100.00",
                "<not supported>;;cycles;0;0.00",
            ]
        );
    }

    #[test]
    fn csv_adds_the_spread_as_a_sixth_field_and_says_what_did_not_count() {
        // Multiplexed in both runs (their share shows); idle enabled but never on a counter.
        let mut runs =
            [90, 110].map(|faults| run(&[("page-faults", Some(faults)), ("idle", Some(0))], 1));
        for run in &mut runs {
            let faults = run.events[0].outcome.as_ref().unwrap().value;
            run.events[0].outcome = Ok(Reading::new(faults, 1000, 500));
            run.events[1].outcome = Ok(Reading::new(0, 1000, 0));
        }
        let summary = Summary::of(&runs);
        let text = render_with(&["-x,", "-r", "2", "--", "true"], &summary);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "200,,page-faults,500,50.00,10.00");
        assert_eq!(lines[1], "<not counted>,,idle,0,0.00");
    }

    #[test]
    fn the_table_reads_as_perfs() {
        let text = render_with(&["--", "sh", "-c", "true"], &one_run());
        let expected = "
 Performance counter stats for 'sh -c true':

         1,234,567      page-faults
         1.50 msec      task-clock
   <not supported>      cycles

       2.000000000 seconds time elapsed

 Not supported here:
   cycles: no PMU here

";
        assert_eq!(text, expected);
    }

    #[test]
    fn the_table_shows_runs_spreads_ratios_times_and_the_end() {
        let mut runs = [
            run(&[("cycles", Some(1_000)), ("instructions", Some(400))], 1),
            run(&[("cycles", Some(1_000)), ("instructions", Some(600))], 1),
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
            "               500      instructions                     #  0.50  insn per cycle ( +- 20.00% )"
        );
        assert!(text.contains("seconds user\n"), "{text}");
        assert!(
            text.contains(" The command exited with status 3."),
            "{text}"
        );
        assert!(!text.contains("Not supported"), "{text}");
    }

    #[test]
    fn one_reason_shared_by_several_events_is_said_once() {
        let summary = Summary::of(&[run(&[("cycles", None), ("instructions", None)], 1)]);
        let text = render_with(&["-p", "42", "--", "true"], &summary);
        assert!(text.contains("for process id '42':"), "{text}");
        assert!(text.contains("   cycles: no PMU here\n"), "{text}");
        // The reasons differ only in the name they start with: the same reason.
        assert!(text.contains("   instructions: as above\n"), "{text}");
    }

    #[test]
    fn json_has_the_documented_fields() {
        let text = render_with(&["--json", "--", "true", "x"], &one_run());
        let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(value["command"], json!(["true", "x"]));
        assert_eq!(value["exit_status"], 0);
        assert_eq!(value["elapsed_ns"], 2_000_000_000u64);
        assert_eq!(value["runs"], 1);
        assert!(value["note"].is_null());
        let faults = &value["events"][0];
        assert_eq!(faults["name"], "page-faults");
        assert_eq!(faults["backend"], "test");
        assert_eq!(faults["value"], 1_234_567);
        assert_eq!(faults["scaled"], 1_234_567);
        assert_eq!(faults["supported"], true);
        assert!(faults["stddev_percent"].is_null());
        let cycles = &value["events"][2];
        assert_eq!(cycles["supported"], false);
        assert!(cycles["value"].is_null());
        assert_eq!(cycles["reason"], "cycles: no PMU here");
    }
}
