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
//! Hostile corners, each refused with an error rather than a panic or a deadlock:
//! - **signals**: regions are not async-signal-safe; a region call made from a signal handler
//!   that interrupted one on the same thread is refused (`Busy`);
//! - **a thread's end**: from a destructor that runs after the thread's own thread-locals
//!   are gone (a `pthread_key` destructor), a region call is refused (`Unsupported`);
//! - **`fork()`**: nothing carries over to the child (PAPI's rule). [`Regions`] made in the
//!   parent refuse the child's calls; the process-wide regions re-initialise in the child,
//!   which counts its own threads and writes its own report, to `COUNTERHAL_REGION_OUTPUT`
//!   with `.PID` appended; a region begun before the fork cannot be ended in the child.
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

use counterhal_hal::BackendExt;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, Once, OnceLock};

use counterhal_hal::{Backend, BoxedGroup, Error, EventSet, Group, OpenOptions, Reading, Result};
use counterhal_hal::{BackendTarget, ResolvedEvent};

use crate::chosen::AnyBackend;
use crate::set::trial_for_add;

mod names;
mod report;

use names::Names;
use report::Call;
pub use report::{RegionReport, RegionTotals};

/// The events counted when `COUNTERHAL_REGION_EVENTS` is unset (those this machine cannot
/// count are left out, and the report says why).
pub const DEFAULT_EVENTS: &str = "cycles,instructions,task-clock,page-faults";

/// The environment variable naming the events of the process-wide regions (comma-separated).
pub const EVENTS_VAR: &str = "COUNTERHAL_REGION_EVENTS";
/// The environment variable naming the file the process-wide report is written to.
pub const OUTPUT_VAR: &str = "COUNTERHAL_REGION_OUTPUT";
/// The environment variable choosing the process-wide report's format: `table` or `json`.
pub const FORMAT_VAR: &str = "COUNTERHAL_REGION_FORMAT";

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
    /// The region names this thread has used (an open region names one by index).
    names: Names,
}

/// A region a thread is inside: which, and the readings, wall and CPU time at its begin.
struct OpenRegion {
    name: usize,
    start: Vec<Reading>,
    real: u64,
    cpu: u64,
}

thread_local! {
    /// This thread's counters, one per [`Regions`] it used; gone once the thread's
    /// destructors ran (a region call from a later destructor is refused).
    // Const already: clippy's missing_const_for_thread_local misreads thread_local!'s expansion
    // on targets that keep thread locals in emulated TLS (OpenBSD), and the allow says so.
    #[allow(clippy::missing_const_for_thread_local)]
    static COUNTERS: RefCell<Vec<ThreadCounters>> = const { RefCell::new(Vec::new()) };
    /// Whether this thread is inside a region call: one made while it is (from a signal
    /// handler that interrupted it) is refused. No destructor: it lives as long as the thread.
    #[allow(clippy::missing_const_for_thread_local)]
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` as this thread's one region call: refused with
/// [`ErrorKind::Busy`](crate::ErrorKind::Busy) when the thread is inside one already (a
/// signal handler interrupted it), where going on would deadlock or find its state borrowed.
fn one_at_a_time<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    if INSIDE.with(|inside| inside.replace(true)) {
        return Err(Error::new(
            counterhal_hal::ErrorKind::Busy,
            "a region call was made inside another on the same thread (from a signal handler): \
             regions are not async-signal-safe",
        )
        .with_hint("begin and end regions outside signal handlers"));
    }
    let result = f();
    INSIDE.with(|inside| inside.set(false));
    result
}

/// Region ids, so a thread's counters belong to one [`Regions`].
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// Named regions measured on a backend with a fixed list of events.
pub struct Regions {
    id: usize,
    /// The process they were made in: nothing carries over to a child after `fork()`.
    pid: u32,
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
        let options = OpenOptions::ungrouped();
        for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
            // Opened beside what competes with it for counters, as an add is
            // (`trial_for_add`): N events cost O(N) opens, not the whole set at each.
            let fits = backend.resolve(name).and_then(|event| {
                let trial = trial_for_add(backend.capabilities(), &options, &events, &event);
                counterhal_hal::open_set(&backend, trial, &BackendTarget::ThisThread, &options)
                    .map(|_| event)
            });
            match fits {
                Ok(event) => events.push(event),
                Err(e) => left_out.push((name.to_string(), e.to_string())),
            }
        }
        Regions {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            pid: std::process::id(),
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
    /// already inside `name`, or when these regions were made in the parent of this process
    /// (nothing carries over a `fork()`); [`ErrorKind::Busy`](crate::ErrorKind::Busy) when
    /// called inside another region call (a signal handler);
    /// [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported) from a thread's destructors
    /// once its counters are gone; the backend's error when the thread's counters cannot
    /// open or be read.
    pub fn begin(&self, name: &str) -> Result<()> {
        one_at_a_time(|| self.begin_in(name, std::process::id()))
    }

    /// [`Regions::begin`] in process `pid` (asked before the readings, so that the asking is
    /// not counted in the region).
    fn begin_in(&self, name: &str, pid: u32) -> Result<()> {
        self.same_process(pid)?;
        self.with_counters(|counters| {
            let index = counters.names.index_of(name);
            if counters.open.iter().any(|open| open.name == index) {
                return Err(Error::invalid_input(format!(
                    "region `{name}` is already begun on this thread"
                ))
                .with_hint(
                    "end it before beginning it again, or give the inner one its own name",
                ));
            }
            let (real, cpu) = (counterhal_time::real_ns(), counterhal_time::thread_cpu_ns());
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
    /// inside `name` (regions are per thread: a region begun on one thread is ended there,
    /// in the same process: one begun before a `fork()` is not ended in the child); the
    /// other errors of [`Regions::begin`].
    pub fn end(&self, name: &str) -> Result<()> {
        one_at_a_time(|| self.end_here(name))
    }

    /// [`Regions::end`], inside a region call.
    fn end_here(&self, name: &str) -> Result<()> {
        self.with_counters(|counters| {
            let index = counters.names.find(name);
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
            // The process is asked after the readings, so that the asking is not counted.
            self.same_process(std::process::id()).map_err(|_| {
                Error::invalid_input(format!(
                    "region `{name}` was begun in the parent process, before fork(): nothing \
                     carries over to a child"
                ))
                .with_hint("begin and end a region in the same process")
            })?;
            let (real, cpu) = (counterhal_time::real_ns(), counterhal_time::thread_cpu_ns());
            let OpenRegion {
                name: index,
                start,
                real: real0,
                cpu: cpu0,
            } = counters.open.remove(at);
            let first_here = counters.names.first_end(index);
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

    /// Refuses these regions in a process other than the one they were made in (`pid` is
    /// the caller's): after `fork()` nothing carries over to the child (PAPI's rule).
    fn same_process(&self, pid: u32) -> Result<()> {
        if pid == self.pid {
            return Ok(());
        }
        Err(Error::invalid_input(format!(
            "these regions were made in process {}, the parent of this one ({pid}): nothing \
             carries over a fork()",
            self.pid
        ))
        .with_hint("make new regions in the child (the process-wide ones re-initialise)"))
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
        let gone = || {
            Error::unsupported(
                "regions cannot count on this thread any more: it is ending and its region \
                 counters are gone (a call from a thread-local or pthread_key destructor)",
            )
            .with_hint("end the thread's regions before it returns")
        };
        let counting = COUNTERS.try_with(|cell| {
            let Ok(mut all) = cell.try_borrow_mut() else {
                return Err(Error::new(
                    counterhal_hal::ErrorKind::Busy,
                    "this thread's region counters are in use by the call it interrupted",
                ));
            };
            let index = match all.iter().position(|c| c.owner == self.id) {
                Some(index) => index,
                None => {
                    let set = if self.events.is_empty() {
                        None
                    } else {
                        let options = OpenOptions::ungrouped();
                        let mut set = counterhal_hal::open_set(
                            &self.backend,
                            self.events.clone(),
                            &BackendTarget::ThisThread,
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
                        names: Names::default(),
                    });
                    all.len() - 1
                }
            };
            f(&mut all[index])
        });
        counting.unwrap_or_else(|_| Err(gone()))
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

/// The process-wide regions of one process: those of the first process that used them, and
/// after each `fork()` whose child used them, the child's, chained (a child's memory holds
/// its ancestors' nodes, never used again, and its own).
struct Global {
    pid: u32,
    /// Whether an ancestor used regions before forking this process: its report then goes
    /// to a file of its own.
    forked: bool,
    regions: std::result::Result<Regions, Error>,
    next: OnceLock<Box<Global>>,
    /// Regions ended in this process so far.
    ended: AtomicU64,
    /// [`ended`](Global::ended) when the report was last written ([`NEVER`] before): the
    /// report at exit is left out when nothing ended since one written on request.
    reported_at: AtomicU64,
}

/// [`Global::reported_at`] before any report.
const NEVER: u64 = u64::MAX;

impl Global {
    /// The regions of process `pid`: the first backend that works here and the events of
    /// [`EVENTS_VAR`]; the report is written at exit (the hook is registered once: a child
    /// inherits it).
    fn new(pid: u32, forked: bool) -> Global {
        let regions = crate::setup::open_default().map(|chosen| {
            let names = std::env::var(EVENTS_VAR).unwrap_or_else(|_| DEFAULT_EVENTS.into());
            let names: Vec<&str> = names.split(',').collect();
            Regions::new(chosen.into_backend(), &names)
        });
        static AT_EXIT: Once = Once::new();
        #[cfg(unix)]
        AT_EXIT.call_once(|| {
            counterhal_process::at_exit(report_at_exit);
        });
        Global {
            pid,
            forked,
            regions,
            next: OnceLock::new(),
            ended: AtomicU64::new(0),
            reported_at: AtomicU64::new(NEVER),
        }
    }

    /// The regions, or why none work here.
    fn regions(&self) -> Result<&Regions> {
        self.regions.as_ref().map_err(Clone::clone)
    }
}

/// The first process's regions (the root of the chain).
static GLOBAL: OnceLock<Global> = OnceLock::new();

/// The process-wide regions of process `pid`, made on first use (in a child: its own).
/// They are made before they are stored, never under the cell's lock: a fork while another
/// thread makes them leaves the child no lock to wait on forever (at worst two threads make
/// them at once, and one set is dropped).
fn global_for(pid: u32) -> &'static Global {
    let mut node = match GLOBAL.get() {
        Some(root) => root,
        None => {
            let made = Global::new(pid, false);
            GLOBAL.get_or_init(|| made)
        }
    };
    loop {
        if node.pid == pid {
            return node;
        }
        match node.next.get() {
            Some(next) => node = next,
            None => {
                let made = Box::new(Global::new(pid, true));
                return node.next.get_or_init(|| made);
            }
        }
    }
}

/// The newest process-wide regions this process's memory holds: its own, or (in a child
/// that has not used them yet) its parent's; asked without a system call.
fn newest() -> Option<&'static Global> {
    let mut node = GLOBAL.get()?;
    while let Some(next) = node.next.get() {
        node = next;
    }
    Some(node)
}

/// Enters region `name` of the process-wide regions on the calling thread. In the child of
/// a `fork()` the first call makes the child's own regions: nothing carries over.
///
/// # Errors
/// As [`Regions::begin`]; the reason no backend works here, on the first call.
pub fn begin(name: &str) -> Result<()> {
    one_at_a_time(|| {
        let pid = std::process::id();
        global_for(pid).regions()?.begin_in(name, pid)
    })
}

/// Leaves region `name` of the process-wide regions on the calling thread.
///
/// # Errors
/// As [`Regions::end`] (a region begun before a `fork()` is not ended in the child).
pub fn end(name: &str) -> Result<()> {
    one_at_a_time(|| match newest() {
        Some(global) => {
            global.regions()?.end_here(name)?;
            global.ended.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        None => Err(
            Error::invalid_input(format!("region `{name}` was not begun: no region was"))
                .with_hint("call begin and end on the same thread, begin first"),
        ),
    })
}

/// This process's regions, if it used them (`None` in a child that did not).
fn this_process() -> Option<&'static Global> {
    newest().filter(|global| global.pid == std::process::id())
}

/// The process-wide regions' totals so far (`None` before the first [`begin`] of this
/// process, where no backend works, or inside another region call).
pub fn report() -> Option<RegionReport> {
    one_at_a_time(|| Ok(report_here())).ok().flatten()
}

/// [`report()`], inside a region call.
fn report_here() -> Option<RegionReport> {
    this_process()
        .and_then(|global| global.regions().ok())
        .map(Regions::report)
}

/// Writes the process-wide report as [`OUTPUT_VAR`] and [`FORMAT_VAR`] ask: to the path
/// [`OUTPUT_VAR`] names, with `.PID` appended in the child of a process that used regions
/// before forking it (each process writes its own); standard error when it is unset. A
/// process that used no regions writes nothing.
///
/// # Errors
/// The output file's error, naming it; [`ErrorKind::Busy`](crate::ErrorKind::Busy) inside
/// another region call.
pub fn write_report() -> Result<()> {
    one_at_a_time(write_report_here)
}

/// [`write_report`], inside a region call.
fn write_report_here() -> Result<()> {
    let Some(global) = this_process() else {
        return Ok(());
    };
    let Some(report) = report_here() else {
        return Ok(());
    };
    let ended = global.ended.load(Ordering::Relaxed);
    // An unknown format still gets the report (as a table), and the error says so.
    let (text, format_error) = match std::env::var(FORMAT_VAR) {
        Ok(format) if format == "json" => (report.json(), None),
        Ok(format) if format == "table" || format.is_empty() => (report.table(), None),
        Err(_) => (report.table(), None),
        Ok(other) => (
            report.table(),
            Some(
                Error::invalid_input(format!(
                    "{FORMAT_VAR} is `{other}`: the report was written as a table"
                ))
                .with_hint(format!("set {FORMAT_VAR} to table or json")),
            ),
        ),
    };
    let written = match std::env::var_os(OUTPUT_VAR) {
        Some(mut path) if !path.is_empty() && path != "-" => {
            if global.forked {
                path.push(format!(".{}", global.pid));
            }
            std::fs::write(&path, text).map_err(|e| {
                Error::invalid_input(format!(
                    "cannot write the region report to {}: {e}",
                    std::path::Path::new(&path).display()
                ))
                .with_hint(format!("set {OUTPUT_VAR} to a writable path, or unset it"))
            })
        }
        _ => {
            eprint!("{text}");
            Ok(())
        }
    };
    written?;
    global.reported_at.store(ended, Ordering::Relaxed);
    format_error.map_or(Ok(()), Err)
}

/// The at-exit hook: the report, or why it could not be written, on standard error; never a
/// panic across the C boundary. A report written on request with no region ended since is
/// not written again.
#[cfg(unix)]
extern "C" fn report_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let reported = this_process().is_some_and(|global| {
            global.reported_at.load(Ordering::Relaxed) == global.ended.load(Ordering::Relaxed)
        });
        if reported {
            return;
        }
        if let Err(e) = write_report() {
            eprintln!("counterhal: {e}");
        }
    });
}

#[cfg(test)]
mod tests {
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;

    use super::*;

    /// 80,000 distinct names (which took 40 s through the C API when each lookup compared
    /// every name known): each begin and end compares a bounded number of names, so the
    /// work grows with the names, not with their square.
    #[test]
    fn region_names_are_found_without_comparing_every_name_known() {
        let Ok(chosen) = crate::setup::open_default() else {
            skip!(Need::System, "no backend works here");
        };
        let regions = Regions::new(chosen.into_backend(), &[]);
        let start = names::names_compared();
        const NAMES: u64 = 80_000;
        for i in 0..NAMES {
            let name = format!("region-{i}");
            regions.begin(&name).unwrap();
            regions.end(&name).unwrap();
            let compared = names::names_compared() - start;
            assert!(
                compared <= 4 * (i + 1),
                "{compared} name comparisons for {} names: lookups scan the names",
                i + 1
            );
        }
        // Known names again: still a bounded number each.
        let before = names::names_compared();
        for i in (0..NAMES).step_by(7) {
            let name = format!("region-{i}");
            regions.begin(&name).unwrap();
            regions.end(&name).unwrap();
        }
        let again = names::names_compared() - before;
        assert!(again <= 4 * NAMES.div_ceil(7), "{again}");
        let report = regions.report();
        assert_eq!(report.regions.len(), NAMES as usize);
        assert_eq!(report.regions["region-0"].calls, 2);
    }
}
