//! The BPF mode: each event opened once per CPU, a program at every cgroup switch adding
//! each CPU's differences to every level of the switched-out task's cgroup ([`program`]),
//! and the sums read per cgroup from the map the program keeps.
//!
//! The kernel objects, as perf's `bperf_cgroup` has them (tools/perf/util/
//! bpf_counter_cgroup.c): a `BPF_MAP_TYPE_PERF_EVENT_ARRAY` of the counters, the software
//! event `cgroup-switches` (`PERF_COUNT_SW_CGROUP_SWITCHES`, Linux 5.13) opened on each CPU
//! with `sample_period` 1 and the program attached (`PERF_EVENT_IOC_SET_BPF`), and a second
//! copy of the program, of the raw tracepoint type and never attached, that user space runs
//! on each CPU (`BPF_PROG_TEST_RUN` with `BPF_F_TEST_RUN_ON_CPU`) just before it reads, so
//! that the part of the cgroup running there now is included.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use counterhal_hal::{CpuList, Error, ErrorKind, EventRequest, Reading, Result};

use super::program::{self, MAX_EVENTS, Maps, READING_BYTES, stat};
use crate::LinuxBackend;
use crate::sys::bpf::{self as sys_bpf, MapCreateAttr};
use crate::sys::{self, PerfEventAttr, TYPE_SOFTWARE, attr_bit};

/// `PERF_COUNT_SW_CGROUP_SWITCHES` (Linux 5.13): counts, on a CPU, the context switches
/// between tasks of different cgroups, in the context of the task switched out
/// (`perf_event_task_sched_out`, include/linux/perf_event.h).
const SW_CGROUP_SWITCHES: u64 = 11;

/// The room for the verifier's log of a refused program.
const LOG_BYTES: usize = 1 << 20;

/// The license the programs are loaded under: `bpf_perf_event_read_value` is offered only to
/// GPL-compatible programs (the kernel's `license_is_gpl_compatible` takes this one).
const LICENSE: &std::ffi::CStr = c"Dual MIT/GPL";

/// The kernel objects of one BPF-mode counter.
pub(crate) struct BpfCounting {
    /// The counters, event by event, each on every CPU counted (owned here: the array holds
    /// references of its own while they are open).
    _counters: Vec<OwnedFd>,
    /// `cgroup-switches` on each CPU, the program attached.
    _switches: Vec<OwnedFd>,
    _events: OwnedFd,
    _previous: OwnedFd,
    cgroups: OwnedFd,
    stats: OwnedFd,
    _program: OwnedFd,
    /// The same program, run on each CPU before a read.
    trigger: OwnedFd,
    /// How many events.
    events: usize,
    /// The CPUs counted.
    cpus: Vec<u32>,
    /// The possible CPUs, in the order per-CPU map values are laid out.
    possible: Vec<u32>,
    /// Room for one cgroup's per-CPU values.
    buffer: Vec<u8>,
    /// The cgroup map's capacity.
    capacity: u32,
    /// Cgroups deleted from the map by user space (the program counts those it added).
    deleted: u64,
    /// The map's entries after the last sweep of removed cgroups.
    after_sweep: u64,
}

/// An error of `bpf(2)` while setting up, mapped to its kind: EPERM and EACCES are
/// privileges, the rest a kernel that cannot.
pub(crate) fn bpf_error(what: &str, errno: i32) -> Error {
    let detail = std::io::Error::from_raw_os_error(errno);
    let (kind, hint) = match errno {
        libc::EPERM | libc::EACCES => (
            ErrorKind::PermissionDenied,
            "loading BPF programs needs CAP_BPF and CAP_PERFMON (Linux 5.8), or root",
        ),
        _ => (
            ErrorKind::Unsupported,
            "the BPF mode needs Linux 5.13 with BPF (CONFIG_BPF_SYSCALL, CONFIG_CGROUP_PERF)",
        ),
    };
    Error::new(kind, format!("{what}: {detail}"))
        .with_errno(errno)
        .with_hint(hint)
}

/// The possible CPUs (`/sys/devices/system/cpu/possible`), the order of per-CPU values.
fn possible_cpus() -> Result<Vec<u32>> {
    let path = "/sys/devices/system/cpu/possible";
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::unsupported(format!("cannot read {path}: {e}")))?;
    let list: CpuList = text
        .trim()
        .parse()
        .map_err(|e| Error::unsupported(format!("{path} holds no CPU list: {e}")))?;
    Ok(list.iter().collect())
}

pub(super) fn create(
    map_type: u32,
    key: u32,
    value: u32,
    entries: u32,
    name: &str,
) -> Result<OwnedFd> {
    let attr = MapCreateAttr {
        map_type,
        key_size: key,
        value_size: value,
        max_entries: entries,
        ..Default::default()
    };
    sys_bpf::map_create(&attr, name)
        .map_err(|errno| bpf_error(&format!("creating the BPF map {name}"), errno))
}

/// Loads `insns` as a program of `prog_type`; a refusal carries the verifier's log.
pub(super) fn load(prog_type: u32, insns: &[u64], name: &str) -> Result<OwnedFd> {
    let mut log = vec![0u8; LOG_BYTES];
    sys_bpf::prog_load(prog_type, insns, LICENSE, name, &mut log).map_err(|errno| {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        let said = String::from_utf8_lossy(&log[..end]);
        let error = bpf_error(
            &format!(
                "the kernel refused the counting program {name} ({} instructions)",
                insns.len()
            ),
            errno,
        );
        if said.trim().is_empty() {
            error
        } else {
            let lines: Vec<&str> = said.trim_end().lines().collect();
            // The verifier's last lines say why; the whole log can be long.
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            Error::new(
                error.kind(),
                format!("{}; the verifier said:\n{tail}", error.message()),
            )
            .with_errno(errno)
        }
    })
}

/// A per-CPU value's room in a `BPF_MAP_LOOKUP_ELEM` of a per-CPU map.
fn per_cpu_room(value: usize) -> usize {
    value.div_ceil(8) * 8
}

impl BpfCounting {
    /// Opens `events` on each of `cpus`, the cgroup map holding at most `capacity` cgroups,
    /// and starts counting: every cgroup from now on.
    ///
    /// # Errors
    /// As [`counterhal_hal::Backend::open`] for the events; [`ErrorKind::PermissionDenied`]
    /// without CAP_BPF and CAP_PERFMON; [`ErrorKind::Unsupported`] for a kernel without what
    /// the mode needs (the verifier's log where it refused the program);
    /// [`ErrorKind::InvalidInput`] for more than [`MAX_EVENTS`] events.
    pub fn open(
        backend: &LinuxBackend,
        events: &[EventRequest],
        cpus: &[u32],
        capacity: u32,
    ) -> Result<BpfCounting> {
        if events.is_empty() || events.len() > MAX_EVENTS {
            return Err(Error::invalid_input(format!(
                "{} events for one BPF-mode cgroup counter",
                events.len()
            ))
            .with_hint(format!("count 1 to {MAX_EVENTS} events per counter")));
        }
        let possible = possible_cpus()?;
        let stride = possible.iter().max().map_or(1, |last| last + 1);
        let reading = READING_BYTES as u32;
        let count = events.len() as u32;
        let events_map = create(
            sys_bpf::MAP_PERF_EVENT_ARRAY,
            4,
            4,
            count * stride,
            "ch_events",
        )?;
        let previous = create(sys_bpf::MAP_PERCPU_ARRAY, 4, reading, count, "ch_previous")?;
        let cgroups = create(
            sys_bpf::MAP_PERCPU_HASH,
            8,
            reading * count,
            capacity,
            "ch_cgroups",
        )?;
        let stats = create(sys_bpf::MAP_PERCPU_ARRAY, 4, 8, stat::SLOTS, "ch_stats")?;
        let maps = Maps {
            events: events_map.as_fd(),
            previous: previous.as_fd(),
            cgroups: cgroups.as_fd(),
            stats: stats.as_fd(),
        };
        let insns = program::counting(maps, events.len(), stride);
        let attached = load(sys_bpf::PROG_PERF_EVENT, &insns, "ch_cgroup_switch")?;
        let trigger = load(sys_bpf::PROG_RAW_TRACEPOINT, &insns, "ch_cgroup_read")?;
        let mut counters = Vec::with_capacity(events.len() * cpus.len());
        for (index, request) in events.iter().enumerate() {
            for &cpu in cpus {
                let counter = backend.open_on_cpu(request, cpu)?;
                let slot = index as u32 * stride + cpu;
                sys::ioctl_int(counter.as_fd(), sys::IOC_ENABLE, 0).map_err(|errno| {
                    bpf_error(&format!("enabling {} on CPU {cpu}", request.name), errno)
                })?;
                sys_bpf::map_update_perf_event(events_map.as_fd(), slot, counter.as_fd()).map_err(
                    |errno| {
                        bpf_error(
                            &format!("placing {} on CPU {cpu} in the BPF map", request.name),
                            errno,
                        )
                    },
                )?;
                counters.push(counter);
            }
        }
        let mut switches = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            switches.push(open_switches(cpu, attached.as_fd())?);
        }
        let mut counting = BpfCounting {
            _counters: counters,
            _switches: switches,
            _events: events_map,
            _previous: previous,
            cgroups,
            stats,
            _program: attached,
            trigger,
            events: events.len(),
            cpus: cpus.to_vec(),
            buffer: vec![0; per_cpu_room(READING_BYTES * events.len()) * possible.len()],
            possible,
            capacity,
            deleted: 0,
            after_sweep: 0,
        };
        // Every CPU's previous readings taken now: what came before is no cgroup's.
        counting.trigger()?;
        counting.forget_all();
        Ok(counting)
    }

    /// Runs the program on each CPU counted: the cgroup running there now is counted up to
    /// now.
    fn trigger(&self) -> Result<()> {
        for &cpu in &self.cpus {
            match sys_bpf::prog_run_on_cpu(self.trigger.as_fd(), cpu) {
                // A CPU gone offline counts nothing more.
                Ok(_) | Err(libc::ENXIO) => {}
                Err(errno) => {
                    return Err(bpf_error(
                        &format!("running the counting program on CPU {cpu}"),
                        errno,
                    ));
                }
            }
        }
        Ok(())
    }

    /// Deletes every cgroup from the map.
    fn forget_all(&mut self) {
        self.forget_where(|_| true);
    }

    /// Deletes the cgroups whose ids `forget` says, from the map.
    fn forget_where(&mut self, forget: impl Fn(u64) -> bool) {
        let mut doomed = Vec::new();
        let mut key: Option<[u8; 8]> = None;
        let mut next = [0u8; 8];
        while sys_bpf::map_next_key(
            self.cgroups.as_fd(),
            key.as_ref().map(|k| &k[..]),
            &mut next,
        )
        .is_ok()
        {
            if forget(u64::from_ne_bytes(next)) {
                doomed.push(next);
            }
            key = Some(next);
        }
        for id in doomed {
            if sys_bpf::map_delete(self.cgroups.as_fd(), &id).is_ok() {
                self.deleted += 1;
            }
        }
    }

    /// Deletes cgroup `id` from the map (a cgroup no longer followed, or removed).
    pub fn forget(&mut self, id: u64) {
        if sys_bpf::map_delete(self.cgroups.as_fd(), &id.to_ne_bytes()).is_ok() {
            self.deleted += 1;
        }
    }

    /// The sum of statistics slot `slot` over the CPUs.
    fn stat(&self, slot: u32) -> u64 {
        let mut values = vec![0u8; 8 * self.possible.len()];
        if sys_bpf::map_lookup(self.stats.as_fd(), &slot.to_ne_bytes(), &mut values).is_err() {
            return 0;
        }
        values
            .chunks_exact(8)
            .map(|v| u64::from_ne_bytes(v.try_into().unwrap_or_default()))
            .sum()
    }

    /// Levels of the hierarchy the program could not count since the start: the cgroup map
    /// was full (or busy) when a cgroup first ran.
    pub fn lost(&self) -> u64 {
        self.stat(stat::LOST)
    }

    /// Brings every CPU's sums up to now: call before [`BpfCounting::read`]. Where the map
    /// is more than half full, the cgroups that no longer exist under `root` are deleted
    /// from it first.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] where the program cannot be run on a CPU.
    pub fn refresh(&mut self, root: Option<&Path>) -> Result<()> {
        let entries = self.stat(stat::ADDED).saturating_sub(self.deleted);
        if let Some(root) = root
            && entries * 2 > u64::from(self.capacity)
            && entries > self.after_sweep
        {
            let live = tree_ids(root);
            self.forget_where(|id| live.binary_search(&id).is_err());
            self.after_sweep = self.stat(stat::ADDED).saturating_sub(self.deleted);
        }
        self.trigger()
    }

    /// Cgroup `id`'s sums on each CPU counted (`per_cpu`, in the order of the CPUs given at
    /// open, each `events` readings) and over them (`total`); zeroes for a cgroup that has not
    /// run since counting began.
    ///
    /// # Errors
    /// [`ErrorKind::Other`] where the kernel refuses the lookup (not ENOENT).
    pub fn read(
        &mut self,
        id: u64,
        per_cpu: &mut [Vec<Reading>],
        total: &mut [Reading],
    ) -> Result<()> {
        total.iter_mut().for_each(|r| *r = Reading::default());
        match sys_bpf::map_lookup(self.cgroups.as_fd(), &id.to_ne_bytes(), &mut self.buffer) {
            Ok(()) => {}
            Err(libc::ENOENT) => {
                per_cpu
                    .iter_mut()
                    .flatten()
                    .for_each(|r| *r = Reading::default());
                return Ok(());
            }
            Err(errno) => {
                return Err(Error::new(
                    ErrorKind::Other,
                    format!("reading cgroup id {id} from the BPF map"),
                )
                .with_errno(errno));
            }
        }
        let room = per_cpu_room(READING_BYTES * self.events);
        let word = |bytes: &[u8], at: usize| {
            u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap_or_default())
        };
        for (row, &cpu) in per_cpu.iter_mut().zip(&self.cpus) {
            let Some(slot) = self.possible.iter().position(|&p| p == cpu) else {
                continue;
            };
            let values = &self.buffer[slot * room..(slot + 1) * room];
            for (event, reading) in row.iter_mut().enumerate().take(self.events) {
                let base = event * READING_BYTES;
                *reading = Reading::new(
                    word(values, base),
                    word(values, base + 8),
                    word(values, base + 16),
                );
            }
            add(total, row);
        }
        Ok(())
    }
}

/// `cgroup-switches` on `cpu` with the program `program` run at each.
fn open_switches(cpu: u32, program: std::os::fd::BorrowedFd<'_>) -> Result<OwnedFd> {
    let mut attr = PerfEventAttr {
        type_: TYPE_SOFTWARE,
        size: sys::ATTR_SIZE_VER8,
        config: SW_CGROUP_SWITCHES,
        sample_period: 1,
        ..Default::default()
    };
    attr.set_flag(attr_bit::DISABLED, true);
    let what = format!("cgroup-switches on CPU {cpu}");
    let fd = sys::perf_event_open(&mut attr, -1, cpu as i32, None, 0)
        .map_err(|failure| bpf_error(&format!("opening {what} (Linux 5.13)"), failure.errno))?;
    sys_bpf::attach_to_perf_event(fd.as_fd(), program)
        .map_err(|errno| bpf_error(&format!("attaching the counting program to {what}"), errno))?;
    sys::ioctl_int(fd.as_fd(), sys::IOC_ENABLE, 0)
        .map_err(|errno| bpf_error(&format!("enabling {what}"), errno))?;
    Ok(fd)
}

/// `sum += row`, reading by reading.
pub(super) fn add(sum: &mut [Reading], row: &[Reading]) {
    for (sum, reading) in sum.iter_mut().zip(row) {
        sum.value = sum.value.wrapping_add(reading.value);
        sum.time_enabled = sum.time_enabled.wrapping_add(reading.time_enabled);
        sum.time_running = sum.time_running.wrapping_add(reading.time_running);
    }
}

/// The ids (inode numbers) of `root` and every directory below it, sorted.
fn tree_ids(root: &Path) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        ids.push(meta.ino());
        // Two links: no directory below (the cgroup file system counts each one's `..`).
        if meta.nlink() == 2 {
            continue;
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    pending.push(entry.path());
                }
            }
        }
    }
    ids.sort_unstable();
    ids
}
