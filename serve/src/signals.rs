//! What the exporter does when signalled, as a service manager signals it: `SIGHUP` reads
//! the web configuration again and serving goes on (systemd's `ExecReload=kill -HUP`, as
//! Prometheus reloads on it); `SIGTERM` (and `SIGINT`) drains: no connection is taken any
//! more, those idle (no byte of a request yet) are closed, the scrapes begun are finished
//! (each within its header and write timeouts), and the exporter exits 0, as Go's
//! `http.Server.Shutdown` drains Prometheus' own servers.

use std::net::Shutdown;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use super::sys;
use crate::http::table::{Shared, Slot};

/// Blocks the signals taken here in this thread and every thread started after it (call it
/// before any other thread starts).
pub fn block() {
    sys::block_signals();
}

/// Starts the thread that takes the signals for `shared`.
pub fn take(shared: Arc<Shared>) {
    let started = std::thread::Builder::new()
        .name("counterhal-signals".to_string())
        .stack_size(64 * 1024)
        .spawn(move || {
            while sys::wait_signal() {
                reload(&shared);
            }
            drain(&shared);
        });
    if let Err(e) = started {
        crate::log::warn(
            "no thread for signals: SIGHUP and SIGTERM act as by default",
            &[("err", &e)],
        );
    }
}

/// `SIGHUP`: the web configuration read again (a change that does not read is said and the
/// configuration before kept, as when the file changes).
fn reload(shared: &Shared) {
    match shared.layer.web() {
        Some(web) if web.reload() => {
            crate::log::info("SIGHUP: the web configuration read again", &[])
        }
        Some(_) => crate::log::error(
            "SIGHUP: the web configuration file was refused (said above); serving on with \
             the one read before",
            &[],
        ),
        None => crate::log::warn(
            "SIGHUP: no --web.config.file to read again; serving on",
            &[],
        ),
    };
}

/// `SIGTERM`: takes no connection more, closes those idle, waits for the rest to be
/// answered (at most the header and write timeouts), and exits 0.
fn drain(shared: &Shared) -> ! {
    shared.draining.store(true, Relaxed);
    let until = Instant::now() + shared.limits.header_timeout + shared.limits.write_timeout;
    let mut slots = shared.table.lock();
    let mut finishing = 0;
    loop {
        let idle = |slot: &&Slot| !slot.begun && !sys::bytes_waiting(&slot.stream);
        for slot in slots.iter().filter(idle) {
            slot.stream.shutdown(Shutdown::Both).ok();
        }
        finishing = finishing.max(slots.iter().filter(|slot| !idle(slot)).count());
        if slots.is_empty() || Instant::now() >= until {
            break;
        }
        let tick = (Instant::now() + Duration::from_millis(100)).min(until);
        slots = shared.table.wait_freed(slots, tick);
    }
    let left = slots.len();
    drop(slots);
    crate::log::info(
        "SIGTERM: exiting",
        &[("requests_in_flight", &finishing), ("unfinished", &left)],
    );
    std::process::exit(0)
}
