//! The one rule every file of a system is read by: procfs, sysfs (this machine's, or a tree
//! that `--sysfs DIR` names, which may be anyone's), tracefs and the cgroup mount alike.
//!
//! - **Links stay inside the tree.** A path is resolved (as `fs::canonicalize` resolves it; on
//!   Linux the kernel walks it once, `O_PATH`, and procfs names what it reached) and read only
//!   where it lies under the tree's root, resolved too: the real `/sys`'s own links
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
//! - **A directory is listed to a bound too**: at most [`ENTRIES`] entries, the most a
//!   directory the kernel exports holds (`/proc` with a process for each pid).
//! - **A mount is a tree of its own.** tracefs and a cgroup directory are trees rooted where
//!   they are mounted or named ([`Tree::at`]), and their file systems hold no link, so none is
//!   followed below the root: each part below it is looked at (`lstat`) and must be a
//!   directory, the last is opened with `O_NOFOLLOW`, and a path with `..` in it is outside.
//! - **A refusal names the file by its place in the tree and says why**, never what it holds.

use std::borrow::Cow;
use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
#[cfg(not(unix))]
use std::path::Component;
use std::path::{Path, PathBuf};

/// The most bytes a sysfs attribute holds (one x86 page; see the module's documentation).
pub const PAGE: usize = 4096;

/// The most bytes a table of procfs is read to (`mountinfo` of a node with thousands of
/// mounts is a few MB; `cpuinfo` of 1,024 CPUs 1.5 MB).
pub(crate) const TABLE: usize = 16 << 20;

/// The most bytes of a binary blob the kernel exports (`/sys/kernel/btf/vmlinux`: 5 to 8 MB).
pub(crate) const BLOB: usize = 64 << 20;

/// The most entries a directory is listed to: `PID_MAX_LIMIT` (4,194,304 on a 64-bit kernel,
/// include/linux/threads.h), the most processes `/proc` lists, and far more than the thousands
/// of tracefs's subsystems or a cgroup's children.
pub(crate) const ENTRIES: usize = 1 << 22;

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
    /// A part of it below the root is a symbolic link, in a tree that has none (tracefs, the
    /// cgroup file system).
    Link,
    /// It is a directory of more than the most entries listed.
    TooManyEntries {
        /// The most entries listed.
        most: usize,
    },
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
            Why::Link => write!(
                f,
                "{path} is reached through a symbolic link, of which the kernel's file system \
                 there has none"
            ),
            Why::TooManyEntries { most } => write!(
                f,
                "{path} holds more than {most} entries, more than a directory the kernel \
                 exports holds"
            ),
        }
    }
}

impl std::error::Error for Refused {}

/// A tree of a system: the directory every file read must resolve into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tree {
    /// The root, resolved (or as named, where no link is followed); `None` where it does not
    /// exist (then nothing is read).
    root: Option<PathBuf>,
    /// What tree it is, for refusals.
    kind: &'static str,
    /// Whether a link below the root is followed (where it leads inside the tree).
    follows_links: bool,
}

impl Tree {
    /// The tree whose root is `root` (resolved here, once), whose links are followed where
    /// they lead inside it: procfs's and sysfs's.
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
            follows_links: true,
        }
    }

    /// The tree rooted at `root` as it is named (a mount point from the mounts, a cgroup's
    /// directory), in which no link is followed below the root: tracefs's and the cgroup file
    /// system's, which hold none. Nothing is looked at to make it.
    pub(crate) fn at(root: &Path, kind: &'static str) -> Tree {
        Tree {
            root: Some(root.to_path_buf()),
            kind,
            follows_links: false,
        }
    }

    /// The root, resolved; `None` where it does not exist.
    pub(crate) fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// `path` refused for `why`, as the error of an answer the kernel's way (`InvalidInput`
    /// where it leads out or is no regular file, `InvalidData` where it holds too much),
    /// carrying the [`Refused`].
    fn refusal(&self, path: &Path, why: Why) -> io::Error {
        let kind = match why {
            Why::TooLong { .. } | Why::NotText | Why::TooManyEntries { .. } => {
                io::ErrorKind::InvalidData
            }
            _ => io::ErrorKind::InvalidInput,
        };
        io::Error::new(
            kind,
            Refused {
                path: path.to_path_buf(),
                why,
            },
        )
    }

    /// `path` where it is to be opened or looked at: resolved inside the tree, or, in a tree
    /// that follows no link, `path` itself once each part between the root and its last is
    /// found a directory and no link.
    ///
    /// # Errors
    /// The kernel's where a part cannot be looked at (`NotFound`, `PermissionDenied`);
    /// `InvalidInput` carrying [`Why::OutsideTree`] or [`Why::Link`] where it leads out.
    fn locate<'p>(&self, path: &'p Path) -> io::Result<Cow<'p, Path>> {
        let Some(root) = &self.root else {
            return Err(io::ErrorKind::NotFound.into());
        };
        let outside = || {
            self.refusal(
                path,
                Why::OutsideTree {
                    root: root.clone(),
                    kind: self.kind,
                },
            )
        };
        if self.follows_links {
            let resolved = resolve(path)?;
            return match resolved.starts_with(root) {
                true => Ok(Cow::Owned(resolved)),
                false => Err(outside()),
            };
        }
        // The parts between the root and the last, from the root down: each a directory
        // (`lstat`, a link not followed).
        let Some(parts) = parents_below(root, path) else {
            return Err(outside());
        };
        for part in parts {
            let meta = fs::symlink_metadata(part)?;
            if meta.file_type().is_symlink() {
                return Err(self.refusal(path, Why::Link));
            }
            if !meta.is_dir() {
                return Err(io::Error::from(io::ErrorKind::NotADirectory));
            }
        }
        Ok(Cow::Borrowed(path))
    }

    /// The metadata of `path` inside the tree (of what a link inside the tree leads to; in a
    /// tree that follows none, of `path` itself, a link unfollowed, the root as named).
    ///
    /// # Errors
    /// As the kernel answers (`NotFound`, `PermissionDenied`), and `InvalidInput` carrying a
    /// [`Refused`] where it leads out of the tree.
    pub(crate) fn metadata(&self, path: &Path) -> io::Result<fs::Metadata> {
        let located = self.locate(path)?;
        self.look(path, &located)
    }

    /// The metadata of `located` (`path` located), as [`Tree::metadata`].
    fn look(&self, path: &Path, located: &Path) -> io::Result<fs::Metadata> {
        match self.follows_last(path) {
            true => fs::metadata(located),
            false => fs::symlink_metadata(located),
        }
    }

    /// Whether a link in the last part of `path` is followed: in a tree that follows links,
    /// and at the root of one that does not (as it is named).
    fn follows_last(&self, path: &Path) -> bool {
        self.follows_links || self.root.as_deref() == Some(path)
    }

    /// The directory `path` inside the tree, opened without waiting (`O_DIRECTORY`,
    /// `O_NONBLOCK`): to be handed to the kernel (a cgroup's for `perf_event_open`) or listed
    /// by the caller.
    ///
    /// # Errors
    /// As the kernel answers (`NotFound`, `PermissionDenied`, `NotADirectory` for a file or a
    /// FIFO), and `InvalidInput` carrying a [`Refused`] where it leads out of the tree.
    pub(crate) fn open_dir(&self, path: &Path) -> io::Result<fs::File> {
        let located = self.locate(path)?;
        open_directory(&located, !self.follows_last(path))
    }

    /// The bytes of the regular file `path` inside the tree, at most `most` of them, opened
    /// without waiting and looked at before (a FIFO is never opened) and once open.
    ///
    /// # Errors
    /// As the kernel answers (`NotFound`, `PermissionDenied`), and a [`Refused`]:
    /// `InvalidInput` where it leads out of the tree or is no regular file, `InvalidData`
    /// where it holds more than `most` bytes.
    pub(crate) fn load(&self, path: &Path, most: usize) -> io::Result<Vec<u8>> {
        let located = self.locate(path)?;
        let meta = self.look(path, &located)?;
        self.load_looked(path, &located, &meta, !self.follows_last(path), most)
    }

    /// The bytes of `located` (`path` located and looked at, `meta`), read as [`Tree::load`]
    /// reads them: a link or no regular file refused before the open and again after it, a
    /// link in the last part refused by the open too where `no_follow`.
    fn load_looked(
        &self,
        path: &Path,
        located: &Path,
        meta: &fs::Metadata,
        no_follow: bool,
        most: usize,
    ) -> io::Result<Vec<u8>> {
        let not_regular = || self.refusal(path, Why::NotRegular);
        if meta.file_type().is_symlink() {
            return Err(self.refusal(path, Why::Link));
        }
        if !meta.is_file() {
            return Err(not_regular());
        }
        let file = match open_nonblocking(located, no_follow) {
            Ok(file) => file,
            // `O_NOFOLLOW`'s answer where the last part is a link.
            #[cfg(unix)]
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(self.refusal(path, Why::Link));
            }
            Err(e) => return Err(e),
        };
        if !file.metadata()?.is_file() {
            return Err(not_regular());
        }
        // Room for a page at once: an attribute, or a status file, is one read and the end.
        let mut bytes = Vec::with_capacity(most.min(PAGE) + 1);
        file.take(most as u64 + 1).read_to_end(&mut bytes)?;
        if bytes.len() > most {
            return Err(self.refusal(path, Why::TooLong { most }));
        }
        Ok(bytes)
    }

    /// The bytes of the file at `path`, at most `most` of them; `None` where there is no such
    /// file (or it cannot be opened, as a file only root may read).
    ///
    /// # Errors
    /// [`Refused`] where it leads out of the tree, is not a regular file or holds more than
    /// `most` bytes.
    pub(crate) fn read_bytes(&self, path: &Path, most: usize) -> Result<Option<Vec<u8>>, Refused> {
        match self.load(path, most) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) => match refused_in(&e) {
                Some(refused) => Err(refused.clone()),
                None => Ok(None),
            },
        }
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
        let located = self.locate(path).ok()?;
        let meta = self.look(path, &located).ok()?;
        meta.is_file().then(|| located.into_owned())
    }

    /// `path` resolved inside the tree, where it is a directory there: a directory opened
    /// again and again ([`open_directory`], [`count_entries`]) is found once.
    pub(crate) fn resolved_dir(&self, path: &Path) -> Option<PathBuf> {
        let located = self.locate(path).ok()?;
        let meta = self.look(path, &located).ok()?;
        meta.is_dir().then(|| located.into_owned())
    }

    /// The names in the directory `dir`, sorted; none where it does not exist or leads out of
    /// the tree.
    pub(crate) fn names(&self, dir: &Path) -> Vec<String> {
        self.list(dir, |_| true).map(utf8).unwrap_or_default()
    }

    /// The names of the directories in the directory `dir` (no link followed), sorted; none
    /// where it does not exist or leads out of the tree.
    pub(crate) fn subdirectories(&self, dir: &Path) -> Vec<String> {
        self.list(dir, |entry| entry.file_type().is_ok_and(|t| t.is_dir()))
            .map(utf8)
            .unwrap_or_default()
    }

    /// For each directory in the directory `dir` whose `file` is a regular file, its name and
    /// that file's bytes, at most `most` of them, read as [`Tree::load`] reads a file (or why
    /// they could not be), sorted by name; none where `dir` does not exist or leads out of the
    /// tree. No link is followed below `dir`: its directories are those its listing shows as
    /// directories, and a `file` that is a link, a FIFO or a device is left out unopened.
    /// `dir` is looked at once and each directory in it once, in the listing, where a
    /// [`Tree::load`] of each path looks at every part of it again: tracefs's thousands of
    /// `events/SUBSYSTEM/EVENT/id` are one look, one open and one read each.
    #[cfg(unix)]
    pub(crate) fn load_in_subdirectories(
        &self,
        dir: &Path,
        file: &str,
        most: usize,
    ) -> Vec<(String, io::Result<Vec<u8>>)> {
        let Ok(located) = self.locate_dir(dir) else {
            return Vec::new();
        };
        let Ok(listed) = self.listing(dir, &located, |entry| {
            entry.file_type().is_ok_and(|t| t.is_dir())
        }) else {
            return Vec::new();
        };
        // One path's bytes, each name and the file appended and cut off again (a push and a
        // pop would parse the path for each of thousands).
        use std::os::unix::ffi::OsStrExt;
        let mut path = located.as_os_str().as_bytes().to_vec();
        let base = path.len();
        let mut read = Vec::new();
        for name in utf8(listed) {
            for part in [name.as_bytes(), file.as_bytes()] {
                path.push(b'/');
                path.extend_from_slice(part);
            }
            let held = Path::new(std::ffi::OsStr::from_bytes(&path));
            if let Ok(meta) = fs::symlink_metadata(held)
                && meta.is_file()
            {
                read.push((name, self.load_looked(held, held, &meta, true, most)));
            }
            path.truncate(base);
        }
        read
    }

    /// The names in the directory `dir` that `keep` keeps, in the order the directory lists
    /// them, at most [`ENTRIES`].
    ///
    /// # Errors
    /// As the kernel answers (`NotFound`, `PermissionDenied`, `NotADirectory`), and a
    /// [`Refused`] where it leads out of the tree (`InvalidInput`) or holds more than
    /// [`ENTRIES`] entries (`InvalidData`).
    pub(crate) fn list(
        &self,
        dir: &Path,
        keep: impl Fn(&fs::DirEntry) -> bool,
    ) -> io::Result<Vec<OsString>> {
        let located = self.locate_dir(dir)?;
        self.listing(dir, &located, keep)
    }

    /// `dir` located ([`Tree::locate`]), and, below the root of a tree that follows no link,
    /// looked at: a directory, no link.
    fn locate_dir<'p>(&self, dir: &'p Path) -> io::Result<Cow<'p, Path>> {
        let located = self.locate(dir)?;
        if !self.follows_last(dir) {
            let meta = fs::symlink_metadata(&located)?;
            if meta.file_type().is_symlink() {
                return Err(self.refusal(dir, Why::Link));
            }
            if !meta.is_dir() {
                return Err(io::ErrorKind::NotADirectory.into());
            }
        }
        Ok(located)
    }

    /// The listing of the directory `located` (`dir` located), as [`Tree::list`].
    fn listing(
        &self,
        dir: &Path,
        located: &Path,
        keep: impl Fn(&fs::DirEntry) -> bool,
    ) -> io::Result<Vec<OsString>> {
        let mut names = Vec::new();
        for (listed, entry) in fs::read_dir(located)?.enumerate() {
            if listed == ENTRIES {
                return Err(self.refusal(dir, Why::TooManyEntries { most: ENTRIES }));
            }
            let Ok(entry) = entry else { continue };
            if keep(&entry) {
                names.push(entry.file_name());
            }
        }
        Ok(names)
    }

    /// Whether `path` is a directory inside the tree.
    ///
    /// # Errors
    /// [`Why::OutsideTree`] where it leads out of the tree.
    pub(crate) fn is_dir(&self, path: &Path) -> Result<bool, Refused> {
        match self.metadata(path) {
            Ok(meta) => Ok(meta.is_dir()),
            Err(e) => match refused_in(&e) {
                Some(refused) => Err(refused.clone()),
                None => Ok(false),
            },
        }
    }

    /// Whether `path` is a regular file inside the tree.
    pub(crate) fn is_file(&self, path: &Path) -> bool {
        self.metadata(path).is_ok_and(|m| m.is_file())
    }

    /// Whether `path` exists inside the tree.
    pub(crate) fn exists(&self, path: &Path) -> bool {
        self.metadata(path).is_ok()
    }
}

/// The directories between `root` and `path`'s last part, from the root down, where `path`
/// lies below `root` by name (`root/a/b/c`: `root/a`, `root/a/b`; no part empty, `.` or
/// `..`); `None` where it does not. Told from the bytes (a `list` asks for thousands).
#[cfg(unix)]
fn parents_below<'p>(root: &Path, path: &'p Path) -> Option<impl Iterator<Item = &'p Path>> {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let root = root.as_os_str().as_bytes();
    let root = match root.len() > 1 {
        true => root.strip_suffix(b"/").unwrap_or(root),
        false => root,
    };
    let rest = bytes.strip_prefix(root)?;
    let rest = match rest.is_empty() || root.ends_with(b"/") {
        true => rest,
        false => rest.strip_prefix(b"/")?,
    };
    let plain = |part: &[u8]| !part.is_empty() && part != b"." && part != b"..";
    if !rest.is_empty() && !rest.split(|b| *b == b'/').all(plain) {
        return None;
    }
    // The end of each part but the last, in `bytes`.
    let start = bytes.len() - rest.len();
    let ends = rest
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'/')
        .map(move |(at, _)| start + at);
    Some(ends.map(move |end| Path::new(OsStr::from_bytes(&bytes[..end]))))
}

/// As the Unix one: the directories between `root` and `path`'s last part.
#[cfg(not(unix))]
fn parents_below<'p>(root: &Path, path: &'p Path) -> Option<impl Iterator<Item = &'p Path>> {
    let below = path.strip_prefix(root).ok()?;
    if !below
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
    {
        return None;
    }
    let depth = below.components().count();
    Some(
        (1..depth)
            .rev()
            .filter_map(move |up| path.ancestors().nth(up)),
    )
}

/// The [`Refused`] an error of the rule's carries; `None` for the kernel's own answers.
pub(crate) fn refused_in(error: &io::Error) -> Option<&Refused> {
    error.get_ref()?.downcast_ref::<Refused>()
}

/// The names that are UTF-8 (the kernel's all are), sorted.
fn utf8(names: Vec<OsString>) -> Vec<String> {
    let mut names: Vec<String> = names
        .into_iter()
        .filter_map(|name| name.into_string().ok())
        .collect();
    names.sort_unstable();
    names
}

/// The bytes of the file `resolved` (a path [`Tree::resolved_file`] gave) read into `buffer`,
/// as many as it holds, allocating nothing: how many; `None` where it cannot be read, is no
/// regular file now, or does not fit.
pub(crate) fn read_into(resolved: &Path, buffer: &mut [u8]) -> Option<usize> {
    let mut file = open_nonblocking(resolved, false).ok()?;
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

/// How many entries the directory `resolved` (a path [`Tree::resolved_dir`] gave) lists now;
/// `None` where it cannot be listed or lists more than [`ENTRIES`].
pub(crate) fn count_entries(resolved: &Path) -> Option<usize> {
    let count = fs::read_dir(resolved).ok()?.take(ENTRIES + 1).count();
    (count <= ENTRIES).then_some(count)
}

/// The directory `resolved` opened without waiting (`O_DIRECTORY`: a file or a FIFO is
/// refused by the kernel, `ENOTDIR`), a link in its last part refused where `no_follow`.
pub(crate) fn open_directory(resolved: &Path, no_follow: bool) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let no_follow = if no_follow { libc::O_NOFOLLOW } else { 0 };
        options.custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK | no_follow);
    }
    #[cfg(not(unix))]
    let _ = no_follow;
    options.open(resolved)
}

/// `path` resolved, every link followed, as [`fs::canonicalize`] resolves it. On Linux the
/// kernel walks the path once (`O_PATH`, which opens no file: a FIFO or a device is not
/// touched) and names what it reached (`/proc/self/fd/N`): `canonicalize` (glibc's
/// `realpath`) asks `readlink` of each part, from the root down, 8 walks of the kernel's
/// tree for `/sys/bus/event_source/devices/msr/type`, 138 in `stat -- true`. Where procfs
/// does not name it (no procfs mounted), `canonicalize` answers.
fn resolve(path: &Path) -> io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let reached = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH)
            .open(path)?;
        if let Ok(resolved) = fs::read_link(format!("/proc/self/fd/{}", reached.as_raw_fd()))
            && resolved.is_absolute()
        {
            return Ok(resolved);
        }
    }
    fs::canonicalize(path)
}

/// `path` opened for reading without waiting: a FIFO opens at once (and is then refused); a
/// link in its last part refused (`ELOOP`) where `no_follow`.
fn open_nonblocking(path: &Path, no_follow: bool) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let no_follow = if no_follow { libc::O_NOFOLLOW } else { 0 };
        options.custom_flags(libc::O_NONBLOCK | no_follow);
    }
    #[cfg(not(unix))]
    let _ = no_follow;
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

    /// A tree rooted at a mount (tracefs's, a cgroup's) follows no link below its root, and
    /// what lies outside it by name (`..`, another directory) is outside. Oracle: the kernel's
    /// `lstat` of each part, `O_NOFOLLOW` and `O_DIRECTORY` (`ENOTDIR` for a file).
    #[cfg(unix)]
    #[test]
    fn a_tree_at_a_mount_follows_no_link() {
        use std::os::unix::fs::symlink;
        let dir = scratch("at");
        fs::create_dir_all(dir.join("a/b")).unwrap();
        fs::write(dir.join("a/b/id"), "7\n").unwrap();
        symlink("a", dir.join("link")).unwrap();
        symlink(dir.join("a/b/id"), dir.join("a/id")).unwrap();
        let tree = Tree::at(&dir, "tracefs");
        assert_eq!(tree.load(&dir.join("a/b/id"), 64).unwrap(), b"7\n");
        for linked in ["link/b/id", "a/id"] {
            let error = tree.load(&dir.join(linked), 64).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{linked}");
            assert_eq!(refused_in(&error).unwrap().why(), &Why::Link, "{linked}");
            assert!(error.to_string().contains("symbolic link"), "{error}");
        }
        assert!(tree.list(&dir.join("link"), |_| true).is_err());
        assert_eq!(tree.subdirectories(&dir), ["a"]);
        assert_eq!(tree.names(&dir.join("a")), ["b", "id"]);
        let outside = tree.load(&dir.join("a/../a/b/id"), 64).unwrap_err();
        assert!(matches!(
            refused_in(&outside).unwrap().why(),
            Why::OutsideTree { .. }
        ));
        assert!(tree.metadata(Path::new("/etc/hostname")).is_err());
        assert!(tree.metadata(&dir).unwrap().is_dir());
        assert!(tree.open_dir(&dir.join("a/b")).is_ok());
        let file = tree.open_dir(&dir.join("a/b/id")).unwrap_err();
        assert_eq!(file.raw_os_error(), Some(libc::ENOTDIR));
        assert_eq!(
            tree.load(&dir.join("a/none/id"), 64).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let parents = |root: &str, path: &'static str| {
            parents_below(Path::new(root), Path::new(path))
                .map(|parts| parts.map(|p| p.to_str().unwrap()).collect::<Vec<_>>())
        };
        assert_eq!(parents("/t", "/t/a/b/id").unwrap(), ["/t/a", "/t/a/b"]);
        assert_eq!(parents("/t/", "/t/a/b").unwrap(), ["/t/a"]);
        assert_eq!(parents("/", "/a/b").unwrap(), ["/a"]);
        assert!(parents("/t", "/t").unwrap().is_empty());
        for outside in ["/tx/a", "/t/./a", "/t//a", "/u/a", "/t/a/.."] {
            assert_eq!(parents("/t", outside), None, "{outside}");
        }
        // A root named through a link (as `/sys/kernel/debug/tracing` may be) is followed, as
        // it is named; below it, no link is.
        let named = scratch("at-named");
        symlink(&dir, named.join("root")).unwrap();
        let root = named.join("root");
        let tree = Tree::at(&root, "tracefs");
        assert_eq!(tree.load(&root.join("a/b/id"), 64).unwrap(), b"7\n");
        for linked in ["link/b/id", "a/id"] {
            let error = tree.load(&root.join(linked), 64).unwrap_err();
            assert_eq!(refused_in(&error).unwrap().why(), &Why::Link, "{linked}");
        }
        fs::remove_dir_all(&named).unwrap();
        fs::remove_dir_all(&dir).unwrap();
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
