//! [`PctrBackend`]: resolving names and opening groups on `/dev/pctr`.

use std::sync::{Arc, Mutex};

use counterhal_events::{Database, EncoderKind};
use counterhal_hal::{
    Accepts, Backend, BackendTarget, Capabilities, CounterSet, DeviceKind, Domain, Encoding, Error,
    ErrorKind, EventRequest, Family, OpenOptions, ResolvedEvent, Result, Scope, TargetSupport,
    check_family,
};
use counterhal_x86::{
    Counters, Demand, TscFrequency, TscSource, rotation, schedule_for, turn_length,
};

use crate::abi::Abi;
use crate::counting::Hardware;
use crate::cpu::{CpuKind, function};
use crate::device::{CounterAnswer, PctrDevice, ask_counter, identify_abi};
use crate::errno::{Operation, map_errno};
use crate::group::PctrGroup;
use crate::model::{MODEL_TSC_HZ, ModelConfig, ModelCpu, ModelHandle};
use crate::names::pctr1_p6_spelling;
use crate::shared::{Shared, lock};

/// The OpenBSD `/dev/pctr` backend, over the real device or a [`DriverModel`](crate::DriverModel).
///
/// Counting is per CPU and system wide: a group counts everything that runs on the CPU that
/// reads it, in the modes its functions select (see the crate documentation).
pub struct PctrBackend {
    capabilities: Capabilities,
    db: Arc<Database>,
    cpu_id: String,
    kind: CpuKind,
    abi: Abi,
    counters: u32,
    width: u32,
    tsc: TscFrequency,
    device_kind: DeviceKind,
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for PctrBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PctrBackend")
            .field("cpu_id", &self.cpu_id)
            .field("kind", &self.kind)
            .field("abi", &self.abi)
            .field("counters", &self.counters)
            .field("width", &self.width)
            .field("tsc", &self.tsc)
            .field("device", &self.device_kind)
            .finish_non_exhaustive()
    }
}

impl PctrBackend {
    /// A backend over a fresh [`DriverModel`](crate::DriverModel) of `cpu`, with the event
    /// database's default model id for it (`p5`, `p6`, `intel-arch`, `k8`), and the handle
    /// that feeds the model.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use counterhal_hal::{Backend, CounterSet, Domain, Encoding, EventRequest, Evtsel, Group,
    ///                      OpenOptions, BackendTarget};
    /// use counterhal_pctr::{ModelCpu, PctrBackend};
    ///
    /// let db = Arc::new(counterhal_events::Database::shipped().unwrap());
    /// let (backend, model) = PctrBackend::with_model(db, ModelCpu::P6);
    /// // INST_RETIRED (0xc0), user mode, on either counter.
    /// let mut encoding = Evtsel::new(0xc0, 0);
    /// encoding.domain = Domain::DEFAULT.with_levels(Domain::USER);
    /// encoding.counters = CounterSet::first(2);
    /// let request = EventRequest::new("INST_RETIRED:u", Encoding::Evtsel(encoding));
    /// let mut group = backend.open(&[request], &BackendTarget::ThisThread, &OpenOptions::default())?;
    /// group.enable()?;
    /// model.retire_instructions(1_000, 500); // the kernel-mode 500 are filtered out
    /// let readings = group.read_to_vec()?;
    /// assert_eq!(readings[0].value, 1_000);
    /// # Ok::<(), counterhal_hal::Error>(())
    /// ```
    pub fn with_model(db: Arc<Database>, cpu: ModelCpu) -> (PctrBackend, ModelHandle) {
        PctrBackend::with_model_as(db, cpu, cpu.default_model_id())
    }

    /// As [`with_model`](Self::with_model), resolving names against database model `cpu_id`
    /// (e.g. a modern Intel id on the [`ModelCpu::IntelArch`] model).
    pub fn with_model_as(
        db: Arc<Database>,
        cpu: ModelCpu,
        cpu_id: impl Into<String>,
    ) -> (PctrBackend, ModelHandle) {
        PctrBackend::with_model_config_as(db, ModelConfig::new(cpu), cpu_id)
    }

    /// A backend over a fresh [`DriverModel`](crate::DriverModel) set up as `config` says
    /// (e.g. a P5 under the current ABI, or a 48-bit Intel CPU under an i386 kernel), with
    /// the database's default model id for the CPU. The backend accumulates at
    /// [`ModelConfig::read_width`], the width the model's reads carry.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use counterhal_pctr::{Abi, ModelConfig, ModelCpu, PctrBackend};
    ///
    /// let db = Arc::new(counterhal_events::Database::shipped().unwrap());
    /// let config = ModelConfig::new(ModelCpu::P5).with_abi(Abi::Current)?;
    /// let (backend, _model) = PctrBackend::with_model_config(db, config);
    /// assert_eq!(backend.abi(), Abi::Current);
    /// # Ok::<(), counterhal_hal::Error>(())
    /// ```
    pub fn with_model_config(db: Arc<Database>, config: ModelConfig) -> (PctrBackend, ModelHandle) {
        PctrBackend::with_model_config_as(db, config, config.cpu().default_model_id())
    }

    /// As [`with_model_config`](Self::with_model_config), resolving names against database
    /// model `cpu_id`.
    pub fn with_model_config_as(
        db: Arc<Database>,
        config: ModelConfig,
        cpu_id: impl Into<String>,
    ) -> (PctrBackend, ModelHandle) {
        let handle = ModelHandle::with_config(config);
        let backend = PctrBackend {
            capabilities: capabilities(
                DeviceKind::Model,
                config.cpu(),
                config.counters(),
                config.read_width(),
            ),
            db,
            cpu_id: cpu_id.into(),
            kind: config.cpu(),
            abi: config.abi(),
            counters: config.counters(),
            width: config.read_width(),
            tsc: TscFrequency::new(MODEL_TSC_HZ, TscSource::Model),
            device_kind: DeviceKind::Model,
            shared: Arc::new(Mutex::new(Shared {
                device: Box::new(handle.open(true)),
                in_use: 0,
            })),
        };
        (backend, handle)
    }

    /// A backend over any device: detects its ABI (current `PCIOCRD` first, then legacy) and
    /// checks that a driver of that ABI drives `kind` ([`CpuKind::supports_abi`]: the P5
    /// and the P6 under the legacy and transitional i386 ones). Where the kind has more than
    /// two counters under a four-slot ABI (AMD), it asks the driver whether it takes
    /// `PCIOCS2` by setting counter 2 to the function it holds: the i386 driver of late 2007
    /// (`pctr.c` 1.23) answers `EINVAL`, and the backend then uses counters 0 and 1 only.
    ///
    /// `width` is the counter width the reads carry (the hardware width, cut to what the
    /// kernel keeps); `tsc` the TSC frequency; `cpu_id` the database model id (default:
    /// [`CpuKind::default_model_id`]).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for a width outside 1-64, a zero frequency, or an ABI whose
    /// driver does not drive `kind` (a P6 on the current ABI, AMD or Intel architectural on
    /// the legacy one); [`ErrorKind::Unsupported`] for a kernel of the transitional 64-byte
    /// ABI of 2007, named as such; the mapped driver error when no `PCIOCRD` answers
    /// ([`ErrorKind::DeviceMissing`] for a file that is not a pctr device).
    pub fn from_device(
        db: Arc<Database>,
        kind: CpuKind,
        cpu_id: Option<String>,
        mut device: Box<dyn PctrDevice>,
        width: u32,
        tsc: TscFrequency,
    ) -> Result<PctrBackend> {
        if !(1..=64).contains(&width) {
            return Err(Error::invalid_input(format!(
                "counter width {width} bits is not in 1-64"
            )));
        }
        if tsc.hz == 0 {
            return Err(Error::invalid_input("TSC frequency 0 Hz"));
        }
        let abi = identify_abi(device.as_mut())?;
        if !kind.supports_abi(abi) {
            return Err(Error::invalid_input(format!(
                "the device speaks the {abi} ABI, whose driver does not drive a {kind} CPU's \
                 counters (a {kind} CPU's driver speaks the {} one)",
                kind.abi()
            )));
        }
        let mut counters = kind.counters();
        if counters > 2 && abi.slots() > 2 {
            let answer = ask_counter(device.as_mut(), abi, 2).map_err(|e| {
                map_errno(
                    &Operation::Set {
                        counter: 2,
                        function: 0,
                    },
                    e,
                )
            })?;
            counters = match answer {
                CounterAnswer::Driven => counters,
                CounterAnswer::OutOfRange => 2,
                CounterAnswer::NoCounters => 0,
            };
        }
        let device_kind = device.kind();
        Ok(PctrBackend {
            capabilities: capabilities(device_kind, kind, counters, width),
            db,
            cpu_id: cpu_id.unwrap_or_else(|| kind.default_model_id().to_string()),
            kind,
            abi,
            counters,
            width,
            tsc,
            device_kind,
            shared: Arc::new(Mutex::new(Shared { device, in_use: 0 })),
        })
    }

    /// The CPU kind the backend drives.
    pub fn cpu_kind(&self) -> CpuKind {
        self.kind
    }

    /// The ABI the driver speaks.
    pub fn abi(&self) -> Abi {
        self.abi
    }

    /// How many counters the backend programs: the kind's, or fewer where the driver takes
    /// fewer sets (2 for AMD under i386 `pctr.c` 1.23).
    pub fn counters(&self) -> u32 {
        self.counters
    }

    /// The event database model id names are resolved against.
    pub fn cpu_id(&self) -> &str {
        &self.cpu_id
    }

    /// The counter width reads carry, in bits (wraparound is handled at this width).
    pub fn counter_width(&self) -> u32 {
        self.width
    }

    /// The TSC frequency and where it came from.
    pub fn tsc(&self) -> TscFrequency {
        self.tsc
    }

    /// The event database.
    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// Checks an encoding for this CPU and returns the function word the backend programs
    /// and the counters it may use: a P5 CESR field on the P5; the low 32 bits of an event
    /// select elsewhere (EN set, as the driver needs). User and kernel both when the encoding
    /// selects neither, as pctr(1) does.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] for a family this CPU's driver does not program, an event
    /// select that needs more than the 32-bit function (an AMD event code above 0xff, host or
    /// guest only) or an extra MSR; [`ErrorKind::InvalidEvent`] for AnyThread, which the
    /// driver refuses; [`ErrorKind::NoCounterAvailable`] when it may use no counter pctr
    /// programs on this CPU.
    pub fn program_word(&self, request: &EventRequest) -> Result<(u32, CounterSet)> {
        let name = &request.name;
        check_family("pctr", self.capabilities.accepts(), request)?;
        let (word, counters, fixed) = match &request.encoding {
            Encoding::P5Cesr(cesr) => (cesr.field(), cesr.counters, None),
            Encoding::Evtsel(evtsel) => {
                if evtsel.any_thread {
                    return Err(Error::invalid_event(format!(
                        "`{name}`: AnyThread is refused by the driver on {}: bits 19-21 ({:#x}: pin control, interrupt, AnyThread)",
                        self.kind,
                        function::REFUSED
                    )));
                }
                if let Some(extra) = evtsel.extra {
                    return Err(Error::unsupported(format!(
                        "`{name}` needs MSR {:#x} besides its event select, which pctr does not program",
                        extra.msr
                    )));
                }
                let value = evtsel.register_value();
                let Ok(word) = u32::try_from(value) else {
                    return Err(Error::unsupported(format!(
                        "`{name}`: event select {value:#x} needs bits above 31 (event code {:#x}, host/guest only, IN_TX, IN_TXCP or a second unit-mask byte), which pctr's 32-bit function cannot carry",
                        evtsel.code
                    )));
                };
                (word, evtsel.counters, evtsel.fixed)
            }
            // `check_family` lets only the families in `accepts` through.
            other => {
                return Err(Error::unsupported(format!(
                    "`{name}`: {} encodings are not programmed here",
                    other.family()
                )));
            }
        };
        if let (true, Some(fixed)) = (counters.is_empty(), fixed) {
            return Err(Error::unsupported(format!(
                "`{name}` counts only on fixed counter {fixed}, and pctr programs no fixed counter"
            )));
        }
        let available = CounterSet::first(self.counters);
        if counters.intersection(available).is_empty() {
            return Err(Error::new(
                ErrorKind::NoCounterAvailable,
                format!(
                    "`{name}` may use only counter(s) {counters}; pctr programs counter(s) {available} on this CPU"
                ),
            ));
        }
        let counters = counters.intersection(available);
        let (user, kernel) = self.kind.domain_bits();
        let mut word = word;
        if word & (user | kernel) == 0 {
            word |= user | kernel;
        }
        Ok((word, counters))
    }
}

impl PctrBackend {
    /// Whether names resolve against a P6 table (pctr(1)'s P6 names apply).
    fn p6_table(&self) -> bool {
        self.db
            .model(&self.cpu_id)
            .is_some_and(|model| model.encoder == EncoderKind::P6)
    }
}

/// What pctr takes and can do on a `kind` CPU with `counters` counters read at `width` bits:
/// P5 CESR fields on the P5, event selects elsewhere; user and kernel bits; software
/// multiplexing in 4 ms turns; this thread only (the counters of the CPU it runs on).
fn capabilities(device: DeviceKind, kind: CpuKind, counters: u32, width: u32) -> Capabilities {
    let families: &'static [Family] = if kind.p5_layout() {
        &[Family::P5Cesr]
    } else {
        &[Family::Evtsel]
    };
    let accepts = Accepts::new(families, Domain::USER | Domain::KERNEL, Domain::DEFAULT);
    let mut capabilities = Capabilities::new(accepts, Scope::SystemWidePerCpu);
    capabilities.set_device(device);
    capabilities.set_general_counters(Some(counters));
    capabilities.set_counter_width(Some(width));
    let mut targets = TargetSupport::NONE;
    targets.this_thread = true;
    capabilities.set_targets(targets);
    capabilities.set_self_monitoring_reads(kind.user_rdpmc());
    capabilities.set_multiplexing(true);
    capabilities.set_multiplex_slice(Some(rotation::DEFAULT_SLICE));
    capabilities
}

impl Backend for PctrBackend {
    type Group = PctrGroup;

    fn name(&self) -> &'static str {
        "pctr"
    }

    fn extensions(&self) -> counterhal_hal::Extensions<'_> {
        counterhal_hal::Extensions::none()
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// Resolves through the event database for this CPU model, then checks each term as
    /// [`PctrBackend::program_word`] does, keeping only the counters pctr programs.
    ///
    /// On a P6 table, pctr(1)'s names that the table spells otherwise (`DATA_MEM_REF` for
    /// `DATA_MEM_REFS`, and `DATA_MEM_CACHE_REF`, 0x44, which it lacks) are accepted too.
    fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
        let accepts = self.capabilities.accepts();
        let mut resolved = match self.db.resolve(Some(&self.cpu_id), event, accepts) {
            Ok(resolved) => resolved,
            Err(error) if error.kind() == ErrorKind::InvalidEvent && self.p6_table() => {
                let Some(spelled) = pctr1_p6_spelling(event) else {
                    return Err(error);
                };
                let mut resolved = self.db.resolve(Some(&self.cpu_id), &spelled, accepts)?;
                resolved.name = event.to_string();
                if let [term] = resolved.terms.as_mut_slice() {
                    term.request.name = event.to_string();
                }
                resolved
            }
            Err(error) => return Err(error),
        };
        let available = CounterSet::first(self.counters);
        for term in &mut resolved.terms {
            self.program_word(&term.request)
                .map_err(|error| error.context(event))?;
            match &mut term.request.encoding {
                Encoding::Evtsel(evtsel) => {
                    evtsel.counters = evtsel.counters.intersection(available);
                    evtsel.fixed = None;
                }
                Encoding::P5Cesr(cesr) => cesr.counters = cesr.counters.intersection(available),
                _ => {}
            }
        }
        Ok(resolved)
    }

    fn open(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &OpenOptions,
    ) -> Result<PctrGroup> {
        if !target.is_this_thread() {
            return Err(Error::unsupported(format!(
                "pctr cannot measure {target}: it counts whatever runs on the CPU that reads it"
            ))
            .with_hint("use BackendTarget::ThisThread (counts are system wide on that CPU)"));
        }
        if self.counters == 0 {
            return Err(Error::unsupported(format!(
                "this {} CPU has no counters pctr can drive",
                self.kind
            )));
        }
        let mut words = Vec::with_capacity(events.len());
        for request in events {
            words.push(self.program_word(request)?);
        }
        let mut shared = lock(&self.shared);
        if !shared.device.writable() {
            return Err(Error::new(
                ErrorKind::PermissionDenied,
                "/dev/pctr is open read-only, and counters are set with PCIOCSn, which needs write access",
            )
            .with_errno(crate::Errno::EPERM.0)
            .with_hint("run as root (the device is writable by root only)"));
        }
        let demands: Vec<Demand<'_>> = events
            .iter()
            .zip(&words)
            .map(|(request, &(_, counters))| Demand::new(&request.name, counters, None))
            .collect();
        let counters = Counters {
            busy_general: shared.in_use,
            holders: "other open groups of this backend",
            gated: self.kind.en_gated_by_counter0(),
            ..Counters::general(self.counters)
        };
        // A group must fit at once; independent events take turns when they do not.
        let schedule = schedule_for(options, &demands, &counters)?;
        shared.in_use |= schedule.general_mask();
        drop(shared);

        let words: Vec<u32> = words.iter().map(|&(word, _)| word).collect();
        PctrGroup::start(
            Arc::clone(&self.shared),
            Hardware {
                abi: self.abi,
                kind: self.kind,
                width: self.width,
                tsc: self.tsc,
            },
            events.iter().map(|r| r.name.clone()).collect(),
            &schedule,
            &words,
            turn_length(options),
        )
    }
}
