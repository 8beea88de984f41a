//! Following at once: a thread that waits on the watch of the cgroups' directories
//! (inotify) and follows a cgroup when it is made, or lets one go when it is removed, without
//! waiting for a scrape; a scrape then only reads. A pod's or a job's cgroup is counted from
//! a few milliseconds after its directory appears (its first task is placed by its runtime
//! after that: runc, slurmstepd), where it was counted from the first scrape after it (15 to
//! 60 s later, a short job never).
//!
//! Its work is bounded whatever a user does to the tree: after each look it waits nine times
//! as long as the look took before the next, so that a tree changing without pause costs at
//! most a tenth of a CPU; a look where nothing changed costs one `read` of the watch.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::counting::Exporter;
use crate::health::Health;

/// How long the thread waits on the watch before it asks for it again (a watch made at a
/// later look, where none could be made before).
const WAIT: Duration = Duration::from_secs(1);
/// The most the thread rests after a look.
const MOST_REST: Duration = Duration::from_secs(1);

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
        lock(exporter).follow(health);
        let took = started.elapsed();
        std::thread::sleep((took * 9).min(MOST_REST));
    }
}

/// The exporter, locked (a lock poisoned by a panic elsewhere is taken as it is).
fn lock(exporter: &Mutex<Exporter>) -> std::sync::MutexGuard<'_, Exporter> {
    exporter
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
