//! What a program that counts by name rarely needs: each thread's or CPU's counts read on
//! their own, a backend held as a trait object, and the probe behind
//! [`EventSetBuilder::add`](crate::EventSetBuilder::add).
//!
//! [`open_default`](crate::open_default) returns a [`Chosen`](crate::Chosen), which opens
//! names on any [`Target`](crate::Target) and sums a process's threads or a list of CPUs for
//! you. Reach here to read them one by one ([`MultiSet`] and its
//! [`read_each`](MultiSet::read_each), as `counterhal stat -A` and `--per-thread` print, each
//! row labelled with its [`Place`](crate::Place)), or to hold a backend picked at run time
//! ([`AnyBackend`], e.g. one of [`registry::REGISTRY`](crate::registry::REGISTRY)'s device
//! models), or to read a set from a signal handler ([`SharedReads`]: reads that take no lock
//! and allocate nothing, which libpapi's `PAPI_read` and the C API's `counterhal_set_read`
//! read through). Programming one backend target yourself is the `counterhal-hal` crate's
//! (`Backend::open` on a [`BackendTarget`]: one thread, process or CPU, where a
//! [`Target`](crate::Target) may stand for several, [`Target::targets`](crate::Target::targets)).

pub use crate::attach::MultiSet;
#[cfg(unix)]
pub use crate::command::{CountedCommand, Follow};
pub use crate::set::trial_for_add;
pub use crate::shared_read::{READS_AT_ONCE, SharedReadError, SharedReads};
/// Reads of a group through a shared reference, as a group that can hands them out
/// ([`Group::shared_read`](counterhal_hal::Group::shared_read)): what [`SharedReads`] reads.
pub use counterhal_hal::SharedRead;
/// Counting per cgroup at a cost that does not grow with the cgroups (a BPF program summing
/// per cgroup at every cgroup switch, perf's `--bpf-counters --for-each-cgroup`), or with
/// one perf event per event, CPU and cgroup where BPF is not allowed:
/// [`Chosen::cgroup_counter`](crate::Chosen::cgroup_counter) opens one by name, through the
/// backend's [`CgroupCapability`].
pub use counterhal_hal::{
    BoxedCgroupCounter, CgroupCapability, CgroupCounter, CgroupCounterOptions, CgroupCounts,
    CgroupMode, CgroupModeChoice,
};
/// Sampling, as a backend that samples hands it out
/// ([`Extensions::sampling`]).
pub use counterhal_hal::{BoxedSampler, SamplingCapability};
/// Intel's topdown events in perf's encodings: `slots` and the metric events perf groups
/// after it.
#[cfg(all(feature = "linux", target_os = "linux"))]
pub use counterhal_linux::topdown::{is_metric as is_topdown_metric, is_slots as is_topdown_slots};
/// perf's PMU syntax read from a sysfs `devices` directory (this machine's or another's):
/// a PMU event (`pmu/terms/`, an uncore event of the model by name, a core event in its core
/// PMU's terms) with every attr perf opens for it and the CPUs it opens on; each function
/// gives `None` for a name that is not one of its kind.
#[cfg(feature = "linux")]
pub use counterhal_linux::{PmuEvent, core_pmu_events, pmu_events, uncore_pmu_events};
/// A sysfs tree read as untrusted input (`--sysfs DIR`, `COUNTERHAL_SYSFS`): links only
/// inside the tree, regular files of at most a page, refusals that name the file and never
/// show what it holds; the faces read their trees through these, as the backend does.
#[cfg(feature = "linux")]
pub use counterhal_linux::{pmu_devices_under, read_tree_file};

/// A backend chosen at run time, boxed (its methods are [`DynBackend`]'s).
pub type AnyBackend = Box<dyn DynBackend + Send + Sync>;
/// What the [`Database`] holds and answers: a CPU's vendor, a CPU model with its events, an
/// uncore event, the error of a lookup, and what reading the kernel's descriptions found.
pub use counterhal_events::{
    CombineRules, CpuModel, DescriptionsRead, EncoderKind, EventError, EventErrorKind, EventFlags,
    Mapping, MatchRule, NativeEvent, NumberSet, PapiForm, PmuDescription, UncoreEvent, UnitMask,
    UnitMaskClass, Vendor,
};
/// The event database a [`Context`](crate::Context) resolves in, the CPU it detected
/// ([`Context::cpu`](crate::Context::cpu)), and the kind of core of a hybrid chip.
pub use counterhal_events::{CpuIdentity, Database, HybridCore};
/// What a backend opens its groups on: one thread, one process (with or without what it
/// creates), one CPU, a control group on one CPU, a command held before its `exec`. The
/// backend authors' target: a program counts on a [`Target`](crate::Target), which stands for
/// one or several of these ([`Target::targets`](crate::Target::targets)).
pub use counterhal_hal::BackendTarget;
/// A backend's group boxed (what [`DynBackend`] opens).
pub use counterhal_hal::BoxedGroup;
/// A backend's methods as a trait object (what [`AnyBackend`] holds).
pub use counterhal_hal::DynBackend;
/// One event as a backend is asked to open it.
pub use counterhal_hal::EventRequest;
/// What a backend's [`Capabilities`](crate::Capabilities) say, in their own types: the
/// encoding families it programs and the domains it filters ([`Accepts`], by [`Family`]),
/// whose activity its counts cover ([`Scope`]) and the backend targets it takes
/// ([`TargetSupport`]).
pub use counterhal_hal::{Accepts, Family, Scope, TargetSupport};
/// The trait every backend implements (what `counterhal_events::listing` lists from)
/// and the capabilities a backend hands out ([`Extensions`]: its own event listing and its
/// PMUs' CPUs, beside sampling and counting per cgroup). What every backend answers from these
/// (`counterhal_hal::BackendExt`: the label, the generalized events, ...) and a backend that
/// opens through another (`counterhal_hal::OpensThrough`) are the hal's, for backend authors.
pub use counterhal_hal::{Backend, EventListing, Extensions, PmuTopology};
/// What a [`GeneralizedEvent`](crate::GeneralizedEvent) names: a hardware, software or cache
/// event of the kernel's generalized list, or a PAPI preset.
pub use counterhal_hal::{
    CacheEvent, CacheLevel, CacheOp, CacheResult, HardwareEvent, Preset, SoftwareEvent,
};
/// What a [`ResolvedEvent`](crate::ResolvedEvent) is made of: each counter it takes
/// ([`Term`]) and what [`Query`](crate::Query) says it counts ([`Countable`]).
pub use counterhal_hal::{Countable, Sign, Term};
/// The encodings an [`Encoding`](crate::Encoding) holds: x86's `IA32_PERFEVTSELx`, the
/// Pentium's CESR, and perf's attr.
pub use counterhal_hal::{CounterSet, Evtsel, ExcludeBits, ExtraMsr, P5Cesr, PerfAttr};
