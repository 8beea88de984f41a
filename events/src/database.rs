//! The database of CPU models and their events.
//!
//! (Skeleton: the schema, loader and shipped data are being built; `resolve` already handles
//! perf's generic events for the Linux backend.)

use std::path::Path;

use counterhal_hal::{
    BackendKind, Domain, Encoding, Error, EventRequest, GeneralizedEvent, ResolvedEvent, Result,
};

use crate::CpuIdentity;

/// Which encoder turns a CPU model's events into hardware words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EncoderKind {
    /// Intel Pentium (P5): 6-bit events, CESR layout.
    P5,
    /// Intel P6 and OpenBSD pctr's P6 layout (PERFEVTSEL low word).
    P6,
    /// Intel architectural performance monitoring (PERFEVTSEL, fixed counters).
    IntelArch,
    /// AMD64 PerfEvtSel (12-bit events, bits 35:32).
    Amd64,
}

/// A CPU model's PMU: how many counters of what width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PmuDescription {
    /// General-purpose counters per logical CPU.
    pub general_counters: u32,
    /// Their width in bits.
    pub counter_width: u32,
    /// Fixed-function counters.
    pub fixed_counters: u32,
    /// Their width in bits (0 when there are none).
    pub fixed_width: u32,
}

/// One CPU model of the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuModel {
    /// The id used by `--cpu` (`p6`, `skl`, `amd64_fam19h_zen3`).
    pub id: String,
    /// A one-line description.
    pub description: String,
    /// The encoder for its events.
    pub encoder: EncoderKind,
    /// Its PMU.
    pub pmu: PmuDescription,
}

/// The event database: the shipped CPU models plus any user file.
#[derive(Clone, Debug, Default)]
pub struct Database {
    models: Vec<CpuModel>,
}

impl Database {
    /// The database shipped inside the library.
    ///
    /// # Errors
    /// Never in a correct build (the shipped data is validated by tests).
    pub fn shipped() -> Result<Database> {
        Ok(Database::default())
    }

    /// The shipped database extended by a user file (adds CPUs, overrides events).
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] naming file:line:column and the key.
    pub fn with_user_file(self, path: &Path) -> Result<Database> {
        Err(Error::unsupported(format!("user event files are not loaded yet ({})", path.display())))
    }

    /// Every CPU model, in match order.
    pub fn models(&self) -> impl Iterator<Item = &CpuModel> {
        self.models.iter()
    }

    /// The model with this id.
    pub fn model(&self, id: &str) -> Option<&CpuModel> {
        self.models.iter().find(|m| m.id.eq_ignore_ascii_case(id))
    }

    /// The first model whose match rules accept `cpu`.
    pub fn detect(&self, _cpu: &CpuIdentity) -> Option<&CpuModel> {
        None
    }

    /// Resolves an event string for `backend` on CPU model `cpu` (a model id; `None` when the
    /// CPU is unknown, which still allows perf's generic events).
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidEvent`] for an unknown name or bad modifier;
    /// [`counterhal_hal::ErrorKind::Unsupported`] when the event has no encoding here.
    pub fn resolve(
        &self,
        _cpu: Option<&str>,
        event: &str,
        backend: BackendKind,
    ) -> Result<ResolvedEvent> {
        let generalized = GeneralizedEvent::from_name(event)
            .ok_or_else(|| Error::invalid_event(format!("unknown event `{event}`")))?;
        match backend {
            BackendKind::Linux => crate::perf::generic_encoding(generalized, Domain::DEFAULT)
                .map(|e| ResolvedEvent::single(EventRequest::new(event, Encoding::Perf(e))))
                .ok_or_else(|| Error::unsupported(format!("{event} needs a CPU model"))),
            _ => Err(Error::unsupported(format!("{event}: no encoding for {backend} yet"))),
        }
    }
}
