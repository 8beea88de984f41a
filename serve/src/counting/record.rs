//! A departed cgroup's record: at the moment its last readings are kept, its places' readings
//! summed over the CPUs, with its labels and life, handed to the journal (`--records`),
//! which writes it on a thread of its own.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::families::cgroup_labels;
use super::{Exporter, Place};
use crate::events::Unit;
use crate::records::{EventRecord, Record, VERSION};
use crate::text_format::{Label, epoch_seconds};

impl Exporter {
    /// Sends the record of each cgroup that departed at `since` (its places' readings, read
    /// a last time) to the journal, where there is one.
    pub(super) fn record_departed(&self, since: Instant) {
        let Some(journal) = &self.records else {
            return;
        };
        let end = epoch_seconds(SystemTime::now());
        let departed_now = |place: &&Place| place.departed.is_some_and(|d| d.since == since);
        let mut cgroups: Vec<&Arc<str>> = self
            .places
            .iter()
            .filter(departed_now)
            .filter_map(|place| place.at.cgroup.as_ref())
            .collect();
        cgroups.dedup();
        for cgroup in cgroups {
            let places: Vec<&Place> = self
                .places
                .iter()
                .filter(departed_now)
                .filter(|place| place.at.cgroup.as_ref() == Some(cgroup))
                .collect();
            journal.send(self.record_of(&places, &journal.host, end));
        }
    }

    /// The record of one cgroup's `places` (one per CPU, or one already summed), which
    /// `host` counted until `end`.
    fn record_of(&self, places: &[&Place], host: &str, end: f64) -> Record {
        let first = places[0];
        let labels = cgroup_labels(first)
            .into_iter()
            .filter_map(|(key, value)| match value {
                Label::Text(text) if key != "cgroup" && !text.is_empty() => {
                    Some((key.to_string(), text.to_string()))
                }
                _ => None,
            })
            .collect();
        let events = first
            .columns
            .iter()
            .enumerate()
            .map(|(at, &index)| {
                let event = &self.events[index];
                let mut summed = EventRecord {
                    name: event.name.clone(),
                    pmu: event.pmu.clone(),
                    unit: match event.unit {
                        Unit::Count => "count",
                        Unit::Seconds => "seconds",
                        Unit::Joules => "joules",
                    }
                    .to_string(),
                    scale: event.factor,
                    value: 0,
                    enabled_ns: 0,
                    running_ns: 0,
                    complete: true,
                };
                for place in places {
                    let reading = place.readings.get(at).copied().unwrap_or_default();
                    summed.value = summed.value.saturating_add(reading.value);
                    summed.enabled_ns = summed.enabled_ns.saturating_add(reading.time_enabled);
                    summed.running_ns = summed.running_ns.saturating_add(reading.time_running);
                    summed.complete &= place.read && place.counts(at);
                }
                summed
            })
            .collect();
        Record {
            version: VERSION,
            host: host.to_string(),
            cgroup: first.at.cgroup.as_deref().unwrap_or("").to_string(),
            labels,
            start: places.iter().fold(first.created, |c, p| c.min(p.created)),
            end,
            events,
            metrics: Vec::new(),
        }
    }
}
