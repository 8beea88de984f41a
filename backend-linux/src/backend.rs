//! [`LinuxBackend`]: resolves names and opens [`LinuxGroup`]s with `perf_event_open`.

pub(crate) mod assemble;
mod core_pmus;
mod plan;
mod uncore;

use std::borrow::Cow;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use counterhal_events::{Database, EventErrorKind};
use counterhal_hal::{
    Accepts, Backend, BackendTarget, Capabilities, Domain, Encoding, Error, EventRequest, Family,
    GeneralizedEvent, OpenOptions, PerfAttr, ResolvedEvent, Result, Scope, TargetSupport,
    check_family, countable_form,
};
use counterhal_system::{PmuDevices, System};

use crate::attr::{Placement, build_attr};
use crate::cgroup::{cgroup_refused, open_cgroup, path_of};
use crate::errno::{
    EventClass, OpenAttempt, Operation, SystemFacts, attr_size_error, is_refusal, map_errno,
};
use crate::group::{KernelGroup, LinuxGroup, ReadFormat, SelfMonitor};
use crate::raw::{RawFormat, raw_attr};
use crate::rdpmc::{UserAccess, on_core_pmu};
use crate::sys::{self, TYPE_RAW, TYPE_SOFTWARE, UserPageMap, attr_bit};
use crate::{breakpoint, pmus, topdown, tracepoints};

/// The Linux `perf_event_open` backend.
///
/// Create it with [`probe`](assemble::probe); it implements [`Backend`]. A command counted from its `exec`
/// (`perf stat -- cmd`) is [`BackendTarget::Exec`] of a [`WaitingChild`](counterhal_process::WaitingChild)
/// (the facade's `CountedCommand` does the whole run).
#[derive(Clone, Debug)]
pub struct LinuxBackend {
    capabilities: Capabilities,
    db: Arc<Database>,
    cpu: Option<String>,
    /// The system its PMUs, tracepoints and facts are read from.
    system: System,
    /// The system's PMUs (its PMU directory and the tree it is read in), taken once.
    pmus: PmuDevices,
    facts: Arc<SystemFacts>,
    /// Whether `inherit` takes `PERF_FORMAT_GROUP` here: found by the probe (or, for a backend
    /// built without one, on first use).
    inherit_group_read: Arc<OnceLock<bool>>,
    self_monitoring: bool,
    /// The core PMUs of a hybrid CPU (empty elsewhere), read from sysfs once at probe.
    hybrid: Arc<Vec<pmus::Pmu>>,
    /// What the raw-event PMU passes on of IN_TX, IN_TXCP and UMASK2 (`None`: no core PMU).
    raw_format: Option<Arc<RawFormat>>,
    /// How an event asks for user-space counter reads (Arm64's `rdpmc` format), if it must.
    user_access: Option<Arc<UserAccess>>,
    /// The core PMUs' dynamic types (`cpu` is 4; Arm's are assigned at boot).
    core_types: Arc<Vec<u32>>,
    /// The generalized events that open here, found on the first `generalized()` call (it
    /// tries each one, which start-up need not pay for).
    generalized: Arc<OnceLock<Vec<GeneralizedEvent>>>,
    mount_tracefs: bool, // whether resolving may mount tracefs (set_mount_tracefs)
    /// The system's tracefs, kept once found mounted.
    tracefs: tracepoints::Found,
}

/// The event start-up opens to see that perf_event_open works: `task-clock:u`.
pub(super) fn probe_request() -> EventRequest {
    let probe_event = PerfAttr::new(TYPE_SOFTWARE, 1).with_domain(Domain::USER);
    EventRequest::new("task-clock:u", Encoding::Perf(probe_event))
}

/// What the backend takes: perf attrs (its own generic events first) and, on x86, x86 event
/// selects, which it programs as raw events; every domain filtered, an event without modifiers
/// counting what its PMU counts. Another architecture's core PMU would read an x86 event
/// select's bits as its own event number, so elsewhere only perf attrs are taken.
const ACCEPTS: Accepts = Accepts::new(FAMILIES, Domain::ALL, Domain::ALL);

/// The hardware families this architecture's core PMU programs through perf.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
const FAMILIES: &[Family] = &[Family::Perf, Family::Evtsel];
/// The hardware families this architecture's core PMU programs through perf.
#[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
const FAMILIES: &[Family] = &[Family::Perf];

/// What the backend keeps of the core PMUs under `devices`, read from one listing: those of a
/// hybrid CPU, how an event asks for user-space reads, and their dynamic types.
struct CorePmus {
    hybrid: Arc<Vec<pmus::Pmu>>,
    user_access: Option<Arc<UserAccess>>,
    types: Arc<Vec<u32>>,
}

impl CorePmus {
    fn of(cores: Vec<pmus::Pmu>) -> CorePmus {
        CorePmus {
            user_access: UserAccess::of(&cores).map(Arc::new),
            types: Arc::new(cores.iter().map(|pmu| pmu.type_).collect()),
            hybrid: Arc::new(pmus::hybrid_of(cores)),
        }
    }
}

/// perf_event_open's: per process, multiplexed, every target, sysfs PMUs, rdpmc with a PMU.
fn capabilities(self_monitoring: bool) -> Capabilities {
    let mut capabilities = Capabilities::new(ACCEPTS, Scope::PerProcess);
    capabilities.set_max_group_events(Some(plan::MAX_GROUP_EVENTS as u32));
    capabilities
        .set_sampling(cfg!(feature = "sampling"))
        .set_sysfs_pmus(true);
    capabilities.set_multiplexing(true);
    capabilities.set_targets(TargetSupport::ALL);
    capabilities.set_self_monitoring_reads(self_monitoring);
    capabilities
}

/// The perf attr a request programs: its own, or that of its event select, refused where the
/// raw-event PMU (`raw_format`) would drop some of its bits.
pub(crate) fn perf_encoding<'r>(
    request: &'r EventRequest,
    raw_format: Option<&RawFormat>,
) -> Result<Cow<'r, PerfAttr>> {
    check_family("linux", &ACCEPTS, request)?;
    match &request.encoding {
        Encoding::Perf(attr) => {
            tracepoints::check_filter(&request.name, attr)?;
            if let Some(format) = raw_format.filter(|_| attr.type_ == TYPE_RAW) {
                format.check_config(&request.name, attr.config)?;
            }
            Ok(Cow::Borrowed(attr))
        }
        Encoding::Evtsel(evtsel) => {
            if let Some(format) = raw_format {
                format.check(&request.name, evtsel)?;
            }
            raw_attr(&request.name, evtsel).map(Cow::Owned)
        }
        other => Err(Error::unsupported(format!(
            "`{}`: {} encodings are not programmed here",
            request.name,
            other.family()
        ))),
    }
}

impl LinuxBackend {
    /// The event database this backend resolves through.
    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// The CPU model id names are resolved for.
    pub fn cpu_model(&self) -> Option<&str> {
        self.cpu.as_deref()
    }

    /// The machine facts error hints are built from.
    pub fn facts(&self) -> &SystemFacts {
        &self.facts
    }

    /// The system the facts are read from.
    #[cfg_attr(not(feature = "sampling"), allow(dead_code))]
    pub(crate) fn system(&self) -> &counterhal_system::System {
        &self.system
    }

    /// Whether this kernel accepts `inherit` with `PERF_FORMAT_GROUP` (else inherited groups
    /// are read one fd at a time).
    pub fn inherit_group_read(&self) -> bool {
        *self
            .inherit_group_read
            .get_or_init(|| self.try_inherit_group_read(&probe_request()))
    }

    /// Turns automatic `rdpmc` reads on or off (on by default; used only where valid).
    pub fn set_self_monitoring(&mut self, enabled: bool) {
        self.self_monitoring = enabled;
        let reads = enabled && self.facts.hardware_pmu;
        self.capabilities.set_self_monitoring_reads(reads);
    }

    fn try_inherit_group_read(&self, request: &EventRequest) -> bool {
        self.open_inherited_group(request).is_some()
    }

    /// `request` opened on this thread as an inherited group read, if the kernel takes that.
    fn open_inherited_group(&self, request: &EventRequest) -> Option<std::os::fd::OwnedFd> {
        let encoding = perf_encoding(request, None).ok()?;
        let place = Placement {
            pid: 0,
            cpu: -1,
            inherit: true,
            enable_on_exec: false,
            pinned: false,
            exclusive: false,
            format: ReadFormat::Group,
            sample_period: 0,
        };
        let mut attr = build_attr(&encoding, true, &place);
        sys::perf_event_open(&mut attr, 0, -1, None, 0).ok()
    }

    fn countable_generalized(&self) -> Vec<GeneralizedEvent> {
        // Where counting the kernel is refused, an event this process can count in user space
        // (`:u`, perf's fallback) is countable; one refused outright, or missing from the PMU,
        // is not.
        GeneralizedEvent::all()
            .filter(|event| {
                self.resolve(&event.name()).is_ok_and(|resolved| {
                    countable_form(self, &resolved, &BackendTarget::ThisThread).is_ok()
                })
            })
            .collect()
    }

    pub(crate) fn placement(
        &self,
        target: &BackendTarget,
        options: &OpenOptions,
    ) -> Result<Placement> {
        let existing_cpu = |cpu: u32| {
            let cpus = sys::configured_cpus();
            if cpu >= cpus {
                let last = cpus.saturating_sub(1);
                return Err(Error::invalid_input(format!(
                    "CPU {cpu} does not exist (this machine has CPUs 0 to {last})"
                ))
                .with_hint(format!(
                    "see {} for the CPUs you can count",
                    self.system.online_cpus_path().display()
                )));
            }
            Ok(cpu as i32)
        };
        let to_pid = |pid: u32| {
            i32::try_from(pid).ok().filter(|p| *p > 0).ok_or_else(|| {
                Error::invalid_input(format!("process id {pid} is not valid"))
                    .with_hint("a process id is a positive number up to /proc/sys/kernel/pid_max")
            })
        };
        let group = ReadFormat::Group;
        // Asked only for a target that inherits (a backend made without a probe tries it then).
        let inherited_format = || {
            if self.inherit_group_read() {
                group
            } else {
                ReadFormat::Single
            }
        };
        let base = Placement {
            pid: 0,
            cpu: -1,
            inherit: false,
            enable_on_exec: false,
            pinned: options.pinned,
            exclusive: options.exclusive,
            format: group,
            sample_period: 0,
        };
        Ok(match *target {
            BackendTarget::ThisThread => base,
            BackendTarget::ThisThreadOnCpu(cpu) => Placement {
                cpu: existing_cpu(cpu)?,
                ..base
            },
            BackendTarget::Process { pid, inherit } => Placement {
                pid: to_pid(pid)?,
                inherit,
                format: if inherit { inherited_format() } else { group },
                ..base
            },
            BackendTarget::Cpu(cpu) | BackendTarget::Cgroup { cpu, .. } => Placement {
                pid: -1,
                cpu: existing_cpu(cpu)?,
                ..base
            },
            BackendTarget::Exec { pid } => Placement {
                pid: to_pid(crate::exec::exec_child(pid)?)?,
                inherit: true,
                enable_on_exec: true,
                format: inherited_format(),
                ..base
            },
            BackendTarget::ExecAlone { pid } => Placement {
                pid: to_pid(crate::exec::exec_child(pid)?)?,
                enable_on_exec: true,
                ..base
            },
            ref other => {
                return Err(Error::unsupported(format!(
                    "the linux backend cannot measure {other}"
                )));
            }
        })
    }

    /// `request` opened on `cpu`, counting every task there (as on `BackendTarget::Cpu`), not
    /// inherited: a counter a BPF program reads (per-cgroup counting's BPF mode). Alone or as
    /// a group's leader (`leader` `None`) it opens disabled; as a member of `leader`'s group it
    /// follows its leader.
    ///
    /// # Errors
    /// As [`Backend::open`].
    #[cfg_attr(not(feature = "cgroup-counter"), allow(dead_code))]
    pub(crate) fn open_on_cpu(
        &self,
        request: &EventRequest,
        cpu: u32,
        leader: Option<BorrowedFd<'_>>,
    ) -> Result<std::os::fd::OwnedFd> {
        let encoding = perf_encoding(request, self.raw_format.as_deref())?;
        let place = Placement {
            format: ReadFormat::Single,
            ..self.placement(&BackendTarget::Cpu(cpu), &OpenOptions::default())?
        };
        self.open_one(request, &encoding, leader, &place, None)
            .map(|(fd, _)| fd)
    }

    fn open_one(
        &self,
        request: &EventRequest,
        encoding: &PerfAttr,
        group_fd: Option<BorrowedFd<'_>>,
        place: &Placement,
        cgroup: Option<(BorrowedFd<'_>, &Path)>,
    ) -> Result<(std::os::fd::OwnedFd, u64)> {
        let mut attr = build_attr(encoding, group_fd.is_none(), place);
        // The cgroup's descriptor is `pid` under PERF_FLAG_PID_CGROUP; `place.pid` is -1.
        let opened = match cgroup {
            Some((dir, _)) => sys::perf_event_open_cgroup(&mut attr, dir, place.cpu, group_fd, 0),
            None => sys::perf_event_open(&mut attr, place.pid, place.cpu, group_fd, 0),
        };
        let fd = opened.map_err(|failure| {
            // ENOENT is also an event's own answer (no such event on this PMU): the cgroup is
            // at fault only where the event opens on the CPU without it.
            let opens_without_cgroup = || {
                let mut alone = build_attr(encoding, true, place);
                sys::perf_event_open(&mut alone, -1, place.cpu, None, 0).is_ok()
            };
            if let Some((_, path)) = cgroup
                && let Some(refused) = cgroup_refused(self.system(), failure.errno, path)
                && (failure.errno != libc::ENOENT || opens_without_cgroup())
            {
                return refused.context(&request.name);
            }
            if failure.errno == libc::E2BIG && failure.kernel_size.is_some() {
                return attr_size_error(failure.kernel_size, failure.field).context(&request.name);
            }
            let attempt = OpenAttempt {
                class: EventClass::of_type(encoding.type_),
                counts_kernel: !attr.flag(attr_bit::EXCLUDE_KERNEL),
                exclude: encoding.exclude_bits(),
                inherit: place.inherit,
                group_read: place.format == ReadFormat::Group,
                pid: place.pid,
                another_user: place.pid > 0
                    && is_refusal(failure.errno)
                    && self.system.belongs_to_another_user(place.pid as u32),
                cpu: place.cpu,
                // Read where the hint may blame the CPU (EINVAL) alone.
                cpu_online: u32::try_from(place.cpu)
                    .ok()
                    .filter(|_| failure.errno == libc::EINVAL)
                    .and_then(|cpu| pmus::cpu_online(&self.system, cpu)),
                member: group_fd.is_some(),
            };
            map_errno(
                failure.errno,
                Operation::Open(attempt),
                &self.facts.now(&self.system, failure.errno),
            )
            .context(&request.name)
        })?;
        if let Some(filter) = &encoding.filter {
            tracepoints::set_filter(fd.as_fd(), filter).map_err(|e| e.context(&request.name))?;
        }
        let id = sys::ioctl_id(fd.as_fd()).map_err(|errno| {
            map_errno(errno, Operation::Ioctl("ID"), &self.facts).context(&request.name)
        })?;
        Ok((fd, id))
    }
}

impl Backend for LinuxBackend {
    type Group = LinuxGroup;

    fn name(&self) -> &'static str {
        "linux"
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// Samples, counts per cgroup and through shared leaders, lists its own events and knows
    /// its PMUs' CPUs.
    fn extensions(&self) -> counterhal_hal::Extensions<'_> {
        counterhal_hal::Extensions::none()
            .with_sampling(self)
            .with_cgroups(self)
            .with_shared(self)
            .with_listing(self)
            .with_topology(self)
    }

    /// Resolves, in order: tracepoints (`subsystem:event`), breakpoints (`mem:ADDR[:rwx][/len]`),
    /// PMU syntax (`pmu/terms/` and `pmu/alias/`), then the event database (generalized, preset,
    /// native, raw), whose event selects become raw perf events ([`raw_attr`]). On an Intel
    /// hybrid CPU a native or raw event opens on each core PMU whose core's table has it
    /// (`intel_hybrid`). On hybrid CPUs
    /// a generic hardware or cache event becomes one term per core PMU, each named `pmu/event/`.
    fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
        let single = |encoding: PerfAttr| {
            ResolvedEvent::single(EventRequest::new(event, Encoding::Perf(encoding)))
        };
        if let Some(encoding) =
            tracepoints::resolve(&self.system, &self.tracefs, event, self.mount_tracefs)?
        {
            return Ok(single(encoding));
        }
        if let Some(parsed) = breakpoint::parse(event) {
            return parsed.map(single);
        }
        if event.contains('/') {
            // A PMU's term that is an uncore event of the model (`uncore_imc/UNC_M_CAS_COUNT.RD/`).
            if let Some(opens) = self.uncore(event) {
                return opens;
            }
            // A core PMU's term that is a core event of the model (`cpu/INST_RETIRED.ANY/`).
            if let Some(opens) = self.core_named(event) {
                return opens;
            }
            return pmus::parse_pmu_event(&self.pmus, event).map(|opened| {
                // `name=foo` names it as perf does.
                let name = opened.name.as_deref().unwrap_or(event);
                let unit = opened.unit();
                let mut resolved =
                    ResolvedEvent::single(EventRequest::new(name, Encoding::Perf(opened.attr)));
                resolved.unit = unit;
                resolved
            });
        }
        if let Some(model) = self.cpu.as_deref()
            && let Some(attr) = topdown::resolve_here(&self.pmus, model, event)
        {
            return attr.map(single);
        }
        let resolved =
            self.db
                .resolve_exact(self.cpu.as_deref(), event, self.capabilities.accepts());
        // An event of the other core's table of an Intel hybrid chip
        // (`CPU_CLK_UNHALTED.CORE` for `adl_glc`), on that core's PMU.
        if resolved.is_err()
            && let Some(placed) = self.on_other_cores(event)
        {
            return placed;
        }
        match resolved {
            Ok(mut resolved) => {
                for term in &mut resolved.terms {
                    if let Encoding::Evtsel(_) = &term.request.encoding {
                        let attr = perf_encoding(&term.request, self.raw_format.as_deref())?;
                        term.request.encoding = Encoding::Perf(attr.into_owned());
                    }
                }
                self.on_core_pmus(event, resolved)
            }
            // An uncore event of the model (`UNC_M_CAS_COUNT.RD`), on each PMU that has it;
            // `a:b` where `a` is no event at all reads best as a missing tracepoint; where `a`
            // is an event (`cycles:zz`), the database's word on the modifier is the answer.
            Err(e) if e.kind() == EventErrorKind::NotFound => match self.uncore(event) {
                Some(opens) => opens,
                None if tracepoints::looks_like_tracepoint(event) => {
                    Err(tracepoints::not_found(&self.system, &self.tracefs, event))
                }
                None => Err(e.into()),
            },
            Err(e) => Err(e.into()),
        }
    }

    fn open(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &OpenOptions,
    ) -> Result<LinuxGroup> {
        self.open_placed(events, target, options, 0)
    }
}

impl counterhal_hal::EventListing for LinuxBackend {
    /// The generalized events that open here (found once, by trying each; an event that fails
    /// only for lack of permission counts as countable).
    fn generalized(&self) -> Vec<GeneralizedEvent> {
        self.generalized
            .get_or_init(|| self.countable_generalized())
            .clone()
    }

    /// The dynamic PMUs' event aliases (`msr/tsc/`) and the tracepoints
    /// (`syscalls:sys_enter_getpid`).
    fn own_events(&self) -> Vec<counterhal_hal::OwnEvent> {
        let named = pmus::aliases(&self.pmus)
            .into_iter()
            .chain(topdown::names(self.cpu.as_deref().unwrap_or_default()));
        let mut events: Vec<_> = named
            .map(|(name, description)| counterhal_hal::OwnEvent::named(name, description))
            .collect();
        events.extend(tracepoints::list(
            &self.system,
            &self.tracefs,
            self.mount_tracefs,
        ));
        events
    }
}

impl LinuxBackend {
    /// Opens `events` as [`Backend::open`] does, as sampling events: every event's
    /// `sample_period` is `period`, so the overflow ioctls ([`LinuxGroup::refresh`],
    /// [`LinuxGroup::set_period`]) apply. Nothing is recorded unless a ring buffer is mapped;
    /// the counts read as usual.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] for a period the
    /// kernel refuses (0, or past 2^63 - 1); otherwise as [`Backend::open`].
    pub fn open_sampling(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &OpenOptions,
        period: u64,
    ) -> Result<LinuxGroup> {
        crate::attr::check_period(period)?;
        self.open_placed(events, target, options, period)
    }

    fn open_placed(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &OpenOptions,
        sample_period: u64,
    ) -> Result<LinuxGroup> {
        if events.is_empty() {
            return Err(Error::invalid_input("no events to open")
                .with_hint("pass at least one event request"));
        }
        let place = Placement {
            sample_period,
            ..self.placement(target, options)?
        };
        let cgroup = match target {
            BackendTarget::Cgroup { path, .. } => Some(open_cgroup(self.system(), path)?),
            _ => None,
        };
        let cgroup = cgroup.as_ref().map(|dir| (dir.as_fd(), path_of(target)));
        let mut encodings = events
            .iter()
            .map(|request| perf_encoding(request, self.raw_format.as_deref()))
            .collect::<Result<Vec<_>>>()?;
        let reads_itself = sample_period == 0
            && self.reads_itself(target)
            && encodings
                .iter()
                .all(|e| on_core_pmu(e.type_, &self.core_types));
        if let Some(access) = self.user_access.as_deref().filter(|_| reads_itself) {
            encodings = encodings.into_iter().map(|e| access.request(e)).collect();
        }

        let mut plan = plan::partition(&encodings, options.grouped)?;
        let attrs: Vec<&PerfAttr> = encodings.iter().map(AsRef::as_ref).collect();
        for members in &mut plan {
            topdown::order(members, &attrs, &self.core_types);
        }
        let mut groups = Vec::with_capacity(plan.len());
        for members in &plan {
            let mut fds = Vec::with_capacity(members.len());
            let mut ids = Vec::with_capacity(members.len());
            for &index in members {
                let leader = fds.first().map(AsFd::as_fd);
                let (fd, id) =
                    self.open_one(&events[index], &encodings[index], leader, &place, cgroup)?;
                fds.push(fd);
                ids.push(id);
            }
            let mut fds = fds.into_iter();
            let Some(leader) = fds.next() else {
                continue;
            };
            groups.push(KernelGroup {
                leader,
                members: fds.collect(),
                ids,
                slots: members.clone(),
                format: place.format,
            });
        }

        let self_monitor = if reads_itself {
            self.map_pages(&groups, events.len())
        } else {
            None
        };
        let names = events.iter().map(|e| e.name.clone()).collect();
        Ok(LinuxGroup::new(
            groups,
            names,
            Arc::clone(&self.facts),
            self_monitor,
        ))
    }

    /// Whether a group on `target` may be read in user space: self-monitoring on, a hardware
    /// PMU, and the calling thread's own counters. `open_placed` adds: counting events (a
    /// sampling event's mapping is its caller's ring buffer), each on a core PMU.
    fn reads_itself(&self, target: &BackendTarget) -> bool {
        self.self_monitoring
            && self.facts.hardware_pmu
            && matches!(target, BackendTarget::ThisThread)
    }

    /// Maps every event's page; keeps them only when all allow `rdpmc`.
    fn map_pages(&self, groups: &[KernelGroup], count: usize) -> Option<SelfMonitor> {
        let mut pages: Vec<Option<UserPageMap>> = (0..count).map(|_| None).collect();
        for group in groups {
            for (fd, slot) in group.fds().zip(&group.slots) {
                let page = UserPageMap::map(fd.as_fd()).ok()?;
                use crate::rdpmc::UserPage;
                if !page.snapshot().user_rdpmc() {
                    return None;
                }
                pages[*slot] = Some(page);
            }
        }
        let pages = pages.into_iter().collect::<Option<Vec<_>>>()?;
        Some(SelfMonitor {
            pages,
            thread: crate::group::this_thread(),
            stale: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::group_key;
    use crate::rdpmc::{Fallback, UserPage, self_monitored_read};
    use crate::sys::TYPE_HARDWARE;
    use std::path::PathBuf;

    fn software(config: u64) -> PerfAttr {
        PerfAttr::new(TYPE_SOFTWARE, config)
    }

    #[test]
    fn event_selects_are_taken_on_x86_only() {
        let takes_evtsel = ACCEPTS.takes(Family::Evtsel);
        assert_eq!(
            takes_evtsel,
            cfg!(any(target_arch = "x86", target_arch = "x86_64")),
            "x86 event selects programmed on {}",
            std::env::consts::ARCH
        );
        assert!(ACCEPTS.takes(Family::Perf));
    }

    #[test]
    fn attr_from_encoding_and_placement() {
        let place = Placement {
            pid: 0,
            cpu: -1,
            inherit: true,
            enable_on_exec: true,
            pinned: true,
            exclusive: false,
            format: ReadFormat::Group,
            sample_period: 0,
        };
        let leader = build_attr(&software(1), true, &place);
        assert_eq!((leader.type_, leader.config, leader.size), (1, 1, 136));
        assert!(leader.flag(attr_bit::DISABLED) && leader.flag(attr_bit::ENABLE_ON_EXEC));
        assert!(leader.flag(attr_bit::INHERIT) && leader.flag(attr_bit::PINNED));
        assert!(!leader.flag(attr_bit::EXCLUSIVE));
        let alone = build_attr(
            &software(1),
            true,
            &Placement {
                exclusive: true,
                ..place
            },
        );
        assert!(alone.flag(attr_bit::EXCLUSIVE));
        assert!(
            !build_attr(
                &software(1),
                false,
                &Placement {
                    exclusive: true,
                    ..place
                }
            )
            .flag(attr_bit::EXCLUSIVE)
        );
        assert_eq!(leader.read_format, 0b1111);
        // The default domain excludes nothing.
        assert_eq!(leader.flags & 0x18_00f0, 0);
        let member = build_attr(&software(2), false, &place);
        assert!(!member.flag(attr_bit::DISABLED) && !member.flag(attr_bit::PINNED));
        assert!(!member.flag(attr_bit::ENABLE_ON_EXEC) && member.flag(attr_bit::INHERIT));

        let mut user = software(1);
        user.domain = Domain::DEFAULT.with_levels(Domain::USER);
        let attr = build_attr(
            &user,
            true,
            &Placement {
                format: ReadFormat::Single,
                ..place
            },
        );
        assert!(attr.flag(attr_bit::EXCLUDE_KERNEL) && attr.flag(attr_bit::EXCLUDE_HV));
        assert!(!attr.flag(attr_bit::EXCLUDE_USER) && !attr.flag(attr_bit::EXCLUDE_IDLE));
        assert_eq!(attr.read_format, 0b0111);

        let bp = crate::breakpoint::encoding(0x1000, 4, 8);
        let attr = build_attr(&bp, true, &place);
        assert_eq!(
            (attr.type_, attr.bp_type, attr.config1, attr.config2),
            (5, 4, 0x1000, 8)
        );
    }

    #[test]
    fn group_keys_route_pmus() {
        assert_eq!(group_key(&software(0)), None);
        assert_eq!(
            group_key(&PerfAttr::new(TYPE_HARDWARE, 0)).as_deref(),
            Some("cpu")
        );
        let mut atom = PerfAttr::new(TYPE_HARDWARE, 10 << 32);
        atom.pmu = Some("cpu_atom".into());
        assert_eq!(group_key(&atom).as_deref(), Some("cpu_atom"));
        assert_eq!(group_key(&PerfAttr::new(9, 0)).as_deref(), Some("type 9"));
    }

    /// A backend on the PMU tree `devices` (no probe: nothing is opened), resolving for `cpu`.
    fn fixture_backend(devices: PathBuf, cpu: Option<&str>) -> LinuxBackend {
        assemble::on_sysfs(
            Arc::new(Database::shipped().unwrap()),
            cpu.map(str::to_string),
            System::host()
                .with_pmu_devices(devices)
                .with_tracefs("/nonexistent/tracing"),
        )
    }

    /// perf's kernel drops IN_TX and IN_TXCP without RTM and the second unit-mask byte without
    /// UMASK2, and its `cpu` PMU's formats say which it takes: an event that needs them is
    /// refused where they are missing and raw where they are present. (x86 only: elsewhere
    /// the backend takes no x86 event select at all.)
    #[test]
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    fn intx_and_umask2_follow_the_raw_pmus_formats() {
        let devices =
            std::env::temp_dir().join(format!("counterhal-raw-format-{}", std::process::id()));
        let format = devices.join("cpu/format");
        std::fs::create_dir_all(&format).unwrap();
        std::fs::write(devices.join("cpu/type"), "4\n").unwrap();
        std::fs::write(format.join("event"), "config:0-7\n").unwrap();
        std::fs::write(format.join("umask"), "config:8-15\n").unwrap();
        let config = |backend: &LinuxBackend, name: &str| -> Result<u64> {
            match &backend.resolve(name)?.terms[0].request.encoding {
                Encoding::Perf(attr) => Ok(attr.config),
                other => panic!("{other:?}"),
            }
        };
        let any = "CPU_CLK_UNHALTED.THREAD_P:t=1";
        let error = config(&fixture_backend(devices.clone(), Some("hsw")), any).unwrap_err();
        assert!(error.to_string().contains("no `any` format"), "{error}");
        let intx = "CPU_CLK_UNHALTED.THREAD_P:intx=1:intxcp=1";
        let hsw = fixture_backend(devices.clone(), Some("hsw"));
        let error = config(&hsw, intx).unwrap_err();
        assert_eq!(error.kind(), counterhal_hal::ErrorKind::Unsupported);
        assert!(error.to_string().contains("`in_tx` format"), "{error}");
        let lnl = fixture_backend(devices.clone(), Some("lnl_lnc"));
        let error = config(&lnl, "BR_INST_RETIRED.COND").unwrap_err();
        assert!(error.to_string().contains("config:8-15,40-47"), "{error}");
        // Events that need neither still resolve.
        assert_eq!(config(&hsw, "CPU_CLK_UNHALTED.THREAD_P").unwrap(), 0x3c);
        // A raw code is checked as well: IN_TX at bit 32, the second unit-mask byte at 47:40.
        for raw in ["r10000003c", "r0100000011c4"] {
            let attr = counterhal_hal::PerfAttr::new(
                TYPE_RAW,
                u64::from_str_radix(&raw[1..], 16).unwrap(),
            );
            let request = EventRequest::new(raw, Encoding::Perf(attr));
            let refused = perf_encoding(&request, hsw.raw_format.as_deref()).unwrap_err();
            assert_eq!(
                refused.kind(),
                counterhal_hal::ErrorKind::Unsupported,
                "{raw}: {refused}"
            );
        }

        std::fs::write(format.join("any"), "config:21\n").unwrap();
        std::fs::write(format.join("in_tx"), "config:32\n").unwrap();
        std::fs::write(format.join("in_tx_cp"), "config:33\n").unwrap();
        std::fs::write(format.join("umask"), "config:8-15,40-47\n").unwrap();
        let hsw = fixture_backend(devices.clone(), Some("hsw"));
        assert_eq!(config(&hsw, intx).unwrap(), 0x3_0000_003c);
        assert_eq!(config(&hsw, any).unwrap(), 0x20_003c);
        let raw = |config: u64| {
            let attr = counterhal_hal::PerfAttr::new(TYPE_RAW, config);
            EventRequest::new("raw", Encoding::Perf(attr))
        };
        assert!(perf_encoding(&raw(0x1_0000_003c), hsw.raw_format.as_deref()).is_ok());
        // On AMD bits 35:32 are the event's: event 0x13c, no IN_TX.
        std::fs::write(format.join("event"), "config:0-7,32-35\n").unwrap();
        for field in ["in_tx", "in_tx_cp", "any"] {
            std::fs::remove_file(format.join(field)).unwrap();
        }
        let amd = fixture_backend(devices.clone(), None);
        assert!(perf_encoding(&raw(0x1_0000_003c), amd.raw_format.as_deref()).is_ok());
        assert!(perf_encoding(&raw(0x20_0076), amd.raw_format.as_deref()).is_err());
        let lnl = fixture_backend(devices.clone(), Some("lnl_lnc"));
        assert_eq!(
            config(&lnl, "BR_INST_RETIRED.COND").unwrap(),
            0x100_0000_11c4
        );
        std::fs::remove_dir_all(&devices).unwrap();
    }

    #[test]
    fn hybrid_generic_events_become_one_term_per_core_pmu() {
        let devices = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sysfs-hybrid");
        let backend = fixture_backend(devices, None);
        let resolved = backend.resolve("cycles").unwrap();
        let labels: Vec<(&str, u64, Option<&str>)> = resolved
            .terms
            .iter()
            .map(|t| match &t.request.encoding {
                Encoding::Perf(e) => (t.request.name.as_str(), e.config, e.pmu.as_deref()),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            labels,
            [
                ("cpu_atom/cycles/", 10 << 32, Some("cpu_atom")),
                ("cpu_core/cycles/", 4 << 32, Some("cpu_core"))
            ]
        );
        // Software events are not split.
        assert_eq!(backend.resolve("task-clock").unwrap().terms.len(), 1);
        // PMU syntax resolves through the fixture too.
        let e = backend.resolve("cpu_core/inst-retired/").unwrap();
        assert_eq!(e.terms[0].request.name, "cpu_core/inst-retired/");
    }

    /// The real page of a software event: no rdpmc, so reads fall back to read().
    #[test]
    fn software_event_page_falls_back() {
        let db = Arc::new(Database::shipped().unwrap());
        let backend = assemble::probe(db, None, counterhal_system::System::host()).unwrap();
        let request = EventRequest::new("task-clock", Encoding::Perf(software(1)));
        let group = backend
            .open(
                &[request],
                &BackendTarget::ThisThread,
                &OpenOptions::default(),
            )
            .unwrap();
        assert!(!group.self_monitoring() || backend.facts().hardware_pmu);
        let leader = group.leader_fds().next().unwrap();
        let page = UserPageMap::map(leader).unwrap();
        let snapshot = page.snapshot();
        assert!(!snapshot.user_rdpmc());
        assert_eq!(page.lock() % 2, 0);
        let result = self_monitored_read(&page, |_| Some(0), || Some(0));
        assert!(
            matches!(result, Err(Fallback::NoRdpmc | Fallback::NotOnCounter)),
            "{result:?}"
        );
    }
}
