//! Fixtures the workspace's tests share: a control group made for one test, the kernel's
//! source extracted once per machine, perf run under another machine's PMU tree, tracefs
//! mounted (or taken away in a mount namespace of a test's own), the releases of
//! Prometheus' tools, and the glibc versions an ELF file needs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

mod glibc;
mod kernel_tree;
pub mod perf_tree;
pub mod prometheus;
mod scratch;
#[cfg(unix)]
#[allow(unsafe_code)] // kill(2), the fixtures' one system call (`sys::send_signal`)
mod sys;
mod tracefs;

pub use glibc::{GLIBC_FLOOR, GlibcVersion, glibc_versions_needed};
pub use kernel_tree::{KERNEL_TARBALL, kernel_source};
pub use scratch::{Leftovers, Scratch, clean_up_at_exit, left_in_temp_dir, temp_dir};
#[cfg(unix)]
pub use sys::send_signal;
pub use tracefs::{TRACEFS_ROOTS, tracefs_mounted, tracefs_mounted_anywhere, without_tracefs};

/// Files a test runs as another user (nobody), in a folder any user can enter and read: for a
/// workspace in a folder that user cannot enter (a clone in /root, which is 0700), where the
/// test binary or a library built there cannot be loaded as that user. Each file is a hard
/// link where the file system allows (no copy of a large binary), else a copy, keeping its
/// mode; the folder goes when the value is dropped.
pub struct ForAnyone {
    /// The folder (mode 0755) holding the files.
    pub dir: PathBuf,
}

impl ForAnyone {
    /// `files` (each a path and the name it takes) in a new folder named for this process
    /// and `what` under the temporary directory.
    ///
    /// # Errors
    /// Where the folder cannot be made or a file neither linked nor copied.
    pub fn new(what: &str, files: &[(&Path, &str)]) -> std::io::Result<ForAnyone> {
        use std::os::unix::fs::PermissionsExt;
        clean_up_at_exit();
        let dir = std::env::temp_dir().join(format!(
            "counterhal-for-anyone-{what}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let made = ForAnyone { dir };
        std::fs::set_permissions(&made.dir, std::fs::Permissions::from_mode(0o755))?;
        for (file, name) in files {
            // The file a link names, not the link (which may point inside the folder).
            let file = std::fs::canonicalize(file)?;
            let to = made.dir.join(name);
            if std::fs::hard_link(&file, &to).is_err() {
                std::fs::copy(&file, &to)?;
            }
        }
        Ok(made)
    }

    /// The path of the file named `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for ForAnyone {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

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
