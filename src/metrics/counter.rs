//! Metrics counted by name on a [`Target`]: the events they read, resolved by the backend
//! and opened as one set, and each metric's value from the set's scaled readings and the time
//! it was enabled (`duration_time`).

use counterhal_hal::{Group, OpenOptions, Reading};

use super::{
    Machine, MetricDef, NamedReading, Threshold, chosen, classify, evaluate, events_needed,
    readable,
};
use crate::attach::Target;
use crate::chosen::Chosen;
use crate::group::AnyGroup;
use counterhal_hal::{Error, EventSet, Result};

/// Metrics opened on a target by [`Chosen::open_metrics`]: the events they read, counted as
/// one set, disabled until [`enable`](MetricSet::enable).
pub struct MetricSet {
    /// The metrics, in the order named (a group's in its order).
    metrics: Vec<&'static MetricDef>,
    /// The events they read, each once, in the set's order.
    events: Vec<String>,
    /// The events' set.
    set: EventSet<AnyGroup>,
    /// The facts the metrics read (this machine's, where the set counts: its threads).
    facts: Machine,
    /// The readings of the last read, one per event.
    readings: Vec<Reading>,
    /// When the set was last enabled (real time, ns), while it is.
    enabled_at: Option<u64>,
    /// The time it was enabled before that, in nanoseconds.
    enabled_ns: u64,
}

/// One metric's value over the time its set was enabled.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricValue {
    /// The metric's name.
    pub name: &'static str,
    /// Its value, scaled as the metric prints (a share in percent); `None` where an event it
    /// reads never ran.
    pub value: Option<f64>,
    /// What the value is in (`insn per cycle`, `faults/sec`, `%`).
    pub unit: &'static str,
    /// How the value stands against the metric's threshold ([`classify`]); `None` where it
    /// has none or the threshold has no value.
    pub threshold: Option<Threshold>,
}

impl Chosen {
    /// Opens the metrics or metric groups `names` (as `counterhal stat -M` takes them: the CPU
    /// model's, then the portable ones such as `IPC` and `page_faults_per_second`) on
    /// `target`: the events they read, resolved here and opened as one set, disabled.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) for a name that is no
    /// metric or group of the model (with the nearest names);
    /// [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported) for a metric that reads a
    /// machine fact not known here; as [`Chosen::open_named`] for the events, the error
    /// naming the metrics that read the event that failed.
    pub fn open_metrics(
        &self,
        names: &[&str],
        target: &Target,
        options: &OpenOptions,
    ) -> Result<MetricSet> {
        let owned: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let metrics = chosen(&owned, self.context().model())?;
        // The set counts on this context's system: its facts are that system's.
        let machine = Machine::new(self.context().system().clone());
        for metric in &metrics {
            readable(&machine, metric)?;
        }
        let events = events_needed(&machine, &metrics);
        for event in &events {
            if let Err(e) = self.resolve(event) {
                return Err(cannot_count(&machine, &metrics, event, e));
            }
        }
        let names: Vec<&str> = events.iter().map(String::as_str).collect();
        // The event that did not open, where the error names it.
        let set = self.open_named(&names, target, options).map_err(|e| {
            let failed = events
                .iter()
                .find(|ev| e.message().starts_with(&format!("{ev}: ")));
            match failed {
                Some(event) => cannot_count(&machine, &metrics, event, e),
                None => e,
            }
        })?;
        Ok(MetricSet {
            readings: vec![Reading::default(); events.len()],
            metrics,
            events,
            set,
            facts: machine,
            enabled_at: None,
            enabled_ns: 0,
        })
    }
}

/// `error` for `event`, said with the metrics that read it (the event named once).
fn cannot_count(machine: &Machine, metrics: &[&MetricDef], event: &str, error: Error) -> Error {
    let why = error.message();
    let why = why.strip_prefix(&format!("{event}: ")).unwrap_or(why);
    let readers: Vec<&str> = metrics
        .iter()
        .filter(|m| events_needed(machine, &[**m]).iter().any(|e| e == event))
        .map(|m| m.name)
        .collect();
    let message = format!(
        "metric {} reads `{event}`, which does not count here: {why}",
        readers.join(", ")
    );
    let mut said = Error::new(error.kind(), message);
    if let Some(errno) = error.errno() {
        said = said.with_errno(errno);
    }
    match error.hint() {
        Some(hint) => said.with_hint(hint.to_string()),
        None => said,
    }
}

impl MetricSet {
    /// The metrics, in the order named.
    pub fn metrics(&self) -> &[&'static MetricDef] {
        &self.metrics
    }

    /// The events counted for them, each once, in the set's order.
    pub fn events(&self) -> &[String] {
        &self.events
    }

    /// Starts counting (and the clock of `duration_time`).
    ///
    /// # Errors
    /// As [`Group::enable`].
    pub fn enable(&mut self) -> Result<()> {
        self.set.enable()?;
        self.enabled_at.get_or_insert_with(counterhal_time::real_ns);
        Ok(())
    }

    /// Stops counting (and the clock).
    ///
    /// # Errors
    /// As [`Group::disable`].
    pub fn disable(&mut self) -> Result<()> {
        self.set.disable()?;
        if let Some(at) = self.enabled_at.take() {
            self.enabled_ns += counterhal_time::real_ns().saturating_sub(at);
        }
        Ok(())
    }

    /// Reads the events and evaluates every metric over the time the set was enabled.
    ///
    /// # Errors
    /// As [`Group::read`].
    pub fn read(&mut self) -> Result<Vec<MetricValue>> {
        self.set.read(&mut self.readings)?;
        let running = self
            .enabled_at
            .map_or(0, |at| counterhal_time::real_ns().saturating_sub(at));
        let length_ns = self.enabled_ns + running;
        let counted = self.readings();
        Ok(self
            .metrics
            .iter()
            .map(|metric| MetricValue {
                name: metric.name,
                value: evaluate(&self.facts, metric, &counted, length_ns),
                unit: metric.unit,
                threshold: classify(&self.facts, metric, &counted, length_ns),
            })
            .collect())
    }

    /// The events' readings of the last [`read`](MetricSet::read), by name, with the energy of
    /// a count where the PMU says the event counts Joules.
    pub fn readings(&self) -> Vec<NamedReading> {
        self.events
            .iter()
            .zip(&self.readings)
            .zip(self.set.events())
            .map(|((name, reading), resolved)| NamedReading {
                name: name.clone(),
                reading: Some(*reading),
                joules_per_count: resolved
                    .unit
                    .as_ref()
                    .filter(|unit| unit.name == "Joules")
                    .map(|unit| unit.scale),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;

    use super::*;

    /// Oracle: perf 6.1's `perf stat -M IPC` where the CPU has no PMU (`cycles` and
    /// `instructions` do not open: perf says the metric cannot be computed). A metric whose
    /// event does not count here is refused by the metric's name and the event's; a name that
    /// is no metric is bad input.
    #[test]
    fn a_metric_that_cannot_count_here_is_refused_by_name() {
        let Ok(backend) = crate::setup::open_default() else {
            skip!(Need::System, "no counter backend here");
        };
        let this_thread = Target::this_thread();
        let options = OpenOptions::default();
        let unknown = backend.open_metrics(&["No_Such_Metric"], &this_thread, &options);
        let e = unknown.err().expect("not a metric");
        assert_eq!(e.kind(), counterhal_hal::ErrorKind::InvalidInput, "{e}");
        assert!(e.message().contains("No_Such_Metric"), "{e}");
        if crate::set::query(&backend, "cycles").usable() {
            return; // a PMU here: IPC counts
        }
        let e = backend
            .open_metrics(&["IPC"], &this_thread, &options)
            .err()
            .expect("no cycles here");
        assert!(e.message().contains("metric IPC reads `"), "{e}");
    }
}
