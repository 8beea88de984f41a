//! What this machine counts, as `counterhal list` lists it: the events (the events crate's
//! `listing`, which the command and the C API list through) and the metrics of the CPU
//! model's tables and the portable ones (the facade's `metrics` catalogue).

use counterhal::listing::{ListOptions, Listed};
use counterhal::metrics;
use pyo3::prelude::*;

use crate::errors::OrRaise;
use crate::session::{Session, session_or_default};

/// One event as `counterhal list` lists it: `name`, `section` (`"hardware"`, `"software"`,
/// `"cache"`, `"preset"`, `"native"`, `"deprecated"`, `"backend"`, or `"umask"` for a native
/// event's unit mask, named `EVENT.UNIT_MASK`), `description`, whether this process can count
/// it here (`usable`) and, where it cannot or counts it otherwise, `reason`.
#[pyclass(frozen, get_all, module = "counterhal")]
#[derive(Clone, Debug)]
pub(crate) struct Event {
    /// Its name, as `count()` takes it.
    name: String,
    /// Where it comes from.
    section: &'static str,
    /// What it counts (empty where the source says nothing).
    description: String,
    /// Whether this process can count it for its own thread here.
    usable: bool,
    /// Why it cannot be counted, or how it is counted instead.
    reason: Option<String>,
}

#[pymethods]
impl Event {
    fn __repr__(&self) -> String {
        format!(
            "Event(name={:?}, section={:?}, usable={})",
            self.name,
            self.section,
            if self.usable { "True" } else { "False" }
        )
    }
}

/// `listed` and its unit masks as events, each usable where the event is and the mask
/// resolves, and where not, with the mask's reason or else the event's.
fn flattened(listed: Listed) -> impl Iterator<Item = Event> {
    let usable = listed.usable;
    let why = listed.reason.clone();
    let masks = listed.unit_masks.into_iter().map(move |mask| Event {
        usable: usable && mask.encoding.is_some(),
        reason: match usable {
            true => mask.reason,
            false => mask.reason.or_else(|| why.clone()),
        },
        name: mask.name,
        section: "umask",
        description: mask.description,
    });
    let event = Event {
        name: listed.name,
        section: listed.section.name(),
        description: listed.description,
        usable: listed.usable,
        reason: listed.reason,
    };
    std::iter::once(event).chain(masks)
}

/// The events this machine counts whose name or description holds `pattern` (any case;
/// empty: all), in `counterhal list`'s order; with `all=True` the events it cannot count too
/// (each with its `reason`). Telling whether an event counts opens it for this thread and
/// closes it at once; a backend's own names (tracepoints) count where they resolve.
#[pyfunction]
#[pyo3(signature = (pattern = "", *, all = false, session = None))]
pub(crate) fn events(
    py: Python<'_>,
    pattern: &str,
    all: bool,
    session: Option<Bound<'_, Session>>,
) -> PyResult<Vec<Event>> {
    let session = session_or_default(py, session)?;
    let chosen = &session.get().chosen;
    Ok(py.detach(|| {
        let listed = chosen.list(pattern, ListOptions::new());
        listed
            .into_iter()
            .flat_map(flattened)
            .filter(|event| all || event.usable)
            .collect()
    }))
}

/// One metric of the CPU model's tables (or a portable one), as `counterhal list --metrics`
/// lists it: `name`, its `groups`, its `expression` in perf's syntax, the `unit` and `scale`
/// its value prints with, the `model` whose table holds it (`None`: portable), and the
/// `events` it reads here.
#[pyclass(frozen, get_all, module = "counterhal")]
#[derive(Clone, Debug)]
pub(crate) struct Metric {
    /// The name `metrics()` takes.
    name: &'static str,
    /// The groups `metrics()` also takes.
    groups: Vec<&'static str>,
    /// The formula, in perf's syntax.
    expression: String,
    /// What the value is multiplied by to print (100 for a share in percent).
    scale: f64,
    /// The unit printed after the value.
    unit: &'static str,
    /// The model whose table holds it; `None` for a portable metric.
    model: Option<&'static str>,
    /// The events it reads (through the metrics it names too), each once.
    events: Vec<String>,
}

#[pymethods]
impl Metric {
    fn __repr__(&self) -> String {
        format!("Metric(name={:?}, unit={:?})", self.name, self.unit)
    }
}

/// The metrics `metrics()` takes with this session's CPU model whose name or group holds
/// `pattern` (any case; empty: all): the model's, then the portable ones.
#[pyfunction(name = "list_metrics")]
#[pyo3(signature = (pattern = "", *, session = None))]
pub(crate) fn metric_list(
    py: Python<'_>,
    pattern: &str,
    session: Option<Bound<'_, Session>>,
) -> PyResult<Vec<Metric>> {
    let session = session_or_default(py, session)?;
    let model = session.get().chosen.cpu_model();
    let pattern = pattern.to_ascii_lowercase();
    let matches = |metric: &metrics::MetricDef| {
        pattern.is_empty()
            || metric.name.to_ascii_lowercase().contains(&pattern)
            || metric
                .groups
                .iter()
                .any(|g| g.to_ascii_lowercase().contains(&pattern))
    };
    let machine = metrics::Machine::new(session.get().chosen.context().system().clone());
    let catalogue = metrics::catalogue(model).or_raise(py)?;
    Ok(catalogue
        .into_iter()
        .filter(|metric| matches(metric))
        .map(|metric| Metric {
            name: metric.name,
            groups: metric.groups.clone(),
            expression: metric.expression().into_owned(),
            scale: metric.scale,
            unit: metric.unit,
            model: metric.model,
            events: metrics::events_needed(&machine, &[metric]),
        })
        .collect())
}
