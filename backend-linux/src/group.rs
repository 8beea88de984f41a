//! [`LinuxGroup`]: perf event fds organised as kernel groups, read by id.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::thread::ThreadId;

use counterhal_hal::{Error, ErrorKind, Group, Reading, Result, check_buffer};

use crate::errno::{Operation, SystemFacts, map_errno};
use crate::rdpmc::self_monitored_read;
use crate::sys::{self, IOC_DISABLE, IOC_ENABLE, IOC_FLAG_GROUP, IOC_RESET, UserPageMap};

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
    /// The fds, leader first.
    pub fds: Vec<OwnedFd>,
    /// Each fd's id (`PERF_EVENT_IOC_ID`).
    pub ids: Vec<u64>,
    /// Each fd's index in the caller's request order.
    pub slots: Vec<usize>,
    /// How it is read.
    pub format: ReadFormat,
}

/// Self-monitoring state: one mapped page per event, in request order, and the thread that
/// opened them (the only one whose counters `rdpmc` reads).
#[derive(Debug)]
pub(crate) struct SelfMonitor {
    pub pages: Vec<UserPageMap>,
    pub thread: ThreadId,
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
    groups: Vec<KernelGroup>,
    names: Vec<String>,
    buffer: Vec<u64>,
    facts: Arc<SystemFacts>,
    self_monitor: Option<SelfMonitor>,
}

/// Parses one `PERF_FORMAT_GROUP | ID | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` read of
/// `bytes` bytes in `words` into `readings`, matching each value to its event by id.
///
/// # Errors
/// [`ErrorKind::NotCounted`] for a zero-byte read (a pinned group in error state);
/// [`ErrorKind::Other`] when the record is short, its count differs from the group's, or an id
/// is unknown.
#[inline(always)]
pub(crate) fn parse_group_read(
    words: &[u64],
    bytes: usize,
    ids: &[u64],
    slots: &[usize],
    readings: &mut [Reading],
) -> Result<()> {
    let n = ids.len();
    let needed = 3 + 2 * n;
    if bytes < needed * 8 || words.len() < needed || words[0] != n as u64 {
        return Err(malformed_group_read(words, bytes, n));
    }
    let (time_enabled, time_running) = (words[1], words[2]);
    let pairs = words[3..needed].chunks_exact(2);
    for ((pair, &expected), &slot) in pairs.zip(ids).zip(slots) {
        let (value, id) = (pair[0], pair[1]);
        // The kernel lists the leader then members in attach order, so position k usually
        // holds ids[k]; the id decides either way.
        let slot = if expected == id {
            slot
        } else {
            slot_of(id, ids, slots).ok_or_else(|| unknown_id(id))?
        };
        let Some(out) = readings.get_mut(slot) else {
            return Err(slot_outside(slot));
        };
        *out = Reading {
            value,
            time_enabled,
            time_running,
        };
    }
    Ok(())
}

/// Why a group read of `bytes` bytes in `words` is not a record of `n` events.
#[cold]
#[inline(never)]
fn malformed_group_read(words: &[u64], bytes: usize, n: usize) -> Error {
    let needed = (3 + 2 * n) * 8;
    if bytes == 0 {
        return not_counted();
    }
    if bytes < needed || words.len() < 3 + 2 * n {
        return Error::new(
            ErrorKind::Other,
            format!("group read returned {bytes} bytes, expected {needed}"),
        );
    }
    Error::new(
        ErrorKind::Other,
        format!("group read reports {} events, the group has {n}", words[0]),
    )
}

#[cold]
#[inline(never)]
fn slot_outside(slot: usize) -> Error {
    Error::new(
        ErrorKind::Other,
        format!("event slot {slot} outside the readings"),
    )
}

/// The error of a failed `read` of a counter.
#[cold]
#[inline(never)]
fn read_error(errno: i32, facts: &SystemFacts) -> Error {
    map_errno(errno, Operation::Read, facts)
}

#[cold]
fn slot_of(id: u64, ids: &[u64], slots: &[usize]) -> Option<usize> {
    ids.iter().position(|known| *known == id).map(|i| slots[i])
}

#[cold]
fn unknown_id(id: u64) -> Error {
    Error::new(
        ErrorKind::Other,
        format!("group read has unknown event id {id}"),
    )
}

/// Parses one `ID | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` read (no group format).
pub(crate) fn parse_single_read(words: &[u64], bytes: usize, id: u64) -> Result<Reading> {
    if bytes == 0 {
        return Err(not_counted());
    }
    if bytes < 32 || words.len() < 4 {
        return Err(Error::new(
            ErrorKind::Other,
            format!("read returned {bytes} bytes, expected 32"),
        ));
    }
    if words[3] != id {
        return Err(Error::new(
            ErrorKind::Other,
            format!("read returned event id {}, expected {id}", words[3]),
        ));
    }
    Ok(Reading {
        value: words[0],
        time_enabled: words[1],
        time_running: words[2],
    })
}

fn not_counted() -> Error {
    Error::new(
        ErrorKind::NotCounted,
        "the read returned no data: the group is in error state",
    )
    .with_hint(
        "a pinned group that could not be scheduled stays in error until re-enabled; open it \
             unpinned to let the kernel multiplex it",
    )
}

impl LinuxGroup {
    pub(crate) fn new(
        groups: Vec<KernelGroup>,
        names: Vec<String>,
        facts: Arc<SystemFacts>,
        self_monitor: Option<SelfMonitor>,
    ) -> LinuxGroup {
        let largest = groups.iter().map(|g| g.fds.len()).max().unwrap_or(0);
        let buffer = vec![0u64; 3 + 2 * largest.max(2)];
        LinuxGroup {
            groups,
            names,
            buffer,
            facts,
            self_monitor,
        }
    }

    /// The event names, in request order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// How many kernel groups back this group (1 when grouped on one PMU).
    pub fn kernel_groups(&self) -> usize {
        self.groups.len()
    }

    /// The group leaders' descriptors (for `poll`, or for comparing against raw reads).
    pub fn leader_fds(&self) -> impl Iterator<Item = BorrowedFd<'_>> {
        self.groups
            .iter()
            .filter_map(|g| g.fds.first().map(AsFd::as_fd))
    }

    /// Every event's descriptor, in request order.
    pub fn event_fds(&self) -> Vec<BorrowedFd<'_>> {
        let mut fds: Vec<(usize, BorrowedFd<'_>)> = self
            .groups
            .iter()
            .flat_map(|g| g.slots.iter().copied().zip(g.fds.iter().map(AsFd::as_fd)))
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
        for group in &self.groups {
            let Some(leader) = group.fds.first() else {
                continue;
            };
            sys::ioctl_int(leader.as_fd(), request, argument)
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
        for group in &self.groups {
            let Some(leader) = group.fds.first() else {
                continue;
            };
            sys::ioctl_int(leader.as_fd(), sys::IOC_REFRESH, u64::from(count))
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
        for fd in self.groups.iter().flat_map(|g| g.fds.iter()) {
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
        crate::tracefs::set_filter(*fd, filter)
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
        if !rdpmc_allowed(monitor.thread, this_thread()) {
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
        if let [group] = self.groups.as_slice()
            && group.format == ReadFormat::Group
        {
            let bytes = match sys::read_words(group.fds[0].as_fd(), &mut self.buffer) {
                Ok(bytes) => bytes,
                Err(errno) => return Err(read_error(errno, &self.facts)),
            };
            return parse_group_read(&self.buffer, bytes, &group.ids, &group.slots, readings);
        }
        self.read_each_kernel_group(readings)
    }

    /// Reads each kernel group (several PMUs, or events opened one by one).
    fn read_each_kernel_group(&mut self, readings: &mut [Reading]) -> Result<()> {
        let LinuxGroup {
            groups,
            buffer,
            facts,
            ..
        } = self;
        for group in groups.iter() {
            match group.format {
                ReadFormat::Group => {
                    let leader = group.fds[0].as_fd();
                    let bytes = sys::read_words(leader, buffer)
                        .map_err(|errno| map_errno(errno, Operation::Read, facts))?;
                    parse_group_read(buffer, bytes, &group.ids, &group.slots, readings)?;
                }
                ReadFormat::Single => {
                    for ((fd, id), slot) in group.fds.iter().zip(&group.ids).zip(&group.slots) {
                        let bytes = sys::read_words(fd.as_fd(), &mut buffer[..4])
                            .map_err(|errno| map_errno(errno, Operation::Read, facts))?;
                        readings[*slot] = parse_single_read(buffer, bytes, *id)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl Group for LinuxGroup {
    fn len(&self) -> usize {
        self.names.len()
    }

    fn enable(&mut self) -> Result<()> {
        self.ioctl_leaders(IOC_ENABLE, 0, "ENABLE")
    }

    fn disable(&mut self) -> Result<()> {
        self.ioctl_leaders(IOC_DISABLE, 0, "DISABLE")
    }

    fn reset(&mut self) -> Result<()> {
        self.ioctl_leaders(IOC_RESET, IOC_FLAG_GROUP, "RESET")
    }

    #[inline(always)]
    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
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
    fn group_read_matches_by_id_not_position() {
        // The kernel lists ids 30, 10, 20; the caller's order is 10, 20, 30.
        let words = [3, 1_000, 900, 333, 30, 111, 10, 222, 20];
        let ids = [10, 20, 30];
        let slots = [0, 1, 2];
        let mut out = [Reading::default(); 3];
        parse_group_read(&words, words.len() * 8, &ids, &slots, &mut out).unwrap();
        assert_eq!(out[0], Reading::new(111, 1_000, 900));
        assert_eq!(out[1], Reading::new(222, 1_000, 900));
        assert_eq!(out[2], Reading::new(333, 1_000, 900));
        // Slots place readings in request order across kernel groups.
        let mut out = [Reading::default(); 5];
        parse_group_read(&words, 72, &ids, &[4, 0, 2], &mut out).unwrap();
        assert_eq!((out[4].value, out[0].value, out[2].value), (111, 222, 333));
    }

    #[test]
    fn group_read_errors() {
        let mut out = [Reading::default(); 2];
        let e = parse_group_read(&[0; 7], 0, &[1, 2], &[0, 1], &mut out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotCounted);
        let e = parse_group_read(&[2, 0, 0, 5, 1], 40, &[1, 2], &[0, 1], &mut out).unwrap_err();
        assert!(e.message().contains("expected 56"), "{e}");
        let e =
            parse_group_read(&[3, 0, 0, 5, 1, 6, 2], 56, &[1, 2], &[0, 1], &mut out).unwrap_err();
        assert!(e.message().contains("3 events"), "{e}");
        let e =
            parse_group_read(&[2, 0, 0, 5, 1, 6, 9], 56, &[1, 2], &[0, 1], &mut out).unwrap_err();
        assert!(e.message().contains("unknown event id 9"), "{e}");
    }

    /// A group read as the kernel writes it: events in its order, readings in the caller's.
    #[derive(Debug)]
    struct Record {
        words: Vec<u64>,
        ids: Vec<u64>,
        slots: Vec<usize>,
        want: Vec<Reading>,
    }

    fn record(g: &mut counterhal_conformance::prop::Gen) -> Record {
        let n = 1 + g.index(8);
        // Distinct ids, and slots that are a permutation of 0..n.
        let ids: Vec<u64> = (0..n as u64).map(|i| (g.u64() << 4) | i).collect();
        let mut slots: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            slots.swap(i, g.index(i + 1));
        }
        let (enabled, running) = (g.edgy_u64(), g.edgy_u64());
        let values: Vec<u64> = (0..n).map(|_| g.edgy_u64()).collect();
        // The kernel's order: any permutation of the caller's.
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, g.index(i + 1));
        }
        let mut words = vec![n as u64, enabled, running];
        for &k in &order {
            words.extend([values[k], ids[k]]);
        }
        let mut want = vec![Reading::default(); n];
        for k in 0..n {
            want[slots[k]] = Reading::new(values[k], enabled, running);
        }
        Record {
            words,
            ids,
            slots,
            want,
        }
    }

    #[test]
    fn group_reads_parse_whatever_the_kernels_order() {
        counterhal_conformance::prop::check(
            "parse_group_read matches values to events by id",
            record,
            counterhal_conformance::prop::no_shrink,
            |r| {
                let mut out = vec![Reading::default(); r.want.len()];
                let bytes = r.words.len() * 8;
                parse_group_read(&r.words, bytes, &r.ids, &r.slots, &mut out)
                    .map_err(|e| e.to_string())?;
                (out == r.want).then_some(()).ok_or(format!("read {out:?}"))
            },
        );
    }

    #[test]
    fn short_or_garbled_group_reads_are_errors_never_panics() {
        counterhal_conformance::prop::check(
            "parse_group_read refuses short and garbled records",
            |g| {
                let mut r = record(g);
                let cut = g.index(r.words.len());
                let garble = g.index(r.words.len());
                if g.one_in(2) {
                    r.words.truncate(cut);
                } else {
                    r.words[garble] ^= 1 << g.below(64);
                }
                r
            },
            counterhal_conformance::prop::no_shrink,
            |r| {
                let mut out = vec![Reading::default(); r.want.len()];
                let bytes = r.words.len() * 8;
                let short = r.words.len() < 3 + 2 * r.ids.len();
                match parse_group_read(&r.words, bytes, &r.ids, &r.slots, &mut out) {
                    Ok(()) if short => Err(format!("{} words accepted", r.words.len())),
                    // A flipped value or time bit still parses, into what the words say.
                    Ok(()) => Ok(()),
                    Err(e) if !e.message().is_empty() => Ok(()),
                    Err(e) => Err(format!("an error without a message: {e:?}")),
                }
            },
        );
    }

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
        let backend = crate::probe(db, None).unwrap();
        let request = counterhal_hal::EventRequest::new(
            "task-clock",
            counterhal_hal::Encoding::Perf(counterhal_hal::PerfAttr::new(1, 1)),
        );
        let mut group = counterhal_hal::Backend::open(
            &backend,
            &[request],
            &counterhal_hal::Target::ThisThread,
            &counterhal_hal::OpenOptions::default(),
        )
        .unwrap();
        group.self_monitor = Some(SelfMonitor {
            pages: Vec::new(),
            thread: std::thread::current().id(),
        });
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

    fn sampling_pair() -> LinuxGroup {
        let db = Arc::new(counterhal_events::Database::shipped().unwrap());
        let backend = crate::probe(db, None).unwrap();
        let requests: Vec<_> = [1, 0]
            .into_iter()
            .map(|config| {
                counterhal_hal::EventRequest::new(
                    "sw",
                    counterhal_hal::Encoding::Perf(counterhal_hal::PerfAttr::new(1, config)),
                )
            })
            .collect();
        backend
            .open_sampling(
                &requests,
                &counterhal_hal::Target::ThisThread,
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

    #[test]
    fn single_read() {
        assert_eq!(
            parse_single_read(&[7, 100, 50, 4], 32, 4).unwrap(),
            Reading::new(7, 100, 50)
        );
        assert_eq!(
            parse_single_read(&[0; 4], 0, 4).unwrap_err().kind(),
            ErrorKind::NotCounted
        );
        assert!(parse_single_read(&[7, 100, 50, 5], 32, 4).is_err());
        assert!(parse_single_read(&[7, 100, 50, 4], 24, 4).is_err());
    }
}
