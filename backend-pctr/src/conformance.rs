//! The conformance suite's view of this backend: the driver model, fed known work, for each
//! CPU kind pctr drives; and the real device, where one exists.

use std::sync::Arc;

use counterhal_conformance::{ExactEvent, Subject};
use counterhal_events::Database;
use counterhal_hal::Error;

use crate::{Abi, ModelConfig, ModelCpu, ModelHandle, PctrBackend};

/// The model as the suite's subject: one unit of work is 4 instructions (3 in user mode, 1 in
/// kernel mode), 1 user-mode branch and (where the CPU has the event) 2 user-mode cycles.
pub struct ModelSubject {
    backend: PctrBackend,
    model: ModelHandle,
}

impl ModelSubject {
    /// A subject over a fresh model of `cpu` on its usual driver ([`ModelConfig::new`]).
    pub fn new(db: Arc<Database>, cpu: ModelCpu) -> ModelSubject {
        ModelSubject::with_config(db, ModelConfig::new(cpu))
    }

    /// A subject over a fresh model set up as `config` says.
    pub fn with_config(db: Arc<Database>, config: ModelConfig) -> ModelSubject {
        let (backend, model) = PctrBackend::with_model_config(db, config);
        ModelSubject { backend, model }
    }
}

impl Subject for ModelSubject {
    type Backend = PctrBackend;

    fn backend(&self) -> &PctrBackend {
        &self.backend
    }

    fn description(&self) -> String {
        self.model.config().describe()
    }

    /// As many as fit the counters together: the suite opens them as one group.
    fn exact_events(&self) -> Vec<ExactEvent> {
        let mut events = vec![
            ExactEvent::new("instructions", 4).with_user_per_unit(3),
            ExactEvent::new("branches", 1).with_user_per_unit(1),
        ];
        if self.model.cpu().cycles_event().is_some() && self.model.cpu().counters() > 2 {
            events.push(ExactEvent::new("cycles", 2).with_user_per_unit(2));
        }
        events
    }

    fn work(&self, units: u64) {
        self.model.retire_instructions(3 * units, units);
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

/// One subject per CPU kind and driver: P5 and P6 on the legacy ABI, the P5 on the current
/// (i386) ABI, Intel architectural and AMD on the current (amd64) one, and Intel
/// architectural with 48-bit counters on the current i386 driver, which keeps 40 bits.
pub fn model_subjects(db: Arc<Database>) -> Vec<ModelSubject> {
    [
        Ok(ModelConfig::new(ModelCpu::P5)),
        Ok(ModelConfig::new(ModelCpu::P6)),
        ModelConfig::new(ModelCpu::P5).with_abi(Abi::Current),
        Ok(ModelConfig::new(ModelCpu::IntelArch)),
        Ok(ModelConfig::new(ModelCpu::IntelArch).i386()),
        Ok(ModelConfig::new(ModelCpu::Amd)),
    ]
    .into_iter()
    .filter_map(Result::ok)
    .map(|config| ModelSubject::with_config(Arc::clone(&db), config))
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

/// The suite on the real device, or why the backend cannot be used here (its probe's error).
///
/// # Errors
/// As the crate's `probe`.
pub fn check(
    db: std::sync::Arc<counterhal_events::Database>,
    cpu: Option<String>,
) -> counterhal_hal::Result<counterhal_conformance::Report> {
    crate::probe(db, cpu)
        .map(|backend| counterhal_conformance::run_quietly(&RealSubject::new(backend)))
}

/// The suite on every model of the device.
pub fn check_models(
    db: std::sync::Arc<counterhal_events::Database>,
) -> Vec<counterhal_conformance::Report> {
    counterhal_conformance::run_each_quietly(&model_subjects(db))
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_conformance::Subject;

    #[test]
    fn every_kind_and_driver_is_a_subject() {
        let db = Arc::new(Database::shipped().expect("the shipped database loads"));
        let described: Vec<String> = model_subjects(db)
            .iter()
            .map(|subject| subject.description())
            .collect();
        assert_eq!(
            described,
            [
                "p5 model, legacy ABI (i386)",
                "p6 model, legacy ABI (i386)",
                "p5 model, current ABI (i386)",
                "intel-arch model, current ABI (amd64)",
                "intel-arch model, current ABI (i386)",
                "amd model, current ABI (amd64)",
            ]
        );
    }
}
