//! The one software multiplexer: a set of events on a device's counters that, when they do not
//! fit at once, takes turns on them, switched by a timer, each event's value kept across its
//! turns and read with the set's time enabled and its own time running.
//!
//! Every backend that multiplexes in software opens its sets as a
//! [`Multiplexer`]. What does not depend on the device is here, once: which events count
//! together ([`schedule_for`], from [`rotation::schedule`](crate::rotation::schedule)), how
//! long a turn lasts ([`turn_length`]), the set's state (enabled or not, the turn on, each
//! event's value, and its times in a [`Rotation`]), the [`Group`] operations over that state
//! (enable and disable that do nothing the second time, a reset that keeps the times as perf's
//! does, reads scaled from the times), the rotation's timer (started with the set when its
//! events take turns, stopped before the device gives its counters back), and the errors of
//! the switches the timer made, returned by the next read.
//!
//! What differs per device is a [`Multiplexed`]: how it puts a turn's events on its counters,
//! starts, reads, stops, switches and resets them, gives them back, and its clock.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use counterhal_hal::{Error, Group, OpenOptions, Reading, Result, check_buffer};

use crate::assign::{Counters, Demand, assign};
use crate::rotation::{DEFAULT_SLICE, MIN_SLICE, Rotation, Schedule, schedule};
use crate::timer::{Tick, Timer};

/// Where and when the events of an open with `options` count: a group at once (it must fit
/// whole), independent events in turns where they do not fit at once.
///
/// # Errors
/// [`ErrorKind::NoCounterAvailable`](counterhal_hal::ErrorKind::NoCounterAvailable) as
/// [`assign`] (grouped) or [`schedule`] (independent) says.
pub fn schedule_for(
    options: &OpenOptions,
    demands: &[Demand<'_>],
    counters: &Counters<'_>,
) -> Result<Schedule> {
    if options.grouped {
        Ok(Schedule::at_once(assign(demands, counters)?))
    } else {
        schedule(demands, counters)
    }
}

/// The turn `options` asks for: [`DEFAULT_SLICE`] when none, never shorter than
/// [`MIN_SLICE`] (a zero interval is the shortest turn, not a busy loop).
pub fn turn_length(options: &OpenOptions) -> Duration {
    options
        .multiplex_interval
        .unwrap_or(DEFAULT_SLICE)
        .max(MIN_SLICE)
}

/// A device's side of a multiplexed set: its events on its counters.
///
/// Each method gets the set's [`Rotation`] (which turn is on, whether the set is enabled,
/// which events count now: [`Rotation::is_active`]) and, where counts are folded, `values`,
/// each event's total in request order, to which the device adds what its counters counted
/// (wrapping at the counter width, see [`counter_delta`](crate::counter_delta)). Times are in
/// ticks of the device's clock, which [`nanos`](Multiplexed::nanos) converts.
///
/// The [`Multiplexer`] calls one method at a time, under its lock, from the caller's thread
/// or the timer's.
pub trait Multiplexed: Send + 'static {
    /// Prepares a set just opened, before its timer starts: the first turn's counters
    /// programmed without counting, or allocated, as the device needs. Nothing by default (for
    /// a device whose counters are programmed at the enable).
    ///
    /// # Errors
    /// The device's; the set is then dropped, which [releases](Multiplexed::release) it.
    fn open(&mut self, turns: &Rotation) -> Result<()> {
        let _ = turns;
        Ok(())
    }

    /// Starts the events on the counters (the turn on and those that never rotate) counting
    /// on from their values, and returns the clock at the start, where the set's time enabled
    /// resumes.
    ///
    /// # Errors
    /// The device's; the set stays disabled.
    fn start(&mut self, turns: &Rotation) -> Result<u64>;

    /// Stops the events on the counters, folding what they counted into `values` (or leaving
    /// it to the next [`fold`](Multiplexed::fold)), and says when they stopped, where the
    /// set's time enabled stops.
    ///
    /// # Errors
    /// The device's, when the counters may still count: the set stays enabled.
    fn stop(&mut self, turns: &Rotation, values: &mut [u64]) -> Result<Stopped>;

    /// Folds what the events on the counters counted since the last fold into `values`, and
    /// returns the clock the reading's times are taken at (ignored while the set is disabled).
    ///
    /// # Errors
    /// The device's.
    fn fold(&mut self, turns: &Rotation, values: &mut [u64]) -> Result<u64>;

    /// Ends the turn on and puts the next one on: folds the ending turn's counts into
    /// `values`, calls [`Rotation::switch`] with the clock where the turn ends, and programs
    /// the next turn. While the set is disabled a device may move the turn without counting
    /// or leave it as it is.
    ///
    /// # Errors
    /// The device's: the timer keeps the first for the next read.
    fn switch(&mut self, turns: &mut Rotation, values: &mut [u64]) -> Result<()>;

    /// Makes the events on the counters count from zero; `values` are already zero, and
    /// the times stay.
    ///
    /// # Errors
    /// The device's.
    fn reset(&mut self, turns: &Rotation) -> Result<()>;

    /// Stops the counters and gives back whatever the set holds, best effort: called once,
    /// when the set is dropped (or its open failed), after its timer has stopped.
    fn release(&mut self, turns: &Rotation);

    /// `ticks` of the device's clock in nanoseconds.
    fn nanos(&self, ticks: u64) -> u64;

    /// The error of a switch the timer made, as the next read returns it.
    fn switch_error(&self, error: Error) -> Error {
        error.context("switching the multiplexed turns")
    }
}

/// When a set's counters stopped ([`Multiplexed::stop`]).
#[derive(Debug)]
pub struct Stopped {
    /// The clock when they stopped: the end of this stretch of time enabled.
    pub at: u64,
    /// An error that did not keep them from stopping (the last read failed, and what they
    /// counted since the previous fold is lost), returned by the disable.
    pub error: Option<Error>,
}

impl Stopped {
    /// Stopped at `at`, with nothing lost.
    pub fn at(at: u64) -> Stopped {
        Stopped { at, error: None }
    }
}

/// The state the caller's thread and the timer share.
struct Set<D> {
    device: D,
    turns: Rotation,
    values: Vec<u64>,
    /// The first error of a switch the timer made, for the next read.
    switch_error: Option<Error>,
}

fn lock<D>(set: &Mutex<Set<D>>) -> MutexGuard<'_, Set<D>> {
    set.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<D: Multiplexed> Set<D> {
    fn enable(&mut self) -> Result<()> {
        if self.turns.is_enabled() {
            return Ok(());
        }
        let at = self.device.start(&self.turns)?;
        self.turns.enable(at);
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        if !self.turns.is_enabled() {
            return Ok(());
        }
        let stopped = self.device.stop(&self.turns, &mut self.values)?;
        self.turns.disable(stopped.at);
        stopped.error.map_or(Ok(()), Err)
    }

    fn reset(&mut self) -> Result<()> {
        self.values.fill(0);
        self.device.reset(&self.turns)
    }

    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        check_buffer("readings", self.values.len(), readings.len())?;
        if let Some(error) = self.switch_error.take() {
            return Err(self.device.switch_error(error));
        }
        let now = self.device.fold(&self.turns, &mut self.values)?;
        for (index, (reading, &value)) in readings.iter_mut().zip(&self.values).enumerate() {
            let (enabled, running) = self.turns.times(index, now);
            *reading = Reading::new(
                value,
                self.device.nanos(enabled),
                self.device.nanos(running),
            );
        }
        Ok(())
    }

    /// The timer's call.
    fn switch(&mut self) {
        if let Err(error) = self.device.switch(&mut self.turns, &mut self.values) {
            self.switch_error.get_or_insert(error);
        }
    }
}

/// A set of events on a device's counters, taking turns on them when they do not fit at once
/// (see the [module](self)): a [`Group`] whose device side is `D`.
///
/// An event's value grows and its time running runs only while its turn is on (always, for
/// an event that never rotates); the set's time enabled is the same for all, and a read in the
/// middle of a turn includes the running part. Dropping the set stops its timer first, then
/// [releases](Multiplexed::release) the device's counters.
pub struct Multiplexer<D: Multiplexed> {
    set: Arc<Mutex<Set<D>>>,
    timer: Option<Timer>,
    len: usize,
}

impl<D: Multiplexed> fmt::Debug for Multiplexer<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Multiplexer")
            .field("len", &self.len)
            .field("enabled", &self.is_enabled())
            .field("turns", &self.turns())
            .finish_non_exhaustive()
    }
}

impl<D: Multiplexed> Multiplexer<D> {
    /// The set of `device`'s events scheduled as `schedule` says, disabled, on its first turn:
    /// [`Multiplexed::open`] prepared, and, when the events take turns, its timer started by
    /// `start_timer` (the device's: a thread, or a model's clock) with the switch to call.
    ///
    /// # Errors
    /// [`Multiplexed::open`]'s and `start_timer`'s; the device's counters are released then.
    pub fn open(
        device: D,
        schedule: &Schedule,
        start_timer: impl FnOnce(Tick) -> Result<Timer>,
    ) -> Result<Multiplexer<D>> {
        let len = schedule.turns.len();
        let set = Set {
            device,
            turns: Rotation::new(schedule),
            values: vec![0; len],
            switch_error: None,
        };
        // On failure the multiplexer is dropped, which releases what the device holds.
        let mut multiplexer = Multiplexer {
            set: Arc::new(Mutex::new(set)),
            timer: None,
            len,
        };
        {
            let mut set = lock(&multiplexer.set);
            let Set { device, turns, .. } = &mut *set;
            device.open(turns)?;
        }
        if schedule.rotates() {
            let weak: Weak<Mutex<Set<D>>> = Arc::downgrade(&multiplexer.set);
            let tick: Tick = Arc::new(move || {
                if let Some(set) = weak.upgrade() {
                    lock(&set).switch();
                }
            });
            multiplexer.timer = Some(start_timer(tick)?);
        }
        Ok(multiplexer)
    }

    /// Whether the set is counting.
    pub fn is_enabled(&self) -> bool {
        lock(&self.set).turns.is_enabled()
    }

    /// How many turns the events take (1: they all count all the time).
    pub fn turns(&self) -> usize {
        lock(&self.set).turns.turn_count()
    }

    /// The turn of event `index` (request order), `None` when it never rotates.
    pub fn turn_of(&self, index: usize) -> Option<usize> {
        lock(&self.set).turns.turn_of(index)
    }

    /// How many times the rotation has switched turns.
    pub fn switches(&self) -> u64 {
        lock(&self.set).turns.switches()
    }

    /// Runs `body` on the device with the set's rotation and values, under the set's lock (no
    /// switch runs meanwhile): for what a backend offers beyond a [`Group`].
    pub fn with<T>(&self, body: impl FnOnce(&mut D, &Rotation, &mut [u64]) -> T) -> T {
        let mut set = lock(&self.set);
        let Set {
            device,
            turns,
            values,
            ..
        } = &mut *set;
        body(device, turns, values)
    }
}

impl<D: Multiplexed> Group for Multiplexer<D> {
    fn len(&self) -> usize {
        self.len
    }

    fn enable(&mut self) -> Result<()> {
        lock(&self.set).enable()
    }

    fn disable(&mut self) -> Result<()> {
        lock(&self.set).disable()
    }

    fn reset(&mut self) -> Result<()> {
        lock(&self.set).reset()
    }

    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        lock(&self.set).read(readings)
    }
}

impl<D: Multiplexed> Drop for Multiplexer<D> {
    fn drop(&mut self) {
        // The timer first (a thread's joined), so that no switch runs while the counters are
        // given back.
        self.timer.take();
        let mut set = lock(&self.set);
        let Set { device, turns, .. } = &mut *set;
        device.release(turns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timer::ModelTimers;
    use counterhal_hal::{CounterSet, ErrorKind};

    /// A device of one counter whose clock and counts the test moves: each event counts
    /// `rate` per tick while on the counter.
    #[derive(Default)]
    struct Fake {
        now: Arc<Mutex<u64>>,
        /// The clock at the last fold of the counter.
        since: u64,
        calls: Arc<Mutex<Vec<&'static str>>>,
        fail_stop: Option<Option<u64>>,
        fail_switch: bool,
    }

    impl Fake {
        fn log(&self, call: &'static str) {
            self.calls.lock().unwrap().push(call);
        }

        fn now(&self) -> u64 {
            *self.now.lock().unwrap()
        }

        fn fold_active(&mut self, turns: &Rotation, values: &mut [u64]) {
            let now = self.now();
            for (index, value) in values.iter_mut().enumerate() {
                if turns.is_active(index) {
                    *value += (index as u64 + 1) * (now - self.since);
                }
            }
            self.since = now;
        }
    }

    impl Multiplexed for Fake {
        fn open(&mut self, _turns: &Rotation) -> Result<()> {
            self.log("open");
            Ok(())
        }

        fn start(&mut self, _turns: &Rotation) -> Result<u64> {
            self.log("start");
            self.since = self.now();
            Ok(self.since)
        }

        fn stop(&mut self, turns: &Rotation, values: &mut [u64]) -> Result<Stopped> {
            self.log("stop");
            match self.fail_stop {
                None => {
                    self.fold_active(turns, values);
                    Ok(Stopped::at(self.now()))
                }
                Some(None) => Err(Error::new(ErrorKind::Other, "still counting")),
                Some(Some(at)) => Ok(Stopped {
                    at,
                    error: Some(Error::new(ErrorKind::Other, "last read lost")),
                }),
            }
        }

        fn fold(&mut self, turns: &Rotation, values: &mut [u64]) -> Result<u64> {
            if turns.is_enabled() {
                self.fold_active(turns, values);
            }
            Ok(self.now())
        }

        fn switch(&mut self, turns: &mut Rotation, values: &mut [u64]) -> Result<()> {
            self.log("switch");
            if self.fail_switch {
                return Err(Error::new(ErrorKind::Other, "the device refused"));
            }
            if turns.is_enabled() {
                self.fold_active(turns, values);
            }
            turns.switch(self.now());
            Ok(())
        }

        fn reset(&mut self, _turns: &Rotation) -> Result<()> {
            self.log("reset");
            self.since = self.now();
            Ok(())
        }

        fn release(&mut self, _turns: &Rotation) {
            self.log("release");
        }

        fn nanos(&self, ticks: u64) -> u64 {
            ticks * 10
        }
    }

    /// Two events on one counter: two turns.
    fn two_turns() -> Schedule {
        let only = CounterSet::from_mask(1);
        let demands = [Demand::new("a", only, None), Demand::new("b", only, None)];
        schedule(&demands, &Counters::general(1)).unwrap()
    }

    fn open(device: Fake, timers: &ModelTimers) -> Multiplexer<Fake> {
        let now = device.now();
        Multiplexer::open(device, &two_turns(), |tick| {
            Ok(timers.start(now, 1_000, Duration::from_millis(4), tick))
        })
        .unwrap()
    }

    #[test]
    fn turns_share_the_time_enabled_and_values_follow_the_turns() {
        let timers = ModelTimers::default();
        let fake = Fake::default();
        let (clock, calls) = (Arc::clone(&fake.now), Arc::clone(&fake.calls));
        let mut set = open(fake, &timers);
        assert_eq!((set.turns(), set.turn_of(1), timers.len()), (2, Some(1), 1));
        set.enable().unwrap();
        set.enable().unwrap();
        // 10 ticks of 1 ms: switches at 4 and 8.
        timers.run_until(10, |t| *clock.lock().unwrap() = t);
        assert_eq!(set.switches(), 2);
        let readings = set.read_to_vec().unwrap();
        // a ran 0-4 and 8-10, at 1 a tick; b ran 4-8, at 2 a tick.
        assert_eq!(readings[0], Reading::new(6, 100, 60));
        assert_eq!(readings[1], Reading::new(8, 100, 40));
        set.disable().unwrap();
        set.disable().unwrap();
        *clock.lock().unwrap() = 50;
        assert_eq!(set.read_to_vec().unwrap(), readings);
        set.reset().unwrap();
        assert_eq!(set.read_to_vec().unwrap()[1], Reading::new(0, 100, 40));
        drop(set);
        assert_eq!(timers.len(), 0);
        assert_eq!(
            *calls.lock().unwrap(),
            [
                "open", "start", "switch", "switch", "stop", "reset", "release"
            ]
        );
    }

    #[test]
    fn a_switch_error_comes_back_with_the_next_read_once() {
        let timers = ModelTimers::default();
        let fake = Fake {
            fail_switch: true,
            ..Fake::default()
        };
        let clock = Arc::clone(&fake.now);
        let mut set = open(fake, &timers);
        set.enable().unwrap();
        timers.run_until(9, |t| *clock.lock().unwrap() = t);
        let error = set.read_to_vec().unwrap_err();
        assert_eq!(
            error.message(),
            "switching the multiplexed turns: the device refused"
        );
        set.read_to_vec().unwrap();
    }

    #[test]
    fn a_stop_that_fails_leaves_the_set_enabled_unless_the_counters_stopped() {
        for (fail, enabled) in [(None, true), (Some(7), false)] {
            let timers = ModelTimers::default();
            let fake = Fake {
                fail_stop: Some(fail),
                ..Fake::default()
            };
            let mut set = open(fake, &timers);
            set.enable().unwrap();
            assert!(set.disable().is_err());
            assert_eq!(set.is_enabled(), enabled);
            if !enabled {
                assert_eq!(set.read_to_vec().unwrap()[0].time_enabled, 70);
            }
        }
    }

    #[test]
    fn a_set_that_fits_has_no_timer_and_a_short_buffer_is_refused() {
        let demands = [Demand::new("a", CounterSet::first(1), None)];
        let schedule = schedule(&demands, &Counters::general(1)).unwrap();
        let mut set = Multiplexer::open(Fake::default(), &schedule, |_| {
            Err(Error::new(ErrorKind::Other, "no timer wanted"))
        })
        .unwrap();
        let error = set.read(&mut []).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn options_choose_the_schedule_and_the_turn() {
        let only = CounterSet::from_mask(1);
        let demands = [Demand::new("a", only, None), Demand::new("b", only, None)];
        let counters = Counters::general(1);
        let error = schedule_for(&OpenOptions::grouped(), &demands, &counters).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
        let ungrouped = OpenOptions::ungrouped();
        assert!(
            schedule_for(&ungrouped, &demands, &counters)
                .unwrap()
                .rotates()
        );
        assert_eq!(turn_length(&ungrouped), DEFAULT_SLICE);
        let zero = OpenOptions::ungrouped().multiplex_interval(Duration::ZERO);
        assert_eq!(turn_length(&zero), MIN_SLICE);
    }
}
