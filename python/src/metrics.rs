//! Metrics by perf's names (`IPC`, `tma_retiring`, `page_faults_per_second`), counted on a
//! target through the facade's [`MetricSet`]: the same tables and the same evaluator as
//! `counterhal stat -M`.

use std::sync::{Mutex, MutexGuard};

use counterhal::OpenOptions;
use counterhal::metrics::{MetricSet, Threshold};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use crate::errors::{OrRaise, closed, forked};
use crate::group::{event_names, open_options};
use crate::session::{Session, session_or_default};
use crate::target::target_of;

/// One metric's value over the time its set was enabled: `value` scaled as `counterhal stat
/// -M` prints it (a share in percent), `None` where an event it reads never ran; its `unit`;
/// and `threshold`, `"good"` or `"bad"` where the model gives one.
#[pyclass(frozen, get_all, module = "counterhal")]
#[derive(Clone, Debug)]
pub(crate) struct MetricValue {
    /// The metric's name.
    name: &'static str,
    /// Its value, scaled as it prints; `None` where an event it reads never ran.
    value: Option<f64>,
    /// What the value is in (`insn per cycle`, `%`).
    unit: &'static str,
    /// `"good"` or `"bad"` against the metric's threshold; `None` where it has none.
    threshold: Option<&'static str>,
}

#[pymethods]
impl MetricValue {
    fn __repr__(&self) -> String {
        let value = self.value.map_or("None".to_string(), |v| format!("{v}"));
        format!(
            "MetricValue(name={:?}, value={value}, unit={:?}, threshold={:?})",
            self.name, self.unit, self.threshold
        )
    }
}

impl From<counterhal::metrics::MetricValue> for MetricValue {
    fn from(value: counterhal::metrics::MetricValue) -> MetricValue {
        MetricValue {
            name: value.name,
            value: value.value,
            unit: value.unit,
            threshold: value.threshold.map(|t| match t {
                Threshold::Good => "good",
                _ => "bad",
            }),
        }
    }
}

/// The metric set's state: open, or closed with its values at the close.
enum State {
    Open(Box<MetricSet>),
    Closed(Option<Vec<MetricValue>>),
}

/// Metrics counted on a target: the events they read, opened as one set, stopped.
/// `start()`, `stop()`, `read()` (a dict of `MetricValue` by name), `close()`; a `with`
/// block starts and stops it; `m["IPC"]` is a fresh read's value, or after the close the last.
#[pyclass(frozen, module = "counterhal")]
pub(crate) struct Metrics {
    /// The process the set was opened in, as its count of forks (a child's use is refused, as
    /// a group's is).
    generation: u64,
    state: Mutex<State>,
    names: Vec<String>,
    events: Vec<String>,
    close_on_exit: bool,
}

impl Metrics {
    fn open(
        py: Python<'_>,
        names: &Bound<'_, PyAny>,
        target: Option<&Bound<'_, PyAny>>,
        session: Option<Bound<'_, Session>>,
        options: OpenOptions,
        close_on_exit: bool,
    ) -> PyResult<Metrics> {
        let names = event_names(names)?;
        let target = target_of(target)?;
        let session = session_or_default(py, session)?;
        let chosen = &session.get().chosen;
        let set = py
            .detach(|| {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                chosen.open_metrics(&names, &target, &options)
            })
            .or_raise(py)?;
        Ok(Metrics {
            generation: counterhal_cboundary::forks(),
            names: set.metrics().iter().map(|m| m.name.to_string()).collect(),
            events: set.events().to_vec(),
            state: Mutex::new(State::Open(Box::new(set))),
            close_on_exit,
        })
    }

    /// The set's state, locked; refused, before the lock is taken, in a child of `fork()`.
    fn lock(&self) -> counterhal::Result<MutexGuard<'_, State>> {
        if self.generation != counterhal_cboundary::forks() {
            return Err(forked("metric set"));
        }
        Ok(self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The values now, or those at the close, or why there are none.
    fn values(state: &mut State) -> counterhal::Result<Vec<MetricValue>> {
        match state {
            State::Open(set) => Ok(set.read()?.into_iter().map(MetricValue::from).collect()),
            State::Closed(Some(last)) => Ok(last.clone()),
            State::Closed(None) => Err(closed("metric set")),
        }
    }

    /// Runs `operation` on the open set with the interpreter lock released.
    fn on_set(
        &self,
        py: Python<'_>,
        operation: fn(&mut MetricSet) -> counterhal::Result<()>,
    ) -> PyResult<()> {
        py.detach(|| match &mut *self.lock()? {
            State::Open(set) => operation(set),
            State::Closed(_) => Err(closed("metric set")),
        })
        .or_raise(py)
    }
}

/// `values` as a dict by name.
fn by_name<'py>(py: Python<'py>, values: Vec<MetricValue>) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for value in values {
        dict.set_item(value.name, value)?;
    }
    Ok(dict)
}

/// A metric set dropped open closes its counters with the interpreter lock released.
impl Drop for Metrics {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if let State::Open(set) = std::mem::replace(state, State::Closed(None)) {
            Python::attach(|py| py.detach(move || drop(set)));
        }
    }
}

#[pymethods]
impl Metrics {
    /// Opens the metrics or metric groups `names` (`"IPC"`, `"TopdownL1"`; perf's names, the
    /// CPU model's and the portable ones) on `target` (`None`: this thread), stopped; the
    /// other arguments are `Group`'s.
    #[new]
    #[pyo3(signature = (names, target = None, *, session = None, domain = None, grouped = true))]
    fn new(
        py: Python<'_>,
        names: &Bound<'_, PyAny>,
        target: Option<&Bound<'_, PyAny>>,
        session: Option<Bound<'_, Session>>,
        domain: Option<&str>,
        grouped: bool,
    ) -> PyResult<Metrics> {
        let options = open_options(py, domain, grouped, false)?;
        Metrics::open(py, names, target, session, options, false)
    }

    /// Starts counting (and the clock of the metrics' duration).
    fn start(&self, py: Python<'_>) -> PyResult<()> {
        self.on_set(py, |set| set.enable())
    }

    /// Stops counting (and the clock).
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        self.on_set(py, |set| set.disable())
    }

    /// Each metric's value now, by name; after `close()`, the values it gave then.
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let values = self
            .lock()
            .and_then(|mut state| Metrics::values(&mut state));
        by_name(py, values.or_raise(py)?)
    }

    /// Releases the counters, keeping the values they gave last (`read()` and `m["IPC"]`
    /// still give them). Closing a closed set does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let mut state = self.lock()?;
            if let State::Open(_) = &*state {
                let last = Metrics::values(&mut state).ok();
                *state = State::Closed(last);
            }
            Ok(())
        })
        .or_raise(py)
    }

    /// The metrics, in order (a group's, each by name).
    #[getter]
    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    /// The events counted for them, each once.
    #[getter]
    fn events(&self) -> Vec<String> {
        self.events.clone()
    }

    fn __getitem__(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Ok(self.read(py)?.into_any().get_item(name)?.unbind())
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().start(slf.py())?;
        Ok(slf)
    }

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
        format!("<counterhal.Metrics {:?}>", self.names.join(","))
    }
}

/// Metrics for one `with` block: started as it begins, stopped and closed as it ends; then
/// `m["IPC"].value`. The arguments are `Metrics`'.
#[pyfunction]
#[pyo3(signature = (names, target = None, *, session = None, domain = None, grouped = true))]
pub(crate) fn metrics(
    py: Python<'_>,
    names: &Bound<'_, PyAny>,
    target: Option<&Bound<'_, PyAny>>,
    session: Option<Bound<'_, Session>>,
    domain: Option<&str>,
    grouped: bool,
) -> PyResult<Metrics> {
    let options = open_options(py, domain, grouped, false)?;
    Metrics::open(py, names, target, session, options, true)
}
