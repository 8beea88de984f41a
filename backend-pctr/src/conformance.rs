//! The conformance suite's view of this backend: the driver model, fed known work, for each
//! CPU kind pctr drives; and the real device, where one exists.

use std::sync::Arc;

use counterhal_conformance::{ExactEvent, Subject};
use counterhal_events::{CpuIdentity, Database, Vendor};
use counterhal_hal::{Error, Result};
use counterhal_x86::{TscFrequency, TscSource};

use crate::{
    Abi, CpuFacts, MODEL_TSC_HZ, ModelConfig, ModelCpu, ModelHandle, PctrBackend,
    backend_for_device,
};

/// The model as the suite's subject: one unit of work is 4 instructions (3 in user mode, 1 in
/// kernel mode), 1 user-mode branch and (where the CPU has the event) 2 user-mode cycles, in
/// 10 ns of TSC time (20 cycles at the model's 2 GHz), so that the suite's multiplexing case
/// (2 million units) spans five 4 ms turns.
pub struct ModelSubject {
    backend: PctrBackend,
    model: ModelHandle,
    note: Option<String>,
}

impl ModelSubject {
    /// A subject over a fresh model of `cpu` on its usual driver ([`ModelConfig::new`]).
    pub fn new(db: Arc<Database>, cpu: ModelCpu) -> ModelSubject {
        ModelSubject::with_config(db, ModelConfig::new(cpu))
    }

    /// A subject over a fresh model set up as `config` says.
    pub fn with_config(db: Arc<Database>, config: ModelConfig) -> ModelSubject {
        let (backend, model) = PctrBackend::with_model_config(db, config);
        ModelSubject {
            backend,
            model,
            note: None,
        }
    }

    /// A subject over a fresh model of the CPU that database model `id` describes, on its
    /// usual driver, resolving names against `id` (as [`model_for`](crate::model_for)).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) for an id the
    /// database lacks.
    pub fn for_model(db: Arc<Database>, id: &str) -> Result<ModelSubject> {
        let (backend, model) = crate::probe::model_with_handle(db, id)?;
        Ok(ModelSubject {
            backend,
            model,
            note: None,
        })
    }

    /// A subject over a fresh model set up as `config` says, found as the real device is:
    /// through [`backend_for_device`] with a CPU whose CPUID says `facts`, under the kernel
    /// `config` names, so that the kind, the counters and the database model come from CPUID
    /// and the driver's answers. `note` is added to the description.
    ///
    /// # Errors
    /// As [`backend_for_device`].
    pub fn probed(
        db: Arc<Database>,
        config: ModelConfig,
        facts: &CpuFacts,
        note: &str,
    ) -> Result<ModelSubject> {
        let model = ModelHandle::with_config(config);
        let tsc = TscFrequency::new(MODEL_TSC_HZ, TscSource::Model);
        let device = Box::new(model.open(true));
        let backend = backend_for_device(db, None, device, facts, config.is_amd64(), tsc)?;
        model.clear_sets();
        Ok(ModelSubject {
            backend,
            model,
            note: Some(note.to_string()),
        })
    }
}

impl ModelSubject {
    /// The handle that feeds the subject's model (for tests that drive it themselves).
    pub fn model(&self) -> &ModelHandle {
        &self.model
    }
}

impl Subject for ModelSubject {
    type Backend = PctrBackend;

    fn backend(&self) -> &PctrBackend {
        &self.backend
    }

    fn description(&self) -> String {
        match &self.note {
            Some(note) => format!("{}, {note}", self.model.config().describe()),
            None => self.model.config().describe(),
        }
    }

    /// As many as fit the counters together: the suite opens them as one group.
    fn exact_events(&self) -> Vec<ExactEvent> {
        let mut events = vec![
            ExactEvent::new("instructions", 4).with_user_per_unit(3),
            ExactEvent::new("branches", 1).with_user_per_unit(1),
        ];
        if self.model.cpu().cycles_event().is_some() && self.backend.counters() > 2 {
            events.push(ExactEvent::new("cycles", 2).with_user_per_unit(2));
        }
        events
    }

    fn work(&self, units: u64) {
        self.model.retire_instructions(3 * units, units);
        self.model.retire_branches(units, 0);
        self.model.run_cycles(2 * units, 0);
        // The rest of the unit's 20 TSC cycles, the rotation's timer running on the way.
        self.model.advance_tsc(18 * units);
    }

    fn counter_event(&self) -> Option<(String, u32)> {
        Some(("instructions".to_string(), self.backend.counters()))
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

/// CPUID facts for a model subject found as the real device is.
fn facts(vendor: Vendor, family: u32, model: u32, arch_perfmon_version: u32) -> CpuFacts {
    CpuFacts {
        identity: CpuIdentity {
            vendor,
            family,
            model,
            stepping: 0,
        },
        arch_perfmon_version,
        arch_perfmon_width: 0,
    }
}

/// One subject per CPU kind and driver: P5 and P6 on the legacy ABI, the P5 on the current
/// (i386, 2007-2022) ABI, Intel architectural and AMD on the current (amd64) one, and Intel
/// architectural with 48-bit counters on the current i386 driver, which keeps 40 bits.
///
/// Then four found through [`backend_for_device`], as on a real machine: a Pentium III and
/// an AMD Athlon 64 under the i386 driver of late 2007 (`pctr.c` 1.23, the 64-byte i386 ABI:
/// the P6 through four slots; AMD with two settable counters), a Core 2 under the amd64
/// driver of September 2007 (`pctr.c` 1.1, the 64-byte amd64 ABI), and a Core 2 whose
/// CPUID's highest leaf is below 0xA under the amd64 driver (`pctr.c` 1.10), which reads
/// leaf 0xA unguarded and drives it anyway.
///
/// A P5 under the i386 driver of 2023 on is no subject: that driver drives no counters there
/// (see the crate's README); its tests (tests/revisions.rs) expect `ENODEV`.
pub fn model_subjects(db: Arc<Database>) -> Vec<ModelSubject> {
    let usual = [
        Ok(ModelConfig::new(ModelCpu::P5)),
        Ok(ModelConfig::new(ModelCpu::P6)),
        ModelConfig::new(ModelCpu::P5).with_abi(Abi::Current),
        Ok(ModelConfig::new(ModelCpu::IntelArch)),
        Ok(ModelConfig::new(ModelCpu::IntelArch).i386()),
        Ok(ModelConfig::new(ModelCpu::Amd)),
    ]
    .into_iter()
    .filter_map(|config| config.ok())
    .map(|config| ModelSubject::with_config(Arc::clone(&db), config));
    let probed = [
        (
            ModelConfig::new(ModelCpu::P6).with_abi(Abi::TransitionalI386),
            facts(Vendor::Intel, 6, 0x08, 0),
            "a Pentium III",
        ),
        (
            ModelConfig::new(ModelCpu::Amd).with_abi(Abi::TransitionalI386),
            facts(Vendor::Amd, 0x0f, 0x04, 0),
            "an Athlon 64, two settable counters",
        ),
        (
            ModelConfig::new(ModelCpu::IntelArch)
                .with_hardware_width(40)
                .and_then(|config| config.with_abi(Abi::TransitionalAmd64)),
            facts(Vendor::Intel, 6, 0x0f, 2),
            "a Core 2",
        ),
        (
            ModelConfig::new(ModelCpu::IntelArch).with_hardware_width(40),
            facts(Vendor::Intel, 6, 0x0f, 0),
            "a Core 2 with CPUID limited below leaf 0xA (pctr.c 1.10 reads it unguarded)",
        ),
    ]
    .into_iter()
    .filter_map(|(config, facts, note)| {
        ModelSubject::probed(Arc::clone(&db), config.ok()?, &facts, note).ok()
    });
    usual.chain(probed).collect()
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
                "p6 model, transitional-i386 ABI (i386 pctr.c 1.23), a Pentium III",
                "amd model, transitional-i386 ABI (i386 pctr.c 1.23), an Athlon 64, two \
                 settable counters",
                "intel-arch model, transitional-amd64 ABI (amd64 pctr.c 1.1), a Core 2",
                "intel-arch model, current ABI (amd64), a Core 2 with CPUID limited below leaf \
                 0xA (pctr.c 1.10 reads it unguarded)",
            ]
        );
    }

    #[test]
    fn probed_subjects_take_what_the_driver_answers() {
        let db = Arc::new(Database::shipped().expect("the shipped database loads"));
        let subjects = model_subjects(db);
        let probed: Vec<(crate::CpuKind, u32, &str)> = subjects[6..]
            .iter()
            .map(|s| {
                (
                    s.backend.cpu_kind(),
                    s.backend.counters(),
                    s.backend.cpu_id(),
                )
            })
            .collect();
        assert_eq!(
            probed,
            [
                // A Pentium III takes libpfm4's Pentium III table, `piii` (pctr(1)'s names
                // are aliases there); Core 2 setups take the Core 2 table (issue 12 added
                // it), never p6 or the architectural fallback.
                (crate::CpuKind::P6, 2, "piii"),
                // The Athlon 64 (family 0x0f model 4 stepping 0) is K8 revision B, whose
                // table revision C shares.
                (crate::CpuKind::Amd, 2, "amd64_k8_revc"),
                (crate::CpuKind::IntelArch, 2, "core"),
                (crate::CpuKind::IntelArch, 2, "core"),
            ]
        );
        // The probe's questions left no set behind in the log the suite reads.
        assert!(
            subjects[6..]
                .iter()
                .all(|s| s.model.recent_sets().is_empty())
        );
    }
}
