//! The floor under `stat -e page-faults,context-switches -- COMMAND` for a Rust program: what
//! `benches/stat_floor.c` does (fork the command held before exec on a pipe, open the two
//! software counters on it, inherited and enabled at exec, release it, wait, read both and
//! print them), written in Rust with the standard library and its runtime, dynamically linked
//! as `counterhal` is, and nothing else: no argument parser, no event names, no database.
//! `benches/stat_vs_perf.rs` builds it with `rustc -O` and times it beside perf stat, so the
//! start-up a Rust binary pays before its own work shows apart from counterhal's.
//!
//! # Safety
//!
//! Every `unsafe` block is one call of a C library function declared below with its C
//! signature, on live locals or pointers into live vectors; between `fork` and `execvp` the
//! child calls only `close`, `read`, `execvp` and `_exit` (async-signal-safe).

use std::ffi::{CString, c_char, c_int, c_long};

unsafe extern "C" {
    fn fork() -> c_int;
    fn pipe2(fds: *mut c_int, flags: c_int) -> c_int;
    fn read(fd: c_int, buf: *mut u8, count: usize) -> isize;
    fn write(fd: c_int, buf: *const u8, count: usize) -> isize;
    fn close(fd: c_int) -> c_int;
    fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int;
    fn _exit(status: c_int) -> !;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    fn syscall(number: c_long, ...) -> c_long;
}

/// `perf_event_open`'s system call number.
#[cfg(target_arch = "x86_64")]
const SYS_PERF_EVENT_OPEN: c_long = 298;
#[cfg(target_arch = "aarch64")]
const SYS_PERF_EVENT_OPEN: c_long = 241;

const O_CLOEXEC: c_int = 0o2_000_000;
const PERF_FLAG_FD_CLOEXEC: u64 = 1 << 3;

fn main() {
    let args: Vec<CString> = std::env::args()
        .skip(1)
        .map(|a| CString::new(a).expect("no NUL in arguments"))
        .collect();
    assert!(!args.is_empty(), "usage: stat_floor COMMAND [ARGS]");
    let mut argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut go = [0 as c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the live two-element array.
    assert_eq!(unsafe { pipe2(go.as_mut_ptr(), O_CLOEXEC) }, 0);
    // SAFETY: fork has no preconditions; the child below only calls async-signal-safe
    // functions.
    let pid = unsafe { fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: closes the child's copy of the write end.
        unsafe { close(go[1]) };
        let mut byte = 0u8;
        // SAFETY: reads one byte into a live local.
        if unsafe { read(go[0], &mut byte, 1) } == 1 {
            // SAFETY: argv is NUL-terminated and points into `args`, alive in this copy.
            unsafe { execvp(argv[0], argv.as_ptr()) };
        }
        // SAFETY: ends only the child.
        unsafe { _exit(127) };
    }
    // SAFETY: closes the parent's copy of the read end.
    unsafe { close(go[0]) };
    // perf_event_attr (version 8, 136 bytes): type software, config, read_format total time
    // enabled and running, flags disabled | inherit | enable_on_exec.
    let mut fds = Vec::new();
    for config in [2u64, 3u64] {
        let mut attr = [0u64; 17];
        attr[0] = 1 | (136 << 32);
        attr[1] = config;
        attr[4] = 1 | 2;
        attr[5] = 1 | (1 << 1) | (1 << 12);
        // SAFETY: the attribute is a live, zero-padded perf_event_attr of the size it names.
        let fd = unsafe {
            syscall(
                SYS_PERF_EVENT_OPEN,
                attr.as_ptr(),
                pid,
                -1 as c_int,
                -1 as c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        fds.push(fd as c_int);
    }
    // SAFETY: writes one byte from a static string.
    assert_eq!(unsafe { write(go[1], b"g".as_ptr(), 1) }, 1);
    // SAFETY: closes the parent's write end once.
    unsafe { close(go[1]) };
    let mut status = 0;
    // SAFETY: waits for our child, writing its status into a live local.
    unsafe { waitpid(pid, &mut status, 0) };
    for fd in fds {
        let mut values = [0u64; 3];
        // SAFETY: reads at most 24 bytes into the live three-word array.
        let n = unsafe { read(fd, values.as_mut_ptr().cast(), 24) };
        assert!(fd >= 0 && n == 24, "a counter did not open or read");
        eprintln!("{}", values[0]);
    }
}
