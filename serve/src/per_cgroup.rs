//! The cgroups' counts: every followed cgroup counted by one [`CgroupCounter`] (the
//! library's per-cgroup counter), in the mode `--cgroup-mode` asks for. In the BPF mode the
//! events are opened once per CPU, whatever the number of cgroups, and a BPF program run at
//! every context switch sums them per cgroup at every level of the hierarchy (perf's
//! `--bpf-counters --for-each-cgroup`); in the perf-event mode each followed cgroup has one
//! perf event per event and CPU (perf's `-G`), opened when it is followed. Auto takes BPF
//! where the kernel and this process's privileges allow it, and says why not elsewhere.
//!
//! The events counted per cgroup are those exported that count alone on every CPU: an event
//! of a PMU with a `cpumask` (uncore boxes, energy) counts no cgroup, and stays system-wide.
//! In the perf-event mode a cgroup counts what opens for it: a group that does not open for
//! it counts its events alone there, and an event that does not open alone (no counter left,
//! as a breakpoint with every debug register taken) is left out on that CPU
//! ([`Cgroups::say_left_out`]).
//!
//! [`CgroupCounter`]: counterhal_hal::CgroupCounter

use crate::text_format::{Family, Format, Kind, Label, Number};

/// `--cgroup-mode`: how the cgroups are counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CgroupModeArg {
    /// BPF where it works here (Linux 5.10, cgroup v2, CAP_BPF and CAP_PERFMON or root),
    /// else perf events, the reason said at start.
    #[default]
    Auto,
    /// Each event once per CPU, summed per cgroup by a BPF program at every context switch
    /// (no descriptor per cgroup); the exporter does not start where BPF cannot count.
    Bpf,
    /// One perf event per event, CPU and cgroup (descriptors grow with the cgroups).
    PerfEvents,
}

/// The mode the cgroups are counted in (`counterhal_cgroup_mode`) and the events left out of
/// cgroups (`counterhal_cgroup_events_left_out_total`, `left_out`); in the BPF mode, the
/// cgroups matched too deep for it (`counterhal_cgroups_too_deep`), whether it settles a
/// task's move between cgroups (`counterhal_cgroup_moves_settled`) and the context switches
/// its program missed (`counterhal_cgroup_switches_missed_total`), and the times the kernel
/// skipped each of its programs (`counterhal_bpf_recursion_misses_total`), those counters
/// `created` when the exporter started.
pub fn write(
    out: &mut Vec<u8>,
    format: Format,
    cgroups: &Cgroups,
    (too_deep, left_out): (u64, u64),
    created: f64,
) {
    let mode = Family::new(
        "counterhal_cgroup_mode",
        Kind::Gauge,
        "1 for the mode the cgroups are counted in (bpf, or perf-events with the reason \
         where bpf was not taken).",
    );
    mode.header(out, format);
    let labels = [
        ("mode", Label::Text(cgroups.mode_name())),
        ("reason", Label::Text(cgroups.why_not_bpf().unwrap_or(""))),
    ];
    mode.sample(out, &labels, Number::Int(1));
    let left_out_family = Family::new(
        "counterhal_cgroup_events_left_out",
        Kind::Counter,
        "Events left out of a cgroup's counters on some of its CPUs, which did not open for \
         it there (each once a cgroup followed; the log says why): not exported for it.",
    );
    left_out_family.single(out, format, Number::Int(left_out), created);
    let Some(settled) = cgroups.moves_settled() else {
        return;
    };
    let too_deep_family = Family::new(
        "counterhal_cgroups_too_deep",
        Kind::Gauge,
        "Cgroups matched but not followed, deeper than the BPF mode follows (their tasks \
         count in their followed ancestors).",
    );
    too_deep_family.header(out, format);
    too_deep_family.sample(out, &[], Number::Int(too_deep));
    let moves = Family::new(
        "counterhal_cgroup_moves_settled",
        Kind::Gauge,
        "1 where the BPF mode counts a task that moves between cgroups while it runs in \
         each for its time there; 0 where its new cgroup is given its CPU's counts since \
         the last context switch (the reason at start).",
    );
    moves.header(out, format);
    moves.sample(out, &[], Number::Int(u64::from(settled)));
    let Some(missed) = cgroups.switches_missed() else {
        return;
    };
    let switches = Family::new(
        "counterhal_cgroup_switches_missed",
        Kind::Counter,
        "Context switches the BPF mode's program did not see (the kernel skipped its run at \
         sched_switch, its recursion_misses): the counts of the time each spans went to the \
         next task's cgroups.",
    );
    switches.single(out, format, Number::Int(missed), created);
    let programs = cgroups.programs_skipped();
    if programs.is_empty() {
        return;
    }
    let skipped = Family::new(
        "counterhal_bpf_recursion_misses",
        Kind::Counter,
        "Times the kernel skipped this BPF-mode program because another BPF program was \
         running on that CPU (its recursion_misses, bpftool prog show id N): each a context \
         switch (ch_cgroup_swtch, also counterhal_cgroup_switches_missed_total), cgroup \
         removal (ch_cgroup_rmdir) or move (ch_cgroup_move) the counts miss. Rising: find \
         the other BPF programs on the node (bpftool prog show).",
    );
    skipped.header(out, format);
    for program in &programs {
        let id = program.id.to_string();
        let labels = [
            ("program", Label::Text(program.name)),
            ("id", Label::Text(&id)),
        ];
        skipped.counted(out, format, &labels, Number::Int(program.skipped), created);
    }
}

#[cfg(target_os = "linux")]
pub use linux::Cgroups;

#[cfg(not(target_os = "linux"))]
pub use elsewhere::Cgroups;

#[cfg(target_os = "linux")]
mod linux {
    use std::path::{Path, PathBuf};

    use counterhal::{Chosen, CpuList, Error, Reading};
    use counterhal_hal::{
        BoxedCgroupCounter, CgroupCounterOptions, CgroupMode, CgroupModeChoice, EventLeftOut,
    };

    use super::CgroupModeArg;
    use crate::events::Exported;
    use crate::health::Health;

    /// The cgroups' counter and the exported events it counts.
    pub struct Cgroups {
        counter: BoxedCgroupCounter,
        /// The exported events counted per cgroup (indices into the exporter's events), in
        /// the counter's order.
        columns: Vec<usize>,
        /// The cgroup v2 mount the BPF mode counts in.
        unified_root: Option<PathBuf>,
        /// The mode asked for and the BPF map's room, to open it again on other CPUs.
        choice: CgroupModeArg,
        capacity: u32,
        /// The parents whose new children the counter follows itself.
        adopting: std::collections::HashSet<PathBuf>,
        /// Why the perf-event mode was taken over BPF where Auto was asked for, when the
        /// exporter chose it (the perf_event controller on a cgroup v1 hierarchy).
        not_bpf: Option<String>,
    }

    impl Cgroups {
        /// Opens the counter of `events` (those that count per cgroup, their groups as
        /// groups) on `cpus`, in the mode `choice` asks for; `None` where no event counts per
        /// cgroup. The BPF mode's map holds room for `capacity` followed cgroups. `not_bpf`:
        /// why the perf-event mode is taken over BPF where Auto was asked for (`choice` is
        /// then [`CgroupModeArg::PerfEvents`]).
        ///
        /// # Errors
        /// Under [`CgroupModeArg::Bpf`], why BPF cannot count here (privileges, kernel,
        /// no cgroup v2 mount), with what would allow it; as
        /// [`Chosen::cgroup_counter_with`] otherwise.
        pub fn open(
            backend: &Chosen,
            events: &[Exported],
            cpus: &[u32],
            (choice, capacity): (CgroupModeArg, u32),
            not_bpf: Option<String>,
        ) -> Result<Option<Cgroups>, Error> {
            let columns: Vec<usize> = (0..events.len())
                .filter(|&i| events[i].cpus.is_none() && events[i].resolved.terms.len() == 1)
                .collect();
            if columns.is_empty() {
                return Ok(None);
            }
            let names: Vec<&str> = columns.iter().map(|&i| events[i].name.as_str()).collect();
            let mode = match choice {
                CgroupModeArg::Auto => CgroupModeChoice::Auto,
                CgroupModeArg::Bpf => CgroupModeChoice::Bpf,
                CgroupModeArg::PerfEvents => CgroupModeChoice::PerfEvents,
            };
            let unified_root = counterhal::cgroups::unified_root(backend.context().system()).ok();
            let mut options = CgroupCounterOptions::new(mode, unified_root.clone());
            options.capacity = capacity;
            options.groups = crate::events::groups_among(events, &columns);
            let counter = backend
                .cgroup_counter_with(&names, cpus, options)
                .map_err(|e| match choice {
                    CgroupModeArg::Bpf => e.context("--cgroup-mode bpf"),
                    _ => e,
                })?;
            Ok(Some(Cgroups {
                counter,
                columns,
                unified_root,
                choice,
                capacity,
                adopting: std::collections::HashSet::new(),
                not_bpf,
            }))
        }

        /// The same counter opened again on `cpus` (the CPUs online changed), counting from
        /// zero.
        ///
        /// # Errors
        /// As [`Cgroups::open`].
        pub fn reopen(
            &self,
            backend: &Chosen,
            events: &[Exported],
            cpus: &[u32],
        ) -> Result<Option<Cgroups>, Error> {
            let mode = (self.choice, self.capacity);
            Cgroups::open(backend, events, cpus, mode, self.not_bpf.clone())
        }

        /// The exported events counted per cgroup (indices into the exporter's events), in
        /// the order of each reading.
        pub fn columns(&self) -> &[usize] {
            &self.columns
        }

        /// The mode's short name: `bpf` or `perf-events`.
        pub fn mode_name(&self) -> &'static str {
            self.counter.mode().name()
        }

        /// The mode, what it opens, and where BPF was not taken, why; in the BPF mode, where
        /// a task moved between cgroups while it runs is counted wrong, why.
        pub fn mode_said(&self) -> String {
            let mode = match &self.not_bpf {
                Some(why) => format!("{} (not bpf: {why})", self.counter.mode()),
                None => self.counter.mode().to_string(),
            };
            match self.counter.moves_unsettled() {
                Some(why) => format!(
                    "{mode}; a task that moves itself between cgroups while it runs (cgexec, \
                     a script writing cgroup.procs) is counted in its new cgroup from its \
                     CPU's last context switch, not from the move \
                     (counterhal_cgroup_moves_settled 0): {why}"
                ),
                None => mode,
            }
        }

        /// In the BPF mode, whether a task moved between cgroups while it runs is counted in
        /// each for its time there (`None` in the perf-event mode, which counts moves right).
        pub fn moves_settled(&self) -> Option<bool> {
            match self.counter.mode() {
                CgroupMode::Bpf => Some(self.counter.moves_unsettled().is_none()),
                _ => None,
            }
        }

        /// In the BPF mode, the context switches its program missed since start (the kernel
        /// skipped it: their time went to the next task's cgroups); `None` in the perf-event
        /// mode.
        pub fn switches_missed(&self) -> Option<u64> {
            self.counter.switches_missed()
        }

        /// In the BPF mode, the times the kernel skipped each of its programs (another BPF
        /// program running on that CPU); empty in the perf-event mode.
        pub fn programs_skipped(&self) -> Vec<counterhal_hal::ProgramSkips> {
            self.counter.programs_skipped()
        }

        /// The deepest level below the mount this mode follows (`None`: any).
        pub fn deepest_level(&self) -> Option<usize> {
            self.counter.deepest_level()
        }

        /// Whether the cgroup at `directory` lies deeper than this mode follows (the BPF
        /// mode's
        /// [`CgroupCounter::deepest_level`](counterhal_hal::CgroupCounter::deepest_level);
        /// its tasks count in its followed ancestors).
        pub fn too_deep(&self, directory: &Path) -> bool {
            let (Some(deepest), Some(root)) = (self.deepest_level(), self.root()) else {
                return false;
            };
            directory
                .strip_prefix(root)
                .is_ok_and(|below| below.components().count() > deepest)
        }

        /// Why BPF was not taken, where Auto fell back to perf events.
        pub fn why_not_bpf(&self) -> Option<&str> {
            match self.counter.mode() {
                CgroupMode::PerfEvents {
                    why_not_bpf: Some(why),
                } => Some(why),
                CgroupMode::PerfEvents { why_not_bpf: None } => self.not_bpf.as_deref(),
                _ => None,
            }
        }

        /// The cgroup mount the followed cgroups must lie under: the cgroup v2 mount in
        /// the BPF mode; `None` where any will do (the perf-event mode).
        pub fn root(&self) -> Option<&Path> {
            match self.counter.mode() {
                CgroupMode::Bpf => self.unified_root.as_deref(),
                _ => None,
            }
        }

        /// Whether a followed cgroup holds descriptors (the perf-event mode's counters).
        pub fn costs_descriptors(&self) -> bool {
            !matches!(self.counter.mode(), CgroupMode::Bpf)
        }

        /// The CPUs counted, the order of each cgroup's per-CPU readings.
        pub fn cpus(&self) -> &[u32] {
            self.counter.cpus()
        }

        /// Starts counting the cgroup at `directory`.
        ///
        /// # Errors
        /// As [`CgroupCounter::follow`](counterhal_hal::CgroupCounter::follow): in the
        /// perf-event mode, `EMFILE` or `ENFILE` where its counters find no descriptor.
        pub fn follow(&mut self, directory: &Path) -> Result<(), Error> {
            self.counter.follow(directory)
        }

        /// Stops counting the cgroup at `directory`.
        pub fn unfollow(&mut self, directory: &Path) {
            self.counter.unfollow(directory);
        }

        /// Has the counter count each new child of `parents` from its first context switch,
        /// where it can (the BPF mode, a parent only root makes children in), and no other
        /// parent's (each marked with the levels below it that could match: its adopted
        /// children adopt their own, one level fewer each);
        /// lets go the children of theirs `passed_over` (matching no pattern) it followed so.
        pub fn adopt(&mut self, parents: &[(PathBuf, u8)], passed_over: &[PathBuf]) {
            let wanted: std::collections::HashSet<&Path> =
                parents.iter().map(|(p, _)| p.as_path()).collect();
            let left: Vec<PathBuf> = self
                .adopting
                .iter()
                .filter(|p| !wanted.contains(p.as_path()))
                .cloned()
                .collect();
            for parent in left {
                self.counter.leave_children(&parent);
                self.adopting.remove(&parent);
            }
            for (parent, levels) in parents {
                if !self.adopting.contains(parent)
                    && self
                        .counter
                        .adopt_children(parent, *levels)
                        .unwrap_or(false)
                {
                    self.adopting.insert(parent.clone());
                }
            }
            for child in passed_over {
                self.counter.refuse(child);
            }
        }

        /// After a walk and the follows of what it found: lets go what the counter adopted
        /// that neither this walk nor the one before saw (gone meanwhile).
        pub fn forget_unseen(&mut self) {
            self.counter.forget_unseen();
        }

        /// The directories followed, in the order of [`Cgroups::read_into`]'s index.
        pub fn followed(&self) -> impl Iterator<Item = &Path> {
            self.counter.followed()
        }

        /// Reads every followed cgroup.
        ///
        /// # Errors
        /// As [`CgroupCounter::read`](counterhal_hal::CgroupCounter::read).
        pub fn read(&mut self) -> Result<(), Error> {
            self.counter.read()
        }

        /// Copies the readings of the `index`th followed cgroup on the `cpu`th CPU counted,
        /// at the last read, into `readings`, and the positions of the events not counted
        /// there into `left_out`: `false` (nothing copied) for an index out of range or
        /// readings of another length.
        pub fn read_into(
            &self,
            index: usize,
            cpu: usize,
            readings: &mut [Reading],
            left_out: &mut Vec<usize>,
        ) -> bool {
            let Some(counts) = self.counter.all_counts().get(index) else {
                return false;
            };
            match counts.per_cpu.get(cpu) {
                Some(row) if row.len() == readings.len() => readings.copy_from_slice(row),
                _ => return false,
            }
            left_out.clear();
            let here = counts.left_out.iter().filter(|l| l.cpus.contains(&cpu));
            left_out.extend(here.map(|l| l.event));
            true
        }

        /// Says each event (of `events`, the exporter's) left out of the cgroup `cgroup` at
        /// `directory` on some of its CPUs, which did not open for it there, on standard
        /// error with why and in `health`: once, as it is followed. The number of its
        /// events x CPUs left out (descriptors it does not hold).
        pub fn say_left_out(
            &self,
            cgroup: &str,
            directory: &Path,
            events: &[Exported],
            health: &Health,
        ) -> usize {
            let left_out: &[EventLeftOut] = self
                .counter
                .counts(directory)
                .map_or(&[], |counts| counts.left_out.as_slice());
            health.events_left_out(left_out.len());
            for left in left_out {
                let Some(&column) = self.columns.get(left.event) else {
                    continue;
                };
                let refused = crate::events::refused(&events[column].name, &left.error);
                let cpus = self.cpus();
                let cpus =
                    CpuList::from_cpus(left.cpus.iter().filter_map(|&i| cpus.get(i).copied()));
                let mut fields: Vec<(&str, &dyn std::fmt::Display)> = vec![
                    ("cgroup", &cgroup),
                    ("event", &refused.name),
                    ("cpus", &cpus),
                    ("kind", &refused.kind),
                    ("reason", &refused.message),
                ];
                let hint = left.error.hint();
                if let Some(hint) = &hint {
                    fields.push(("hint", hint));
                }
                crate::log::warn("not counted in this cgroup on these CPUs", &fields);
            }
            left_out.iter().map(|left| left.cpus.len()).sum()
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod elsewhere {
    use std::path::Path;

    use counterhal::{Chosen, Error, Reading};

    use super::CgroupModeArg;
    use crate::events::Exported;
    use crate::health::Health;

    /// No cgroups outside Linux: a type with no value.
    pub enum Cgroups {}

    impl Cgroups {
        /// Nothing to count: there are no cgroups here.
        ///
        /// # Errors
        /// None.
        pub fn open(
            _: &Chosen,
            _: &[Exported],
            _: &[u32],
            _: (CgroupModeArg, u32),
            _: Option<String>,
        ) -> Result<Option<Cgroups>, Error> {
            Ok(None)
        }
        /// Never called.
        ///
        /// # Errors
        /// None.
        pub fn reopen(
            &self,
            _: &Chosen,
            _: &[Exported],
            _: &[u32],
        ) -> Result<Option<Cgroups>, Error> {
            match *self {}
        }
        /// Never called.
        pub fn mode_name(&self) -> &'static str {
            match *self {}
        }
        /// Never called.
        pub fn mode_said(&self) -> String {
            match *self {}
        }
        /// Never called.
        pub fn why_not_bpf(&self) -> Option<&str> {
            match *self {}
        }
        /// Never called.
        pub fn root(&self) -> Option<&Path> {
            match *self {}
        }
        /// Never called.
        pub fn costs_descriptors(&self) -> bool {
            match *self {}
        }
        /// Never called.
        pub fn cpus(&self) -> &[u32] {
            match *self {}
        }
        /// Never called.
        ///
        /// # Errors
        /// None.
        pub fn follow(&mut self, _: &Path) -> Result<(), Error> {
            match *self {}
        }
        /// Never called.
        pub fn unfollow(&mut self, _: &Path) {
            match *self {}
        }
        /// Never called.
        pub fn adopt(&mut self, _: &[(std::path::PathBuf, u8)], _: &[std::path::PathBuf]) {
            match *self {}
        }
        /// Never called.
        pub fn forget_unseen(&mut self) {
            match *self {}
        }
        /// Never called.
        pub fn followed(&self) -> std::iter::Empty<&Path> {
            match *self {}
        }
        /// Never called.
        ///
        /// # Errors
        /// None.
        pub fn read(&mut self) -> Result<(), Error> {
            match *self {}
        }
        /// Never called.
        pub fn read_into(&self, _: usize, _: usize, _: &mut [Reading], _: &mut Vec<usize>) -> bool {
            match *self {}
        }
        /// Never called.
        pub fn say_left_out(&self, _: &str, _: &Path, _: &[Exported], _: &Health) -> usize {
            match *self {}
        }
        /// Never called.
        pub fn moves_settled(&self) -> Option<bool> {
            match *self {}
        }
        /// Never called.
        pub fn switches_missed(&self) -> Option<u64> {
            match *self {}
        }
        /// Never called.
        pub fn programs_skipped(&self) -> Vec<counterhal_hal::ProgramSkips> {
            match *self {}
        }
        /// Never called.
        pub fn deepest_level(&self) -> Option<usize> {
            match *self {}
        }
        /// Never called.
        pub fn too_deep(&self, _: &Path) -> bool {
            match *self {}
        }
        /// Never called.
        pub fn columns(&self) -> &[usize] {
            match *self {}
        }
    }
}
