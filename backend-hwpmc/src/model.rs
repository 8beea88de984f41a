//! A model of hwpmc(4) written from its source (see [`kernel`]'s note for the functions
//! read): the version handshake, GETCPUINFO, row allocation and its EINVAL when no row is
//! free, the PMC state machine and its error numbers, the privilege checks, counts that wrap
//! at the class width, and a stop that lets the count move until the target is switched out.
//!
//! It is fed events ([`ModelHandle::run`]) as a process would cause them, on a clock of its
//! own that drives the rotation's timers.

mod config;
pub(crate) mod kernel;

pub use config::{ModelConfig, ModelEvent, ModelVendor};

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use counterhal_hal::{DeviceKind, Result as HalResult};
use counterhal_x86::{ModelTimers, Tick, Timer};

use crate::abi::op;
use crate::device::{HwpmcDevice, OpArg};
use crate::errno::Errno;
use kernel::Kernel;

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
                parent: None,
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
