//! A command counted from its `exec` to its end with what it creates, as `counterhal stat --
//! cmd` counts it ([`counterhal::Chosen::count_command`]).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use counterhal::{CommandCount, Launch};
use pyo3::prelude::*;

use crate::counts::{Counts, Reading};
use crate::errors::OrRaise;
use crate::group::{event_names, open_options};
use crate::session::{Session, session_or_default};

/// perf's default software events, which every Linux machine counts.
const DEFAULT_EVENTS: &str = "task-clock,context-switches,cpu-migrations,page-faults";

/// How a counted command ended and what it counted: `counts` (an event that was not counted
/// raises its error when read), `returncode` (negative: the signal that ended it, as
/// `subprocess` says), `pid`, the seconds it took (`elapsed`, `user_time`, `system_time`),
/// and `note`.
#[pyclass(frozen, module = "counterhal")]
pub(crate) struct Run {
    count: CommandCount,
    counts: Counts,
}

#[pymethods]
impl Run {
    /// Each event's reading, by the name it was asked by.
    #[getter]
    fn counts(&self) -> Counts {
        self.counts.clone()
    }

    /// The command's exit status, or minus the signal that ended it.
    #[getter]
    fn returncode(&self) -> i32 {
        use std::os::unix::process::ExitStatusExt as _;
        let status = self.count.exit.status;
        match (status.code(), status.signal()) {
            (Some(code), _) => code,
            (None, Some(signal)) => -signal,
            (None, None) => -1,
        }
    }

    /// The command's process id.
    #[getter]
    fn pid(&self) -> u32 {
        self.count.pid
    }

    /// Seconds from its release to its end.
    #[getter]
    fn elapsed(&self) -> f64 {
        self.count.exit.elapsed.as_secs_f64()
    }

    /// Seconds of user CPU time of it and the processes it waited for.
    #[getter]
    fn user_time(&self) -> f64 {
        self.count.exit.user_time.as_secs_f64()
    }

    /// Seconds of system CPU time of it and the processes it waited for.
    #[getter]
    fn system_time(&self) -> f64 {
        self.count.exit.system_time.as_secs_f64()
    }

    /// What counting did on its own (user space only where the system refuses the kernel).
    #[getter]
    fn note(&self) -> Option<&str> {
        self.count.note.as_deref()
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Reading> {
        let at = self.counts.index(key)?;
        self.counts.reading(py, at)
    }

    fn __repr__(&self) -> String {
        format!(
            "<counterhal.Run pid={} returncode={} {}>",
            self.count.pid,
            self.returncode(),
            self.count.exit.describe()
        )
    }
}

/// Runs `args` (a program and its arguments, looked up in `PATH`) with `events` counted from
/// its `exec` to its end, with every process and thread it creates (`counterhal stat --
/// args`), and waits for it. Its standard streams are this process's; `cwd` and `env` (the
/// whole environment) are `subprocess`'s. With `grouped=True` the events are one group (all
/// counted or none); else an event this machine lacks is an error of that event alone.
/// Ctrl-C (`KeyboardInterrupt`, or any exception a signal handler raises) ends the wait as
/// it ends `subprocess.run`'s: the command is stopped (`SIGTERM`, then `SIGKILL` after
/// 0.25 s) and the exception raised.
#[pyfunction]
#[pyo3(signature = (args, events = None, *, session = None, domain = None, grouped = false, cwd = None, env = None))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments
pub(crate) fn run(
    py: Python<'_>,
    args: Vec<PathBuf>,
    events: Option<&Bound<'_, PyAny>>,
    session: Option<Bound<'_, Session>>,
    domain: Option<&str>,
    grouped: bool,
    cwd: Option<PathBuf>,
    env: Option<HashMap<OsString, OsString>>,
) -> PyResult<Run> {
    let names = match events {
        Some(events) => event_names(events)?,
        None => DEFAULT_EVENTS.split(',').map(str::to_string).collect(),
    };
    let options = open_options(py, domain, grouped, false)?;
    let session = session_or_default(py, session)?;
    let chosen = &session.get().chosen;
    let launch = launch(args, cwd, env);
    let mut counted = py
        .detach(|| {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let mut counted = chosen.launch_command(&names, launch?, &options)?;
            counted.start()?;
            Ok(counted)
        })
        .or_raise(py)?;
    // Wait in steps, answering the interpreter's signal handlers between them.
    while py
        .detach(|| counted.wait_for(WAIT_STEP))
        .or_raise(py)?
        .is_none()
    {
        if let Err(interrupted) = py.check_signals() {
            let _ = py.detach(|| counted.stop(INTERRUPTED_GRACE));
            return Err(interrupted);
        }
    }
    let count = py.detach(|| counted.wait()).or_raise(py)?;
    let counts = Counts::of_results(
        Arc::from(names),
        count.readings.clone(),
        count.note.as_deref().map(Arc::from),
    );
    Ok(Run { count, counts })
}

/// How long `run()` waits for its command before it answers the interpreter's signals (a
/// signal to the waiting thread ends a step at once).
const WAIT_STEP: Duration = Duration::from_millis(50);

/// How long an interrupted `run()` gives its command after `SIGTERM` before `SIGKILL`: the
/// 0.25 s `subprocess.run` gives a command to end on its own after Ctrl-C.
const INTERRUPTED_GRACE: Duration = Duration::from_millis(250);

/// How the command starts: its arguments alone (the cheaper start), or a `Command` where a
/// directory or environment of its own is asked.
fn launch(
    args: Vec<PathBuf>,
    cwd: Option<PathBuf>,
    env: Option<HashMap<OsString, OsString>>,
) -> counterhal::Result<Launch> {
    let mut argv: Vec<OsString> = args.into_iter().map(PathBuf::into_os_string).collect();
    if argv.is_empty() {
        return Err(
            counterhal::Error::invalid_input("run() was given no command")
                .with_hint("name the program and its arguments: run([\"ls\", \"-l\"])"),
        );
    }
    if cwd.is_none() && env.is_none() {
        return Ok(Launch::Argv(argv));
    }
    let mut command = std::process::Command::new(argv.remove(0));
    command.args(argv);
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    if let Some(env) = env {
        command.env_clear().envs(env);
    }
    Ok(Launch::Command(command))
}
