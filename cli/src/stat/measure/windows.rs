//! When each event counts (`-D MS`, `-D -1`, `--control`'s `enable` and `disable`): the
//! counters run on, and what they count while switched off is read at each switch and taken
//! out of every later count.

use counterhal_hal::Reading;

use super::results::{Counts, Place, Run};

/// One event's counts in one place while it was switched off.
#[derive(Clone, Copy, Debug, Default)]
struct Off {
    /// Counted while off, in the windows that have closed.
    total: Reading,
    /// Where the counts stood when it was switched off (`None`: it is on).
    since: Option<Reading>,
}

/// When each event counts: on from the start, or off until `enable` (`-D`, `--control`).
#[derive(Debug)]
pub struct Windows {
    names: Vec<String>,
    on: Vec<bool>,
    places: Vec<(Option<Place>, Vec<Off>)>,
}

impl Windows {
    /// The events `names` (in the order of the counts' readings), on from the start or not.
    pub fn new(names: Vec<String>, on: bool) -> Windows {
        let on = vec![on; names.len()];
        Windows {
            names,
            on,
            places: Vec::new(),
        }
    }

    /// Switches every event (`event` `None`) or the event of that name on or off, the counts
    /// standing at `now`; whether there is such an event.
    pub fn switch(&mut self, on: bool, event: Option<&str>, now: &[Counts]) -> bool {
        let chosen: Vec<usize> = (0..self.names.len())
            .filter(|&i| event.is_none_or(|name| self.names[i] == name))
            .collect();
        for counts in now {
            let index = self.place(&counts.place);
            for &i in &chosen {
                let (Some(Ok(reading)), Some(off)) =
                    (counts.readings.get(i), self.places[index].1.get_mut(i))
                else {
                    continue;
                };
                match (on, off.since) {
                    (true, Some(since)) => {
                        off.total = add(&off.total, &reading.since(&since));
                        off.since = None;
                    }
                    (false, None) => off.since = Some(*reading),
                    _ => {}
                }
            }
        }
        for &i in &chosen {
            self.on[i] = on;
        }
        !chosen.is_empty()
    }

    /// The events' names, one a line, as perf's `evlist` lists them.
    pub fn list(&self) {
        for name in &self.names {
            eprintln!("{name}");
        }
    }

    /// `counts` (read now) made what was counted while each event was on.
    pub fn apply(&mut self, counts: &mut [Counts]) {
        for counts in counts {
            let index = self.place(&counts.place);
            for (reading, off) in counts.readings.iter_mut().zip(&self.places[index].1) {
                if let Ok(now) = reading {
                    *now = off.since.unwrap_or(*now).since(&off.total);
                }
            }
        }
    }

    /// Every count of `run` made what was counted while each event was on.
    pub fn apply_to_run(&mut self, run: &mut Run) {
        let mut sum = [Counts {
            place: None,
            readings: run.events.iter().map(|e| e.outcome.clone()).collect(),
        }];
        self.apply(&mut sum);
        let [sum] = sum;
        for (event, reading) in run.events.iter_mut().zip(sum.readings) {
            event.outcome = reading;
        }
        self.apply(&mut run.places);
    }

    /// The index of `place` among the places seen, added where it is new: each event off
    /// from the start (counting nothing then) where it is off, else counted whole.
    fn place(&mut self, place: &Option<Place>) -> usize {
        if let Some(index) = self.places.iter().position(|(p, _)| p == place) {
            return index;
        }
        let offs = self
            .on
            .iter()
            .map(|&on| Off {
                total: Reading::default(),
                since: (!on).then(Reading::default),
            })
            .collect();
        self.places.push((place.clone(), offs));
        self.places.len() - 1
    }
}

/// `a + b`, field by field (wrapping, as [`Reading::since`] subtracts).
fn add(a: &Reading, b: &Reading) -> Reading {
    Reading::new(
        a.value.wrapping_add(b.value),
        a.time_enabled.wrapping_add(b.time_enabled),
        a.time_running.wrapping_add(b.time_running),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(values: &[u64]) -> Vec<Counts> {
        vec![Counts {
            place: None,
            readings: values
                .iter()
                .map(|&v| Ok(Reading::new(v, v * 10, v * 10)))
                .collect(),
        }]
    }

    fn values(counts: &[Counts]) -> Vec<u64> {
        counts[0]
            .readings
            .iter()
            .map(|r| r.as_ref().unwrap().value)
            .collect()
    }

    /// Oracle: perf 7.2's stat (builtin-stat.c, util/evlist.c): off from the start with -D,
    /// counting only between enable and disable, each event by name on its own.
    #[test]
    fn only_what_was_counted_while_on_is_kept() {
        let names = vec!["page-faults".to_string(), "task-clock".to_string()];
        let mut windows = Windows::new(names.clone(), false);
        let mut now = sum(&[5, 5]);
        windows.apply(&mut now);
        assert_eq!(values(&now), [0, 0], "off from the start");
        assert_eq!(now[0].readings[0].as_ref().unwrap().time_running, 0);
        assert!(windows.switch(true, None, &sum(&[10, 10])));
        assert!(windows.switch(false, Some("page-faults"), &sum(&[15, 15])));
        assert!(!windows.switch(false, Some("cycles"), &sum(&[16, 16])));
        assert!(windows.switch(false, None, &sum(&[20, 20])));
        assert!(windows.switch(true, None, &sum(&[30, 30])));
        let mut end = sum(&[32, 33]);
        windows.apply(&mut end);
        assert_eq!(values(&end), [5 + 2, 10 + 3]);
        let mut on = Windows::new(names, true);
        let mut end = sum(&[7, 8]);
        on.apply(&mut end);
        assert_eq!(values(&end), [7, 8], "on from the start: as read");
    }

    /// `-D 30`: the whole run and its places counted from the switch on; a run that ended
    /// first counted nothing (not counted, as perf's).
    #[test]
    fn a_delay_counts_from_its_switch_on() {
        use crate::stat::measure::results::{CommandEnd, EventResult};
        let run = |v| Run {
            events: vec![EventResult {
                name: "x".into(),
                backend: "test".into(),
                outcome: Ok(Reading::new(v, v, v)),
                cgroup: None,
                scale: None,
            }],
            end: CommandEnd {
                exit_code: 0,
                exit_description: String::new(),
                elapsed_ns: 5,
                user_ns: None,
                sys_ns: None,
                note: None,
            },
            places: sum(&[v]),
        };
        let mut delayed = run(100);
        let mut windows = Windows::new(vec!["x".into()], false);
        windows.switch(true, None, &sum(&[30]));
        windows.apply_to_run(&mut delayed);
        assert_eq!(delayed.events[0].outcome.as_ref().unwrap().value, 70);
        assert_eq!(values(&delayed.places), [70]);
        let mut too_short = run(100);
        Windows::new(vec!["x".into()], false).apply_to_run(&mut too_short);
        assert_eq!(too_short.events[0].outcome.as_ref().unwrap().scaled(), None);
    }
}
