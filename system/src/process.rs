//! A process's facts under procfs (proc(5)): its status, state, name and threads, who owns
//! it, this process's descriptors and mappings, and the boot time its start is counted from.

use std::fmt::Display;
use std::path::PathBuf;

use crate::roots::System;
use crate::rule;
use crate::stat::StatFields;

/// A process's status file (`PID/status` under procfs, proc(5)): one `Key:\tvalue` a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessStatus {
    text: String,
}

impl ProcessStatus {
    /// The status file's `text`.
    pub fn parse(text: impl Into<String>) -> ProcessStatus {
        ProcessStatus { text: text.into() }
    }

    /// The value of `key` (`VmRSS`, `Uid`), after its colon, trimmed; `None` where no line
    /// has it.
    fn field(&self, key: &str) -> Option<&str> {
        self.text
            .lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
            .map(str::trim)
    }

    /// The size `size` in KiB (`VmRSS:\t  1234 kB`); `None` where the line is absent or holds
    /// no number.
    pub fn kib(&self, size: MemorySize) -> Option<u64> {
        let value = self.field(size.key())?;
        value.trim_end_matches("kB").trim().parse().ok()
    }

    /// The real user id (the first of the `Uid:` line's four).
    pub fn real_uid(&self) -> Option<u32> {
        self.uid(0)
    }

    /// The effective user id (the second of the `Uid:` line's four).
    pub fn effective_uid(&self) -> Option<u32> {
        self.uid(1)
    }

    /// The effective capabilities (`CapEff:`, hexadecimal).
    pub fn effective_capabilities(&self) -> Option<u64> {
        self.capabilities("CapEff")
    }

    /// The permitted capabilities (`CapPrm:`, hexadecimal).
    pub fn permitted_capabilities(&self) -> Option<u64> {
        self.capabilities("CapPrm")
    }

    fn capabilities(&self, set: &str) -> Option<u64> {
        u64::from_str_radix(self.field(set)?, 16).ok()
    }

    fn uid(&self, which: usize) -> Option<u32> {
        self.field("Uid")?
            .split_whitespace()
            .nth(which)?
            .parse()
            .ok()
    }
}

/// A size of a process's memory its status gives, in KiB (proc(5)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemorySize {
    /// The most virtual memory it has had (`VmPeak`).
    Peak,
    /// Its virtual memory (`VmSize`).
    Virtual,
    /// Its locked memory (`VmLck`).
    Locked,
    /// The most resident memory it has had (`VmHWM`).
    ResidentPeak,
    /// Its resident memory (`VmRSS`).
    Resident,
    /// Its resident shared memory (`RssShmem`).
    ResidentShared,
    /// Its data segment (`VmData`).
    Data,
    /// Its stack (`VmStk`).
    Stack,
    /// Its text (`VmExe`).
    Text,
    /// Its shared libraries' code (`VmLib`).
    Libraries,
    /// Its page tables (`VmPTE`).
    PageTables,
}

impl MemorySize {
    /// Its key in the status file (`VmRSS`).
    fn key(self) -> &'static str {
        match self {
            MemorySize::Peak => "VmPeak",
            MemorySize::Virtual => "VmSize",
            MemorySize::Locked => "VmLck",
            MemorySize::ResidentPeak => "VmHWM",
            MemorySize::Resident => "VmRSS",
            MemorySize::ResidentShared => "RssShmem",
            MemorySize::Data => "VmData",
            MemorySize::Stack => "VmStk",
            MemorySize::Text => "VmExe",
            MemorySize::Libraries => "VmLib",
            MemorySize::PageTables => "VmPTE",
        }
    }
}

/// One mapping of a process's address space (a line of `PID/maps` under procfs, proc(5)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Mapping {
    /// Its first address.
    pub start: usize,
    /// The address after its last.
    pub end: usize,
    /// Its permissions (`r-xp`, `rw-p`).
    pub permissions: String,
    /// What is mapped: a file's path, `[heap]`, `[stack]`, or empty (anonymous memory).
    pub path: String,
}

impl Mapping {
    /// The mapping a line of `maps` describes (`55d0c1a2b000-55d0c1a4d000 r--p 00000000 fd:01
    /// 1234 /usr/bin/x`); `None` for a line of another shape.
    pub fn parse(line: &str) -> Option<Mapping> {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let permissions = fields.next()?.to_string();
        Some(Mapping {
            start: usize::from_str_radix(start, 16).ok()?,
            end: usize::from_str_radix(end, 16).ok()?,
            permissions,
            path: fields.nth(3).unwrap_or("").to_string(),
        })
    }
}

/// A task's stat file (`PID/stat` under procfs), found once and read again and again into a
/// buffer of the caller's: nothing is allocated at a read (the exporter reads its own at
/// each scrape).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatFile {
    /// The file, resolved inside procfs.
    path: PathBuf,
}

impl StatFile {
    /// Its fields now, read into `buffer`; `None` where it cannot be read, does not fit, or
    /// has no name.
    pub fn read<'a>(&self, buffer: &'a mut [u8]) -> Option<StatFields<'a>> {
        let filled = rule::read_into(&self.path, buffer)?;
        StatFields::parse(&buffer[..filled])
    }
}

/// This process's directory of descriptors (`self/fd` under procfs), found once and opened
/// at each count (its entries are its open descriptors, the one listing them included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescriptorDirectory {
    /// The directory, resolved inside procfs.
    path: PathBuf,
}

impl DescriptorDirectory {
    /// The directory, opened for listing (a caller counts its entries without allocating,
    /// with `getdents`).
    ///
    /// # Errors
    /// The directory cannot be opened.
    pub fn open(&self) -> std::io::Result<std::fs::File> {
        rule::open_directory(&self.path, false)
    }

    /// How many descriptors are open now (the entries of the directory, its own listing's
    /// included), where it can be listed.
    pub fn count(&self) -> Option<usize> {
        rule::count_entries(&self.path)
    }
}

impl System {
    /// The directory of process or thread `pid` under procfs, relative to it.
    fn task_dir(pid: impl Display) -> PathBuf {
        PathBuf::from(pid.to_string())
    }

    /// Process `pid`'s status (`PID/status` under procfs; `self` for this process); `None`
    /// where there is no such process or its status cannot be read.
    pub fn process_status(&self, pid: impl Display) -> Option<ProcessStatus> {
        let text = self.proc_text(System::task_dir(pid).join("status"))?;
        Some(ProcessStatus::parse(text))
    }

    /// Whether process (or thread) `pid` exists (`PID` under procfs); `None` where procfs
    /// does not tell (it has no `self`: not mounted, not Linux).
    pub fn process_exists(&self, pid: impl Display) -> Option<bool> {
        let tree = self.proc_tree();
        if !tree.exists(&self.procfs().join("self")) {
            return None;
        }
        Some(tree.exists(&self.procfs().join(System::task_dir(pid))))
    }

    /// The state of process (or thread) `pid`: the letter after its name in `PID/stat` (`R`,
    /// `S`, `Z` a zombie, `X` dead); `None` where it has none (it has ended, or procfs does
    /// not tell).
    pub fn process_state(&self, pid: impl Display) -> Option<char> {
        let stat = self.proc_text(System::task_dir(pid).join("stat"))?;
        let (_, rest) = stat.rsplit_once(')')?;
        rest.trim_start().chars().next()
    }

    /// The name of thread `tid` (`TID/comm` under procfs, without its newline), where it can
    /// be read.
    pub fn thread_name(&self, tid: impl Display) -> Option<String> {
        let name = self.proc_text(System::task_dir(tid).join("comm"))?;
        Some(name.trim_end().to_string())
    }

    /// The thread ids of process `pid` (`PID/task` under procfs), lowest first; `None` where
    /// it has no such directory.
    pub fn threads(&self, pid: impl Display) -> Option<Vec<u32>> {
        let tree = self.proc_tree();
        let dir = self.procfs().join(System::task_dir(pid)).join("task");
        if !tree.is_dir(&dir).unwrap_or(false) {
            return None;
        }
        let mut threads: Vec<u32> = tree
            .names(&dir)
            .iter()
            .filter_map(|name| name.parse().ok())
            .collect();
        threads.sort_unstable();
        Some(threads)
    }

    /// The calling thread's id, from `thread-self` under procfs (a link to `PID/task/TID`),
    /// where procfs has it.
    pub fn thread_self_id(&self) -> Option<u32> {
        let thread = self
            .proc_tree()
            .resolved_dir(&self.procfs().join("thread-self"))?;
        thread.file_name()?.to_str()?.parse().ok()
    }

    /// The stat file of task `pid` (`self`, a process or a thread), found inside procfs now
    /// and read at each [`StatFile::read`]; `None` where it has none.
    pub fn stat_file(&self, pid: impl Display) -> Option<StatFile> {
        let path = self.procfs().join(System::task_dir(pid)).join("stat");
        let path = self.proc_tree().resolved_file(&path)?;
        Some(StatFile { path })
    }

    /// This process's descriptors (`self/fd` under procfs), where procfs has them: `self`
    /// resolved now, so that the directory stays this process's.
    pub fn descriptor_directory(&self) -> Option<DescriptorDirectory> {
        let path = self
            .proc_tree()
            .resolved_dir(&self.procfs().join("self/fd"))?;
        Some(DescriptorDirectory { path })
    }

    /// This process's mappings (`self/maps` under procfs), in address order; none where they
    /// cannot be read.
    pub fn own_mappings(&self) -> Vec<Mapping> {
        let maps = self
            .proc_tree()
            .read(&self.procfs().join("self/maps"), rule::TABLE);
        maps.ok()
            .flatten()
            .map(|text| text.lines().filter_map(Mapping::parse).collect())
            .unwrap_or_default()
    }

    /// Whether process `pid` exists and belongs to a user other than this process's effective
    /// user (its real uid against ours, each from its status): attaching counters to it then
    /// needs the ptrace access `perf_event_open` checks (CAP_PERFMON or CAP_SYS_PTRACE, or
    /// root).
    pub fn belongs_to_another_user(&self, pid: u32) -> bool {
        let Some(owner) = self.process_status(pid).and_then(|s| s.real_uid()) else {
            return false;
        };
        self.process_status("self")
            .and_then(|s| s.effective_uid())
            .is_some_and(|me| me != owner)
    }

    /// The flags this process's descriptor `fd` was opened with (`flags:` of `self/fdinfo/N`
    /// under procfs, in octal: `O_ACCMODE` and the rest).
    ///
    /// # Errors
    /// The descriptor is not open (its fdinfo cannot be read); `Ok(None)` where it is, but
    /// its flags cannot be read.
    pub fn descriptor_flags(&self, fd: u32) -> std::io::Result<Option<u32>> {
        let path = self.procfs().join(format!("self/fdinfo/{fd}"));
        let info = match self.proc_tree().read(&path, rule::PAGE) {
            Ok(Some(info)) => info,
            Ok(None) => return Err(std::io::ErrorKind::NotFound.into()),
            Err(refused) => return Err(std::io::Error::other(refused)),
        };
        Ok(info
            .lines()
            .find_map(|line| line.strip_prefix("flags:"))
            .and_then(|octal| u32::from_str_radix(octal.trim(), 8).ok()))
    }

    /// When the system booted, in seconds since the epoch (`btime` of `stat` under procfs);
    /// `None` where it cannot be read.
    pub fn boot_time(&self) -> Option<u64> {
        let stat = self.proc_text("stat")?;
        let line = stat.lines().find_map(|l| l.strip_prefix("btime "))?;
        line.trim().parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// A procfs tree of the test's own under the temporary directory.
    fn tree(name: &str) -> PathBuf {
        crate::testing::tree(&format!("process-{name}"), &[])
    }

    fn write(root: &Path, file: &str, text: &str) {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Oracle: proc(5)'s `/proc/PID/status` (`Uid:` real, effective, saved, filesystem;
    /// sizes in kB), in a tree of the test's own; and this machine's own status, whose
    /// effective uid is `id -u`'s.
    #[test]
    fn a_status_gives_owners_and_sizes() {
        let root = tree("status");
        write(
            &root,
            "self/status",
            "Name:\tx\nUid:\t1000\t0\t0\t0\nVmPeak:\t  12345 kB\nVmLck:\t       0 kB\n\
             CapPrm:\t000001ffffffffff\nCapEff:\t0000004000000000\n",
        );
        write(
            &root,
            "42/status",
            "Name:\ty\nUid:\t1000\t1000\t1000\t1000\n",
        );
        write(&root, "43/status", "Name:\tz\nUid:\t0\t0\t0\t0\n");
        write(&root, "44/status", "Name:\tno uid\n");
        let system = System::host().with_procfs(&root);
        let own = system.process_status("self").unwrap();
        assert_eq!(own.real_uid(), Some(1000));
        assert_eq!(own.effective_uid(), Some(0));
        assert_eq!(own.kib(MemorySize::Peak), Some(12345));
        assert_eq!(own.kib(MemorySize::Locked), Some(0));
        assert_eq!(own.kib(MemorySize::Resident), None);
        assert_eq!(own.effective_capabilities(), Some(1 << 38));
        assert_eq!(own.permitted_capabilities(), Some(0x1ff_ffff_ffff));
        // Ours is effective uid 0: 1000's process is another user's, root's is not.
        assert!(system.belongs_to_another_user(42));
        assert!(!system.belongs_to_another_user(43));
        assert!(!system.belongs_to_another_user(44));
        assert!(!system.belongs_to_another_user(45), "no such process");
        std::fs::remove_dir_all(&root).unwrap();

        let host = System::host();
        if let Some(own) = host.process_status("self") {
            let id = std::process::Command::new("id").arg("-u").output().ok();
            if let Some(id) = id.filter(|o| o.status.success()) {
                let uid = String::from_utf8_lossy(&id.stdout).trim().parse().ok();
                assert_eq!(own.effective_uid(), uid);
            }
            assert!(!host.belongs_to_another_user(std::process::id()));
            assert!(!host.belongs_to_another_user(u32::MAX));
        }
    }

    /// Oracle: proc(5)'s `/proc/PID/fdinfo/N` (`flags:` in octal) in a tree of the test's own,
    /// and this process's own standard input, open here.
    #[test]
    fn descriptor_flags_are_read_in_octal() {
        let root = tree("fdinfo");
        write(
            &root,
            "self/fdinfo/3",
            "pos:\t0\nflags:\t02100001\nmnt_id:\t9\n",
        );
        write(&root, "self/fdinfo/4", "pos:\t0\n");
        let system = System::host().with_procfs(&root);
        assert_eq!(system.descriptor_flags(3).unwrap(), Some(0o2100001));
        assert_eq!(system.descriptor_flags(4).unwrap(), None);
        assert!(system.descriptor_flags(5).is_err());
        std::fs::remove_dir_all(&root).unwrap();
        let host = System::host();
        if Path::new("/proc/self/fdinfo").is_dir() {
            let file = std::fs::File::open(host.procfs()).unwrap();
            let fd = std::os::fd::AsRawFd::as_raw_fd(&file) as u32;
            assert_eq!(host.descriptor_flags(fd).unwrap().map(|f| f & 0o3), Some(0));
        }
    }

    /// Oracle: proc(5)'s `/proc/stat` (`btime`, seconds since the epoch) in a tree of the
    /// test's own; this machine's boot lies between the epoch and now.
    #[test]
    fn the_boot_time_is_btime() {
        let root = tree("stat");
        write(&root, "stat", "cpu  1 2 3\nbtime 1764200000\nprocesses 9\n");
        assert_eq!(
            System::host().with_procfs(&root).boot_time(),
            Some(1_764_200_000)
        );
        write(&root, "stat", "cpu  1 2 3\n");
        assert_eq!(System::host().with_procfs(&root).boot_time(), None);
        std::fs::remove_dir_all(&root).unwrap();
        if let Some(boot) = System::host().boot_time() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            assert!(boot > 0 && boot <= now, "{boot}");
        }
    }
}
