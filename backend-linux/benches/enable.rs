//! Enable/disable costs against the bare ioctls on the same fds, as ratios measured in one
//! run. `cargo bench -p counterhal-linux --bench enable`. The read path is measured by the
//! facade's `benches/read.rs`, interleaved with PAPI and perf-event2 in one process.
//!
//! The baselines are the bare system calls (`raw` below) on duplicates of the group's
//! descriptors (same open file, so the same events).

/// The bare system calls the backend is compared against, with nothing around them.
///
/// # Safety
/// Each call passes a descriptor borrowed for the call;
/// the ioctls named here take an integer argument.
#[cfg(target_os = "linux")]
mod raw {
    use std::os::fd::{AsRawFd, BorrowedFd};

    /// `PERF_EVENT_IOC_ENABLE`: `_IO('$', 0)`.
    pub const IOC_ENABLE: libc::c_ulong = 0x2400;
    /// `PERF_EVENT_IOC_DISABLE`: `_IO('$', 1)`.
    pub const IOC_DISABLE: libc::c_ulong = 0x2401;
    /// The ioctls' argument when sent to a leader alone (its members follow it), as the
    /// backend sends them.
    pub const LEADER_ALONE: libc::c_ulong = 0;

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

    use counterhal_hal::{Backend, BackendTarget, Group, OpenOptions};
    use counterhal_linux::{LinuxBackend, LinuxGroup};

    use super::raw::{IOC_DISABLE, IOC_ENABLE, LEADER_ALONE, raw_ioctl};

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
            .open(
                &requests,
                &BackendTarget::ThisThread,
                &OpenOptions::default(),
            )
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
        let linux = counterhal_linux::probe(db, None, counterhal_system::System::host()).unwrap();
        println!("iterations {ITERATIONS}, best of {ROUNDS} rounds, ns per call");
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
            let (ours, raw) = compare(
                || {
                    group.enable().unwrap();
                    group.disable().unwrap();
                },
                || {
                    black_box(raw_ioctl(leader.as_fd(), IOC_ENABLE, LEADER_ALONE));
                    black_box(raw_ioctl(leader.as_fd(), IOC_DISABLE, LEADER_ALONE));
                },
            );
            println!(
                "enable+disable {}-event group: counterhal {ours:.1}, raw ioctls {raw:.1}, ratio {:.3}x (target <= 1.02x)",
                names.len(),
                ours / raw
            );
        }
    }
}

fn main() {
    #[cfg(target_os = "linux")]
    linux::run();
    #[cfg(not(target_os = "linux"))]
    println!("the Linux backend benchmarks run on Linux only");
}
