//! What PAPI's high-level interface (`hl`) records: the events it counts, each
//! thread's regions with their values, and the report written from them at exit, as PAPI
//! 7.0's `papi_hl.c` writes it. The process's PAPI holds the record (the library's `Process`),
//! outliving `PAPI_shutdown` as PAPI's high-level layer does.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One value of a region: cycles, real time, then each event.
#[derive(Clone, Default)]
pub struct Value {
    /// Its value at the region's beginning.
    pub begin: i64,
    /// Its difference (or, for an instant event, its value) at the region's end.
    pub region: i64,
    /// Its value at each `PAPI_hl_read`, in order.
    pub reads: Vec<i64>,
}

/// One region a thread began.
pub struct Region {
    /// Its number in its thread, in the order begun.
    pub id: u32,
    /// The region it was begun in (-1 for none).
    pub parent: i64,
    /// Its name.
    pub name: String,
    /// Its values.
    pub values: Vec<Value>,
}

/// What the high-level interface records for the process (the process's PAPI holds one).
#[derive(Default)]
pub struct Record {
    /// Whether the one-time set-up ran.
    pub initiated: bool,
    /// Off after an error, as PAPI's `PAPIHL_DEACTIVATED`.
    pub deactivated: bool,
    /// The events (name, instant) once determined.
    pub events: Option<Vec<(String, bool)>>,
    /// `.../papi_hl_output`, once set up.
    pub output: Option<std::path::PathBuf>,
    /// The regions of each thread, by thread id, in the order begun.
    pub threads: BTreeMap<u64, Vec<Region>>,
    /// Regions begun, in every thread.
    pub begins: u64,
    /// Regions ended, in every thread.
    pub ends: u64,
    /// Whether the report was written (it is, once, at exit).
    pub written: bool,
}

impl Record {
    /// Turns the interface off after an error, dropping what it recorded (no report), as
    /// PAPI's clean-up does.
    pub fn deactivate(&mut self) {
        self.deactivated = true;
        self.threads.clear();
    }
}

fn line(out: &mut String, indent: usize) {
    out.push('\n');
    for _ in 0..indent {
        out.push_str("  ");
    }
}

/// The report as PAPI 7.0 writes it (its line breaks and two-space indents).
pub fn json(g: &Record, hardware: &crate::info::HwInfo) -> String {
    let events = g.events.clone().unwrap_or_default();
    let mut o = String::from("{");
    line(&mut o, 1);
    // PAPI_VERSION of the release the program speaks (7.0.0.0 before it chose one).
    let release = crate::unlocked::UNLOCKED
        .chosen_release
        .get()
        .unwrap_or(crate::release::Release::V7_0);
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
