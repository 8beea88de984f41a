//! Descriptors are a budget, not a cliff: every counter is a descriptor (perf_event_open's
//! fd; a cgroup followed in the BPF mode holds none, [`per_cgroup`]), and so is every
//! connection (twice: its socket and the table's handle on it). At
//! start the soft `RLIMIT_NOFILE` is raised to the hard one (as Go's runtime does for every
//! Go exporter); descriptors for the connections (two per place in the table, one more for
//! the connection being admitted, and a margin for the listener, the cgroup walk and the web
//! configuration's files) are kept back, and the counters open within what is left. A place
//! that does not fit (or whose opening the kernel refuses for descriptors, `EMFILE` or
//! `ENFILE`) is left out, tried again at each scrape, said on standard error when the
//! shortfall changes, on `/` and in `counterhal_places_unopened`; scrapes are answered all
//! the while.

/// Descriptors kept back beside two per connection: the listener, the connection being
/// admitted, a cgroup walk's directories, the web configuration's files, the transient
/// directory a cgroup's counters are opened with.
const MARGIN: usize = 32;

/// The descriptors the counters may hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    /// The soft limit on open descriptors (after raising it).
    pub limit: usize,
    /// The most connections at once (`--max-connections`).
    pub connections: usize,
    /// Descriptors open before any counter (standard streams and the like).
    pub baseline: usize,
}

impl Budget {
    /// The budget of a process that raised its limit to `limit` and serves at most
    /// `max_connections` at once: what is open now (as `system` lists this process's
    /// descriptors) is the baseline.
    pub fn new(
        system: &counterhal_system::System,
        limit: libc::rlim_t,
        max_connections: usize,
    ) -> Budget {
        let baseline = system
            .descriptor_directory()
            .and_then(|descriptors| descriptors.count())
            .unwrap_or(3);
        Budget {
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            connections: max_connections,
            baseline,
        }
    }

    /// Descriptors kept back for the connections and the margin.
    pub fn reserved(&self) -> usize {
        2 * (self.connections + 1) + MARGIN
    }

    /// How many descriptors the counters may hold.
    pub fn counters(&self) -> usize {
        self.limit
            .saturating_sub(self.reserved())
            .saturating_sub(self.baseline)
    }

    /// Whether `more` descriptors fit beside the `held` ones.
    pub fn fits(&self, held: usize, more: usize) -> bool {
        held + more <= self.counters()
    }

    /// The reason given for places left out.
    pub fn reason(&self, unopened: usize) -> String {
        format!(
            "{unopened} places not counted for lack of file descriptors: the limit is {} \
             (RLIMIT_NOFILE), {} kept back for {} connections, {} for counters; raise the \
             hard limit (systemd's LimitNOFILE=, prlimit --nofile) or follow fewer cgroups \
             (--max-cgroups)",
            self.limit,
            self.reserved(),
            self.connections,
            self.counters()
        )
    }
}

/// The descriptors a followed cgroup's counters hold: one per event and CPU in the
/// perf-event mode (`perf_events`); none in the BPF mode, whose counters (one per event and
/// CPU whatever the number of cgroups, its maps and programs) are opened at start, before
/// the budget's baseline is taken, so that a cgroup costs no descriptor at all.
pub fn per_cgroup(perf_events: bool, events: usize, cpus: usize) -> usize {
    match perf_events {
        true => events * cpus,
        false => 0,
    }
}

/// Whether an opening failed for lack of descriptors: `EMFILE` (this process's limit) or
/// `ENFILE` (the system's).
pub fn out_of_descriptors(error: &counterhal::Error) -> bool {
    matches!(error.errno(), Some(libc::EMFILE | libc::ENFILE))
}
