//! The BPF mode's adopted cgroups against the real kernel: a cgroup its program adopted that
//! no look at the tree saw (made, run in and removed between two looks) is let go after two
//! looks, so such cgroups never fill its map.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use counterhal_hal::{Backend, CgroupCounter, CgroupCounterOptions, CgroupModeChoice, ErrorKind};
use counterhal_linux::{LinuxCgroupCounter, probe};

/// The cgroup v2 mount, from the kernel's own list of mounts.
fn unified_mount() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        (fields.get(2) == Some(&"cgroup2")).then(|| PathBuf::from(fields[1]))
    })
}

/// Runs a task that touches 4 MiB of fresh pages in `cgroup` (it places itself there first)
/// and waits for it.
fn work_in(cgroup: &Path) {
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec dd if=/dev/zero of=/dev/null bs=4M count=1 \
         status=none",
        cgroup.display()
    );
    let status = Command::new("sh").args(["-c", &script]).status();
    assert!(
        status.is_ok_and(|s| s.success()),
        "the work in {}",
        cgroup.display()
    );
}

/// Done when: with room for one followed cgroup (and the 16 the program may adopt), 20
/// cgroups made, run in and removed below an adopting parent with no look between fill the
/// map (following one more is refused: the kernel adopted each at its first switch); after
/// two looks that saw none of them, a new cgroup is adopted and followed, its work counted.
///
/// Oracle: the kernel's own refusal of an update into a full hash map (`E2BIG`,
/// kernel/bpf/hashtab.c), and its count of the work's page faults.
#[test]
fn adopted_cgroups_no_look_saw_are_let_go_after_two_looks() {
    let Some(mount) = unified_mount() else {
        skip!(Need::System, "no cgroup2 file system is mounted");
    };
    let parent = mount.join(format!("counterhal-adoption-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir(&parent) {
        skip!(Need::Privilege, "cannot make {}: {e}", parent.display());
    }
    struct Removed<'a>(&'a Path);
    impl Drop for Removed<'_> {
        fn drop(&mut self) {
            if let Ok(children) = std::fs::read_dir(self.0) {
                for child in children.flatten().filter(|c| c.path().is_dir()) {
                    std::fs::remove_dir(child.path()).ok();
                }
            }
            std::fs::remove_dir(self.0).ok();
        }
    }
    let _removed = Removed(&parent);
    let db = Arc::new(counterhal_events::Database::shipped().expect("shipped database"));
    let linux = probe(db, None, counterhal_system::System::host())
        .expect("perf_event_open usable on this machine");
    let requests: Vec<_> = linux
        .resolve("page-faults")
        .expect("page-faults")
        .terms
        .into_iter()
        .map(|t| t.request)
        .collect();
    let cpus: Vec<u32> =
        (0..std::thread::available_parallelism().map_or(1, |n| n.get()) as u32).collect();
    let mut options = CgroupCounterOptions::new(CgroupModeChoice::Bpf, Some(mount.clone()));
    options.capacity = 1;
    let mut counter = match LinuxCgroupCounter::open(&linux, &requests, &cpus, options) {
        Ok(counter) => counter,
        Err(e) => skip!(Need::Privilege, "the BPF mode does not count here: {e}"),
    };
    assert!(
        counter
            .adopt_children(&parent, u8::MAX)
            .expect("the parent adopts"),
        "a parent only root makes children in adopts them"
    );
    for n in 0..20 {
        let cgroup = parent.join(format!("gone{n}"));
        std::fs::create_dir(&cgroup).expect("a cgroup");
        work_in(&cgroup);
        std::fs::remove_dir(&cgroup).expect("the cgroup removed");
    }
    let last = parent.join("last");
    std::fs::create_dir(&last).expect("a cgroup");
    match counter.follow(&last) {
        Err(e) if e.kind() == ErrorKind::LimitReached => {}
        other => panic!("the map was not filled by the cgroups adopted: {other:?}"),
    }
    counter.forget_unseen();
    counter.forget_unseen();
    work_in(&last);
    counter
        .follow(&last)
        .expect("followed once the unseen are let go");
    counter.read().expect("read");
    let counts = counter.counts(&last).expect("its counts");
    let faults = counts.total[0].value;
    assert!(
        faults >= 1000,
        "the work's 4 MiB of fresh pages in the adopted cgroup: {faults} page faults"
    );
}
