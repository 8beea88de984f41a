//! Counting by control group ([`Target::Cgroup`], `Target::Cgroup`) and a command without
//! what it creates ([`Follow::CommandOnly`]), through the library.

use std::process::Command;

use counterhal::ErrorKind;
use counterhal::OpenOptions;
use counterhal::advanced::{CountedCommand, Follow, MultiSet};
use counterhal::prelude::*;
use counterhal_conformance::fixtures::TestCgroup;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use counterhal_hal::BackendTarget;

fn backend() -> Option<Chosen> {
    open_default()
        .ok()
        .filter(|chosen| chosen.backend().dyn_name() == "linux")
}

macro_rules! linux_or_skip {
    () => {
        match backend() {
            Some(backend) => backend,
            None => skip!(Need::System, "the linux backend is not usable here"),
        }
    };
}

/// A cgroup for the test below the cgroup mount, if one can be made here.
fn test_cgroup(what: &str) -> Option<TestCgroup> {
    TestCgroup::new(
        &counterhal::cgroups::root(&counterhal::system::System::host()).ok()?,
        &format!("lib-{what}"),
    )
}

#[test]
fn a_cgroup_counts_only_while_its_tasks_run() {
    let backend = linux_or_skip!();
    let (Some(mut busy), Some(idle)) = (test_cgroup("busy"), test_cgroup("idle")) else {
        skip!(
            Need::Privilege,
            "cannot make a cgroup here (no cgroup mount, or not root)"
        );
    };
    busy.spin();
    let task_clock = backend.resolve("task-clock").unwrap();
    let open = |path: &std::path::Path| {
        MultiSet::open(
            backend.backend(),
            std::slice::from_ref(&task_clock),
            &Target::cgroup(path, None),
            &OpenOptions::ungrouped(),
            &counterhal::system::System::host(),
        )
    };
    let (mut in_busy, mut in_idle) = match (open(&busy.path), open(&idle.path)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => match e.kind() {
            ErrorKind::PermissionDenied => skip!(Need::Privilege, "counting CPUs: {e}"),
            ErrorKind::Unsupported => {
                skip!(Need::System, "this kernel does not count by cgroup: {e}")
            }
            _ => panic!("{e}"),
        },
    };
    assert!(matches!(in_busy.places().next(), Some(Place::Cpu(0))));
    let started = std::time::Instant::now();
    in_busy.enable().unwrap();
    in_idle.enable().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    in_busy.disable().unwrap();
    in_idle.disable().unwrap();
    let elapsed = started.elapsed().as_nanos() as u64;
    let busy_ns = in_busy.read_to_vec().unwrap()[0].value;
    let idle_ns = in_idle.read_to_vec().unwrap()[0].value;
    // One task: some of one CPU's time, never more than the time counted.
    assert!(
        busy_ns > 0 && busy_ns <= elapsed,
        "{busy_ns} of {elapsed} ns"
    );
    assert_eq!(idle_ns, 0, "nothing runs in the idle cgroup");
}

#[test]
fn a_directory_that_is_no_cgroup_is_refused_by_its_path() {
    let backend = linux_or_skip!();
    let task_clock = backend.resolve("task-clock").unwrap();
    let open = |path: &std::path::Path| {
        counterhal_hal::open_set(
            backend.backend(),
            vec![task_clock.clone()],
            &BackendTarget::cgroup(path, 0),
            &OpenOptions::ungrouped(),
        )
        .err()
        .expect("refused")
    };
    let missing = counterhal_conformance::fixtures::temp_dir().join("counterhal-no-such-cgroup");
    let e = open(&missing);
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(
        e.message()
            .contains(&format!("no access to cgroup {}", missing.display())),
        "{e}"
    );
    // A directory, but no cgroup's: the kernel refuses the descriptor (EBADF).
    let e = open(&counterhal_conformance::fixtures::temp_dir());
    if e.kind() == ErrorKind::PermissionDenied {
        skip!(Need::Privilege, "counting CPUs: {e}");
    }
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.message().contains("cgroup"), "{e}");
}

#[test]
fn a_command_alone_leaves_out_the_processes_it_starts() {
    let backend = linux_or_skip!();
    let faults = backend.resolve("page-faults").unwrap();
    let count = |follow: Follow| {
        let mut command = Command::new("/bin/sh");
        command.args(["-c", "ls / >/dev/null; ls / >/dev/null; ls / >/dev/null"]);
        let mut counted = CountedCommand::launch(
            backend.backend(),
            std::slice::from_ref(&faults),
            command,
            &OpenOptions::ungrouped(),
            &[],
            follow,
        )
        .unwrap();
        counted.start().unwrap();
        let count = counted.wait().unwrap();
        assert!(count.exit.status.success());
        count.readings[0].as_ref().unwrap().value
    };
    let all = count(Follow::Children);
    let alone = count(Follow::CommandOnly);
    // Three `ls` fault in their pages only when followed.
    assert!(
        alone > 0 && alone * 2 < all,
        "alone {alone}, with children {all}"
    );
}
