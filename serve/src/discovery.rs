//! The cgroups `--cgroups` follows, found again at each scrape (the mount walked again where
//! inotify saw a directory made, removed or renamed, see [`Tree`]): perf's `--for-each-cgroup`
//! list (names; a list holding one of `{}[]()|*+?^$` is patterns, an empty item the root),
//! but its patterns are the regular expressions Prometheus users write (Go's RE2 syntax, in
//! which POSIX extended expressions such as `^a/(b|c)$` mean what they mean to `grep -E`),
//! not perf's basic ones, each matched anywhere in the path below the mount.
//! `--cgroup-depth N` keeps to the cgroups at most N levels below the mount (the walk goes no
//! deeper); alone, it follows every cgroup 1 to N levels down.
//! A cgroup followed stays followed while it matches; one that appears takes a free place
//! among the `--max-cgroups`, in the order a walk of the mount meets them; one matched
//! beyond the bound is left out and counted once, when first left out.
//! The walk looks only in the directories below which a pattern could match ([`reach`]),
//! [`counterhal::cgroups::LEVELS`] levels down unless `--cgroup-depth` says otherwise, and
//! never past `PATH_MAX`; a cgroup's label is its path, escaped where it is not UTF-8
//! ([`crate::labels::cgroup`]).

mod reach;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use counterhal::Error;

use super::health::Health;
use reach::Reach;

/// What `--cgroups` follows.
#[derive(Debug, Default)]
pub struct Watch {
    /// The system whose cgroup mount is walked.
    system: counterhal_system::System,
    /// The cgroup mount; `None` without `--cgroups`.
    root: Option<PathBuf>,
    /// The items given, joined with commas (perf's list).
    list: String,
    /// Whether the list holds patterns (else names).
    patterns: bool,
    /// The list's patterns, compiled (its empty items, the root, left out).
    expressions: Vec<regex::Regex>,
    /// The directories the walk looks in: those below which a pattern could match.
    reach: Reach,
    /// `--cgroup-depth`: the most levels below the mount a cgroup followed may be.
    depth: Option<usize>,
    /// Whether every cgroup within `depth` is followed (`--cgroup-depth` without
    /// `--cgroups`).
    every: bool,
    /// The most cgroups followed.
    max: usize,
    /// The cgroups followed, by label (`/app/web`; the root `/`).
    followed: Vec<Arc<str>>,
    /// The directories of the cgroups followed, by label.
    directories: HashMap<Arc<str>, PathBuf>,
    /// The cgroups matched but left out at the last discovery.
    left_out: HashSet<String>,
    /// The cgroups below the mount as the last walk found them.
    tree: Tree,
    /// How many cgroups matched at the last discovery.
    matched: Option<usize>,
}

/// A cgroup found: its label and its directory.
type Found = (String, PathBuf);

/// The cgroups below the mount that matched at the last walk, walked again only when a
/// directory was made, removed or renamed in one of the directories walked (inotify, on
/// Linux: a walk reads every cgroup's directory, 4.9 ms with 1,000 cgroups, and cgroups
/// change far more rarely than that), and at every look where the directories cannot all be
/// watched (`fs.inotify.max_user_watches`). The follower thread waits on the
/// same watch, so that a cgroup made is followed when it appears, not at the next scrape.
#[derive(Debug, Default)]
struct Tree {
    /// The last walk's root and depth, and the cgroups that matched.
    last: Option<(PathBuf, usize, Vec<Found>)>,
    /// The directories the last walk looked in where a child could match (and how many
    /// levels below one could), and those it met that did not match.
    adopting: Vec<(PathBuf, u8)>,
    passed_over: Vec<PathBuf>,
    /// Every directory walked, watched (one instance for the exporter's life: the kernel
    /// drops a removed directory's watch itself); `None` where none could be made.
    #[cfg(target_os = "linux")]
    watch: Option<Arc<crate::sys::DirectoryWatch>>,
    /// Whether every directory of the last walk is watched (else each look walks again).
    #[cfg(target_os = "linux")]
    watching: bool,
    /// The walks made.
    walks: u64,
    /// Whether the last walk stopped short of directories at its bounds (said on standard
    /// error when it first does).
    stopped: bool,
}

impl Tree {
    /// Walks the mount again where a directory came or went since the last walk (or `root`
    /// or `levels` changed), looking in the directories whose text (a cgroup's label less its
    /// `/`) `look_in` takes and keeping the cgroups whose text `matches` takes; whether it
    /// walked. Where it stops short of directories at `PATH_MAX`, or at `levels` (if
    /// `levels_said`: not `--cgroup-depth`'s), it says so once.
    #[allow(clippy::too_many_arguments)]
    fn refresh(
        &mut self,
        system: &counterhal_system::System,
        root: &Path,
        levels: usize,
        levels_said: bool,
        look_in: impl Fn(&str) -> bool,
        matches: impl Fn(&str) -> bool,
        child_may_match: impl Fn(&str) -> Option<u8>,
    ) -> bool {
        #[cfg(target_os = "linux")]
        let unchanged = self.watching && self.watch.as_ref().is_some_and(|w| !w.changed());
        #[cfg(not(target_os = "linux"))]
        let unchanged = false;
        let same = matches!(&self.last, Some((r, l, _)) if r == root && *l == levels);
        if unchanged && same {
            return false;
        }
        #[cfg(target_os = "linux")]
        if self.watch.is_none() {
            self.watch = crate::sys::DirectoryWatch::new().map(Arc::new);
        }
        #[cfg(target_os = "linux")]
        let watch = self.watch.clone();
        #[cfg(target_os = "linux")]
        let mut watching = watch.is_some();
        let mut adopting = Vec::new();
        let walk = counterhal::cgroups::walk(system, root, levels, &mut |path, name| {
            let text = crate::labels::cgroup::text(name);
            if !look_in(&text) {
                return false;
            }
            if let Some(levels) = child_may_match(&text) {
                adopting.push((path.to_path_buf(), levels));
            }
            #[cfg(target_os = "linux")]
            {
                watching = watching && watch.as_ref().is_some_and(|w| w.watch(path));
            }
            true
        });
        self.adopting = adopting;
        #[cfg(target_os = "linux")]
        {
            self.watching = watching;
        }
        let mut found = Vec::new();
        self.passed_over.clear();
        for name in &walk.names {
            let text = crate::labels::cgroup::text(name);
            if matches(&text) {
                found.push((format!("/{text}"), root.join(name)));
            } else if !text.is_empty() {
                self.passed_over.push(root.join(name));
            }
        }
        self.last = Some((root.to_path_buf(), levels, found));
        self.walks += 1;
        let too_deep = if levels_said { walk.too_deep } else { 0 };
        let mut left_out = Vec::new();
        if too_deep > 0 {
            left_out.push(format!(
                "below {too_deep} directories {levels} levels down (--cgroup-depth N walks N)"
            ));
        }
        if walk.too_long > 0 {
            left_out.push(format!(
                "{} directories whose paths pass {} bytes (PATH_MAX)",
                walk.too_long,
                counterhal::cgroups::PATH_MAX
            ));
        }
        let stopped = !left_out.is_empty();
        if stopped && !self.stopped {
            crate::log::warn(
                "cgroups left out of the walk",
                &[("root", &root.display()), ("reason", &left_out.join("; "))],
            );
        }
        self.stopped = stopped;
        true
    }

    /// The cgroups that matched at the last walk.
    fn matched(&self) -> &[Found] {
        self.last.as_ref().map_or(&[], |(_, _, found)| found)
    }
}

impl Watch {
    /// Follows the cgroups `items` name or match, no deeper than `depth` levels below the
    /// mount; without items, every cgroup 1 to `depth` levels down (none without `depth`
    /// either); at most `max`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput) for a pattern that
    /// is not a regular expression (with the reason and where); as
    /// [`counterhal::cgroups::root`] where no cgroup file system is mounted.
    pub fn new(
        system: &counterhal_system::System,
        items: &[String],
        depth: Option<usize>,
        max: usize,
    ) -> Result<Watch, Error> {
        if items.is_empty() && depth.is_none() {
            return Ok(Watch {
                system: system.clone(),
                ..Watch::default()
            });
        }
        let list = items.join(",");
        let patterns = counterhal::cgroups::is_pattern(&list);
        let (expressions, reach) = match patterns {
            true => (compile(&list)?, reach_of(&list)),
            false => (Vec::new(), Reach::default()),
        };
        Ok(Watch {
            system: system.clone(),
            root: Some(counterhal::cgroups::root(system)?),
            list,
            patterns,
            expressions,
            reach,
            depth,
            every: items.is_empty(),
            max,
            followed: Vec::new(),
            directories: HashMap::new(),
            left_out: HashSet::new(),
            tree: Tree::default(),
            matched: None,
        })
    }

    /// Whether any cgroup is followed (`--cgroups` or `--cgroup-depth` given).
    pub fn follows(&self) -> bool {
        self.root.is_some()
    }

    /// The walks made so far: one more means [`parents`](Watch::parents) and
    /// [`passed_over`](Watch::passed_over) are new.
    pub fn walks(&self) -> u64 {
        self.tree.walks
    }

    /// The directories the last walk looked in where a child could match (the BPF mode
    /// counts their new children from their first switch, where only root makes them), each
    /// with how many levels below a cgroup could match (their adopted children adopt their
    /// own, one level fewer each; [`u8::MAX`]: any number).
    pub fn parents(&self) -> &[(PathBuf, u8)] {
        &self.tree.adopting
    }

    /// The directories the last walk met that match no pattern, and those matched but left
    /// out for `--max-cgroups` (not to be counted where a parent's new children are).
    pub fn passed_over(&self) -> Vec<PathBuf> {
        let root = self.root.clone().unwrap_or_default();
        let left_out = self
            .left_out
            .iter()
            .map(|label| root.join(label.trim_start_matches('/')));
        self.tree
            .passed_over
            .iter()
            .cloned()
            .chain(left_out)
            .collect()
    }

    /// The watch of the directories walked, which reports a cgroup made or removed there;
    /// `None` before the first look, without `--cgroups`, or where none could be made.
    #[cfg(target_os = "linux")]
    pub fn watched(&self) -> Option<Arc<crate::sys::DirectoryWatch>> {
        self.tree.watch.clone()
    }

    /// Looks for the cgroups below `root` (the cgroup v2 mount the BPF mode counts in,
    /// where a v1 hierarchy has the perf_event controller), not the mount found at start.
    pub fn root_at(&mut self, root: PathBuf) {
        if self.root.is_some() {
            self.root = Some(root);
        }
    }

    /// The cgroups to count now, by label, after looking again (none without `--cgroups`);
    /// `health` learns how many matched, how many are followed and how many were left out.
    pub fn discover(&mut self, health: &Health) -> Vec<Arc<str>> {
        let Some(root) = &self.root else {
            return Vec::new();
        };
        let levels = self.depth.unwrap_or(counterhal::cgroups::LEVELS);
        let found: Vec<Found> = if self.patterns || self.every {
            let root_too = !self.every && self.list.split(',').any(str::is_empty);
            let (every, expressions, reach) = (self.every, &self.expressions, &self.reach);
            let walked = self.tree.refresh(
                &self.system,
                root,
                levels,
                self.depth.is_none(),
                |text| reach.leads_below(text),
                |text| match text.is_empty() {
                    true => root_too,
                    false => every || expressions.iter().any(|e| e.is_match(text)),
                },
                |text| match every {
                    true => Some(reach::EVERY_LEVEL),
                    false => reach
                        .child_may_match(text)
                        .then(|| reach.levels_below(text).max(1)),
                },
            );
            // Nothing came or went: what is followed and left out is what it was.
            if !walked && let Some(matched) = self.matched {
                health.cgroups(matched, self.followed.len(), 0);
                return self.followed.clone();
            }
            self.tree.matched().to_vec()
        } else {
            let within = |name: &&str| name.split('/').filter(|p| !p.is_empty()).count() <= levels;
            self.list
                .split(',')
                .filter(within)
                .map(|name| (format!("/{name}"), root.join(name)))
                .filter(|(_, directory)| directory.is_dir())
                .collect()
        };
        let labels: Vec<&String> = found.iter().map(|(label, _)| label).collect();
        let present: HashSet<&str> = labels.iter().map(|label| label.as_str()).collect();
        self.followed
            .retain(|followed| present.contains(&**followed));
        let mut following: HashSet<Arc<str>> = self.followed.iter().cloned().collect();
        let mut left_out = HashSet::new();
        for &label in labels.iter() {
            if following.contains(label.as_str()) {
                continue;
            }
            if self.followed.len() < self.max {
                let label: Arc<str> = Arc::from(label.as_str());
                following.insert(label.clone());
                self.followed.push(label);
            } else {
                left_out.insert(label.clone());
            }
        }
        let directories: HashMap<&str, &PathBuf> = found
            .iter()
            .map(|(label, directory)| (label.as_str(), directory))
            .collect();
        self.directories = self
            .followed
            .iter()
            .filter_map(|label| Some((label.clone(), directories.get(&**label)?.to_path_buf())))
            .collect();
        let newly = left_out
            .iter()
            .filter(|label| !self.left_out.contains(*label))
            .count();
        self.left_out = left_out;
        self.matched = Some(labels.len());
        health.cgroups(labels.len(), self.followed.len(), newly);
        self.followed.clone()
    }

    /// What `--cgroups` said it follows, for standard error at start: how many cgroups it
    /// matched, and in which dialect where it took patterns.
    pub fn said(&self, health: &Health) -> Option<String> {
        self.root.as_ref()?;
        let (matched, followed) = health.cgroups_now();
        let dialect = match self.patterns {
            true => " (extended regular expressions, RE2's syntax, matched anywhere in the path)",
            false => "",
        };
        let depth = self.depth.map_or(String::new(), |n| {
            format!(" within {n} levels of the mount")
        });
        let what = match self.every {
            true => "--cgroup-depth: every cgroup".to_string(),
            false => format!("--cgroups {}{dialect}", self.list),
        };
        Some(format!(
            "{what}{depth} matches {matched} cgroups now; {followed} followed"
        ))
    }

    /// The directory of the cgroup labelled `label` (one followed: its own, whatever its
    /// name's bytes; else the label's path below the mount).
    pub fn directory(&self, label: &str) -> PathBuf {
        if let Some(directory) = self.directories.get(label) {
            return directory.clone();
        }
        let root = self.root.clone().unwrap_or_default();
        root.join(label.trim_start_matches('/'))
    }
}

/// The directories the walk for the patterns of `list` looks in (the root, an empty item, is
/// always looked in).
fn reach_of(list: &str) -> Reach {
    let patterns: Vec<&str> = list.split(',').filter(|item| !item.is_empty()).collect();
    Reach::new(&patterns, SIZE_LIMIT)
}

/// The largest a compiled pattern may grow (its automaton), far past any cgroup pattern.
const SIZE_LIMIT: usize = 1 << 20;

/// The patterns of `list` (its empty items, the root, left out), compiled.
///
/// # Errors
/// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput): a pattern that does not
/// compile (or would grow past [`SIZE_LIMIT`]), with the reason.
fn compile(list: &str) -> Result<Vec<regex::Regex>, Error> {
    let compile = |item: &str| {
        regex::RegexBuilder::new(item)
            .size_limit(SIZE_LIMIT)
            .build()
            .map_err(|e| {
                Error::invalid_input(format!("--cgroups pattern `{item}`: {e}")).with_hint(
                    "an extended regular expression, as Prometheus and grep -E write them \
                     (e.g. `^system.slice/(a|b)[.]service$`)",
                )
            })
    };
    list.split(',')
        .filter(|item| !item.is_empty())
        .map(compile)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(root: &std::path::Path, list: &str, max: usize) -> Watch {
        let patterns = counterhal::cgroups::is_pattern(list);
        Watch {
            root: Some(root.to_path_buf()),
            list: list.to_string(),
            patterns,
            expressions: if patterns {
                compile(list).unwrap()
            } else {
                Vec::new()
            },
            reach: if patterns {
                reach_of(list)
            } else {
                Reach::default()
            },
            max,
            ..Watch::default()
        }
    }

    /// Cgroups that appear are followed up to the bound, those past it counted once, those
    /// that go dropped; a cgroup followed keeps its place while it matches.
    #[test]
    fn cgroups_are_followed_as_they_come_and_go_within_the_bound() {
        let root = std::env::temp_dir().join(format!("counterhal-watch-{}", std::process::id()));
        let health = Health::new("linux", &counterhal_system::System::host());
        std::fs::create_dir_all(root.join("app/b")).unwrap();
        let mut w = watch(&root, "^app", 2);
        let labels = |v: Vec<Arc<str>>| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(labels(w.discover(&health)), ["/app", "/app/b"]);
        std::fs::create_dir_all(root.join("app/a")).unwrap();
        assert_eq!(labels(w.discover(&health)), ["/app", "/app/b"]);
        assert_eq!(health.cgroups_dropped(), 1);
        // Left out again: not counted again.
        w.discover(&health);
        assert_eq!(health.cgroups_dropped(), 1);
        std::fs::remove_dir(root.join("app/b")).unwrap();
        assert_eq!(labels(w.discover(&health)), ["/app", "/app/a"]);
        // Names (no pattern) are followed while their directory exists; an empty one is
        // the root.
        let mut names = watch(&root, "app/a,,nothing", 8);
        assert_eq!(labels(names.discover(&health)), ["/app/a", "/"]);
        assert_eq!(names.directory("/app/a"), root.join("app/a"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// On the cgroup file system, the mount is walked again only when a cgroup was made or
    /// removed below it: cgroups made and removed between scrapes are found, and a scrape
    /// with nothing changed reads no directory.
    ///
    /// Oracle: inotify(7) on the cgroup file system (the VFS notifies a cgroup's `mkdir` and
    /// `rmdir` to the watches of its parent).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_mount_is_walked_again_when_a_cgroup_comes_or_goes() {
        use counterhal_conformance::fixtures::TestCgroup;
        use counterhal_conformance::skip;
        use counterhal_conformance::skip::Need;
        let Ok(root) = counterhal::cgroups::unified_root(&counterhal_system::System::host()) else {
            skip!(Need::System, "no cgroup2 mount");
        };
        let Some(top) = TestCgroup::new(&root, "discovery-inotify") else {
            skip!(
                Need::System,
                "cannot make a cgroup below {}",
                root.display()
            );
        };
        std::fs::create_dir(top.path.join("a")).expect("a cgroup");
        let health = Health::new("linux", &counterhal_system::System::host());
        let mut w = watch(&root, &format!("^{}/", top.name), 8);
        let labels = |v: Vec<Arc<str>>| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let a = format!("/{}/a", top.name);
        let b = format!("/{}/a/b", top.name);
        assert_eq!(labels(w.discover(&health)), [a.as_str()]);
        assert_eq!(w.tree.walks, 1);
        assert_eq!(labels(w.discover(&health)), [a.as_str()]);
        assert_eq!(w.tree.walks, 1, "nothing changed: no walk");
        std::fs::create_dir(top.path.join("a/b")).expect("a nested cgroup");
        assert_eq!(labels(w.discover(&health)), [a.as_str(), b.as_str()]);
        assert_eq!(w.tree.walks, 2);
        std::fs::remove_dir(top.path.join("a/b")).expect("rmdir");
        assert_eq!(labels(w.discover(&health)), [a.as_str()]);
        assert_eq!(w.tree.walks, 3);
    }

    /// `--cgroup-depth` keeps the patterns, the names and (alone) every cgroup to its levels,
    /// the root left out where no empty item names it.
    #[test]
    fn cgroup_depth_keeps_to_its_levels() {
        let root = std::env::temp_dir().join(format!("counterhal-depth-{}", std::process::id()));
        let health = Health::new("linux", &counterhal_system::System::host());
        std::fs::create_dir_all(root.join("k/pod-a/container")).unwrap();
        std::fs::create_dir_all(root.join("k/pod-b")).unwrap();
        std::fs::create_dir_all(root.join("system")).unwrap();
        let labels = |mut w: Watch| {
            let mut v: Vec<String> = w.discover(&health).iter().map(|s| s.to_string()).collect();
            v.sort();
            v
        };
        let depth = |mut w: Watch, n| {
            w.depth = Some(n);
            w
        };
        assert_eq!(
            labels(depth(watch(&root, "^k/", 8), 2)),
            ["/k/pod-a", "/k/pod-b"]
        );
        assert_eq!(
            labels(watch(&root, "^k/", 8)),
            ["/k/pod-a", "/k/pod-a/container", "/k/pod-b"]
        );
        assert_eq!(
            labels(depth(watch(&root, "k/pod-a/container,k/pod-b", 8), 2)),
            ["/k/pod-b"]
        );
        let mut every = depth(Watch::default(), 1);
        (every.root, every.every, every.max) = (Some(root.clone()), true, 8);
        assert_eq!(labels(every), ["/k", "/system"]);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A tree of thousands of directories beside the ones a pattern is anchored to holds a
    /// handful of watches: the walk looks only where the pattern could match (the shipped
    /// unit's patterns: the mount and `system.slice`); an unanchored pattern watches all.
    ///
    /// Oracle: the kernel's list of an inotify instance's watches, one `inotify wd:` line
    /// each in `/proc/self/fdinfo` (fs/notify/fdinfo.c).
    #[cfg(target_os = "linux")]
    #[test]
    fn an_anchored_pattern_watches_only_where_it_could_match() {
        let root = std::env::temp_dir().join(format!("counterhal-prune-{}", std::process::id()));
        for dir in [
            "wanted/a",
            "system.slice/a.service/inner",
            "user.slice/u.service",
        ] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        for i in 0..1500 {
            std::fs::create_dir_all(root.join(format!("unrelated/{i}/x"))).unwrap();
        }
        let health = Health::new("linux", &counterhal_system::System::host());
        let watches = |list: &str| {
            let mut w = watch(&root, list, 8);
            let labels: Vec<String> = w.discover(&health).iter().map(|l| l.to_string()).collect();
            let watches = w.tree.watch.as_ref().and_then(|w| w.watches());
            (labels, watches)
        };
        let wanted = watches("^wanted/");
        let shipped = watches(r"^system.slice/[^/]*[.]service$,^[^/]+$");
        let everywhere = watches("nrelated/(7)/");
        std::fs::remove_dir_all(&root).unwrap();
        // The mount, wanted and wanted/a.
        assert_eq!(wanted, (vec!["/wanted/a".to_string()], Some(3)));
        // The mount and system.slice.
        let expected = [
            "/system.slice",
            "/system.slice/a.service",
            "/unrelated",
            "/user.slice",
            "/wanted",
        ];
        let (mut labels, watched) = shipped;
        labels.sort();
        assert_eq!(
            (labels, watched),
            (expected.map(String::from).to_vec(), Some(2))
        );
        assert_eq!(everywhere.0, ["/unrelated/7/x"]);
        assert!(everywhere.1 > Some(3000), "{:?}", everywhere.1);
    }

    /// A small random number generator (xorshift64), for trees that are the same at every run.
    struct Random(u64);

    impl Random {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// Random trees as a user who may make cgroups makes them (siblings, a chain deeper than
    /// the walk goes, names of bytes that are not UTF-8, newlines, quotes, backslashes and
    /// what looks like an escape): discovery follows each directory within the walk's bounds
    /// once, under a label of its own, at its own directory; unanchored and anchored patterns
    /// alike.
    ///
    /// Oracle: find(1), which lists the same directories
    /// (`find ROOT -mindepth 2 -maxdepth 64 -type d -print0`).
    #[cfg(unix)]
    #[test]
    fn random_hostile_trees_are_followed_once_each_under_labels_of_their_own() {
        use std::ffi::OsString;
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        let atoms: [&[u8]; 14] = [
            b"a",
            b"\\",
            b"X",
            b"F",
            b"0",
            b"\n",
            b"\"",
            b" ",
            b"{",
            b"*",
            "\u{e9}".as_bytes(),
            b"\xff",
            b"\xfe",
            b"\\XFF",
        ];
        let mut random = Random(0x6c62_272e_07bb_0142);
        let base = std::env::temp_dir().join(format!("counterhal-hostile-{}", std::process::id()));
        for case in 0..8 {
            let root = base.join(case.to_string());
            let mut dirs = vec![PathBuf::from("t")];
            std::fs::create_dir_all(root.join("t")).unwrap();
            for _ in 0..random.below(300) {
                let parent = dirs[random.below(dirs.len())].clone();
                let mut name = Vec::new();
                for _ in 0..=random.below(3) {
                    name.extend_from_slice(atoms[random.below(atoms.len())]);
                }
                let dir = parent.join(OsString::from_vec(name));
                if std::fs::create_dir(root.join(&dir)).is_ok() {
                    dirs.push(dir);
                }
            }
            let mut chain = dirs[random.below(dirs.len())].clone();
            for _ in 0..random.below(150) {
                chain.push("d");
                std::fs::create_dir(root.join(&chain)).unwrap();
            }
            let find = std::process::Command::new("find")
                .arg(&root)
                .args(["-mindepth", "2", "-maxdepth", "64", "-type", "d", "-print0"])
                .output()
                .expect("find(1)");
            let mut found: Vec<PathBuf> = find
                .stdout
                .split(|&b| b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
                .collect();
            found.sort();
            for list in ["^t/", "(?s)."] {
                let health = Health::new("linux", &counterhal_system::System::host());
                let mut w = watch(&root, list, usize::MAX);
                let labels = w.discover(&health);
                let distinct: HashSet<&str> = labels.iter().map(|l| &**l).collect();
                assert_eq!(
                    distinct.len(),
                    labels.len(),
                    "case {case}, {list}: two share a label"
                );
                let mut directories: Vec<PathBuf> = labels.iter().map(|l| w.directory(l)).collect();
                directories.retain(|d| d != &root.join("t"));
                directories.sort();
                assert_eq!(directories, found, "case {case}, {list}");
            }
            std::fs::remove_dir_all(&root).unwrap();
        }
        std::fs::remove_dir_all(&base).ok();
    }

    #[test]
    fn bad_patterns_are_refused_with_the_reason() {
        let error = Watch::new(
            &counterhal_system::System::host(),
            &["(a".to_string()],
            None,
            4,
        )
        .unwrap_err();
        assert!(
            error.message().contains("--cgroups pattern `(a`"),
            "{error}"
        );
        assert!(error.message().contains("unclosed group"), "{error}");
    }
}
