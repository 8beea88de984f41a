//! `counterhal serve` against what users do to the cgroup tree, in the BPF mode beside the
//! perf-event mode counting the same work (its oracle: one perf event per CPU and followed
//! cgroup, `PERF_FLAG_PID_CGROUP`, which the kernel switches at every move): a followed
//! cgroup removed and made again under its path, cgroups nobody follows run by the thousand,
//! a task that moves itself into a followed cgroup while it runs, cgroups deeper than the BPF
//! mode follows, and a host whose perf_event controller is on a cgroup v1 hierarchy.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::*;
use crate::serve_bpf::{Served, WORK, cgroup_value, make_parent, run_in, sleeping_child};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The page faults of `cgroup` (its label) in `body`, 0 where it has no series.
fn faults(body: &str, cgroup: &str) -> f64 {
    cgroup_value(body, "counterhal_event_total", "page-faults", cgroup).unwrap_or(0.0)
}

/// The value of the unlabelled `family` in `body`.
fn plain_value(body: &str, family: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{family} ")))
        .and_then(|v| v.parse().ok())
}

/// `serve ARGS` in the BPF mode (or the test skipped where BPF cannot count here) and in the
/// perf-event mode, each having followed its cgroups (a first scrape).
macro_rules! both_modes {
    ($args:expr) => {{
        let args: &[&str] = &$args;
        let bpf = crate::bpf_or_skip!(args);
        let perf_events = Served::start(&[args, &["--cgroup-mode", "perf-events"]].concat())
            .expect("serve in the perf-event mode");
        bpf.scrape();
        perf_events.scrape();
        (bpf, perf_events)
    }};
}

/// Runs [`WORK`] (a shell waiting to be moved, then `dd` touching a fresh 4 MiB buffer a
/// hundred times) on CPU 0 in `cgroup`, to its end.
fn work_in(cgroup: &Path) {
    let mut work = Command::new("taskset")
        .args(["-c", "0", "sh", "-c", WORK])
        .stdin(Stdio::piped())
        .spawn()
        .expect("taskset and sh");
    let shell = sleeping_child(work.id(), true);
    run_in(cgroup, shell, work.stdin.take().expect("its input"));
    assert!(work.wait().expect("the work ends").success());
}

/// Each mode's page faults of `label` grown from `before` to now: the BPF mode's, then the
/// perf-event mode's.
fn grown(modes: &(Served, Served), before: &(String, String), label: &str) -> (f64, f64) {
    let (bpf, perf_events) = (modes.0.scrape(), modes.1.scrape());
    (
        faults(&bpf, label) - faults(&before.0, label),
        faults(&perf_events, label) - faults(&before.1, label),
    )
}

/// A followed cgroup removed and made again under its path (as systemd does at every restart
/// of a service) is counted again, in both modes: the work run in the new one after a scrape
/// found it is in its counts, equal in the two (before, both kept the removed cgroup's id or
/// descriptors, and their counts stood still).
///
/// Oracle: the kernel's page-fault accounting, as the perf-event mode reads it for the new
/// cgroup (more than 100 faults: `dd`'s start and its buffer's fresh pages).
#[test]
fn a_cgroup_made_again_under_its_path_is_counted_again() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    let _alone = cpu_0_alone();
    let top = make_parent(&root, "serve-bpf-again");
    let pattern = format!("^{}$", top.name);
    let modes = both_modes!(["-e", "page-faults", "--cgroups", &pattern]);
    let label = format!("/{}", top.name);
    work_in(&top.path);
    let (first, _) = grown(&modes, &(String::new(), String::new()), &label);
    assert!(first > 100.0, "the first cgroup's work: {first}");
    std::fs::remove_dir(&top.path).expect("remove the followed cgroup");
    std::fs::create_dir(&top.path).expect("make it again");
    // A scrape finds the new cgroup, which is counted from then on.
    let before = (modes.0.scrape(), modes.1.scrape());
    work_in(&top.path);
    let (bpf, perf_events) = grown(&modes, &before, &label);
    assert!(perf_events > 100.0, "the new cgroup's work: {perf_events}");
    assert_eq!(bpf, perf_events, "the BPF mode and the perf-event mode");
    drop(top);
}

/// Directories below `parent` named `u0000`..., removed (and `parent` with them) when dropped.
struct Many {
    parent: PathBuf,
    count: usize,
}

impl Drop for Many {
    fn drop(&mut self) {
        for i in 0..self.count {
            std::fs::remove_dir(self.parent.join(format!("u{i:04}"))).ok();
        }
        std::fs::remove_dir(&self.parent).ok();
    }
}

/// Cgroups nobody follows take no room in the BPF mode's map: a user makes 1,100 cgroups of
/// their own once the exporter runs and runs a task in each (more than the 1,024 cgroups the
/// map held when every cgroup that ran took a place in it), and a followed cgroup made
/// afterwards is counted as the perf-event mode counts it (before, it found the map full and
/// exported no work).
///
/// Oracle: the perf-event mode, counting the same work; perf's bperf_cgroup
/// (tools/perf/util/bpf_skel/bperf_cgroup.bpf.c), whose map holds the followed cgroups alone.
#[test]
fn cgroups_nobody_follows_take_no_room_in_the_bpf_map() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    let _alone = cpu_0_alone();
    let top = make_parent(&root, "serve-bpf-room");
    let many = Many {
        parent: top.path.join("filler"),
        count: 1100,
    };
    let followed = top.path.join("followed");
    let pattern = format!("^{}/followed$", top.name);
    let modes = both_modes!([
        "-e",
        "page-faults",
        "--cgroups",
        &pattern,
        "--max-cgroups",
        "1"
    ]);
    std::fs::create_dir(&many.parent).expect("a parent of the filler");
    for i in 0..many.count {
        std::fs::create_dir(many.parent.join(format!("u{i:04}"))).expect("a cgroup");
    }
    // A shell that moves itself into each cgroup and ends there: every one of them runs.
    let filled = Command::new("sh")
        .arg("-c")
        .arg(r#"for d in "$1"/u*; do sh -c 'echo $$ > "$1/cgroup.procs"' _ "$d" || exit 1; done"#)
        .arg("_")
        .arg(&many.parent)
        .status()
        .expect("sh");
    assert!(filled.success(), "running a task in each cgroup");
    std::fs::create_dir(&followed).expect("the followed cgroup");
    let before = (modes.0.scrape(), modes.1.scrape());
    work_in(&followed);
    let label = format!("/{}/followed", top.name);
    let (bpf, perf_events) = grown(&modes, &before, &label);
    assert!(
        perf_events > 100.0,
        "the followed cgroup's work: {perf_events}"
    );
    assert_eq!(bpf, perf_events, "the BPF mode and the perf-event mode");
    drop(many);
    drop(top);
}

/// A program that touches `BURN` fresh pages, moves itself into the cgroup whose
/// `cgroup.procs` it is given, then touches `PAGES` fresh pages and ends (as `cgexec` or a
/// script writing its own pid does): `self_move PROCS BURN PAGES`.
const SELF_MOVE: &str = r#"#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
static void touch(long pages) {
    long size = pages * 4096;
    char *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(2);
    madvise(p, size, MADV_NOHUGEPAGE);
    for (long i = 0; i < size; i += 4096) p[i] = 1;
}
int main(int argc, char **argv) {
    if (argc != 4) return 1;
    int fd = open(argv[1], O_WRONLY);
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%d\n", getpid());
    touch(atol(argv[2]));
    if (fd < 0 || write(fd, pid, len) != len) return 3;
    touch(atol(argv[3]));
    return 0;
}
"#;

/// A task that moves itself into a followed cgroup while it runs (20,000 pages touched
/// before, 1,000 after) is counted in it from the move: the BPF mode, which settles each
/// CPU's counts at the kernel's `cgroup_migrate`, gives the cgroup the perf-event mode's page
/// faults (before, it gave the cgroup the 20,000 too). Where the kernel takes no program
/// there, the BPF mode says so at start and exports `counterhal_cgroup_moves_settled 0`, and
/// the comparison is skipped.
///
/// Oracle: the perf-event mode, which the kernel switches at the move
/// (`perf_cgroup_attach`, kernel/events/core.c), counting the same run.
#[test]
fn a_task_that_moves_itself_is_counted_from_its_move() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    let _alone = cpu_0_alone();
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-self-move-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let program = compile_c(&dir, "self_move", SELF_MOVE, &["-O1"]);
    let Some(program) = program else {
        std::fs::remove_dir_all(&dir).ok();
        skip!(
            Need::Tools,
            "no C compiler (`cc`) to build the self-moving program"
        );
    };
    let top = make_parent(&root, "serve-bpf-moves");
    let pattern = format!("^{}$", top.name);
    let modes = both_modes!(["-e", "page-faults", "--cgroups", &pattern]);
    let before = (modes.0.scrape(), modes.1.scrape());
    let ran = Command::new("taskset")
        .args(["-c", "0"])
        .arg(&program)
        .arg(top.path.join("cgroup.procs"))
        .args(["20000", "1000"])
        .status()
        .expect("run the self-moving program");
    std::fs::remove_dir_all(&dir).ok();
    assert!(ran.success(), "{ran}");
    let label = format!("/{}", top.name);
    let settled = plain_value(&before.0, "counterhal_cgroup_moves_settled")
        .expect("the BPF mode says whether it settles moves");
    let (bpf, perf_events) = grown(&modes, &before, &label);
    assert!(
        (1000.0..1100.0).contains(&perf_events),
        "the perf-event mode: {perf_events} faults after the move"
    );
    if settled == 0.0 {
        let said = modes.0.said();
        assert!(
            said.contains("counterhal_cgroup_moves_settled 0"),
            "the reason said at start: {said}"
        );
        // The exporter's own line says why; the skip's reason stays one short sentence.
        let why = said
            .lines()
            .find(|l| l.contains("moves_settled"))
            .unwrap_or("");
        eprintln!("{bpf} faults against {perf_events}; the exporter said: {why}");
        skip!(
            Need::System,
            "the BPF mode settles no move here (counterhal_cgroup_moves_settled 0)"
        );
    }
    assert!(
        (bpf - perf_events).abs() <= 10.0,
        "the BPF mode {bpf} faults, the perf-event mode {perf_events}"
    );
    drop(top);
}

/// The chain `top/l2/.../lN` below `top` (level 1), removed from the bottom when dropped.
struct Chain {
    levels: Vec<PathBuf>,
}

impl Drop for Chain {
    fn drop(&mut self) {
        for level in self.levels.iter().rev() {
            std::fs::remove_dir(level).ok();
        }
    }
}

/// Cgroups deeper than the BPF mode follows are reported apart: with a chain 64 levels deep
/// matched at its last two levels, the BPF mode follows level 63 and counts there the work
/// run at level 64 (which the perf-event mode follows too), exports
/// `counterhal_cgroups_too_deep 1`, says so on standard error, and counts no open error
/// (before, it counted 15 levels and took both for open errors, exporting neither).
///
/// Oracle: the perf-event mode's counts of the level-63 cgroup for the same work (the kernel
/// counts a cgroup event for its descendants' tasks, `perf_cgroup_match`).
#[test]
fn cgroups_too_deep_for_the_bpf_mode_are_reported_apart() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    let _alone = cpu_0_alone();
    let top = make_parent(&root, "serve-bpf-deep");
    let mut chain = Chain { levels: Vec::new() };
    let mut at = top.path.clone();
    for level in 2..=64 {
        at = at.join(format!("l{level}"));
        std::fs::create_dir(&at).expect("a deeper cgroup");
        chain.levels.push(at.clone());
    }
    let pattern = format!("^{}/.*l6[34]$", top.name);
    let modes = both_modes!(["-e", "page-faults", "--cgroups", &pattern]);
    let before = (modes.0.scrape(), modes.1.scrape());
    work_in(&chain.levels[62]);
    let label = |level: usize| {
        let below = chain.levels[level - 2].strip_prefix(&root).unwrap();
        format!("/{}", below.display())
    };
    let (bpf, perf_events) = grown(&modes, &before, &label(63));
    assert!(
        perf_events > 100.0,
        "level 63 counts the work of 64: {perf_events}"
    );
    assert_eq!(
        bpf, perf_events,
        "the BPF mode and the perf-event mode at level 63"
    );
    let (bpf_body, perf_body) = (modes.0.scrape(), modes.1.scrape());
    assert_eq!(
        plain_value(&bpf_body, "counterhal_cgroups_too_deep"),
        Some(1.0)
    );
    assert_eq!(
        plain_value(&bpf_body, "counterhal_open_errors_total"),
        Some(0.0)
    );
    assert!(faults(&perf_body, &label(64)) > 100.0, "{perf_body}");
    let said = modes.0.said();
    assert!(
        said.contains("1 cgroups matched lie more than 63 levels"),
        "{said}"
    );
    drop(chain);
    drop(top);
}
