//! The rotation's timer: a periodic call that needs nothing from the counted thread.
//!
//! On the real device it is a thread of its own ([`Timer::thread`]) that sleeps one slice and
//! switches the turn through `/dev/cpu/N/msr` (the msr driver runs each access on CPU N, from
//! whichever thread asks). On a model the model's clock drives it ([`Timer::from_guard`] with the
//! model's registration), so a test decides exactly when each switch happens.

use std::fmt;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
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
    /// Calls `tick` every `period` on a thread of its own until dropped. A thread that is not
    /// scheduled on time (a loaded machine) calls late: the turn lasts longer, and the events'
    /// times running say so.
    ///
    /// # Errors
    /// [`ErrorKind::LimitReached`] when the system refuses a new thread.
    pub fn thread(period: Duration, tick: Tick) -> Result<Timer> {
        let (stop, wait) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("counterhal-msr-rotation".into())
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn a_thread_timer_ticks_until_dropped() {
        let count = Arc::new(AtomicU64::new(0));
        let seen = Arc::clone(&count);
        let timer = Timer::thread(
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
}
