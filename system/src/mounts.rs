//! The mounts this process sees (`self/mountinfo` under procfs, proc_pid_mountinfo(5)), and
//! the cgroup file systems among them: where perf finds cgroups by name (the v1 hierarchy
//! with the `perf_event` controller, else the last cgroup2 mount), and which hierarchy holds
//! a controller (`cgroups` under procfs).

use std::path::PathBuf;

use crate::roots::System;

/// One mount, as a line of `mountinfo` describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Mount {
    /// Where it is mounted, its octal escapes (space, tab, newline, backslash) undone.
    pub mount_point: PathBuf,
    /// Its file system's type (`cgroup2`, `tracefs`, `ext4`).
    pub fs_type: String,
    /// Its file system's own options, comma-separated in the file (`rw,perf_event`): a cgroup
    /// v1 mount's controllers are among them.
    pub super_options: Vec<String>,
}

impl Mount {
    /// The mount a line of `mountinfo` describes (`ID PARENT MAJ:MIN ROOT MOUNT-POINT OPTIONS
    /// [OPTIONAL...] - FSTYPE SOURCE SUPER-OPTIONS`); `None` for a line of another shape.
    pub fn parse(line: &str) -> Option<Mount> {
        let (before, after) = line.split_once(" - ")?;
        let mount_point = before.split(' ').nth(4)?;
        let mut after = after.split(' ');
        let fs_type = after.next()?.to_string();
        let super_options = after
            .nth(1)
            .unwrap_or("")
            .split(',')
            .filter(|o| !o.is_empty())
            .map(str::to_string)
            .collect();
        Some(Mount {
            mount_point: unescape(mount_point),
            fs_type,
            super_options,
        })
    }

    /// Whether it is a cgroup v1 hierarchy with the controller `controller` (`perf_event`).
    pub fn is_cgroup_v1_with(&self, controller: &str) -> bool {
        self.fs_type == "cgroup" && self.super_options.iter().any(|o| o == controller)
    }
}

/// A mount point as `mountinfo` writes it: space, tab, newline and backslash as octal escapes.
fn unescape(field: &str) -> PathBuf {
    let bytes = field.as_bytes();
    let mut out = String::with_capacity(field.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|digits| {
            let text = std::str::from_utf8(digits).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(char::from(byte));
                i += 4;
            }
            (_, _) => {
                let ch = field[i..].chars().next().unwrap_or('\u{fffd}');
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    PathBuf::from(out)
}

impl System {
    /// The mounts this process sees, in the order `self/mountinfo` under procfs lists them;
    /// `None` where it cannot be read (no procfs: not Linux).
    pub fn mounts(&self) -> Option<Vec<Mount>> {
        let text = self.proc_text("self/mountinfo")?;
        Some(text.lines().filter_map(Mount::parse).collect())
    }

    /// Where perf finds cgroups by name (`perf stat -G`): the first cgroup v1 hierarchy
    /// with the `perf_event` controller, else the last cgroup2 mount; `None` where neither is
    /// mounted (or the mounts cannot be read).
    pub fn cgroup_mount(&self) -> Option<PathBuf> {
        self.cgroup_v1_mount("perf_event")
            .or_else(|| self.cgroup2_mount())
    }

    /// The first cgroup v1 hierarchy mounted with the controller `controller` (`perf_event`,
    /// `freezer`); `None` where none is (or the mounts cannot be read).
    pub fn cgroup_v1_mount(&self, controller: &str) -> Option<PathBuf> {
        let mounts = self.mounts()?;
        let v1 = mounts.iter().find(|m| m.is_cgroup_v1_with(controller))?;
        Some(v1.mount_point.clone())
    }

    /// The last cgroup2 mount (the unified hierarchy, where the BPF mode of per-cgroup
    /// counting counts), whether or not a v1 hierarchy has the `perf_event` controller;
    /// `None` where none is mounted (or the mounts cannot be read).
    pub fn cgroup2_mount(&self) -> Option<PathBuf> {
        last_cgroup2(&self.mounts()?)
    }

    /// The hierarchy the cgroup controller `controller` (`perf_event`) is bound to, by
    /// `cgroups` under procfs (`#subsys_name hierarchy num_cgroups enabled`: 0 is cgroup2's);
    /// `None` where it is not listed.
    pub fn controller_hierarchy(&self, controller: &str) -> Option<u32> {
        let cgroups = self.proc_text("cgroups")?;
        cgroups.lines().find_map(|line| {
            let mut fields = line.split_whitespace();
            (fields.next() == Some(controller)).then(|| fields.next()?.parse().ok())?
        })
    }
}

fn last_cgroup2(mounts: &[Mount]) -> Option<PathBuf> {
    let last = mounts.iter().rev().find(|m| m.fs_type == "cgroup2")?;
    Some(last.mount_point.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A procfs tree holding `self/mountinfo` and `cgroups` of the test's own.
    fn procfs(name: &str, mountinfo: &str, cgroups: &str) -> PathBuf {
        let tag = format!("mounts-{name}");
        crate::testing::tree(&tag, &[("self/mountinfo", mountinfo), ("cgroups", cgroups)])
    }

    /// A host's layout: cgroup v1 controllers without perf_event, cgroup2 beside them.
    const SPLIT: &str = "\
25 1 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
26 25 0:23 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu
27 25 0:24 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
35 25 0:32 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    /// Oracle: proc_pid_mountinfo(5)'s fields and escapes, and perf 6.1's
    /// `cgroupfs_find_mountpoint` (tools/perf/util/cgroup.c: a v1 mount with the
    /// `perf_event` controller wins, else the last cgroup2 one), in trees of the test's own.
    #[test]
    fn perf_event_v1_wins_and_cgroup2_is_the_fallback() {
        let split = procfs(
            "split",
            SPLIT,
            "#subsys_name\thierarchy\tnum_cgroups\tenabled\n",
        );
        let system = System::host().with_procfs(&split);
        let unified = Some(PathBuf::from("/sys/fs/cgroup/unified"));
        assert_eq!(system.cgroup_mount(), unified);
        assert_eq!(system.cgroup2_mount(), unified);
        assert_eq!(system.mounts().unwrap().len(), 4);
        let v1 = format!(
            "{SPLIT}40 25 0:40 / /sys/fs/cgroup/perf\\040event rw - cgroup cgroup rw,perf_event\n"
        );
        let root = procfs(
            "v1",
            &v1,
            "#subsys_name\thierarchy\tnum_cgroups\tenabled\nperf_event\t7\t1\t1\ncpu\t0\t1\t1\n",
        );
        let system = System::host().with_procfs(&root);
        assert_eq!(
            system.cgroup_mount(),
            Some(PathBuf::from("/sys/fs/cgroup/perf event"))
        );
        assert_eq!(system.cgroup2_mount(), unified);
        assert_eq!(
            system.cgroup_v1_mount("perf_event"),
            Some(PathBuf::from("/sys/fs/cgroup/perf event"))
        );
        assert_eq!(
            system.cgroup_v1_mount("pids"),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(system.cgroup_v1_mount("freezer"), None);
        assert_eq!(system.controller_hierarchy("perf_event"), Some(7));
        assert_eq!(system.controller_hierarchy("cpu"), Some(0));
        assert_eq!(system.controller_hierarchy("rdma"), None);
        let perf = system
            .mounts()
            .unwrap()
            .into_iter()
            .find(|m| m.is_cgroup_v1_with("perf_event"))
            .unwrap();
        assert_eq!(perf.super_options, ["rw", "perf_event"]);
        // A controller whose name only contains perf_event's is not it.
        let lookalike = Mount::parse("41 25 0:41 / /x rw - cgroup cgroup rw,perf_event_x").unwrap();
        assert!(!lookalike.is_cgroup_v1_with("perf_event"));
        assert_eq!(Mount::parse(""), None);
        let none = System::host().with_procfs(root.join("none"));
        assert_eq!((none.mounts(), none.cgroup_mount()), (None, None));
        std::fs::remove_dir_all(&split).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Oracle: this machine's kernel, whose `/proc/self/mountinfo` lists `/` as mounted, and
    /// whose cgroup2 mount (where one is) holds `cgroup.controllers` (cgroups(7)).
    #[cfg(target_os = "linux")]
    #[test]
    fn this_machine_mounts_its_root() {
        let host = System::host();
        let mounts = host.mounts().expect("Linux lists its mounts");
        assert!(
            mounts
                .iter()
                .any(|m| m.mount_point == std::path::Path::new("/"))
        );
        if let Some(unified) = host.cgroup2_mount() {
            assert!(unified.join("cgroup.controllers").is_file(), "{unified:?}");
        }
    }
}
