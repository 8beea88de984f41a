//! A C set (`counterhal_set_t`): events added one at a time on one target, started,
//! read, stopped and reset as PAPI's event sets are.
//!
//! The set opens its events the one way the Rust face opens them
//! ([`Chosen::open_named`](facade::Chosen::open_named)): its domain
//! ([`COUNTERHAL_OPTION_DOMAIN`](option::DOMAIN)) is given to the events without one of their
//! own, and where the OS refuses counting the kernel and no domain was asked for, those events
//! count user space only (under the names given; their domain says so) with the face's note
//! ([`counterhal_hal::user_space_note`]'s wording), which `counterhal_set_note` gives.

use std::cell::UnsafeCell;
use std::ffi::CString;
use std::sync::Arc;

use counterhal_hal::{CpuList, Reading, ResolvedEvent};
use facade::advanced::{CountedCommand, Follow, SharedReadError, SharedReads, trial_for_add};
use facade::{AnyGroup, Domain, EventSet, Group, OpenOptions, Target as Attach};

use crate::{CResult, Failure, Handle, Inner, c_string, code};

mod constants;
mod options;
mod places;

pub use constants::{domain, option};
pub use places::place;

/// Where a set counts, as C names it.
pub mod target {
    /// The thread that starts the set.
    pub const THIS_THREAD: i32 = 0;
    /// One thread, by id.
    pub const THREAD: i32 = 1;
    /// A process with every thread it has and creates.
    pub const PROCESS: i32 = 2;
    /// Every online CPU.
    pub const ALL_CPUS: i32 = 3;
    /// The CPUs of a list (`0,2-3`).
    pub const CPUS: i32 = 4;
}

/// How a counted command's counters follow it (`counterhal_set_run`).
pub mod follow {
    /// The command and every process and thread it creates (`perf stat -- cmd`).
    pub const CHILDREN: i32 = 0;
    /// The command's own process alone (`perf stat -i -- cmd`).
    pub const COMMAND_ONLY: i32 = 1;
}

/// What `counterhal_set_run` gives back: one result per event, and the command's wait
/// status as `waitpid` gives it.
pub(crate) struct Run {
    pub(crate) readings: Vec<CResult<Reading>>,
    pub(crate) status: i32,
}

/// A set's state. The open counters are shared with the set's published reads
/// ([`Set::reads`]), withdrawn before they change ([`counters_mut`]).
enum State {
    /// Never started, or changed since: nothing open.
    Idle,
    /// Counting.
    Running(Arc<EventSet<AnyGroup>>),
    /// Stopped: the counters are open and hold their last values.
    Stopped(Arc<EventSet<AnyGroup>>),
}

/// What `counterhal_set_t` points at: the set, which the calls change one at a time through
/// its cell, and beside it what `counterhal_set_read` reads through a shared reference, from
/// a signal handler that interrupted another call on the set too: the published counters
/// and the fork count the set was made under.
pub struct SetCell {
    /// The set's published reads (the same as its [`Set::reads`]).
    pub(crate) reads: Arc<SharedReads>,
    /// The set's [`Set::generation`].
    pub(crate) generation: u64,
    /// The set.
    pub(crate) set: UnsafeCell<Set>,
}

impl SetCell {
    /// `set` in its cell.
    pub(crate) fn new(set: Set) -> SetCell {
        SetCell {
            reads: Arc::clone(&set.reads),
            generation: set.generation,
            set: UnsafeCell::new(set),
        }
    }
}

/// What a set and the C calls that change it share with its reads through a shared reference.
pub struct Set {
    /// The counters, published once started, for reads that take no lock and allocate
    /// nothing (a signal handler's `counterhal_set_read`).
    pub(crate) reads: Arc<SharedReads>,
    pub(crate) inner: Arc<Inner>,
    /// The process it was made in, as its handle's count of forks.
    pub(crate) generation: u64,
    attach: Attach,
    /// How the events are opened (grouped, pinned, exclusive, their domain, inherit), as
    /// `counterhal_set_option` sets them; a set that inherits is opened ungrouped (see
    /// [`Set::open_options`]).
    options: OpenOptions,
    /// The names as the caller gave them, resolved again at each open.
    requested: Vec<String>,
    /// Each event as its last open counted it: its domain applied, and its user-space-only
    /// form where the OS refused the kernel.
    counted: Vec<ResolvedEvent>,
    /// The names as given, for C (`counterhal_set_event_name`).
    pub(crate) names: Vec<CString>,
    /// The units of the counts, for C (`counterhal_set_event_unit`): empty for a plain count.
    units: Vec<CString>,
    /// What the last start's open did that the caller should know (`counterhal_set_note`).
    pub(crate) note: Option<CString>,
    state: State,
}

impl Set {
    /// An empty set counting on `kind` (a [`target`] constant) with `id` or `cpus`.
    pub(crate) fn new(handle: &Handle, kind: i32, id: u32, cpus: Option<&str>) -> CResult<Set> {
        Ok(Set::on(handle, attach(handle, kind, id, cpus)?))
    }

    /// An empty set counting what runs in control group `cgroup` (a path below the cgroup
    /// mount, as `perf stat -G` takes it, found by [`facade::cgroups::find`]) on the CPUs of
    /// `cpus` (every online CPU where `None`).
    pub(crate) fn for_cgroup(handle: &Handle, cgroup: &str, cpus: Option<&str>) -> CResult<Set> {
        let system = handle.inner.chosen.context().system();
        let path = facade::cgroups::find(system, cgroup)?;
        let cpus = match cpus {
            Some(text) => Some(CpuList::parse_within(text, &facade::online_cpus(system))?),
            None => None,
        };
        Ok(Set::on(handle, Attach::cgroup(path, cpus)))
    }

    /// An empty set counting on `attach`.
    fn on(handle: &Handle, attach: Attach) -> Set {
        Set {
            reads: Arc::new(SharedReads::new()),
            inner: handle.inner.clone(),
            generation: handle.generation,
            attach,
            options: OpenOptions::default(),
            requested: Vec::new(),
            counted: Vec::new(),
            names: Vec::new(),
            units: Vec::new(),
            note: None,
            state: State::Idle,
        }
    }

    /// How many events the set holds.
    pub(crate) fn len(&self) -> usize {
        self.requested.len()
    }

    /// `options` as the set opens with them: a set whose thread's counters follow what it
    /// creates is opened ungrouped, each event on its own (a group does not survive the
    /// kernel's inheritance: see `MultiSet::open`).
    fn open_options(options: &OpenOptions) -> OpenOptions {
        let mut options = *options;
        options.grouped &= !options.inherit;
        options
    }

    /// Opens the events `names` on the set's target with `options`, as the face opens them
    /// (the domain applied, the user-space fallback made where the kernel is refused).
    fn open(&self, names: &[&str], options: &OpenOptions) -> CResult<EventSet<AnyGroup>> {
        let options = Self::open_options(options);
        Ok(self
            .inner
            .chosen
            .open_named(names, &self.attach, &options)?)
    }

    /// Opens every event of the set with `options`.
    fn open_all(&self, options: &OpenOptions) -> CResult<EventSet<AnyGroup>> {
        let names: Vec<&str> = self.requested.iter().map(String::as_str).collect();
        self.open(&names, options)
    }

    /// Takes each event's counted form from `opened` (every event of the set, in order): its
    /// domain (user space only where the kernel is now refused, or no longer) and its unit.
    fn counted_as(&mut self, opened: &EventSet<AnyGroup>) {
        for ((counted, unit), event) in self
            .counted
            .iter_mut()
            .zip(self.units.iter_mut())
            .zip(opened.events())
        {
            if counted.unit != event.unit {
                *unit = unit_string(event);
            }
            *counted = event.clone();
        }
    }

    /// The privilege levels event `index` counts as its last open counted it (a
    /// [`domain`] mask: every level its PMU counts for an event without a modifier, user
    /// space alone where the OS refused the kernel); `None` for an index out of range.
    pub(crate) fn counted_domain(&self, index: usize) -> Option<i32> {
        let levels = self
            .counted
            .get(index)?
            .domain()
            .intersection(Domain::LEVELS);
        Some(i32::from(levels.bits()))
    }

    /// The unit of event `index`'s count and what one count is in it (`("", 1.0)` for a plain
    /// count); `None` for an index out of range.
    pub(crate) fn unit(&self, index: usize) -> Option<(&CString, f64)> {
        let unit = self.units.get(index)?;
        let scale = self
            .counted
            .get(index)?
            .unit
            .as_ref()
            .map_or(1.0, |u| u.scale);
        Some((unit, scale))
    }

    /// Removes the event at `index`; refused while running. The indices after it move down.
    pub(crate) fn remove(&mut self, index: usize) -> CResult<()> {
        if matches!(self.state, State::Running(_)) {
            return Err(Failure::new(
                code::STATE,
                "the set is running: stop it before removing events",
            ));
        }
        if index >= self.len() {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "no event at index {index}: the set has {} (0 to {})",
                    self.len(),
                    self.len().saturating_sub(1)
                ),
            ));
        }
        self.requested.remove(index);
        self.counted.remove(index);
        self.names.remove(index);
        self.units.remove(index);
        self.changed();
        Ok(())
    }

    /// The set was changed: nothing stays open, and the last start's note no longer holds.
    /// (Where a read of the set that a signal handler making this call interrupted holds its
    /// counters, they stay published until the set is started again.)
    fn changed(&mut self) {
        self.reads.withdraw();
        self.state = State::Idle;
        self.note = None;
    }

    /// Adds `name` if it opens beside the events already in the set; its index. Only the new
    /// event is tried, with the events it competes with for counters where they must fit
    /// together ([`trial_for_add`]), so N adds open O(N) counters, not the whole set at each
    /// add. The trial opens as the face opens: where the kernel is refused, an event without
    /// a modifier is added as it counts there, in user space only.
    pub(crate) fn add(&mut self, name: &str) -> CResult<i32> {
        if matches!(self.state, State::Running(_)) {
            return Err(Failure::new(
                code::STATE,
                "the set is running: stop it before adding events",
            ));
        }
        if self.requested.iter().any(|r| r == name) {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!("`{name}` is in the set already"),
            ));
        }
        if name.trim_start().starts_with('{') {
            return Err(Failure::new(
                code::INVALID_EVENT,
                format!(
                    "`{name}` is perf's group syntax: add each event by itself (a set is one \
                     group already; COUNTERHAL_OPTION_GROUPED says whether it is)"
                ),
            ));
        }
        let event = self.inner.chosen.resolve(name)?;
        let options = Self::open_options(&self.options);
        let trial = trial_for_add(
            self.inner.chosen.capabilities(),
            &options,
            &self.counted,
            &event,
        );
        if let Some(limit) = past_group_limit(&self.inner.chosen, &options, trial.len()) {
            return Err(refused_past_limit(
                &self.inner.chosen,
                trial,
                &options,
                limit,
            ));
        }
        // The trial's events by the names they were added under; the new one is last.
        let mut names: Vec<&str> = trial[..trial.len() - 1]
            .iter()
            .filter_map(|e| {
                let at = self.counted.iter().position(|c| c == e)?;
                Some(self.requested[at].as_str())
            })
            .collect();
        names.push(name);
        let opened = self.open(&names, &self.options)?;
        let counted = opened
            .events()
            .last()
            .cloned()
            .ok_or_else(|| Failure::new(code::INTERNAL, "the trial opened no event"))?;
        self.requested.push(name.to_owned());
        self.names.push(c_string(name));
        self.units.push(unit_string(&counted));
        self.counted.push(counted);
        self.changed();
        i32::try_from(self.len() - 1)
            .map_err(|_| Failure::new(code::LIMIT_REACHED, "too many events in one set"))
    }

    /// Starts counting from zero.
    pub(crate) fn start(&mut self) -> CResult<()> {
        if self.requested.is_empty() {
            return Err(Failure::new(
                code::STATE,
                "the set is empty: add events before starting it",
            ));
        }
        let (mut counters, stopped) = match std::mem::replace(&mut self.state, State::Idle) {
            State::Running(counters) => {
                self.state = State::Running(counters);
                return Err(Failure::new(code::STATE, "the set is running already"));
            }
            State::Stopped(counters) => (counters, true),
            State::Idle => {
                let opened = self.open_all(&self.options)?;
                self.counted_as(&opened);
                self.note = opened.note().map(c_string);
                (Arc::new(opened), false)
            }
        };
        // A stopped set counts from zero again; one just opened does already.
        counters_mut(&self.reads, &mut counters).and_then(|c| {
            if stopped {
                c.reset()?;
            }
            Ok(c.enable()?)
        })?;
        // Read from now on without a lock (a signal handler's counterhal_set_read too).
        self.reads.publish(&counters);
        self.state = State::Running(counters);
        Ok(())
    }

    /// Checks that `out` holds one reading per event.
    fn room(&self, out: &[Reading]) -> CResult<usize> {
        let n = self.len();
        match out.len() >= n {
            true => Ok(n),
            false => Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "the buffer holds {} readings, the set has {n} events",
                    out.len()
                ),
            )),
        }
    }

    /// Reads into `out` (one reading per event): while running, the counts so far; once
    /// stopped, the counts at the stop. A published set is read as a signal handler reads it
    /// ([`read_published`]); any other (counters over several places) through its counters.
    #[inline]
    pub(crate) fn read(&mut self, out: &mut [Reading]) -> CResult<()> {
        let n = self.room(out)?;
        match read_published(&self.reads, &mut out[..n]) {
            Ok(()) => return Ok(()),
            Err(SharedReadError::NotPublished | SharedReadError::Busy) => {}
            Err(error) => return Err(read_failure(&error).into()),
        }
        match &mut self.state {
            State::Running(counters) | State::Stopped(counters) => {
                let read =
                    counters_mut(&self.reads, counters).and_then(|c| Ok(c.read(&mut out[..n])?));
                self.reads.publish(counters);
                read
            }
            State::Idle => Err(Failure::new(
                code::STATE,
                "the set was not started: call counterhal_set_start first",
            )),
        }
    }

    /// Stops counting and reads the final counts into `out`.
    pub(crate) fn stop(&mut self, out: &mut [Reading]) -> CResult<()> {
        self.room(out)?;
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Running(mut counters) => {
                let disabled =
                    counters_mut(&self.reads, &mut counters).and_then(|c| Ok(c.disable()?));
                self.reads.publish(&counters);
                self.state = State::Stopped(counters);
                disabled?;
                self.read(out)
            }
            other => {
                self.state = other;
                Err(Failure::new(code::STATE, "the set is not running"))
            }
        }
    }

    /// Zeroes the counts and their times (running or stopped).
    pub(crate) fn reset(&mut self) -> CResult<()> {
        match &mut self.state {
            State::Running(counters) | State::Stopped(counters) => {
                let reset = counters_mut(&self.reads, counters).and_then(|c| Ok(c.reset()?));
                self.reads.publish(counters);
                reset
            }
            State::Idle => Err(Failure::new(
                code::STATE,
                "the set was not started: nothing to reset",
            )),
        }
    }

    /// Runs `argv` with the set's events counted from its `exec` to its end, following it
    /// as `follow` (a [`follow`] constant) says, with the set's options (grouped, pinned,
    /// exclusive) and each event as the set counts it (its domain applied; user space only
    /// where the kernel is refused). The set's own target is not used, and its state does not
    /// change.
    pub(crate) fn run(&self, argv: &[String], follow: i32) -> CResult<Run> {
        if matches!(self.state, State::Running(_)) {
            return Err(Failure::new(
                code::STATE,
                "the set is running: stop it before running a command with its events",
            ));
        }
        let follow = match follow {
            follow::CHILDREN => Follow::Children,
            follow::COMMAND_ONLY => Follow::CommandOnly,
            other => {
                return Err(Failure::new(
                    code::INVALID_ARGUMENT,
                    format!(
                        "follow {other} is none of COUNTERHAL_FOLLOW_CHILDREN (0) and \
                         COUNTERHAL_FOLLOW_COMMAND_ONLY (1)"
                    ),
                ));
            }
        };
        let Some((program, args)) = argv.split_first() else {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                "argv names no command: argv[0] is the program, and a NULL ends the list",
            ));
        };
        let mut command = std::process::Command::new(program);
        command.args(args);
        let groups: Vec<Vec<usize>> = match self.options.grouped && !self.counted.is_empty() {
            true => vec![(0..self.counted.len()).collect()],
            false => Vec::new(),
        };
        let backend = self.inner.chosen.backend();
        let named = |error: counterhal_hal::Error| {
            let failure = Failure::from(error);
            Failure::new(failure.code, format!("`{program}`: {}", failure.message))
        };
        let mut counted = CountedCommand::launch(
            backend,
            &self.counted,
            command,
            &self.options,
            &groups,
            follow,
        )
        .map_err(named)?;
        counted.start().map_err(named)?;
        let count = counted.wait().map_err(named)?;
        Ok(Run {
            readings: count
                .readings
                .into_iter()
                .map(|r| r.map_err(Failure::from))
                .collect(),
            status: std::os::unix::process::ExitStatusExt::into_raw(count.exit.status),
        })
    }
}

/// Where `kind` (a [`target`] constant) with `id` or `cpus` counts, as `counterhal_set_create_for`
/// and `counterhal_metrics_open` take it, on `handle`'s system.
pub(crate) fn attach(handle: &Handle, kind: i32, id: u32, cpus: Option<&str>) -> CResult<Attach> {
    let needs_id = |what: &str| {
        Failure::new(
            code::INVALID_ARGUMENT,
            format!(
                "{what} needs an id (0 names none; COUNTERHAL_TARGET_THIS_THREAD counts the caller)"
            ),
        )
    };
    let attach = match kind {
        target::THIS_THREAD => Attach::ThisThread,
        target::THREAD if id == 0 => return Err(needs_id("COUNTERHAL_TARGET_THREAD")),
        target::PROCESS if id == 0 => return Err(needs_id("COUNTERHAL_TARGET_PROCESS")),
        target::THREAD => Attach::Thread(id),
        target::PROCESS => Attach::Process(id),
        target::ALL_CPUS => Attach::AllCpus,
        target::CPUS => {
            let text = cpus.ok_or_else(|| {
                Failure::new(
                    code::INVALID_ARGUMENT,
                    "COUNTERHAL_TARGET_CPUS needs a CPU list",
                )
            })?;
            let system = handle.inner.chosen.context().system();
            let list = CpuList::parse_within(text, &facade::online_cpus(system))?;
            Attach::Cpus(list)
        }
        other => {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!("unknown target kind {other}: use a COUNTERHAL_TARGET_* constant (0-4)"),
            ));
        }
    };
    Ok(attach)
}

/// The backend's group limit
/// ([`Capabilities::max_group_events`](counterhal_hal::Capabilities::max_group_events)) where
/// a trial of `events` events opened with `options` is past it: then [`trial_for_add`] gives
/// the whole set, which the backend refuses whole.
fn past_group_limit(chosen: &facade::Chosen, options: &OpenOptions, events: usize) -> Option<u32> {
    let limit = chosen.capabilities().max_group_events()?;
    (options.grouped && events > limit as usize).then_some(limit)
}

/// The backend's refusal of `trial`, a group past its limit, asked with the events as they
/// are resolved already: the backend refuses such a group before it opens anything, and
/// asking by name resolved every name of the set again (0.1 s an add past a limit of 1,022).
/// A backend that opens the group after all is closed at once and refused as its `limit`
/// says.
fn refused_past_limit(
    chosen: &facade::Chosen,
    trial: Vec<ResolvedEvent>,
    options: &OpenOptions,
    limit: u32,
) -> Failure {
    let events = trial.len();
    match counterhal_hal::open_set(
        chosen,
        trial,
        &counterhal_hal::BackendTarget::ThisThread,
        options,
    ) {
        Err(error) => Failure::from(error),
        Ok(_) => Failure::new(
            code::NO_COUNTER,
            format!("a group of {events} events: the backend takes at most {limit} in one group"),
        ),
    }
}

/// `counters` to change, withdrawn from the set's published `reads` first.
///
/// # Errors
/// `COUNTERHAL_EBUSY` where a read of the set on this thread holds them (a signal handler
/// that interrupted it changing the set, which must not wait for it).
pub(crate) fn counters_mut<'c>(
    reads: &SharedReads,
    counters: &'c mut Arc<EventSet<AnyGroup>>,
) -> CResult<&'c mut EventSet<AnyGroup>> {
    if !reads.withdraw() {
        return Err(Failure::new(
            code::BUSY,
            "a signal handler that interrupted a read of this set changes it: call \
             counterhal_set_read alone in handlers",
        ));
    }
    Arc::get_mut(counters).ok_or_else(|| {
        Failure::new(
            code::INTERNAL,
            "the set's counters are still shared after their reads",
        )
    })
}

/// Reads the set published in `reads` into `out` (no lock, no allocation: a signal handler
/// may call it). A buffer shorter than the set is refused as one not published, for the
/// caller's checks to say so.
#[inline]
pub(crate) fn read_published(
    reads: &SharedReads,
    out: &mut [Reading],
) -> Result<(), SharedReadError> {
    match reads.read_into(out) {
        Err(SharedReadError::Read(e)) if e.kind() == std::io::ErrorKind::InvalidInput => {
            Err(SharedReadError::NotPublished)
        }
        other => other,
    }
}

/// The code and message of a shared read that failed, both static (recorded without
/// allocating, from a signal handler too).
pub(crate) fn read_failure(error: &SharedReadError) -> (i32, &'static str) {
    match error {
        SharedReadError::Read(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => (
            code::NOT_COUNTED,
            "the set's counters read nothing (a pinned group that could not be scheduled)",
        ),
        SharedReadError::Busy => (
            code::BUSY,
            "the set is being started, stopped or reset, or too many reads of it run at once",
        ),
        SharedReadError::NotPublished => (
            code::STATE,
            "the set was not started: call counterhal_set_start first",
        ),
        _ => (
            code::OTHER,
            "the system's read of the set's counters failed",
        ),
    }
}

/// The unit of `event`'s count as a C string: empty for a plain count.
fn unit_string(event: &ResolvedEvent) -> CString {
    c_string(event.unit.as_ref().map_or("", |unit| unit.name.as_str()))
}
