//! The conformance suite's view of this backend: the driver model, fed known work, on an
//! Intel and an AMD machine under V10 and V9; and the real system call, where hwpmc exists.

use std::sync::Arc;

use counterhal_conformance::{ExactEvent, Subject};
use counterhal_events::Database;
use counterhal_hal::{BackendTarget, Error, Result};

use crate::abi::Version;
use crate::{HwpmcBackend, ModelConfig, ModelEvent, ModelHandle};

/// The model as the suite's subject, counting this process (`PMC_MODE_TC`): one unit of work
/// is 4 instructions (3 in user mode, 1 in kernel mode), 1 user-mode branch and 2 user-mode
/// cycles, in 10 ns of the model's clock, so that the suite's multiplexing case (2 million
/// units) spans five 4 ms turns.
pub struct ModelSubject {
    backend: HwpmcBackend,
    model: ModelHandle,
}

impl ModelSubject {
    /// A subject over a fresh model set up as `config` says.
    ///
    /// # Errors
    /// As [`HwpmcBackend::with_model`].
    pub fn new(db: Arc<Database>, config: ModelConfig) -> Result<ModelSubject> {
        let (backend, model) = HwpmcBackend::with_model(db, config)?;
        Ok(ModelSubject { backend, model })
    }

    /// A subject over the model of the database's CPU model `id` (Intel's or AMD's driver,
    /// as [`model_for`](crate::model_for) sets it up), for `counterhal stat --model`.
    ///
    /// # Errors
    /// As [`model_for`](crate::model_for).
    pub fn for_model(db: Arc<Database>, id: &str) -> Result<ModelSubject> {
        let config = crate::backend::model_config_for(&db, id)?;
        let id = counterhal_x86::named_model(&db, id)?.id.clone();
        let (backend, model) = HwpmcBackend::with_model_as(db, config, &id)?;
        Ok(ModelSubject { backend, model })
    }

    /// The handle that feeds the subject's model.
    pub fn model(&self) -> &ModelHandle {
        &self.model
    }
}

impl Subject for ModelSubject {
    type Backend = HwpmcBackend;

    fn backend(&self) -> &HwpmcBackend {
        &self.backend
    }

    fn description(&self) -> String {
        format!(
            "{}, process mode (TC) on this process",
            self.model.config().describe()
        )
    }

    fn exact_events(&self) -> Vec<ExactEvent> {
        vec![
            ExactEvent::new("instructions", 4).with_user_per_unit(3),
            ExactEvent::new("branches", 1).with_user_per_unit(1),
            ExactEvent::new("cycles", 2).with_user_per_unit(2),
        ]
    }

    fn work(&self, units: u64) {
        self.model.run(ModelEvent::Instructions, 3 * units, units);
        self.model.run(ModelEvent::Branches, units, 0);
        self.model.run(ModelEvent::Cycles, 2 * units, 0);
        self.model.advance_ns(10 * units);
    }

    fn target(&self) -> BackendTarget {
        BackendTarget::process(self.model.caller())
    }

    /// Branches: a programmable counter only (instructions and cycles also have a fixed one
    /// on Intel).
    fn counter_event(&self) -> Option<(String, u32)> {
        Some(("branches".to_string(), self.backend.counters()))
    }

    fn missing_device_error(&self) -> Option<Error> {
        Some(crate::missing_module_error())
    }
}

/// One subject per machine: Intel and AMD under hwpmc V10, and Intel under V9.
pub fn model_subjects(db: Arc<Database>) -> Vec<ModelSubject> {
    [
        ModelConfig::intel(),
        ModelConfig::amd(),
        ModelConfig::intel().with_version(Version::V9),
    ]
    .into_iter()
    .filter_map(|config| ModelSubject::new(Arc::clone(&db), config).ok())
    .collect()
}

/// The real hwpmc as the suite's subject, counting this process. Without a way to make the
/// hardware count a known amount from here, it offers no exact events: the suite checks
/// open, errors and the hardware loops.
pub struct RealSubject {
    backend: HwpmcBackend,
}

impl RealSubject {
    /// A subject over the real system call.
    pub fn new(backend: HwpmcBackend) -> RealSubject {
        RealSubject { backend }
    }
}

impl Subject for RealSubject {
    type Backend = HwpmcBackend;

    fn backend(&self) -> &HwpmcBackend {
        &self.backend
    }

    fn description(&self) -> String {
        format!("hwpmc V{}", self.backend.version())
    }

    fn exact_events(&self) -> Vec<ExactEvent> {
        Vec::new()
    }

    fn work(&self, _units: u64) {}

    fn target(&self) -> BackendTarget {
        BackendTarget::process(std::process::id())
    }

    fn missing_device_error(&self) -> Option<Error> {
        Some(crate::missing_module_error())
    }
}

/// The suite on the real system call, or why the backend cannot be used here.
///
/// # Errors
/// As [`probe`](crate::probe()).
pub fn check(
    given: &counterhal_hal::Given<'_, Database>,
) -> Result<counterhal_conformance::Report> {
    crate::probe(
        Arc::clone(given.database),
        given.cpu_model.map(str::to_owned),
    )
    .map(|backend| counterhal_conformance::run_quietly(&RealSubject::new(backend)))
}

/// The suite on every model.
pub fn check_models(db: Arc<Database>) -> Vec<counterhal_conformance::Report> {
    counterhal_conformance::run_each_quietly(&model_subjects(db))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_machine_is_a_subject() {
        let db = Arc::new(Database::shipped().expect("the shipped database loads"));
        let described: Vec<String> = model_subjects(db)
            .iter()
            .map(Subject::description)
            .collect();
        assert_eq!(
            described,
            [
                "hwpmc V10.0 model, Intel: IAP x4, IAF x3, 48-bit, process mode (TC) on this process",
                "hwpmc V10.0 model, AMD: K8 x16, 6 core, 48-bit, process mode (TC) on this process",
                "hwpmc V9.3 model, Intel: IAP x4, IAF x3, 48-bit, process mode (TC) on this process",
            ]
        );
    }
}
