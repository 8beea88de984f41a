//! System calls made without the C library, for the child that shares this process's
//! memory: the C library's wrappers write `errno`, which is this process's thread's. Each
//! returns what the kernel returns (a negative errno on failure).

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
