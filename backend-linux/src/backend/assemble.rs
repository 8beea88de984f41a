//! Putting a [`LinuxBackend`] together from a PMU tree: for this system, where
//! `perf_event_open` is tried ([`probe`]), or for a tree read offline, another machine's, where
//! nothing is tried ([`on_sysfs`]).

use std::sync::{Arc, OnceLock};

use counterhal_events::Database;
use counterhal_hal::{Backend, BackendTarget, GeneralizedEvent, OpenOptions, Result};
use counterhal_system::System;
use std::os::fd::AsFd;

use super::{CorePmus, LinuxBackend, capabilities, probe_request};
use crate::errno::SystemFacts;
use crate::pmus;
use crate::raw::RawFormat;
use crate::sys;

/// Checks that `perf_event_open` works here (a software event on this thread opens) and returns
/// the backend, its PMUs, tracefs and facts read from `system` (the program's: this machine's,
/// or a test's tree, `System::host().with_pmu_devices(DIR)`). `cpu` is the event database's
/// CPU model id, or `None` when unknown.
///
/// # Errors
/// [`counterhal_hal::ErrorKind::Unsupported`] when the system call is missing (ENOSYS: no perf support, or a
/// seccomp filter); [`counterhal_hal::ErrorKind::PermissionDenied`] when the paranoid level, capabilities or a
/// seccomp filter forbid it (the hint names the level and what to change).
pub fn probe(db: Arc<Database>, cpu: Option<String>, system: System) -> Result<LinuxBackend> {
    let backend = assemble(db, cpu, system, false);
    // A user-space-only software event opens at every paranoid level up to 2. Tried first as
    // an inherited group read: where that opens, one system call answers both questions;
    // where it does not, the plain open says why perf_event_open is not usable, if it is not.
    // The inherited open is usable as the plain probe's open is only if its id can be asked
    // for too (every open asks; an ioctl filter may refuse it): otherwise the plain probe
    // runs and says why.
    let request = probe_request();
    let inherited = backend.open_inherited_group(&request);
    let _ = backend.inherit_group_read.set(inherited.is_some());
    if inherited.is_some_and(|fd| sys::ioctl_id(fd.as_fd()).is_ok()) {
        return Ok(backend);
    }
    backend
        .open(
            std::slice::from_ref(&request),
            &BackendTarget::ThisThread,
            &OpenOptions::default(),
        )
        .map_err(|e| e.context("perf_event_open is not usable"))?;
    Ok(backend)
}

/// A backend that resolves names against the PMUs and tracepoints of `system` (another
/// machine's sysfs tree: `System::host().with_sysfs(DIR)`) for CPU model `cpu`, without probing or
/// opening anything here: what encodes offline (`counterhal encode --sysfs DIR`). Its facts
/// about this system are unknown, and opening with it opens on this kernel, where the tree's
/// dynamic PMU types may mean other PMUs or none. Its generalized events are those that
/// resolve against the tree (none is tried).
pub fn on_sysfs(db: Arc<Database>, cpu: Option<String>, system: System) -> LinuxBackend {
    let backend = assemble(db, cpu, system, true);
    let resolving: Vec<GeneralizedEvent> = GeneralizedEvent::all()
        .filter(|event| backend.resolve(&event.name()).is_ok())
        .collect();
    let _ = backend.generalized.set(resolving);
    backend
}

/// The backend over the PMUs of `system`, with its facts, or (`offline`) with none:
/// a tree read from elsewhere, where nothing is tried.
pub(super) fn assemble(
    db: Arc<Database>,
    cpu: Option<String>,
    system: System,
    offline: bool,
) -> LinuxBackend {
    // One listing of the core PMUs serves every fact read from them.
    let pmus = system.pmus();
    let core_list = pmus::core_pmus(&pmus);
    let facts = match offline {
        true => SystemFacts::unknown(),
        false => SystemFacts::gather(&system, !core_list.is_empty()),
    };
    let raw_format = RawFormat::of(&core_list).map(Arc::new);
    let cores = CorePmus::of(core_list);
    LinuxBackend {
        capabilities: capabilities(!offline && facts.hardware_pmu),
        db,
        cpu,
        system,
        pmus,
        facts: Arc::new(facts),
        // Offline, inherited group reads are taken as a current kernel has them.
        inherit_group_read: match offline {
            true => Arc::new(OnceLock::from(true)),
            false => Arc::default(),
        },
        self_monitoring: !offline,
        hybrid: cores.hybrid,
        raw_format,
        user_access: cores.user_access,
        core_types: cores.types,
        generalized: Arc::default(),
        mount_tracefs: false,
        tracefs: Default::default(),
    }
}

impl LinuxBackend {
    /// Lets resolving a tracepoint (or listing events) mount tracefs at `/sys/kernel/tracing`
    /// where it is mounted nowhere and this process is root, as perf does, or not (the
    /// default: a library changes no system unasked, and a tracepoint is then unknown until
    /// tracefs is mounted). The mount is left in place; the `counterhal` command asks for it.
    pub fn set_mount_tracefs(&mut self, mount: bool) {
        self.mount_tracefs = mount;
    }
}
