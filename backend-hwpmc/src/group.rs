//! [`HwpmcGroup`]: counting PMCs allocated, started, read, stopped and released through
//! hwpmc, taking turns on the counters when an ungrouped set does not fit them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use counterhal_hal::{CountsThrough, Result};
use counterhal_x86::{
    CounterRef, Multiplexed, Multiplexer, Rotation, Schedule, Stopped, counter_delta,
};

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

/// One event: its PMC while allocated, and where its count was last folded.
#[derive(Debug)]
struct Slot {
    event: PmcEvent,
    class: u32,
    width: u32,
    pmcid: Option<u32>,
    /// The PMC's count at the last fold.
    last: u64,
}

/// hwpmc's side of a group's multiplexer ([`Multiplexed`]): each event's PMC while its turn
/// is on, allocated and started, read with PMCRW, stopped and released; the clock is the
/// library's (hwpmc keeps no times).
pub struct Pmcs {
    shared: Arc<Mutex<Shared>>,
    plan: Plan,
    names: Vec<String>,
    slots: Vec<Slot>,
    /// The rows the group holds in any turn, given back at the release.
    general: u32,
    fixed: u32,
}

fn control(op_number: u32) -> Operation<'static> {
    Operation::Control(match op_number {
        op::PMCSTART => "PMCSTART",
        op::PMCSTOP => "PMCSTOP",
        op::PMCRELEASE => "PMCRELEASE",
        _ => "PMCRW",
    })
}

impl Pmcs {
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

    /// Reads slot `index`'s PMC and adds what it counted since the last fold to `value`.
    fn fold_one(&mut self, index: usize, value: &mut u64) -> Result<()> {
        let Some(pmcid) = self.slots[index].pmcid else {
            return Ok(());
        };
        let count = read_write(lock(&self.shared).device.as_mut(), pmcid, None)
            .map_err(|e| map_errno(&control(op::PMCRW), e))?;
        let slot = &mut self.slots[index];
        let delta = counter_delta(slot.last, count, slot.width, false);
        *value = value.wrapping_add(delta);
        slot.last = count;
        Ok(())
    }

    fn call(&self, op_number: u32, pmcid: u32) -> Result<()> {
        simple(lock(&self.shared).device.as_mut(), op_number, pmcid)
            .map_err(|e| map_errno(&control(op_number), e))
    }

    /// The ending turn's PMCs read, stopped and released; the next turn's allocated and
    /// started.
    fn switch_turn(&mut self, turns: &mut Rotation, values: &mut [u64]) -> Result<()> {
        let ending = turns.current();
        for (index, value) in values.iter_mut().enumerate() {
            if turns.turn_of(index) != Some(ending) {
                continue;
            }
            self.fold_one(index, value)?;
            if let Some(pmcid) = self.slots[index].pmcid.take() {
                self.call(op::PMCSTOP, pmcid)?;
                self.call(op::PMCRELEASE, pmcid)?;
            }
        }
        let now = self.now();
        let next = turns.switch(now);
        for index in 0..self.slots.len() {
            if turns.turn_of(index) == Some(next) {
                self.allocate(index)?;
                let pmcid = self.slots[index].pmcid.unwrap_or_default();
                self.call(op::PMCSTART, pmcid)?;
            }
        }
        Ok(())
    }
}

impl Multiplexed for Pmcs {
    /// The first turn's PMCs allocated (and attached), so that refusals show at open.
    fn open(&mut self, turns: &Rotation) -> Result<()> {
        for index in 0..self.slots.len() {
            if turns.is_active(index) {
                self.allocate(index)?;
            }
        }
        Ok(())
    }

    fn start(&mut self, turns: &Rotation) -> Result<u64> {
        for index in 0..self.slots.len() {
            if !turns.is_active(index) {
                continue;
            }
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
        Ok(self.now())
    }

    fn stop(&mut self, turns: &Rotation, values: &mut [u64]) -> Result<Stopped> {
        // Read first: a process-mode PMC read after PMCSTOP returns its saved value, which
        // lags until the target is switched out.
        for (index, value) in values.iter_mut().enumerate() {
            if !turns.is_active(index) {
                continue;
            }
            self.fold_one(index, value)?;
            if let Some(pmcid) = self.slots[index].pmcid {
                self.call(op::PMCSTOP, pmcid)?;
            }
        }
        Ok(Stopped::at(self.now()))
    }

    fn fold(&mut self, turns: &Rotation, values: &mut [u64]) -> Result<u64> {
        if turns.is_enabled() {
            for (index, value) in values.iter_mut().enumerate() {
                if turns.is_active(index) {
                    self.fold_one(index, value)?;
                }
            }
        }
        Ok(self.now())
    }

    /// Only while enabled: a disabled set keeps its turn.
    fn switch(&mut self, turns: &mut Rotation, values: &mut [u64]) -> Result<()> {
        if !turns.is_enabled() || turns.turn_count() < 2 {
            return Ok(());
        }
        self.switch_turn(turns, values)
    }

    fn reset(&mut self, turns: &Rotation) -> Result<()> {
        let enabled = turns.is_enabled();
        for slot in &mut self.slots {
            if let Some(pmcid) = slot.pmcid {
                let mut shared = lock(&self.shared);
                let device = shared.device.as_mut();
                // PMCRW writes only while the PMC is stopped (EBUSY while running).
                let value = if enabled {
                    read_write(device, pmcid, None)
                } else {
                    read_write(device, pmcid, Some(0)).map(|_| 0)
                }
                .map_err(|e| map_errno(&control(op::PMCRW), e))?;
                slot.last = value;
            }
        }
        Ok(())
    }

    /// Stops and releases every PMC, and gives the rows back.
    fn release(&mut self, _turns: &Rotation) {
        let mut shared = lock(&self.shared);
        for slot in &mut self.slots {
            if let Some(pmcid) = slot.pmcid.take() {
                let device = shared.device.as_mut();
                let _ = simple(device, op::PMCSTOP, pmcid);
                let _ = simple(device, op::PMCRELEASE, pmcid);
            }
        }
        shared.busy_general &= !self.general;
        shared.busy_fixed &= !self.fixed;
    }

    /// The library's clock counts nanoseconds.
    fn nanos(&self, ticks: u64) -> u64 {
        ticks
    }
}

/// The PMCs of one [`HwpmcBackend::open`](crate::HwpmcBackend): allocated at open (the first
/// turn's), started on enable, read with PMCRW, stopped on disable, released on drop.
///
/// A set opened ungrouped with more events than counters takes turns on them, switched by a
/// timer every [`OpenOptions::multiplex_interval`](counterhal_hal::OpenOptions::multiplex_interval)
/// ([`counterhal_x86::multiplex`], the multiplexer every software-multiplexing backend shares):
/// at each switch the ending turn's PMCs are read, stopped and released and the next turn's
/// allocated and started. hwpmc keeps no times: time enabled is the library's clock while the
/// set is enabled, time running the part of it each event held a PMC.
pub struct HwpmcGroup {
    multiplexer: Multiplexer<Pmcs>,
}

impl std::fmt::Debug for HwpmcGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = self.multiplexer.with(|pmcs, _, _| pmcs.names.clone());
        f.debug_struct("HwpmcGroup")
            .field("names", &names)
            .field("enabled", &self.multiplexer.is_enabled())
            .field("turns", &self.multiplexer.turns())
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
                }
            })
            .collect();
        let pmcs = Pmcs {
            shared: Arc::clone(&shared),
            plan,
            names,
            slots,
            general: schedule.general_mask(),
            fixed: schedule.fixed_mask(),
        };
        let multiplexer = Multiplexer::open(pmcs, schedule, |tick| {
            lock(&shared).device.start_timer(slice, tick)
        })?;
        Ok(HwpmcGroup { multiplexer })
    }

    /// The PMC id of each event while it holds one, in request order.
    pub fn pmc_ids(&self) -> Vec<Option<u32>> {
        self.multiplexer
            .with(|pmcs, _, _| pmcs.slots.iter().map(|s| s.pmcid).collect())
    }

    /// The fields of each event's PMC id while it holds one (decoded in the module's
    /// layout, V9 or V10), in request order.
    pub fn pmc_fields(&self) -> Vec<Option<PmcId>> {
        self.multiplexer.with(|pmcs, _, _| {
            let major = pmcs.plan.major;
            pmcs.slots
                .iter()
                .map(|s| s.pmcid.map(|id| PmcId::parse(id, major)))
                .collect()
        })
    }

    /// The class of each event's PMC (`PMC_CLASS_IAP`, `IAF` or `K8`), in request order.
    pub fn classes(&self) -> Vec<u32> {
        self.multiplexer
            .with(|pmcs, _, _| pmcs.slots.iter().map(|s| s.class).collect())
    }

    /// How many turns the events take (1: they all count all the time).
    pub fn turns(&self) -> usize {
        self.multiplexer.turns()
    }

    /// How many times the rotation has switched turns.
    pub fn switches(&self) -> u64 {
        self.multiplexer.switches()
    }
}

impl CountsThrough for HwpmcGroup {
    type Through = Multiplexer<Pmcs>;
    fn through(&self) -> &Multiplexer<Pmcs> {
        &self.multiplexer
    }
    fn through_mut(&mut self) -> &mut Multiplexer<Pmcs> {
        &mut self.multiplexer
    }
}
