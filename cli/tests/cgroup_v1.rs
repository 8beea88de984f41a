//! `counterhal serve` on a cgroup v1 node: the perf_event controller bound to a v1 hierarchy
//! mounted for the test, where a pod's cgroups (the kubelet's cgroupfs layout), a podman
//! container (runc, podman's cgroupfs manager) and a Slurm task (the cgroup/v1 plugin's
//! layout, as a SPANK plugin mirrors it into perf_event) are counted whole and labelled as
//! their cgroup v2 twins are, with `perf stat -G` (perf 6.1) on the same cgroups the oracle;
//! and a job of a Slurm 22.05 cluster on the cgroup/v1 plugin, placed there by the SPANK
//! plugin, is counted whole by `srun --counters` and by serve.
//!
//! A test binary of its own, run alone: while the perf_event controller is bound to a v1
//! hierarchy, the kernel counts no perf event in any cgroup v2 cgroup anywhere on the
//! machine (`perf_event_open` answers ENOENT), so the tests that count cgroup v2 cgroups
//! must not run meanwhile. Cargo runs a package's test binaries one after another, never
//! two at once, so none of `main`'s tests runs beside these; and CI (`.ci/run`) runs
//! nothing beside `cargo test --workspace` that counts cgroups: the aarch64 lab counts in
//! its own guests' kernels, the current-releases lab makes its roots before the tests and
//! runs its own after them. Inside this binary the tests take turns ([`alone`]). The
//! fixture ([`PerfEventV1`]) unmounts the hierarchy when dropped, a panic included, after
//! removing every cgroup below its root (a hierarchy unmounted with a cgroup left stays
//! bound, unseen, and keeps cgroup v2 from counting; [`unmount`] waits for the kernel to
//! free the removed cgroups first). A test killed outright leaves it mounted at [`MOUNT`]:
//! the next run knows it by its name ([`OPTIONS`]) and removes it. Where perf_event is bound
//! to a v1 hierarchy already (a v1 node), the tests count in that one and leave it mounted;
//! where it cannot be mounted (no root, or a hierarchy not mounted in this process's view),
//! they are skipped.

#[macro_use]
mod common;
#[allow(dead_code)] // the cgroup/v2 cluster is main's
#[path = "slurm_cluster.rs"]
mod slurm_cluster;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use common::served::Served;
use common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use counterhal_system::System;
use slurm_cluster::{Cluster, spank_plugin};

/// Where the fixture mounts the perf_event hierarchy: where a v1 node has it, and where runc
/// looks for the v1 hierarchies (below `/sys/fs/cgroup`).
const MOUNT: &str = "/sys/fs/cgroup/perf_event";

/// The fixture's mount options: perf_event, and a name that tells its hierarchy from a
/// node's own.
const OPTIONS: &str = "perf_event,name=counterhal-test";

/// Held by each test while it mounts and counts: one v1 hierarchy at a time.
fn alone() -> MutexGuard<'static, ()> {
    static ALONE: Mutex<()> = Mutex::new(());
    ALONE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The perf_event controller's cgroup v1 hierarchy, mounted at [`MOUNT`] for a test (or the
/// node's own, where perf_event is on v1 already), and what the test made in it.
struct PerfEventV1 {
    /// Its mount point.
    root: PathBuf,
    /// Whether the fixture mounted it (and so unmounts it, after removing every cgroup in
    /// it); else only the cgroups in `made` are removed.
    mounted: bool,
    /// The cgroups the test made at the top of the hierarchy.
    made: Vec<PathBuf>,
}

impl PerfEventV1 {
    /// The hierarchy, mounted where it is not; or why not.
    fn mount() -> Result<PerfEventV1, (Need, String)> {
        if !running_as_root() {
            return Err((
                Need::Privilege,
                "mounting a cgroup hierarchy takes root".into(),
            ));
        }
        let system = System::host();
        let mounts = system.mounts().unwrap_or_default();
        if let Some(mount) = mounts.iter().find(|m| m.is_cgroup_v1_with("perf_event")) {
            // The fixture's own, left by a run killed before it dropped: to remove.
            let mounted = mount
                .super_options
                .iter()
                .any(|o| o == "name=counterhal-test");
            return Ok(PerfEventV1 {
                root: mount.mount_point.clone(),
                mounted,
                made: Vec::new(),
            });
        }
        match system.controller_hierarchy("perf_event") {
            Some(0) => {}
            Some(hierarchy) => {
                return Err((
                    Need::System,
                    format!(
                        "perf_event is bound to cgroup v1 hierarchy {hierarchy}, mounted \
                         nowhere this process sees"
                    ),
                ));
            }
            None => return Err((Need::System, "no perf_event controller here".into())),
        }
        std::fs::create_dir_all(MOUNT).map_err(|e| (Need::System, format!("{MOUNT}: {e}")))?;
        let out = Command::new("mount")
            .args(["-t", "cgroup", "-o", OPTIONS, "none", MOUNT])
            .output()
            .map_err(|e| (Need::Tools, format!("mount: {e}")))?;
        if !out.status.success() {
            std::fs::remove_dir(MOUNT).ok();
            return Err((
                Need::System,
                format!("mount -t cgroup -o {OPTIONS}: {}", stderr(&out).trim()),
            ));
        }
        Ok(PerfEventV1 {
            root: PathBuf::from(MOUNT),
            mounted: true,
            made: Vec::new(),
        })
    }

    /// Makes the cgroup `path` (below the root, with its parents), to be removed at drop.
    fn make(&mut self, path: &str) -> PathBuf {
        let top = self.root.join(path.split('/').next().unwrap_or(path));
        if !self.made.contains(&top) {
            self.made.push(top);
        }
        let dir = self.root.join(path);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        dir
    }

    /// Every cgroup below `dir`, `dir` included, the deepest first.
    fn below(dir: &Path) -> Vec<PathBuf> {
        let mut found = vec![dir.to_path_buf()];
        let mut at = 0;
        while at < found.len() {
            let entries = std::fs::read_dir(&found[at])
                .into_iter()
                .flatten()
                .flatten();
            let children: Vec<PathBuf> = entries
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            found.extend(children);
            at += 1;
        }
        found.reverse();
        found
    }

    /// Moves the tasks of cgroup `dir` to the root and removes it, a few times over while
    /// an exiting task still holds it.
    fn remove(&self, dir: &Path) {
        for _ in 0..50 {
            let tasks = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            for task in tasks.lines() {
                std::fs::write(self.root.join("cgroup.procs"), task).ok();
            }
            if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("could not remove the v1 cgroup {}", dir.display());
    }
}

impl Drop for PerfEventV1 {
    fn drop(&mut self) {
        let tops: Vec<PathBuf> = match self.mounted {
            true => PerfEventV1::below(&self.root)
                .into_iter()
                .filter(|d| d.parent() == Some(self.root.as_path()))
                .collect(),
            false => self.made.clone(),
        };
        for top in tops {
            for dir in PerfEventV1::below(&top) {
                self.remove(&dir);
            }
        }
        if !self.mounted {
            return;
        }
        // Said, not asserted: a panic while unwinding would abort the other tests' report.
        if let Err(why) = unmount(&self.root) {
            eprintln!(
                "the perf_event v1 hierarchy mounted at {} stays bound ({why}): cgroup v2 \
                 counts no perf event until it is unmounted with no cgroup left",
                self.root.display()
            );
        }
    }
}

/// The `perf_event` controller's hierarchy and its cgroups, live and dying, as
/// `/proc/cgroups` counts them (a removed cgroup counts until the kernel frees it).
fn perf_event_cgroups() -> Option<(u32, u64)> {
    let text = std::fs::read_to_string("/proc/cgroups").ok()?;
    let line = text.lines().find(|l| l.starts_with("perf_event\t"))?;
    let mut fields = line.split_whitespace().skip(1);
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

/// Waits at most 10 s for `done`.
fn waited_for(done: impl Fn() -> bool) -> bool {
    let started = Instant::now();
    while !done() {
        if started.elapsed() > Duration::from_secs(10) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Unmounts the perf_event hierarchy at `root`, its cgroups removed, so that the controller
/// goes back to cgroup v2. The kernel frees a removed cgroup a while after its `rmdir` (an
/// RCU grace period and a work item later), and destroys a v1 hierarchy at its unmount only
/// if its root has no child then, dying ones included (kernel/cgroup/cgroup.c,
/// `cgroup_kill_sb`): so it waits for `/proc/cgroups` to count the root alone first, and
/// where the hierarchy is bound after all, mounts it again (which finds the same one) and
/// retries.
fn unmount(root: &Path) -> Result<(), String> {
    for _ in 0..3 {
        if !waited_for(|| perf_event_cgroups().is_some_and(|(_, n)| n == 1)) {
            return Err(format!(
                "{:?} (hierarchy, cgroups) after 10 s",
                perf_event_cgroups()
            ));
        }
        let out = Command::new("umount").arg(root).output();
        if !out.as_ref().is_ok_and(|o| o.status.success()) {
            return Err(format!("umount: {out:?}"));
        }
        if waited_for(|| perf_event_cgroups().is_some_and(|(h, _)| h == 0)) {
            std::fs::remove_dir(root).ok();
            return Ok(());
        }
        let again = Command::new("mount")
            .args(["-t", "cgroup", "-o", OPTIONS, "none"])
            .arg(root)
            .output();
        if !again.as_ref().is_ok_and(|o| o.status.success()) {
            return Err(format!("mounted again to retry: {again:?}"));
        }
    }
    Err("bound after three unmounts".into())
}

/// The v1 hierarchy, or the test skipped where it cannot be had.
macro_rules! v1_or_skip {
    () => {{
        serve_or_skip!();
        match PerfEventV1::mount() {
            Ok(v1) => v1,
            Err((need, why)) => skip!(need, "no perf_event cgroup v1 hierarchy: {why}"),
        }
    }};
}

/// `perf stat -a -x, -e page-faults -G CGROUP` (perf 6.1), counting until [`PerfG::count`].
struct PerfG(Child);

impl PerfG {
    /// perf counting in `cgroup` (a path below the perf_event hierarchy's root), once it
    /// has started; `None` where perf 6.1 is not installed.
    fn start(cgroup: &str) -> Option<PerfG> {
        let mut command = perf_6_1().ok()?;
        let mut child = command
            .args(["stat", "-a", "-x,", "-e", "page-faults", "-G", cgroup])
            .args(["--", "sh", "-c", "echo counting; read x"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run perf");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .ok();
        assert_eq!(
            line.trim(),
            "counting",
            "perf stat -G {cgroup} did not start"
        );
        Some(PerfG(child))
    }

    /// The page faults perf counted in the cgroup.
    fn count(mut self) -> u64 {
        drop(self.0.stdin.take());
        let out = self.0.wait_with_output().expect("perf stat ends");
        let text = stderr(&out);
        text.lines()
            .find_map(|l| l.split(',').next()?.parse().ok())
            .unwrap_or_else(|| panic!("perf stat -G counted nothing: {text}"))
    }
}

/// The work, built here (`tests/data/container_work.c`): `work PAGES SECONDS_BEFORE
/// SECONDS_AFTER` touches PAGES fresh pages, then prints its own page faults.
fn work() -> PathBuf {
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-v1-work-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = include_str!("data/container_work.c");
    let Some(program) = compile_c(&dir, "work", source, &["-O2"]) else {
        panic!("no C compiler for the work (apt-get install gcc)");
    };
    program
}

/// The work touching `pages` pages after a moment, placed in `cgroup` before it touches
/// any: its own page faults.
fn work_in(cgroup: &Path, pages: &str) -> u64 {
    let child = Command::new(work())
        .args([pages, "0.3", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the work");
    std::fs::write(cgroup.join("cgroup.procs"), child.id().to_string())
        .expect("the work placed in its cgroup");
    let out = child.wait_with_output().expect("the work ends");
    assert!(out.status.success(), "the work failed");
    stdout(&out).trim().parse().expect("the work's page faults")
}

/// The series of `counterhal_event_total{event="page-faults"...}` in `body` whose labels
/// hold `holding`: each one's labels and value.
fn page_faults(body: &str, holding: &str) -> Vec<(String, f64)> {
    let prefix = "counterhal_event_total{event=\"page-faults\"";
    body.lines()
        .filter_map(|line| {
            let (labels, value) = line.strip_prefix(prefix)?.rsplit_once("} ")?;
            labels.contains(holding).then_some(())?;
            Some((labels.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// Scrapes `served` until a series holding `holding` appears (the cgroup followed): the
/// scrape; a panic after 10 s.
fn followed(served: &Served, holding: &str) -> String {
    let started = Instant::now();
    loop {
        let body = served.scrape();
        if !page_faults(&body, holding).is_empty() {
            return body;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no series holding {holding}: {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Done when: a pod's container cgroup in the kubelet's cgroupfs layout, on the perf_event
/// v1 hierarchy, is followed by `--cgroup-mode auto` (which takes the perf-event mode there,
/// saying why), labelled with its pod UID, QoS class and container ID, and counted whole:
/// the page faults `perf stat -G` counts in the same cgroup, exactly, at the container's and
/// at the pod's level. What the mode cannot see (cgroup v2's cgroups) is said once in the log
/// and by `counterhal info`.
///
/// Oracle: perf 6.1's `perf stat -a -G` (which finds the v1 perf_event mount first,
/// tools/perf/util/cgroup.c) on the same cgroups; the work's own page faults (`ru_minflt`);
/// the kubelet's cgroupfs layout (pkg/kubelet/cm/cgroup_manager_linux.go `ToCgroupfs`, made
/// by hand: no kubelet runs here).
#[test]
fn a_pods_container_on_v1_is_counted_whole_and_labelled() {
    let _alone = alone();
    let mut v1 = v1_or_skip!();
    let uid = "3f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    let id = "c1".repeat(32);
    let pod = format!("kubepods/burstable/pod{uid}");
    let container = v1.make(&format!("{pod}/{id}"));
    let served = Served::start(&["-e", "page-faults", "--cgroups", "^kubepods/"])
        .expect("serve on the v1 hierarchy");
    followed(&served, &format!("container_id=\"{id}\""));
    let Some(perf_container) = PerfG::start(&format!("{pod}/{id}")) else {
        skip!(Need::Tools, "no perf 6.1 (apt-get install linux-perf)");
    };
    let perf_pod = PerfG::start(&pod).expect("perf 6.1");
    let own = work_in(&container, "20000");
    let (by_perf, pod_by_perf) = (perf_container.count(), perf_pod.count());
    let body = served.scrape();
    let series = page_faults(&body, &format!("container_id=\"{id}\""));
    assert_eq!(series.len(), 1, "one series for the container: {series:?}");
    let (labels, counted) = &series[0];
    for label in [
        format!("cgroup=\"/{pod}/{id}\""),
        format!("pod_uid=\"{uid}\""),
        "qos_class=\"burstable\"".to_string(),
    ] {
        assert!(labels.contains(&label), "{label} in {labels}");
    }
    let pod_series = page_faults(&body, &format!("cgroup=\"/{pod}\""));
    assert_eq!(
        pod_series.len(),
        1,
        "one series for the pod: {pod_series:?}"
    );
    eprintln!(
        "v1 pod: the work's own {own} page faults; serve {counted} (pod {}), perf stat -G \
         {by_perf} (pod {pod_by_perf})",
        pod_series[0].1
    );
    assert_eq!(
        *counted, by_perf as f64,
        "the container: serve against perf -G"
    );
    assert_eq!(
        pod_series[0].1, pod_by_perf as f64,
        "the pod: serve against perf -G"
    );
    assert!(
        *counted >= 20000.0 && *counted <= own as f64 * 1.05,
        "the container counted {counted}, the work {own}"
    );
    let said = said_within(&served, "cgroup v1 hierarchy");
    assert!(said.contains("perf-events"), "the mode and why: {said}");
    if System::host().cgroup2_mount().is_some() {
        // Once, though every scrape since found the cgroups again.
        let unseen = "msg=\"cgroups not counted\" reason=\"cgroup v2's cgroups";
        let said = said_within(&served, unseen);
        assert_eq!(said.matches(unseen).count(), 1, "{said}");
        let info = stdout(&counterhal(&["info"]));
        let follows = format!("perf-event mode follows {} (cgroup v1", v1.root.display());
        assert!(info.contains(&follows), "{info}");
        assert!(info.contains("not counted: cgroup v2's cgroups"), "{info}");
    }
    drop(served);
    // The BPF mode counts cgroup v2's cgroups, and says the v1 hierarchy is not followed.
    let args = [
        "-e",
        "page-faults",
        "--cgroups",
        "^kubepods/",
        "--cgroup-mode",
        "bpf",
    ];
    if let Ok(bpf) = Served::start(&args) {
        let body = bpf.scrape();
        assert!(page_faults(&body, &id).is_empty(), "{body}");
        let said = said_within(&bpf, "is not followed");
        assert_eq!(said.matches("is not followed").count(), 1, "{said}");
    }
    drop(v1);
}

/// What `served` said once it says `what`; a panic after 5 s.
fn said_within(served: &Served, what: &str) -> String {
    let started = Instant::now();
    loop {
        let said = served.said();
        if said.contains(what) {
            return said;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "not said: {what}: {said}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The containers' cgroups in the perf_event hierarchy, as podman's cgroupfs manager has
/// runc make them.
const PODMAN: &str = r"^libpod_parent(/libpod-[0-9a-f]{64})?$";

/// Done when: a podman container (runc, the cgroupfs manager) on a node whose perf_event
/// controller is on a v1 hierarchy gets its perf_event cgroup there from runc
/// (`libpod_parent/libpod-<ID>`, as its cgroup v2 one), which serve labels with the
/// container's ID; its parent, followed before the container started, is counted whole:
/// the page faults `perf stat -G libpod_parent` counts, exactly.
///
/// Oracle: podman 4.3.1 with runc 1.1.5 (Debian 12) making the cgroups and placing the
/// container's process (runc joins every v1 hierarchy mounted); perf 6.1's `perf stat -a -G`
/// on the parent; the container's work's own page faults (`ru_minflt`).
#[test]
fn a_podman_container_on_v1_is_counted_whole_and_labelled() {
    let _alone = alone();
    for tool in ["podman", "runc"] {
        if Command::new(tool).arg("--version").output().is_err() {
            skip!(
                Need::Tools,
                "{tool} is not installed (apt-get install podman runc)"
            );
        }
    }
    let mut v1 = v1_or_skip!();
    let image = match common::podman::Image::make() {
        Ok(image) => image,
        Err((need, why)) => skip!(need, "{why}"),
    };
    v1.make("libpod_parent");
    let served = Served::start(&["-e", "page-faults", "--cgroups", PODMAN]).expect("serve on v1");
    followed(&served, "cgroup=\"/libpod_parent\"");
    let Some(perf) = PerfG::start("libpod_parent") else {
        skip!(Need::Tools, "no perf 6.1 (apt-get install linux-perf)");
    };
    // The work waits half a second, so that its cgroup is followed before its pages.
    let (id, out) = image.run(&["20000", "0.5", "0"]);
    assert!(out.status.success(), "podman run: {}", stderr(&out));
    let own: f64 = stdout(&out).trim().parse().expect("the work's page faults");
    let by_perf = perf.count();
    let body = served.scrape();
    let container = page_faults(&body, &format!("container_id=\"{id}\""));
    assert_eq!(container.len(), 1, "one series for container {id}: {body}");
    let (labels, counted) = &container[0];
    let cgroup = format!("cgroup=\"/libpod_parent/libpod-{id}\"");
    assert!(
        labels.contains(&cgroup),
        "runc's v1 cgroup {cgroup}: {labels}"
    );
    let parent = page_faults(&body, "cgroup=\"/libpod_parent\"");
    assert_eq!(parent.len(), 1, "{parent:?}");
    eprintln!(
        "v1 podman: the work's own {own} page faults; serve {counted} in {cgroup}, \
         libpod_parent {} against perf stat -G {by_perf}",
        parent[0].1
    );
    assert_eq!(
        parent[0].1, by_perf as f64,
        "libpod_parent: serve against perf -G"
    );
    assert!(
        *counted >= 20000.0 && *counted <= parent[0].1,
        "the container counted {counted}, its parent {}",
        parent[0].1
    );
    drop(served);
    drop(v1);
}

/// Done when: a Slurm task's cgroup in the cgroup/v1 plugin's layout, mirrored into the
/// perf_event hierarchy as a SPANK plugin places tasks (`slurm_<node>/uid_0/job_1/step_0/
/// task_0`), is labelled with its job, step and task, its step and job with theirs, and
/// counted whole: the page faults `perf stat -G` counts in the task's cgroup, exactly, at
/// each level.
///
/// Oracle: Slurm's src/plugins/cgroup/v1/xcgroup.c and cgroup_v1.c (the layout, made by
/// hand: the plugin makes no perf_event cgroup, and no SPANK plugin runs here); perf 6.1's
/// `perf stat -a -G` on the task's cgroup.
#[test]
fn a_slurm_task_in_the_v1_layout_is_labelled_with_its_job_step_and_task() {
    let _alone = alone();
    let mut v1 = v1_or_skip!();
    let task = "slurm_cn1/uid_0/job_1/step_0/task_0";
    let dir = v1.make(task);
    let served =
        Served::start(&["-e", "page-faults", "--cgroups", "^slurm_cn1/"]).expect("serve on v1");
    followed(&served, "slurm_task=\"0\"");
    let Some(perf) = PerfG::start(task) else {
        skip!(Need::Tools, "no perf 6.1 (apt-get install linux-perf)");
    };
    let own = work_in(&dir, "10000");
    let by_perf = perf.count();
    let body = served.scrape();
    let mut levels = Vec::new();
    for (cgroup, step, task_label) in [
        ("slurm_cn1/uid_0/job_1", "", ""),
        ("slurm_cn1/uid_0/job_1/step_0", "0", ""),
        (task, "0", "0"),
    ] {
        let series = page_faults(&body, &format!("cgroup=\"/{cgroup}\""));
        assert_eq!(series.len(), 1, "{cgroup}: {series:?}");
        let (labels, counted) = &series[0];
        let mut wanted = vec!["slurm_job_id=\"1\"".to_string()];
        if !step.is_empty() {
            wanted.push(format!("slurm_step=\"{step}\""));
        }
        if !task_label.is_empty() {
            wanted.push(format!("slurm_task=\"{task_label}\""));
        }
        for label in wanted {
            assert!(labels.contains(&label), "{cgroup}: {label} in {labels}");
        }
        assert!(
            step.is_empty() != labels.contains("slurm_step="),
            "{cgroup}: {labels}"
        );
        assert_eq!(*counted, by_perf as f64, "{cgroup}: serve against perf -G");
        levels.push(*counted);
    }
    eprintln!("v1 Slurm task: the work's own {own} page faults; serve {levels:?}, perf {by_perf}");
    assert!(
        by_perf >= 10000 && by_perf as f64 <= own as f64 * 1.05,
        "{by_perf} of {own}"
    );
    drop(served);
    drop(v1);
}

/// Done when: a Slurm job on a node whose slurmd runs Slurm's cgroup/v1 plugin, with the
/// perf_event controller on a v1 hierarchy and the SPANK plugin (spank_counterhal.so)
/// loaded, has its task placed by the plugin in `slurm/uid_0/job_J/step_0/task_0` of the
/// perf_event hierarchy (beside the cgroup/v1 plugin's own `freezer:/slurm_<node>/uid_0/
/// job_J/step_0`), which is gone after the step; `srun --counters=page-faults WORK` prints
/// the page faults of a work that touches 50000 pages at the step's end, and `counterhal
/// serve --cgroup-mode perf-events` exports the job's cgroup (labelled `slurm_job_id`, with
/// no step) counted whole, scraped after the job ended, and writes the job's record when the
/// plugin removes its cgroups (`--records`), which `counterhal jobs --slurm-job J` prints:
/// all three within 1% of the work's own count.
///
/// Oracle: Slurm 22.05 (Debian 12's slurm-wlm: slurmctld, slurmd on cgroup/v1, slurmstepd
/// and srun loading the plugin through plugstack.conf) placing and reaping the task, the
/// kernel's /proc/PID/cgroup of it, and the work's own page faults (`ru_minflt` of
/// getrusage).
#[test]
fn a_slurm_job_on_cgroup_v1_is_counted_whole_by_srun_and_serve() {
    let _alone = alone();
    let v1 = v1_or_skip!();
    let plugstack = format!(
        "required {} counterhal={}\n",
        spank_plugin().display(),
        bin().display()
    );
    let work = work();
    let cluster = match Cluster::start_on_v1(Some(&plugstack)) {
        Ok(cluster) => cluster,
        Err((need, why)) => skip!(need, "{why}"),
    };
    // The job's record, written by serve when the plugin removes the job's cgroups.
    let journal = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-v1-records-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&journal);
    let journal_arg = journal.to_string_lossy().into_owned();
    let args = [
        "-e",
        "page-faults",
        "--cgroup-mode",
        "perf-events",
        "--cgroups",
        "^slurm/",
        "--records",
        &journal_arg,
    ];
    let served = Served::start(&args).expect("serve on v1");

    let placed = cluster
        .command("srun")
        .args(["sh", "-c", "echo $SLURM_JOB_ID; cat /proc/self/cgroup"])
        .output()
        .expect("srun runs");
    assert!(placed.status.success(), "srun: {}", stderr(&placed));
    let said = stdout(&placed);
    let placed_job = said.lines().next().unwrap_or_default().trim().to_string();
    let line_of = |controller: &str| {
        said.lines()
            .find(|l| {
                l.split(':')
                    .nth(1)
                    .is_some_and(|c| c.split(',').any(|c| c == controller))
            })
            .unwrap_or_else(|| panic!("no {controller} line: {said}"))
    };
    let freezer = line_of("freezer");
    assert!(
        freezer.contains(&format!("/uid_0/job_{placed_job}/step_0")),
        "the cgroup/v1 plugin's freezer cgroup: {freezer}"
    );
    let expected = format!(":/slurm/uid_0/job_{placed_job}/step_0/task_0");
    let perf_event = line_of("perf_event");
    assert!(
        perf_event.ends_with(&expected),
        "{perf_event}, not {expected}"
    );
    let job_dir = v1.root.join(format!("slurm/uid_0/job_{placed_job}"));
    assert!(!job_dir.exists(), "{} is left", job_dir.display());

    // The work waits half a second, so that serve follows the job's cgroup before its pages.
    let work = work.to_str().unwrap();
    let counted = cluster
        .command("srun")
        .args(["--counters=page-faults", work, "50000", "0.5", "0"])
        .output()
        .expect("srun runs");
    assert!(counted.status.success(), "srun: {}", stderr(&counted));
    let own: f64 = stdout(&counted)
        .trim()
        .parse()
        .expect("the work's page faults");
    let text = stderr(&counted);
    let job = text
        .split_once("(job ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no job in the header: {text}"))
        .to_string();
    let by_srun: f64 = text
        .lines()
        .find(|l| l.trim_end().ends_with("page-faults"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no page-faults line: {text}"));
    let body = served.scrape();
    let series: Vec<(String, f64)> = page_faults(&body, &format!("slurm_job_id=\"{job}\""))
        .into_iter()
        .filter(|(labels, _)| !labels.contains("slurm_step="))
        .collect();
    assert_eq!(series.len(), 1, "one series for job {job}: {body}");
    let (labels, by_serve) = &series[0];
    assert!(
        labels.contains(&format!("cgroup=\"/slurm/uid_0/job_{job}\"")),
        "{labels}"
    );
    eprintln!(
        "v1 Slurm: job {placed_job} in {freezer} and {perf_event}; job {job}: the work's own \
         {own} page faults, srun --counters {by_srun}, serve {by_serve}"
    );
    assert!(
        (by_srun - own).abs() <= own * 0.01,
        "srun --counters {by_srun}, the work {own}"
    );
    assert!(
        (by_serve - own).abs() <= own * 0.01,
        "serve {by_serve}, the work {own}"
    );
    // The job's record, once serve has seen its cgroup go, printed as stat prints a run.
    let started = Instant::now();
    let printed = loop {
        let printed = counterhal(&["jobs", "-x,", "--slurm-job", &job, &journal_arg]);
        if printed.status.success() || started.elapsed() > Duration::from_secs(30) {
            break printed;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        printed.status.success(),
        "no record of job {job}: {}",
        stderr(&printed)
    );
    let in_record: f64 = stdout(&printed)
        .lines()
        .find_map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            (fields.get(2) == Some(&"page-faults")).then(|| fields[0].parse().ok())?
        })
        .unwrap_or_else(|| panic!("no page-faults in job {job}'s record: {}", stdout(&printed)));
    eprintln!("v1 Slurm: job {job}'s record {in_record}");
    assert!(
        (in_record - own).abs() <= own * 0.01,
        "the record {in_record}, the work {own}"
    );
    drop(served);
    drop(cluster);
    drop(v1);
    std::fs::remove_dir_all(&journal).ok();
}

/// Done when: on a hybrid host whose perf_event controller is bound to a cgroup v1
/// hierarchy, where the perf-event mode can count no cgroup2 cgroup (the kernel takes only a
/// cgroup of perf_event's hierarchy: ENOENT), the BPF mode (`--cgroup-mode bpf`; `auto`
/// takes the perf-event mode on the v1 hierarchy there, as the tests above show) counts one,
/// its program reading each task's cgroup2 cgroup at every context switch: the work's page
/// faults are counted (its own, and at most 100 more: GNU time's start in the cgroup). (With the program at `cgroup-switches`, which the kernel
/// raises only where the v1 perf_event cgroups differ, the BPF mode refused to start there.)
///
/// Oracle: the work's own page faults as the kernel counts them for it, `ru_minflt` of its
/// `getrusage` (`/usr/bin/time -f %R`, GNU time).
#[test]
fn a_v1_perf_event_hierarchy_leaves_the_bpf_mode_counting() {
    let _alone = alone();
    serve_or_skip!();
    let Ok(unified) = counterhal::cgroups::unified_root(&counterhal::system::System::host()) else {
        skip!(Need::System, "no cgroup2 file system is mounted");
    };
    if !Path::new("/usr/bin/time").exists() {
        skip!(Need::Tools, "no GNU time (apt-get install time)");
    }
    let Some(cgroup) = counterhal_conformance::fixtures::TestCgroup::new(&unified, "v1-bpf") else {
        skip!(
            Need::Privilege,
            "cannot make a cgroup2 cgroup below {}",
            unified.display()
        );
    };
    let name = cgroup.name.clone();
    let pattern = format!("^{name}$");
    let args = [
        "-e",
        "page-faults",
        "--cgroups",
        &pattern,
        "--cgroup-mode",
        "bpf",
    ];
    // Whether the BPF mode counts here at all, asked before perf_event is bound to v1.
    match Served::start(&args) {
        Ok(bpf) => drop(bpf),
        Err(said) => skip!(Need::System, "the BPF mode cannot count here: {said}"),
    }
    let v1 = v1_or_skip!();
    let bpf = Served::start(&args).expect("serve in the BPF mode beside the v1 hierarchy");
    let before = bpf.scrape();
    let mut work = Command::new("sh")
        .args([
            "-c",
            "read _; exec /usr/bin/time -f %R dd if=/dev/zero of=/dev/null bs=4M count=100 \
             status=none",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the work");
    // Moved while it waits in `read`, past its own start.
    let pid = work.id();
    assert!(
        waited_for(|| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| Some(s[s.rfind(')')? + 2..].starts_with('S')))
                .unwrap_or(false)
        }),
        "the work's shell never waited"
    );
    std::fs::write(cgroup.path.join("cgroup.procs"), pid.to_string()).expect("the work placed");
    {
        use std::io::Write;
        let _ = work.stdin.take().expect("its input").write_all(b"go\n");
    }
    let done = work.wait_with_output().expect("the work ends");
    let after = bpf.scrape();
    drop(bpf);
    drop(v1);
    let own: f64 = stderr(&done).trim().parse().expect("GNU time's %R");
    let mode = after
        .lines()
        .find(|l| l.starts_with("counterhal_cgroup_mode{"))
        .unwrap_or_default();
    assert!(mode.contains("mode=\"bpf\""), "{after}");
    let faults = |body: &str| {
        page_faults(body, &format!("cgroup=\"/{name}\""))
            .first()
            .map_or(0.0, |(_, value)| *value)
    };
    let counted = faults(&after) - faults(&before);
    eprintln!("BPF mode beside a v1 perf_event hierarchy: {counted} counted, the work's {own}");
    assert!(
        counted >= own && counted < own + 100.0,
        "{name}: {counted} page faults counted, the work made {own}"
    );
    drop(cgroup);
}
