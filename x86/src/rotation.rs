//! Software multiplexing: more independent events than counters, split into schedules that
//! fit the counters and take turns on them, with each event's time running kept as the sum of
//! its turns.
//!
//! This is the part of multiplexing that does not depend on the operating system: which events
//! count together ([`schedule`]), and the clock of the turns ([`Rotation`]). A backend keeps the
//! values (each event's total, folded with [`counter_delta`](crate::counter_delta) at every read
//! and at the end of its turn, and its counter zeroed at the start of the next) and drives the
//! turns from a timer of its own.
//!
//! Events that sit on fixed counters never rotate: they count through every turn.

use std::collections::BTreeMap;

use counterhal_hal::{Error, ErrorKind, Result};

use crate::assign::{CounterRef, Counters, Demand, Placement, assign};

/// perf's default turn (`/proc/sys/kernel/perf_event_mux_interval_ms` is 4 ms), used where the
/// caller asks for none.
pub const DEFAULT_SLICE: std::time::Duration = std::time::Duration::from_millis(4);

/// The shortest turn a backend accepts: below it, switching would cost more than counting.
pub const MIN_SLICE: std::time::Duration = std::time::Duration::from_micros(100);

/// Where each event counts and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The counter of each event, in request order. Events of different turns may share one.
    pub counters: Vec<CounterRef>,
    /// The turn of each event, in request order: `None` for an event that always counts (on a
    /// fixed counter, or every event when they all fit).
    pub turns: Vec<Option<usize>>,
    /// How many turns there are (1 when everything fits at once).
    pub turn_count: usize,
    /// Per turn, counter 0 held only as the enable gate of the others (the P6 rule).
    pub gates: Vec<Option<u32>>,
}

impl Schedule {
    /// Everything at once, as `placement` places it: one turn, every event always counting
    /// (a group, which must fit whole).
    pub fn at_once(placement: Placement) -> Schedule {
        Schedule {
            turns: vec![None; placement.counters.len()],
            counters: placement.counters,
            turn_count: 1,
            gates: vec![placement.gate],
        }
    }

    /// Whether the events take turns (more than one schedule).
    pub fn rotates(&self) -> bool {
        self.turn_count > 1
    }

    /// Whether event `index` counts during turn `turn`.
    pub fn counts_in(&self, index: usize, turn: usize) -> bool {
        match self.turns.get(index) {
            Some(Some(t)) => *t == turn,
            Some(None) => true,
            None => false,
        }
    }

    /// The general-purpose counters any turn holds (gates included).
    pub fn general_mask(&self) -> u32 {
        let gates = self.gates.iter().flatten().fold(0, |m, g| m | (1 << g));
        self.counters
            .iter()
            .fold(gates, |mask, counter| match counter {
                CounterRef::Gp(i) => mask | (1 << i),
                CounterRef::Fixed(_) => mask,
            })
    }

    /// The fixed counters the schedule holds.
    pub fn fixed_mask(&self) -> u32 {
        self.counters.iter().fold(0, |mask, counter| match counter {
            CounterRef::Fixed(i) => mask | (1 << i),
            CounterRef::Gp(_) => mask,
        })
    }
}

/// Splits `demands` into turns that each fit `counters`.
///
/// When everything fits at once, one turn with every event always counting (exactly
/// [`assign`]'s placement). Otherwise each fixed counter goes to the first event that can use
/// it (it never rotates), and the other events fill turns of general-purpose counters in
/// request order, a new turn starting when the next event does not fit beside the current
/// turn's.
///
/// # Errors
/// [`ErrorKind::NoCounterAvailable`] when an event fits no counter even alone (its allowed
/// counters are all busy), naming it.
pub fn schedule(demands: &[Demand<'_>], counters: &Counters<'_>) -> Result<Schedule> {
    match assign(demands, counters) {
        Ok(placement) => return Ok(Schedule::at_once(placement)),
        Err(error) if error.kind() != ErrorKind::NoCounterAvailable => return Err(error),
        Err(_) => {}
    }
    let mut placed: Vec<Option<CounterRef>> = vec![None; demands.len()];
    let mut turns: Vec<Option<usize>> = vec![None; demands.len()];
    let mut fixed_taken = counters.busy_fixed;
    for (index, demand) in demands.iter().enumerate() {
        if let Some(f) = demand.fixed
            && counters.fixed.contains(f)
            && fixed_taken & (1 << f) == 0
        {
            fixed_taken |= 1 << f;
            placed[index] = Some(CounterRef::Fixed(f));
        }
    }
    let general_only = |i: usize| Demand::new(demands[i].name, demands[i].general, None);
    let fits = |members: &[usize]| {
        let wanted: Vec<Demand<'_>> = members.iter().map(|&i| general_only(i)).collect();
        assign(&wanted, counters)
    };
    let pending: Vec<usize> = (0..demands.len())
        .filter(|&i| placed[i].is_none())
        .collect();
    let members = first_fit(&pending, |i| demands[i].general.mask(), &mut |m| fits(m))?;
    let mut gates = Vec::with_capacity(members.len());
    for (turn, events) in members.iter().enumerate() {
        let placement = fits(events)?;
        for (&i, counter) in events.iter().zip(placement.counters) {
            placed[i] = Some(counter);
            turns[i] = Some(turn);
        }
        gates.push(placement.gate);
    }
    let turn_count = gates.len().max(1);
    if gates.is_empty() {
        gates.push(None);
    }
    let counters = placed
        .into_iter()
        .enumerate()
        .map(|(i, counter)| {
            counter.ok_or_else(|| {
                Error::new(
                    ErrorKind::NoCounterAvailable,
                    format!("{}: no counter in any turn", demands[i].name),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Schedule {
        counters,
        turns,
        turn_count,
        gates,
    })
}

/// First fit: each of `pending` joins the first turn it fits beside (as `fits` says), or
/// starts a new one; `general` is an event's general-purpose counter mask.
///
/// Whether an event fits beside a turn's events depends only on their masks, and a turn only
/// gains events: a turn an event of some mask did not fit will never take one of that mask. So
/// each mask keeps the first turn worth trying, and the fits asked for grow with the events
/// plus the masks times the turns (linearly, for the few masks a CPU's counters allow), where
/// trying every turn from the first grew with the square of the events.
fn first_fit(
    pending: &[usize],
    general: impl Fn(usize) -> u32,
    fits: &mut dyn FnMut(&[usize]) -> Result<Placement>,
) -> Result<Vec<Vec<usize>>> {
    let mut members: Vec<Vec<usize>> = Vec::new();
    let mut first_open: BTreeMap<u32, usize> = BTreeMap::new();
    for &index in pending {
        let start = first_open.entry(general(index)).or_insert(0);
        let mut joined = false;
        for turn in &mut members[*start..] {
            turn.push(index);
            if fits(turn).is_ok() {
                joined = true;
                break;
            }
            turn.pop();
            *start += 1;
        }
        if !joined {
            // Alone it must fit: if not, assign's own message says why.
            fits(&[index])?;
            members.push(vec![index]);
        }
    }
    Ok(members)
}

/// The clock of a rotating set, in ticks of the backend's clock (the TSC): which turn is on the
/// counters, how long the set has been enabled, and how long each event has run.
///
/// Time enabled is the set's; an event's time running grows only while the set is enabled
/// and its turn is on (or always, for an event that does not rotate), so a read in the middle
/// of a turn includes the running part. Disabling stops both; a reset leaves both alone (as
/// perf's reset does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rotation {
    turns: Vec<Option<usize>>,
    turn_count: usize,
    current: usize,
    running: Vec<u64>,
    enabled: bool,
    enabled_ticks: u64,
    /// When the set was last enabled (while enabled).
    enabled_since: u64,
    /// When the current turn started counting (while enabled).
    turn_since: u64,
    switches: u64,
}

impl Rotation {
    /// A disabled set scheduled as `schedule` says, on its first turn.
    pub fn new(schedule: &Schedule) -> Rotation {
        Rotation {
            turns: schedule.turns.clone(),
            turn_count: schedule.turn_count.max(1),
            current: 0,
            running: vec![0; schedule.turns.len()],
            enabled: false,
            enabled_ticks: 0,
            enabled_since: 0,
            turn_since: 0,
            switches: 0,
        }
    }

    /// How many turns there are.
    pub fn turn_count(&self) -> usize {
        self.turn_count
    }

    /// The turn of event `index`, `None` when it never rotates (or there is no such event).
    pub fn turn_of(&self, index: usize) -> Option<usize> {
        self.turns.get(index).copied().flatten()
    }

    /// The turn on the counters.
    pub fn current(&self) -> usize {
        self.current
    }

    /// Whether the set is enabled.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// How many switches have happened.
    pub fn switches(&self) -> u64 {
        self.switches
    }

    /// Whether event `index` is on a counter now (its turn is on, or it never rotates).
    pub fn is_active(&self, index: usize) -> bool {
        match self.turns.get(index) {
            Some(Some(turn)) => *turn == self.current,
            Some(None) => true,
            None => false,
        }
    }

    /// Starts the set's clock at `now` (nothing when already enabled).
    pub fn enable(&mut self, now: u64) {
        if !self.enabled {
            self.enabled = true;
            self.enabled_since = now;
            self.turn_since = now;
        }
    }

    /// Stops the set's clock at `now`, folding the running part into every time.
    pub fn disable(&mut self, now: u64) {
        if self.enabled {
            self.fold_turn(now);
            self.enabled_ticks = self
                .enabled_ticks
                .wrapping_add(now.wrapping_sub(self.enabled_since));
            self.enabled = false;
        }
    }

    fn fold_turn(&mut self, now: u64) {
        let ran = now.wrapping_sub(self.turn_since);
        for (index, running) in self.running.iter_mut().enumerate() {
            let active = match self.turns[index] {
                Some(turn) => turn == self.current,
                None => true,
            };
            if active {
                *running = running.wrapping_add(ran);
            }
        }
        self.turn_since = now;
    }

    /// Ends the current turn at `now` and puts the next one on, returning it. The backend
    /// folds the ending turn's counters into its totals before, and programs the next turn's
    /// after.
    pub fn switch(&mut self, now: u64) -> usize {
        if self.enabled {
            self.fold_turn(now);
        }
        self.current = (self.current + 1) % self.turn_count;
        self.switches += 1;
        self.current
    }

    /// The set's time enabled and event `index`'s time running at `now`, in ticks.
    pub fn times(&self, index: usize, now: u64) -> (u64, u64) {
        let mut enabled = self.enabled_ticks;
        let mut running = self.running.get(index).copied().unwrap_or(0);
        if self.enabled {
            enabled = enabled.wrapping_add(now.wrapping_sub(self.enabled_since));
            if self.is_active(index) {
                running = running.wrapping_add(now.wrapping_sub(self.turn_since));
            }
        }
        (enabled, running)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counter::{counter_delta, width_mask};
    use counterhal_hal::CounterSet;

    fn only(counter: u32) -> CounterSet {
        CounterSet::from_mask(1 << counter)
    }

    /// A P6: 2 counters of 40 bits, counter 0's enable bit gating counter 1.
    fn p6() -> Counters<'static> {
        let mut counters = Counters::general(2);
        counters.gated = true;
        counters
    }

    #[test]
    fn everything_that_fits_does_not_rotate() {
        let demands = [
            Demand::new("a", CounterSet::first(2), None),
            Demand::new("b", CounterSet::first(2), None),
        ];
        let schedule = schedule(&demands, &p6()).unwrap();
        assert!(!schedule.rotates());
        assert_eq!(schedule.turns, vec![None, None]);
    }

    #[test]
    fn p6_constraints_split_into_turns() {
        // DATA_MEM_REFS (0x43) anywhere, then three counter-0-only and one counter-1-only.
        let demands = [
            Demand::new("FLOPS", only(0), None),
            Demand::new("FP_COMP_OPS_EXE", only(0), None),
            Demand::new("MUL", only(1), None),
            Demand::new("DATA_MEM_REFS", CounterSet::first(2), None),
            Demand::new("CYCLES_DIV_BUSY", only(0), None),
        ];
        let schedule = schedule(&demands, &p6()).unwrap();
        assert!(schedule.rotates());
        assert_eq!(schedule.turn_count, 3);
        // Each turn's events fit: two events of one turn never share a counter.
        for turn in 0..schedule.turn_count {
            let mut seen = Vec::new();
            for (i, counter) in schedule.counters.iter().enumerate() {
                if schedule.counts_in(i, turn) {
                    assert!(!seen.contains(counter), "turn {turn}: {schedule:?}");
                    seen.push(*counter);
                }
            }
        }
        assert_eq!(schedule.counters[0], CounterRef::Gp(0));
        assert_eq!(schedule.counters[2], CounterRef::Gp(1));
    }

    #[test]
    fn fixed_counters_do_not_rotate() {
        let mut counters = Counters::general(2);
        counters.fixed = CounterSet::first(3);
        let demands = [
            Demand::new("instructions", CounterSet::first(2), Some(0)),
            Demand::new("b1", CounterSet::first(2), None),
            Demand::new("b2", CounterSet::first(2), None),
            Demand::new("b3", CounterSet::first(2), None),
            Demand::new("instructions again", CounterSet::first(2), Some(0)),
        ];
        let schedule = schedule(&demands, &counters).unwrap();
        assert_eq!(schedule.counters[0], CounterRef::Fixed(0));
        assert_eq!(schedule.turns[0], None);
        assert!(schedule.turns[1..].iter().all(Option::is_some));
        assert_eq!(schedule.turn_count, 2);
        assert_eq!(schedule.fixed_mask(), 1);
        assert_eq!(schedule.general_mask(), 0b11);
    }

    #[test]
    fn an_event_that_fits_nowhere_is_no_counter_available() {
        let mut counters = Counters::general(2);
        counters.busy_general = 0b01;
        let demands = [
            Demand::new("a", CounterSet::first(2), None),
            Demand::new("b", CounterSet::first(2), None),
            Demand::new("ctr0 only", only(0), None),
        ];
        let error = schedule(&demands, &counters).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
        assert!(error.to_string().contains("ctr0 only"), "{error}");
    }

    /// Many events on a few counters (a generalized event mapped to thousands of terms):
    /// first fit tries a number of turns that grows linearly with the events, not with their
    /// square. The oracle is the count of fits each size asks for.
    #[test]
    fn splitting_many_events_into_turns_is_linear() {
        let counters = Counters::general(4);
        let masks = [0b1111u32, 0b0001, 0b0011, 0b1111];
        let tries = |n: usize| {
            let names: Vec<String> = (0..n).map(|i| format!("e{i}")).collect();
            let demands: Vec<Demand<'_>> = names
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    Demand::new(name, CounterSet::from_mask(masks[i % masks.len()]), None)
                })
                .collect();
            let pending: Vec<usize> = (0..n).collect();
            let mut calls = 0usize;
            let turns = first_fit(&pending, |i| demands[i].general.mask(), &mut |members| {
                calls += 1;
                let wanted: Vec<Demand<'_>> = members.iter().map(|&i| demands[i]).collect();
                assign(&wanted, &counters)
            })
            .unwrap();
            // The same turns as a schedule of the same demands.
            let whole = schedule(&demands, &counters).unwrap();
            assert_eq!(whole.turn_count, turns.len());
            calls
        };
        let (small, large) = (tries(500), tries(4_000));
        assert!(small <= 6 * 500, "{small} fits for 500 events");
        assert!(large <= 6 * 4_000, "{large} fits for 4,000 events");
    }

    #[test]
    fn times_fold_at_switches_and_include_the_running_part() {
        let demands = [
            Demand::new("a", only(0), None),
            Demand::new("b", only(0), None),
        ];
        let schedule = schedule(&demands, &Counters::general(1)).unwrap();
        let mut rotation = Rotation::new(&schedule);
        rotation.enable(100);
        assert_eq!(rotation.times(0, 150), (50, 50));
        assert_eq!(rotation.times(1, 150), (50, 0));
        assert_eq!(rotation.switch(200), 1);
        assert_eq!(rotation.times(0, 230), (130, 100));
        assert_eq!(rotation.times(1, 230), (130, 30));
        rotation.disable(250);
        assert_eq!(rotation.times(1, 999), (150, 50));
        // Disabled: switching moves the turn but no time.
        assert_eq!(rotation.switch(300), 0);
        assert_eq!(rotation.times(0, 999), (150, 100));
        rotation.enable(1_000);
        assert_eq!(rotation.times(0, 1_010), (160, 110));
        assert_eq!(rotation.switches(), 2);
    }

    /// A P6 simulated tick by tick: six events with steady rates on two 40-bit counters,
    /// preloaded near the wrap, switched every slice; the backend's arithmetic (fold at each
    /// read and at the end of a turn, zero at the start of the next) as a backend does it.
    #[test]
    #[allow(clippy::needless_range_loop)] // six parallel arrays, one index
    fn p6_six_events_on_two_counters_estimate_within_two_percent() {
        let names = ["0x10", "0x14", "0xc1", "0x11", "0x12", "0x13"];
        let demands: Vec<Demand<'_>> = names
            .iter()
            .enumerate()
            .map(|(i, name)| Demand::new(name, only(u32::from(i >= 3)), None))
            .collect();
        let schedule = schedule(&demands, &p6()).unwrap();
        assert_eq!(schedule.turn_count, 3);
        let rates = [3u64, 7, 11, 13, 1, 5]; // events per tick
        let width = 40;
        let slice = 4_000u64; // ticks per turn
        let mut rotation = Rotation::new(&schedule);
        let mut raw = [0u64; 2];
        let mut last = [0u64; 6];
        let mut total = [0u64; 6];
        let mut truth = [0u64; 6];
        // The counters start close to the wrap.
        raw[0] = width_mask(width) - 1_000;
        raw[1] = width_mask(width) - 5;
        for (i, counter) in schedule.counters.iter().enumerate() {
            if rotation.is_active(i)
                && let CounterRef::Gp(c) = counter
            {
                last[i] = raw[*c as usize];
            }
        }
        rotation.enable(0);
        let end = 1_000_003u64;
        for now in 1..=end {
            for i in 0..6 {
                truth[i] += rates[i];
                if rotation.is_active(i)
                    && let CounterRef::Gp(c) = schedule.counters[i]
                {
                    raw[c as usize] = (raw[c as usize] + rates[i]) & width_mask(width);
                }
            }
            if now % slice == 0 {
                for i in 0..6 {
                    if rotation.is_active(i)
                        && let CounterRef::Gp(c) = schedule.counters[i]
                    {
                        total[i] += counter_delta(last[i], raw[c as usize], width, false);
                    }
                }
                rotation.switch(now);
                for i in 0..6 {
                    if rotation.is_active(i)
                        && let CounterRef::Gp(c) = schedule.counters[i]
                    {
                        // Not zeroed: the next turn starts where the counter is.
                        last[i] = raw[c as usize];
                    }
                }
            }
        }
        let mut running_sum = 0u64;
        for i in 0..6 {
            let mut value = total[i];
            if rotation.is_active(i)
                && let CounterRef::Gp(c) = schedule.counters[i]
            {
                value += counter_delta(last[i], raw[c as usize], width, false);
            }
            let (enabled, running) = rotation.times(i, end);
            assert_eq!(enabled, end);
            assert!(running < enabled);
            running_sum += running;
            let estimate = u128::from(value) * u128::from(enabled) / u128::from(running);
            let error = (estimate as f64 - truth[i] as f64).abs() / truth[i] as f64;
            assert!(
                error < 0.02,
                "{}: {estimate} vs {} ({error})",
                names[i],
                truth[i]
            );
        }
        assert!(
            running_sum.abs_diff(2 * end) <= slice,
            "{running_sum} vs {}",
            2 * end
        );
    }
}
