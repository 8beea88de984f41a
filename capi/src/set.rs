//! A C set (`counterhal_set_t`): events added one at a time on one target, started,
//! read, stopped and reset as PAPI's event sets are.

use std::ffi::CString;
use std::sync::Arc;

use facade::hal::{BoxedGroup, CpuList, Group, Reading, ResolvedEvent};
use facade::{Attach, Backend, MultiSet, OpenOptions};

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

/// A set's state.
enum State {
    /// Never started, or changed since: nothing open.
    Idle,
    /// Counting.
    Running(MultiSet<BoxedGroup>),
    /// Stopped: the counters are open and hold their last values.
    Stopped(MultiSet<BoxedGroup>),
}

/// What `counterhal_set_t` points at.
pub struct Set {
    pub(crate) inner: Arc<Inner>,
    /// The process it was made in, as its handle's count of forks.
    pub(crate) generation: u64,
    attach: Attach,
    pub(crate) events: Vec<ResolvedEvent>,
    pub(crate) names: Vec<CString>,
    state: State,
    scratch: Vec<Reading>,
}

impl Set {
    /// An empty set counting on `kind` (a [`target`] constant) with `id` or `cpus`.
    pub(crate) fn new(handle: &Handle, kind: i32, id: u32, cpus: Option<&str>) -> CResult<Set> {
        let attach = match kind {
            target::THIS_THREAD => Attach::ThisThread,
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
            events: Vec::new(),
            names: Vec::new(),
            state: State::Idle,
            scratch: Vec::new(),
        })
    }

    /// Opens `events` on the set's target.
    fn open(&self, events: &[ResolvedEvent]) -> CResult<MultiSet<BoxedGroup>> {
        let backend = &self.inner.chosen.backend;
        Ok(MultiSet::open(
            backend,
            events,
            &self.attach,
            &OpenOptions::default(),
        )?)
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
        let backend = &self.inner.chosen.backend;
        let event = backend.resolve(name)?;
        let trial = facade::trial_for_add(
            backend.capabilities(),
            &OpenOptions::default(),
            &self.events,
            &event,
        );
        drop(self.open(&trial)?);
        self.events.push(event);
        self.names.push(c_string(name));
        self.scratch = vec![Reading::default(); self.events.len()];
        self.state = State::Idle;
        i32::try_from(self.events.len() - 1)
            .map_err(|_| Failure::new(code::LIMIT_REACHED, "too many events in one set"))
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
            State::Running(counters) | State::Stopped(counters) => Ok(counters.targets().count()),
            State::Idle => Ok(self.attach.targets().len()),
        }
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

