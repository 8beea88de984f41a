//! The exporter's system calls: its descriptor limit (`getrlimit`, `setrlimit` of
//! `RLIMIT_NOFILE`), raised to the hard limit at start as Go's runtime raises it for every Go
//! exporter; and whether a connection's client has sent bytes not yet read (`recv` with
//! `MSG_PEEK`), so that a connection whose request has come is never evicted as idle.
//!
//! # Safety
//!
//! Each call is given structures owned by this module (an `rlimit`, a byte buffer), by
//! pointers valid for the call alone, and descriptors borrowed from an open socket for the
//! call alone; none keeps a pointer or a descriptor after it returns.

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
