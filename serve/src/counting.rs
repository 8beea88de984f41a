//! The counters: one set per place (a CPU, system-wide, or a cgroup on a CPU), each holding
//! the exported events that count there, opened as independent counters (as `perf stat`
//! opens events not in braces: each time-shared on its own, with its own times). A scrape
//! reads every set into the readings it keeps (no allocation: the set reads into them) and
//! the exposition writes them out; between scrapes the places follow the CPUs online and the
//! cgroups matched ([`Watch`]). The exposition writes the readings out.

use std::sync::Arc;

use counterhal::{AnyGroup, Chosen, EventSet, Group, OpenOptions, Reading};
use counterhal_hal::BackendTarget;

use super::budget::{self, Budget};
use super::discovery::Watch;
use super::events::{Exported, Plan, Refused};
use super::health::Health;
use super::kubernetes::{self, Pod};

/// Where the counts are kept: a CPU, and the cgroup counted there (`None`: everything).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Where {
    /// The cgroup's path as `/proc/PID/cgroup` shows it (`/app/web`; the root is `/`).
    pub cgroup: Option<Arc<str>>,
    /// The CPU.
    pub cpu: u32,
}

/// One place's set and its last readings.
pub struct Place {
    /// The place.
    pub at: Where,
    /// The exported events counted here (indices into [`Exporter::events`]), in set order.
    pub columns: Vec<usize>,
    /// The last readings, one per column.
    pub readings: Vec<Reading>,
    /// Whether the last read succeeded (a place whose read failed is left out of the scrape).
    pub read: bool,
    /// The pod (and container) whose cgroup this is, if any: its labels.
    pub pod: Option<Pod>,
    set: EventSet<AnyGroup>,
}

/// The exporter's state: the backend, the events, the places, and what it follows.
pub struct Exporter {
    backend: Chosen,
    /// The events counted.
    pub events: Vec<Exported>,
    /// The events that did not open, with why.
    pub refused: Vec<Refused>,
    /// The places, in order (system-wide first, then by cgroup), each by CPU.
    pub places: Vec<Place>,
    /// The cgroups followed.
    pub watch: Watch,
    /// The descriptors the counters may hold.
    pub budget: Budget,
    /// The places left out for lack of descriptors at the last [`follow`](Exporter::follow).
    pub unopened: usize,
    /// `--per-cpu`: a cgroup's series are per CPU, not summed over the CPUs.
    pub per_cpu: bool,
}

impl Exporter {
    /// An exporter of `plan`'s events, following `watch`'s cgroups, its counters within
    /// `budget`; nothing is open until [`follow`](Exporter::follow).
    pub fn new(backend: Chosen, plan: Plan, watch: Watch, budget: Budget) -> Exporter {
        Exporter {
            backend,
            events: plan.exported,
            refused: plan.refused,
            places: Vec::new(),
            watch,
            budget,
            unopened: 0,
            per_cpu: false,
        }
    }

    /// The backend's name (the `backend` label of the build info).
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Opens the places that should be counted now and are not (a CPU come online, a cgroup
    /// that appeared), and closes those that should not (a CPU gone offline, a cgroup gone or
    /// no longer matched); a place that cannot open is counted in `health` and tried again
    /// at the next scrape, as is one left out for descriptors (beyond the budget, or refused
    /// for them by the kernel: said on standard error when their number changes).
    pub fn follow(&mut self, health: &Health) {
        let online = counterhal::online_cpus();
        let cgroups = self.watch.discover(health);
        let mut wanted: Vec<Where> = Vec::new();
        let cgroup_names = std::iter::once(None).chain(cgroups.iter().map(|c| Some(c.clone())));
        for cgroup in cgroup_names {
            for cpu in online.iter() {
                wanted.push(Where {
                    cgroup: cgroup.clone(),
                    cpu,
                });
            }
        }
        let before = self.places.len();
        self.places.retain(|place| wanted.contains(&place.at));
        let mut changed = self.places.len() != before;
        let mut held: usize = self.places.iter().map(|place| place.columns.len()).sum();
        let mut unopened = 0;
        for at in wanted {
            if self.places.iter().any(|place| place.at == at) {
                continue;
            }
            let columns = self.columns(&at);
            // The counters' descriptors, and the cgroup's directory while they open.
            let needs = columns.len() + usize::from(at.cgroup.is_some());
            if columns.is_empty() {
                continue;
            } else if !self.budget.fits(held, needs) {
                unopened += 1;
                continue;
            }
            match self.open(&at, columns) {
                Ok(place) => {
                    held += place.columns.len();
                    self.places.push(place);
                    changed = true;
                }
                Err(e) if budget::out_of_descriptors(&e) => unopened += 1,
                Err(_) => health.open_failed(),
            }
        }
        if unopened != self.unopened {
            let said = match unopened {
                0 => "counterhal: every place is counted again\n".to_string(),
                _ => format!("counterhal: {}\n", self.budget.reason(unopened)),
            };
            crate::log(&said);
            self.unopened = unopened;
        }
        health.unopened(unopened);
        if changed {
            self.places.sort_by(|a, b| a.at.cmp(&b.at));
        }
    }

    /// The events that count at `at` (none: a CPU outside every PMU's cpumask, or a
    /// cgroup, which PMUs with a cpumask do not count by).
    fn columns(&self, at: &Where) -> Vec<usize> {
        (0..self.events.len())
            .filter(|&i| match (&self.events[i].cpus, &at.cgroup) {
                (Some(_), Some(_)) => false,
                (Some(cpus), None) => cpus.contains(at.cpu),
                (None, _) => true,
            })
            .collect()
    }

    /// The set of the events `columns` at `at`.
    fn open(&self, at: &Where, columns: Vec<usize>) -> Result<Place, counterhal::Error> {
        let target = match &at.cgroup {
            None => BackendTarget::Cpu(at.cpu),
            Some(cgroup) => BackendTarget::Cgroup {
                path: Arc::from(self.watch.directory(cgroup).as_path()),
                cpu: at.cpu,
            },
        };
        let events = columns
            .iter()
            .map(|&i| self.events[i].resolved.clone())
            .collect();
        let mut options = OpenOptions::default();
        options.grouped = false;
        counterhal_hal::open_set(&self.backend, events, &target, &options).and_then(|mut set| {
            set.enable()?;
            Ok(Place {
                at: at.clone(),
                readings: vec![Reading::default(); columns.len()],
                columns,
                read: false,
                pod: at.cgroup.as_deref().and_then(kubernetes::pod),
                set,
            })
        })
    }

    /// Follows the CPUs and cgroups, then reads every place into its readings (a place
    /// whose read fails is counted in `health` and left out of the scrape).
    ///
    /// Every place is read from the CPU the scrape's thread is on. Linux reads a counter that
    /// is counting on another CPU by interrupting that CPU (`perf_event_read`: an IPI through
    /// `smp_call_function_single`), which answers at once however busy it is. Moving the
    /// thread onto each CPU instead saved the interrupts' CPU time (288 to 208 µs a scrape
    /// of 8 software events on 2 CPUs) but made a scrape wait, on each CPU, for the
    /// scheduler to give it that CPU: with both CPUs busy, the worst of 1,000 scrapes waited
    /// tens of milliseconds (docs/performance.md has the figures).
    pub fn read_all(&mut self, health: &Health) {
        self.follow(health);
        for place in &mut self.places {
            place.read = match place.set.read(&mut place.readings) {
                Ok(()) => true,
                Err(_) => {
                    health.read_failed();
                    false
                }
            };
        }
    }
}
