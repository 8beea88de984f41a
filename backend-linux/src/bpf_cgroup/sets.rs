//! How a cgroup counter's events are opened on each CPU: the groups asked for
//! ([`CgroupCounterOptions::groups`](counterhal_hal::CgroupCounterOptions::groups)), each
//! scheduled onto the PMU as one, then the events in no group, each alone.

use counterhal_hal::{Error, Reading, Result};

/// The sets of a counter's events, in the order they open on each CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Sets {
    /// Each set's events (indices into the counter's events) and whether they are one group
    /// (a leader, first, and its members); the last, where not grouped, the lone events.
    sets: Vec<(Vec<usize>, bool)>,
}

impl Sets {
    /// The sets of `events` events where `groups` are grouped (a group of one counts alone).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) for a group
    /// naming no event, an index past the events, or an event in two groups.
    pub(super) fn new(events: usize, groups: &[Vec<usize>]) -> Result<Sets> {
        let mut placed = vec![false; events];
        let mut sets = Vec::new();
        for group in groups {
            if group.is_empty() {
                return Err(Error::invalid_input("an empty group of events")
                    .with_hint("name at least one event in each group"));
            }
            for &event in group {
                match placed.get_mut(event) {
                    None => {
                        return Err(Error::invalid_input(format!(
                            "group {group:?} names event {event} of {events}"
                        ))
                        .with_hint("a group names events by their index, from 0"));
                    }
                    Some(true) => {
                        return Err(Error::invalid_input(format!(
                            "event {event} is in two groups"
                        ))
                        .with_hint("put each event in one group at most"));
                    }
                    Some(placed) => *placed = true,
                }
            }
            sets.push((group.clone(), group.len() > 1));
        }
        let alone: Vec<usize> = (0..events).filter(|&e| !placed[e]).collect();
        if !alone.is_empty() {
            sets.push((alone, false));
        }
        Ok(Sets { sets })
    }

    /// Each set's events and whether they are one group, in opening order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&[usize], bool)> {
        self.sets
            .iter()
            .map(|(events, grouped)| (&events[..], *grouped))
    }

    /// How many sets open on each CPU.
    pub(super) fn len(&self) -> usize {
        self.sets.len()
    }

    /// Reads one CPU's `sets` (in the order of [`Sets::iter`]) into `row`, each event's
    /// reading at its index, through `scratch` (room for every event).
    pub(super) fn read<G: counterhal_hal::Group>(
        &self,
        sets: &mut [G],
        row: &mut [Reading],
        scratch: &mut [Reading],
    ) -> Result<()> {
        for ((events, _), set) in self.sets.iter().zip(sets) {
            let read = &mut scratch[..events.len()];
            set.read(read)?;
            for (&event, reading) in events.iter().zip(read.iter()) {
                row[event] = *reading;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The groups open first, then the lone events in their order; a group of one counts
    /// alone.
    #[test]
    fn groups_first_then_the_lone_events() {
        let sets = Sets::new(5, &[vec![3, 1], vec![4]]).unwrap();
        let iter: Vec<(Vec<usize>, bool)> = sets.iter().map(|(e, g)| (e.to_vec(), g)).collect();
        assert_eq!(
            iter,
            [(vec![3, 1], true), (vec![4], false), (vec![0, 2], false)]
        );
        assert_eq!(Sets::new(2, &[]).unwrap().len(), 1);
    }

    /// A group naming no event, an event past the end, or one event twice is refused by name.
    #[test]
    fn bad_groups_are_refused_saying_why() {
        for (groups, said) in [
            (vec![vec![]], "empty group"),
            (vec![vec![0, 7]], "names event 7 of 3"),
            (vec![vec![0, 1], vec![1]], "event 1 is in two groups"),
        ] {
            let error = Sets::new(3, &groups).unwrap_err();
            assert!(error.message().contains(said), "{groups:?}: {error}");
        }
    }
}
