//! Counters shared between sessions, as perf's bperf shares them (`perf stat --bpf-counters`,
//! tools/perf/util/bpf_counter.c, bpf_skel/bperf_leader.bpf.c, bperf_follower.bpf.c): one
//! leader per event, found by its `struct perf_event_attr` in a hash map pinned in a BPF file
//! system (by default `/sys/fs/bpf/perf_attr_map`), and one follower per session.
//!
//! - The attr map (libperf's bpf_perf.h): key a `struct perf_event_attr` of perf 7.2's size
//!   (`PERF_ATTR_SIZE_VER9`, 144 bytes), value `struct perf_event_attr_map_entry` { `link_id`,
//!   `diff_map_id` }, 16 entries; pinned by whoever comes first, locked with `flock` while a
//!   session looks up or starts a leader. It holds ids, no references: an entry whose link is
//!   gone is stale, and the next session starts a new leader and rewrites it.
//! - The leader: the event opened on every CPU into a perf event array kept past its opener
//!   (`BPF_F_PRESERVE_ELEMS`), and a raw tracepoint program `on_switch` at `sched_switch` that
//!   puts each CPU's difference since its previous switch into `diff_readings` (a per-CPU
//!   array of one `struct bpf_perf_event_value`). It lives while a session holds its link.
//! - The follower: a tracing program at `on_switch`'s exit (`BPF_TRACE_FEXIT`, named by the
//!   leader's BTF) adding `diff_readings` to this session's sums (`accum_readings`) where the
//!   task switched out (or the CPU) is one it follows (`filter`); before a read, user space
//!   runs the leader on each CPU (`BPF_PROG_TEST_RUN`) so that the time since the last switch
//!   is counted. Following tasks, programs at `task:task_newtask` (a followed process's new
//!   processes join its sum, perf's `on_newtask`) and `sched:sched_process_exit` (a task
//!   that exits is counted once more and let go, perf's `on_exittask`) keep the filter.
//!
//! The leader's program, maps and BTF are perf's in layout and names, so a follower of either
//! follows a leader of the other. The follower is this crate's own (perf's keeps its flags in
//! a `.bss` map; here they are an array of one word).

use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use counterhal_hal::{
    BoxedSharedCounter, Error, ErrorKind, EventRequest, ProgramSkips, Reading, Result,
    SharedCapability, SharedScope,
};

use super::bperf_attr::{attr_key, open_on_cpu};
use super::bperf_programs::{
    VALUE_BYTES, exit_program, follower_program, leader_events, leader_program, new_task_program,
    own_follower_program, word,
};
use super::bpf_mode::{
    bpf_error, create_flagged, failed, load, load_for, per_cpu_room, possible_cpus,
    programs_skipped,
};
use super::btf;
use crate::sys::bpf::{self as sys_bpf, AttachTo, ProgBtf};

pub use super::bperf_attr::ATTR_KEY_BYTES;

/// `ATTR_MAP_SIZE` of bpf_counter.c.
const ATTR_MAP_ENTRIES: u32 = 16;
/// `MAX_ENTRIES` of bperf_follower.bpf.c: the tasks one follower follows.
const FILTER_ENTRIES: u32 = 102_400;
/// The leader's function, which followers name.
const LEADER: &str = "on_switch";

/// Where the attr map is pinned by default: perf's `BPF_PERF_DEFAULT_ATTR_MAP_PATH` in the BPF
/// file system under `system`'s sysfs (`/sys/fs/bpf/perf_attr_map`).
pub fn default_attr_map(system: &counterhal_system::System) -> PathBuf {
    system.bpf_pin("perf_attr_map")
}

/// One event counted through a leader shared with other sessions (perf's and this crate's):
/// see the module's notes.
pub struct LinuxSharedCounter {
    /// The leader's link, held: the leader lives while a session holds it.
    _link: OwnedFd,
    /// The program run on each CPU before a read: the leader (its follower at its exit), or
    /// this session's own follower.
    leader: OwnedFd,
    /// The follower's link (and the new-task program's, where processes inherit).
    _links: Vec<OwnedFd>,
    /// The programs the kernel runs for this counter (the leader, the follower, those that
    /// follow tasks), each with its name, whose skips it counts (`recursion_misses`).
    programs: Vec<(&'static str, OwnedFd)>,
    accum: OwnedFd,
    enabled: OwnedFd,
    scope: SharedScope,
    /// The possible CPUs, the order of per-CPU values.
    possible: Vec<u32>,
    /// The CPUs the leader counts on (and is run on before a read).
    cpus: Vec<u32>,
    link_id: u32,
    diff_map_id: u32,
    started: bool,
    follows: Follows,
}

/// How a session's follower sees the leader's counts.
#[derive(Clone, Debug)]
enum Follows {
    /// perf's way: at the leader's exit, `diff_readings`.
    LeaderExit,
    /// At each switch, reading the leader's events itself; why not at the leader's exit.
    Switches(String),
}

impl std::fmt::Debug for LinuxSharedCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxSharedCounter")
            .field("scope", &self.scope)
            .field("link_id", &self.link_id)
            .field("diff_map_id", &self.diff_map_id)
            .field("started", &self.started)
            .finish()
    }
}

/// The attr map at `path`, pinned there first where nothing is (bperf_lock_attr_map), checked
/// for perf's key and value sizes, and locked (`flock`).
fn lock_attr_map(path: &Path) -> Result<OwnedFd> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::invalid_input("the attr map's path holds a NUL byte"))?;
    let where_ = path.display();
    let not_bpffs = |errno: i32| {
        let dir = path.parent().unwrap_or(Path::new("/")).display();
        bpf_error(&format!("pinning the attr map at {where_}"), errno).with_hint(format!(
            "{dir} must be a BPF file system (`mount -t bpf bpf {dir}`, as systemd mounts \
             /sys/fs/bpf), or name another place with --bpf-attr-map"
        ))
    };
    let map = if std::fs::symlink_metadata(path).is_err() {
        let map = create_flagged(
            sys_bpf::MAP_HASH,
            ATTR_KEY_BYTES as u32,
            8,
            ATTR_MAP_ENTRIES,
            0,
            "",
        )?;
        match sys_bpf::obj_pin(map.as_fd(), &c_path) {
            Ok(()) => map,
            // Someone pinned it meanwhile, or it cannot be pinned there.
            Err(errno) => sys_bpf::obj_get(&c_path).map_err(|_| not_bpffs(errno))?,
        }
    } else {
        sys_bpf::obj_get(&c_path).map_err(failed(&format!("opening the attr map {where_}")))?
    };
    let mut info = [0u8; 24];
    sys_bpf::obj_info(map.as_fd(), &mut info)
        .map_err(failed(&format!("reading the attr map {where_}")))?;
    let (key, value) = (word(&info, 8), word(&info, 12));
    if key as usize != ATTR_KEY_BYTES || value != 8 {
        return Err(Error::unsupported(format!(
            "the map pinned at {where_} has keys of {key} bytes and values of {value}; perf \
             7.2's attr map has keys of {ATTR_KEY_BYTES} (struct perf_event_attr) and values of \
             8 (struct perf_event_attr_map_entry)"
        ))
        .with_hint(
            "a perf older than 6.3 made it with its own perf_event_attr: remove it when no \
             session uses it, or name another with --bpf-attr-map",
        ));
    }
    sys_bpf::lock(map.as_fd(), true).map_err(failed(&format!("locking the attr map {where_}")))?;
    Ok(map)
}

/// What a session takes from the leader it found or started.
struct Leader {
    link: OwnedFd,
    program: OwnedFd,
    diff: OwnedFd,
    link_id: u32,
    diff_map_id: u32,
    started: bool,
}

impl LinuxSharedCounter {
    /// Counts `request` for `scope` through the leader of its attribute in the attr map at
    /// `attr_map` (`None`: [`default_attr_map`]), starting one (on `cpus`, every CPU) where
    /// none lives.
    ///
    /// # Errors
    /// [`ErrorKind::PermissionDenied`] without CAP_BPF, CAP_PERFMON and (for the ids)
    /// CAP_SYS_ADMIN, or root; [`ErrorKind::Unsupported`] where the attr map cannot be pinned
    /// (no BPF file system there) or is not perf 7.2's, or the kernel refuses a program
    /// (the verifier's log); as [`counterhal_hal::Backend::open`] for the event.
    pub fn open(
        system: &counterhal_system::System,
        request: &EventRequest,
        scope: SharedScope,
        cpus: &[u32],
        attr_map: Option<&Path>,
    ) -> Result<LinuxSharedCounter> {
        let path = attr_map.map_or_else(|| default_attr_map(system), Path::to_path_buf);
        let key = attr_key(request)?;
        let possible = possible_cpus(system)?;
        let map = lock_attr_map(&path)?;
        let leader = Self::leader(&map, &key, request, cpus, &possible);
        // Unlocked whatever happened (closing the last descriptor unlocks too).
        sys_bpf::lock(map.as_fd(), false).ok();
        drop(map);
        let leader = leader?;
        // bperf checks that the kernel runs raw tracepoint programs on a CPU.
        sys_bpf::prog_run_on_cpu(leader.program.as_fd(), cpus.first().copied().unwrap_or(0))
            .map_err(failed("running the leader program (BPF_PROG_TEST_RUN)"))?;
        let entries = match &scope {
            SharedScope::AllCpus => 1,
            SharedScope::Cpus(list) => list.len(),
            SharedScope::Threads(ids) | SharedScope::Processes { pids: ids, .. } => ids.len(),
        }
        .max(1) as u32;
        let accum = create_flagged(
            sys_bpf::MAP_PERCPU_ARRAY,
            4,
            VALUE_BYTES,
            entries,
            0,
            "accum_readings",
        )?;
        let filter = create_flagged(sys_bpf::MAP_HASH, 4, 8, FILTER_ENTRIES, 1, "filter")?;
        let enabled = create_flagged(sys_bpf::MAP_ARRAY, 4, 4, 1, 0, "ch_enabled")?;
        let keys: &[u32] = match &scope {
            SharedScope::AllCpus => &[],
            SharedScope::Cpus(list) => list,
            SharedScope::Threads(ids) | SharedScope::Processes { pids: ids, .. } => ids,
        };
        for (at, id) in keys.iter().enumerate() {
            let value = [(at as u32).to_ne_bytes(), 0u32.to_ne_bytes()].concat();
            sys_bpf::map_update(filter.as_fd(), &id.to_ne_bytes(), &value, 0)
                .map_err(failed("placing a task or CPU in the follower's filter"))?;
        }
        let leader_btf = Self::leader_btf_id(leader.program.as_fd())?;
        let insns = follower_program(
            &scope,
            enabled.as_fd(),
            filter.as_fd(),
            leader.diff.as_fd(),
            accum.as_fd(),
        );
        let at_exit = load_for(
            sys_bpf::PROG_TRACING,
            AttachTo {
                attach_type: sys_bpf::TRACE_FEXIT,
                btf_id: leader_btf,
            },
            Some(leader.program.as_fd()),
            None,
            &insns,
            "fexit_XXX",
        )
        .and_then(|program| {
            sys_bpf::attach_raw(program.as_fd(), None)
                .map(|link| (link, program))
                .map_err(failed("attaching the follower at the leader's exit"))
        });
        let held = |program: &OwnedFd| {
            program
                .try_clone()
                .map_err(|e| Error::new(ErrorKind::Other, format!("holding a program: {e}")))
        };
        let mut programs = vec![(LEADER, held(&leader.program)?)];
        let (mut links, trigger, follows) = match at_exit {
            Ok((link, program)) => {
                programs.push(("fexit_XXX", program));
                (vec![link], None, Follows::LeaderExit)
            }
            // A kernel without BPF trampolines for programs (EPERM, ENOTSUPP): the
            // follower reads the leader's events itself at each switch.
            Err(why) => {
                let events = leader_events(leader.program.as_fd())?;
                let prev = create_flagged(
                    sys_bpf::MAP_PERCPU_ARRAY,
                    4,
                    VALUE_BYTES,
                    1,
                    0,
                    "prev_readings",
                )?;
                let insns = own_follower_program(
                    &scope,
                    enabled.as_fd(),
                    filter.as_fd(),
                    events.as_fd(),
                    prev.as_fd(),
                    accum.as_fd(),
                );
                let program = load(sys_bpf::PROG_RAW_TRACEPOINT, &insns, "ch_follower")?;
                let link = sys_bpf::attach_raw(program.as_fd(), Some(c"sched_switch"))
                    .map_err(failed("attaching the follower at sched:sched_switch"))?;
                // Each CPU's reading taken now.
                for &cpu in cpus {
                    sys_bpf::prog_run_on_cpu(program.as_fd(), cpu).ok();
                }
                programs.push(("ch_follower", held(&program)?));
                (
                    vec![link],
                    Some(program),
                    Follows::Switches(why.to_string()),
                )
            }
        };
        if matches!(
            scope,
            SharedScope::Threads(_) | SharedScope::Processes { .. }
        ) {
            Self::follow_tasks(system, &scope, &enabled, &filter, &mut links, &mut programs)?;
        }
        Ok(LinuxSharedCounter {
            _link: leader.link,
            leader: trigger.unwrap_or(leader.program),
            follows,
            _links: links,
            programs,
            accum,
            enabled,
            scope,
            possible,
            cpus: cpus.to_vec(),
            link_id: leader.link_id,
            diff_map_id: leader.diff_map_id,
            started: leader.started,
        })
    }

    /// The programs that follow the tasks of `scope` (threads or processes): at a task's exit
    /// (its place in `filter` let go), and where processes inherit, at a task's start (a
    /// followed process's new task put in `filter`, counting where `enabled` says); their
    /// links added to `links`, the programs to `programs`.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] without the kernel's BTF (`task_struct`'s layout), or where
    /// the kernel refuses a program or its attachment.
    fn follow_tasks(
        system: &counterhal_system::System,
        scope: &SharedScope,
        enabled: &OwnedFd,
        filter: &OwnedFd,
        links: &mut Vec<OwnedFd>,
        programs: &mut Vec<(&'static str, OwnedFd)>,
    ) -> Result<()> {
        let vmlinux = btf::read_vmlinux(system).map_err(|e| {
            Error::unsupported(format!(
                "following tasks reads the kernel's BTF, {}: {e} (a kernel built \
                 without CONFIG_DEBUG_INFO_BTF)",
                btf::vmlinux(system).display()
            ))
        })?;
        let offset = |member: &str| {
            btf::member_offset(&vmlinux, "task_struct", member)
                .map_err(|why| Error::unsupported(format!("the kernel's BTF: {why}")))
        };
        let insns = exit_program(filter.as_fd(), offset("pid")?);
        let program = load(sys_bpf::PROG_RAW_TRACEPOINT, &insns, "on_exittask")?;
        links.push(
            sys_bpf::attach_raw(program.as_fd(), Some(c"sched_process_exit"))
                .map_err(failed("attaching a program at sched:sched_process_exit"))?,
        );
        programs.push(("on_exittask", program));
        if let SharedScope::Processes { inherit: true, .. } = scope {
            let insns = new_task_program(enabled.as_fd(), filter.as_fd(), offset("tgid")?);
            let program = load(sys_bpf::PROG_RAW_TRACEPOINT, &insns, "on_newtask")?;
            links.push(
                sys_bpf::attach_raw(program.as_fd(), Some(c"task_newtask"))
                    .map_err(failed("attaching a program at task:task_newtask"))?,
            );
            programs.push(("on_newtask", program));
        }
        Ok(())
    }

    /// The leader of `key` in the locked attr map `map`: the one whose link lives, or a new
    /// one, written there (bperf__load's first step).
    fn leader(
        map: &OwnedFd,
        key: &[u8],
        request: &EventRequest,
        cpus: &[u32],
        possible: &[u32],
    ) -> Result<Leader> {
        let mut entry = [0xffu8; 8];
        if sys_bpf::map_lookup(map.as_fd(), key, &mut entry).is_err() {
            entry = [0xff; 8];
        }
        let (link_id, diff_map_id) = (word(&entry, 0), word(&entry, 4));
        let found = sys_bpf::fd_by_id(sys_bpf::BPF_LINK_GET_FD_BY_ID, link_id).ok();
        let (link, link_id, diff_map_id, started) = match found {
            Some(link) => (link, link_id, diff_map_id, false),
            None => {
                let (link, link_id, diff_map_id) = Self::start_leader(request, cpus, possible)?;
                let value = [link_id.to_ne_bytes(), diff_map_id.to_ne_bytes()].concat();
                sys_bpf::map_update(map.as_fd(), key, &value, 0)
                    .map_err(failed("writing the leader in the attr map"))?;
                (link, link_id, diff_map_id, true)
            }
        };
        let mut info = [0u8; 16];
        sys_bpf::obj_info(link.as_fd(), &mut info).map_err(failed("reading the leader's link"))?;
        let program = sys_bpf::fd_by_id(sys_bpf::BPF_PROG_GET_FD_BY_ID, word(&info, 8))
            .map_err(failed("opening the leader program by its id"))?;
        let diff = sys_bpf::fd_by_id(sys_bpf::BPF_MAP_GET_FD_BY_ID, diff_map_id)
            .map_err(failed("opening the leader's diff_readings by its id"))?;
        Ok(Leader {
            link,
            program,
            diff,
            link_id,
            diff_map_id,
            started,
        })
    }

    /// A new leader for `request` on `cpus`: its link, the link's id and `diff_readings`' id
    /// (bperf_reload_leader_program).
    fn start_leader(
        request: &EventRequest,
        cpus: &[u32],
        possible: &[u32],
    ) -> Result<(OwnedFd, u32, u32)> {
        let slots = possible.iter().max().map_or(1, |last| last + 1);
        let events = create_flagged(
            sys_bpf::MAP_PERF_EVENT_ARRAY,
            4,
            4,
            slots,
            sys_bpf::F_PRESERVE_ELEMS,
            "events",
        )?;
        let prev = create_flagged(
            sys_bpf::MAP_PERCPU_ARRAY,
            4,
            VALUE_BYTES,
            1,
            0,
            "prev_readings",
        )?;
        let diff = create_flagged(
            sys_bpf::MAP_PERCPU_ARRAY,
            4,
            VALUE_BYTES,
            1,
            0,
            "diff_readings",
        )?;
        let btf = sys_bpf::btf_load(&btf::program_btf(LEADER))
            .map_err(failed("loading the leader program's BTF"))?;
        let insns = leader_program(events.as_fd(), prev.as_fd(), diff.as_fd());
        let program = load_for(
            sys_bpf::PROG_RAW_TRACEPOINT,
            AttachTo::default(),
            None,
            Some(ProgBtf {
                btf: btf.as_fd(),
                func_info: &[[0, 5]],
            }),
            &insns,
            LEADER,
        )?;
        let link = sys_bpf::attach_raw(program.as_fd(), Some(c"sched_switch"))
            .map_err(failed("attaching the leader at sched:sched_switch"))?;
        // The event on every CPU, each in its slot (bperf__install_pe); the array keeps them.
        for &cpu in cpus {
            let counter = open_on_cpu(request, cpu)?;
            sys_bpf::map_update_perf_event(events.as_fd(), cpu, counter.as_fd()).map_err(
                failed(&format!(
                    "placing {} on CPU {cpu} in the leader's events",
                    request.name
                )),
            )?;
        }
        let id = |fd: BorrowedFd<'_>, at: usize, what: &str| -> Result<u32> {
            let mut info = [0u8; 16];
            sys_bpf::obj_info(fd, &mut info).map_err(failed(what))?;
            Ok(word(&info, at))
        };
        let link_id = id(link.as_fd(), 4, "reading the leader's link id")?;
        let diff_id = id(diff.as_fd(), 4, "reading diff_readings' id")?;
        Ok((link, link_id, diff_id))
    }

    /// The BTF id of [`LEADER`] in the leader program's BTF, which a follower names at load.
    fn leader_btf_id(program: BorrowedFd<'_>) -> Result<u32> {
        let mut info = vec![0u8; 232];
        sys_bpf::obj_info(program, &mut info).map_err(failed("reading the leader program"))?;
        let btf_id = word(&info, 128);
        if btf_id == 0 {
            return Err(Error::unsupported(
                "the leader program has no BTF: no follower can be attached to it",
            ));
        }
        let btf = sys_bpf::fd_by_id(sys_bpf::BPF_BTF_GET_FD_BY_ID, btf_id)
            .map_err(failed("opening the leader program's BTF"))?;
        let data =
            sys_bpf::btf_data(btf.as_fd()).map_err(failed("reading the leader program's BTF"))?;
        btf::function_id(&data, LEADER)
            .map_err(|why| Error::unsupported(format!("the leader program's BTF: {why}")))
    }

    /// Starts adding up (perf's `bperf__enable`).
    ///
    /// # Errors
    /// Where the kernel refuses the map update.
    pub fn enable(&self) -> Result<()> {
        self.set_enabled(1)
    }

    /// Stops adding up (perf's `bperf__disable`): the sums stay.
    ///
    /// # Errors
    /// As [`LinuxSharedCounter::enable`].
    pub fn disable(&self) -> Result<()> {
        self.set_enabled(0)
    }

    fn set_enabled(&self, on: u32) -> Result<()> {
        sys_bpf::map_update(
            self.enabled.as_fd(),
            &0u32.to_ne_bytes(),
            &on.to_ne_bytes(),
            0,
        )
        .map_err(failed("enabling the follower"))
    }

    /// Runs the leader on each CPU (the time since each CPU's last switch counted), then
    /// reads the sums: for [`SharedScope::AllCpus`] one per CPU counted (in the order given
    /// at open), else one per CPU, thread or process of the scope.
    ///
    /// # Errors
    /// Where the kernel refuses the run or the lookup.
    pub fn read(&self) -> Result<Vec<Reading>> {
        for &cpu in &self.cpus {
            match sys_bpf::prog_run_on_cpu(self.leader.as_fd(), cpu) {
                Ok(_) | Err(libc::ENXIO) => {}
                Err(errno) => return Err(failed("running the leader before a read")(errno)),
            }
        }
        let room = per_cpu_room(VALUE_BYTES as usize);
        let mut values = vec![0u8; room * self.possible.len()];
        let reading = |values: &[u8], slot: usize| {
            let at = slot * room;
            let w = |o: usize| {
                u64::from_ne_bytes(values[at + o..at + o + 8].try_into().unwrap_or_default())
            };
            Reading::new(w(0), w(8), w(16))
        };
        let slot_of = |cpu: u32| self.possible.iter().position(|&p| p == cpu);
        let lookup = |key: u32, values: &mut Vec<u8>| {
            sys_bpf::map_lookup(self.accum.as_fd(), &key.to_ne_bytes(), values).map_err(|errno| {
                Error::new(ErrorKind::Other, "reading the follower's sums").with_errno(errno)
            })
        };
        Ok(match &self.scope {
            SharedScope::AllCpus => {
                lookup(0, &mut values)?;
                self.cpus
                    .iter()
                    .map(|&cpu| slot_of(cpu).map_or_else(Reading::default, |s| reading(&values, s)))
                    .collect()
            }
            SharedScope::Cpus(list) => {
                let mut out = Vec::with_capacity(list.len());
                for (at, &cpu) in list.iter().enumerate() {
                    lookup(at as u32, &mut values)?;
                    out.push(slot_of(cpu).map_or_else(Reading::default, |s| reading(&values, s)));
                }
                out
            }
            SharedScope::Threads(ids) | SharedScope::Processes { pids: ids, .. } => {
                let mut out = Vec::with_capacity(ids.len());
                for at in 0..ids.len() {
                    lookup(at as u32, &mut values)?;
                    let mut sum = Reading::default();
                    for slot in 0..self.possible.len() {
                        let r = reading(&values, slot);
                        sum.value = sum.value.wrapping_add(r.value);
                        sum.time_enabled = sum.time_enabled.wrapping_add(r.time_enabled);
                        sum.time_running = sum.time_running.wrapping_add(r.time_running);
                    }
                    out.push(sum);
                }
                out
            }
        })
    }

    /// Each program the kernel runs for this counter (the leader, the follower, and where it
    /// follows tasks, those at their start and exit), its name and id, and the times the
    /// kernel skipped it since it was loaded because a BPF program was already running on that
    /// CPU (`recursion_misses` of `struct bpf_prog_info`, Linux 5.12, read as the per-cgroup
    /// counter's [`CgroupCounter::programs_skipped`](counterhal_hal::CgroupCounter) reads it):
    /// each a switch, start or exit whose counts went to no one or the wrong task. The
    /// leader's count is every session's that shares it. Empty before Linux 5.12.
    pub fn programs_skipped(&self) -> Vec<ProgramSkips> {
        programs_skipped(&self.programs)
    }

    /// Where the kernel takes no program at the leader's exit (perf's follower, an fexit
    /// program: BPF trampolines for programs), why: this session's follower then reads the
    /// leader's events itself at each switch. `None` where it follows as perf's does.
    pub fn follows_at_switches(&self) -> Option<&str> {
        match &self.follows {
            Follows::LeaderExit => None,
            Follows::Switches(why) => Some(why),
        }
    }

    /// The leader's link id, as the attr map holds it.
    pub fn link_id(&self) -> u32 {
        self.link_id
    }

    /// The leader's `diff_readings` map id, as the attr map holds it.
    pub fn diff_map_id(&self) -> u32 {
        self.diff_map_id
    }

    /// Whether this session started the leader (`false`: it follows one another session
    /// started, perf's or this crate's).
    pub fn started_leader(&self) -> bool {
        self.started
    }
}

/// The counter as the capability hands it out: its inherent methods.
impl counterhal_hal::SharedCounter for LinuxSharedCounter {
    fn enable(&self) -> Result<()> {
        LinuxSharedCounter::enable(self)
    }

    fn disable(&self) -> Result<()> {
        LinuxSharedCounter::disable(self)
    }

    fn read(&self) -> Result<Vec<Reading>> {
        LinuxSharedCounter::read(self)
    }

    fn programs_skipped(&self) -> Vec<ProgramSkips> {
        LinuxSharedCounter::programs_skipped(self)
    }
}

/// The Linux backend shares counters as perf's bperf does, its map of leaders perf's attr map.
impl SharedCapability for crate::backend::LinuxBackend {
    fn open_shared_counter(
        &self,
        request: &EventRequest,
        scope: SharedScope,
        cpus: &[u32],
        leaders: Option<&Path>,
    ) -> Result<BoxedSharedCounter> {
        let counter = LinuxSharedCounter::open(self.system(), request, scope, cpus, leaders)?;
        Ok(Box::new(counter))
    }
}

/// The entries of the attr map at `path` (`None`: `system`'s [`default_attr_map`]): each key (a
/// `struct perf_event_attr` of [`ATTR_KEY_BYTES`]) with its link id and `diff_readings` id.
///
/// # Errors
/// Where nothing is pinned there, or the kernel refuses the reads.
pub fn attr_map_entries(
    system: &counterhal_system::System,
    path: Option<&Path>,
) -> Result<Vec<(Vec<u8>, u32, u32)>> {
    let path = path.map_or_else(|| default_attr_map(system), Path::to_path_buf);
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::invalid_input("the attr map's path holds a NUL byte"))?;
    let map = sys_bpf::obj_get(&c_path)
        .map_err(failed(&format!("opening the attr map {}", path.display())))?;
    let mut out = Vec::new();
    let mut key: Option<Vec<u8>> = None;
    loop {
        let mut next = vec![0u8; ATTR_KEY_BYTES];
        match sys_bpf::map_next_key(map.as_fd(), key.as_deref(), &mut next) {
            Ok(()) => {}
            Err(libc::ENOENT) => break,
            Err(errno) => return Err(failed("walking the attr map")(errno)),
        }
        let mut value = [0u8; 8];
        if sys_bpf::map_lookup(map.as_fd(), &next, &mut value).is_ok() {
            out.push((next.clone(), word(&value, 0), word(&value, 4)));
        }
        key = Some(next);
    }
    Ok(out)
}

/// Whether the BPF link `id` lives.
pub fn link_lives(id: u32) -> bool {
    sys_bpf::fd_by_id(sys_bpf::BPF_LINK_GET_FD_BY_ID, id).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::PerfEventAttr;
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;
    use counterhal_hal::{Encoding, PerfAttr};

    /// A BPF file system of its own, mounted on a fresh directory (none of the machine's
    /// mounts touched) and unmounted when dropped.
    struct Bpffs(PathBuf);

    impl Bpffs {
        fn mount() -> std::result::Result<Bpffs, String> {
            let dir = std::env::temp_dir().join(format!("counterhal-bpffs-{}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let out = std::process::Command::new("mount")
                .args(["-t", "bpf", "bpf"])
                .arg(&dir)
                .output()
                .map_err(|e| e.to_string())?;
            if !out.status.success() {
                std::fs::remove_dir(&dir).ok();
                return Err(String::from_utf8_lossy(&out.stderr).into_owned());
            }
            Ok(Bpffs(dir))
        }
    }

    impl Drop for Bpffs {
        fn drop(&mut self) {
            std::process::Command::new("umount")
                .arg(&self.0)
                .status()
                .ok();
            std::fs::remove_dir(&self.0).ok();
        }
    }

    /// Whether a follower's count is the kernel's: equal, but for the faults the test's own
    /// reads may take (a heap page for a buffer) between the kernel's read and the leader's
    /// run, which one side counts in this window and the other in the next.
    fn near(follower: u64, kernel: u64) -> bool {
        follower.abs_diff(kernel) <= 2
    }

    /// Touches `pages` fresh pages: one page fault each.
    fn touch(pages: usize) {
        counterhal_conformance::workload::touch_fresh_pages(pages);
    }

    /// Two followers of one event share one leader: the attr map holds one entry, whose
    /// link the second session found; each counts this thread's page faults as the kernel's
    /// own counter of them does, the second still once the first (which started the leader
    /// and opened its events) is gone; once both are gone the leader is gone and the map stays
    /// pinned with its (stale) entry, as perf leaves it.
    ///
    /// Oracle: the kernel's own count of this thread's page faults
    /// (`PERF_COUNT_SW_PAGE_FAULTS`, one per fresh page touched), and perf 7.2's bperf
    /// protocol (tools/perf/util/bpf_counter.c: `bperf__load`, libperf's bpf_perf.h).
    #[test]
    fn two_sessions_share_one_leader() {
        let _alone = super::super::bpf_alone();
        let fs = match Bpffs::mount() {
            Ok(fs) => fs,
            Err(why) => skip!(Need::Privilege, "mounting a BPF file system: {why}"),
        };
        let map = fs.0.join("perf_attr_map");
        let request = EventRequest::new("page-faults", Encoding::Perf(PerfAttr::new(1, 2)));
        let cpus = possible_cpus(&counterhal_system::System::host()).unwrap();
        let tid = crate::sys::gettid() as u32;
        let scope = SharedScope::Threads(vec![tid]);
        let first = match LinuxSharedCounter::open(
            &counterhal_system::System::host(),
            &request,
            scope.clone(),
            &cpus,
            Some(&map),
        ) {
            Ok(c) => c,
            Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                skip!(Need::Privilege, "{e}")
            }
            Err(e) => panic!("{e}"),
        };
        assert!(first.started_leader());
        let second = LinuxSharedCounter::open(
            &counterhal_system::System::host(),
            &request,
            scope,
            &cpus,
            Some(&map),
        )
        .unwrap();
        assert!(!second.started_leader());
        assert_eq!(first.link_id(), second.link_id());
        let entries = attr_map_entries(&counterhal_system::System::host(), Some(&map)).unwrap();
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert_eq!(entries[0].1, first.link_id());
        let mut attr = PerfEventAttr {
            type_: 1,
            size: crate::sys::ATTR_SIZE_VER8,
            config: 2,
            ..Default::default()
        };
        let kernel = crate::sys::perf_event_open(&mut attr, 0, -1, None, 0).unwrap();
        let kernel_count = || {
            let mut value = [0u8; 8];
            let mut file = std::fs::File::from(kernel.try_clone().unwrap());
            std::io::Read::read_exact(&mut file, &mut value).unwrap();
            u64::from_ne_bytes(value)
        };
        first.enable().unwrap();
        second.enable().unwrap();
        let before = (
            first.read().unwrap()[0].value,
            second.read().unwrap()[0].value,
            kernel_count(),
        );
        touch(256);
        let after = (
            first.read().unwrap()[0].value,
            second.read().unwrap()[0].value,
            kernel_count(),
        );
        let kernel_seen = after.2 - before.2;
        assert!((256..=264).contains(&kernel_seen), "{kernel_seen}");
        assert!(near(after.0 - before.0, kernel_seen), "the first session");
        assert!(near(after.1 - before.1, kernel_seen), "the second session");
        let link = first.link_id();
        drop(first);
        assert!(link_lives(link), "the second session holds the leader");
        // The leader's events outlive the session that opened them (the array keeps them).
        let before = (second.read().unwrap()[0].value, kernel_count());
        touch(256);
        let after = (second.read().unwrap()[0].value, kernel_count());
        assert!(
            near(after.0 - before.0, after.1 - before.1),
            "after its starter left: {after:?} {before:?}"
        );
        drop(second);
        assert!(!link_lives(link), "the leader outlived its sessions");
        assert_eq!(
            attr_map_entries(&counterhal_system::System::host(), Some(&map))
                .unwrap()
                .len(),
            1
        );
        assert!(map.exists(), "the attr map stays pinned");
        std::fs::remove_file(&map).unwrap();
    }

    /// A counter's programs (the leader, its follower, and for processes that inherit, those
    /// at a task's start and exit) and the times the kernel skipped each are what bpftool
    /// shows of them: their ids, and `recursion_misses` read as the per-cgroup counter reads
    /// them (`BPF_OBJ_GET_INFO_BY_FD`), between two reads of ours.
    ///
    /// Oracle: Debian's bpftool (7.1), `bpftool prog show id N`, which reads the same `struct
    /// bpf_prog_info` through libbpf's own layout of it.
    #[test]
    fn a_counters_program_skips_are_what_bpftool_reports() {
        let _alone = super::super::bpf_alone();
        if std::process::Command::new("bpftool")
            .arg("version")
            .output()
            .is_err()
        {
            skip!(Need::Tools, "bpftool is not installed (Debian's bpftool)");
        }
        let fs = match Bpffs::mount() {
            Ok(fs) => fs,
            Err(why) => skip!(Need::Privilege, "mounting a BPF file system: {why}"),
        };
        let map = fs.0.join("perf_attr_map");
        let request = EventRequest::new("page-faults", Encoding::Perf(PerfAttr::new(1, 2)));
        let cpus = possible_cpus(&counterhal_system::System::host()).unwrap();
        let scope = SharedScope::Processes {
            pids: vec![std::process::id()],
            inherit: true,
        };
        let counter = match LinuxSharedCounter::open(
            &counterhal_system::System::host(),
            &request,
            scope,
            &cpus,
            Some(&map),
        ) {
            Ok(c) => c,
            Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                skip!(Need::Privilege, "{e}")
            }
            Err(e) => panic!("{e}"),
        };
        let before = counter.programs_skipped();
        if before.is_empty() {
            skip!(
                Need::System,
                "a kernel before 5.12 counts no recursion_misses"
            );
        }
        let mut names: Vec<&str> = before.iter().map(|p| p.name).collect();
        names.sort_unstable();
        let follower = match counter.follows_at_switches() {
            Some(_) => "ch_follower",
            None => "fexit_XXX",
        };
        let mut expected = vec![follower, "on_exittask", "on_newtask", "on_switch"];
        expected.sort_unstable();
        assert_eq!(names, expected);
        for program in &before {
            let shown = super::super::tests::bpftool_recursion_misses(program.id)
                .unwrap_or_else(|| panic!("bpftool cannot show program {}", program.id));
            let after = counter
                .programs_skipped()
                .into_iter()
                .find(|p| p.id == program.id)
                .expect("the same program");
            assert!(
                (program.skipped..=after.skipped).contains(&shown),
                "{}: ours {} then {}, bpftool {shown}",
                program.name,
                program.skipped,
                after.skipped
            );
        }
        drop(counter);
        std::fs::remove_file(&map).ok();
    }

    /// perf's follower logic (the fexit program, which this kernel will not attach) adds the
    /// leader's differences for the task it follows: both loaded as raw tracepoint programs
    /// (their instructions the same) and run here on this thread's CPU, the leader then the
    /// follower, as a switch or a read runs them; the follower's sum grows by this thread's
    /// page faults, as the kernel's own counter of them does.
    ///
    /// Oracle: the kernel counting this thread's page faults (`PERF_COUNT_SW_PAGE_FAULTS`),
    /// and `BPF_PROG_TEST_RUN` running each program on the caller's CPU (net/bpf/test_run.c).
    #[test]
    fn the_exit_follower_adds_the_leaders_differences() {
        let _alone = super::super::bpf_alone();
        use crate::sys::{self, attr_bit};
        let possible = possible_cpus(&counterhal_system::System::host()).unwrap();
        let cpu = possible[0];
        sys::pin_thread_to(cpu).expect("this thread kept on one CPU");
        let made = [
            create_flagged(sys_bpf::MAP_PERF_EVENT_ARRAY, 4, 4, cpu + 1, 0, "events"),
            create_flagged(
                sys_bpf::MAP_PERCPU_ARRAY,
                4,
                VALUE_BYTES,
                1,
                0,
                "prev_readings",
            ),
            create_flagged(
                sys_bpf::MAP_PERCPU_ARRAY,
                4,
                VALUE_BYTES,
                1,
                0,
                "diff_readings",
            ),
            create_flagged(
                sys_bpf::MAP_PERCPU_ARRAY,
                4,
                VALUE_BYTES,
                1,
                0,
                "accum_readings",
            ),
            create_flagged(sys_bpf::MAP_HASH, 4, 8, 16, 1, "filter"),
            create_flagged(sys_bpf::MAP_ARRAY, 4, 4, 1, 0, "ch_enabled"),
        ];
        let [events, prev, diff, accum, filter, enabled] = match made {
            [Ok(a), Ok(b), Ok(c), Ok(d), Ok(e), Ok(f)] => [a, b, c, d, e, f],
            [Err(e), ..] if e.kind() == ErrorKind::PermissionDenied => {
                skip!(Need::Privilege, "BPF maps take CAP_BPF: {e}")
            }
            other => panic!("{:?}", other.map(|m| m.err())),
        };
        let mut attr = PerfEventAttr {
            type_: 1,
            size: crate::sys::ATTR_SIZE_VER8,
            config: 2,
            ..Default::default()
        };
        attr.set_flag(attr_bit::DISABLED, false);
        let event = sys::perf_event_open(&mut attr, 0, -1, None, 0).unwrap();
        sys_bpf::map_update_perf_event(events.as_fd(), cpu, event.as_fd()).unwrap();
        let tid = sys::gettid() as u32;
        let value = [0u32.to_ne_bytes(), 0u32.to_ne_bytes()].concat();
        sys_bpf::map_update(filter.as_fd(), &tid.to_ne_bytes(), &value, 0).unwrap();
        let one = 1u32.to_ne_bytes();
        sys_bpf::map_update(enabled.as_fd(), &0u32.to_ne_bytes(), &one, 0).unwrap();
        let leader = leader_program(events.as_fd(), prev.as_fd(), diff.as_fd());
        let leader = load(sys_bpf::PROG_RAW_TRACEPOINT, &leader, LEADER).unwrap();
        let scope = SharedScope::Threads(vec![tid]);
        let follower = follower_program(
            &scope,
            enabled.as_fd(),
            filter.as_fd(),
            diff.as_fd(),
            accum.as_fd(),
        );
        let follower = load(sys_bpf::PROG_RAW_TRACEPOINT, &follower, "fexit_XXX").unwrap();
        let switch = || {
            sys_bpf::prog_run_on_cpu(leader.as_fd(), cpu).unwrap();
            sys_bpf::prog_run_on_cpu(follower.as_fd(), cpu).unwrap();
        };
        let room = per_cpu_room(VALUE_BYTES as usize);
        let summed = || {
            let mut values = vec![0u8; room * possible.len()];
            sys_bpf::map_lookup(accum.as_fd(), &0u32.to_ne_bytes(), &mut values).unwrap();
            (0..possible.len())
                .map(|slot| {
                    u64::from_ne_bytes(values[slot * room..slot * room + 8].try_into().unwrap())
                })
                .sum::<u64>()
        };
        let kernel_count = || {
            let mut value = [0u8; 8];
            let mut file = std::fs::File::from(event.try_clone().unwrap());
            std::io::Read::read_exact(&mut file, &mut value).unwrap();
            u64::from_ne_bytes(value)
        };
        switch();
        let before = (summed(), kernel_count());
        touch(256);
        switch();
        let after = (summed(), kernel_count());
        assert!(
            (256..=264).contains(&(after.1 - before.1)),
            "{after:?} {before:?}"
        );
        assert!(
            near(after.0 - before.0, after.1 - before.1),
            "{after:?} {before:?}"
        );
        // Another thread's switches add nothing.
        sys_bpf::map_delete(filter.as_fd(), &tid.to_ne_bytes()).unwrap();
        touch(64);
        switch();
        assert_eq!(summed(), after.0, "a task not followed");
    }
}
