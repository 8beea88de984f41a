//! tracefs (Documentation/trace/ftrace.rst): where it is mounted, its tracepoints
//! (`events/SUBSYSTEM/EVENT/`) and each one's `id`, the number `perf_event_attr.config` names
//! it by. Its files are read by the one rule in a tree rooted at its mount, in which no link
//! is followed (the kernel's tracefs has none). A `list` looks at thousands of tracepoints: its
//! caller keeps the [`Tracefs`] found ([`System::tracefs`]) rather than looking for it again
//! at each.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::roots::System;
use crate::rule::Tree;

/// A tracefs root with a readable `events/` directory, and the tree its tracepoints are read
/// in (rooted at that directory, found a directory and no link).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracefs {
    root: PathBuf,
    tree: Tree,
}

/// What the tracefs roots of a system look like to this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TracefsState {
    /// The first root with a readable `events/` directory.
    Mounted(Tracefs),
    /// A root exists but this user may not look inside (tracefs is mode 0700 for root).
    Denied(PathBuf),
    /// No root holds an `events/` directory.
    Absent,
}

/// Where tracefs may be mounted under a sysfs root, in the order perf tries them.
const TRACEFS_UNDER_SYSFS: [&str; 2] = ["kernel/tracing", "kernel/debug/tracing"];

/// The most bytes of a tracepoint's `id` read: a decimal number and a newline.
const ID: usize = 64;

impl TracefsState {
    /// The state of one root, from the result of looking at its `events/` directory; `None`
    /// where it holds none.
    pub fn of(root: &Path, events: &io::Result<fs::Metadata>) -> Option<TracefsState> {
        match events {
            Ok(meta) if meta.is_dir() => Some(TracefsState::Mounted(Tracefs {
                root: root.to_path_buf(),
                tree: Tree::at(&root.join("events"), "tracefs"),
            })),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                Some(TracefsState::Denied(root.to_path_buf()))
            }
            _ => None,
        }
    }

    /// The first of `roots` that holds an `events/` directory, or the first this user may
    /// not enter.
    pub fn find(roots: &[PathBuf]) -> TracefsState {
        let mut denied = None;
        for root in roots {
            let events = Tree::at(root, "tracefs").metadata(&root.join("events"));
            match TracefsState::of(root, &events) {
                Some(mounted @ TracefsState::Mounted(_)) => return mounted,
                Some(TracefsState::Denied(root)) => denied = denied.or(Some(root)),
                _ => {}
            }
        }
        denied.map_or(TracefsState::Absent, TracefsState::Denied)
    }
}

impl Tracefs {
    /// Its root, to name it.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Its `events/` directory, to name it.
    pub fn events_dir(&self) -> PathBuf {
        self.root.join("events")
    }

    /// The subsystems (`events/*/`), sorted.
    pub fn subsystems(&self) -> Vec<String> {
        self.tree.subdirectories(self.events_root())
    }

    /// The events of subsystem `subsystem` (`events/SUBSYSTEM/*/`), sorted; `None` where it
    /// has no such subsystem.
    pub fn events(&self, subsystem: &str) -> Option<Vec<String>> {
        let dir = self.events_root().join(subsystem);
        let is_dir = is_plain(subsystem) && self.tree.metadata(&dir).is_ok_and(|m| m.is_dir());
        is_dir.then(|| self.tree.subdirectories(&dir))
    }

    /// Whether it has tracepoint `subsystem:event` (its `id` a regular file).
    pub fn has_tracepoint(&self, subsystem: &str, event: &str) -> bool {
        is_plain(subsystem)
            && is_plain(event)
            && self
                .tree
                .metadata(&self.id_path(subsystem, event))
                .is_ok_and(|m| m.is_file())
    }

    /// Every tracepoint with an `id` (a regular file), as `subsystem:event`, by subsystem and
    /// event, each with the text of its `id` as [`Tracefs::tracepoint_id`] reads it, or why it
    /// could not be read (`PermissionDenied` where this user may not). One listing of each
    /// subsystem and one look, open and read of each `id`: a listing of the thousands asks no
    /// more of the kernel than that.
    pub fn tracepoints(&self) -> Vec<(String, io::Result<String>)> {
        let events = self.events_root();
        let mut found = Vec::new();
        for subsystem in self.tree.subdirectories(events) {
            let dir = events.join(&subsystem);
            for (event, id) in self.tree.load_in_subdirectories(&dir, "id", ID) {
                let id = id.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
                // Not `format!`: its machinery costs a thousand instructions a name here.
                let mut name = String::with_capacity(subsystem.len() + 1 + event.len());
                name.push_str(&subsystem);
                name.push(':');
                name.push_str(&event);
                found.push((name, id));
            }
        }
        found
    }

    /// The path of tracepoint `subsystem:event`'s `id`, to name it.
    pub fn id_path(&self, subsystem: &str, event: &str) -> PathBuf {
        let events = self.events_root();
        let mut path =
            PathBuf::with_capacity(events.as_os_str().len() + subsystem.len() + event.len() + 5);
        path.push(events);
        path.extend([subsystem, event, "id"]);
        path
    }

    /// Its `events/` directory, its tree's root.
    fn events_root(&self) -> &Path {
        self.tree.root().unwrap_or(&self.root)
    }

    /// The text of tracepoint `subsystem:event`'s `id` (a decimal number and a newline).
    ///
    /// # Errors
    /// As the kernel answers: `NotFound` where there is no such tracepoint (or a name no file
    /// can have: `ENAMETOOLONG`), `PermissionDenied` where this user may not read it,
    /// `InvalidInput` where a part of its path is a link or it is no regular file, and
    /// `InvalidData` where it holds more than 64 bytes (each refusal a
    /// [`Refused`](crate::Refused)).
    pub fn tracepoint_id(&self, subsystem: &str, event: &str) -> io::Result<String> {
        if !is_plain(subsystem) || !is_plain(event) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let bytes = self.tree.load(&self.id_path(subsystem, event), ID)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Whether `name` names one directory of tracefs (no `/`, not `.` or `..`).
fn is_plain(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/')
}

impl System {
    /// Where tracefs may be mounted, in the order perf tries them: the root
    /// [`System::with_tracefs`] named, else `kernel/tracing` and `kernel/debug/tracing` under
    /// the sysfs root (the first is where perf mounts it where it is absent).
    pub(crate) fn tracefs_roots(&self) -> Vec<PathBuf> {
        match &self.tracefs {
            Some(root) => vec![root.clone()],
            None => TRACEFS_UNDER_SYSFS
                .iter()
                .map(|dir| self.sysfs.join(dir))
                .collect(),
        }
    }

    /// tracefs here: the first of its roots mounted (the root [`System::with_tracefs`] named,
    /// else `kernel/tracing` and `kernel/debug/tracing` under the sysfs root, in the order perf
    /// tries them), or the first this user may not enter. Looked for at each call: a caller
    /// that asks again and again (a `list` resolving thousands of tracepoints) keeps the
    /// [`Tracefs`] found.
    pub fn tracefs(&self) -> TracefsState {
        TracefsState::find(&self.tracefs_roots())
    }

    /// Where perf mounts tracefs where it is mounted nowhere: this machine's
    /// `/sys/kernel/tracing`, where that is the first root this system looks in (`None` for a
    /// tree of another machine's or a test's, which nothing is mounted on), and a directory.
    pub fn tracefs_mount_point(&self) -> Option<PathBuf> {
        let first = self.tracefs_roots().into_iter().next()?;
        let host = System::host();
        let standard = host.tracefs_roots().into_iter().next()?;
        let is_dir = host.sys_tree().is_dir(&first).unwrap_or(false);
        (first == standard && is_dir).then_some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: the kernel's errno for a directory this user may not enter (EACCES, tracefs's
    /// mode 0700 for root) and for none there (ENOENT).
    #[test]
    fn permission_denied_is_not_unmounted() {
        let root = Path::new("/sys/kernel/tracing");
        let denied: io::Result<fs::Metadata> = Err(io::Error::from_raw_os_error(libc::EACCES));
        assert_eq!(
            TracefsState::of(root, &denied),
            Some(TracefsState::Denied(root.to_path_buf()))
        );
        let absent: io::Result<fs::Metadata> = Err(io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(TracefsState::of(root, &absent), None);
    }

    /// A tracefs tree of the test's own, laid out as the kernel's (`events/SUBSYSTEM/EVENT/id`):
    /// its tracepoints are listed and their ids read; a link, a FIFO and a name no file can
    /// have are no tracepoints, and nothing waits.
    #[test]
    fn tracepoints_come_from_the_tree_named() {
        let dir =
            std::env::temp_dir().join(format!("counterhal-system-tracefs-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let event = dir.join("events/demo/hello");
        fs::create_dir_all(&event).unwrap();
        fs::write(event.join("id"), "123\n").unwrap();
        fs::create_dir_all(dir.join("events/demo/world")).unwrap();
        let hyphen = dir.join("events/xhci-hcd/xhci_dbg_address");
        fs::create_dir_all(&hyphen).unwrap();
        fs::write(hyphen.join("id"), "77\n").unwrap();
        fs::create_dir_all(dir.join("events/demo/leak")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.join("events/demo/leak/id")).unwrap();
        std::os::unix::fs::symlink(&event, dir.join("events/demo/linked")).unwrap();
        let fifo = dir.join("events/demo/fifo");
        fs::create_dir_all(&fifo).unwrap();
        let fifo_made = std::process::Command::new("mkfifo")
            .arg(fifo.join("id"))
            .status()
            .is_ok_and(|s| s.success());
        let roots = vec![PathBuf::from("/nonexistent/tracing"), dir.clone()];
        let TracefsState::Mounted(tracefs) = TracefsState::find(&roots) else {
            panic!("the tree is a tracefs");
        };
        assert_eq!(tracefs.root(), dir);
        // Each with its id as read, the link, the FIFO and the event without an id left out.
        let listed: Vec<(String, String)> = tracefs
            .tracepoints()
            .into_iter()
            .map(|(name, id)| (name, id.unwrap()))
            .collect();
        let want = [
            ("demo:hello", "123\n"),
            ("xhci-hcd:xhci_dbg_address", "77\n"),
        ];
        assert_eq!(
            listed,
            want.map(|(name, id)| (name.to_string(), id.to_string()))
        );
        assert_eq!(tracefs.subsystems(), ["demo", "xhci-hcd"]);
        let mut demo = vec!["hello", "leak", "world"];
        if fifo_made {
            demo.insert(0, "fifo");
        }
        assert_eq!(tracefs.events("demo").unwrap(), demo);
        assert_eq!(tracefs.events("absent"), None);
        assert_eq!(tracefs.tracepoint_id("demo", "hello").unwrap(), "123\n");
        assert!(tracefs.has_tracepoint("demo", "hello"));
        assert!(!tracefs.has_tracepoint("demo", "world"));
        // A link (the `id`, or an event's directory) and a FIFO are refused as no regular file.
        let fifo = if fifo_made { "fifo" } else { "leak" };
        for (subsystem, event, kind) in [
            ("demo", "world", io::ErrorKind::NotFound),
            ("demo", "leak", io::ErrorKind::InvalidInput),
            ("demo", "linked", io::ErrorKind::InvalidInput),
            ("demo", fifo, io::ErrorKind::InvalidInput),
            ("..", "demo", io::ErrorKind::NotFound),
        ] {
            let error = tracefs.tracepoint_id(subsystem, event).unwrap_err();
            assert_eq!(error.kind(), kind, "{subsystem}:{event}: {error}");
        }
        let overlong = "a".repeat(4100);
        assert!(tracefs.tracepoint_id("demo", &overlong).is_err());
        // An `id` longer than a number is refused by the rule, having read 65 bytes.
        let long = dir.join("events/demo/long");
        fs::create_dir_all(&long).unwrap();
        fs::write(long.join("id"), "1".repeat(65)).unwrap();
        let error = tracefs.tracepoint_id("demo", "long").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}");
        let refused = crate::rule::refused_in(&error).unwrap();
        assert_eq!(refused.why(), &crate::Why::TooLong { most: 64 });
        // A link's refusal names the link's place, never what it leads to.
        let error = tracefs.tracepoint_id("demo", "leak").unwrap_err();
        let shown = error.to_string();
        assert!(
            shown.contains("events/demo/leak/id") && !shown.contains("hostname"),
            "{shown}"
        );
        fs::remove_dir_all(&long).unwrap();
        assert_eq!(
            TracefsState::find(&[PathBuf::from("/nonexistent")]),
            TracefsState::Absent
        );
        let system = System::host().with_tracefs(&dir);
        assert_eq!(system.tracefs_roots(), std::slice::from_ref(&dir));
        assert_eq!(system.tracefs(), TracefsState::Mounted(tracefs));
        assert_eq!(
            System::host().tracefs_roots()[0],
            Path::new("/sys/kernel/tracing")
        );
        // Under a sysfs root, `kernel/debug/tracing` where `kernel/tracing` holds none; it is no
        // other sysfs root's, and once gone it is found no more (nothing is remembered for the
        // process).
        let sysfs = dir.join("sys");
        let debug = sysfs.join("kernel/debug/tracing");
        fs::create_dir_all(debug.join("events")).unwrap();
        let under = System::host().with_sysfs(&sysfs);
        let TracefsState::Mounted(found) = under.tracefs() else {
            panic!("kernel/debug/tracing is a tracefs");
        };
        assert_eq!(found.root(), debug);
        let other = System::host().with_sysfs(dir.join("other"));
        assert_eq!(other.tracefs(), TracefsState::Absent);
        fs::remove_dir(debug.join("events")).unwrap();
        assert_eq!(under.tracefs(), TracefsState::Absent);
        fs::remove_dir_all(dir.join("events")).unwrap();
        assert_eq!(system.tracefs(), TracefsState::Absent);
        // Nothing is mounted on a test's tree; this machine's mount point is its own.
        assert_eq!(system.tracefs_mount_point(), None);
        assert_eq!(System::host().with_sysfs(&dir).tracefs_mount_point(), None);
        let host = System::host().tracefs_mount_point();
        let standard = Path::new("/sys/kernel/tracing");
        assert_eq!(host.as_deref(), standard.is_dir().then_some(standard));
        fs::remove_dir_all(&dir).unwrap();
    }
}
