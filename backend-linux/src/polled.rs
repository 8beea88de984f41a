//! A sampler whose records a thread of the library delivers: the thread waits on the
//! sampler's descriptor (each wakeup: [`Wakeup`](counterhal_hal::Wakeup)) and walks the ring
//! into the caller's handler, outside any signal handler, so the handler may allocate, lock
//! and print. The other way to be told of overflows is a signal to the owning thread
//! ([`LinuxSampler::on_overflow`]).

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use counterhal_hal::{Error, ErrorKind, Record, Result, Sampler};

use crate::sampler::LinuxSampler;
use crate::sys;

/// The handler a [`PolledSampler`]'s thread hands each record to.
pub type Deliver = Box<dyn FnMut(&Record<'_>) + Send>;

/// A sampler whose records a library thread delivers as they come.
#[derive(Debug)]
pub struct PolledSampler {
    sampler: Arc<Mutex<LinuxSampler>>,
    /// Woken to end the thread.
    stop: OwnedFd,
    thread: Option<JoinHandle<Result<()>>>,
}

impl LinuxSampler {
    /// Hands this sampler to a thread that delivers its records to `deliver` as the kernel
    /// writes them (at each wakeup), and the last ones when the returned value is dropped or
    /// [`finish`](PolledSampler::finish)ed. The ring is the thread's: read it through the
    /// handler only.
    ///
    /// # Errors
    /// The errno of `eventfd`; [`ErrorKind::Other`] when the thread cannot start.
    pub fn polled(self, deliver: Deliver) -> Result<PolledSampler> {
        let stop = sys::eventfd().map_err(|errno| {
            Error::new(ErrorKind::LimitReached, "cannot make the poller's eventfd")
                .with_errno(errno)
        })?;
        let waker = stop.try_clone().map_err(|e| {
            Error::new(
                ErrorKind::LimitReached,
                format!("cannot share the eventfd: {e}"),
            )
        })?;
        let sampler = Arc::new(Mutex::new(self));
        let shared = Arc::clone(&sampler);
        let thread = std::thread::Builder::new()
            .name("counterhal-sampler".into())
            .spawn(move || deliver_until_stopped(&shared, &waker, deliver))
            .map_err(|e| {
                Error::new(
                    ErrorKind::Other,
                    format!("cannot start the sampler's thread: {e}"),
                )
            })?;
        Ok(PolledSampler {
            sampler,
            stop,
            thread: Some(thread),
        })
    }
}

fn lock(sampler: &Mutex<LinuxSampler>) -> MutexGuard<'_, LinuxSampler> {
    sampler.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The thread: each wakeup's records to `deliver`, until `stop` is woken; then the rest.
fn deliver_until_stopped(
    sampler: &Mutex<LinuxSampler>,
    stop: &OwnedFd,
    mut deliver: Deliver,
) -> Result<()> {
    let event = lock(sampler)
        .leader_fd()
        .try_clone_to_owned()
        .map_err(|e| {
            Error::new(
                ErrorKind::LimitReached,
                format!("cannot share the sampler's descriptor: {e}"),
            )
        })?;
    loop {
        let (records, stopped) = sys::wait_for(event.as_fd(), stop.as_fd()).map_err(|errno| {
            Error::new(ErrorKind::Other, "poll of the sampler").with_errno(errno)
        })?;
        if records || stopped {
            lock(sampler).walk(&mut *deliver)?;
        }
        if stopped {
            return Ok(());
        }
    }
}

impl PolledSampler {
    fn with<T>(&self, f: impl FnOnce(&mut LinuxSampler) -> Result<T>) -> Result<T> {
        f(&mut lock(&self.sampler))
    }

    /// Starts sampling.
    ///
    /// # Errors
    /// As [`Sampler::enable`].
    pub fn enable(&self) -> Result<()> {
        self.with(Sampler::enable)
    }

    /// Stops sampling; the thread still delivers what was written.
    ///
    /// # Errors
    /// As [`Sampler::disable`].
    pub fn disable(&self) -> Result<()> {
        self.with(Sampler::disable)
    }

    /// The event's count so far.
    ///
    /// # Errors
    /// As [`Sampler::count`].
    pub fn count(&self) -> Result<u64> {
        self.with(Sampler::count)
    }

    /// The samples the kernel could not write so far.
    ///
    /// # Errors
    /// As [`Sampler::lost`].
    pub fn lost(&self) -> Result<Option<u64>> {
        self.with(Sampler::lost)
    }

    /// Stops the thread after it has delivered every record written so far; its error, if a
    /// record could not be read.
    ///
    /// # Errors
    /// A torn record the thread met ([`Sampler::walk`]'s error).
    pub fn finish(mut self) -> Result<()> {
        self.stop_thread()
    }

    fn stop_thread(&mut self) -> Result<()> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        sys::wake(self.stop.as_fd());
        thread.join().unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Other,
                "the sampler's handler panicked",
            ))
        })
    }
}

impl Drop for PolledSampler {
    fn drop(&mut self) {
        let _ = self.stop_thread();
    }
}
