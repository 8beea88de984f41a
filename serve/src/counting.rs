//! The counters: one set per CPU, system-wide, holding the exported events that count
//! there, opened as independent counters (as `perf stat` opens events not in braces: each
//! time-shared on its own, with its own times); and every followed cgroup counted by one
//! counter of cgroups ([`Cgroups`]: BPF or perf events, `--cgroup-mode`), each cgroup a place
//! per CPU whose readings are the counter's. A scrape reads every set and the cgroups'
//! counter into the readings it keeps (no allocation: they read into them); between scrapes
//! the places follow the CPUs online and the cgroups matched ([`Watch`]). As a collector it
//! writes the readings out ([`families`]). A followed cgroup that goes is read once more and its counters
//! closed at once: its last readings stay as data ([`Source::Kept`]: no descriptor, no BPF
//! map slot) until a scrape has exported them, so that the cgroups still there always find
//! room. At that moment its record, its whole counts, goes to the journal where `--records`
//! keeps one ([`record`]).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use counterhal::{AnyGroup, Chosen, CpuList, EventSet, Group, OpenOptions, Reading};
use counterhal_hal::BackendTarget;
use counterhal_system::CpuTopology;

use super::budget::{self, Budget};
use super::discovery::Watch;
use super::events::{Exported, Plan, Refused, groups_among};
use super::health::Health;
use super::per_cgroup::Cgroups;
use super::text_format::epoch_seconds;
use crate::labels::kubelet_logs::KubeletLogs;
use crate::labels::kubernetes::{Kubelet, Pod};
use crate::labels::slurm::{Job, Slurmstepd};

/// Where the counts are kept: a CPU, and the cgroup counted there (`None`: everything).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Where {
    /// The cgroup's path as `/proc/PID/cgroup` shows it (`/app/web`; the root is `/`).
    pub cgroup: Option<Arc<str>>,
    /// The CPU.
    pub cpu: u32,
}

/// How the system-wide series are written: per CPU, or summed per die or socket (as perf
/// stat's `-A`, `--per-die` and `--per-socket` aggregate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Aggregate {
    /// A series per CPU (`cpu`, `socket` and `die` labels).
    #[default]
    Cpu,
    /// A series per die (`socket` and `die` labels), its CPUs' readings summed.
    Die,
    /// A series per socket (a `socket` label), its CPUs' readings summed.
    Socket,
}

impl Aggregate {
    /// The socket and die whose series a CPU of `topology` counts in (where summed).
    pub fn key(self, topology: &CpuTopology) -> (Option<u32>, Option<u32>) {
        match self {
            Aggregate::Socket => (topology.socket, None),
            Aggregate::Cpu | Aggregate::Die => (topology.socket, topology.die),
        }
    }
}

/// One place's set and its last readings.
pub struct Place {
    /// The place.
    pub at: Where,
    /// The exported events counted here (indices into [`Exporter::events`]), in set order.
    pub columns: Vec<usize>,
    /// The last readings, one per column.
    pub readings: Vec<Reading>,
    /// The positions among `columns` of the events not counted here, which did not open for
    /// a cgroup on this CPU (as of the last read; see [`Place::counts`]).
    left_out: Vec<usize>,
    /// Whether the last read succeeded (a place whose read failed is left out of the scrape).
    pub read: bool,
    /// The pod (and container) whose cgroup this is, if any: its labels.
    pub pod: Option<Pod>,
    /// Whether its pod's names are still to be read (`--kubelet-logs`: the pod's log
    /// directory, or its container's link, was not there yet).
    unnamed: bool,
    /// The Slurm job (and step and task) whose cgroup this is, if any: its labels.
    pub job: Option<Job>,
    /// Its CPU's socket and die (the labels of its series where they are per CPU).
    pub topology: CpuTopology,
    /// When it began counting (seconds since the epoch): its series' `_created`.
    pub created: f64,
    /// In the perf-event mode, for a cgroup's place: whether a task may have run in the
    /// cgroup (or below it) before its counters opened (one was there before they opened,
    /// was there once all were open, or had run there by then), so that its counts may
    /// miss what such tasks did before `created` (`counterhal_cgroup_counted_late`); `false`
    /// means counted from its first task's first instruction. `None` in the
    /// BPF mode (which counts a cgroup its parent adopts from its first context switch),
    /// system-wide, or where the cgroup does not say (v1).
    pub late: Option<bool>,
    source: Source,
    /// Where its cgroup was removed (or no longer matches): when, and whether a scrape has
    /// exported it since.
    departed: Option<Departure>,
}

impl Place {
    /// Whether the event at `index` among its columns counts here: every event of a CPU's
    /// set, and each of a cgroup's that opened for it on this CPU.
    pub fn counts(&self, index: usize) -> bool {
        !self.left_out.contains(&index)
    }
}

/// A followed cgroup removed (or no longer matched): its counters were read a last time and
/// closed, and its place keeps those readings until a scrape has exported them and
/// [`Exporter::departed_for`] has passed since (a short job's whole count, for each
/// Prometheus of an HA pair).
#[derive(Clone, Copy, Debug)]
struct Departure {
    /// When it departed.
    since: Instant,
    /// When it departed, in seconds since the epoch
    /// (`counterhal_cgroup_departed_timestamp_seconds`).
    at: f64,
    /// When a scrape first exported it.
    seen: Option<Instant>,
}

/// Where a place's readings come from.
enum Source {
    /// Its own sets (a CPU, system-wide; boxed: the cgroups' places, most of them, are
    /// small).
    Set(Box<Sets>),
    /// The cgroups' counter: the `followed`th cgroup it follows, on its `cpu`th CPU.
    Counter { followed: usize, cpu: usize },
    /// Nothing any more: a departed cgroup's last readings, kept as they are.
    Kept,
}

/// A CPU's counters, system-wide: each group of the events ([`groups_among`]) a set of its
/// own, then the events in no group, each counting alone, in one set.
struct Sets {
    /// Each set with its events' positions among the place's columns.
    sets: Vec<(EventSet<AnyGroup>, Vec<usize>)>,
    /// Room for one set's readings.
    scratch: Vec<Reading>,
}

impl Sets {
    /// Reads every set into `readings`, each event's at its column's position.
    fn read(&mut self, readings: &mut [Reading]) -> Result<(), counterhal::Error> {
        for (set, at) in &mut self.sets {
            let read = &mut self.scratch[..at.len()];
            set.read(read)?;
            for (&at, reading) in at.iter().zip(read.iter()) {
                readings[at] = *reading;
            }
        }
        Ok(())
    }
}

/// What became of a cgroup to follow.
#[derive(Debug, PartialEq, Eq)]
enum Followed {
    /// Followed: its places are added.
    Yes,
    /// Not now (gone meanwhile, or an error counted): tried again at the next look.
    NotNow,
    /// Refused for want of room: counted as dropped, tried again when a place frees.
    Refused,
}

/// How long a removed cgroup's last counts stay exported after a scrape first reads them,
/// where `--departed-for` does not say (docs/serve.md, "Counting cgroups"): a Prometheus of
/// an HA pair restarted (or rolled out) for up to this long, less its scrape interval, still
/// reads them when it is back.
pub const DEPARTED_FOR: std::time::Duration = std::time::Duration::from_secs(600);

/// The most removed cgroups kept, where `--departed-max` does not say.
pub const DEPARTED_MAX: usize = 1024;

/// The exporter's state: the backend, the events, the places, and what it follows.
pub struct Exporter {
    backend: Chosen,
    /// The events counted.
    pub events: Vec<Exported>,
    /// The events that did not open, with why.
    pub refused: Vec<Refused>,
    /// The groups that did not form, with why ([`Plan::ungrouped`]).
    pub ungrouped: Vec<String>,
    /// The places, in order (system-wide first, then by cgroup), each by CPU.
    pub places: Vec<Place>,
    /// The cgroups followed.
    pub watch: Watch,
    /// The descriptors the counters may hold.
    pub budget: Budget,
    /// The places left out for lack of descriptors at the last [`follow`](Exporter::follow).
    pub unopened: usize,
    /// The cgroups matched but left out at the last [`follow`](Exporter::follow) for lying
    /// deeper than the cgroups' counter follows.
    pub too_deep: usize,
    /// `--per-cpu`: a cgroup's series are per CPU, not summed over the CPUs.
    pub per_cpu: bool,
    /// `--per-socket`, `--per-die`: the system-wide series summed per socket or die, not
    /// per CPU.
    pub aggregate: Aggregate,
    /// `--times`: the events whose times enabled and running are exported.
    pub times: super::events::TimesArg,
    /// `--kubelet-cgroup-root`: where the kubelet's pods are (their cgroups' labels).
    pub kubelet: Kubelet,
    /// `--slurm-cgroup-slice`: where slurmstepd's jobs are (their cgroups' labels).
    pub slurm: Slurmstepd,
    /// `--kubelet-logs`: the kubelet's log directories, which name pods and containers (their
    /// cgroups' `namespace`, `pod` and `container` labels); `None` where not given.
    pub kubelet_logs: Option<KubeletLogs>,
    /// The counter of the cgroups followed (`None`: no cgroup is counted).
    pub cgroups: Option<Cgroups>,
    /// The system's facts the metrics read (`counterhal_machine_fact`), read at the first
    /// scrape that writes them and kept for the exporter's life.
    pub machine: counterhal::metrics::Machine,
    /// The system whose facts the metrics read (`counterhal_machine_fact`) and whose CPUs'
    /// topology labels their series.
    pub system: counterhal_system::System,
    /// `--cpus`: the CPUs counted, of those online (`None`: every one).
    pub cpus: Option<CpuList>,
    /// The socket and die of each CPU counted so far, read once.
    topologies: HashMap<u32, CpuTopology>,
    /// What the last [`follow`](Exporter::follow) found where it left nothing to try again:
    /// while the CPUs and cgroups are these, every place is open and the next one has
    /// nothing to do.
    settled: Option<(CpuList, Vec<Arc<str>>)>,
    /// The walk of the cgroups whose parents the counter adopts the new children of.
    adopted_at: u64,
    /// `--departed-max`: the most departed cgroups whose last readings are kept; past it the
    /// oldest are let go.
    pub departed_most: usize,
    /// `--departed-for`: how long a departed cgroup's last readings stay after a scrape first
    /// exported them.
    pub departed_for: std::time::Duration,
    /// The cgroups matched whose following the counter refused for want of room (the BPF
    /// mode's map full), each counted as dropped once.
    refused_cgroups: HashSet<Arc<str>>,
    /// `--records`: the journal a departed cgroup's record is sent to (`None`: none kept).
    pub records: Option<crate::records::journal::Journal>,
}

/// The CPUs of `online` that `only` lists (`None`: every one), which the exporter counts.
pub fn counted(online: &CpuList, only: Option<&CpuList>) -> CpuList {
    match only {
        Some(only) => CpuList::from_cpus(online.iter().filter(|&cpu| only.contains(cpu))),
        None => online.clone(),
    }
}

impl Exporter {
    /// An exporter of `plan`'s events, following `watch`'s cgroups with `cgroups`, its
    /// counters within `budget`, reading the machine through `system` (its cgroups, CPUs and
    /// topology); no place is open until [`follow`](Exporter::follow).
    pub fn new(
        system: counterhal_system::System,
        backend: Chosen,
        plan: Plan,
        watch: Watch,
        budget: Budget,
        cgroups: Option<Cgroups>,
    ) -> Exporter {
        Exporter {
            backend,
            events: plan.exported,
            refused: plan.refused,
            ungrouped: plan.ungrouped,
            places: Vec::new(),
            watch,
            budget,
            unopened: 0,
            too_deep: 0,
            per_cpu: false,
            aggregate: Aggregate::Cpu,
            times: super::events::TimesArg::default(),
            kubelet: Kubelet::default(),
            slurm: Slurmstepd::default(),
            kubelet_logs: None,
            cgroups,
            machine: counterhal::metrics::Machine::new(system.clone()),
            system,
            cpus: None,
            topologies: HashMap::new(),
            settled: None,
            adopted_at: 0,
            departed_most: DEPARTED_MAX,
            departed_for: DEPARTED_FOR,
            refused_cgroups: HashSet::new(),
            records: None,
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
        let counted = counted(&counterhal::online_cpus(&self.system), self.cpus.as_ref());
        self.follow_on(&counted, health);
        self.name_pods();
    }

    /// Names the pods followed before their names could be read (a pod's cgroup is made before
    /// its log directory, a container's before its link), reading the kubelet's log
    /// directories again where they changed: nothing to do once every pod is named.
    fn name_pods(&mut self) {
        let Some(logs) = &mut self.kubelet_logs else {
            return;
        };
        if !self.places.iter().any(|place| place.unnamed) || !logs.refresh() {
            return;
        }
        for place in self.places.iter_mut().filter(|place| place.unnamed) {
            if let Some(pod) = &mut place.pod {
                place.unnamed = !logs.name(pod);
            }
        }
    }

    /// The socket and die of `cpu`, read from the system the first time it is asked for.
    fn topology(&mut self, cpu: u32) -> CpuTopology {
        let system = &self.system;
        *self
            .topologies
            .entry(cpu)
            .or_insert_with(|| system.cpu_topology(cpu))
    }

    /// [`follow`](Exporter::follow) with the CPUs online `online`. Where they are not those
    /// the cgroups' counter counts on (a CPU came online or went offline), the counter is
    /// opened again on them and every cgroup followed again, counting from zero (the
    /// cgroups' series start again, as at a restart; said on standard error). Where the CPUs
    /// and cgroups are those of the last call, which left nothing to try again, nothing is
    /// done: a scrape of a node whose pods stay put costs no look at the places.
    pub fn follow_on(&mut self, online: &counterhal::CpuList, health: &Health) {
        let adopted_at = self.adopted_at;
        self.follow_places(online, health);
        // After a walk, and the follows of what it found: what the counter adopted that no
        // walk saw is let go.
        if self.adopted_at != adopted_at
            && let Some(counter) = &mut self.cgroups
        {
            counter.forget_unseen();
        }
    }

    /// [`follow_on`](Exporter::follow_on) but for letting go what no walk saw.
    fn follow_places(&mut self, online: &counterhal::CpuList, health: &Health) {
        let cgroups = self.watch.discover(health);
        // After each walk: the parents whose new children the counter counts from their
        // first switch, before the next look.
        if self.watch.walks() != self.adopted_at {
            self.adopted_at = self.watch.walks();
            if let Some(counter) = &mut self.cgroups {
                counter.adopt(self.watch.parents(), &self.watch.passed_over());
            }
        }
        let before = self.places.len();
        self.places.retain(|place| {
            place
                .departed
                .as_ref()
                .is_none_or(|d| d.seen.is_none_or(|seen| seen.elapsed() < self.departed_for))
        });
        if self.places.len() != before {
            // Their counters are let go below.
            self.settled = None;
        }
        if let Some((cpus, followed)) = &self.settled
            && cpus == online
            && *followed == cgroups
        {
            return;
        }
        self.settled = None;
        // A place that could not open is tried again at the next call.
        let mut again = false;
        let online_now: Vec<u32> = online.iter().collect();
        if let Some(counter) = &self.cgroups
            && counter.cpus() != online_now.as_slice()
        {
            match counter.reopen(&self.backend, &self.events, &online_now) {
                Ok(reopened) => {
                    self.places.retain(|place| {
                        place.at.cgroup.is_none() || matches!(place.source, Source::Kept)
                    });
                    self.cgroups = reopened;
                    self.index_cgroups();
                    crate::log::info(
                        "the CPUs online changed: the cgroups are counted on them from now \
                         on, from zero",
                        &[("cpus", online)],
                    );
                }
                Err(_) => {
                    again = true;
                    health.open_failed();
                }
            }
        }
        let wanted: HashSet<&str> = cgroups.iter().map(|c| &**c).collect();
        self.depart(&wanted, health);
        self.refused_cgroups.retain(|c| wanted.contains(&**c));
        let before = self.places.len();
        self.places
            .retain(|place| match (&place.at.cgroup, &place.departed) {
                (None, _) => online.contains(place.at.cpu),
                // A cgroup made again under the path of one removed is a new one, from zero.
                (Some(cgroup), Some(_)) => !wanted.contains(&**cgroup),
                (Some(cgroup), None) => wanted.contains(&**cgroup),
            });
        let mut changed = self.places.len() != before;
        // The counters of the cgroups wanted stay; those of the departed close.
        let directories: HashSet<PathBuf> =
            cgroups.iter().map(|c| self.watch.directory(c)).collect();
        if let Some(counter) = &mut self.cgroups {
            let gone: Vec<PathBuf> = counter
                .followed()
                .filter(|d| !directories.contains(*d))
                .map(PathBuf::from)
                .collect();
            changed |= !gone.is_empty();
            gone.iter().for_each(|d| counter.unfollow(d));
        }
        let mut held: usize = self.places.iter().map(|p| self.descriptors(p)).sum();
        let mut unopened = 0;
        for cpu in online.iter() {
            let at = Where { cgroup: None, cpu };
            if self.places.iter().any(|place| place.at == at) {
                continue;
            }
            let columns = self.columns(&at);
            if columns.is_empty() {
                continue;
            } else if !self.budget.fits(held, columns.len()) {
                unopened += 1;
                continue;
            }
            match self.open(&at, columns) {
                Ok(mut place) => {
                    place.topology = self.topology(cpu);
                    held += place.columns.len();
                    self.places.push(place);
                    changed = true;
                }
                Err(e) if budget::out_of_descriptors(&e) => unopened += 1,
                Err(_) => {
                    again = true;
                    health.open_failed();
                }
            }
        }
        let present: HashSet<Arc<str>> = self
            .places
            .iter()
            .filter_map(|p| p.at.cgroup.clone())
            .collect();
        let mut too_deep = 0;
        for cgroup in cgroups.iter().filter(|c| !present.contains(*c)) {
            let directory = self.watch.directory(cgroup);
            if self
                .cgroups
                .as_ref()
                .is_some_and(|c| c.too_deep(&directory))
            {
                too_deep += 1;
                continue;
            }
            match self.follow_cgroup(cgroup, &mut held, health) {
                Ok(Followed::Yes) => changed = true,
                Ok(Followed::NotNow) => again = true,
                Ok(Followed::Refused) => {}
                Err(places) => unopened += places,
            }
        }
        self.said_too_deep(too_deep, health);
        if unopened != self.unopened {
            match unopened {
                0 => crate::log::info("every place is counted again", &[]),
                _ => crate::log::warn(&self.budget.reason(unopened), &[("places", &unopened)]),
            };
            self.unopened = unopened;
        }
        health.unopened(unopened);
        if changed {
            self.places.sort_by(|a, b| a.at.cmp(&b.at));
            self.index_cgroups();
        }
        if !again && unopened == 0 {
            self.settled = Some((online.clone(), cgroups));
        }
        let open = self.places.iter().filter(|p| p.departed.is_none()).count();
        health.counting(open, 0);
    }

    /// Reads the cgroups followed and no longer `wanted` (removed, or no longer matched) a
    /// last time and keeps those readings in their places, departed: their counters are let
    /// go by the caller, and the readings wait for a scrape (and `departed_for`). Past
    /// `departed_most` departed cgroups, the oldest are let go, counted in `health` where no
    /// scrape had read them.
    fn depart(&mut self, wanted: &HashSet<&str>, health: &Health) {
        let Some(counter) = &mut self.cgroups else {
            return;
        };
        let leaving = |place: &Place| {
            matches!(place.source, Source::Counter { .. })
                && place
                    .at
                    .cgroup
                    .as_ref()
                    .is_some_and(|cgroup| !wanted.contains(&**cgroup))
        };
        if self.places.iter().any(leaving) {
            // One read for every cgroup leaving at this look (a pod's containers go
            // together).
            let read = counter.read().is_ok();
            if !read {
                health.read_failed();
            }
            let (since, at) = (Instant::now(), epoch_seconds(SystemTime::now()));
            for place in self.places.iter_mut().filter(|place| leaving(place)) {
                if let Source::Counter { followed, cpu } = place.source
                    && read
                    && counter.read_into(followed, cpu, &mut place.readings, &mut place.left_out)
                {
                    place.read = true;
                }
                place.source = Source::Kept;
                place.departed = Some(Departure {
                    since,
                    at,
                    seen: None,
                });
            }
            if !self.per_cpu {
                self.sum_departed();
            }
            self.record_departed(since);
        }
        self.keep_departed_within_bound(health);
    }

    /// Keeps one place of each departed cgroup, its CPUs' readings summed (the series written
    /// of it are the sum): what a departed cgroup holds does not grow with the CPUs.
    fn sum_departed(&mut self) {
        let mut at = 0;
        while at < self.places.len() {
            let place = &self.places[at];
            let run = match (&place.departed, &place.at.cgroup) {
                (Some(_), Some(cgroup)) => self.places[at..]
                    .iter()
                    .take_while(|p| p.departed.is_some() && p.at.cgroup.as_ref() == Some(cgroup))
                    .count(),
                _ => 1,
            };
            if run > 1 {
                let summed: Vec<Place> = self.places.drain(at + 1..at + run).collect();
                let first = &mut self.places[at];
                first.read &= summed.iter().all(|p| p.read);
                first.created = summed.iter().fold(first.created, |c, p| c.min(p.created));
                for other in &summed {
                    // An event left out on one CPU is left out of the sum, as written.
                    for &index in &other.left_out {
                        if !first.left_out.contains(&index) {
                            first.left_out.push(index);
                        }
                    }
                    for (sum, one) in first.readings.iter_mut().zip(&other.readings) {
                        *sum = Reading::new(
                            sum.value.saturating_add(one.value),
                            sum.time_enabled.saturating_add(one.time_enabled),
                            sum.time_running.saturating_add(one.time_running),
                        );
                    }
                }
            }
            at += 1;
        }
    }

    /// Lets go the oldest departed cgroups past `departed_most`, counting in `health` those
    /// whose last readings no scrape had read.
    fn keep_departed_within_bound(&mut self, health: &Health) {
        let mut departed: Vec<(Instant, bool, Arc<str>)> = Vec::new();
        let mut seen_cgroups = HashSet::new();
        for place in &self.places {
            if let (Some(departure), Some(cgroup)) = (&place.departed, &place.at.cgroup)
                && seen_cgroups.insert(cgroup.clone())
            {
                departed.push((departure.since, departure.seen.is_some(), cgroup.clone()));
            }
        }
        if departed.len() <= self.departed_most {
            return;
        }
        departed.sort();
        let excess = departed.len() - self.departed_most;
        let evicted: HashSet<Arc<str>> = departed[..excess]
            .iter()
            .map(|(_, _, cgroup)| cgroup.clone())
            .collect();
        let unseen = departed[..excess].iter().filter(|d| !d.1).count();
        health.departed_evicted(unseen);
        self.places.retain(|place| {
            place.departed.is_none()
                || place
                    .at
                    .cgroup
                    .as_ref()
                    .is_none_or(|cgroup| !evicted.contains(cgroup))
        });
    }

    /// Says on standard error when the number of cgroups matched but too deep to follow
    /// changes, and keeps it in `health`.
    fn said_too_deep(&mut self, too_deep: usize, health: &Health) {
        health.too_deep(too_deep);
        if too_deep == self.too_deep {
            return;
        }
        self.too_deep = too_deep;
        let deepest = self.cgroups.as_ref().and_then(Cgroups::deepest_level);
        match too_deep {
            0 => crate::log::info("no cgroup matched lies too deep to follow now", &[]),
            _ => crate::log::warn(
                &format!(
                    "{too_deep} cgroups matched lie more than {} levels below the mount, \
                     deeper than the BPF mode follows: not followed (their tasks count in \
                     their followed ancestors; counterhal_cgroups_too_deep)",
                    deepest.unwrap_or(0)
                ),
                &[("cgroups", &too_deep)],
            ),
        };
    }

    /// The descriptors `place` holds: its set's, or in the perf-event mode of the cgroups'
    /// counter, the counters it opened for the cgroup on that CPU (none in the BPF mode).
    fn descriptors(&self, place: &Place) -> usize {
        match (&place.source, &self.cgroups) {
            (Source::Set(_), _) => place.columns.len(),
            (Source::Counter { .. }, Some(c)) => {
                let counted = place.columns.len() - place.left_out.len();
                budget::per_cgroup(c.costs_descriptors(), counted, 1)
            }
            (Source::Counter { .. }, None) | (Source::Kept, _) => 0,
        }
    }

    /// Follows `cgroup` on the cgroups' counter and adds its places, one per CPU counted:
    /// whether it did, or could not (counted in `health`, tried again at the next look), or
    /// was refused for want of room (counted in `health` as dropped, once); `Err(places)`
    /// for the places left out for descriptors.
    fn follow_cgroup(
        &mut self,
        cgroup: &Arc<str>,
        held: &mut usize,
        health: &Health,
    ) -> Result<Followed, usize> {
        let directory = self.watch.directory(cgroup);
        let Some(counter) = &mut self.cgroups else {
            return Ok(Followed::NotNow);
        };
        let (columns, cpus) = (counter.columns().to_vec(), counter.cpus().to_vec());
        let costs = counter.costs_descriptors();
        // The counters' descriptors, and the cgroup's directory while they open.
        let holds = budget::per_cgroup(costs, columns.len(), cpus.len());
        if !self.budget.fits(*held, holds + usize::from(costs)) {
            return Err(cpus.len());
        }
        // The perf-event mode counts from the open, as `perf stat -G`: a task there before
        // it ran uncounted until then. Looked at before the counters open, and again once all
        // are open, since a task that came in meanwhile may have run before its CPU's did.
        let says_late = counter.moves_settled().is_none();
        let before = says_late
            .then(|| self.system.cgroup_populated(&directory))
            .flatten();
        match counter.follow(&directory) {
            Ok(()) => {}
            Err(e) if budget::out_of_descriptors(&e) => return Err(cpus.len()),
            // Removed since the walk found it (a pod's churn): nothing failed.
            Err(_) if !directory.exists() => return Ok(Followed::NotNow),
            // No room (the BPF mode's map holds its --max-cgroups): a cgroup dropped, as one
            // matched past the bound is; followed once a place frees.
            Err(e) if e.kind() == counterhal::ErrorKind::LimitReached => {
                if self.refused_cgroups.insert(cgroup.clone()) {
                    health.cgroups_refused(1);
                }
                return Ok(Followed::Refused);
            }
            Err(_) => {
                health.open_failed();
                return Ok(Followed::NotNow);
            }
        }
        self.refused_cgroups.remove(cgroup);
        let late = before.map(|before| {
            before
                || self.system.cgroup_populated(&directory) == Some(true)
                || self.system.cgroup_ran(&directory) == Some(true)
        });
        let unheld = counter.say_left_out(cgroup, &directory, &self.events, health);
        *held += holds - budget::per_cgroup(costs, 1, unheld);
        let mut pod = self
            .kubelet
            .pod(cgroup)
            .or_else(|| crate::labels::containers::outside_pod(cgroup));
        // Named from what the directories gave at their last read; the rest by `name_pods`.
        let unnamed = match (&mut pod, &self.kubelet_logs) {
            (Some(pod), Some(logs)) => !logs.name(pod),
            _ => false,
        };
        let job = self.slurm.job(cgroup);
        let created = epoch_seconds(SystemTime::now());
        for (index, &cpu) in cpus.iter().enumerate() {
            let topology = self.topology(cpu);
            self.places.push(Place {
                at: Where {
                    cgroup: Some(cgroup.clone()),
                    cpu,
                },
                readings: vec![Reading::default(); columns.len()],
                left_out: Vec::new(),
                columns: columns.clone(),
                read: false,
                pod: pod.clone(),
                unnamed,
                job: job.clone(),
                topology,
                created,
                late,
                source: Source::Counter {
                    followed: usize::MAX,
                    cpu: index,
                },
                departed: None,
            });
        }
        Ok(Followed::Yes)
    }

    /// Points each cgroup's places at its place among the counter's followed cgroups
    /// (after a cgroup was followed or let go, which moves the others).
    fn index_cgroups(&mut self) {
        let Some(counter) = &self.cgroups else {
            return;
        };
        let at: HashMap<&std::path::Path, usize> = counter
            .followed()
            .enumerate()
            .map(|(index, directory)| (directory, index))
            .collect();
        for place in &mut self.places {
            if let (Source::Counter { followed, .. }, Some(cgroup)) =
                (&mut place.source, &place.at.cgroup)
            {
                let directory = self.watch.directory(cgroup);
                *followed = at.get(directory.as_path()).copied().unwrap_or(usize::MAX);
            }
        }
    }

    /// The events a CPU's set counts system-wide (none: a CPU outside every PMU's cpumask).
    fn columns(&self, at: &Where) -> Vec<usize> {
        (0..self.events.len())
            .filter(|&i| match &self.events[i].cpus {
                Some(cpus) => cpus.contains(at.cpu),
                None => true,
            })
            .collect()
    }

    /// The system-wide sets of the events `columns` on `at`'s CPU: each group, then the
    /// events in none.
    fn open(&self, at: &Where, columns: Vec<usize>) -> Result<Place, counterhal::Error> {
        let target = BackendTarget::Cpu(at.cpu);
        let groups = groups_among(&self.events, &columns);
        let alone: Vec<usize> = (0..columns.len())
            .filter(|at| !groups.iter().flatten().any(|member| member == at))
            .collect();
        let mut sets = Vec::new();
        let parts = groups.into_iter().map(|g| (g, true));
        for (positions, grouped) in parts.chain([(alone, false)]) {
            if positions.is_empty() {
                continue;
            }
            let events = positions
                .iter()
                .map(|&at| self.events[columns[at]].resolved.clone())
                .collect();
            let mut options = OpenOptions::default();
            options.grouped = grouped;
            let mut set = counterhal_hal::open_set(&self.backend, events, &target, &options)?;
            set.enable()?;
            sets.push((set, positions));
        }
        let sets = Sets {
            sets,
            scratch: vec![Reading::default(); columns.len()],
        };
        {
            Ok(Place {
                at: at.clone(),
                readings: vec![Reading::default(); columns.len()],
                left_out: Vec::new(),
                columns,
                read: false,
                pod: None,
                unnamed: false,
                departed: None,
                job: None,
                topology: CpuTopology::default(),
                created: epoch_seconds(SystemTime::now()),
                late: None,
                source: Source::Set(Box::new(sets)),
            })
        }
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
    ///
    /// The cgroups' counter is read once for every cgroup (in the BPF mode, a run of its
    /// program on each CPU and a lookup per cgroup); each cgroup's places take its readings.
    pub fn read_all(&mut self, health: &Health) {
        self.follow(health);
        // The removed cgroups' last counts: this scrape exports them.
        let now = Instant::now();
        for departed in self.places.iter_mut().filter_map(|p| p.departed.as_mut()) {
            departed.seen.get_or_insert(now);
        }
        for place in &mut self.places {
            if let Source::Set(set) = &mut place.source {
                place.read = match set.read(&mut place.readings) {
                    Ok(()) => true,
                    Err(_) => {
                        health.read_failed();
                        false
                    }
                };
            }
        }
        if let Some(counter) = &mut self.cgroups
            && counter.followed().next().is_some()
        {
            let read = counter.read().is_ok();
            if !read {
                health.read_failed();
            }
            for place in &mut self.places {
                if let Source::Counter { followed, cpu } = place.source {
                    place.read = read
                        && counter.read_into(
                            followed,
                            cpu,
                            &mut place.readings,
                            &mut place.left_out,
                        );
                }
            }
        }
        let live = self.places.iter().filter(|p| p.departed.is_none());
        let read = live.clone().filter(|p| p.read).count();
        health.counting(read, live.count() - read);
    }
}

#[cfg(all(test, target_os = "linux"))]
impl Place {
    /// `cgroup`'s place on `cpu`, counting `columns`, labelled as `kubelet` and `slurm` read
    /// its path, its readings set by hand: what the scrape's tests write.
    pub fn of_cgroup(
        cgroup: &Arc<str>,
        cpu: u32,
        columns: Vec<usize>,
        kubelet: &Kubelet,
        slurm: &Slurmstepd,
    ) -> Place {
        Place {
            at: Where {
                cgroup: Some(cgroup.clone()),
                cpu,
            },
            readings: vec![Reading::default(); columns.len()],
            left_out: Vec::new(),
            columns,
            read: true,
            pod: kubelet.pod(cgroup),
            unnamed: false,
            job: slurm.job(cgroup),
            topology: CpuTopology::default(),
            created: 0.0,
            late: None,
            source: Source::Counter {
                followed: usize::MAX,
                cpu: cpu as usize,
            },
            departed: None,
        }
    }

    /// This place with the event at `index` among its columns not counted here (it did not
    /// open for the cgroup on this CPU).
    pub fn leaving_out(mut self, index: usize) -> Place {
        self.left_out.push(index);
        self
    }
}

mod families;
mod record;

#[cfg(all(test, target_os = "linux"))]
mod follow_tests;

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io::Write;
    use std::process::{Command, Stdio};

    use counterhal::CpuList;
    use counterhal_conformance::fixtures::TestCgroup;
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;

    use super::*;
    use crate::per_cgroup::CgroupModeArg;

    /// A cgroups' counter opened while CPU 0 alone was online is opened again on every CPU
    /// once more are: the cgroup is then counted on CPU 1 too (a shell moved into it while
    /// it sleeps, then `dd` touching a fresh 4 MiB buffer, pinned to CPU 1: its page faults
    /// are in the cgroup's place on CPU 1).
    ///
    /// Oracle: the kernel's page-fault accounting (`dd`'s start and its buffer's fresh pages
    /// fault more than 100 times, as the other cgroup tests find with the same work), as the
    /// counter reads it in either mode.
    #[test]
    fn a_cpu_that_comes_online_is_counted_per_cgroup() {
        let online = counterhal::online_cpus(&counterhal_system::System::host());
        if !online.contains(0) || !online.contains(1) {
            skip!(Need::System, "CPUs 0 and 1 are not both online");
        }
        let Ok(root) = counterhal::cgroups::unified_root(&counterhal_system::System::host()) else {
            skip!(Need::System, "no cgroup2 mount");
        };
        let Some(cgroup) = TestCgroup::new(&root, "serve-hotplug") else {
            skip!(
                Need::System,
                "cannot make a cgroup below {}",
                root.display()
            );
        };
        let Ok(backend) = counterhal::open_default() else {
            skip!(Need::System, "no counter backend here");
        };
        let plan = crate::events::plan(
            &counterhal_system::System::host(),
            &backend,
            &["page-faults".to_string()],
        )
        .unwrap();
        let cgroups = match Cgroups::open(
            &backend,
            &plan.exported,
            &[0],
            (CgroupModeArg::Auto, 1024),
            None,
        ) {
            Ok(Some(cgroups)) => cgroups,
            Ok(None) => panic!("page-faults counts per cgroup"),
            Err(e) => skip!(Need::System, "no cgroup counting here: {e}"),
        };
        let watch = Watch::new(
            &counterhal_system::System::host(),
            &[format!("^{}$", cgroup.name)],
            None,
            8,
        )
        .unwrap();
        let budget = Budget::new(&counterhal_system::System::host(), 65_536, 4);
        let mut exporter = Exporter::new(
            counterhal_system::System::host(),
            backend,
            plan,
            watch,
            budget,
            Some(cgroups),
        );
        let health = Health::new("linux", &counterhal_system::System::host());
        let cpus_of = |exporter: &Exporter| {
            let mut cpus: Vec<u32> = exporter
                .places
                .iter()
                .filter(|p| p.at.cgroup.is_some())
                .map(|p| p.at.cpu)
                .collect();
            cpus.sort_unstable();
            cpus
        };
        exporter.follow_on(&"0".parse::<CpuList>().unwrap(), &health);
        assert_eq!(cpus_of(&exporter), [0]);
        // Every CPU online now: the counter is opened again on them.
        exporter.read_all(&health);
        assert!(cpus_of(&exporter).contains(&1), "{:?}", cpus_of(&exporter));
        assert!(exporter.cgroups.as_ref().unwrap().cpus().contains(&1));
        let mut work = Command::new("taskset")
            .args(["-c", "1", "sh", "-c"])
            .arg("read _; exec dd if=/dev/zero of=/dev/null bs=4M count=20 status=none")
            .stdin(Stdio::piped())
            .spawn()
            .expect("taskset and sh");
        // Moved while it waits in `read`, so that its first run there is a cgroup switch.
        std::thread::sleep(std::time::Duration::from_millis(200));
        std::fs::write(cgroup.path.join("cgroup.procs"), work.id().to_string()).unwrap();
        work.stdin.take().unwrap().write_all(b"go\n").unwrap();
        assert!(work.wait().unwrap().success());
        exporter.read_all(&health);
        let on_1 = exporter
            .places
            .iter()
            .find(|p| p.at.cgroup.is_some() && p.at.cpu == 1)
            .expect("the cgroup's place on CPU 1");
        assert!(on_1.read);
        assert!(
            on_1.readings[0].value > 100,
            "page faults on CPU 1: {:?}",
            on_1.readings[0]
        );
    }

    /// A cgroup removed between the walk that found it and the opening of its counters (a
    /// pod's churn) is no open error: `counterhal_open_errors_total` stays 0.
    ///
    /// Oracle: the kernel's answer for a directory that is gone, ENOENT, as the counter's
    /// `follow` reports it in either mode.
    #[test]
    fn a_cgroup_gone_before_its_counters_open_is_no_open_error() {
        let Ok(root) = counterhal::cgroups::unified_root(&counterhal_system::System::host()) else {
            skip!(Need::System, "no cgroup2 mount");
        };
        let Some(cgroup) = TestCgroup::new(&root, "serve-gone") else {
            skip!(
                Need::System,
                "cannot make a cgroup below {}",
                root.display()
            );
        };
        let Ok(backend) = counterhal::open_default() else {
            skip!(Need::System, "no counter backend here");
        };
        let plan = crate::events::plan(
            &counterhal_system::System::host(),
            &backend,
            &["page-faults".to_string()],
        )
        .unwrap();
        let cpus: Vec<u32> = counterhal::online_cpus(&counterhal_system::System::host())
            .iter()
            .collect();
        let cgroups = match Cgroups::open(
            &backend,
            &plan.exported,
            &cpus,
            (CgroupModeArg::Auto, 16),
            None,
        ) {
            Ok(Some(cgroups)) => cgroups,
            Ok(None) => panic!("page-faults counts per cgroup"),
            Err(e) => skip!(Need::System, "no cgroup counting here: {e}"),
        };
        let watch = Watch::new(
            &counterhal_system::System::host(),
            &[format!("^{}$", cgroup.name)],
            None,
            8,
        )
        .unwrap();
        let mut exporter = Exporter::new(
            counterhal_system::System::host(),
            backend,
            plan,
            watch,
            Budget::new(&counterhal_system::System::host(), 65_536, 4),
            Some(cgroups),
        );
        let health = Health::new("linux", &counterhal_system::System::host());
        let gone: Arc<str> = Arc::from(format!("/{}-gone", cgroup.name).as_str());
        assert_eq!(
            exporter.follow_cgroup(&gone, &mut 0, &health),
            Ok(Followed::NotNow)
        );
        assert_eq!(health.open_errors(), 0);
        drop(cgroup);
    }
}
