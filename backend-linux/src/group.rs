//! [`LinuxGroup`]: perf event fds organised as kernel groups, read by id.

mod record;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::thread::ThreadId;

use counterhal_hal::{Error, ErrorKind, Group, Reading, Result, check_buffer};

use crate::errno::{Operation, SystemFacts, map_errno};
use crate::rdpmc::{PAGES_KEPT_ACROSS_RESETS, pages_agree, self_monitored_read};
use crate::sys::{self, IOC_DISABLE, IOC_ENABLE, IOC_FLAG_GROUP, IOC_RESET, UserPageMap};
use record::{
    decode_in_order, events_in, lists_in_order, parse_group_read, parse_group_read_cold,
    parse_single_read,
};

/// How a kernel group is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadFormat {
    /// One read of the leader with `PERF_FORMAT_GROUP`: `nr, enabled, running, {value, id}*`.
    Group,
    /// One read per fd: `value, enabled, running, id` (for kernels that refuse inherit with
    /// group reads).
    Single,
}

/// One kernel group: a leader and its members, in the order they were opened.
#[derive(Debug)]
pub(crate) struct KernelGroup {
    /// The leader's fd.
    pub leader: OwnedFd,
    /// The members' fds, in the order they joined the leader.
    pub members: Vec<OwnedFd>,
    /// Each fd's id (`PERF_EVENT_IOC_ID`), leader first.
    pub ids: Vec<u64>,
    /// Each fd's index in the caller's request order, leader first.
    pub slots: Vec<usize>,
    /// How it is read.
    pub format: ReadFormat,
}

impl KernelGroup {
    /// Every fd, leader first.
    pub fn fds(&self) -> impl Iterator<Item = &OwnedFd> {
        std::iter::once(&self.leader).chain(&self.members)
    }

    /// How many events it holds.
    pub fn len(&self) -> usize {
        1 + self.members.len()
    }
}

/// A [`LinuxGroup`]'s kernel groups, and where their reads go.
#[derive(Debug)]
enum Kernel {
    /// One kernel group read as a group, holding every event in request order, which the
    /// kernel lists in that order, not read in user space: the common group, read by
    /// [`read_in_order`], kept inline so that its leader is one load from the group.
    InOrder {
        group: KernelGroup,
        /// Room for its record, exactly: the count of events is the record's.
        record: Vec<u64>,
    },
    /// Any other (several PMUs, events opened one by one, an order of their own, read in
    /// user space first).
    Groups {
        groups: Vec<KernelGroup>,
        /// Room for the largest group's record (and for one event's).
        buffer: Vec<u64>,
    },
}

impl Kernel {
    /// `groups` as [`Kernel::Groups`].
    fn any(groups: Vec<KernelGroup>) -> Kernel {
        let largest = groups.iter().map(KernelGroup::len).max().unwrap_or(0);
        let buffer = vec![0u64; 3 + 2 * largest.max(2)];
        Kernel::Groups { groups, buffer }
    }

    /// The kernel groups, in the order they were opened.
    fn groups(&self) -> &[KernelGroup] {
        match self {
            Kernel::InOrder { group, .. } => std::slice::from_ref(group),
            Kernel::Groups { groups, .. } => groups,
        }
    }
}

/// Self-monitoring state: one mapped page per event, in request order, and the thread that
/// opened them (the only one whose counters `rdpmc` reads).
#[derive(Debug)]
pub(crate) struct SelfMonitor {
    pub pages: Vec<UserPageMap>,
    pub thread: ThreadId,
    /// The pages disagreed with the kernel at the last check (see
    /// [`PAGES_KEPT_ACROSS_RESETS`]): the group reads through the kernel until they agree.
    pub stale: bool,
}

/// Whether a read on thread `reader` may use `rdpmc` for counters opened on thread `opener`.
///
/// `rdpmc` reads the hardware counter of the CPU it runs on, which holds this thread's event
/// only while this thread runs there: the kernel schedules a this-thread event with its task.
/// A group moved to another thread (it is `Send`) must read through the kernel instead.
pub(crate) fn rdpmc_allowed(opener: ThreadId, reader: ThreadId) -> bool {
    opener == reader
}

/// The calling thread's id, kept per thread so a read asks for it without the reference
/// count `std::thread::current()` takes.
pub(crate) fn this_thread() -> ThreadId {
    thread_local! {
        static ID: ThreadId = std::thread::current().id();
    }
    ID.with(|id| *id)
}

/// Counters opened by [`crate::LinuxBackend`]: one or more kernel groups (one when grouped on
/// one PMU; one per core PMU on hybrid CPUs; one per event when ungrouped), enabled, disabled,
/// reset and read together. Readings are matched to events by the kernel's event id.
#[derive(Debug)]
pub struct LinuxGroup {
    kernel: Kernel,
    names: Vec<String>,
    facts: Arc<SystemFacts>,
    self_monitor: Option<SelfMonitor>,
}

/// The error of a failed `read` of a counter.
#[cold]
#[inline(never)]
fn read_error(errno: i32, facts: &Arc<SystemFacts>) -> Error {
    map_errno(errno, Operation::Read, facts)
}

/// The refusal of `readings` shorter than the `needed` events, out of the read path.
#[cold]
#[inline(never)]
fn short_readings(needed: usize, readings: &[Reading]) -> Result<()> {
    check_buffer("readings", needed, readings.len())
}

/// Reads `group` ([`Kernel::InOrder`]) into `readings`: one `read` of its leader into
/// `record`, exactly one record long, decoded straight into the readings. The record's
/// length gives the count of events, so no check remains but the caller's buffer, the system
/// call's result and the record's count and length; anything unexpected goes out of line.
#[inline(always)]
fn read_in_order(
    group: &KernelGroup,
    record: &mut [u64],
    facts: &Arc<SystemFacts>,
    readings: &mut [Reading],
) -> Result<()> {
    // One reading per event, sliced before the system call (which may write memory).
    let events = events_in(record).unwrap_or(0);
    let Some(mine) = events_in(record).and_then(|events| readings.get_mut(..events)) else {
        return short_readings(events, readings);
    };
    let bytes = match sys::read_words(group.leader.as_fd(), record) {
        Ok(bytes) => bytes,
        Err(errno) => return Err(read_error(errno, facts)),
    };
    if decode_in_order(record, bytes, mine) {
        return Ok(());
    }
    parse_group_read_cold(record, bytes, &group.ids, &group.slots, readings)
}

/// [`read_in_order`] through a shared reference into the caller's scratch `record` (`None`
/// where the scratch is shorter than the group's record), its errors told without
/// allocating ([`LinuxGroup::read_shared`]).
#[inline(always)]
fn read_in_order_shared(
    group: &KernelGroup,
    record: Option<&mut [u64]>,
    readings: &mut [Reading],
) -> std::io::Result<()> {
    use std::io::{Error as IoError, ErrorKind as IoKind};
    let Some(record) = record else {
        return Err(IoKind::InvalidInput.into());
    };
    let Some(mine) = events_in(record).and_then(|events| readings.get_mut(..events)) else {
        return Err(IoKind::InvalidInput.into());
    };
    let bytes =
        sys::read_words(group.leader.as_fd(), record).map_err(IoError::from_raw_os_error)?;
    match (decode_in_order(record, bytes, mine), bytes) {
        (true, _) => Ok(()),
        (false, 0) => Err(IoKind::UnexpectedEof.into()),
        (false, _) => Err(IoKind::InvalidData.into()),
    }
}

impl LinuxGroup {
    pub(crate) fn new(
        groups: Vec<KernelGroup>,
        names: Vec<String>,
        facts: Arc<SystemFacts>,
        self_monitor: Option<SelfMonitor>,
    ) -> LinuxGroup {
        let kernel = match <[KernelGroup; 1]>::try_from(groups) {
            Ok([group]) => match Self::in_order(&group, names.len(), self_monitor.is_some()) {
                Some(record) => Kernel::InOrder { group, record },
                None => Kernel::any(vec![group]),
            },
            Err(groups) => Kernel::any(groups),
        };
        LinuxGroup {
            kernel,
            names,
            facts,
            self_monitor,
        }
    }

    /// The record [`read_in_order`] reads `group` into, where it may: a group read as a
    /// group, holding the `len` events in request order, not read in user space, and listed
    /// in that order by the kernel, as one read shows now.
    fn in_order(group: &KernelGroup, len: usize, self_monitored: bool) -> Option<Vec<u64>> {
        let shaped = group.format == ReadFormat::Group
            && !self_monitored
            && group.len() == len
            && group.ids.len() == len
            && group.slots.iter().copied().eq(0..len);
        if !shaped {
            return None;
        }
        let mut record = vec![0u64; 3 + 2 * len];
        let bytes = sys::read_words(group.leader.as_fd(), &mut record).ok()?;
        lists_in_order(&record, bytes, &group.ids).then_some(record)
    }

    /// The kernel groups, in the order they were opened.
    fn groups(&self) -> &[KernelGroup] {
        self.kernel.groups()
    }

    /// The event names, in request order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// How many kernel groups back this group (1 when grouped on one PMU).
    pub fn kernel_groups(&self) -> usize {
        self.groups().len()
    }

    /// The group leaders' descriptors (for `poll`, or for comparing against raw reads).
    pub fn leader_fds(&self) -> impl Iterator<Item = BorrowedFd<'_>> {
        self.groups().iter().map(|g| g.leader.as_fd())
    }

    /// Every event's descriptor, in request order.
    pub fn event_fds(&self) -> Vec<BorrowedFd<'_>> {
        let mut fds: Vec<(usize, BorrowedFd<'_>)> = self
            .groups()
            .iter()
            .flat_map(|g| g.slots.iter().copied().zip(g.fds().map(AsFd::as_fd)))
            .collect();
        fds.sort_by_key(|(slot, _)| *slot);
        fds.into_iter().map(|(_, fd)| fd).collect()
    }

    /// Whether reads try `rdpmc` first (own thread, not inherited, PMU allows it).
    pub fn self_monitoring(&self) -> bool {
        self.self_monitor.is_some()
    }

    /// Sends `request` to every kernel group's leader with `argument`.
    ///
    /// Enable and disable go to the leader alone (`argument` 0): its members were opened
    /// enabled, so they count exactly while their leader does. `PERF_IOC_FLAG_GROUP` would
    /// also switch each member, and on Linux 6.18 a member of another PMU than its leader's
    /// (a tracepoint or `task-clock` under a `page-faults` leader) switched off that way is
    /// never switched on again: a restarted group would count its leader only. PAPI's
    /// perf_event component sends them to the leader alone for the same reason. Reset takes
    /// the group flag, which zeroes every member in one step and resumes nothing.
    fn ioctl_leaders(&self, request: u64, argument: u64, name: &'static str) -> Result<()> {
        for group in self.groups() {
            sys::ioctl_int(group.leader.as_fd(), request, argument)
                .map_err(|errno| map_errno(errno, Operation::Ioctl(name), &self.facts))?;
        }
        Ok(())
    }

    /// `PERF_EVENT_IOC_REFRESH` on every leader: enables it for `count` more overflows (for
    /// events opened with [`crate::LinuxBackend::open_sampling`]).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] when the kernel refuses (EINVAL: a counting event, an
    /// inherited one, or a count of 0); [`ErrorKind::PermissionDenied`] or
    /// [`ErrorKind::Other`] for the rarer errnos, mapped by [`crate::map_errno`].
    pub fn refresh(&mut self, count: u32) -> Result<()> {
        for group in self.groups() {
            sys::ioctl_int(group.leader.as_fd(), sys::IOC_REFRESH, u64::from(count))
                .map_err(|errno| map_errno(errno, Operation::Ioctl("REFRESH"), &self.facts))?;
        }
        Ok(())
    }

    /// `PERF_EVENT_IOC_PERIOD` on every event: a new sample period (for events opened with
    /// [`crate::LinuxBackend::open_sampling`]).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] when the kernel refuses (EINVAL: a counting event, or a
    /// period of 0 or above 2^63); [`ErrorKind::PermissionDenied`] or [`ErrorKind::Other`] for
    /// the rarer errnos, mapped by [`crate::map_errno`].
    pub fn set_period(&mut self, period: u64) -> Result<()> {
        for fd in self.groups().iter().flat_map(KernelGroup::fds) {
            sys::ioctl_period(fd.as_fd(), period)
                .map_err(|errno| map_errno(errno, Operation::Ioctl("PERIOD"), &self.facts))?;
        }
        Ok(())
    }

    /// `PERF_EVENT_IOC_SET_FILTER` on the event at `index` (tracepoints).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for a bad index, a filter with a NUL byte, or a filter or
    /// event the kernel rejects (EINVAL).
    pub fn set_filter(&mut self, index: usize, filter: &str) -> Result<()> {
        let fds = self.event_fds();
        let fd = fds.get(index).ok_or_else(|| {
            Error::invalid_input(format!(
                "event index {index} out of range (0..{})",
                fds.len()
            ))
        })?;
        crate::tracepoints::set_filter(*fd, filter)
    }

    /// `PERF_EVENT_IOC_SET_OUTPUT` from the event at `index` to the one at `target`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for a bad index, or when the kernel refuses (EINVAL: the
    /// target has no mapped ring buffer, is the event itself or another CPU's or task's, or
    /// the event has a mapping of its own).
    pub fn set_output(&mut self, index: usize, target: Option<usize>) -> Result<()> {
        let fds = self.event_fds();
        let get = |i: usize| {
            fds.get(i).copied().ok_or_else(|| {
                Error::invalid_input(format!("event index {i} out of range (0..{})", fds.len()))
            })
        };
        let fd = get(index)?;
        let target = target.map(get).transpose()?;
        sys::ioctl_set_output(fd, target)
            .map_err(|errno| map_errno(errno, Operation::Ioctl("SET_OUTPUT"), &self.facts))
    }

    /// Reads every event in user space (`rdpmc` on x86, `mrs` on aarch64) from its mapped page,
    /// without a system call; `false` (and `readings` unspecified) when that cannot be done
    /// now: not this group's thread, no self-monitoring, an event off its counter. [`Group::read`]
    /// tries this first; this and [`LinuxGroup::read_through_kernel`] let a test compare the
    /// two ways.
    pub fn read_in_user_space(&self, readings: &mut [Reading]) -> bool {
        readings.len() == self.names.len() && self.read_self_monitored(readings)
    }

    /// The words of scratch [`LinuxGroup::read_shared`] needs: its largest kernel group's
    /// record.
    pub fn shared_read_words(&self) -> usize {
        match &self.kernel {
            Kernel::InOrder { record, .. } => record.len(),
            Kernel::Groups { buffer, .. } => buffer.len(),
        }
    }

    /// Reads every event as [`Group::read`] does, through a shared reference and into the
    /// caller's scratch `words` ([`LinuxGroup::shared_read_words`] long), so that several
    /// reads may run at once: on other threads, and in a signal handler that interrupted a
    /// read. It takes no lock and allocates nothing, on its errors too (told as an
    /// [`std::io::Error`] of the OS's errno or of a kind), and its system call, `read(2)` of
    /// a perf fd, is async-signal-safe: a handler may call it.
    ///
    /// # Errors
    /// The errno of a `read(2)` that failed; [`std::io::ErrorKind::InvalidInput`] for
    /// `readings` shorter than the group or `words` shorter than its record;
    /// [`std::io::ErrorKind::UnexpectedEof`] for a group that read nothing (a pinned group in
    /// error state: [`ErrorKind::NotCounted`] in [`Group::read`]);
    /// [`std::io::ErrorKind::InvalidData`] for a record that does not decode (the message
    /// [`Group::read`] gives is built on that path only).
    pub fn read_shared(&self, readings: &mut [Reading], words: &mut [u64]) -> std::io::Result<()> {
        use std::io::{Error as IoError, ErrorKind as IoKind};
        // The common group first, as `read` reads it (never self-monitored).
        let groups = match &self.kernel {
            Kernel::InOrder { group, record } => {
                return read_in_order_shared(group, words.get_mut(..record.len()), readings);
            }
            Kernel::Groups { groups, buffer } => (groups, buffer.len()),
        };
        if readings.len() < self.names.len() {
            return Err(IoKind::InvalidInput.into());
        }
        if self.self_monitor.is_some() && self.read_self_monitored(readings) {
            return Ok(());
        }
        let (groups, words_needed) = groups;
        let record = words.get_mut(..words_needed);
        let record = record.ok_or(IoError::from(IoKind::InvalidInput))?;
        let malformed = |e: Error| match e.kind() {
            ErrorKind::NotCounted => IoError::from(IoKind::UnexpectedEof),
            _ => IoKind::InvalidData.into(),
        };
        let errno = IoError::from_raw_os_error;
        Self::read_each_kernel_group(groups, record, readings, errno, malformed)
    }

    /// Reads every event with `read()` on its kernel group, never in user space.
    ///
    /// # Errors
    /// As [`Group::read`].
    pub fn read_through_kernel(&mut self, readings: &mut [Reading]) -> Result<()> {
        check_buffer("readings", self.names.len(), readings.len())?;
        self.read_kernel(readings)
    }

    fn read_self_monitored(&self, readings: &mut [Reading]) -> bool {
        let Some(monitor) = &self.self_monitor else {
            return false;
        };
        if monitor.stale || !rdpmc_allowed(monitor.thread, this_thread()) {
            return false;
        }
        for (page, out) in monitor.pages.iter().zip(readings.iter_mut()) {
            match self_monitored_read(page, sys::rdpmc, sys::timestamp_counter) {
                Ok(reading) => *out = reading,
                Err(_) => return false,
            }
        }
        true
    }

    /// Reads through the kernel: one `read` for the common case of one kernel group read as
    /// a group (kept small and inline: the read path of every grouped set), else each group.
    #[inline(always)]
    fn read_kernel(&mut self, readings: &mut [Reading]) -> Result<()> {
        let (groups, buffer) = match &mut self.kernel {
            Kernel::InOrder { group, record } => {
                return read_in_order(group, record, &self.facts, readings);
            }
            Kernel::Groups { groups, buffer } => (groups, buffer),
        };
        if let [group] = groups.as_slice()
            && group.format == ReadFormat::Group
        {
            let bytes = match sys::read_words(group.leader.as_fd(), buffer) {
                Ok(bytes) => bytes,
                Err(errno) => return Err(read_error(errno, &self.facts)),
            };
            return parse_group_read(buffer, bytes, &group.ids, &group.slots, readings);
        }
        let facts = &self.facts;
        let errno = |errno| map_errno(errno, Operation::Read, facts);
        Self::read_each_kernel_group(groups, buffer, readings, errno, |e| e)
    }

    /// Where the kernel may leave a page wrong after a reset (aarch64, see
    /// [`PAGES_KEPT_ACROSS_RESETS`]), checks the self-monitored pages against the kernel's
    /// `read()` and marks them stale while they disagree; nothing elsewhere. Allocates the two
    /// readings it compares (on the reset and enable paths, never on the read path).
    #[inline]
    fn check_pages(&mut self) -> Result<()> {
        if PAGES_KEPT_ACROSS_RESETS || self.self_monitor.is_none() {
            return Ok(());
        }
        self.recheck_pages()
    }

    #[cold]
    #[inline(never)]
    fn recheck_pages(&mut self) -> Result<()> {
        let len = self.names.len();
        let (mut kernel, mut user) = (vec![Reading::default(); len], vec![Reading::default(); len]);
        if let Some(monitor) = &mut self.self_monitor {
            monitor.stale = false;
        }
        self.read_kernel(&mut kernel)?;
        // A group read on another thread, or not on its counters now, reads through the kernel
        // anyway: nothing to judge.
        let stale = self.read_self_monitored(&mut user) && !pages_agree(&kernel, &user);
        if let Some(monitor) = &mut self.self_monitor {
            monitor.stale = stale;
        }
        Ok(())
    }

    /// Reads each kernel group of `groups` (several PMUs, or events opened one by one)
    /// through `buffer`; a failed `read(2)`'s errno is told by `errno`, a record that does
    /// not decode by `malformed` (the shared read tells both without allocating).
    fn read_each_kernel_group<E>(
        groups: &[KernelGroup],
        buffer: &mut [u64],
        readings: &mut [Reading],
        errno: impl Fn(i32) -> E,
        malformed: impl Fn(Error) -> E,
    ) -> std::result::Result<(), E> {
        for group in groups {
            match group.format {
                ReadFormat::Group => {
                    let bytes = sys::read_words(group.leader.as_fd(), buffer).map_err(&errno)?;
                    parse_group_read(buffer, bytes, &group.ids, &group.slots, readings)
                        .map_err(&malformed)?;
                }
                ReadFormat::Single => {
                    for ((fd, id), slot) in group.fds().zip(&group.ids).zip(&group.slots) {
                        let bytes =
                            sys::read_words(fd.as_fd(), &mut buffer[..4]).map_err(&errno)?;
                        readings[*slot] =
                            parse_single_read(buffer, bytes, *id).map_err(&malformed)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl counterhal_hal::SharedRead for LinuxGroup {
    fn shared_read_words(&self) -> usize {
        LinuxGroup::shared_read_words(self)
    }

    #[inline(always)]
    fn read_shared(&self, readings: &mut [Reading], words: &mut [u64]) -> std::io::Result<()> {
        LinuxGroup::read_shared(self, readings, words)
    }
}

impl Group for LinuxGroup {
    fn len(&self) -> usize {
        self.names.len()
    }

    fn shared_read(&self) -> Option<&dyn counterhal_hal::SharedRead> {
        Some(self)
    }

    fn enable(&mut self) -> Result<()> {
        self.ioctl_leaders(IOC_ENABLE, 0, "ENABLE")?;
        self.check_pages()
    }

    fn disable(&mut self) -> Result<()> {
        self.ioctl_leaders(IOC_DISABLE, 0, "DISABLE")
    }

    fn reset(&mut self) -> Result<()> {
        self.ioctl_leaders(IOC_RESET, IOC_FLAG_GROUP, "RESET")?;
        self.check_pages()
    }

    #[inline(always)]
    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        if let Kernel::InOrder { group, record } = &mut self.kernel {
            return read_in_order(group, record, &self.facts, readings);
        }
        check_buffer("readings", self.names.len(), readings.len())?;
        if self.self_monitor.is_some() && self.read_self_monitored(readings) {
            return Ok(());
        }
        self.read_kernel(readings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdpmc_only_on_the_opening_thread() {
        let here = std::thread::current().id();
        let there = std::thread::spawn(|| std::thread::current().id())
            .join()
            .unwrap();
        assert!(rdpmc_allowed(here, here));
        assert!(!rdpmc_allowed(here, there));
    }

    /// A group moved to another thread reads through the kernel: its self-monitoring state
    /// (here with no pages, so a self-monitored read would succeed without touching the
    /// readings) is ignored there.
    #[test]
    fn a_group_moved_to_another_thread_reads_through_the_kernel() {
        let db = Arc::new(counterhal_events::Database::shipped().unwrap());
        let backend = crate::probe(db, None, counterhal_system::System::host()).unwrap();
        let request = counterhal_hal::EventRequest::new(
            "task-clock",
            counterhal_hal::Encoding::Perf(counterhal_hal::PerfAttr::new(1, 1)),
        );
        let mut group = counterhal_hal::Backend::open(
            &backend,
            &[request],
            &counterhal_hal::BackendTarget::ThisThread,
            &counterhal_hal::OpenOptions::default(),
        )
        .unwrap();
        group.self_monitor = Some(SelfMonitor {
            pages: Vec::new(),
            thread: std::thread::current().id(),
            stale: false,
        });
        // A self-monitored group is never read in order: as `new` would have opened it.
        if let Kernel::InOrder { group: one, .. } =
            std::mem::replace(&mut group.kernel, Kernel::any(Vec::new()))
        {
            group.kernel = Kernel::any(vec![one]);
        }
        let mut readings = [Reading::default()];
        // On the opening thread the (empty) self-monitored read is taken: nothing is filled.
        assert!(group.read_self_monitored(&mut readings));
        // Elsewhere the kernel is read: it overwrites the marker (the event counts the opening
        // thread, which waits here, so its times may be 0).
        let marker = Reading::new(u64::MAX, u64::MAX, u64::MAX);
        let readings = std::thread::spawn(move || {
            let mut readings = [marker];
            assert!(!group.read_self_monitored(&mut readings));
            group.read(&mut readings).unwrap();
            readings
        })
        .join()
        .unwrap();
        assert_ne!(readings[0], marker, "the kernel was not read");
    }

    /// This machine's backend and requests for the software events of `configs`.
    fn software(configs: &[u64]) -> (crate::LinuxBackend, Vec<counterhal_hal::EventRequest>) {
        let db = Arc::new(counterhal_events::Database::shipped().unwrap());
        let backend = crate::probe(db, None, counterhal_system::System::host()).unwrap();
        let requests = configs
            .iter()
            .map(|&config| {
                counterhal_hal::EventRequest::new(
                    "sw",
                    counterhal_hal::Encoding::Perf(counterhal_hal::PerfAttr::new(1, config)),
                )
            })
            .collect();
        (backend, requests)
    }

    /// Four software events opened as one group on this thread.
    fn software_four() -> LinuxGroup {
        // task-clock, page-faults, context-switches, cpu-migrations.
        let (backend, requests) = software(&[1, 2, 3, 4]);
        counterhal_hal::Backend::open(
            &backend,
            &requests,
            &counterhal_hal::BackendTarget::ThisThread,
            &counterhal_hal::OpenOptions::grouped(),
        )
        .unwrap()
    }

    /// A group of software events is read in request order, as the kernel lists it: its
    /// read gives what the kernel's own record of the (stopped) group gives read by id.
    /// Oracle: the kernel's `PERF_FORMAT_GROUP | ID` record, each value matched to its event
    /// by `PERF_EVENT_IOC_ID`.
    #[test]
    fn a_group_is_read_in_order_as_the_kernel_lists_it() {
        let mut group = software_four();
        assert!(matches!(group.kernel, Kernel::InOrder { .. }), "{group:?}");
        group.enable().unwrap();
        let _ = std::hint::black_box(vec![1u8; 1 << 20]);
        group.disable().unwrap();
        let mut read = [Reading::default(); 4];
        group.read(&mut read).unwrap();
        let kernel = &group.groups()[0];
        let mut words = [0u64; 3 + 2 * 4];
        let bytes = sys::read_words(kernel.leader.as_fd(), &mut words).unwrap();
        let mut by_id = [Reading::default(); 4];
        parse_group_read(&words, bytes, &kernel.ids, &kernel.slots, &mut by_id).unwrap();
        assert_eq!(read, by_id);
        assert!(read[0].value > 0 && read[0].time_enabled > 0, "{read:?}");
        // A short buffer is refused before anything is read, as every group refuses it.
        let e = group.read(&mut read[..3]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.message().contains("holds 3 entries"), "{e}");
        // Ungrouped, each event is its own group: not read in order.
        let request = counterhal_hal::EventRequest::new(
            "sw",
            counterhal_hal::Encoding::Perf(counterhal_hal::PerfAttr::new(1, 1)),
        );
        let ungrouped = counterhal_hal::Backend::open(
            &crate::probe(
                Arc::new(counterhal_events::Database::shipped().unwrap()),
                None,
                counterhal_system::System::host(),
            )
            .unwrap(),
            &[request.clone(), request],
            &counterhal_hal::BackendTarget::ThisThread,
            &counterhal_hal::OpenOptions::ungrouped(),
        )
        .unwrap();
        assert!(matches!(ungrouped.kernel, Kernel::Groups { .. }));
    }

    /// A record the in-order read does not decode (here one event shorter than its room) is
    /// read by id instead, into the same readings.
    #[test]
    fn a_record_the_in_order_read_does_not_decode_is_read_by_id() {
        let mut group = software_four();
        group.enable().unwrap();
        group.disable().unwrap();
        let mut expected = [Reading::default(); 4];
        group.read(&mut expected).unwrap();
        let Kernel::InOrder { record, .. } = &mut group.kernel else {
            panic!("not read in order: {group:?}");
        };
        record.extend([0, 0]);
        let marker = Reading::new(7, 7, 7);
        let mut read = [marker; 5];
        group.read(&mut read).unwrap();
        assert_eq!(read[..4], expected);
        assert_eq!(read[4], marker);
    }

    fn sampling_pair() -> LinuxGroup {
        let (backend, requests) = software(&[1, 0]);
        backend
            .open_sampling(
                &requests,
                &counterhal_hal::BackendTarget::ThisThread,
                &counterhal_hal::OpenOptions::default(),
                1_000_000,
            )
            .unwrap()
    }

    /// SET_OUTPUT from one event to another whose ring buffer is mapped, and back to none;
    /// the kernel's refusals are the ioctl's InvalidInput with the SET_OUTPUT hint.
    #[test]
    fn set_output_between_mapped_events() {
        let mut group = sampling_pair();
        let target_page = UserPageMap::map(group.event_fds()[1]).unwrap();
        group.set_output(0, Some(1)).unwrap();
        group.set_output(0, None).unwrap();
        // Not to itself.
        let e = group.set_output(0, Some(0)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.hint().unwrap().contains("ring buffer"), "{e}");
        // Not from an event that has a mapping of its own.
        let e = group.set_output(1, Some(0)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert_eq!(e.errno(), Some(libc::EINVAL));
        // Not to an index that does not exist.
        let e = group.set_output(0, Some(2)).unwrap_err();
        assert!(e.message().contains("out of range"), "{e}");
        drop(target_page);
    }

    /// A perf ioctl on a descriptor that is no perf event is InvalidInput, not Other.
    #[test]
    fn ioctl_on_a_non_perf_descriptor() {
        let file = std::fs::File::open("/dev/null").unwrap();
        let errno = sys::ioctl_period(file.as_fd(), 1_000).unwrap_err();
        let e = map_errno(errno, Operation::Ioctl("PERIOD"), &SystemFacts::unknown());
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.message().contains("not a perf event"), "{e}");
    }
}
