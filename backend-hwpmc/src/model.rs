//! A model of hwpmc(4) written from its source (see [`kernel`]'s note for the functions
//! read): the version handshake, GETCPUINFO, row allocation and its EINVAL when no row is
//! free, the PMC state machine and its error numbers, the privilege checks, counts that wrap
//! at the class width, and a stop that lets the count move until the target is switched out.
//!
//! It is fed events ([`ModelHandle::run`]) as a process would cause them, on a clock of its
//! own that drives the rotation's timers.

pub(crate) mod kernel;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use counterhal_hal::{DeviceKind, Result as HalResult};
use counterhal_x86::{ModelTimers, Tick, Timer};

use crate::abi::{Version, op};
use crate::device::{HwpmcDevice, OpArg};
use crate::errno::Errno;
use kernel::Kernel;

/// The CPU vendor the model's PMCs belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelVendor {
    /// Intel (a Skylake to hwpmc): classes IAP (programmable, with Skylake's per-counter event
    /// rules) and IAF (3 fixed counters).
    Intel,
    /// AMD (family 17h): class K8, rows 0-5 the core counters, 6-15 L3 and data fabric.
    Amd,
}

/// An event the model can be fed, encoded as each vendor's CPU counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelEvent {
    /// Instructions retired: Intel 0xC0/0x00 and fixed counter 0; AMD 0xC0.
    Instructions,
    /// Core cycles: Intel 0x3C/0x00 and fixed counter 1; AMD 0x76.
    Cycles,
    /// Branches retired: Intel 0xC4/0x00; AMD 0xC2.
    Branches,
}

impl ModelEvent {
    /// The (event code, unit mask) of the event on `vendor`'s CPU.
    pub const fn code(self, vendor: ModelVendor) -> (u16, u8) {
        match (self, vendor) {
            (ModelEvent::Instructions, _) => (0xC0, 0),
            (ModelEvent::Cycles, ModelVendor::Intel) => (0x3C, 0),
            (ModelEvent::Cycles, ModelVendor::Amd) => (0x76, 0),
            (ModelEvent::Branches, ModelVendor::Intel) => (0xC4, 0),
            (ModelEvent::Branches, ModelVendor::Amd) => (0xC2, 0),
        }
    }

    /// The IAF row that counts it (Intel's fixed counters), if one does.
    pub const fn fixed_counter(self, vendor: ModelVendor) -> Option<u32> {
        match (self, vendor) {
            (ModelEvent::Instructions, ModelVendor::Intel) => Some(0),
            (ModelEvent::Cycles, ModelVendor::Intel) => Some(1),
            _ => None,
        }
    }
}

/// How the modelled machine is set up: the CPU, the module's version, the caller's
/// privileges and the `security.bsd.*` sysctls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelConfig {
    vendor: ModelVendor,
    version: Version,
    cpus: u32,
    programmable: u32,
    width: u32,
    uid: u32,
    unprivileged_syspmcs: bool,
    unprivileged_proc_debug: bool,
    jailed: bool,
    inactive_cpu: Option<u32>,
}

impl ModelConfig {
    /// An Intel machine of 4 CPUs with 4 programmable and 3 fixed 48-bit counters, hwpmc
    /// V10, an unprivileged caller, the sysctls at their defaults
    /// (`security.bsd.unprivileged_syspmcs=0`, `security.bsd.unprivileged_proc_debug=1`).
    pub const fn intel() -> ModelConfig {
        ModelConfig {
            vendor: ModelVendor::Intel,
            version: Version::V10,
            cpus: 4,
            programmable: 4,
            width: 48,
            uid: 1001,
            unprivileged_syspmcs: false,
            unprivileged_proc_debug: true,
            jailed: false,
            inactive_cpu: None,
        }
    }

    /// As [`intel`](Self::intel), an AMD machine: 16 K8 rows of 48 bits, 6 of them core
    /// counters.
    pub const fn amd() -> ModelConfig {
        ModelConfig {
            vendor: ModelVendor::Amd,
            programmable: 6,
            ..ModelConfig::intel()
        }
    }

    /// The same under module version `version` (V9's PMC ids and no `PMC_F_EV_PMU`).
    #[must_use]
    pub const fn with_version(mut self, version: Version) -> ModelConfig {
        self.version = version;
        self
    }

    /// The same with the caller root (uid 0, every privilege).
    #[must_use]
    pub const fn as_root(mut self) -> ModelConfig {
        self.uid = 0;
        self
    }

    /// The same with `security.bsd.unprivileged_syspmcs` set to `on`.
    #[must_use]
    pub const fn with_unprivileged_syspmcs(mut self, on: bool) -> ModelConfig {
        self.unprivileged_syspmcs = on;
        self
    }

    /// The same with `security.bsd.unprivileged_proc_debug` set to `on`.
    #[must_use]
    pub const fn with_unprivileged_proc_debug(mut self, on: bool) -> ModelConfig {
        self.unprivileged_proc_debug = on;
        self
    }

    /// The same with the caller in a jail.
    #[must_use]
    pub const fn in_jail(mut self) -> ModelConfig {
        self.jailed = true;
        self
    }

    /// The same with counters `width` bits wide (1-64).
    #[must_use]
    pub const fn with_width(mut self, width: u32) -> ModelConfig {
        self.width = if width == 0 || width > 64 { 48 } else { width };
        self
    }

    /// The same with CPU `cpu` inactive (offline).
    #[must_use]
    pub const fn with_inactive_cpu(mut self, cpu: u32) -> ModelConfig {
        self.inactive_cpu = Some(cpu);
        self
    }

    /// The vendor.
    pub const fn vendor(&self) -> ModelVendor {
        self.vendor
    }

    /// The module's version.
    pub const fn version(&self) -> Version {
        self.version
    }

    /// CPUs.
    pub const fn cpus(&self) -> u32 {
        self.cpus
    }

    /// Programmable counters (IAP rows; on AMD, the K8 core rows).
    pub const fn programmable(&self) -> u32 {
        self.programmable
    }

    /// Counter width in bits.
    pub const fn width(&self) -> u32 {
        self.width
    }

    /// The width's mask.
    pub const fn mask(&self) -> u64 {
        if self.width >= 64 {
            u64::MAX
        } else {
            (1 << self.width) - 1
        }
    }

    /// The caller's uid.
    pub const fn uid(&self) -> u32 {
        self.uid
    }

    /// Whether the caller is root.
    pub const fn root(&self) -> bool {
        self.uid == 0
    }

    /// `security.bsd.unprivileged_syspmcs`.
    pub const fn unprivileged_syspmcs(&self) -> bool {
        self.unprivileged_syspmcs
    }

    /// `security.bsd.unprivileged_proc_debug`.
    pub const fn unprivileged_proc_debug(&self) -> bool {
        self.unprivileged_proc_debug
    }

    /// Whether the caller is jailed.
    pub const fn jailed(&self) -> bool {
        self.jailed
    }

    /// The inactive CPU, if any.
    pub const fn inactive_cpu(&self) -> Option<u32> {
        self.inactive_cpu
    }

    /// The event database model the modelled CPU is: `skl` (Intel), `amd64_fam17h_zen2`.
    pub const fn default_model_id(&self) -> &'static str {
        match self.vendor {
            ModelVendor::Intel => "skl",
            ModelVendor::Amd => "amd64_fam17h_zen2",
        }
    }

    /// A few words for reports: `hwpmc V10.0 model, Intel (IAP x4, IAF x3, 48-bit)`.
    pub fn describe(&self) -> String {
        let counters = match self.vendor {
            ModelVendor::Intel => format!("Intel: IAP x{}, IAF x3", self.programmable),
            ModelVendor::Amd => "AMD: K8 x16, 6 core".to_string(),
        };
        format!(
            "hwpmc V{}.{} model, {counters}, {}-bit",
            self.version.major(),
            self.version.minor(),
            self.width
        )
    }
}

/// The model's state: the driver, its clock (nanoseconds) and the timers on it.
#[derive(Debug)]
struct ModelState {
    kernel: Kernel,
    now_ns: u64,
    next_pid: u32,
    calls: Vec<(u32, Result<(), Errno>)>,
}

/// A modelled machine running hwpmc(4): open [`ModelDevice`]s on it, feed it events, move
/// its clock. Clones share the machine.
#[derive(Clone, Debug)]
pub struct ModelHandle {
    state: Arc<Mutex<ModelState>>,
    timers: ModelTimers,
    config: ModelConfig,
}

impl ModelHandle {
    /// A machine set up as `config` says; the calling process is this process's id.
    pub fn new(config: ModelConfig) -> ModelHandle {
        let caller = std::process::id();
        ModelHandle {
            state: Arc::new(Mutex::new(ModelState {
                kernel: Kernel::new(config, caller),
                now_ns: 1_000,
                next_pid: caller.wrapping_add(1000),
                calls: Vec::new(),
            })),
            timers: ModelTimers::default(),
            config,
        }
    }

    fn lock(&self) -> MutexGuard<'_, ModelState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Its setup.
    pub fn config(&self) -> ModelConfig {
        self.config
    }

    /// The system-call entry as the calling process sees it.
    pub fn device(&self) -> ModelDevice {
        ModelDevice {
            handle: self.clone(),
        }
    }

    /// The calling process's id.
    pub fn caller(&self) -> u32 {
        self.lock().kernel.caller
    }

    /// A new process of user `uid` (another user's, when it differs from the caller's).
    pub fn spawn(&self, uid: u32) -> u32 {
        let mut state = self.lock();
        let pid = state.next_pid;
        state.next_pid += 1;
        state.kernel.processes.insert(
            pid,
            kernel::Process {
                uid,
                switched_in: false,
            },
        );
        pid
    }

    /// `parent` forks: a new process, which PMCs with `PMC_F_DESCENDANTS` follow.
    pub fn fork(&self, parent: u32) -> u32 {
        let mut state = self.lock();
        let child = state.next_pid;
        state.next_pid += 1;
        state.kernel.fork(parent, child);
        child
    }

    /// The calling process, on CPU 0, causes `user` user-mode and `kernel` kernel-mode
    /// `event`s.
    pub fn run(&self, event: ModelEvent, user: u64, kernel: u64) {
        let caller = self.caller();
        self.run_on(caller, 0, event, user, kernel);
    }

    /// Process `pid` on CPU `cpu` causes `user` user-mode and `kernel` kernel-mode `event`s.
    pub fn run_on(&self, pid: u32, cpu: u32, event: ModelEvent, user: u64, kernel: u64) {
        self.lock().kernel.count(pid, cpu, event, user, kernel);
    }

    /// Process `pid` leaves its CPU (a context switch out).
    pub fn switch_out(&self, pid: u32) {
        self.lock().kernel.switch_out(pid);
    }

    /// Moves the clock on by `ns` nanoseconds, the timers falling due on the way running at
    /// their due times.
    pub fn advance_ns(&self, ns: u64) {
        let end = self.now_ns().saturating_add(ns);
        self.timers.run_until(end, |t| {
            let mut state = self.lock();
            state.now_ns = state.now_ns.max(t);
        });
    }

    /// The clock, in nanoseconds.
    pub fn now_ns(&self) -> u64 {
        self.lock().now_ns
    }

    /// How many timers run on the clock.
    pub fn timers(&self) -> usize {
        self.timers.len()
    }

    /// How many PMCs are allocated.
    pub fn allocated(&self) -> usize {
        self.lock().kernel.pmcs.len()
    }

    /// The operations called so far and their results, oldest first.
    pub fn calls(&self) -> Vec<(u32, Result<(), Errno>)> {
        self.lock().calls.clone()
    }

    /// Forgets the calls so far.
    pub fn clear_calls(&self) {
        self.lock().calls.clear();
    }

    /// Sets the hardware count of every allocated PMC to `value` (cut to the width): the
    /// way a test brings counts near the wrap.
    pub fn set_counts(&self, value: u64) {
        let mut state = self.lock();
        let mask = state.kernel.config.mask();
        for pmc in state.kernel.pmcs.values_mut() {
            pmc.live = value & mask;
            pmc.saved = value & mask;
        }
    }

    fn call(&self, op_number: u32, arg: OpArg<'_>) -> Result<(), Errno> {
        let mut state = self.lock();
        let kernel = &mut state.kernel;
        let result = match (op_number, arg) {
            (op::GETMODULEVERSION, OpArg::Version(version)) => {
                kernel.module_version(*version).map(|v| *version = v)
            }
            (op::GETCPUINFO, OpArg::CpuInfo(info)) => {
                *info = kernel.cpu_info();
                Ok(())
            }
            (op::PMCALLOCATE, OpArg::Allocate(pa)) => kernel.allocate(pa),
            (op::PMCATTACH, OpArg::Attach(a)) => kernel.attach(a.pmc, a.pid),
            (op::PMCSTART, OpArg::Simple(s)) => kernel.start(s.pmcid),
            (op::PMCSTOP, OpArg::Simple(s)) => kernel.stop(s.pmcid),
            (op::PMCRELEASE, OpArg::Simple(s)) => kernel.release(s.pmcid),
            (op::PMCRW, OpArg::Rw(rw)) => kernel.rw(rw),
            // `pmc_syscall_handler`'s default, and a copyin of the wrong structure.
            _ => Err(Errno::EINVAL),
        };
        state.calls.push((op_number, result));
        result
    }
}

/// The model's system-call entry, as [`HwpmcDevice`].
#[derive(Clone, Debug)]
pub struct ModelDevice {
    handle: ModelHandle,
}

impl ModelDevice {
    /// The machine it calls into.
    pub fn handle(&self) -> &ModelHandle {
        &self.handle
    }
}

impl HwpmcDevice for ModelDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Model
    }

    fn call(&mut self, op_number: u32, arg: OpArg<'_>) -> Result<(), Errno> {
        self.handle.call(op_number, arg)
    }

    fn pid(&self) -> u32 {
        self.handle.caller()
    }

    fn now_ns(&self) -> u64 {
        self.handle.now_ns()
    }

    fn start_timer(&self, period: Duration, tick: Tick) -> HalResult<Timer> {
        Ok(self
            .handle
            .timers
            .start(self.handle.now_ns(), 1_000_000_000, period, tick))
    }
}
