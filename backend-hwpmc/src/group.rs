//! [`HwpmcGroup`]: counting PMCs allocated, started, read, stopped and released through
//! hwpmc, taking turns on the counters when an ungrouped set does not fit them.

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use counterhal_hal::{Error, Group, Reading, Result};
use counterhal_x86::{CounterRef, Rotation, Schedule, Tick, Timer, counter_delta};

use crate::abi::{AMD_SUB_CLASS_CORE, PmcId, PmcOpPmcAllocate, PmcOpPmcAttach, class, mode, op};
use crate::device::{OpArg, read_write, simple};
use crate::errno::{Operation, map_errno};
use crate::event::{PmcEvent, Pmu};
use crate::shared::{Shared, lock};

/// How a group's PMCs are allocated.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub(crate) pmu: Pmu,
    pub(crate) major: u32,
    /// `PMC_MODE_TC` or `PMC_MODE_SC`.
    pub(crate) mode: u32,
    /// `PMC_CPU_ANY`, or the CPU of a system-mode PMC.
    pub(crate) cpu: u32,
    /// The process to PMCATTACH to; `None` for the caller (PMCSTART attaches it).
    pub(crate) attach: Option<u32>,
    /// `PMC_F_EV_PMU` (V10), `PMC_F_DESCENDANTS`.
    pub(crate) flags: u32,
    pub(crate) width: u32,
    pub(crate) fixed_width: u32,
}

/// One event: its PMC while allocated, and its count.
#[derive(Debug)]
struct Slot {
    event: PmcEvent,
    class: u32,
    width: u32,
    pmcid: Option<u32>,
    /// The PMC's count at the last fold.
    last: u64,
    total: u64,
}

/// The state a rotation tick and the caller share.
struct Core {
    shared: Arc<Mutex<Shared>>,
    plan: Plan,
    names: Vec<String>,
    slots: Vec<Slot>,
    rotation: Rotation,
    /// An error of a tick, given to the next call.
    deferred: Option<Error>,
}

fn control(op_number: u32) -> Operation<'static> {
    Operation::Control(match op_number {
        op::PMCSTART => "PMCSTART",
        op::PMCSTOP => "PMCSTOP",
        op::PMCRELEASE => "PMCRELEASE",
        _ => "PMCRW",
    })
}

impl Core {
    fn now(&self) -> u64 {
        lock(&self.shared).device.now_ns()
    }

    /// PMCALLOCATE (and PMCATTACH to another process) of slot `index`.
    fn allocate(&mut self, index: usize) -> Result<()> {
        let plan = self.plan;
        let slot = &self.slots[index];
        let sub_class = if plan.pmu == Pmu::Amd {
            u64::from(AMD_SUB_CLASS_CORE)
        } else {
            0
        };
        let mut pa = PmcOpPmcAllocate {
            caps: slot.event.caps,
            cpu: plan.cpu,
            class: slot.class,
            flags: plan.flags,
            mode: plan.mode,
            md: [slot.event.config, sub_class, 0, 0],
            ..PmcOpPmcAllocate::default()
        };
        let mut shared = lock(&self.shared);
        let device = shared.device.as_mut();
        let system = mode::is_system(plan.mode);
        device
            .call(op::PMCALLOCATE, OpArg::Allocate(&mut pa))
            .map_err(|e| {
                map_errno(
                    &Operation::Allocate {
                        event: &self.names[index],
                        system,
                    },
                    e,
                )
            })?;
        if let Some(pid) = plan.attach {
            let mut attach = PmcOpPmcAttach {
                pmc: pa.pmcid,
                pid: i32::try_from(pid).unwrap_or(-1),
            };
            if let Err(errno) = device.call(op::PMCATTACH, OpArg::Attach(&mut attach)) {
                let _ = simple(device, op::PMCRELEASE, pa.pmcid);
                return Err(map_errno(&Operation::Attach { pid }, errno));
            }
        }
        drop(shared);
        let slot = &mut self.slots[index];
        slot.pmcid = Some(pa.pmcid);
        slot.last = 0;
        Ok(())
    }

    /// Reads slot `index`'s PMC and adds what it counted since the last fold.
    fn fold(&mut self, index: usize) -> Result<()> {
        let Some(pmcid) = self.slots[index].pmcid else {
            return Ok(());
        };
        let value = read_write(lock(&self.shared).device.as_mut(), pmcid, None)
            .map_err(|e| map_errno(&control(op::PMCRW), e))?;
        let slot = &mut self.slots[index];
        let delta = counter_delta(slot.last, value, slot.width, false);
        slot.total = slot.total.wrapping_add(delta);
        slot.last = value;
        Ok(())
    }

    fn call(&self, op_number: u32, pmcid: u32) -> Result<()> {
        simple(lock(&self.shared).device.as_mut(), op_number, pmcid)
            .map_err(|e| map_errno(&control(op_number), e))
    }

    /// The slots of the turn on the counters (and those that never rotate).
    fn active(&self) -> Vec<usize> {
        (0..self.slots.len())
            .filter(|&i| self.rotation.is_active(i))
            .collect()
    }

    fn enable(&mut self) -> Result<()> {
        if self.rotation.is_enabled() {
            return Ok(());
        }
        for index in self.active() {
            if self.slots[index].pmcid.is_none() {
                self.allocate(index)?;
            }
            let pmcid = self.slots[index].pmcid.unwrap_or_default();
            self.call(op::PMCSTART, pmcid)?;
            // The count may have moved since the disable (a stop lets it run until the
            // target leaves its CPU): that part is not the set's. PMCSTART of a PMC on its
            // owner forces a context switch, which saves it, so a read after the start
            // includes it and becomes the new base.
            let value = read_write(lock(&self.shared).device.as_mut(), pmcid, None)
                .map_err(|e| map_errno(&control(op::PMCRW), e))?;
            self.slots[index].last = value;
        }
        let now = self.now();
        self.rotation.enable(now);
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        if !self.rotation.is_enabled() {
            return Ok(());
        }
        // Read first: a process-mode PMC read after PMCSTOP returns its saved value, which
        // lags until the target is switched out.
        for index in self.active() {
            self.fold(index)?;
            if let Some(pmcid) = self.slots[index].pmcid {
                self.call(op::PMCSTOP, pmcid)?;
            }
        }
        let now = self.now();
        self.rotation.disable(now);
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        let enabled = self.rotation.is_enabled();
        for index in 0..self.slots.len() {
            if let Some(pmcid) = self.slots[index].pmcid {
                let mut shared = lock(&self.shared);
                let device = shared.device.as_mut();
                // PMCRW writes only while the PMC is stopped (EBUSY while running).
                let value = if enabled {
                    read_write(device, pmcid, None)
                } else {
                    read_write(device, pmcid, Some(0)).map(|_| 0)
                }
                .map_err(|e| map_errno(&control(op::PMCRW), e))?;
                self.slots[index].last = value;
            }
            self.slots[index].total = 0;
        }
        Ok(())
    }

    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        if readings.len() < self.slots.len() {
            return Err(Error::invalid_input(format!(
                "{} readings for a group of {} events",
                readings.len(),
                self.slots.len()
            )));
        }
        if let Some(error) = self.deferred.take() {
            return Err(error);
        }
        if self.rotation.is_enabled() {
            for index in self.active() {
                self.fold(index)?;
            }
        }
        let now = self.now();
        for (index, (slot, reading)) in self.slots.iter().zip(readings.iter_mut()).enumerate() {
            let (enabled, running) = self.rotation.times(index, now);
            *reading = Reading::new(slot.total, enabled, running);
        }
        Ok(())
    }

    /// The rotation's timer: the ending turn's PMCs are read, stopped and released, the
    /// next turn's allocated and started.
    fn tick(&mut self) {
        if !self.rotation.is_enabled() || self.rotation.turn_count() < 2 {
            return;
        }
        if let Err(error) = self.switch_turn() {
            self.deferred.get_or_insert(error);
        }
    }

    fn switch_turn(&mut self) -> Result<()> {
        let ending: Vec<usize> = (0..self.slots.len())
            .filter(|&i| self.rotation.turn_of(i) == Some(self.rotation.current()))
            .collect();
        for &index in &ending {
            self.fold(index)?;
            if let Some(pmcid) = self.slots[index].pmcid.take() {
                self.call(op::PMCSTOP, pmcid)?;
                self.call(op::PMCRELEASE, pmcid)?;
            }
        }
        let now = self.now();
        let next = self.rotation.switch(now);
        for index in 0..self.slots.len() {
            if self.rotation.turn_of(index) == Some(next) {
                self.allocate(index)?;
                let pmcid = self.slots[index].pmcid.unwrap_or_default();
                self.call(op::PMCSTART, pmcid)?;
            }
        }
        Ok(())
    }

    /// Stops and releases every PMC, and gives the counters back.
    fn release(&mut self, general: u32, fixed: u32) {
        let mut shared = lock(&self.shared);
        for slot in &mut self.slots {
            if let Some(pmcid) = slot.pmcid.take() {
                let device = shared.device.as_mut();
                let _ = simple(device, op::PMCSTOP, pmcid);
                let _ = simple(device, op::PMCRELEASE, pmcid);
            }
        }
        shared.busy_general &= !general;
        shared.busy_fixed &= !fixed;
    }
}

fn lock_core(core: &Mutex<Core>) -> MutexGuard<'_, Core> {
    core.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The PMCs of one [`HwpmcBackend::open`](crate::HwpmcBackend): allocated at open (the first
/// turn's), started on enable, read with PMCRW, stopped on disable, released on drop.
///
/// A set opened ungrouped with more events than counters takes turns on them, switched by a
/// timer every [`OpenOptions::multiplex_interval`](counterhal_hal::OpenOptions::multiplex_interval):
/// at each switch the ending turn's PMCs are read, stopped and released and the next turn's
/// allocated and started. hwpmc keeps no times: time enabled is the library's clock while the
/// set is enabled, time running the part of it each event held a PMC.
pub struct HwpmcGroup {
    core: Arc<Mutex<Core>>,
    timer: Option<Timer>,
    general: u32,
    fixed: u32,
}

impl std::fmt::Debug for HwpmcGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let core = lock_core(&self.core);
        f.debug_struct("HwpmcGroup")
            .field("names", &core.names)
            .field("enabled", &core.rotation.is_enabled())
            .field("turns", &core.rotation.turn_count())
            .finish_non_exhaustive()
    }
}

impl HwpmcGroup {
    /// A group of `events` scheduled as `schedule` says; the first turn's PMCs allocated
    /// (and attached) now, so that refusals show at open.
    pub(crate) fn start(
        shared: Arc<Mutex<Shared>>,
        plan: Plan,
        names: Vec<String>,
        schedule: &Schedule,
        events: &[PmcEvent],
        slice: Duration,
    ) -> Result<HwpmcGroup> {
        let slots = schedule
            .counters
            .iter()
            .zip(events)
            .map(|(counter, event)| {
                let (class, width) = match (plan.pmu, counter) {
                    (Pmu::Intel, CounterRef::Fixed(_)) => (class::IAF, plan.fixed_width),
                    (Pmu::Intel, CounterRef::Gp(_)) => (class::IAP, plan.width),
                    (Pmu::Amd, _) => (class::K8, plan.width),
                };
                Slot {
                    event: *event,
                    class,
                    width,
                    pmcid: None,
                    last: 0,
                    total: 0,
                }
            })
            .collect();
        let core = Core {
            shared: Arc::clone(&shared),
            plan,
            names,
            slots,
            rotation: Rotation::new(schedule),
            deferred: None,
        };
        let mut group = HwpmcGroup {
            core: Arc::new(Mutex::new(core)),
            timer: None,
            general: schedule.general_mask(),
            fixed: schedule.fixed_mask(),
        };
        {
            let mut core = lock_core(&group.core);
            for index in core.active() {
                // On failure the group is dropped, which releases what was allocated.
                core.allocate(index)?;
            }
        }
        if schedule.rotates() {
            let weak: Weak<Mutex<Core>> = Arc::downgrade(&group.core);
            let tick: Tick = Arc::new(move || {
                if let Some(core) = weak.upgrade() {
                    lock_core(&core).tick();
                }
            });
            group.timer = Some(lock(&shared).device.start_timer(slice, tick)?);
        }
        Ok(group)
    }

    /// The PMC id of each event while it holds one, in request order.
    pub fn pmc_ids(&self) -> Vec<Option<u32>> {
        lock_core(&self.core)
            .slots
            .iter()
            .map(|s| s.pmcid)
            .collect()
    }

    /// The fields of each event's PMC id while it holds one (decoded in the module's
    /// layout, V9 or V10), in request order.
    pub fn pmc_fields(&self) -> Vec<Option<PmcId>> {
        let core = lock_core(&self.core);
        let major = core.plan.major;
        core.slots
            .iter()
            .map(|s| s.pmcid.map(|id| PmcId::parse(id, major)))
            .collect()
    }

    /// The class of each event's PMC (`PMC_CLASS_IAP`, `IAF` or `K8`), in request order.
    pub fn classes(&self) -> Vec<u32> {
        lock_core(&self.core)
            .slots
            .iter()
            .map(|s| s.class)
            .collect()
    }

    /// How many turns the events take (1: they all count all the time).
    pub fn turns(&self) -> usize {
        lock_core(&self.core).rotation.turn_count()
    }

    /// How many times the rotation has switched turns.
    pub fn switches(&self) -> u64 {
        lock_core(&self.core).rotation.switches()
    }
}

impl Group for HwpmcGroup {
    fn len(&self) -> usize {
        lock_core(&self.core).slots.len()
    }

    fn enable(&mut self) -> Result<()> {
        lock_core(&self.core).enable()
    }

    fn disable(&mut self) -> Result<()> {
        lock_core(&self.core).disable()
    }

    fn reset(&mut self) -> Result<()> {
        lock_core(&self.core).reset()
    }

    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        lock_core(&self.core).read(readings)
    }
}

impl Drop for HwpmcGroup {
    fn drop(&mut self) {
        // The timer first (a thread's joined), so that no switch runs while the PMCs go.
        self.timer.take();
        lock_core(&self.core).release(self.general, self.fixed);
    }
}
