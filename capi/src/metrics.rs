//! A C metric set (`counterhal_metrics_t`): metrics or metric groups opened by name on a
//! target as the Rust face opens them ([`Chosen::open_metrics`](facade::Chosen::open_metrics),
//! the evaluator `counterhal stat -M` and `serve --rules` share), read as one value per metric
//! with a status, and the events behind them with their readings.
//!
//! Built without the `metrics` feature (no metric tables compiled in), every metric call is
//! refused with `COUNTERHAL_ENOSUPP` naming the feature.

use std::ffi::CString;
use std::sync::Arc;

use counterhal_hal::Reading;

use crate::{CResult, Handle, Inner, code};

/// `counterhal_metric_value_t`: one metric's value and whether it could be computed.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetricValueC {
    /// The value, scaled as the metric prints it (a share in percent); 0 unless `status` is
    /// `COUNTERHAL_OK`.
    pub value: f64,
    /// `COUNTERHAL_OK`, or `COUNTERHAL_ENOCOUNT` where the value cannot be computed (an event
    /// it reads never ran, or a divisor counted 0).
    pub status: i32,
}

/// The metric set itself: the facade's, or nothing in a build without metrics.
#[cfg(feature = "metrics")]
type Counting = facade::metrics::MetricSet;
/// No metric set can be opened in a build without metrics.
#[cfg(not(feature = "metrics"))]
enum Counting {}

/// What `counterhal_metrics_t` points at.
pub struct MetricsC {
    /// The handle's backend, kept alive as long as the set.
    _inner: Arc<Inner>,
    /// The process it was made in, as its handle's count of forks.
    pub(crate) generation: u64,
    set: Counting,
    /// The metrics' names and units, for C, in the order named.
    pub(crate) names: Vec<CString>,
    pub(crate) units: Vec<CString>,
    /// The events behind them, each once, for C, in the set's order.
    pub(crate) events: Vec<CString>,
    /// The events' readings of the last read (zero before one).
    pub(crate) readings: Vec<Reading>,
}

/// The refusal of a build without the `metrics` feature.
#[cfg(not(feature = "metrics"))]
fn without_metrics() -> crate::Failure {
    crate::Failure::new(
        code::UNSUPPORTED,
        "this libcounterhal was built without metrics (hint: build counterhal-capi with its \
         `metrics` feature, as the default build has it)",
    )
}

impl MetricsC {
    /// Opens the metrics or groups `names` (comma-separated, as `counterhal stat -M` takes
    /// them) of `handle`'s CPU model on `kind`/`id`/`cpus` (as `counterhal_set_create_for`),
    /// disabled.
    #[cfg(feature = "metrics")]
    pub(crate) fn open(
        handle: &Handle,
        names: &str,
        kind: i32,
        id: u32,
        cpus: Option<&str>,
    ) -> CResult<MetricsC> {
        let attach = crate::set::attach(handle, kind, id, cpus)?;
        let inner = handle.inner.clone();
        let options = facade::OpenOptions::default();
        let set = inner.chosen.open_metrics(&[names], &attach, &options)?;
        let c_string = crate::c_string;
        let names = set.metrics().iter().map(|m| c_string(m.name)).collect();
        let units = set.metrics().iter().map(|m| c_string(m.unit)).collect();
        let events: Vec<CString> = set.events().iter().map(|e| c_string(e)).collect();
        Ok(MetricsC {
            _inner: inner,
            generation: handle.generation,
            readings: vec![Reading::default(); events.len()],
            names,
            units,
            events,
            set,
        })
    }

    /// Refused: built without metrics.
    #[cfg(not(feature = "metrics"))]
    pub(crate) fn open(
        _handle: &Handle,
        _names: &str,
        _kind: i32,
        _id: u32,
        _cpus: Option<&str>,
    ) -> CResult<MetricsC> {
        Err(without_metrics())
    }

    /// Starts counting (and the clock of the metrics' `duration_time`).
    pub(crate) fn enable(&mut self) -> CResult<()> {
        #[cfg(feature = "metrics")]
        return Ok(self.set.enable()?);
        #[cfg(not(feature = "metrics"))]
        match self.set {}
    }

    /// Stops counting (and the clock).
    pub(crate) fn disable(&mut self) -> CResult<()> {
        #[cfg(feature = "metrics")]
        return Ok(self.set.disable()?);
        #[cfg(not(feature = "metrics"))]
        match self.set {}
    }

    /// Reads the events and writes each metric's value into `out` (at least one per metric),
    /// keeping the events' readings.
    pub(crate) fn read(&mut self, out: &mut [MetricValueC]) -> CResult<()> {
        if out.len() < self.names.len() {
            return Err(crate::Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "the values buffer holds {} values; the set has {} metrics: pass \
                     counterhal_metrics_size's number",
                    out.len(),
                    self.names.len()
                ),
            ));
        }
        #[cfg(feature = "metrics")]
        {
            let values = self.set.read()?;
            for (slot, value) in out.iter_mut().zip(values) {
                *slot = match value.value {
                    Some(value) => MetricValueC {
                        value,
                        status: code::OK,
                    },
                    None => MetricValueC {
                        value: 0.0,
                        status: code::NOT_COUNTED,
                    },
                };
            }
            for (slot, named) in self.readings.iter_mut().zip(self.set.readings()) {
                *slot = named.reading.unwrap_or_default();
            }
            Ok(())
        }
        #[cfg(not(feature = "metrics"))]
        match self.set {}
    }
}

/// The events the metrics or groups `names` (comma-separated) read on `handle`'s CPU model,
/// each once, in the order a set opens them: what `counterhal_metrics_open` would count,
/// planned without opening anything.
#[cfg(feature = "metrics")]
pub(crate) fn events_needed(handle: &Handle, names: &str) -> CResult<Vec<String>> {
    use facade::metrics;
    let chosen = metrics::chosen(&[names.to_string()], handle.inner.chosen.cpu_model())?;
    // The handle counts on its backend's system: its facts are that system's.
    let machine = metrics::Machine::new(handle.inner.chosen.context().system().clone());
    for metric in &chosen {
        metrics::readable(&machine, metric)?;
    }
    Ok(metrics::events_needed(&machine, &chosen))
}

/// Refused: built without metrics.
#[cfg(not(feature = "metrics"))]
pub(crate) fn events_needed(_handle: &Handle, _names: &str) -> CResult<Vec<String>> {
    Err(without_metrics())
}
