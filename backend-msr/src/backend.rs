//! [`MsrBackend`]: resolving names and opening groups of raw PMU registers.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use counterhal_events::Database;
use counterhal_hal::{
    Accepts, Backend, BackendTarget, Capabilities, CounterSet, DeviceKind, Domain, Encoding, Error,
    ErrorKind, EventRequest, Evtsel, ExtraMsr, Family, GeneralizedEvent, HardwareEvent,
    OpenOptions, Preset, ResolvedEvent, Result, Scope, TargetSupport, check_family,
};
use counterhal_x86::signature::hybrid_core;
use counterhal_x86::{CounterRef, Counters, Demand, rotation, schedule_for, turn_length};

use crate::allow::AllowList;
use crate::cores::{CoreView, for_core, hybrid_views, read_capabilities};
use crate::cpuid::CpuidSource;
use crate::device::{Access, MsrDevice, ThreadPin};
use crate::group::{MsrGroup, Registers, Slot};
use crate::model::{ModelConfig, ModelDevice, ModelHandle, PmuModelKind};
use crate::pmu::{PmuInfo, TscFrequency, TscSource};
use crate::regs::{self, fixed_ctrl};
use crate::shared::{Claims, CpuClaims, Shared, real_claims};

/// The raw MSR backend: counts by programming the PMU registers of one logical CPU through an
/// [`MsrDevice`], never touching a register outside the [`AllowList`].
///
/// Counting is per logical CPU and system wide: a group counts everything that runs on its
/// CPU. [`BackendTarget::Cpu`] measures that CPU; [`BackendTarget::ThisThread`] pins the calling thread to
/// the CPU it runs on (`sched_setaffinity`) until the group is dropped and measures that CPU.
/// Other targets are [`ErrorKind::Unsupported`]. A group that fits its counters runs whole
/// (`time_running == time_enabled`, both from the TSC); independent events
/// ([`OpenOptions::ungrouped`]) that do not fit take turns in software, switched by a timer
/// every [`OpenOptions::multiplex_interval`] (4 ms by default), as the crate's README says.
///
/// Build it with [`probe`](crate::probe) (the real device), [`MsrBackend::with_model`] (a PMU
/// model and its [`ModelHandle`]) or [`MsrBackend::with_device`] (any device).
#[derive(Clone)]
pub struct MsrBackend {
    shared: Arc<Shared>,
}

impl fmt::Debug for MsrBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsrBackend")
            .field("device", &self.shared.device.describe())
            .field("pmu", &self.shared.pmu.summary())
            .field("cpu_model", &self.shared.cpu_model)
            .finish()
    }
}

impl MsrBackend {
    /// A backend over `device`, its PMU decoded from `cpuid`. `cpu_model` names the event
    /// database's CPU model (`skl`); `None` lets the database detect it from CPUID.
    ///
    /// On Intel PMUs with IA32_PERF_CAPABILITIES, that MSR is read for the full-width write
    /// bit. The TSC frequency comes from the device (models), else CPUID 0x15, else CPUID
    /// 0x16, else a 20 ms measurement against the monotonic clock.
    ///
    /// # Errors
    /// As [`PmuInfo::from_cpuid`]; device errors while measuring the TSC.
    pub fn with_device(
        db: Arc<Database>,
        device: Arc<dyn MsrDevice>,
        cpuid: &dyn CpuidSource,
        cpu_model: Option<String>,
    ) -> Result<MsrBackend> {
        let mut pmu = PmuInfo::from_cpuid(cpuid)?;
        read_capabilities(device.as_ref(), 0, &mut pmu)?;
        let allow = AllowList::for_pmu(&pmu);
        let tsc = match (device.tsc_hz(), pmu.cpuid_tsc) {
            (Some(hz), _) => TscFrequency::new(hz, TscSource::Model),
            (None, Some(tsc)) => tsc,
            (None, None) => measure_tsc(device.as_ref(), &allow)?,
        };
        // Names resolve by the signature's table alone, so that what `resolve` gives does not
        // depend on the core this thread ran on. On a hybrid chip each CPU's CPUID gives its
        // core, whose PMU and table a group on that CPU uses (`--cpu-model` makes the named
        // table every core's).
        let cores = match hybrid_core(cpuid)? {
            Some(_) => hybrid_views(&db, device.as_ref(), cpu_model.as_deref()),
            None => Vec::new(),
        };
        let cpu_model =
            cpu_model.or_else(|| db.detect(&pmu.identity).map(|model| model.id.clone()));
        let claims = match device.kind() {
            DeviceKind::Real => real_claims(),
            DeviceKind::Model => Claims::default(),
        };
        let shared = Shared {
            capabilities: capabilities(device.kind(), &pmu),
            db,
            cpuid: cpuid.describe(),
            device,
            pmu: Arc::new(pmu),
            cores,
            allow,
            tsc,
            cpu_model,
            claims,
        };
        Ok(MsrBackend {
            shared: Arc::new(shared),
        })
    }

    /// A backend over a PMU model of `kind`, and the handle that feeds the model work and
    /// time. See [`crate::model`] for what the models do; tests drive the backend through the
    /// hal traits and the model through the handle.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use counterhal_hal::{Backend, CounterSet, Domain, Encoding, EventRequest, Evtsel, Group,
    ///                      OpenOptions, BackendTarget};
    /// use counterhal_msr::{MsrBackend, PmuModelKind};
    ///
    /// let db = Arc::new(counterhal_events::Database::shipped().unwrap());
    /// let (backend, model) = MsrBackend::with_model(db, PmuModelKind::IntelV4);
    /// // INST_RETIRED.ANY_P in user mode, on any GP counter or fixed counter 0.
    /// let mut encoding = Evtsel::new(0xC0, 0x00);
    /// encoding.domain = Domain::DEFAULT.with_levels(Domain::USER);
    /// encoding.counters = CounterSet::first(4);
    /// encoding.fixed = Some(0);
    /// let request = EventRequest::new("instructions:u", Encoding::Evtsel(encoding));
    /// let mut group = backend.open(&[request], &BackendTarget::Cpu(0), &OpenOptions::default()).unwrap();
    /// group.enable().unwrap();
    /// model.feed_instructions(1_000, 500); // 1000 in user mode, 500 in kernel mode
    /// model.advance_nanos(10_000);
    /// let reading = group.read_to_vec().unwrap()[0];
    /// assert_eq!(reading.value, 1_000);
    /// assert_eq!((reading.time_enabled, reading.time_running), (10_000, 10_000));
    /// ```
    pub fn with_model(db: Arc<Database>, kind: PmuModelKind) -> (MsrBackend, ModelHandle) {
        match Self::with_model_config(db, kind.config()) {
            Ok(pair) => pair,
            // The shipped model configurations decode by construction (tested for each).
            Err(error) => unreachable!("model {kind} does not decode: {error}"),
        }
    }

    /// As [`with_model`](Self::with_model), for a configuration a test has altered (more
    /// CPUs, another width, another version).
    ///
    /// # Errors
    /// As [`PmuInfo::from_cpuid`] for a configuration that describes no usable PMU.
    pub fn with_model_config(
        db: Arc<Database>,
        config: ModelConfig,
    ) -> Result<(MsrBackend, ModelHandle)> {
        let cpuid = config.cpuid_of(0);
        let (device, handle) = ModelDevice::new(config);
        let backend = Self::with_device(db, Arc::new(device), &cpuid, None)?;
        Ok((backend, handle))
    }

    /// The decoded PMU.
    pub fn pmu(&self) -> &PmuInfo {
        &self.shared.pmu
    }

    /// The MSRs this backend may touch.
    pub fn allow_list(&self) -> &AllowList {
        &self.shared.allow
    }

    /// The TSC frequency used for times, and where it came from.
    pub fn tsc(&self) -> TscFrequency {
        self.shared.tsc
    }

    /// The event database's CPU model id in use, when known.
    pub fn cpu_model(&self) -> Option<&str> {
        self.shared.cpu_model.as_deref()
    }

    /// The device, for reports (`/dev/cpu/*/msr`, `model intel-v4`).
    pub fn device_description(&self) -> String {
        self.shared.device.describe()
    }

    /// Where CPUID came from, for reports.
    pub fn cpuid_description(&self) -> &str {
        &self.shared.cpuid
    }

    /// Reads one MSR on `cpu`, if the allow-list permits (diagnostics: `counterhal info`).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for an MSR outside the allow-list; device errors.
    pub fn read_msr(&self, cpu: u32, msr: u32) -> Result<u64> {
        self.shared.read(cpu, msr)
    }

    /// Writes one MSR on `cpu`, if the allow-list permits.
    ///
    /// # Errors
    /// As [`read_msr`](Self::read_msr).
    pub fn write_msr(&self, cpu: u32, msr: u32, value: u64) -> Result<()> {
        self.shared.write(cpu, msr, value)
    }

    /// The architectural encoding of a generalized event, from CPUID alone: Intel's
    /// architectural events (CPUID 0xA, with the fixed counter where one counts the event) and
    /// AMD's core events that every family since K8 shares. Used when the database has no
    /// encoding for this CPU.
    pub fn architectural_encoding(&self, name: &str) -> Option<Evtsel> {
        architectural(&self.shared.pmu, name)
    }

    fn target_cpu(&self, target: &BackendTarget) -> Result<(u32, Option<ThreadPin>)> {
        let cpus = self.shared.device.cpu_count();
        match *target {
            BackendTarget::Cpu(cpu) if cpu < cpus => Ok((cpu, None)),
            BackendTarget::Cpu(cpu) => Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "CPU {cpu} does not exist (the MSR device has CPUs 0-{})",
                    cpus.saturating_sub(1)
                ),
            )),
            BackendTarget::ThisThread => {
                let pin = self.shared.device.pin_this_thread()?;
                Ok((pin.cpu, Some(pin)))
            }
            ref other => Err(Error::unsupported(format!(
                "the msr backend cannot measure {other}: MSR counters count per CPU, system wide"
            ))
            .with_hint("measure a CPU (BackendTarget::Cpu) or this thread (pinned to its CPU)")),
        }
    }

    /// Checks one request against the PMU; returns its encoding and its candidate counters.
    fn validate(&self, request: &EventRequest, view: &CoreView) -> Result<Candidate> {
        let (pmu, allow) = (view.pmu.as_ref(), &view.allow);
        let name = &request.name;
        check_family("msr", self.shared.capabilities.accepts(), request)?;
        let Encoding::Evtsel(encoding) = request.encoding else {
            // `check_family` let only event selects through.
            return Err(Error::unsupported(format!("{name}: not an event select")));
        };
        if let Some(extra) = encoding.extra {
            let known =
                regs::extra_index(extra.msr).filter(|_| allow.permits(extra.msr, Access::Write));
            let Some(index) = known else {
                return Err(Error::unsupported(format!(
                    "{name}: the event needs MSR {:#x} = {:#x} besides its event select, which this PMU ({}) does not have or this backend does not program",
                    extra.msr, extra.value, pmu.summary()
                ))
                .with_hint("count it with the Linux backend (perf programs the extra register)"));
            };
            let (_, register, bits) = regs::EXTRA_MSRS[index];
            if bits < 64 && extra.value >> bits != 0 {
                return Err(Error::invalid_event(format!(
                    "{name}: value {:#x} for {register} is wider than its {bits} bits",
                    extra.value
                )));
            }
        }
        let max_code = if pmu.is_amd() { 0xFFF } else { 0xFF };
        if encoding.code > max_code {
            return Err(Error::invalid_event(format!(
                "{name}: event code {:#x} is wider than this PMU's ({}) event select, which holds codes up to {max_code:#x}",
                encoding.code,
                pmu.summary()
            ))
            .with_hint("the events file does not describe this CPU; check --cpu-model"));
        }
        if encoding.umask2 != 0 && !pmu.umask2 {
            return Err(Error::unsupported(format!(
                "{name}: its second unit-mask byte {:#04x} (EVTSEL bits 47:40) needs UMASK2, which this PMU ({}) does not announce (CPUID.7.1:EAX[8] and CPUID.23H:EBX[0])",
                encoding.umask2,
                pmu.summary()
            ))
            .with_hint("the events file's model is a newer core than this CPU; check --cpu-model"));
        }
        if (encoding.in_tx || encoding.in_tx_cp) && !pmu.tsx {
            return Err(Error::unsupported(format!(
                "{name}: intx and intxcp filter TSX transactions, and this CPU has no TSX (CPUID.7.0:EBX RTM and HLE clear)"
            )));
        }
        let value = encoding.register_value();
        if value & Evtsel::INT != 0 {
            return Err(Error::invalid_event(format!(
                "{name}: event select {value:#x} sets INT (bit 20): an overflow interrupt nobody \
                 handles"
            ))
            .with_hint("clear bit 20; counting needs no interrupt"));
        }
        let stray = value & !pmu.evtsel_allowed_bits();
        if stray != 0 {
            return Err(Error::invalid_event(format!(
                "{name}: event select {value:#x} sets bits {stray:#x} that this PMU ({}) does not \
                 define",
                pmu.summary()
            ))
            .with_hint(format!("allowed bits: {:#x}", pmu.evtsel_allowed_bits())));
        }
        if value & (Evtsel::USR | Evtsel::OS) == 0 {
            return Err(Error::invalid_event(format!(
                "{name}: event select {value:#x} counts in no privilege level (neither USR bit 16 \
                 nor OS bit 17)"
            ))
            .with_hint("set USR for user mode, OS for kernel mode, or both"));
        }
        let existing = CounterSet::first(pmu.gp_counters).mask();
        let gp = encoding.counters.mask() & existing;
        let plain = value & (Evtsel::EDGE | Evtsel::INV | Evtsel::CMASK) == 0;
        // A fixed counter has no extra MSR: an event that needs one counts on a general one.
        let fixed = encoding
            .fixed
            .filter(|&f| pmu.fixed.contains(f) && plain && encoding.extra.is_none());
        if gp == 0 && fixed.is_none() {
            let fixed_text = match encoding.fixed {
                Some(f) => format!(" and fixed counter {f}"),
                None => String::new(),
            };
            return Err(Error::invalid_event(format!(
                "{name}: the encoding allows counters {{{}}}{fixed_text}, none of which this PMU \
                 has (counters 0-{}, fixed {{{}}})",
                encoding.counters,
                pmu.gp_counters.saturating_sub(1),
                pmu.fixed
            ))
            .with_hint("the events file does not describe this CPU; check --cpu-model"));
        }
        Ok(Candidate {
            evtsel: value,
            gp,
            fixed,
            extra: encoding.extra,
        })
    }
}

/// An event select checked against the PMU, and the counters it may use there.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    evtsel: u64,
    gp: u32,
    fixed: Option<u32>,
    extra: Option<ExtraMsr>,
}

/// What the backend takes and can do on `pmu`: event selects, user and kernel bits (and AMD's
/// HostOnly and GuestOnly from family 10h on, but 11h), software multiplexing in 4 ms turns, a CPU or this thread pinned to its CPU.
fn capabilities(device: DeviceKind, pmu: &PmuInfo) -> Capabilities {
    let mut domains = Domain::USER | Domain::KERNEL;
    // HostOnly and GuestOnly (PerfEvtSel bits 41:40) exist from family 10h on, but for 11h
    // (as libpfm4 has it); on K7 and K8 those bits are reserved.
    let family = pmu.identity.family;
    if pmu.is_amd() && family >= 0x10 && family != 0x11 {
        domains |= Domain::HOST | Domain::GUEST;
    }
    let accepts = Accepts::new(&[Family::Evtsel], domains, Domain::DEFAULT);
    let mut capabilities = Capabilities::new(accepts, Scope::SystemWidePerCpu);
    capabilities.set_device(device);
    capabilities.set_general_counters(Some(pmu.gp_counters));
    capabilities.set_counter_width(Some(pmu.gp_width));
    capabilities.set_fixed_counters(pmu.fixed_counters());
    capabilities.set_fixed_width((pmu.fixed_counters() > 0).then_some(pmu.fixed_width));
    let mut targets = TargetSupport::NONE;
    targets.this_thread = true;
    targets.cpu = true;
    capabilities.set_targets(targets);
    capabilities.set_multiplexing(true);
    capabilities.set_multiplex_slice(Some(rotation::DEFAULT_SLICE));
    capabilities
}

impl Backend for MsrBackend {
    type Group = MsrGroup;

    fn name(&self) -> &'static str {
        "msr"
    }

    fn extensions(&self) -> counterhal_hal::Extensions<'_> {
        counterhal_hal::Extensions::none()
    }

    fn capabilities(&self) -> &Capabilities {
        &self.shared.capabilities
    }

    /// Delegates to the event database for this CPU model; when the database has no MSR
    /// encoding (`Unsupported`), falls back to [`MsrBackend::architectural_encoding`].
    fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
        let cpu = self.shared.cpu_model.as_deref();
        let accepts = self.shared.capabilities.accepts();
        match self.shared.db.resolve(cpu, event, accepts) {
            Ok(resolved) => Ok(resolved),
            Err(error) if error.kind() == ErrorKind::Unsupported => {
                match self.architectural_encoding(event) {
                    Some(encoding) => Ok(ResolvedEvent::single(EventRequest::new(
                        event,
                        Encoding::Evtsel(encoding),
                    ))),
                    None => Err(error),
                }
            }
            Err(error) => Err(error),
        }
    }

    fn open(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &OpenOptions,
    ) -> Result<MsrGroup> {
        if events.is_empty() {
            return Err(
                Error::invalid_input("no events to open").with_hint("name at least one event")
            );
        }
        let (cpu, pin) = self.target_cpu(target)?;
        let shared = &self.shared;
        let view = shared.view_of(cpu)?;
        let pmu = &view.pmu;
        let events = events
            .iter()
            .map(|request| {
                for_core(
                    request,
                    &view,
                    shared.cpu_model.as_deref(),
                    cpu,
                    |name| self.resolve(name).ok(),
                    |name| {
                        let accepts = shared.capabilities.accepts();
                        match shared.db.resolve(view.cpu_model.as_deref(), name, accepts) {
                            // As `resolve` falls back: the architectural encoding, on this
                            // CPU's PMU.
                            Err(e) if e.kind() == ErrorKind::Unsupported => {
                                architectural(&view.pmu, name)
                                    .map(|encoding| {
                                        let request =
                                            EventRequest::new(name, Encoding::Evtsel(encoding));
                                        ResolvedEvent::single(request)
                                    })
                                    .ok_or(e)
                            }
                            other => other,
                        }
                    },
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let candidates = events
            .iter()
            .map(|e| self.validate(e, &view))
            .collect::<Result<Vec<_>>>()?;
        let mut claims = shared.lock_claims();
        let claimed = claims.get(&cpu).copied().unwrap_or_default();
        // Counters someone else (perf, an NMI watchdog, another tool) has enabled are busy.
        let mut foreign_gp = 0u32;
        for i in 0..pmu.gp_counters {
            if claimed.gp & (1 << i) == 0 && shared.read(cpu, pmu.evtsel_msr(i))? & Evtsel::EN != 0
            {
                foreign_gp |= 1 << i;
            }
        }
        let mut foreign_fixed = 0u32;
        if !pmu.fixed.is_empty() {
            let ctrl = shared.read(cpu, regs::IA32_FIXED_CTR_CTRL)?;
            for f in pmu.fixed.iter() {
                let enabled = (ctrl >> (4 * f)) & (fixed_ctrl::OS | fixed_ctrl::USR) != 0;
                if claimed.fixed & (1 << f) == 0 && enabled {
                    foreign_fixed |= 1 << f;
                }
            }
        }
        let holders = if foreign_gp | foreign_fixed != 0 {
            "other open groups on this CPU, or another user of the PMU (perf, the NMI watchdog, \
             another tool) that enabled them"
        } else {
            "other open groups on this CPU"
        };
        let counters = Counters {
            general: pmu.gp_counters,
            fixed: pmu.fixed,
            busy_general: claimed.gp | foreign_gp,
            busy_fixed: claimed.fixed | foreign_fixed,
            holders,
            gated: false,
        };
        let demands: Vec<Demand<'_>> = events
            .iter()
            .zip(&candidates)
            .map(|(request, candidate)| {
                Demand::new(
                    &request.name,
                    CounterSet::from_mask(candidate.gp),
                    candidate.fixed,
                )
            })
            .collect();
        // A group must fit at once; independent events take turns when they do not.
        let schedule = schedule_for(options, &demands, &counters)
            .map_err(|error| error.context(format_args!("CPU {cpu}")))?;
        let assignment = &schedule.counters;
        let mut slots = Vec::with_capacity(events.len());
        let mut ours = 0u64;
        let mut mine = CpuClaims::default();
        for ((request, candidate), counter) in events.iter().zip(&candidates).zip(assignment) {
            let (read_msr, width, global_bit) = match *counter {
                CounterRef::Gp(i) => {
                    mine.gp |= 1 << i;
                    (pmu.counter_msr(i), pmu.gp_width, pmu.gp_global_bit(i))
                }
                CounterRef::Fixed(f) => {
                    mine.fixed |= 1 << f;
                    (
                        regs::IA32_FIXED_CTR0 + f,
                        pmu.fixed_width,
                        pmu.fixed_global_bit(f),
                    )
                }
            };
            ours |= global_bit;
            slots.push(Slot {
                name: request.name.clone(),
                counter: *counter,
                evtsel: candidate.evtsel,
                read_msr,
                width,
                global_bit,
                last_raw: 0,
            });
        }
        mine.extra = extra_claims(&events, &candidates, &claimed, cpu)?;
        // The extra MSRs hold their values for the group's life: written once, before any of
        // its counters is enabled.
        for (index, (msr, _, _)) in regs::EXTRA_MSRS.into_iter().enumerate() {
            let (value, users) = mine.extra[index];
            if users > 0 && claimed.extra[index].1 == 0 {
                shared.write(cpu, msr, value)?;
            }
        }
        let entry = claims.entry(cpu).or_default();
        entry.gp |= mine.gp;
        entry.fixed |= mine.fixed;
        for (held, (value, users)) in entry.extra.iter_mut().zip(mine.extra) {
            if users > 0 {
                *held = (value, held.1 + 1);
            }
        }
        drop(claims);
        let pmu = Arc::clone(&view.pmu);
        let registers = Registers::new(Arc::clone(&self.shared), pmu, cpu, slots, ours, mine);
        MsrGroup::start(registers, &schedule, pin, turn_length(options))
    }
}

/// The extra MSRs the events of a group program on `cpu` ([`regs::EXTRA_MSRS`] order, one
/// user each), where `claimed` holds those other groups programmed. Events may share an MSR
/// when they want the same value; two values for one MSR are refused, naming both events.
fn extra_claims(
    events: &[Cow<'_, EventRequest>],
    candidates: &[Candidate],
    claimed: &CpuClaims,
    cpu: u32,
) -> Result<[(u64, u32); 4]> {
    let mut mine = [(0u64, 0u32); 4];
    let mut owners: [Option<&str>; 4] = [None; 4];
    for (request, candidate) in events.iter().zip(candidates) {
        let Some(extra) = candidate.extra else {
            continue;
        };
        let Some(index) = regs::extra_index(extra.msr) else {
            continue;
        };
        let (msr, register, _) = regs::EXTRA_MSRS[index];
        let held = match (mine[index], claimed.extra[index]) {
            ((value, 1..), _) => Some((value, owners[index].unwrap_or("another event"))),
            (_, (value, 1..)) => Some((value, "another open group on this CPU")),
            _ => None,
        };
        if let Some((value, owner)) = held
            && value != extra.value
        {
            let other = if msr == ExtraMsr::OFFCORE_RSP_0 || msr == ExtraMsr::OFFCORE_RSP_1 {
                " (the events file gives each offcore event one response MSR)"
            } else {
                ""
            };
            return Err(Error::new(
                ErrorKind::Busy,
                format!(
                    "CPU {cpu}: {} needs {register} ({msr:#x}) = {:#x}, but {owner} holds it at {value:#x}{other}",
                    request.name, extra.value
                ),
            )
            .with_hint("count events that need different values of one MSR in separate runs"));
        }
        mine[index] = (extra.value, 1);
        owners[index].get_or_insert(request.name.as_str());
    }
    Ok(mine)
}

/// The architectural encoding of generalized event `name` on `pmu` (see
/// [`MsrBackend::architectural_encoding`]).
fn architectural(pmu: &PmuInfo, name: &str) -> Option<Evtsel> {
    let hardware = match GeneralizedEvent::from_name(name)? {
        GeneralizedEvent::Hardware(event) => event,
        GeneralizedEvent::Preset(Preset::TotCyc) => HardwareEvent::Cycles,
        GeneralizedEvent::Preset(Preset::TotIns) => HardwareEvent::Instructions,
        GeneralizedEvent::Preset(Preset::RefCyc) => HardwareEvent::RefCycles,
        GeneralizedEvent::Preset(Preset::BrIns) => HardwareEvent::Branches,
        GeneralizedEvent::Preset(Preset::BrMsp) => HardwareEvent::BranchMisses,
        _ => return None,
    };
    let (code, umask, fixed) = if pmu.is_amd() {
        match hardware {
            HardwareEvent::Cycles => (0x76, 0x00, None),
            HardwareEvent::Instructions => (0xC0, 0x00, None),
            HardwareEvent::Branches => (0xC2, 0x00, None),
            HardwareEvent::BranchMisses => (0xC3, 0x00, None),
            _ => return None,
        }
    } else {
        let (index, code, umask, fixed) = match hardware {
            HardwareEvent::Cycles => (0, 0x3C, 0x00, Some(1)),
            HardwareEvent::Instructions => (1, 0xC0, 0x00, Some(0)),
            HardwareEvent::RefCycles => (2, 0x3C, 0x01, Some(2)),
            HardwareEvent::CacheReferences => (3, 0x2E, 0x4F, None),
            HardwareEvent::CacheMisses => (4, 0x2E, 0x41, None),
            HardwareEvent::Branches => (5, 0xC4, 0x00, None),
            HardwareEvent::BranchMisses => (6, 0xC5, 0x00, None),
            _ => return None,
        };
        if pmu.arch_events_unavailable & (1 << index) != 0 {
            return None;
        }
        (code, umask, fixed.filter(|&f| pmu.fixed.contains(f)))
    };
    // Reference cycles at the TSC rate exist only on fixed counter 2: architectural event
    // 2 (3C/01) on a general-purpose counter counts the slower reference bus clock, a
    // different number under the same name.
    let counters = if hardware == HardwareEvent::RefCycles {
        fixed?;
        CounterSet::NONE
    } else {
        CounterSet::first(pmu.gp_counters)
    };
    let mut encoding = Evtsel::new(code, umask);
    encoding.counters = counters;
    encoding.fixed = fixed;
    Some(encoding)
}

/// Measures the TSC against the monotonic clock over 20 ms on CPU 0.
fn measure_tsc(device: &dyn MsrDevice, allow: &AllowList) -> Result<TscFrequency> {
    allow.check(regs::TSC, Access::Read)?;
    TscFrequency::measure(|| device.read(0, regs::TSC), Duration::from_millis(20))
}
