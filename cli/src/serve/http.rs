//! The connections: accepted on one thread, each answered on a thread of its own (a small
//! stack), at most `--max-connections` at once. A slow client costs a place in the table,
//! never the scrapes: when the table is full, the connection that has waited longest for its
//! request is closed (its read ends at once) for the new one, so a scraper whose request
//! arrives with its connection, as Prometheus' does, always gets through; when every place
//! is answering, the new connection is closed. Each connection has the header timeout to
//! send its request head and the write timeout to take the answer; memory is bounded by the
//! table: a head buffer and a stack per connection, and the answer being written.

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::counting::Exporter;
use super::health::{Closed, Health};
use super::request;

/// The stack of a connection's thread: the head buffer, the parser's headers, and reading
/// and writing the counters (found enough by the bad-client tests with room to spare).
const STACK: usize = 256 * 1024;

/// The bounds on clients.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The most connections open at once.
    pub max_connections: usize,
    /// How long a client has to send its request head.
    pub header_timeout: Duration,
    /// How long a client has to take its answer.
    pub write_timeout: Duration,
}

/// A connection in the table.
struct Slot {
    id: u64,
    /// The same socket, to close it from the accepting thread.
    stream: TcpStream,
    since: Instant,
    /// Whether its request has arrived (it is being answered: never evicted).
    answering: bool,
}

/// The open connections.
pub struct Table {
    slots: Mutex<Vec<Slot>>,
    next: AtomicU64,
}

impl Table {
    fn lock(&self) -> MutexGuard<'_, Vec<Slot>> {
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

    fn remove(&self, id: u64) {
        self.lock().retain(|slot| slot.id != id);
    }
}

/// What a connection's thread shares.
pub struct Shared {
    /// The counters.
    pub exporter: Mutex<Exporter>,
    /// The exporter's health.
    pub health: Arc<Health>,
    /// The open connections.
    pub table: Table,
    /// The bounds.
    pub limits: Limits,
    /// The size of the last scrape (the next one's buffer starts at it).
    pub last_size: std::sync::atomic::AtomicUsize,
}

/// Accepts connections on `listener` for ever, answering each within `limits`.
pub fn serve(listener: TcpListener, limits: Limits, exporter: Exporter, health: Arc<Health>) {
    let shared = Arc::new(Shared {
        exporter: Mutex::new(exporter),
        health,
        table: Table {
            slots: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
        },
        limits,
        last_size: std::sync::atomic::AtomicUsize::new(4096),
    });
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => admit(stream, &shared),
            // Out of descriptors (or an aborted handshake): wait a moment and go on.
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Gives `stream` a place in the table (evicting the connection waiting longest for its
/// request when it is full) and a thread; closes it when every place is answering.
fn admit(stream: TcpStream, shared: &Arc<Shared>) {
    let Ok(handle) = stream.try_clone() else {
        return;
    };
    let id = shared.table.next.fetch_add(1, Relaxed);
    {
        let mut slots = shared.table.lock();
        if slots.len() >= shared.limits.max_connections {
            let oldest = slots
                .iter()
                .enumerate()
                .filter(|(_, slot)| !slot.answering)
                .min_by_key(|(_, slot)| slot.since)
                .map(|(at, _)| at);
            match oldest {
                Some(at) => {
                    let evicted = slots.swap_remove(at);
                    evicted.stream.shutdown(Shutdown::Both).ok();
                    shared.health.closed(Closed::Evicted);
                }
                None => {
                    drop(slots);
                    shared.health.closed(Closed::Refused);
                    request::refuse(stream);
                    return;
                }
            }
        }
        slots.push(Slot {
            id,
            stream: handle,
            since: Instant::now(),
            answering: false,
        });
    }
    let for_thread = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name("counterhal-http".to_string())
        .stack_size(STACK)
        .spawn(move || {
            request::answer(stream, id, &for_thread);
            for_thread.table.remove(id);
        });
    if spawned.is_err() {
        shared.table.remove(id);
    }
}
