//! `stat --model`'s steady work: a device model fed the conformance suite's work (its
//! subject's `work`) on a thread of its own while the command runs, at the wall clock's pace
//! (per 10 ns of the model's clock: 4 instructions, 1 branch, 2 cycles).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use counterhal::registry::FedModel;

/// How often the feeding thread feeds. Each time it feeds the units of work (10 ns each, the
/// subjects' unit) that the wall clock has moved on since the last, so that the model's time
/// keeps to the wall clock's however late the thread is scheduled.
const FEED_EVERY: Duration = Duration::from_millis(1);
const UNIT_NANOS: u128 = 10;

/// Runs `measure` while another thread feeds `model`, until `measure` ends.
pub fn while_fed<T>(model: &FedModel, measure: impl FnOnce() -> T) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let start = Instant::now();
            let mut fed: u128 = 0;
            while !done.load(Ordering::Relaxed) {
                let due = start.elapsed().as_nanos() / UNIT_NANOS;
                if let Ok(units) = u64::try_from(due - fed)
                    && units > 0
                {
                    (model.work)(units);
                    fed = due;
                }
                std::thread::sleep(FEED_EVERY);
            }
        });
        let result = measure();
        done.store(true, Ordering::Relaxed);
        result
    })
}
