//! The numbers a report shows: each event's mean over the runs and its spread, the runs' mean
//! times, and the ratios perf prints beside the counts.

use counterhal::Error;
use counterhal::hal::Reading;

use super::measure::Run;

/// One event over every run: mean of the readings, and the spread of the values.
pub(super) struct Summary {
    pub(super) name: String,
    pub(super) backend: String,
    pub(super) reading: Result<Reading, String>,
    pub(super) stddev_percent: Option<f64>,
}

pub(super) fn summarize(runs: &[Run]) -> Vec<Summary> {
    let first = &runs[0];
    (0..first.events.len())
        .map(|i| {
            let outcomes: Vec<&Result<Reading, Error>> =
                runs.iter().map(|r| &r.events[i].outcome).collect();
            let reading = match outcomes.iter().find_map(|o| o.as_ref().err()) {
                Some(e) => Err(e.to_string()),
                None => {
                    let n = outcomes.len() as u128;
                    let sum = |f: fn(&Reading) -> u64| -> u64 {
                        let total: u128 = outcomes
                            .iter()
                            .map(|o| u128::from(f(o.as_ref().unwrap())))
                            .sum();
                        (total / n) as u64
                    };
                    Ok(Reading::new(
                        sum(|r| r.value),
                        sum(|r| r.time_enabled),
                        sum(|r| r.time_running),
                    ))
                }
            };
            let stddev_percent = match (&reading, runs.len()) {
                (Ok(mean), n) if n > 1 && mean.value > 0 => {
                    let values: Vec<f64> = outcomes
                        .iter()
                        .map(|o| o.as_ref().unwrap().value as f64)
                        .collect();
                    let mean_value = values.iter().sum::<f64>() / values.len() as f64;
                    let variance = values.iter().map(|v| (v - mean_value).powi(2)).sum::<f64>()
                        / (values.len() as f64 - 1.0);
                    Some(100.0 * (variance / values.len() as f64).sqrt() / mean_value)
                }
                _ => None,
            };
            Summary {
                name: first.events[i].name.clone(),
                backend: first.events[i].backend.clone(),
                reading,
                stddev_percent,
            }
        })
        .collect()
}

pub(super) fn is_clock(name: &str) -> bool {
    let base = name.split(':').next().unwrap_or(name);
    base.eq_ignore_ascii_case("task-clock") || base.eq_ignore_ascii_case("cpu-clock")
}

/// What an event measures, for the derived ratios: perf's names, their aliases and modifiers,
/// and the PAPI presets that mean the same.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Measures {
    Instructions,
    Cycles,
    Branches,
    BranchMisses,
    CacheReferences,
    CacheMisses,
}

fn measures(name: &str) -> Option<Measures> {
    use counterhal::hal::{GeneralizedEvent, HardwareEvent, Preset};
    let base = name.split(':').next().unwrap_or(name);
    match GeneralizedEvent::from_name(base)? {
        GeneralizedEvent::Hardware(HardwareEvent::Instructions)
        | GeneralizedEvent::Preset(Preset::TotIns) => Some(Measures::Instructions),
        GeneralizedEvent::Hardware(HardwareEvent::Cycles)
        | GeneralizedEvent::Preset(Preset::TotCyc) => Some(Measures::Cycles),
        GeneralizedEvent::Hardware(HardwareEvent::Branches)
        | GeneralizedEvent::Preset(Preset::BrIns) => Some(Measures::Branches),
        GeneralizedEvent::Hardware(HardwareEvent::BranchMisses)
        | GeneralizedEvent::Preset(Preset::BrMsp) => Some(Measures::BranchMisses),
        GeneralizedEvent::Hardware(HardwareEvent::CacheReferences) => {
            Some(Measures::CacheReferences)
        }
        GeneralizedEvent::Hardware(HardwareEvent::CacheMisses) => Some(Measures::CacheMisses),
        _ => None,
    }
}

/// The estimate of the first event in the table that measures `what`.
fn find_value(summary: &[Summary], what: Measures) -> Option<u64> {
    summary
        .iter()
        .find(|s| measures(&s.name) == Some(what))
        .and_then(|s| s.reading.as_ref().ok())
        .and_then(|r| r.scaled())
}

pub(super) fn ratio_note(summary: &[Summary], entry: &Summary) -> String {
    let Some(value) = entry.reading.as_ref().ok().and_then(|r| r.scaled()) else {
        return String::new();
    };
    let (base, what, words) = match measures(&entry.name) {
        Some(Measures::Instructions) => (Measures::Cycles, "insn per cycle", false),
        Some(Measures::BranchMisses) => (Measures::Branches, "of all branches", true),
        Some(Measures::CacheMisses) => (Measures::CacheReferences, "of all cache refs", true),
        _ => return String::new(),
    };
    match find_value(summary, base) {
        Some(total) if total > 0 && words => {
            format!("#  {:.2}% {what}", 100.0 * value as f64 / total as f64)
        }
        Some(total) if total > 0 => format!("#  {:.2}  {what}", value as f64 / total as f64),
        _ => String::new(),
    }
}

/// The runs' mean elapsed, user and system times, with the last run's exit status and note.
pub(super) fn mean_run(runs: &[Run]) -> Run {
    let n = runs.len().max(1) as u64;
    let last = runs.last().expect("at least one run");
    let mean = |f: fn(&Run) -> Option<u64>| -> Option<u64> {
        runs.iter()
            .map(f)
            .sum::<Option<u64>>()
            .map(|total| total / n)
    };
    Run {
        events: Vec::new(),
        exit_code: last.exit_code,
        exit_description: last.exit_description.clone(),
        elapsed_ns: mean(|r| Some(r.elapsed_ns)).unwrap_or(0),
        user_ns: mean(|r| r.user_ns),
        sys_ns: mean(|r| r.sys_ns),
        note: last.note.clone(),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::stat::measure::EventResult;

    /// A run of `events` (name, value; enabled and running 1,000 ns), exit status 0.
    pub(in crate::stat) fn run(events: &[(&str, u64)], elapsed_ns: u64) -> Run {
        Run {
            events: events
                .iter()
                .map(|&(name, value)| EventResult {
                    name: name.to_string(),
                    backend: "test".to_string(),
                    outcome: Ok(Reading::new(value, 1_000, 1_000)),
                })
                .collect(),
            exit_code: 0,
            exit_description: "exited with status 0".to_string(),
            elapsed_ns,
            user_ns: Some(elapsed_ns / 2),
            sys_ns: None,
            note: None,
        }
    }

    #[test]
    fn means_and_spreads_over_runs() {
        let runs = [
            run(&[("cycles", 100), ("instructions", 50)], 1_000),
            run(&[("cycles", 300), ("instructions", 50)], 3_000),
        ];
        let summary = summarize(&runs);
        assert_eq!(summary[0].reading.as_ref().unwrap().value, 200);
        // Values 100 and 300: sample stddev 141.42, of the mean 100, 50% of 200.
        let spread = summary[0].stddev_percent.unwrap();
        assert!((spread - 50.0).abs() < 1e-9, "{spread}");
        assert_eq!(summary[1].stddev_percent, Some(0.0));
        let mean = mean_run(&runs);
        assert_eq!(
            (mean.elapsed_ns, mean.user_ns, mean.sys_ns),
            (2_000, Some(1_000), None)
        );
        assert_eq!(
            summarize(&runs[..1])[0].stddev_percent,
            None,
            "one run has no spread"
        );
    }

    #[test]
    fn an_event_that_failed_in_any_run_is_an_error() {
        let mut runs = [run(&[("cycles", 100)], 1), run(&[("cycles", 100)], 1)];
        runs[1].events[0].outcome = Err(Error::unsupported("no PMU"));
        assert_eq!(summarize(&runs)[0].reading.as_ref().unwrap_err(), "no PMU");
    }

    #[test]
    fn ratios_by_meaning() {
        let summary = summarize(&[run(
            &[
                ("PAPI_TOT_CYC", 1_000),
                ("instructions:u", 2_500),
                ("branches", 400),
                ("branch-misses", 10),
            ],
            1,
        )]);
        assert_eq!(ratio_note(&summary, &summary[1]), "#  2.50  insn per cycle");
        assert_eq!(
            ratio_note(&summary, &summary[3]),
            "#  2.50% of all branches"
        );
        assert_eq!(ratio_note(&summary, &summary[0]), "");
        assert!(is_clock("task-clock:u") && !is_clock("cycles"));
    }
}
