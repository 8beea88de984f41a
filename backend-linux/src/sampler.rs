//! Sampling through perf_event_open: an event (the leader; other events of a group ride along
//! and are read with each sample) with a sample period or frequency and a `sample_type`, its
//! ring mapped ([`sys::Ring`]), and the records walked as typed values
//! ([`counterhal_hal::Record`]). The record layouts are the kernel's
//! (`include/uapi/linux/perf_event.h`: `PERF_RECORD_SAMPLE`, `_LOST`, `_THROTTLE`,
//! `_UNTHROTTLE`); each record is copied once out of the ring, into memory the walk keeps.

use std::os::fd::{AsFd, OwnedFd};

use counterhal_hal::{
    BackendTarget, Error, ErrorKind, EventRequest, OpenOptions, Rate, Record, Result, Sample,
    SampleOptions, Sampler, Wakeup, Walked,
};

use crate::attr::{build_attr, check_period};
use crate::backend::{LinuxBackend, perf_encoding};
use crate::errno::{EventClass, OpenAttempt, Operation, map_errno};
use crate::group::ReadFormat;
use crate::sys::{
    self, FORMAT_GROUP, FORMAT_ID, FORMAT_LOST, FORMAT_TOTAL_TIME_ENABLED,
    FORMAT_TOTAL_TIME_RUNNING, Ring, attr_bit,
};

/// `PERF_SAMPLE_*` bits (`enum perf_event_sample_format`).
pub(crate) mod sample_bit {
    /// `PERF_SAMPLE_IP`.
    pub const IP: u64 = 1 << 0;
    /// `PERF_SAMPLE_TID`.
    pub const TID: u64 = 1 << 1;
    /// `PERF_SAMPLE_TIME`.
    pub const TIME: u64 = 1 << 2;
    /// `PERF_SAMPLE_ADDR`.
    pub const ADDR: u64 = 1 << 3;
    /// `PERF_SAMPLE_READ`.
    pub const READ: u64 = 1 << 4;
    /// `PERF_SAMPLE_CALLCHAIN`.
    pub const CALLCHAIN: u64 = 1 << 5;
    /// `PERF_SAMPLE_CPU`.
    pub const CPU: u64 = 1 << 7;
    /// `PERF_SAMPLE_PERIOD`.
    pub const PERIOD: u64 = 1 << 8;
}

/// `PERF_RECORD_*` types (`enum perf_event_type`).
mod record_type {
    /// `PERF_RECORD_LOST`.
    pub const LOST: u32 = 2;
    /// `PERF_RECORD_THROTTLE`.
    pub const THROTTLE: u32 = 5;
    /// `PERF_RECORD_UNTHROTTLE`.
    pub const UNTHROTTLE: u32 = 6;
    /// `PERF_RECORD_SAMPLE`.
    pub const SAMPLE: u32 = 9;
}

/// `kernel.perf_event_max_sample_rate` of `system`, the highest frequency `perf_event_open`
/// takes, where it can be read.
fn max_sample_rate(system: &counterhal_system::System) -> Option<u64> {
    system.perf_event_max_sample_rate()
}

/// Refuses a rate the kernel would refuse with a bare EINVAL: a period past 2^63 - 1, or a
/// frequency above `max_rate` (`kernel.perf_event_max_sample_rate`; perf record
/// `--strict-freq` refuses it too, naming the limit).
///
/// # Errors
/// [`ErrorKind::InvalidInput`] naming the value and the limit.
fn check_rate(rate: Rate, max_rate: Option<u64>) -> Result<()> {
    match rate {
        Rate::Period(period) => check_period(period),
        Rate::Frequency(hz) => match max_rate {
            Some(max) if hz > max => Err(Error::invalid_input(format!(
                "a sample frequency of {hz} Hz"
            ))
            .with_hint(format!(
                "kernel.perf_event_max_sample_rate is {max} Hz here: ask for at most that, or \
                 for a period (root may raise the limit in \
                 /proc/sys/kernel/perf_event_max_sample_rate)"
            ))),
            _ => Ok(()),
        },
    }
}

/// A sampling event on Linux, with its ring.
#[derive(Debug)]
pub struct LinuxSampler {
    /// The leader (it samples), then the members (read with each sample).
    fds: Vec<OwnedFd>,
    ring: Ring,
    sample_type: u64,
    read_format: u64,
    /// The record being read, copied out of the ring.
    record: Vec<u64>,
    /// The group's values of the sample being read.
    values: Vec<u64>,
    /// Whether overflow signals are asked for ([`LinuxSampler::on_overflow`]).
    signals: bool,
}

impl LinuxBackend {
    /// Opens `events` as one sampler on `target`: the first samples as `options` say, the
    /// others (none, usually) are read with each of its samples where
    /// [`SampleFields::group_values`](counterhal_hal::SampleFields::group_values) is asked. It
    /// starts disabled.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] for options no backend could honour
    /// ([`SampleOptions::check`]) or no event; as [`Backend::open`](counterhal_hal::Backend::open)
    /// for the events; the `mmap` of the ring's errno (a ring larger than
    /// `kernel.perf_event_mlock_kb` allows is EPERM for an unprivileged user).
    pub fn open_sampler(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &SampleOptions,
    ) -> Result<LinuxSampler> {
        options.check()?;
        check_rate(options.rate, max_sample_rate(self.system()))?;
        if events.is_empty() {
            return Err(Error::invalid_input("no events to sample")
                .with_hint("pass the event to sample, then any to read with each sample"));
        }
        let place = self.placement(target, &OpenOptions::grouped())?;
        let fields = options.fields;
        let mut sample_type = 0;
        for (asked, bit) in [
            (fields.ip, sample_bit::IP),
            (fields.tid, sample_bit::TID),
            (fields.time, sample_bit::TIME),
            (fields.addr, sample_bit::ADDR),
            (fields.cpu, sample_bit::CPU),
            (fields.period, sample_bit::PERIOD),
            (fields.group_values, sample_bit::READ),
            (fields.callchain, sample_bit::CALLCHAIN),
        ] {
            if asked {
                sample_type |= bit;
            }
        }
        // Lost samples counted by the event where the kernel can (PERF_FORMAT_LOST, 6.0):
        // asked first, and left out when the leader's open refuses it (EINVAL).
        let mut read_format = FORMAT_TOTAL_TIME_ENABLED
            | FORMAT_TOTAL_TIME_RUNNING
            | FORMAT_ID
            | FORMAT_GROUP
            | FORMAT_LOST;
        let mut fds: Vec<OwnedFd> = Vec::with_capacity(events.len());
        for (index, request) in events.iter().enumerate() {
            let encoding = perf_encoding(request, None)?;
            let leader = index == 0;
            let mut attr = build_attr(
                &encoding,
                leader,
                &crate::attr::Placement {
                    format: ReadFormat::Group,
                    sample_period: 0,
                    ..place
                },
            );
            attr.read_format = read_format;
            if leader {
                attr.sample_type = sample_type;
                match options.rate {
                    Rate::Period(period) => attr.sample_period = period,
                    Rate::Frequency(hz) => {
                        attr.sample_period = hz;
                        attr.set_flag(attr_bit::FREQ, true);
                    }
                }
                match options.wakeup {
                    Wakeup::Samples(n) => attr.wakeup_events = n,
                    Wakeup::Bytes(n) => {
                        attr.wakeup_events = n;
                        attr.set_flag(attr_bit::WATERMARK, true);
                    }
                }
            }
            let group = fds.first().map(AsFd::as_fd);
            let mut opened = sys::perf_event_open(&mut attr, place.pid, place.cpu, group, 0);
            if leader && matches!(&opened, Err(f) if f.errno == libc::EINVAL) {
                read_format &= !FORMAT_LOST;
                attr.read_format = read_format;
                opened = sys::perf_event_open(&mut attr, place.pid, place.cpu, group, 0);
            }
            let fd = opened.map_err(|failure| {
                let attempt = OpenAttempt {
                    class: EventClass::of_type(encoding.type_),
                    counts_kernel: !attr.flag(attr_bit::EXCLUDE_KERNEL),
                    exclude: encoding.exclude_bits(),
                    inherit: place.inherit,
                    group_read: true,
                    pid: place.pid,
                    another_user: place.pid > 0
                        && crate::errno::is_refusal(failure.errno)
                        && self.system().belongs_to_another_user(place.pid as u32),
                    cpu: place.cpu,
                    cpu_online: None,
                    member: !leader,
                };
                map_errno(
                    failure.errno,
                    Operation::Open(attempt),
                    &self.facts().now(self.system(), failure.errno),
                )
                .context(&request.name)
            })?;
            if let Some(filter) = &encoding.filter {
                crate::tracepoints::set_filter(fd.as_fd(), filter)
                    .map_err(|e| e.context(&request.name))?;
            }
            fds.push(fd);
        }
        let ring = Ring::map(fds[0].as_fd(), options.ring_pages).map_err(|errno| {
            Error::new(
                map_errno(errno, Operation::Mmap, self.facts()).kind(),
                format!(
                    "cannot map a ring of {} pages for `{}`",
                    options.ring_pages, events[0].name
                ),
            )
            .with_errno(errno)
            .with_hint(
                "a smaller ring (fewer pages), or a larger kernel.perf_event_mlock_kb (root)",
            )
        })?;
        Ok(LinuxSampler {
            fds,
            ring,
            sample_type,
            read_format,
            record: Vec::new(),
            values: Vec::new(),
            signals: false,
        })
    }
}

impl Drop for LinuxSampler {
    fn drop(&mut self) {
        if self.signals {
            sys::unregister(self.fds[0].as_fd());
        }
    }
}

impl LinuxSampler {
    /// Sends `request` to the leader alone, as a counting group's enable and disable go
    /// ([`LinuxGroup`](crate::LinuxGroup)'s): its members were opened enabled and count while
    /// it does. `PERF_IOC_FLAG_GROUP` would switch each member too, and on Linux 6.18 a member
    /// of another PMU than the leader's switched off that way never counts again.
    fn ioctl(&self, request: u64, name: &'static str) -> Result<()> {
        sys::ioctl_int(self.fds[0].as_fd(), request, 0).map_err(|errno| {
            Error::new(ErrorKind::Other, format!("ioctl PERF_EVENT_IOC_{name}")).with_errno(errno)
        })
    }

    /// Enables the sampler for `overflows` more overflows, after which the kernel disables
    /// it (`PERF_EVENT_IOC_REFRESH`: PAPI's fixed number of overflows).
    ///
    /// # Errors
    /// The ioctl's (EINVAL for an inherited event).
    pub fn refresh(&mut self, overflows: u32) -> Result<()> {
        sys::ioctl_int(self.fds[0].as_fd(), sys::IOC_REFRESH, u64::from(overflows)).map_err(
            |errno| Error::new(ErrorKind::Other, "ioctl PERF_EVENT_IOC_REFRESH").with_errno(errno),
        )
    }

    /// The leader's count, and its lost samples where the kernel counts them: a group read
    /// (`{ nr; time_enabled; time_running; { value; id; lost? } x nr }`).
    fn read_leader(&self) -> Result<(u64, Option<u64>)> {
        let counts_lost = self.read_format & FORMAT_LOST != 0;
        let per = 2 + usize::from(counts_lost);
        let mut words = vec![0u64; 3 + per * self.fds.len()];
        sys::read_words(self.fds[0].as_fd(), &mut words).map_err(|errno| {
            Error::new(ErrorKind::Other, "read of the sampler").with_errno(errno)
        })?;
        Ok((words[3], counts_lost.then(|| words[5])))
    }

    /// Calls `callback` (with `token`) at each wakeup of the sampler (each sample with
    /// [`Wakeup::Samples(1)`](Wakeup::Samples)), in a handler of a real-time signal sent to
    /// the calling thread, with the address the thread was interrupted at: PAPI's
    /// `PAPI_overflow`. The callback runs inside a signal handler: it must neither allocate nor
    /// lock (an atomic counter, a write to memory set aside beforehand). With
    /// [`refresh`](LinuxSampler::refresh) the sampler stops by itself after a number of them.
    ///
    /// # Errors
    /// [`ErrorKind::LimitReached`] when 64 samplers of this process have callbacks already;
    /// the errno of `fcntl` or `sigaction`.
    pub fn on_overflow(&mut self, callback: sys::OverflowCallback, token: usize) -> Result<()> {
        sys::register(self.fds[0].as_fd(), sys::gettid(), callback, token).map_err(|errno| {
            if errno == libc::EBUSY {
                Error::new(
                    ErrorKind::LimitReached,
                    "64 samplers of this process have overflow callbacks already",
                )
                .with_hint("close a sampler with a callback first")
            } else {
                Error::new(ErrorKind::Other, "cannot ask for overflow signals").with_errno(errno)
            }
        })?;
        self.signals = true;
        Ok(())
    }

    /// The signal overflow callbacks come with (a real-time signal: a program that blocks
    /// signals should leave it unblocked on the sampler's thread).
    pub fn overflow_signal() -> i32 {
        sys::overflow_signal()
    }

    /// The leader's descriptor (to poll it, or to ask for overflow signals).
    pub fn leader_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fds[0].as_fd()
    }

    /// The ring's data size in bytes.
    pub fn ring_bytes(&self) -> usize {
        self.ring.data_size()
    }
}

/// Reads the words of one record in order, refusing to run past its end.
struct Words<'w> {
    words: &'w [u64],
    at: usize,
}

impl<'w> Words<'w> {
    fn next(&mut self) -> Result<u64> {
        let word = self.words.get(self.at).copied().ok_or_else(short)?;
        self.at += 1;
        Ok(word)
    }

    fn take(&mut self, n: usize) -> Result<&'w [u64]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.words.len())
            .ok_or_else(short)?;
        let taken = &self.words[self.at..end];
        self.at = end;
        Ok(taken)
    }
}

fn short() -> Error {
    Error::new(
        ErrorKind::Other,
        "a sample record is shorter than its sample_type says: the ring is torn",
    )
}

/// A `PERF_RECORD_SAMPLE`'s fields after its header, in the kernel's order.
fn parse_sample<'r>(
    words: &'r [u64],
    sample_type: u64,
    read_format: u64,
    values: &'r mut Vec<u64>,
) -> Result<Sample<'r>> {
    let mut w = Words { words, at: 0 };
    let mut sample = Sample::default();
    let has = |bit: u64| sample_type & bit != 0;
    if has(sample_bit::IP) {
        sample.ip = Some(w.next()?);
    }
    if has(sample_bit::TID) {
        let both = w.next()?;
        sample.pid = Some(both as u32);
        sample.tid = Some((both >> 32) as u32);
    }
    if has(sample_bit::TIME) {
        sample.time = Some(w.next()?);
    }
    if has(sample_bit::ADDR) {
        sample.addr = Some(w.next()?);
    }
    if has(sample_bit::CPU) {
        sample.cpu = Some(w.next()? as u32);
    }
    if has(sample_bit::PERIOD) {
        sample.period = Some(w.next()?);
    }
    values.clear();
    if has(sample_bit::READ) {
        // { nr; time_enabled; time_running; { value; id } x nr } with FORMAT_GROUP and ID.
        let n = usize::try_from(w.next()?).map_err(|_| short())?;
        if read_format & FORMAT_TOTAL_TIME_ENABLED != 0 {
            w.next()?;
        }
        if read_format & FORMAT_TOTAL_TIME_RUNNING != 0 {
            w.next()?;
        }
        let per = 1
            + usize::from(read_format & FORMAT_ID != 0)
            + usize::from(read_format & FORMAT_LOST != 0);
        let pairs = w.take(n.checked_mul(per).ok_or_else(short)?)?;
        values.extend(pairs.chunks_exact(per).map(|pair| pair[0]));
    }
    if has(sample_bit::CALLCHAIN) {
        let n = usize::try_from(w.next()?).map_err(|_| short())?;
        sample.callchain = w.take(n)?;
    }
    sample.group_values = values;
    Ok(sample)
}

impl Sampler for LinuxSampler {
    fn enable(&mut self) -> Result<()> {
        self.ioctl(sys::IOC_ENABLE, "ENABLE")
    }

    fn disable(&mut self) -> Result<()> {
        self.ioctl(sys::IOC_DISABLE, "DISABLE")
    }

    fn walk(&mut self, each: &mut dyn FnMut(&Record<'_>)) -> Result<Walked> {
        let head = self.ring.head();
        let mut position = self.ring.tail();
        let mut walked = Walked::default();
        let result = loop {
            if position >= head {
                break Ok(());
            }
            let mut header = [0u64; 1];
            self.ring.copy_words(position, &mut header);
            let (kind, size) = (header[0] as u32, (header[0] >> 48) as usize);
            if size < 8 || size % 8 != 0 || size as u64 > head - position {
                break Err(Error::new(
                    ErrorKind::Other,
                    format!("a ring record of {size} bytes at {position}: the ring is torn"),
                ));
            }
            self.record.resize(size / 8, 0);
            self.ring.copy_words(position, &mut self.record);
            let body = &self.record[1..];
            let record = match kind {
                record_type::SAMPLE => {
                    match parse_sample(body, self.sample_type, self.read_format, &mut self.values) {
                        Ok(sample) => {
                            walked.samples += 1;
                            Record::Sample(sample)
                        }
                        Err(e) => break Err(e),
                    }
                }
                record_type::LOST => {
                    let lost = body.get(1).copied().unwrap_or(0);
                    walked.lost += lost;
                    Record::Lost(lost)
                }
                record_type::THROTTLE => {
                    walked.throttled += 1;
                    Record::Throttle(body.first().copied().unwrap_or(0))
                }
                record_type::UNTHROTTLE => Record::Unthrottle(body.first().copied().unwrap_or(0)),
                other => {
                    walked.other += 1;
                    Record::Other(other)
                }
            };
            each(&record);
            position += size as u64;
        };
        self.ring.set_tail(position);
        result.map(|()| walked)
    }

    fn count(&mut self) -> Result<u64> {
        Ok(self.read_leader()?.0)
    }

    fn lost(&mut self) -> Result<Option<u64>> {
        Ok(self.read_leader()?.1)
    }

    fn on_overflow(
        &mut self,
        callback: counterhal_hal::OverflowCallback,
        token: usize,
    ) -> Result<()> {
        LinuxSampler::on_overflow(self, callback, token)
    }

    fn refresh(&mut self, overflows: u32) -> Result<()> {
        LinuxSampler::refresh(self, overflows)
    }
}

/// The Linux backend samples through perf_event_open's ring.
impl counterhal_hal::SamplingCapability for LinuxBackend {
    fn open_sampler(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &SampleOptions,
    ) -> Result<counterhal_hal::BoxedSampler> {
        Ok(Box::new(LinuxBackend::open_sampler(
            self, events, target, options,
        )?))
    }

    fn overflow_signal(&self) -> Option<i32> {
        Some(LinuxSampler::overflow_signal())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::MAX_PERIOD;

    /// perf_event_open refuses `sample_period & (1 << 63)` and `sample_freq >
    /// sysctl_perf_event_sample_rate` with EINVAL (kernel/events/core.c); both are refused
    /// before the open, naming the value.
    #[test]
    fn rates_the_kernel_refuses_are_named_before_the_open() {
        assert!(check_rate(Rate::Period(1), None).is_ok());
        assert!(check_rate(Rate::Period(MAX_PERIOD), None).is_ok());
        for period in [0, MAX_PERIOD + 1, u64::MAX] {
            let error = check_rate(Rate::Period(period), None).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidInput);
            assert!(error.message().contains(&period.to_string()), "{error}");
            assert!(error.to_string().contains("9223372036854775807"), "{error}");
        }
        assert!(check_rate(Rate::Frequency(100_000), Some(100_000)).is_ok());
        assert!(check_rate(Rate::Frequency(u64::MAX), None).is_ok());
        let error = check_rate(Rate::Frequency(100_001), Some(100_000)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        assert!(error.message().contains("100001 Hz"), "{error}");
        assert!(error.to_string().contains("100000"), "{error}");
    }

    #[test]
    fn a_sample_is_read_in_the_kernel_s_field_order() {
        let sample_type = sample_bit::IP
            | sample_bit::TID
            | sample_bit::TIME
            | sample_bit::ADDR
            | sample_bit::CPU
            | sample_bit::PERIOD
            | sample_bit::READ
            | sample_bit::CALLCHAIN;
        let read_format =
            FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING | FORMAT_ID | FORMAT_GROUP;
        let words = [
            0x401000,         // ip
            (7u64 << 32) | 5, // pid 5, tid 7
            123,              // time
            0xdead000,        // addr
            3,                // cpu 3, res
            1000,             // period
            2,
            50,
            40,
            11,
            101,
            22,
            102, // read: nr 2, enabled, running, (11, id), (22, id)
            2,
            0x401000,
            0x402000, // callchain
        ];
        let mut values = Vec::new();
        let sample = parse_sample(&words, sample_type, read_format, &mut values).unwrap();
        assert_eq!(sample.ip, Some(0x401000));
        assert_eq!((sample.pid, sample.tid), (Some(5), Some(7)));
        assert_eq!(sample.time, Some(123));
        assert_eq!(sample.addr, Some(0xdead000));
        assert_eq!(sample.cpu, Some(3));
        assert_eq!(sample.period, Some(1000));
        assert_eq!(sample.group_values, &[11, 22]);
        assert_eq!(sample.callchain, &[0x401000, 0x402000]);
        // One word short: refused, not read past the record.
        let mut values = Vec::new();
        assert!(
            parse_sample(
                &words[..words.len() - 1],
                sample_type,
                read_format,
                &mut values
            )
            .is_err()
        );
    }
}
