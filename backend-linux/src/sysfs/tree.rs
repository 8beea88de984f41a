//! A sysfs tree read as untrusted input: `--sysfs DIR` (and `COUNTERHAL_SYSFS`) may name any
//! directory, so every file and directory of it is read by these rules.
//!
//! - **Links stay inside the tree.** A path is resolved (`fs::canonicalize`) and read only where
//!   it lies under the tree's root, resolved too: the real `/sys`'s own links
//!   (`bus/event_source/devices/msr -> ../../../devices/msr`) stay inside `/sys`; one that leads
//!   elsewhere (`events/leak -> /etc/shadow`) is refused.
//! - **Only regular files are opened**, never a FIFO (whose open would wait for a writer for
//!   ever) or a device (`/dev/zero` never ends); the file is opened non-blocking and checked
//!   again once open, so one swapped for a FIFO in between cannot block either.
//! - **No more than a sysfs attribute holds is read**: one x86 page, 4,096 bytes (the kernel's
//!   `show` functions write into a page, `sysfs_emit`; `sysfs_kf_seq_show` in fs/sysfs/file.c
//!   cuts what is longer to `PAGE_SIZE - 1`).
//! - **A refusal names the file by its place in the tree and says why**, never what it holds.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use counterhal_hal::{Error, Result};

/// The most bytes a sysfs attribute holds (one x86 page; see the module's documentation).
pub(crate) const MOST_BYTES: usize = 4096;

/// Where a PMU directory sits under a sysfs root.
pub(crate) const DEVICES_UNDER_ROOT: &str = counterhal_system::PMU_DEVICES;

/// A sysfs tree: the directory every file read must resolve into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tree {
    /// The root, resolved; `None` where it does not exist (then nothing is read).
    root: Option<PathBuf>,
}

impl Tree {
    /// The tree of the PMU directory `devices`: the sysfs root it is the
    /// `bus/event_source/devices` of (`/sys` for `/sys/bus/event_source/devices`, DIR for
    /// `--sysfs DIR`), else `devices` itself (a bare copy of a PMU directory).
    pub(crate) fn of(devices: &Path) -> Tree {
        let root = match devices.ends_with(DEVICES_UNDER_ROOT) {
            true => devices.ancestors().nth(3).unwrap_or(devices),
            false => devices,
        };
        let root = match root.as_os_str().is_empty() {
            true => Path::new("."),
            false => root,
        };
        Tree {
            root: fs::canonicalize(root).ok(),
        }
    }

    /// `path` resolved, where it exists; `None` where it does not (or cannot be resolved: a
    /// dangling link, a loop).
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] where it resolves outside the tree.
    fn resolve(&self, path: &Path) -> Result<Option<PathBuf>> {
        let Some(root) = &self.root else {
            return Ok(None);
        };
        let Ok(resolved) = fs::canonicalize(path) else {
            return Ok(None);
        };
        if resolved.starts_with(root) {
            return Ok(Some(resolved));
        }
        Err(refused(
            path,
            format!(
                "leads out of the sysfs tree {} (a symbolic link to a place outside it)",
                root.display()
            ),
        ))
    }

    /// The text of the file at `path`; `None` where there is no such file (or it cannot be
    /// opened, as a file only root may read).
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] where it leads out of the tree, is not a
    /// regular file, holds more than [`MOST_BYTES`] or is not UTF-8 text.
    pub(crate) fn read(&self, path: &Path) -> Result<Option<String>> {
        let Some(resolved) = self.resolve(path)? else {
            return Ok(None);
        };
        let not_regular = || {
            refused(
                path,
                "is not a regular file (a FIFO, a device, a socket or a directory), as every \
                 sysfs attribute is",
            )
        };
        if !fs::metadata(&resolved).is_ok_and(|m| m.is_file()) {
            return Err(not_regular());
        }
        let Ok(file) = open_nonblocking(&resolved) else {
            return Ok(None);
        };
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err(not_regular());
        }
        let mut bytes = Vec::new();
        if file
            .take(MOST_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .is_err()
        {
            return Ok(None);
        }
        if bytes.len() > MOST_BYTES {
            return Err(refused(
                path,
                format!("holds more than {MOST_BYTES} bytes, more than a sysfs attribute holds"),
            ));
        }
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| refused(path, "is not text (UTF-8)"))
    }

    /// The names in the directory `dir`, sorted; none where it does not exist or leads out of
    /// the tree.
    pub(crate) fn names(&self, dir: &Path) -> Vec<String> {
        let Ok(Some(resolved)) = self.resolve(dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = fs::read_dir(resolved)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Whether `path` is a directory inside the tree.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] where it leads out of the tree.
    pub(crate) fn is_dir(&self, path: &Path) -> Result<bool> {
        Ok(self
            .resolve(path)?
            .is_some_and(|resolved| resolved.is_dir()))
    }

    /// Whether `path` is a regular file inside the tree.
    pub(crate) fn is_file(&self, path: &Path) -> bool {
        matches!(self.resolve(path), Ok(Some(resolved)) if resolved.is_file())
    }
}

/// The refusal of the file at `path` (named by where it is, not what it holds).
fn refused(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::invalid_input(format!("{} {why}", path.display())).with_hint(
        "a sysfs tree holds the kernel's attributes: short text in regular files, its links \
         inside the tree",
    )
}

/// `path` opened for reading without waiting: a FIFO opens at once (and is then refused).
fn open_nonblocking(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree of `DIR/bus/event_source/devices` is DIR (of /sys's, /sys, where its PMU
    /// links lead); a bare PMU directory is its own tree. Oracle: the kernel's sysfs layout
    /// (Documentation/ABI/testing/sysfs-bus-event_source-devices-*).
    #[test]
    fn the_root_is_the_sysfs_directory_above_the_pmus() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let devices = here.join("tests/data/machines/spr-2s/bus/event_source/devices");
        assert_eq!(
            Tree::of(&devices).root,
            Some(here.join("tests/data/machines/spr-2s"))
        );
        let bare = here.join("tests/data/sysfs-hybrid");
        assert_eq!(Tree::of(&bare).root, Some(bare.clone()));
        assert_eq!(Tree::of(Path::new("/nonexistent")).root, None);
        assert_eq!(Tree::of(Path::new("/sys/bus/event_source/devices")).root, {
            fs::canonicalize("/sys").ok()
        });
    }
}
