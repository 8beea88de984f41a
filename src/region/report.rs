//! A region's totals and the report of every region: accumulated call by call, printed as a
//! table or as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use counterhal_hal::Reading;

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

/// One call of a region, as its end adds it to the region's totals.
pub(super) struct Call<'a> {
    /// Whether it is this thread's first call of the region.
    pub(super) first_here: bool,
    pub(super) real_ns: u64,
    pub(super) cpu_ns: u64,
    /// The readings at its end and at its begin.
    pub(super) now: &'a [Reading],
    pub(super) then: &'a [Reading],
}

impl Call<'_> {
    /// Adds this call to `total`: one call, its times, each event's raw delta and estimate.
    pub(super) fn add_to(&self, total: &mut RegionTotals) {
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
    /// `value`, `time_enabled`, `time_running` and `estimate`. Every number is an integer;
    /// strings are escaped as RFC 8259 says (`"`, `\\` and the control characters).
    pub fn json(&self) -> String {
        let mut out = String::from("{\"events\":[");
        for (i, event) in self.events.iter().enumerate() {
            comma(&mut out, i);
            json_string(&mut out, event);
        }
        out.push_str("],\"left_out\":[");
        for (i, (event, why)) in self.left_out.iter().enumerate() {
            comma(&mut out, i);
            out.push_str("{\"event\":");
            json_string(&mut out, event);
            out.push_str(",\"reason\":");
            json_string(&mut out, why);
            out.push('}');
        }
        out.push_str("],\"regions\":[");
        for (i, (name, t)) in self.regions.iter().enumerate() {
            comma(&mut out, i);
            out.push_str("{\"name\":");
            json_string(&mut out, name);
            let _ = write!(
                out,
                ",\"calls\":{},\"threads\":{},\"real_ns\":{},\"cpu_ns\":{},\"counts\":[",
                t.calls, t.threads, t.real_ns, t.cpu_ns
            );
            let counts = self.events.iter().zip(t.readings.iter().zip(&t.estimates));
            for (j, (event, (r, estimate))) in counts.enumerate() {
                comma(&mut out, j);
                out.push_str("{\"event\":");
                json_string(&mut out, event);
                let _ = write!(
                    out,
                    ",\"value\":{},\"time_enabled\":{},\"time_running\":{},\"estimate\":{estimate}}}",
                    r.value, r.time_enabled, r.time_running
                );
            }
            out.push_str("]}");
        }
        out.push_str("]}\n");
        out
    }
}

/// A `,` before every item of a JSON list but the first.
fn comma(out: &mut String, index: usize) {
    if index > 0 {
        out.push(',');
    }
}

/// `text` as a JSON string: `"` and `\\` escaped, control characters as `\\u00XX`.
fn json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: serde_json's reader. Names with quotes, backslashes, control characters and
    /// non-ASCII letters come back as they were, and every number is what was written.
    #[test]
    fn the_json_report_reads_back_with_every_string_and_number() {
        let odd = "a \"quoted\" \\ name\n\t\u{1} é ✓";
        let reading = Reading::new(u64::MAX, 7, 5);
        let mut regions = BTreeMap::new();
        regions.insert(
            odd.to_string(),
            RegionTotals {
                calls: 3,
                real_ns: 11,
                cpu_ns: 13,
                readings: vec![reading],
                estimates: vec![42],
                threads: 2,
            },
        );
        let report = RegionReport {
            events: vec![odd.to_string()],
            left_out: vec![("cycles".to_string(), odd.to_string())],
            regions,
        };
        let json: serde_json::Value = serde_json::from_str(&report.json()).unwrap();
        assert_eq!(json["events"][0], odd);
        assert_eq!(json["left_out"][0]["event"], "cycles");
        assert_eq!(json["left_out"][0]["reason"], odd);
        let region = &json["regions"][0];
        assert_eq!(region["name"], odd);
        assert_eq!(
            (region["calls"].as_u64(), region["threads"].as_u64()),
            (Some(3), Some(2))
        );
        assert_eq!(
            (region["real_ns"].as_u64(), region["cpu_ns"].as_u64()),
            (Some(11), Some(13))
        );
        let count = &region["counts"][0];
        assert_eq!(count["event"], odd);
        assert_eq!(count["value"].as_u64(), Some(u64::MAX));
        assert_eq!(
            (
                count["time_enabled"].as_u64(),
                count["time_running"].as_u64()
            ),
            (Some(7), Some(5))
        );
        assert_eq!(count["estimate"].as_u64(), Some(42));
        assert!(report.json().ends_with("}\n"));
    }
}
