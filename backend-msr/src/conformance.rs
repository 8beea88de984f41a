//! The conformance suite's view of this backend: each PMU model, fed known work; and the real
//! MSR device, where one exists.

use std::sync::Arc;

use counterhal_conformance::{ExactEvent, Subject};
use counterhal_events::Database;
use counterhal_hal::{Backend, Error};

use crate::{LinuxMsrDevice, ModelHandle, MsrBackend, PmuModelKind};

/// The error opening the MSR device under a directory that does not exist.
fn missing_device() -> Option<Error> {
    LinuxMsrDevice::open_at("/nonexistent/dev/cpu", None).err()
}

/// A PMU model as the suite's subject: one unit of work is 4 instructions (3 in user mode, 1 in
/// kernel mode), 2 user-mode core cycles, 1 user-mode branch and 10 ns of TSC time on model
/// CPU 0 (where `ThisThread` groups count).
pub struct ModelSubject {
    backend: MsrBackend,
    model: ModelHandle,
    kind: PmuModelKind,
}

impl ModelSubject {
    /// A subject over a fresh model of `kind`.
    pub fn new(db: Arc<Database>, kind: PmuModelKind) -> ModelSubject {
        let (backend, model) = MsrBackend::with_model(db, kind);
        ModelSubject {
            backend,
            model,
            kind,
        }
    }
}

impl ModelSubject {
    /// A subject over a fresh model of the PMU that database model `id` describes, resolving
    /// names against `id` (as [`model_for`](crate::model_for)).
    ///
    /// # Errors
    /// As [`model_for`](crate::model_for).
    pub fn for_model(db: Arc<Database>, id: &str) -> counterhal_hal::Result<ModelSubject> {
        let (backend, model, kind) = crate::model_with_handle(db, id)?;
        Ok(ModelSubject {
            backend,
            model,
            kind,
        })
    }
}

impl Subject for ModelSubject {
    type Backend = MsrBackend;

    fn backend(&self) -> &MsrBackend {
        &self.backend
    }

    fn description(&self) -> String {
        format!("{} PMU model", self.kind)
    }

    fn exact_events(&self) -> Vec<ExactEvent> {
        vec![
            ExactEvent::new("instructions", 4).with_user_per_unit(3),
            ExactEvent::new("cycles", 2).with_user_per_unit(2),
        ]
    }

    fn work(&self, units: u64) {
        self.model.feed_instructions(3 * units, units);
        self.model.feed_cycles(2 * units, 0);
        // Branches: the counter-limited event (Intel 0xC4/0x00, AMD 0xC2/0x00).
        let branches = if self.model.is_amd() { 0xC2 } else { 0xC4 };
        self.model.feed(branches, 0x00, units, 0);
        self.model.advance_nanos(10 * units + 1);
    }

    fn counter_event(&self) -> Option<(String, u32)> {
        // Branches have no fixed counter: they compete for the general-purpose ones only.
        let counters = self.backend.capabilities().general_counters()?;
        Some(("branches".to_string(), counters))
    }

    fn missing_device_error(&self) -> Option<Error> {
        missing_device()
    }
}

/// One subject per PMU model ([`PmuModelKind::ALL`]): Intel v4-like, v2-like, v1-like
/// and v5-like, AMD legacy, Zen-like.
pub fn model_subjects(db: Arc<Database>) -> Vec<ModelSubject> {
    PmuModelKind::ALL
        .iter()
        .map(|&kind| ModelSubject::new(Arc::clone(&db), kind))
        .collect()
}

/// The real MSR device as the suite's subject. It has no way to make the hardware count a
/// known amount from here other than the hardware loops (which execute real instructions on
/// the pinned CPU), so it offers no exact events.
pub struct RealSubject {
    backend: MsrBackend,
}

impl RealSubject {
    /// A subject over the real device.
    pub fn new(backend: MsrBackend) -> RealSubject {
        RealSubject { backend }
    }
}

impl Subject for RealSubject {
    type Backend = MsrBackend;

    fn backend(&self) -> &MsrBackend {
        &self.backend
    }

    fn description(&self) -> String {
        self.backend.device_description()
    }

    fn exact_events(&self) -> Vec<ExactEvent> {
        Vec::new()
    }

    fn work(&self, _units: u64) {}

    fn counter_event(&self) -> Option<(String, u32)> {
        let counters = self.backend.capabilities().general_counters()?;
        Some(("branches".to_string(), counters))
    }

    fn missing_device_error(&self) -> Option<Error> {
        missing_device()
    }
}

/// The suite on the real device, or why the backend cannot be used here (its probe's error).
///
/// # Errors
/// As the crate's `probe`.
pub fn check(
    given: &counterhal_hal::Given<'_, counterhal_events::Database>,
) -> counterhal_hal::Result<counterhal_conformance::Report> {
    crate::probe(
        std::sync::Arc::clone(given.database),
        given.cpu_model.map(str::to_owned),
    )
    .map(|backend| counterhal_conformance::run_quietly(&RealSubject::new(backend)))
}

/// The suite on every model of the device.
pub fn check_models(
    db: std::sync::Arc<counterhal_events::Database>,
) -> Vec<counterhal_conformance::Report> {
    counterhal_conformance::run_each_quietly(&model_subjects(db))
}
