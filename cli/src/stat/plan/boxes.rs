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
//! events of their own; the report folds each event's boxes into its [`Line`].

use counterhal::Error;
use counterhal_hal::{Backend, BackendExt, CpuList, ResolvedEvent};

/// How a PMU event's count is shown, from its alias's `.scale` and `.unit` files: the count
/// times the scale, in the unit (`power/energy-pkg/` in Joules, 2^-32 J per count).
pub use counterhal::Unit as Scale;

/// Whether a scaled count is printed with two decimals: a scale with a fraction (perf's
/// `floor(scale) != scale`).
pub fn has_fraction(scale: &Scale) -> bool {
    scale.scale.floor() != scale.scale
}

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

    /// The lines printed, where merging changes what is printed: one per event of the
    /// command line, or one per box (`--no-merge`); `None` where every event is its own box,
    /// named as given and shown as counted (the common case, no PMU event).
    pub fn lines(&self) -> Option<Vec<Line>> {
        if self.each_its_own() {
            return None;
        }
        let lines = match self.merge {
            false => (0..self.origin.len()).map(|b| vec![b]).collect(),
            true => {
                let mut lines = vec![Vec::new(); self.given.len()];
                for (b, &event) in self.origin.iter().enumerate() {
                    lines[event].push(b);
                }
                lines
            }
        };
        Some(
            lines
                .into_iter()
                .map(|boxes| {
                    // A line of boxes is named as given; an event that is its own box keeps the
                    // name its result shows (a tracepoint without its modifiers, `:u` added
                    // where the kernel refused counting it).
                    let given = &self.given[self.origin[boxes[0]]];
                    let boxed = self.merge && self.names[boxes[0]] != *given;
                    Line {
                        named: boxed.then(|| given.clone()),
                        scale: self.scales[boxes[0]].clone(),
                        boxes,
                    }
                })
                .collect(),
        )
    }

    /// Whether every event is its own box, named as given and shown as counted: then merging
    /// changes nothing, and is not done.
    fn each_its_own(&self) -> bool {
        self.origin.len() == self.given.len()
            && self.names == self.given
            && self.scales.iter().all(Option::is_none)
    }
}

/// One line printed for the boxes of an event of the command line (or for one box, with
/// `--no-merge`): the boxes it adds up, the name it is printed by where that is the command
/// line's, and how its count is shown (the alias's scale and unit).
#[derive(Clone, Debug)]
pub struct Line {
    /// The boxes it adds up, as indices of the events planned.
    pub boxes: Vec<usize>,
    /// The event's name as the command line gives it, where the line is a merge of boxes;
    /// `None`: the name its result shows.
    pub named: Option<String>,
    /// How its count is shown.
    pub scale: Option<Scale>,
}

/// perf's name of a box's line (`uniquify_event_name`): the box's PMU, then the event from its
/// first `/` (`imc/cas_count_read/u` on `uncore_imc_0` is `uncore_imc_0/cas_count_read/u`).
fn box_name(event: &str, pmu: &str) -> String {
    match event.find('/') {
        Some(at) => format!("{pmu}{}", &event[at..]),
        None => event.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The backend over perf_event_open reading the PMUs of the test machine `name`'s sysfs
    /// tree (as `--sysfs` reads it).
    #[cfg(target_os = "linux")]
    pub(crate) fn machine(name: &str) -> counterhal::Chosen {
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
    pub(crate) fn names(list: &[&str]) -> Vec<String> {
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
        assert!(has_fraction(scale));
        assert_eq!(boxes.spread(&[1, 2, 3]), [1, 1, 1, 1, 2, 3]);
        assert_eq!(boxes.groups(&[vec![0, 1]]), [vec![0, 1, 2, 3, 4]]);
        let refused = Boxes::of(&names(&["imc/event=0x1ff/"]), &spr, true).unwrap_err();
        assert!(refused.message().contains("maximum is 255"), "{refused}");
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
        let planned = crate::stat::plan::resolve::events(&spr, boxes.to_plan()).unwrap();
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
