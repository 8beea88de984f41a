//! [`MsrBackend`] and [`MsrGroup`]: counting through raw PMU registers.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use counterhal_events::Database;
use counterhal_hal::{
    Accepts, Backend, Capabilities, CounterSet, DeviceKind, Domain, Encoding, Error, ErrorKind,
    EventRequest, Evtsel, Family, GeneralizedEvent, Group, HardwareEvent, OpenOptions, Preset,
    Reading, ResolvedEvent, Result, Scope, Target, TargetSupport, check_buffer, check_family,
};

use crate::allow::AllowList;
use crate::cpuid::CpuidSource;
use crate::device::{Access, MsrDevice, ThreadPin};
use crate::model::{ModelConfig, ModelDevice, ModelHandle, PmuModelKind};
use crate::pmu::{PmuInfo, TscFrequency, TscSource};
use crate::regs::{self, evtsel, fixed_ctrl, width_mask};

/// Counters claimed by open groups, per CPU (bit `i` = counter `i`).
#[derive(Clone, Copy, Debug, Default)]
struct CpuClaims {
    gp: u32,
    fixed: u32,
}

/// Claims, and the lock that serialises read-modify-write of shared registers.
type Claims = Arc<Mutex<HashMap<u32, CpuClaims>>>;

/// One table for every real device in the process: two backends probed separately still see
/// each other's counters.
fn real_claims() -> Claims {
    static CLAIMS: OnceLock<Claims> = OnceLock::new();
    Arc::clone(CLAIMS.get_or_init(Claims::default))
}

struct Shared {
    capabilities: Capabilities,
    db: Arc<Database>,
    device: Arc<dyn MsrDevice>,
    cpuid: String,
    pmu: PmuInfo,
    allow: AllowList,
    tsc: TscFrequency,
    cpu_model: Option<String>,
    claims: Claims,
}

impl Shared {
    fn read(&self, cpu: u32, msr: u32) -> Result<u64> {
        self.allow.check(msr, Access::Read)?;
        self.device.read(cpu, msr)
    }

    fn write(&self, cpu: u32, msr: u32, value: u64) -> Result<()> {
        self.allow.check(msr, Access::Write)?;
        self.device.write(cpu, msr, value)
    }

    fn lock_claims(&self) -> MutexGuard<'_, HashMap<u32, CpuClaims>> {
        self.claims
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The raw MSR backend: counts by programming the PMU registers of one logical CPU through an
/// [`MsrDevice`], never touching a register outside the [`AllowList`].
///
/// Counting is per logical CPU and system wide: a group counts everything that runs on its
/// CPU. [`Target::Cpu`] measures that CPU; [`Target::ThisThread`] pins the calling thread to
/// the CPU it runs on (`sched_setaffinity`) until the group is dropped and measures that CPU.
/// Other targets are [`ErrorKind::Unsupported`]. Nothing is multiplexed:
/// `time_running == time_enabled`, both from the TSC.
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
        if pmu.perf_capabilities && pmu.version >= 2 {
            let allow = AllowList::for_pmu(&pmu);
            allow.check(regs::IA32_PERF_CAPABILITIES, Access::Read)?;
            // A CPU that refuses the register has no full-width writes.
            if let Ok(caps) = device.read(0, regs::IA32_PERF_CAPABILITIES) {
                pmu.full_width_writes = caps & regs::PERF_CAP_FW_WRITE != 0;
            }
        }
        let allow = AllowList::for_pmu(&pmu);
        let tsc = match (device.tsc_hz(), pmu.cpuid_tsc) {
            (Some(hz), _) => TscFrequency {
                hz,
                source: TscSource::Model,
            },
            (None, Some(tsc)) => tsc,
            (None, None) => measure_tsc(device.as_ref(), &allow)?,
        };
        let cpu_model =
            cpu_model.or_else(|| db.detect(&pmu.identity).map(|model| model.id.clone()));
        let claims = match device.kind() {
            DeviceKind::Real => real_claims(),
            DeviceKind::Model => Claims::default(),
        };
        let shared = Shared {
            capabilities: capabilities(&pmu),
            db,
            cpuid: cpuid.describe(),
            device,
            pmu,
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
    ///                      OpenOptions, Target};
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
    /// let mut group = backend.open(&[request], &Target::Cpu(0), &OpenOptions::default()).unwrap();
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
        let cpuid = config.cpuid();
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
        let pmu = &self.shared.pmu;
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

    fn target_cpu(&self, target: &Target) -> Result<(u32, Option<ThreadPin>)> {
        let cpus = self.shared.device.cpu_count();
        match *target {
            Target::Cpu(cpu) if cpu < cpus => Ok((cpu, None)),
            Target::Cpu(cpu) => Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "CPU {cpu} does not exist (the MSR device has CPUs 0-{})",
                    cpus.saturating_sub(1)
                ),
            )),
            Target::ThisThread => {
                let pin = self.shared.device.pin_this_thread()?;
                Ok((pin.cpu, Some(pin)))
            }
            other => Err(Error::unsupported(format!(
                "the msr backend cannot measure {other}: MSR counters count per CPU, system wide"
            ))
            .with_hint("measure a CPU (Target::Cpu) or this thread (pinned to its CPU)")),
        }
    }

    /// Checks one request against the PMU; returns its encoding and its candidate counters.
    fn validate(&self, request: &EventRequest) -> Result<Candidate> {
        let pmu = &self.shared.pmu;
        let name = &request.name;
        check_family("msr", &self.shared.capabilities.accepts, request)?;
        let Encoding::Evtsel(encoding) = request.encoding else {
            // `check_family` let only event selects through.
            return Err(Error::unsupported(format!("{name}: not an event select")));
        };
        if let Some(extra) = encoding.extra {
            return Err(Error::unsupported(format!(
                "{name}: the event needs MSR {:#x} = {:#x} besides its event select, which this backend does not program",
                extra.msr, extra.value
            ))
            .with_hint("count it with the Linux backend (perf programs the extra register)"));
        }
        let max_code = if pmu.is_amd() { 0xFFF } else { 0xFF };
        if encoding.code > max_code {
            return Err(Error::invalid_event(format!(
                "{name}: event code {:#x} is wider than this PMU's ({}) event select, which holds codes up to {max_code:#x}",
                encoding.code,
                pmu.summary()
            ))
            .with_hint("the events file does not describe this CPU; check --cpu"));
        }
        let value = encoding.register_value();
        if value & evtsel::INT != 0 {
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
        if value & (evtsel::USR | evtsel::OS) == 0 {
            return Err(Error::invalid_event(format!(
                "{name}: event select {value:#x} counts in no privilege level (neither USR bit 16 \
                 nor OS bit 17)"
            ))
            .with_hint("set USR for user mode, OS for kernel mode, or both"));
        }
        let existing = CounterSet::first(pmu.gp_counters).mask();
        let gp = encoding.counters.mask() & existing;
        let plain = value & (evtsel::EDGE | evtsel::INV | evtsel::CMASK) == 0;
        let fixed = encoding.fixed.filter(|&f| pmu.fixed.contains(f) && plain);
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
            .with_hint("the events file does not describe this CPU; check --cpu"));
        }
        Ok(Candidate {
            evtsel: value,
            gp,
            fixed,
        })
    }
}

#[derive(Clone, Copy, Debug)]
struct Candidate {
    evtsel: u64,
    gp: u32,
    fixed: Option<u32>,
}

/// Assigns events to counters: each event that may use a free fixed counter takes it (first
/// come), the rest are matched to free general-purpose counters by augmenting paths (so an
/// event restricted to counter 0 is placed even when listed after an unrestricted one).
fn assign(candidates: &[Candidate], free_gp: u32, free_fixed: u32) -> Option<Vec<CounterRef>> {
    let mut out: Vec<Option<CounterRef>> = vec![None; candidates.len()];
    let mut fixed_taken = 0u32;
    for (slot, candidate) in out.iter_mut().zip(candidates) {
        if let Some(f) = candidate.fixed {
            if free_fixed & !fixed_taken & (1 << f) != 0 {
                fixed_taken |= 1 << f;
                *slot = Some(CounterRef::Fixed(f));
            }
        }
    }
    let mut owner: [Option<usize>; 32] = [None; 32];
    fn augment(
        event: usize,
        candidates: &[Candidate],
        free_gp: u32,
        owner: &mut [Option<usize>; 32],
        seen: &mut u32,
    ) -> bool {
        let allowed = candidates[event].gp & free_gp;
        // A free counter first (so the natural order is kept), then displacement.
        for (counter, slot) in owner.iter_mut().enumerate() {
            if allowed & (1 << counter) != 0 && slot.is_none() {
                *slot = Some(event);
                return true;
            }
        }
        for counter in 0..32 {
            let bit = 1u32 << counter;
            if allowed & bit == 0 || *seen & bit != 0 {
                continue;
            }
            *seen |= bit;
            let displaced = owner[counter];
            if displaced.is_some_and(|other| augment(other, candidates, free_gp, owner, seen)) {
                owner[counter] = Some(event);
                return true;
            }
        }
        false
    }
    let unplaced: Vec<usize> = (0..candidates.len())
        .filter(|&e| out[e].is_none())
        .collect();
    for event in unplaced {
        let mut seen = 0;
        if !augment(event, candidates, free_gp, &mut owner, &mut seen) {
            return None;
        }
    }
    for (counter, event) in owner.iter().enumerate() {
        if let Some(event) = event {
            out[*event] = Some(CounterRef::Gp(counter as u32));
        }
    }
    out.into_iter().collect()
}

/// A counter: general purpose or fixed, by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterRef {
    /// General-purpose counter `i` (IA32_PMCi, PerfCtri).
    Gp(u32),
    /// Fixed counter `i` (IA32_FIXED_CTRi).
    Fixed(u32),
}

impl fmt::Display for CounterRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CounterRef::Gp(i) => write!(f, "counter {i}"),
            CounterRef::Fixed(i) => write!(f, "fixed counter {i}"),
        }
    }
}

/// The number of events a counter counted between two raw readings `previous` and `current`
/// of a `width`-bit counter; `overflowed` says the overflow status bit was set (the counter
/// wrapped at least once since `previous`, read while frozen).
///
/// Without the status bit the difference is taken modulo 2^width: exact when fewer than
/// 2^width events pass between reads. With it, a difference that looks non-negative is known
/// to hide a whole period (exact below 2 x 2^width events between reads).
pub fn counter_delta(previous: u64, current: u64, width: u32, overflowed: bool) -> u64 {
    let width = width.clamp(1, 64);
    let modulus = 1u128 << width;
    let mask = modulus - 1;
    let previous = u128::from(previous) & mask;
    let current = u128::from(current) & mask;
    let mut delta = (current + modulus - previous) & mask;
    if overflowed && current >= previous {
        delta += modulus;
    }
    u64::try_from(delta).unwrap_or(u64::MAX)
}

/// What the backend takes and can do on `pmu`: event selects, user and kernel bits (and AMD's
/// HostOnly and GuestOnly), no multiplexing, a CPU or this thread pinned to its CPU.
fn capabilities(pmu: &PmuInfo) -> Capabilities {
    let mut domains = Domain::USER | Domain::KERNEL;
    if pmu.is_amd() {
        domains |= Domain::HOST | Domain::GUEST;
    }
    let accepts = Accepts::new(&[Family::Evtsel], domains, Domain::DEFAULT);
    let mut capabilities = Capabilities::new(accepts, Scope::SystemWidePerCpu);
    capabilities.general_counters = Some(pmu.gp_counters);
    capabilities.counter_width = Some(pmu.gp_width);
    capabilities.fixed_counters = pmu.fixed_counters();
    capabilities.fixed_width = (pmu.fixed_counters() > 0).then_some(pmu.fixed_width);
    let mut targets = TargetSupport::NONE;
    targets.this_thread = true;
    targets.cpu = true;
    capabilities.targets = targets;
    capabilities
}

impl Backend for MsrBackend {
    type Group = MsrGroup;

    fn name(&self) -> &'static str {
        "msr"
    }

    fn device(&self) -> DeviceKind {
        self.shared.device.kind()
    }

    fn capabilities(&self) -> &Capabilities {
        &self.shared.capabilities
    }

    /// Delegates to the event database for this CPU model; when the database has no MSR
    /// encoding (`Unsupported`), falls back to [`MsrBackend::architectural_encoding`].
    fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
        let cpu = self.shared.cpu_model.as_deref();
        let accepts = &self.shared.capabilities.accepts;
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
        target: &Target,
        _options: &OpenOptions,
    ) -> Result<MsrGroup> {
        if events.is_empty() {
            return Err(
                Error::invalid_input("no events to open").with_hint("name at least one event")
            );
        }
        let candidates = events
            .iter()
            .map(|e| self.validate(e))
            .collect::<Result<Vec<_>>>()?;
        let (cpu, pin) = self.target_cpu(target)?;
        let shared = &self.shared;
        let pmu = &shared.pmu;
        let mut claims = shared.lock_claims();
        let claimed = claims.get(&cpu).copied().unwrap_or_default();
        // Counters someone else (perf, an NMI watchdog, another tool) has enabled are busy.
        let mut foreign_gp = 0u32;
        for i in 0..pmu.gp_counters {
            if claimed.gp & (1 << i) == 0 && shared.read(cpu, pmu.evtsel_msr(i))? & evtsel::EN != 0
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
        let free_gp = CounterSet::first(pmu.gp_counters).mask() & !claimed.gp & !foreign_gp;
        let free_fixed = pmu.fixed.mask() & !claimed.fixed & !foreign_fixed;
        let Some(assignment) = assign(&candidates, free_gp, free_fixed) else {
            let busy = if foreign_gp | foreign_fixed != 0 {
                format!(
                    "; counters {{{}}} and fixed {{{}}} are enabled by another user (perf, the NMI \
                     watchdog, another tool)",
                    CounterSet::from_mask(foreign_gp),
                    CounterSet::from_mask(foreign_fixed)
                )
            } else {
                String::new()
            };
            return Err(Error::new(
                ErrorKind::NoCounterAvailable,
                format!(
                    "{} events do not fit the free counters of CPU {cpu}: general {{{}}}, fixed \
                     {{{}}}{busy}",
                    events.len(),
                    CounterSet::from_mask(free_gp),
                    CounterSet::from_mask(free_fixed)
                ),
            )
            .with_hint("open fewer events per group, or close other groups on this CPU"));
        };
        let mut slots = Vec::with_capacity(events.len());
        let mut ours = 0u64;
        let mut mine = CpuClaims::default();
        for ((request, candidate), counter) in events.iter().zip(&candidates).zip(&assignment) {
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
                total: 0,
            });
        }
        let entry = claims.entry(cpu).or_default();
        entry.gp |= mine.gp;
        entry.fixed |= mine.fixed;
        drop(claims);
        let mut group = MsrGroup {
            shared: Arc::clone(&self.shared),
            cpu,
            slots,
            ours,
            fixed_fields: 0,
            fixed_mask: 0,
            claimed: mine,
            enabled: false,
            enabled_ticks: 0,
            enabled_since: 0,
            _pin: pin,
        };
        // On failure the group is dropped, which releases its counters.
        group.program()?;
        Ok(group)
    }
}

/// One event of a group on its counter.
#[derive(Clone, Debug)]
struct Slot {
    name: String,
    counter: CounterRef,
    evtsel: u64,
    read_msr: u32,
    width: u32,
    global_bit: u64,
    last_raw: u64,
    total: u64,
}

/// Events counting together on one CPU's PMU registers.
///
/// With a global control register (Intel v2+, AMD PerfMonV2) the group's counters start and
/// stop together with one write of their enable bits, and a read freezes them for the moment
/// of the read so the snapshot is consistent (the events of the read itself are partly not
/// counted). Without one (Intel v1, AMD legacy) each counter starts and stops by its EN bit,
/// one write after another.
///
/// Values are accumulated in 64 bits across counter wraparound (see [`counter_delta`]);
/// `time_enabled` and `time_running` are TSC time while enabled, equal (nothing is
/// multiplexed). Dropping the group stops its counters, clears their selects and releases
/// them, and restores the affinity of a pinned thread.
pub struct MsrGroup {
    shared: Arc<Shared>,
    cpu: u32,
    slots: Vec<Slot>,
    ours: u64,
    /// Our fields of IA32_FIXED_CTR_CTRL while enabled, and the mask of all our fields.
    fixed_fields: u64,
    fixed_mask: u64,
    claimed: CpuClaims,
    enabled: bool,
    enabled_ticks: u64,
    enabled_since: u64,
    _pin: Option<ThreadPin>,
}

impl fmt::Debug for MsrGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsrGroup")
            .field("cpu", &self.cpu)
            .field("counters", &self.counters())
            .field("enabled", &self.enabled)
            .finish()
    }
}

impl MsrGroup {
    /// The logical CPU this group counts on.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// Whether the calling thread was pinned for this group (a [`Target::ThisThread`] group on
    /// the real device).
    pub fn pinned_thread(&self) -> bool {
        self._pin.as_ref().is_some_and(ThreadPin::is_pinned)
    }

    /// The counter each event was placed on, in request order.
    pub fn counters(&self) -> Vec<(String, CounterRef)> {
        self.slots
            .iter()
            .map(|s| (s.name.clone(), s.counter))
            .collect()
    }

    fn program(&mut self) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let pmu = &shared.pmu;
        let cpu = self.cpu;
        let _guard = shared.lock_claims();
        let global = pmu.global_msrs();
        // 1. Freeze: clear our enable bits in the global control.
        if let Some((ctrl, _, _)) = global {
            let value = shared.read(cpu, ctrl)?;
            shared.write(cpu, ctrl, value & !self.ours)?;
        }
        // 2. Program the selects with EN clear, and clear our fixed-counter fields: a counter
        //    is switched on only while the group is enabled, in its own select as well as in
        //    the global control, so that another agent rewriting the global control (perf
        //    after an NMI-watchdog interrupt does) cannot restart a disabled group.
        let mut fixed_fields = 0u64;
        let mut fixed_mask = 0u64;
        for slot in &self.slots {
            match slot.counter {
                CounterRef::Gp(i) => {
                    shared.write(cpu, pmu.evtsel_msr(i), slot.evtsel & !evtsel::EN)?;
                }
                CounterRef::Fixed(f) => {
                    let mut field = 0;
                    if slot.evtsel & evtsel::OS != 0 {
                        field |= fixed_ctrl::OS;
                    }
                    if slot.evtsel & evtsel::USR != 0 {
                        field |= fixed_ctrl::USR;
                    }
                    if slot.evtsel & evtsel::ANY != 0 {
                        field |= fixed_ctrl::ANY;
                    }
                    fixed_fields |= field << (4 * f);
                    fixed_mask |= fixed_ctrl::field(f);
                }
            }
        }
        self.fixed_fields = fixed_fields;
        self.fixed_mask = fixed_mask;
        if fixed_mask != 0 {
            let value = shared.read(cpu, regs::IA32_FIXED_CTR_CTRL)?;
            shared.write(cpu, regs::IA32_FIXED_CTR_CTRL, value & !fixed_mask)?;
        }
        // 3. Zero the counters, 4. clear their overflow status.
        self.zero_counters()?;
        if let Some((_, _, clear)) = global {
            shared.write(cpu, clear, self.ours)?;
        }
        Ok(())
    }

    fn zero_counters(&mut self) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        for slot in &mut self.slots {
            let msr = match slot.counter {
                CounterRef::Gp(i) => shared
                    .pmu
                    .counter_full_write_msr(i)
                    .unwrap_or(slot.read_msr),
                CounterRef::Fixed(_) => slot.read_msr,
            };
            shared.write(self.cpu, msr, 0)?;
            slot.last_raw = 0;
        }
        Ok(())
    }

    /// Runs `body` with the group's counters frozen (when a global control exists and the
    /// group is enabled), unfreezing afterwards whatever `body` returned.
    fn frozen<T>(&mut self, body: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let shared = Arc::clone(&self.shared);
        let ctrl = match shared.pmu.global_msrs() {
            Some((ctrl, _, _)) if self.enabled => ctrl,
            _ => return body(self),
        };
        let value = shared.read(self.cpu, ctrl)?;
        shared.write(self.cpu, ctrl, value & !self.ours)?;
        let result = body(self);
        let restore = shared.write(self.cpu, ctrl, value | self.ours);
        let value = result?;
        restore?;
        Ok(value)
    }

    /// Loads the hardware counter of event `index` (request order) with `value`, keeping the
    /// accumulated reading: the next events count on from `value`. For testing wraparound on
    /// a real CPU (preload near 2^width).
    ///
    /// On Intel general-purpose counters without full-width writes only values whose bits
    /// 31:0 sign-extend to them can be loaded (below 2^31, or within 2^31 of 2^width).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for an index past the group or a value of more than the
    /// counter's width; [`ErrorKind::Unsupported`] for a value the CPU cannot load; device
    /// errors.
    pub fn set_counter(&mut self, index: usize, value: u64) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let pmu = &shared.pmu;
        let Some(slot) = self.slots.get(index) else {
            return Err(Error::invalid_input(format!(
                "event index {index} is past the group's {} events",
                self.slots.len()
            )));
        };
        if value & !width_mask(slot.width) != 0 {
            return Err(Error::invalid_input(format!(
                "{value:#x} does not fit the {}-bit {}",
                slot.width, slot.counter
            )));
        }
        let (msr, written) = match slot.counter {
            CounterRef::Fixed(_) => (slot.read_msr, value),
            CounterRef::Gp(i) => match pmu.counter_full_write_msr(i) {
                Some(msr) => (msr, value),
                None => {
                    let half = 1u64 << 31;
                    if value >= half && value < width_mask(slot.width) - (half - 1) {
                        return Err(Error::unsupported(format!(
                            "{value:#x} cannot be loaded into {}: without full-width writes \
                             (IA32_PERF_CAPABILITIES bit 13) only bits 31:0, sign-extended, are \
                             written",
                            slot.counter
                        )));
                    }
                    (slot.read_msr, value & width_mask(32))
                }
            },
        };
        let cpu = self.cpu;
        let _guard = shared.lock_claims();
        self.frozen(|group| {
            group.read_into_totals()?;
            shared.write(cpu, msr, written)?;
            group.slots[index].last_raw = value;
            Ok(())
        })
    }

    /// Folds the counters' progress since the last read into the totals (call frozen).
    fn read_into_totals(&mut self) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let status = match shared.pmu.global_msrs() {
            Some((_, status, _)) => shared.read(self.cpu, status)? & self.ours,
            None => 0,
        };
        for slot in &mut self.slots {
            let raw = shared.read(self.cpu, slot.read_msr)? & width_mask(slot.width);
            let overflowed = status & slot.global_bit != 0;
            let delta = counter_delta(slot.last_raw, raw, slot.width, overflowed);
            slot.total = slot.total.wrapping_add(delta);
            slot.last_raw = raw;
        }
        if let (Some((_, _, clear)), true) = (shared.pmu.global_msrs(), status != 0) {
            shared.write(self.cpu, clear, status)?;
        }
        Ok(())
    }

    fn tsc_now(&self) -> Result<u64> {
        self.shared.read(self.cpu, regs::TSC)
    }

    /// Switches the group's counters on or off: their select EN bits and fixed-counter
    /// fields, and their global-control bits where the PMU has one. On, the selects come
    /// first and the global control last (one write starts every counter at once); off, the
    /// global control comes first (one write stops them all) and the selects after.
    fn set_enable_bits(&mut self, on: bool) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let pmu = &shared.pmu;
        let global = pmu.global_msrs().map(|(ctrl, _, _)| ctrl);
        if !on && let Some(ctrl) = global {
            let value = shared.read(self.cpu, ctrl)?;
            shared.write(self.cpu, ctrl, value & !self.ours)?;
        }
        for slot in &self.slots {
            if let CounterRef::Gp(i) = slot.counter {
                let value = if on {
                    slot.evtsel | evtsel::EN
                } else {
                    slot.evtsel & !evtsel::EN
                };
                shared.write(self.cpu, pmu.evtsel_msr(i), value)?;
            }
        }
        if self.fixed_mask != 0 {
            let value = shared.read(self.cpu, regs::IA32_FIXED_CTR_CTRL)? & !self.fixed_mask;
            let value = if on { value | self.fixed_fields } else { value };
            shared.write(self.cpu, regs::IA32_FIXED_CTR_CTRL, value)?;
        }
        if on && let Some(ctrl) = global {
            let value = shared.read(self.cpu, ctrl)?;
            shared.write(self.cpu, ctrl, value | self.ours)?;
        }
        Ok(())
    }
}

impl Group for MsrGroup {
    fn len(&self) -> usize {
        self.slots.len()
    }

    fn enable(&mut self) -> Result<()> {
        if self.enabled {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let _guard = shared.lock_claims();
        let now = self.tsc_now()?;
        self.set_enable_bits(true)?;
        self.enabled_since = now;
        self.enabled = true;
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let _guard = shared.lock_claims();
        self.set_enable_bits(false)?;
        let now = self.tsc_now()?;
        self.enabled_ticks = self
            .enabled_ticks
            .wrapping_add(now.wrapping_sub(self.enabled_since));
        self.enabled = false;
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let _guard = shared.lock_claims();
        self.frozen(|group| {
            group.zero_counters()?;
            if let Some((_, _, clear)) = shared.pmu.global_msrs() {
                shared.write(group.cpu, clear, group.ours)?;
            }
            for slot in &mut group.slots {
                slot.total = 0;
            }
            Ok(())
        })
    }

    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        check_buffer("readings", self.slots.len(), readings.len())?;
        let shared = Arc::clone(&self.shared);
        let _guard = shared.lock_claims();
        self.frozen(|group| group.read_into_totals())?;
        let mut ticks = self.enabled_ticks;
        if self.enabled {
            ticks = ticks.wrapping_add(self.tsc_now()?.wrapping_sub(self.enabled_since));
        }
        let nanos = shared.tsc.nanos(ticks);
        for (reading, slot) in readings.iter_mut().zip(&self.slots) {
            *reading = Reading::new(slot.total, nanos, nanos);
        }
        Ok(())
    }
}

impl Drop for MsrGroup {
    fn drop(&mut self) {
        let shared = Arc::clone(&self.shared);
        let pmu = &shared.pmu;
        let mut claims = shared.lock_claims();
        // Best effort: a failing device cannot be helped while dropping.
        if let Some((ctrl, _, clear)) = pmu.global_msrs() {
            if let Ok(value) = shared.read(self.cpu, ctrl) {
                let _ = shared.write(self.cpu, ctrl, value & !self.ours);
            }
            let _ = shared.write(self.cpu, clear, self.ours);
        }
        let mut fixed_mask = 0;
        for slot in &self.slots {
            match slot.counter {
                CounterRef::Gp(i) => {
                    let _ = shared.write(self.cpu, pmu.evtsel_msr(i), 0);
                }
                CounterRef::Fixed(f) => fixed_mask |= fixed_ctrl::field(f),
            }
        }
        if fixed_mask != 0 {
            if let Ok(value) = shared.read(self.cpu, regs::IA32_FIXED_CTR_CTRL) {
                let _ = shared.write(self.cpu, regs::IA32_FIXED_CTR_CTRL, value & !fixed_mask);
            }
        }
        if let Some(entry) = claims.get_mut(&self.cpu) {
            entry.gp &= !self.claimed.gp;
            entry.fixed &= !self.claimed.fixed;
        }
    }
}

/// Measures the TSC against the monotonic clock over 20 ms on CPU 0.
fn measure_tsc(device: &dyn MsrDevice, allow: &AllowList) -> Result<TscFrequency> {
    allow.check(regs::TSC, Access::Read)?;
    let start = std::time::Instant::now();
    let first = device.read(0, regs::TSC)?;
    std::thread::sleep(std::time::Duration::from_millis(20));
    let second = device.read(0, regs::TSC)?;
    let elapsed = start.elapsed().as_nanos().max(1);
    let hz = u128::from(second.wrapping_sub(first)) * 1_000_000_000 / elapsed;
    Ok(TscFrequency {
        hz: u64::try_from(hz).unwrap_or(u64::MAX),
        source: TscSource::Measured,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(gp: u32, fixed: Option<u32>) -> Candidate {
        Candidate {
            evtsel: 0,
            gp,
            fixed,
        }
    }

    #[test]
    fn assignment_honours_constraints_in_any_order() {
        // An unrestricted event listed before a counter-0-only event.
        let got = assign(&[candidate(0b11, None), candidate(0b01, None)], 0b11, 0).unwrap();
        assert_eq!(got, vec![CounterRef::Gp(1), CounterRef::Gp(0)]);
        // Fixed counters first; a second claimant of the same fixed counter goes to a GP one.
        let got = assign(
            &[candidate(0b1111, Some(0)), candidate(0b1111, Some(0))],
            0b1111,
            0b111,
        )
        .unwrap();
        assert_eq!(got, vec![CounterRef::Fixed(0), CounterRef::Gp(0)]);
        // Busy counters are avoided.
        let got = assign(&[candidate(0b1111, Some(1))], 0b1000, 0b101).unwrap();
        assert_eq!(got, vec![CounterRef::Gp(3)]);
        assert_eq!(
            assign(&[candidate(0b01, None), candidate(0b01, None)], 0b11, 0),
            None
        );
    }

    #[test]
    fn deltas_wrap_at_the_width() {
        assert_eq!(counter_delta(10, 15, 48, false), 5);
        assert_eq!(counter_delta((1 << 48) - 10, 10, 48, false), 20);
        assert_eq!(counter_delta((1 << 48) - 10, 10, 48, true), 20);
        assert_eq!(counter_delta(10, 15, 48, true), (1 << 48) + 5);
        assert_eq!(counter_delta(7, 7, 40, true), 1 << 40);
        assert_eq!(counter_delta((1 << 40) - 1, 0, 40, false), 1);
        assert_eq!(counter_delta(u64::MAX, 0, 64, false), 1);
        assert_eq!(counter_delta(0, 0, 64, true), u64::MAX);
    }
}
