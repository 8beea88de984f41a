//! A run made into the lines the report prints, as the measurement hands it over: each PMU
//! event's boxes added up into its line ([`Merge`], perf's `evsel__merge_aggr_counters`;
//! apart with `--no-merge`), perf's cgroup column, CPUs added up by `--per-socket` and its
//! kind, counts unscaled with `--no-scale`, and the notes under the results; and each
//! event's line as planned, which `-I`'s intervals print.

use counterhal::Error;
use counterhal_hal::{Reading, sum_readings};

use super::Report;
use super::summary::EventSummary;
use super::topology;
use super::verbose;
use crate::stat::measure::results::{Counts, EventResult, Run, is_absent, not_opened_here};
use crate::stat::plan::boxes::{Boxes, Line};
use crate::stat::plan::planned::EventPlan;

/// How the boxes of the events planned fold into the lines printed.
#[derive(Clone, Debug)]
pub struct Merge {
    /// The lines, where merging changes anything ([`Boxes::lines`]).
    lines: Option<Vec<Line>>,
}

impl Merge {
    /// The merging of `boxes`.
    pub fn of(boxes: &Boxes) -> Merge {
        Merge {
            lines: boxes.lines(),
        }
    }

    /// The boxes' results (as planned, or as a run ended) folded into one result per line:
    /// named as the command line names the event (or, one line per box, as perf names the
    /// box; an event that is its own box, as its result names it), shown with the alias's
    /// scale and unit, its reading the sum of its boxes'.
    pub fn results(&self, results: Vec<EventResult>) -> Vec<EventResult> {
        let Some(lines) = &self.lines else {
            return results;
        };
        lines
            .iter()
            .map(|line| {
                let first = &results[line.boxes[0]];
                let outcomes: Vec<&Result<Reading, Error>> =
                    line.boxes.iter().map(|&b| &results[b].outcome).collect();
                EventResult {
                    name: line.named.clone().unwrap_or_else(|| first.name.clone()),
                    backend: first.backend.clone(),
                    outcome: added_up(&outcomes),
                    cgroup: first.cgroup.clone(),
                    scale: line.scale.clone(),
                }
            })
            .collect()
    }

    /// A run's boxes folded into its lines, the total and each place's.
    pub fn run(&self, run: &mut Run) {
        run.events = self.results(std::mem::take(&mut run.events));
        self.counts(&mut run.places);
    }

    /// Counts (an interval's, a place's) of the boxes folded into the lines' counts.
    pub fn counts(&self, counts: &mut [Counts]) {
        let Some(lines) = &self.lines else {
            return;
        };
        for counts in counts {
            counts.readings = lines
                .iter()
                .map(|line| {
                    let readings: Vec<_> =
                        line.boxes.iter().map(|&b| &counts.readings[b]).collect();
                    added_up(&readings)
                })
                .collect();
        }
    }
}

/// The sum of the boxes' readings that were counted (each scaled for its own time running
/// first; the times added up, as perf adds them); where none was, the first reason (a box not
/// opened in this place counts as no reason while another box has one).
fn added_up(readings: &[&Result<Reading, Error>]) -> Result<Reading, Error> {
    let counted: Vec<Reading> = readings
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .copied()
        .collect();
    if !counted.is_empty() {
        return Ok(sum_readings(&counted));
    }
    readings
        .iter()
        .find(|r| !is_absent(r))
        .or(readings.first())
        .map_or_else(|| Err(not_opened_here()), |r| (*r).clone())
}

/// Each event's line as planned in `plan` (`label` the backend's), its boxes merged, for
/// `-I`'s intervals.
pub fn planned(report: &Report, plan: &EventPlan, merge: &Merge, label: &str) -> Vec<EventSummary> {
    let planned: Vec<_> = plan
        .events
        .iter()
        .map(|event| {
            let mut result = EventResult::planned(&event.what, label);
            if report.cgroups {
                result.cgroup = Some(event.cgroup_name().to_string());
            }
            result
        })
        .collect();
    merge
        .results(planned)
        .iter()
        .map(EventSummary::planned)
        .collect()
}

/// Makes the runs of `plan` what the summary prints: the cgroup column, the boxes merged,
/// aggregated by `--per-*`, unscaled with `--no-scale`, and `notes` under them.
pub fn runs(
    report: &Report,
    plan: &EventPlan,
    merge: &Merge,
    runs: &mut [Run],
    notes: [Option<String>; 2],
) {
    if report.cgroups {
        // perf's cgroup column, empty for an event without one.
        for run in runs.iter_mut() {
            for (event, planned) in run.events.iter_mut().zip(&plan.events) {
                event.cgroup = Some(planned.cgroup_name().to_string());
            }
        }
    }
    for run in runs.iter_mut() {
        merge.run(run);
    }
    if let Some(by) = report.aggregation {
        let place_of = |cpu| topology::cpu_place(&report.system, cpu, by);
        for run in runs.iter_mut() {
            topology::aggregate(run, by, &place_of);
        }
    }
    if report.unscaled {
        verbose::unscaled(runs);
    }
    for said in notes.into_iter().flatten() {
        for run in runs.iter_mut() {
            run.end.note = Some(match run.end.note.take() {
                Some(note) => format!("{said}; {note}"),
                None => said.clone(),
            });
        }
    }
}

/// Its test reads a machine's PMU tree as the Linux backend does.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::stat::measure::results::{CommandEnd, Place};
    use crate::stat::plan::boxes::tests::{machine, names};

    /// The boxes' readings add up into their line (times added up, as perf's merged line's
    /// run time is the boxes'), or stay apart with `--no-merge`; a place where a box was not
    /// opened adds nothing.
    #[test]
    fn boxes_add_up_into_one_line_unless_not_merged() {
        let spr = machine("spr-2s");
        let given = names(&["uncore_imc/cas_count_write/", "page-faults"]);
        let result = |name: &str, value| EventResult {
            name: name.to_string(),
            backend: "linux".to_string(),
            outcome: Ok(Reading::new(value, 10, 10)),
            cgroup: None,
            scale: None,
        };
        let run = |boxes: &Boxes| Run {
            events: boxes
                .names()
                .iter()
                .zip(1..)
                .map(|(name, value)| result(name, value))
                .collect(),
            end: CommandEnd {
                exit_code: 0,
                exit_description: String::new(),
                elapsed_ns: 10,
                user_ns: None,
                sys_ns: None,
                note: None,
            },
            places: vec![Counts {
                place: Some(Place::Cpu(1)),
                readings: vec![
                    Err(not_opened_here()),
                    Err(not_opened_here()),
                    Err(not_opened_here()),
                    Err(not_opened_here()),
                    Ok(Reading::new(7, 10, 10)),
                ],
            }],
        };
        let merged = Boxes::of(&given, &spr, true).unwrap();
        let mut one = run(&merged);
        Merge::of(&merged).run(&mut one);
        let lines: Vec<(&str, u64, u64)> = one
            .events
            .iter()
            .map(|e| {
                let r = e.outcome.as_ref().unwrap();
                (e.name.as_str(), r.value, r.time_running)
            })
            .collect();
        assert_eq!(
            lines,
            [
                ("uncore_imc/cas_count_write/", 10, 40),
                ("page-faults", 5, 10)
            ]
        );
        assert_eq!(one.events[0].scale.as_ref().unwrap().name, "MiB");
        assert!(is_absent(&one.places[0].readings[0]));
        assert_eq!(one.places[0].readings[1].as_ref().unwrap().value, 7);

        let apart = Boxes::of(&given, &spr, false).unwrap();
        let mut each = run(&apart);
        Merge::of(&apart).run(&mut each);
        let names: Vec<&str> = each.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names[0], "uncore_imc_0/cas_count_write/");
        assert_eq!((names.len(), names[4]), (5, "page-faults"));

        // perf's `name=` term names the merged line (perf 6.1's parse-events.l `name`).
        let named = Boxes::of(
            &["uncore_imc/cas_count_write,name=writes/", "page-faults"].map(String::from),
            &spr,
            true,
        )
        .unwrap();
        let mut one = run(&named);
        Merge::of(&named).run(&mut one);
        assert_eq!(one.events[0].name, "writes");
        assert_eq!(one.events[0].outcome.as_ref().unwrap().value, 10);
    }
}
