//! A C set (`counterhal_set_t`): events added one at a time on one target, started,
//! read, stopped and reset as PAPI's event sets are.

use std::ffi::CString;
use std::sync::Arc;

use counterhal_hal::{CpuList, Group, Reading, ResolvedEvent, Target};
use facade::advanced::{MultiSet, trial_for_add};
use facade::{AnyGroup, CountedCommand, Follow, OpenOptions, Place, Target as Attach};

use crate::{CResult, Failure, Handle, Inner, c_string, code};

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

/// The options of a set (`counterhal_set_option`).
pub mod option {
    /// 1 (the default): the events are one group, counted all together or not at all. 0:
    /// each on its own (time-shared where the counters are too few).
    pub const GROUPED: i32 = 0;
    /// 1: ask the backend to keep the group on its counters always (perf's `pinned`).
    pub const PINNED: i32 = 1;
    /// 1: a thread target also counts the threads and processes it creates from the start.
    pub const INHERIT: i32 = 2;
}

/// What a row of `counterhal_set_read_each` counts (`counterhal_set_place`).
pub mod place {
    /// The calling thread.
    pub const THIS_THREAD: i32 = 0;
    /// A thread, by id.
    pub const THREAD: i32 = 1;
    /// A CPU, by number.
    pub const CPU: i32 = 2;
    /// A place this version does not name.
    pub const OTHER: i32 = 3;
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

/// A set's state.
enum State {
    /// Never started, or changed since: nothing open.
    Idle,
    /// Counting.
    Running(MultiSet<AnyGroup>),
    /// Stopped: the counters are open and hold their last values.
    Stopped(MultiSet<AnyGroup>),
}

/// What `counterhal_set_t` points at.
pub struct Set {
    pub(crate) inner: Arc<Inner>,
    /// The process it was made in, as its handle's count of forks.
    pub(crate) generation: u64,
    attach: Attach,
    /// How the events are opened (grouped, pinned), as `counterhal_set_option` sets them.
    options: OpenOptions,
    /// Whether a thread target also counts the threads and processes it creates from the
    /// start on (`COUNTERHAL_OPTION_INHERIT`).
    inherit: bool,
    pub(crate) events: Vec<ResolvedEvent>,
    pub(crate) names: Vec<CString>,
    state: State,
    scratch: Vec<Reading>,
}

impl Set {
    /// An empty set counting on `kind` (a [`target`] constant) with `id` or `cpus`.
    pub(crate) fn new(handle: &Handle, kind: i32, id: u32, cpus: Option<&str>) -> CResult<Set> {
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
                let list = CpuList::parse_within(text, &facade::online_cpus())?;
                Attach::Cpus(list)
            }
            other => {
                return Err(Failure::new(
                    code::INVALID_ARGUMENT,
                    format!(
                        "unknown target kind {other}: use a COUNTERHAL_TARGET_* constant (0-4)"
                    ),
                ));
            }
        };
        Ok(Set {
            inner: handle.inner.clone(),
            generation: handle.generation,
            attach,
            options: OpenOptions::default(),
            inherit: false,
            events: Vec::new(),
            names: Vec::new(),
            state: State::Idle,
            scratch: Vec::new(),
        })
    }

    /// Opens `events` on the set's target.
    fn open(&self, events: &[ResolvedEvent]) -> CResult<MultiSet<AnyGroup>> {
        self.open_with(events, &self.options, self.inherit)
    }

    /// Opens `events` on the set's target with `options`, and with what its threads create
    /// where `inherit`.
    fn open_with(
        &self,
        events: &[ResolvedEvent],
        options: &OpenOptions,
        inherit: bool,
    ) -> CResult<MultiSet<AnyGroup>> {
        // The chosen backend's own groups (the Linux backend's read without dynamic dispatch).
        let backend = &self.inner.chosen;
        let targets = self.places(inherit)?;
        // A thread's group that also counts what the thread creates does not stay whole on
        // Linux (see MultiSet::open): with inherit each event is opened on its own.
        let mut options = *options;
        options.grouped &= !inherit;
        Ok(MultiSet::from_targets(
            backend,
            events,
            &self.attach,
            &targets,
            &options,
        )?)
    }

    /// The places the set counts on when it opens now.
    fn places(&self, inherit: bool) -> CResult<Vec<Target>> {
        let targets = self.attach.targets();
        if !inherit {
            return Ok(targets);
        }
        targets
            .into_iter()
            .map(|target| match target {
                Target::ThisThread => crate::sys::this_thread_id()
                    .map(Target::process_and_children)
                    .ok_or_else(|| {
                        Failure::new(
                            code::UNSUPPORTED,
                            "COUNTERHAL_OPTION_INHERIT on the calling thread needs its thread id, \
                             which only Linux gives here",
                        )
                    }),
                Target::Process { pid, .. } => Ok(Target::process_and_children(pid)),
                other => Ok(other),
            })
            .collect()
    }

    /// Sets `option` (a [`option`] constant) to `value` (0 or 1). Refused while running; with
    /// events in the set, refused when they do not open together under the new options (the
    /// set keeps the old ones).
    pub(crate) fn set_option(&mut self, which: i32, value: i32) -> CResult<()> {
        if matches!(self.state, State::Running(_)) {
            return Err(Failure::new(
                code::STATE,
                "the set is running: stop it before changing its options",
            ));
        }
        let on = match value {
            0 => false,
            1 => true,
            other => {
                return Err(Failure::new(
                    code::INVALID_ARGUMENT,
                    format!("option value {other}: use 0 (off) or 1 (on)"),
                ));
            }
        };
        let (mut options, mut inherit) = (self.options, self.inherit);
        match which {
            option::GROUPED => options.grouped = on,
            option::PINNED => options.pinned = on,
            option::INHERIT => {
                if on && !matches!(self.attach, Attach::ThisThread | Attach::Thread(_)) {
                    return Err(Failure::new(
                        code::INVALID_ARGUMENT,
                        "COUNTERHAL_OPTION_INHERIT applies to a thread target (THIS_THREAD, \
                         THREAD): a PROCESS target counts what its threads create already, \
                         and CPUs count everything on them",
                    ));
                }
                inherit = on;
            }
            other => {
                return Err(Failure::new(
                    code::INVALID_ARGUMENT,
                    format!(
                        "unknown option {other}: use a COUNTERHAL_OPTION_* constant (GROUPED 0, \
                         PINNED 1, INHERIT 2)"
                    ),
                ));
            }
        }
        if !self.events.is_empty() {
            drop(self.open_with(&self.events, &options, inherit)?);
        }
        self.options = options;
        self.inherit = inherit;
        self.state = State::Idle;
        Ok(())
    }

    /// The value of `option` (a [`option`] constant): 0 or 1.
    pub(crate) fn option(&self, which: i32) -> CResult<i32> {
        match which {
            option::GROUPED => Ok(i32::from(self.options.grouped)),
            option::PINNED => Ok(i32::from(self.options.pinned)),
            option::INHERIT => Ok(i32::from(self.inherit)),
            other => Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!("unknown option {other}: use a COUNTERHAL_OPTION_* constant"),
            )),
        }
    }

    /// Removes the event at `index`; refused while running. The indices after it move down.
    pub(crate) fn remove(&mut self, index: usize) -> CResult<()> {
        if matches!(self.state, State::Running(_)) {
            return Err(Failure::new(
                code::STATE,
                "the set is running: stop it before removing events",
            ));
        }
        if index >= self.events.len() {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "no event at index {index}: the set has {} (0 to {})",
                    self.events.len(),
                    self.events.len().saturating_sub(1)
                ),
            ));
        }
        self.events.remove(index);
        self.names.remove(index);
        self.scratch = vec![Reading::default(); self.events.len()];
        self.state = State::Idle;
        Ok(())
    }

    /// Where row `row` of [`read_each`](Set::read_each) counts: a [`place`] constant and
    /// the thread or CPU id (0 for the calling thread).
    pub(crate) fn place(&self, row: usize) -> CResult<(i32, u32)> {
        let targets: Vec<Place> = match &self.state {
            State::Running(counters) | State::Stopped(counters) => counters.places().collect(),
            State::Idle => self.places(self.inherit)?.iter().map(Place::from).collect(),
        };
        let Some(target) = targets.get(row) else {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "no row {row}: the set counts on {} places now",
                    targets.len()
                ),
            ));
        };
        Ok(match *target {
            Place::ThisThread => (place::THIS_THREAD, 0),
            Place::Thread(tid) | Place::Command(tid) => (place::THREAD, tid),
            Place::Cpu(cpu) => (place::CPU, cpu),
            _ => (place::OTHER, 0),
        })
    }

    /// Adds `name` if it opens beside the events already in the set; its index. Only the new
    /// event is tried, with the events it competes with for counters where they must fit
    /// together ([`facade::trial_for_add`]), so N adds open O(N) counters, not the whole set
    /// at each add.
    pub(crate) fn add(&mut self, name: &str) -> CResult<i32> {
        if matches!(self.state, State::Running(_)) {
            return Err(Failure::new(
                code::STATE,
                "the set is running: stop it before adding events",
            ));
        }
        if self.events.iter().any(|e| e.name == name) {
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
        let (event, user_space_only) = self.countable(event)?;
        if user_space_only && self.events.iter().any(|e| e.name == event.name) {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!("`{name}` is in the set already (as `{}`)", event.name),
            ));
        }
        // The name says when the kernel was left out, as perf's `task-clock:u` says it.
        self.names
            .push(c_string(if user_space_only { &event.name } else { name }));
        self.events.push(event);
        self.scratch = vec![Reading::default(); self.events.len()];
        self.state = State::Idle;
        i32::try_from(self.events.len() - 1)
            .map_err(|_| Failure::new(code::LIMIT_REACHED, "too many events in one set"))
    }

    /// `event` if it opens beside the events in the set (only what competes with it for
    /// counters is tried: [`facade::trial_for_add`]), else, where the system refuses counting
    /// the kernel and the name has no modifier, its user-space-only form `NAME:u` if that
    /// opens: the fallback perf stat and perf record make at `perf_event_paranoid` 2.
    /// Returns the event and whether it is the user-space-only form.
    fn countable(&self, event: ResolvedEvent) -> CResult<(ResolvedEvent, bool)> {
        let capabilities = self.inner.chosen.capabilities();
        let opens = |event: &ResolvedEvent| {
            let trial = trial_for_add(capabilities, &self.options, &self.events, event);
            self.open(&trial).map(drop)
        };
        let refused = match opens(&event) {
            Ok(()) => return Ok((event, false)),
            Err(refused) => refused,
        };
        match event.user_space_only() {
            Some(user) if refused.code == code::PERMISSION_DENIED && opens(&user).is_ok() => {
                Ok((user, true))
            }
            _ => Err(refused),
        }
    }

    /// Starts counting from zero.
    pub(crate) fn start(&mut self) -> CResult<()> {
        if self.events.is_empty() {
            return Err(Failure::new(
                code::STATE,
                "the set is empty: add events before starting it",
            ));
        }
        let mut counters = match std::mem::replace(&mut self.state, State::Idle) {
            State::Running(counters) => {
                self.state = State::Running(counters);
                return Err(Failure::new(code::STATE, "the set is running already"));
            }
            State::Stopped(mut counters) => {
                counters.reset()?;
                counters
            }
            State::Idle => self.open(&self.events)?,
        };
        counters.enable()?;
        self.state = State::Running(counters);
        Ok(())
    }

    /// Reads into `out` (one reading per event): while running, the counts so far; once
    /// stopped, the counts at the stop.
    #[inline]
    pub(crate) fn read(&mut self, out: &mut [Reading]) -> CResult<()> {
        let n = self.events.len();
        if out.len() < n {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "the buffer holds {} readings, the set has {n} events",
                    out.len()
                ),
            ));
        }
        match &mut self.state {
            State::Running(counters) | State::Stopped(counters) => {
                counters.read(&mut out[..n])?;
                Ok(())
            }
            State::Idle => Err(Failure::new(
                code::STATE,
                "the set was not started: call counterhal_set_start first",
            )),
        }
    }

    /// Stops counting and reads the final counts into `out`.
    pub(crate) fn stop(&mut self, out: &mut [Reading]) -> CResult<()> {
        let n = self.events.len();
        if out.len() < n {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "the buffer holds {} readings, the set has {n} events",
                    out.len()
                ),
            ));
        }
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Running(mut counters) => {
                let read = counters
                    .disable()
                    .and_then(|()| counters.read(&mut out[..n]));
                self.state = State::Stopped(counters);
                Ok(read?)
            }
            other => {
                self.state = other;
                Err(Failure::new(code::STATE, "the set is not running"))
            }
        }
    }

    /// Zeroes the counts (running or stopped).
    pub(crate) fn reset(&mut self) -> CResult<()> {
        match &mut self.state {
            State::Running(counters) | State::Stopped(counters) => Ok(counters.reset()?),
            State::Idle => Err(Failure::new(
                code::STATE,
                "the set was not started: nothing to reset",
            )),
        }
    }

    /// How many places the set counts on (threads of a process, CPUs); 1 for a thread.
    pub(crate) fn targets(&self) -> CResult<usize> {
        match &self.state {
            State::Running(counters) | State::Stopped(counters) => Ok(counters.places().count()),
            State::Idle => Ok(self.attach.targets().len()),
        }
    }

    /// Runs `argv` with the set's events counted from its `exec` to its end, following it
    /// as `follow` (a [`follow`] constant) says, with the set's options (grouped, pinned).
    /// The set's own target is not used, and its state does not change.
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
        let groups: Vec<Vec<usize>> = match self.options.grouped && !self.events.is_empty() {
            true => vec![(0..self.events.len()).collect()],
            false => Vec::new(),
        };
        let backend = &self.inner.chosen.backend;
        let named = |error: counterhal_hal::Error| {
            let failure = Failure::from(error);
            Failure::new(failure.code, format!("`{program}`: {}", failure.message))
        };
        let mut counted = CountedCommand::following(
            backend,
            &self.events,
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

    /// Each place's readings, row by row (targets x events) into `out`; the number of rows.
    pub(crate) fn read_each(&mut self, out: &mut [Reading]) -> CResult<usize> {
        let n = self.events.len();
        let (State::Running(counters) | State::Stopped(counters)) = &mut self.state else {
            return Err(Failure::new(
                code::STATE,
                "the set was not started: call counterhal_set_start first",
            ));
        };
        let each = counters.read_each()?;
        if out.len() < each.len() * n {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "the buffer holds {} readings, the set needs {} ({} places x {n} events)",
                    out.len(),
                    each.len() * n,
                    each.len()
                ),
            ));
        }
        for (row, (_, readings)) in out.chunks_exact_mut(n.max(1)).zip(&each) {
            row.copy_from_slice(&readings[..n]);
        }
        Ok(each.len())
    }
}
