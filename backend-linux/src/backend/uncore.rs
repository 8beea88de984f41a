//! Uncore events by name on the Linux backend: the model's uncore table
//! (`UNC_M_CAS_COUNT.RD`, `uncore_imc/UNC_M_CAS_COUNT.RD/`) through the PMUs of the tree; and
//! the model's core events named in the core PMU's terms
//! (`cpu/OCR.DEMAND_RFO.L3_MISS,offcore_rsp=0x103b800002/`), which perf reads alike; and
//! where a PMU event opens ([`PmuTopology`]): its boxes and their CPUs.

use counterhal_hal::{
    Backend, Encoding, Error, ErrorKind, EventRequest, PmuBox, PmuEvent, PmuTopology,
    ResolvedEvent, Result, Term,
};

use super::LinuxBackend;
use crate::pmus;
use crate::sys::{TYPE_HARDWARE, TYPE_HW_CACHE};

impl LinuxBackend {
    /// `event` as an uncore event of the CPU model (`UNC_M_CAS_COUNT.RD`,
    /// `uncore_imc/UNC_M_CAS_COUNT.RD/`): one term per PMU that has it, added up as perf
    /// merges the boxes; `None` where the model's uncore table has no such name, and
    /// [`ErrorKind::InvalidEvent`] where this system lacks its PMU.
    pub(super) fn uncore(&self, event: &str) -> Option<Result<ResolvedEvent>> {
        let devices = &self.pmus;
        let opens = pmus::uncore_pmu_events(devices, &self.db, self.cpu.as_deref(), event)?;
        // A PMU this system lacks makes the name no event here, as perf refuses it (a metric
        // reading it cannot run).
        let opens = opens.map_err(|e| match e.kind() {
            ErrorKind::DeviceMissing => {
                let refused = Error::invalid_event(e.message());
                match e.hint() {
                    Some(hint) => refused.with_hint(hint),
                    None => refused,
                }
            }
            _ => e,
        });
        Some(opens.map(|opens| summed(event, opens)))
    }

    /// `event` in the core PMU's terms where a term names a core event of the CPU model
    /// (`cpu/OCR.DEMAND_RFO.L3_MISS,offcore_rsp=0x103b800002/`, [`crate::core_pmu_events`]);
    /// `None` where no term does.
    pub(super) fn core_named(&self, event: &str) -> Option<Result<ResolvedEvent>> {
        let devices = &self.pmus;
        let opens =
            crate::core_events::core_pmu_events(devices, &self.db, self.cpu.as_deref(), event)?;
        Some(opens.map(|opens| summed(event, opens)))
    }
}

impl PmuTopology for LinuxBackend {
    /// The cpumask of the sysfs PMU an event's type names (an uncore or energy PMU's one CPU
    /// per package, a hybrid core PMU's CPUs), as perf's `-a` opens it.
    fn system_wide_cpus(&self, request: &EventRequest) -> Option<Vec<u32>> {
        match &request.encoding {
            Encoding::Perf(attr) => {
                // A generic hardware or cache event of a hybrid core PMU carries the PMU's
                // type in its config's upper half (the kernel's PERF_PMU_TYPE_SHIFT): its CPUs
                // are that PMU's, as perf opens `cpu_atom/cycles/` on cpu_atom's alone.
                let type_ = match attr.type_ {
                    TYPE_HARDWARE | TYPE_HW_CACHE if attr.config >> 32 != 0 => {
                        (attr.config >> 32) as u32
                    }
                    type_ => type_,
                };
                pmus::system_wide_cpus(&self.pmus, type_)
            }
            _ => None,
        }
    }

    /// Each PMU of the tree a PMU event names that takes its terms, as perf 6.1's
    /// `parse_events_add_pmu` opens one event per box ([`pmus::pmu_events`]); `None` for
    /// terms only this backend's tables read (`uncore_imc/UNC_M_CAS_COUNT.RD/`,
    /// `cpu_core/INT_MISC.UOP_DROPPING/`, as perf 7.2 reads a JSON event as the PMU's alias),
    /// which resolve as one event.
    fn boxes(&self, event: &str) -> Option<Result<Vec<PmuBox>>> {
        let opens = pmus::pmu_events(&self.pmus, event)?;
        if opens.is_err() && self.resolve(event).is_ok() {
            return None;
        }
        Some(opens.map(|opens| {
            opens
                .into_iter()
                .map(|open| {
                    // Named as perf names the box's line, or by its `name=` term, as
                    // resolving the box's own name names it.
                    let shown = open
                        .name
                        .clone()
                        .unwrap_or_else(|| box_name(event, &open.pmu));
                    let unit = open.unit();
                    let mut resolved =
                        ResolvedEvent::single(EventRequest::new(shown, Encoding::Perf(open.attr)));
                    resolved.unit = unit;
                    PmuBox::new(open.pmu, open.name, open.cpus, resolved)
                })
                .collect()
        }))
    }

    /// The model's uncore event by name on each box ([`pmus::uncore_pmu_events`]), else
    /// the model's core event in the core PMU's terms ([`crate::core_pmu_events`]), else
    /// perf's PMU syntax on each box ([`pmus::pmu_events`]), on the tree's PMUs.
    fn opens(&self, event: &str) -> Option<Result<Vec<PmuEvent>>> {
        let (devices, cpu) = (&self.pmus, self.cpu.as_deref());
        pmus::uncore_pmu_events(devices, &self.db, cpu, event)
            .or_else(|| crate::core_events::core_pmu_events(devices, &self.db, cpu, event))
            .or_else(|| pmus::pmu_events(devices, event))
    }
}

/// perf's name of a box's line (`uniquify_event_name`, tools/perf/util/stat-display.c): the
/// box's PMU, then the event from its first `/` (`imc/cas_count_read/u` on `uncore_imc_0` is
/// `uncore_imc_0/cas_count_read/u`).
fn box_name(event: &str, pmu: &str) -> String {
    match event.find('/') {
        Some(at) => format!("{pmu}{}", &event[at..]),
        None => event.to_string(),
    }
}

/// One term per open of `event`, added up, named as its terms name it (`name=foo`) or as given.
fn summed(event: &str, opens: Vec<pmus::PmuEvent>) -> ResolvedEvent {
    // The boxes of one event share its alias, and so its scale and unit; and its name.
    let unit = opens.first().and_then(pmus::PmuEvent::unit);
    let named = opens.first().and_then(|open| open.name.clone());
    let event = named.as_deref().unwrap_or(event);
    let terms = opens
        .into_iter()
        .map(|open| Term {
            sign: counterhal_hal::Sign::Plus,
            factor: 1,
            request: EventRequest::new(event, Encoding::Perf(open.attr)),
        })
        .collect();
    ResolvedEvent::new(event, terms, unit)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use counterhal_events::Database;
    use counterhal_hal::{Backend, BackendExt};

    use super::super::assemble;
    use counterhal_system::System;

    /// Oracle: perf 6.1's `parse_events_add_pmu`, which parses a wildcard's terms once per
    /// box, and its `uniquify_event_name`, which names each box's line; under the Sapphire
    /// Rapids tree. Each box carries its event as resolved there, equal to what resolving the
    /// box's line name gives (so a face need not resolve it again), named by `name=` where
    /// the terms give one.
    #[test]
    fn each_box_carries_its_event_as_its_own_name_resolves() {
        let devices = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/machines/spr-2s/bus/event_source/devices");
        let spr = assemble::on_sysfs(
            Arc::new(Database::shipped().unwrap()),
            Some("spr".to_string()),
            System::host()
                .with_pmu_devices(devices)
                .with_tracefs("/nonexistent/tracing"),
        );
        let boxes = spr.pmu_boxes("imc/cas_count_read/k").unwrap().unwrap();
        assert_eq!(boxes.len(), 4);
        for pmu_box in &boxes {
            let line = format!("{}/cas_count_read/k", pmu_box.pmu);
            assert_eq!(pmu_box.event.name, line);
            assert_eq!(pmu_box.event, spr.resolve(&line).unwrap());
            assert_eq!(pmu_box.event.unit.as_ref().unwrap().name, "MiB");
        }
        let named = spr.pmu_boxes("imc/cas_count_write,name=writes/").unwrap();
        let named = named.unwrap();
        assert_eq!(named[1].event.name, "writes");
        let line = format!("{}/cas_count_write,name=writes/", named[1].pmu);
        assert_eq!(named[1].event, spr.resolve(&line).unwrap());
        assert_eq!(spr.pmu_boxes("task-clock").map(|b| b.is_ok()), None);
    }
}
