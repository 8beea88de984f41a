//! The exporter's system calls: its descriptor limit (`getrlimit`, `setrlimit` of
//! `RLIMIT_NOFILE`), raised to the hard limit at start as Go's runtime raises it for every Go
//! exporter; and whether a connection's client has sent bytes not yet read (`recv` with
//! `MSG_PEEK`), so that a connection whose request has come is never evicted as idle; and
//! its signals (`pthread_sigmask`, `sigwait`): `SIGHUP`, `SIGTERM` and `SIGINT` blocked in
//! every thread and taken, one at a time, by the one thread that waits for them; and the
//! calling thread's CPU affinity (`sched_getaffinity`, `sched_setaffinity`), which a scrape's
//! thread is moved with to read each CPU's counters on that CPU.
//!
//! # Safety
//!
//! Each call is given structures owned by this module (an `rlimit`, a byte buffer, a
//! `sigset_t` filled by `sigemptyset` and `sigaddset` before use), by pointers valid for the
//! call alone, and descriptors borrowed from an open socket for the call alone; none keeps a
//! pointer or a descriptor after it returns. A CPU set is a `cpu_set_t` owned by this module
//! (all-zero bytes are an empty set), whose bits are set and tested only below `CPU_SETSIZE`,
//! and passed to the kernel with its own size.

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

/// The calling thread's CPU affinity, saved to be restored when this is dropped (on the same
/// thread: it is not `Send`), and the moves of that thread onto one CPU of it at a time.
/// Linux only: elsewhere nothing is saved.
pub struct ThreadAffinity {
    #[cfg(target_os = "linux")]
    saved: libc::cpu_set_t,
    /// Not `Send`: the affinity restored is the thread's that saved it.
    _thread: std::marker::PhantomData<*const ()>,
}

impl ThreadAffinity {
    /// The calling thread's affinity now; `None` where it cannot be read (or off Linux).
    #[cfg(target_os = "linux")]
    pub fn save() -> Option<ThreadAffinity> {
        // SAFETY: all-zero bytes are an empty cpu_set_t (module note).
        let mut saved: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: `saved` is a live cpu_set_t of `size` bytes that the call fills; thread 0
        // is the calling thread.
        if unsafe { libc::sched_getaffinity(0, size, &mut saved) } != 0 {
            return None;
        }
        Some(ThreadAffinity {
            saved,
            _thread: std::marker::PhantomData,
        })
    }

    /// The calling thread's affinity now; `None` where it cannot be read (or off Linux).
    #[cfg(not(target_os = "linux"))]
    pub fn save() -> Option<ThreadAffinity> {
        None
    }

    /// Moves the calling thread onto `cpu` alone, where the saved affinity allows that CPU;
    /// whether it moved (a CPU outside the affinity, or gone offline, is not moved to).
    #[cfg(target_os = "linux")]
    pub fn move_to(&self, cpu: u32) -> bool {
        let Ok(bit) = usize::try_from(cpu) else {
            return false;
        };
        if bit >= libc::CPU_SETSIZE as usize {
            return false;
        }
        // SAFETY: `bit` is below CPU_SETSIZE, so the test reads inside `saved`.
        if !unsafe { libc::CPU_ISSET(bit, &self.saved) } {
            return false;
        }
        // SAFETY: all-zero bytes are an empty cpu_set_t (module note).
        let mut only: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `bit` is below CPU_SETSIZE, so the write stays inside `only`.
        unsafe { libc::CPU_SET(bit, &mut only) };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: `only` is a live cpu_set_t of `size` bytes that the call reads; thread 0 is
        // the calling thread.
        unsafe { libc::sched_setaffinity(0, size, &only) == 0 }
    }

    /// The CPU the calling thread runs on now (`sched_getcpu`; `None` off Linux).
    #[cfg(target_os = "linux")]
    pub fn current_cpu() -> Option<u32> {
        // SAFETY: sched_getcpu has no preconditions; it returns -1 on failure.
        u32::try_from(unsafe { libc::sched_getcpu() }).ok()
    }

    /// The CPU the calling thread runs on now (`sched_getcpu`; `None` off Linux).
    #[cfg(not(target_os = "linux"))]
    pub fn current_cpu() -> Option<u32> {
        None
    }

    /// Moves the calling thread onto `cpu` alone (never, off Linux).
    #[cfg(not(target_os = "linux"))]
    pub fn move_to(&self, _cpu: u32) -> bool {
        false
    }
}

impl Drop for ThreadAffinity {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        {
            let size = std::mem::size_of::<libc::cpu_set_t>();
            // SAFETY: `saved` is a live cpu_set_t of `size` bytes that the call reads; thread
            // 0 is the calling thread, the one that saved it (the type is not Send).
            unsafe { libc::sched_setaffinity(0, size, &self.saved) };
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Oracle: the kernel (`sched_getcpu`, `sched_getaffinity`). The thread moves onto each
    /// CPU it may run on, and gets its affinity back when the saved one is dropped.
    #[test]
    fn a_thread_moves_onto_each_cpu_it_may_run_on_and_gets_its_affinity_back() {
        let affinity = |set: &libc::cpu_set_t| -> Vec<usize> {
            (0..libc::CPU_SETSIZE as usize)
                // SAFETY: every bit tested is below CPU_SETSIZE.
                .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, set) })
                .collect()
        };
        let allowed = {
            let saved = ThreadAffinity::save().expect("this thread's affinity");
            let allowed = affinity(&saved.saved);
            let mut moved = 0;
            for &cpu in &allowed {
                let cpu = u32::try_from(cpu).unwrap();
                if saved.move_to(cpu) {
                    assert_eq!(ThreadAffinity::current_cpu(), Some(cpu));
                    moved += 1;
                }
            }
            // The CPU it was on, at least, is one it may run on.
            assert!(moved >= 1, "moved onto none of {allowed:?}");
            // A CPU outside the affinity is never moved to.
            assert!(!saved.move_to(libc::CPU_SETSIZE as u32));
            allowed
        };
        let now = ThreadAffinity::save().expect("this thread's affinity");
        assert_eq!(affinity(&now.saved), allowed);
    }
}
