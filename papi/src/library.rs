//! The library's state (the backend, the native-event table, the event sets, the defaults)
//! and the calls of PAPI's interface that do not touch C memory. Every function returns a
//! PAPI code; `sys` turns C arguments into these calls.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use counterhal_hal::BackendTarget;
use facade::{AnyGroup, Chosen, EventSet, OpenOptions};

use crate::codes::{EINVAL, ENOEVST, ENOINIT, ESYS, OK};
use crate::description;
use crate::hl_record;
use crate::info::{self, ComponentInfo, set_str};
use crate::kept::Kept;
use crate::libpfm4::HypervisorLevel;
use crate::names::{self, Native};
use crate::perf_natives::Placement;
use crate::powercap_zones::ZoneEvent;
use crate::presets::presets;
use crate::unlocked::UNLOCKED;

/// `PAPI_STOPPED`.
pub const STOPPED: i32 = 0x01;
/// `PAPI_RUNNING`.
pub const RUNNING: i32 = 0x02;
/// `PAPI_OVERFLOWING`.
pub const OVERFLOWING: i32 = 0x10;
/// `PAPI_PROFILING`.
pub const PROFILING: i32 = 0x20;
/// `PAPI_MULTIPLEXING`.
pub const MULTIPLEXING: i32 = 0x40;
/// `PAPI_ATTACHED`.
pub const ATTACHED: i32 = 0x80;
/// `PAPI_CPU_ATTACHED`.
pub const CPU_ATTACHED: i32 = 0x100;
/// `PAPI_DOM_USER`.
pub const DOM_USER: i32 = 1;
/// `PAPI_DOM_KERNEL`.
pub const DOM_KERNEL: i32 = 2;
/// `PAPI_DOM_ALL`.
pub const DOM_ALL: i32 = 0xf;
/// `PAPI_GRN_THR`.
pub const GRN_THR: i32 = 1;
/// `PAPI_GRN_SYS`: every process on one CPU.
pub const GRN_SYS: i32 = 8;
/// The granularities PAPI 7.0's perf_event component takes (`available_granularities`):
/// the calling thread and the whole CPU.
pub const GRN_AVAILABLE: i32 = GRN_THR | GRN_SYS;

/// Whether `PAPI_disable_component(cidx)` was called before initialisation.
pub fn disabled(cidx: i32) -> bool {
    on_process(|process| process.disables(cidx)).unwrap_or(false)
}

/// `PAPI_disable_component(cidx)` before initialisation: the component is disabled at
/// `PAPI_library_init` (`PAPI_EINVAL` for an index past 31, `PAPI_EMISC` from a signal
/// handler that interrupted a call holding the lock).
pub fn disable(cidx: i32) -> i32 {
    if !(0..32).contains(&cidx) {
        return EINVAL;
    }
    on_process(|process| {
        process.disabled |= 1 << cidx;
        OK
    })
    .unwrap_or(crate::codes::EMISC)
}

/// The reason a component disabled by `PAPI_disable_component` gives, as PAPI 7.0's.
pub const DISABLED_BY_CALL: &str = "Disabled by PAPI_disable_component()";

/// `PAPI_set_debug`'s level (0 before any, and from a signal handler that interrupted a
/// call holding the lock).
pub fn debug_level() -> i32 {
    on_process(|process| process.debug_level).unwrap_or(0)
}

/// `PAPI_set_debug`: keeps `level` (`PAPI_EMISC` from a signal handler that interrupted a
/// call holding the lock).
pub fn set_debug_level(level: i32) -> i32 {
    on_process(|process| {
        process.debug_level = level;
        OK
    })
    .unwrap_or(crate::codes::EMISC)
}

/// One PAPI event set.
pub struct PapiSet {
    /// The events' codes, the names the backend opens and where each must run, in order.
    pub events: Vec<(i32, String, Placement)>,
    /// `PAPI_STOPPED` or `PAPI_RUNNING`, with `PAPI_MULTIPLEXING`, `PAPI_ATTACHED`,
    /// `PAPI_CPU_ATTACHED`.
    pub state: i32,
    /// The open counters, once started (kept open after a stop, so reads give the last
    /// counts, until the events or target change), shared with the set's published reads
    /// ([`PapiSet::reads`]); [`PapiSet::group_mut`] changes them.
    pub group: Option<std::sync::Arc<EventSet<AnyGroup>>>,
    /// Where the set is published for reads without the lock (its handle's slot).
    pub reads: &'static crate::shared_reads::Slot,
    /// `PAPI_DOM_*`.
    pub domain: i32,
    /// `PAPI_GRN_*`.
    pub granularity: i32,
    /// The CPU `PAPI_GRN_SYS` counts every process on: the caller's when the set took that
    /// granularity, as PAPI 7.0's perf_event component binds it (`_papi_getcpu()`).
    pub system_cpu: Option<u32>,
    /// The thread or process attached to.
    pub attached: Option<u32>,
    /// The thread the set belongs to, PAPI 7.0's `master`: the kernel id of the thread that
    /// created it, then of the thread `PAPI_attach` names (kept after `PAPI_detach`, as
    /// PAPI's). One set of a thread and component runs at a time ([`Library::thread_busy`]).
    pub master: std::ffi::c_ulong,
    /// The CPU attached to.
    pub cpu: Option<u32>,
    /// Whether children are counted.
    pub inherit: bool,
    /// The component assigned (-1 until an event or `PAPI_assign_eventset_component`).
    pub component: i32,
    /// The events that overflow (`PAPI_overflow`).
    pub overflows: Vec<crate::overflow::Spec>,
    /// Their samplers, from the start that opened them to the next start or change of the set.
    pub samplers: Vec<Sampled>,
    /// The buffer a read fills, sized at the start (reads allocate nothing).
    pub readings: Vec<counterhal_hal::Reading>,
    /// In a set of a component whose counters the library reads itself (sde, powercap):
    /// each event's counter, in order (libsde's id; the powercap event's index).
    pub own_counters: Vec<u32>,
    /// In such a set, the counts of its last stop (what reads of a stopped set give, as PAPI
    /// keeps them).
    pub own_values: Vec<i64>,
    /// In a set of the `powercap` component, each counter's value at the start or the last
    /// reset, which a read counts from.
    pub own_starts: Vec<i64>,
    /// The process the set was made in, as the C boundary's fork count
    /// (`counterhal_cboundary::forks`) was then: a set a parent made before forking is its
    /// parent's ([`PapiSet::made_here`]).
    pub generation: u64,
}

impl Drop for PapiSet {
    /// Withdraws the set's published counters (`PAPI_destroy_eventset`, `PAPI_shutdown`).
    fn drop(&mut self) {
        self.reads.withdraw();
    }
}

/// The sampler of one of a set's overflowing events. The event's count is the sampler's own
/// (as PAPI 7.0's perf_event component samples on the counter it reads), so that the count and
/// the overflows the handler saw come from one counter over one window.
pub struct Sampled {
    /// The sampler.
    pub sampler: facade::AnySampler,
    /// The event's index in the set.
    pub index: usize,
    /// Its count at the last reset.
    pub base: u64,
}

impl PapiSet {
    /// Drops the set's counters and samplers, to be opened again at the next start (after a
    /// change of its events, domain or target).
    pub fn forget_counters(&mut self) {
        // (Where a read of the set that this call's signal handler interrupted holds it, the
        // published counters stay readable until the set is published again.)
        self.reads.withdraw();
        self.group = None;
        self.samplers.clear();
    }

    /// `PAPI_EMISC` for a set made in a parent process before it forked this one: its
    /// counters are the parent's (the kernel shares a perf event between the processes that
    /// hold its file), so stopping, resetting or closing them here would change what the
    /// parent counts, and a child counts nothing with them. The child makes sets of its own
    /// (after `PAPI_library_init`, as PAPI's own fork tests do).
    pub fn made_here(&self) -> Result<(), i32> {
        if self.generation == counterhal_cboundary::forks() {
            Ok(())
        } else {
            Err(crate::codes::EMISC)
        }
    }

    /// The set's counters to change, withdrawn from the reads without the lock first:
    /// `PAPI_ENOTRUN` where none are open; `PAPI_EMISC` where a read of the set holds them on
    /// this thread (a signal handler that interrupted it changing the set, which must not
    /// wait for it).
    pub fn group_mut(&mut self) -> Result<&mut EventSet<AnyGroup>, i32> {
        let group = self.group.as_mut().ok_or(crate::codes::ENOTRUN)?;
        if !self.reads.withdraw() {
            return Err(crate::codes::EMISC);
        }
        std::sync::Arc::get_mut(group).ok_or(crate::codes::EBUG)
    }

    /// Publishes the set's counters for reads without the lock, where it has them and no
    /// overflowing event (whose count is its sampler's, read under the lock).
    pub fn publish(&self) {
        if let Some(group) = &self.group
            && self.samplers.is_empty()
        {
            self.reads
                .publish(group, self.state & MULTIPLEXING != 0, self.generation);
        }
    }

    /// PAPI's answer for a set no event or `PAPI_assign_eventset_component` has tied to a
    /// component yet: `PAPI_ENOCMP` (as Debian's PAPI 7.0 answers `PAPI_start` and
    /// `PAPI_stop` on a new empty set; papi/tests/side_by_side.rs).
    pub fn assigned(&self) -> Result<(), i32> {
        if self.component < 0 {
            Err(crate::codes::ENOCMP)
        } else {
            Ok(())
        }
    }

    /// Whom the set counts.
    pub fn target(&self) -> BackendTarget {
        // An uncore set counts one CPU, every process there: its events' `cpu` qualifier's,
        // else `PAPI_CPU_ATTACH`'s, else the first of its box's cpumask (as perf opens it).
        if self.component == UNCORE_COMPONENT {
            let cpu = self
                .event_cpu()
                .or(self.cpu)
                .or_else(|| self.events.iter().find_map(|(_, _, p)| p.system_cpu))
                .unwrap_or(0);
            return BackendTarget::Cpu(cpu);
        }
        // An event's `cpu` qualifier is where the set counts: every process there for a set
        // of the CPU, the thread alone while it runs there otherwise (as PAPI 7.0 opens it).
        // (Attached and inherited sets take no `cpu` qualifier: sets::add_event.)
        if let Some(cpu) = self.event_cpu() {
            return if self.cpu.or(self.system_cpu).is_some() {
                BackendTarget::Cpu(cpu)
            } else {
                BackendTarget::ThisThreadOnCpu(cpu)
            };
        }
        if let Some(cpu) = self.cpu.or(self.system_cpu) {
            return BackendTarget::Cpu(cpu);
        }
        match self.attached {
            Some(pid) => BackendTarget::Process {
                pid,
                inherit: self.inherit,
            },
            None if self.inherit => BackendTarget::Process {
                pid: std::process::id(),
                inherit: true,
            },
            None => BackendTarget::ThisThread,
        }
    }

    /// The facade's target for a sampler on the set: the thread or CPU it counts (a sampler
    /// follows no thread it creates).
    pub fn sampled_target(&self) -> facade::Target {
        match self.target() {
            BackendTarget::ThisThreadOnCpu(cpu) => facade::Target::ThisThreadOnCpu(cpu),
            BackendTarget::Process { pid, .. } => facade::Target::thread(pid),
            BackendTarget::Cpu(cpu) => facade::Target::cpu(cpu),
            _ => facade::Target::this_thread(),
        }
    }

    /// The backend names of `names` in the set's domain: `:u` appended for user mode alone,
    /// `:k` for kernel mode alone (perf's and libpfm4's modifiers), as given otherwise (the
    /// backend's default counts both). A name that gives its own levels (`perf::CS:u=0`)
    /// keeps them, as an event's qualifiers win over the set's domain in PAPI 7.0; one of a
    /// PMU that filters no level (`msr/tsc/`, an uncore box: [`names::counts_every_level`])
    /// is as given, since the kernel refuses such a PMU any level (the process's system's
    /// PMUs: `unlocked::system`).
    pub fn in_domain<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let suffix = match self.domain & (DOM_USER | DOM_KERNEL) {
            DOM_USER => ":u",
            DOM_KERNEL => ":k",
            _ => "",
        };
        let system = crate::unlocked::system();
        names
            .into_iter()
            .map(|n| {
                if suffix.is_empty()
                    || names::gives_levels(n)
                    || names::counts_every_level(system, n)
                {
                    n.to_string()
                } else {
                    format!("{n}{suffix}")
                }
            })
            .collect()
    }

    /// Whether an event placed at `placement` counts where the set's events count: a set has
    /// one CPU binding, as a perf group has (perf_event_open(2) refuses, `EINVAL`, an event
    /// on a CPU other than its group leader's, and PAPI 7.0's add answers `PAPI_EINVAL`): an
    /// event's `cpu` qualifier, else the set's CPU (`PAPI_CPU_ATTACH`, `PAPI_GRN_SYS`), else
    /// none (the thread wherever it runs), the same for every event.
    pub fn binds_alike(&self, placement: &Placement) -> bool {
        let bound = self.cpu.or(self.system_cpu);
        let cpu = |p: &Placement| p.cpu.or(bound);
        self.events.iter().all(|(_, _, p)| cpu(p) == cpu(placement))
    }

    /// The CPU the set's events name (`perf::` qualifier `cpu`), if any.
    pub fn event_cpu(&self) -> Option<u32> {
        self.events.iter().find_map(|(_, _, p)| p.cpu)
    }

    /// How the set opens: one group, or ungrouped when multiplexed; pinned or exclusive where
    /// an event asks (`perf::` qualifiers `pinned`, `excl`).
    pub fn options(&self) -> OpenOptions {
        let options = if self.state & MULTIPLEXING != 0 {
            OpenOptions::ungrouped()
        } else {
            OpenOptions::grouped()
        };
        options
            .pinned(self.events.iter().any(|(_, _, p)| p.pinned))
            .exclusive(self.events.iter().any(|(_, _, p)| p.exclusive))
    }
}

/// The initialised library.
pub struct Library {
    /// The backend.
    pub chosen: Chosen,
    /// The native events given codes, in code order.
    pub natives: Vec<Native>,
    /// How many natives are enumerated (the listed ones; later lookups add past them).
    pub listed: usize,
    /// The event sets by handle; `None` once destroyed.
    pub sets: Vec<Option<PapiSet>>,
    /// `PAPI_DEFDOM`.
    pub default_domain: i32,
    /// `PAPI_DEFGRN`.
    pub default_granularity: i32,
    /// Whether each preset can be counted here, as asked.
    pub preset_usable: HashMap<usize, bool>,
    /// The name the backend is asked for each preset, as decided once (the preset's own, or its
    /// perf twin where the backend maps it to nothing).
    pub preset_names: HashMap<usize, String>,
    /// Component 0's description.
    pub component: Box<ComponentInfo>,
    /// The `sde` component's description (component [`SDE_COMPONENT`]).
    pub sde_component: Box<ComponentInfo>,
    /// The system its facts are read from: the process's one (`unlocked::system`).
    pub system: &'static counterhal_system::System,
    /// The components registered beside the backend's and `sde`, as PAPI's component vector
    /// holds them.
    pub components: Components,
    /// The calling thread's kernel id, as the C interface reads it (the system call is the
    /// C interface's): a set's `master` is the thread that created it.
    pub thread_id: fn() -> std::ffi::c_ulong,
    /// The interval of PAPI's multiplexing timer, in nanoseconds, as PAPI 7.0's one
    /// `itimer_ns` (`PAPI_DEF_MPX_NS`, `PAPI_DEF_ITIMER_NS` and `PAPI_DEF_ITIMER` read it,
    /// `PAPI_DEF_MPX_NS` sets it; [`ITIMER_NS`] at each initialisation, as PAPI's). The
    /// backend multiplexes in the kernel, which does not use it; programs read it to pass it
    /// back (papi_multiplex_cost's `PAPI_MULTIPLEX` with its `ns`).
    pub itimer_ns: i32,
    /// libpfm4, opened at the first native event's description that needs its text.
    pub libpfm: crate::sys::pfm::Libpfm,
    /// Whether libpfm4's `perf::` events take the hypervisor level here, decided at the
    /// first name that asks.
    pub hypervisor: HypervisorLevel,
}

/// The multiplexing timer's interval at initialisation, in nanoseconds: 10 ms, as Debian's
/// PAPI 7.0 answers (and before initialisation).
pub const ITIMER_NS: i32 = 10_000_000;

/// The state of the components the library lists events of itself, set at
/// `PAPI_library_init` and dropped at `PAPI_shutdown` with the library.
#[derive(Default)]
pub struct Components {
    /// `perf_event_uncore`'s: each event of each box this machine has, by its name before
    /// the unit mask (`skx_unc_imc0::UNC_M_CAS_COUNT`), as `PAPI_enum_cmp_event` lists them.
    pub uncore: Registered<String>,
    /// `powercap`'s: its zones' events, in PAPI's order.
    pub powercap: Registered<ZoneEvent>,
    /// `sde`'s: libsde's tools interface, where initialisation found it in the process.
    pub sde: Option<crate::sys::sde::Api>,
}

/// One component as initialisation registered it: its description and its events.
pub struct Registered<E> {
    /// Its description since `PAPI_library_init` (kept for the process, so that a pointer
    /// `PAPI_get_component_info` gave stays valid); `None` until the component's set-up.
    pub info: Option<&'static ComponentInfo>,
    /// Its events.
    pub events: Vec<E>,
}

impl<E> Default for Registered<E> {
    fn default() -> Self {
        Registered {
            info: None,
            events: Vec::new(),
        }
    }
}

impl<E> Registered<E> {
    /// Whether the component is set up and enabled.
    pub fn enabled(&self) -> bool {
        self.info.is_some_and(|info| info.disabled == 0)
    }
}

impl Library {
    /// Whether a set other than `handle` runs on `handle`'s thread and component: PAPI 7.0
    /// lets one set run per thread and component (papi.c `PAPI_start`: its
    /// `thread->running_eventset[cidx]`, which a set attached to a thread or a CPU does not
    /// take, and which a set attached to a thread is checked against on that thread's
    /// behalf). `PAPI_start` then answers `PAPI_EISRUN`.
    pub fn thread_busy(&self, handle: usize) -> bool {
        let Some(Some(set)) = self.sets.get(handle) else {
            return false;
        };
        self.sets.iter().enumerate().any(|(other, s)| {
            s.as_ref().is_some_and(|s| {
                other != handle
                    && s.state & RUNNING != 0
                    && s.state & (ATTACHED | CPU_ATTACHED) == 0
                    && s.component == set.component
                    && s.master == set.master
            })
        })
    }
}

/// The index of the `sde` component (software-defined events), after the backend's.
pub const SDE_COMPONENT: i32 = UNCORE_COMPONENT + 1;

/// The index of the `perf_event_uncore` component, after the backend's, as PAPI 7.0 numbers
/// it.
pub const UNCORE_COMPONENT: i32 = 1;

/// What a process's PAPI holds: the settings a program may give before
/// `PAPI_library_init`, the last error, the library once initialised, the threads known, the
/// high-level interface's record, and what C holds pointers to. Every call reaches it
/// through the one lock (`PROCESS`); what that lock cannot serve stands beside it in one
/// other value (`unlocked::UNLOCKED`, each field saying why).
pub struct Process {
    /// The components `PAPI_disable_component` disabled before initialisation, one bit per
    /// index.
    disabled: u32,
    /// `PAPI_set_debug`'s level.
    debug_level: i32,
    /// The last error a call on the library answered, which `PAPI_perror` prints (PAPI
    /// 7.0's `_papi_hwi_errno`, set as its functions return an error).
    last_error: i32,
    /// The library, between `PAPI_library_init` and `PAPI_shutdown`.
    library: Option<Library>,
    /// The descriptions and names whose pointers C holds, for the process.
    kept: Kept,
    /// Where `PAPI_enum_dev_type` is in its walk (PAPI keeps one walk per process).
    pub dev_type_cursor: usize,
    /// The address of the device type the last `PAPIF_enum_dev_type` reached, which the
    /// Fortran attribute subroutines read (PAPI's Fortran wrappers keep one per process).
    pub fortran_dev_type: usize,
    /// The threads PAPI knows (the initialising thread and those registered), each with its
    /// thread-specific data, in the order they became known.
    threads: Vec<KnownThread>,
    /// What the high-level interface records, made at its first call. It has a lock of its
    /// own, as PAPI's high-level layer has (`HIGHLEVEL_LOCK`): its calls hold it over the
    /// event-set calls they make, which take this value's lock, so it is reached through
    /// this value and locked after this value's lock is given back ([`high_level`]).
    high_level: Option<Arc<Mutex<hl_record::Record>>>,
}

/// A thread PAPI knows: its id (`PAPI_thread_id`'s) and its three thread-specific slots
/// (`PAPI_USR1_TLS`, `PAPI_USR2_TLS`, `PAPI_TLS_HIGH_LEVEL`), C's addresses.
pub type KnownThread = (std::ffi::c_ulong, [usize; 3]);

impl Process {
    /// Whether `PAPI_disable_component(cidx)` was called before initialisation.
    fn disables(&self, cidx: i32) -> bool {
        disabled_in(self.disabled, cidx)
    }
}

/// Whether component `cidx` has its bit in `disabled` (one bit per index, up to 31).
fn disabled_in(disabled: u32, cidx: i32) -> bool {
    u32::try_from(cidx).is_ok_and(|c| c < 32 && disabled & (1 << c) != 0)
}

/// The process's PAPI, behind the one lock every call on the library takes.
///
/// Static: the one value C's calls reach, from any thread, before and after initialisation.
static PROCESS: Mutex<Process> = Mutex::new(Process {
    disabled: 0,
    debug_level: 0,
    last_error: OK,
    library: None,
    kept: Kept::new(),
    dev_type_cursor: 0,
    fortran_dev_type: 0,
    threads: Vec::new(),
    high_level: None,
});

thread_local! {
    /// Whether this thread holds the library's lock: a signal handler that interrupted it
    /// and calls the library is refused rather than wait for the lock forever.
    /// Per thread, so a thread-local: it is the lock's own state.
    #[allow(clippy::missing_const_for_thread_local)]
    static HOLDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The library's lock, held while the value lives: the guard is dropped first, then the
/// flag (a handler that comes between finds the flag still set and is refused, never left
/// waiting for the lock).
struct Locked {
    guard: MutexGuard<'static, Process>,
    _holding: Holding,
}

/// [`HOLDING`] set while the value lives.
struct Holding;

impl Drop for Holding {
    fn drop(&mut self) {
        HOLDING.with(|holding| holding.set(false));
    }
}

impl std::ops::Deref for Locked {
    type Target = Process;
    fn deref(&self) -> &Process {
        &self.guard
    }
}

impl std::ops::DerefMut for Locked {
    fn deref_mut(&mut self) -> &mut Process {
        &mut self.guard
    }
}

/// The library's lock; `None` when this thread holds it already, or is taking it (only a
/// signal handler that interrupted a call on the library gets here so). The flag is set
/// before the lock is taken, so no handler finds the lock held and the flag clear.
fn lock() -> Option<Locked> {
    if HOLDING.with(std::cell::Cell::get) {
        return None;
    }
    HOLDING.with(|holding| holding.set(true));
    let holding = Holding;
    let guard = PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    Some(Locked {
        guard,
        _holding: holding,
    })
}

/// Runs `f` on the process's PAPI, initialised or not; `None` from a signal handler that
/// interrupted a call holding the lock.
fn on_process<T>(f: impl FnOnce(&mut Process) -> T) -> Option<T> {
    // Dropped after the lock, as in `with_or`.
    let _held = crate::unlocked::hold_overflow_signal();
    let mut locked = lock()?;
    Some(f(&mut locked))
}

/// Runs `f` on the store of what the process keeps for C (`None` from a signal handler that
/// interrupted a call holding the lock).
pub fn keep<T>(f: impl FnOnce(&mut Kept) -> T) -> Option<T> {
    on_process(|process| f(&mut process.kept))
}

/// `PAPI_enum_dev_type`'s walk: runs `f` on where it is (`None` from a signal handler that
/// interrupted a call holding the lock).
pub fn with_dev_type_cursor<T>(f: impl FnOnce(&mut usize) -> T) -> Option<T> {
    on_process(|process| f(&mut process.dev_type_cursor))
}

/// What the high-level interface records, to lock once this call has given the library's
/// lock back (`None` from a signal handler that interrupted a call holding the lock).
pub fn high_level() -> Option<Arc<Mutex<hl_record::Record>>> {
    on_process(|process| Arc::clone(process.high_level.get_or_insert_default()))
}

/// Runs `f` on the threads PAPI knows (`None` from a signal handler that interrupted a call
/// holding the lock).
pub fn with_threads<T>(f: impl FnOnce(&mut Vec<KnownThread>) -> T) -> Option<T> {
    on_process(|process| f(&mut process.threads))
}

/// The device type the Fortran wrappers keep: runs `f` on its address (`None` from a signal
/// handler that interrupted a call holding the lock).
pub fn with_fortran_dev_type<T>(f: impl FnOnce(&mut usize) -> T) -> Option<T> {
    on_process(|process| f(&mut process.fortran_dev_type))
}

/// Runs `f` on the library where it is initialised, keeping no error for `PAPI_perror`
/// (`None` before initialisation, and from a signal handler that interrupted a call holding
/// the lock).
pub fn initialised<T>(f: impl FnOnce(&mut Library) -> T) -> Option<T> {
    on_process(|process| process.library.as_mut().map(f)).flatten()
}

/// Runs `f` on the library, or returns `PAPI_ENOINIT`.
pub fn with<T>(f: impl FnOnce(&mut Library) -> Result<T, i32>) -> Result<T, i32> {
    with_or(ENOINIT, |library, _| f(library))
}

/// Runs `f` on the library and the store of what the process keeps for C, or returns
/// `PAPI_ENOINIT`: for the components' initialisation, which keeps their descriptions.
pub fn with_kept<T>(f: impl FnOnce(&mut Library, &mut Kept) -> Result<T, i32>) -> Result<T, i32> {
    with_or(ENOINIT, f)
}

/// Runs `f` on the library for a call that names an event set, or returns `PAPI_ENOEVST`:
/// PAPI 7.0's calls on a set look it up in the library's table of sets before anything else,
/// and before initialisation (or after `PAPI_shutdown`) that table is empty, so `PAPI_start`,
/// `PAPI_read`, `PAPI_stop`, `PAPI_destroy_eventset` and the rest answer `PAPI_ENOEVST`, not
/// `PAPI_ENOINIT` (tests/c/side_by_side.c). (PAPI reads handle 0 from its table's first slot
/// without checking that the table exists, and crashes; ours answers it as any other.)
pub fn with_handle<T>(f: impl FnOnce(&mut Library) -> Result<T, i32>) -> Result<T, i32> {
    with_or(ENOEVST, |library, _| f(library))
}

/// Runs `f` on the library, or returns `uninitialised`; an error is kept for `PAPI_perror`.
fn with_or<T>(
    uninitialised: i32,
    f: impl FnOnce(&mut Library, &mut Kept) -> Result<T, i32>,
) -> Result<T, i32> {
    // Dropped after the lock below: an overflow handler that calls the library runs once the
    // lock is free, not on top of the call that holds it.
    let _held = crate::unlocked::hold_overflow_signal();
    // A signal handler that interrupted a call holding the lock on this thread: refused
    // (PAPI_EMISC), never a deadlock. (PAPI_read of a started set takes no lock.)
    let Some(mut locked) = lock() else {
        return Err(crate::codes::EMISC);
    };
    let process = &mut *locked;
    let result = match process.library.as_mut() {
        Some(library) => f(library, &mut process.kept),
        None => Err(uninitialised),
    };
    if let Err(code) = result
        && code < OK
    {
        locked.last_error = code;
    }
    result
}

/// Keeps `code`, when it is an error, as the one `PAPI_perror` prints, and returns it: what
/// PAPI 7.0's `papi_return` does with `_papi_hwi_errno`. (Its few plain `return`s of an error
/// leave the last one in place: `PAPI_query_event` of a preset that does not count.)
/// (A signal handler that interrupted a call holding the lock leaves it as it was.)
pub fn fail(code: i32) -> i32 {
    if code < OK {
        on_process(|process| process.last_error = code);
    }
    code
}

/// The last error a call on the library answered, which `PAPI_perror` prints (`PAPI_OK`
/// before any, and from a signal handler that interrupted a call holding the lock).
pub fn last_error() -> i32 {
    on_process(|process| process.last_error).unwrap_or(OK)
}

/// Runs `f` on event set `handle` (`PAPI_ENOEVST` when there is none, before initialisation
/// too: [`with_handle`]).
pub fn with_set<T>(
    handle: i32,
    f: impl FnOnce(&Chosen, &mut PapiSet) -> Result<T, i32>,
) -> Result<T, i32> {
    with_handle(|library| {
        let set = find_set(&mut library.sets, handle)?;
        f(&library.chosen, set)
    })
}

/// Event set `handle` of `sets`: `PAPI_ENOEVST` where there is none, `PAPI_EMISC` for a set a
/// parent process made before it forked this one ([`PapiSet::made_here`]).
pub fn find_set(sets: &mut [Option<PapiSet>], handle: i32) -> Result<&mut PapiSet, i32> {
    let set = usize::try_from(handle)
        .ok()
        .and_then(|i| sets.get_mut(i))
        .and_then(Option::as_mut)
        .ok_or(ENOEVST)?;
    set.made_here()?;
    Ok(set)
}

/// The environment variable naming the CPU model whose events libpapi's names resolve
/// against, instead of this machine's (a database id, `skx`, or perf's signature,
/// `GenuineIntel-6-55-4`), as the command's `--cpu-model`: read at `PAPI_library_init`.
pub const CPU_MODEL_VAR: &str = "COUNTERHAL_CPU_MODEL";

/// What a successful `PAPI_library_init` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    /// It initialised the library and set its components up.
    Made,
    /// The library was initialised already, in the same release: nothing was done, as PAPI
    /// returns at once.
    Already,
}

/// What the components' set-up at `PAPI_library_init` works on, under the library's lock (so
/// that a call racing the initialisation waits for the lock and finds the set-up done): the
/// new library, the store of what the process keeps for C, and the components
/// `PAPI_disable_component` disabled before.
pub struct SetUp<'a> {
    /// The library being initialised.
    pub library: &'a mut Library,
    /// The store of what the process keeps for C.
    pub kept: &'a mut Kept,
    /// The components disabled by call, one bit per index.
    disabled: u32,
}

impl SetUp<'_> {
    /// Whether `PAPI_disable_component(cidx)` was called before initialisation.
    pub fn disabled(&self, cidx: i32) -> bool {
        disabled_in(self.disabled, cidx)
    }
}

/// `PAPI_library_init`: `version` is the `PAPI_VER_CURRENT` of the release the program was
/// written against (7.0, 7.1 or 7.2). The first call that succeeds chooses the release the
/// process is answered in ([`crate::release`]); a later call with another release's version
/// is `PAPI_EINVAL` and changes nothing, as a real libpapi answers every version but its own.
///
/// # Errors
/// `PAPI_EINVAL` for a version of no release or of another release than the one chosen,
/// `PAPI_ESYS` where no backend opens, `PAPI_EMISC` from a signal handler that interrupted a
/// call holding the library's lock.
///
/// Once the library is made, the calling thread (`this_thread`, its `PAPI_thread_id`) is
/// known and `set_up` sets the components up, before the lock is given back.
pub fn library_init(
    version: i32,
    thread_id: fn() -> std::ffi::c_ulong,
    this_thread: std::ffi::c_ulong,
    set_up: impl FnOnce(&mut SetUp<'_>),
) -> Result<Init, i32> {
    let Some(release) = crate::release::Release::of_version(version) else {
        return Err(fail(EINVAL));
    };
    let Some(mut guard) = lock() else {
        return Err(crate::codes::EMISC);
    };
    if UNLOCKED
        .chosen_release
        .get()
        .is_some_and(|chosen| chosen != release)
    {
        guard.last_error = EINVAL;
        return Err(EINVAL);
    }
    if guard.library.is_some() {
        return Ok(Init::Already);
    }
    let setup = match std::env::var(CPU_MODEL_VAR) {
        Ok(model) if !model.is_empty() => facade::Setup::new().cpu_model(&model),
        _ => facade::Setup::new(),
    };
    let Ok(chosen) = setup.open() else {
        guard.last_error = ESYS;
        return Err(ESYS);
    };
    let disabled = guard.disables(0);
    let hypervisor = HypervisorLevel::default();
    let natives = if disabled {
        Vec::new()
    } else {
        names::listed(&chosen, &hypervisor)
    };
    let capabilities = chosen.backend().dyn_capabilities();
    let counters = description::hardware_counters(&chosen);
    let mut component = Box::new(component_info());
    let perf_event = capabilities.programs(counterhal_hal::Family::Perf);
    description::describe_component(&mut component, chosen.backend().dyn_name(), perf_event);
    component.num_cntrs = counters as i32;
    // A multiplexing backend takes as many events as PAPI 7.0's perf_event component does
    // (`papi_avail` there: "Max Multiplex Counters : 384").
    component.num_mpx_cntrs = if capabilities.multiplexing() {
        384
    } else {
        counters as i32
    };
    component.num_preset_events = presets().len() as i32;
    component.num_native_events = natives.len() as i32;
    component.initialized = 1;
    if disabled {
        component.disabled = 1;
        set_str(&mut component.disabled_reason, DISABLED_BY_CALL);
    }
    component.flags = description::component_flags(capabilities);
    let listed = natives.len();
    let mut library = Library {
        chosen,
        natives,
        listed,
        sets: Vec::new(),
        default_domain: DOM_USER,
        default_granularity: GRN_THR,
        preset_usable: HashMap::new(),
        preset_names: HashMap::new(),
        component,
        sde_component: Box::new(component_info()),
        system: crate::unlocked::system(),
        components: Components::default(),
        thread_id,
        itimer_ns: ITIMER_NS,
        libpfm: crate::sys::pfm::Libpfm::default(),
        hypervisor,
    };
    // Under the library's lock: no other call chose a release since the check above.
    let _ = UNLOCKED.chosen_release.set(release);
    let process = &mut *guard;
    if !process.threads.iter().any(|(t, _)| *t == this_thread) {
        process.threads.push((this_thread, [0; 3]));
    }
    set_up(&mut SetUp {
        library: &mut library,
        kept: &mut process.kept,
        disabled: process.disabled,
    });
    process.library = Some(library);
    UNLOCKED.init_state.fetch_or(1, Ordering::SeqCst);
    Ok(Init::Made)
}

/// Component 0's description before initialisation: its name, which tools read to choose
/// components to disable (kept for the process; NULL from a signal handler that interrupted a
/// call holding the lock).
pub fn component_before_init() -> *const ComponentInfo {
    let mut info = component_info();
    // The backend that would be chosen: PAPI's perf_event component where it counts
    // through the kernel's `perf_event_open`, as its registration says.
    let first = facade::native_backends().next();
    let perf_event = first.is_some_and(|r| r.interface == "perf_event_open");
    description::describe_component(&mut info, first.map_or("none", |r| r.name), perf_event);
    kept_description(info)
}

/// `info` kept for the process ([`Kept::description`]); NULL from a signal handler that
/// interrupted a call holding the lock.
pub fn kept_description(info: ComponentInfo) -> *const ComponentInfo {
    keep(|kept| kept.description(info) as *const ComponentInfo).unwrap_or(std::ptr::null())
}

/// A component's description with every field empty but the defaults of component 0
/// (user domain, the calling thread).
pub fn component_info() -> ComponentInfo {
    ComponentInfo {
        name: [0; info::MAX_STR],
        short_name: [0; info::MIN_STR],
        description: [0; info::MAX_STR],
        version: [0; info::MIN_STR],
        support_version: [0; info::MIN_STR],
        kernel_version: [0; info::MIN_STR],
        disabled_reason: [0; info::HUGE_STR],
        disabled: 0,
        partial: (),
        initialized: 0,
        cmp_idx: 0,
        num_cntrs: 0,
        num_mpx_cntrs: 0,
        num_preset_events: 0,
        num_native_events: 0,
        default_domain: DOM_USER,
        available_domains: DOM_USER | 2,
        default_granularity: GRN_THR,
        available_granularities: GRN_AVAILABLE,
        hardware_intr_sig: 0,
        component_type: 0,
        pmu_names: [0; 80],
        reserved: [0; 8],
        flags: 0,
    }
}

/// `PAPI_shutdown`: drops every event set and the backend. The samplers of a parent's sets
/// (in a forked child) are left as they are, not stopped: their polling threads are the
/// parent's, and the signal that would stop one would stop the parent's.
pub fn shutdown() {
    // (From a signal handler that interrupted a call holding the lock: nothing is done.)
    let Some(mut locked) = lock() else {
        return;
    };
    if let Some(library) = locked.library.as_mut() {
        for set in library.sets.iter_mut().flatten() {
            if set.made_here().is_err() {
                std::mem::forget(std::mem::take(&mut set.samplers));
            }
        }
    }
    locked.library = None;
    drop(locked);
    UNLOCKED.init_state.store(0, Ordering::SeqCst);
}

/// Component 0's description (a pointer stable while the library is initialised; before
/// initialisation, the description `PAPI_disable_component` callers read), the `sde`
/// component's once initialised, or NULL for any other component.
pub fn component(cidx: i32) -> *const ComponentInfo {
    if cidx == SDE_COMPONENT {
        return with(|library| Ok(&*library.sde_component as *const ComponentInfo))
            .unwrap_or(std::ptr::null());
    }
    if cidx != 0 {
        return std::ptr::null();
    }
    match with(|library| Ok(&*library.component as *const ComponentInfo)) {
        Ok(info) => info,
        Err(_) => component_before_init(),
    }
}

/// The CPU the calling thread runs on now (`PAPI_GRN_SYS` counts on it), as `sched_getcpu`
/// tells it: the `processor` field of `system`'s thread-self stat (proc(5)). `None` where the
/// system cannot say.
pub fn current_cpu(system: &counterhal_system::System) -> Option<u32> {
    Some(system.thread_self_stat()?.processor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_kept_once_by_its_contents() {
        let mut kept = Kept::new();
        let first = kept.name("uncore_imc_0");
        assert!(std::ptr::eq(first, kept.name("uncore_imc_0")));
        assert!(!std::ptr::eq(first, kept.name("uncore_imc_1")));
        let mut info = component_info();
        let one = kept.description(info);
        assert!(std::ptr::eq(one, kept.description(info)));
        info.disabled = 1;
        assert!(!std::ptr::eq(one, kept.description(info)));
    }
}
