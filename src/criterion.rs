//! A [criterion](https://docs.rs/criterion) measurement that counts events by name (Cargo
//! feature `criterion`): any names [`Chosen::open_named`] takes — hardware or software
//! events, presets, tracepoints, native events — counted on a [`Target`] with
//! [`OpenOptions`] (a domain, the threads the benchmark creates), the first labelling the
//! values in criterion's report.
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
//! A benchmark whose work runs on other threads (a rayon pool, scoped threads) counts them
//! with `inheriting`: the threads the benchmarking thread creates once the measurement is
//! open, running or ended, are counted with it (perf's `inherit`; a pool made before is not).
//! Several events are counted as one group, criterion's statistics taking the first, and
//! [`EventMeasurement::counts`] giving each one's count over every sample:
//!
//! ```no_run
//! use counterhal::criterion::EventMeasurement;
//! use counterhal::prelude::*;
//! use counterhal::OpenOptions;
//!
//! let options = OpenOptions::grouped().inheriting(true).in_domain(Domain::USER);
//! let measurement = EventMeasurement::open(&open_default()?, &["page-faults", "task-clock"],
//!                                          &Target::this_thread(), &options)?;
//! # Ok::<(), counterhal::Error>(())
//! ```
//!
//! `examples/criterion_events.rs` runs some (`cargo run --release --features criterion
//! --example criterion_events -- --bench`); `cargo test` builds it and tests/examples.rs
//! runs it briefly, an exact tracepoint twice with criterion's plots on.
//!
//! It is written for criterion 0.8. An exact event gives every sample the same count per
//! iteration, where criterion's statistics expect a spread: the measurement hands criterion
//! each sample nudged by 2^-40 of its count (a count of 0 by 2^-60 of the nanoseconds its
//! counter was enabled, which grow with the iterations as a count does), up and down in
//! turn, far below one event and every digit criterion prints, so that a run compared with
//! the one before is reported (no change for an equal count) and plotted rather than
//! panicking, and no sample stands out as an outlier. It prints a count as a whole number
//! where it is one per iteration (`8449 page-faults`, `0 alignment-faults`), never below 0.
//! Criterion prints the change against the run before itself: for an exact count, its
//! bounds are a few 2^-40 apart, printed `[−0.0000% +0.0000% +0.0000%]`.

use std::cell::{Cell, RefCell};

use ::criterion::Throughput;
use ::criterion::measurement::{Measurement, ValueFormatter};
use counterhal_hal::{EventSet, Group, OpenOptions, Reading, Result};

use crate::attach::Target;
use crate::chosen::Chosen;
use crate::group::AnyGroup;
use crate::setup::open_default;

/// Counts events on a target, as criterion's [`Measurement`]: each sample is the first
/// event's count (scaled where the kernel multiplexed it) between criterion's `start` and
/// `end`; the others are counted beside it ([`EventMeasurement::counts`]).
pub struct EventMeasurement {
    set: RefCell<EventSet<AnyGroup>>,
    /// The set's readings, read into without allocating, and each event's count at `start`
    /// and summed over the samples.
    readings: RefCell<Vec<Reading>>,
    started: RefCell<Vec<u64>>,
    totals: RefCell<Vec<u64>>,
    names: Vec<String>,
    labels: Labels,
    /// Whether the next sample handed to criterion's statistics is nudged up (else down):
    /// see [`SUB_COUNT`].
    nudge_up: Cell<bool>,
}

/// One sample of an [`EventMeasurement`], criterion's `Value`: the first event's count
/// over the sample's iterations, and the nanoseconds its counter was enabled meanwhile.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// The count (scaled where the kernel multiplexed the event).
    pub count: u64,
    /// Nanoseconds the counter was enabled (for a thread, about the CPU time it ran).
    pub time_enabled: u64,
}

impl Sample {
    /// A sample of `count` over `time_enabled` nanoseconds (for criterion's `iter_custom`).
    pub const fn new(count: u64, time_enabled: u64) -> Sample {
        Sample {
            count,
            time_enabled,
        }
    }
}

/// The part of a count, 2^-40, by which each sample criterion's statistics receive is nudged,
/// up and down in turn; a count of 0 is nudged by 2^-60 of its enabled nanoseconds.
///
/// An exact event (a tracepoint, the page faults of a fixed workload) gives each sample the
/// same count per iteration: criterion's Welch t-test of two such runs is 0/0, its bootstrap
/// keeps no finite value, and criterion 0.8.2's t-test plot indexes that empty distribution
/// and panics (`kde::sweep`, on a run that has a previous one to compare with). Nudged, the
/// samples have a spread far below one event and below every digit criterion prints: the
/// t-test is defined, an unchanged count is reported as no change and a changed one as a
/// change, and the plots draw. The nudge grows with the sample's iterations (the count, or
/// the enabled time, does), so that criterion, which divides each sample by its iterations,
/// sees two even clusters and no outlier. The readings themselves are never nudged.
const SUB_COUNT: f64 = 1.0 / (1u64 << 40) as f64;

/// The part of one enabled nanosecond by which a count of 0 is nudged: 2^-60, so that a
/// second of counting per iteration is nudged by under 10^-9 of an event.
const SUB_COUNT_A_NANOSECOND: f64 = SUB_COUNT / (1u64 << 20) as f64;

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
        Self::open(
            chosen,
            &[name],
            &Target::this_thread(),
            &OpenOptions::grouped(),
        )
    }

    /// Counts `names` on `target` with `options` (a domain; `inheriting` for the threads and
    /// processes the benchmark creates from now on), as [`Chosen::open_named`] opens them:
    /// criterion's statistics take the first name's count, and [`EventMeasurement::counts`]
    /// gives each one's.
    ///
    /// # Errors
    /// As [`Chosen::open_named`]; [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput)
    /// for no name.
    pub fn open(
        chosen: &Chosen,
        names: &[&str],
        target: &Target,
        options: &OpenOptions,
    ) -> Result<Self> {
        let Some(first) = names.first() else {
            return Err(counterhal_hal::Error::invalid_input(
                "a measurement counts at least one event; name one",
            ));
        };
        let mut set = chosen.open_named(names, target, options)?;
        set.enable()?;
        // criterion takes its units as `&'static str`: each measurement's four labels live
        // as long as the process (a benchmark makes a handful).
        let leak = |text: String| -> &'static str { Box::leak(text.into_boxed_str()) };
        Ok(Self {
            readings: RefCell::new(vec![Reading::default(); set.len()]),
            started: RefCell::new(vec![0; set.len()]),
            totals: RefCell::new(vec![0; set.len()]),
            set: RefCell::new(set),
            names: names.iter().map(|n| n.to_string()).collect(),
            labels: Labels {
                name: leak(first.to_string()),
                per_bit: leak(format!("{first}/bit")),
                per_byte: leak(format!("{first}/byte")),
                per_element: leak(format!("{first}/element")),
            },
            nudge_up: Cell::new(true),
        })
    }

    /// The first event's name, as criterion labels its values.
    pub fn name(&self) -> &'static str {
        self.labels.name
    }

    /// Each event's name and its count summed over every sample measured so far (criterion's
    /// warm-up too): their ratios are what to read, events per event.
    pub fn counts(&self) -> Vec<(&str, u64)> {
        let totals = self.totals.borrow();
        self.names
            .iter()
            .map(String::as_str)
            .zip(totals.iter().copied())
            .collect()
    }

    /// Reads the set into `readings`: the first event's count so far (scaled to its enabled
    /// time) and its enabled time.
    ///
    /// # Panics
    /// When the counters cannot be read (the kernel refused the read of an event it opened);
    /// criterion's measurement has no way to return the error.
    fn now(&self) -> Sample {
        let mut readings = self.readings.borrow_mut();
        if let Err(e) = self.set.borrow_mut().read(&mut readings) {
            panic!("counterhal: reading `{}` failed: {e}", self.labels.name);
        }
        Sample::new(readings[0].scaled().unwrap_or(0), readings[0].time_enabled)
    }
}

impl Measurement for EventMeasurement {
    type Intermediate = Sample;
    type Value = Sample;

    fn start(&self) -> Sample {
        let now = self.now();
        let readings = self.readings.borrow();
        for (started, reading) in self.started.borrow_mut().iter_mut().zip(readings.iter()) {
            *started = reading.scaled().unwrap_or(0);
        }
        now
    }

    fn end(&self, start: Sample) -> Sample {
        let now = self.now();
        let readings = self.readings.borrow();
        let started = self.started.borrow();
        for ((total, reading), started) in self
            .totals
            .borrow_mut()
            .iter_mut()
            .zip(readings.iter())
            .zip(started.iter())
        {
            let count = reading.scaled().unwrap_or(0).saturating_sub(*started);
            *total = total.saturating_add(count);
        }
        Sample::new(
            now.count.saturating_sub(start.count),
            now.time_enabled.saturating_sub(start.time_enabled),
        )
    }

    fn add(&self, a: &Sample, b: &Sample) -> Sample {
        Sample::new(
            a.count.saturating_add(b.count),
            a.time_enabled.saturating_add(b.time_enabled),
        )
    }

    fn zero(&self) -> Sample {
        Sample::default()
    }

    /// The count, nudged by 2^-40 of it (a count of 0 by 2^-60 of its enabled nanoseconds),
    /// up and down in turn: see the module's documentation.
    fn to_f64(&self, value: &Sample) -> f64 {
        let count = value.count as f64;
        let up = self.nudge_up.replace(!self.nudge_up.get());
        let nudge = if value.count > 0 {
            count * SUB_COUNT
        } else {
            value.time_enabled.max(1) as f64 * SUB_COUNT_A_NANOSECOND
        };
        if up { count + nudge } else { count - nudge }
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &self.labels
    }
}

/// A count per iteration as printed: a whole number where it is one but for the nudge
/// (within 2^-30 of it), else four significant digits as criterion prints; never below 0,
/// where only a nudge of 0 goes.
fn count_text(value: f64) -> String {
    let value = value.max(0.0);
    let whole = value.round();
    if (value - whole).abs() <= whole.max(1.0) / (1u64 << 30) as f64 {
        format!("{whole:.0}")
    } else if value < 10.0 {
        format!("{value:.4}")
    } else if value < 100.0 {
        format!("{value:.3}")
    } else if value < 1000.0 {
        format!("{value:.2}")
    } else if value < 10000.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}

impl ValueFormatter for Labels {
    fn format_value(&self, value: f64) -> String {
        format!("{:>6} {}", count_text(value), self.name)
    }

    fn format_throughput(&self, throughput: &Throughput, value: f64) -> String {
        let mut values = [value];
        let label = self.scale_throughputs(value, throughput, &mut values);
        format!("{:>6} {label}", count_text(values[0]))
    }

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
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;
    use counterhal_hal::Domain;

    /// 33 MiB: above glibc's largest mmap threshold, so each vector is fresh pages from the
    /// kernel, 8,448 of 4 KiB, each faulting once when first written.
    const FRESH: usize = 33 << 20;

    /// The fewest page faults that writing `FRESH` fresh bytes takes, transparent huge pages
    /// refused (`workload::refuse_huge_pages`); `None` where they cannot be.
    fn fresh_pages() -> Option<u64> {
        counterhal_conformance::workload::refuse_huge_pages().map(|page| FRESH as u64 / page)
    }

    /// The measurement's page faults between `start` and `end` cover the fresh pages touched
    /// in between (the kernel's exact count, as `perf stat -e page-faults` reads it: at least
    /// one fault per fresh base page, transparent huge pages refused), and criterion labels them with the event's name.
    #[test]
    fn a_sample_counts_the_event_and_is_labelled_with_its_name() {
        let Ok(measurement) = EventMeasurement::new("page-faults") else {
            skip!(Need::System, "no backend here counts page-faults");
        };
        let Some(fresh_pages) = fresh_pages() else {
            skip!(
                Need::Platform,
                "transparent huge pages cannot be refused here"
            );
        };
        let start = measurement.start();
        let touched = std::hint::black_box(vec![1u8; FRESH]);
        let sample = measurement.end(start);
        drop(touched);
        assert!(sample.count >= fresh_pages, "{sample:?}");
        assert!(sample.time_enabled > 0, "{sample:?}");
        let mut values = [10.0, 20.0];
        let formatter = measurement.formatter();
        assert_eq!(formatter.scale_values(10.0, &mut values), "page-faults");
        assert_eq!(
            formatter.scale_throughputs(10.0, &Throughput::Elements(10), &mut values),
            "page-faults/element"
        );
        assert_eq!(values, [1.0, 2.0]);
        assert_eq!(formatter.format_value(3.5), "3.5000 page-faults");
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

    /// The values criterion's statistics receive are the count nudged by 2^-40 of it (a count
    /// of 0 by 2^-60 of its enabled nanoseconds), up and down in turn: a pair of samples
    /// averages to the count exactly, and two samples of one count differ.
    /// Oracle: the count itself (an exact count's samples), to the precision of an f64.
    #[test]
    fn samples_are_nudged_below_one_event_up_and_down_in_turn() {
        let Ok(measurement) = EventMeasurement::new("page-faults") else {
            skip!(Need::System, "no backend here counts page-faults");
        };
        for (count, enabled) in [
            (0u64, 1_000_000u64),
            (0, 0),
            (1, 5),
            (8449, 7),
            (1 << 40, 0),
        ] {
            let sample = Sample::new(count, enabled);
            let (up, down) = (measurement.to_f64(&sample), measurement.to_f64(&sample));
            let nudge = if count > 0 {
                count as f64 / (1u64 << 40) as f64
            } else {
                enabled.max(1) as f64 / 2f64.powi(60)
            };
            assert_eq!((up, down), (count as f64 + nudge, count as f64 - nudge));
            assert_eq!((up + down) / 2.0, count as f64, "{count}");
        }
    }

    /// A count that is whole per iteration prints as a whole number, whatever the nudge left
    /// of it, and a count of 0 as 0, never `-0.0000` (which a count of 0 nudged down printed);
    /// other counts print as criterion prints numbers, four significant digits.
    /// Oracle: the counts themselves, and criterion 0.8's `format::short` for the rest.
    #[test]
    fn an_exact_count_prints_as_a_whole_number() {
        let Ok(measurement) = EventMeasurement::new("page-faults") else {
            skip!(Need::System, "no backend here counts page-faults");
        };
        let formatter = measurement.formatter();
        let nudge = 1.0 / (1u64 << 40) as f64;
        for (value, printed) in [
            (-nudge, "     0 page-faults"),
            (-1e-18, "     0 page-faults"),
            (nudge, "     0 page-faults"),
            (1.0 - nudge, "     1 page-faults"),
            (8449.0 * (1.0 + nudge), "  8449 page-faults"),
            (0.5, "0.5000 page-faults"),
            (12.25, "12.250 page-faults"),
            (30_079_331.27, "30079331 page-faults"),
        ] {
            assert_eq!(formatter.format_value(value), printed, "{value}");
        }
        assert_eq!(
            formatter.format_throughput(&Throughput::Elements(2), 2.0 - nudge),
            "     1 page-faults/element"
        );
    }

    /// A name that is no event fails with the name in the error, before criterion runs; so
    /// does no name at all.
    #[test]
    fn an_unknown_name_is_an_error_naming_it() {
        let Ok(chosen) = open_default() else {
            skip!(Need::System, "no backend works here");
        };
        let e = EventMeasurement::with(&chosen, "page-faultz")
            .err()
            .unwrap();
        assert!(e.to_string().contains("page-faultz"), "{e}");
        let e = EventMeasurement::open(
            &chosen,
            &[],
            &Target::this_thread(),
            &OpenOptions::grouped(),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("at least one event"), "{e}");
    }

    /// What criterion kept of one benchmark it ran on `measurement`: each sample's value per
    /// iteration, and how many of them its Tukey fences call outliers (as its report counts
    /// them: beyond the mild fences).
    struct Kept {
        per_iteration: Vec<f64>,
        outliers: usize,
    }

    /// Runs `routine` as criterion benchmark `name` on `measurement`, `samples` samples, its
    /// files in a directory of this process, and reads back what criterion kept
    /// (`new/sample.json`, `new/tukey.json`).
    fn run_criterion(
        measurement: EventMeasurement,
        name: &str,
        samples: usize,
        mut routine: impl FnMut(),
    ) -> Kept {
        let home = std::env::temp_dir().join(format!(
            "counterhal-criterion-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&home);
        let mut criterion = ::criterion::Criterion::default()
            .with_measurement(measurement)
            .output_directory(&home)
            .sample_size(samples)
            .nresamples(1000)
            .warm_up_time(Duration::from_millis(20))
            .measurement_time(Duration::from_millis(200))
            .without_plots();
        criterion.bench_function(name, |b| b.iter(&mut routine));
        let read = |file: &str| -> serde_json::Value {
            let path: PathBuf = [home.as_path(), Path::new(name), Path::new("new")]
                .iter()
                .collect::<PathBuf>()
                .join(file);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            serde_json::from_str(&text).unwrap()
        };
        let numbers = |value: &serde_json::Value| -> Vec<f64> {
            value
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect()
        };
        let sample = read("sample.json");
        let (iters, times) = (numbers(&sample["iters"]), numbers(&sample["times"]));
        let fences = numbers(&read("tukey.json"));
        let _ = std::fs::remove_dir_all(&home);
        let per_iteration: Vec<f64> = times.iter().zip(&iters).map(|(t, i)| t / i).collect();
        let outliers = per_iteration
            .iter()
            .filter(|v| **v < fences[1] || **v > fences[2])
            .count();
        Kept {
            per_iteration,
            outliers,
        }
    }

    /// A benchmark whose event never happens (`alignment-faults`: x86 fixes misaligned
    /// accesses in hardware, and the kernel counts none) gives criterion no outlier: the
    /// nudge of a count of 0 grows with the sample's iterations, where a fixed nudge, divided
    /// by them, made criterion's first samples outliers (12 of 100, 2 of 20).
    /// Oracle: criterion 0.8's own Tukey fences (`tukey.json`) over its samples
    /// (`sample.json`), and the kernel's count of 0 (`perf stat -e alignment-faults`).
    #[test]
    fn a_count_of_zero_gives_criterion_no_outliers() {
        let Ok(chosen) = open_default() else {
            skip!(Need::System, "no backend works here");
        };
        let Ok(measurement) = EventMeasurement::open(
            &chosen,
            &["alignment-faults"],
            &Target::this_thread(),
            &OpenOptions::grouped(),
        ) else {
            skip!(Need::System, "no backend here counts alignment-faults");
        };
        let kept = run_criterion(measurement, "zero", 40, || {
            std::hint::black_box(std::hint::black_box(3u64).wrapping_mul(7));
        });
        assert!(
            kept.per_iteration.iter().all(|v| v.abs() < 1e-9),
            "{:?}",
            kept.per_iteration
        );
        assert_eq!(kept.outliers, 0, "{:?}", kept.per_iteration);
    }

    /// Two threads the benchmark spawns on each iteration, each making a vector of fresh
    /// pages, are counted with `inheriting`, as criterion's values show (at least 2 x 8,448
    /// page faults an iteration), and not without (the spawning thread's own few); so is a
    /// worker made once and kept running, as a rayon pool's are, whose counts are read while it
    /// runs.
    /// Oracle: the kernel's page faults of a fresh page (one each, as `perf stat -e
    /// page-faults` counts them), and perf's `inherit`, which sums the counts of the children
    /// running and ended into the parent's read (kernel/events/core.c, `perf_event_read_value`).
    #[test]
    fn a_benchmark_spawning_threads_counts_their_work() {
        let Ok(chosen) = open_default() else {
            skip!(Need::System, "no backend works here");
        };
        let spawning = || {
            std::thread::scope(|scope| {
                for _ in 0..2 {
                    scope.spawn(|| std::hint::black_box(vec![1u8; FRESH]));
                }
            });
        };
        let mean =
            |kept: &Kept| kept.per_iteration.iter().sum::<f64>() / kept.per_iteration.len() as f64;
        let open = |inherit: bool| {
            EventMeasurement::open(
                &chosen,
                &["page-faults"],
                &Target::this_thread(),
                &OpenOptions::grouped().inheriting(inherit),
            )
        };
        let Ok(inheriting) = open(true) else {
            skip!(
                Need::System,
                "no backend here counts page-faults of the threads a thread makes"
            );
        };
        let Some(fresh_pages) = fresh_pages() else {
            skip!(
                Need::Platform,
                "transparent huge pages cannot be refused here"
            );
        };
        let counted = run_criterion(inheriting, "threads", 10, spawning);
        assert!(
            mean(&counted) >= 2.0 * fresh_pages as f64,
            "{:?}",
            counted.per_iteration
        );
        let alone = run_criterion(open(false).unwrap(), "alone", 10, spawning);
        assert!(
            mean(&alone) < fresh_pages as f64,
            "{:?}",
            alone.per_iteration
        );

        // A worker made after the measurement opened and still running when it is read.
        let measurement = open(true).unwrap();
        let (done, wait) = std::sync::mpsc::channel();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let start = measurement.start();
        let worker = std::thread::spawn(move || {
            let pages = std::hint::black_box(vec![1u8; FRESH]);
            done.send(()).unwrap();
            stopped.recv().ok();
            drop(pages);
        });
        wait.recv().unwrap();
        let sample = measurement.end(start);
        stop.send(()).unwrap();
        worker.join().unwrap();
        assert!(sample.count >= fresh_pages, "{sample:?}");
    }

    /// Several events are counted together, criterion's values being the first's and
    /// `counts` giving each: the page faults of fresh pages, and the task-clock time they
    /// took; a domain given in the options applies (the page faults of pages written in user
    /// space are counted in user space, none in the kernel).
    /// Oracle: the kernel's page faults of a fresh page, one each, taken in user mode (the
    /// fault's registers are the user's: `perf_exclude_event`, kernel/events/core.c).
    #[test]
    fn several_events_and_a_domain_are_counted() {
        let Ok(chosen) = open_default() else {
            skip!(Need::System, "no backend works here");
        };
        let names = ["page-faults", "task-clock"];
        let open = |domain| {
            EventMeasurement::open(
                &chosen,
                &names,
                &Target::this_thread(),
                &OpenOptions::grouped().in_domain(domain),
            )
        };
        let Ok(user) = open(Domain::USER) else {
            skip!(
                Need::System,
                "no backend here counts page-faults and task-clock"
            );
        };
        let Some(fresh_pages) = fresh_pages() else {
            skip!(
                Need::Platform,
                "transparent huge pages cannot be refused here"
            );
        };
        let start = user.start();
        std::hint::black_box(vec![1u8; FRESH]);
        let sample = user.end(start);
        assert_eq!(user.name(), "page-faults");
        assert!(sample.count >= fresh_pages, "{sample:?}");
        let counts = user.counts();
        assert_eq!(counts[0], ("page-faults", sample.count));
        assert_eq!(counts[1].0, "task-clock");
        assert!(counts[1].1 > 0, "{counts:?}");
        let Ok(kernel) = open(Domain::KERNEL) else {
            skip!(
                Need::Privilege,
                "the kernel's domain is not counted for this user"
            );
        };
        let start = kernel.start();
        std::hint::black_box(vec![1u8; FRESH]);
        let sample = kernel.end(start);
        assert!(sample.count < fresh_pages / 8, "{sample:?}");
    }
}
