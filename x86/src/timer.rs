//! The rotation's timer: a periodic call that needs nothing from the counted thread.
//!
//! On a real device it is a thread of its own ([`Timer::thread`]) that sleeps one slice and
//! switches the turn through the device (the msr driver runs each access on the CPU the file
//! names, from whichever thread asks; pctr's ioctls reach the counters of the CPU that runs
//! them). On a model the model's clock drives it ([`ModelTimers`]), so a test decides exactly
//! when each switch happens.

use std::fmt;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use counterhal_hal::{Error, ErrorKind, Result};

/// What a timer calls at each period.
pub type Tick = Arc<dyn Fn() + Send + Sync>;

/// A periodic call, stopped (and, for a thread, joined) when dropped.
pub struct Timer {
    _guard: Box<dyn Send + Sync>,
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Timer")
    }
}

struct ThreadGuard {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for ThreadGuard {
    fn drop(&mut self) {
        // Dropping the sender wakes the thread at once; joining waits for a tick under way.
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Timer {
    /// Calls `tick` every `period` on a thread of its own, named `name`, until dropped. A
    /// thread that is not scheduled on time (a loaded machine) calls late: the turn lasts
    /// longer, and the events' times running say so.
    ///
    /// # Errors
    /// [`ErrorKind::LimitReached`] when the system refuses a new thread.
    pub fn thread(name: &str, period: Duration, tick: Tick) -> Result<Timer> {
        let (stop, wait) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(period) {
                    tick();
                }
            })
            .map_err(|error| {
                Error::new(
                    ErrorKind::LimitReached,
                    format!("no thread for the multiplexing timer: {error}"),
                )
                .with_hint("open the events grouped, or fewer than the counters")
            })?;
        Ok(Timer {
            _guard: Box::new(ThreadGuard {
                stop: Some(stop),
                thread: Some(thread),
            }),
        })
    }

    /// A timer run by someone else (a model's clock): `guard` unregisters it when dropped.
    pub fn from_guard(guard: impl Send + Sync + 'static) -> Timer {
        Timer {
            _guard: Box::new(guard),
        }
    }
}

/// Timers on a model's clock (a count of TSC ticks the model keeps): each calls its tick when
/// the clock passes its due time. Clones share the timers.
#[derive(Clone, Default)]
pub struct ModelTimers {
    inner: Arc<Mutex<Entries>>,
}

#[derive(Default)]
struct Entries {
    next_id: u64,
    entries: Vec<ModelTimer>,
}

struct ModelTimer {
    id: u64,
    period: u64,
    due: u64,
    tick: Tick,
}

/// Unregisters a model timer when its [`Timer`] is dropped.
struct ModelTimerGuard {
    timers: Weak<Mutex<Entries>>,
    id: u64,
}

impl Drop for ModelTimerGuard {
    fn drop(&mut self) {
        if let Some(timers) = self.timers.upgrade() {
            lock(&timers).entries.retain(|entry| entry.id != self.id);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl fmt::Debug for ModelTimers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} timers", lock(&self.inner).entries.len())
    }
}

impl ModelTimers {
    /// Registers `tick` every `period` of a clock at `hz` ticks per second that reads `now`:
    /// the first call falls due at `now` plus one period. Dropping the returned [`Timer`]
    /// unregisters it.
    pub fn start(&self, now: u64, hz: u64, period: Duration, tick: Tick) -> Timer {
        let ticks = u128::from(hz) * period.as_nanos() / 1_000_000_000;
        let period = u64::try_from(ticks).unwrap_or(u64::MAX).max(1);
        let mut timers = lock(&self.inner);
        timers.next_id += 1;
        let id = timers.next_id;
        timers.entries.push(ModelTimer {
            id,
            period,
            due: now.saturating_add(period),
            tick,
        });
        Timer::from_guard(ModelTimerGuard {
            timers: Arc::downgrade(&self.inner),
            id,
        })
    }

    /// Moves the model's clock to `end`, calling each timer that falls due on the way at its
    /// due time, in order: `step_to(t)` moves the clock to `t` (a model never moves it back:
    /// a due time already passed, by time the model spent elsewhere, is called late, at the
    /// clock's time). No lock of the timers is held while a tick runs.
    pub fn run_until(&self, end: u64, mut step_to: impl FnMut(u64)) {
        loop {
            let due = {
                let mut timers = lock(&self.inner);
                let next = timers
                    .entries
                    .iter_mut()
                    .filter(|entry| entry.due <= end)
                    .min_by_key(|entry| entry.due);
                next.map(|entry| {
                    let due = entry.due;
                    entry.due = entry.due.saturating_add(entry.period);
                    (due, Arc::clone(&entry.tick))
                })
            };
            let Some((due, tick)) = due else { break };
            step_to(due);
            tick();
        }
        step_to(end);
    }

    /// How many timers are registered.
    pub fn len(&self) -> usize {
        lock(&self.inner).entries.len()
    }

    /// Whether none is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn a_thread_timer_ticks_until_dropped() {
        let count = Arc::new(AtomicU64::new(0));
        let seen = Arc::clone(&count);
        let timer = Timer::thread(
            "counterhal-test-timer",
            Duration::from_millis(1),
            Arc::new(move || {
                seen.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .unwrap();
        let start = std::time::Instant::now();
        while count.load(Ordering::SeqCst) < 3 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(timer);
        let stopped = count.load(Ordering::SeqCst);
        assert!(stopped >= 3, "{stopped} ticks");
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            count.load(Ordering::SeqCst),
            stopped,
            "ticked after the drop"
        );
    }

    #[test]
    fn model_timers_tick_at_their_due_times_until_dropped() {
        let timers = ModelTimers::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let clock = Arc::new(AtomicU64::new(100));
        let (log, at) = (Arc::clone(&seen), Arc::clone(&clock));
        // 1 kHz clock: a 4 ms period is 4 ticks.
        let timer = timers.start(
            100,
            1_000,
            Duration::from_millis(4),
            Arc::new(move || lock(&log).push(at.load(Ordering::SeqCst))),
        );
        assert_eq!(timers.len(), 1);
        let step = |t: u64| {
            clock.fetch_max(t, Ordering::SeqCst);
        };
        timers.run_until(113, step);
        assert_eq!(*lock(&seen), vec![104, 108, 112]);
        assert_eq!(clock.load(Ordering::SeqCst), 113);
        drop(timer);
        assert!(timers.is_empty());
        timers.run_until(200, step);
        assert_eq!(lock(&seen).len(), 3, "ticked after the drop");
    }
}
