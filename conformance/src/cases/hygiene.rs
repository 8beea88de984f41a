//! Hygiene: no descriptor or memory left behind, threads counted apart.

use counterhal_hal::Group;

use super::measure::*;
use crate::{Outcome, Subject};

/// 10,000 open/close cycles of the first exact event leave no file descriptor and no memory
/// behind.
pub fn open_close_hygiene<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    check(|| {
        let names = [events[0].name.as_str()];
        let cycle = || -> Result<(), Stop> {
            let mut set = open(subject, &names)?;
            step("enable", set.enable())?;
            read(&mut set)?;
            Ok(())
        };
        for _ in 0..100 {
            cycle()?;
        }
        // Four quarters of 2,500: a leak grows the process's descriptors or memory in every
        // one. The process is shared: tests run beside this one on parallel threads and open
        // files and counters of their own meanwhile, and a one-off allocation elsewhere (an
        // allocator arena for a thread another test starts, a lazily built table) grows the
        // process in one or two quarters; another thread can also grow it for a while (a
        // panicking test symbolizing its backtrace). So a difference between the first count
        // and the last is no leak: growth in every quarter is, and only when a second round
        // of four shows it again.
        const LEAK_BYTES: u64 = 256 * 1024; // about 100 bytes a cycle
        let mut leak = None;
        let mut measured = false;
        for _round in 0..2 {
            let mut samples = vec![(open_fds(), resident_bytes())];
            for _ in 0..4 {
                for _ in 0..2_500 {
                    cycle()?;
                }
                samples.push((open_fds(), resident_bytes()));
            }
            let fds: Option<Vec<usize>> = samples.iter().map(|sample| sample.0).collect();
            let sizes: Option<Vec<u64>> = samples.iter().map(|sample| sample.1).collect();
            measured |= fds.is_some() || sizes.is_some();
            leak = match (fds, sizes) {
                (Some(fds), _) if fds.windows(2).all(|pair| pair[1] > pair[0]) => Some(format!(
                    "open descriptors grew in every quarter of two rounds of 4 x 2,500 cycles; the second: {fds:?}"
                )),
                (_, Some(sizes)) if sizes.windows(2).all(|pair| pair[1] > pair[0] + LEAK_BYTES) => {
                    Some(format!(
                        "resident memory grew steadily in two rounds of 4 x 2,500 cycles; the second: {sizes:?} bytes"
                    ))
                }
                _ => None,
            };
            if leak.is_none() {
                break;
            }
        }
        if let Some(leak) = leak {
            return Ok(Outcome::Fail(leak));
        }
        if !measured {
            return Ok(Outcome::Skip(
                "10,000 cycles ran, but this OS offers no /proc/self to count fds and memory"
                    .into(),
            ));
        }
        Ok(Outcome::Pass)
    })
}

fn open_fds() -> Option<usize> {
    ["/proc/self/fd", "/dev/fd"]
        .iter()
        .find_map(|dir| std::fs::read_dir(dir).ok().map(|entries| entries.count()))
}

fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Counters opened in two threads count each thread's work only.
pub fn threads_count_independently<S: Subject>(subject: &S) -> Outcome {
    if !subject.counts_per_thread() {
        return Outcome::Skip(
            "this backend cannot count one thread alone (it counts per CPU or per process)".into(),
        );
    }
    let events = exact_or_skip!(subject);
    let event = &events[0];
    let run = |units: u64| -> Result<u64, Stop> {
        Ok(count_work(subject, &[&event.name], units)?[0].value)
    };
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| run(300));
        let b = scope.spawn(|| run(700));
        (a.join(), b.join())
    });
    match (a, b) {
        (Ok(Ok(a)), Ok(Ok(b))) => {
            let want = (300 * event.per_unit, 700 * event.per_unit);
            if (a, b) == want {
                Outcome::Pass
            } else {
                Outcome::Fail(format!(
                    "threads read {a} and {b}, want {} and {}",
                    want.0, want.1
                ))
            }
        }
        (Ok(Err(stop)), _) | (_, Ok(Err(stop))) => stop.outcome(),
        _ => Outcome::Fail("a thread panicked".into()),
    }
}
