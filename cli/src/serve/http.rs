//! The connections: accepted on one thread, each answered on a thread of its own (a small
//! stack), at most `--max-connections` at once. A slow client costs a place in the table,
//! never the scrapes: when the table is full, the connection that has waited longest for its
//! request is closed (its read ends at once) for the new one, so a scraper whose request
//! arrives with its connection, as Prometheus' does, always gets through (a connection
//! whose request has come, read or not, is never evicted); when every place has its request,
//! the new connection waits for a place to free, and is closed (503) when none frees within
//! the header timeout. Each connection has the header timeout to
//! send its request head and the write timeout to take the answer; memory is bounded by the
//! table: a head buffer and a stack per connection, and the answer being written. With
//! `--web.config.file`, each connection takes the file's configuration as it is when the
//! connection comes (TLS, users, headers, rate limit).

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::counting::Exporter;
use super::health::{Closed, Health};
use super::request;
use super::sys;
use super::table::{Limits, Shared, Slot, Table};
use super::web::WebConfigFile;

/// The stack of a connection's thread: the head buffer, the parser's headers, and reading
/// and writing the counters (found enough by the bad-client tests with room to spare).
const STACK: usize = 256 * 1024;

/// Accepts connections on `listener` for ever, answering each within `limits` (over TLS,
/// with the users and headers of `web` where given).
pub fn serve(
    listener: TcpListener,
    limits: Limits,
    exporter: Exporter,
    health: Arc<Health>,
    web: Option<WebConfigFile>,
) {
    let shared = Arc::new(Shared {
        exporter: Mutex::new(exporter),
        health,
        table: Table::new(),
        limits,
        last_size: std::sync::atomic::AtomicUsize::new(4096),
        web,
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
/// request when it is full, or waiting for one to leave where every one has its request);
/// closes it (503) when none leaves within the header timeout.
fn admit(stream: TcpStream, shared: &Arc<Shared>) {
    let Ok(handle) = stream.try_clone() else {
        return;
    };
    let id = shared.table.next_id();
    {
        let mut slots = shared.table.lock();
        let until = Instant::now() + shared.limits.header_timeout;
        while slots.len() >= shared.limits.max_connections {
            if let Some(at) = idle_longest(&slots) {
                let evicted = slots.swap_remove(at);
                evicted.stream.shutdown(Shutdown::Both).ok();
                shared.health.closed(Closed::Evicted);
            } else if Instant::now() < until {
                slots = shared.table.wait_freed(slots, until);
            } else {
                drop(slots);
                shared.health.closed(Closed::Refused);
                request::refuse(stream);
                return;
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
            // The configuration as the file says now (read again where it changed).
            let web = for_thread.web.as_ref().map(WebConfigFile::current);
            match web.as_ref().and_then(|web| web.tls.clone()) {
                Some(tls) => request::answer_tls(stream, tls, id, &for_thread, web.as_deref()),
                None => request::answer(stream, id, &for_thread, web.as_deref()),
            }
            for_thread.table.remove(id);
        });
    if spawned.is_err() {
        shared.table.remove(id);
    }
}

/// The place of the connection that has waited longest for its request, among those whose
/// request has not come (not being answered, and no byte from the client waiting unread:
/// a request that came before its thread read it is not idle).
fn idle_longest(slots: &[Slot]) -> Option<usize> {
    slots
        .iter()
        .enumerate()
        .filter(|(_, slot)| !slot.answering && !sys::bytes_waiting(&slot.stream))
        .min_by_key(|(_, slot)| slot.since)
        .map(|(at, _)| at)
}
