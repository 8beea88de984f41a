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

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, MutexGuard};

use crate::codes::{EINVAL, EMISC, ENOEVNT, ENOTRUN, OK};
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

/// One value of a region: cycles, real time, then each event.
#[derive(Clone, Default)]
struct Value {
    begin: i64,
    region: i64,
    reads: Vec<i64>,
}

struct Region {
    id: u32,
    parent: i64,
    name: String,
    values: Vec<Value>,
}

/// The process-wide state.
struct Global {
    /// Whether the one-time set-up ran.
    initiated: bool,
    /// Off after an error, as PAPI's `PAPIHL_DEACTIVATED`.
    deactivated: bool,
    /// The events (name, instant) once determined.
    events: Option<Vec<(String, bool)>>,
    /// `.../papi_hl_output`, once set up.
    output: Option<std::path::PathBuf>,
    /// The regions of each thread, by thread id, in the order begun.
    threads: BTreeMap<u64, Vec<Region>>,
    begins: u64,
    ends: u64,
    written: bool,
}

/// The high-level interface's regions and report. Static beside the library's lock: PAPI's
/// high-level layer keeps its own state, which outlives `PAPI_shutdown` and is written at
/// exit (`atexit`), when the library may be gone.
static GLOBAL: Mutex<Global> = Mutex::new(Global {
    initiated: false,
    deactivated: false,
    events: None,
    output: None,
    threads: BTreeMap::new(),
    begins: 0,
    ends: 0,
    written: false,
});

fn global() -> MutexGuard<'static, Global> {
    GLOBAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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
    /// The calling thread's high-level state (its region stack), as PAPI's high-level
    /// layer keeps one per thread: per-thread, so a thread-local.
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
    let mut g = global();
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
fn events(g: &mut Global) -> Result<Vec<(String, bool)>, i32> {
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
fn read_counts(g: &mut Global, local: &mut Local) -> Result<Vec<i64>, i32> {
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
        let mut g = global();
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
                deactivate(&mut g);
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
                    deactivate(&mut g);
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

/// Turns the interface off after an error, dropping what it recorded (no report), as PAPI's
/// clean-up does.
fn deactivate(g: &mut Global) {
    g.deactivated = true;
    g.threads.clear();
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

fn line(out: &mut String, indent: usize) {
    out.push('\n');
    for _ in 0..indent {
        out.push_str("  ");
    }
}

/// The report as PAPI 7.0 writes it (its line breaks and two-space indents).
fn json(g: &Global, hardware: &crate::info::HwInfo) -> String {
    let events = g.events.clone().unwrap_or_default();
    let mut o = String::from("{");
    line(&mut o, 1);
    // PAPI_VERSION of the release the program speaks (7.0.0.0 before it chose one).
    let release = crate::release::chosen().unwrap_or(crate::release::Release::V7_0);
    let _ = write!(o, "\"papi_version\":\"{}\",", release.name());
    let end = hardware
        .model_string
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(0);
    let model = String::from_utf8_lossy(&hardware.model_string[..end]);
    let mut cpu = String::new();
    for c in model.chars() {
        if !(c == ' ' && cpu.ends_with(' ')) {
            cpu.push(c);
        }
    }
    line(&mut o, 1);
    let _ = write!(o, "\"cpu_info\":\"{cpu}\",");
    line(&mut o, 1);
    let _ = write!(o, "\"max_cpu_rate_mhz\":\"{}\",", hardware.cpu_max_mhz);
    line(&mut o, 1);
    let _ = write!(o, "\"min_cpu_rate_mhz\":\"{}\",", hardware.cpu_min_mhz);
    line(&mut o, 1);
    o.push_str("\"event_definitions\":{");
    for (i, (name, instant)) in events.iter().enumerate() {
        line(&mut o, 2);
        let _ = write!(o, "\"{name}\":{{");
        line(&mut o, 3);
        o.push_str("\"component\":\"perf_event\",");
        line(&mut o, 3);
        let kind = if *instant { "instant" } else { "delta" };
        let _ = write!(o, "\"type\":\"{kind}\"");
        line(&mut o, 2);
        o.push('}');
        if i + 1 < events.len() {
            o.push(',');
        }
    }
    line(&mut o, 1);
    o.push_str("},");
    line(&mut o, 1);
    o.push_str("\"threads\":{");
    let names: Vec<&str> = ["cycles", "real_time_nsec"]
        .into_iter()
        .chain(events.iter().map(|(n, _)| n.as_str()))
        .collect();
    for (t, regions) in g.threads.values().enumerate() {
        line(&mut o, 2);
        let _ = write!(o, "\"{t}\":{{");
        line(&mut o, 3);
        o.push_str("\"regions\":{");
        for (r, region) in regions.iter().enumerate() {
            line(&mut o, 4);
            let _ = write!(o, "\"{}\":{{", region.id);
            line(&mut o, 5);
            let _ = write!(o, "\"name\":\"{}\",", region.name);
            line(&mut o, 5);
            let _ = write!(o, "\"parent_region_id\":\"{}\",", region.parent);
            for (j, (value, name)) in region.values.iter().zip(&names).enumerate() {
                let last = j + 1 == names.len();
                line(&mut o, 5);
                if value.reads.is_empty() {
                    let _ = write!(o, "\"{name}\":\"{}\"", value.region);
                } else {
                    let _ = write!(o, "\"{name}\":{{");
                    line(&mut o, 6);
                    let _ = write!(o, "\"region_value\":\"{}\",", value.region);
                    for (k, read) in value.reads.iter().enumerate() {
                        line(&mut o, 6);
                        let _ = write!(o, "\"read_{}\":\"{read}\"", k + 1);
                        if k + 1 < value.reads.len() {
                            o.push(',');
                        }
                    }
                    line(&mut o, 5);
                    o.push('}');
                }
                if !last {
                    o.push(',');
                }
            }
            line(&mut o, 4);
            o.push('}');
            if r + 1 < regions.len() {
                o.push(',');
            }
        }
        line(&mut o, 3);
        o.push('}');
        line(&mut o, 2);
        o.push('}');
        if t + 1 < g.threads.len() {
            o.push(',');
        }
    }
    line(&mut o, 1);
    o.push('}');
    line(&mut o, 0);
    o.push_str("}\n");
    o
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
    let mut g = global();
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
