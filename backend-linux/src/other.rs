//! Stand-ins for operating systems without `perf_event_open`: [`probe`] says so, and the types
//! exist so that portable code naming them compiles.

use std::convert::Infallible;
use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hal::{
    Backend, BackendTarget, Capabilities, Error, EventRequest, Group, OpenOptions, Reading,
    ResolvedEvent, Result,
};

/// The Linux backend; it cannot exist on this OS ([`probe`] always fails).
#[derive(Debug)]
pub struct LinuxBackend {
    never: Infallible,
}

/// The Linux backend's group; it cannot exist on this OS.
#[derive(Debug)]
pub struct LinuxGroup {
    never: Infallible,
}

/// Always fails: `perf_event_open` is Linux only.
///
/// # Errors
/// [`counterhal_hal::ErrorKind::Unsupported`], always.
pub fn probe(
    _db: Arc<Database>,
    _cpu: Option<String>,
    _system: counterhal_system::System,
) -> Result<LinuxBackend> {
    Err(Error::unsupported("perf_event_open exists only on Linux")
        .with_hint("`counterhal info` lists the backends this system has"))
}

impl Group for LinuxGroup {
    fn len(&self) -> usize {
        match self.never {}
    }
    fn enable(&mut self) -> Result<()> {
        match self.never {}
    }
    fn disable(&mut self) -> Result<()> {
        match self.never {}
    }
    fn reset(&mut self) -> Result<()> {
        match self.never {}
    }
    fn read(&mut self, _readings: &mut [Reading]) -> Result<()> {
        match self.never {}
    }
}

impl LinuxBackend {
    /// Whether resolving a tracepoint may mount tracefs; nothing to mount on this OS.
    pub fn set_mount_tracefs(&mut self, _mount: bool) {
        match self.never {}
    }
}

impl Backend for LinuxBackend {
    type Group = LinuxGroup;
    fn name(&self) -> &'static str {
        "linux"
    }
    fn extensions(&self) -> counterhal_hal::Extensions<'_> {
        match self.never {}
    }
    fn capabilities(&self) -> &Capabilities {
        match self.never {}
    }
    fn resolve(&self, _event: &str) -> Result<ResolvedEvent> {
        match self.never {}
    }
    fn open(&self, _: &[EventRequest], _: &BackendTarget, _: &OpenOptions) -> Result<LinuxGroup> {
        match self.never {}
    }
}
