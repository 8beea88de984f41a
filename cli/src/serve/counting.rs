//! The counters: one set per place (a CPU, system-wide, or a cgroup on a CPU), each holding
//! the exported events that count there, opened as independent counters (as `perf stat`
//! opens events not in braces: each time-shared on its own, with its own times). A scrape
//! reads every set into the readings it keeps (no allocation: the set reads into them) and
//! the exposition writes them out; between scrapes the places follow the CPUs online and the
//! cgroups matched ([`Watch`]). The exposition writes the readings out.

use std::sync::Arc;

use counterhal::{AnyGroup, Chosen, EventSet, Group, OpenOptions, Reading};
use counterhal_hal::Target as BackendTarget;

use super::discovery::Watch;
use super::events::{Exported, Plan, Refused};
use super::health::Health;

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
}

impl Exporter {
    /// An exporter of `plan`'s events, following `watch`'s cgroups; nothing is open until
    /// [`follow`](Exporter::follow).
    pub fn new(backend: Chosen, plan: Plan, watch: Watch) -> Exporter {
        Exporter {
            backend,
            events: plan.exported,
            refused: plan.refused,
            places: Vec::new(),
            watch,
        }
    }

    /// The backend's name (the `backend` label of the build info).
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Opens the places that should be counted now and are not (a CPU come online, a cgroup
    /// that appeared), and closes those that should not (a CPU gone offline, a cgroup gone or
    /// no longer matched); a place that cannot open is counted in `health` and tried again
    /// at the next scrape.
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
        self.places.retain(|place| wanted.contains(&place.at));
        for at in wanted {
            if self.places.iter().any(|place| place.at == at) {
                continue;
            }
            match self.open(&at) {
                Some(Ok(place)) => self.places.push(place),
                Some(Err(_)) => health.open_failed(),
                None => {}
            }
        }
        self.places.sort_by(|a, b| a.at.cmp(&b.at));
    }

    /// The set of the events that count at `at` (`None` when none does: a CPU outside every
    /// PMU's cpumask, or a cgroup, which PMUs with a cpumask do not count by).
    fn open(&self, at: &Where) -> Option<Result<Place, counterhal::Error>> {
        let columns: Vec<usize> = (0..self.events.len())
            .filter(|&i| match (&self.events[i].cpus, &at.cgroup) {
                (Some(_), Some(_)) => false,
                (Some(cpus), None) => cpus.contains(at.cpu),
                (None, _) => true,
            })
            .collect();
        if columns.is_empty() {
            return None;
        }
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
        Some(
            EventSet::open(&self.backend, events, &target, &options).and_then(|mut set| {
                set.enable()?;
                Ok(Place {
                    at: at.clone(),
                    readings: vec![Reading::default(); columns.len()],
                    columns,
                    read: false,
                    set,
                })
            }),
        )
    }

    /// Follows the CPUs and cgroups, then reads every place into its readings (a place
    /// whose read fails is counted in `health` and left out of the scrape).
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
