//! `counterhal stat --for-each-cgroup ... --bpf-counters` (perf's `-b`), around perf 6.1's
//! `perf stat --for-each-cgroup` on one workload: both count the same run, so page faults
//! match exactly and task-clock within 2% at every level of a nested hierarchy.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;
use counterhal_conformance::fixtures::TestCgroup;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The parent process id and state letter of process `pid`, and its command name.
fn stat_of(pid: u32) -> Option<(u32, char, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((fields.next()?.parse().ok()?, state, comm))
}

/// The process named `comm` whose parent's parent is `grandparent`, once it sleeps.
fn sleeping_grandchild(grandparent: u32, comm: &str) -> Option<u32> {
    for _ in 0..1000 {
        let found = std::fs::read_dir("/proc")
            .ok()?
            .flatten()
            .find_map(|entry| {
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let (parent, state, name) = stat_of(pid)?;
                let (above, _, _) = stat_of(parent)?;
                (above == grandparent && state == 'S' && name == comm).then_some(pid)
            });
        if found.is_some() {
            return found;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

/// `(value, event, cgroup)` of each `-x,` line in `text`.
fn lines_of(text: &str) -> Vec<(f64, String, String)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && l.contains(','))
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            Some((
                fields.first()?.parse().ok()?,
                fields.get(2)?.to_string(),
                fields.get(3)?.to_string(),
            ))
        })
        .collect()
}

/// Oracle: perf 6.1's `perf stat -a --for-each-cgroup` (per-cgroup perf events), run as the
/// measured command of ours, counting the same workload: a shell held in `read` until it is
/// moved into the leaf of `a/b/c`, then `dd` touching a fresh 4 MiB buffer.
#[test]
fn bpf_counters_count_each_cgroup_as_perf_does() {
    let _alone = crate::common::bpf_alone();
    linux_or_skip!();
    let _alone = cpu_0_alone();
    if !running_as_root() {
        skip!(
            Need::Privilege,
            "BPF programs and whole CPUs take root here"
        );
    }
    if !perf_available() {
        skip!(
            Need::Tools,
            "perf is not installed (apt-get install linux-perf)"
        );
    }
    let Ok(unified) = counterhal::cgroups::unified_root(&counterhal::system::System::host()) else {
        skip!(Need::System, "no cgroup2 file system is mounted");
    };
    let Some(top) = TestCgroup::new(&unified, "bpf-stat") else {
        skip!(
            Need::Privilege,
            "cannot make a cgroup under {}",
            unified.display()
        );
    };
    let levels = [
        top.path.join("a"),
        top.path.join("a/b"),
        top.path.join("a/b/c"),
    ];
    // On a loaded machine (four busy loops beside it) one run in 48 gave a cgroup 2.5-8.6 ms
    // more task-clock in the BPF mode than perf's per-cgroup events, with the page faults
    // equal, in the project as it was before and after the System was handed down; the cause
    // is not yet known. Where task-clock differs the measurement runs again, and the test
    // fails where both runs differ.
    let mut first_difference = None;
    for attempt in 1..=2 {
        for level in &levels {
            std::fs::create_dir(level).expect("make a nested cgroup");
        }
        let names: Vec<String> = std::iter::once(&top.path)
            .chain(&levels)
            .map(|p| p.strip_prefix(&unified).unwrap().display().to_string())
            .collect();
        let list = names.join(",");
        let perf_out = counterhal_conformance::fixtures::temp_dir()
            .join(format!("counterhal-bpf-stat-{}", std::process::id()));
        let events = "page-faults,task-clock";
        let mut ours = Command::new(bin())
            .args([
                "stat",
                "-a",
                "-x,",
                "-b",
                "-e",
                events,
                "--for-each-cgroup",
                &list,
                "--",
            ])
            .args([
                "perf",
                "stat",
                "-a",
                "-x,",
                "-e",
                events,
                "--for-each-cgroup",
                &list,
                "-o",
            ])
            .arg(&perf_out)
            .arg("--")
            .args(ON_CPU_0)
            .args(["sh", "-c"])
            .arg("read _; exec dd if=/dev/zero of=/dev/null bs=4M count=100 status=none")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run counterhal");
        let shell = sleeping_grandchild(ours.id(), "sh");
        if let Some(shell) = shell {
            std::fs::write(levels[2].join("cgroup.procs"), shell.to_string())
                .expect("move the workload");
        }
        let mut input = ours.stdin.take().expect("its input");
        input.write_all(b"go\n").ok();
        drop(input);
        let done = ours.wait_with_output().expect("counterhal ends");
        let text = String::from_utf8_lossy(&done.stderr).into_owned();
        let perf_text = std::fs::read_to_string(&perf_out).unwrap_or_default();
        std::fs::remove_file(&perf_out).ok();
        for level in levels.iter().rev() {
            std::fs::remove_dir(level).ok();
        }
        assert!(
            shell.is_some(),
            "the workload never waited in its shell: {text}"
        );
        if text.contains("--bpf-counters") && done.status.code() == Some(1) {
            skip!(Need::System, "the BPF mode cannot count here: {text}");
        }
        assert!(done.status.success(), "{text}");
        let (ours, perf) = (lines_of(&text), lines_of(&perf_text));
        let value = |lines: &[(f64, String, String)], event: &str, cgroup: &str| {
            lines
                .iter()
                .find(|(_, e, c)| e == event && c == cgroup)
                .map(|(v, _, _)| *v)
                .unwrap_or_else(|| panic!("no {event} of {cgroup}: {lines:?}"))
        };
        let mut differences = Vec::new();
        for name in &names {
            let faults = value(&ours, "page-faults", name);
            assert_eq!(
                faults,
                value(&perf, "page-faults", name),
                "{name}: {text}\n{perf_text}"
            );
            assert!(
                faults > 100.0,
                "{name}: the workload's fresh pages: {faults}"
            );
            let (ms, perf_ms) = (
                value(&ours, "task-clock", name),
                value(&perf, "task-clock", name),
            );
            if (ms - perf_ms).abs() > 0.02 * ms.max(perf_ms) + 0.02 {
                differences.push(format!("{name}: task-clock {ms} ms, perf {perf_ms} ms"));
            }
        }
        match (attempt, differences.is_empty()) {
            (_, true) => break,
            (1, false) => first_difference = Some(differences.join("; ")),
            (_, false) => panic!(
                "{}; measured again: {}",
                first_difference.unwrap_or_default(),
                differences.join("; ")
            ),
        }
    }
    drop(top);
}
