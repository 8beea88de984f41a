//! A model of OpenBSD's pctr driver, for machines without `/dev/pctr`.
//!
//! It behaves as `pctr.c` does (see the crate's README for the list of rules and which driver
//! revision each follows) and counts only what a test feeds it: "N user-mode instructions
//! retired" becomes N on every enabled counter whose function selects that event in user mode.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use counterhal_hal::DeviceKind;

use counterhal_x86::{ModelTimers, Tick, Timer, width_mask};

use crate::abi::{self, Abi, IoctlArg};
use crate::cpu::{CpuKind, function, kernel_mask_bits};
use crate::device::PctrDevice;
use crate::errno::Errno;

mod config;

pub use config::{ModelConfig, ResetPolicy, Revision};

/// The CPU a [`DriverModel`] pretends to be: the same list as [`CpuKind`].
pub type ModelCpu = CpuKind;

/// The model's TSC frequency in Hz (fixed and known, so times are exact).
pub const MODEL_TSC_HZ: u64 = 2_000_000_000;

/// How far the model's TSC advances on every ioctl, by default (the cost of the system call).
pub(crate) const MODEL_IOCTL_CYCLES: u64 = 1_000;

/// How many of the most recent `PCIOCSn` calls a model remembers.
pub const MODEL_SET_LOG: usize = 256;

/// One `PCIOCSn` the model received, and its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetRecord {
    /// The request number.
    pub request: u64,
    /// The counter it names (request number minus `PCIOCS0`'s).
    pub counter: u32,
    /// The function word.
    pub function: u32,
    /// What the driver answered.
    pub result: Result<(), Errno>,
}

#[derive(Debug)]
struct ModelState {
    config: ModelConfig,
    cpu: CpuKind,
    functions: [u32; 4],
    counters: [u64; 4],
    tsc: u64,
    idle: u64,
    ioctl_cycles: u64,
    reset_policy: ResetPolicy,
    user_rdpmc: bool,
    sets: VecDeque<SetRecord>,
    reads: u64,
    /// P5: CESR bits 9-15 of each half, which the driver preserves and reads back.
    p5_reserved: u32,
}

impl ModelState {
    /// How many counters the driver programs (see [`ModelConfig::counters`]).
    fn counters(&self) -> u32 {
        self.config.counters()
    }

    /// Counter `index`'s function as `PCIOCRD` returns it: the P6's PerfEvtSel1 reads its
    /// reserved EN bit as 0; the P5's CESR half carries the preserved bits 9-15.
    fn read_back(&self, index: usize) -> u32 {
        let stored = self.functions[index];
        match self.cpu {
            CpuKind::P6 if index > 0 => stored & !function::EN,
            CpuKind::P5 => stored | self.p5_reserved,
            _ => stored,
        }
    }

    fn hardware_mask(&self) -> u64 {
        width_mask(self.config.hardware_width)
    }

    /// What the kernel keeps of a counter it reads: `rdpmc` is masked (40 bits on i386, 56
    /// on amd64); the P5's `rdmsr` is not.
    fn kernel_mask(&self) -> u64 {
        if self.cpu.read_with_rdmsr() {
            u64::MAX
        } else {
            width_mask(kernel_mask_bits(self.config.abi, self.config.amd64))
        }
    }

    /// Whether counter `index` counts now, and its event, unit mask, user and kernel bits.
    fn selection(&self, index: usize) -> Option<(u16, u8, bool, bool)> {
        let f = self.functions[index];
        if self.cpu.p5_layout() {
            let code = (f & function::P5_EVENT_MASK) as u16;
            return Some((code, 0, f & function::P5_U != 0, f & function::P5_K != 0));
        }
        let enabled = if self.cpu.en_gated_by_counter0() {
            self.functions[0] & function::EN != 0
        } else {
            f & function::EN != 0
        };
        if !enabled {
            return None;
        }
        let code = (f & function::EVENT_MASK) as u16;
        let unit_mask = ((f >> function::UM_SHIFT) & 0xff) as u8;
        Some((code, unit_mask, f & function::U != 0, f & function::K != 0))
    }

    fn feed(&mut self, code: u16, unit_mask: Option<u8>, user: u64, kernel: u64) {
        let mask = self.hardware_mask();
        for index in 0..self.counters() as usize {
            let Some((selected, selected_mask, u, k)) = self.selection(index) else {
                continue;
            };
            let unit_matches = match unit_mask {
                None => true,
                Some(0) => selected_mask == 0,
                Some(bits) => selected_mask & bits != 0,
            };
            if selected != code || !unit_matches {
                continue;
            }
            let add = if u { user } else { 0 }.wrapping_add(if k { kernel } else { 0 });
            self.counters[index] = self.counters[index].wrapping_add(add) & mask;
        }
    }

    fn set(&mut self, request: u64, value: u32, writable: bool) -> Result<(), Errno> {
        // pctrioctl: no counters at all -> ENODEV before anything else.
        if self.counters() == 0 {
            return Err(Errno::ENODEV);
        }
        // pctrsel: the index first (EINVAL), then the descriptor's mode (EPERM), then the bits.
        let index = (request - abi::PCIOCS0) as u32;
        if index >= self.counters() {
            return Err(Errno::EINVAL);
        }
        if !writable {
            return Err(Errno::EPERM);
        }
        if value & self.cpu.refused_bits() != 0 {
            return Err(Errno::EINVAL);
        }
        let index = index as usize;
        let changed = self.functions[index] != value;
        if changed || self.reset_policy == ResetPolicy::EverySet {
            self.counters[index] = 0;
        }
        self.functions[index] = value;
        if value != 0 && self.cpu.user_rdpmc() {
            self.user_rdpmc = true;
        }
        Ok(())
    }

    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>, writable: bool) -> Result<(), Errno> {
        self.tsc = self.tsc.wrapping_add(self.ioctl_cycles);
        let abi = self.config.abi;
        let last_set = abi::PCIOCS0 + u64::from(abi.slots()) - 1;
        if request == abi.read_request() {
            // The two 64-byte ABIs share a request number: a model answers in its own layout.
            let own_layout = match &arg {
                IoctlArg::ReadTransitionalI386(_) => abi == Abi::TransitionalI386,
                IoctlArg::ReadTransitionalAmd64(_) => abi == Abi::TransitionalAmd64,
                _ => true,
            };
            if !abi::arg_matches(request, &arg) || !own_layout {
                return Err(Errno::EINVAL);
            }
            self.reads += 1;
            self.read(arg);
            Ok(())
        } else if (abi::PCIOCS0..=last_set).contains(&request) {
            let IoctlArg::Function(value) = arg else {
                return Err(Errno::EINVAL);
            };
            let result = self.set(request, value, writable);
            if self.sets.len() == MODEL_SET_LOG {
                self.sets.pop_front();
            }
            let counter = (request - abi::PCIOCS0) as u32;
            self.sets.push_back(SetRecord {
                request,
                counter,
                function: value,
                result,
            });
            result
        } else {
            Err(Errno::EINVAL)
        }
    }

    fn read(&self, arg: IoctlArg<'_>) {
        let n = self.counters() as usize;
        let kernel_mask = self.kernel_mask();
        match arg {
            IoctlArg::ReadLegacy(st) => {
                *st = abi::PctrStLegacy::default();
                st.pctr_tsc = self.tsc;
                st.pctr_idl = self.idle;
                for index in 0..n.min(2) {
                    st.pctr_fn[index] = self.read_back(index);
                    st.pctr_hwc[index] = self.counters[index] & kernel_mask;
                }
            }
            IoctlArg::ReadCurrent(st) => {
                *st = abi::PctrStCurrent::default();
                st.pctr_tsc = self.tsc;
                for index in 0..n.min(4) {
                    st.pctr_fn[index] = self.read_back(index);
                    st.pctr_hwc[index] = self.counters[index] & kernel_mask;
                }
            }
            IoctlArg::ReadTransitionalI386(st) => {
                *st = abi::PctrStTransitionalI386::default();
                st.pctr_tsc = self.tsc;
                st.pctr_idl = self.idle;
                for index in 0..n.min(4) {
                    st.pctr_fn[index] = self.read_back(index);
                    st.pctr_hwc[index] = self.counters[index] & kernel_mask;
                }
            }
            IoctlArg::ReadTransitionalAmd64(st) => {
                *st = abi::PctrStTransitionalAmd64::default();
                st.pctr_tsc = self.tsc;
                st.pctr_idl = self.idle;
                for index in 0..n.min(4) {
                    st.pctr_fn[index] = self.read_back(index);
                    st.pctr_hwc[index] = self.counters[index] & kernel_mask;
                }
            }
            IoctlArg::Function(_) => {}
        }
    }
}

/// A test's hold on a driver model: feeds it events, moves its TSC, and opens descriptors on
/// it. Clones share the same model, so a test keeps one while a backend holds another.
///
/// ```
/// use counterhal_pctr::{ModelCpu, ModelHandle};
///
/// let model = ModelHandle::new(ModelCpu::P6);
/// model.retire_instructions(1_000, 0); // counted only by counters programmed for 0xc0 with U
/// model.advance_tsc(2_000);
/// ```
#[derive(Clone, Debug)]
pub struct ModelHandle {
    state: Arc<Mutex<ModelState>>,
    timers: ModelTimers,
}

impl ModelHandle {
    /// A freshly booted machine of this kind on its usual driver ([`ModelConfig::new`]):
    /// functions 0, counters 0, TSC at one million.
    pub fn new(cpu: ModelCpu) -> ModelHandle {
        ModelHandle::with_config(ModelConfig::new(cpu))
    }

    /// A freshly booted machine as `config` says: functions 0, counters 0, TSC at one
    /// million, the driver's reset policy ([`ModelConfig::default_reset_policy`]).
    pub fn with_config(config: ModelConfig) -> ModelHandle {
        let cpu = config.cpu;
        let state = ModelState {
            config,
            cpu,
            functions: [0; 4],
            counters: [0; 4],
            tsc: 1_000_000,
            idle: 0,
            ioctl_cycles: MODEL_IOCTL_CYCLES,
            reset_policy: config.default_reset_policy(),
            // The legacy and the i386 drivers enable rdpmc at attach; the current amd64 one at
            // the first nonzero function.
            user_rdpmc: cpu.user_rdpmc() && !(config.amd64 && matches!(config.abi, Abi::Current)),
            sets: VecDeque::new(),
            reads: 0,
            p5_reserved: 0,
        };
        ModelHandle {
            state: Arc::new(Mutex::new(state)),
            timers: ModelTimers::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, ModelState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The CPU it models.
    pub fn cpu(&self) -> ModelCpu {
        self.lock().cpu
    }

    /// How it is set up: CPU, ABI, kernel, width.
    pub fn config(&self) -> ModelConfig {
        self.lock().config
    }

    /// Opens the model's device (minor 0), read-only or read-write. Opens share all state, as
    /// the driver keeps no per-open state.
    pub fn open(&self, writable: bool) -> DriverModel {
        DriverModel {
            state: Arc::clone(&self.state),
            timers: self.timers.clone(),
            writable,
        }
    }

    /// Opens minor `minor`: only 0 exists.
    ///
    /// # Errors
    /// `ENXIO` for any other minor, as `pctropen` answers.
    pub fn open_minor(&self, minor: u32, writable: bool) -> Result<DriverModel, Errno> {
        if minor != 0 {
            return Err(Errno::ENXIO);
        }
        Ok(self.open(writable))
    }

    /// Feeds events: `user` occurrences in user mode and `kernel` in kernel mode of event
    /// `code`. Every counter that is enabled and selects `code` counts the occurrences in the
    /// modes its U and K bits allow, wrapping at the hardware width.
    ///
    /// `unit_mask`: `None` matches a counter whatever its unit mask; `Some(bits)` matches a
    /// counter whose unit mask shares a bit with `bits` (`Some(0)`: only a zero unit mask).
    /// The edge, invert and counter-mask fields and P5's cycle bit are not modelled: a counter
    /// counts occurrences. The TSC does not move (see [`advance_tsc`](Self::advance_tsc)).
    pub fn feed(&self, code: u16, unit_mask: Option<u8>, user: u64, kernel: u64) {
        self.lock().feed(code, unit_mask, user, kernel);
    }

    /// Feeds retired instructions (P5: instructions executed, 0x16; others 0xc0).
    pub fn retire_instructions(&self, user: u64, kernel: u64) {
        if let Some(code) = self.cpu().instructions_event() {
            self.feed(code, None, user, kernel);
        }
    }

    /// Feeds retired branch instructions (P5: branches, 0x12; P6 and Intel 0xc4; AMD 0xc2).
    pub fn retire_branches(&self, user: u64, kernel: u64) {
        if let Some(code) = self.cpu().branches_event() {
            self.feed(code, None, user, kernel);
        }
    }

    /// Feeds unhalted core cycles (P6 0x79, Intel architectural 0x3c, AMD 0x76; nothing on
    /// the P5) and advances the TSC by `user + kernel`.
    pub fn run_cycles(&self, user: u64, kernel: u64) {
        if let Some(code) = self.cpu().cycles_event() {
            self.feed(code, None, user, kernel);
        }
        self.advance_tsc(user.saturating_add(kernel));
    }

    /// Deterministic work: `instructions` user-mode instructions in as many user-mode cycles
    /// (one per cycle), the TSC advancing with them.
    pub fn work(&self, instructions: u64) {
        self.retire_instructions(instructions, 0);
        self.run_cycles(instructions, 0);
    }

    /// Advances the TSC by `cycles`, running the timers that fall due on the way (a
    /// multiplexed set's rotation), each at its due time, in order. A timer whose due time the
    /// TSC passed inside an ioctl (each advances it, see
    /// [`set_ioctl_cycles`](Self::set_ioctl_cycles)) runs late, at the next advance.
    pub fn advance_tsc(&self, cycles: u64) {
        if self.timers.is_empty() {
            let mut state = self.lock();
            state.tsc = state.tsc.wrapping_add(cycles);
            return;
        }
        let end = self.lock().tsc.saturating_add(cycles);
        // No lock of the model is held while a tick runs: it issues ioctls.
        self.timers.run_until(end, |to| {
            let mut state = self.lock();
            state.tsc = state.tsc.max(to);
        });
    }

    /// How many timers run on the model's clock (one per open multiplexed set).
    pub fn timers(&self) -> usize {
        self.timers.len()
    }

    /// The TSC now.
    pub fn tsc(&self) -> u64 {
        self.lock().tsc
    }

    /// The TSC frequency in Hz ([`MODEL_TSC_HZ`]).
    pub fn tsc_hz(&self) -> u64 {
        MODEL_TSC_HZ
    }

    /// Sets how far the TSC advances on every ioctl (default 1,000 cycles).
    pub fn set_ioctl_cycles(&self, cycles: u64) {
        self.lock().ioctl_cycles = cycles;
    }

    /// Writes counter `index`'s hardware value (as `wrmsr` would), masked to the hardware
    /// width: for wraparound tests. Indices the CPU lacks are ignored.
    pub fn set_counter(&self, index: u32, value: u64) {
        let mut state = self.lock();
        if index < state.counters() {
            let mask = state.hardware_mask();
            state.counters[index as usize] = value & mask;
        }
    }

    /// Counter `index`'s hardware value (0 for indices the CPU lacks).
    pub fn counter(&self, index: u32) -> u64 {
        let state = self.lock();
        if index < state.counters() {
            state.counters[index as usize]
        } else {
            0
        }
    }

    /// Counter `index`'s function as programmed (0 for indices the CPU lacks).
    pub fn function(&self, index: u32) -> u32 {
        let state = self.lock();
        if index < state.counters() {
            state.functions[index as usize]
        } else {
            0
        }
    }

    /// Sets the P5's CESR bits 9-15 (of each counter's half), which the driver preserves when
    /// it sets a function and which `PCIOCRD` therefore reads back beside the function. Other
    /// bits of `bits` are ignored, as is the call on other CPUs.
    pub fn set_p5_reserved_bits(&self, bits: u32) {
        let mut state = self.lock();
        if state.cpu == CpuKind::P5 {
            state.p5_reserved = bits & 0xfe00;
        }
    }

    /// Adds `iterations` to the legacy ABI's idle-loop count.
    pub fn advance_idle(&self, iterations: u64) {
        let mut state = self.lock();
        state.idle = state.idle.wrapping_add(iterations);
    }

    /// When sets zero the counter (default: [`ModelConfig::default_reset_policy`], as the
    /// drivers do).
    pub fn set_reset_policy(&self, policy: ResetPolicy) {
        self.lock().reset_policy = policy;
    }

    /// The reset policy in force.
    pub fn reset_policy(&self) -> ResetPolicy {
        self.lock().reset_policy
    }

    /// Whether user-mode `rdpmc` would work now (CR4.PCE set).
    pub fn user_rdpmc_enabled(&self) -> bool {
        self.lock().user_rdpmc
    }

    /// The most recent `PCIOCSn` calls (at most [`MODEL_SET_LOG`]), oldest first.
    pub fn recent_sets(&self) -> Vec<SetRecord> {
        self.lock().sets.iter().copied().collect()
    }

    /// Forgets the recorded sets.
    pub fn clear_sets(&self) {
        self.lock().sets.clear();
    }

    /// How many `PCIOCRD`s the model has answered.
    pub fn reads(&self) -> u64 {
        self.lock().reads
    }
}

/// One open descriptor on a driver model: implements [`PctrDevice`] as `pctrioctl` does.
#[derive(Debug)]
pub struct DriverModel {
    state: Arc<Mutex<ModelState>>,
    timers: ModelTimers,
    writable: bool,
}

impl DriverModel {
    /// The handle of the model this descriptor is open on.
    pub fn handle(&self) -> ModelHandle {
        ModelHandle {
            state: Arc::clone(&self.state),
            timers: self.timers.clone(),
        }
    }
}

impl PctrDevice for DriverModel {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Model
    }

    fn writable(&self) -> bool {
        self.writable
    }

    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> Result<(), Errno> {
        let writable = self.writable;
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .ioctl(request, arg, writable)
    }

    /// A timer on the model's clock: `tick` runs inside [`ModelHandle::advance_tsc`] each
    /// time the TSC reaches the next multiple of `period` after now.
    fn start_timer(
        &self,
        period: std::time::Duration,
        tick: Tick,
    ) -> counterhal_hal::Result<Timer> {
        let now = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .tsc;
        Ok(self.timers.start(now, MODEL_TSC_HZ, period, tick))
    }
}
