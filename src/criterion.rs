//! A [criterion](https://docs.rs/criterion) measurement that counts an event by name (Cargo
//! feature `criterion`): any name [`Chosen::open_named`] takes — a hardware or software
//! event, a preset, a tracepoint, a native event — counted on the benchmarking thread, and
//! labelled with that name in criterion's report.
//!
//! ```no_run
//! use criterion::{Criterion, criterion_group, criterion_main};
//! use counterhal::criterion::EventMeasurement;
//!
//! fn faults(c: &mut Criterion<EventMeasurement>) {
//!     // 33 MiB: above glibc's largest mmap threshold, fresh pages each time.
//!     c.bench_function("vec of 33 MiB", |b| b.iter(|| vec![1u8; 33 << 20]));
//! }
//!
//! fn page_faults() -> Criterion<EventMeasurement> {
//!     let measurement = EventMeasurement::new("page-faults").expect("page-faults counts here");
//!     Criterion::default().with_measurement(measurement)
//! }
//!
//! criterion_group! { name = benches; config = page_faults(); targets = faults }
//! criterion_main!(benches);
//! ```
//!
//! `examples/criterion_events.rs` runs one (`cargo run --release --features criterion
//! --example criterion_events -- --bench`); `cargo test` builds it and tests/examples.rs
//! runs it briefly, an exact tracepoint twice with criterion's plots on.
//!
//! It is written for criterion 0.8. An exact event gives every sample the same count per
//! iteration, where criterion's statistics expect a spread: the measurement hands criterion
//! each sample nudged by 2^-40 of its count, up and down in turn (far below one event and
//! every digit criterion prints), so that a run compared with the one before is reported
//! (no change for an equal count) and plotted rather than panicking.

use std::cell::{Cell, RefCell};

use ::criterion::Throughput;
use ::criterion::measurement::{Measurement, ValueFormatter};
use counterhal_hal::{EventSet, Group, OpenOptions, Reading, Result};

use crate::{AnyGroup, Chosen, Target, open_default};

/// Counts one event on the thread that benchmarks, as criterion's [`Measurement`]: each
/// sample is the event's count (scaled where the kernel multiplexed it) between criterion's
/// `start` and `end`.
pub struct EventMeasurement {
    set: RefCell<EventSet<AnyGroup>>,
    labels: Labels,
    /// Whether the next sample handed to criterion's statistics is nudged up (else down):
    /// see [`SUB_COUNT`].
    nudge_up: Cell<bool>,
}

/// The part of a count, 2^-40, by which each sample criterion's statistics receive is nudged,
/// up and down in turn (at least 2^-40 of one event, for a count of 0).
///
/// An exact event (a tracepoint, the page faults of a fixed workload) gives each sample the
/// same count per iteration: criterion's Welch t-test of two such runs is 0/0, its bootstrap
/// keeps no finite value, and criterion 0.8.2's t-test plot indexes that empty distribution
/// and panics (`kde::sweep`, on a run that has a previous one to compare with). Nudged, the
/// samples have a spread far below one event and below every digit criterion prints: the
/// t-test is defined, an unchanged count is reported as no change and a changed one as a
/// change, and the plots draw. The readings themselves are never nudged.
const SUB_COUNT: f64 = 1.0 / (1u64 << 40) as f64;

/// The units criterion prints: the event's name, and per unit of throughput.
struct Labels {
    name: &'static str,
    per_bit: &'static str,
    per_byte: &'static str,
    per_element: &'static str,
}

impl EventMeasurement {
    /// Counts `name` on this thread with the first backend that works here
    /// ([`open_default`]).
    ///
    /// # Errors
    /// As [`open_default`] and [`Chosen::open_named`]: a name no backend knows, an event this
    /// machine cannot count.
    pub fn new(name: &str) -> Result<Self> {
        Self::with(&open_default()?, name)
    }

    /// Counts `name` on this thread with `chosen`'s backend.
    ///
    /// # Errors
    /// As [`Chosen::open_named`].
    pub fn with(chosen: &Chosen, name: &str) -> Result<Self> {
        let mut set =
            chosen.open_named(&[name], &Target::this_thread(), &OpenOptions::grouped())?;
        set.enable()?;
        // criterion takes its units as `&'static str`: each measurement's four labels live
        // as long as the process (a benchmark makes a handful).
        let leak = |text: String| -> &'static str { Box::leak(text.into_boxed_str()) };
        Ok(Self {
            set: RefCell::new(set),
            labels: Labels {
                name: leak(name.to_string()),
                per_bit: leak(format!("{name}/bit")),
                per_byte: leak(format!("{name}/byte")),
                per_element: leak(format!("{name}/element")),
            },
            nudge_up: Cell::new(true),
        })
    }

    /// The event's name, as criterion labels its values.
    pub fn name(&self) -> &'static str {
        self.labels.name
    }

    /// The event's count so far, scaled to its enabled time.
    ///
    /// # Panics
    /// When the counter cannot be read (the kernel refused the read of an event it opened);
    /// criterion's measurement has no way to return the error.
    fn now(&self) -> u64 {
        let mut reading = [Reading::default()];
        if let Err(e) = self.set.borrow_mut().read(&mut reading) {
            panic!("counterhal: reading `{}` failed: {e}", self.labels.name);
        }
        reading[0].scaled().unwrap_or(0)
    }
}

impl Measurement for EventMeasurement {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        self.now()
    }

    fn end(&self, start: u64) -> u64 {
        self.now().saturating_sub(start)
    }

    fn add(&self, a: &u64, b: &u64) -> u64 {
        a.saturating_add(*b)
    }

    fn zero(&self) -> u64 {
        0
    }

    /// The count, nudged by 2^-40 of it (of one event for 0), up and down in turn: see the
    /// module's documentation.
    fn to_f64(&self, value: &u64) -> f64 {
        let count = *value as f64;
        let up = self.nudge_up.replace(!self.nudge_up.get());
        let nudge = count.max(1.0) * SUB_COUNT;
        if up { count + nudge } else { count - nudge }
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &self.labels
    }
}

impl ValueFormatter for Labels {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        self.name
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let (per, label) = match *throughput {
            Throughput::Bits(n) => (n, self.per_bit),
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) => (n, self.per_byte),
            // Elements first, as criterion's own wall-time formatter reports the pair.
            Throughput::Elements(n) | Throughput::ElementsAndBytes { elements: n, .. } => {
                (n, self.per_element)
            }
        };
        let per = per.max(1) as f64;
        for value in values {
            *value /= per;
        }
        label
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;

    /// The measurement's page faults between `start` and `end` cover the fresh pages touched
    /// in between (the kernel's exact count, as `perf stat -e page-faults` reads it: at least
    /// one fault per fresh 4 KiB page), and criterion labels them with the event's name.
    #[test]
    fn a_sample_counts_the_event_and_is_labelled_with_its_name() {
        let Ok(measurement) = EventMeasurement::new("page-faults") else {
            skip!(Need::System, "no backend here counts page-faults");
        };
        let start = measurement.start();
        let pages = 256;
        let touched = std::hint::black_box(vec![1u8; pages * 4096 + (32 << 20)]);
        let count = measurement.end(start);
        drop(touched);
        assert!(
            count >= pages as u64,
            "{count} page faults for {pages} pages"
        );
        let mut values = [10.0, 20.0];
        let formatter = measurement.formatter();
        assert_eq!(formatter.scale_values(10.0, &mut values), "page-faults");
        assert_eq!(
            formatter.scale_throughputs(10.0, &Throughput::Elements(10), &mut values),
            "page-faults/element"
        );
        assert_eq!(values, [1.0, 2.0]);
        assert_eq!(formatter.format_value(3.0), "3.0000 page-faults");
    }

    /// A whole criterion run on the measurement: a benchmark of a closure that touches fresh
    /// pages, briefly, through criterion's own driver.
    #[test]
    fn criterion_runs_a_benchmark_on_it() {
        let Ok(measurement) = EventMeasurement::new("page-faults") else {
            skip!(Need::System, "no backend here counts page-faults");
        };
        let mut criterion = ::criterion::Criterion::default()
            .with_measurement(measurement)
            .sample_size(10)
            .warm_up_time(Duration::from_millis(10))
            .measurement_time(Duration::from_millis(50))
            .without_plots();
        criterion.bench_function("fresh pages", |b| {
            b.iter(|| std::hint::black_box(vec![1u8; 64 << 10]))
        });
    }

    /// The values criterion's statistics receive are the count nudged by 2^-40 of it (of one
    /// event for 0), up and down in turn: a pair of samples averages to the count exactly,
    /// and two samples of one count differ.
    /// Oracle: the count itself (an exact count's samples), to the precision of an f64.
    #[test]
    fn samples_are_nudged_below_one_event_up_and_down_in_turn() {
        let Ok(measurement) = EventMeasurement::new("page-faults") else {
            skip!(Need::System, "no backend here counts page-faults");
        };
        for count in [0u64, 1, 8449, 1 << 40] {
            let (up, down) = (measurement.to_f64(&count), measurement.to_f64(&count));
            let nudge = (count as f64).max(1.0) / (1u64 << 40) as f64;
            assert_eq!((up, down), (count as f64 + nudge, count as f64 - nudge));
            assert_eq!((up + down) / 2.0, count as f64, "{count}");
        }
    }

    /// A name that is no event fails with the name in the error, before criterion runs.
    #[test]
    fn an_unknown_name_is_an_error_naming_it() {
        let Ok(chosen) = open_default() else {
            skip!(Need::System, "no backend works here");
        };
        let e = EventMeasurement::with(&chosen, "page-faultz")
            .err()
            .unwrap();
        assert!(e.to_string().contains("page-faultz"), "{e}");
    }
}
