//! What an older libpfm4 snapshot's table keeps in a newer one's (`libpfm4-grammar --keep`).

use super::{PfmPmu, PfmUmask};

/// What an older snapshot's table adds to a newer one's (`keep`).
#[derive(Default)]
pub(super) struct Kept {
    pub(super) events: usize,
    pub(super) umasks: usize,
    pub(super) defaults: usize,
}

/// Keeps in `pmu` what `older` (the same PMU in an older snapshot) has and `pmu` lacks, so
/// that a name the older libpfm4 took keeps working: its events (after `pmu`'s), unit masks
/// (after the event's own) and defaults (its `DFL` unit masks, where the newer event has the
/// unit mask but no default in that group: the event named alone keeps its meaning). An event
/// whose code changed keeps nothing of the older one: its unit masks meant another event.
pub(super) fn keep(pmu: &mut PfmPmu, older: PfmPmu, dfl: u64) -> Kept {
    let mut kept = Kept::default();
    for old in older.events {
        let Some(event) = pmu.events.iter_mut().find(|e| e.name == old.name) else {
            kept.events += 1;
            pmu.events.push(old);
            continue;
        };
        if event.code != old.code {
            continue;
        }
        for mut u in old.umasks {
            let grpid = u.grpid;
            let group_has_default = |umasks: &[PfmUmask]| {
                umasks
                    .iter()
                    .any(|n| n.grpid == grpid && n.flags & dfl != 0)
            };
            let defaulted = u.flags & dfl != 0 && !group_has_default(&event.umasks);
            match event.umasks.iter_mut().find(|n| n.name == u.name) {
                Some(newer) if defaulted => {
                    kept.defaults += 1;
                    newer.flags |= dfl;
                }
                Some(_) => {}
                None => {
                    kept.umasks += 1;
                    if group_has_default(&event.umasks) {
                        u.flags &= !dfl;
                    }
                    event.umasks.push(u);
                }
            }
        }
    }
    kept
}
