//! Events counted together on a target ([`Group`], over the facade's event set) and
//! `count()`, the group a `with` block opens, counts and closes. The events are named as
//! `perf stat -e` takes them, in one string (`"cycles,instructions"`) or a sequence.

use std::sync::{Arc, Mutex, MutexGuard};

use counterhal::{AnyGroup, Domain, EventSet, Group as _, OpenOptions};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::counts::Counts;
use crate::errors::{OrRaise, closed, forked};
use crate::session::{Session, session_or_default};
use crate::target::target_of;

/// The event names a Python caller gives: one string as `perf stat -e` takes it (split at its
/// commas, but not inside `pmu/.../` or `{...}`), or a sequence of names.
pub(crate) fn event_names(events: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let names: Vec<String> = match events.extract::<String>() {
        Ok(list) => counterhal::split_event_list(&list)
            .into_iter()
            .map(|name| name.trim().to_string())
            .collect(),
        Err(_) => events.extract::<Vec<String>>().map_err(|_| {
            PyTypeError::new_err(
                "events are a string such as \"cycles,instructions\" or a sequence of names",
            )
        })?,
    };
    if names.iter().any(String::is_empty) {
        let error = counterhal::Error::invalid_event(format!("an empty event name in {names:?}"))
            .with_hint("name events as perf stat -e does: \"cycles,instructions\"");
        return Err(crate::errors::to_python(events.py(), &error));
    }
    Ok(names)
}

/// The options of an open: the domain events without a modifier count (`"user"`,
/// `"user,kernel"`; `None`: as `perf stat`, the kernel too where allowed), whether they are one
/// group, and whether a thread's counters follow what it creates.
pub(crate) fn open_options(
    py: Python<'_>,
    domain: Option<&str>,
    grouped: bool,
    inherit: bool,
) -> PyResult<OpenOptions> {
    let mut options = OpenOptions::grouped().grouping(grouped);
    options.inherit = inherit;
    if let Some(names) = domain {
        let mut chosen = Domain::NONE;
        for name in names.split(',').map(str::trim) {
            let Some(one) = Domain::from_name(name) else {
                let error = counterhal::Error::invalid_input(format!("no domain {name:?}"))
                    .with_hint(
                        "a domain is user, kernel or hypervisor, or several: \"user,kernel\"",
                    );
                return Err(crate::errors::to_python(py, &error));
            };
            chosen |= one;
        }
        options = options.in_domain(chosen);
    }
    Ok(options)
}

/// A group's state: open (its set: `None` where none of its events counts here), or closed
/// with its counts at the close.
enum State {
    Open(Option<EventSet<AnyGroup>>),
    Closed(Option<Counts>),
}

/// Events counted together on a target: opened stopped; `start()`, `stop()`, `reset()` and
/// `read()`; `close()` (or leaving a `count()` block) releases its counters. A `with` block
/// starts it and stops it. `group["name"]` is a fresh read's reading, or after the close the
/// last one.
#[pyclass(frozen, module = "counterhal")]
pub(crate) struct Group {
    /// The process the group was opened in, as its count of forks: in a child of `fork()` the
    /// counters are still the parent's, and the lock may be held by a thread the child lacks.
    generation: u64,
    state: Mutex<State>,
    names: Arc<[String]>,
    /// The events left out as not countable here (`strict=False`), by index, with why.
    missing: Arc<[(usize, counterhal::Error)]>,
    note: Option<Arc<str>>,
    /// Whether leaving a `with` block closes it (`count()`'s groups).
    close_on_exit: bool,
}

impl Group {
    /// Opens `events` on `target` (`None`: this thread) with the session's backend, stopped;
    /// all of them, or where not `strict`, those that count here.
    fn open(
        py: Python<'_>,
        events: &Bound<'_, PyAny>,
        target: Option<&Bound<'_, PyAny>>,
        session: Option<Bound<'_, Session>>,
        options: OpenOptions,
        strict: bool,
        close_on_exit: bool,
    ) -> PyResult<Group> {
        let names = event_names(events)?;
        let target = target_of(target)?;
        let session = session_or_default(py, session)?;
        let chosen = &session.get().chosen;
        let (set, missing) = py
            .detach(|| {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                match strict {
                    true => Ok((Some(chosen.open_named(&names, &target, &options)?), vec![])),
                    false => chosen
                        .open_named_counting(&names, &target, &options)
                        .map(|partial| (partial.set, partial.left_out)),
                }
            })
            .or_raise(py)?;
        Ok(Group {
            generation: counterhal_cboundary::forks(),
            note: set.as_ref().and_then(EventSet::note).map(Arc::from),
            state: Mutex::new(State::Open(set)),
            names: names.into(),
            missing: missing.into(),
            close_on_exit,
        })
    }

    /// The group's state, locked; refused, before the lock is taken, in a child of `fork()`.
    fn lock(&self) -> counterhal::Result<MutexGuard<'_, State>> {
        if self.generation != counterhal_cboundary::forks() {
            return Err(forked("group"));
        }
        Ok(self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs `operation` on the open set with the interpreter lock released.
    fn on_set(
        &self,
        py: Python<'_>,
        operation: fn(&mut EventSet<AnyGroup>) -> counterhal::Result<()>,
    ) -> PyResult<()> {
        py.detach(|| match &mut *self.lock()? {
            State::Open(Some(set)) => operation(set),
            State::Open(None) => Ok(()),
            State::Closed(_) => Err(closed("group")),
        })
        .or_raise(py)
    }

    /// A read of the open set, or the counts it had at its close, or why there are none.
    fn read_set(&self, state: &mut State) -> counterhal::Result<Counts> {
        match state {
            State::Open(set) => {
                let counted = self.names.len() - self.missing.len();
                let mut readings = vec![counterhal::Reading::default(); counted];
                if let Some(set) = set {
                    set.read(&mut readings)?;
                }
                Ok(Counts::new(
                    Arc::clone(&self.names),
                    readings,
                    Arc::clone(&self.missing),
                    self.note.clone(),
                ))
            }
            State::Closed(Some(last)) => Ok(last.clone()),
            State::Closed(None) => Err(closed("group")),
        }
    }
}

/// A group dropped open (collected without `close()`) closes its counters with the
/// interpreter lock released, as `close()` does; nothing else can reach it by then, and no
/// lock is taken (in a child of `fork()` this closes the child's copies of the descriptors,
/// leaving the parent's counters as they are).
impl Drop for Group {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if let State::Open(set) = std::mem::replace(state, State::Closed(None)) {
            Python::attach(|py| py.detach(move || drop(set)));
        }
    }
}

#[pymethods]
impl Group {
    /// Opens `events` (`"page-faults,task-clock"`, or a sequence of names) on `target` (a
    /// `Target` or a process id; `None`: this thread), stopped. `domain` is what events without
    /// a modifier count (`"user"`, `"user,kernel"`; `None`: the kernel too where the system
    /// allows, else user space with a `note`); `grouped=False` opens each event on its own
    /// (time-shared where counters run out); `inherit=True` counts the threads and processes
    /// a thread target creates too. `strict=False` counts the events that count here and
    /// leaves out the others (a hardware event in a VM without a PMU), as `perf stat` prints
    /// `<not supported>` for them: reading one raises why (an event name that means nothing
    /// is an error still).
    #[new]
    #[pyo3(signature = (events, target = None, *, session = None, domain = None, grouped = true, inherit = false, strict = true))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments
    fn new(
        py: Python<'_>,
        events: &Bound<'_, PyAny>,
        target: Option<&Bound<'_, PyAny>>,
        session: Option<Bound<'_, Session>>,
        domain: Option<&str>,
        grouped: bool,
        inherit: bool,
        strict: bool,
    ) -> PyResult<Group> {
        let options = open_options(py, domain, grouped, inherit)?;
        Group::open(py, events, target, session, options, strict, false)
    }

    /// Starts counting (the counts go on from where they were: `reset()` zeroes them).
    fn start(&self, py: Python<'_>) -> PyResult<()> {
        self.on_set(py, |set| set.enable())
    }

    /// Stops counting; the counts stay readable.
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        self.on_set(py, |set| set.disable())
    }

    /// Zeroes the counts and their times enabled and running.
    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        self.on_set(py, |set| set.reset())
    }

    /// The counts now, one reading per event: one system call, the interpreter lock held.
    /// After `close()`, the counts the group had then.
    fn read(&self, py: Python<'_>) -> PyResult<Counts> {
        let read = self.lock().and_then(|mut state| self.read_set(&mut state));
        read.or_raise(py)
    }

    /// Releases the counters, keeping the counts they had (`read()` and `group["name"]` still
    /// give them). Closing a closed group does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let mut state = self.lock()?;
            if let State::Open(_) = &*state {
                let last = self.read_set(&mut state).ok();
                // The counters' descriptors close as the set drops.
                *state = State::Closed(last);
            }
            Ok(())
        })
        .or_raise(py)
    }

    /// Whether the group was closed.
    #[getter]
    fn closed(&self, py: Python<'_>) -> PyResult<bool> {
        let state = self.lock().or_raise(py)?;
        Ok(matches!(&*state, State::Closed(_)))
    }

    /// The events, by the names they were asked by.
    #[getter]
    fn events(&self) -> Vec<String> {
        self.names.to_vec()
    }

    /// What opening did on its own, in a sentence (user space only where the system refuses
    /// counting the kernel); `None` when the events count as asked.
    #[getter]
    fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let counts = self.read(py)?;
        Ok(Bound::new(py, counts)?.into_any().get_item(key)?.unbind())
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().start(slf.py())?;
        Ok(slf)
    }

    /// Stops the group (and closes a `count()` group) as the block ends; an exception from
    /// the block is not masked by one from stopping.
    fn __exit__(
        &self,
        py: Python<'_>,
        exception: Option<&Bound<'_, PyType>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let stopped = self.stop(py);
        let closed = match self.close_on_exit {
            true => self.close(py),
            false => Ok(()),
        };
        match exception {
            Some(_) => Ok(false),
            None => stopped.and(closed).map(|()| false),
        }
    }

    fn __repr__(&self) -> String {
        let state = match self.lock().as_deref() {
            Ok(State::Open(_)) => "open".to_string(),
            Ok(State::Closed(Some(last))) => format!("closed, {}", last.__repr__()),
            Ok(State::Closed(None)) => "closed".to_string(),
            Err(_) => "of the parent process (before fork())".to_string(),
        };
        format!("<counterhal.Group {:?} {state}>", self.names.join(","))
    }
}

/// A group of `events` on `target` for one `with` block: started as the block begins, stopped
/// and closed as it ends; then `c["page-faults"]` is its reading (value, enabled, running,
/// scaled). The arguments are `Group`'s.
#[pyfunction]
#[pyo3(signature = (events, target = None, *, session = None, domain = None, grouped = true, inherit = false, strict = true))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments
pub(crate) fn count(
    py: Python<'_>,
    events: &Bound<'_, PyAny>,
    target: Option<&Bound<'_, PyAny>>,
    session: Option<Bound<'_, Session>>,
    domain: Option<&str>,
    grouped: bool,
    inherit: bool,
    strict: bool,
) -> PyResult<Group> {
    let options = open_options(py, domain, grouped, inherit)?;
    Group::open(py, events, target, session, options, strict, true)
}
