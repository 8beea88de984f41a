//! counterhal's Python face: the extension module `counterhal._counterhal`, which the
//! `counterhal` package (`python/counterhal/`) re-exports.
//!
//! It is a thin layer over the facade: events opened by name on a target
//! ([`Chosen::open_named`](counterhal::Chosen::open_named)), a command counted from its `exec`
//! ([`Chosen::count_command`](counterhal::Chosen::count_command)), metrics by name
//! ([`Chosen::open_metrics`](counterhal::Chosen::open_metrics)), the listing of what this
//! machine counts (the events crate's `listing`), and every [`counterhal::Error`] raised as a
//! Python exception carrying its kind, errno and hint. The interpreter lock is released
//! around every call that asks the kernel for more than a read (opening, starting, stopping,
//! resetting, closing, running a command, listing); a read keeps it, as `os.read` does.
//!
//! docs/python.md is the user's guide; `counterhal/_counterhal.pyi` the types Python sees.

mod command;
mod counts;
mod errors;
mod group;
mod listing;
mod metrics;
mod session;
mod target;

use pyo3::prelude::*;

/// Counters around a block of Python: `with counterhal.count("page-faults") as c: ...`, then
/// `c["page-faults"].value`.
#[pymodule]
fn _counterhal(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<counts::Reading>()?;
    module.add_class::<counts::Counts>()?;
    module.add_class::<target::Target>()?;
    module.add_class::<session::Session>()?;
    module.add_class::<group::Group>()?;
    module.add_class::<metrics::Metrics>()?;
    module.add_class::<metrics::MetricValue>()?;
    module.add_class::<command::Run>()?;
    module.add_class::<listing::Event>()?;
    module.add_class::<listing::Metric>()?;
    module.add_function(wrap_pyfunction!(group::count, module)?)?;
    module.add_function(wrap_pyfunction!(metrics::metrics, module)?)?;
    module.add_function(wrap_pyfunction!(command::run, module)?)?;
    module.add_function(wrap_pyfunction!(listing::events, module)?)?;
    module.add_function(wrap_pyfunction!(listing::metric_list, module)?)?;
    target::add_functions(module)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
