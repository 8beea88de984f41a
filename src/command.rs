//! A command counted from its `exec`, as `perf stat -- cmd` counts it: the caller's
//! [`Command`](std::process::Command) (environment, directory and standard streams are the caller's), or a program
//! and its arguments ([`Launch::Argv`], started without a thread), is started and held before
//! `exec`, the counters are opened on it to start at the `exec` and follow what it
//! creates, then it runs.

use counterhal_hal::BackendExt;
use std::process::Child;
use std::time::Duration;

use counterhal_hal::{
    Backend, Error, ErrorKind, EventSet, Group, OpenOptions, Reading, ResolvedEvent, Result,
};
use counterhal_process::{ChildExit, Launch, WaitingChild};

/// Where the events of a [`CountedCommand`] are: opened together, or why not.
type Opened<G> = (Vec<usize>, Result<EventSet<G>>);

/// A command with counters on it: held before `exec` until [`start`](CountedCommand::start),
/// then running until [`wait`](CountedCommand::wait) (or, without blocking,
/// [`try_wait`](CountedCommand::try_wait); [`stop`](CountedCommand::stop) ends it early).
///
/// [`Chosen::count_command`](crate::Chosen::count_command) is the way to count a command to
/// its end. This handle, which [`launch`](CountedCommand::launch) makes, does what that
/// cannot, as `counterhal stat` and the C API need: the command's pid before it runs (to pass
/// signals on), reads while it runs, a stop when its time is up, perf's `{a,b}` groups, and
/// counting the command alone ([`Follow::CommandOnly`]).
///
/// ```no_run
/// use counterhal::prelude::*;
/// use counterhal::OpenOptions;
/// use counterhal::advanced::{CountedCommand, Follow};
/// use std::process::Command;
/// use std::time::Duration;
///
/// let backend = open_default()?;
/// let events = [backend.resolve("task-clock")?, backend.resolve("page-faults")?];
/// let mut sleep = Command::new("sleep");
/// sleep.arg("10");
/// let mut counted = CountedCommand::launch(&backend, &events, sleep, &OpenOptions::default(),
///                                          &[], Follow::Children)?;
/// counted.start()?;
/// std::thread::sleep(Duration::from_millis(100));
/// println!("so far: {:?}", counted.read());
/// counted.stop(Duration::from_secs(1))?;
/// let count = counted.wait()?;
/// for (event, reading) in events.iter().zip(&count.readings) {
///     println!("{}: {:?}", event.name, reading);
/// }
/// println!("{}", count.exit.describe());
/// # Ok::<(), counterhal::Error>(())
/// ```
pub struct CountedCommand<G> {
    child: WaitingChild,
    events: Vec<ResolvedEvent>,
    opened: Vec<Opened<G>>,
    /// What opening did on its own ([`CommandCount::note`]).
    note: Option<String>,
}

/// Whom the counters of a [`CountedCommand`] follow.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Follow {
    /// The command and every process and thread it creates ([`Target::Exec`](counterhal_hal::BackendTarget::Exec)):
    /// `perf stat -- cmd`.
    #[default]
    Children,
    /// The command's own process alone, none of the processes or threads it creates
    /// ([`Target::ExecAlone`](counterhal_hal::BackendTarget::ExecAlone)): `perf stat -i -- cmd`.
    CommandOnly,
}

impl Follow {
    /// The target for the command whose held child is `pid`.
    fn target(self, pid: u32) -> counterhal_hal::BackendTarget {
        match self {
            Follow::Children => counterhal_hal::BackendTarget::Exec { pid },
            Follow::CommandOnly => counterhal_hal::BackendTarget::ExecAlone { pid },
        }
    }
}

/// What a counted command did: one reading per event, or why that event was not counted, and
/// how the command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandCount {
    /// The command's process id.
    pub pid: u32,
    /// One result per event, in the order given (perf's `<not supported>` is an error here).
    pub readings: Vec<Result<Reading>>,
    /// How it ended, and its CPU time.
    pub exit: ChildExit,
    /// What counting did on its own, as [`EventSet::note`](counterhal_hal::EventSet::note)
    /// says it ([`Chosen::count_command`](crate::Chosen::count_command)'s user-space
    /// fallback); `None` when the events count as asked.
    pub note: Option<String>,
}

impl<G: Group> CountedCommand<G> {
    /// Starts `command` held before `exec` and opens `events` on it, the counters following
    /// whom `follow` says ([`Follow::CommandOnly`] counts the command's own process without
    /// what it creates, as `perf stat -i -- cmd` does). Each of `groups` (indices into
    /// `events`) is one set, counted all together or not at all, as perf's `{a,b}` counts it,
    /// and every event in no group is opened on its own, so one this machine lacks is an
    /// error for that event alone; `options.grouped` is not consulted (one group of every
    /// index groups them all).
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] when `backend` cannot count one process from its `exec`
    /// (a backend counting per CPU: the hint says to count
    /// [`Target::AllCpus`](crate::Target::AllCpus), or [`Target::ThisThread`](crate::Target::ThisThread)
    /// where the backend counts only the CPU that reads it, while the command runs), or cannot
    /// count it the way `follow` says; [`ErrorKind::InvalidInput`] when a group is empty,
    /// names an index past the events, or an event is in two groups; as
    /// [`WaitingChild::launch`]; [`ErrorKind::LimitReached`] when the events need more file
    /// descriptors than this process may open. Other errors are per event, in
    /// [`CommandCount::readings`].
    pub fn launch<B>(
        backend: &B,
        events: &[ResolvedEvent],
        command: impl Into<Launch>,
        options: &OpenOptions,
        groups: &[Vec<usize>],
        follow: Follow,
    ) -> Result<Self>
    where
        B: Backend<Group = G> + ?Sized,
    {
        let mut taken = vec![false; events.len()];
        for group in groups {
            if group.is_empty() {
                return Err(Error::invalid_input("an empty group of events")
                    .with_hint("give each group at least one event index, or leave it out"));
            }
            for &i in group {
                let Some(seen) = taken.get_mut(i) else {
                    return Err(Error::invalid_input(format!(
                        "group index {i} is past the {} events",
                        events.len()
                    ))
                    .with_hint(format!(
                        "indices run from 0 to {}",
                        events.len().saturating_sub(1)
                    )));
                };
                if *seen {
                    return Err(Error::invalid_input(format!(
                        "event {i} (`{}`) is in two groups",
                        events[i].name
                    ))
                    .with_hint("put each event in one group at most"));
                }
                *seen = true;
            }
        }
        let mut partition = groups.to_vec();
        partition.extend((0..events.len()).filter(|&i| !taken[i]).map(|i| vec![i]));
        let mut options = *options;
        options.grouped = false;
        Self::open_partition(backend, events, command.into(), &options, partition, follow)
    }

    /// Starts `command` held and opens each part of `partition` as one set.
    fn open_partition<B>(
        backend: &B,
        events: &[ResolvedEvent],
        command: Launch,
        options: &OpenOptions,
        partition: Vec<Vec<usize>>,
        follow: Follow,
    ) -> Result<Self>
    where
        B: Backend<Group = G> + ?Sized,
    {
        let capabilities = backend.capabilities();
        if follow == Follow::CommandOnly
            && capabilities.targets().exec
            && !capabilities.supports(&follow.target(0))
        {
            return Err(Error::unsupported(format!(
                "{} cannot count a command without the processes it creates",
                backend.label()
            ))
            .with_hint("count it with Follow::Children"));
        }
        if !capabilities.supports(&follow.target(0)) {
            let instead = if capabilities.targets().cpu {
                "it counts per CPU: open the events on Target::AllCpus and run the command while \
                 they count (counterhal stat does so); other programs are counted too"
            } else {
                "it counts whatever runs on the CPU that reads it: open the events on \
                 Target::ThisThread and run the command while they count (counterhal stat does \
                 so); other programs on that CPU are counted too, the command's time on other \
                 CPUs is not"
            };
            return Err(Error::unsupported(format!(
                "{} cannot count a command from its exec",
                backend.label()
            ))
            .with_hint(instead));
        }
        let child = WaitingChild::launch(command)?;
        let target = follow.target(child.pid());
        let open = |indices: Vec<usize>| {
            let chosen = indices.iter().map(|&i| events[i].clone()).collect();
            let mut options = *options;
            options.grouped |= indices.len() > 1;
            let set = counterhal_hal::open_set(backend, chosen, &target, &options);
            (indices, set)
        };
        let opened: Vec<Opened<G>> = partition.into_iter().map(open).collect();
        // A limit of this process is no event's fault: stop before the command runs rather
        // than count fewer events than asked (the held child is killed when dropped).
        for (_, set) in &opened {
            if let Err(e) = set
                && e.kind() == ErrorKind::LimitReached
            {
                return Err(e.clone());
            }
        }
        Ok(Self {
            child,
            events: events.to_vec(),
            opened,
            note: None,
        })
    }

    /// The same command, its count noting `note` ([`CommandCount::note`]).
    pub(crate) fn noting(self, note: Option<String>) -> Self {
        Self { note, ..self }
    }

    /// The command's process id (its signals may be passed on to it from here on:
    /// [`ForwardSignals`](counterhal_process::ForwardSignals)).
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// Lets the command `exec`; the counters start there.
    ///
    /// # Errors
    /// As [`WaitingChild::release`]: the program could not be executed
    /// ([`ErrorKind::NotFound`], [`ErrorKind::PermissionDenied`]).
    pub fn start(&mut self) -> Result<()> {
        self.child.release()
    }

    /// The running command's handle, for its standard streams (those the [`Command`](std::process::Command) asked
    /// to be piped); `None` before [`start`](CountedCommand::start), and for a
    /// [`Launch::Argv`] (its streams are this process's).
    pub fn child(&mut self) -> Option<&mut Child> {
        self.child.child()
    }

    /// The events, in order.
    pub fn events(&self) -> &[ResolvedEvent] {
        &self.events
    }

    /// One result per event so far (while the command runs, what it has counted up to now).
    pub fn read(&mut self) -> Vec<Result<Reading>> {
        read_all(&mut self.opened, &self.events)
    }

    /// How the command ended, without waiting: `None` while it runs. Once it has ended it is
    /// reaped, and [`wait`](CountedCommand::wait) then returns at once with the counts.
    ///
    /// # Errors
    /// As [`WaitingChild::try_wait`]: [`ErrorKind::InvalidInput`] before
    /// [`start`](CountedCommand::start).
    pub fn try_wait(&mut self) -> Result<Option<ChildExit>> {
        self.child.try_wait()
    }

    /// Waits up to `timeout` for the command to end: how it ended, or `None` while it runs
    /// (a caller that must answer something meanwhile, such as Ctrl-C, waits in steps). Once
    /// it has ended, [`wait`](CountedCommand::wait) returns at once with the counts.
    ///
    /// # Errors
    /// As [`WaitingChild::wait_for`]: [`ErrorKind::InvalidInput`] before
    /// [`start`](CountedCommand::start).
    pub fn wait_for(&mut self, timeout: Duration) -> Result<Option<ChildExit>> {
        self.child.wait_for(timeout)
    }

    /// Stops the command as `perf stat` stops one whose time is up: `SIGTERM`, then `SIGKILL`
    /// if it has not ended within `grace`. Returns how it ended; [`wait`](CountedCommand::wait)
    /// then returns at once with the counts.
    ///
    /// # Errors
    /// As [`WaitingChild::terminate`]: [`ErrorKind::InvalidInput`] before
    /// [`start`](CountedCommand::start).
    pub fn stop(&mut self, grace: Duration) -> Result<ChildExit> {
        self.child.terminate(grace)
    }

    /// Waits for the command to end and reads every event.
    ///
    /// # Errors
    /// As [`WaitingChild::wait`].
    pub fn wait(mut self) -> Result<CommandCount> {
        let pid = self.child.pid();
        let exit = self.child.wait()?;
        Ok(CommandCount {
            pid,
            readings: read_all(&mut self.opened, &self.events),
            exit,
            note: self.note,
        })
    }
}

/// The error of event `event` in a set that failed with `e`: `e` named by the event the user
/// asked for (a preset's failing term is named after the preset), or, where another event
/// of the set failed, saying that this one was not counted because of it.
fn attributed(e: &Error, event: &ResolvedEvent) -> Error {
    let message = e.message();
    let own = event.terms.iter().any(|t| {
        message
            .strip_prefix(t.request.name.as_str())
            .is_some_and(|rest| rest.starts_with(':'))
    });
    let text = if own && message.starts_with(&format!("{}:", event.name)) {
        return e.clone();
    } else if own {
        format!("{}: {message}", event.name)
    } else {
        format!(
            "{}: not counted: another event of its group could not open ({message})",
            event.name
        )
    };
    let mut error = Error::new(e.kind(), text);
    if let Some(errno) = e.errno() {
        error = error.with_errno(errno);
    }
    match e.hint() {
        Some(hint) => error.with_hint(hint),
        None => error,
    }
}

/// One result per event of `opened`, `n` in all (`events` in the same order).
fn read_all<G: Group>(opened: &mut [Opened<G>], events: &[ResolvedEvent]) -> Vec<Result<Reading>> {
    let n = events.len();
    let mut readings: Vec<Result<Reading>> = (0..n)
        .map(|_| Err(Error::new(ErrorKind::Other, "not opened")))
        .collect();
    for (indices, set) in opened {
        let read = match set {
            Ok(set) => set.read_to_vec(),
            Err(e) => Err(e.clone()),
        };
        match read {
            Ok(values) => {
                for (&i, value) in indices.iter().zip(values) {
                    readings[i] = Ok(value);
                }
            }
            Err(e) => {
                for &i in indices.iter() {
                    readings[i] = Err(attributed(&e, &events[i]));
                }
            }
        }
    }
    readings
}
