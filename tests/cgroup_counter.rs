//! Counting per cgroup ([`Chosen::cgroup_counter`]): the BPF mode against the perf-event mode
//! and perf 6.1's `perf stat --for-each-cgroup` on the same workload, at every level of a
//! nested hierarchy, a cgroup made, run and removed between two reads, and the fallback
//! where BPF is not allowed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use counterhal::prelude::*;
use counterhal::{Error, ErrorKind, Result};
use counterhal_conformance::fixtures::TestCgroup;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use counterhal_hal::{BoxedCgroupCounter, CgroupCounterOptions, CgroupMode, CgroupModeChoice};

const EVENTS: [&str; 2] = ["page-faults", "task-clock"];

/// The workload: a shell held until it is in its cgroup, then `dd` touching a fresh 4 MiB
/// buffer (page faults) and copying 400 MiB through it (CPU time).
const WORK: &str = "read _; exec dd if=/dev/zero of=/dev/null bs=4M count=100 status=none";

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    })
}

/// `a/b/c` below a test cgroup, removed deepest first when dropped (before the test cgroup).
struct Nested {
    levels: Vec<PathBuf>,
}

impl Nested {
    fn new(top: &Path, below: &[&str]) -> Nested {
        let mut levels = Vec::new();
        let mut at = top.to_path_buf();
        for name in below {
            at = at.join(name);
            std::fs::create_dir(&at).expect("make a nested cgroup");
            levels.push(at.clone());
        }
        Nested { levels }
    }
}

impl Drop for Nested {
    fn drop(&mut self) {
        for dir in self.levels.iter().rev() {
            remove_cgroup(dir);
        }
    }
}

/// Removes an empty cgroup, waiting for the kernel to let its last task go.
fn remove_cgroup(dir: &Path) {
    for _ in 0..100 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The state letter of process `pid` (`/proc/PID/stat`'s third field) and its command name.
fn state_of(pid: u32) -> Option<(char, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    Some((rest.trim_start().chars().next()?, comm))
}

/// Runs [`WORK`] in `cgroup`: the shell is moved there while it sleeps in `read`, so that
/// all it does after is the cgroup's from its first run; returns when it has ended.
fn run_in(cgroup: &Path) {
    // On CPU 0 alone: on this project's VMs a switch away from a secondary CPU's idle task
    // reaches no perf event, and the BPF mode needs every context switch (cli/tests/common's
    // `ON_CPU_0` says more).
    let mut child: Child = Command::new("taskset")
        .args(["-c", "0", "sh", "-c", WORK])
        .stdin(Stdio::piped())
        .spawn()
        .expect("start the workload");
    let pid = child.id();
    for _ in 0..500 {
        if let Some(('S', comm)) = state_of(pid)
            && comm == "sh"
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    std::fs::write(cgroup.join("cgroup.procs"), pid.to_string()).expect("move the workload");
    let mut stdin = child.stdin.take().expect("the workload's input");
    stdin.write_all(b"go\n").expect("start the workload");
    drop(stdin);
    let status = child.wait().expect("the workload ends");
    assert!(status.success(), "the workload failed: {status}");
}

/// The counter in `mode`, or why the test cannot run (as a skip).
fn counter(chosen: &Chosen, mode: CgroupModeChoice) -> Result<BoxedCgroupCounter> {
    let cpus: Vec<u32> = counterhal::online_cpus(&counterhal::system::System::host())
        .iter()
        .collect();
    chosen.cgroup_counter(&EVENTS, &cpus, mode)
}

/// page-faults and task-clock of `cgroup` in `counter` (summed over the CPUs).
fn of(counter: &BoxedCgroupCounter, cgroup: &Path) -> (u64, u64) {
    let counts = counter.counts(cgroup).expect("a followed cgroup");
    (counts.total[0].value, counts.total[1].value)
}

/// perf 6.1 counting [`EVENTS`] system-wide in each of `cgroups` (names below the mount)
/// until it is interrupted (`perf stat -a` without a command).
struct PerfStat {
    child: Child,
    output: PathBuf,
}

impl PerfStat {
    fn start(cgroups: &[String], expected_fds: usize) -> Option<PerfStat> {
        let output = counterhal_conformance::fixtures::temp_dir()
            .join(format!("counterhal-bpf-perf-{}", std::process::id()));
        let child = Command::new("perf")
            .args(["stat", "-a", "-x,", "-o"])
            .arg(&output)
            .args([
                "-e",
                &EVENTS.join(","),
                "--for-each-cgroup",
                &cgroups.join(","),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let started = PerfStat { child, output };
        // Ready once its events are open: as many perf event descriptors as it counts.
        for _ in 0..1000 {
            let open = std::fs::read_dir(format!("/proc/{}/fd", started.child.id()))
                .into_iter()
                .flatten()
                .flatten()
                .filter(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|to| to.to_string_lossy().contains("perf_event"))
                })
                .count();
            if open >= expected_fds {
                return Some(started);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        None
    }

    /// Interrupts perf; each (event, cgroup) it printed, with its value.
    fn stop(mut self) -> Vec<(String, String, f64)> {
        counterhal_conformance::fixtures::send_signal(self.child.id() as i32, "-INT").ok();
        self.child.wait().ok();
        let text = std::fs::read_to_string(&self.output).unwrap_or_default();
        std::fs::remove_file(&self.output).ok();
        // perf's fields: value, unit, event, cgroup, ...
        text.lines()
            .filter(|l| !l.starts_with('#') && l.contains(','))
            .filter_map(|line| {
                let fields: Vec<&str> = line.split(',').collect();
                let value = fields.first()?.parse::<f64>().ok()?;
                Some((
                    fields.get(2)?.to_string(),
                    fields.get(3)?.to_string(),
                    value,
                ))
            })
            .collect()
    }
}

/// Whether `a` is within 2% of `b` (and a few microseconds, for nearly nothing).
fn within_2_percent(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.02 * b.max(a) + 20_000.0
}

/// Oracle: the kernel's per-cgroup perf events (`PERF_FLAG_PID_CGROUP`: the perf-event mode,
/// which the BPF mode must equal: page faults exactly, task-clock within 2%) and perf 6.1's
/// `perf stat -a --for-each-cgroup` counting the same workload at the same time.
#[test]
fn bpf_mode_counts_as_perf_events_and_perf_at_every_level() {
    let _alone = bpf_alone();
    let (chosen, unified, top) = match bpf_setting("bpf") {
        Ok(setting) => setting,
        Err((need, why)) => skip!(need, "{why}"),
    };
    let nested = Nested::new(&top.path, &["a", "b", "c"]);
    let mut bpf = match counter(&chosen, CgroupModeChoice::Bpf) {
        Ok(counter) => counter,
        Err(e) if e.kind() == ErrorKind::Unsupported => {
            skip!(Need::System, "this kernel has no BPF mode: {e}")
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(bpf.mode(), &CgroupMode::Bpf);
    let mut perf_events = counter(&chosen, CgroupModeChoice::PerfEvents).expect("perf events");
    let levels: Vec<&Path> = std::iter::once(top.path.as_path())
        .chain(nested.levels.iter().map(PathBuf::as_path))
        .collect();
    for level in &levels {
        bpf.follow(level).expect("follow in the BPF mode");
        perf_events.follow(level).expect("follow with perf events");
    }
    let names: Vec<String> = levels
        .iter()
        .map(|l| l.strip_prefix(&unified).unwrap().display().to_string())
        .collect();
    let cpus = counterhal::online_cpus(&counterhal::system::System::host())
        .iter()
        .count();
    let perf = PerfStat::start(&names, EVENTS.len() * names.len() * cpus);
    // Work at two levels: the leaf and its parent.
    run_in(&nested.levels[2]);
    run_in(&nested.levels[1]);
    bpf.read().expect("read the BPF mode");
    perf_events.read().expect("read the perf events");
    let perf_saw = perf.map(PerfStat::stop);
    for (level, name) in levels.iter().zip(&names) {
        let (faults, clock) = of(&bpf, level);
        let (faults_pe, clock_pe) = of(&perf_events, level);
        eprintln!(
            "{name}: bpf {faults} faults {clock} ns; perf events {faults_pe} faults {clock_pe} ns"
        );
        assert_eq!(
            faults, faults_pe,
            "page-faults of {name}: bpf against perf events"
        );
        assert!(
            within_2_percent(clock as f64, clock_pe as f64),
            "task-clock of {name}: bpf {clock} ns, perf events {clock_pe} ns"
        );
        if let Some(saw) = &perf_saw {
            let perf_of = |event: &str| {
                saw.iter()
                    .find(|(e, c, _)| e == event && c == name)
                    .map(|(_, _, v)| *v)
                    .unwrap_or_else(|| panic!("perf printed no {event} for {name}: {saw:?}"))
            };
            assert_eq!(
                faults as f64,
                perf_of("page-faults"),
                "page-faults of {name}: perf {saw:?}"
            );
            let perf_ms = perf_of("task-clock");
            eprintln!("{name}: perf {faults} faults {perf_ms} ms");
            assert!(
                within_2_percent(clock as f64, perf_ms * 1e6),
                "task-clock of {name}: bpf {clock} ns, perf {perf_ms} ms"
            );
        }
    }
    // The leaf's work shows at every level above it; the parent's not in the leaf.
    let leaf = of(&bpf, levels[3]).0;
    let parent = of(&bpf, levels[2]).0;
    assert!(
        leaf > 0 && parent > leaf,
        "page-faults leaf {leaf}, its parent {parent}"
    );
    assert_eq!(of(&bpf, levels[0]).0, of(&bpf, levels[1]).0);

    // A cgroup made, run and removed between two reads: in its parent's counts.
    let before = (of(&bpf, levels[2]), of(&perf_events, levels[2]));
    let brief = nested.levels[1].join("brief");
    std::fs::create_dir(&brief).expect("make a cgroup");
    run_in(&brief);
    remove_cgroup(&brief);
    bpf.read().expect("read the BPF mode");
    perf_events.read().expect("read the perf events");
    let grew = of(&bpf, levels[2]).0 - before.0.0;
    let grew_pe = of(&perf_events, levels[2]).0 - before.1.0;
    assert_eq!(
        grew, grew_pe,
        "the removed cgroup's page-faults in its parent"
    );
    assert!(
        grew * 2 > parent - leaf,
        "the brief cgroup's work: {grew} page faults"
    );
    if perf_saw.is_none() {
        skip!(
            Need::Tools,
            "perf is not installed (apt-get install linux-perf): compared with perf events only"
        );
    }
}

/// Oracle: the kernel's `bpf(2)`, which refuses loading without CAP_BPF (and CAP_PERFMON for
/// perf event programs) with EPERM; setpriv(1) drops them from the bounding set.
#[test]
fn without_cap_bpf_auto_counts_with_perf_events_and_says_why() {
    let _alone = bpf_alone();
    if std::env::var_os("COUNTERHAL_CGROUP_CHILD").is_some() {
        let chosen = open_default().expect("a backend");
        let counter = counter(&chosen, CgroupModeChoice::Auto).expect("Auto opens");
        println!("mode: {}", counter.mode());
        let refused = counter_error(&chosen);
        println!("bpf: {:?}: {refused}", refused.kind());
        return;
    }
    if !running_as_root() {
        skip!(Need::Privilege, "dropping capabilities is tried as root");
    }
    let Ok(exe) = std::env::current_exe() else {
        skip!(
            Need::System,
            "this test binary cannot be found to run again"
        );
    };
    let out = Command::new("setpriv")
        .args(["--bounding-set=-bpf,-perfmon,-sys_admin", "--"])
        .arg(exe)
        .args([
            "cgroup_counter::without_cap_bpf_auto_counts_with_perf_events_and_says_why",
            "--exact",
            "--nocapture",
        ])
        .env("COUNTERHAL_CGROUP_CHILD", "1")
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) => skip!(Need::Tools, "setpriv (util-linux) cannot run: {e}"),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mode = text
        .lines()
        .find(|l| l.starts_with("mode: "))
        .expect("the mode said");
    assert!(mode.starts_with("mode: perf-events"), "{mode}");
    assert!(
        mode.contains("CAP_BPF"),
        "the reason names the capability: {mode}"
    );
    let refused = text
        .lines()
        .find(|l| l.starts_with("bpf: "))
        .expect("the refusal said");
    assert!(refused.starts_with("bpf: PermissionDenied"), "{refused}");
}

/// Why the BPF mode, asked for, does not open.
fn counter_error(chosen: &Chosen) -> Error {
    match counter(chosen, CgroupModeChoice::Bpf) {
        Ok(_) => panic!("the BPF mode opened without CAP_BPF"),
        Err(e) => e,
    }
}

/// The BPF mode's map holds the followed cgroups alone: with room for one, the cgroup
/// followed is counted (the root and the test's own cgroups, which run all along, take no
/// room), a second is refused with the limit named, and once the first is let go the second
/// takes its place.
///
/// Oracle: the kernel's hash map, which refuses an element past `max_entries` (E2BIG,
/// kernel/bpf/hashtab.c), and the perf-event mode's count of the same work.
#[test]
fn the_map_holds_the_followed_cgroups_alone() {
    let _alone = bpf_alone();
    let (chosen, unified, top) = match bpf_setting("bpf-full") {
        Ok(setting) => setting,
        Err((need, why)) => skip!(need, "{why}"),
    };
    let second = Nested::new(&top.path, &["second"]);
    let mut options = CgroupCounterOptions::new(CgroupModeChoice::Bpf, Some(unified));
    options.capacity = 1;
    let cpus: Vec<u32> = counterhal::online_cpus(&counterhal::system::System::host())
        .iter()
        .collect();
    let mut bpf = match chosen.cgroup_counter_with(&EVENTS, &cpus, options) {
        Ok(counter) => counter,
        Err(e) if e.kind() == ErrorKind::Unsupported => {
            skip!(Need::System, "this kernel has no BPF mode: {e}")
        }
        Err(e) => panic!("{e}"),
    };
    let mut perf_events = counter(&chosen, CgroupModeChoice::PerfEvents).expect("perf events");
    bpf.follow(&top.path).expect("follow");
    perf_events
        .follow(&top.path)
        .expect("follow with perf events");
    let refused = bpf.follow(&second.levels[0]).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::LimitReached, "{refused}");
    assert!(refused.message().contains("1 cgroups"), "{refused}");
    run_in(&top.path);
    bpf.read().expect("read");
    perf_events.read().expect("read the perf events");
    let faults = of(&bpf, &top.path).0;
    assert!(faults > 0, "the followed cgroup's work");
    assert_eq!(faults, of(&perf_events, &top.path).0);
    bpf.unfollow(&top.path);
    bpf.follow(&second.levels[0]).expect("room again");
}

/// Events counted as one group (`CgroupCounterOptions::groups`) count what they count alone,
/// in both modes: the BPF mode's group members read by the program on each CPU, the
/// perf-event mode's group read in one `read(2)`, whose members share its times.
///
/// Oracle: the kernel's per-cgroup perf events counting the same events alone (page faults
/// exactly), and its group read (`PERF_FORMAT_GROUP`: one time enabled and running for the
/// group, kernel/events/core.c `perf_read_group`).
#[test]
fn grouped_events_count_as_alone_in_both_modes() {
    let _alone = bpf_alone();
    let (chosen, unified, top) = match bpf_setting("bpf-grouped") {
        Ok(setting) => setting,
        Err((need, why)) => skip!(need, "{why}"),
    };
    let cpus: Vec<u32> = counterhal::online_cpus(&counterhal::system::System::host())
        .iter()
        .collect();
    let grouped = |mode| {
        let mut options = CgroupCounterOptions::new(mode, Some(unified.clone()));
        options.groups = vec![vec![1, 0]];
        chosen.cgroup_counter_with(&EVENTS, &cpus, options)
    };
    let mut bpf = match grouped(CgroupModeChoice::Bpf) {
        Ok(counter) => counter,
        Err(e) if e.kind() == ErrorKind::Unsupported => {
            skip!(Need::System, "this kernel has no BPF mode: {e}")
        }
        Err(e) => panic!("{e}"),
    };
    let mut perf_group = grouped(CgroupModeChoice::PerfEvents).expect("a group of perf events");
    let mut alone = counter(&chosen, CgroupModeChoice::PerfEvents).expect("perf events");
    for counter in [&mut bpf, &mut perf_group, &mut alone] {
        counter.follow(&top.path).expect("follow");
    }
    run_in(&top.path);
    for counter in [&mut bpf, &mut perf_group, &mut alone] {
        counter.read().expect("read");
    }
    let (faults, clock) = of(&alone, &top.path);
    assert!(
        faults > 0 && clock > 0,
        "the cgroup's work: {faults} {clock}"
    );
    for (mode, counter) in [("bpf", &bpf), ("perf events", &perf_group)] {
        let (grouped_faults, grouped_clock) = of(counter, &top.path);
        assert_eq!(grouped_faults, faults, "{mode}: page-faults grouped, alone");
        assert!(
            within_2_percent(grouped_clock as f64, clock as f64),
            "{mode}: task-clock grouped {grouped_clock} ns, alone {clock} ns"
        );
    }
    let counts = perf_group.counts(&top.path).expect("followed");
    for row in &counts.per_cpu {
        let times = |r: &counterhal::Reading| (r.time_enabled, r.time_running);
        assert_eq!(times(&row[0]), times(&row[1]), "one group's times: {row:?}");
    }
    // A group naming an event the counter lacks is refused, naming it.
    let mut options = CgroupCounterOptions::new(CgroupModeChoice::PerfEvents, None);
    options.groups = vec![vec![0, 2]];
    let refused = chosen
        .cgroup_counter_with(&EVENTS, &cpus, options)
        .err()
        .expect("a group past the events is refused");
    assert_eq!(refused.kind(), ErrorKind::InvalidInput, "{refused}");
    assert!(refused.message().contains("event 2 of 2"), "{refused}");
}

/// The Linux backend, the cgroup v2 mount and a test cgroup `name` below it, or why a test of
/// the BPF mode cannot run here (as a skip's need and reason).
fn bpf_setting(name: &str) -> std::result::Result<(Chosen, PathBuf, TestCgroup), (Need, String)> {
    let Ok(chosen) = open_default() else {
        return Err((Need::System, "no backend is usable here".into()));
    };
    if chosen.name() != "linux" || !running_as_root() {
        let why = "BPF and whole-CPU counting take root on Linux";
        return Err((Need::Privilege, why.into()));
    }
    let Ok(unified) = counterhal::cgroups::unified_root(&counterhal::system::System::host()) else {
        return Err((Need::System, "no cgroup2 file system is mounted".into()));
    };
    match TestCgroup::new(&unified, name) {
        Some(top) => Ok((chosen, unified, top)),
        None => Err((
            Need::Privilege,
            format!("cannot make a cgroup under {}", unified.display()),
        )),
    }
}

/// Held by each test here: one at a time. The kernel skips a perf event's BPF program on a
/// CPU where another BPF program or a map call from user space holds `bpf_prog_active`
/// (kernel/events/core.c `bpf_overflow_handler`), so the BPF modes of two tests side by side
/// lose each other's switches.
fn bpf_alone() -> std::sync::MutexGuard<'static, ()> {
    static BPF: std::sync::Mutex<()> = std::sync::Mutex::new(());
    BPF.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
