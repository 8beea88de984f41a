//! Tests against the real kernel of this machine: exact counts from breakpoints and
//! tracepoints, software events, targets, and the errors the kernel really returns.

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use counterhal_hal::BackendExt;
use std::hint::black_box;
use std::os::unix::process::CommandExt;
use std::sync::Arc;
use std::time::Duration;

use counterhal_hal::{
    Backend, BackendTarget, ErrorKind, EventRequest, Group, OpenOptions, Reading,
};
use counterhal_linux::{LinuxBackend, LinuxGroup, WaitingChild, probe};

fn backend() -> LinuxBackend {
    let db = Arc::new(counterhal_events::Database::shipped().expect("shipped database"));
    probe(db, None, counterhal_system::System::host())
        .expect("perf_event_open usable on this machine")
}

fn requests(linux: &LinuxBackend, names: &[&str]) -> Vec<EventRequest> {
    names
        .iter()
        .flat_map(|name| {
            linux
                .resolve(name)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .terms
        })
        .map(|term| term.request)
        .collect()
}

fn open(linux: &LinuxBackend, names: &[&str], target: BackendTarget, grouped: bool) -> LinuxGroup {
    let options = if grouped {
        OpenOptions::grouped()
    } else {
        OpenOptions::ungrouped()
    };
    linux
        .open(&requests(linux, names), &target, &options)
        .unwrap()
}

#[inline(never)]
fn counted_function(x: u64) -> u64 {
    black_box(x).wrapping_mul(3).wrapping_add(1)
}

#[inline(never)]
fn other_function(x: u64) -> u64 {
    black_box(x) ^ 0x55
}

fn call(f: fn(u64) -> u64, times: u64) {
    let f = black_box(f);
    for i in 0..times {
        black_box(f(i));
    }
}

fn exec_breakpoint(f: fn(u64) -> u64) -> String {
    format!("mem:{:#x}:x", f as *const () as usize)
}

#[test]
fn execute_breakpoint_counts_exactly() {
    let linux = backend();
    let name = exec_breakpoint(counted_function);
    for n in [1u64, 10, 1_000, 12_345] {
        let mut group = open(&linux, &[&name], BackendTarget::ThisThread, true);
        group.enable().unwrap();
        call(counted_function, n);
        group.disable().unwrap();
        let readings = group.read_to_vec().unwrap();
        assert_eq!(readings[0].value, n, "{n} calls");
        assert!(readings[0].time_running > 0);
    }
}

#[test]
fn breakpoints_in_a_group_across_enable_disable_reset() {
    let linux = backend();
    let a = exec_breakpoint(counted_function);
    let b = exec_breakpoint(other_function);
    let mut group = open(
        &linux,
        &[&a, "task-clock", &b],
        BackendTarget::ThisThread,
        true,
    );
    assert_eq!(group.kernel_groups(), 1);
    let mut readings = [Reading::default(); 3];

    group.enable().unwrap();
    call(counted_function, 100);
    call(other_function, 40);
    group.disable().unwrap();
    call(counted_function, 50); // not counted
    group.read(&mut readings).unwrap();
    assert_eq!((readings[0].value, readings[2].value), (100, 40));
    assert!(readings[1].value > 0, "task-clock counted");
    // One group: one set of times.
    assert_eq!(readings[0].time_enabled, readings[2].time_enabled);

    // Reads after disable are stable.
    let mut again = [Reading::default(); 3];
    group.read(&mut again).unwrap();
    assert_eq!(readings, again);

    group.reset().unwrap();
    group.read(&mut readings).unwrap();
    assert_eq!(
        [readings[0].value, readings[1].value, readings[2].value],
        [0, 0, 0]
    );

    group.enable().unwrap();
    call(counted_function, 7);
    group.disable().unwrap();
    group.read(&mut readings).unwrap();
    assert_eq!((readings[0].value, readings[2].value), (7, 0));

    // restart = disable, reset, enable.
    group.restart().unwrap();
    call(other_function, 3);
    group.stop(&mut readings).unwrap();
    assert_eq!((readings[0].value, readings[2].value), (0, 3));
}

#[test]
fn ungrouped_events_have_their_own_times() {
    let linux = backend();
    let a = exec_breakpoint(counted_function);
    let mut group = open(
        &linux,
        &[&a, "page-faults"],
        BackendTarget::ThisThread,
        false,
    );
    assert_eq!(group.kernel_groups(), 2);
    group.enable().unwrap();
    call(counted_function, 33);
    group.disable().unwrap();
    let readings = group.read_to_vec().unwrap();
    assert_eq!(readings[0].value, 33);
    assert!(readings[1].time_enabled > 0);
}

/// One breakpoint more than the debug registers is ENOSPC. Oracle: x86 has four (DR0 to DR3,
/// Intel SDM vol. 3 ch. 18); Arm64 has 2 to 16 (ID_AA64DFR0_EL1.BRPs), so there the count
/// is what the machine gives, found by opening until it refuses.
#[test]
fn breakpoint_past_the_debug_registers_is_enospc() {
    let linux = backend();
    let slots = counterhal_linux::conformance::LinuxSubject::new(backend())
        .breakpoint_slots()
        .expect("breakpoints run out before 64");
    if cfg!(any(target_arch = "x86", target_arch = "x86_64")) {
        assert_eq!(slots, 4, "x86's DR0 to DR3");
    }
    let names: Vec<String> = (0..=slots as usize)
        .map(|i| {
            format!(
                "mem:{:#x}:x",
                counted_function as *const () as usize + i * 16
            )
        })
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let all = open(
        &linux,
        &refs[..slots as usize],
        BackendTarget::ThisThread,
        false,
    );
    assert_eq!(all.len(), slots as usize);
    drop(all);
    let options = OpenOptions::ungrouped();
    let error = linux
        .open(
            &requests(&linux, &refs),
            &BackendTarget::ThisThread,
            &options,
        )
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable, "{error}");
    assert_eq!(error.errno(), Some(libc_enospc()));
    assert!(error.hint().unwrap().contains("debug registers"), "{error}");
    assert!(
        error.message().starts_with(refs[slots as usize]),
        "names the event: {error}"
    );
}

fn libc_enospc() -> i32 {
    28
}

fn tracefs_ready() -> bool {
    counterhal_conformance::fixtures::tracefs_mounted().is_ok()
}

#[test]
fn getpid_tracepoint_counts_exactly() {
    if !tracefs_ready() {
        skip!(
            Need::System,
            "tracefs is not mounted and could not be mounted"
        );
    }
    let linux = backend();
    for n in [1u32, 100, 5_000] {
        let mut group = open(
            &linux,
            &["syscalls:sys_enter_getpid"],
            BackendTarget::ThisThread,
            true,
        );
        group.enable().unwrap();
        for _ in 0..n {
            black_box(std::process::id());
        }
        group.disable().unwrap();
        assert_eq!(group.read_to_vec().unwrap()[0].value, u64::from(n));
    }
}

/// The tracepoints a listing names are the kernel's, each found with its `id` resolving as
/// its name does. Oracle: Linux 6.18's tracefs, walked here with `std::fs` alone (every
/// `events/SUBSYSTEM/EVENT/` holding an `id`: ftrace's own events have none), and each `id`'s
/// number read from it.
#[test]
fn listed_tracepoints_are_the_kernels_and_resolve_as_named() {
    let root = match counterhal_conformance::fixtures::tracefs_mounted() {
        Ok(root) => root,
        Err((need, why)) => skip!(need, "{why}"),
    };
    let events = std::path::Path::new(root).join("events");
    let mut kernel = Vec::new();
    for subsystem in std::fs::read_dir(&events).unwrap().flatten() {
        let Ok(dirs) = std::fs::read_dir(subsystem.path()) else {
            continue;
        };
        for event in dirs.flatten() {
            if let Ok(id) = std::fs::read_to_string(event.path().join("id")) {
                let name = format!(
                    "{}:{}",
                    subsystem.file_name().to_string_lossy(),
                    event.file_name().to_string_lossy()
                );
                kernel.push((name, id.trim().parse::<u64>().unwrap()));
            }
        }
    }
    kernel.sort_unstable();
    assert!(kernel.len() > 100, "{} tracepoints", kernel.len());
    let linux = backend();
    let listed: Vec<_> = counterhal_hal::EventListing::own_events(&linux)
        .into_iter()
        .filter(|own| own.description == "tracepoint")
        .collect();
    let mut names: Vec<(String, u64)> = listed
        .iter()
        .map(|own| {
            let resolved = own
                .resolved
                .as_ref()
                .unwrap_or_else(|| panic!("{}", own.name));
            let counterhal_hal::Encoding::Perf(attr) = &resolved.terms[0].request.encoding else {
                panic!("{}: {resolved:?}", own.name);
            };
            assert_eq!(attr.type_, 2, "{}", own.name);
            (own.name.clone(), attr.config)
        })
        .collect();
    names.sort_unstable();
    assert_eq!(names, kernel);
    for own in &listed {
        let by_name = linux.resolve(&own.name).unwrap();
        assert_eq!(
            format!("{by_name:?}"),
            format!("{:?}", own.resolved.as_ref().unwrap()),
            "{}",
            own.name
        );
    }
}

/// SET_FILTER on the getpid tracepoint: `common_pid == 1` (init, not us) lets nothing through
/// while this thread calls getpid; a filter on this thread's id lets every call through.
#[test]
fn set_filter_on_the_getpid_tracepoint() {
    if !tracefs_ready() {
        skip!(
            Need::System,
            "tracefs is not mounted and could not be mounted"
        );
    }
    let linux = backend();
    let tid = thread_id();
    for (filter, expected) in [
        ("common_pid == 1", 0u64),
        (&*format!("common_pid == {tid}"), 500),
    ] {
        let mut group = open(
            &linux,
            &["syscalls:sys_enter_getpid"],
            BackendTarget::ThisThread,
            true,
        );
        group.set_filter(0, filter).unwrap();
        group.enable().unwrap();
        for _ in 0..500 {
            black_box(std::process::id());
        }
        group.disable().unwrap();
        assert_eq!(group.read_to_vec().unwrap()[0].value, expected, "{filter}");
    }
    // A filter the kernel cannot parse is the ioctl's InvalidInput, with a filter hint.
    let mut group = open(
        &linux,
        &["syscalls:sys_enter_getpid"],
        BackendTarget::ThisThread,
        true,
    );
    let error = group.set_filter(0, "no_such_field ==== 1").unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
    assert!(error.message().contains("SET_FILTER"), "{error}");
    assert!(error.hint().unwrap().contains("filter"), "{error}");
    // The filter may come with the event's attr (`PerfAttr::with_filter`), set as it opens.
    for (filter, expected) in [
        ("common_pid == 1".to_string(), 0u64),
        (format!("common_pid == {tid}"), 300),
    ] {
        let mut request = requests(&linux, &["syscalls:sys_enter_getpid"]).remove(0);
        if let counterhal_hal::Encoding::Perf(attr) = &mut request.encoding {
            attr.filter = Some(filter.clone());
        }
        let options = counterhal_hal::OpenOptions::default();
        let mut group = linux
            .open(&[request], &BackendTarget::ThisThread, &options)
            .unwrap();
        group.enable().unwrap();
        for _ in 0..300 {
            black_box(std::process::id());
        }
        group.disable().unwrap();
        assert_eq!(group.read_to_vec().unwrap()[0].value, expected, "{filter}");
    }
    // Only a tracepoint takes one, refused before anything opens.
    let mut clock = requests(&linux, &["task-clock"]).remove(0);
    if let counterhal_hal::Encoding::Perf(attr) = &mut clock.encoding {
        attr.filter = Some("fd == 1".to_string());
    }
    let error = linux
        .open(&[clock], &BackendTarget::ThisThread, &Default::default())
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
    assert!(error.message().contains("not a tracepoint"), "{error}");
    // A modifier after the tracepoint's name resolves as perf accepts it.
    let user = requests(&linux, &["syscalls:sys_enter_getpid:u"]);
    match &user[0].encoding {
        counterhal_hal::Encoding::Perf(e) => {
            assert!(e.exclude_bits().kernel && !e.exclude_bits().user)
        }
        other => panic!("{other:?}"),
    }
    // A misspelling lists the nearest tracepoints of the subsystem.
    let error = linux.resolve("syscalls:sys_enter_getpdi").unwrap_err();
    assert!(
        error.to_string().contains("syscalls:sys_enter_getpid"),
        "{error}"
    );
}

fn thread_id() -> i64 {
    let text = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

fn task_clock(linux: &LinuxBackend) -> Vec<EventRequest> {
    requests(linux, &["task-clock"])
}

/// Burns about `ms` milliseconds of this thread's CPU time.
fn busy_cpu_ms(ms: u64) {
    let start = thread_cpu_ns();
    while thread_cpu_ns() - start < ms * 1_000_000 {
        for i in 0..10_000u64 {
            black_box(counted_function(i));
        }
    }
}

/// PERIOD on a sampling software event succeeds; on a counting event, or with period 0, it is
/// the ioctl's InvalidInput with the PERIOD hint.
#[test]
fn period_ioctl() {
    let linux = backend();
    let options = OpenOptions::default();
    let mut sampling = linux
        .open_sampling(
            &task_clock(&linux),
            &BackendTarget::ThisThread,
            &options,
            1_000_000,
        )
        .unwrap();
    sampling.set_period(2_000_000).unwrap();
    let error = sampling.set_period(0).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
    assert!(error.message().contains("PERF_EVENT_IOC_PERIOD"), "{error}");
    assert!(error.hint().unwrap().contains("nonzero period"), "{error}");

    let mut counting = linux
        .open(&task_clock(&linux), &BackendTarget::ThisThread, &options)
        .unwrap();
    let error = counting.set_period(1_000).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
    assert!(error.hint().unwrap().contains("sampling event"), "{error}");
    let error = linux
        .open_sampling(&task_clock(&linux), &BackendTarget::ThisThread, &options, 0)
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
}

/// REFRESH(1) enables a sampling event for one overflow: it then stops counting, so its count
/// ends near one period however long the thread keeps running.
#[test]
fn refresh_ioctl_counts_until_the_overflow_limit() {
    let linux = backend();
    let options = OpenOptions::default();
    let period = 2_000_000; // 2 ms of task clock
    let mut group = linux
        .open_sampling(
            &task_clock(&linux),
            &BackendTarget::ThisThread,
            &options,
            period,
        )
        .unwrap();
    group.refresh(1).unwrap();
    busy_cpu_ms(60);
    let reading = group.read_to_vec().unwrap()[0];
    assert!(
        reading.value >= period && reading.value < 10 * period,
        "one overflow of {period} ns, then disabled: {reading:?}"
    );
    // A counting event has no overflows to limit.
    let mut counting = linux
        .open(&task_clock(&linux), &BackendTarget::ThisThread, &options)
        .unwrap();
    let error = counting.refresh(1).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
    assert!(
        error.message().contains("PERF_EVENT_IOC_REFRESH"),
        "{error}"
    );
}

#[test]
fn msr_with_modifiers_on_a_cpu_blames_the_exclude_bits() {
    let linux = backend();
    if !std::path::Path::new("/sys/bus/event_source/devices/msr/events/tsc").exists()
        || (!linux.facts().root && linux.facts().paranoid.unwrap_or(2) > 0)
    {
        skip!(
            Need::Privilege,
            "needs the msr PMU and per-CPU counting rights (root, CAP_PERFMON or paranoid <= 0)"
        );
    }
    let error = linux
        .open(
            &requests(&linux, &["msr/tsc/u"]),
            &BackendTarget::Cpu(0),
            &OpenOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidEvent, "{error}");
    let hint = error.hint().unwrap();
    assert!(
        hint.contains("exclude_kernel") && !hint.contains("offline"),
        "{hint}"
    );
}

#[test]
fn page_faults_at_least_pages_touched() {
    let linux = backend();
    let mut group = open(
        &linux,
        &["page-faults", "minor-faults"],
        BackendTarget::ThisThread,
        true,
    );
    // Pages of a mapping of our own, fresh and kept from huge pages: memory from the
    // allocator may come back already touched (glibc reuses freed heap for large requests once
    // its mmap threshold has risen), and each such page is one fault fewer.
    let pages = 2_048;
    let memory = counterhal_conformance::workload::FreshPages::map(pages);
    group.enable().unwrap();
    memory.touch_all();
    group.disable().unwrap();
    let readings = group.read_to_vec().unwrap();
    // Every page of fresh anonymous memory faults once when first written.
    let least = pages as u64;
    assert!(
        readings[0].value >= least,
        "{readings:?}, want {least} or more"
    );
    assert!(readings[1].value <= readings[0].value);
}

/// The calling thread's CPU time in nanoseconds, from the scheduler's own accounting.
fn thread_cpu_ns() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn task_clock_matches_thread_cpu_time() {
    let linux = backend();
    let mut group = open(&linux, &["task-clock"], BackendTarget::ThisThread, true);
    group.enable().unwrap();
    let before = thread_cpu_ns();
    let mut x = 0u64;
    for i in 0..30_000_000u64 {
        x = black_box(x.wrapping_add(i));
    }
    let after = thread_cpu_ns();
    group.disable().unwrap();
    let task_clock = group.read_to_vec().unwrap()[0].value as f64;
    let cpu = (after - before) as f64;
    let ratio = task_clock / cpu;
    eprintln!("task-clock {task_clock} ns, schedstat {cpu} ns, ratio {ratio:.4}");
    assert!((0.9..=1.1).contains(&ratio), "ratio {ratio}");
}

const THREE_EXECS: &str = "/bin/true; /bin/true; exit 0";

fn execve_count(linux: &LinuxBackend, target_of: impl Fn(&WaitingChild) -> BackendTarget) -> u64 {
    let mut child = WaitingChild::spawn(&["sh".into(), "-c".into(), THREE_EXECS.into()]).unwrap();
    let target = target_of(&child);
    let mut group = open(linux, &["syscalls:sys_enter_execve"], target.clone(), true);
    if !matches!(target, BackendTarget::Exec { .. }) {
        group.enable().unwrap();
    }
    child.release().unwrap();
    let exit = child.wait().unwrap();
    assert!(exit.status.success());
    group.read_to_vec().unwrap()[0].value
}

#[test]
fn inherit_counts_children_and_attach_without_inherit_does_not() {
    if !tracefs_ready() {
        skip!(
            Need::System,
            "tracefs is not mounted and could not be mounted"
        );
    }
    let linux = backend();
    eprintln!(
        "inherit with PERF_FORMAT_GROUP accepted: {}",
        linux.inherit_group_read()
    );
    // The shell's own exec (counted from before it) plus its two children's.
    let inherited = execve_count(&linux, |c| BackendTarget::Process {
        pid: c.pid(),
        inherit: true,
    });
    assert_eq!(inherited, 3);
    let alone = execve_count(&linux, |c| BackendTarget::Process {
        pid: c.pid(),
        inherit: false,
    });
    assert_eq!(alone, 1);
    // enable_on_exec: counting starts after the shell's exec.
    let from_exec = execve_count(&linux, WaitingChild::target);
    assert_eq!(from_exec, 2);
}

#[test]
fn attach_counts_another_process() {
    let linux = backend();
    let mut busy = std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let target = BackendTarget::Process {
        pid: busy.id(),
        inherit: false,
    };
    let mut group = open(&linux, &["task-clock", "context-switches"], target, true);
    group.enable().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    group.disable().unwrap();
    let readings = group.read_to_vec().unwrap();
    busy.kill().unwrap();
    busy.wait().unwrap();
    assert!(readings[0].value > 0, "{readings:?}");
    // A busy process runs for a good part of the time it is enabled.
    assert!(
        readings[0].value * 5 > readings[0].time_enabled,
        "{readings:?}"
    );

    let error = linux
        .open(
            &requests(&linux, &["task-clock"]),
            &BackendTarget::Process {
                pid: 0x3fff_fff0,
                inherit: false,
            },
            &OpenOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotFound, "{error}");
}

#[test]
fn per_cpu_counting_as_root() {
    let linux = backend();
    if !linux.facts().root && linux.facts().paranoid.unwrap_or(2) > 0 {
        skip!(
            Need::Privilege,
            "per-CPU counting needs root, CAP_PERFMON or paranoid <= 0"
        );
    }
    let mut group = open(
        &linux,
        &["cpu-clock", "context-switches"],
        BackendTarget::Cpu(0),
        true,
    );
    group.enable().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    group.disable().unwrap();
    let readings = group.read_to_vec().unwrap();
    assert!(
        readings[0].value > 0 && readings[0].time_enabled > 0,
        "{readings:?}"
    );
    let error = linux
        .open(
            &requests(&linux, &["cpu-clock"]),
            &BackendTarget::Cpu(100_000),
            &OpenOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
}

#[test]
fn hardware_events_are_enoent_without_a_cpu_pmu() {
    let linux = backend();
    if linux.facts().hardware_pmu {
        skip!(
            Need::System,
            "this machine has a core PMU, so hardware events exist and cannot fail with ENOENT"
        );
    }
    for name in ["cycles", "instructions", "L1-dcache-load-misses"] {
        let error = linux
            .open(
                &requests(&linux, &[name]),
                &BackendTarget::ThisThread,
                &OpenOptions::default(),
            )
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported, "{name}: {error}");
        assert_eq!(error.errno(), Some(2), "{name}: ENOENT");
        assert!(
            error.hint().unwrap().contains("no hardware counters"),
            "{error}"
        );
    }
    let generalized = linux.generalized();
    assert!(generalized.iter().any(|g| g.name() == "task-clock"));
    assert!(!generalized.iter().any(|g| g.name() == "cycles"));
}

#[test]
fn msr_tsc_through_sysfs_alias() {
    let linux = backend();
    if !std::path::Path::new("/sys/bus/event_source/devices/msr/events/tsc").exists() {
        skip!(Need::System, "no msr PMU with a tsc alias");
    }
    let mut group = open(
        &linux,
        &["msr/tsc/", "task-clock"],
        BackendTarget::ThisThread,
        true,
    );
    group.enable().unwrap();
    call(counted_function, 100_000);
    group.disable().unwrap();
    let readings = group.read_to_vec().unwrap();
    assert!(readings[0].value > 0, "{readings:?}");
}

/// Oracle: the kernel's list of this process's descriptors (`/proc/self/fd`).
#[test]
fn no_fd_leak_over_10000_cycles() {
    let linux = backend();
    let reqs = requests(&linux, &["task-clock", "page-faults"]);
    // Failed opens must not leak either (where there are no hardware counters, `cycles` fails
    // after `task-clock` opened).
    let bad = requests(&linux, &["task-clock", "cycles"]);
    let count_fds = || std::fs::read_dir("/proc/self/fd").unwrap().count();
    // Four quarters of 2,500 cycles and 250 failed opens: a leak of one descriptor a cycle or
    // a failed open grows the count by 250 or more in every quarter. Other tests run on
    // parallel threads of this process and open and close descriptors of their own meanwhile,
    // a few at a time, so the difference between two counts is no leak; growth by 100 in
    // every quarter is.
    const LEAK: usize = 100;
    let mut counts = vec![count_fds()];
    for _ in 0..4 {
        for _ in 0..2_500 {
            let mut group = linux
                .open(&reqs, &BackendTarget::ThisThread, &OpenOptions::default())
                .unwrap();
            group.enable().unwrap();
            drop(group);
        }
        for _ in 0..250 {
            let _ = linux.open(&bad, &BackendTarget::ThisThread, &OpenOptions::default());
        }
        counts.push(count_fds());
    }
    assert!(
        !counts.windows(2).all(|pair| pair[1] >= pair[0] + LEAK),
        "open descriptors at the start and after each quarter: {counts:?}"
    );
}

/// The name the test harness knows this module's test `name` by (`kernel::name`), which a
/// test that runs one test of this binary again in a child passes with `--exact`.
fn test_path(name: &str) -> String {
    match module_path!().split_once("::") {
        Some((_binary, module)) => format!("{module}::{name}"),
        None => name.to_string(),
    }
}

const CHILD_ENV: &str = "COUNTERHAL_LINUX_UNPRIVILEGED_CHILD";

/// Runs as an unprivileged child of `kernel_counting_is_eacces_for_unprivileged_users`, which
/// runs it with `--ignored`.
#[test]
#[ignore = "runs only as the unprivileged child of kernel_counting_is_eacces_for_unprivileged_users"]
fn unprivileged_child_probe() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "run by kernel_counting_is_eacces_for_unprivileged_users, with {CHILD_ENV} set"
    );
    let linux = backend();
    let error = linux
        .open(
            &requests(&linux, &["task-clock"]),
            &BackendTarget::ThisThread,
            &OpenOptions::default(),
        )
        .unwrap_err();
    // Report what was found; the parent asserts on it.
    println!("KERNEL-KIND {:?}", error.kind());
    println!("KERNEL-ERRNO {:?}", error.errno());
    println!("KERNEL-HINT {}", error.hint().unwrap_or(""));
    // User space only is allowed at level 2.
    let mut user = requests(&linux, &["task-clock"]);
    if let counterhal_hal::Encoding::Perf(e) = &mut user[0].encoding {
        e.domain = counterhal_hal::Domain::USER;
    }
    let user_only = linux.open(&user, &BackendTarget::ThisThread, &OpenOptions::default());
    println!(
        "USER-ONLY {}",
        if user_only.is_ok() { "ok" } else { "refused" }
    );
    // tracefs is root's (mode 0700): a tracepoint is PermissionDenied, not "not mounted".
    let tracepoint = linux.resolve("syscalls:sys_enter_getpid").unwrap_err();
    println!("TRACEPOINT-KIND {:?}", tracepoint.kind());
    println!("TRACEPOINT-TEXT {tracepoint}");
    println!("UNPRIVILEGED-CHILD-OK");
}

/// The value after `key ` on the child's output line that starts with it.
fn child_field<'a>(stdout: &'a str, key: &str) -> &'a str {
    stdout
        .lines()
        // libtest may print `test name ... ` on the same line before the child's first line.
        .find_map(|line| line.split_once(&format!("{key} ")).map(|(_, value)| value))
        .unwrap_or_else(|| panic!("the child did not report {key}:\n{stdout}"))
}

#[test]
fn kernel_counting_is_eacces_for_unprivileged_users() {
    let linux = backend();
    if !linux.facts().root || linux.facts().paranoid != Some(2) {
        skip!(
            Need::Privilege,
            "needs root (to drop privileges) and perf_event_paranoid = 2"
        );
    }
    // This test binary where nobody can run it, whatever folder the workspace is in (a clone
    // in /root, which nobody cannot enter).
    let anyone = counterhal_conformance::fixtures::ForAnyone::new(
        "linux-kernel",
        &[(&std::env::current_exe().unwrap(), "tests")],
    )
    .expect("a folder nobody can read");
    let output = std::process::Command::new(anyone.path("tests"))
        .current_dir("/")
        .args([
            "--exact",
            &test_path("unprivileged_child_probe"),
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("UNPRIVILEGED-CHILD-OK"),
        "child did not run:\n{stdout}\n{stderr}"
    );
    assert_eq!(child_field(&stdout, "KERNEL-KIND"), "PermissionDenied");
    assert_eq!(child_field(&stdout, "KERNEL-ERRNO"), "Some(13)");
    let hint = child_field(&stdout, "KERNEL-HINT");
    assert!(
        hint.contains("perf_event_paranoid is 2") && hint.contains(":u"),
        "{hint}"
    );
    assert_eq!(child_field(&stdout, "USER-ONLY"), "ok");
    let tracefs_private = std::fs::metadata("/sys/kernel/tracing")
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o005 == 0)
        .unwrap_or(false);
    if tracefs_private {
        assert_eq!(child_field(&stdout, "TRACEPOINT-KIND"), "PermissionDenied");
        let text = child_field(&stdout, "TRACEPOINT-TEXT");
        assert!(
            text.contains("not readable") && !text.contains("not mounted"),
            "{text}"
        );
    } else {
        eprintln!("tracefs is readable by others here: the tracepoint check does not apply");
    }
}

/// `BackendTarget::Exec` is a command held before exec by this process: never this process, init,
/// or another process's child, whose counters would start at some later exec it does not
/// control.
#[test]
fn an_exec_target_must_be_a_held_child_of_this_process() {
    let linux = backend();
    let events = [linux.resolve("page-faults").unwrap().terms[0]
        .request
        .clone()];
    let options = OpenOptions::default();
    for pid in [1, std::process::id(), std::os::unix::process::parent_id()] {
        let error = linux
            .open(&events, &BackendTarget::Exec { pid }, &options)
            .err()
            .unwrap_or_else(|| panic!("BackendTarget::Exec {{ pid: {pid} }} was accepted"));
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
        assert!(
            error.hint().is_some_and(|h| h.contains("WaitingChild")),
            "{error}"
        );
    }
    let child = WaitingChild::spawn(&["true".into()]).unwrap();
    assert!(linux.open(&events, &child.target(), &options).is_ok());
}

/// An ungrouped set is one kernel group per event, each enabled by its own ioctl: their
/// enabled times differ by the time between the ioctls, well within the 1% the conformance
/// case `multiplexing_time_shares_events` allows (it runs only where hardware counters are).
#[test]
fn ungrouped_events_are_enabled_for_nearly_the_same_time() {
    let linux = backend();
    let mut set = open(
        &linux,
        &["task-clock", "page-faults", "context-switches", "cpu-clock"],
        BackendTarget::ThisThread,
        false,
    );
    set.enable().unwrap();
    call(counted_function, 5_000_000);
    set.disable().unwrap();
    let mut readings = [Reading::default(); 4];
    set.read(&mut readings).unwrap();
    let enabled: Vec<u64> = readings.iter().map(|r| r.time_enabled).collect();
    let spread = enabled.iter().max().unwrap() - enabled.iter().min().unwrap();
    eprintln!("enabled times {enabled:?}, spread {spread} ns");
    let longest = *enabled.iter().max().unwrap();
    assert!(longest > 0, "{readings:?}");
    assert!(spread * 100 <= longest, "enabled times {enabled:?}");
}

/// The open-file limit a failed open names is the limit when it failed, not at the probe: this
/// test runs itself again in a child, which probes, has its soft RLIMIT_NOFILE lowered to 40
/// by util-linux's prlimit (the oracle of the limit set), then opens until the kernel answers
/// EMFILE.
#[test]
fn the_open_file_hint_names_the_limit_of_the_failed_open() {
    const CHILD: &str = "COUNTERHAL_TEST_FD_LIMIT_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let linux = backend();
        let status = std::process::Command::new("prlimit")
            .arg(format!("--pid={}", std::process::id()))
            .arg("--nofile=40:")
            .status()
            .expect("prlimit runs");
        assert!(status.success());
        let requests = requests(&linux, &["page-faults"]);
        let mut held = Vec::new();
        let error = loop {
            match linux.open(
                &requests,
                &BackendTarget::this_thread(),
                &OpenOptions::grouped(),
            ) {
                Ok(group) => held.push(group),
                Err(e) => break e,
            }
            assert!(held.len() < 100, "the limit of 40 was not applied");
        };
        assert_eq!(error.kind(), ErrorKind::LimitReached, "{error}");
        let hint = error.hint().unwrap_or_default();
        assert!(hint.contains("is 40"), "{hint}");
        println!("child-ok");
        return;
    }
    if std::process::Command::new("prlimit")
        .arg("--version")
        .output()
        .is_err()
    {
        skip!(
            Need::Tools,
            "prlimit is not installed (apt-get install util-linux)"
        );
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &test_path("the_open_file_hint_names_the_limit_of_the_failed_open"),
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("child-ok"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
