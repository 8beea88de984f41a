//! Read and enable/disable costs against the raw system calls on the same fds, and against
//! `PAPI_read` on the same software events (when libpapi and a C compiler are present), as
//! ratios measured in one run. `cargo bench -p counterhal-linux --bench read`.
//!
//! The baselines are the bare system calls (`raw` below) on duplicates of the group's
//! descriptors (same open file, so the same events).

/// The bare system calls the backend is compared against, with nothing around them.
///
/// # Safety
/// Each call passes a descriptor borrowed for the call and, for `read`, a buffer valid for
/// writes of its whole length; the ioctls named here take an integer argument.
#[cfg(target_os = "linux")]
mod raw {
    use std::os::fd::{AsRawFd, BorrowedFd};

    /// `PERF_EVENT_IOC_ENABLE`: `_IO('$', 0)`.
    pub const IOC_ENABLE: libc::c_ulong = 0x2400;
    /// `PERF_EVENT_IOC_DISABLE`: `_IO('$', 1)`.
    pub const IOC_DISABLE: libc::c_ulong = 0x2401;
    /// `PERF_IOC_FLAG_GROUP`.
    pub const IOC_FLAG_GROUP: libc::c_ulong = 1;

    /// One bare `read(2)` of `fd` into `words`: what the system call returned.
    #[inline]
    pub fn raw_read(fd: BorrowedFd<'_>, words: &mut [u64]) -> isize {
        let len = std::mem::size_of_val(words);
        // SAFETY: `words` is valid for writes of `len` bytes and `fd` is open for the call.
        unsafe { libc::read(fd.as_raw_fd(), words.as_mut_ptr().cast(), len) }
    }

    /// One bare `ioctl(fd, request, arg)` for a request that takes an integer.
    #[inline]
    pub fn raw_ioctl(fd: BorrowedFd<'_>, request: libc::c_ulong, arg: libc::c_ulong) -> i32 {
        // SAFETY: `fd` is open for the call; ENABLE and DISABLE take an integer argument.
        unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg) }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::hint::black_box;
    use std::os::fd::AsFd;
    use std::sync::Arc;
    use std::time::Instant;

    use counterhal_hal::{Backend, Group, OpenOptions, Reading, Target};
    use counterhal_linux::{LinuxBackend, LinuxGroup};

    use super::raw::{IOC_DISABLE, IOC_ENABLE, IOC_FLAG_GROUP, raw_ioctl, raw_read};

    const ITERATIONS: u32 = 200_000;
    const ROUNDS: u32 = 7;

    /// Nanoseconds per call of `f`: the best of `ROUNDS` rounds (alternating with the other
    /// side of the comparison is left to the caller).
    fn time_per_call(mut f: impl FnMut()) -> f64 {
        let start = Instant::now();
        for _ in 0..ITERATIONS {
            f();
        }
        start.elapsed().as_nanos() as f64 / f64::from(ITERATIONS)
    }

    /// Runs both sides alternately, `ROUNDS` times each, and returns their best times.
    fn compare(mut ours: impl FnMut(), mut raw: impl FnMut()) -> (f64, f64) {
        let (mut best_ours, mut best_raw) = (f64::MAX, f64::MAX);
        for _ in 0..ROUNDS {
            best_ours = best_ours.min(time_per_call(&mut ours));
            best_raw = best_raw.min(time_per_call(&mut raw));
        }
        (best_ours, best_raw)
    }

    fn open(linux: &LinuxBackend, names: &[&str]) -> LinuxGroup {
        let requests: Vec<_> = names
            .iter()
            .map(|n| linux.resolve(n).unwrap().terms.remove(0).request)
            .collect();
        let mut group = linux
            .open(&requests, &Target::ThisThread, &OpenOptions::default())
            .unwrap();
        group.enable().unwrap();
        group
    }

    pub const FOUR: [&str; 4] = [
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
    ];

    pub fn run() {
        let db = Arc::new(counterhal_events::Database::shipped().unwrap());
        let linux = counterhal_linux::probe(db, None).unwrap();
        println!("iterations {ITERATIONS}, best of {ROUNDS} rounds, ns per call");
        let mut results = Vec::new();
        for names in [&FOUR[..1], &FOUR[..]] {
            let mut group = open(&linux, names);
            // A duplicate of the leader's descriptor: the same perf event, owned apart from the
            // group so both sides can be borrowed at once.
            let leader = group
                .leader_fds()
                .next()
                .unwrap()
                .try_clone_to_owned()
                .unwrap();
            let mut readings = [Reading::default(); 4];
            let mut buffer = [0u64; 3 + 2 * 4];
            let n = names.len();
            let (ours, raw) = compare(
                || {
                    group.read(black_box(&mut readings[..n])).unwrap();
                },
                || {
                    black_box(raw_read(leader.as_fd(), black_box(&mut buffer)));
                },
            );
            println!(
                "read {n}-event group: counterhal {ours:.1}, raw read() {raw:.1}, ratio {:.3}x (target <= 1.02x)",
                ours / raw
            );
            results.push((n, ours));

            let (ours, raw) = compare(
                || {
                    group.enable().unwrap();
                    group.disable().unwrap();
                },
                || {
                    black_box(raw_ioctl(leader.as_fd(), IOC_ENABLE, IOC_FLAG_GROUP));
                    black_box(raw_ioctl(leader.as_fd(), IOC_DISABLE, IOC_FLAG_GROUP));
                },
            );
            println!(
                "enable+disable {n}-event group: counterhal {ours:.1}, raw ioctls {raw:.1}, ratio {:.3}x (target <= 1.02x)",
                ours / raw
            );
        }
        papi(&results);
    }

    /// Builds a small C program against libpapi that times `PAPI_read` on the same software
    /// events (PAPI's `perf::` names) and compares with our times from this run.
    fn papi(ours: &[(usize, f64)]) {
        let dir =
            std::env::temp_dir().join(format!("counterhal-papi-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = dir.join("papi_read.c");
        let binary = dir.join("papi_read");
        std::fs::write(&source, PAPI_PROGRAM).unwrap();
        let built = std::process::Command::new("cc")
            .arg("-O2")
            .arg("-o")
            .arg(&binary)
            .arg(&source)
            .arg("-lpapi")
            .output();
        match built {
            Ok(out) if out.status.success() => {}
            Ok(out) => {
                println!(
                    "PAPI comparison skipped: cannot build against libpapi (install libpapi-dev): {}",
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .next()
                        .unwrap_or("")
                );
                return;
            }
            Err(e) => {
                println!("PAPI comparison skipped: no C compiler: {e}");
                return;
            }
        }
        for (n, ours_ns) in ours {
            let out = std::process::Command::new(&binary)
                .arg(n.to_string())
                .arg(ITERATIONS.to_string())
                .arg(ROUNDS.to_string())
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            match text.trim().parse::<f64>() {
                Ok(papi_ns) if out.status.success() => println!(
                    "read {n}-event group vs PAPI_read: counterhal {ours_ns:.1}, PAPI {papi_ns:.1}, ratio {:.3}x (target <= 1.0x)",
                    ours_ns / papi_ns
                ),
                _ => println!(
                    "PAPI comparison for {n} events failed: {} {}",
                    text.trim(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    const PAPI_PROGRAM: &str = r#"
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static const char *names[4] = {"perf::TASK-CLOCK", "perf::PAGE-FAULTS",
                               "perf::CONTEXT-SWITCHES", "perf::CPU-MIGRATIONS"};
int main(int argc, char **argv) {
    int n = atoi(argv[1]); long iterations = atol(argv[2]); int rounds = atoi(argv[3]);
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) { fprintf(stderr, "init\n"); return 1; }
    int set = PAPI_NULL;
    if (PAPI_create_eventset(&set) != PAPI_OK) { fprintf(stderr, "eventset\n"); return 1; }
    for (int i = 0; i < n; i++)
        if (PAPI_add_named_event(set, names[i]) != PAPI_OK) {
            const PAPI_component_info_t *perf = PAPI_get_component_info(0);
            fprintf(stderr, "PAPI cannot add %s (component %s: %s)\n", names[i],
                    perf ? perf->name : "?", perf && perf->disabled ? perf->disabled_reason : "enabled");
            return 1;
        }
    if (PAPI_start(set) != PAPI_OK) { fprintf(stderr, "start\n"); return 1; }
    long long values[4];
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (long i = 0; i < iterations; i++) PAPI_read(set, values);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / iterations;
        if (ns < best) best = ns;
    }
    printf("%.3f\n", best);
    return 0;
}
"#;
}

fn main() {
    #[cfg(target_os = "linux")]
    linux::run();
    #[cfg(not(target_os = "linux"))]
    println!("the Linux backend benchmarks run on Linux only");
}
