//! The exporter's system calls: its descriptor limit (`getrlimit`, `setrlimit` of
//! `RLIMIT_NOFILE`), raised to the hard limit at start as Go's runtime raises it for every Go
//! exporter; and whether a connection's client has sent bytes not yet read (`recv` with
//! `MSG_PEEK`), so that a connection whose request has come is never evicted as idle; and
//! its signals (`pthread_sigmask`, `sigwait`): `SIGHUP`, `SIGTERM` and `SIGINT` blocked in
//! every thread and taken, one at a time, by the one thread that waits for them.
//!
//! # Safety
//!
//! Each call is given structures owned by this module (an `rlimit`, a byte buffer, a
//! `sigset_t` filled by `sigemptyset` and `sigaddset` before use), by pointers valid for the
//! call alone, and descriptors borrowed from an open socket for the call alone; none keeps a
//! pointer or a descriptor after it returns.

/// The soft limit on open descriptors (`RLIMIT_NOFILE`), after raising it to the hard one
/// where it was lower (where the kernel refuses, past `fs.nr_open`, it is left as it was).
/// `None` where the limit cannot be read.
pub fn raise_open_files() -> Option<libc::rlim_t> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is an `rlimit` owned here, written by the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: `raised` is an `rlimit` owned here, read by the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit.rlim_cur = limit.rlim_max;
        }
    }
    Some(limit.rlim_cur)
}

/// Whether bytes from the client wait unread on `stream` (a request, or a TLS handshake,
/// that its thread has not read yet): `recv` with `MSG_PEEK | MSG_DONTWAIT`, which neither
/// takes them nor waits, whatever the socket's own blocking mode.
pub fn bytes_waiting(stream: &std::net::TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut byte = [0u8; 1];
    // SAFETY: the descriptor is `stream`'s, open while it is borrowed; `byte` is a buffer
    // owned here of the length given.
    let got = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            byte.as_mut_ptr().cast(),
            byte.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    got > 0
}

/// The signals the exporter takes: `SIGHUP` (reload), `SIGTERM` and `SIGINT` (drain, then
/// exit).
const TAKEN: [i32; 3] = [libc::SIGHUP, libc::SIGTERM, libc::SIGINT];

/// The set of [`TAKEN`].
fn taken() -> libc::sigset_t {
    // SAFETY: all-zero bytes are a valid `sigset_t`; `sigemptyset` then makes it empty.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a `sigset_t` owned here.
    unsafe { libc::sigemptyset(&mut set) };
    for signal in TAKEN {
        // SAFETY: `set` was emptied above; `signal` is a valid signal number.
        unsafe { libc::sigaddset(&mut set, signal) };
    }
    set
}

/// Blocks `SIGHUP`, `SIGTERM` and `SIGINT` in the calling thread and every thread it starts
/// after, so that only [`wait_signal`] takes them (call it before starting any thread).
pub fn block_signals() {
    let set = taken();
    // SAFETY: `set` is an initialised `sigset_t`; the old mask is not asked for.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// Waits for one of the blocked signals; whether it is `SIGHUP` (else `SIGTERM` or
/// `SIGINT`).
pub fn wait_signal() -> bool {
    let set = taken();
    loop {
        let mut signal = 0;
        // SAFETY: `set` is an initialised `sigset_t` and `signal` an `i32` owned here.
        if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
            return signal == libc::SIGHUP;
        }
    }
}
