//! The BPF mode: each event opened once per CPU, a program at every context switch adding
//! each CPU's differences to the followed cgroups among the switched-out task's ([`program`]),
//! and the sums read per cgroup from the map the program keeps.
//!
//! The kernel objects, as perf's `bperf_cgroup` has them (tools/perf/util/
//! bpf_counter_cgroup.c) but for the program's attach point: a `BPF_MAP_TYPE_PERF_EVENT_ARRAY`
//! of the counters, the counting program at the raw tracepoint `sched_switch` (where perf
//! attaches its program to the software event `cgroup-switches`, whose runs the kernel skips
//! while another BPF user's map call holds the CPU: [`program`]), and a second copy of the
//! program, of the raw tracepoint type and never attached, that user space runs on each CPU
//! (`BPF_PROG_TEST_RUN` with `BPF_F_TEST_RUN_ON_CPU`) just before it reads, so that the part
//! of the cgroup running there now is included.
//!
//! A third copy, the settle program, runs at the entry of the kernel's `cgroup_migrate`
//! (a tracing program at its entry, `BPF_TRACE_FENTRY`), in the context of the task that
//! writes `cgroup.procs`, before any task moves (`css_set_move_task`, in
//! `cgroup_migrate_execute`): a task that moves itself while it runs has its CPU's counts up
//! to the move given to the cgroup it leaves. No tracepoint serves: `cgroup_attach_task` fires
//! `cgroup:cgroup_attach_task` after the move (kernel/cgroup/cgroup.c), and the perf_event
//! controller's own switch at a move (`perf_cgroup_attach`) is no context switch.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use counterhal_hal::{Error, ErrorKind, EventRequest, ProgramSkips, Reading, Result};

use super::btf;
use super::program::{self, MAX_EVENTS, MAX_LEVELS, Maps, READING_BYTES, Run};
use super::sets::Sets;
use crate::backend::LinuxBackend;
use crate::sys;
use crate::sys::bpf::{self as sys_bpf, AttachTo, MapCreateAttr, ProgBtf};

/// The raw tracepoint the counting program runs at: every context switch, in the context of
/// the task switched out (`trace_sched_switch`, kernel/sched/core.c).
const SWITCH_TRACEPOINT: &std::ffi::CStr = c"sched_switch";

/// The kernel function the settle program runs at: every move of tasks between cgroups
/// (`cgroup.procs`, `cgroup.threads`, v1's `tasks`) goes through it (kernel/cgroup/cgroup.c).
const MIGRATE: &str = "cgroup_migrate";

/// The counting program's name (at most 15 bytes: the kernel keeps no more).
const SWITCH_PROGRAM: &str = "ch_cgroup_swtch";

/// The places of the cgroups map beyond its capacity, for the cgroups the program adopts
/// before user space lets them go (`program`'s adoption): 24 bytes per event per possible CPU
/// each.
const ADOPTION_ROOM: u32 = 16;

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
    /// The counting program's link at `sched_switch`.
    _at_switch: OwnedFd,
    _events: OwnedFd,
    /// Each event's previous reading on each CPU (the programs hold it too).
    _previous: OwnedFd,
    cgroups: OwnedFd,
    levels: OwnedFd,
    /// The parents whose new children the program follows itself, and the children it must
    /// not (`program::Maps`).
    adopting: OwnedFd,
    refused: OwnedFd,
    /// The zeroes an adopted cgroup's sums start from (the programs hold it).
    _zeros: OwnedFd,
    /// The programs the kernel runs (at `sched_switch`, and those of `settle` and
    /// `removals`), each with its name, whose skips it counts (`recursion_misses`).
    programs: Vec<(&'static str, OwnedFd)>,
    /// The same program, run on each CPU before a read.
    trigger: OwnedFd,
    /// The settle program's link at `cgroup_migrate`, or why it could not be attached.
    settle: std::result::Result<OwnedFd, String>,
    /// The count of cgroups removed (a one-value array) and the link of the program at
    /// `cgroup:cgroup_rmdir` that keeps it; `None` where it could not be attached.
    removals: Option<(OwnedFd, OwnedFd)>,
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
            "the BPF mode needs Linux 5.10 with BPF (CONFIG_BPF_SYSCALL, CONFIG_BPF_EVENTS)",
        ),
    };
    Error::new(kind, format!("{what}: {detail}"))
        .with_errno(errno)
        .with_hint(hint)
}

/// [`bpf_error`] for a `map_err`: a `bpf(2)` failure, with what was being done.
pub(super) fn failed(what: &str) -> impl Fn(i32) -> Error + '_ {
    move |errno| bpf_error(what, errno)
}

/// The possible CPUs (`/sys/devices/system/cpu/possible`), the order of per-CPU values.
/// Each of `programs`, its name and id, and the times the kernel skipped it since it was
/// loaded (`recursion_misses` of `struct bpf_prog_info`, Linux 5.12; a program whose
/// information has none is left out): what both BPF modes report.
pub(super) fn programs_skipped(programs: &[(&'static str, OwnedFd)]) -> Vec<ProgramSkips> {
    programs
        .iter()
        .filter_map(|(name, program)| {
            let info = sys_bpf::prog_info(program.as_fd()).ok()?;
            Some(ProgramSkips {
                name,
                id: info.id,
                skipped: info.recursion_misses?,
            })
        })
        .collect()
}

pub(super) fn possible_cpus(system: &counterhal_system::System) -> Result<Vec<u32>> {
    system.possible_cpus().ok_or_else(|| {
        Error::unsupported(
            "cannot read the possible CPUs (/sys/devices/system/cpu/possible, a CPU list)",
        )
    })
}

pub(super) fn create(
    map_type: u32,
    key: u32,
    value: u32,
    entries: u32,
    name: &str,
) -> Result<OwnedFd> {
    create_flagged(map_type, key, value, entries, 0, name)
}

/// [`create`] with `flags` (`map_flags`); an unnamed map is called `perf_attr_map` in errors
/// (perf's attr map, which perf creates without a name).
pub(super) fn create_flagged(
    map_type: u32,
    key: u32,
    value: u32,
    entries: u32,
    flags: u32,
    name: &str,
) -> Result<OwnedFd> {
    let attr = MapCreateAttr {
        map_type,
        key_size: key,
        value_size: value,
        max_entries: entries,
        map_flags: flags,
        ..Default::default()
    };
    let shown = if name.is_empty() {
        "perf_attr_map"
    } else {
        name
    };
    sys_bpf::map_create(&attr, name).map_err(failed(&format!("creating the BPF map {shown}")))
}

/// Loads `insns` as a program of `prog_type`; a refusal carries the verifier's log.
pub(super) fn load(prog_type: u32, insns: &[u64], name: &str) -> Result<OwnedFd> {
    load_for(prog_type, AttachTo::default(), None, None, insns, name)
}

/// [`load`] for a program attached where `attach` says. The verifier is asked for its log
/// only where it refused the program (the log of a long program it takes can overflow any
/// buffer, which fails the load). `attach_prog` and `btf` as [`sys_bpf::prog_load_with`].
pub(super) fn load_for(
    prog_type: u32,
    attach: AttachTo,
    attach_prog: Option<BorrowedFd<'_>>,
    btf: Option<ProgBtf<'_>>,
    insns: &[u64],
    name: &str,
) -> Result<OwnedFd> {
    let load = |log: &mut [u8]| {
        sys_bpf::prog_load_with(
            prog_type,
            attach,
            attach_prog,
            btf,
            insns,
            LICENSE,
            name,
            log,
        )
    };
    if let Ok(fd) = load(&mut []) {
        return Ok(fd);
    }
    let mut log = vec![0u8; LOG_BYTES];
    load(&mut log).map_err(|errno| {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        let said = String::from_utf8_lossy(&log[..end]);
        let error = bpf_error(
            &format!(
                "the kernel refused the program {name} ({} instructions)",
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
            // The verifier refuses with EACCES too: the program's fault, not a privilege.
            Error::new(
                ErrorKind::Unsupported,
                format!("{}; the verifier said:\n{tail}", error.message()),
            )
            .with_errno(errno)
        }
    })
}

/// A per-CPU value's room in a `BPF_MAP_LOOKUP_ELEM` of a per-CPU map.
pub(super) fn per_cpu_room(value: usize) -> usize {
    value.div_ceil(8) * 8
}

impl BpfCounting {
    /// Opens `events` on each of `cpus` (`sets`' groups as groups), the cgroup map holding at
    /// most `capacity` followed cgroups, and starts counting (no cgroup yet: [`BpfCounting::insert`] adds them).
    ///
    /// # Errors
    /// As [`counterhal_hal::Backend::open`] for the events; [`ErrorKind::PermissionDenied`]
    /// without CAP_BPF and CAP_PERFMON; [`ErrorKind::Unsupported`] for a kernel without what
    /// the mode needs (the verifier's log where it refused the program);
    /// [`ErrorKind::InvalidInput`] for more than [`MAX_EVENTS`] events.
    pub fn open(
        backend: &LinuxBackend,
        events: &[EventRequest],
        sets: &Sets,
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
        let possible = possible_cpus(backend.system())?;
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
        // The followed cgroups, and room for those the program adopts before user space has
        // seen them (let go at once where they match no pattern): the followed are held to
        // `capacity` by the caller, so the adopted never take their room.
        let cgroups = create(
            sys_bpf::MAP_PERCPU_HASH,
            8,
            reading * count,
            capacity.max(1).saturating_add(ADOPTION_ROOM),
            "ch_cgroups",
        )?;
        let levels = create(sys_bpf::MAP_ARRAY, 4, 4, 1, "ch_levels")?;
        let adopting = create(sys_bpf::MAP_HASH, 8, 1, capacity.max(64), "ch_adopting")?;
        let refused = create(sys_bpf::MAP_HASH, 8, 1, capacity.max(1024), "ch_refused")?;
        let zeros = create(sys_bpf::MAP_ARRAY, 4, reading * count, 1, "ch_zeros")?;
        let maps = Maps {
            events: events_map.as_fd(),
            previous: previous.as_fd(),
            cgroups: cgroups.as_fd(),
            levels: levels.as_fd(),
            adopting: adopting.as_fd(),
            refused: refused.as_fd(),
            zeros: zeros.as_fd(),
        };
        let insns = program::counting(maps, events.len(), stride, Run::Switch);
        let attached = load(sys_bpf::PROG_RAW_TRACEPOINT, &insns, SWITCH_PROGRAM)?;
        let insns = program::counting(maps, events.len(), stride, Run::Read);
        let trigger = load(sys_bpf::PROG_RAW_TRACEPOINT, &insns, "ch_cgroup_read")?;
        let mut counters: Vec<OwnedFd> = Vec::with_capacity(events.len() * cpus.len());
        // A group's members open on each CPU in its leader's group, the leader first: where
        // the leader's counters begin in `counters`.
        let event_sets = sets.iter().flat_map(|(events, grouped)| {
            let leader = events[0];
            events
                .iter()
                .map(move |&index| (index, grouped && index != leader))
        });
        let mut leaders = 0;
        for (index, member) in event_sets {
            let request = &events[index];
            if !member {
                leaders = counters.len();
            }
            for (at, &cpu) in cpus.iter().enumerate() {
                let leader = member.then(|| counters[leaders + at].as_fd());
                let counter = backend.open_on_cpu(request, cpu, leader)?;
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
        let at_switch = sys_bpf::attach_raw(attached.as_fd(), Some(SWITCH_TRACEPOINT))
            .map_err(failed("attaching the counting program at sched_switch"))?;
        let mut programs = vec![(SWITCH_PROGRAM, attached)];
        let settle = settle(backend.system(), maps, events.len(), stride, &mut programs);
        let counting = BpfCounting {
            removals: count_removals(&mut programs),
            _counters: counters,
            _at_switch: at_switch,
            _events: events_map,
            _previous: previous,
            cgroups,
            levels,
            adopting,
            refused,
            _zeros: zeros,
            programs,
            trigger,
            settle,
            events: events.len(),
            cpus: cpus.to_vec(),
            buffer: vec![0; per_cpu_room(READING_BYTES * events.len()) * possible.len()],
            possible,
            capacity,
        };
        // Every CPU's previous readings taken now: what came before is no cgroup's.
        counting.refresh()?;
        Ok(counting)
    }

    /// Why a task moved between cgroups while it runs is not settled at the move (the
    /// settle program could not be attached at `cgroup_migrate`); `None` where it is.
    pub fn unsettled(&self) -> Option<&str> {
        self.settle.as_ref().err().map(String::as_str)
    }

    /// Cgroups removed anywhere since the counter opened (a program at the tracepoint
    /// `cgroup:cgroup_rmdir` counts them); `None` where it could not be attached.
    pub fn removals(&self) -> Option<u64> {
        let (map, _) = self.removals.as_ref()?;
        let mut value = [0u8; 8];
        sys_bpf::map_lookup(map.as_fd(), &0u32.to_ne_bytes(), &mut value).ok()?;
        Some(u64::from_ne_bytes(value))
    }

    /// Each program the kernel runs, its name and id, and the times the kernel skipped it
    /// since it was loaded because the same program was already running on that CPU
    /// (`recursion_misses`, Linux 5.12). Empty before Linux 5.12.
    pub fn recursion_misses(&self) -> Vec<ProgramSkips> {
        programs_skipped(&self.programs)
    }

    /// Runs the program on each CPU counted: the cgroup running there now is counted up to
    /// now. Call before [`BpfCounting::read`].
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] where the program cannot be run on a CPU.
    pub fn refresh(&self) -> Result<()> {
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

    /// The context switches the counting program missed since the counter opened (the
    /// kernel skipped it there: its `recursion_misses`), whose counts were given to the
    /// wrong cgroups. `None` where the kernel does not count them (before Linux 5.12).
    pub fn switches_missed(&self) -> Option<u64> {
        let (_, program) = self.programs.iter().find(|(n, _)| *n == SWITCH_PROGRAM)?;
        sys_bpf::prog_info(program.as_fd()).ok()?.recursion_misses
    }

    /// Puts cgroup `id` in the map, its sums zero (`Ok` where it is there already): the
    /// program counts it from now on.
    ///
    /// # Errors
    /// [`ErrorKind::LimitReached`] where the map holds its capacity of cgroups.
    pub fn insert(&mut self, id: u64) -> Result<()> {
        self.buffer.fill(0);
        let key = id.to_ne_bytes();
        match sys_bpf::map_update(
            self.cgroups.as_fd(),
            &key,
            &self.buffer,
            sys_bpf::BPF_NOEXIST,
        ) {
            Ok(()) | Err(libc::EEXIST) => Ok(()),
            Err(libc::E2BIG) => Err(Error::new(
                ErrorKind::LimitReached,
                format!(
                    "the BPF map of cgroups holds its {} cgroups: cgroup id {id} cannot be \
                     followed",
                    self.capacity
                ),
            )
            .with_hint("follow fewer cgroups, or open the counter with a larger capacity")),
            Err(errno) => Err(bpf_error(
                &format!("placing cgroup id {id} in the BPF map"),
                errno,
            )),
        }
    }

    /// Deletes cgroup `id` from the map (a cgroup no longer followed, or removed).
    pub fn remove(&mut self, id: u64) {
        sys_bpf::map_delete(self.cgroups.as_fd(), &id.to_ne_bytes()).ok();
    }

    /// Has the program follow each new child of cgroup `id` itself, from its first context
    /// switch (`adopt`: the levels below `id` adopted, each adopted child adopting one fewer;
    /// `u8::MAX`: every level), or no longer (`None`).
    ///
    /// # Errors
    /// [`ErrorKind::LimitReached`] where the map of adopting parents is full.
    pub fn adopt(&mut self, id: u64, adopt: Option<u8>) -> Result<()> {
        let key = id.to_ne_bytes();
        let Some(value) = adopt else {
            sys_bpf::map_delete(self.adopting.as_fd(), &key).ok();
            return Ok(());
        };
        match sys_bpf::map_update(self.adopting.as_fd(), &key, &[value], 0) {
            Ok(()) => Ok(()),
            Err(libc::E2BIG) => Err(Error::new(
                ErrorKind::LimitReached,
                format!(
                    "the BPF map of adopting cgroups holds its {} cgroups",
                    self.capacity
                ),
            )),
            Err(errno) => Err(bpf_error(
                &format!("placing cgroup id {id} among the adopting"),
                errno,
            )),
        }
    }

    /// The ids of the cgroups in the map of followed cgroups (`adopting`: of adopting
    /// parents), those the program put there included; at most the map's capacity.
    pub fn ids(&self, adopting: bool) -> std::collections::HashSet<u64> {
        let map = match adopting {
            true => &self.adopting,
            false => &self.cgroups,
        };
        let mut ids = std::collections::HashSet::new();
        let mut key: Option<[u8; 8]> = None;
        let mut next = [0u8; 8];
        // A key deleted meanwhile restarts the walk from the first: bounded all the same.
        let bound = self.capacity.saturating_add(ADOPTION_ROOM).max(1024) as usize * 2;
        while ids.len() < bound
            && sys_bpf::map_next_key(map.as_fd(), key.as_ref().map(|k| &k[..]), &mut next).is_ok()
        {
            if !ids.insert(u64::from_ne_bytes(next)) {
                break;
            }
            key = Some(next);
        }
        ids
    }

    /// Keeps the program from following cgroup `id` itself (a child of an adopting parent
    /// that is not to be followed), and forgets what it counted for it.
    pub fn refuse(&mut self, id: u64) {
        sys_bpf::map_update(self.refused.as_fd(), &id.to_ne_bytes(), &[1], 0).ok();
        self.remove(id);
    }

    /// Forgets that cgroup `id` was refused (it is gone).
    pub fn unrefuse(&mut self, id: u64) {
        sys_bpf::map_delete(self.refused.as_fd(), &id.to_ne_bytes()).ok();
    }

    /// The program visits the levels `0..levels` (the deepest followed level plus one, at
    /// most [`MAX_LEVELS`]).
    pub fn visit_levels(&self, levels: usize) {
        let levels = levels.min(MAX_LEVELS) as u32;
        let key = 0u32.to_ne_bytes();
        // An array's slot 0 always exists: the update cannot fail for a missing key.
        sys_bpf::map_update(self.levels.as_fd(), &key, &levels.to_ne_bytes(), 0).ok();
    }

    /// Cgroup `id`'s sums on each CPU counted (`per_cpu`, in the order of the CPUs given at
    /// open, each `events` readings) and over them (`total`); zeroes for a cgroup not in the
    /// map.
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

/// The map counting the cgroups removed and the link of the program at `cgroup:cgroup_rmdir`
/// (Linux 4.17's raw tracepoints) that counts them; `None` where the kernel refuses either.
/// The program is added to `programs`.
fn count_removals(programs: &mut Vec<(&'static str, OwnedFd)>) -> Option<(OwnedFd, OwnedFd)> {
    const NAME: &str = "ch_cgroup_rmdir";
    let map = create(sys_bpf::MAP_ARRAY, 4, 8, 1, "ch_removals").ok()?;
    let program = program::counting_removals(map.as_fd());
    let program = load(sys_bpf::PROG_RAW_TRACEPOINT, &program, NAME).ok()?;
    let link = sys_bpf::attach_raw(program.as_fd(), Some(c"cgroup_rmdir")).ok()?;
    programs.push((NAME, program));
    Some((map, link))
}

/// The settle program (`maps`, `events` events, `stride`) attached at the entry of
/// [`MIGRATE`], its link (the program added to `programs`); or why it cannot be, in words.
fn settle(
    system: &counterhal_system::System,
    maps: Maps<'_>,
    events: usize,
    stride: u32,
    programs: &mut Vec<(&'static str, OwnedFd)>,
) -> std::result::Result<OwnedFd, String> {
    const NAME: &str = "ch_cgroup_move";
    let path = btf::vmlinux(system);
    let vmlinux = btf::read_vmlinux(system).map_err(|e| {
        format!(
            "cannot read the kernel's BTF, {}: {e} (a kernel built without \
             CONFIG_DEBUG_INFO_BTF)",
            path.display()
        )
    })?;
    let btf_id = btf::function_id(&vmlinux, MIGRATE)
        .map_err(|why| format!("no {MIGRATE} in {}: {why}", path.display()))?;
    let attach = AttachTo {
        attach_type: sys_bpf::TRACE_FENTRY,
        btf_id,
    };
    let insns = program::counting(maps, events, stride, Run::Move);
    let program =
        load_for(sys_bpf::PROG_TRACING, attach, None, None, &insns, NAME).map_err(|e| {
            let why = match e.errno() {
                Some(errno) if !e.message().contains("the verifier said") => {
                    std::io::Error::from_raw_os_error(errno).to_string()
                }
                _ => e.message().to_string(),
            };
            format!(
                "the kernel refused a program at {MIGRATE}'s entry (a BPF trampoline: Linux \
                 5.5 on x86-64, 6.0 on arm64, with BTF): {why}"
            )
        })?;
    let link = sys_bpf::attach_raw(program.as_fd(), None).map_err(|errno| {
        format!(
            "attaching a program at {MIGRATE}'s entry: {} (a kernel without BPF trampolines \
             here, CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS)",
            std::io::Error::from_raw_os_error(errno)
        )
    })?;
    programs.push((NAME, program));
    Ok(link)
}

/// `sum += row`, reading by reading.
pub(super) fn add(sum: &mut [Reading], row: &[Reading]) {
    for (sum, reading) in sum.iter_mut().zip(row) {
        sum.value = sum.value.wrapping_add(reading.value);
        sum.time_enabled = sum.time_enabled.wrapping_add(reading.time_enabled);
        sum.time_running = sum.time_running.wrapping_add(reading.time_running);
    }
}
