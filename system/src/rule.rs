//! The one rule every file of a system is read by: procfs, sysfs (this machine's, or a tree
//! that `--sysfs DIR` names, which may be anyone's), tracefs and the cgroup mount alike.
//!
//! - **Links stay inside the tree.** A path is resolved (`fs::canonicalize`) and read only where
//!   it lies under the tree's root, resolved too: the real `/sys`'s own links
//!   (`bus/event_source/devices/msr -> ../../../devices/msr`) and `/proc/self` stay inside
//!   their trees; one that leads elsewhere (`events/leak -> /etc/shadow`) is refused.
//! - **Only regular files are opened**, never a FIFO (whose open would wait for a writer for
//!   ever) or a device (`/dev/zero` never ends): the file is opened non-blocking
//!   (`O_NONBLOCK`, so that a FIFO swapped in after the look opens at once) and checked again
//!   once open.
//! - **No more is read than the file can hold**: a sysfs attribute one x86 page, 4,096 bytes
//!   (the kernel's `show` functions write into a page, `sysfs_emit`; `sysfs_kf_seq_show` in
//!   fs/sysfs/file.c cuts what is longer to `PAGE_SIZE - 1`); a table of procfs
//!   (`/proc/self/mountinfo`, `/proc/cpuinfo`) 16 MiB; the kernel's BTF 64 MiB.
//! - **A refusal names the file by its place in the tree and says why**, never what it holds.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most bytes a sysfs attribute holds (one x86 page; see the module's documentation).
pub const PAGE: usize = 4096;

/// The most bytes a table of procfs is read to (`mountinfo` of a node with thousands of
/// mounts is a few MB; `cpuinfo` of 1,024 CPUs 1.5 MB).
pub(crate) const TABLE: usize = 16 << 20;

/// The most bytes of a binary blob the kernel exports (`/sys/kernel/btf/vmlinux`: 5 to 8 MB).
pub(crate) const BLOB: usize = 64 << 20;

/// Why a file of a system was not read ([`Refused`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Why {
    /// It resolves outside its tree (a symbolic link to a place outside it).
    OutsideTree {
        /// The tree's root, resolved.
        root: PathBuf,
        /// What tree it is (`sysfs`, `procfs`, `tracefs`).
        kind: &'static str,
    },
    /// It is no regular file: a FIFO, a device, a socket or a directory.
    NotRegular,
    /// It holds more than the most bytes read of it.
    TooLong {
        /// The most bytes read.
        most: usize,
    },
    /// It is not text (UTF-8).
    NotText,
}

/// A file of a system that the reading rule refused, named by its place in the tree and why
/// (never by what it holds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    path: PathBuf,
    why: Why,
}

impl Refused {
    /// The file, by its place in the tree (as it was named, not as it resolved).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why it was refused.
    pub fn why(&self) -> &Why {
        &self.why
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        match &self.why {
            Why::OutsideTree { root, kind } => write!(
                f,
                "{path} leads out of the {kind} tree {} (a symbolic link to a place outside it)",
                root.display()
            ),
            Why::NotRegular => write!(
                f,
                "{path} is not a regular file (a FIFO, a device, a socket or a directory), as \
                 every file the kernel exports there is"
            ),
            Why::TooLong { most } => write!(
                f,
                "{path} holds more than {most} bytes, more than the kernel writes there"
            ),
            Why::NotText => write!(f, "{path} is not text (UTF-8)"),
        }
    }
}

impl std::error::Error for Refused {}

/// A tree of a system: the directory every file read must resolve into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tree {
    /// The root, resolved; `None` where it does not exist (then nothing is read).
    root: Option<PathBuf>,
    /// What tree it is, for refusals.
    kind: &'static str,
}

impl Tree {
    /// The tree whose root is `root` (resolved here, once).
    pub(crate) fn new(root: &Path, kind: &'static str) -> Tree {
        let root = match root.as_os_str().is_empty() {
            true => Path::new("."),
            false => root,
        };
        // This machine's mount points are their own resolved paths: no look needed.
        let resolved = match root == Path::new("/proc") || root == Path::new("/sys") {
            true => Some(root.to_path_buf()),
            false => fs::canonicalize(root).ok(),
        };
        Tree {
            root: resolved,
            kind,
        }
    }

    /// The root, resolved; `None` where it does not exist.
    pub(crate) fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// `path` resolved, where it exists; `None` where it does not (or cannot be resolved: a
    /// dangling link, a loop).
    ///
    /// # Errors
    /// [`Why::OutsideTree`] where it resolves outside the tree.
    fn resolve(&self, path: &Path) -> Result<Option<PathBuf>, Refused> {
        let Some(root) = &self.root else {
            return Ok(None);
        };
        let Ok(resolved) = fs::canonicalize(path) else {
            return Ok(None);
        };
        if resolved.starts_with(root) {
            return Ok(Some(resolved));
        }
        Err(Refused {
            path: path.to_path_buf(),
            why: Why::OutsideTree {
                root: root.clone(),
                kind: self.kind,
            },
        })
    }

    /// The bytes of the file at `path`, at most `most` of them; `None` where there is no such
    /// file (or it cannot be opened, as a file only root may read).
    ///
    /// # Errors
    /// [`Refused`] where it leads out of the tree, is not a regular file or holds more than
    /// `most` bytes.
    pub(crate) fn read_bytes(&self, path: &Path, most: usize) -> Result<Option<Vec<u8>>, Refused> {
        let Some(resolved) = self.resolve(path)? else {
            return Ok(None);
        };
        let refused = |why| Refused {
            path: path.to_path_buf(),
            why,
        };
        if !fs::metadata(&resolved).is_ok_and(|m| m.is_file()) {
            return Err(refused(Why::NotRegular));
        }
        let Ok(file) = open_nonblocking(&resolved) else {
            return Ok(None);
        };
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err(refused(Why::NotRegular));
        }
        let mut bytes = Vec::new();
        if file.take(most as u64 + 1).read_to_end(&mut bytes).is_err() {
            return Ok(None);
        }
        if bytes.len() > most {
            return Err(refused(Why::TooLong { most }));
        }
        Ok(Some(bytes))
    }

    /// The text of the file at `path`, at most `most` bytes; `None` where there is no such
    /// file (or it cannot be opened).
    ///
    /// # Errors
    /// As [`Tree::read_bytes`], and [`Why::NotText`] where it is not UTF-8.
    pub(crate) fn read(&self, path: &Path, most: usize) -> Result<Option<String>, Refused> {
        match self.read_bytes(path, most)? {
            Some(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| Refused {
                path: path.to_path_buf(),
                why: Why::NotText,
            }),
            None => Ok(None),
        }
    }

    /// The text of the attribute at `path` (a file of at most a page), trimmed; `None` where
    /// there is no such file.
    ///
    /// # Errors
    /// As [`Tree::read`].
    pub(crate) fn attribute(&self, path: &Path) -> Result<Option<String>, Refused> {
        Ok(self.read(path, PAGE)?.map(|text| text.trim().to_string()))
    }

    /// The text of the file at `path`, trimmed, at most `most` bytes; `None` where it cannot be
    /// read or is refused.
    pub(crate) fn text(&self, path: &Path, most: usize) -> Option<String> {
        self.read(path, most)
            .ok()
            .flatten()
            .map(|text| text.trim().to_string())
    }

    /// `path` resolved inside the tree, where it is a regular file there: a file read again
    /// and again ([`read_into`]) is found once.
    pub(crate) fn resolved_file(&self, path: &Path) -> Option<PathBuf> {
        let resolved = self.resolve(path).ok()??;
        resolved.is_file().then_some(resolved)
    }

    /// The names in the directory `dir`, sorted; none where it does not exist or leads out of
    /// the tree.
    pub(crate) fn names(&self, dir: &Path) -> Vec<String> {
        self.entries(dir, |_| true)
    }

    /// The names of the directories in the directory `dir` (no link followed), sorted; none
    /// where it does not exist or leads out of the tree.
    pub(crate) fn subdirectories(&self, dir: &Path) -> Vec<String> {
        self.entries(dir, |entry| entry.file_type().is_ok_and(|t| t.is_dir()))
    }

    fn entries(&self, dir: &Path, keep: impl Fn(&fs::DirEntry) -> bool) -> Vec<String> {
        let Ok(Some(resolved)) = self.resolve(dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = fs::read_dir(resolved)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .filter(|e| keep(e))
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort_unstable();
        names
    }

    /// Whether `path` is a directory inside the tree.
    ///
    /// # Errors
    /// [`Why::OutsideTree`] where it leads out of the tree.
    pub(crate) fn is_dir(&self, path: &Path) -> Result<bool, Refused> {
        Ok(self
            .resolve(path)?
            .is_some_and(|resolved| resolved.is_dir()))
    }

    /// Whether `path` is a regular file inside the tree.
    pub(crate) fn is_file(&self, path: &Path) -> bool {
        matches!(self.resolve(path), Ok(Some(resolved)) if resolved.is_file())
    }

    /// Whether `path` exists inside the tree.
    pub(crate) fn exists(&self, path: &Path) -> bool {
        matches!(self.resolve(path), Ok(Some(_)))
    }
}

/// The bytes of the file `resolved` (a path [`Tree::resolved_file`] gave) read into `buffer`,
/// as many as it holds, allocating nothing: how many; `None` where it cannot be read, is no
/// regular file now, or does not fit.
pub(crate) fn read_into(resolved: &Path, buffer: &mut [u8]) -> Option<usize> {
    let mut file = open_nonblocking(resolved).ok()?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return None;
    }
    let mut filled = 0;
    loop {
        match file.read(&mut buffer[filled..]) {
            Ok(0) => return Some(filled),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
        if filled == buffer.len() {
            return None;
        }
    }
}

/// `path` opened for reading without waiting: a FIFO opens at once (and is then refused).
fn open_nonblocking(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A directory of the test's own under the temporary directory.
    fn scratch(name: &str) -> PathBuf {
        crate::testing::tree(&format!("rule-{name}"), &[])
    }

    /// `read` of `path` in `tree`, on a thread of its own: what it answered, or a failure
    /// where it has not answered within 10 seconds (it blocked).
    fn read_within(tree: &Tree, path: &Path, most: usize) -> Result<Option<String>, Refused> {
        let (tree, path) = (tree.clone(), path.to_path_buf());
        let (send, receive) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = send.send(tree.read(&path, most));
        });
        receive
            .recv_timeout(Duration::from_secs(10))
            .expect("the read blocked")
    }

    /// Oracle: the kernel, which makes a FIFO with mkfifo(1) (whose `open` for reading waits
    /// for a writer unless `O_NONBLOCK`, fifo(7)) and says what a file is (`stat`): the FIFO
    /// is refused as no regular file, at once.
    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_waiting() {
        let dir = scratch("fifo");
        let fifo = dir.join("type");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            skip!(Need::Tools, "mkfifo(1) made no FIFO here");
        }
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(
            &fs::metadata(&fifo).unwrap().file_type()
        ));
        let tree = Tree::new(&dir, "sysfs");
        let refused = read_within(&tree, &fifo, PAGE).unwrap_err();
        assert_eq!(refused.why(), &Why::NotRegular);
        assert_eq!(refused.path(), fifo);
        assert!(!tree.is_file(&fifo));
        assert_eq!(tree.resolved_file(&fifo), None);
        let mut buffer = [0u8; 64];
        assert_eq!(
            read_into(&fifo, &mut buffer),
            None,
            "opened without waiting"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Oracle: the kernel's device nodes under `/dev` (`/dev/zero` never ends, `/dev/null`
    /// is empty: null(4)), each a character device by `stat`: a tree rooted there refuses
    /// both as no regular file, at once, and never reads `/dev/zero` without end.
    #[cfg(unix)]
    #[test]
    fn a_device_is_refused_without_reading_it() {
        use std::os::unix::fs::FileTypeExt;
        let dev = Path::new("/dev");
        let devices: Vec<&Path> = ["/dev/zero", "/dev/null"]
            .iter()
            .map(Path::new)
            .filter(|p| fs::metadata(p).is_ok_and(|m| m.file_type().is_char_device()))
            .collect();
        if devices.is_empty() {
            skip!(Need::System, "no /dev/zero or /dev/null here");
        }
        let tree = Tree::new(dev, "devtmpfs");
        for device in devices {
            let refused = read_within(&tree, device, usize::MAX - 1).unwrap_err();
            assert_eq!(refused.why(), &Why::NotRegular, "{}", device.display());
            assert!(!tree.is_file(device));
        }
    }

    /// A link out of the tree is refused by its place in the tree, and what it leads to is
    /// never shown; a link inside it is followed. Oracle: the kernel's `realpath` of each.
    #[cfg(unix)]
    #[test]
    fn a_link_out_of_the_tree_is_refused() {
        let dir = scratch("links");
        let outside = scratch("links-outside");
        fs::write(outside.join("secret"), "secret-shadow\n").unwrap();
        fs::create_dir_all(dir.join("tree/devices/msr")).unwrap();
        fs::write(dir.join("tree/devices/msr/type"), "8\n").unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), dir.join("tree/leak")).unwrap();
        std::os::unix::fs::symlink("devices/msr", dir.join("tree/msr")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("tree/out")).unwrap();
        let tree = Tree::new(&dir.join("tree"), "sysfs");
        let refused = tree.read(&dir.join("tree/leak"), PAGE).unwrap_err();
        assert!(matches!(
            refused.why(),
            Why::OutsideTree { kind: "sysfs", .. }
        ));
        let shown = refused.to_string();
        assert!(
            shown.contains("leak leads out of the sysfs tree"),
            "{shown}"
        );
        assert!(!shown.contains("secret-shadow") && !shown.contains("links-outside/secret"));
        assert_eq!(
            tree.read(&dir.join("tree/msr/type"), PAGE),
            Ok(Some("8\n".to_string()))
        );
        assert!(tree.is_dir(&dir.join("tree/out")).is_err());
        assert!(tree.names(&dir.join("tree/out")).is_empty());
        assert_eq!(
            tree.names(&dir.join("tree")),
            ["devices", "leak", "msr", "out"]
        );
        assert_eq!(tree.subdirectories(&dir.join("tree")), ["devices"]);
        assert_eq!(tree.read(&dir.join("tree/none"), PAGE), Ok(None));
        fs::remove_dir_all(&dir).unwrap();
        fs::remove_dir_all(&outside).unwrap();
    }

    /// A file longer than its bound is refused after reading one byte more than the bound,
    /// never whole; one of the bound is read. Oracle: the kernel's own sysfs attributes, each
    /// at most a page (`sysfs_kf_seq_show`), all read under the rule where this machine has
    /// them.
    #[test]
    fn a_file_longer_than_its_bound_is_refused() {
        let dir = scratch("long");
        fs::write(dir.join("page"), "x".repeat(PAGE)).unwrap();
        fs::write(dir.join("more"), "x".repeat(PAGE + 1)).unwrap();
        // A sparse file of a GiB: refused having read a page and a byte.
        fs::File::create(dir.join("sparse"))
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        fs::write(dir.join("binary"), [0xff, 0xfe]).unwrap();
        let tree = Tree::new(&dir, "sysfs");
        assert_eq!(
            tree.read(&dir.join("page"), PAGE).unwrap().unwrap().len(),
            PAGE
        );
        for long in ["more", "sparse"] {
            let refused = tree.read(&dir.join(long), PAGE).unwrap_err();
            assert_eq!(refused.why(), &Why::TooLong { most: PAGE });
            assert!(refused.to_string().contains("holds more than 4096 bytes"));
        }
        assert_eq!(
            tree.read(&dir.join("binary"), PAGE).unwrap_err().why(),
            &Why::NotText
        );
        let page = tree.resolved_file(&dir.join("page")).unwrap();
        assert_eq!(
            read_into(&page, &mut [0u8; 16]),
            None,
            "longer than the buffer"
        );
        assert_eq!(read_into(&page, &mut [0u8; PAGE + 1]), Some(PAGE));
        fs::remove_dir_all(&dir).unwrap();

        let cpu0 = Path::new("/sys/devices/system/cpu/cpu0/topology");
        let sys = Tree::new(Path::new("/sys"), "sysfs");
        for name in sys.names(cpu0) {
            let path = cpu0.join(&name);
            if let Err(refused) = sys.read(&path, PAGE) {
                panic!("the kernel's own attribute refused: {refused}");
            }
        }
    }
}
