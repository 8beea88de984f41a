//! The held child: made by `clone(CLONE_VM)` (Linux, x86-64 and AArch64) or `fork`, it waits
//! on a pipe for its release, then executes the command. Part of [`super`], whose `# Safety`
//! note holds here too, with one more invariant:
//! - A child sharing this process's memory (`clone_held_child`) runs only `held_entry`,
//!   which touches nothing but its own stack and the `ChildMemory` made for it, and makes
//!   system calls through `raw` (the C library's wrappers would write this thread's
//!   `errno`); that memory is freed only once the child has executed or been reaped.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use super::{Errno, last_errno, pipe_cloexec, read_bytes, wait4};

/// A program prepared to be executed by a held child: everything it needs is made before
/// the child is made, so the child only makes system calls.
#[derive(Debug)]
pub struct Prepared {
    path: std::ffi::CString,
    /// Kept alive for `argv`'s pointers.
    _args: Vec<std::ffi::CString>,
    /// The argument pointers, NUL-terminated.
    argv: Vec<*const libc::c_char>,
}

impl Prepared {
    /// `path` executed with the arguments `args` (`args[0]` the name it runs under); `None`
    /// when one of them holds a NUL byte.
    pub fn new(path: &std::ffi::OsStr, args: &[std::ffi::OsString]) -> Option<Prepared> {
        use std::os::unix::ffi::OsStrExt;
        let c = |s: &std::ffi::OsStr| std::ffi::CString::new(s.as_bytes()).ok();
        let path = c(path)?;
        let args: Vec<std::ffi::CString> = args.iter().map(|a| c(a)).collect::<Option<_>>()?;
        let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        Some(Prepared {
            path,
            _args: args,
            argv,
        })
    }
}

unsafe extern "C" {
    /// The C library's environment, `NAME=value` pointers, NUL-terminated. Changing it while
    /// another thread reads it is the caller's undoing (`std::env::set_var` is `unsafe` for
    /// that reason), so reading it here is as sound as `execv`'s reading it.
    static environ: *const *const libc::c_char;
}

/// This process's environment, for `execve`.
fn environment() -> *const *const libc::c_char {
    // SAFETY: a read of the C library's pointer (see `environ`).
    unsafe { environ }
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
    memory: Option<Box<ChildMemory>>,
}

/// What a held child reads before its exec.
#[derive(Debug)]
struct ChildMemory {
    program: Prepared,
    /// The parent's pipe ends (closed in the child), the release end, the errno end.
    fds: [i32; 4],
    /// The environment to execute with: this process's, when the child was made.
    envp: *const *const libc::c_char,
    /// The child's stack where it shares this process's memory (unused after a `fork`).
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    stack: Vec<u128>,
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
            // The exec succeeded (the new program has memory of its own) or the child ended.
            None => drop(self.memory.take()),
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
            drop(self.memory.take());
        }
    }
}

impl Drop for ExecWatch {
    fn drop(&mut self) {
        // Still possibly in use by a child sharing this memory: leaked, never freed under it.
        if let Some(memory) = self.memory.take() {
            std::mem::forget(memory);
        }
    }
}

/// Makes a child that waits for a byte on a pipe and then executes `program` with this
/// process's environment, working directory and
/// standard streams, `SIGPIPE` at its default, every other caught signal at its default too,
/// and no signal blocked (as a shell starts a command).
///
/// On Linux (x86-64 and AArch64) the child shares this process's memory until its exec
/// (`clone(CLONE_VM)`, the way `posix_spawn` makes a child, but not suspending this process:
/// counters are opened on the child while it waits), so the cost of making it does not grow
/// with this process's memory: a `fork` copies every page table and makes each page written
/// afterwards a copy-on-write fault while the child is held. Elsewhere, `fork`.
///
/// # Errors
/// The errno of `pipe2`, `clone` or `fork`.
pub fn fork_held(program: Prepared) -> Result<Forked, Errno> {
    let (release_read, release_write) = pipe_cloexec()?;
    let (error_read, error_write) = pipe_cloexec()?;
    let mut memory = Box::new(ChildMemory {
        program,
        fds: [
            release_write.as_raw_fd(),
            error_read.as_raw_fd(),
            release_read.as_raw_fd(),
            error_write.as_raw_fd(),
        ],
        envp: environment(),
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        stack: Vec::new(),
    });
    let pid = make_held_child(&mut memory)?;
    drop((release_read, error_write));
    Ok(Forked {
        pid,
        release: release_write,
        exec: ExecWatch {
            exec_error: error_read,
            memory: Some(memory),
        },
    })
}

/// The held child's stack, in 16-byte units (32 KiB: it runs one small function, with every
/// signal blocked until each caught one is back at its default).
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
const CHILD_STACK_UNITS: usize = 2048;

/// Makes the held child: `clone(CLONE_VM)` where it may, `fork` elsewhere, under valgrind
/// (which runs no process sharing memory with another unless it is a thread, and would end
/// this one) and where the clone is refused with `EINVAL` (as QEMU's user-mode emulation
/// refuses it).
fn make_held_child(memory: &mut ChildMemory) -> Result<i32, Errno> {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    if !raw::under_valgrind() {
        match clone_held_child(memory) {
            Err(libc::EINVAL) => {}
            made => return made,
        }
    }
    fork_held_child(memory)
}

/// Makes the child with `clone(CLONE_VM | SIGCHLD)` on a stack of its own in `memory`.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn clone_held_child(memory: &mut ChildMemory) -> Result<i32, Errno> {
    // Capacity only: the pages are not touched here, only the few the child's frames use.
    memory.stack = Vec::with_capacity(CHILD_STACK_UNITS);
    let top = memory
        .stack
        .as_mut_ptr()
        .wrapping_add(memory.stack.capacity());
    let arg: *mut ChildMemory = memory;
    // Every signal blocked across the clone, so none runs a handler of this process in the
    // child before it has put them back at their defaults (it inherits this mask).
    // SAFETY: an all-zero sigset_t is a valid value of this C struct (sigfillset fills it).
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: sigfillset writes the live local.
    unsafe { libc::sigfillset(&mut all) };
    // SAFETY: as above.
    let mut before: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: both sets are live locals.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut before) };
    // SAFETY: `top` is the 16-byte-aligned end of a live allocation of CHILD_STACK_UNITS
    // units owned by `memory`, which outlives the child's use of it (ExecWatch frees it only
    // after the exec or the reap); `held_entry` makes only raw system calls on what `arg`
    // points to, and never returns to code that would use this thread's state.
    let pid = unsafe {
        libc::clone(
            held_entry,
            top.cast(),
            libc::CLONE_VM | libc::SIGCHLD,
            arg.cast(),
        )
    };
    let errno = last_errno();
    // SAFETY: `before` is the mask pthread_sigmask reported.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut()) };
    if pid < 0 { Err(errno) } else { Ok(pid) }
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
    // SAFETY: `arg` is the ChildMemory fork_held passed, alive until this child has
    // executed or ended, and written by no one meanwhile.
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
        // shared memory until this exec is seen through, and the environment (`environ`).
        let failed =
            unsafe { raw::execve(program.path.as_ptr(), program.argv.as_ptr(), memory.envp) };
        let errno = i32::try_from(failed.unsigned_abs())
            .unwrap_or(libc::EIO)
            .to_ne_bytes();
        raw::write(error_fd, &errno);
    }
    raw::exit_group(127)
}

/// System calls made without the C library, for the child that shares this process's
/// memory: the C library's wrappers write `errno`, which is this process's thread's. Each
/// returns what the kernel returns (a negative errno on failure).
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod raw {
    /// The system call `number` with four arguments.
    ///
    /// # Safety
    /// Each argument the call reads or writes through is a pointer valid for that access
    /// for the call's duration; a file descriptor it closes is owned by the caller.
    #[cfg(target_arch = "x86_64")]
    unsafe fn syscall4(number: libc::c_long, a: usize, b: usize, c: usize, d: usize) -> isize {
        let ret: isize;
        // SAFETY: the `syscall` instruction with the kernel's x86-64 convention, which
        // clobbers rcx and r11 only; the caller passes valid pointers (# Safety).
        unsafe {
            core::arch::asm!(
                "syscall",
                inlateout("rax") number as isize => ret,
                in("rdi") a,
                in("rsi") b,
                in("rdx") c,
                in("r10") d,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        ret
    }

    /// The system call `number` with four arguments.
    ///
    /// # Safety
    /// As the x86-64 one.
    #[cfg(target_arch = "aarch64")]
    unsafe fn syscall4(number: libc::c_long, a: usize, b: usize, c: usize, d: usize) -> isize {
        let ret: isize;
        // SAFETY: `svc 0` with the kernel's AArch64 convention, which clobbers nothing but
        // x0; the caller passes valid pointers (# Safety).
        unsafe {
            core::arch::asm!(
                "svc 0",
                in("x8") number,
                inlateout("x0") a as isize => ret,
                in("x1") b,
                in("x2") c,
                in("x3") d,
                options(nostack),
            );
        }
        ret
    }

    /// The kernel's `struct sigaction` on x86-64 and AArch64 (handler, flags, restorer,
    /// mask); all zeros is `SIG_DFL` with no flags and an empty mask.
    type KernelAction = [usize; 4];

    /// The size of the kernel's signal set, which `rt_sigaction` and `rt_sigprocmask` take.
    const SIGSET_SIZE: usize = 8;

    /// Closes `fd`.
    ///
    /// # Safety
    /// `fd` is this process's to close: nothing else uses it afterwards.
    pub unsafe fn close(fd: i32) {
        // SAFETY: the caller owns `fd` (# Safety); no pointer is passed.
        unsafe { syscall4(libc::SYS_close, fd as usize, 0, 0, 0) };
    }

    /// `signal`'s handler (`SIG_DFL`, `SIG_IGN` or a function's address).
    pub fn handler(signal: i32) -> usize {
        let mut old: KernelAction = [0; 4];
        let out: *mut KernelAction = &mut old;
        // SAFETY: the old action is written to a live local of the kernel's layout; no new
        // one is given.
        unsafe {
            syscall4(
                libc::SYS_rt_sigaction,
                signal as usize,
                0,
                out as usize,
                SIGSET_SIZE,
            )
        };
        old[0]
    }

    /// Puts `signal` at its default disposition.
    pub fn default_handler(signal: i32) {
        let default: KernelAction = [0; 4];
        let new: *const KernelAction = &default;
        // SAFETY: the new action is a live local of the kernel's layout; no old one is asked.
        unsafe {
            syscall4(
                libc::SYS_rt_sigaction,
                signal as usize,
                new as usize,
                0,
                SIGSET_SIZE,
            )
        };
    }

    /// Unblocks every signal.
    pub fn unblock_all() {
        let none = 0u64;
        let set: *const u64 = &none;
        // SAFETY: the set is a live local of the kernel's size; no old set is asked.
        unsafe {
            syscall4(
                libc::SYS_rt_sigprocmask,
                libc::SIG_SETMASK as usize,
                set as usize,
                0,
                SIGSET_SIZE,
            )
        };
    }

    /// Reads one byte from `fd` into `byte`.
    pub fn read_byte(fd: i32, byte: &mut u8) -> isize {
        let out: *mut u8 = byte;
        // SAFETY: at most one byte is written, to the live `byte`.
        unsafe { syscall4(libc::SYS_read, fd as usize, out as usize, 1, 0) }
    }

    /// Writes `bytes` to `fd`.
    pub fn write(fd: i32, bytes: &[u8]) {
        // SAFETY: `bytes` is valid for reads of its length.
        unsafe {
            syscall4(
                libc::SYS_write,
                fd as usize,
                bytes.as_ptr() as usize,
                bytes.len(),
                0,
            )
        };
    }

    /// Executes `path` with `argv` and `envp`; returns only when that failed.
    ///
    /// # Safety
    /// `path` is a C string, `argv` and `envp` NUL-terminated arrays of C strings, all alive
    /// for the call.
    pub unsafe fn execve(
        path: *const libc::c_char,
        argv: *const *const libc::c_char,
        envp: *const *const libc::c_char,
    ) -> isize {
        // SAFETY: the pointers are valid for the kernel's reads (# Safety).
        unsafe {
            syscall4(
                libc::SYS_execve,
                path as usize,
                argv as usize,
                envp as usize,
                0,
            )
        }
    }

    /// Valgrind's client request asking whether the program runs under it.
    const RUNNING_ON_VALGRIND: usize = 0x1001;

    /// Whether this process runs under valgrind: its `RUNNING_ON_VALGRIND` client request,
    /// a sequence of rotations of a register by 128 bits in all followed by a no-op exchange,
    /// which changes nothing on a processor and which valgrind answers with non-zero.
    #[cfg(target_arch = "x86_64")]
    pub fn under_valgrind() -> bool {
        let request: [usize; 6] = [RUNNING_ON_VALGRIND, 0, 0, 0, 0, 0];
        let mut answer: usize = 0;
        // SAFETY: on a processor the rotations of rdi undo each other and `xchg rbx, rbx`
        // does nothing, so only the declared registers are touched; valgrind reads the six
        // words at rax, a live local, and writes its answer to rdx.
        unsafe {
            core::arch::asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                in("rax") request.as_ptr(),
                inout("rdx") answer,
                inout("rdi") 0usize => _,
                options(nostack),
            );
        }
        answer != 0
    }

    /// As the x86-64 one, with the AArch64 sequence (x12 rotated, `orr x10, x10, x10`;
    /// the request at x4, the answer in x3).
    #[cfg(target_arch = "aarch64")]
    pub fn under_valgrind() -> bool {
        let request: [usize; 6] = [RUNNING_ON_VALGRIND, 0, 0, 0, 0, 0];
        let mut answer: usize = 0;
        // SAFETY: on a processor the rotations of x12 undo each other and the `orr` of x10
        // with itself does nothing, so only the declared registers are touched; valgrind
        // reads the six words at x4, a live local, and writes its answer to x3.
        unsafe {
            core::arch::asm!(
                "ror x12, x12, #3",
                "ror x12, x12, #13",
                "ror x12, x12, #51",
                "ror x12, x12, #61",
                "orr x10, x10, x10",
                in("x4") request.as_ptr(),
                inout("x3") answer,
                inout("x12") 0usize => _,
                inout("x10") 0usize => _,
                options(nostack),
            );
        }
        answer != 0
    }

    /// Ends this process with `code`.
    pub fn exit_group(code: i32) -> ! {
        loop {
            // SAFETY: no pointer is passed; the call does not return.
            unsafe { syscall4(libc::SYS_exit_group, code as usize, 0, 0, 0) };
        }
    }
}

/// Makes the child with `fork`: it has its own copy of `memory`.
fn fork_held_child(memory: &ChildMemory) -> Result<i32, Errno> {
    // SAFETY: fork has no memory-safety preconditions; the child below only makes
    // async-signal-safe system calls on values made before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(last_errno());
    }
    if pid == 0 {
        held_child(memory);
    }
    Ok(pid)
}

/// The forked child: closes the parent's ends, resets its signals, waits for the release and
/// executes; writes exec's errno and exits with 127 when that fails or the parent gave up.
fn held_child(memory: &ChildMemory) -> ! {
    let [parents_release, parents_error, release_fd, error_fd] = memory.fds;
    for fd in [parents_release, parents_error] {
        // SAFETY: close is async-signal-safe; these are the child's copies of the fds.
        unsafe { libc::close(fd) };
    }
    // SAFETY: an empty sigset_t (sigemptyset fills it) is a valid value of this C struct.
    let mut none: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: sigemptyset writes the live local.
    unsafe { libc::sigemptyset(&mut none) };
    // SAFETY: sigprocmask with a valid set and no old set; async-signal-safe.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) };
    // SAFETY: signal is async-signal-safe for SIG_DFL, with a valid signal number.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
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
        // SAFETY: `path` and `argv` (NUL-terminated) point into the parent's `Prepared`,
        // which this copy of its memory keeps, `envp` at this copy's environment; execve is
        // async-signal-safe.
        unsafe { libc::execve(program.path.as_ptr(), program.argv.as_ptr(), memory.envp) };
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
