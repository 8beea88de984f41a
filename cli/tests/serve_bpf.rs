//! `counterhal serve --cgroup-mode bpf`: the cgroups counted by one BPF program summing each
//! event per cgroup at every context switch, whose descriptors do not grow with the cgroups
//! (1,000 cost what 10 do), whose counts are the perf-event mode's and perf's for the same
//! work at every level of a nested hierarchy, and which keeps the work of a cgroup made,
//! run and removed between two scrapes in its parent's counts.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use counterhal_conformance::fixtures::TestCgroup;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

pub use crate::common::served::Served;

/// The value of `family{event="EVENT",pmu="software",cgroup="CGROUP"}` in `body`.
pub fn cgroup_value(body: &str, family: &str, event: &str, cgroup: &str) -> Option<f64> {
    let prefix = format!("{family}{{event=\"{event}\",pmu=\"software\",cgroup=\"{cgroup}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.parse().ok())
}

/// The cgroup v2 mount where this test may make cgroups, count whole CPUs and load BPF
/// programs; else the test is skipped.
#[macro_export]
macro_rules! unified_or_skip {
    () => {{
        serve_or_skip!();
        if !running_as_root() {
            skip!(
                Need::Privilege,
                "making cgroups and loading BPF take root here"
            );
        }
        match counterhal::cgroups::unified_root(&counterhal::system::System::host()) {
            Ok(root) => root,
            Err(e) => skip!(Need::System, "no cgroup2 file system is mounted: {e}"),
        }
    }};
}

/// `serve ARGS --cgroup-mode bpf`, or the test skipped where BPF cannot count here.
#[macro_export]
macro_rules! bpf_or_skip {
    ($args:expr) => {{
        let mut args: Vec<&str> = $args.to_vec();
        args.extend(["--cgroup-mode", "bpf"]);
        match $crate::serve_bpf::Served::start(&args) {
            Ok(served) => served,
            Err(said) => skip!(Need::System, "the BPF mode cannot count here: {said}"),
        }
    }};
}

/// A cgroup made below `parent` for this test, under a name of its own.
pub fn make_parent(root: &Path, what: &str) -> TestCgroup {
    match TestCgroup::new(root, what) {
        Some(cgroup) => cgroup,
        None => panic!("cannot make a cgroup below {}", root.display()),
    }
}

/// 1,000 cgroups in the BPF mode: every scrape answered, the descriptors at most
/// events x CPUs + 64 (the BPF mode opens each event once per CPU, whatever the cgroups;
/// the system-wide sets, maps, programs, listener and standard streams fit in the 64), and
/// resident memory within 2x of the same exporter following 10 of them.
///
/// Oracle: the kernel's own accounts of the process, `/proc/PID/fd` (each open descriptor)
/// and `/proc/PID/status` (`VmRSS`).
#[test]
fn a_thousand_cgroups_cost_the_bpf_mode_no_descriptors() {
    let _alone = crate::common::bpf_alone();
    let root = unified_or_skip!();
    let parent = make_parent(&root, "serve-bpf-many");
    for i in 0..1000 {
        std::fs::create_dir(parent.path.join(format!("c{i:04}"))).expect("a cgroup");
    }
    let events = "task-clock,page-faults,context-switches,cpu-migrations";
    let pattern = format!("^{}/", parent.name);
    let cpus = counterhal::online_cpus(&counterhal::system::System::host()).len() as usize;
    let many = bpf_or_skip!(["-e", events, "--cgroups", &pattern, "--max-cgroups", "1000"]);
    let (fds, rss, took) = twenty_scrapes(&many, 1000);
    drop(many);
    let few = bpf_or_skip!(["-e", events, "--cgroups", &pattern, "--max-cgroups", "10"]);
    let (few_fds, few_rss, few_took) = twenty_scrapes(&few, 10);
    eprintln!(
        "1,000 cgroups: {fds} descriptors, {rss} KiB, 20 scrapes in {took:?}; 10 cgroups: \
         {few_fds} descriptors, {few_rss} KiB, {few_took:?}"
    );
    for (n, fds) in [(1000, fds), (10, few_fds)] {
        assert!(
            fds <= 4 * cpus + 64,
            "{n} cgroups: {fds} descriptors, 4 events x {cpus} CPUs + 64 at most"
        );
    }
    assert!(rss <= 2 * few_rss, "{rss} KiB against {few_rss} KiB");
    drop(parent);
}

/// Twenty scrapes of `served`, each answered, the last with `followed` cgroups counted in
/// the BPF mode: its descriptors, resident memory and the time they took.
fn twenty_scrapes(served: &Served, followed: usize) -> (usize, u64, Duration) {
    let started = Instant::now();
    let mut body = String::new();
    for _ in 0..20 {
        body = served.scrape();
    }
    let took = started.elapsed();
    let said = format!("counterhal_cgroups_followed {followed}\n");
    assert!(body.contains(&said), "{body}");
    assert!(
        body.contains("counterhal_cgroup_mode{mode=\"bpf\"} 1\n"),
        "{body}"
    );
    let series = body
        .lines()
        .filter(|l| l.starts_with("counterhal_event_total{event=\"page-faults\""))
        .filter(|l| l.contains("cgroup="))
        .count();
    assert_eq!(series, followed, "a series per cgroup: {body}");
    (served.descriptors(), served.resident_kib(), took)
}

/// The parent process id and state letter of `pid` (`/proc/PID/stat`'s fields 4 and 3).
fn parent_and_state(pid: u32) -> Option<(u32, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let mut fields = after_name.split(' ');
    let state = fields.next()?.chars().next()?;
    Some((fields.next()?.parse().ok()?, state))
}

/// The first child of `parent` that sleeps (the shell waiting in `read`), within 5 s; or
/// `parent` itself where `itself`.
pub fn sleeping_child(parent: u32, itself: bool) -> Option<u32> {
    let waited = Instant::now();
    while waited.elapsed() < Duration::from_secs(5) {
        if itself {
            if parent_and_state(parent).is_some_and(|(_, state)| state == 'S') {
                return Some(parent);
            }
        } else {
            let children = std::fs::read_dir("/proc").ok()?.flatten().filter_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let (above, state) = parent_and_state(pid)?;
                (above == parent && state == 'S').then_some(pid)
            });
            if let Some(pid) = children.into_iter().next() {
                return Some(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

/// The known work, run on CPU 0 ([`ON_CPU_0`]): a shell that waits in `read` (outside the
/// cgroups), is moved into `cgroup` while it sleeps, then touches a fresh 4 MiB buffer a
/// hundred times (`dd`).
pub const WORK: &str = "read _; exec dd if=/dev/zero of=/dev/null bs=4M count=100 status=none";

/// Releases the shell `pid` (reading `input`) into `cgroup`: moved while it sleeps, so that
/// its first run there is a cgroup switch, as a task starting in a cgroup has.
pub fn run_in(cgroup: &Path, shell: Option<u32>, mut input: std::process::ChildStdin) {
    let shell = shell.expect("the workload never waited in its shell");
    std::fs::write(cgroup.join("cgroup.procs"), shell.to_string()).expect("move the work");
    input.write_all(b"go\n").ok();
}

/// The same work counted by the BPF mode, the perf-event mode and perf at every level of
/// `top/a/b/c` (the work in the leaf: each parent counts it too): page faults equal, task
/// clock within 2%, and no context switch missed (`counterhal_cgroup_switches_missed_total`
/// stays 0: the program at `sched_switch` is never skipped for another BPF user).
///
/// Oracle: perf 6.1's `perf stat -a --for-each-cgroup` (one perf event per event, CPU and
/// cgroup, as `-G` opens them), counting the same run as its command.
#[test]
fn the_bpf_mode_counts_each_level_as_perf_events_and_perf_do() {
    let _alone = crate::common::bpf_alone();
    let root = unified_or_skip!();
    perf_or_skip!();
    let _alone = cpu_0_alone();
    let top = make_parent(&root, "serve-bpf-levels");
    let levels = [
        top.path.join("a"),
        top.path.join("a/b"),
        top.path.join("a/b/c"),
    ];
    for level in &levels {
        std::fs::create_dir(level).expect("a nested cgroup");
    }
    let names: Vec<String> = std::iter::once(&top.path)
        .chain(&levels)
        .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    let events = "page-faults,task-clock";
    let pattern = format!("^{}(/|$)", top.name);
    let args = ["-e", events, "--cgroups", &pattern];
    let bpf = bpf_or_skip!(args);
    let mut perf_events_args = args.to_vec();
    perf_events_args.extend(["--cgroup-mode", "perf-events"]);
    let perf_events = Served::start(&perf_events_args).expect("serve in the perf-event mode");
    let missed = |body: &str| {
        body.lines()
            .find_map(|l| l.strip_prefix("counterhal_cgroup_switches_missed_total "))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no counterhal_cgroup_switches_missed_total: {body}"))
    };
    // Each follows the cgroups at its first scrape.
    let (bpf_before, perf_events_before) = (bpf.scrape(), perf_events.scrape());
    let perf_text = perf_for_each_cgroup(events, &names, &levels[2]);
    let (ours, theirs) = (bpf.scrape(), perf_events.scrape());
    let perf_value = |event: &str, cgroup: &str| {
        perf_text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|f| f.get(2) == Some(&event) && f.get(3) == Some(&cgroup))
            .and_then(|f| f[0].parse::<f64>().ok())
            .unwrap_or_else(|| panic!("perf gave no {event} of {cgroup}: {perf_text}"))
    };
    assert_eq!(missed(&ours), missed(&bpf_before), "switches missed");
    for name in &names {
        let label = format!("/{name}");
        let value = |body: &str, before: &str, family: &str, event: &str| {
            let now = cgroup_value(body, family, event, &label);
            let then = cgroup_value(before, family, event, &label).unwrap_or(0.0);
            now.map(|v| v - then)
                .unwrap_or_else(|| panic!("no {event} of {label}: {body}"))
        };
        let faults = value(&ours, &bpf_before, "counterhal_event_total", "page-faults");
        let faults_perf_events = value(
            &theirs,
            &perf_events_before,
            "counterhal_event_total",
            "page-faults",
        );
        let faults_perf = perf_value("page-faults", name);
        assert_eq!(
            faults_perf_events, faults_perf,
            "{label}: perf-events and perf"
        );
        assert!(faults > 100.0, "{label}: the work's fresh pages: {faults}");
        assert_eq!(faults, faults_perf_events, "{label}: bpf and perf-events");
        let family = "counterhal_event_seconds_total";
        let ms = 1e3 * value(&ours, &bpf_before, family, "task-clock");
        let ms_perf_events = 1e3 * value(&theirs, &perf_events_before, family, "task-clock");
        let ms_perf = perf_value("task-clock", name);
        for (theirs, who) in [(ms_perf_events, "perf-events"), (ms_perf, "perf")] {
            assert!(
                (ms - theirs).abs() <= 0.02 * ms.max(theirs) + 0.02,
                "{label}: task-clock {ms} ms in the BPF mode, {theirs} ms by {who}"
            );
        }
    }
    for level in levels.iter().rev() {
        std::fs::remove_dir(level).ok();
    }
    drop(top);
}

/// perf's CSV (`-x,`) of `perf stat -a -e EVENTS --for-each-cgroup NAMES` counting [`WORK`]
/// on CPU 0, released into `leaf`.
pub fn perf_for_each_cgroup(events: &str, names: &[String], leaf: &Path) -> String {
    let perf_out = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-serve-bpf-{}", std::process::id()));
    let mut perf = Command::new("perf")
        .args(["stat", "-a", "-x,", "-e", events, "--for-each-cgroup"])
        .arg(names.join(","))
        .arg("-o")
        .arg(&perf_out)
        .arg("--")
        .args(ON_CPU_0)
        .args(["sh", "-c", WORK])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run perf");
    let shell = sleeping_child(perf.id(), false);
    run_in(leaf, shell, perf.stdin.take().expect("its input"));
    let done = perf.wait_with_output().expect("perf ends");
    let perf_text = std::fs::read_to_string(&perf_out).unwrap_or_default();
    std::fs::remove_file(&perf_out).ok();
    assert!(done.status.success(), "perf: {}", stderr(&done));
    perf_text
}

/// A cgroup made below a followed one, run and removed between two scrapes: its work is in
/// its parent's counts at the second (the BPF program adds every level of the hierarchy at
/// the cgroup's switches, while it runs), and no context switch was missed. (Before the
/// program ran at `sched_switch`, it missed switches in every run of five here under
/// load: another process's map call held the CPU's `bpf_prog_active`.)
///
/// Oracle: the work's own page faults as the kernel counts them for it, `ru_minflt` of its
/// `getrusage` (`/usr/bin/time -f %R`, GNU time): the parent's count grows by at least them.
#[test]
fn a_cgroup_made_and_removed_between_scrapes_counts_in_its_parent() {
    let _alone = crate::common::bpf_alone();
    let root = unified_or_skip!();
    let _alone = cpu_0_alone();
    if !Command::new("/usr/bin/time")
        .args(["-f", "%R", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skip!(
            Need::Tools,
            "GNU time (/usr/bin/time, Debian's time) is not installed"
        );
    }
    let parent = make_parent(&root, "serve-bpf-gone");
    let pattern = format!("^{}$", parent.name);
    let served = bpf_or_skip!(["-e", "page-faults", "--cgroups", &pattern]);
    let label = format!("/{}", parent.name);
    let missed = |body: &str| {
        body.lines()
            .find_map(|l| l.strip_prefix("counterhal_cgroup_switches_missed_total "))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no counterhal_cgroup_switches_missed_total: {body}"))
    };
    let short = parent.path.join("short-lived");
    let before = served.scrape();
    let faults_before =
        cgroup_value(&before, "counterhal_event_total", "page-faults", &label).unwrap_or(0.0);
    std::fs::create_dir(&short).expect("a cgroup below the followed one");
    let mut work = Command::new("sh")
        .args([
            "-c",
            &format!("read _; exec /usr/bin/time -f %R sh -c '{}'", &WORK[8..]),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the work");
    let shell = sleeping_child(work.id(), true);
    run_in(&short, shell, work.stdin.take().expect("its input"));
    let done = work.wait_with_output().expect("the work ends");
    let own: f64 = stderr(&done).trim().parse().expect("GNU time's %R");
    let waited = Instant::now();
    while std::fs::remove_dir(&short).is_err() && waited.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!short.exists(), "the short-lived cgroup was not removed");
    let after = served.scrape();
    let faults = cgroup_value(&after, "counterhal_event_total", "page-faults", &label)
        .unwrap_or_else(|| panic!("no page-faults of {label}: {after}"))
        - faults_before;
    assert!(own > 100.0, "the work's own faults: {own}");
    assert_eq!(missed(&after), missed(&before), "switches missed");
    assert!(
        faults >= own,
        "{label} grew by {faults} page faults; the work in its child made {own}"
    );
    drop(parent);
}

/// Work pinned to each online CPU in turn (`taskset`) in a followed cgroup: the BPF mode's
/// series of that CPU counts its page faults as the perf-event mode's does, no CPU's count
/// differs between the modes, and no context switch is missed.
///
/// Oracle: the perf-event mode, one perf event per event, CPU and cgroup opened with
/// `PERF_FLAG_PID_CGROUP` (the kernel's own cgroup filter, `perf_cgroup_match`, as perf's
/// `stat -G` opens them), counting the same runs.
#[test]
fn the_bpf_mode_counts_work_on_every_cpu() {
    let _alone = crate::common::bpf_alone();
    let root = unified_or_skip!();
    let _alone = cpu_0_alone();
    let cgroup = make_parent(&root, "serve-bpf-cpus");
    let pattern = format!("^{}$", cgroup.name);
    let args = ["-e", "page-faults", "--cgroups", &pattern, "--per-cpu"];
    let bpf = bpf_or_skip!(args);
    let mut perf_events_args = args.to_vec();
    perf_events_args.extend(["--cgroup-mode", "perf-events"]);
    let perf_events = Served::start(&perf_events_args).expect("serve in the perf-event mode");
    let label = format!("cgroup=\"/{}\"", cgroup.name);
    let per_cpu = |body: &str| -> Vec<(String, f64)> {
        body.lines()
            .filter(|l| l.starts_with("counterhal_event_total{event=\"page-faults\""))
            .filter(|l| l.contains(&label))
            .filter_map(|l| {
                let cpu = l.split("cpu=\"").nth(1)?.split('"').next()?;
                Some((cpu.to_string(), l.rsplit(' ').next()?.parse().ok()?))
            })
            .collect()
    };
    let missed = |body: &str| {
        body.lines()
            .find_map(|l| l.strip_prefix("counterhal_cgroup_switches_missed_total "))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no counterhal_cgroup_switches_missed_total: {body}"))
    };
    let grown = |now: &[(String, f64)], then: &[(String, f64)]| -> Vec<(String, f64)> {
        now.iter()
            .map(|(cpu, v)| {
                let before = then.iter().find(|(c, _)| c == cpu).map_or(0.0, |p| p.1);
                (cpu.clone(), v - before)
            })
            .collect()
    };
    for cpu in counterhal::online_cpus(&counterhal::system::System::host())
        .iter()
        .map(|c| c.to_string())
    {
        let (bpf_before, perf_events_before) = (bpf.scrape(), perf_events.scrape());
        let mut work = Command::new("taskset")
            .args(["-c", &cpu, "sh", "-c", WORK])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the work");
        let shell = sleeping_child(work.id(), true);
        run_in(&cgroup.path, shell, work.stdin.take().expect("its input"));
        let done = work.wait_with_output().expect("the work ends");
        assert!(done.status.success(), "the work: {}", stderr(&done));
        let (ours, theirs) = (bpf.scrape(), perf_events.scrape());
        let counted = grown(&per_cpu(&ours), &per_cpu(&bpf_before));
        let expected = grown(&per_cpu(&theirs), &per_cpu(&perf_events_before));
        assert_eq!(
            missed(&ours),
            missed(&bpf_before),
            "CPU {cpu}: switches missed"
        );
        let on =
            |counts: &[(String, f64)]| counts.iter().find(|(c, _)| *c == cpu).map_or(0.0, |p| p.1);
        assert!(
            on(&expected) > 100.0,
            "CPU {cpu}: the perf-event mode counted {expected:?}"
        );
        assert_eq!(
            counted, expected,
            "work pinned to CPU {cpu}: the BPF mode counted {counted:?}, the perf-event mode \
             {expected:?}"
        );
    }
    drop(cgroup);
}

/// `bpftool prog show id ID`'s name and `recursion_misses` (which it prints only where
/// nonzero), or `None` where bpftool cannot show the program.
fn bpftool_misses(id: &str) -> Option<(String, u64)> {
    let out = Command::new("bpftool")
        .args(["prog", "show", "id", id])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let word_after = |key: &str| {
        let mut words = text.split_whitespace();
        words.find(|w| *w == key)?;
        words.next().map(str::to_string)
    };
    let misses = word_after("recursion_misses").map_or(Some(0), |n| n.parse().ok())?;
    Some((word_after("name")?, misses))
}

/// Each program of the BPF mode has a `counterhal_bpf_recursion_misses_total` series, its
/// value what the kernel reports for the same program between two scrapes.
///
/// Oracle: Debian's bpftool (7.1, libbpf 1.1), `bpftool prog show id N`: the kernel's
/// `struct bpf_prog_info` (`recursion_misses`, Linux 5.12) of the program the series' `id`
/// label names, and its `name` the series' `program` label.
#[test]
fn the_bpf_modes_skipped_programs_are_what_bpftool_reports() {
    let _alone = crate::common::bpf_alone();
    let root = unified_or_skip!();
    if Command::new("bpftool").arg("version").output().is_err() {
        skip!(Need::Tools, "bpftool is not installed (Debian's bpftool)");
    }
    let parent = make_parent(&root, "serve-bpf-skips");
    let pattern = format!("^{}$", parent.name);
    let served = bpf_or_skip!(["-e", "page-faults", "--cgroups", &pattern]);
    let series = |body: &str| -> Vec<(String, String, u64)> {
        body.lines()
            .filter_map(|l| l.strip_prefix("counterhal_bpf_recursion_misses_total{program=\""))
            .filter_map(|rest| {
                let (program, rest) = rest.split_once("\",id=\"")?;
                let (id, value) = rest.split_once("\"} ")?;
                Some((program.to_string(), id.to_string(), value.parse().ok()?))
            })
            .collect()
    };
    let first = series(&served.scrape());
    assert!(
        first.iter().any(|(p, ..)| p == "ch_cgroup_swtch"),
        "no series for the counting program: {first:?}"
    );
    let mut kernel = Vec::new();
    for (program, id, _) in &first {
        let shown = bpftool_misses(id).unwrap_or_else(|| panic!("bpftool cannot show {id}"));
        assert_eq!(&shown.0, program, "program {id}");
        kernel.push(shown.1);
    }
    let second = series(&served.scrape());
    assert_eq!(second.len(), first.len(), "{first:?} then {second:?}");
    for ((before, now), shown) in first.iter().zip(&second).zip(kernel) {
        assert!(
            before.2 <= shown && shown <= now.2,
            "{}: the series {} then {}, bpftool {shown} between",
            before.0,
            before.2,
            now.2
        );
    }
    drop(served);
    drop(parent);
}
