//! `cgroups`: 1,000 cgroups made for the run below the cgroup2 mount, 100 of them with
//! known work (a shell each, waking every second), 4 software events on every online CPU:
//!
//! - first, a host with 10 cgroups (10 made, 1 with work, before the 1,000): the BPF mode
//!   following them, scraped alone (the other baseline of the target);
//! - scrapes: `counterhal serve` following the 1,000 in the BPF mode and in the perf-event
//!   mode, the BPF mode following 10 of them (the baseline of the target: CPU per
//!   scrape and resident memory with 1,000 cgroups within 2x of 10), and node_exporter's
//!   perf collector (which has no per-cgroup mode), interleaved as `costs` scrapes them:
//!   CPU per scrape, latency, memory, and each one's open descriptors (`/proc/PID/fd`);
//! - `perf stat -a --for-each-cgroup` (perf's `-G` for every cgroup) over the same 1,000,
//!   its descriptors;
//! - what each adds to every context switch: two processes in two of the cgroups, pinned to
//!   one CPU, passing a byte back and forth over two pipes (every switch a cgroup switch,
//!   the BPF program's worst case), timed alone and beside each of them; and the same on
//!   every online CPU at once, a pair on each (beside the two `serve` modes).

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use counterhal_conformance::fixtures::TestCgroup;

use super::{Accounting, Exporter, compare, node_exporter_program};

/// The cgroups made, those with work, and the events.
const CGROUPS: usize = 1_000;
const WITH_WORK: usize = 100;
const EVENTS: &str = "task-clock,page-faults,context-switches,cpu-migrations";
/// Scrapes of each exporter in each of the 10 rounds.
const PER_ROUND: usize = 50;
/// Round trips of the ping-pong, and its runs in each condition (the median is printed).
const ROUND_TRIPS: u32 = 100_000;
const RUNS: usize = 5;

/// Runs the section; prints what it measured, or why it could not.
pub fn cgroups(accounting: &Accounting) {
    let Ok(root) = counterhal::cgroups::unified_root(&counterhal::system::System::host()) else {
        println!("cgroups: SKIPPED: no cgroup2 mount");
        return;
    };
    let Some(parent) = TestCgroup::new(&root, "serve-cgroups") else {
        println!(
            "cgroups: SKIPPED: cannot make a cgroup below {}",
            root.display()
        );
        return;
    };
    let host = host_with_10(&root, accounting);
    for i in 0..CGROUPS {
        if let Err(e) = std::fs::create_dir(parent.path.join(format!("g{i:04}"))) {
            println!("cgroups: SKIPPED: cannot make cgroup {i}: {e}");
            return;
        }
    }
    let work = Work::start(&parent.path, WITH_WORK);
    let pattern = format!("^{}/", parent.name);
    let cpus = counterhal::online_cpus(&counterhal::system::System::host());
    println!(
        "cgroups: {CGROUPS} below {} ({WITH_WORK} with a shell waking each second), -e \
         {EVENTS}, CPUs {}",
        parent.path.display(),
        cpus.iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let alone = ping_pong(&parent.path);
    println!("ping-pong alone: {}", switches(&alone, None));
    let alone_everywhere = ping_pong_everywhere(&parent.path);
    println!(
        "ping-pong on all {} CPUs at once, alone: {}",
        cpus.len(),
        switches(&alone_everywhere, None)
    );
    let serve = |name, mode, max: &str| {
        let args = ["-e", EVENTS, "--cgroups", &pattern, "--max-cgroups", max];
        let mut args = args.to_vec();
        args.extend(["--cgroup-mode", mode]);
        Exporter::counterhal(name, &args, accounting)
            .unwrap_or_else(|e| panic!("{name} did not start: {e}"))
    };
    for (name, mode) in [("bpf", "bpf"), ("perf-events", "perf-events")] {
        let exporter = serve(name, mode, "1000");
        // Its cgroups followed (at its first scrape), then the ping-pong beside it.
        super::Scraper::new(exporter.address).scrape();
        let beside = ping_pong(&parent.path);
        println!(
            "ping-pong beside serve --cgroup-mode {mode}: {}; serve holds {} descriptors",
            switches(&beside, Some(&alone)),
            descriptors(exporter.child.id())
        );
        let everywhere = ping_pong_everywhere(&parent.path);
        println!(
            "ping-pong on all {} CPUs at once beside serve --cgroup-mode {mode}: {}",
            cpus.len(),
            switches(&everywhere, Some(&alone_everywhere))
        );
    }
    perf_beside(&parent, &alone);
    let node = node_exporter_program().map(|program| {
        let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
        Exporter::node_exporter(&program, cpus.trim(), accounting)
            .unwrap_or_else(|e| panic!("node_exporter did not start: {e}"))
    });
    let bpf = serve("bpf, 1,000 cgroups", "bpf", "1000");
    let perf_events = serve("perf-events, 1,000 cgroups", "perf-events", "1000");
    let few = serve("bpf, 10 cgroups", "bpf", "10");
    let mut exporters = vec![&bpf, &perf_events];
    exporters.extend(node.as_ref());
    exporters.push(&few);
    println!("scrapes (ratios to the BPF mode following 10 of the cgroups):");
    let figures = compare(&exporters, 2, Some(2.0), PER_ROUND);
    if let Some((cpu, rss)) = host {
        println!("against the host with 10 cgroups (measured first, alone):");
        for (exporter, (their_cpu, their_rss)) in exporters.iter().zip(&figures) {
            println!(
                "  {:<30} CPU per scrape {:.3}x, VmRSS at the end {:.3}x",
                exporter.name,
                their_cpu / cpu,
                *their_rss as f64 / rss.max(1) as f64
            );
        }
    }
    for exporter in &exporters {
        println!(
            "  {:<30} {} descriptors",
            exporter.name,
            descriptors(exporter.child.id())
        );
    }
    drop((bpf, perf_events, few, node));
    drop(work);
    drop(parent);
}

/// A host with 10 cgroups: 10 made below a cgroup of their own (the first with a shell
/// waking every second, as one in ten of the 1,000 has), the BPF mode following them, scraped
/// as `compare` scrapes; its mean CPU per scrape (seconds) and resident memory (KiB), or none
/// where they could not be made.
fn host_with_10(root: &Path, accounting: &Accounting) -> Option<(f64, u64)> {
    let parent = TestCgroup::new(root, "serve-host-10")?;
    for i in 0..10 {
        std::fs::create_dir(parent.path.join(format!("g{i:04}"))).ok()?;
    }
    let work = Work::start(&parent.path, 1);
    let pattern = format!("^{}/", parent.name);
    let args = [
        "-e",
        EVENTS,
        "--cgroups",
        &pattern,
        "--max-cgroups",
        "10",
        "--cgroup-mode",
        "bpf",
    ];
    let exporter = Exporter::counterhal("bpf, a host with 10 cgroups", &args, accounting)
        .unwrap_or_else(|e| panic!("serve did not start: {e}"));
    println!(
        "a host with 10 cgroups below {} (1 with work):",
        parent.path.display()
    );
    let figures = compare(&[&exporter], 0, None, PER_ROUND);
    drop((exporter, work));
    figures.first().copied()
}

/// The shells with known work and their cgroups, ended when dropped.
struct Work(Vec<(Child, std::path::PathBuf)>);

impl Work {
    /// A shell waking every second in each of the first `count` cgroups below `parent`.
    fn start(parent: &Path, count: usize) -> Work {
        let shells = (0..count).filter_map(|i| {
            let child = Command::new("sh")
                .args(["-c", "while :; do sleep 1; done"])
                .stdout(Stdio::null())
                .spawn()
                .ok()?;
            let cgroup = parent.join(format!("g{i:04}"));
            std::fs::write(cgroup.join("cgroup.procs"), child.id().to_string()).ok();
            Some((child, cgroup))
        });
        Work(shells.collect())
    }
}

impl Drop for Work {
    /// Ends every process of each cgroup (`cgroup.kill`, Linux 5.14: the shell's `sleep`
    /// too, which would otherwise keep the cgroup from being removed for up to a second).
    fn drop(&mut self) {
        for (child, cgroup) in &mut self.0 {
            std::fs::write(cgroup.join("cgroup.kill"), "1").ok();
            child.kill().ok();
            child.wait().ok();
        }
    }
}

/// `perf stat -a --for-each-cgroup` over the 1,000 cgroups below `parent`, its descriptors,
/// and the ping-pong beside it.
fn perf_beside(parent: &TestCgroup, alone: &[Duration]) {
    let names: Vec<String> = (0..CGROUPS)
        .map(|i| format!("{}/g{i:04}", parent.name))
        .collect();
    let perf = Command::new("perf")
        .args(["stat", "-a", "-x,", "-e", EVENTS, "--for-each-cgroup"])
        .arg(names.join(","))
        .args(["-o", "/dev/null", "--", "sleep", "3600"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut perf) = perf else {
        println!("perf stat -G: SKIPPED: perf does not run (Debian's linux-perf)");
        return;
    };
    // Counting once its command runs.
    let waited = Instant::now();
    while waited.elapsed() < Duration::from_secs(30) && !runs_sleep(perf.id()) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let held = descriptors(perf.id());
    let beside = ping_pong(&parent.path);
    println!(
        "ping-pong beside perf stat -a --for-each-cgroup (1,000 cgroups): {}; perf holds {held} \
         descriptors",
        switches(&beside, Some(alone))
    );
    // Its command first (perf leaves it running when killed, holding perf's stderr).
    let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", perf.id()));
    for child in children.unwrap_or_default().split_whitespace() {
        Command::new("kill").arg(child).status().ok();
    }
    perf.kill().ok();
    let mut said = String::new();
    if let Some(mut stderr) = perf.stderr.take() {
        stderr.read_to_string(&mut said).ok();
    }
    perf.wait().ok();
    if held < CGROUPS {
        println!("  perf said: {}", said.trim());
    }
}

/// Whether a child of `pid` runs `sleep` (perf's command started: its counters are open).
fn runs_sleep(pid: u32) -> bool {
    let children = format!("/proc/{pid}/task/{pid}/children");
    let text = std::fs::read_to_string(children).unwrap_or_default();
    text.split_whitespace().any(|child| {
        std::fs::read_to_string(format!("/proc/{child}/comm")).is_ok_and(|c| c.trim() == "sleep")
    })
}

/// The open descriptors of process `pid`.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// The medians and spread of `runs` of the ping-pong, per context switch, and where
/// `alone` is given, what they add to it.
fn switches(runs: &[Duration], alone: Option<&[Duration]>) -> String {
    let per_switch = |d: Duration| d.as_secs_f64() * 1e9 / f64::from(2 * ROUND_TRIPS);
    let median = |runs: &[Duration]| {
        let mut sorted = runs.to_vec();
        sorted.sort();
        sorted[sorted.len() / 2]
    };
    let (low, high) = (
        runs.iter().min().copied().unwrap_or_default(),
        runs.iter().max().copied().unwrap_or_default(),
    );
    let mine = median(runs);
    let mut text = format!(
        "{:.3} s for {ROUND_TRIPS} round trips, {:.0} ns a switch (runs {:.0}-{:.0} ns)",
        mine.as_secs_f64(),
        per_switch(mine),
        per_switch(low),
        per_switch(high)
    );
    if let Some(alone) = alone {
        let base = median(alone);
        text += &format!(
            ", {:+.0} ns a switch, {:.3}x the wall time alone",
            per_switch(mine) - per_switch(base),
            mine.as_secs_f64() / base.as_secs_f64()
        );
    }
    text
}

/// [`RUNS`] runs of the ping-pong between the cgroups `g0000` and `g0001` below `parent`, on
/// the first online CPU, each one's wall time.
fn ping_pong(parent: &Path) -> Vec<Duration> {
    let cpu = counterhal::online_cpus(&counterhal::system::System::host())
        .iter()
        .next()
        .unwrap_or(0);
    (0..RUNS).map(|_| one_ping_pong(parent, &[cpu])).collect()
}

/// [`RUNS`] runs of a ping-pong on every online CPU at once (CPU number `i` of the online
/// ones between the cgroups `g{2i}` and `g{2i+1}` below `parent`), each one's wall time from
/// the first byte to the last pair's end: the BPF program at every switch on every CPU.
fn ping_pong_everywhere(parent: &Path) -> Vec<Duration> {
    let cpus: Vec<u32> = counterhal::online_cpus(&counterhal::system::System::host())
        .iter()
        .collect();
    (0..RUNS).map(|_| one_ping_pong(parent, &cpus)).collect()
}

/// A pipe: its read and write ends.
fn pipe() -> (std::fs::File, std::fs::File) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    let made = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(made, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: the descriptor was just made by pipe2 and is owned by nothing else.
    let read = unsafe { OwnedFd::from_raw_fd(fds[0]) };
    // SAFETY: as the read end.
    let write = unsafe { OwnedFd::from_raw_fd(fds[1]) };
    (read.into(), write.into())
}

/// One ping-pong on each of `cpus`: on the `i`th, a process in cgroup `g{2i}` below `parent`
/// writes a byte to a process in `g{2i+1}`, which writes it back, [`ROUND_TRIPS`] times,
/// both pinned to that CPU; the wall time from the first byte to the end of the last pair.
fn one_ping_pong(parent: &Path, cpus: &[u32]) -> Duration {
    let (mut go_r, mut go_w) = pipe();
    let mut children = Vec::new();
    for (i, &cpu) in cpus.iter().enumerate() {
        let (mut to_pong_r, mut to_pong_w) = pipe();
        let (mut to_ping_r, mut to_ping_w) = pipe();
        // The children run only what is written here: system calls, then _exit.
        let child = |body: &mut dyn FnMut()| {
            // SAFETY: fork; the child calls only async-signal-safe functions (read, write,
            // sched_setaffinity, _exit) on descriptors and memory it inherited.
            match unsafe { libc::fork() } {
                0 => {
                    // SAFETY: an all-zero cpu_set_t is the empty set (a plain bit array).
                    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
                    // SAFETY: CPU_SET writes one bit of the set it is given, within its size.
                    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
                    // SAFETY: a CPU set of one CPU, given with its size.
                    unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
                    body();
                    // SAFETY: _exit ends the child without running the parent's handlers.
                    unsafe { libc::_exit(0) }
                }
                pid if pid > 0 => pid,
                _ => panic!("fork: {}", std::io::Error::last_os_error()),
            }
        };
        let mut byte = [0u8; 1];
        let pong_pid = child(&mut || {
            for _ in 0..ROUND_TRIPS {
                if to_pong_r.read_exact(&mut byte).is_err() || to_ping_w.write_all(&byte).is_err() {
                    break;
                }
            }
        });
        let ping_pid = child(&mut || {
            let mut go = [0u8; 1];
            go_r.read_exact(&mut go).ok();
            for _ in 0..ROUND_TRIPS {
                if to_pong_w.write_all(&byte).is_err() || to_ping_r.read_exact(&mut byte).is_err() {
                    break;
                }
            }
        });
        for (pid, cgroup) in [(ping_pid, 2 * i), (pong_pid, 2 * i + 1)] {
            let procs = parent.join(format!("g{cgroup:04}")).join("cgroup.procs");
            std::fs::write(procs, pid.to_string()).expect("move a ping-pong process");
        }
        children.extend([ping_pid, pong_pid]);
    }
    let started = Instant::now();
    go_w.write_all(&vec![b'g'; cpus.len()])
        .expect("start the ping-pongs");
    for pid in children {
        let mut status = 0;
        // SAFETY: waits for a child this process forked.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
    started.elapsed()
}
