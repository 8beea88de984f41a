//! tracefs (Documentation/trace/ftrace.rst): where it is mounted, its tracepoints
//! (`events/SUBSYSTEM/EVENT/`) and each one's `id`, the number `perf_event_attr.config` names
//! it by. A `list` looks at thousands of tracepoints, so each is found with a system call or
//! two: no link is followed below the root (the kernel's tracefs has none), and an `id` is
//! read with one `open` and one `read`, non-blocking, of a regular file only.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::roots::System;

/// A tracefs root with a readable `events/` directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracefs {
    root: PathBuf,
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

/// The roots found mounted, for the rest of the process: a `list` resolves thousands of
/// tracepoints, each of which would otherwise look at every root again. Each root is added
/// once and never taken out (tracefs stays mounted once mounted; if it went, reading a
/// tracepoint's id fails and the name is no tracepoint).
static MOUNTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

impl TracefsState {
    /// The state of one root, from the result of looking at its `events/` directory; `None`
    /// where it holds none.
    pub fn of(root: &Path, events: &io::Result<fs::Metadata>) -> Option<TracefsState> {
        match events {
            Ok(meta) if meta.is_dir() => Some(TracefsState::Mounted(Tracefs {
                root: root.to_path_buf(),
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
        let known = |root: &PathBuf| MOUNTED.lock().is_ok_and(|m| m.contains(root));
        if let Some(root) = roots.iter().find(|r| known(r)) {
            return TracefsState::Mounted(Tracefs { root: root.clone() });
        }
        let mut denied = None;
        for root in roots {
            match TracefsState::of(root, &fs::metadata(root.join("events"))) {
                Some(mounted @ TracefsState::Mounted(_)) => {
                    if let Ok(mut m) = MOUNTED.lock() {
                        m.push(root.clone());
                    }
                    return mounted;
                }
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
        subdirectories(&self.events_dir())
    }

    /// The events of subsystem `subsystem` (`events/SUBSYSTEM/*/`), sorted; `None` where it
    /// has no such subsystem.
    pub fn events(&self, subsystem: &str) -> Option<Vec<String>> {
        let dir = self.events_dir().join(subsystem);
        let is_dir = fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
        (is_plain(subsystem) && is_dir).then(|| subdirectories(&dir))
    }

    /// Whether it has tracepoint `subsystem:event` (its `id` a regular file).
    pub fn has_tracepoint(&self, subsystem: &str, event: &str) -> bool {
        is_plain(subsystem)
            && is_plain(event)
            && fs::symlink_metadata(id_path(&self.root, subsystem, event))
                .is_ok_and(|m| m.is_file())
    }

    /// Every tracepoint with an `id`, as `subsystem:event`, sorted.
    pub fn tracepoints(&self) -> Vec<String> {
        // One path's bytes, each directory appended and cut off again (a join would copy the
        // path, and `PathBuf::pop` parse it, for each of thousands of tracepoints).
        let mut path = self.events_dir().into_os_string().into_vec();
        let mut found = Vec::new();
        for system in subdirectories(Path::new(OsStr::from_bytes(&path))) {
            let events_end = path.len();
            path.push(b'/');
            path.extend_from_slice(system.as_bytes());
            let system_end = path.len();
            for name in subdirectories(Path::new(OsStr::from_bytes(&path))) {
                path.push(b'/');
                path.extend_from_slice(name.as_bytes());
                path.extend_from_slice(b"/id");
                if fs::symlink_metadata(OsStr::from_bytes(&path)).is_ok_and(|m| m.is_file()) {
                    let mut full = String::with_capacity(system.len() + 1 + name.len());
                    full.push_str(&system);
                    full.push(':');
                    full.push_str(&name);
                    found.push(full);
                }
                path.truncate(system_end);
            }
            path.truncate(events_end);
        }
        found
    }

    /// The path of tracepoint `subsystem:event`'s `id`, to name it.
    pub fn id_path(&self, subsystem: &str, event: &str) -> PathBuf {
        id_path(&self.root, subsystem, event)
    }

    /// The text of tracepoint `subsystem:event`'s `id` (a decimal number and a newline), its
    /// first 64 bytes.
    ///
    /// # Errors
    /// As the kernel answers: `NotFound` where there is no such tracepoint (or a name no file
    /// can have: `ENAMETOOLONG`), `PermissionDenied` where this user may not read it, and
    /// `InvalidInput` where a part of its path is a link or it is no regular file.
    pub fn tracepoint_id(&self, subsystem: &str, event: &str) -> io::Result<String> {
        if !is_plain(subsystem) || !is_plain(event) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let not_regular = || io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
        // One path's bytes, each part appended (joins would copy the path for each part, for
        // each of the thousands of tracepoints a `list` resolves): both directories and the
        // `id` looked at without following a link, then the `id` opened without following one.
        let root = self.root.as_os_str().as_bytes();
        let mut path = Vec::with_capacity(root.len() + subsystem.len() + event.len() + 12);
        path.extend_from_slice(root);
        for part in [
            &b"/events/"[..],
            subsystem.as_bytes(),
            b"/",
            event.as_bytes(),
        ] {
            path.extend_from_slice(part);
            if !part.starts_with(b"/") && !fs::symlink_metadata(OsStr::from_bytes(&path))?.is_dir()
            {
                return Err(not_regular());
            }
        }
        path.extend_from_slice(b"/id");
        let path = OsStr::from_bytes(&path);
        // Looked at before it is opened: a FIFO is never opened, even without blocking.
        if !fs::symlink_metadata(path)?.is_file() {
            return Err(not_regular());
        }
        let mut options = fs::OpenOptions::new();
        options.read(true);
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
        }
        let mut file = match options.open(path) {
            Ok(file) => file,
            // `O_NOFOLLOW`'s answer where the `id` is a link.
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(not_regular()),
            Err(e) => return Err(e),
        };
        if !file.metadata()?.is_file() {
            return Err(not_regular());
        }
        let mut buffer = [0u8; 64];
        let mut len = 0;
        while len < buffer.len() {
            match file.read(&mut buffer[len..])? {
                0 => break,
                n => len += n,
            }
        }
        Ok(String::from_utf8_lossy(&buffer[..len]).into_owned())
    }
}

/// Whether `name` names one directory of tracefs (no `/`, not `.` or `..`).
fn is_plain(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/')
}

/// `root/events/SYSTEM/EVENT/id` as `root.join("events")` and so on make it, built in one
/// allocation (a join makes one a part, and a push looks at the path's end).
fn id_path(root: &Path, system: &str, event: &str) -> PathBuf {
    let root = root.as_os_str().as_bytes();
    let mut path = Vec::with_capacity(root.len() + system.len() + event.len() + 12);
    path.extend_from_slice(root);
    if !root.is_empty() && !root.ends_with(b"/") {
        path.push(b'/');
    }
    for part in [b"events".as_slice(), system.as_bytes(), event.as_bytes()] {
        path.extend_from_slice(part);
        path.push(b'/');
    }
    path.extend_from_slice(b"id");
    PathBuf::from(OsString::from_vec(path))
}

/// Whether `path` is `base.join(dir)` byte for byte (as [`System::tracefs_roots`] made it),
/// told without making that path.
fn is_joined(path: &Path, base: &Path, dir: &str) -> bool {
    let (path, base) = (path.as_os_str().as_bytes(), base.as_os_str().as_bytes());
    let Some(rest) = path.strip_prefix(base) else {
        return false;
    };
    let rest = match base.is_empty() || base.ends_with(b"/") {
        true => Some(rest),
        false => rest.strip_prefix(b"/"),
    };
    rest == Some(dir.as_bytes())
}

/// The names of the directories in `dir` (no link followed), sorted; none where it cannot be
/// read.
fn subdirectories(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort_unstable();
    names
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
    /// tries them), or the first this user may not enter.
    pub fn tracefs(&self) -> TracefsState {
        // A root found mounted before is the answer: looked for without making the roots' paths
        // (a `list` asks at each of thousands of tracepoints).
        if let Ok(mounted) = MOUNTED.lock() {
            let known = match &self.tracefs {
                Some(root) => mounted.iter().find(|m| *m == root),
                None => TRACEFS_UNDER_SYSFS
                    .iter()
                    .find_map(|dir| mounted.iter().find(|m| is_joined(m, &self.sysfs, dir))),
            };
            if let Some(root) = known {
                return TracefsState::Mounted(Tracefs { root: root.clone() });
            }
        }
        TracefsState::find(&self.tracefs_roots())
    }

    /// Where perf mounts tracefs where it is mounted nowhere: this machine's
    /// `/sys/kernel/tracing`, where that is the first root this system looks in (`None` for a
    /// tree of another machine's or a test's, which nothing is mounted on), and a directory.
    pub fn tracefs_mount_point(&self) -> Option<PathBuf> {
        let first = self.tracefs_roots().into_iter().next()?;
        let standard = System::host().tracefs_roots().into_iter().next()?;
        (first == standard && fs::metadata(&first).is_ok_and(|m| m.is_dir())).then_some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: `Path::join`, which the one-allocation path must equal, and the roots found
    /// mounted be told from, for any root.
    #[test]
    fn id_paths_are_the_joined_paths() {
        for root in [
            "/sys/kernel/tracing",
            "/sys/kernel/tracing/",
            "relative",
            "",
            "/",
        ] {
            let root = Path::new(root);
            let joined = root
                .join("events")
                .join("xhci-hcd")
                .join("xhci_dbg")
                .join("id");
            assert_eq!(id_path(root, "xhci-hcd", "xhci_dbg"), joined);
            assert_eq!(
                id_path(root, "xhci-hcd", "xhci_dbg").as_os_str(),
                joined.as_os_str()
            );
            assert!(is_joined(
                &root.join("kernel/tracing"),
                root,
                "kernel/tracing"
            ));
            assert!(!is_joined(
                &root.join("kernel/tracing"),
                root,
                "kernel/debug/tracing"
            ));
        }
    }

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
        assert_eq!(
            tracefs.tracepoints(),
            ["demo:hello", "xhci-hcd:xhci_dbg_address"]
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
        // Under a sysfs root, `kernel/debug/tracing` where `kernel/tracing` holds none: asked
        // again, the root found mounted answers, and it is no other sysfs root's.
        let sysfs = dir.join("sys");
        let debug = sysfs.join("kernel/debug/tracing");
        fs::create_dir_all(debug.join("events")).unwrap();
        let under = System::host().with_sysfs(&sysfs);
        for _ in 0..2 {
            let TracefsState::Mounted(found) = under.tracefs() else {
                panic!("kernel/debug/tracing is a tracefs");
            };
            assert_eq!(found.root(), debug);
        }
        let other = System::host().with_sysfs(dir.join("other"));
        assert_eq!(other.tracefs(), TracefsState::Absent);
        // Nothing is mounted on a test's tree; this machine's mount point is its own.
        assert_eq!(system.tracefs_mount_point(), None);
        assert_eq!(System::host().with_sysfs(&dir).tracefs_mount_point(), None);
        let host = System::host().tracefs_mount_point();
        let standard = Path::new("/sys/kernel/tracing");
        assert_eq!(host.as_deref(), standard.is_dir().then_some(standard));
        fs::remove_dir_all(&dir).unwrap();
    }
}
