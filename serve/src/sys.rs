//! The exporter's system calls: its descriptor limit (`getrlimit`, `setrlimit` of
//! `RLIMIT_NOFILE`), raised to the hard limit at start as Go's runtime raises it for every Go
//! exporter; and whether a connection's client has sent bytes not yet read (`recv` with
//! `MSG_PEEK`), so that a connection whose request has come is never evicted as idle; and
//! its signals (`pthread_sigmask`, `sigwait`): `SIGHUP`, `SIGTERM` and `SIGINT` blocked in
//! every thread and taken, one at a time, by the one thread that waits for them; and what
//! its `process_*` metrics read: its limits (`getrlimit`), the clock tick and page size
//! (`sysconf`), and the entries of `/proc/self/fd` (`getdents64` into a buffer on the stack);
//! and the directories of the cgroups walked, watched with inotify (`inotify_init1`,
//! `inotify_add_watch`, and `read` into a buffer on the stack).
//!
//! # Safety
//!
//! Each call is given structures owned by this module (an `rlimit`, a byte buffer, a
//! `sigset_t` filled by `sigemptyset` and `sigaddset` before use), by pointers valid for the
//! call alone and with their lengths, and descriptors borrowed from an open socket or
//! directory for the call alone; none keeps a
//! pointer or a descriptor after it returns.

/// The soft limit on open descriptors (`RLIMIT_NOFILE`), after raising it to the hard one
/// where it was lower (where the kernel refuses, past `fs.nr_open`, it is left as it was).
/// `None` where the limit cannot be read.
pub fn raise_open_files() -> Option<libc::rlim_t> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is an `rlimit` owned here, written by the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: `raised` is an `rlimit` owned here, read by the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit.rlim_cur = limit.rlim_max;
        }
    }
    Some(limit.rlim_cur)
}

/// Whether bytes from the client wait unread on `stream` (a request, or a TLS handshake,
/// that its thread has not read yet): `recv` with `MSG_PEEK | MSG_DONTWAIT`, which neither
/// takes them nor waits, whatever the socket's own blocking mode.
pub fn bytes_waiting(stream: &std::net::TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut byte = [0u8; 1];
    // SAFETY: the descriptor is `stream`'s, open while it is borrowed; `byte` is a buffer
    // owned here of the length given.
    let got = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            byte.as_mut_ptr().cast(),
            byte.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    got > 0
}

/// The signals the exporter takes: `SIGHUP` (reload), `SIGTERM` and `SIGINT` (drain, then
/// exit).
const TAKEN: [i32; 3] = [libc::SIGHUP, libc::SIGTERM, libc::SIGINT];

/// The set of [`TAKEN`].
fn taken() -> libc::sigset_t {
    // SAFETY: all-zero bytes are a valid `sigset_t`; `sigemptyset` then makes it empty.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a `sigset_t` owned here.
    unsafe { libc::sigemptyset(&mut set) };
    for signal in TAKEN {
        // SAFETY: `set` was emptied above; `signal` is a valid signal number.
        unsafe { libc::sigaddset(&mut set, signal) };
    }
    set
}

/// Blocks `SIGHUP`, `SIGTERM` and `SIGINT` in the calling thread and every thread it starts
/// after, so that only [`wait_signal`] takes them (call it before starting any thread).
pub fn block_signals() {
    let set = taken();
    // SAFETY: `set` is an initialised `sigset_t`; the old mask is not asked for.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// Waits for one of the blocked signals; whether it is `SIGHUP` (else `SIGTERM` or
/// `SIGINT`).
pub fn wait_signal() -> bool {
    let set = taken();
    loop {
        let mut signal = 0;
        // SAFETY: `set` is an initialised `sigset_t` and `signal` an `i32` owned here.
        if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
            return signal == libc::SIGHUP;
        }
    }
}

/// A limit `getrlimit` reads, as `/proc/PID/limits` prints it.
#[derive(Clone, Copy, Debug)]
pub enum Limit {
    /// `RLIMIT_NOFILE` ("Max open files").
    OpenFiles,
    /// `RLIMIT_AS` ("Max address space"), in bytes.
    AddressSpace,
}

/// The soft value of `limit` (`RLIM_INFINITY`, unlimited, is 2^64 - 1); `None` where it
/// cannot be read.
pub fn soft_limit(limit: Limit) -> Option<u64> {
    let resource = match limit {
        Limit::OpenFiles => libc::RLIMIT_NOFILE,
        #[cfg(target_os = "linux")]
        Limit::AddressSpace => libc::RLIMIT_AS,
        // OpenBSD has no RLIMIT_AS, and the `process_*` families are Linux's (/proc/self).
        #[cfg(not(target_os = "linux"))]
        Limit::AddressSpace => return None,
    };
    let mut value = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `value` is an `rlimit` owned here, written by the call.
    if unsafe { libc::getrlimit(resource, &mut value) } != 0 {
        return None;
    }
    // `rlim_t` is unsigned on Linux and signed on the BSDs.
    fn unsigned<T: TryInto<u64>>(value: T) -> Option<u64> {
        value.try_into().ok()
    }
    unsigned(value.rlim_cur)
}

/// The clock tick (`sysconf(_SC_CLK_TCK)`, 100 where it cannot be read) and the page size
/// (`sysconf(_SC_PAGESIZE)`, 4096 where it cannot be read).
pub fn clock_ticks_and_page_size() -> (u64, u64) {
    // SAFETY: sysconf has no preconditions; it returns -1 for a name it does not know.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    // SAFETY: as above.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (
        u64::try_from(ticks).ok().filter(|&t| t > 0).unwrap_or(100),
        u64::try_from(page).ok().filter(|&p| p > 0).unwrap_or(4096),
    )
}

/// The entries of the open directory `dir` but `.` and `..`: `None` outside Linux, whose
/// `/proc/self/fd` this counts.
#[cfg(not(target_os = "linux"))]
pub fn directory_entries(_dir: &std::fs::File) -> Option<u64> {
    None
}

/// The entries of the open directory `dir` but `.` and `..` (`getdents64` into a buffer on
/// the stack: nothing allocated, where `read_dir` allocates each name); `None` where it
/// cannot be read.
#[cfg(target_os = "linux")]
pub fn directory_entries(dir: &std::fs::File) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let mut buffer = [0u8; 4096];
    let mut entries = 0;
    loop {
        // SAFETY: the descriptor is `dir`'s, open while it is borrowed; `buffer` is owned
        // here and the kernel writes at most its length into it.
        let got = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir.as_raw_fd(),
                buffer.as_mut_ptr(),
                buffer.len(),
            )
        };
        let filled = usize::try_from(got).ok()?;
        if filled == 0 {
            return Some(entries);
        }
        // Each record: inode (8 bytes), offset (8), its length (2), type (1), the name
        // (NUL-terminated).
        let mut at = 0;
        while at + 19 < filled {
            let length = usize::from(u16::from_ne_bytes([buffer[at + 16], buffer[at + 17]]));
            if length == 0 {
                return None;
            }
            let name = &buffer[at + 19..(at + length).min(filled)];
            let name = name.split(|&b| b == 0).next().unwrap_or_default();
            if name != b"." && name != b".." {
                entries += 1;
            }
            at += length;
        }
    }
}

/// An inotify instance watching directories for directories made, removed or renamed in
/// them (`inotify(7)`; the cgroup file system reports a cgroup's `mkdir`, `rmdir` and
/// `rename`, which the VFS notifies).
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct DirectoryWatch(std::os::fd::OwnedFd);

#[cfg(target_os = "linux")]
impl DirectoryWatch {
    /// A new instance, or `None` where the kernel gives none (`inotify_init1` failed: the
    /// per-user limit of instances, say).
    pub fn new() -> Option<DirectoryWatch> {
        use std::os::fd::FromRawFd;
        // SAFETY: inotify_init1 takes flags only; the descriptor it returns is owned here.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        // SAFETY: `fd` is a fresh descriptor no one else owns.
        (fd >= 0).then(|| DirectoryWatch(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    /// Watches directory `path`; false where it cannot (the per-user limit of watches,
    /// `fs.inotify.max_user_watches`, or a directory gone).
    pub fn watch(&self, path: &std::path::Path) -> bool {
        use std::os::fd::AsRawFd;
        use std::os::unix::ffi::OsStrExt;
        let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
            return false;
        };
        let mask = libc::IN_CREATE
            | libc::IN_DELETE
            | libc::IN_MOVED_FROM
            | libc::IN_MOVED_TO
            | libc::IN_DELETE_SELF
            | libc::IN_ONLYDIR;
        // SAFETY: the descriptor is this instance's; `path` is a NUL-terminated string that
        // outlives the call.
        unsafe { libc::inotify_add_watch(self.0.as_raw_fd(), path.as_ptr(), mask) >= 0 }
    }

    /// How many directories this instance watches: the `inotify wd:` lines the kernel writes
    /// for it in `/proc/self/fdinfo`, one a watch (fs/notify/fdinfo.c); `None` where they
    /// cannot be read.
    #[cfg(test)]
    pub fn watches(&self) -> Option<usize> {
        use std::os::fd::AsRawFd;
        let info = format!("/proc/self/fdinfo/{}", self.0.as_raw_fd());
        let info = std::fs::read_to_string(info).ok()?;
        Some(
            info.lines()
                .filter(|l| l.starts_with("inotify wd:"))
                .count(),
        )
    }

    /// Waits until something is reported (a directory made, removed or renamed in one
    /// watched, or the queue overflowed), at most `timeout`: whether something was. The
    /// events stay queued for [`changed`](DirectoryWatch::changed).
    pub fn wait(&self, timeout: std::time::Duration) -> bool {
        use std::os::fd::AsRawFd;
        let mut ready = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: `ready` is one live pollfd for the call; the descriptor is this instance's.
        unsafe { libc::poll(&mut ready, 1, millis) > 0 }
    }

    /// Whether anything was reported since the last call (the events read and dropped; a
    /// queue that overflowed reports too).
    pub fn changed(&self) -> bool {
        use std::os::fd::AsRawFd;
        let mut buffer = [0u8; 4096];
        let mut changed = false;
        loop {
            // SAFETY: the descriptor is this instance's; the kernel writes at most the
            // buffer's length into the buffer, owned here.
            let got =
                unsafe { libc::read(self.0.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
            if got <= 0 {
                return changed;
            }
            changed = true;
        }
    }
}
