//! # counterhal-msr: raw x86 MSRs
//!
//! A counterhal backend that counts by programming the PMU registers of a logical CPU
//! directly: Intel architectural performance monitoring v1-v5 (general-purpose counters,
//! fixed counters, global control) and AMD's legacy, extended-core and PerfMonV2 counters.
//!
//! **For users.** [`probe`] opens the real device (Linux `/dev/cpu/N/msr_safe` or
//! `/dev/cpu/N/msr`) and decodes the PMU with the CPUID instruction. Counting is per logical
//! CPU and system wide: [`BackendTarget::Cpu`](counterhal_hal::BackendTarget::Cpu) measures one CPU,
//! [`BackendTarget::ThisThread`](counterhal_hal::BackendTarget::ThisThread) pins the calling thread to the
//! CPU it runs on (`sched_setaffinity`) for the life of the group and measures that CPU, so
//! its counts include whatever else runs there. Times come from the TSC. An allow-list
//! ([`AllowList`]) built from the decoded PMU refuses every MSR that is not one of its PMU
//! registers, whatever an event encoding says.
//!
//! **For backend authors and tests.** The backend talks to an [`MsrDevice`]: the real device
//! or a PMU model ([`ModelDevice`], see [`model`]). CPUID comes through a [`CpuidSource`]:
//! the instruction, `/dev/cpu/N/cpuid`, or a recorded dump ([`CpuidDump`]).
//! [`MsrBackend::with_model`] gives a backend over a model and the [`ModelHandle`] that feeds
//! it deterministic work ("1000 instructions in user mode") and time.
//!
//! Our words and the hardware's: a *counter* is a general-purpose PMC (IA32_PMCx, PerfCtrx)
//! or a fixed counter (IA32_FIXED_CTRx); an *encoding* is the PERFEVTSEL value; a *group* is
//! a set of counters on one CPU started and stopped together through the global control
//! register (IA32_PERF_GLOBAL_CTRL, PerfCntrGlobalCtl) where the PMU has one.
//!
//! See the crate's README for what is verified only on a model.

#![deny(unsafe_code)]

pub mod allow;
mod backend;
#[cfg(feature = "conformance")]
pub mod conformance;
mod cores;
pub mod cpuid;
pub mod device;
mod group;
pub mod model;
pub mod pmu;
pub mod regs;
mod shared;
#[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
mod sys;
/// The rotation's timer (shared with the pctr backend: see [`counterhal_x86::timer`]).
pub use counterhal_x86::timer;

use std::sync::Arc;

pub use allow::AllowList;
pub use backend::MsrBackend;
pub use counterhal_x86::CounterRef;
pub use cpuid::{CpuidDevice, CpuidDump, CpuidInstruction, CpuidResult, CpuidSource};
pub use device::{Access, LinuxMsrDevice, MsrDevice, MsrDriver, ThreadPin};
pub use group::MsrGroup;
pub use model::{
    MODEL_LOG, ModelConfig, ModelDevice, ModelHandle, MsrAccess, MsrWrite, PmuModelKind,
};
pub use pmu::{PmuArch, PmuInfo, TscFrequency, TscSource, cpu_identity};
pub use timer::{Tick, Timer};

use counterhal_events::{Database, EncoderKind, Vendor};
use counterhal_hal::{Error, Registration, Result};

/// This crate as the facade's registry takes it: raw MSRs on Linux, and models of the PMUs.
pub static REGISTRATION: Registration<Database> = Registration {
    name: "msr",
    interface: "raw x86 MSRs (/dev/cpu/N/msr)",
    reaches: "raw x86 MSRs (`/dev/cpu/N/msr`), behind an allow-list",
    verified: "models of Intel's and AMD's PMUs",
    systems: &["linux"],
    probe: |given| given.make(probe),
    model: Some(|database, id| Ok(Box::new(model_for(Arc::clone(database), id)?))),
    sysfs: None,
};

/// Opens the real MSR device and decodes this machine's PMU. `cpu` names the event
/// database's CPU model (`--cpu-model`); `None` detects it from CPUID.
///
/// # Errors
/// [`counterhal_hal::ErrorKind::DeviceMissing`] when the msr driver is not loaded (hint:
/// `modprobe msr`, run as root or with CAP_SYS_RAWIO);
/// [`counterhal_hal::ErrorKind::PermissionDenied`] when the device cannot be opened;
/// [`counterhal_hal::ErrorKind::Unsupported`] off Linux, off x86, or for a CPU without a
/// known PMU.
pub fn probe(db: Arc<Database>, cpu: Option<String>) -> Result<MsrBackend> {
    if !cfg!(any(target_arch = "x86", target_arch = "x86_64")) {
        return Err(counterhal_hal::Error::unsupported(
            "raw MSR counting needs an x86 CPU",
        ));
    }
    if !cfg!(target_os = "linux") {
        return Err(counterhal_hal::Error::unsupported(
            "raw MSR counting is implemented on Linux only (/dev/cpu/N/msr)",
        )
        .with_hint("use the perf or pctr backend on this system"));
    }
    let device = LinuxMsrDevice::open()?;
    MsrBackend::with_device(db, Arc::new(device), &CpuidInstruction, cpu)
}

/// A backend over a PMU model ([`ModelDevice`]) of the CPU that database model `id` describes,
/// resolving names against that model: for showing what the backend would program where there
/// is no msr driver (`counterhal encode --backend msr --cpu-model skl`). Intel models get an
/// architectural perfmon v4 PMU, AMD ones the legacy four counters up to family 0x16 and the
/// Zen PMU from family 0x17.
///
/// # Errors
/// [`counterhal_hal::ErrorKind::InvalidInput`] for an id the database lacks;
/// [`counterhal_hal::ErrorKind::Unsupported`] for a CPU without architectural performance
/// monitoring (P5, P6), whose PMU this backend does not program.
pub fn model_for(db: Arc<Database>, id: &str) -> Result<MsrBackend> {
    model_with_handle(db, id).map(|(backend, _, _)| backend)
}

/// As [`model_for`], with the handle that feeds the model and its kind.
///
/// # Errors
/// As [`model_for`].
pub(crate) fn model_with_handle(
    db: Arc<Database>,
    id: &str,
) -> Result<(MsrBackend, ModelHandle, PmuModelKind)> {
    let model = counterhal_x86::named_model(&db, id)?;
    // Zen models match families from 0x17 on; K7 and K8 match families up to 0x16.
    let zen = model.match_rules().iter().any(|rule| {
        rule.vendor == Vendor::Amd && rule.family.ranges.iter().any(|&(low, _)| low >= 0x17)
    });
    let kind = match model.encoder {
        EncoderKind::IntelArch => PmuModelKind::IntelV4,
        EncoderKind::Amd64 if zen => PmuModelKind::AmdZen,
        EncoderKind::Amd64 => PmuModelKind::AmdLegacy,
        EncoderKind::Armv8 => {
            return Err(Error::unsupported(format!(
                "CPU model `{id}` is an Arm core, and the msr backend programs x86 counters"
            )));
        }
        EncoderKind::P5 | EncoderKind::P6 => {
            return Err(Error::unsupported(format!(
                "CPU model `{id}` has no architectural performance monitoring, which the msr backend programs"
            ))
            .with_hint(format!(
                "OpenBSD's pctr drives these counters: `--backend pctr --cpu-model {id}` shows the encoding"
            )));
        }
    };
    let id = model.id.clone();
    let mut config = kind.config();
    // An AMD model's own family (K8's 0x0f has no host/guest bits; 0x10 does).
    if let Some(&(family, _)) = model
        .match_rules()
        .first()
        .and_then(|rule| rule.family.ranges.first())
        && model.encoder == EncoderKind::Amd64
    {
        config.family = family;
    }
    let cpuid = config.cpuid();
    let (device, handle) = ModelDevice::new(config);
    let backend = MsrBackend::with_device(db, Arc::new(device), &cpuid, Some(id))?;
    Ok((backend, handle, kind))
}
