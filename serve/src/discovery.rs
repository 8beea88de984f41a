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

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use counterhal::Error;

use super::health::Health;

/// What `--cgroups` follows.
#[derive(Debug, Default)]
pub struct Watch {
    /// The cgroup mount; `None` without `--cgroups`.
    root: Option<PathBuf>,
    /// The items given, joined with commas (perf's list).
    list: String,
    /// Whether the list holds patterns (else names).
    patterns: bool,
    /// The list's patterns, compiled (its empty items, the root, left out).
    expressions: Vec<regex::Regex>,
    /// `--cgroup-depth`: the most levels below the mount a cgroup followed may be.
    depth: Option<usize>,
    /// Whether every cgroup within `depth` is followed (`--cgroup-depth` without
    /// `--cgroups`).
    every: bool,
    /// The most cgroups followed.
    max: usize,
    /// The cgroups followed, by label (`/app/web`; the root `/`).
    followed: Vec<Arc<str>>,
    /// The cgroups matched but left out at the last discovery.
    left_out: HashSet<String>,
    /// The cgroups below the mount as the last walk found them.
    tree: Tree,
    /// How many cgroups matched at the last discovery.
    matched: Option<usize>,
}

/// The cgroups below the mount that matched at the last walk, walked again only when a
/// directory was made, removed or renamed in one of the directories walked (inotify, on
/// Linux: a walk reads every cgroup's directory, 4.9 ms a scrape with 1,000 cgroups, and
/// Prometheus asks every 15 s or so for what changes far more rarely), and at every scrape
/// where the directories cannot all be watched (`fs.inotify.max_user_watches`).
#[derive(Debug, Default)]
struct Tree {
    /// The last walk's root and depth, and the names that matched.
    last: Option<(PathBuf, usize, Vec<String>)>,
    /// The directories of the last walk, watched; `None` where one could not be.
    #[cfg(target_os = "linux")]
    watch: Option<crate::sys::DirectoryWatch>,
    /// The walks made.
    walks: u64,
}

impl Tree {
    /// Walks the mount again where a directory came or went since the last walk (or `root`
    /// or `levels` changed), keeping the names `matches` takes; whether it walked.
    fn refresh(&mut self, root: &Path, levels: usize, matches: impl Fn(&str) -> bool) -> bool {
        #[cfg(target_os = "linux")]
        let unchanged = self.watch.as_ref().is_some_and(|w| !w.changed());
        #[cfg(not(target_os = "linux"))]
        let unchanged = false;
        let same = matches!(&self.last, Some((r, l, _)) if r == root && *l == levels);
        if !(unchanged && same) {
            #[cfg(target_os = "linux")]
            let names = {
                let watch = crate::sys::DirectoryWatch::new();
                let mut watching = watch.is_some();
                let names = counterhal::cgroup_names_visiting(root, levels, &mut |dir| {
                    watching = watching && watch.as_ref().is_some_and(|w| w.watch(dir));
                });
                self.watch = watch.filter(|_| watching);
                names
            };
            #[cfg(not(target_os = "linux"))]
            let names = counterhal::cgroup_names_within(root, levels);
            let names = names.into_iter().filter(|name| matches(name)).collect();
            self.last = Some((root.to_path_buf(), levels, names));
            self.walks += 1;
            return true;
        }
        false
    }

    /// The names that matched at the last walk.
    fn matched(&self) -> &[String] {
        self.last.as_ref().map_or(&[], |(_, _, names)| names)
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
    /// [`counterhal::cgroup_root`] where no cgroup file system is mounted.
    pub fn new(items: &[String], depth: Option<usize>, max: usize) -> Result<Watch, Error> {
        if items.is_empty() && depth.is_none() {
            return Ok(Watch::default());
        }
        let list = items.join(",");
        let patterns = counterhal::is_cgroup_pattern(&list);
        let expressions = match patterns {
            true => compile(&list)?,
            false => Vec::new(),
        };
        Ok(Watch {
            root: Some(counterhal::cgroup_root()?),
            list,
            patterns,
            expressions,
            depth,
            every: items.is_empty(),
            max,
            followed: Vec::new(),
            left_out: HashSet::new(),
            tree: Tree::default(),
            matched: None,
        })
    }

    /// Whether any cgroup is followed (`--cgroups` or `--cgroup-depth` given).
    pub fn follows(&self) -> bool {
        self.root.is_some()
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
        let levels = self.depth.unwrap_or(usize::MAX);
        let names: Vec<String> = if self.patterns || self.every {
            let root_too = !self.every && self.list.split(',').any(str::is_empty);
            let (every, expressions) = (self.every, &self.expressions);
            let walked = self
                .tree
                .refresh(root, levels, |name| match name.is_empty() {
                    true => root_too,
                    false => every || expressions.iter().any(|e| e.is_match(name)),
                });
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
                .filter(|name| root.join(name).is_dir())
                .map(str::to_string)
                .collect()
        };
        let labels: Vec<String> = names.iter().map(|name| format!("/{name}")).collect();
        let present: HashSet<&str> = labels.iter().map(String::as_str).collect();
        self.followed
            .retain(|followed| present.contains(&**followed));
        let mut following: HashSet<Arc<str>> = self.followed.iter().cloned().collect();
        let mut left_out = HashSet::new();
        for label in labels.iter() {
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
            "counterhal: {what}{depth} matches {matched} cgroups now; {followed} followed\n"
        ))
    }

    /// The directory of the cgroup labelled `label`.
    pub fn directory(&self, label: &str) -> PathBuf {
        let root = self.root.clone().unwrap_or_default();
        root.join(label.trim_start_matches('/'))
    }
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
        let patterns = counterhal::is_cgroup_pattern(list);
        Watch {
            root: Some(root.to_path_buf()),
            list: list.to_string(),
            patterns,
            expressions: if patterns {
                compile(list).unwrap()
            } else {
                Vec::new()
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
        let health = Health::new("linux");
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
        let Ok(root) = counterhal::unified_cgroup_root() else {
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
        let health = Health::new("linux");
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
        let health = Health::new("linux");
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

    #[test]
    fn bad_patterns_are_refused_with_the_reason() {
        let error = Watch::new(&["(a".to_string()], None, 4).unwrap_err();
        assert!(
            error.message().contains("--cgroups pattern `(a`"),
            "{error}"
        );
        assert!(error.message().contains("unclosed group"), "{error}");
    }
}
