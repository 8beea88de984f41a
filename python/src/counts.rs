//! What a read gives Python: one [`Reading`] per event (value, times enabled and running, the
//! scaled estimate), gathered in [`Counts`], a mapping from the names the events were asked
//! by.

use std::sync::Arc;

use pyo3::exceptions::{PyIndexError, PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::to_python;

/// One event's count: `value`, the nanoseconds it was `enabled` and `running`, and the
/// `scaled` estimate (`value * enabled / running`, `None` where it never ran).
#[pyclass(frozen, eq, hash, module = "counterhal")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Reading(pub(crate) counterhal::Reading);

#[pymethods]
impl Reading {
    /// A reading of its three parts.
    #[new]
    #[pyo3(signature = (value, enabled = 0, running = 0))]
    fn new(value: u64, enabled: u64, running: u64) -> Reading {
        Reading(counterhal::Reading::new(value, enabled, running))
    }

    /// Events counted while the event was on a counter.
    #[getter]
    fn value(&self) -> u64 {
        self.0.value
    }

    /// Nanoseconds the event was enabled.
    #[getter]
    fn enabled(&self) -> u64 {
        self.0.time_enabled
    }

    /// Nanoseconds the event was on a counter.
    #[getter]
    fn running(&self) -> u64 {
        self.0.time_running
    }

    /// The value extrapolated to the whole time enabled; `None` where the event never ran.
    #[getter]
    fn scaled(&self) -> Option<u64> {
        self.0.scaled()
    }

    /// The share of its time enabled the event was counting (`None`: never enabled).
    #[getter]
    fn fraction_running(&self) -> Option<f64> {
        self.0.fraction_running()
    }

    /// Whether the event counted for only part of its time enabled (its `scaled` value is
    /// then an estimate).
    #[getter]
    fn multiplexed(&self) -> bool {
        self.0.is_multiplexed()
    }

    /// The reading as plain data (what `json.dumps` takes): `value`, `enabled`, `running`
    /// and `scaled`.
    #[allow(clippy::wrong_self_convention)] // a Python method, which takes `&self`
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("value", self.0.value)?;
        dict.set_item("enabled", self.0.time_enabled)?;
        dict.set_item("running", self.0.time_running)?;
        dict.set_item("scaled", self.0.scaled())?;
        Ok(dict)
    }

    /// The counts since `earlier`, field by field (an event read twice without a reset).
    fn __sub__(&self, earlier: &Reading) -> Reading {
        Reading(self.0.since(&earlier.0))
    }

    fn __repr__(&self) -> String {
        let scaled = self
            .0
            .scaled()
            .map_or_else(|| "None".to_string(), |s| s.to_string());
        format!(
            "Reading(value={}, enabled={}, running={}, scaled={scaled})",
            self.0.value, self.0.time_enabled, self.0.time_running
        )
    }
}

/// The counts of a set's events at one read, by the names they were asked by (in order):
/// `counts["page-faults"]` (or `counts[0]`) is a [`Reading`]; `note` says what counting did on
/// its own (user space only where the system refuses counting the kernel), else `None`.
#[pyclass(frozen, mapping, module = "counterhal")]
#[derive(Clone, Debug)]
pub(crate) struct Counts {
    names: Arc<[String]>,
    readings: Vec<counterhal::Reading>,
    /// The events that were not counted, by index, with why.
    missing: Arc<[(usize, counterhal::Error)]>,
    note: Option<Arc<str>>,
}

impl Counts {
    /// `readings` of the events `names`, in order, but for those `missing` (by index, with
    /// why they were not counted), which have no reading in `readings`.
    pub(crate) fn new(
        names: Arc<[String]>,
        mut readings: Vec<counterhal::Reading>,
        missing: Arc<[(usize, counterhal::Error)]>,
        note: Option<Arc<str>>,
    ) -> Counts {
        for (at, _) in missing.iter() {
            readings.insert(*at, counterhal::Reading::default());
        }
        Counts {
            names,
            readings,
            missing,
            note,
        }
    }

    /// The results of the events `names`, each a reading or why it was not counted.
    pub(crate) fn of_results(
        names: Arc<[String]>,
        results: Vec<counterhal::Result<counterhal::Reading>>,
        note: Option<Arc<str>>,
    ) -> Counts {
        let mut readings = Vec::with_capacity(results.len());
        let mut missing = Vec::new();
        for (at, result) in results.into_iter().enumerate() {
            match result {
                Ok(reading) => readings.push(reading),
                Err(error) => {
                    readings.push(counterhal::Reading::default());
                    missing.push((at, error));
                }
            }
        }
        Counts {
            names,
            readings,
            missing: missing.into(),
            note,
        }
    }

    /// The index of `key`: a name, or a position (negative from the end).
    pub(crate) fn index(&self, key: &Bound<'_, PyAny>) -> PyResult<usize> {
        if let Ok(name) = key.extract::<String>() {
            return self.names.iter().position(|n| *n == name).ok_or_else(|| {
                PyKeyError::new_err(format!(
                    "{name:?} was not counted (the events: {})",
                    self.names.join(", ")
                ))
            });
        }
        let Ok(position) = key.extract::<isize>() else {
            return Err(PyTypeError::new_err(
                "counts are indexed by an event's name or position",
            ));
        };
        let len = self.names.len() as isize;
        let at = if position < 0 {
            position + len
        } else {
            position
        };
        if (0..len).contains(&at) {
            Ok(at as usize)
        } else {
            Err(PyIndexError::new_err(format!(
                "event {position} of {len} counted"
            )))
        }
    }

    /// Event `at`'s reading, or the exception of why it was not counted.
    pub(crate) fn reading(&self, py: Python<'_>, at: usize) -> PyResult<Reading> {
        match self.missing.iter().find(|(index, _)| *index == at) {
            Some((_, error)) => Err(to_python(py, error)),
            None => Ok(Reading(self.readings[at])),
        }
    }
}

#[pymethods]
impl Counts {
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Reading> {
        let at = self.index(key)?;
        self.reading(py, at)
    }

    fn __len__(&self) -> usize {
        self.names.len()
    }

    fn __contains__(&self, name: &Bound<'_, PyAny>) -> bool {
        name.extract::<String>()
            .is_ok_and(|name| self.names.contains(&name))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyList::new(py, self.names.iter())?
            .try_iter()
            .map(Bound::into_any)
    }

    /// The events' names, in order.
    fn keys(&self) -> Vec<String> {
        self.names.to_vec()
    }

    /// The readings, in order (an event that was not counted raises its error).
    fn values(&self, py: Python<'_>) -> PyResult<Vec<Reading>> {
        (0..self.names.len())
            .map(|at| self.reading(py, at))
            .collect()
    }

    /// `(name, reading)` pairs, in order.
    fn items(&self, py: Python<'_>) -> PyResult<Vec<(String, Reading)>> {
        (0..self.names.len())
            .map(|at| Ok((self.names[at].clone(), self.reading(py, at)?)))
            .collect()
    }

    /// The reading of `name`, or `default` where it was not counted.
    #[pyo3(signature = (name, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let found = self.names.iter().position(|n| n == name);
        match found.map(|at| self.reading(py, at)) {
            Some(Ok(reading)) => Ok(Some(Bound::new(py, reading)?.into_any())),
            _ => Ok(default),
        }
    }

    /// The counts as plain data, by name (what `json.dumps` takes): each event's value (its
    /// scaled estimate where `scaled`; `None` for one that never ran), or with
    /// `readings=True` each reading's fields (`Reading.to_dict()`); `None` for an event that
    /// was not counted.
    #[pyo3(signature = (scaled = false, *, readings = false))]
    fn to_dict<'py>(
        &self,
        py: Python<'py>,
        scaled: bool,
        readings: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (at, name) in self.names.iter().enumerate() {
            match self.reading(py, at) {
                Ok(reading) if readings => dict.set_item(name, reading.to_dict(py)?)?,
                Ok(Reading(reading)) if scaled => dict.set_item(name, reading.scaled())?,
                Ok(Reading(reading)) => dict.set_item(name, reading.value)?,
                Err(_) => dict.set_item(name, py.None())?,
            }
        }
        Ok(dict)
    }

    /// What counting did on its own, in a sentence (user space only where the system refuses
    /// counting the kernel, as `perf stat` notes it); `None` when the events count as asked.
    #[getter]
    fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// The counts since `earlier`, a read of the same events before, event by event.
    fn __sub__(&self, earlier: &Counts) -> PyResult<Counts> {
        if earlier.names != self.names {
            return Err(PyTypeError::new_err(
                "only counts of the same events subtract",
            ));
        }
        let readings = self
            .readings
            .iter()
            .zip(&earlier.readings)
            .map(|(now, before)| now.since(before))
            .collect();
        Ok(Counts {
            names: Arc::clone(&self.names),
            readings,
            missing: Arc::clone(&self.missing),
            note: self.note.clone(),
        })
    }

    pub(crate) fn __repr__(&self) -> String {
        let entries: Vec<String> = self
            .names
            .iter()
            .zip(&self.readings)
            .enumerate()
            .map(|(at, (name, reading))| {
                match self.missing.iter().find(|(index, _)| *index == at) {
                    Some((_, error)) => format!("{name:?}: <not counted: {}>", error.kind()),
                    None => format!("{name:?}: {}", reading.value),
                }
            })
            .collect();
        format!("Counts({{{}}})", entries.join(", "))
    }
}
