//! The held child: made by `clone(CLONE_VM)` (Linux, x86-64 and AArch64) or `fork`, it waits
//! on a pipe for its release, then executes the command. Part of [`super`], whose `# Safety`
//! note holds here too, with one more invariant:
//! - A child sharing this process's memory (`clone_held_child`) runs only `held_entry`,
//!   which touches nothing but its own stack and the `ChildMemory` made for it, and makes
//!   system calls through `raw` (the C library's wrappers would write this thread's
//!   `errno`); that memory is freed only once the child has executed or been reaped.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use super::{Errno, last_errno, pipe_cloexec, read_bytes, wait4};

/// A program prepared to be executed by a held child: everything it needs is made before
/// the child is made, so the child only makes system calls.
#[derive(Debug)]
pub struct Prepared {
    path: CString,
    /// Kept alive for `argv`'s pointers.
    _args: Vec<CString>,
    /// The argument pointers, NUL-terminated.
    argv: Vec<*const libc::c_char>,
    /// This process's environment when the program was prepared: its `NAME=value` strings,
    /// each NUL-terminated, one after the other (kept alive for `envp`'s pointers).
    _env: Vec<u8>,
    /// The environment's pointers, NUL-terminated.
    envp: Vec<*const libc::c_char>,
}

impl Prepared {
    /// `path` executed with the arguments `args` (`args[0]` the name it runs under) and this
    /// process's environment as it is now; `None` when an argument holds a NUL byte.
    pub fn new(path: &std::ffi::OsStr, args: &[std::ffi::OsString]) -> Option<Prepared> {
        use std::os::unix::ffi::OsStrExt;
        let c = |s: &std::ffi::OsStr| CString::new(s.as_bytes()).ok();
        let path = c(path)?;
        let args: Vec<CString> = args.iter().map(|a| c(a)).collect::<Option<_>>()?;
        let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let (env, envp) = environment_copy();
        Some(Prepared {
            path,
            _args: args,
            argv,
            _env: env,
            envp,
        })
    }
}

unsafe extern "C" {
    /// The C library's environment, `NAME=value` pointers, NUL-terminated. Changing it while
    /// another thread reads it is the changer's fault (`std::env::set_var` is `unsafe` for
    /// that reason), so reading it here is as sound as `execv`'s reading it.
    static environ: *const *const libc::c_char;
}

/// A copy of this process's environment: its strings one after the other in one buffer, and
/// their pointers (into that buffer), NUL-terminated. A copy, because a child sharing this
/// process's memory executes later, when `setenv` may have moved or freed the C library's.
fn environment_copy() -> (Vec<u8>, Vec<*const libc::c_char>) {
    let mut bytes = Vec::new();
    let mut starts = Vec::new();
    // SAFETY: a read of the C library's pointer (see `environ`).
    let mut entry = unsafe { environ };
    while !entry.is_null() {
        // SAFETY: `entry` points into the NUL-terminated array `environ` heads, before or at
        // its NUL.
        let string = unsafe { *entry };
        if string.is_null() {
            break;
        }
        // SAFETY: each entry of the environment is a NUL-terminated C string.
        let text = unsafe { CStr::from_ptr(string) };
        starts.push(bytes.len());
        bytes.extend_from_slice(text.to_bytes_with_nul());
        entry = entry.wrapping_add(1);
    }
    let base = bytes.as_ptr();
    let mut pointers: Vec<*const libc::c_char> = starts
        .into_iter()
        .map(|start| base.wrapping_add(start).cast())
        .collect();
    pointers.push(std::ptr::null());
    (bytes, pointers)
}

/// A child made by [`fork_held`]: its process id, the end that releases it (one byte: exec;
/// closed unwritten: it ends with status 127), and what tells how its exec went.
#[derive(Debug)]
pub struct Forked {
    /// The child's process id.
    pub pid: i32,
    /// Writing one byte here lets the child exec.
    pub release: OwnedFd,
    /// The exec's outcome, and the memory the child reads until then.
    pub exec: ExecWatch,
}

/// The end a held child's exec errno arrives on (four bytes when the exec failed, EOF once
/// it succeeded or the child ended), and the memory the child uses until then: where the
/// child shares this process's memory ([`fork_held`] on Linux), its stack and the prepared
/// program. That memory is freed only once the child is known to be done with it (its exec
/// seen through, or the child reaped); a watch dropped before that leaks it, the one safe
/// choice while the child may still run on it.
#[derive(Debug)]
pub struct ExecWatch {
    exec_error: OwnedFd,
    /// Made by `Box::into_raw`; `None` once freed.
    memory: Option<NonNull<ChildMemory>>,
}

// SAFETY: the memory is the watch's alone in this process (the child only reads it); the
// watch never reads it, and frees it once, from whichever thread holds the watch.
unsafe impl Send for ExecWatch {}
// SAFETY: a shared watch does nothing with the memory.
unsafe impl Sync for ExecWatch {}

/// What a held child reads before its exec.
#[derive(Debug)]
struct ChildMemory {
    program: Prepared,
    /// The parent's pipe ends (closed in the child), the release end, the errno end.
    fds: [i32; 4],
    /// The child's stack where it shares this process's memory (none under valgrind, or when
    /// it could not be mapped: the child is then forked).
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    stack: Option<ChildStack>,
}

impl ExecWatch {
    /// How the exec of child `pid` went: `None` once it has executed, the errno when it
    /// failed (the child, which then exits at once, is reaped here).
    ///
    /// # Errors
    /// The errno of `read` (the child's state is then unknown, and its memory is kept).
    pub fn outcome(mut self, pid: i32) -> Result<Option<Errno>, Errno> {
        let failed = exec_errno(self.exec_error.as_fd())?;
        match failed {
            // The exec succeeded (the new program has memory of its own) or the child
            // ended: the last end of the pipe closes after the child has left this memory
            // (exec replaces the memory before closing close-on-exec descriptors; exit
            // releases it before closing descriptors).
            None => self.free(),
            Some(_) => self.reap(pid),
        }
        Ok(failed)
    }

    /// Waits for child `pid`, whose release end the caller has closed unwritten (the child
    /// then exits with 127 before exec), and frees its memory once it is reaped.
    pub fn abandon(mut self, pid: i32) {
        self.reap(pid);
    }

    fn reap(&mut self, pid: i32) {
        if wait4(pid).is_ok() {
            self.free();
        }
    }

    /// Frees the child's memory: only once the child is done with it.
    fn free(&mut self) {
        if let Some(memory) = self.memory.take() {
            // SAFETY: made by Box::into_raw in fork_held and freed once (taken here); the
            // callers free it only once the child has executed or been reaped.
            drop(unsafe { Box::from_raw(memory.as_ptr()) });
        }
    }
}

/// Makes a child that waits for a byte on a pipe and then executes `program` with this
/// process's environment (as it was when `program` was prepared), working directory and
/// standard streams, every caught signal and `SIGPIPE` at its default, and no signal
/// blocked (as a shell starts a command).
///
/// On Linux (x86-64 and AArch64) the child shares this process's memory until its exec
/// (`clone(CLONE_VM)`, the way `posix_spawn` makes a child, but not suspending this process:
/// counters are opened on the child while it waits), so the cost of making it does not grow
/// with this process's memory: a `fork` copies every page table and makes each page written
/// afterwards a copy-on-write fault while the child is held. Elsewhere, under valgrind and
/// where the clone is refused, `fork`.
///
/// # Errors
/// The errno of `pipe2`, or of `fork` (`EAGAIN`, `ENOMEM`).
pub fn fork_held(program: Prepared) -> Result<Forked, Errno> {
    let (release_read, release_write) = pipe_cloexec()?;
    let (error_read, error_write) = pipe_cloexec()?;
    let memory = Box::new(ChildMemory {
        program,
        fds: [
            release_write.as_raw_fd(),
            error_read.as_raw_fd(),
            release_read.as_raw_fd(),
            error_write.as_raw_fd(),
        ],
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        stack: (!raw::under_valgrind())
            .then(ChildStack::new)
            .and_then(Result::ok),
    });
    let memory = NonNull::from(Box::leak(memory));
    let mut exec = ExecWatch {
        exec_error: error_read,
        memory: Some(memory),
    };
    let pid = match make_held_child(memory) {
        Ok(pid) => pid,
        Err(errno) => {
            // No child was made: the memory is this process's alone.
            exec.free();
            return Err(errno);
        }
    };
    drop((release_read, error_write));
    Ok(Forked {
        pid,
        release: release_write,
        exec,
    })
}

/// Makes the held child, with every signal blocked across it, so that none runs a handler
/// of this process in the child before the child has put them back at their defaults (it
/// inherits the mask): `clone(CLONE_VM)` where there is a stack for it (Linux, not under
/// valgrind, which runs no process sharing memory with another unless it is a thread, and
/// would end this one), else, or when the clone is refused (QEMU's user-mode emulation says
/// `EINVAL`, a seccomp filter may say `EPERM` or `ENOSYS`), `fork`.
fn make_held_child(memory: NonNull<ChildMemory>) -> Result<i32, Errno> {
    // SAFETY: an all-zero sigset_t is a valid value of this C struct (sigfillset fills it).
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: sigfillset writes the live local.
    unsafe { libc::sigfillset(&mut all) };
    // SAFETY: as above.
    let mut before: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: both sets are live locals.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut before) };
    let made = make_blocked(memory);
    // SAFETY: `before` is the mask pthread_sigmask reported.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut()) };
    made
}

/// [`make_held_child`]'s choice, made with every signal blocked.
fn make_blocked(memory: NonNull<ChildMemory>) -> Result<i32, Errno> {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    {
        // SAFETY: no child exists yet: the memory is this process's alone, read here.
        let top = unsafe { memory.as_ref() }
            .stack
            .as_ref()
            .map(ChildStack::top);
        if let Some(top) = top
            && let Ok(pid) = clone_held_child(memory, top)
        {
            return Ok(pid);
        }
    }
    fork_held_child(memory)
}

/// The held child's stack: 32 KiB (it runs one small function, with every signal blocked
/// until each caught one is back at its default) above a guard page, mapped on its own so
/// that an overflow faults instead of writing this process's heap.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
#[derive(Debug)]
struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
impl ChildStack {
    /// The usable size.
    const SIZE: usize = 32 << 10;

    /// Maps a stack and its guard page.
    ///
    /// # Errors
    /// The errno of `mmap` or `mprotect`.
    fn new() -> Result<ChildStack, Errno> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let len = page + Self::SIZE.div_ceil(page) * page;
        // SAFETY: a new private anonymous mapping; no existing memory is named.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(last_errno());
        }
        let stack = ChildStack { base, len };
        // SAFETY: the lowest page of the mapping just made, which nothing uses.
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(last_errno());
        }
        Ok(stack)
    }

    /// The stack's top, where it starts (it grows down); page-aligned.
    fn top(&self) -> *mut libc::c_void {
        self.base.wrapping_byte_add(self.len)
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: the mapping mmap made, unmapped once; dropped only with its ChildMemory,
        // once the child is done with it.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// Makes the child with `clone(CLONE_VM | SIGCHLD)` on the stack whose top is `top`.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn clone_held_child(memory: NonNull<ChildMemory>, top: *mut libc::c_void) -> Result<i32, Errno> {
    // SAFETY: `top` is the page-aligned top of the live stack mapping `memory` owns, which
    // outlives the child's use of it (ExecWatch frees it only after the exec or the reap);
    // `held_entry` makes only raw system calls, reads only what `memory` points to (made by
    // Box::into_raw, written by no one while the child may run) and never returns.
    let pid = unsafe {
        libc::clone(
            held_entry,
            top,
            libc::CLONE_VM | libc::SIGCHLD,
            memory.as_ptr().cast(),
        )
    };
    if pid < 0 { Err(last_errno()) } else { Ok(pid) }
}

/// The child made by `clone(CLONE_VM)`: it shares this process's memory and thread state,
/// so it touches neither `errno` nor anything the C library keeps per thread, only
/// [`raw`]'s system calls on the [`ChildMemory`] `arg` points to, its own stack, and exits
/// with `exit_group`. Closes the parent's ends, puts every caught signal back at its default
/// (and `SIGPIPE`, ignored by Rust's runtime), unblocks all, waits for the release and
/// executes; writes exec's errno and exits with 127 when that fails or the parent gave up.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
extern "C" fn held_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the ChildMemory fork_held made (Box::into_raw), alive until this
    // child has executed or ended, and written by no one meanwhile.
    let memory = unsafe { &*arg.cast::<ChildMemory>() };
    let [parents_release, parents_error, release_fd, error_fd] = memory.fds;
    // SAFETY: the child's copies of the parent's ends (its descriptor table is its own).
    unsafe { raw::close(parents_release) };
    // SAFETY: as above.
    unsafe { raw::close(parents_error) };
    // Signal numbers 1 to 64 (the kernel's _NSIG on x86-64 and AArch64).
    let mut signal = 1;
    while signal <= 64 {
        let handler = raw::handler(signal);
        if handler > libc::SIG_IGN || (signal == libc::SIGPIPE && handler != libc::SIG_DFL) {
            raw::default_handler(signal);
        }
        signal += 1;
    }
    raw::unblock_all();
    let mut byte = 0u8;
    let released = loop {
        match raw::read_byte(release_fd, &mut byte) {
            1 => break true,
            n if n == -(libc::EINTR as isize) => continue,
            _ => break false,
        }
    };
    if released {
        let program = &memory.program;
        // SAFETY: the prepared program's C strings and NUL-terminated arrays, alive in the
        // shared memory until this exec is seen through.
        let failed = unsafe {
            raw::execve(
                program.path.as_ptr(),
                program.argv.as_ptr(),
                program.envp.as_ptr(),
            )
        };
        let errno = i32::try_from(failed.unsigned_abs())
            .unwrap_or(libc::EIO)
            .to_ne_bytes();
        raw::write(error_fd, &errno);
    }
    raw::exit_group(127)
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod raw;

/// Makes the child with `fork`: it has its own copy of `memory`.
fn fork_held_child(memory: NonNull<ChildMemory>) -> Result<i32, Errno> {
    // SAFETY: fork has no memory-safety preconditions; the child below only makes
    // async-signal-safe system calls on values made before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(last_errno());
    }
    if pid == 0 {
        // SAFETY: the child's copy of the memory fork_held made, which nothing else uses.
        held_child(unsafe { memory.as_ref() });
    }
    Ok(pid)
}

/// The forked child: closes the parent's ends, puts every caught signal and `SIGPIPE` back at
/// its default and unblocks all (as the cloned child does), waits for the release and
/// executes; writes exec's errno and exits with 127 when that fails or the parent gave up.
fn held_child(memory: &ChildMemory) -> ! {
    let [parents_release, parents_error, release_fd, error_fd] = memory.fds;
    for fd in [parents_release, parents_error] {
        // SAFETY: close is async-signal-safe; these are the child's copies of the fds.
        unsafe { libc::close(fd) };
    }
    for signal in 1..=64 {
        // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: sigaction (async-signal-safe) reads the disposition into the live local; a
        // number that is no signal here fails with EINVAL and leaves it SIG_DFL.
        unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) };
        if old.sa_sigaction > libc::SIG_IGN
            || (signal == libc::SIGPIPE && old.sa_sigaction != libc::SIG_DFL)
        {
            // SAFETY: signal is async-signal-safe for SIG_DFL.
            unsafe { libc::signal(signal, libc::SIG_DFL) };
        }
    }
    // SAFETY: an empty sigset_t (sigemptyset fills it) is a valid value of this C struct.
    let mut none: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: sigemptyset writes the live local.
    unsafe { libc::sigemptyset(&mut none) };
    // SAFETY: sigprocmask with a valid set and no old set; async-signal-safe.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) };
    let mut byte = 0u8;
    let released = loop {
        let ptr: *mut u8 = &mut byte;
        // SAFETY: reads at most one byte into a live local from an fd held until exec.
        let n = unsafe { libc::read(release_fd, ptr.cast(), 1) };
        match n {
            1 => break true,
            n if n < 0 && last_errno() == libc::EINTR => continue,
            _ => break false,
        }
    };
    if released {
        let program = &memory.program;
        // SAFETY: `path`, `argv` and `envp` (NUL-terminated) point into this copy of the
        // parent's `Prepared`; execve is async-signal-safe.
        unsafe {
            libc::execve(
                program.path.as_ptr(),
                program.argv.as_ptr(),
                program.envp.as_ptr(),
            )
        };
        let errno = last_errno().to_ne_bytes();
        // SAFETY: writes 4 bytes from a live local to the error pipe, held until exec.
        unsafe { libc::write(error_fd, errno.as_ptr().cast(), errno.len()) };
    }
    // SAFETY: _exit is async-signal-safe and ends only this child.
    unsafe { libc::_exit(127) }
}

/// The errno a held child's exec failed with, or `None` once it has executed (EOF).
///
/// # Errors
/// The errno of `read`.
fn exec_errno(fd: BorrowedFd<'_>) -> Result<Option<Errno>, Errno> {
    let mut bytes = [0u8; 4];
    let mut got = 0;
    while got < bytes.len() {
        let n = read_bytes(fd, &mut bytes[got..])?;
        if n == 0 {
            break;
        }
        got += n;
    }
    Ok((got == bytes.len()).then(|| i32::from_ne_bytes(bytes)))
}
