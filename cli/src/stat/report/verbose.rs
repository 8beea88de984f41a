//! `-v`'s account of what is counted where, before the results, and `--no-scale`'s raw counts.

use std::fmt::Write as _;

use counterhal::Error;
use counterhal_hal::Reading;

use crate::stat::measure::results::{Counts, Run};
use crate::stat::plan::planned::Planned;

/// `-v`: one line per event, saying which backend counts it and how it is encoded, or why it
/// cannot be counted here (perf's -v shows the counters it opens and why one failed).
pub fn planned<'a>(events: impl IntoIterator<Item = &'a Planned>, backend: &str) -> String {
    let mut out = String::new();
    for planned in events {
        match planned {
            Planned::Ready(event) => {
                let encodings: Vec<String> = event
                    .terms
                    .iter()
                    .map(|term| term.request.encoding.to_string())
                    .collect();
                _ = writeln!(
                    out,
                    "counterhal: {} on {backend}: {}",
                    event.name,
                    encodings.join(" ")
                );
            }
            Planned::Unsupported { name, error } => {
                _ = writeln!(out, "counterhal: {name} is not supported here: {error}");
            }
            Planned::Tool(tool) => {
                _ = writeln!(
                    out,
                    "counterhal: {} is a tool event, taken from the command's end",
                    tool.name()
                );
            }
        }
    }
    out
}

/// `--no-scale`: every reading as the raw count, not scaled up for the time the event was
/// multiplexed out (it then reads as running all the time it was enabled).
pub fn unscaled(runs: &mut [Run]) {
    for run in runs {
        for event in &mut run.events {
            raw(&mut event.outcome);
        }
        unscaled_counts(&mut run.places);
    }
}

/// `--no-scale` for one interval's counts (or a run's places), as [`unscaled`] does.
pub fn unscaled_counts(counts: &mut [Counts]) {
    for place in counts {
        place.readings.iter_mut().for_each(raw);
    }
}

/// The raw count of `reading`, as running all the time it was enabled.
fn raw(reading: &mut Result<Reading, Error>) {
    if let Ok(r) = reading
        && r.time_running > 0
    {
        *r = Reading::new(r.value, r.time_running, r.time_running);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::measure::results::{CommandEnd, EventResult};
    use crate::stat::plan::tool::Tool;

    #[test]
    fn raw_counts_are_not_scaled_up() {
        let mut runs = vec![Run {
            events: vec![EventResult {
                name: "x".into(),
                backend: "test".into(),
                outcome: Ok(Reading::new(100, 1_000, 250)),
                cgroup: None,
                scale: None,
            }],
            end: CommandEnd {
                exit_code: 0,
                exit_description: String::new(),
                elapsed_ns: 1,
                user_ns: None,
                sys_ns: None,
                note: None,
            },
            places: Vec::new(),
        }];
        assert_eq!(
            runs[0].events[0].outcome.as_ref().unwrap().scaled(),
            Some(400)
        );
        unscaled(&mut runs);
        assert_eq!(
            runs[0].events[0].outcome.as_ref().unwrap().scaled(),
            Some(100)
        );
    }

    #[test]
    fn verbose_lines_name_each_event_and_its_fate() {
        let text = planned(
            &[
                Planned::Unsupported {
                    name: "cycles".into(),
                    error: Error::unsupported("no PMU"),
                },
                Planned::Tool(Tool::User),
            ],
            "linux",
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].contains("cycles") && lines[0].contains("no PMU"),
            "{text}"
        );
        assert!(lines[1].contains("user_time"), "{text}");
    }
}
