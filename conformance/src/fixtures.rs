//! Fixtures the workspace's tests share: a control group made for one test, the kernel's
//! source extracted once per machine, perf run under another machine's PMU tree, tracefs
//! mounted (or taken away in a mount namespace of a test's own), and the releases of
//! Prometheus' tools.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

mod kernel_tree;
pub mod perf_tree;
pub mod prometheus;
#[cfg(unix)]
#[allow(unsafe_code)] // kill(2), the fixtures' one system call (`sys::send_signal`)
mod sys;
mod tracefs;

pub use kernel_tree::{KERNEL_TARBALL, kernel_source};
#[cfg(unix)]
pub use sys::send_signal;
pub use tracefs::{TRACEFS_ROOTS, tracefs_mounted, tracefs_mounted_anywhere, without_tracefs};

/// Removes, when this process exits, what its tests left in the temporary directory: each
/// entry named `counterhal-...` that carries this process's id as one of its words
/// (`counterhal-papi-lookup-theirs-3658`, `counterhal-record-3658-ours-7.2`). The caches kept
/// for every run on a machine (the kernel's source, a copy of the command for nobody) carry
/// no process id and stay. Call it from the helpers that make such folders: the first call
/// registers the hook, the others do nothing.
pub fn clean_up_at_exit() {
    static REGISTERED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    REGISTERED.get_or_init(|| {
        #[cfg(unix)]
        let _ = counterhal_process::at_exit(remove_this_process_scratch);
    });
}

/// The temporary directory, with [`clean_up_at_exit`] registered: where a test makes a
/// folder or file named `counterhal-...-PID`, removed when the process exits.
pub fn temp_dir() -> PathBuf {
    clean_up_at_exit();
    std::env::temp_dir()
}

/// The exit hook of [`clean_up_at_exit`]; it never unwinds.
#[cfg(unix)]
extern "C" fn remove_this_process_scratch() {
    let _ = std::panic::catch_unwind(|| {
        let pid = std::process::id().to_string();
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours = name.starts_with("counterhal-") && name.split(['-', '.']).any(|w| w == pid);
            if ours {
                let path = entry.path();
                if path.is_dir() {
                    let _ = std::fs::remove_dir_all(&path);
                } else {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
    });
}

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

#[cfg(test)]
mod tests {
    /// Run by [`a_test_process_leaves_nothing_in_the_temporary_directory`] as a process of its
    /// own: makes a folder and a file named with its process id, and prints their paths.
    #[test]
    #[ignore = "run by a_test_process_leaves_nothing_in_the_temporary_directory"]
    fn child_makes_scratch() {
        let pid = std::process::id();
        let dir = super::temp_dir().join(format!("counterhal-scratch-check-{pid}"));
        std::fs::create_dir_all(dir.join("inside")).unwrap();
        let file = super::temp_dir().join(format!("counterhal-scratch-check-{pid}.txt"));
        std::fs::write(&file, "left").unwrap();
        println!("MADE {}", dir.display());
        println!("MADE {}", file.display());
    }

    /// What a test process makes in the temporary directory under its id goes when it exits
    /// (before, a run of the workspace's tests left 54 folders, 109 MB, in /tmp).
    #[test]
    fn a_test_process_leaves_nothing_in_the_temporary_directory() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "fixtures::tests::child_makes_scratch",
                "--nocapture",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        let made: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("MADE "))
            .collect();
        assert_eq!(made.len(), 2, "{text}");
        for path in made {
            assert!(
                !std::path::Path::new(path).exists(),
                "{path} is left after its process exited"
            );
        }
    }
}
