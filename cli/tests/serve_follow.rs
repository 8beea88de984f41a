//! serve follows a cgroup when it appears, not at the next scrape, and keeps a removed
//! cgroup's last counts until a scrape has exported them, in both modes: a task placed in a
//! cgroup made moments before, with no scrape between, is counted whole, and so is a job
//! whose cgroup is gone before the next scrape. (Before, a cgroup was looked up only at a
//! scrape: a task placed 2 s after its cgroup was made, with no scrape between, was counted
//! 0, and whatever ran after the last scrape of a removed cgroup was never exported.)

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;
use crate::serve_bpf::{
    Served, WORK, cgroup_value, make_parent, perf_for_each_cgroup, run_in, sleeping_child,
};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The page faults of `label` in a scrape, 0 where it has no series.
fn faults(body: &str, label: &str) -> f64 {
    cgroup_value(body, "counterhal_event_total", "page-faults", label).unwrap_or(0.0)
}

/// Done when: a task placed in a cgroup made 0.3 s and 2 s earlier, with no scrape between, is
/// counted within 1% of `perf stat -G` in both modes; and once its cgroup is removed, the next
/// scrape still exports its last counts, the same in both modes within 1%.
///
/// Oracle: perf 6.1's `perf stat -a --for-each-cgroup` (one perf event per event, CPU and
/// cgroup, as `-G` opens them), started on the cgroup before the task is placed, counting the
/// same run.
#[test]
fn a_cgroup_made_between_scrapes_is_counted_from_its_first_task() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    perf_or_skip!();
    let _cpu_0 = cpu_0_alone();
    let parent = make_parent(&root, "serve-follow");
    let pattern = format!("^{}/", parent.name);
    let args = ["-e", "page-faults", "--cgroups", &pattern];
    let bpf = crate::bpf_or_skip!(args);
    let mut perf_events_args = args.to_vec();
    perf_events_args.extend(["--cgroup-mode", "perf-events"]);
    let perf_events = Served::start(&perf_events_args).expect("serve in the perf-event mode");
    for (run, wait) in [Duration::from_millis(300), Duration::from_secs(2)]
        .into_iter()
        .enumerate()
    {
        // Scraped before the cgroup exists: the next scrape comes after its work.
        bpf.scrape();
        perf_events.scrape();
        let cgroup = parent.path.join(format!("job{run}"));
        std::fs::create_dir(&cgroup).expect("a job's cgroup");
        std::thread::sleep(wait);
        let name = cgroup.strip_prefix(&root).unwrap().display().to_string();
        let perf_text = perf_for_each_cgroup("page-faults", std::slice::from_ref(&name), &cgroup);
        let theirs: f64 = perf_text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|f| f.get(2) == Some(&"page-faults"))
            .and_then(|f| f[0].parse().ok())
            .unwrap_or_else(|| panic!("perf gave no page-faults: {perf_text}"));
        assert!(theirs > 100.0, "perf counted {theirs}");
        let label = format!("/{name}");
        let mut counted = Vec::new();
        for (mode, served) in [("bpf", &bpf), ("perf-events", &perf_events)] {
            let ours = faults(&served.scrape(), &label);
            assert!(
                (ours - theirs).abs() <= 0.01 * theirs,
                "{mode}, a task placed {wait:?} after its cgroup was made: {ours} page \
                 faults, perf -G counted {theirs}"
            );
            counted.push(ours);
        }
        // The same work again, and the cgroup removed before the next scrape: that scrape
        // exports its last counts, the second work's included.
        let mut work = Command::new(ON_CPU_0[0])
            .args(&ON_CPU_0[1..])
            .args(["sh", "-c", WORK])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("more work");
        let shell = sleeping_child(work.id(), true);
        run_in(&cgroup, shell, work.stdin.take().expect("its input"));
        assert!(work.wait().expect("the work ends").success());
        let waited = std::time::Instant::now();
        while std::fs::remove_dir(&cgroup).is_err() && waited.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!cgroup.exists(), "the job's cgroup was not removed");
        std::thread::sleep(Duration::from_millis(200));
        let after: Vec<f64> = [&bpf, &perf_events]
            .into_iter()
            .zip(counted)
            .map(|(served, before)| faults(&served.scrape(), &label) - before)
            .collect();
        // The same command, started by this process rather than perf: its page faults are
        // not the first run's (1,103 against perf's 1,168 to 1,251 under load here, in both
        // the old program and this one), so the modes are held to each other, and to 0.85
        // of the first run.
        assert!(
            (after[0] - after[1]).abs() <= 0.01 * after[1] && after[1] >= 0.85 * theirs,
            "the removed cgroup's last work: {} page faults exported in the BPF mode, {} in \
             the perf-event mode; the first work counted {theirs}",
            after[0],
            after[1]
        );
    }
    drop(parent);
}

/// How many pods come and go in the churn test, one every [`EVERY`], each living about 2 s.
const PODS: usize = 30;
const EVERY: Duration = Duration::from_millis(1200);

/// The least share of the slice's page faults the pods' sum reaches in the perf-event mode,
/// whose counting of a pod starts at the follower's look (0.967 seen beside a busy CI run).
const PERF_EVENTS_LEAST: f64 = 0.90;

/// A pod's work: about 2 s of page faults, in four bursts.
const POD_WORK: &str = "read _; for i in 1 2 3 4; do dd if=/dev/zero of=/dev/null bs=4M count=25 \
                        status=none; sleep 0.4; done";

/// Done when: under a churn of 50 pods a minute (one every 1.2 s, each living 2 s, made and
/// populated at once as a runtime does, removed at its end), scraped every 5 s as Prometheus
/// scrapes, every pod is seen by a scrape (30 of 30) and the pods' page faults sum to at least
/// 0.99 of their parent slice's in the BPF mode, which counts a new cgroup from its first
/// context switch. (Before: 2 s pods were seen 12 to 17 times of 30, and the sum was 0.87 to
/// 0.89 of the slice's.) The perf-event mode counts a pod from the follower's look, which a
/// task placed at once outruns by as long as the look waits for a CPU: 1.000 on an idle
/// machine, 0.967 beside a busy CI's tests; it is held to [`PERF_EVENTS_LEAST`] so that a
/// busy machine does not fail it, and what it misses at a pod's start is the perf-event
/// mode's known shortfall (docs/serve.md, `--cgroups`).
///
/// Oracle: the kernel's own count of the parent slice's descendants (its series in the same
/// exporter: a cgroup's events count its descendants', `perf_cgroup_match`), and the pods'
/// directories as the test made them.
#[test]
fn pods_that_come_and_go_between_scrapes_are_each_counted_whole() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    let slice = make_parent(&root, "serve-churn");
    let pattern = format!("^{}(/|$)", slice.name);
    let args = ["-e", "page-faults", "--cgroups", &pattern];
    let bpf = crate::bpf_or_skip!(args);
    let mut perf_events_args = args.to_vec();
    perf_events_args.extend(["--cgroup-mode", "perf-events"]);
    let perf_events = Served::start(&perf_events_args).expect("serve in the perf-event mode");
    let exporters = [("bpf", &bpf), ("perf-events", &perf_events)];
    let first: Vec<String> = exporters.iter().map(|(_, s)| s.scrape()).collect();
    let scrapes = std::sync::Mutex::new(vec![Vec::new(); exporters.len()]);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(5));
                let bodies: Vec<String> = exporters.iter().map(|(_, s)| s.scrape()).collect();
                let mut scrapes = scrapes.lock().unwrap();
                for (kept, body) in scrapes.iter_mut().zip(bodies) {
                    kept.push(body);
                }
            }
        });
        let mut running = Vec::new();
        for pod in 0..PODS {
            let cgroup = slice.path.join(format!("pod{pod:02}"));
            let mut work = Command::new("sh")
                .args(["-c", POD_WORK])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .expect("a pod's work");
            let shell = sleeping_child(work.id(), true);
            // Made and populated at once, as runc makes a container's cgroup.
            std::fs::create_dir(&cgroup).expect("a pod's cgroup");
            run_in(&cgroup, shell, work.stdin.take().expect("its input"));
            running.push((cgroup, work));
            std::thread::sleep(EVERY);
            running.retain_mut(|(cgroup, work)| match work.try_wait() {
                Ok(Some(_)) => {
                    std::fs::remove_dir(&*cgroup).ok();
                    false
                }
                _ => true,
            });
        }
        for (cgroup, mut work) in running {
            work.wait().ok();
            let waited = std::time::Instant::now();
            while std::fs::remove_dir(&cgroup).is_err() && waited.elapsed() < Duration::from_secs(2)
            {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    std::thread::sleep(Duration::from_millis(200));
    let mut scrapes = scrapes.into_inner().unwrap();
    for (kept, (_, served)) in scrapes.iter_mut().zip(exporters) {
        kept.push(served.scrape());
    }
    for ((mode, _), (kept, first)) in exporters.iter().zip(scrapes.iter().zip(&first)) {
        let parent = format!("/{}", slice.name);
        let slice_total = faults(kept.last().unwrap(), &parent) - faults(first, &parent);
        let mut seen = 0;
        let mut pods_total = 0.0;
        for pod in 0..PODS {
            let label = format!("/{}/pod{pod:02}", slice.name);
            let most = kept
                .iter()
                .map(|body| faults(body, &label))
                .fold(0.0, f64::max);
            if kept.iter().any(|body| {
                cgroup_value(body, "counterhal_event_total", "page-faults", &label).is_some()
            }) {
                seen += 1;
            }
            pods_total += most;
        }
        eprintln!(
            "{mode}: {seen} of {PODS} pods seen; their page faults {pods_total}, the slice's \
             {slice_total} ({:.4})",
            pods_total / slice_total
        );
        assert_eq!(seen, PODS, "{mode}: pods seen by a scrape");
        let least = match *mode {
            "perf-events" => PERF_EVENTS_LEAST,
            _ => 0.99,
        };
        assert!(
            pods_total >= least * slice_total && slice_total > 0.0,
            "{mode}: the pods' sum {pods_total} of the slice's {slice_total}"
        );
    }
    drop(slice);
}

/// How many jobs the deep-chain test makes at once.
const CHAINS: usize = 8;

/// Done when: in the BPF mode, a task placed three levels below a cgroup made at the same
/// moment (`job_N/step_0/user/task_0`, as slurmstepd makes them, the task running at once) is
/// counted whole at the job's level and its own: at least 0.99 of the page faults its work
/// counted for itself, for each of 8 jobs made together. (Before, on this 2-CPU machine with
/// four busy loops beside: a parent adopted only its children and the levels below were
/// counted from the follower's look, which a task that starts at once outruns: a task's level
/// counted 17,256 to 17,980 of its 20,122 page faults in each of three runs; in CI a job made
/// by slurmd was counted 6,987 of its task's 20,076.)
///
/// Oracle: the kernel's count of each task's own page faults (`ru_minflt`, which the work
/// prints).
#[test]
fn a_task_placed_levels_below_a_new_cgroup_is_counted_whole() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    let slice = make_parent(&root, "serve-chain");
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-chain-work-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let work = compile_c(
        &dir,
        "work",
        include_str!("data/container_work.c"),
        &["-O2"],
    )
    .expect("the tasks' work builds");
    let pattern = format!("^{}/", slice.name);
    let bpf = crate::bpf_or_skip!(["-e", "page-faults", "--cgroups", &pattern]);
    bpf.scrape();
    let script = format!("read _; exec {} 20000 0 0", work.display());
    let (mut jobs, mut tasks) = (Vec::new(), Vec::new());
    for job in 0..CHAINS {
        let mut task = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("a task");
        let shell = sleeping_child(task.id(), true);
        let job_dir = slice.path.join(format!("job_{job}"));
        let leaf = job_dir.join("step_0/user/task_0");
        // Made and populated at once, as slurmstepd makes a step's cgroups.
        std::fs::create_dir_all(&leaf).expect("a job's cgroups");
        run_in(&leaf, shell, task.stdin.take().expect("its input"));
        jobs.push((job_dir, leaf));
        tasks.push(task);
    }
    let own: Vec<f64> = tasks
        .into_iter()
        .map(|task| {
            let out = task.wait_with_output().expect("the task ends");
            stdout(&out)
                .trim()
                .parse()
                .expect("the task's own page faults")
        })
        .collect();
    let body = bpf.scrape();
    for ((job_dir, leaf), own) in jobs.iter().zip(&own) {
        for cgroup in [job_dir, leaf] {
            let label = format!("/{}", cgroup.strip_prefix(&root).unwrap().display());
            let counted = faults(&body, &label);
            eprintln!("{label}: its task's own {own}, the BPF mode {counted}");
            assert!(
                counted >= 0.99 * own && counted < own * 1.1,
                "{label}: the BPF mode counted {counted}, its task's work {own}"
            );
        }
    }
    for (job_dir, leaf) in &jobs {
        let mut at = leaf.clone();
        while at.starts_with(job_dir) {
            std::fs::remove_dir(&at).ok();
            at.pop();
        }
    }
    drop(slice);
}

/// Done when: in the perf-event mode, which counts a cgroup from the open of its counters as
/// `perf stat -G` does, each cgroup says whether a task was already in it (or below it) when
/// they opened: `counterhal_cgroup_counted_late` 1 for one that held a task before serve
/// followed it, whose counts then miss what that task did before its `_created`, and 0 for
/// one made empty and filled afterwards, counted from its first task. The BPF mode, which
/// counts an adopted cgroup from its first context switch, writes no such family.
///
/// Oracle: the kernel's cgroup v2 `cgroup.events` (`populated`), read by this test as the
/// kernel shows it, and the tasks this test placed itself.
#[test]
fn a_cgroup_says_whether_a_task_ran_before_its_counters_opened() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    let parent = make_parent(&root, "serve-late");
    let busy = parent.path.join("busy");
    let empty = parent.path.join("empty");
    std::fs::create_dir(&busy).expect("a cgroup");
    std::fs::create_dir(&empty).expect("a cgroup");
    let mut sleeper = Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("a task to place");
    std::fs::write(busy.join("cgroup.procs"), sleeper.id().to_string()).expect("placed");
    let populated = |dir: &std::path::Path| {
        std::fs::read_to_string(dir.join("cgroup.events"))
            .unwrap()
            .lines()
            .any(|l| l == "populated 1")
    };
    assert!(populated(&busy) && !populated(&empty));
    let pattern = format!("^{}/", parent.name);
    let args = [
        "-e",
        "page-faults",
        "--cgroups",
        &pattern,
        "--cgroup-mode",
        "perf-events",
    ];
    let served = Served::start(&args).expect("serve in the perf-event mode");
    let late = |body: &str, cgroup: &std::path::Path| {
        let label = format!("/{}", cgroup.strip_prefix(&root).unwrap().display());
        let prefix = format!("counterhal_cgroup_counted_late{{cgroup=\"{label}\"}} ");
        body.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map(|v| v.trim().to_string())
    };
    let body = served.scrape();
    let (busy_late, empty_late) = (late(&body, &busy), late(&body, &empty));
    // The empty one filled once it is counted: still counted from its first task.
    let placed = std::fs::write(empty.join("cgroup.procs"), sleeper.id().to_string());
    let filled = served.scrape();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    placed.expect("placed");
    assert_eq!(busy_late.as_deref(), Some("1"), "{body}");
    assert_eq!(empty_late.as_deref(), Some("0"), "{body}");
    assert_eq!(late(&filled, &empty).as_deref(), Some("0"), "{filled}");
    drop(served);
    drop(sleeper);
    let bpf = crate::bpf_or_skip!(["-e", "page-faults", "--cgroups", &pattern]);
    assert!(!bpf.scrape().contains("counterhal_cgroup_counted_late"));
    drop(parent);
}
