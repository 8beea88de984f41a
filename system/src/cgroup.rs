//! The cgroup file system's directories (cgroups(7)): a cgroup opened for
//! `perf_event_open`, its id, and the cgroups below it, walked without following a link.
//! Each cgroup's directory is read by the one rule as a tree of its own, rooted where it is
//! named (under a mount the caller found in the mounts, wherever that is), in which no link
//! is followed (the cgroup file system has none).

use std::ffi::OsString;
use std::path::Path;

use crate::roots::System;
use crate::rule::Tree;

/// The tree of the cgroup directory `dir`: its own files, no link followed.
fn cgroup_tree(dir: &Path) -> Tree {
    Tree::at(dir, "cgroup")
}

impl System {
    /// The cgroup directory `path` (under a cgroup mount, [`System::cgroup_mount`]) opened to
    /// be handed to the kernel (`perf_event_open`'s `pid` under `PERF_FLAG_PID_CGROUP`, a BPF
    /// program's cgroup): a directory only, opened without waiting, so that a FIFO named
    /// there is refused at once.
    ///
    /// # Errors
    /// The directory cannot be opened: none there, another user's, no directory
    /// (`ENOTDIR`).
    pub fn open_cgroup(&self, path: &Path) -> std::io::Result<std::fs::File> {
        cgroup_tree(path).open_dir(path)
    }

    /// The id of cgroup `path`: its directory's inode number, which the kernel's
    /// `bpf_get_current_cgroup_id` and `cgroup_id` give (kernfs numbers a cgroup's node by
    /// it, `kernfs_ino`).
    ///
    /// # Errors
    /// It cannot be looked at (none there).
    pub fn cgroup_id(&self, path: &Path) -> std::io::Result<u64> {
        let meta = cgroup_tree(path).metadata(path)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Ok(meta.ino())
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            Err(std::io::ErrorKind::Unsupported.into())
        }
    }

    /// The names of the directories the cgroup directory `dir` holds (the cgroups below it:
    /// no link followed), in the order it lists them; none where it cannot be read.
    pub fn cgroup_children(&self, dir: &Path) -> Vec<OsString> {
        let is_dir = |entry: &std::fs::DirEntry| entry.file_type().is_ok_and(|t| t.is_dir());
        cgroup_tree(dir).list(dir, is_dir).unwrap_or_default()
    }

    /// Whether a task is in the cgroup `dir` or any cgroup below it now: cgroup v2's
    /// `populated` key of its `cgroup.events` (kernel/cgroup/cgroup.c,
    /// `cgroup_events_show`); `None` where the directory has no such file (a v1 hierarchy,
    /// whose `cgroup.procs` lists its own tasks alone) or it cannot be read.
    pub fn cgroup_populated(&self, dir: &Path) -> Option<bool> {
        // Two short lines (`populated 0`, `frozen 0`): a longer file is no cgroup's.
        match cgroup_key(dir, "cgroup.events", "populated", 256)? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    /// Whether a task has run in the cgroup `dir` or any cgroup below it: cgroup v2's
    /// `usage_usec` of its `cpu.stat`, there whether the cpu controller is enabled or not
    /// (Documentation/admin-guide/cgroup-v2.rst; kernel/cgroup/rstat.c,
    /// `cgroup_base_stat_cputime_show`), above 0. A task running now may not be in it yet
    /// (its time is added at its next tick or switch). `None` where the directory has no
    /// such file (v1) or it cannot be read.
    pub fn cgroup_ran(&self, dir: &Path) -> Option<bool> {
        // usage, user and system times, and the cpu controller's keys where it is enabled.
        cgroup_key(dir, "cpu.stat", "usage_usec", 4096).map(|usec| usec > 0)
    }

    /// Whether the cgroup directory `dir` may hold directories: not where its link count is 2
    /// (its `.` and its entry in its parent: each subdirectory's `..` adds one, as the cgroup
    /// file system counts them, kernfs's `kernfs_refresh_inode`, and ext4 and tmpfs do). A
    /// file system that counts otherwise (btrfs gives a directory one link) may hold some.
    pub fn cgroup_may_have_children(&self, dir: &Path) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let meta = cgroup_tree(dir).metadata(dir);
            meta.map_or(true, |meta| meta.nlink() != 2)
        }
        #[cfg(not(unix))]
        {
            let _ = dir;
            true
        }
    }
}

/// The value of `key` in the flat-keyed cgroup file `name` of directory `dir` (`KEY VALUE`
/// lines), read up to `bound` bytes by the rule (a regular file of `dir`'s, no link); `None`
/// where there is no such file, key or number, or it holds more.
fn cgroup_key(dir: &Path, name: &str, key: &str, bound: usize) -> Option<u64> {
    let bytes = cgroup_tree(dir).load(&dir.join(name), bound).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: the kernel's directories (tmpfs counts a directory's links as cgroupfs does)
    /// and FIFOs: the children are the directories, links and files left out; a leaf has two
    /// links; a FIFO is no cgroup and is refused at once, never waited on; the id is the
    /// inode `stat` gives.
    #[cfg(unix)]
    #[test]
    fn cgroup_directories_are_read_as_the_kernel_counts_them() {
        use std::os::unix::fs::MetadataExt;
        let root =
            std::env::temp_dir().join(format!("counterhal-system-cgroup-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join("c")).unwrap();
        std::fs::write(root.join("cgroup.procs"), "").unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("link")).unwrap();
        let system = System::host();
        let mut children = system.cgroup_children(&root);
        children.sort();
        assert_eq!(children, ["a", "c"]);
        assert!(system.cgroup_children(&root.join("none")).is_empty());
        assert!(system.cgroup_may_have_children(&root.join("a")));
        if std::fs::metadata(&root).unwrap().nlink() > 1 {
            assert!(!system.cgroup_may_have_children(&root.join("c")));
        }
        assert_eq!(
            system.cgroup_id(&root.join("c")).unwrap(),
            std::fs::metadata(root.join("c")).unwrap().ino()
        );
        assert!(system.open_cgroup(&root.join("a")).is_ok());
        assert!(system.open_cgroup(&root.join("cgroup.procs")).is_err());
        assert!(system.open_cgroup(&root.join("none")).is_err());
        let fifo = root.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            assert!(system.open_cgroup(&fifo).is_err());
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Oracle: the kernel's cgroup v2 (Linux 6.x): a cgroup made empty reads unpopulated and
    /// not run in, one a task of this test's was moved into (in a child of it) reads
    /// populated, and once that task has looped and ended, unpopulated and run in; a
    /// directory without `cgroup.events` or `cpu.stat` (a v1 hierarchy, any other folder)
    /// reads unknown.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_cgroup_is_populated_as_the_kernel_says() {
        use counterhal_conformance::skip;
        use counterhal_conformance::skip::Need;
        let system = System::host();
        assert_eq!(system.cgroup_populated(&std::env::temp_dir()), None);
        let Some(mount) = system
            .mounts()
            .into_iter()
            .flatten()
            .find(|m| m.fs_type == "cgroup2")
            .map(|m| m.mount_point)
        else {
            skip!(Need::System, "no cgroup2 mount here");
        };
        let parent = mount.join(format!("counterhal-populated-{}", std::process::id()));
        if let Err(e) = std::fs::create_dir(&parent) {
            skip!(
                Need::Privilege,
                "cannot make a cgroup in {}: {e}",
                mount.display()
            );
        }
        let child = parent.join("task");
        std::fs::create_dir(&child).unwrap();
        assert_eq!(system.cgroup_populated(&parent), Some(false));
        assert_eq!(system.cgroup_ran(&parent), Some(false));
        // A shell that waits for its line, then loops in the child cgroup and ends.
        let mut shell = std::process::Command::new("sh")
            .args([
                "-c",
                "read go; i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done",
            ])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let moved = std::fs::write(child.join("cgroup.procs"), shell.id().to_string());
        let populated = system.cgroup_populated(&parent);
        {
            use std::io::Write;
            let _ = shell.stdin.take().unwrap().write_all(b"go\n");
        }
        let _ = shell.wait();
        let (emptied, ran) = (system.cgroup_populated(&parent), system.cgroup_ran(&parent));
        let _ = std::fs::remove_dir(&child);
        let _ = std::fs::remove_dir(&parent);
        moved.unwrap();
        assert_eq!(populated, Some(true));
        assert_eq!((emptied, ran), (Some(false), Some(true)));
        assert_eq!(system.cgroup_ran(&std::env::temp_dir()), None);
    }
}
