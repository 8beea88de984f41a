//! Fixtures the workspace's tests share: a control group made for one test, the kernel's
//! source extracted once per machine, perf run under another machine's PMU tree, tracefs
//! mounted (or taken away in a mount namespace of a test's own), and the releases of
//! Prometheus' tools.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

mod kernel_tree;
pub mod perf_tree;
pub mod prometheus;
mod tracefs;

pub use kernel_tree::{KERNEL_TARBALL, kernel_source};
pub use tracefs::{TRACEFS_ROOTS, tracefs_mounted, tracefs_mounted_anywhere, without_tracefs};

/// A cgroup made below a cgroup mount for one test, removed when dropped (the processes put
/// in it killed first, a cgroup made below it removed with it).
pub struct TestCgroup {
    /// Its name below the mount (`counterhal-test-PID-WHAT`), as `perf stat -G` takes it.
    pub name: String,
    /// Its directory.
    pub path: PathBuf,
    busy: Vec<Child>,
}

impl TestCgroup {
    /// A new cgroup below `root` (a cgroup mount), named for this process and `what`; `None`
    /// where it cannot be made (no such mount, or not root).
    pub fn new(root: &Path, what: &str) -> Option<TestCgroup> {
        let name = format!("counterhal-test-{}-{what}", std::process::id());
        let path = root.join(&name);
        std::fs::create_dir(&path).ok()?;
        Some(TestCgroup {
            name,
            path,
            busy: Vec::new(),
        })
    }

    /// Starts a shell spinning on a CPU inside this cgroup, and waits until the kernel lists
    /// it there (`cgroup.procs`).
    ///
    /// # Panics
    /// When the shell cannot start or never joins the cgroup (within a second).
    pub fn spin(&mut self) {
        let procs = self.path.join("cgroup.procs");
        let child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > {} && exec sh -c 'while :; do :; done'",
                procs.display()
            ))
            .spawn()
            .expect("start a busy shell");
        self.busy.push(child);
        for _ in 0..100 {
            let members = std::fs::read_to_string(&procs).unwrap_or_default();
            if !members.trim().is_empty() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the busy shell never joined {}", self.path.display());
    }

    /// The process ids of the shells [`spin`](TestCgroup::spin) started.
    pub fn busy_pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.busy.iter().map(Child::id)
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        for child in &mut self.busy {
            child.kill().ok();
            child.wait().ok();
        }
        for entry in std::fs::read_dir(&self.path)
            .into_iter()
            .flatten()
            .flatten()
        {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir(entry.path()).ok();
            }
        }
        // The kernel takes a moment to let a cgroup go once its last task has ended.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.path).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
