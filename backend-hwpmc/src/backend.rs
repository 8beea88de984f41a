//! [`HwpmcBackend`]: resolving names and opening counting PMCs through hwpmc(4).

use std::sync::{Arc, Mutex};

use counterhal_events::{Database, EncoderKind};
use counterhal_hal::{
    Accepts, Backend, BackendTarget, Capabilities, CounterSet, DeviceKind, Domain, Encoding, Error,
    ErrorKind, EventRequest, Family, OpenOptions, ResolvedEvent, Result, Scope, TargetSupport,
    check_family,
};
use counterhal_x86::{Counters, Demand, rotation, schedule_for, turn_length};

use crate::abi::{EVTSEL_KERNEL_OWNED, PmcOpGetCpuInfo, Version, caps, class};
use crate::device::{HwpmcDevice, cpu_info, handshake};
use crate::errno::{Operation, map_errno};
use crate::event::{PmcEvent, Pmu};
use crate::group::{HwpmcGroup, Plan};
use crate::model::{ModelConfig, ModelHandle};
use crate::shared::{Shared, lock};

/// The FreeBSD hwpmc(4) backend, over the real system call or a [`ModelHandle`]'s model.
///
/// It counts with process-mode PMCs (`PMC_MODE_TC`: every thread of a process, and its
/// descendants on request) or system-mode ones (`PMC_MODE_SC`: everything on one CPU); see
/// the crate documentation for what hwpmc does and does not give.
pub struct HwpmcBackend {
    capabilities: Capabilities,
    db: Arc<Database>,
    cpu_id: String,
    pmu: Pmu,
    version: Version,
    info: PmcOpGetCpuInfo,
    general: u32,
    fixed: u32,
    width: u32,
    fixed_width: u32,
    device_kind: DeviceKind,
    pid: u32,
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for HwpmcBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HwpmcBackend")
            .field("cpu_id", &self.cpu_id)
            .field("pmu", &self.pmu)
            .field("version", &self.version)
            .field("general", &self.general)
            .field("fixed", &self.fixed)
            .field("width", &self.width)
            .field("device", &self.device_kind)
            .finish_non_exhaustive()
    }
}

impl HwpmcBackend {
    /// A backend over a fresh model set up as `config` says, resolving names against the
    /// database's model of that CPU ([`ModelConfig::default_model_id`]), and the handle that
    /// feeds the model.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use counterhal_hal::{BackendExt, Group, OpenOptions, BackendTarget};
    /// use counterhal_hwpmc::{HwpmcBackend, ModelConfig, ModelEvent};
    ///
    /// let db = Arc::new(counterhal_events::Database::shipped().unwrap());
    /// let (backend, model) = HwpmcBackend::with_model(db, ModelConfig::intel())?;
    /// let me = BackendTarget::process(model.caller());
    /// let mut group = backend.open_named(&["instructions:u"], &me, &OpenOptions::default())?;
    /// group.enable()?;
    /// model.run(ModelEvent::Instructions, 1_000, 500); // the kernel-mode 500 are left out
    /// group.disable()?;
    /// assert_eq!(group.read_to_vec()?[0].value, 1_000);
    /// # Ok::<(), counterhal_hal::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`from_device`](Self::from_device).
    pub fn with_model(
        db: Arc<Database>,
        config: ModelConfig,
    ) -> Result<(HwpmcBackend, ModelHandle)> {
        HwpmcBackend::with_model_as(db, config, config.default_model_id())
    }

    /// As [`with_model`](Self::with_model), resolving names against database model `cpu_id`.
    ///
    /// # Errors
    /// As [`from_device`](Self::from_device).
    pub fn with_model_as(
        db: Arc<Database>,
        config: ModelConfig,
        cpu_id: &str,
    ) -> Result<(HwpmcBackend, ModelHandle)> {
        let handle = ModelHandle::new(config);
        let backend =
            HwpmcBackend::from_device(db, Some(cpu_id.to_string()), Box::new(handle.device()))?;
        Ok((backend, handle))
    }

    /// A backend over `device`: the version handshake (V10, else V9), then GETCPUINFO for
    /// the classes, their rows and widths. `cpu_id` names the event database's model.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] for a module of another major version or without the
    /// IAP or K8 class; [`ErrorKind::InvalidInput`] without a CPU model; the mapped error of
    /// a refused call.
    pub fn from_device(
        db: Arc<Database>,
        cpu_id: Option<String>,
        mut device: Box<dyn HwpmcDevice>,
    ) -> Result<HwpmcBackend> {
        let version =
            handshake(device.as_mut()).map_err(|e| map_errno(&Operation::Handshake, e))?;
        let info = cpu_info(device.as_mut()).map_err(|e| map_errno(&Operation::CpuInfo, e))?;
        let classes = &info.classes[..(info.nclass as usize).min(info.classes.len())];
        let find = |wanted: u32| classes.iter().find(|c| c.class == wanted).copied();
        let (pmu, general, width, fixed, fixed_width) = if let Some(iap) = find(class::IAP) {
            let iaf = find(class::IAF);
            (
                Pmu::Intel,
                iap.num,
                iap.width,
                iaf.map_or(0, |c| c.num.min(3)),
                iaf.map_or(iap.width, |c| c.width),
            )
        } else if let Some(k8) = find(class::K8) {
            let core = k8.num.min(crate::abi::AMD_CORE_ROWS);
            (Pmu::Amd, core, k8.width, 0, k8.width)
        } else {
            let names: Vec<&str> = classes.iter().map(|c| class::name(c.class)).collect();
            return Err(Error::unsupported(format!(
                "hwpmc drives neither the IAP nor the K8 class on this CPU (its classes: {})",
                names.join(", ")
            )));
        };
        if !(1..=64).contains(&width) || !(1..=64).contains(&fixed_width) {
            return Err(Error::unsupported(format!(
                "hwpmc reports counters of {width} bits, outside 1-64"
            )));
        }
        let Some(cpu_id) = cpu_id else {
            return Err(
                Error::invalid_input("no CPU model to resolve event names against")
                    .with_hint("name one with --cpu-model (see `counterhal list` for the ids)"),
            );
        };
        let device_kind = device.kind();
        let pid = device.pid();
        Ok(HwpmcBackend {
            capabilities: capabilities(device_kind, pmu, [general, width, fixed, fixed_width]),
            db,
            cpu_id,
            pmu,
            version,
            info,
            general,
            fixed,
            width,
            fixed_width,
            device_kind,
            pid,
            shared: Arc::new(Mutex::new(Shared {
                device,
                busy_general: 0,
                busy_fixed: 0,
            })),
        })
    }

    /// The module's API version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// What GETCPUINFO said.
    pub fn cpu_info(&self) -> &PmcOpGetCpuInfo {
        &self.info
    }

    /// The classes it programs.
    pub fn pmu(&self) -> Pmu {
        self.pmu
    }

    /// Programmable counters (IAP rows, or K8 core rows).
    pub fn counters(&self) -> u32 {
        self.general
    }

    /// The counter width in bits (counts wrap there).
    pub fn counter_width(&self) -> u32 {
        self.width
    }

    /// The event database model names resolve against.
    pub fn cpu_id(&self) -> &str {
        &self.cpu_id
    }

    /// The event database.
    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// Checks an encoding and returns what hwpmc is asked for: the configuration (with user
    /// and kernel both when the encoding selects neither), the capabilities, the counters.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] for a family other than the EVTSEL, or an event that needs
    /// an extra MSR (offcore response, load latency); [`ErrorKind::NoCounterAvailable`] when
    /// it may use no counter this backend programs.
    pub fn pmc_event(&self, request: &EventRequest) -> Result<PmcEvent> {
        let name = &request.name;
        check_family("hwpmc", self.capabilities.accepts(), request)?;
        let Encoding::Evtsel(evtsel) = &request.encoding else {
            return Err(Error::unsupported(format!(
                "`{name}`: {} encodings are not programmed here",
                request.encoding.family()
            )));
        };
        if let Some(extra) = evtsel.extra {
            return Err(Error::unsupported(format!(
                "`{name}` needs MSR {:#x} besides its event select, which this backend does not pass to hwpmc",
                extra.msr
            )));
        }
        let mut config = evtsel.register_value() & !EVTSEL_KERNEL_OWNED;
        const USR: u64 = 1 << 16;
        const OS: u64 = 1 << 17;
        if config & (USR | OS) == 0 {
            config |= USR | OS;
        }
        let mut wanted = caps::READ | caps::WRITE;
        if config & USR != 0 {
            wanted |= caps::USER;
        }
        if config & OS != 0 {
            wanted |= caps::SYSTEM;
        }
        let general = evtsel
            .counters
            .intersection(CounterSet::first(self.general));
        let fixed = evtsel.fixed.filter(|&f| f < self.fixed);
        if general.is_empty() && fixed.is_none() {
            return Err(Error::new(
                ErrorKind::NoCounterAvailable,
                format!(
                    "`{name}` may use only counter(s) {}; hwpmc offers counter(s) {} here",
                    evtsel.counters,
                    CounterSet::first(self.general)
                ),
            ));
        }
        Ok(PmcEvent {
            config,
            caps: wanted,
            general,
            fixed,
        })
    }

    /// The plan of PMCs for `target`: mode, CPU, the process to attach to, the flags.
    fn plan(&self, target: &BackendTarget) -> Result<Plan> {
        let flags = if self.version.major() >= 10 {
            crate::abi::flag::EV_PMU
        } else {
            0
        };
        let base = Plan {
            pmu: self.pmu,
            major: self.version.major(),
            mode: crate::abi::mode::TC,
            cpu: crate::abi::CPU_ANY,
            attach: None,
            flags,
            width: self.width,
            fixed_width: self.fixed_width,
        };
        match *target {
            BackendTarget::Process { pid, inherit } => Ok(Plan {
                attach: (pid != self.pid).then_some(pid),
                flags: flags
                    | if inherit {
                        crate::abi::flag::DESCENDANTS
                    } else {
                        0
                    },
                ..base
            }),
            BackendTarget::Cpu(cpu) if cpu < self.info.ncpu => Ok(Plan {
                mode: crate::abi::mode::SC,
                cpu,
                ..base
            }),
            BackendTarget::Cpu(cpu) => Err(Error::invalid_input(format!(
                "CPU {cpu} does not exist: hwpmc reports CPUs 0-{}",
                self.info.ncpu.saturating_sub(1)
            ))),
            BackendTarget::ThisThread => Err(Error::unsupported(
                "hwpmc cannot count one thread: a process-mode PMC counts every thread of its process",
            )
            .with_hint("use BackendTarget::process(std::process::id()) for this process")),
            _ => Err(Error::unsupported(format!(
                "hwpmc cannot measure {target} here"
            ))
            .with_hint("use a process (BackendTarget::process) or a CPU (BackendTarget::cpu)")),
        }
    }
}

/// What hwpmc takes and does: EVTSEL encodings, user and kernel filtering, process-mode
/// (every thread, with descendants on request) and system-mode (one CPU) PMCs, software
/// multiplexing in 4 ms turns, counts that wrap at the class width; no thread target, no
/// self-monitoring reads.
fn capabilities(device: DeviceKind, pmu: Pmu, counters: [u32; 4]) -> Capabilities {
    let [general, width, fixed, fixed_width] = counters;
    let accepts = Accepts::new(
        &[Family::Evtsel],
        Domain::USER | Domain::KERNEL,
        Domain::DEFAULT,
    );
    let mut capabilities = Capabilities::new(accepts, Scope::PerProcess);
    capabilities.set_device(device);
    capabilities.set_general_counters(Some(general));
    capabilities.set_counter_width(Some(width));
    capabilities.set_fixed_counters(if pmu == Pmu::Intel { fixed } else { 0 });
    capabilities.set_fixed_width((capabilities.fixed_counters() > 0).then_some(fixed_width));
    let mut targets = TargetSupport::NONE;
    targets.attach = true;
    targets.inherit = true;
    targets.cpu = true;
    capabilities.set_targets(targets);
    capabilities.set_multiplexing(true);
    capabilities.set_multiplex_slice(Some(rotation::DEFAULT_SLICE));
    capabilities
}

impl Backend for HwpmcBackend {
    type Group = HwpmcGroup;

    fn name(&self) -> &'static str {
        "hwpmc"
    }

    fn extensions(&self) -> counterhal_hal::Extensions<'_> {
        counterhal_hal::Extensions::none()
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// Resolves through the event database for this CPU model (EVTSEL encodings), then
    /// checks each term as [`HwpmcBackend::pmc_event`] does, keeping the counters hwpmc
    /// offers.
    fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
        let mut resolved =
            self.db
                .resolve(Some(&self.cpu_id), event, self.capabilities.accepts())?;
        for term in &mut resolved.terms {
            let pmc = self
                .pmc_event(&term.request)
                .map_err(|error| error.context(event))?;
            if let Encoding::Evtsel(evtsel) = &mut term.request.encoding {
                evtsel.counters = pmc.general;
                evtsel.fixed = pmc.fixed;
            }
        }
        Ok(resolved)
    }

    fn open(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &OpenOptions,
    ) -> Result<HwpmcGroup> {
        let plan = self.plan(target)?;
        let pmcs = events
            .iter()
            .map(|request| self.pmc_event(request))
            .collect::<Result<Vec<_>>>()?;
        let mut shared = lock(&self.shared);
        let demands: Vec<Demand<'_>> = events
            .iter()
            .zip(&pmcs)
            .map(|(request, pmc)| Demand::new(&request.name, pmc.general, pmc.fixed))
            .collect();
        let counters = Counters {
            general: self.general,
            fixed: CounterSet::first(self.fixed),
            busy_general: shared.busy_general,
            busy_fixed: shared.busy_fixed,
            holders: "other open groups of this process",
            gated: false,
        };
        let schedule = schedule_for(options, &demands, &counters)?;
        shared.busy_general |= schedule.general_mask();
        shared.busy_fixed |= schedule.fixed_mask();
        drop(shared);
        HwpmcGroup::start(
            Arc::clone(&self.shared),
            plan,
            events.iter().map(|r| r.name.clone()).collect(),
            &schedule,
            &pmcs,
            turn_length(options),
        )
    }
}

/// The database's vendor for model `id`, as the classes a model of it has.
pub(crate) fn model_config_for(db: &Database, id: &str) -> Result<ModelConfig> {
    let model = counterhal_x86::named_model(db, id)?;
    match model.encoder {
        EncoderKind::IntelArch => Ok(ModelConfig::intel()),
        EncoderKind::Amd64 => Ok(ModelConfig::amd()),
        EncoderKind::P5 | EncoderKind::P6 => Err(Error::unsupported(format!(
            "hwpmc has no class for `{id}`: V10's class list (sys/sys/pmc.h) has no P5 or P6 class, and this backend programs IAP, IAF and K8 only"
        ))),
        EncoderKind::Armv8 => Err(Error::unsupported(format!(
            "hwpmc has no class for `{id}`: an Arm core, and this backend programs IAP, IAF and K8 only"
        ))),
    }
}
