//! What a backend can do, as data: [`Capabilities`], with whose activity it counts
//! ([`Scope`]) and which targets it takes ([`TargetSupport`]).

use std::fmt;

use crate::domain::Domain;
use crate::encoding::{Accepts, Family};
use crate::target::BackendTarget;

/// Whether a backend talks to the real device or to a model of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// The OS interface itself.
    Real,
    /// A model of the device written from its documented behaviour (for testing where the
    /// device is absent). Reports always say so.
    Model,
}

impl DeviceKind {
    /// `real` or `model`.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Real => "real",
            DeviceKind::Model => "model",
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whose activity a backend's counts cover.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Counts are virtualised per thread or process by the OS (Linux perf).
    PerProcess,
    /// Counts cover everything on a CPU, whatever runs there (pctr, raw MSRs).
    SystemWidePerCpu,
}

/// Which [`BackendTarget`]s a backend can measure.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct TargetSupport {
    /// [`BackendTarget::ThisThread`].
    pub this_thread: bool,
    /// [`BackendTarget::Process`] without inherit (attach to another process).
    pub attach: bool,
    /// [`BackendTarget::Process`] with inherit.
    pub inherit: bool,
    /// [`BackendTarget::Cpu`].
    pub cpu: bool,
    /// [`BackendTarget::Exec`].
    pub exec: bool,
    /// [`BackendTarget::ExecAlone`].
    pub exec_alone: bool,
    /// [`BackendTarget::Cgroup`].
    pub cgroup: bool,
}

impl TargetSupport {
    /// No target at all; set the fields of those the backend measures.
    pub const NONE: TargetSupport = TargetSupport {
        this_thread: false,
        attach: false,
        inherit: false,
        cpu: false,
        exec: false,
        exec_alone: false,
        cgroup: false,
    };

    /// Every target.
    pub const ALL: TargetSupport = TargetSupport {
        this_thread: true,
        attach: true,
        inherit: true,
        cpu: true,
        exec: true,
        exec_alone: true,
        cgroup: true,
    };
}

/// What a backend is and can do on this machine, as data: computed once when the backend is
/// made, and read by the event database (through [`Capabilities::accepts`]), the command and
/// the conformance suite. Read through its accessors; a backend sets what applies with the
/// `set_` methods after [`Capabilities::new`].
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Whether it drives the real device or a model of it.
    device: DeviceKind,
    /// The encoding families it programs, the domains it can filter and what it counts by
    /// default.
    accepts: Accepts,
    /// General-purpose counters per CPU, when the backend knows (perf schedules them itself).
    general_counters: Option<u32>,
    /// Width of the general-purpose counters in bits, when known.
    counter_width: Option<u32>,
    /// Fixed-function counters per CPU.
    fixed_counters: u32,
    /// Width of the fixed counters in bits, when there are any.
    fixed_width: Option<u32>,
    /// Whether it time-shares counters among more events than fit (so readings may be scaled).
    multiplexing: bool,
    /// When it multiplexes in software (no kernel to do it), the default length of one turn
    /// of a schedule on the counters; `None` for the kernel's multiplexing or none.
    multiplex_slice: Option<std::time::Duration>,
    /// Whose activity the counts cover.
    scope: Scope,
    /// Which targets it can measure.
    targets: TargetSupport,
    /// Whether reads of the calling thread's counters can bypass the kernel (rdpmc).
    self_monitoring_reads: bool,
    /// The most events one group may hold whatever they count, when the backend has such a
    /// limit (Linux: 1,022, as the kernel reads a group in at most 16 KiB); `None` when only
    /// the counters limit it.
    max_group_events: Option<u32>,
    /// Whether it can sample ([`Sampler`](crate::Sampler)): record where events happen
    /// into a ring. `false`: its samplers are
    /// [`ErrorKind::Unsupported`](crate::error::ErrorKind::Unsupported).
    sampling: bool,
    /// Whether it opens the PMUs the OS lists in sysfs by perf's syntax (`pmu/terms/`, an
    /// uncore PMU's boxes, breakpoints `mem:ADDR`), so that a face reads their tree
    /// (`/sys/bus/event_source/devices`, or another machine's) for it.
    sysfs_pmus: bool,
}

impl Capabilities {
    /// A backend of the real device that takes `accepts` and counts with `scope`, with no
    /// counters described, no target, no multiplexing and no self-monitoring reads: set what
    /// applies (`set_device` for a model, `set_targets`, ...).
    pub const fn new(accepts: Accepts, scope: Scope) -> Self {
        Self {
            device: DeviceKind::Real,
            accepts,
            general_counters: None,
            counter_width: None,
            fixed_counters: 0,
            fixed_width: None,
            multiplexing: false,
            multiplex_slice: None,
            scope,
            targets: TargetSupport::NONE,
            self_monitoring_reads: false,
            max_group_events: None,
            sampling: false,
            sysfs_pmus: false,
        }
    }

    /// Whether it drives the real device or a model of it (reports say "model").
    pub fn device(&self) -> DeviceKind {
        self.device
    }

    /// Sets [`device`](Capabilities::device).
    pub fn set_device(&mut self, device: DeviceKind) -> &mut Self {
        self.device = device;
        self
    }

    /// The encoding families it programs, the domains it can filter and what it counts by
    /// default.
    pub fn accepts(&self) -> &Accepts {
        &self.accepts
    }

    /// Sets [`accepts`](Capabilities::accepts).
    pub fn set_accepts(&mut self, accepts: Accepts) -> &mut Self {
        self.accepts = accepts;
        self
    }

    /// General-purpose counters per CPU, when the backend knows (perf schedules them itself).
    pub fn general_counters(&self) -> Option<u32> {
        self.general_counters
    }

    /// Sets [`general_counters`](Capabilities::general_counters).
    pub fn set_general_counters(&mut self, general_counters: Option<u32>) -> &mut Self {
        self.general_counters = general_counters;
        self
    }

    /// Width of the general-purpose counters in bits, when known.
    pub fn counter_width(&self) -> Option<u32> {
        self.counter_width
    }

    /// Sets [`counter_width`](Capabilities::counter_width).
    pub fn set_counter_width(&mut self, counter_width: Option<u32>) -> &mut Self {
        self.counter_width = counter_width;
        self
    }

    /// Fixed-function counters per CPU.
    pub fn fixed_counters(&self) -> u32 {
        self.fixed_counters
    }

    /// Sets [`fixed_counters`](Capabilities::fixed_counters).
    pub fn set_fixed_counters(&mut self, fixed_counters: u32) -> &mut Self {
        self.fixed_counters = fixed_counters;
        self
    }

    /// Width of the fixed counters in bits, when there are any.
    pub fn fixed_width(&self) -> Option<u32> {
        self.fixed_width
    }

    /// Sets [`fixed_width`](Capabilities::fixed_width).
    pub fn set_fixed_width(&mut self, fixed_width: Option<u32>) -> &mut Self {
        self.fixed_width = fixed_width;
        self
    }

    /// Whether it time-shares counters among more events than fit (so readings may be scaled).
    pub fn multiplexing(&self) -> bool {
        self.multiplexing
    }

    /// Sets [`multiplexing`](Capabilities::multiplexing).
    pub fn set_multiplexing(&mut self, multiplexing: bool) -> &mut Self {
        self.multiplexing = multiplexing;
        self
    }

    /// When it multiplexes in software (no kernel to do it), the default length of one turn
    /// of a schedule on the counters; `None` for the kernel's multiplexing or none.
    pub fn multiplex_slice(&self) -> Option<std::time::Duration> {
        self.multiplex_slice
    }

    /// Sets [`multiplex_slice`](Capabilities::multiplex_slice).
    pub fn set_multiplex_slice(
        &mut self,
        multiplex_slice: Option<std::time::Duration>,
    ) -> &mut Self {
        self.multiplex_slice = multiplex_slice;
        self
    }

    /// Whose activity the counts cover.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// Sets [`scope`](Capabilities::scope).
    pub fn set_scope(&mut self, scope: Scope) -> &mut Self {
        self.scope = scope;
        self
    }

    /// Which targets it can measure.
    pub fn targets(&self) -> TargetSupport {
        self.targets
    }

    /// Sets [`targets`](Capabilities::targets).
    pub fn set_targets(&mut self, targets: TargetSupport) -> &mut Self {
        self.targets = targets;
        self
    }

    /// Whether reads of the calling thread's counters can bypass the kernel (rdpmc).
    pub fn self_monitoring_reads(&self) -> bool {
        self.self_monitoring_reads
    }

    /// Sets [`self_monitoring_reads`](Capabilities::self_monitoring_reads).
    pub fn set_self_monitoring_reads(&mut self, self_monitoring_reads: bool) -> &mut Self {
        self.self_monitoring_reads = self_monitoring_reads;
        self
    }

    /// The most events one group may hold whatever they count, when the backend has such a
    /// limit (Linux: 1,022, as the kernel reads a group in at most 16 KiB); `None` when only
    /// the counters limit it.
    pub fn max_group_events(&self) -> Option<u32> {
        self.max_group_events
    }

    /// Sets [`max_group_events`](Capabilities::max_group_events).
    pub fn set_max_group_events(&mut self, max_group_events: Option<u32>) -> &mut Self {
        self.max_group_events = max_group_events;
        self
    }

    /// Whether it can sample ([`Sampler`](crate::Sampler)): record where events happen
    /// into a ring. `false`: its samplers are
    /// [`ErrorKind::Unsupported`](crate::error::ErrorKind::Unsupported).
    pub fn sampling(&self) -> bool {
        self.sampling
    }

    /// Sets [`sampling`](Capabilities::sampling).
    pub fn set_sampling(&mut self, sampling: bool) -> &mut Self {
        self.sampling = sampling;
        self
    }

    /// Sets [`sysfs_pmus`](Capabilities::sysfs_pmus).
    pub fn set_sysfs_pmus(&mut self, sysfs_pmus: bool) -> &mut Self {
        self.sysfs_pmus = sysfs_pmus;
        self
    }

    /// Whether it programs encodings of `family` (shorthand for `accepts.takes(family)`):
    /// [`Family::Perf`], a backend over Linux's `perf_event_open`.
    pub fn programs(&self, family: Family) -> bool {
        self.accepts.takes(family)
    }

    /// Whether it opens the PMUs the OS lists in sysfs by perf's syntax (`pmu/terms/`, an
    /// uncore PMU's boxes, breakpoints `mem:ADDR`).
    pub fn sysfs_pmus(&self) -> bool {
        self.sysfs_pmus
    }

    /// Whether `target` is one this backend can measure.
    pub fn supports(&self, target: &BackendTarget) -> bool {
        match target {
            BackendTarget::ThisThread => self.targets.this_thread,
            BackendTarget::ThisThreadOnCpu(_) => self.targets.this_thread && self.targets.cpu,
            BackendTarget::Process { inherit: false, .. } => self.targets.attach,
            BackendTarget::Process { inherit: true, .. } => self.targets.inherit,
            BackendTarget::Cpu(_) => self.targets.cpu,
            BackendTarget::Exec { .. } => self.targets.exec,
            BackendTarget::ExecAlone { .. } => self.targets.exec_alone,
            BackendTarget::Cgroup { .. } => self.targets.cgroup,
        }
    }

    /// The domains it can filter (shorthand for `accepts.domains`).
    pub fn domains(&self) -> Domain {
        self.accepts.domains
    }
}
