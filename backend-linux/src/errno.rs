//! The one place where an OS error number becomes an [`ErrorKind`] and a hint.
//!
//! [`map_errno`] is a pure function of the errno, what was being done ([`Operation`], with the
//! attr's salient facts) and the facts of the machine ([`SystemFacts`]), so every row of the
//! table is tested with injected values, and the real kernel's answers are tested separately.

use std::fmt;

use counterhal_hal::{Error, ErrorKind};

use counterhal_hal::ExcludeBits;
#[cfg(target_os = "linux")]
use counterhal_system::System;
use counterhal_system::{PerfAccess, PerfPermissions};

/// Facts about the machine that make a hint precise. Gathered once by
/// [`SystemFacts::gather`]; tests build their own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemFacts {
    /// `/proc/sys/kernel/perf_event_paranoid`, when readable.
    pub paranoid: Option<i32>,
    /// Whether a core PMU (`cpu`, `cpu_core`, `cpu_atom`, an `armv8_*`...) is present, i.e.
    /// whether hardware and cache events can exist here.
    pub hardware_pmu: bool,
    /// Whether the process runs as root (effective uid 0).
    pub root: bool,
    /// The process's effective capabilities (`CapEff`'s bits), 0 where unknown.
    pub capabilities: u64,
    /// The soft `RLIMIT_NOFILE`, when known.
    pub fd_limit: Option<u64>,
}

impl SystemFacts {
    /// Facts that are not known (hints then stay general).
    pub fn unknown() -> SystemFacts {
        SystemFacts {
            paranoid: None,
            hardware_pmu: false,
            root: false,
            capabilities: 0,
            fd_limit: None,
        }
    }

    /// Reads the facts from `system`'s procfs, with whether a core PMU is in sysfs
    /// (`hardware_pmu`, from the one listing of the PMUs the backend reads at probe).
    #[cfg(target_os = "linux")]
    pub fn gather(system: &System, hardware_pmu: bool) -> SystemFacts {
        SystemFacts {
            paranoid: system.perf_event_paranoid(),
            hardware_pmu,
            root: crate::sys::effective_uid() == 0,
            capabilities: system.effective_capabilities().unwrap_or(0),
            fd_limit: crate::sys::fd_limit().map(|(soft, _)| soft),
        }
    }

    /// These facts with what can change while the process runs read again from `system`,
    /// where `errno`'s hint names it: for a refusal (EACCES, EPERM) the paranoid level, the
    /// effective user and the capabilities; for EMFILE and ENFILE the open-file limit. Taken
    /// when an open fails, so that its hint names the limits of that moment, not those of the
    /// probe; an errno whose hint names none of them reads nothing (an event this PMU lacks,
    /// ENOENT, fails in every `stat` on a machine without hardware counters: reading the
    /// paranoid level and two status files for each cost `stat -- true` 12% of its time).
    #[cfg(target_os = "linux")]
    pub fn now(&self, system: &System, errno: i32) -> SystemFacts {
        let mut now = self.clone();
        if is_refusal(errno) {
            now.paranoid = system.perf_event_paranoid();
            now.root = crate::sys::effective_uid() == 0;
            now.capabilities = system.effective_capabilities().unwrap_or(0);
        }
        if matches!(errno, libc::EMFILE | libc::ENFILE) {
            now.fd_limit = crate::sys::fd_limit().map(|(soft, _)| soft);
        }
        now
    }

    /// What the paranoid level alone permits an unprivileged process (the one judgement,
    /// [`PerfPermissions::allows`]): `None` where the level is not known.
    fn level_allows(&self, access: PerfAccess) -> Option<bool> {
        PerfPermissions::new(self.paranoid, 0).allows(access)
    }

    /// Whether the process's capabilities, CAP_PERFMON or CAP_SYS_ADMIN, let it make `access`
    /// past every paranoid limit (the kernel's `perfmon_capable`, level 3's patch aside).
    fn capabilities_allow(&self, access: PerfAccess) -> bool {
        let permissions = PerfPermissions::new(self.paranoid, self.capabilities);
        permissions.perfmon_capable() && permissions.allows(access) == Some(true)
    }
}

/// What kind of event an attr describes (for the hint).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventClass {
    /// `PERF_TYPE_HARDWARE`.
    Hardware,
    /// `PERF_TYPE_HW_CACHE`.
    Cache,
    /// `PERF_TYPE_RAW` or a core PMU's own type.
    Raw,
    /// `PERF_TYPE_SOFTWARE`.
    Software,
    /// `PERF_TYPE_TRACEPOINT`.
    Tracepoint,
    /// `PERF_TYPE_BREAKPOINT`.
    Breakpoint,
    /// Another dynamic PMU from sysfs.
    Dynamic,
}

impl EventClass {
    /// The class of an attr `type`.
    pub fn of_type(type_: u32) -> EventClass {
        match type_ {
            0 => EventClass::Hardware,
            1 => EventClass::Software,
            2 => EventClass::Tracepoint,
            3 => EventClass::Cache,
            4 => EventClass::Raw,
            5 => EventClass::Breakpoint,
            _ => EventClass::Dynamic,
        }
    }

    fn is_hardware(self) -> bool {
        matches!(
            self,
            EventClass::Hardware | EventClass::Cache | EventClass::Raw
        )
    }
}

/// What `perf_event_open` was asked to do, as far as error hints care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenAttempt {
    /// The event's class.
    pub class: EventClass,
    /// Whether `exclude_kernel` was clear (kernel counted).
    pub counts_kernel: bool,
    /// The `exclude_*` bits that were set.
    pub exclude: ExcludeBits,
    /// `inherit`.
    pub inherit: bool,
    /// Whether `read_format` has `PERF_FORMAT_GROUP`.
    pub group_read: bool,
    /// The `pid` argument (-1: any, 0: self).
    pub pid: i32,
    /// Whether that process (a `pid` above 0) belongs to another user
    /// (`System::belongs_to_another_user`): the ptrace access check is then what refuses.
    pub another_user: bool,
    /// The `cpu` argument (-1: any).
    pub cpu: i32,
    /// Whether that CPU is online (`/sys/devices/system/cpu/online`); `None` when unknown or
    /// when no CPU was named.
    pub cpu_online: Option<bool>,
    /// Whether this event joins an existing group.
    pub member: bool,
}

/// The operation that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// `perf_event_open`.
    Open(OpenAttempt),
    /// `read` of counter values.
    Read,
    /// An ioctl, by name (`ENABLE`, `RESET`...).
    Ioctl(&'static str),
    /// `mmap` of the self-monitoring page.
    Mmap,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operation::Open(_) => f.write_str("perf_event_open"),
            Operation::Read => f.write_str("read of the counters"),
            Operation::Ioctl(name) => write!(f, "ioctl PERF_EVENT_IOC_{name}"),
            Operation::Mmap => f.write_str("mmap of the event page"),
        }
    }
}

/// Whether `errno` is a refusal (EACCES, EPERM): the one answer whose hint names the paranoid
/// level, the capabilities and whether the process counted is another user's, so the one for
/// which they are read when an open fails.
pub(crate) fn is_refusal(errno: i32) -> bool {
    matches!(errno, libc::EACCES | libc::EPERM)
}

fn paranoid_text(facts: &SystemFacts) -> String {
    match facts.paranoid {
        Some(value) => format!("kernel.perf_event_paranoid is {value}"),
        None => "kernel.perf_event_paranoid could not be read".to_string(),
    }
}

/// What counting a tracepoint needs of `perf_event_paranoid`, as the kernel checks it
/// (`perf_event_open` in kernel/events/core.c, `perf_trace_event_perm` in
/// kernel/trace/trace_event_perf.c): what any event counting the kernel needs, since
/// tracepoints fire there; -1 (`perf_allow_tracepoint`) only for raw samples and ftrace's
/// function tracepoint.
pub(crate) const TRACEPOINT_RIGHTS: &str = "a tracepoint fires in the kernel: counting it \
     needs 1 or lower (echo 1 > /proc/sys/kernel/perf_event_paranoid), as counting any kernel \
     event does (:u counts only the hits with user registers, the syscalls tracepoints'); -1 \
     is needed only for raw samples (PERF_SAMPLE_RAW) and ftrace's function tracepoint, which \
     counterhal does not take";

/// What an open asks of `perf_event_open`'s checks: a whole CPU, the kernel (a tracepoint
/// fires there), or its own tasks' user space.
fn access_of(attempt: Option<&OpenAttempt>) -> PerfAccess {
    match attempt {
        Some(a) if a.cpu >= 0 && a.pid == -1 => PerfAccess::Cpu,
        Some(a) if a.counts_kernel || a.class == EventClass::Tracepoint => PerfAccess::Kernel,
        _ => PerfAccess::Any,
    }
}

fn permission_hint(attempt: Option<&OpenAttempt>, facts: &SystemFacts) -> String {
    let paranoid = paranoid_text(facts);
    // Capable and refused all the same: neither the level nor a capability is the cause.
    if facts.capabilities_allow(access_of(attempt)) {
        return format!(
            "a seccomp filter (containers) or an LSM may block perf_event_open: this process \
             holds CAP_PERFMON or CAP_SYS_ADMIN, which lift the limits of the paranoid level \
             ({paranoid}), and was refused all the same; a container runtime's default seccomp \
             profile allows perf_event_open to CAP_SYS_ADMIN alone"
        );
    }
    let needs = match attempt {
        Some(a) if a.pid > 0 && a.another_user => {
            return format!(
                "process {} belongs to another user: attaching counters to it needs the ptrace \
                 access perf_event_open checks (CAP_PERFMON or CAP_SYS_PTRACE, or root)",
                a.pid
            );
        }
        // Upstream kernels know levels up to 2 and treat 3 as 2; a patch carried by Debian,
        // Ubuntu and Android makes 3 forbid every unprivileged open. A refused open that level
        // 2 allows (user space only, of a task, no tracepoint) shows this kernel has it.
        Some(a)
            if facts.level_allows(PerfAccess::Any) == Some(false)
                && !a.counts_kernel
                && a.pid != -1
                && a.class != EventClass::Tracepoint =>
        {
            "this kernel forbids every unprivileged use at 3 (a patch of Debian, Ubuntu and \
             Android kernels); set it to 2 or lower"
                .to_string()
        }
        Some(a) if a.cpu >= 0 && a.pid == -1 => {
            "counting a whole CPU needs 0 or lower (echo 0 > /proc/sys/kernel/perf_event_paranoid)"
                .to_string()
        }
        Some(a) if a.class == EventClass::Tracepoint => TRACEPOINT_RIGHTS.to_string(),
        Some(a) if a.counts_kernel && facts.level_allows(PerfAccess::Kernel) == Some(false) => {
            "at 2 an unprivileged user may count only user space: use the :u modifier, or set it \
             to 1 (echo 1 > /proc/sys/kernel/perf_event_paranoid)"
                .to_string()
        }
        _ => "lower it (echo 1 > /proc/sys/kernel/perf_event_paranoid)".to_string(),
    };
    let mut hint = format!("{paranoid}; {needs}; or run with CAP_PERFMON (or as root)");
    if facts.level_allows(PerfAccess::Any) == Some(false) && !needs.contains("at 3") {
        hint.push_str(
            "; where the kernel carries the level-3 patch (Debian, Ubuntu, Android) every \
             unprivileged use needs 2 or lower",
        );
    }
    if facts.root {
        hint.push_str(
            "; running as root and still refused: a seccomp filter (containers) or an LSM may \
             block perf_event_open",
        );
    }
    hint
}

fn no_event_hint(attempt: Option<&OpenAttempt>, facts: &SystemFacts) -> String {
    match attempt.map(|a| a.class) {
        Some(class) if class.is_hardware() && !facts.hardware_pmu => {
            "this machine exposes no hardware counters (no core PMU in \
             /sys/bus/event_source/devices, neither `cpu` nor one with a `cpus` file: a VM or \
             container without a virtual PMU); use software events, tracepoints or breakpoints"
                .to_string()
        }
        Some(class) if class.is_hardware() => {
            "the CPU's PMU does not implement this event; see `counterhal list`".to_string()
        }
        Some(EventClass::Breakpoint) => {
            "hardware breakpoints are not available here (check bp_type and bp_len)".to_string()
        }
        Some(EventClass::Tracepoint) => {
            "the tracepoint id is stale or unknown; check tracefs events/".to_string()
        }
        _ => "the PMU has no such event".to_string(),
    }
}

/// Whether EINVAL from this open is the CPU's fault: only when the CPU is known to be offline
/// or out of range.
fn blames_cpu(attempt: &OpenAttempt) -> bool {
    attempt.cpu >= 0 && attempt.cpu_online == Some(false)
}

fn invalid_field_hint(attempt: &OpenAttempt) -> String {
    let excluded = attempt.exclude.names().collect::<Vec<_>>().join(", ");
    let field = match attempt {
        a if blames_cpu(a) => {
            format!("cpu: CPU {} is out of range or offline", a.cpu)
        }
        a if a.class == EventClass::Breakpoint => {
            "bp_addr/bp_len/bp_type: length must be 1, 2, 4 or 8 (8 for execute) and the \
             address aligned to it; x86 has no read-only breakpoints (use :rw or :w)"
                .to_string()
        }
        a if a.exclude.any() && a.class == EventClass::Dynamic => format!(
            "the exclude bits ({excluded}): this PMU cannot filter by privilege level or \
             context; drop the modifiers (:u, :k, :h, :G, :H)"
        ),
        a if matches!(a.class, EventClass::Raw | EventClass::Dynamic) => {
            "config/config1/config2: a value outside the PMU's format (see its sysfs format/)"
                .to_string()
        }
        a if a.member => {
            "group: the event cannot join this group (mixed hardware PMUs?); open ungrouped"
                .to_string()
        }
        a if a.exclude.any() => format!(
            "the exclude bits ({excluded}), or config: the PMU may not filter this event by \
             domain; try without modifiers"
        ),
        // Last: the backend reads inherited groups this way only after checking that this
        // kernel accepts it, so it is the cause only when nothing else is.
        a if a.inherit && a.group_read => {
            "read_format: this kernel refuses inherit with PERF_FORMAT_GROUP".to_string()
        }
        _ => "config: the event code is not valid for this type".to_string(),
    };
    format!("the attr field most likely at fault is {field}")
}

/// The kind, message and hint of an ioctl's errno, where they differ from `perf_event_open`'s.
fn ioctl_error(errno: i32, name: &str) -> Option<(ErrorKind, &'static str, String)> {
    let hint = match (errno, name) {
        (libc::EINVAL, "PERIOD") => {
            "PERIOD needs a nonzero period and a sampling event (opened with a sample period; \
             a counting event has none)"
        }
        (libc::EINVAL, "REFRESH") => {
            "REFRESH needs a sampling event (opened with a sample period) that is not \
             inherited, and a nonzero count"
        }
        (libc::EINVAL, "SET_OUTPUT") => {
            "SET_OUTPUT needs a target other than the event itself, on the same CPU and task, \
             with its ring buffer mapped, and an event without a mapping of its own"
        }
        (libc::EINVAL, "SET_FILTER") => {
            "SET_FILTER needs a tracepoint (or probe) event and a filter the kernel parses, \
             e.g. `common_pid == 1`; the fields are in the tracepoint's `format` file"
        }
        (libc::EINVAL, _) => "the kernel refused the request or its argument for this event",
        (libc::ENOTTY | libc::EBADF, _) => {
            return Some((
                ErrorKind::InvalidInput,
                "not a perf event descriptor",
                format!("PERF_EVENT_IOC_{name} applies only to a descriptor from perf_event_open"),
            ));
        }
        (libc::ENOMEM, _) => {
            return Some((
                ErrorKind::Busy,
                "out of memory",
                "the kernel could not allocate what the request needs".to_string(),
            ));
        }
        _ => return None,
    };
    Some((
        ErrorKind::InvalidInput,
        "invalid argument",
        hint.to_string(),
    ))
}

/// The error for E2BIG from `perf_event_open` when the kernel wrote back the attr size it knows
/// (`kernel_size`) and `field` (beyond that size) is set, so the event cannot be opened with
/// the smaller size.
pub fn attr_size_error(kernel_size: Option<u32>, field: Option<&str>) -> Error {
    let known = match kernel_size {
        Some(size) => format!("this kernel knows {size} bytes of perf_event_attr"),
        None => "this kernel knows a smaller perf_event_attr (it wrote back no size)".to_string(),
    };
    let (kind, message) = match field {
        Some(field) => (
            ErrorKind::Unsupported,
            format!(
                "perf_event_open: the event sets attr field `{field}`, which lies beyond what \
                 this kernel knows ({known})"
            ),
        ),
        None => (
            ErrorKind::InvalidEvent,
            format!("perf_event_open: attr size not supported ({known})"),
        ),
    };
    Error::new(kind, message).with_errno(libc::E2BIG).with_hint(
        "the field needs a newer kernel (config3: Linux 6.3, sig_data: 5.13, aux_sample_size: \
         5.5); use an event that does not need it",
    )
}

/// Maps an errno from `operation` onto an [`Error`] with its kind and a hint.
///
/// The table follows the ERRORS section of `perf_event_open(2)`:
///
/// | errno | kind | why |
/// |---|---|---|
/// | EACCES, EPERM | PermissionDenied | paranoid level, capabilities, seccomp |
/// | ENOENT, EOPNOTSUPP, ENODEV | Unsupported | the PMU lacks the event or feature |
/// | ENOSYS | Unsupported | no perf events in this kernel (or seccomp returns ENOSYS) |
/// | ENOSPC | NoCounterAvailable | no free breakpoint slot / counter |
/// | EMFILE, ENFILE | LimitReached | out of file descriptors (one per event) |
/// | EINVAL | InvalidEvent (InvalidInput for an offline CPU) | an attr field the kernel refused |
/// | E2BIG | InvalidEvent | attr size unknown to this kernel |
/// | EBUSY | Busy | another user holds the PMU exclusively |
/// | ESRCH | NotFound | no such process |
/// | EBADF | InvalidInput | bad group fd |
/// | EOVERFLOW | InvalidInput | sample_max_stack too large |
/// | EFAULT, EINTR, other | Other | |
///
/// For an ioctl, EINVAL is InvalidInput with a hint on what that ioctl needs, ENOTTY/EBADF
/// InvalidInput (not a perf event descriptor) and ENOMEM Busy.
///
/// A zero-byte read is not an errno; [`crate::LinuxGroup`] reports it as
/// [`ErrorKind::NotCounted`].
pub fn map_errno(errno: i32, operation: Operation, facts: &SystemFacts) -> Error {
    let attempt = match &operation {
        Operation::Open(a) => Some(a),
        _ => None,
    };
    if let Operation::Ioctl(name) = operation
        && let Some((kind, message, hint)) = ioctl_error(errno, name)
    {
        return Error::new(kind, format!("{operation}: {message}"))
            .with_errno(errno)
            .with_hint(hint);
    }
    let (kind, message, hint): (ErrorKind, &str, String) = match errno {
        libc::EACCES | libc::EPERM => (
            ErrorKind::PermissionDenied,
            "permission denied",
            permission_hint(attempt, facts),
        ),
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => (
            ErrorKind::Unsupported,
            "event not supported by this PMU",
            no_event_hint(attempt, facts),
        ),
        libc::ENOSYS => (
            ErrorKind::Unsupported,
            "perf_event_open is not available",
            "the kernel lacks CONFIG_PERF_EVENTS, or a seccomp filter (container runtime) blocks \
             the system call"
                .to_string(),
        ),
        libc::ENOSPC => {
            let hint = match attempt.map(|a| a.class) {
                Some(EventClass::Breakpoint) => {
                    "all hardware breakpoint slots are in use (x86 has 4 debug registers on \
                     each CPU, Arm64 from 2 to 16, shared there by the breakpoints of the tasks, \
                     CPUs and cgroups counted on it)"
                        .to_string()
                }
                _ if attempt.is_none() => "the read buffer was too small for the group".to_string(),
                _ => "no free counter for this event; open fewer events or ungrouped".to_string(),
            };
            (ErrorKind::NoCounterAvailable, "no counter available", hint)
        }
        libc::EMFILE | libc::ENFILE => {
            let limit = match facts.fd_limit {
                Some(limit) => format!("the open-file limit (RLIMIT_NOFILE) is {limit}"),
                None => "the open-file limit (RLIMIT_NOFILE) is reached".to_string(),
            };
            (
                ErrorKind::LimitReached,
                "too many open files",
                format!("each event is one file descriptor; {limit}: raise it with `ulimit -n`"),
            )
        }
        libc::EINVAL => match attempt {
            Some(a) => {
                let kind = if blames_cpu(a) {
                    ErrorKind::InvalidInput
                } else {
                    ErrorKind::InvalidEvent
                };
                (kind, "invalid argument", invalid_field_hint(a))
            }
            None => (
                ErrorKind::InvalidInput,
                "invalid argument",
                format!("the kernel refused {operation}"),
            ),
        },
        libc::E2BIG => (
            ErrorKind::InvalidEvent,
            "attr size not supported",
            "this kernel is older than the attr fields the event needs (config3 needs Linux 6.3)"
                .to_string(),
        ),
        libc::EBUSY => (
            ErrorKind::Busy,
            "PMU busy",
            "another event holds the PMU exclusively (e.g. a pinned or exclusive group, or a \
             hypervisor using the counters)"
                .to_string(),
        ),
        libc::ESRCH => (
            ErrorKind::NotFound,
            "no such process",
            "the process exited or the pid is wrong".to_string(),
        ),
        libc::EBADF => (
            ErrorKind::InvalidInput,
            "bad file descriptor",
            "the group leader's descriptor is not a perf event".to_string(),
        ),
        libc::EOVERFLOW => (
            ErrorKind::InvalidInput,
            "value too large",
            "sample_max_stack exceeds kernel.perf_event_max_stack".to_string(),
        ),
        libc::EFAULT => (
            ErrorKind::Other,
            "bad address",
            "the attr structure was not readable (a bug in counterhal-linux)".to_string(),
        ),
        libc::EINTR => (
            ErrorKind::Other,
            "interrupted",
            "retry the operation".to_string(),
        ),
        _ => (
            ErrorKind::Other,
            "failed",
            format!("unexpected error from {operation}"),
        ),
    };
    Error::new(kind, format!("{operation}: {message}"))
        .with_errno(errno)
        .with_hint(hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(paranoid: i32, hardware_pmu: bool, root: bool) -> SystemFacts {
        SystemFacts {
            paranoid: Some(paranoid),
            hardware_pmu,
            root,
            capabilities: 0,
            fd_limit: Some(1024),
        }
    }

    fn open(class: EventClass) -> OpenAttempt {
        OpenAttempt {
            class,
            counts_kernel: true,
            exclude: ExcludeBits::default(),
            inherit: false,
            group_read: true,
            pid: 0,
            another_user: false,
            cpu: -1,
            cpu_online: None,
            member: false,
        }
    }

    /// What a failed open reads again is what its errno's hint names: the paranoid level and
    /// the capabilities for a refusal, nothing for an event the PMU lacks. A procfs whose
    /// level (3) and capabilities (CAP_PERFMON) differ from the probe's shows which were read.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_failure_reads_again_only_what_its_hint_names() {
        let procfs = std::env::temp_dir().join(format!("counterhal-errno-{}", std::process::id()));
        std::fs::create_dir_all(procfs.join("sys/kernel")).unwrap();
        std::fs::create_dir_all(procfs.join("self")).unwrap();
        std::fs::write(procfs.join("sys/kernel/perf_event_paranoid"), "3\n").unwrap();
        std::fs::write(
            procfs.join("self/status"),
            "Name:\tcounterhal\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t0000004000000000\n",
        )
        .unwrap();
        let system = System::host().with_procfs(&procfs);
        let probed = facts(2, false, false);
        let absent = probed.now(&system, libc::ENOENT);
        let refused = probed.now(&system, libc::EACCES);
        std::fs::remove_dir_all(&procfs).unwrap();
        assert_eq!(
            absent, probed,
            "ENOENT's hint names no limit: nothing is read again"
        );
        assert_eq!(refused.paranoid, Some(3));
        assert_eq!(refused.capabilities, 1 << 38);
        assert_eq!(refused.hardware_pmu, probed.hardware_pmu);
    }

    /// Oracle: Linux 7.2's `perf_event_open` (kernel/events/core.c), which asks
    /// `ptrace_may_access(task, PTRACE_MODE_READ_REALCREDS)` of a task to count and answers
    /// EACCES when another user's task is refused, whatever the paranoid level.
    #[test]
    fn another_users_process_is_named_as_the_cause() {
        let attempt = OpenAttempt {
            pid: 4242,
            another_user: true,
            counts_kernel: false,
            ..open(EventClass::Software)
        };
        let e = map_errno(
            libc::EACCES,
            Operation::Open(attempt),
            &facts(-1, true, false),
        );
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        let hint = e.hint().unwrap();
        assert!(
            hint.contains("process 4242 belongs to another user"),
            "{hint}"
        );
        let own = OpenAttempt {
            another_user: false,
            ..attempt
        };
        let e = map_errno(libc::EACCES, Operation::Open(own), &facts(-1, true, false));
        assert!(!e.hint().unwrap().contains("another user"), "{e}");
    }

    /// The body of the C function whose definition starts with `signature` in `source`:
    /// from its opening brace to the first closing brace at the start of a line.
    fn c_body<'s>(source: &'s str, signature: &str) -> &'s str {
        let start = source
            .find(signature)
            .unwrap_or_else(|| panic!("no `{signature}` in the kernel's source"));
        let body = &source[start..];
        &body[..body.find("\n}").expect("the function's end")]
    }

    /// The level a permission check of the kernel refuses above: the number after
    /// `sysctl_perf_event_paranoid > ` in its body.
    fn refused_above(body: &str) -> i32 {
        let at = body
            .find("sysctl_perf_event_paranoid > ")
            .expect("a check of perf_event_paranoid")
            + "sysctl_perf_event_paranoid > ".len();
        let number: String = body[at..]
            .chars()
            .take_while(|c| *c == '-' || c.is_ascii_digit())
            .collect();
        number.parse().expect("a level")
    }

    /// What counting a tracepoint needs, as the hints say it, is what the kernel checks.
    /// Oracle: Debian's linux-source-6.12. `perf_event_open` (kernel/events/core.c) calls
    /// `perf_allow_kernel`, refusing above 1, for any event that counts the kernel; a
    /// tracepoint's own check, `perf_trace_event_perm` (kernel/trace/trace_event_perf.c),
    /// calls `perf_allow_tracepoint` (include/linux/perf_event.h), refusing above -1, only for
    /// ftrace's function tracepoint and for `PERF_SAMPLE_RAW`: a counted tracepoint needs 1.
    #[test]
    fn the_tracepoint_hints_ask_for_what_the_kernel_checks() {
        use counterhal_conformance::skip;
        use counterhal_conformance::skip::Need;
        let tree = match counterhal_conformance::fixtures::kernel_source() {
            Ok(tree) => tree,
            Err(why) => skip!(Need::Tools, "{why}"),
        };
        let read = |path: &str| std::fs::read_to_string(tree.join(path)).unwrap();
        let (core, header) = (
            read("kernel/events/core.c"),
            read("include/linux/perf_event.h"),
        );
        let trace = read("kernel/trace/trace_event_perf.c");
        let kernel = refused_above(c_body(&core, "int perf_allow_kernel(void)\n{"));
        let tracepoint = refused_above(c_body(
            &header,
            "static inline int perf_allow_tracepoint(void)",
        ));
        assert_eq!((kernel, tracepoint), (1, -1));
        let syscall = c_body(&core, "SYSCALL_DEFINE5(perf_event_open,");
        let kernel_check = syscall
            .find("if (!attr.exclude_kernel")
            .expect("perf_event_open checks an event counting the kernel");
        let checked = &syscall[kernel_check..];
        assert!(
            checked[..checked.find("\n\t}").unwrap()].contains("perf_allow_kernel()"),
            "{checked}"
        );
        let perm = c_body(&trace, "static int perf_trace_event_perm(");
        let function = perm
            .find("if (ftrace_event_is_function(tp_event))")
            .unwrap();
        let function_end = function + perm[function..].find("\n\t}").unwrap();
        let raw = perm
            .find("if (!(p_event->attr.sample_type & PERF_SAMPLE_RAW))\n\t\treturn 0;")
            .expect("a counted tracepoint passes before the tracepoint check");
        for (at, _) in perm.match_indices("perf_allow_tracepoint()") {
            assert!(
                (function..function_end).contains(&at) || at > raw,
                "a tracepoint check outside the function tracepoint and raw samples: {perm}"
            );
        }
        // The hints: the open refused for a tracepoint counting the kernel, and tracefs
        // withheld.
        let refused = map_errno(
            libc::EACCES,
            Operation::Open(open(EventClass::Tracepoint)),
            &facts(2, false, false),
        );
        let withheld = crate::tracepoints::denied("sched:sched_switch", std::path::Path::new("/t"));
        for error in [refused, withheld] {
            let hint = error.hint().unwrap();
            assert!(hint.contains(&format!("needs {kernel} or lower")), "{hint}");
            let raw_only = format!("{tracepoint} is needed only for raw samples (PERF_SAMPLE_RAW)");
            assert!(hint.contains(&raw_only), "{hint}");
            assert_eq!(hint.matches(&format!(" {tracepoint}")).count(), 1, "{hint}");
        }
    }

    #[test]
    fn every_listed_errno_has_a_kind_and_hint() {
        let table = [
            (libc::E2BIG, ErrorKind::InvalidEvent),
            (libc::EACCES, ErrorKind::PermissionDenied),
            (libc::EPERM, ErrorKind::PermissionDenied),
            (libc::EBADF, ErrorKind::InvalidInput),
            (libc::EBUSY, ErrorKind::Busy),
            (libc::EFAULT, ErrorKind::Other),
            (libc::EINTR, ErrorKind::Other),
            (libc::EINVAL, ErrorKind::InvalidEvent),
            (libc::EMFILE, ErrorKind::LimitReached),
            (libc::ENODEV, ErrorKind::Unsupported),
            (libc::ENOENT, ErrorKind::Unsupported),
            (libc::ENOSPC, ErrorKind::NoCounterAvailable),
            (libc::ENOSYS, ErrorKind::Unsupported),
            (libc::EOPNOTSUPP, ErrorKind::Unsupported),
            (libc::EOVERFLOW, ErrorKind::InvalidInput),
            (libc::ESRCH, ErrorKind::NotFound),
            (libc::EXDEV, ErrorKind::Other),
        ];
        for (errno, kind) in table {
            let error = map_errno(
                errno,
                Operation::Open(open(EventClass::Software)),
                &facts(2, true, false),
            );
            assert_eq!(error.kind(), kind, "errno {errno}");
            assert_eq!(error.errno(), Some(errno));
            assert!(
                !error.hint().unwrap_or("").is_empty(),
                "errno {errno} has no hint"
            );
            assert!(error.message().starts_with("perf_event_open"));
        }
    }

    #[test]
    fn permission_names_paranoid_and_what_to_change() {
        let e = map_errno(
            libc::EACCES,
            Operation::Open(open(EventClass::Software)),
            &facts(2, true, false),
        );
        let hint = e.hint().unwrap();
        assert!(hint.contains("perf_event_paranoid is 2"), "{hint}");
        assert!(hint.contains(":u"), "{hint}");
        assert!(hint.contains("CAP_PERFMON"), "{hint}");
        assert!(!hint.contains("seccomp"), "{hint}");

        let mut cpu = open(EventClass::Software);
        cpu.pid = -1;
        cpu.cpu = 1;
        let hint = map_errno(libc::EACCES, Operation::Open(cpu), &facts(1, true, false))
            .hint()
            .unwrap()
            .to_string();
        assert!(
            hint.contains("is 1") && hint.contains("0 or lower"),
            "{hint}"
        );

        let hint = map_errno(
            libc::EPERM,
            Operation::Open(open(EventClass::Software)),
            &facts(3, true, true),
        )
        .hint()
        .unwrap()
        .to_string();
        assert!(hint.contains("is 3") && hint.contains("seccomp"), "{hint}");

        // Level 3 (oracle: the kernel's perf_event_open checks, kernel/events/core.c, where
        // upstream treats any level above 1 as 2, and the level-3 patch of Debian's kernel,
        // debian/patches/features/all/security-perf-allow-further-restriction-of-perf_event_open.patch):
        // a refused user-space open of a task shows the patch; an open counting the kernel is
        // refused at 2 already, and the hint says both.
        let mut user = open(EventClass::Software);
        user.counts_kernel = false;
        let hint = map_errno(libc::EACCES, Operation::Open(user), &facts(3, true, false))
            .hint()
            .unwrap()
            .to_string();
        assert!(
            hint.contains("forbids every unprivileged use at 3"),
            "{hint}"
        );
        let hint = map_errno(
            libc::EACCES,
            Operation::Open(open(EventClass::Software)),
            &facts(3, true, false),
        )
        .hint()
        .unwrap()
        .to_string();
        assert!(
            hint.contains(":u modifier") && hint.contains("level-3 patch"),
            "{hint}"
        );
        let hint = map_errno(
            libc::EACCES,
            Operation::Open(open(EventClass::Software)),
            &facts(2, true, false),
        )
        .hint()
        .unwrap()
        .to_string();
        assert!(!hint.contains("level-3"), "{hint}");

        let unknown = SystemFacts {
            paranoid: None,
            ..facts(0, true, false)
        };
        let hint = map_errno(libc::EACCES, Operation::Read, &unknown)
            .hint()
            .unwrap()
            .to_string();
        assert!(hint.contains("could not be read"), "{hint}");
    }

    /// A process holding CAP_PERFMON and refused is told of seccomp first, not of the level
    /// it is past; one without it of the level first, and root without it of seccomp last;
    /// and CAP_PERFMON at level 3, which the patch of Debian's kernel lets CAP_SYS_ADMIN alone
    /// past for any open, of the level.
    ///
    /// Oracle: the kernel's checks (kernel/events/core.c's `perfmon_capable`, as
    /// `PerfPermissions` judges them) and Debian's level-3 patch.
    #[test]
    fn a_capable_process_refused_is_told_of_seccomp_first() {
        const CAP_PERFMON: u64 = 1 << 38;
        let mut cpu = open(EventClass::Software);
        cpu.pid = -1;
        cpu.cpu = 0;
        let capable = SystemFacts {
            capabilities: CAP_PERFMON,
            ..facts(2, true, false)
        };
        for errno in [libc::EPERM, libc::EACCES] {
            let hint = map_errno(errno, Operation::Open(cpu), &capable)
                .hint()
                .unwrap()
                .to_string();
            assert!(
                hint.starts_with(
                    "a seccomp filter (containers) or an LSM may block perf_event_open: \
                     this process holds CAP_PERFMON"
                ),
                "{hint}"
            );
            assert!(hint.contains("is 2"), "{hint}");
            assert!(!hint.contains("echo 0"), "{hint}");
        }
        let hint = map_errno(libc::EACCES, Operation::Open(cpu), &facts(2, true, false))
            .hint()
            .unwrap()
            .to_string();
        assert!(
            hint.starts_with("kernel.perf_event_paranoid is 2"),
            "{hint}"
        );
        assert!(!hint.contains("seccomp"), "{hint}");
        let hint = map_errno(libc::EACCES, Operation::Open(cpu), &facts(2, true, true))
            .hint()
            .unwrap()
            .to_string();
        assert!(
            hint.starts_with("kernel.perf_event_paranoid is 2"),
            "{hint}"
        );
        assert!(hint.ends_with("may block perf_event_open"), "{hint}");

        let mut user = open(EventClass::Software);
        user.counts_kernel = false;
        let level_3 = SystemFacts {
            capabilities: CAP_PERFMON,
            ..facts(3, true, false)
        };
        let hint = map_errno(libc::EACCES, Operation::Open(user), &level_3)
            .hint()
            .unwrap()
            .to_string();
        assert!(
            hint.contains("forbids every unprivileged use at 3"),
            "{hint}"
        );
        assert!(!hint.starts_with("a seccomp filter"), "{hint}");
    }
    #[test]
    fn missing_event_says_vm_when_no_cpu_pmu() {
        for class in [EventClass::Hardware, EventClass::Cache, EventClass::Raw] {
            let e = map_errno(
                libc::ENOENT,
                Operation::Open(open(class)),
                &facts(2, false, true),
            );
            assert_eq!(e.kind(), ErrorKind::Unsupported);
            assert!(e.hint().unwrap().contains("no hardware counters"), "{e}");
        }
        let e = map_errno(
            libc::EOPNOTSUPP,
            Operation::Open(open(EventClass::Hardware)),
            &facts(2, true, true),
        );
        assert!(e.hint().unwrap().contains("does not implement"), "{e}");
        let e = map_errno(
            libc::ENOENT,
            Operation::Open(open(EventClass::Tracepoint)),
            &facts(2, false, true),
        );
        assert!(e.hint().unwrap().contains("tracepoint"), "{e}");
    }

    #[test]
    fn enospc_for_breakpoints_and_emfile_names_the_limit() {
        let e = map_errno(
            libc::ENOSPC,
            Operation::Open(open(EventClass::Breakpoint)),
            &facts(2, false, true),
        );
        assert!(e.hint().unwrap().contains("4 debug registers"), "{e}");
        let e = map_errno(
            libc::EMFILE,
            Operation::Open(open(EventClass::Software)),
            &facts(2, false, true),
        );
        assert!(
            e.hint().unwrap().contains("1024") && e.hint().unwrap().contains("ulimit"),
            "{e}"
        );
    }

    #[test]
    fn einval_names_the_field() {
        let cases: [(OpenAttempt, &str, ErrorKind); 5] = [
            (
                OpenAttempt {
                    cpu: 7,
                    pid: -1,
                    cpu_online: Some(false),
                    ..open(EventClass::Software)
                },
                "cpu",
                ErrorKind::InvalidInput,
            ),
            (
                OpenAttempt {
                    inherit: true,
                    ..open(EventClass::Software)
                },
                "read_format",
                ErrorKind::InvalidEvent,
            ),
            (
                open(EventClass::Breakpoint),
                "bp_len",
                ErrorKind::InvalidEvent,
            ),
            (
                OpenAttempt {
                    exclude: ExcludeBits {
                        kernel: true,
                        ..ExcludeBits::default()
                    },
                    ..open(EventClass::Dynamic)
                },
                "exclude_kernel",
                ErrorKind::InvalidEvent,
            ),
            (open(EventClass::Raw), "config", ErrorKind::InvalidEvent),
        ];
        for (attempt, field, kind) in cases {
            let e = map_errno(
                libc::EINVAL,
                Operation::Open(attempt),
                &facts(2, true, true),
            );
            assert_eq!(e.kind(), kind);
            assert!(e.hint().unwrap().contains(field), "{field}: {e}");
        }
        let e = map_errno(
            libc::EINVAL,
            Operation::Ioctl("ENABLE"),
            &facts(2, true, true),
        );
        assert!(e.message().contains("PERF_EVENT_IOC_ENABLE"), "{e}");
    }

    /// `msr/tsc/u` on an online CPU 0: the exclude bits are at fault, not the CPU.
    #[test]
    fn einval_on_an_online_cpu_blames_the_exclude_bits() {
        let attempt = OpenAttempt {
            cpu: 0,
            pid: -1,
            cpu_online: Some(true),
            exclude: ExcludeBits {
                kernel: true,
                hv: true,
                ..ExcludeBits::default()
            },
            ..open(EventClass::Dynamic)
        };
        let e = map_errno(
            libc::EINVAL,
            Operation::Open(attempt),
            &facts(2, true, true),
        );
        assert_eq!(e.kind(), ErrorKind::InvalidEvent, "{e}");
        let hint = e.hint().unwrap();
        assert!(
            hint.contains("exclude_kernel, exclude_hv") && !hint.contains("offline"),
            "{hint}"
        );
        // The same attempt on an offline CPU blames the CPU.
        let offline = OpenAttempt {
            cpu_online: Some(false),
            ..attempt
        };
        let e = map_errno(
            libc::EINVAL,
            Operation::Open(offline),
            &facts(2, true, true),
        );
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.hint().unwrap().contains("CPU 0 is out of range"), "{e}");
    }

    #[test]
    fn ioctl_errors_have_ioctl_kinds_and_hints() {
        let cases = [
            (
                libc::EINVAL,
                "PERIOD",
                ErrorKind::InvalidInput,
                "sampling event",
            ),
            (
                libc::EINVAL,
                "REFRESH",
                ErrorKind::InvalidInput,
                "not inherited",
            ),
            (
                libc::EINVAL,
                "SET_OUTPUT",
                ErrorKind::InvalidInput,
                "ring buffer",
            ),
            (
                libc::EINVAL,
                "SET_FILTER",
                ErrorKind::InvalidInput,
                "common_pid",
            ),
            (
                libc::ENOTTY,
                "PERIOD",
                ErrorKind::InvalidInput,
                "perf_event_open",
            ),
            (
                libc::EBADF,
                "ID",
                ErrorKind::InvalidInput,
                "PERF_EVENT_IOC_ID",
            ),
            (libc::ENOMEM, "SET_FILTER", ErrorKind::Busy, "allocate"),
        ];
        for (errno, name, kind, needle) in cases {
            let e = map_errno(errno, Operation::Ioctl(name), &facts(2, true, true));
            assert_eq!(e.kind(), kind, "{name} {errno}: {e}");
            assert_eq!(e.errno(), Some(errno));
            let hint = e.hint().unwrap();
            assert!(hint.contains(needle), "{name}: {hint}");
            assert!(!hint.contains("attr field"), "{name}: {hint}");
        }
    }

    #[test]
    fn e2big_names_the_field_and_the_kernel_size() {
        let e = attr_size_error(Some(128), Some("config3"));
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert_eq!(e.errno(), Some(libc::E2BIG));
        assert!(
            e.message().contains("`config3`") && e.message().contains("128 bytes"),
            "{e}"
        );
        let e = attr_size_error(None, None);
        assert_eq!(e.kind(), ErrorKind::InvalidEvent);
        assert!(e.message().contains("wrote back no size"), "{e}");
    }
}
