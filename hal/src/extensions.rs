//! What a backend can do beyond resolving and opening, as optional capabilities it hands out
//! ([`Extensions`], from [`Backend::extensions`](crate::Backend::extensions)).

use std::fmt;

use crate::cgroups::CgroupCapability;
use crate::cpus::CpuList;
use crate::encoding::{EventRequest, PerfAttr};
use crate::error::Result;
use crate::generalized::GeneralizedEvent;
use crate::resolved::{ResolvedEvent, Unit};
use crate::sampling::SamplingCapability;
use crate::shared::SharedCapability;

/// The events a backend lists itself: what the generalized events and its own names are,
/// where resolving each one is not enough to tell.
pub trait EventListing {
    /// The generalized events and presets that count here (the Linux backend tries opening
    /// each).
    fn generalized(&self) -> Vec<GeneralizedEvent>;

    /// The names only this backend knows, with a few words each (on Linux: tracepoints and
    /// the dynamic PMUs' event aliases), and what each resolves to where finding the name
    /// told that already (a tracepoint's `id` is read to list it).
    fn own_events(&self) -> Vec<OwnEvent>;
}

/// A name only a backend knows, as it lists it ([`EventListing::own_events`]).
#[derive(Clone, Debug)]
pub struct OwnEvent {
    /// The name, as [`Backend::resolve`](crate::Backend::resolve) takes it.
    pub name: String,
    /// A few words on it.
    pub description: String,
    /// What `name` resolves to, where the backend found that in listing it; `None`: a
    /// listing resolves the name.
    pub resolved: Option<ResolvedEvent>,
}

impl OwnEvent {
    /// `name` with `description`, to be resolved by name.
    pub fn named(name: impl Into<String>, description: impl Into<String>) -> Self {
        OwnEvent {
            name: name.into(),
            description: description.into(),
            resolved: None,
        }
    }
}

/// Where a count over every CPU opens an event, where its PMU says so.
pub trait PmuTopology {
    /// The CPUs a count of `request` over every CPU opens it on: an uncore or energy PMU's
    /// `cpumask` (one CPU per package, whose counter the kernel counts once whichever of the
    /// package's CPUs the event is opened on, as perf's `-a` opens it), a hybrid core PMU's
    /// CPUs. `None`: every CPU.
    fn system_wide_cpus(&self, request: &EventRequest) -> Option<Vec<u32>>;

    /// The boxes a PMU event opens on (`uncore_imc/cas_count_read/` on `uncore_imc_0`,
    /// `uncore_imc_1`, ...: each PMU perf's wildcard names that takes its terms), as perf
    /// opens one event per box, each box's event resolved there ([`PmuBox::event`], as perf
    /// parses the terms once per box); `None` where `event` names no PMU's boxes here (no PMU
    /// syntax, or terms only the backend's tables read: the event is one of its own).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidEvent`](crate::error::ErrorKind::InvalidEvent) where no box the event
    /// names takes its terms (a term the PMU lacks, a value wider than its field), as perf refuses
    /// it.
    fn boxes(&self, event: &str) -> Option<Result<Vec<PmuBox>>> {
        let _ = event;
        None
    }

    /// Every open perf makes of `event` counting every CPU, as `perf stat -a -vv` shows them
    /// (what `counterhal encode` prints): an uncore event of the CPU model by name on each of
    /// its boxes, a core event of the model in its core PMU's terms, or perf's PMU syntax on
    /// each box it names; `None` where `event` is none of these here.
    ///
    /// # Errors
    /// [`ErrorKind::DeviceMissing`](crate::error::ErrorKind::DeviceMissing) where an uncore event's
    /// PMU is not here; [`ErrorKind::InvalidEvent`](crate::error::ErrorKind::InvalidEvent) where no
    /// PMU takes its terms; [`ErrorKind::InvalidInput`](crate::error::ErrorKind::InvalidInput)
    /// where a PMU's file breaks the system's reading rule.
    fn opens(&self, event: &str) -> Option<Result<Vec<PmuEvent>>> {
        let _ = event;
        None
    }
}

/// What an event opens on one PMU ([`PmuTopology::opens`]): its attr, and where and how perf
/// counts and shows it (the PMU's `cpumask` and its alias's `.scale`, `.unit`, `.snapshot`
/// and `.per-pkg`, as the kernel's ABI of a PMU's events documents them:
/// Documentation/ABI/testing, `bus-event_source-devices-events`).
#[derive(Clone, Debug, PartialEq)]
pub struct PmuEvent {
    /// The PMU's directory name (`uncore_imc_0`).
    pub pmu: String,
    /// The name it is shown by, where its terms give one (`name=foo`, as perf shows it).
    pub name: Option<String>,
    /// The attr (type, config words, the modifiers' domain).
    pub attr: PerfAttr,
    /// The CPUs it opens on system-wide: the PMU's `cpumask` (an uncore PMU's one CPU per
    /// package or die) or `cpus` (a hybrid core PMU's); `None` for a PMU with neither, which
    /// counts on any CPU.
    pub cpus: Option<CpuList>,
    /// The factor its count is multiplied by (its alias's `.scale`).
    pub scale: Option<f64>,
    /// What the scaled count is in (its alias's `.unit`).
    pub unit: Option<String>,
    /// Whether its count is a reading rather than a sum (its alias's `.snapshot`).
    pub snapshot: bool,
    /// Whether its count is one per package (its alias's `.per-pkg`).
    pub per_pkg: bool,
}

impl PmuEvent {
    /// What its count is in, where its alias gives a scale or a unit (perf multiplies by the
    /// scale, 1 where only a unit is given, and prints the unit, empty where only a scale is).
    pub fn unit(&self) -> Option<Unit> {
        (self.scale.is_some() || self.unit.is_some()).then(|| Unit {
            name: self.unit.clone().unwrap_or_default(),
            scale: self.scale.unwrap_or(1.0),
        })
    }

    /// The CPU of each open perf makes system-wide (`perf stat -a`): each CPU of
    /// [`PmuEvent::cpus`] as perf 6.1 takes the mask (not narrowed to the online CPUs), or -1,
    /// any CPU, where the PMU has no mask (perf then opens it on every online CPU).
    pub fn open_cpus(&self) -> Vec<i32> {
        match &self.cpus {
            Some(cpus) => cpus
                .iter()
                .filter_map(|cpu| i32::try_from(cpu).ok())
                .collect(),
            None => vec![-1],
        }
    }
}

/// One box a PMU event opens on ([`PmuTopology::boxes`]), with the event as the backend
/// resolved it there: a face counts the box with [`PmuBox::event`] and never resolves the
/// box's name again.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct PmuBox {
    /// The box's PMU (`uncore_imc_0`).
    pub pmu: String,
    /// The name the event's terms give it (`name=reads`), if they give one.
    pub name: Option<String>,
    /// The CPUs a count over every CPU opens it on (the PMU's `cpumask`); `None`: every CPU.
    pub cpus: Option<CpuList>,
    /// The event on this box, resolved: named as perf names a box's line
    /// (`uncore_imc_0/cas_count_read/`, or its `name=` term), its unit its alias's scale
    /// and unit where its PMU says.
    pub event: ResolvedEvent,
}

impl PmuBox {
    /// The box of PMU `pmu`, its name, CPUs and event as resolved there.
    pub fn new(
        pmu: String,
        name: Option<String>,
        cpus: Option<CpuList>,
        event: ResolvedEvent,
    ) -> PmuBox {
        PmuBox {
            pmu,
            name,
            cpus,
            event,
        }
    }
}

/// The capabilities a backend hands out, each `None` where it has none:
/// [`Extensions::none`] and the `with_` methods make it.
#[non_exhaustive]
#[derive(Clone, Copy, Default)]
pub struct Extensions<'b> {
    /// Sampling: its samplers.
    pub sampling: Option<&'b dyn SamplingCapability>,
    /// Counting per cgroup: its cgroup counters.
    pub cgroups: Option<&'b dyn CgroupCapability>,
    /// Counting through leaders shared with other sessions: its shared counters.
    pub shared: Option<&'b dyn SharedCapability>,
    /// The events it lists itself (else those of the generalized events that resolve, and no
    /// names of its own).
    pub listing: Option<&'b dyn EventListing>,
    /// Its PMUs' CPUs (else every CPU for every event).
    pub topology: Option<&'b dyn PmuTopology>,
}

impl<'b> Extensions<'b> {
    /// No capability beyond resolving and opening.
    pub const fn none() -> Self {
        Extensions {
            sampling: None,
            cgroups: None,
            shared: None,
            listing: None,
            topology: None,
        }
    }

    /// The same, sampling through `sampling`.
    #[must_use]
    pub const fn with_sampling(mut self, sampling: &'b dyn SamplingCapability) -> Self {
        self.sampling = Some(sampling);
        self
    }

    /// The same, counting per cgroup through `cgroups`.
    #[must_use]
    pub const fn with_cgroups(mut self, cgroups: &'b dyn CgroupCapability) -> Self {
        self.cgroups = Some(cgroups);
        self
    }

    /// The same, counting through shared leaders with `shared`.
    #[must_use]
    pub const fn with_shared(mut self, shared: &'b dyn SharedCapability) -> Self {
        self.shared = Some(shared);
        self
    }

    /// The same, listing its events through `listing`.
    #[must_use]
    pub const fn with_listing(mut self, listing: &'b dyn EventListing) -> Self {
        self.listing = Some(listing);
        self
    }

    /// The same, with its PMUs' CPUs from `topology`.
    #[must_use]
    pub const fn with_topology(mut self, topology: &'b dyn PmuTopology) -> Self {
        self.topology = Some(topology);
        self
    }
}

impl fmt::Debug for Extensions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("sampling", &self.sampling.is_some())
            .field("cgroups", &self.cgroups.is_some())
            .field("listing", &self.listing.is_some())
            .field("topology", &self.topology.is_some())
            .finish()
    }
}
