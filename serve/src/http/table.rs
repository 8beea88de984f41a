//! What the connections share: the bounds, the table of open connections (to evict the one
//! waiting longest), the layer that answers, and the tally of what was answered.

use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::layer::Layer;
use super::tally::Tally;

/// The bounds on clients.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Limits {
    /// The most connections open at once.
    pub max_connections: usize,
    /// How long a client has to send its request head.
    pub header_timeout: Duration,
    /// How long a client has to take its answer, from the moment it is rendered.
    pub write_timeout: Duration,
}

impl Limits {
    /// At most `max_connections` at once, each given `header_timeout` to send its request
    /// head and `write_timeout` to take each answer once it is rendered.
    pub fn new(
        max_connections: usize,
        header_timeout: Duration,
        write_timeout: Duration,
    ) -> Limits {
        Limits {
            max_connections,
            header_timeout,
            write_timeout,
        }
    }
}

/// A connection in the table.
pub struct Slot {
    /// Its id, given in order of arrival.
    pub id: u64,
    /// The same socket, to close it from the accepting thread.
    pub stream: TcpStream,
    /// When it was accepted.
    pub since: Instant,
    /// Whether its request has arrived (it is being answered: never evicted).
    pub answering: bool,
    /// Whether a byte of its request has been read (a drain finishes it).
    pub begun: bool,
}

/// The open connections.
pub struct Table {
    slots: Mutex<Vec<Slot>>,
    /// Told each time a connection leaves the table.
    freed: Condvar,
    next: AtomicU64,
}

impl Table {
    /// An empty table.
    pub fn new() -> Table {
        Table {
            slots: Mutex::new(Vec::new()),
            freed: Condvar::new(),
            next: AtomicU64::new(0),
        }
    }

    /// A new connection's id.
    pub fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Relaxed)
    }

    /// The slots, locked.
    pub fn lock(&self) -> MutexGuard<'_, Vec<Slot>> {
        self.slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Marks connection `id` as being answered.
    pub fn answering(&self, id: u64) {
        if let Some(slot) = self.lock().iter_mut().find(|slot| slot.id == id) {
            slot.answering = true;
        }
    }

    /// Marks connection `id` as begun: a byte of its request has been read.
    pub fn begun(&self, id: u64) {
        if let Some(slot) = self.lock().iter_mut().find(|slot| slot.id == id) {
            slot.begun = true;
        }
    }

    /// Marks connection `id`, answered and kept by its client, as waiting for its next
    /// request: idle again from now (evicted as any idle one is, closed by a drain).
    pub fn idle_again(&self, id: u64) {
        if let Some(slot) = self.lock().iter_mut().find(|slot| slot.id == id) {
            slot.answering = false;
            slot.begun = false;
            slot.since = Instant::now();
        }
    }

    /// Takes connection `id` out of the table.
    pub fn remove(&self, id: u64) {
        self.lock().retain(|slot| slot.id != id);
        self.freed.notify_all();
    }

    /// Waits at most `until` for a connection to leave the table (`slots`, locked), and gives
    /// the lock back.
    pub fn wait_freed<'a>(
        &self,
        slots: MutexGuard<'a, Vec<Slot>>,
        until: Instant,
    ) -> MutexGuard<'a, Vec<Slot>> {
        let left = until.saturating_duration_since(Instant::now());
        match self.freed.wait_timeout(slots, left) {
            Ok((slots, _)) => slots,
            Err(poisoned) => poisoned.into_inner().0,
        }
    }
}

/// What a connection's thread shares.
pub struct Shared {
    /// The layer that answers the requests read (with `--web.config.file`, the file).
    pub layer: Layer,
    /// The requests answered and the connections closed, counted.
    pub tally: Arc<Tally>,
    /// The open connections.
    pub table: Table,
    /// The bounds.
    pub limits: Limits,
    /// Whether `SIGTERM` came: no connection is taken any more.
    pub draining: std::sync::atomic::AtomicBool,
}
