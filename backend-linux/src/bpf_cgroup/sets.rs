//! How a cgroup counter's events are opened on each CPU: the groups asked for
//! ([`CgroupCounterOptions::groups`](counterhal_hal::CgroupCounterOptions::groups)), each
//! scheduled onto the PMU as one, then the events in no group, each alone. In the perf-event
//! mode, for each cgroup, a set that does not open for its events' sake is opened event by
//! event, and an event that does not open alone is left out there ([`Sets::open`]).

use counterhal_hal::{Error, ErrorKind, Group, Reading, Result};

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
    /// [`ErrorKind::InvalidInput`] for a group
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

    /// Opens every set on one CPU with `open` (a set's events, and whether they are one
    /// group), as perf's weak groups (`{a,b}:W`, `evlist__reset_weak_group`) open: a set that
    /// does not open for its events' sake ([`events_refused`]) is opened event by event, and
    /// an event that does not open alone for its own sake is left out, with why. Where a set
    /// fails otherwise (the target refused, no descriptor left), that error.
    ///
    /// # Errors
    /// The first error that is not the events' own.
    pub(super) fn open<G>(
        &self,
        mut open: impl FnMut(&[usize], bool) -> Result<G>,
    ) -> Result<OnCpu<G>> {
        let mut on_cpu = OnCpu {
            opened: Vec::with_capacity(self.sets.len()),
            left_out: Vec::new(),
        };
        for (at, (events, grouped)) in self.sets.iter().enumerate() {
            match open(events, *grouped) {
                Ok(set) => on_cpu.opened.push((Members::Set(at), set)),
                Err(e) if !events_refused(&e) => return Err(e),
                Err(e) if events.len() == 1 => on_cpu.left_out.push((events[0], e)),
                Err(_) => {
                    for &event in events {
                        match open(&[event], false) {
                            Ok(set) => on_cpu.opened.push((Members::Alone(event), set)),
                            Err(e) if events_refused(&e) => on_cpu.left_out.push((event, e)),
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
        }
        Ok(on_cpu)
    }

    /// Reads one CPU's opened sets ([`OnCpu::opened`]) into `row`, each event's reading at its
    /// index, through `scratch` (room for every event); an event left out keeps its reading
    /// in `row`.
    pub(super) fn read<G: Group>(
        &self,
        opened: &mut [(Members, G)],
        row: &mut [Reading],
        scratch: &mut [Reading],
    ) -> Result<()> {
        for (members, set) in opened {
            let alone;
            let events = match *members {
                Members::Set(at) => &self.sets[at].0[..],
                Members::Alone(event) => {
                    alone = [event];
                    &alone[..]
                }
            };
            let read = &mut scratch[..events.len()];
            set.read(read)?;
            for (&event, reading) in events.iter().zip(read.iter()) {
                row[event] = *reading;
            }
        }
        Ok(())
    }
}

/// What opened of a counter's sets on one CPU ([`Sets::open`]).
pub(super) struct OnCpu<G> {
    /// Each set opened, with its events.
    pub(super) opened: Vec<(Members, G)>,
    /// The events that did not open, each with why.
    pub(super) left_out: Vec<(usize, Error)>,
}

/// The events of a set opened on a CPU: one of the counter's sets whole, or one event
/// alone, where its set did not open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Members {
    /// The set at this index of [`Sets::iter`].
    Set(usize),
    /// The event at this index, alone.
    Alone(usize),
}

/// Whether an open failed for its events' sake, not its target's: no counter left for them
/// ([`ErrorKind::NoCounterAvailable`]: ENOSPC, a hardware breakpoint with every debug
/// register taken, `kernel/events/hw_breakpoint.c`; or a group past the most the backend
/// opens), or the kernel refusing them together (EINVAL, [`ErrorKind::InvalidEvent`]: x86's
/// `validate_group` for a group past the PMU's counters, which perf's weak groups split
/// on). A refused cgroup, privilege or descriptor is the target's and fails the whole.
fn events_refused(error: &Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::NoCounterAvailable | ErrorKind::InvalidEvent
    )
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
        assert_eq!(Sets::new(2, &[]).unwrap().iter().count(), 1);
    }

    /// A model of a CPU with `free` debug registers left, each breakpoint event taking one
    /// when it opens (`kernel/events/hw_breakpoint.c` reserves a slot at the opening, and
    /// refuses with ENOSPC where none is left), and software events (`software`), which
    /// always open. Its sets read each event as its index plus one.
    struct Slots {
        free: usize,
        software: Vec<usize>,
        tried: Vec<(Vec<usize>, bool)>,
    }

    struct Opened(Vec<usize>);

    impl Group for Opened {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn enable(&mut self) -> Result<()> {
            Ok(())
        }
        fn disable(&mut self) -> Result<()> {
            Ok(())
        }
        fn reset(&mut self) -> Result<()> {
            Ok(())
        }
        fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
            for (reading, &event) in readings.iter_mut().zip(&self.0) {
                *reading = Reading::new(event as u64 + 1, 10, 10);
            }
            Ok(())
        }
    }

    impl Slots {
        fn open(&mut self, events: &[usize], grouped: bool) -> Result<Opened> {
            self.tried.push((events.to_vec(), grouped));
            let taken = events.iter().filter(|e| !self.software.contains(e)).count();
            if taken > self.free {
                return Err(Error::new(ErrorKind::NoCounterAvailable, "no counter"));
            }
            self.free -= taken;
            Ok(Opened(events.to_vec()))
        }
    }

    /// Three breakpoints grouped and task-clock beside them, with one debug register left
    /// (serve's system-wide breakpoints hold the others): the group is opened event by event,
    /// its first event takes the register, the other two are left out with why and read as
    /// never run, and task-clock counts. With four left, the group opens as one.
    #[test]
    fn a_group_that_does_not_fit_counts_what_fits_alone() {
        let sets = Sets::new(4, &[vec![0, 1, 2]]).unwrap();
        let mut slots = Slots {
            free: 1,
            software: vec![3],
            tried: Vec::new(),
        };
        let mut on_cpu = sets.open(|e, g| slots.open(e, g)).unwrap();
        let opened: Vec<Members> = on_cpu.opened.iter().map(|(m, _)| *m).collect();
        assert_eq!(opened, [Members::Alone(0), Members::Set(1)]);
        let left_out: Vec<usize> = on_cpu.left_out.iter().map(|(e, _)| *e).collect();
        assert_eq!(left_out, [1, 2]);
        assert_eq!(on_cpu.left_out[0].1.kind(), ErrorKind::NoCounterAvailable);
        assert_eq!(
            slots.tried,
            [
                (vec![0, 1, 2], true),
                (vec![0], false),
                (vec![1], false),
                (vec![2], false),
                (vec![3], false),
            ]
        );
        let mut row = vec![Reading::default(); 4];
        let mut scratch = vec![Reading::default(); 4];
        sets.read(&mut on_cpu.opened, &mut row, &mut scratch)
            .unwrap();
        let values: Vec<u64> = row.iter().map(|r| r.value).collect();
        assert_eq!(values, [1, 0, 0, 4]);
        assert_eq!(row[1], Reading::default());
        assert_eq!(row[1].scaled(), None);
        let mut roomy = Slots {
            free: 4,
            software: vec![3],
            tried: Vec::new(),
        };
        let on_cpu = sets.open(|e, g| roomy.open(e, g)).unwrap();
        let opened: Vec<Members> = on_cpu.opened.iter().map(|(m, _)| *m).collect();
        assert_eq!(opened, [Members::Set(0), Members::Set(1)]);
        assert!(on_cpu.left_out.is_empty());
    }

    /// A set refused for its target's sake (the cgroup gone, no descriptor left) fails the
    /// whole, and is not opened event by event.
    #[test]
    fn a_refused_target_fails_the_whole() {
        let sets = Sets::new(3, &[vec![0, 1]]).unwrap();
        for kind in [
            ErrorKind::NotFound,
            ErrorKind::LimitReached,
            ErrorKind::PermissionDenied,
            ErrorKind::Unsupported,
        ] {
            let mut tries = 0;
            let failed = sets
                .open(|_, _| -> Result<Opened> {
                    tries += 1;
                    Err(Error::new(kind, "refused"))
                })
                .err()
                .map(|e| e.kind());
            assert_eq!((failed, tries), (Some(kind), 1));
        }
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
