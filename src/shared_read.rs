//! Reads of an event set that take no lock and allocate nothing, so that they may run at
//! once on several threads and in a signal handler that interrupted a read or any other call
//! on its thread (a profiler reading its counters at each `SIGPROF`): what PAPI's `PAPI_read`
//! and the C API's `counterhal_set_read` read through.
//!
//! The owner of a set publishes it ([`SharedReads::publish`], an [`Arc`] of the set) once it
//! is started, and withdraws it ([`SharedReads::withdraw`]) before changing or dropping it;
//! [`SharedReads::read`] reads whatever is published. A read holds a reader's share of a
//! read-write lock it only ever tries (an atomic exchange, never a wait: a set being changed
//! is refused as [`SharedReadError::Busy`]) and one of [`READS_AT_ONCE`] scratch buffers,
//! sized at publication, also only tried. Its one system call is the Linux backend's
//! `read(2)` of a perf fd, which is async-signal-safe.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockWriteGuard, TryLockError};

use counterhal_hal::{EventSet, Group, Reading};

use crate::group::AnyGroup;

/// How many reads of one set may run at once, each with its own scratch: a thread and the
/// signal handlers nested on it, or several threads. One more is refused
/// ([`SharedReadError::Busy`]), never waited for.
pub const READS_AT_ONCE: usize = 8;

/// A set published for reads that take no lock and allocate nothing (see the module note).
#[derive(Debug)]
pub struct SharedReads {
    /// The thread each read in progress runs on ([`this_thread`]; 0 for none), claimed before
    /// the read looks at anything else: the read's index, of its scratch too.
    readers: [AtomicUsize; READS_AT_ONCE],
    /// Whether a set is published: withdrawing none takes nothing (a read that found none
    /// may still hold the lock, on this thread too).
    published: AtomicBool,
    state: RwLock<Published>,
}

/// What is published: the set, and each read's scratch.
#[derive(Debug)]
struct Published {
    set: Option<Arc<EventSet<AnyGroup>>>,
    scratch: Vec<Mutex<Scratch>>,
}

thread_local! {
    /// A byte whose address names this thread (no destructor, nothing to initialise).
    #[allow(clippy::missing_const_for_thread_local)]
    static MARK: u8 = const { 0 };
}

/// This thread, named by the address of its [`MARK`] without a system call (never 0).
fn this_thread() -> usize {
    MARK.with(|mark| std::ptr::from_ref(mark) as usize)
}

/// One read's room: the group's record, the native readings, the events' readings.
#[derive(Debug, Default)]
struct Scratch {
    words: Vec<u64>,
    native: Vec<Reading>,
    readings: Vec<Reading>,
}

/// Why a shared read gave no readings, told without allocating.
#[derive(Debug)]
#[non_exhaustive]
pub enum SharedReadError {
    /// No set is published: never started, withdrawn, or one these reads cannot read.
    NotPublished,
    /// The set is being changed now (started, stopped, reset), or [`READS_AT_ONCE`] reads
    /// of it run already.
    Busy,
    /// The group's read failed: the OS's errno, or the kind of the fault
    /// (`LinuxGroup::read_shared`'s errors).
    Read(std::io::Error),
}

impl Default for SharedReads {
    fn default() -> Self {
        Self::new()
    }
}

impl SharedReads {
    /// Nothing published.
    pub const fn new() -> Self {
        SharedReads {
            readers: [const { AtomicUsize::new(0) }; READS_AT_ONCE],
            published: AtomicBool::new(false),
            state: RwLock::new(Published {
                set: None,
                scratch: Vec::new(),
            }),
        }
    }

    /// Publishes `set` for shared reads, sizing each read's scratch (this allocates: call it
    /// outside signal handlers); `false`, with nothing published, for a set these reads
    /// cannot read (a group other than the Linux backend's: several targets, a boxed
    /// backend's), or when [`SharedReads::withdraw`] cannot withdraw what is published.
    pub fn publish(&self, set: &Arc<EventSet<AnyGroup>>) -> bool {
        let Some(mut published) = self.exclusive() else {
            return false;
        };
        published.set = None;
        self.published.store(false, Ordering::Release);
        let Some(words) = shared_read_words(set.group()) else {
            return false;
        };
        published.scratch.resize_with(READS_AT_ONCE, Mutex::default);
        for scratch in &mut published.scratch {
            let scratch = scratch.get_mut().unwrap_or_else(|e| e.into_inner());
            scratch.words.resize(words, 0);
            scratch.native.resize(set.native_len(), Reading::default());
            scratch
                .readings
                .resize(set.events().len(), Reading::default());
        }
        published.set = Some(Arc::clone(set));
        self.published.store(true, Ordering::Release);
        true
    }

    /// Withdraws the published set (the set's owner publishes and withdraws, one call at a
    /// time), so that reads from now on answer
    /// [`SharedReadError::NotPublished`] and the caller may change or drop its set
    /// (`Arc::get_mut` succeeds): `true`. Waits for the reads in progress on other threads
    /// (a few microseconds each). `false`, with the set still published, when this thread is
    /// inside a read of it: the caller is a signal handler that interrupted that read, which
    /// would wait for it forever.
    pub fn withdraw(&self) -> bool {
        if !self.published.load(Ordering::Acquire) {
            return true;
        }
        let Some(mut published) = self.exclusive() else {
            return false;
        };
        published.set = None;
        self.published.store(false, Ordering::Release);
        true
    }

    /// The published state to change, once the reads in progress on other threads end;
    /// `None` while one runs on this thread (see [`SharedReads::withdraw`]).
    fn exclusive(&self) -> Option<RwLockWriteGuard<'_, Published>> {
        loop {
            match self.state.try_write() {
                Ok(published) => return Some(published),
                Err(TryLockError::Poisoned(poisoned)) => return Some(poisoned.into_inner()),
                Err(TryLockError::WouldBlock) => {}
            }
            if self.read_on_this_thread() {
                return None;
            }
            std::thread::yield_now();
        }
    }

    /// Whether a read of this set runs on this thread (interrupted by the caller).
    fn read_on_this_thread(&self) -> bool {
        let here = this_thread();
        self.readers
            .iter()
            .any(|reader| reader.load(Ordering::Acquire) == here)
    }

    /// Reads the published set, then gives `with` one reading per event (as the set's
    /// `read` gives them) and returns what it returns. Takes no lock (it only tries them)
    /// and allocates nothing, on its errors too: a signal handler may call it.
    ///
    /// # Errors
    /// [`SharedReadError::NotPublished`], [`SharedReadError::Busy`], or the group's
    /// [`SharedReadError::Read`].
    pub fn read<R>(&self, with: impl FnOnce(&[Reading]) -> R) -> Result<R, SharedReadError> {
        self.with_scratch(|set, scratch| {
            let Scratch {
                words,
                native,
                readings,
            } = scratch;
            read_set(set, readings, native, words)?;
            Ok(with(readings))
        })
    }

    /// Reads the published set into `out`, one reading per event, as [`SharedReads::read`]
    /// reads (without the copy).
    ///
    /// # Errors
    /// As [`SharedReads::read`]; `out` shorter than the set's events is
    /// [`SharedReadError::Read`] of [`std::io::ErrorKind::InvalidInput`].
    #[inline]
    pub fn read_into(&self, out: &mut [Reading]) -> Result<(), SharedReadError> {
        self.with_scratch(|set, scratch| {
            read_set(set, out, &mut scratch.native, &mut scratch.words)
        })
    }

    /// Runs `f` on the published set with a scratch of this read's own: a reader's place
    /// claimed first (the thread it runs on), then the published state shared and the
    /// place's scratch taken, each only tried.
    #[inline(always)]
    fn with_scratch<R>(
        &self,
        f: impl FnOnce(&EventSet<AnyGroup>, &mut Scratch) -> Result<R, SharedReadError>,
    ) -> Result<R, SharedReadError> {
        let here = this_thread();
        let reader = self
            .readers
            .iter()
            .position(|reader| {
                let claimed =
                    reader.compare_exchange(0, here, Ordering::Acquire, Ordering::Relaxed);
                claimed.is_ok()
            })
            .ok_or(SharedReadError::Busy)?;
        let result = self.with_scratch_of(reader, f);
        self.readers[reader].store(0, Ordering::Release);
        result
    }

    /// [`SharedReads::with_scratch`] as reader `reader`, with its scratch.
    #[inline(always)]
    fn with_scratch_of<R>(
        &self,
        reader: usize,
        f: impl FnOnce(&EventSet<AnyGroup>, &mut Scratch) -> Result<R, SharedReadError>,
    ) -> Result<R, SharedReadError> {
        let published = match self.state.try_read() {
            Ok(published) => published,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(SharedReadError::Busy),
        };
        let set = published
            .set
            .as_deref()
            .ok_or(SharedReadError::NotPublished)?;
        let scratch = published.scratch.get(reader).ok_or(SharedReadError::Busy)?;
        // Reader `reader` alone takes this scratch: the try always succeeds.
        let mut scratch = match scratch.try_lock() {
            Ok(scratch) => scratch,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(SharedReadError::Busy),
        };
        f(set, &mut scratch)
    }
}

/// Reads `set` into `readings` through its group's shared read, with `native` and `words`
/// as scratch.
#[inline(always)]
fn read_set(
    set: &EventSet<AnyGroup>,
    readings: &mut [Reading],
    native: &mut [Reading],
    words: &mut [u64],
) -> Result<(), SharedReadError> {
    let short = || std::io::ErrorKind::InvalidInput.into();
    set.read_shared(readings, native, short, |group, out| {
        read_group(group, out, words)
    })
    .map_err(SharedReadError::Read)
}

/// The scratch words a shared read of `group` needs, or `None` where it cannot be read so.
fn shared_read_words(group: &AnyGroup) -> Option<usize> {
    group.shared_read().map(|shared| shared.shared_read_words())
}

/// Reads `group` through a shared reference into `readings`, with `words` as its scratch.
#[inline(always)]
fn read_group(
    group: &AnyGroup,
    readings: &mut [Reading],
    words: &mut [u64],
) -> std::io::Result<()> {
    match group.shared_read() {
        Some(shared) => shared.read_shared(readings, words),
        None => Err(std::io::ErrorKind::Unsupported.into()),
    }
}
