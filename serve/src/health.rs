//! The exporter's own health, counted where it happens (scrapes, looks, connections) and
//! written beside the counts by this collector: read and open failures, cgroups followed and
//! left out, requests by status and connections closed for the bounds (the transport's
//! [`Tally`]), the build; and what its process's figures are read with.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::http::Tally;
use crate::text_format::{Family, Format, Kind, Label, Number, epoch_seconds};

/// The exporter's counters, shared by the scrapes, the follower and the connections (atomics:
/// no lock to count).
#[derive(Debug)]
pub struct Health {
    /// The backend counting (the build info's `backend` label).
    pub backend: &'static str,
    /// What the `process_*` figures are read with.
    pub process: super::process::Constants,
    read_errors: AtomicU64,
    open_errors: AtomicU64,
    events_left_out: AtomicU64,
    cgroups_matched: AtomicU64,
    cgroups_followed: AtomicU64,
    cgroups_dropped: AtomicU64,
    departed_evicted: AtomicU64,
    cgroups_too_deep: AtomicU64,
    unopened: AtomicU64,
    counting: AtomicU64,
    read_failing: AtomicU64,
    /// What the transport counts.
    pub http: Arc<Tally>,
    /// When its counts began (seconds since the epoch): their `_created`.
    pub started: f64,
}

impl Health {
    /// Every count zero, and this process's constants read from `system`.
    pub fn new(backend: &'static str, system: &counterhal_system::System) -> Health {
        Health {
            backend,
            process: super::process::Constants::read(system),
            read_errors: AtomicU64::new(0),
            open_errors: AtomicU64::new(0),
            events_left_out: AtomicU64::new(0),
            cgroups_matched: AtomicU64::new(0),
            cgroups_followed: AtomicU64::new(0),
            cgroups_dropped: AtomicU64::new(0),
            departed_evicted: AtomicU64::new(0),
            cgroups_too_deep: AtomicU64::new(0),
            unopened: AtomicU64::new(0),
            counting: AtomicU64::new(0),
            read_failing: AtomicU64::new(0),
            http: Arc::default(),
            started: epoch_seconds(std::time::SystemTime::now()),
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

    /// A cgroup was followed with `events` of its events left out on some of its CPUs (they
    /// did not open for it there): said once, as it is followed. (Only Linux's cgroup
    /// counter leaves events out.)
    #[cfg_attr(not(target_os = "linux"), expect(dead_code))]
    pub fn events_left_out(&self, events: usize) {
        self.events_left_out.fetch_add(events as u64, Relaxed);
    }

    /// The events left out of the cgroups followed since start, each once a cgroup.
    pub fn events_left_out_total(&self) -> u64 {
        self.events_left_out.load(Relaxed)
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

    /// Writes the health's families in `format` into `out`: the failures, the cgroups
    /// followed, left out and let go, the requests and connections the transport counted,
    /// and the build.
    pub fn write(&self, out: &mut Vec<u8>, format: Format) {
        let counters = [
            (
                Family::new(
                    "counterhal_read_errors",
                    Kind::Counter,
                    "Reads of a CPU's or cgroup's counters that failed.",
                ),
                self.read_errors(),
            ),
            (
                Family::new(
                    "counterhal_open_errors",
                    Kind::Counter,
                    "Openings of a CPU's or cgroup's counters that failed (tried again each \
                     scrape).",
                ),
                self.open_errors(),
            ),
        ];
        for (family, value) in counters {
            family.single(out, format, Number::Int(value), self.started);
        }
        let (matched, followed) = self.cgroups_now();
        let cgroups = [
            (
                Family::new(
                    "counterhal_cgroups_matched",
                    Kind::Gauge,
                    "Cgroups that --cgroups matched at the last scrape.",
                ),
                matched,
            ),
            (
                Family::new(
                    "counterhal_cgroups_followed",
                    Kind::Gauge,
                    "Cgroups counted (at most --max-cgroups).",
                ),
                followed,
            ),
            (
                Family::new(
                    "counterhal_places_unopened",
                    Kind::Gauge,
                    "Places (a CPU, or a cgroup on a CPU) not counted for lack of file \
                     descriptors (RLIMIT_NOFILE; tried again each scrape).",
                ),
                self.places_unopened(),
            ),
            (
                Family::new(
                    "counterhal_cgroups_dropped",
                    Kind::Counter,
                    "Cgroups matched but left out for --max-cgroups, or refused by the counter \
                     for want of room (each counted once while left out).",
                ),
                self.cgroups_dropped(),
            ),
            (
                Family::new(
                    "counterhal_cgroups_departed_evicted",
                    Kind::Counter,
                    "Removed cgroups whose last counts were let go unread: more were kept than \
                     --max-cgroups between two scrapes.",
                ),
                self.departed_evicted_total(),
            ),
        ];
        for (family, value) in cgroups {
            family.single(out, format, Number::Int(value), self.started);
        }
        let requests = Family::new(
            "counterhal_http_requests",
            Kind::Counter,
            "HTTP requests answered, by status code.",
        );
        requests.header(out, format);
        for (status, count) in self.http.requests() {
            let labels = [("code", Label::Int(u64::from(status)))];
            requests.counted(out, format, &labels, Number::Int(count), self.started);
        }
        let closed = Family::new(
            "counterhal_http_connections_closed",
            Kind::Counter,
            "Connections closed unanswered to keep the bounds, by reason.",
        );
        closed.header(out, format);
        for (why, count) in self.http.closed_counts() {
            let labels = [("reason", Label::Text(why.label()))];
            closed.counted(out, format, &labels, Number::Int(count), self.started);
        }
        let build = Family::new(
            "counterhal_build",
            Kind::Info,
            "The exporter's version and the backend counting.",
        );
        build.header(out, format);
        let labels = [
            ("version", Label::Text(env!("CARGO_PKG_VERSION"))),
            ("backend", Label::Text(self.backend)),
        ];
        build.sample(out, &labels, Number::Int(1));
    }
}
