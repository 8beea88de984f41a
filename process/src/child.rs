//! A command started and held before `exec`, so counters can start with it, and how it ended.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use counterhal_hal::{BackendTarget, Error, ErrorKind, Result};

use crate::sys;

/// A command started and held before `exec` until [`release`](WaitingChild::release)d, so
/// counters can be opened on it ([`BackendTarget::Exec`]) or enabled just before it starts.
///
/// Started from its arguments ([`WaitingChild::spawn`]) it is made here (Linux: sharing this
/// process's memory until its exec, so at a cost that does not grow with it), with this
/// process's environment, working directory and standard streams; started from a
/// [`std::process::Command`] ([`WaitingChild::from_command`]) those are the command's to set.
/// It starts as a shell starts a command: `SIGPIPE` at its default and no signal blocked. Dropping it before it
/// has been waited for ends and reaps the child.
#[derive(Debug)]
pub struct WaitingChild {
    pid: i32,
    release: Option<OwnedFd>,
    spawning: Option<Spawning>,
    child: Option<std::process::Child>,
    started: Option<Instant>,
    reaped: bool,
    /// The program as the user named it, for the errors of its exec.
    program: OsString,
    /// How it ended, once [`try_wait`](WaitingChild::try_wait) or
    /// [`terminate`](WaitingChild::terminate) reaped it.
    exit: Option<ChildExit>,
}

/// How the held child's exec is seen through.
#[derive(Debug)]
enum Spawning {
    /// The standard library's spawn of a [`std::process::Command`], waiting on a thread of
    /// its own until the exec.
    Thread(std::thread::JoinHandle<std::io::Result<std::process::Child>>),
    /// Made here ([`sys::fork_held`]): what tells how the exec went.
    Forked(sys::ExecWatch),
}

/// What to start held before `exec`.
#[derive(Debug)]
pub enum Launch {
    /// A program and its arguments (`argv[0]` looked up in `$PATH` as `execvp` does), run
    /// with this process's environment, working directory and standard streams. Started
    /// without a thread: the cheaper start.
    Argv(Vec<OsString>),
    /// A [`std::process::Command`], for its own environment, directory and standard streams
    /// (piped ones are read through [`WaitingChild::child`]): the standard library's spawn,
    /// which waits for the exec on a thread of its own.
    Command(std::process::Command),
}

impl From<std::process::Command> for Launch {
    fn from(command: std::process::Command) -> Launch {
        Launch::Command(command)
    }
}

impl From<Vec<OsString>> for Launch {
    fn from(argv: Vec<OsString>) -> Launch {
        Launch::Argv(argv)
    }
}

impl From<&[OsString]> for Launch {
    fn from(argv: &[OsString]) -> Launch {
        Launch::Argv(argv.to_vec())
    }
}

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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

impl ChildExit {
    /// The exit code a shell passes on for this end: the command's own code, or 128 + N
    /// when signal N ended it.
    pub fn exit_code(&self) -> u8 {
        match (self.status.code(), self.status.signal()) {
            (Some(code), _) => (code & 0xff) as u8,
            (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(255),
            (None, None) => 1,
        }
    }

    /// The end in words: `exited with status 3`, `was killed by signal 9`.
    pub fn describe(&self) -> String {
        match (self.status.code(), self.status.signal()) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(signal)) => format!("was killed by signal {signal}"),
            (None, None) => "ended with an unknown status".into(),
        }
    }
}

/// The exit code a shell gives a command that could not be run: 127 when it was not found,
/// 126 when it was found but could not be executed.
pub fn exit_code_for(error: &Error) -> u8 {
    if error.kind() == ErrorKind::NotFound {
        127
    } else {
        126
    }
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

/// What went wrong starting, releasing or waiting for the command.
#[derive(Clone, Copy)]
enum Step<'a> {
    Start,
    /// The exec of the program named so (as given: a path, or a name found in `$PATH`).
    Exec(&'a OsStr),
}

/// An errno of `step` as an error: the kind says whose fault it is, the hint what to do.
fn spawn_error(errno: sys::Errno, step: Step<'_>) -> Error {
    let (kind, hint) = match errno {
        libc::ENOENT => (
            ErrorKind::NotFound,
            "the program (or its interpreter) does not exist",
        ),
        libc::EACCES | libc::EPERM => (
            ErrorKind::PermissionDenied,
            "the program is not executable by this user",
        ),
        libc::ENOEXEC => (
            ErrorKind::InvalidInput,
            "the file is not a program this kernel runs",
        ),
        libc::EAGAIN | libc::ENOMEM => (
            ErrorKind::Busy,
            "out of processes or memory (the process limit, `ulimit -u`?)",
        ),
        libc::EMFILE | libc::ENFILE => (
            ErrorKind::LimitReached,
            "out of file descriptors: raise the limit (`ulimit -n`)",
        ),
        _ => (ErrorKind::Other, "see the errno"),
    };
    let what = match step {
        Step::Start => "starting the command".to_string(),
        Step::Exec(program) => format!("exec of {}", program.to_string_lossy()),
    };
    let text = std::io::Error::from_raw_os_error(errno);
    Error::new(kind, format!("{what}: {text}"))
        .with_errno(errno)
        .with_hint(hint)
}

/// The [`Command`](std::process::Command) that runs `argv[0]` with the arguments
/// `argv[1..]`, its program found in `$PATH` here (so the child executes it with one `execve`
/// instead of trying each `$PATH` directory in turn, each try a system call a counted command
/// would show) and `argv[0]` kept as the name it is run under.
///
/// # Errors
/// [`ErrorKind::InvalidInput`] for an empty `argv` or an argument with a NUL byte;
/// [`ErrorKind::NotFound`] when the program is not found.
pub fn command_for(argv: &[OsString]) -> Result<std::process::Command> {
    let (first, program) = program_of(argv)?;
    let mut command = std::process::Command::new(program);
    std::os::unix::process::CommandExt::arg0(&mut command, first);
    command.args(&argv[1..]);
    Ok(command)
}

/// `argv[0]` and the program it names, found as `execvp` would find it.
///
/// # Errors
/// As [`command_for`].
fn program_of(argv: &[OsString]) -> Result<(&OsString, PathBuf)> {
    let first = argv.first().ok_or_else(|| {
        Error::invalid_input("no command given").with_hint("pass the program and its arguments")
    })?;
    if argv.iter().any(|arg| arg.as_bytes().contains(&0)) {
        return Err(Error::invalid_input(
            "a command argument contains a NUL byte",
        ));
    }
    let program = find_program(first).ok_or_else(|| not_found(first))?;
    Ok((first, program))
}

impl WaitingChild {
    /// Starts `argv[0]` with the arguments `argv[1..]`, held before `exec`.
    ///
    /// # Errors
    /// As [`command_for`] and [`WaitingChild::from_command`].
    pub fn spawn(argv: &[OsString]) -> Result<WaitingChild> {
        let (first, path) = program_of(argv)?;
        let program = sys::Prepared::new(path.as_os_str(), argv)
            .ok_or_else(|| Error::invalid_input("a command argument contains a NUL byte"))?;
        let forked = sys::fork_held(program).map_err(|errno| spawn_error(errno, Step::Start))?;
        Ok(WaitingChild {
            pid: forked.pid,
            release: Some(forked.release),
            spawning: Some(Spawning::Forked(forked.exec)),
            child: None,
            started: None,
            reaped: false,
            program: first.clone(),
            exit: None,
        })
    }

    /// Starts what `launch` names, held before `exec`: [`Launch::Argv`] as
    /// [`WaitingChild::spawn`], [`Launch::Command`] as [`WaitingChild::from_command`].
    ///
    /// # Errors
    /// As those.
    pub fn launch(launch: Launch) -> Result<WaitingChild> {
        match launch {
            Launch::Argv(argv) => WaitingChild::spawn(&argv),
            Launch::Command(command) => WaitingChild::from_command(command),
        }
    }

    /// Starts `command`, held before `exec`: its process exists (so counters can be opened on
    /// it) but its program has not started. A program named without a `/` is looked up in
    /// `$PATH` by the standard library, which tries each directory with its own `execve`;
    /// counters attached before the release (not from `exec`) count those tries too, so give
    /// a path where that matters ([`WaitingChild::spawn`] does).
    ///
    /// # Errors
    /// [`ErrorKind::NotFound`] when the program is not found in `$PATH`;
    /// [`ErrorKind::InvalidInput`] for a program or argument with a NUL byte, or an
    /// environment variable whose name holds a `=` (the command would see another variable);
    /// the errno of `pipe2` or `fork` as an error.
    pub fn from_command(mut command: std::process::Command) -> Result<WaitingChild> {
        if let Some(name) = command
            .get_envs()
            .map(|(name, _)| name)
            .find(|name| name.as_bytes().contains(&b'='))
        {
            return Err(Error::invalid_input(format!(
                "illegal environment variable name `{}`: it holds a `=`, so the command would \
                 see a variable named what comes before it",
                name.to_string_lossy()
            ))
            .with_hint("name each variable without `=` (its value may hold one)"));
        }
        let program = command.get_program().to_os_string();
        if find_program(&program).is_none() {
            return Err(not_found(&program));
        }
        let hold =
            sys::hold_before_exec(&mut command).map_err(|errno| spawn_error(errno, Step::Start))?;
        let sys::Hold {
            pid_read,
            pid_write,
            release_read,
            release_write,
        } = hold;
        // The standard library's spawn returns only once the child has executed its program
        // (or failed to), which waits for the release: it runs on a thread of its own. That
        // thread keeps the child's pipe ends open until the spawn returns, so the child has
        // them, and then drops them, so a spawn that failed reads as EOF here.
        let spawning = std::thread::spawn(move || {
            let spawned = command.spawn();
            drop((pid_write, release_read));
            spawned
        });
        let mut bytes = [0u8; 4];
        let got = sys::read_bytes(pid_read.as_fd(), &mut bytes)
            .map_err(|errno| spawn_error(errno, Step::Start))?;
        if got != 4 {
            let failed = spawning.join().map_err(|_| spawner_panicked())?;
            return Err(match failed {
                Ok(_) => Error::new(ErrorKind::Other, "the command started without its hold"),
                Err(e) => io_error(&e, Step::Start),
            });
        }
        Ok(WaitingChild {
            pid: i32::from_ne_bytes(bytes),
            release: Some(release_write),
            spawning: Some(Spawning::Thread(spawning)),
            child: None,
            started: None,
            reaped: false,
            program,
            exit: None,
        })
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// The target to open counters on: [`BackendTarget::Exec`] for this child.
    pub fn target(&self) -> BackendTarget {
        BackendTarget::Exec { pid: self.pid() }
    }

    /// Lets the child exec; returns once the exec has succeeded.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] when released twice; the exec's errno as an error
    /// ([`ErrorKind::NotFound`], [`ErrorKind::PermissionDenied`]...) when it failed (the
    /// child is then reaped).
    pub fn release(&mut self) -> Result<()> {
        let release = self
            .release
            .take()
            .ok_or_else(|| Error::invalid_input("the child was already released"))?;
        self.started = Some(Instant::now());
        sys::write_all(release.as_fd(), &[1]).map_err(|errno| spawn_error(errno, Step::Start))?;
        drop(release);
        match self.spawning.take() {
            Some(Spawning::Thread(spawning)) => {
                match spawning.join().map_err(|_| spawner_panicked())? {
                    // The standard library's handle is kept for its standard streams; it is
                    // not used to wait (wait4 also gives the CPU time).
                    Ok(child) => {
                        self.child = Some(child);
                        Ok(())
                    }
                    Err(e) => {
                        // The standard library reaped the child that failed to exec.
                        self.reaped = true;
                        Err(io_error(&e, Step::Exec(&self.program)))
                    }
                }
            }
            Some(Spawning::Forked(exec)) => {
                let failed = exec
                    .outcome(self.pid)
                    .map_err(|errno| spawn_error(errno, Step::Start))?;
                match failed {
                    None => Ok(()),
                    Some(errno) => {
                        // The child exits at once: reaped by the outcome.
                        self.reaped = true;
                        Err(spawn_error(errno, Step::Exec(&self.program)))
                    }
                }
            }
            None => Err(Error::invalid_input("the child was already released")),
        }
    }

    /// The standard library's handle of the released child, for the standard streams the
    /// command was given (`child.stdout.take()`); `None` before the release, and for a child
    /// started from its arguments ([`Launch::Argv`]: its streams are this process's).
    pub fn child(&mut self) -> Option<&mut std::process::Child> {
        self.child.as_mut()
    }

    /// Waits for the child to end (or returns how it ended, when
    /// [`try_wait`](WaitingChild::try_wait) or [`terminate`](WaitingChild::terminate) saw it).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] when it was never released; the errno of `wait4`.
    pub fn wait(mut self) -> Result<ChildExit> {
        if let Some(exit) = self.exit {
            return Ok(exit);
        }
        let started = self.started()?;
        let (status, user, system) =
            sys::wait4(self.pid).map_err(|errno| spawn_error(errno, Step::Start))?;
        self.reaped = true;
        Ok(ended(started, status, user, system))
    }

    /// How the child ended, without waiting: `None` while it runs. Once it has ended it is
    /// reaped (`wait4` with `WNOHANG`), and this and [`wait`](WaitingChild::wait) return how.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] when it was never released; the errno of `wait4`.
    pub fn try_wait(&mut self) -> Result<Option<ChildExit>> {
        if let Some(exit) = self.exit {
            return Ok(Some(exit));
        }
        let started = self.started()?;
        let waited = sys::try_wait4(self.pid).map_err(|errno| spawn_error(errno, Step::Start))?;
        Ok(waited.map(|(status, user, system)| {
            self.reaped = true;
            let exit = ended(started, status, user, system);
            self.exit = Some(exit);
            exit
        }))
    }

    /// Waits up to `timeout` for the child to end: how it ended, or `None` while it runs. A
    /// caller that must answer something while the command runs (an interpreter's signal
    /// handlers: Ctrl-C) waits in such steps. On Linux it sleeps on the child's pidfd, so the
    /// end is seen as it happens (and a signal to this thread ends the step early); elsewhere
    /// it looks every 2 ms.
    ///
    /// # Errors
    /// As [`try_wait`](WaitingChild::try_wait).
    pub fn wait_for(&mut self, timeout: Duration) -> Result<Option<ChildExit>> {
        if let Some(exit) = self.try_wait()? {
            return Ok(Some(exit));
        }
        #[cfg(target_os = "linux")]
        {
            let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
            if sys::wait_exit(self.pid, ms).is_ok() {
                return self.try_wait();
            }
        }
        // No pidfd (Linux before 5.3, other systems).
        let deadline = Instant::now() + timeout;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            std::thread::sleep((deadline - now).min(LOOK_EVERY));
            if let Some(exit) = self.try_wait()? {
                return Ok(Some(exit));
            }
        }
    }

    /// Stops the child as `perf stat` stops a command whose time is up: `SIGTERM`, so it can
    /// clean up, then `SIGKILL` if it has not ended within `grace`. Returns how it ended (a
    /// child that had ended already is not signalled).
    ///
    /// # Errors
    /// As [`try_wait`](WaitingChild::try_wait).
    pub fn terminate(&mut self, grace: Duration) -> Result<ChildExit> {
        if let Some(exit) = self.try_wait()? {
            return Ok(exit);
        }
        sys::terminate(self.pid);
        let deadline = Instant::now() + grace;
        loop {
            if let Some(exit) = self.try_wait()? {
                return Ok(exit);
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            std::thread::sleep((deadline - now).min(LOOK_EVERY));
        }
        sys::kill(self.pid);
        let started = self.started()?;
        let (status, user, system) =
            sys::wait4(self.pid).map_err(|errno| spawn_error(errno, Step::Start))?;
        self.reaped = true;
        let exit = ended(started, status, user, system);
        self.exit = Some(exit);
        Ok(exit)
    }

    /// When the child was released, if it is still there to wait for.
    fn started(&self) -> Result<Instant> {
        let started = self
            .started
            .ok_or_else(|| Error::invalid_input("the child was never released"))?;
        if self.reaped {
            return Err(Error::invalid_input("the child was already reaped"));
        }
        Ok(started)
    }
}

/// How often [`WaitingChild::terminate`] (and [`WaitingChild::wait_for`] without a pidfd)
/// looks whether the child has ended.
const LOOK_EVERY: Duration = Duration::from_millis(2);

/// A child's end from what `wait4` told.
fn ended(started: Instant, status: i32, user: u64, system: u64) -> ChildExit {
    ChildExit {
        status: ExitStatus::from_raw(status),
        elapsed: started.elapsed(),
        user_time: Duration::from_micros(user),
        system_time: Duration::from_micros(system),
    }
}

impl Drop for WaitingChild {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        if self.release.take().is_some() {
            // Closing the release pipe unwritten makes the held child give up before exec:
            // the standard library then reaps it and the spawn fails, or it exits and is
            // reaped here.
            match self.spawning.take() {
                Some(Spawning::Thread(spawning)) => drop(spawning.join()),
                Some(Spawning::Forked(exec)) => exec.abandon(self.pid),
                None => {}
            }
            return;
        }
        sys::kill(self.pid);
        let _ = sys::wait4(self.pid);
    }
}

fn not_found(program: &OsStr) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!("command not found: {}", program.to_string_lossy()),
    )
    .with_hint("check the name and $PATH")
}

fn spawner_panicked() -> Error {
    Error::new(ErrorKind::Other, "the thread starting the command panicked")
}

/// A spawn's I/O error as an error of `step`, by its errno where it has one.
fn io_error(error: &std::io::Error, step: Step<'_>) -> Error {
    match (error.raw_os_error(), error.kind()) {
        (Some(errno), _) => spawn_error(errno, step),
        // The standard library refuses a program or argument with a NUL byte this way.
        (None, std::io::ErrorKind::InvalidInput) => {
            Error::invalid_input(format!("starting the command: {error}"))
        }
        (None, _) => Error::new(ErrorKind::Other, format!("starting the command: {error}")),
    }
}

/// Whether process `pid` is a child of this process (Linux: `waitid` with `WNOWAIT` answers
/// without reaping it, one system call). A [`BackendTarget::Exec`] must be one: a process held before
/// `exec` by [`WaitingChild`].
///
/// # Errors
/// [`ErrorKind::Unsupported`] off Linux; [`ErrorKind::Other`] when `waitid` fails otherwise
/// than by naming no child: the answer is then unknown.
pub fn is_child_of_this_process(pid: u32) -> Result<bool> {
    #[cfg(target_os = "linux")]
    {
        let Ok(pid) = i32::try_from(pid) else {
            return Ok(false);
        };
        sys::is_child(pid).map_err(|errno| {
            Error::new(
                ErrorKind::Other,
                format!(
                    "cannot tell whether process {pid} is a child: {}",
                    std::io::Error::from_raw_os_error(errno)
                ),
            )
            .with_errno(errno)
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        Err(Error::unsupported(
            "telling a process's parent is done on Linux only",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(raw: i32) -> ChildExit {
        ChildExit {
            status: ExitStatus::from_raw(raw),
            elapsed: Duration::ZERO,
            user_time: Duration::ZERO,
            system_time: Duration::ZERO,
        }
    }

    #[test]
    fn exit_codes_are_a_shells() {
        assert_eq!(exit(3 << 8).exit_code(), 3);
        assert_eq!(exit(3 << 8).describe(), "exited with status 3");
        assert_eq!(exit(9).exit_code(), 137);
        assert_eq!(exit(9).describe(), "was killed by signal 9");
        assert_eq!(exit(15).exit_code(), 143);
        let program = OsStr::new("/opt/tool");
        let missing = spawn_error(libc::ENOENT, Step::Exec(program));
        assert_eq!(exit_code_for(&missing), 127);
        let denied = spawn_error(libc::EACCES, Step::Exec(program));
        assert_eq!(denied.kind(), ErrorKind::PermissionDenied);
        assert_eq!(exit_code_for(&denied), 126);
        assert!(
            denied.message().starts_with("exec of /opt/tool: "),
            "{denied}"
        );
        let not_a_program = spawn_error(libc::ENOEXEC, Step::Exec(program));
        assert_eq!(exit_code_for(&not_a_program), 126);
    }
}
