//! The exporter's own health, counted where it happens (scrapes, connections) and exported
//! beside the counts: read and open failures, cgroups followed and left out, requests by
//! status, connections closed for the bounds; and what its process's figures are read with.

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

/// The exporter's counters, shared by the connections (atomics: no lock to count).
#[derive(Debug)]
pub struct Health {
    /// The backend counting (the build info's `backend` label).
    pub backend: &'static str,
    /// What the `process_*` figures are read with.
    pub process: super::process::Constants,
    read_errors: AtomicU64,
    open_errors: AtomicU64,
    cgroups_matched: AtomicU64,
    cgroups_followed: AtomicU64,
    cgroups_dropped: AtomicU64,
    departed_evicted: AtomicU64,
    cgroups_too_deep: AtomicU64,
    unopened: AtomicU64,
    counting: AtomicU64,
    read_failing: AtomicU64,
    requests: [AtomicU64; STATUSES.len()],
    closed: [AtomicU64; Closed::ALL.len()],
}

impl Health {
    /// Every count zero, and this process's constants read from `system`.
    pub fn new(backend: &'static str, system: &counterhal_system::System) -> Health {
        Health {
            backend,
            process: super::process::Constants::read(system),
            read_errors: AtomicU64::new(0),
            open_errors: AtomicU64::new(0),
            cgroups_matched: AtomicU64::new(0),
            cgroups_followed: AtomicU64::new(0),
            cgroups_dropped: AtomicU64::new(0),
            departed_evicted: AtomicU64::new(0),
            cgroups_too_deep: AtomicU64::new(0),
            unopened: AtomicU64::new(0),
            counting: AtomicU64::new(0),
            read_failing: AtomicU64::new(0),
            requests: std::array::from_fn(|_| AtomicU64::new(0)),
            closed: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// A place's read failed.
    pub fn read_failed(&self) {
        self.read_errors.fetch_add(1, Relaxed);
    }

    /// A place's set did not open.
    pub fn open_failed(&self) {
        self.open_errors.fetch_add(1, Relaxed);
    }

    /// A discovery found `matched` cgroups, follows `followed`, and left out `newly` it had
    /// not left out before.
    pub fn cgroups(&self, matched: usize, followed: usize, newly: usize) {
        self.cgroups_matched.store(matched as u64, Relaxed);
        self.cgroups_followed.store(followed as u64, Relaxed);
        self.cgroups_dropped.fetch_add(newly as u64, Relaxed);
    }

    /// `cgroups` matched were refused by the cgroups' counter for want of room (each once
    /// while refused): dropped, as those left out for `--max-cgroups` are.
    pub fn cgroups_refused(&self, cgroups: usize) {
        self.cgroups_dropped.fetch_add(cgroups as u64, Relaxed);
    }

    /// `cgroups` departed were let go, past the bound of those kept, before a scrape read
    /// their last counts.
    pub fn departed_evicted(&self, cgroups: usize) {
        self.departed_evicted.fetch_add(cgroups as u64, Relaxed);
    }

    /// Departed cgroups let go unread so far.
    pub fn departed_evicted_total(&self) -> u64 {
        self.departed_evicted.load(Relaxed)
    }

    /// `cgroups` matched were left out at the last look for lying deeper than the cgroup
    /// mode follows.
    pub fn too_deep(&self, cgroups: usize) {
        self.cgroups_too_deep.store(cgroups as u64, Relaxed);
    }

    /// Cgroups matched but left out at the last look for lying too deep.
    pub fn cgroups_too_deep(&self) -> u64 {
        self.cgroups_too_deep.load(Relaxed)
    }

    /// `places` were left out for lack of descriptors at the last look.
    pub fn unopened(&self, places: usize) {
        self.unopened.store(places as u64, Relaxed);
    }

    /// `counting` places (a CPU, or a cgroup on a CPU) were open and, where read, read, and
    /// `failing` failed to read, at the last look or scrape: what readiness means.
    pub fn counting(&self, counting: usize, failing: usize) {
        self.counting.store(counting as u64, Relaxed);
        self.read_failing.store(failing as u64, Relaxed);
    }

    /// Why the exporter is not ready (`/-/ready`): no place counts, with what kept each out;
    /// `None` where one does.
    pub fn not_ready(&self) -> Option<String> {
        if self.counting.load(Relaxed) > 0 {
            return None;
        }
        Some(format!(
            "no counter counts: {} places failed to read at the last scrape, {} left out for \
             lack of file descriptors, {} openings failed so far (see / and /metrics)",
            self.read_failing.load(Relaxed),
            self.places_unopened(),
            self.open_errors()
        ))
    }

    /// Places left out for lack of descriptors at the last look.
    pub fn places_unopened(&self) -> u64 {
        self.unopened.load(Relaxed)
    }

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

    /// Reads that failed so far.
    pub fn read_errors(&self) -> u64 {
        self.read_errors.load(Relaxed)
    }

    /// Sets that did not open so far.
    pub fn open_errors(&self) -> u64 {
        self.open_errors.load(Relaxed)
    }

    /// Cgroups matched and followed at the last discovery.
    pub fn cgroups_now(&self) -> (u64, u64) {
        (
            self.cgroups_matched.load(Relaxed),
            self.cgroups_followed.load(Relaxed),
        )
    }

    /// Cgroups left out for `--max-cgroups`, or refused by the counter for want of room, so
    /// far.
    pub fn cgroups_dropped(&self) -> u64 {
        self.cgroups_dropped.load(Relaxed)
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
