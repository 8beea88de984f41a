//! What the transport counts as it serves: the requests answered, by status, and the
//! connections closed before an answer, by reason (atomics: no lock to count). A collector
//! outside the transport exports them.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The HTTP statuses the exporter answers with, in the order they are exported.
pub const STATUSES: [u16; 10] = [200, 400, 401, 404, 405, 408, 413, 429, 431, 503];

/// Why a connection was closed before it was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closed {
    /// It had waited longest for its request when a new one came and the bound was reached.
    Evicted,
    /// Every connection was being answered when it came (the bound reached).
    Refused,
    /// Its request head did not arrive within the header timeout.
    HeaderTimeout,
    /// Its answer was not taken within the write timeout.
    WriteTimeout,
    /// Its client closed or reset it before taking the answer.
    ClientGone,
    /// Its TLS handshake failed (`--web.config.file`'s TLS): no common version or suite,
    /// no or a bad client certificate, not TLS at all.
    Tls,
}

impl Closed {
    /// Every reason, in the order they are exported.
    pub const ALL: [Closed; 6] = [
        Closed::Evicted,
        Closed::Refused,
        Closed::HeaderTimeout,
        Closed::WriteTimeout,
        Closed::ClientGone,
        Closed::Tls,
    ];

    /// The `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            Closed::Evicted => "evicted",
            Closed::Refused => "refused",
            Closed::HeaderTimeout => "header_timeout",
            Closed::WriteTimeout => "write_timeout",
            Closed::ClientGone => "client_gone",
            Closed::Tls => "tls_handshake",
        }
    }
}

/// The transport's counts, shared by the connections.
#[derive(Debug)]
pub struct Tally {
    requests: [AtomicU64; STATUSES.len()],
    closed: [AtomicU64; Closed::ALL.len()],
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            requests: std::array::from_fn(|_| AtomicU64::new(0)),
            closed: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl Tally {
    /// A request was answered with `status`.
    pub fn answered(&self, status: u16) {
        if let Some(at) = STATUSES.iter().position(|&s| s == status) {
            self.requests[at].fetch_add(1, Relaxed);
        }
    }

    /// A connection was closed unanswered, for `why`.
    pub fn closed(&self, why: Closed) {
        if let Some(at) = Closed::ALL.iter().position(|&c| c == why) {
            self.closed[at].fetch_add(1, Relaxed);
        }
    }

    /// Requests answered with each of [`STATUSES`].
    pub fn requests(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        STATUSES
            .iter()
            .zip(&self.requests)
            .map(|(&status, count)| (status, count.load(Relaxed)))
    }

    /// Connections closed unanswered, by reason.
    pub fn closed_counts(&self) -> impl Iterator<Item = (Closed, u64)> + '_ {
        Closed::ALL
            .iter()
            .zip(&self.closed)
            .map(|(&why, count)| (why, count.load(Relaxed)))
    }
}
