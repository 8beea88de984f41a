//! The transport: connections accepted on one thread, each answered on a thread of its own (a small
//! stack), at most `--max-connections` at once. A slow client costs a place in the table,
//! never the scrapes: when the table is full, the connection that has waited longest for its
//! request is closed (its read ends at once) for the new one, so a scraper whose request
//! arrives with its connection, as Prometheus' does, always gets through (a connection
//! whose request has come, read or not, is never evicted, and one idle while others are
//! answered has a grace of a second to send it: a burst's clients connect and send a moment
//! apart); when no place frees, the new connection waits for one, and is closed (503) when
//! none frees within the header timeout. Each connection has the header timeout to
//! send its request head and the write timeout to take the answer; memory is bounded by the
//! table: a head buffer and a stack per connection, and the answer being written. With
//! `--web.config.file`, each connection takes the file's configuration as it is when the
//! connection comes (TLS, users, headers, rate limit).

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use super::connection;
use super::layer::Layer;
pub use super::table::Limits;
use super::table::{Shared, Slot, Table};
use super::tally::{Closed, Tally};
use crate::sys;

/// The stack of a connection's thread: the head buffer, the parser's headers, and reading
/// and writing the counters (found enough by the bad-client tests with room to spare).
const STACK: usize = 256 * 1024;

/// A listener and what its connections share: the layer that answers them, their bounds,
/// and the tally that counts them.
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Server {
    /// Serves `layer` on `listener` within `limits` (over TLS where the layer's web
    /// configuration says), counting the requests and connections in `tally`.
    pub fn new(listener: TcpListener, limits: Limits, layer: Layer, tally: Arc<Tally>) -> Server {
        let shared = Arc::new(Shared {
            layer,
            tally,
            table: Table::new(),
            limits,
            draining: AtomicBool::new(false),
        });
        Server { listener, shared }
    }

    /// What the connections share (for the signals' thread).
    pub(crate) fn shared(&self) -> Arc<Shared> {
        Arc::clone(&self.shared)
    }

    /// Accepts connections for ever (until the process exits), each answered on a thread
    /// of its own.
    pub fn serve(self) {
        for stream in self.listener.incoming() {
            match stream {
                // Draining (SIGTERM): closed at once, for the exit.
                Ok(_) if self.shared.draining.load(Relaxed) => {}
                Ok(stream) => admit(stream, &self.shared),
                // Out of descriptors (or an aborted handshake): wait a moment and go on.
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }
}

/// Gives `stream` a place in the table ([`place`] says how, when it is full); closes it
/// (503) when none comes within the header timeout.
fn admit(stream: TcpStream, shared: &Arc<Shared>) {
    // Each answer is sent at once (as Go's servers set it on every connection): on a kept
    // connection, Nagle's algorithm would hold the body back until the client acknowledged
    // the head, which it delays (40 ms on Linux).
    stream.set_nodelay(true).ok();
    let Ok(handle) = stream.try_clone() else {
        return;
    };
    let id = shared.table.next_id();
    {
        let mut slots = shared.table.lock();
        let until = Instant::now() + shared.limits.header_timeout;
        while slots.len() >= shared.limits.max_connections {
            match place(&slots, shared.limits.header_timeout.min(GRACE)) {
                Place::Evict(at) => {
                    let evicted = slots.swap_remove(at);
                    evicted.stream.shutdown(Shutdown::Both).ok();
                    shared.tally.closed(Closed::Evicted);
                }
                Place::Wait(then) if Instant::now() < until => {
                    slots = shared.table.wait_freed(slots, then.min(until));
                }
                Place::Wait(_) => {
                    drop(slots);
                    shared.tally.closed(Closed::Refused);
                    connection::refuse(stream);
                    return;
                }
            }
        }
        slots.push(Slot {
            id,
            stream: handle,
            since: Instant::now(),
            answering: false,
            begun: false,
        });
    }
    let for_thread = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name("counterhal-http".to_string())
        .stack_size(STACK)
        .spawn(move || {
            // The configuration as the file says now (read again where it changed).
            let web = for_thread.layer.current();
            match web.as_ref().and_then(|web| web.tls.clone()) {
                Some(tls) => connection::answer_tls(stream, tls, id, &for_thread, web.as_deref()),
                None => connection::answer(stream, id, &for_thread, web.as_deref()),
            }
            for_thread.table.remove(id);
        });
    if spawned.is_err() {
        shared.table.remove(id);
    }
}

/// How long a connection may be idle (connected, no request yet) while others are being
/// answered before it is evicted for a new one: a client of a burst connects and sends its
/// request a moment apart.
const GRACE: Duration = Duration::from_secs(1);

/// How often a full table is looked at again while no connection leaves it.
const TICK: Duration = Duration::from_millis(10);

/// How a full table makes room.
enum Place {
    /// Evict the connection at this place.
    Evict(usize),
    /// Wait for a connection to leave, until then at most.
    Wait(Instant),
}

/// How a full table makes room: among the idle connections (not being answered, and no
/// byte from the client waiting unread: a request that came before its thread read it is
/// not idle), the one idle longest is evicted when every connection is idle (a flood of
/// idle or slow clients) or it has been idle past `grace`; else the new connection waits
/// for one to leave (those being answered leave within moments) or a tick, at most until
/// the idle one's grace is over.
fn place(slots: &[Slot], grace: Duration) -> Place {
    let idle = |slot: &Slot| !slot.answering && !sys::bytes_waiting(&slot.stream);
    let longest = slots
        .iter()
        .enumerate()
        .filter(|(_, slot)| idle(slot))
        .min_by_key(|(_, slot)| slot.since);
    let now = Instant::now();
    match longest {
        Some((at, slot)) if slot.since + grace <= now => Place::Evict(at),
        Some((at, _)) if slots.iter().all(idle) => Place::Evict(at),
        // Looked at again after a tick: a request read makes its connection idle again.
        Some((_, slot)) => Place::Wait((slot.since + grace).min(now + TICK)),
        None => Place::Wait(now + TICK),
    }
}
