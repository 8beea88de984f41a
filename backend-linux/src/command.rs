//! Measuring a command as `perf stat -- cmd` does: fork a child that waits, open the counters
//! on it with `enable_on_exec` and `inherit`, let it exec, wait for it, read.

use std::ffi::OsString;

use counterhal_hal::{
    Backend, Error, ErrorKind, EventRequest, Group, OpenOptions, Reading, Result,
};
use counterhal_process::{ChildExit, ForwardSignals, WaitingChild};

use crate::LinuxBackend;
use crate::group::LinuxGroup;

/// One event's outcome in a [`CommandRun`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventOutcome {
    /// The event's name.
    pub name: String,
    /// Its reading, or why it could not be counted (perf's `<not supported>`).
    pub reading: Result<Reading>,
}

/// What [`LinuxBackend::run_command`] measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandRun {
    /// The command's process id.
    pub pid: u32,
    /// One outcome per requested event, in request order.
    pub events: Vec<EventOutcome>,
    /// How the command ended and what it cost.
    pub exit: ChildExit,
}

impl LinuxBackend {
    /// Runs `argv` as `perf stat -- argv` does and returns one outcome per event.
    ///
    /// With `options.grouped` the events are one group (all counted or none); without, each is
    /// opened on its own, so an event this machine lacks is reported as an error for that
    /// event only and the others are still counted. The command runs even when no event opens.
    ///
    /// # Errors
    /// As [`WaitingChild::spawn`], [`WaitingChild::release`] (the program could not be
    /// executed) and [`WaitingChild::wait`]; [`ErrorKind::LimitReached`] when the events need
    /// more file descriptors than this process may open (the command is not run). Other event
    /// errors are per event, in [`EventOutcome::reading`].
    pub fn run_command(
        &self,
        events: &[EventRequest],
        argv: &[OsString],
        options: &OpenOptions,
    ) -> Result<CommandRun> {
        let mut child = WaitingChild::spawn(argv)?;
        let target = child.target();
        let mut groups: Vec<(Vec<usize>, Result<LinuxGroup>)> = Vec::new();
        if options.grouped {
            groups.push((
                (0..events.len()).collect(),
                self.open(events, &target, options),
            ));
        } else {
            for (index, event) in events.iter().enumerate() {
                let opened = self.open(std::slice::from_ref(event), &target, options);
                groups.push((vec![index], opened));
            }
        }
        // A limit of this process (out of file descriptors) is no event's fault: stop before
        // the command runs rather than count fewer events than asked.
        for (_, opened) in &groups {
            if let Err(e) = opened
                && e.kind() == ErrorKind::LimitReached
            {
                return Err(e.clone());
            }
        }
        // From here until the child is reaped, the signals that end a command are the
        // command's, not ours (passed on when sent to us alone), so the counts survive them:
        // perf stat does the same for Ctrl-C.
        let pid = child.pid();
        let forwarding = ForwardSignals::to(pid);
        child.release()?;
        let exit = child.wait();
        drop(forwarding);
        let exit = exit?;
        let mut outcomes: Vec<EventOutcome> = events
            .iter()
            .map(|e| EventOutcome {
                name: e.name.clone(),
                reading: Err(Error::new(ErrorKind::Other, "not read")),
            })
            .collect();
        for (indices, opened) in groups {
            match opened.and_then(|mut group| group.read_to_vec()) {
                Ok(readings) => {
                    for (index, reading) in indices.into_iter().zip(readings) {
                        outcomes[index].reading = Ok(reading);
                    }
                }
                Err(error) => {
                    for index in indices {
                        outcomes[index].reading = Err(error.clone());
                    }
                }
            }
        }
        Ok(CommandRun {
            pid,
            events: outcomes,
            exit,
        })
    }
}
