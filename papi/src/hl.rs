//! PAPI 7.0's high-level interface (`PAPI_hl_region_begin`, `_read`, `_end`, `_stop`) as its
//! `papi_hl.c` has it: the events come from `PAPI_EVENTS` (a comma-separated list, each name
//! optionally `=instant` or `=delta`; blanks removed), each thread counts them in an event set
//! of its own started at its first region, and at exit the regions of every thread are written
//! as JSON to `rank_NNNNNN.json` in `papi_hl_output` under `PAPI_OUTPUT_DIRECTORY` (else the
//! working directory). An existing `papi_hl_output` older than this run is first renamed with
//! its time (`papi_hl_output-YYYYMMDD-HHMMSS`); the rank comes from `OMPI_COMM_WORLD_RANK`,
//! `ALPS_APP_PE`, `PMI_RANK` or `SLURM_PROCID`, else from the time and process id.
//! `PAPI_REPORT` also prints the file on standard output, `PAPI_HL_VERBOSE` prints PAPI's
//! messages, `PAPI_MULTIPLEX` multiplexes the events.
//!
//! One difference, for machines without a core PMU: PAPI 7.0's only default event is
//! `PAPI_TOT_CYC` (with it missing PAPI's regions answer `PAPI_EINVAL`); ours falls back to
//! perf's `perf::TASK-CLOCK` and `perf::PAGE-FAULTS`, so regions measure something there.

use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::codes::{EINVAL, EMISC, ENOEVNT, ENOTRUN, OK};
use crate::hl_record::{Record, Region, Value, json};
use crate::sets;

/// What a call records in a region.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// `PAPI_hl_region_begin`.
    Begin,
    /// `PAPI_hl_read`.
    Read,
    /// `PAPI_hl_region_end`.
    End,
}

/// The clocks read with the counters: the real cycle count and the real time in ns.
#[derive(Clone, Copy)]
pub struct Clocks {
    /// `PAPI_get_real_cyc`.
    pub cycles: i64,
    /// `PAPI_get_real_nsec`.
    pub nsec: i64,
}

/// The high-level record locked (by this interface's calls alone, over the event-set calls
/// they make: [`crate::library::high_level`]).
fn locked(record: &Mutex<Record>) -> MutexGuard<'_, Record> {
    record.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Each thread's own: its event set, whether it runs, its region stack and begin count.
#[derive(Default)]
struct Local {
    set: Option<i32>,
    running: bool,
    stack: Vec<u32>,
    begun: u32,
}

thread_local! {
    /// The calling thread's high-level state (its set, its region stack). A thread-local, not
    /// an entry of the process's value: PAPI's `papi_hl.c` defines this state per thread
    /// (`THREAD_LOCAL_STORAGE_KEYWORD` `_local_components`, `_local_region_begin_cnt`, its
    /// region stack), and it dies with its thread, where an entry keyed by thread id would
    /// outlive it and pass to a later thread given the same kernel id.
    #[allow(clippy::missing_const_for_thread_local)]
    static LOCAL: std::cell::RefCell<Local> = std::cell::RefCell::new(Local::default());
}

fn verbose(message: &str) {
    if std::env::var_os("PAPI_HL_VERBOSE").is_some() {
        println!("{message}");
    }
}

/// The one-time set-up: the output folder chosen (and an older one moved aside, named with
/// `stamp`, the local time as `YYYYMMDD-HHMMSS`). Whether it ran now (the caller then
/// registers the report at exit).
pub fn initiate(stamp: &str, now_unix: u64) -> bool {
    let Some(record) = crate::library::high_level() else {
        return false;
    };
    let mut g = locked(&record);
    if g.initiated {
        return false;
    }
    g.initiated = true;
    let prefix = std::env::var_os("PAPI_OUTPUT_DIRECTORY")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    let output = prefix.join("papi_hl_output");
    if let Ok(meta) = std::fs::metadata(&output)
        && meta.is_dir()
    {
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        // As PAPI: only a folder older than this second (another process of the same run may
        // have just made it).
        if modified < now_unix {
            let mut moved = output.clone().into_os_string();
            moved.push(format!("-{stamp}"));
            if std::fs::rename(&output, &moved).is_err() {
                verbose("PAPI-HL Error: Cannot rename old measurement directory.");
            }
        }
    }
    g.output = Some(output);
    verbose("PAPI-HL Info: PAPI has been initiated!");
    true
}

/// The requested events: `PAPI_EVENTS` when set and not empty, else none.
fn requested() -> Vec<(String, bool)> {
    parse_events(&std::env::var("PAPI_EVENTS").unwrap_or_default())
}

/// A `PAPI_EVENTS` text as PAPI reads it: names between commas, blanks removed, each with
/// `=instant` (instantaneous) or `=delta`/nothing (a difference since the region began).
/// Only a trailing `=instant` or `=delta` is taken off, as papi_hl.c removes no other text
/// after a `=`: a qualified name (`perf::TASK-CLOCK:u=0`) is the event named and the report's
/// key as the user spelled it, and a name with another ending (`perf::CS=total`) is no
/// event. (papi_hl.c looks from the first `=` only, so it takes no kind after a qualifier's
/// value, `perf::CS:u=0=instant`, and drops that event; ours takes it.)
fn parse_events(text: &str) -> Vec<(String, bool)> {
    text.split(',')
        .map(|e| e.chars().filter(|c| *c != ' ').collect::<String>())
        .filter(|e| !e.is_empty())
        .map(|e| {
            if let Some(name) = e.strip_suffix("=instant") {
                (name.to_string(), true)
            } else if let Some(name) = e.strip_suffix("=delta") {
                (name.to_string(), false)
            } else {
                (e, false)
            }
        })
        .collect()
}

/// The events of the given names that open together here, in order (the others dropped with
/// PAPI's warning).
fn usable(wanted: &[(String, bool)]) -> Vec<(String, bool)> {
    let Ok(set) = sets::create_eventset() else {
        return Vec::new();
    };
    let mut kept = Vec::new();
    for (name, instant) in wanted {
        if sets::add_named_event(set, name) == OK {
            kept.push((name.clone(), *instant));
        } else {
            verbose(&format!(
                "PAPI-HL Warning: Cannot add {name} to component perf_event."
            ));
        }
    }
    sets::cleanup_eventset(set);
    sets::destroy_eventset(set);
    kept
}

/// The events, determined once: the requested ones that count, else the defaults.
fn events(g: &mut Record) -> Result<Vec<(String, bool)>, i32> {
    if let Some(events) = &g.events {
        return Ok(events.clone());
    }
    let mut events = usable(&requested());
    if events.is_empty() {
        if std::env::var_os("PAPI_EVENTS").is_some() {
            verbose("PAPI-HL Warning: All requested events do not work, using default.");
        }
        let defaults = [("PAPI_TOT_CYC", false)];
        let fallback = [("perf::TASK-CLOCK", false), ("perf::PAGE-FAULTS", false)];
        for list in [&defaults[..], &fallback[..]] {
            let list: Vec<(String, bool)> =
                list.iter().map(|(n, i)| ((*n).to_string(), *i)).collect();
            events = usable(&list);
            if !events.is_empty() {
                break;
            }
        }
    }
    if events.is_empty() {
        return Err(EINVAL);
    }
    for (name, _) in &events {
        verbose(&format!("  {name}"));
    }
    g.events = Some(events.clone());
    Ok(events)
}

/// This thread's set, made and started as needed, read: the counts.
fn read_counts(g: &mut Record, local: &mut Local) -> Result<Vec<i64>, i32> {
    let set = match local.set {
        Some(set) => set,
        None => {
            let events = events(g)?;
            let set = sets::create_eventset()?;
            if std::env::var_os("PAPI_MULTIPLEX").is_some() {
                sets::assign_component(set);
                crate::set_options::set_multiplex(set, None);
            }
            for (name, _) in &events {
                let status = sets::add_named_event(set, name);
                if status != OK {
                    return Err(status);
                }
            }
            local.set = Some(set);
            set
        }
    };
    if !local.running {
        let status = sets::start(set);
        if status != OK {
            return Err(status);
        }
        local.running = true;
    }
    sets::read(set)
}

/// Records `mark` of region `name` for thread `tid` at `clocks`. As PAPI 7.0's, the state is
/// checked before the name: a read or end with no region begun is `PAPI_EMISC`, one of a
/// thread with no set `PAPI_ENOTRUN`; then a NULL name (`None`) is `PAPI_EINVAL` (PAPI goes on
/// and reads through it).
pub fn mark(mark: Mark, name: Option<&str>, tid: u64, clocks: impl Fn() -> Clocks) -> i32 {
    LOCAL.with_borrow_mut(|local| {
        let Some(record) = crate::library::high_level() else {
            return EMISC;
        };
        let mut g = locked(&record);
        if g.deactivated {
            return EMISC;
        }
        if mark != Mark::Begin {
            if local.begun == 0 {
                let call = if mark == Mark::Read {
                    "PAPI_hl_read"
                } else {
                    "PAPI_hl_region_end"
                };
                verbose(&format!(
                    "PAPI-HL Warning: Cannot find matching region for {call}(\"{}\") for thread {tid}.",
                    name.unwrap_or("(null)")
                ));
                return EMISC;
            }
            if local.set.is_none() {
                return ENOTRUN;
            }
        }
        let Some(name) = name else {
            return EINVAL;
        };
        let counts = match read_counts(&mut g, local) {
            Ok(c) => c,
            Err(e) => {
                verbose(&format!(
                    "PAPI-HL Error: Could not read counters for thread {tid}."
                ));
                g.deactivate();
                return e;
            }
        };
        let now = clocks();
        let events = g.events.clone().unwrap_or_default();
        let instant: Vec<bool> = [false, false]
            .into_iter()
            .chain(events.iter().map(|(_, i)| *i))
            .collect();
        let current: Vec<i64> = [now.cycles, now.nsec].into_iter().chain(counts).collect();
        let top = local.stack.last().map_or(-1, |&i| i64::from(i));
        let regions = g.threads.entry(tid).or_default();
        match mark {
            Mark::Begin => {
                regions.push(Region {
                    id: local.begun,
                    parent: top,
                    name: name.to_string(),
                    values: current
                        .iter()
                        .map(|&v| Value {
                            begin: v,
                            ..Value::default()
                        })
                        .collect(),
                });
                g.begins += 1;
                local.stack.push(local.begun);
                local.begun += 1;
            }
            Mark::Read | Mark::End => {
                let Some(region) = regions
                    .iter_mut()
                    .rev()
                    .find(|r| i64::from(r.id) == top && r.name == name)
                else {
                    let call = if mark == Mark::Read {
                        "PAPI_hl_read"
                    } else {
                        "PAPI_hl_region_end"
                    };
                    verbose(&format!(
                        "PAPI-HL Warning: Cannot find matching region for {call}(\"{name}\") for thread id={tid}."
                    ));
                    if mark == Mark::Read {
                        return OK;
                    }
                    // As PAPI: an unmatched end turns the interface off, its records dropped.
                    g.deactivate();
                    return EINVAL;
                };
                for ((value, now), instant) in region.values.iter_mut().zip(&current).zip(&instant) {
                    let v = if *instant { *now } else { now - value.begin };
                    if mark == Mark::Read {
                        value.reads.push(v);
                    } else {
                        value.region = v;
                    }
                }
                if mark == Mark::End {
                    g.ends += 1;
                    local.stack.pop();
                }
            }
        }
        OK
    })
}

/// Whether this thread's high-level set runs.
pub fn running() -> bool {
    LOCAL.with_borrow(|local| local.running)
}

/// `PAPI_hl_stop`: stops this thread's set; `PAPI_ENOEVNT` when it does not run.
pub fn stop() -> i32 {
    LOCAL.with_borrow_mut(|local| match local.set {
        Some(set) if local.running => {
            local.running = false;
            match sets::stop(set) {
                Ok(_) => OK,
                Err(e) => e,
            }
        }
        _ => ENOEVNT,
    })
}

/// The rank of this process in a parallel run, if its launcher says.
fn rank_from_launcher() -> Option<u32> {
    [
        "OMPI_COMM_WORLD_RANK",
        "ALPS_APP_PE",
        "PMI_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok())
    .map(|v| v.trim().parse().unwrap_or(0))
}

/// Writes the report once (at exit): `PAPI-HL` when the regions do not match, nothing when
/// none was recorded. `fallback_rank` is used when no launcher gives one. The file written.
pub fn write_output(
    hardware: &crate::info::HwInfo,
    fallback_rank: u32,
) -> Option<std::path::PathBuf> {
    let record = crate::library::high_level()?;
    let mut g = locked(&record);
    let output = g.output.clone()?;
    if g.written {
        return None;
    }
    g.written = true;
    if g.threads.is_empty() {
        verbose("PAPI-HL Info: No events were recorded.");
        return None;
    }
    if g.begins != g.ends {
        verbose("PAPI-HL Warning: Cannot generate output due to not matching regions.");
        return None;
    }
    verbose("PAPI-HL Info: Print results...");
    if std::fs::create_dir_all(&output).is_err() {
        verbose(&format!(
            "PAPI-HL Error: Cannot create measurement directory {}.",
            output.display()
        ));
        return None;
    }
    let text = json(&g, hardware);
    let mut rank = rank_from_launcher().unwrap_or(fallback_rank % 1_000_000);
    loop {
        let path = output.join(format!("rank_{rank:06}.json"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                use std::io::Write as _;
                if file.write_all(text.as_bytes()).is_err() {
                    verbose("PAPI-HL Error: Cannot create output file.");
                    return None;
                }
                if std::env::var_os("PAPI_REPORT").is_some() {
                    print!("\n\nPAPI-HL Output:\n{text}\n");
                }
                return Some(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => rank += 1,
            Err(_) => {
                verbose("PAPI-HL Error: Cannot create output file.");
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PAPI's `PAPI_EVENTS` syntax: commas, blanks removed, `=instant`.
    #[test]
    fn papi_events_are_read_as_papi_reads_them() {
        assert_eq!(
            parse_events(" PAPI_TOT_INS , perf::TASK-CLOCK=instant,,x=delta"),
            vec![
                ("PAPI_TOT_INS".to_string(), false),
                ("perf::TASK-CLOCK".to_string(), true),
                ("x".to_string(), false),
            ]
        );
        // Qualifiers kept; only a trailing kind taken off.
        assert_eq!(
            parse_events("perf::CS:u=0,perf::CS:u=1=instant,perf::CS=total"),
            vec![
                ("perf::CS:u=0".to_string(), false),
                ("perf::CS:u=1".to_string(), true),
                ("perf::CS=total".to_string(), false),
            ]
        );
    }
}
