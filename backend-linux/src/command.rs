//! Measuring a command as `perf stat -- cmd` does: fork a child that waits, open the counters
//! on it with `enable_on_exec` and `inherit`, let it exec, wait for it, read.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use counterhal_hal::{
    Backend, Error, ErrorKind, EventRequest, Group, OpenOptions, Reading, Result, Target,
};

use crate::LinuxBackend;
use crate::errno::{Operation, map_errno};
use crate::group::LinuxGroup;
use crate::sys;

/// A child process forked and stopped before `exec` until [`release`](WaitingChild::release)d,
/// so counters can be opened on it first ([`Target::Exec`]).
///
/// Dropping it before it has been waited for kills and reaps the child.
#[derive(Debug)]
pub struct WaitingChild {
    pid: i32,
    release: Option<OwnedFd>,
    exec_status: OwnedFd,
    started: Option<Instant>,
    reaped: bool,
}

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildExit {
    /// The exit status (code, or the signal that ended it).
    pub status: ExitStatus,
    /// Wall time from the release to the end of the wait.
    pub elapsed: Duration,
    /// The child's (and its waited-for descendants') user CPU time.
    pub user_time: Duration,
    /// Their system CPU time.
    pub system_time: Duration,
}

/// Finds `program` as `execvp` would: a name with a `/` is used as is, else the first
/// executable file of that name in `$PATH`.
fn find_program(program: &OsStr) -> Option<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(program));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

impl WaitingChild {
    /// Forks a child that will run `argv` once released.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for an empty `argv` or one with a NUL byte;
    /// [`ErrorKind::NotFound`] when the program is not found in `$PATH`; the mapped errno of
    /// `fork` or `pipe2`.
    pub fn spawn(argv: &[OsString]) -> Result<WaitingChild> {
        let first = argv.first().ok_or_else(|| {
            Error::invalid_input("no command given").with_hint("pass the program and its arguments")
        })?;
        let program = find_program(first).ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("command not found: {}", first.to_string_lossy()),
            )
            .with_hint("check the name and $PATH")
        })?;
        let nul = |_| Error::invalid_input("a command argument contains a NUL byte");
        let program = CString::new(program.as_os_str().as_bytes()).map_err(nul)?;
        let args = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(nul)?;
        let child = sys::fork_waiting(&program, &args).map_err(|errno| {
            map_errno(
                errno,
                Operation::Spawn,
                &crate::errno::SystemFacts::unknown(),
            )
        })?;
        Ok(WaitingChild {
            pid: child.pid,
            release: Some(child.release),
            exec_status: child.exec_status,
            started: None,
            reaped: false,
        })
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// The target to open counters on: [`Target::Exec`] for this child.
    pub fn target(&self) -> Target {
        Target::Exec { pid: self.pid() }
    }

    /// Lets the child exec; returns once the exec has succeeded.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] when released twice; the exec's errno mapped
    /// ([`ErrorKind::NotFound`], [`ErrorKind::PermissionDenied`]...) when it failed (the child
    /// is then reaped).
    pub fn release(&mut self) -> Result<()> {
        let release = self
            .release
            .take()
            .ok_or_else(|| Error::invalid_input("the child was already released"))?;
        self.started = Some(Instant::now());
        let facts = crate::errno::SystemFacts::unknown();
        sys::write_all(release.as_fd(), &[1])
            .map_err(|errno| map_errno(errno, Operation::Spawn, &facts))?;
        drop(release);
        let mut status = [0u8; 4];
        let got = sys::read_bytes(self.exec_status.as_fd(), &mut status)
            .map_err(|errno| map_errno(errno, Operation::Spawn, &facts))?;
        if got == 4 {
            let errno = i32::from_ne_bytes(status);
            let _ = sys::wait4(self.pid);
            self.reaped = true;
            return Err(map_errno(errno, Operation::Exec, &facts));
        }
        Ok(())
    }

    /// Waits for the child to end.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] when it was never released; the mapped errno of `wait4`.
    pub fn wait(mut self) -> Result<ChildExit> {
        let started = self
            .started
            .ok_or_else(|| Error::invalid_input("the child was never released"))?;
        if self.reaped {
            return Err(Error::invalid_input("the child was already reaped"));
        }
        let (status, user, system) = sys::wait4(self.pid).map_err(|errno| {
            map_errno(
                errno,
                Operation::Spawn,
                &crate::errno::SystemFacts::unknown(),
            )
        })?;
        self.reaped = true;
        Ok(ChildExit {
            status: ExitStatus::from_raw(status),
            elapsed: started.elapsed(),
            user_time: Duration::from_micros(user),
            system_time: Duration::from_micros(system),
        })
    }
}

impl Drop for WaitingChild {
    fn drop(&mut self) {
        if !self.reaped {
            // Closing the release pipe unreleased makes it exit; kill covers a running one.
            self.release.take();
            sys::kill(self.pid);
            let _ = sys::wait4(self.pid);
        }
    }
}

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
    /// executed) and [`WaitingChild::wait`]. Event errors are per event, in
    /// [`EventOutcome::reading`].
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
        // From here until the child is reaped, Ctrl-C is the command's, not ours: the counts
        // survive it (perf stat does the same). The child was forked before this, so it keeps
        // the default dispositions.
        let interrupts = sys::IgnoreInterrupts::start();
        child.release()?;
        let pid = child.pid();
        let exit = child.wait();
        drop(interrupts);
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
