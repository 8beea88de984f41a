//! The backend counting is done with ([`counterhal::Chosen`]): the one a [`Session`] opens
//! with its choices (the CPU model names resolve against, the backend), or the default one,
//! opened once as [`counterhal::open_default`] opens it, when first needed.

use counterhal::{Chosen, Setup};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::errors::OrRaise;

/// The backend and CPU model events are opened with. The functions and classes that count
/// take `session=`; without one they use the default session (every choice left to
/// counterhal, as `counterhal stat` makes them), opened when first needed.
#[pyclass(frozen, module = "counterhal")]
pub(crate) struct Session {
    pub(crate) chosen: Chosen,
}

#[pymethods]
impl Session {
    /// Opens a backend: the one named (`"linux"`), else the first that works here, with names
    /// resolving against the CPU model `cpu_model` (a database id such as `"skl"`, or perf's
    /// `GenuineIntel-6-8F-8`), else this machine's. `mount_tracefs=True` lets it mount tracefs
    /// (as root, where it is mounted nowhere) to resolve a tracepoint, as perf and the
    /// `counterhal` command do; by default a library changes no system unasked.
    #[new]
    #[pyo3(signature = (*, cpu_model = None, backend = None, mount_tracefs = false))]
    fn new(
        py: Python<'_>,
        cpu_model: Option<String>,
        backend: Option<String>,
        mount_tracefs: bool,
    ) -> PyResult<Self> {
        let chosen = py
            .detach(|| {
                let mut setup = Setup::new().mount_tracefs(mount_tracefs);
                if let Some(model) = &cpu_model {
                    setup = setup.cpu_model(model);
                }
                if let Some(name) = &backend {
                    setup = setup.backend(name);
                }
                setup.open()
            })
            .or_raise(py)?;
        Ok(Session { chosen })
    }

    /// The backend's name, with `(model)` where it drives a model of its device.
    #[getter]
    fn backend(&self) -> String {
        self.chosen.label()
    }

    /// The CPU model names resolve against (`None`: none matched this machine).
    #[getter]
    fn cpu_model(&self) -> Option<&str> {
        self.chosen.cpu_model()
    }

    fn __repr__(&self) -> String {
        format!(
            "counterhal.Session(backend={:?}, cpu_model={:?})",
            self.chosen.label(),
            self.chosen.cpu_model()
        )
    }
}

/// The system the module's functions that take no session read (a target's CPUs online, a
/// cgroup's mount): this machine's, made where Python uses it; a session reads its own
/// (`chosen.context().system()`).
pub(crate) fn module_system() -> counterhal::system::System {
    counterhal::system::System::host()
}

/// The default session, opened on first use.
static DEFAULT: PyOnceLock<Py<Session>> = PyOnceLock::new();

/// `session`, or the default one.
pub(crate) fn session_or_default<'py>(
    py: Python<'py>,
    session: Option<Bound<'py, Session>>,
) -> PyResult<Bound<'py, Session>> {
    if let Some(session) = session {
        return Ok(session);
    }
    let default = DEFAULT.get_or_try_init(py, || -> PyResult<Py<Session>> {
        let chosen = py.detach(counterhal::open_default).or_raise(py)?;
        Py::new(py, Session { chosen })
    })?;
    Ok(default.bind(py).clone())
}
