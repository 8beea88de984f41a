//! The conformance suite's view of this backend: the driver model, fed known work, for each
//! CPU kind pctr drives; and the real device, where one exists.

use std::sync::Arc;

use counterhal_conformance::{ExactEvent, Subject};
use counterhal_events::Database;
use counterhal_hal::Error;

use crate::{ModelCpu, ModelHandle, PctrBackend};

/// The model as the suite's subject: one unit of work is 3 user-mode instructions, 1 branch
/// and (where the CPU has the event) 2 cycles.
pub struct ModelSubject {
    backend: PctrBackend,
    model: ModelHandle,
}

impl ModelSubject {
    /// A subject over a fresh model of `cpu`.
    pub fn new(db: Arc<Database>, cpu: ModelCpu) -> ModelSubject {
        let (backend, model) = PctrBackend::with_model(db, cpu);
        ModelSubject { backend, model }
    }
}

impl Subject for ModelSubject {
    type Backend = PctrBackend;

    fn backend(&self) -> &PctrBackend {
        &self.backend
    }

    fn description(&self) -> String {
        format!("{} model, {} ABI", self.model.cpu(), self.model.cpu().abi())
    }

    /// As many as fit the counters together: the suite opens them as one group.
    fn exact_events(&self) -> Vec<ExactEvent> {
        let mut events = vec![
            ExactEvent::new("instructions", 3),
            ExactEvent::new("branches", 1),
        ];
        if self.model.cpu().cycles_event().is_some() && self.model.cpu().counters() > 2 {
            events.push(ExactEvent::new("cycles", 2));
        }
        events
    }

    fn work(&self, units: u64) {
        self.model.retire_instructions(3 * units, 0);
        self.model.retire_branches(units, 0);
        self.model.run_cycles(2 * units, 0);
    }

    fn counter_event(&self) -> Option<(String, u32)> {
        Some(("instructions".to_string(), self.model.cpu().counters()))
    }

    fn missing_device_error(&self) -> Option<Error> {
        missing_device(self.backend.database())
    }
}

#[cfg(unix)]
fn missing_device(db: &Arc<Database>) -> Option<Error> {
    let path = std::path::Path::new("/nonexistent/dev/pctr");
    crate::probe_path(Arc::clone(db), None, path).err()
}

#[cfg(not(unix))]
fn missing_device(db: &Arc<Database>) -> Option<Error> {
    crate::probe(Arc::clone(db), None).err()
}

/// One subject per CPU kind the driver supports: P5 and P6 on the legacy ABI, Intel
/// architectural and AMD on the current one.
pub fn model_subjects(db: Arc<Database>) -> Vec<ModelSubject> {
    [
        ModelCpu::P5,
        ModelCpu::P6,
        ModelCpu::IntelArch,
        ModelCpu::Amd,
    ]
    .into_iter()
    .map(|cpu| ModelSubject::new(Arc::clone(&db), cpu))
    .collect()
}

/// The real `/dev/pctr` as the suite's subject. Without a way to make the hardware count a
/// known amount from here, it offers no exact events: the suite checks open, errors and the
/// hardware loops (which execute real instructions on the CPU being counted).
pub struct RealSubject {
    backend: PctrBackend,
}

impl RealSubject {
    /// A subject over the real device.
    pub fn new(backend: PctrBackend) -> RealSubject {
        RealSubject { backend }
    }
}

impl Subject for RealSubject {
    type Backend = PctrBackend;

    fn backend(&self) -> &PctrBackend {
        &self.backend
    }

    fn description(&self) -> String {
        format!("/dev/pctr, {} ABI", self.backend.abi())
    }

    fn exact_events(&self) -> Vec<ExactEvent> {
        Vec::new()
    }

    fn work(&self, _units: u64) {}

    fn missing_device_error(&self) -> Option<Error> {
        missing_device(self.backend.database())
    }
}
