//! Following at once: a thread that waits on the watch of the cgroups' directories
//! (inotify) and follows a cgroup when it is made, or lets one go when it is removed, without
//! waiting for a scrape; a scrape then only reads. A pod's or a job's cgroup is counted from
//! a few milliseconds after its directory appears (its first task is placed by its runtime
//! after that: runc, slurmstepd), where it was counted from the first scrape after it (15 to
//! 60 s later, a short job never).
//!
//! Its work is bounded whatever a user does to the tree: the looks of the last second may
//! take a tenth of it at most, after which the thread rests until they take less, so that a
//! tree changing without pause costs at most a tenth of a CPU while a burst of cgroups (a
//! job's, made one below the other within a millisecond) is followed look after look; a look
//! where nothing changed costs one `read` of the watch.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::counting::Exporter;
use crate::health::Health;

/// How long the thread waits on the watch before it asks for it again (a watch made at a
/// later look, where none could be made before).
const WAIT: Duration = Duration::from_secs(1);
/// The window the looks' time is bounded in, and the share of it they may take.
const WINDOW: Duration = Duration::from_secs(1);
const SHARE: u32 = 10;

/// Starts the thread following `exporter`'s cgroups as they come and go, counting in
/// `health`; nothing where no cgroup is followed (or the thread cannot be made: the cgroups
/// are then followed at each scrape, as the scrape still looks).
pub fn start(exporter: Arc<Mutex<Exporter>>, health: Arc<Health>) {
    let follows = lock(&exporter).watch.follows();
    if !follows {
        return;
    }
    let started = std::thread::Builder::new()
        .name("follower".into())
        .spawn(move || follow(&exporter, &health));
    if let Err(e) = started {
        crate::log::warn(
            "no thread to follow cgroups as they come: followed at each scrape",
            &[("reason", &e)],
        );
    }
}

/// The thread's loop.
fn follow(exporter: &Mutex<Exporter>, health: &Health) {
    // The looks of the last `WINDOW`: when each started, and how long it took.
    let mut looks: std::collections::VecDeque<(Instant, Duration)> = Default::default();
    loop {
        let watched = lock(exporter).watch.watched();
        let Some(watch) = watched else {
            std::thread::sleep(WAIT);
            continue;
        };
        if !watch.wait(WAIT) {
            continue;
        }
        let started = Instant::now();
        while looks.front().is_some_and(|(at, _)| started - *at > WINDOW) {
            looks.pop_front();
        }
        let spent: Duration = looks.iter().map(|(_, took)| *took).sum();
        if spent > WINDOW / SHARE {
            // Rest until the oldest look leaves the window.
            let oldest = looks.front().map_or(started, |(at, _)| *at);
            std::thread::sleep((oldest + WINDOW).saturating_duration_since(started));
        }
        let started = Instant::now();
        lock(exporter).follow(health);
        looks.push_back((started, started.elapsed()));
    }
}

/// The exporter, locked (a lock poisoned by a panic elsewhere is taken as it is).
fn lock(exporter: &Mutex<Exporter>) -> std::sync::MutexGuard<'_, Exporter> {
    exporter
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
