//! The numbers `counterhal stat` computes from its runs: each event's mean reading and the
//! spread of its values, the mean times of the runs and the spread of the elapsed time, and
//! the sections the results print in (the whole run; each interval of `-I`, as the difference
//! of two snapshots; each CPU or thread of `-A` and `--per-thread`).

use counterhal::Error;
use counterhal::metrics::Machine;
use counterhal_hal::Reading;

use crate::stat::measure::results::{
    CommandEnd, Counts, EventResult, NOT_OPENED_HERE, Place, Run, Snapshot, is_absent,
};
use crate::stat::plan::boxes::{Scale, has_fraction};

/// Every run's numbers, as the results print them.
pub struct Summary {
    /// One entry per event, in the order given.
    pub events: Vec<EventSummary>,
    /// The runs' mean elapsed, user and system times, with the last run's exit status and
    /// note.
    pub end: CommandEnd,
    /// How many runs there were.
    pub runs: usize,
    /// With more than one run, the standard deviation of the mean elapsed time, in
    /// nanoseconds, and in percent of the mean.
    pub elapsed_spread: Option<(f64, f64)>,
    /// Each run's elapsed time, in nanoseconds (`--table`).
    pub elapsed_each_ns: Vec<u64>,
    /// What prints, in order: one section for the whole run, or one per interval.
    pub sections: Vec<Section>,
    /// What the metrics read beside the counts: this machine's facts (with `--sysfs`'s
    /// PMUs) and whether CPUs were counted.
    pub system: Machine,
}

/// The events of one stretch of time, summed or per place.
pub struct Section {
    /// With `-I`, when the interval ended, in nanoseconds after the start.
    pub at_ns: Option<u64>,
    /// How long the stretch was, in nanoseconds (the run's elapsed time, or the interval's).
    pub length_ns: u64,
    /// The counts of each place (one, unnamed, when they are added up).
    pub places: Vec<PlaceSummary>,
}

/// The events counted in one place.
pub struct PlaceSummary {
    /// Where (`None`: everywhere, added up).
    pub place: Option<Place>,
    /// One entry per event, in the order given.
    pub events: Vec<EventSummary>,
}

/// One event over every run.
#[derive(Clone, Debug)]
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
    /// With `-G` or `--for-each-cgroup`, the cgroup it counted in (empty: none).
    pub cgroup: Option<String>,
    /// How its count is shown, where its PMU's alias says (`.scale`, `.unit`).
    pub scale: Option<Scale>,
}

impl Summary {
    /// The summary of `runs`, which all counted the same events in the same order, its
    /// metrics read on `system`.
    ///
    /// # Panics
    /// When `runs` is empty (`-r` is at least 1).
    pub fn of(system: Machine, runs: &[Run]) -> Summary {
        let first = runs.first().expect("at least one run");
        let events: Vec<EventSummary> = first
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
                    (Ok(_), Ok(readings)) if readings.len() > 1 => {
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
                    cgroup: event.cgroup.clone(),
                    scale: event.scale.clone(),
                }
            })
            .collect();
        let end = mean_end(runs);
        let sections = sections(first, &events, end.elapsed_ns, runs.len());
        let elapsed: Vec<u64> = runs.iter().map(|run| run.end.elapsed_ns).collect();
        let elapsed_spread = (runs.len() > 1).then(|| {
            let percent = spread_percent(&elapsed);
            (percent / 100.0 * end.elapsed_ns as f64, percent)
        });
        Summary {
            events,
            end,
            runs: runs.len(),
            elapsed_spread,
            elapsed_each_ns: elapsed,
            sections,
            system,
        }
    }
}

/// The sections of a summary: with `-A` or `--per-thread` (one run), each place; else the
/// whole run, summed. (`-I`'s intervals are printed as they end: [`interval_section`].)
fn sections(run: &Run, events: &[EventSummary], elapsed_ns: u64, runs: usize) -> Vec<Section> {
    if runs == 1 && !run.places.is_empty() {
        return vec![Section {
            at_ns: None,
            length_ns: elapsed_ns,
            places: named(events, &run.places),
        }];
    }
    vec![Section {
        at_ns: None,
        length_ns: elapsed_ns,
        places: vec![PlaceSummary {
            place: None,
            events: events.to_vec(),
        }],
    }]
}

/// One interval of `-I` as it prints: the snapshot `now` less the snapshot `before` (none:
/// the first interval), place by place, each event as `events` describe it (an event not
/// supported stays so).
pub fn interval_section(
    events: &[EventSummary],
    now: &Snapshot,
    before: Option<&Snapshot>,
) -> Section {
    let counts = interval(&now.counts, before.map(|b| &b.counts[..]));
    Section {
        at_ns: Some(now.at_ns),
        length_ns: now.at_ns.saturating_sub(before.map_or(0, |b| b.at_ns)),
        places: named(events, &counts),
    }
}

/// Each place's counts as the events' summaries.
fn named(events: &[EventSummary], counts: &[Counts]) -> Vec<PlaceSummary> {
    counts
        .iter()
        .map(|counts| PlaceSummary {
            place: counts.place.clone(),
            events: events
                .iter()
                .zip(&counts.readings)
                .map(|(event, reading)| EventSummary {
                    reading: match (&event.reading, reading) {
                        // Not opened in this place (an uncore event off its cpumask).
                        (_, absent) if is_absent(absent) => Err(NOT_OPENED_HERE.to_string()),
                        (Ok(_), Ok(reading)) => Ok(*reading),
                        (Err(e), _) => Err(e.clone()),
                        (Ok(_), Err(e)) => Err(e.to_string()),
                    },
                    stddev_percent: None,
                    ..event.clone()
                })
                .collect(),
        })
        .collect()
}

/// The counts of one interval: `now` less the snapshot `before` (the counts at the start:
/// zero), place by place.
pub fn interval(now: &[Counts], before: Option<&[Counts]>) -> Vec<Counts> {
    now.iter()
        .map(|counts| {
            let earlier = before.and_then(|before| before.iter().find(|b| b.place == counts.place));
            let readings = counts
                .readings
                .iter()
                .enumerate()
                .map(|(i, reading)| -> Result<Reading, Error> {
                    let reading = reading.as_ref().map_err(Clone::clone)?;
                    match earlier.and_then(|e| e.readings.get(i)) {
                        Some(Ok(earlier)) => Ok(reading.since(earlier)),
                        _ => Ok(*reading),
                    }
                })
                .collect();
            Counts {
                place: counts.place.clone(),
                readings,
            }
        })
        .collect()
}

impl Summary {
    /// One interval of `-I` as a summary of its own, to print as it ends: the run's `events`
    /// as planned, and the interval's section, its metrics read on `system`.
    pub fn of_interval(system: Machine, events: &[EventSummary], section: Section) -> Summary {
        Summary::of_one(system, events.to_vec(), section, "")
    }

    /// One stretch counted once (an interval, a recording): `events` over it, `section` as
    /// it prints (its length the elapsed time), a command that ended as `description` says
    /// with status 0, and no spread, its metrics read on `system`.
    pub fn of_one(
        system: Machine,
        events: Vec<EventSummary>,
        section: Section,
        description: &str,
    ) -> Summary {
        Summary {
            events,
            end: CommandEnd {
                exit_code: 0,
                exit_description: description.to_string(),
                elapsed_ns: section.length_ns,
                user_ns: None,
                sys_ns: None,
                note: None,
            },
            elapsed_each_ns: vec![section.length_ns],
            runs: 1,
            elapsed_spread: None,
            sections: vec![section],
            system,
        }
    }
}

/// What a metric's formula reads of an event: its name, estimate and energy scale.
impl counterhal::metrics::Counted for EventSummary {
    fn name(&self) -> &str {
        &self.name
    }

    fn estimate(&self) -> Option<u64> {
        EventSummary::estimate(self)
    }

    fn joules_per_count(&self) -> Option<f64> {
        let scale = self.scale.as_ref().filter(|s| s.name == "Joules")?;
        Some(scale.scale)
    }
}

impl EventSummary {
    /// An event as planned, before anything is counted: its name, backend and cgroup, and
    /// why it is not supported where it is not.
    pub fn planned(result: &EventResult) -> EventSummary {
        EventSummary {
            name: result.name.clone(),
            backend: result.backend.clone(),
            reading: result.outcome.clone().map_err(|e| e.to_string()),
            stddev_percent: None,
            cgroup: result.cgroup.clone(),
            scale: result.scale.clone(),
        }
    }

    /// The event's scaled estimate, where it counted.
    pub fn estimate(&self) -> Option<u64> {
        self.reading.as_ref().ok()?.scaled()
    }

    /// perf's unit for the event: its alias's `.unit` (`Joules`, `MiB`), `msec` for a clock,
    /// `ns` for a tool event (`duration_time`, `user_time`, `system_time`), nothing for a
    /// count.
    pub fn unit(&self) -> &str {
        if let Some(scale) = &self.scale {
            &scale.name
        } else if self.is_clock() {
            "msec"
        } else if crate::stat::plan::tool::is_tool(&self.name) {
            "ns"
        } else {
            ""
        }
    }

    /// The value perf prints, as a number: the estimate times its alias's scale (Joules,
    /// MiB), or in milliseconds for a clock; and whether it is printed with two decimals (a
    /// clock, a scale with a fraction). `None` where it was not counted.
    pub fn shown_value(&self) -> Option<(f64, bool)> {
        let estimate = self.estimate()? as f64;
        Some(match &self.scale {
            Some(scale) => (estimate * scale.scale, has_fraction(scale)),
            None if self.is_clock() => (estimate / 1e6, true),
            None => (estimate, false),
        })
    }

    /// Whether the event was not opened in the place this summary is of (an uncore event off
    /// its PMU's cpumask): no line prints for it there.
    pub fn is_absent(&self) -> bool {
        matches!(&self.reading, Err(reason) if reason == NOT_OPENED_HERE)
    }

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

#[cfg(test)]
pub(super) mod tests {
    use counterhal::Error;

    use super::*;
    use crate::stat::measure::results::EventResult;

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
                    cgroup: None,
                    scale: None,
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
            places: Vec::new(),
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
        let summary = Summary::of(crate::stat::plan::machine_here(), &runs);
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
        // Elapsed 1000 and 3000 ns: mean 2000, stddev of the mean 1000 ns, 50%.
        let (stddev_ns, percent) = summary.elapsed_spread.unwrap();
        assert!((stddev_ns - 1000.0).abs() < 1e-6, "{stddev_ns}");
        assert!((percent - 50.0).abs() < 1e-9, "{percent}");
        assert_eq!(summary.sections.len(), 1, "repeats print one section");
    }

    fn counts(place: Option<Place>, values: &[Option<u64>], ns: u64) -> Counts {
        Counts {
            place,
            readings: values
                .iter()
                .map(|v| {
                    v.map(|v| Reading::new(v, ns, ns))
                        .ok_or_else(|| Error::unsupported("no"))
                })
                .collect(),
        }
    }

    /// The sections of `run`'s intervals, each snapshot of `snapshots` taken in turn.
    pub fn intervals(run: &Run, snapshots: &[Snapshot]) -> (Summary, Vec<Section>) {
        let summary = Summary::of(crate::stat::plan::machine_here(), std::slice::from_ref(run));
        let mut before = None;
        let sections = snapshots
            .iter()
            .map(|now| {
                let section = interval_section(&summary.events, now, before);
                before = Some(now);
                section
            })
            .collect();
        (summary, sections)
    }

    #[test]
    fn intervals_are_differences_and_add_up_to_the_total() {
        let one = run(&[("page-faults", Some(60)), ("cycles", None)], 350);
        let cumulative = [(100, 10), (200, 25), (350, 60)];
        let snapshots: Vec<Snapshot> = cumulative
            .iter()
            .map(|&(at_ns, faults)| Snapshot {
                at_ns,
                counts: vec![counts(None, &[Some(faults), None], at_ns)],
            })
            .collect();
        let (summary, sections) = intervals(&one, &snapshots);
        let sections = &sections;
        assert_eq!(sections.len(), 3);
        let values: Vec<u64> = sections
            .iter()
            .map(|s| s.places[0].events[0].reading.as_ref().unwrap().value)
            .collect();
        assert_eq!(values, [10, 15, 35]);
        assert_eq!(
            values.iter().sum::<u64>(),
            summary.events[0].reading.as_ref().unwrap().value
        );
        let lengths: Vec<u64> = sections.iter().map(|s| s.length_ns).collect();
        assert_eq!(lengths, [100, 100, 150], "the last interval is partial");
        assert_eq!(sections[2].at_ns, Some(350));
        // Time running is a difference too: 150 ns in the last interval.
        let last = sections[2].places[0].events[0].reading.as_ref().unwrap();
        assert_eq!(last.time_running, 150);
        assert!(
            sections[1].places[0].events[1].reading.is_err(),
            "still not supported"
        );
    }

    #[test]
    fn places_are_kept_apart_and_matched_by_name() {
        let mut one = run(&[("cpu-clock", Some(30))], 10);
        one.places = vec![
            counts(Some(Place::Cpu(0)), &[Some(10)], 10),
            counts(Some(Place::Cpu(1)), &[Some(20)], 10),
        ];
        let summary = Summary::of(crate::stat::plan::machine_here(), &[one]);
        let places = &summary.sections[0].places;
        assert_eq!(places.len(), 2);
        assert_eq!(places[1].place, Some(Place::Cpu(1)));
        assert_eq!(places[1].events[0].reading.as_ref().unwrap().value, 20);
        // An interval's places are matched by place, not by position.
        let now = [
            counts(Some(Place::Cpu(1)), &[Some(25)], 20),
            counts(Some(Place::Cpu(0)), &[Some(12)], 20),
        ];
        let before = [
            counts(Some(Place::Cpu(0)), &[Some(10)], 10),
            counts(Some(Place::Cpu(1)), &[Some(20)], 10),
        ];
        let deltas = interval(&now, Some(&before));
        assert_eq!(deltas[0].readings[0].as_ref().unwrap().value, 5);
        assert_eq!(deltas[1].readings[0].as_ref().unwrap().value, 2);
    }

    #[test]
    fn one_run_has_no_spread_and_a_zero_mean_none_to_speak_of() {
        let one = Summary::of(
            crate::stat::plan::machine_here(),
            &[run(&[("page-faults", Some(5))], 1)],
        );
        assert_eq!(one.events[0].stddev_percent, None);
        // A mean of 0 has a spread of 0%, which perf prints too.
        let zeros = Summary::of(
            crate::stat::plan::machine_here(),
            &[run(&[("x", Some(0))], 1), run(&[("x", Some(0))], 1)],
        );
        assert_eq!(zeros.events[0].stddev_percent, Some(0.0));
    }

    #[test]
    fn an_event_failing_in_any_run_is_not_counted() {
        let runs = [run(&[("cycles", Some(5))], 1), run(&[("cycles", None)], 1)];
        assert!(
            Summary::of(crate::stat::plan::machine_here(), &runs).events[0]
                .reading
                .is_err()
        );
    }

    #[test]
    fn the_last_run_gives_the_exit_status() {
        let mut last = run(&[], 1);
        last.end.exit_code = 3;
        last.end.exit_description = "exited with status 3".to_string();
        last.end.note = Some("a note".to_string());
        let end = Summary::of(crate::stat::plan::machine_here(), &[run(&[], 1), last]).end;
        assert_eq!(end.exit_code, 3);
        assert_eq!(end.exit_description, "exited with status 3");
        assert_eq!(end.note.as_deref(), Some("a note"));
    }

    #[test]
    fn clocks_are_known_by_name() {
        let summary = Summary::of(
            crate::stat::plan::machine_here(),
            &[run(
                &[
                    ("task-clock:u", Some(1)),
                    ("CPU-CLOCK", Some(1)),
                    ("cycles", Some(1)),
                ],
                1,
            )],
        );
        let clocks: Vec<bool> = summary.events.iter().map(EventSummary::is_clock).collect();
        assert_eq!(clocks, [true, true, false]);
    }
}
