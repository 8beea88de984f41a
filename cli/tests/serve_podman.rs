//! Containers made by a real OCI runtime, not cgroups laid out by hand: Debian's podman with
//! runc makes each container's cgroup and places its process there, as it does on a host
//! (here `libpod_parent/libpod-<ID>` of the cgroup2 mount, its cgroupfs manager's, or
//! `machine.slice/libpod-<ID>.scope` with systemd's). serve follows each container when its
//! cgroup appears, labels it with podman's container ID, and counts it in both modes, a
//! container that lives a second included, whose cgroup is gone before the next scrape.

use std::process::{Command, Output};

use crate::common::podman::Image;
use crate::common::*;
use crate::serve_bpf::Served;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The containers' cgroups, as podman's two cgroup managers name them.
const PATTERN: &str = r"^(libpod_parent|machine\.slice)/libpod-[0-9a-f]{64}(\.scope)?$";

/// The test's image and serve following the containers' cgroups in the BPF and the
/// perf-event mode, each scraped once; or the test skips, saying why (podman or runc not
/// installed, no image, no BPF mode here).
macro_rules! podman_and_both_modes_or_skip {
    () => {{
        for tool in ["podman", "runc"] {
            if Command::new(tool).arg("--version").output().is_err() {
                skip!(
                    Need::Tools,
                    "{tool} is not installed (apt-get install podman runc)"
                );
            }
        }
        let image = match Image::make() {
            Ok(image) => image,
            Err((need, why)) => skip!(need, "{why}"),
        };
        let args = ["-e", "page-faults", "--cgroups", PATTERN];
        let bpf = crate::bpf_or_skip!(args);
        let mut perf_events_args = args.to_vec();
        perf_events_args.extend(["--cgroup-mode", "perf-events"]);
        let perf_events = Served::start(&perf_events_args).expect("serve in the perf-event mode");
        bpf.scrape();
        perf_events.scrape();
        (image, bpf, perf_events)
    }};
}

/// The page faults of the series labelled with container `id`, summed (one series a
/// container: its cgroup's); `None` where there is none.
fn container_faults(body: &str, id: &str) -> Option<f64> {
    let label = format!("container_id=\"{id}\"");
    let values: Vec<f64> = body
        .lines()
        .filter(|l| l.starts_with("counterhal_event_total{event=\"page-faults\""))
        .filter(|l| l.contains(&label))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// Done when: a container made by podman with runc, and one that lives 1 s, are labelled
/// with their container ID and counted whole in the BPF mode (within 1% of the page faults
/// their work counted for itself, and at most 5% over them: runc's exec), with no scrape
/// between the container's start and its end. runc makes the container's cgroup and places its
/// process there within microseconds; the BPF mode counts the cgroup from its first context
/// switch (its parent, `libpod_parent`, adopts its children), where the perf-event mode, as
/// `perf stat -G`, counts only from its events' open, a few milliseconds in (here 20,980 of
/// a container's 21,142): it is held to count no more than the BPF mode, and something.
///
/// Oracle: podman 4.3.1 with runc 1.1.5 (Debian 12) making the cgroups and placing the
/// processes; the kernel's count of the work's own page faults (`ru_minflt`), which the
/// container prints.
#[test]
fn podman_containers_are_labelled_and_counted_whole() {
    let _alone = crate::common::bpf_alone();
    let _root = crate::unified_or_skip!();
    let (image, bpf, perf_events) = podman_and_both_modes_or_skip!();
    // One that ends at once, one that lives a second.
    for work in [["20000", "0", "0"], ["20000", "0.5", "0.5"]] {
        let (id, out) = image.run(&work);
        assert!(out.status.success(), "podman run: {}", stderr(&out));
        assert_eq!(id.len(), 64, "the container's ID: {id:?}");
        let own: f64 = stdout(&out).trim().parse().expect("the work's page faults");
        assert!(own >= 20000.0, "the work's own page faults: {own}");
        let counted: Vec<f64> = [&bpf, &perf_events]
            .iter()
            .map(|served| {
                let body = served.scrape();
                container_faults(&body, &id)
                    .unwrap_or_else(|| panic!("no series of container {id}: {body}"))
            })
            .collect();
        let (ours, theirs) = (counted[0], counted[1]);
        eprintln!(
            "container {work:?}: its own {own} page faults; bpf {ours}, perf-events {theirs}"
        );
        assert!(
            ours >= 0.99 * own && ours < own * 1.05,
            "container {work:?}: the BPF mode counted {ours}, its work {own}"
        );
        assert!(
            theirs > 0.0 && theirs <= ours * 1.01,
            "container {work:?}: the perf-event mode counted {theirs}, the BPF mode {ours}"
        );
    }
}

/// A scrape's `counterhal_cgroup_counted_late` of container `id`; `None` where it has none.
fn container_late(body: &str, id: &str) -> Option<u64> {
    let label = format!("container_id=\"{id}\"");
    body.lines()
        .filter(|l| l.starts_with("counterhal_cgroup_counted_late{"))
        .find(|l| l.contains(&label))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// How many containers the burst starts at once.
const BURST: usize = 12;

/// Done when: a burst of 12 containers, each made by podman with runc while every CPU is
/// busy, is counted whole in the BPF mode (each within 1% of its work's own page faults, at
/// most 5% over: runc's exec), and in the perf-event mode each container's count is either
/// whole or said to be late: a container whose count is under 0.99 of its own page faults
/// has `counterhal_cgroup_counted_late` 1 (a task was in its cgroup before its counters
/// opened). Prints each mode's share of the work's page faults and how many containers the
/// perf-event mode counted late: the perf-event mode's undercount beside the BPF mode's, as
/// docs/serve.md gives it.
///
/// Oracle: podman 4.3.1 with runc 1.1.5 (Debian 12) making the cgroups and placing the
/// processes at once; the kernel's count of the work's own page faults (`ru_minflt`), which
/// each container prints.
#[test]
fn a_burst_of_containers_on_busy_cpus_is_counted_whole_or_said_late() {
    let _alone = crate::common::bpf_alone();
    let _root = crate::unified_or_skip!();
    let (image, bpf, perf_events) = podman_and_both_modes_or_skip!();
    // Every CPU busy, at the priority of the runtimes, while the burst starts.
    let cpus = counterhal::online_cpus(&counterhal::system::System::host()).len() as usize;
    let mut spinners: Vec<_> = (0..cpus)
        .map(|_| {
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("a busy loop")
        })
        .collect();
    let runs: Vec<(String, Output)> = std::thread::scope(|scope| {
        let image = &image;
        let started: Vec<_> = (0..BURST)
            .map(|i| scope.spawn(move || image.run(&[&(20000 + i).to_string(), "0", "0.2"])))
            .collect();
        started.into_iter().map(|t| t.join().unwrap()).collect()
    });
    for spinner in &mut spinners {
        let _ = spinner.kill();
        let _ = spinner.wait();
    }
    let (bpf_body, perf_body) = (bpf.scrape(), perf_events.scrape());
    let (mut own_sum, mut bpf_sum, mut perf_sum, mut late) = (0.0, 0.0, 0.0, 0);
    for (id, out) in &runs {
        assert!(out.status.success(), "podman run: {}", stderr(out));
        let own: f64 = stdout(out).trim().parse().expect("the work's page faults");
        let ours = container_faults(&bpf_body, id)
            .unwrap_or_else(|| panic!("no BPF-mode series of container {id}"));
        let theirs = container_faults(&perf_body, id)
            .unwrap_or_else(|| panic!("no perf-event-mode series of container {id}"));
        let said = container_late(&perf_body, id)
            .unwrap_or_else(|| panic!("no counted_late of container {id}: {perf_body}"));
        assert!(
            ours >= 0.99 * own && ours < own * 1.05,
            "container {id}: the BPF mode counted {ours}, its work {own}"
        );
        assert!(
            theirs >= 0.99 * own || said == 1,
            "container {id}: the perf-event mode counted {theirs} of its work's {own} and \
             did not say it began late"
        );
        own_sum += own;
        bpf_sum += ours;
        perf_sum += theirs;
        late += said;
    }
    eprintln!(
        "a burst of {BURST} containers on {cpus} busy CPUs: the BPF mode counted {:.4} of \
         their work's {own_sum} page faults, the perf-event mode {:.4}, {late} of {BURST} \
         said late",
        bpf_sum / own_sum,
        perf_sum / own_sum
    );
}
