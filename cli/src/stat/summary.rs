//! The numbers `counterhal stat` computes from its runs: each event's mean reading and the
//! spread of its values, the ratios between events (instructions per cycle, the share of
//! branches missed), and the mean times of the runs.

use counterhal::hal::{GeneralizedEvent, HardwareEvent, Preset, Reading};

use super::measurement::{CommandEnd, Run};

/// Every run's numbers, as the results print them.
pub struct Summary {
    /// One entry per event, in the order given.
    pub events: Vec<EventSummary>,
    /// The runs' mean elapsed, user and system times, with the last run's exit status and
    /// note.
    pub end: CommandEnd,
    /// How many runs there were.
    pub runs: usize,
}

/// One event over every run.
pub struct EventSummary {
    /// The event's name as given.
    pub name: String,
    /// The label of the backend that counted it.
    pub backend: String,
    /// The mean of its readings, field by field; or why it was not counted (in any run).
    pub reading: Result<Reading, String>,
    /// With more than one run, the spread of its values: the standard deviation of the mean,
    /// in percent of the mean (perf's `+-`).
    pub stddev_percent: Option<f64>,
}

/// A derived number printed beside an event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ratio {
    /// So many of this event per one of another (`insn per cycle`).
    Per {
        /// The quotient.
        value: f64,
        /// What it is, in words.
        what: &'static str,
    },
    /// This event as a share of another (`of all branches`).
    Percent {
        /// The share, in percent.
        percent: f64,
        /// Of what, in words.
        what: &'static str,
    },
}

impl Summary {
    /// The summary of `runs`, which all counted the same events in the same order.
    ///
    /// # Panics
    /// When `runs` is empty (`-r` is at least 1).
    pub fn of(runs: &[Run]) -> Summary {
        let first = runs.first().expect("at least one run");
        let events = first
            .events
            .iter()
            .enumerate()
            .map(|(i, event)| {
                let outcomes = runs.iter().map(|run| &run.events[i].outcome);
                let readings: Result<Vec<Reading>, String> = outcomes
                    .map(|outcome| outcome.clone().map_err(|e| e.to_string()))
                    .collect();
                let reading = readings.as_deref().map(mean_reading);
                let stddev_percent = match (&reading, &readings) {
                    (Ok(mean), Ok(readings)) if readings.len() > 1 && mean.value > 0 => {
                        let values: Vec<u64> = readings.iter().map(|r| r.value).collect();
                        Some(spread_percent(&values))
                    }
                    _ => None,
                };
                EventSummary {
                    name: event.name.clone(),
                    backend: event.backend.clone(),
                    reading: reading.map_err(Clone::clone),
                    stddev_percent,
                }
            })
            .collect();
        Summary {
            events,
            end: mean_end(runs),
            runs: runs.len(),
        }
    }

    /// The number derived from `entry` and another event of the table, where there is one:
    /// instructions per cycle, branch misses of all branches, cache misses of all references.
    pub fn ratio(&self, entry: &EventSummary) -> Option<Ratio> {
        let value = entry.reading.as_ref().ok()?.scaled()?;
        let (base, what, percent) = match measures(&entry.name)? {
            Measures::Instructions => (Measures::Cycles, "insn per cycle", false),
            Measures::BranchMisses => (Measures::Branches, "of all branches", true),
            Measures::CacheMisses => (Measures::CacheReferences, "of all cache refs", true),
            _ => return None,
        };
        let total = self.first_estimate(base).filter(|&total| total > 0)? as f64;
        Some(if percent {
            Ratio::Percent {
                percent: 100.0 * value as f64 / total,
                what,
            }
        } else {
            Ratio::Per {
                value: value as f64 / total,
                what,
            }
        })
    }

    /// The estimate of the first event in the table that measures `what`.
    fn first_estimate(&self, what: Measures) -> Option<u64> {
        self.events
            .iter()
            .find(|s| measures(&s.name) == Some(what))
            .and_then(|s| s.reading.as_ref().ok())
            .and_then(Reading::scaled)
    }
}

impl EventSummary {
    /// Whether the event is a clock (`task-clock`, `cpu-clock`), whose value is nanoseconds.
    pub fn is_clock(&self) -> bool {
        let base = base_name(&self.name);
        base.eq_ignore_ascii_case("task-clock") || base.eq_ignore_ascii_case("cpu-clock")
    }
}

/// The mean of `readings`, field by field, rounded down (in 128 bits, so the sum never
/// overflows).
fn mean_reading(readings: &[Reading]) -> Reading {
    let n = readings.len().max(1) as u128;
    let mean = |field: fn(&Reading) -> u64| -> u64 {
        let total: u128 = readings.iter().map(|r| u128::from(field(r))).sum();
        (total / n) as u64
    };
    Reading::new(
        mean(|r| r.value),
        mean(|r| r.time_enabled),
        mean(|r| r.time_running),
    )
}

/// The standard deviation of the mean of `values` (from the sample variance), in percent of
/// their mean: how far the mean would move on another set of runs. 0 for fewer than two values
/// or a mean of 0.
pub fn spread_percent(values: &[u64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n;
    if values.len() < 2 || mean == 0.0 {
        return 0.0;
    }
    let variance = values
        .iter()
        .map(|&v| (v as f64 - mean).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    100.0 * (variance / n).sqrt() / mean
}

/// The runs' mean times (a time missing in any run is missing), with the last run's exit
/// status and note.
fn mean_end(runs: &[Run]) -> CommandEnd {
    let n = runs.len().max(1) as u64;
    let last = &runs.last().expect("at least one run").end;
    let mean = |time: fn(&CommandEnd) -> Option<u64>| -> Option<u64> {
        runs.iter()
            .map(|run| time(&run.end))
            .sum::<Option<u64>>()
            .map(|total| total / n)
    };
    CommandEnd {
        elapsed_ns: mean(|end| Some(end.elapsed_ns)).unwrap_or(0),
        user_ns: mean(|end| end.user_ns),
        sys_ns: mean(|end| end.sys_ns),
        ..last.clone()
    }
}

/// An event's name without its modifiers (`cycles:u` -> `cycles`).
fn base_name(name: &str) -> &str {
    name.split(':').next().unwrap_or(name)
}

/// What an event measures, for the derived ratios: perf's names, their aliases and modifiers,
/// and the PAPI presets that mean the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Measures {
    Instructions,
    Cycles,
    Branches,
    BranchMisses,
    CacheReferences,
    CacheMisses,
}

fn measures(name: &str) -> Option<Measures> {
    match GeneralizedEvent::from_name(base_name(name))? {
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

#[cfg(test)]
pub(super) mod tests {
    use counterhal::Error;

    use super::*;
    use crate::stat::measurement::EventResult;

    /// A run whose events read `values` (name, value; `None`: not supported), each counting
    /// all of 1000 ns, that took `elapsed_ns`.
    pub fn run(values: &[(&str, Option<u64>)], elapsed_ns: u64) -> Run {
        Run {
            events: values
                .iter()
                .map(|&(name, value)| EventResult {
                    name: name.to_string(),
                    backend: "test".to_string(),
                    outcome: value
                        .map(|v| Reading::new(v, 1000, 1000))
                        .ok_or_else(|| Error::unsupported(format!("{name}: no PMU here"))),
                })
                .collect(),
            end: CommandEnd {
                exit_code: 0,
                exit_description: "exited with status 0".to_string(),
                elapsed_ns,
                user_ns: Some(elapsed_ns / 2),
                sys_ns: None,
                note: None,
            },
        }
    }

    #[test]
    fn the_spread_is_the_stddev_of_the_mean_in_percent() {
        // Mean 100, sample variance 200, stddev of the mean sqrt(200 / 2) = 10: 10%.
        assert!((spread_percent(&[90, 110]) - 10.0).abs() < 1e-9);
        // Mean 49.5, sample variance 0.5, stddev of the mean 0.5: 1.0101...%.
        assert!((spread_percent(&[49, 50]) - 100.0 / 99.0).abs() < 1e-9);
        assert_eq!(spread_percent(&[7, 7, 7]), 0.0);
        assert_eq!(spread_percent(&[7]), 0.0);
        assert_eq!(spread_percent(&[0, 0]), 0.0);
    }

    #[test]
    fn means_are_per_field_and_round_down() {
        let mean = mean_reading(&[Reading::new(1, 10, 5), Reading::new(2, 20, 6)]);
        assert_eq!(mean, Reading::new(1, 15, 5));
        let huge = mean_reading(&[Reading::new(u64::MAX, 0, 0); 3]);
        assert_eq!(huge.value, u64::MAX, "no overflow in the sum");
    }

    #[test]
    fn several_runs_give_means_and_spreads() {
        let runs = [
            run(&[("page-faults", Some(90)), ("cycles", None)], 1_000),
            run(&[("page-faults", Some(110)), ("cycles", None)], 3_000),
        ];
        let summary = Summary::of(&runs);
        assert_eq!(summary.runs, 2);
        let faults = &summary.events[0];
        assert_eq!(faults.reading.as_ref().unwrap().value, 100);
        assert!((faults.stddev_percent.unwrap() - 10.0).abs() < 1e-9);
        let cycles = &summary.events[1];
        assert_eq!(cycles.reading.as_ref().unwrap_err(), "cycles: no PMU here");
        assert_eq!(cycles.stddev_percent, None);
        assert_eq!(summary.end.elapsed_ns, 2_000);
        assert_eq!(summary.end.user_ns, Some(1_000));
        assert_eq!(summary.end.sys_ns, None);
    }

    #[test]
    fn one_run_or_a_zero_mean_has_no_spread() {
        let one = Summary::of(&[run(&[("page-faults", Some(5))], 1)]);
        assert_eq!(one.events[0].stddev_percent, None);
        let zeros = Summary::of(&[run(&[("x", Some(0))], 1), run(&[("x", Some(1))], 1)]);
        assert_eq!(zeros.events[0].stddev_percent, None, "integer mean 0");
    }

    #[test]
    fn an_event_failing_in_any_run_is_not_counted() {
        let runs = [run(&[("cycles", Some(5))], 1), run(&[("cycles", None)], 1)];
        assert!(Summary::of(&runs).events[0].reading.is_err());
    }

    #[test]
    fn the_last_run_gives_the_exit_status() {
        let mut last = run(&[], 1);
        last.end.exit_code = 3;
        last.end.exit_description = "exited with status 3".to_string();
        last.end.note = Some("a note".to_string());
        let end = Summary::of(&[run(&[], 1), last]).end;
        assert_eq!(end.exit_code, 3);
        assert_eq!(end.exit_description, "exited with status 3");
        assert_eq!(end.note.as_deref(), Some("a note"));
    }

    #[test]
    fn ratios_pair_events_by_what_they_measure() {
        let summary = Summary::of(&[run(
            &[
                ("PAPI_TOT_CYC", Some(2_000)),
                ("instructions:u", Some(1_000)),
                ("branches", Some(400)),
                ("branch-misses", Some(10)),
                ("cache-misses", Some(3)),
                ("page-faults", Some(1)),
            ],
            1,
        )]);
        let ratio = |i: usize| summary.ratio(&summary.events[i]);
        assert_eq!(
            ratio(1),
            Some(Ratio::Per {
                value: 0.5,
                what: "insn per cycle"
            })
        );
        assert_eq!(
            ratio(3),
            Some(Ratio::Percent {
                percent: 2.5,
                what: "of all branches"
            })
        );
        // No cache references counted; cycles and page faults have no ratio.
        assert_eq!(ratio(4), None);
        assert_eq!(ratio(0), None);
        assert_eq!(ratio(5), None);
    }

    #[test]
    fn a_ratio_needs_a_base_that_counted() {
        let summary = Summary::of(&[run(&[("cycles", Some(0)), ("instructions", Some(9))], 1)]);
        assert_eq!(summary.ratio(&summary.events[1]), None);
    }

    #[test]
    fn clocks_are_known_by_name() {
        let summary = Summary::of(&[run(
            &[
                ("task-clock:u", Some(1)),
                ("CPU-CLOCK", Some(1)),
                ("cycles", Some(1)),
            ],
            1,
        )]);
        let clocks: Vec<bool> = summary.events.iter().map(EventSummary::is_clock).collect();
        assert_eq!(clocks, [true, true, false]);
    }
}
