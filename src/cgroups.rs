//! Control groups by name, found where `perf stat -G NAME` finds them: under the mount of the
//! cgroup v1 hierarchy that has the `perf_event` controller, or, where none is mounted, under
//! the unified cgroup2 mount ([`Target::Cgroup`](crate::Target::Cgroup) counts in one).

use std::path::{Path, PathBuf};

/// Counting per cgroup, as [`Chosen::cgroup_counter`](crate::Chosen::cgroup_counter) hands
/// it out: one counter following any number of cgroups, read per cgroup and CPU.
pub use counterhal_hal::{
    BoxedCgroupCounter, CgroupCounter, CgroupCounterOptions, CgroupCounts, CgroupMode,
    CgroupModeChoice, EventLeftOut, ProgramSkips,
};
use counterhal_hal::{Error, ErrorKind, Result};
use counterhal_system::System;

/// The directory cgroup names are relative to, as perf finds it in `system`'s
/// `/proc/self/mountinfo`:
/// the mount point of the cgroup (v1) file system with the `perf_event` controller; failing
/// that, of the (last) cgroup2 file system ([`System::cgroup_mount`]).
///
/// # Errors
/// [`ErrorKind::Unsupported`] where neither is mounted (or `/proc/self/mountinfo` cannot be
/// read: not Linux).
pub fn root(system: &System) -> Result<PathBuf> {
    if system.mounts().is_none() {
        return Err(Error::unsupported(
            "cannot read /proc/self/mountinfo to find the cgroup mount",
        )
        .with_hint("counting by cgroup needs Linux with /proc mounted"));
    }
    system.cgroup_mount().ok_or_else(|| {
        Error::unsupported(
            "no cgroup file system with the perf_event controller, nor cgroup2, is mounted",
        )
        .with_hint("mount one, e.g. `mount -t cgroup2 none /sys/fs/cgroup`")
    })
}

/// The mount point of the (last) cgroup2 file system, the hierarchy the BPF mode of
/// per-cgroup counting counts in ([`Chosen::cgroup_counter`](crate::Chosen::cgroup_counter)),
/// whether or not a v1 hierarchy has the `perf_event` controller
/// ([`System::cgroup2_mount`]).
///
/// # Errors
/// As [`root`], where no cgroup2 file system is mounted.
pub fn unified_root(system: &System) -> Result<PathBuf> {
    if system.mounts().is_none() {
        return Err(Error::unsupported(
            "cannot read /proc/self/mountinfo to find the cgroup2 mount",
        ));
    }
    system.cgroup2_mount().ok_or_else(|| {
        Error::unsupported("no cgroup2 file system is mounted")
            .with_hint("mount one, e.g. `mount -t cgroup2 none /sys/fs/cgroup`")
    })
}

/// The directory of the cgroup `name` (`/` is the root; `a/b` is `b` below `a`), as perf
/// opens it: [`root`] of `system` joined with `name`.
///
/// # Errors
/// As [`root`]; [`ErrorKind::InvalidInput`] for an empty name or one with a `..`
/// component; [`ErrorKind::NotFound`] naming the path tried when it is no directory.
pub fn find(system: &System, name: &str) -> Result<PathBuf> {
    find_in(&root(system)?, name)
}

/// [`find`] under the root `root`.
///
/// # Errors
/// As [`find`], but for the root.
pub fn find_in(root: &Path, name: &str) -> Result<PathBuf> {
    let hint = "name a cgroup as a path below the cgroup mount, e.g. `user.slice` or `/`";
    if name.is_empty() {
        return Err(Error::invalid_input("an empty cgroup name").with_hint(hint));
    }
    let relative = Path::new(name.trim_start_matches('/'));
    if relative
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(Error::invalid_input(format!(
            "cgroup `{name}` climbs out of the cgroup mount with `..`"
        ))
        .with_hint(hint));
    }
    let path = root.join(relative);
    if !path.is_dir() {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("no access to cgroup {}", path.display()),
        )
        .with_hint(format!(
            "no directory of that name under {}: list the cgroups with `ls {}`",
            root.display(),
            root.display()
        )));
    }
    Ok(path)
}

/// Whether perf reads the `--for-each-cgroup` list `list` as patterns rather than names (it
/// holds one of `{}[]()|*+?^$`, as perf 6.1's `evlist__expand_cgroup` decides).
pub fn is_pattern(list: &str) -> bool {
    list.contains(['{', '}', '[', ']', '(', ')', '|', '*', '+', '?', '^', '$'])
}

/// The most levels below its root a walk of a cgroup tree goes unless told otherwise. The
/// kernel's `cgroup.max.depth` is unlimited by default, so whoever may make cgroups (a user
/// with a delegated subtree) may nest them thousands deep; real trees are a few levels deep
/// (the kubelet's containers 4 to 5 below the mount).
pub const LEVELS: usize = 64;

/// The longest path of a directory a walk of a cgroup tree meets, in bytes: `PATH_MAX` (4,096)
/// less its NUL, the longest path the kernel opens.
pub const PATH_MAX: usize = 4095;

/// What a walk of a cgroup tree met ([`walk`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Walk {
    /// Each directory met by its path below the root, the root first (the empty path), then
    /// depth first, each before what it holds (the order `find` meets them).
    pub names: Vec<PathBuf>,
    /// The directories at the last level walked that hold directories, not looked in.
    pub too_deep: usize,
    /// The directories whose path is longer than [`PATH_MAX`], neither met nor
    /// looked in.
    pub too_long: usize,
}

/// Walks the cgroup tree below the mount `root`, `levels` levels down at most (0: the root
/// alone). Before it looks in a directory (the root first) it asks `look_in` with the
/// directory's path and its path below `root`: a directory refused is met but not looked in.
/// A watch set there (inotify's) misses nothing made in it meanwhile, for what was made before
/// is in the listing that follows. A directory that cannot be read is met but holds nothing.
///
/// It makes no recursive call and keeps, besides what it met, each level's subdirectories left
/// to walk, so a tree however deep (a user's 10,000 levels) costs neither the stack nor more
/// than `levels` listings.
///
/// A directory whose link count is 2 holds no directory (its `.` and its entry in its parent:
/// each subdirectory's `..` adds one, as the cgroup file system counts them, kernfs's
/// `kernfs_refresh_inode`, and ext4 and tmpfs do) and is not listed: a cgroup's listing is its
/// 30 to 50 interface files, and most cgroups are leaves. A file system that counts otherwise
/// (btrfs gives a directory one link) is listed throughout.
pub fn walk(
    system: &System,
    root: &Path,
    levels: usize,
    look_in: &mut dyn FnMut(&Path, &Path) -> bool,
) -> Walk {
    let mut walk = Walk {
        names: vec![PathBuf::new()],
        ..Walk::default()
    };
    // The directory listed last (below `root`), and each level's subdirectories left.
    let mut name = PathBuf::new();
    let mut levels_left: Vec<std::vec::IntoIter<std::ffi::OsString>> = Vec::new();
    let subdirectories = |dir: &Path| system.cgroup_children(dir).into_iter();
    if levels > 0 && look_in(root, &name) && holds_directories(system, root) {
        levels_left.push(subdirectories(root));
    }
    while let Some(left) = levels_left.last_mut() {
        let Some(child) = left.next() else {
            levels_left.pop();
            name.pop();
            continue;
        };
        name.push(&child);
        let path = root.join(&name);
        if path.as_os_str().len() > PATH_MAX {
            walk.too_long += 1;
            name.pop();
            continue;
        }
        walk.names.push(name.clone());
        if levels_left.len() >= levels {
            walk.too_deep += usize::from(holds_directories(system, &path));
        } else if look_in(&path, &name) && holds_directories(system, &path) {
            levels_left.push(subdirectories(&path));
            continue;
        }
        name.pop();
    }
    walk
}

/// Every cgroup below the mount `root` by name, as perf's `--for-each-cgroup` patterns match
/// them: the root first (its name is empty), then each directory below it by its path below
/// `root` (`app/web`), [`LEVELS`] levels down at most, in the order [`walk`]
/// meets them (a name not UTF-8 with U+FFFD for each byte that is not).
pub fn names(system: &System, root: &Path) -> Vec<String> {
    names_within(system, root, LEVELS)
}

/// As [`names`], `levels` levels below `root` at most (0: the root alone).
pub fn names_within(system: &System, root: &Path, levels: usize) -> Vec<String> {
    let walk = walk(system, root, levels, &mut |_, _| true);
    let names = walk.names.into_iter();
    names
        .map(|name| name.to_string_lossy().into_owned())
        .collect()
}

/// Whether directory `path` may hold directories: not where its link count says it holds
/// none (see [`walk`]).
pub(crate) fn holds_directories(system: &System, path: &Path) -> bool {
    system.cgroup_may_have_children(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: the cgroup file system's link counts (kernfs, `kernfs_refresh_inode`: a
    /// directory has 2 links and one more for each directory it holds). A leaf is not listed;
    /// its parent is, and the walk finds every level.
    #[test]
    fn a_leaf_cgroup_is_not_listed_and_every_level_is_found() {
        use counterhal_conformance::fixtures::TestCgroup;
        use counterhal_conformance::skip;
        use counterhal_conformance::skip::Need;
        let Ok(root) = unified_root(&System::host()) else {
            skip!(Need::System, "no cgroup2 mount");
        };
        let Some(top) = TestCgroup::new(&root, "walk-links") else {
            skip!(
                Need::System,
                "cannot make a cgroup below {}",
                root.display()
            );
        };
        let leaf = top.path.join("a/b");
        std::fs::create_dir_all(&leaf).expect("a nested cgroup");
        assert!(holds_directories(&System::host(), &top.path));
        assert!(holds_directories(&System::host(), &top.path.join("a")));
        assert!(!holds_directories(&System::host(), &leaf));
        let names = names_within(&System::host(), &top.path, usize::MAX);
        assert_eq!(names, ["", "a", "a/b"]);
        std::fs::remove_dir(&leaf).ok();
    }

    #[test]
    fn names_join_the_root_and_missing_ones_name_the_path() {
        let root = std::env::temp_dir();
        assert_eq!(find_in(&root, "/").unwrap(), root);
        let missing = find_in(&root, "counterhal-no-such-cgroup").unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        assert_eq!(
            missing.message(),
            format!(
                "no access to cgroup {}",
                root.join("counterhal-no-such-cgroup").display()
            )
        );
        for bad in ["", "a/../..", ".."] {
            let e = find_in(&root, bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad}");
        }
    }

    /// A tree deeper than a path may be (2,100 levels of `d`, made with `mkdir -p` from
    /// inside it) is walked on a thread with a 64 KiB stack: [`LEVELS`] down by
    /// default, the directory at the bound that holds more counted once; with no bound on
    /// the levels, down to the last directory whose path fits in `PATH_MAX`, the one past it
    /// counted once.
    ///
    /// Oracle: GNU find(1) (findutils 4.9, Debian 12), which walks any depth, and Linux's PATH_MAX
    /// (include/uapi/linux/limits.h: 4,096 bytes, the NUL included).
    #[cfg(unix)]
    #[test]
    fn a_tree_deeper_than_any_bound_is_walked_within_them_on_a_small_stack() {
        use counterhal_conformance::skip;
        use counterhal_conformance::skip::Need;
        let root = std::env::temp_dir().join(format!("counterhal-deep-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let made = std::process::Command::new("sh")
            .arg("-c")
            .arg("p=$(printf 'd/%.0s' $(seq 700)); cd \"$1\" && for i in 1 2 3; do mkdir -p $p && cd -P $p || exit 1; done")
            .arg("sh")
            .arg(&root)
            .status();
        let find = std::process::Command::new("find")
            .arg(&root)
            .args(["-mindepth", "1", "-type", "d", "-printf", "%P\\n"])
            .output();
        let walked = {
            let root = root.clone();
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    let by_default = walk(&System::host(), &root, LEVELS, &mut |_, _| true);
                    let unbounded = walk(&System::host(), &root, usize::MAX, &mut |_, _| true);
                    (by_default, unbounded)
                })
                .unwrap()
                .join()
        };
        std::process::Command::new("rm")
            .arg("-rf")
            .arg(&root)
            .status()
            .ok();
        let (Ok(made), Ok(find)) = (made, find) else {
            skip!(Need::Platform, "sh, mkdir or find(1) did not run here");
        };
        let gnu = std::process::Command::new("find")
            .arg("--version")
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("GNU findutils"));
        if !gnu {
            skip!(
                Need::Platform,
                "find(1) here is not GNU find, the oracle (busybox's has no -printf)"
            );
        }
        assert!(made.success(), "mkdir: {made}");
        assert!(find.status.success(), "find: {}", find.status);
        let (by_default, unbounded) = walked.expect("the walk on a 64 KiB stack");
        let found: Vec<PathBuf> = String::from_utf8_lossy(&find.stdout)
            .lines()
            .map(PathBuf::from)
            .collect();
        assert_eq!(found.len(), 2100, "find's levels");
        let levels = |name: &PathBuf| name.components().count();
        let fits = |name: &PathBuf| root.join(name).as_os_str().len() < 4096;
        let expect = |keep: &dyn Fn(&PathBuf) -> bool| {
            let kept = found.iter().filter(|name| keep(name)).cloned();
            std::iter::once(PathBuf::new())
                .chain(kept)
                .collect::<Vec<_>>()
        };
        assert_eq!(by_default.names, expect(&|n| levels(n) <= LEVELS));
        assert_eq!((by_default.too_deep, by_default.too_long), (1, 0));
        assert_eq!(unbounded.names, expect(&fits));
        assert_eq!((unbounded.too_deep, unbounded.too_long), (0, 1));
    }

    /// Oracle: perf 6.1's `evlist__expand_cgroup` (tools/perf/util/cgroup.c), which reads a
    /// list as patterns when it holds one of `{}[]()|*+?^$`; and find(1), whose
    /// `find ROOT -mindepth 1 -type d -printf '%P\n'` meets the directories in the same
    /// order (depth first, each before what it holds, in the order the directory lists them).
    #[test]
    fn cgroup_names_are_the_directories_find_meets_in_its_order() {
        assert!(is_pattern("ch.*") && is_pattern("a,^b"));
        assert!(!is_pattern("a.b,c/d") && !is_pattern(""));
        let root = std::env::temp_dir().join(format!("counterhal-names-{}", std::process::id()));
        for dir in ["cha", "chb/sub/deeper", "other", "chb/two"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("chb/cgroup.procs"), "").unwrap();
        let names = names(&System::host(), &root);
        let find = std::process::Command::new("find")
            .arg(&root)
            .args(["-mindepth", "1", "-type", "d", "-printf", "%P\\n"])
            .output();
        std::fs::remove_dir_all(&root).unwrap();
        let Some(find) = find.ok().filter(|out| out.status.success()) else {
            counterhal_conformance::skip!(
                counterhal_conformance::skip::Need::Platform,
                "find(1) did not run here"
            );
        };
        let found: Vec<String> = String::from_utf8_lossy(&find.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(names[0], "", "the root first: {names:?}");
        assert_eq!(names[1..], found, "ours (left) and find's");
    }
}
