//! Named regions of a program, measured as PAPI's `PAPI_hl_region_begin`/`_end` and LIKWID's
//! markers measure them: each thread that enters a region counts the events on itself; at
//! the region's end the counts, the wall-clock and CPU time since its begin are added to the
//! region's totals, with one more call. Regions nest (by different names) and may be entered
//! from any number of threads at once; the totals are reported as a table or as JSON.
//!
//! Two ways in:
//! - [`Regions`], made with a backend and event names, reported when the caller asks;
//! - the process-wide [`begin`] and [`end`], whose events come from `COUNTERHAL_REGION_EVENTS`
//!   and whose report is written when the program exits, to `COUNTERHAL_REGION_OUTPUT` (a
//!   path; standard error when unset) in `COUNTERHAL_REGION_FORMAT` (`table`, the default, or
//!   `json`).
//!
//! ```no_run
//! use counterhal::region;
//!
//! for _ in 0..3 {
//!     region::begin("solve")?;
//!     let v: Vec<u64> = (0..1_000_000).collect();
//!     std::hint::black_box(v);
//!     region::end("solve")?;
//! }
//! // At exit: a table with the calls, times and events of `solve`.
//! # Ok::<(), counterhal::Error>(())
//! ```

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use counterhal_hal::{Backend, BoxedGroup, Error, EventSet, Group, OpenOptions, Reading, Result};
use counterhal_hal::{ResolvedEvent, Target};

use crate::AnyBackend;

/// The events counted when `COUNTERHAL_REGION_EVENTS` is unset (those this machine cannot
/// count are left out, and the report says why).
pub const DEFAULT_EVENTS: &str = "cycles,instructions,task-clock,page-faults";

/// The environment variable naming the events of the process-wide regions (comma-separated).
pub const EVENTS_VAR: &str = "COUNTERHAL_REGION_EVENTS";
/// The environment variable naming the file the process-wide report is written to.
pub const OUTPUT_VAR: &str = "COUNTERHAL_REGION_OUTPUT";
/// The environment variable choosing the process-wide report's format: `table` or `json`.
pub const FORMAT_VAR: &str = "COUNTERHAL_REGION_FORMAT";

/// One region's totals over every call on every thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegionTotals {
    /// How many times the region was ended (a begin without an end is not counted).
    pub calls: u64,
    /// Wall-clock nanoseconds inside the region, summed over the calls.
    pub real_ns: u64,
    /// CPU nanoseconds the threads used inside the region, summed over the calls.
    pub cpu_ns: u64,
    /// Each event's raw count, time enabled and time running, summed over the calls.
    pub readings: Vec<Reading>,
    /// Each event's estimate (each call's count scaled by its own time running), summed.
    pub estimates: Vec<u64>,
    /// The threads that ran the region.
    pub threads: u64,
}

/// Every region's totals, and the events they count.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegionReport {
    /// The events counted, in column order.
    pub events: Vec<String>,
    /// The events asked for that could not be counted here, and why.
    pub left_out: Vec<(String, String)>,
    /// The regions by name.
    pub regions: BTreeMap<String, RegionTotals>,
}

/// A thread's counters for one [`Regions`], and the regions it is inside.
struct ThreadCounters {
    owner: usize,
    /// `None` when no event could be counted: the regions only time what they enclose.
    set: Option<EventSet<BoxedGroup>>,
    /// The regions this thread is inside, innermost last.
    open: Vec<OpenRegion>,
    /// Buffers of readings no open region holds, reused by the next begin.
    spare: Vec<Vec<Reading>>,
    /// Where readings are taken, kept so a begin or an end allocates nothing more.
    scratch: Vec<Reading>,
    /// The region names this thread has used (an open region names one by index); those
    /// ended at least once are marked (for the thread count).
    names: Vec<(String, bool)>,
}

/// A region a thread is inside: which, and the readings, wall and CPU time at its begin.
struct OpenRegion {
    name: usize,
    start: Vec<Reading>,
    real: u64,
    cpu: u64,
}

/// One call of a region, as its end adds it to the region's totals.
struct Call<'a> {
    /// Whether it is this thread's first call of the region.
    first_here: bool,
    real_ns: u64,
    cpu_ns: u64,
    /// The readings at its end and at its begin.
    now: &'a [Reading],
    then: &'a [Reading],
}

impl Call<'_> {
    /// Adds this call to `total`: one call, its times, each event's raw delta and estimate.
    fn add_to(&self, total: &mut RegionTotals) {
        total.calls += 1;
        total.threads += u64::from(self.first_here);
        total.real_ns = total.real_ns.saturating_add(self.real_ns);
        total.cpu_ns = total.cpu_ns.saturating_add(self.cpu_ns);
        let sums = total.readings.iter_mut().zip(total.estimates.iter_mut());
        for ((now, then), (sum, estimated)) in self.now.iter().zip(self.then).zip(sums) {
            let delta = Reading::new(
                now.value.saturating_sub(then.value),
                now.time_enabled.saturating_sub(then.time_enabled),
                now.time_running.saturating_sub(then.time_running),
            );
            *sum = Reading::new(
                sum.value.saturating_add(delta.value),
                sum.time_enabled.saturating_add(delta.time_enabled),
                sum.time_running.saturating_add(delta.time_running),
            );
            // A call that ran the whole time is exact; one that never ran adds nothing.
            let estimate = match delta.time_enabled {
                0 => delta.value,
                _ => delta.scaled().unwrap_or(0),
            };
            *estimated = estimated.saturating_add(estimate);
        }
    }
}

impl ThreadCounters {
    /// The index of `name` among this thread's region names, added on first use.
    fn name_index(&mut self, name: &str) -> usize {
        match self.names.iter().position(|(known, _)| known == name) {
            Some(index) => index,
            None => {
                self.names.push((name.to_string(), false));
                self.names.len() - 1
            }
        }
    }
}

thread_local! {
    static COUNTERS: RefCell<Vec<ThreadCounters>> = const { RefCell::new(Vec::new()) };
}

/// Region ids, so a thread's counters belong to one [`Regions`].
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// Named regions measured on a backend with a fixed list of events.
pub struct Regions {
    id: usize,
    backend: AnyBackend,
    events: Vec<ResolvedEvent>,
    left_out: Vec<(String, String)>,
    totals: Mutex<BTreeMap<String, RegionTotals>>,
}

impl std::fmt::Debug for Regions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Regions")
            .field("backend", &self.backend.label())
            .field("events", &self.events)
            .field("left_out", &self.left_out)
            .finish_non_exhaustive()
    }
}

impl Regions {
    /// Regions counting `names` on `backend`. A name this machine cannot count (unknown,
    /// unsupported, refused, or not opening beside the others) is left out and the report
    /// says why; the regions still time what they enclose.
    pub fn new(backend: AnyBackend, names: &[&str]) -> Regions {
        let mut events: Vec<ResolvedEvent> = Vec::new();
        let mut left_out = Vec::new();
        for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
            let fits = backend.resolve(name).and_then(|event| {
                let mut trial = events.clone();
                trial.push(event.clone());
                let options = OpenOptions::ungrouped();
                EventSet::open(&backend, trial, &Target::ThisThread, &options).map(|_| event)
            });
            match fits {
                Ok(event) => events.push(event),
                Err(e) => left_out.push((name.to_string(), e.to_string())),
            }
        }
        Regions {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            backend,
            events,
            left_out,
            totals: Mutex::new(BTreeMap::new()),
        }
    }

    /// The events counted, in order.
    pub fn events(&self) -> &[ResolvedEvent] {
        &self.events
    }

    /// Enters region `name` on the calling thread (its counters open on its first region).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) when this thread is
    /// already inside `name`; the backend's error when the thread's counters cannot open or
    /// be read.
    pub fn begin(&self, name: &str) -> Result<()> {
        self.with_counters(|counters| {
            let index = counters.name_index(name);
            if counters.open.iter().any(|open| open.name == index) {
                return Err(Error::invalid_input(format!(
                    "region `{name}` is already begun on this thread"
                ))
                .with_hint(
                    "end it before beginning it again, or give the inner one its own name",
                ));
            }
            let (real, cpu) = (crate::time::real_ns(), crate::time::thread_cpu_ns());
            if let Some(set) = &mut counters.set {
                set.read(&mut counters.scratch)?;
            }
            let mut start = counters.spare.pop().unwrap_or_default();
            start.clear();
            start.extend_from_slice(&counters.scratch);
            counters.open.push(OpenRegion {
                name: index,
                start,
                real,
                cpu,
            });
            Ok(())
        })
    }

    /// Leaves region `name` on the calling thread and adds what it counted to its totals.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) when this thread is not
    /// inside `name` (regions are per thread: a region begun on one thread is ended there);
    /// the backend's error when the counters cannot be read.
    pub fn end(&self, name: &str) -> Result<()> {
        self.with_counters(|counters| {
            let index = counters.names.iter().position(|(known, _)| known == name);
            let Some(at) = counters
                .open
                .iter()
                .rposition(|open| Some(open.name) == index)
            else {
                return Err(Error::invalid_input(format!(
                    "region `{name}` was not begun on this thread"
                ))
                .with_hint("call begin and end on the same thread, begin first"));
            };
            if let Some(set) = &mut counters.set {
                set.read(&mut counters.scratch)?;
            }
            let (real, cpu) = (crate::time::real_ns(), crate::time::thread_cpu_ns());
            let OpenRegion {
                name: index,
                start,
                real: real0,
                cpu: cpu0,
            } = counters.open.remove(at);
            let first_here = !std::mem::replace(&mut counters.names[index].1, true);
            let mut totals = self.totals.lock().unwrap_or_else(|e| e.into_inner());
            let call = Call {
                first_here,
                real_ns: real.saturating_sub(real0),
                cpu_ns: cpu.saturating_sub(cpu0),
                now: &counters.scratch,
                then: &start,
            };
            match totals.get_mut(name) {
                Some(total) => call.add_to(total),
                None => {
                    let mut total = RegionTotals {
                        readings: vec![Reading::default(); self.events.len()],
                        estimates: vec![0; self.events.len()],
                        ..RegionTotals::default()
                    };
                    call.add_to(&mut total);
                    totals.insert(name.to_string(), total);
                }
            }
            drop(totals);
            counters.spare.push(start);
            Ok(())
        })
    }

    /// Every region's totals so far (regions still open on some thread count up to their
    /// last end).
    pub fn report(&self) -> RegionReport {
        RegionReport {
            events: self.events.iter().map(|e| e.name.clone()).collect(),
            left_out: self.left_out.clone(),
            regions: self
                .totals
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }

    /// Runs `f` on the calling thread's counters for these regions, opening and enabling
    /// them first if this thread has none yet.
    fn with_counters<T>(&self, f: impl FnOnce(&mut ThreadCounters) -> Result<T>) -> Result<T> {
        COUNTERS.with(|cell| {
            let mut all = cell.borrow_mut();
            let index = match all.iter().position(|c| c.owner == self.id) {
                Some(index) => index,
                None => {
                    let set = if self.events.is_empty() {
                        None
                    } else {
                        let options = OpenOptions::ungrouped();
                        let mut set = EventSet::open(
                            &self.backend,
                            self.events.clone(),
                            &Target::ThisThread,
                            &options,
                        )?;
                        set.enable()?;
                        Some(set)
                    };
                    all.push(ThreadCounters {
                        owner: self.id,
                        scratch: vec![Reading::default(); self.events.len()],
                        set,
                        open: Vec::new(),
                        spare: Vec::new(),
                        names: Vec::new(),
                    });
                    all.len() - 1
                }
            };
            f(&mut all[index])
        })
    }
}

impl Drop for Regions {
    fn drop(&mut self) {
        // This thread's counters for these regions go with them (other threads' go when
        // those threads end, or stay idle: they belong to no live Regions).
        let _ = COUNTERS.try_with(|cell| {
            if let Ok(mut all) = cell.try_borrow_mut() {
                all.retain(|c| c.owner != self.id);
            }
        });
    }
}

impl RegionReport {
    /// The report as a table: one row per region with its calls, threads, wall-clock and CPU
    /// milliseconds, and each event's estimate; the events left out are named below it.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let name_width = self
            .regions
            .keys()
            .map(|n| n.len())
            .chain(std::iter::once("region".len()))
            .max()
            .unwrap_or(6);
        let widths: Vec<usize> = self.events.iter().map(|e| e.len().max(14)).collect();
        let _ = write!(
            out,
            "{:<name_width$} {:>8} {:>7} {:>12} {:>12}",
            "region", "calls", "threads", "real ms", "cpu ms"
        );
        for (event, width) in self.events.iter().zip(&widths) {
            let _ = write!(out, " {event:>width$}");
        }
        out.push('\n');
        for (name, totals) in &self.regions {
            let _ = write!(
                out,
                "{name:<name_width$} {:>8} {:>7} {:>12.3} {:>12.3}",
                totals.calls,
                totals.threads,
                totals.real_ns as f64 / 1e6,
                totals.cpu_ns as f64 / 1e6
            );
            for (estimate, width) in totals.estimates.iter().zip(&widths) {
                let _ = write!(out, " {estimate:>width$}");
            }
            out.push('\n');
        }
        for (name, why) in &self.left_out {
            let _ = writeln!(out, "# {name} not counted: {why}");
        }
        out
    }

    /// The report as one JSON document: `events`, `left_out` (`event`, `reason`) and
    /// `regions`, each with `name`, `calls`, `threads`, `real_ns`, `cpu_ns` and per event
    /// `value`, `time_enabled`, `time_running` and `estimate`.
    pub fn json(&self) -> String {
        let mut out = String::from("{\"events\":[");
        for (i, event) in self.events.iter().enumerate() {
            let _ = write!(out, "{}{}", comma(i), json_string(event));
        }
        out.push_str("],\"left_out\":[");
        for (i, (event, why)) in self.left_out.iter().enumerate() {
            let _ = write!(
                out,
                "{}{{\"event\":{},\"reason\":{}}}",
                comma(i),
                json_string(event),
                json_string(why)
            );
        }
        out.push_str("],\"regions\":[");
        for (i, (name, t)) in self.regions.iter().enumerate() {
            let _ = write!(
                out,
                "{}{{\"name\":{},\"calls\":{},\"threads\":{},\"real_ns\":{},\"cpu_ns\":{},\"counts\":[",
                comma(i),
                json_string(name),
                t.calls,
                t.threads,
                t.real_ns,
                t.cpu_ns
            );
            for (j, (event, (r, estimate))) in self
                .events
                .iter()
                .zip(t.readings.iter().zip(&t.estimates))
                .enumerate()
            {
                let _ = write!(
                    out,
                    "{}{{\"event\":{},\"value\":{},\"time_enabled\":{},\"time_running\":{},\"estimate\":{}}}",
                    comma(j),
                    json_string(event),
                    r.value,
                    r.time_enabled,
                    r.time_running,
                    estimate
                );
            }
            out.push_str("]}");
        }
        out.push_str("]}\n");
        out
    }
}

/// `,` before every item but the first.
fn comma(i: usize) -> &'static str {
    if i == 0 { "" } else { "," }
}

/// `text` as a JSON string, quoted and escaped.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The process-wide regions: the first backend that works here, the events of
/// [`EVENTS_VAR`], and a report written at exit. `Err` when no backend works.
fn global() -> Result<&'static Regions> {
    static GLOBAL: OnceLock<std::result::Result<Regions, Error>> = OnceLock::new();
    GLOBAL
        .get_or_init(|| {
            let chosen = crate::open_default(None)?;
            let names = std::env::var(EVENTS_VAR).unwrap_or_else(|_| DEFAULT_EVENTS.into());
            let names: Vec<&str> = names.split(',').collect();
            let regions = Regions::new(chosen.backend, &names);
            #[cfg(unix)]
            counterhal_process::at_exit(report_at_exit);
            Ok(regions)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Enters region `name` of the process-wide regions on the calling thread.
///
/// # Errors
/// As [`Regions::begin`]; the reason no backend works here, on the first call.
pub fn begin(name: &str) -> Result<()> {
    global()?.begin(name)
}

/// Leaves region `name` of the process-wide regions on the calling thread.
///
/// # Errors
/// As [`Regions::end`].
pub fn end(name: &str) -> Result<()> {
    global()?.end(name)
}

/// The process-wide regions' totals so far (`None` before the first [`begin`] or where no
/// backend works).
pub fn report() -> Option<RegionReport> {
    global().ok().map(Regions::report)
}

/// Writes the process-wide report as [`OUTPUT_VAR`] and [`FORMAT_VAR`] ask.
///
/// # Errors
/// The output file's error, naming it.
pub fn write_report() -> Result<()> {
    let Some(report) = report() else {
        return Ok(());
    };
    let text = match std::env::var(FORMAT_VAR).as_deref() {
        Ok("json") => report.json(),
        _ => report.table(),
    };
    match std::env::var_os(OUTPUT_VAR) {
        Some(path) if !path.is_empty() && path != "-" => std::fs::write(&path, text).map_err(|e| {
            Error::invalid_input(format!(
                "cannot write the region report to {}: {e}",
                std::path::Path::new(&path).display()
            ))
            .with_hint(format!("set {OUTPUT_VAR} to a writable path, or unset it"))
        }),
        _ => {
            eprint!("{text}");
            Ok(())
        }
    }
}

/// The at-exit hook: the report, or why it could not be written, on standard error; never a
/// panic across the C boundary.
#[cfg(unix)]
extern "C" fn report_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        if let Err(e) = write_report() {
            eprintln!("counterhal: {e}");
        }
    });
}
