//! PMU events on every box and CPU they stand for, as perf 6.1 opens and prints them: a PMU
//! event (`uncore_imc/cas_count_read/`, `power/energy-pkg/`) is counted once per PMU it names
//! (each `uncore_imc_N` of a wildcard, perf's `parse_events_add_pmu` per box), system-wide on
//! the CPUs of that PMU's `cpumask` (one per package for an uncore PMU), and printed as one
//! line that adds up the boxes (perf's default merging, `evsel__merge_aggr_counters`), or one
//! line per box with `--no-merge`, each named as perf's `uniquify_event_name` names it (the
//! box, then the event from its first `/`: `uncore_imc_0/cas_count_read/`). The count is shown
//! times the alias's `.scale`, in its `.unit` (`Joules`, `MiB`).
//!
//! [`Boxes`] holds the plan: which counted event (a box) comes from which event of the command
//! line, on which CPUs, shown how, and the event the backend resolved on each box (planned as
//! it is, [`Boxes::to_plan`], never resolved again). The measurement counts the boxes as
//! events of their own; [`Boxes::merge_run`] and [`Boxes::merge_counts`] then fold each
//! event's boxes into its line.

use counterhal::Error;
use counterhal_hal::{Backend, BackendExt, CpuList, Reading, ResolvedEvent, sum_readings};

use super::results::{Counts, EventResult, Run, Scale, is_absent, not_opened_here};

/// The boxes of each event of the command line.
#[derive(Clone, Debug, Default)]
pub struct Boxes {
    /// One per box: the index of the event (of the command line) it is a box of.
    origin: Vec<usize>,
    /// One per box: its name, as perf names a box's line.
    names: Vec<String>,
    /// One per box: the CPUs it opens on system-wide (its PMU's cpumask), where it has some.
    cpus: Vec<Option<CpuList>>,
    /// One per box: how its count is shown (its alias's scale and unit).
    scales: Vec<Option<Scale>>,
    /// One per box: its event as the backend resolved it on the box (a PMU event's box);
    /// `None` for an event that is its own box, resolved when planned.
    events: Vec<Option<ResolvedEvent>>,
    /// The events of the command line, whose lines the boxes merge into.
    given: Vec<String>,
    /// Whether each event's boxes print as one line (perf's default; not with `--no-merge`).
    merge: bool,
}

impl Boxes {
    /// The boxes of `names` (the events of the command line, after `-G` and
    /// `--for-each-cgroup`), each PMU event's as `backend` resolves them
    /// ([`BackendExt::pmu_boxes`]: each other name its own box); merged into one line per
    /// event when `merge`.
    ///
    /// # Errors
    /// A PMU event that no PMU it names takes ([`counterhal::ErrorKind::InvalidEvent`]: a term
    /// the PMU lacks, a value wider than its field), as perf refuses it.
    pub fn of<B: Backend + ?Sized>(
        names: &[String],
        backend: &B,
        merge: bool,
    ) -> Result<Boxes, Error> {
        let mut boxes = Boxes {
            given: names.to_vec(),
            merge,
            ..Boxes::default()
        };
        for (index, name) in names.iter().enumerate() {
            let pmu_boxes = backend.pmu_boxes(name).transpose()?.unwrap_or_default();
            if pmu_boxes.is_empty() {
                boxes.push(index, name.clone(), None, None);
                continue;
            }
            // perf's `name=` term names the line (`uncore_imc/cas_count_read,name=reads/`).
            if let Some(named) = pmu_boxes.first().and_then(|b| b.name.clone()) {
                boxes.given[index] = named;
            }
            for pmu_box in pmu_boxes {
                boxes.push(
                    index,
                    box_name(name, &pmu_box.pmu),
                    pmu_box.cpus,
                    Some(pmu_box.event),
                );
            }
        }
        Ok(boxes)
    }

    fn push(
        &mut self,
        origin: usize,
        name: String,
        cpus: Option<CpuList>,
        event: Option<ResolvedEvent>,
    ) {
        self.origin.push(origin);
        self.names.push(name);
        self.cpus.push(cpus);
        self.scales
            .push(event.as_ref().and_then(|event| event.unit.clone()));
        self.events.push(event);
    }

    /// The boxes' names, in order.
    #[cfg(all(test, target_os = "linux"))]
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// What is planned and counted, box by box: its name, and its event where the backend
    /// resolved it on its box (not to be resolved again).
    pub fn to_plan(&self) -> impl Iterator<Item = (&str, Option<&ResolvedEvent>)> {
        self.names
            .iter()
            .zip(&self.events)
            .map(|(name, event)| (name.as_str(), event.as_ref()))
    }

    /// The boxes' CPUs: each box's PMU's cpumask, where it has one.
    pub fn cpus(&self) -> &[Option<CpuList>] {
        &self.cpus
    }

    /// Something given per event of the command line (its cgroup, its filter), given to each
    /// of its boxes.
    pub fn spread<T: Clone>(&self, per_event: &[T]) -> Vec<T> {
        self.origin.iter().map(|&i| per_event[i].clone()).collect()
    }

    /// The groups (`{a,b}`, indices of the command line's events) as groups of boxes: each
    /// member's boxes join its group.
    pub fn groups(&self, groups: &[Vec<usize>]) -> Vec<Vec<usize>> {
        groups
            .iter()
            .map(|group| {
                (0..self.origin.len())
                    .filter(|&b| group.contains(&self.origin[b]))
                    .collect()
            })
            .collect()
    }

    /// The lines printed: one per event of the command line, or one per box (`--no-merge`);
    /// the boxes each line adds up.
    fn lines(&self) -> Vec<Vec<usize>> {
        if !self.merge {
            return (0..self.origin.len()).map(|b| vec![b]).collect();
        }
        let mut lines = vec![Vec::new(); self.given.len()];
        for (b, &event) in self.origin.iter().enumerate() {
            lines[event].push(b);
        }
        lines
    }

    /// Whether every event is its own box, named as given and shown as counted: then merging
    /// changes nothing (the common case, no PMU event), and is not done.
    fn each_its_own(&self) -> bool {
        self.origin.len() == self.given.len()
            && self.names == self.given
            && self.scales.iter().all(Option::is_none)
    }

    /// The boxes' results (as planned, or as a run ended) folded into one result per line:
    /// named as the command line names the event (or, one line per box, as perf names the
    /// box; an event that is its own box, as its result names it), shown with the alias's
    /// scale and unit, its reading the sum of its boxes'.
    pub fn merge_results(&self, results: Vec<EventResult>) -> Vec<EventResult> {
        if self.each_its_own() {
            return results;
        }
        self.lines()
            .into_iter()
            .map(|boxes| {
                let first = &results[boxes[0]];
                let outcomes: Vec<&Result<Reading, Error>> =
                    boxes.iter().map(|&b| &results[b].outcome).collect();
                // A line of boxes is named as given; an event that is its own box keeps the
                // name its result shows (a tracepoint without its modifiers, `:u` added
                // where the kernel refused counting it).
                let given = &self.given[self.origin[boxes[0]]];
                let boxed = self.merge && self.names[boxes[0]] != *given;
                EventResult {
                    name: match boxed {
                        true => given.clone(),
                        false => first.name.clone(),
                    },
                    backend: first.backend.clone(),
                    outcome: added_up(&outcomes),
                    cgroup: first.cgroup.clone(),
                    scale: self.scales[boxes[0]].clone(),
                }
            })
            .collect()
    }

    /// A run's boxes folded into its lines, the total and each place's.
    pub fn merge_run(&self, run: &mut Run) {
        run.events = self.merge_results(std::mem::take(&mut run.events));
        self.merge_counts(&mut run.places);
    }

    /// Counts (an interval's, a place's) of the boxes folded into the lines' counts.
    pub fn merge_counts(&self, counts: &mut [Counts]) {
        if self.each_its_own() {
            return;
        }
        let lines = self.lines();
        for counts in counts {
            counts.readings = lines
                .iter()
                .map(|boxes| {
                    let readings: Vec<_> = boxes.iter().map(|&b| &counts.readings[b]).collect();
                    added_up(&readings)
                })
                .collect();
        }
    }
}

/// perf's name of a box's line (`uniquify_event_name`): the box's PMU, then the event from its
/// first `/` (`imc/cas_count_read/u` on `uncore_imc_0` is `uncore_imc_0/cas_count_read/u`).
fn box_name(event: &str, pmu: &str) -> String {
    match event.find('/') {
        Some(at) => format!("{pmu}{}", &event[at..]),
        None => event.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_os = "linux")]
    use crate::stat::results::Place;

    /// The backend over perf_event_open reading the PMUs of the test machine `name`'s sysfs
    /// tree (as `--sysfs` reads it).
    #[cfg(target_os = "linux")]
    fn machine(name: &str) -> counterhal::Chosen {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../backend-linux/tests/data/machines")
            .join(name);
        counterhal::Setup::new()
            .cpu_model("spr")
            .backend("linux")
            .sysfs(root)
            .open()
            .unwrap()
    }

    #[cfg(target_os = "linux")]
    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// Oracle: perf 6.1 under the Sapphire Rapids tree (backend-linux's tests/perf_pmus.rs
    /// holds `pmu_events` to its opens): four IMC boxes on CPUs 0 and 56, the scale and unit of
    /// the alias, each other event its own box.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_wildcard_stands_for_its_boxes_on_their_cpumask() {
        let spr = machine("spr-2s");
        let given = names(&["imc/cas_count_read/k", "task-clock", "power/energy-pkg/"]);
        let boxes = Boxes::of(&given, &spr, true).unwrap();
        assert_eq!(
            boxes.names(),
            [
                "uncore_imc_0/cas_count_read/k",
                "uncore_imc_1/cas_count_read/k",
                "uncore_imc_2/cas_count_read/k",
                "uncore_imc_3/cas_count_read/k",
                "task-clock",
                "power/energy-pkg/"
            ]
        );
        assert_eq!(boxes.cpus()[0].as_ref().unwrap().to_string(), "0,56");
        assert_eq!(boxes.cpus()[4], None);
        let scale = boxes.scales[5].as_ref().unwrap();
        assert_eq!(
            (scale.scale, scale.name.as_str()),
            (2f64.powi(-32), "Joules")
        );
        assert!(super::super::results::has_fraction(scale));
        assert_eq!(boxes.spread(&[1, 2, 3]), [1, 1, 1, 1, 2, 3]);
        assert_eq!(boxes.groups(&[vec![0, 1]]), [vec![0, 1, 2, 3, 4]]);
        let refused = Boxes::of(&names(&["imc/event=0x1ff/"]), &spr, true).unwrap_err();
        assert!(refused.message().contains("maximum is 255"), "{refused}");
    }

    /// The boxes' readings add up into their line (times added up, as perf's merged line's
    /// run time is the boxes'), or stay apart with `--no-merge`; a place where a box was not
    /// opened adds nothing.
    #[test]
    #[cfg(target_os = "linux")]
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
            end: crate::stat::results::CommandEnd {
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
        merged.merge_run(&mut one);
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
        apart.merge_run(&mut each);
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
        named.merge_run(&mut one);
        assert_eq!(one.events[0].name, "writes");
        assert_eq!(one.events[0].outcome.as_ref().unwrap().value, 10);
    }

    /// A backend that resolves through the Linux backend on a test machine's tree and keeps
    /// each name it was asked to resolve.
    #[cfg(target_os = "linux")]
    struct Counting {
        through: counterhal::Chosen,
        asked: std::cell::RefCell<Vec<String>>,
    }

    #[cfg(target_os = "linux")]
    impl Backend for Counting {
        type Group = <counterhal::Chosen as Backend>::Group;

        fn name(&self) -> &'static str {
            "counting"
        }
        fn capabilities(&self) -> &counterhal_hal::Capabilities {
            self.through.capabilities()
        }
        fn resolve(&self, event: &str) -> counterhal_hal::Result<ResolvedEvent> {
            self.asked.borrow_mut().push(event.to_string());
            self.through.resolve(event)
        }
        fn open(
            &self,
            events: &[counterhal_hal::EventRequest],
            target: &counterhal_hal::BackendTarget,
            options: &counterhal_hal::OpenOptions,
        ) -> counterhal_hal::Result<Self::Group> {
            self.through.open(events, target, options)
        }
        fn extensions(&self) -> counterhal_hal::Extensions<'_> {
            self.through.extensions()
        }
    }

    /// Oracle: perf 6.1's `parse_events_add_pmu`, which parses a wildcard's terms once per
    /// box. The plan counts each box with the event the backend resolved on it
    /// ([`counterhal_hal::PmuBox::event`]) and resolves only the events that are their own
    /// box; what it plans for a box is what resolving the box's name gives.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_box_is_resolved_once_by_the_backend_not_again_by_the_plan() {
        let spr = Counting {
            through: machine("spr-2s"),
            asked: Default::default(),
        };
        let given = names(&["imc/cas_count_read/", "task-clock"]);
        let boxes = Boxes::of(&given, &spr, true).unwrap();
        let planned = crate::stat::measurement::plan(&spr, boxes.to_plan()).unwrap();
        assert_eq!(*spr.asked.borrow(), ["task-clock"]);
        assert_eq!(planned.len(), 5);
        let first = planned[0].ready().unwrap();
        assert_eq!(first.name, "uncore_imc_0/cas_count_read/");
        assert_eq!(*first, spr.through.resolve(&first.name).unwrap());
    }

    #[test]
    fn boxes_are_named_as_perf_names_them() {
        assert_eq!(box_name("imc/x/u", "uncore_imc_2"), "uncore_imc_2/x/u");
        assert_eq!(box_name("cycles", "cpu"), "cycles");
    }
}
