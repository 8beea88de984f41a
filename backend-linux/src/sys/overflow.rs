//! Overflow signals: a sampler's descriptor set to send a queued real-time signal to the
//! thread that owns it at each wakeup (`O_ASYNC`, `F_SETSIG`, `F_SETOWN_EX` with
//! `F_OWNER_TID`: fcntl(2)), and one process-wide handler that finds the descriptor's callback
//! in a fixed table and calls it with the interrupted address. Nothing on the signal path
//! allocates or locks: the table is atomics, registered and cleared outside the handler. See
//! the parent module's `# Safety` note.

use std::mem::{align_of, size_of};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Once;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use super::os_error::{Errno, last_errno};

use counterhal_hal::Overflow;
pub use counterhal_hal::OverflowCallback;

/// `F_SETSIG` (asm-generic/fcntl.h, as x86-64 and aarch64 take it): the signal a descriptor's
/// I/O readiness is sent as.
pub const F_SETSIG: libc::c_int = 10;
/// `F_SETOWN_EX`: whom the signal goes to, as a [`FOwnerEx`].
pub const F_SETOWN_EX: libc::c_int = 15;
/// `F_OWNER_TID`: one thread.
pub const F_OWNER_TID: libc::c_int = 0;

/// `struct f_owner_ex`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FOwnerEx {
    /// `type`: `F_OWNER_TID`, `F_OWNER_PID` or `F_OWNER_PGRP`.
    pub type_: libc::c_int,
    /// `pid`: the thread, process or group id.
    pub pid: libc::pid_t,
}

/// Where `si_fd` lies in a `siginfo_t`: after `si_signo`, `si_errno`, `si_code`, padded to a
/// `long`, and the union's `si_band`.
pub const SI_FD_OFFSET: usize = (3 * size_of::<libc::c_int>())
    .next_multiple_of(align_of::<libc::c_long>())
    + size_of::<libc::c_long>();

/// How many samplers may have overflow callbacks at once.
pub const SLOTS: usize = 64;

struct Slot {
    fd: AtomicI32,
    callback: AtomicUsize,
    token: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)] // the array's initialiser, copied per slot
const EMPTY: Slot = Slot {
    fd: AtomicI32::new(-1),
    callback: AtomicUsize::new(0),
    token: AtomicUsize::new(0),
};

// Static: the signal handler reads it, and a handler is reached by no value.
static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];

/// The signal the overflows come as: the first real-time signal the C library leaves free.
pub fn overflow_signal() -> i32 {
    libc::SIGRTMIN() + 4
}

extern "C" fn handler(_: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    if info.is_null() {
        return;
    }
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler; for a signal sent
    // by F_SETSIG it carries the descriptor (the `_sigpoll` member, si_fd).
    let fd = unsafe { sigpoll_fd(info) };
    let address = interrupted_address(context);
    for slot in &TABLE {
        if slot.fd.load(Ordering::Acquire) == fd {
            let callback = slot.callback.load(Ordering::Acquire);
            if callback != 0 {
                // SAFETY: `callback` was stored from an `OverflowCallback` in `register`.
                let callback: OverflowCallback = unsafe { std::mem::transmute(callback) };
                callback(&Overflow::new(address, slot.token.load(Ordering::Relaxed)));
            }
            return;
        }
    }
}

/// `si_fd` of a SIGPOLL-style siginfo: in the union after `si_signo`, `si_errno`, `si_code`
/// (and padding to 8 on 64-bit), `{ long si_band; int si_fd; }`.
///
/// # Safety
/// `info` points to a valid `siginfo_t`.
unsafe fn sigpoll_fd(info: *const libc::siginfo_t) -> i32 {
    let at = info.cast::<u8>().wrapping_add(SI_FD_OFFSET).cast::<i32>();
    // SAFETY: the field lies inside the caller's valid siginfo_t (128 bytes).
    unsafe { at.read_unaligned() }
}

/// The interrupted program counter from the handler's user context.
fn interrupted_address(context: *mut libc::c_void) -> u64 {
    if context.is_null() {
        return 0;
    }
    let context = context.cast::<libc::ucontext_t>();
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the kernel passes the handler a valid ucontext_t.
        unsafe { (*context).uc_mcontext.gregs[libc::REG_RIP as usize] as u64 }
    }
    #[cfg(target_arch = "aarch64")]
    {
        // SAFETY: the kernel passes the handler a valid ucontext_t.
        unsafe { (*context).uc_mcontext.pc }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = context;
        0
    }
}

/// Installs the handler once for the process.
fn install() -> Result<(), Errno> {
    // Static: a signal's handler is the process's (`sigaction`), installed once for it.
    static INSTALLED: Once = Once::new();
    let mut result = Ok(());
    INSTALLED.call_once(|| {
        // SAFETY: an all-zero sigaction is a valid starting value; the fields are set below.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = handler as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        // SAFETY: `action.sa_mask` is a valid sigset_t to empty.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: installs a handler for a real-time signal this module owns.
        if unsafe { libc::sigaction(overflow_signal(), &action, std::ptr::null_mut()) } != 0 {
            result = Err(last_errno());
        }
    });
    result
}

/// Sends `fd`'s wakeups to thread `tid` as the overflow signal, calling `callback` with
/// `token` for each.
///
/// # Errors
/// EBUSY when [`SLOTS`] samplers have callbacks already; the errno of `fcntl` or
/// `sigaction`.
pub fn register(
    fd: BorrowedFd<'_>,
    tid: i32,
    callback: OverflowCallback,
    token: usize,
) -> Result<(), Errno> {
    install()?;
    let raw = fd.as_raw_fd();
    let slot = TABLE
        .iter()
        .find(|slot| {
            slot.fd
                .compare_exchange(-1, -2, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })
        .ok_or(libc::EBUSY)?;
    slot.callback
        .store(callback as *const () as usize, Ordering::Release);
    slot.token.store(token, Ordering::Release);
    slot.fd.store(raw, Ordering::Release);
    let owner = FOwnerEx {
        type_: F_OWNER_TID,
        pid: tid,
    };
    // SAFETY: fcntl on a live descriptor; `owner` is a valid f_owner_ex that lives across
    // the call.
    let owned = unsafe { libc::fcntl(raw, F_SETOWN_EX, &owner) } == 0;
    // SAFETY: fcntl on a live descriptor with an integer argument.
    let signalled = owned && unsafe { libc::fcntl(raw, F_SETSIG, overflow_signal()) } == 0;
    // SAFETY: as above.
    let set = signalled
        && unsafe { libc::fcntl(raw, libc::F_SETFL, libc::O_ASYNC | libc::O_NONBLOCK) } == 0;
    if !set {
        let errno = last_errno();
        unregister(fd);
        return Err(errno);
    }
    Ok(())
}

/// Stops `fd`'s overflow signals and forgets its callback.
pub fn unregister(fd: BorrowedFd<'_>) {
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl on a live descriptor.
    unsafe { libc::fcntl(raw, libc::F_SETFL, 0) };
    for slot in &TABLE {
        if slot.fd.load(Ordering::Acquire) == raw {
            slot.callback.store(0, Ordering::Release);
            slot.fd.store(-1, Ordering::Release);
        }
    }
}

/// The calling thread's id.
pub fn gettid() -> i32 {
    // The system call, not glibc's wrapper (added in glibc 2.30), so that what links this
    // runs on glibc 2.28 (docs/install.md).
    // SAFETY: gettid takes no arguments and cannot fail.
    (unsafe { libc::syscall(libc::SYS_gettid) }) as i32
}

/// An eventfd, to wake a polling thread.
///
/// # Errors
/// The errno of `eventfd`.
pub fn eventfd() -> Result<std::os::fd::OwnedFd, Errno> {
    // SAFETY: eventfd takes no pointers.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(last_errno());
    }
    // SAFETY: `fd` is a new descriptor this call owns.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// Adds 1 to eventfd `fd`, waking whoever polls it.
pub fn wake(fd: BorrowedFd<'_>) {
    let one = 1u64.to_ne_bytes();
    // SAFETY: writes 8 bytes from a live buffer to a live descriptor.
    unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
}

/// Waits until `event` has records to read (or hung up) or `stop` was woken: which of the two
/// are ready. Interrupted waits are retried.
///
/// # Errors
/// The errno of `poll`.
pub fn wait_for(event: BorrowedFd<'_>, stop: BorrowedFd<'_>) -> Result<(bool, bool), Errno> {
    let mut fds = [
        libc::pollfd {
            fd: event.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a live array of two pollfd for the call.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if ready >= 0 {
            return Ok((fds[0].revents != 0, fds[1].revents != 0));
        }
        let errno = last_errno();
        if errno != libc::EINTR {
            return Err(errno);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;

    /// The fcntl numbers, `struct f_owner_ex` and `si_fd`'s place against the system's
    /// headers (the C library's `fcntl.h` and `signal.h` with `_GNU_SOURCE`).
    #[test]
    fn fcntl_numbers_and_siginfo_match_the_system_headers() {
        let dir = std::env::temp_dir().join(format!("counterhal-overflow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = dir.join("f.c");
        std::fs::write(
            &source,
            "#define _GNU_SOURCE\n#include <fcntl.h>\n#include <signal.h>\n#include <stddef.h>\n\
             #include <stdio.h>\nint main(void) { printf(\"%d %d %d %zu %zu\\n\", F_SETSIG, \
             F_SETOWN_EX, F_OWNER_TID, sizeof(struct f_owner_ex), offsetof(siginfo_t, si_fd)); \
             return 0; }\n",
        )
        .unwrap();
        let binary = dir.join("f");
        let built = std::process::Command::new("cc")
            .arg(&source)
            .arg("-o")
            .arg(&binary)
            .output();
        if !built.is_ok_and(|o| o.status.success()) {
            skip!(Need::Tools, "no C compiler to read the system headers with");
        }
        let out = std::process::Command::new(&binary).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let text = String::from_utf8_lossy(&out.stdout);
        let ours = format!(
            "{F_SETSIG} {F_SETOWN_EX} {F_OWNER_TID} {} {SI_FD_OFFSET}",
            size_of::<FOwnerEx>()
        );
        assert_eq!(text.trim(), ours);
    }
}
