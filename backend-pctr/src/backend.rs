//! The backend: [`PctrBackend`] resolves and opens, [`PctrGroup`] counts.

use std::sync::{Arc, Mutex, MutexGuard};

use counterhal_events::Database;
use counterhal_hal::{
    Accepts, Backend, Capabilities, CounterSet, DeviceKind, Domain, Encoding, Error, ErrorKind,
    EventRequest, Family, Group, OpenOptions, Reading, ResolvedEvent, Result, Scope, Target,
    TargetSupport, check_buffer, check_family,
};

use crate::assign::assign;
use crate::cpu::{Abi, CpuKind, function, width_mask};
use crate::device::{PctrDevice, Snapshot, detect_abi, read_snapshot, set_function};
use crate::errno::{Operation, map_errno};
use crate::model::{MODEL_TSC_HZ, ModelConfig, ModelCpu, ModelHandle};

/// The device and which of its counters open groups hold.
struct Shared {
    device: Box<dyn PctrDevice>,
    in_use: u32,
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The most events one counter can count in one TSC cycle, for telling a long forward step
/// from a step backwards (see [`PctrGroup::backward_steps`]). Retirement-width events count
/// at most 4 to 6 per cycle on the CPUs pctr drives; 8 leaves a margin.
pub const MAX_EVENTS_PER_CYCLE: u64 = 8;

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
    width: u32,
    tsc_hz: u64,
    device_kind: DeviceKind,
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for PctrBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PctrBackend")
            .field("cpu_id", &self.cpu_id)
            .field("kind", &self.kind)
            .field("abi", &self.abi)
            .field("width", &self.width)
            .field("tsc_hz", &self.tsc_hz)
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
    ///                      OpenOptions, Target};
    /// use counterhal_pctr::{ModelCpu, PctrBackend};
    ///
    /// let db = Arc::new(counterhal_events::Database::shipped().unwrap());
    /// let (backend, model) = PctrBackend::with_model(db, ModelCpu::P6);
    /// // INST_RETIRED (0xc0), user mode, on either counter.
    /// let mut encoding = Evtsel::new(0xc0, 0);
    /// encoding.domain = Domain::DEFAULT.with_levels(Domain::USER);
    /// encoding.counters = CounterSet::first(2);
    /// let request = EventRequest::new("INST_RETIRED:u", Encoding::Evtsel(encoding));
    /// let mut group = backend.open(&[request], &Target::ThisThread, &OpenOptions::default())?;
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
            capabilities: capabilities(config.cpu(), config.read_width()),
            db,
            cpu_id: cpu_id.into(),
            kind: config.cpu(),
            abi: config.abi(),
            width: config.read_width(),
            tsc_hz: MODEL_TSC_HZ,
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
    /// under either).
    ///
    /// `width` is the counter width the reads carry (the hardware width, cut to what the
    /// kernel keeps); `tsc_hz` the TSC frequency; `cpu_id` the database model id (default:
    /// [`CpuKind::default_model_id`]).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for a width outside 1-64, a zero frequency, or an ABI whose
    /// driver does not drive `kind` (a P6 on the current ABI, AMD or Intel architectural on
    /// the legacy one); the mapped driver error when neither `PCIOCRD` answers
    /// ([`ErrorKind::DeviceMissing`] for a file that is not a pctr device).
    pub fn from_device(
        db: Arc<Database>,
        kind: CpuKind,
        cpu_id: Option<String>,
        mut device: Box<dyn PctrDevice>,
        width: u32,
        tsc_hz: u64,
    ) -> Result<PctrBackend> {
        if !(1..=64).contains(&width) {
            return Err(Error::invalid_input(format!(
                "counter width {width} bits is not in 1-64"
            )));
        }
        if tsc_hz == 0 {
            return Err(Error::invalid_input("TSC frequency 0 Hz"));
        }
        let abi = detect_abi(device.as_mut()).map_err(|e| map_errno(&Operation::Read, e))?;
        if !kind.supports_abi(abi) {
            return Err(Error::invalid_input(format!(
                "the device speaks the {abi} ABI, whose driver does not drive a {kind} CPU's \
                 counters (a {kind} CPU's driver speaks the {} one)",
                kind.abi()
            )));
        }
        let device_kind = device.kind();
        Ok(PctrBackend {
            capabilities: capabilities(kind, width),
            db,
            cpu_id: cpu_id.unwrap_or_else(|| kind.default_model_id().to_string()),
            kind,
            abi,
            width,
            tsc_hz,
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

    /// The event database model id names are resolved against.
    pub fn cpu_id(&self) -> &str {
        &self.cpu_id
    }

    /// The counter width reads carry, in bits (wraparound is handled at this width).
    pub fn counter_width(&self) -> u32 {
        self.width
    }

    /// The TSC frequency times are computed with, in Hz.
    pub fn tsc_hz(&self) -> u64 {
        self.tsc_hz
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
        check_family("pctr", &self.capabilities.accepts, request)?;
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
                        "`{name}`: event select {value:#x} needs bits above 31 (event code {:#x}, or host/guest only), which pctr's 32-bit function cannot carry",
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
        let available = CounterSet::first(self.kind.counters());
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

/// What pctr takes and can do on a `kind` CPU read at `width` bits: P5 CESR fields on the P5,
/// event selects elsewhere; user and kernel bits; no multiplexing; this thread only (the
/// counters of the CPU it runs on).
fn capabilities(kind: CpuKind, width: u32) -> Capabilities {
    let families: &'static [Family] = if kind.p5_layout() {
        &[Family::P5Cesr]
    } else {
        &[Family::Evtsel]
    };
    let accepts = Accepts::new(families, Domain::USER | Domain::KERNEL, Domain::DEFAULT);
    let mut capabilities = Capabilities::new(accepts, Scope::SystemWidePerCpu);
    capabilities.general_counters = Some(kind.counters());
    capabilities.counter_width = Some(width);
    let mut targets = TargetSupport::NONE;
    targets.this_thread = true;
    capabilities.targets = targets;
    capabilities.self_monitoring_reads = kind.user_rdpmc();
    capabilities
}

impl Backend for PctrBackend {
    type Group = PctrGroup;

    fn name(&self) -> &'static str {
        "pctr"
    }

    fn device(&self) -> DeviceKind {
        self.device_kind
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// Resolves through the event database for this CPU model, then checks each term as
    /// [`PctrBackend::program_word`] does, keeping only the counters pctr programs.
    fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
        let mut resolved =
            self.db
                .resolve(Some(&self.cpu_id), event, &self.capabilities.accepts)?;
        let available = CounterSet::first(self.kind.counters());
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
        target: &Target,
        _options: &OpenOptions,
    ) -> Result<PctrGroup> {
        if !target.is_this_thread() {
            return Err(Error::unsupported(format!(
                "pctr cannot measure {target}: it counts whatever runs on the CPU that reads it"
            ))
            .with_hint("use Target::ThisThread (counts are system wide on that CPU)"));
        }
        if self.kind.counters() == 0 {
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
        let constraints: Vec<(&str, CounterSet)> = events
            .iter()
            .zip(&words)
            .map(|(request, (_, counters))| (request.name.as_str(), *counters))
            .collect();
        let placement = assign(
            &constraints,
            self.kind.counters(),
            shared.in_use,
            self.kind.en_gated_by_counter0(),
        )?;
        let owned = placement.owned();
        shared.in_use |= owned;
        drop(shared);

        let mut program: Vec<(u32, u32)> = placement
            .counters
            .iter()
            .zip(&words)
            .map(|(&counter, &(word, _))| (counter, word))
            .collect();
        if let Some(gate) = placement.gate {
            program.push((gate, function::EN));
        }
        // Counter 0 last: on the P6 its EN starts every counter at once.
        program.sort_by_key(|&(counter, _)| std::cmp::Reverse(counter));
        Ok(PctrGroup {
            shared: Arc::clone(&self.shared),
            abi: self.abi,
            names: events.iter().map(|r| r.name.clone()).collect(),
            slots: placement
                .counters
                .iter()
                .zip(&words)
                .map(|(&c, &(w, _))| (c, w))
                .collect(),
            program,
            owned,
            enabled: false,
            mask: width_mask(self.width),
            tsc_hz: self.tsc_hz,
            last_raw: [0; 4],
            last_tsc: 0,
            values: vec![0; events.len()],
            enabled_cycles: 0,
            backward_steps: 0,
        })
    }
}

/// Counters of one [`PctrBackend::open`]: programmed on enable, cleared on disable, read with
/// one `PCIOCRD`, accumulated across wraparound at the counter width.
pub struct PctrGroup {
    shared: Arc<Mutex<Shared>>,
    abi: Abi,
    names: Vec<String>,
    /// (counter, function) of each event, in request order.
    slots: Vec<(u32, u32)>,
    /// (counter, function) in programming order, the P6 gate included, counter 0 last.
    program: Vec<(u32, u32)>,
    owned: u32,
    enabled: bool,
    mask: u64,
    tsc_hz: u64,
    last_raw: [u64; 4],
    last_tsc: u64,
    values: Vec<u64>,
    enabled_cycles: u64,
    backward_steps: u64,
}

impl std::fmt::Debug for PctrGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PctrGroup")
            .field("names", &self.names)
            .field("slots", &self.slots)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl PctrGroup {
    /// Each event's counter and the function programmed for it, in request order.
    pub fn assignment(&self) -> impl Iterator<Item = (&str, u32, u32)> + '_ {
        self.names
            .iter()
            .zip(&self.slots)
            .map(|(name, &(c, f))| (name.as_str(), c, f))
    }

    /// The counters the group holds, the P6's counter-0 gate included.
    pub fn owned_counters(&self) -> CounterSet {
        CounterSet::from_mask(self.owned)
    }

    /// Whether it is counting.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// How many reads found a counter lower than the previous read by more than half its
    /// range, and further ahead than the elapsed cycles allow. That is taken as a step
    /// backwards (the read ran on another CPU, whose counter is behind) and counted as zero,
    /// not as a wrap of nearly the whole range.
    pub fn backward_steps(&self) -> u64 {
        self.backward_steps
    }

    fn read_device(&self, shared: &mut Shared) -> Result<Snapshot> {
        read_snapshot(shared.device.as_mut(), self.abi).map_err(|e| map_errno(&Operation::Read, e))
    }

    fn check_functions(&self, snapshot: &Snapshot) -> Result<()> {
        for &(counter, word) in &self.program {
            let now = snapshot.functions[counter as usize];
            if now != word {
                return Err(Error::new(
                    ErrorKind::Busy,
                    format!(
                        "counter {counter} now holds function {now:#x}, not {word:#x}: another \
                         program set it through /dev/pctr, or (on a multi-CPU machine whose \
                         kernel predates the 2024 driver, which programs only the CPU that ran \
                         the PCIOCSn) the read ran on another CPU, whose counter was never \
                         programmed"
                    ),
                )
                .with_hint(
                    "pctr has no exclusive open: stop the other user, then restart the group; \
                     on an older multi-CPU kernel, run on a one-CPU machine or VM",
                ));
            }
        }
        Ok(())
    }

    /// Adds the deltas since the previous snapshot and moves the baseline.
    ///
    /// A delta above half the counter's range is ambiguous: a long stretch of counting, or a
    /// read that ran on another CPU whose counter is behind. The TSC settles it: no event
    /// counts more than [`MAX_EVENTS_PER_CYCLE`] per cycle, so a forward step larger than that
    /// many times the cycles elapsed cannot have happened and is taken as a step backwards.
    fn accumulate(&mut self, snapshot: &Snapshot) {
        let half = self.mask / 2;
        let cycles = snapshot.tsc.wrapping_sub(self.last_tsc);
        let possible = cycles.saturating_mul(MAX_EVENTS_PER_CYCLE);
        for (value, &(counter, _)) in self.values.iter_mut().zip(&self.slots) {
            let raw = snapshot.counters[counter as usize] & self.mask;
            let mut delta = raw.wrapping_sub(self.last_raw[counter as usize]) & self.mask;
            if delta > half && delta > possible {
                self.backward_steps += 1;
                delta = 0;
            }
            *value = value.saturating_add(delta);
            self.last_raw[counter as usize] = raw;
        }
        self.enabled_cycles = self
            .enabled_cycles
            .saturating_add(snapshot.tsc.wrapping_sub(self.last_tsc));
        self.last_tsc = snapshot.tsc;
    }

    fn baseline(&mut self, snapshot: &Snapshot) {
        for &(counter, _) in &self.slots {
            self.last_raw[counter as usize] = snapshot.counters[counter as usize] & self.mask;
        }
        self.last_tsc = snapshot.tsc;
    }

    fn enabled_ns(&self) -> u64 {
        let ns = u128::from(self.enabled_cycles) * 1_000_000_000 / u128::from(self.tsc_hz);
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// Writes 0 to every counter the group holds, counter 0 first (on the P6 that stops
    /// every counter at once). Returns the first error after trying them all.
    fn clear(&self, shared: &mut Shared) -> Result<()> {
        let mut first_error = None;
        for &(counter, _) in self.program.iter().rev() {
            if let Err(errno) = set_function(shared.device.as_mut(), counter, 0) {
                let error = map_errno(
                    &Operation::Set {
                        counter,
                        function: 0,
                    },
                    errno,
                );
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Group for PctrGroup {
    fn len(&self) -> usize {
        self.slots.len()
    }

    fn enable(&mut self) -> Result<()> {
        if self.enabled {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        for &(counter, word) in &self.program {
            if let Err(errno) = set_function(shared.device.as_mut(), counter, word) {
                let error = map_errno(
                    &Operation::Set {
                        counter,
                        function: word,
                    },
                    errno,
                );
                let _ = self.clear(&mut shared);
                return Err(error);
            }
        }
        let snapshot = match self.read_device(&mut shared) {
            Ok(snapshot) => snapshot,
            Err(error) => {
                let _ = self.clear(&mut shared);
                return Err(error);
            }
        };
        self.baseline(&snapshot);
        self.enabled = true;
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        let read = self.read_device(&mut shared).and_then(|snapshot| {
            self.check_functions(&snapshot)?;
            self.accumulate(&snapshot);
            Ok(())
        });
        let cleared = self.clear(&mut shared);
        self.enabled = false;
        read.and(cleared)
    }

    fn reset(&mut self) -> Result<()> {
        self.values.iter_mut().for_each(|value| *value = 0);
        if !self.enabled {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        // Write 0, then the function: the counter is zeroed whichever driver revision runs
        // (the current one zeroes only when the function changes).
        for &(counter, word) in &self.program {
            for value in [0, word] {
                set_function(shared.device.as_mut(), counter, value).map_err(|e| {
                    map_errno(
                        &Operation::Set {
                            counter,
                            function: value,
                        },
                        e,
                    )
                })?;
            }
        }
        let snapshot = self.read_device(&mut shared)?;
        self.enabled_cycles = self
            .enabled_cycles
            .saturating_add(snapshot.tsc.wrapping_sub(self.last_tsc));
        self.baseline(&snapshot);
        Ok(())
    }

    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        check_buffer("readings", self.slots.len(), readings.len())?;
        if self.enabled {
            let shared = Arc::clone(&self.shared);
            let mut shared = lock(&shared);
            let snapshot = self.read_device(&mut shared)?;
            self.check_functions(&snapshot)?;
            self.accumulate(&snapshot);
        }
        let ns = self.enabled_ns();
        for (reading, &value) in readings.iter_mut().zip(&self.values) {
            *reading = Reading::new(value, ns, ns);
        }
        Ok(())
    }
}

impl Drop for PctrGroup {
    fn drop(&mut self) {
        let shared = Arc::clone(&self.shared);
        let mut shared = lock(&shared);
        if self.enabled {
            let _ = self.clear(&mut shared);
        }
        shared.in_use &= !self.owned;
    }
}
