//! When `counterhal stat` reads and when it stops: every `-I` milliseconds while the command
//! runs, at most `--interval-count` times, and not past `--timeout`; when the events are
//! switched on and off (`-D`, `--control`'s commands); and, without a command
//! (`-a`, `-C`, `-p` alone), the timer that stands for one until Ctrl-C or the timeout.
//!
//! The command's end is seen by a wait that does not block (`wait4` with `WNOHANG`, which also
//! gives its CPU times), so this works wherever the command can be waited for.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use counterhal::ControlCommand;

use super::control::Listener;

/// The longest sleep between two looks at the command, so that its end is seen promptly.
const LOOK_EVERY: Duration = Duration::from_millis(10);

/// How long the timer standing for a command sleeps without `--timeout`: until Ctrl-C.
const FOREVER_SECONDS: u64 = 2_147_483_647;

/// When to read and when to stop.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pace {
    /// Read every so often while the command runs (`-I`).
    pub interval: Option<Duration>,
    /// Stop the command after so many intervals (`--interval-count`).
    pub count: Option<u32>,
    /// Stop the command after so long (`--timeout`).
    pub timeout: Option<Duration>,
    /// Count only from so long after the start (`-D`): the events are switched on then.
    pub delay: Option<Duration>,
    /// Start with the events off, until `--control` switches them on (`-D -1`).
    pub disabled: bool,
    /// The commands of `--control`.
    pub control: Option<&'static Listener>,
}

/// What the loop asks of the measurement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Whether the command has ended (without blocking): the answer is the step's `true`.
    Look,
    /// Read the counters: so long after the start.
    Read(Duration),
    /// Switch every event (`event` `None`) or the event of that name on or off: the answer is
    /// whether there is such an event.
    Switch {
        /// On, or off.
        on: bool,
        /// The event's name, or every event.
        event: Option<String>,
    },
    /// List the events (`--control`'s `evlist`).
    List,
    /// Stop the command (its time or its intervals are up).
    Stop,
}

impl Pace {
    /// Whether anything happens before the command ends on its own.
    pub fn is_idle(&self) -> bool {
        self.interval.is_none()
            && self.timeout.is_none()
            && self.delay.is_none()
            && !self.disabled
            && self.control.is_none()
    }

    /// Whether the events are on from the start.
    pub fn starts_on(&self) -> bool {
        self.delay.is_none() && !self.disabled
    }

    /// Whether the stretch from the last of `read` intervals to the end is printed as an
    /// interval of its own: with `-I`, unless `--interval-count` intervals were read (perf
    /// prints that many, the partial one only when the command ended first).
    pub fn wants_last_interval(&self, read: usize) -> bool {
        self.interval.is_some()
            && self
                .count
                .is_none_or(|count| read < usize::try_from(count).unwrap_or(usize::MAX))
    }

    /// `elapsed` since the start as perf stamps intervals: from the events' enable, after
    /// `-D`'s delay (perf: `-D 100 -I 50` stamps the first interval 0.050).
    pub fn since_enabled(&self, elapsed: Duration) -> Duration {
        elapsed.saturating_sub(self.delay.unwrap_or_default())
    }

    /// Calls `step` at each interval, at each switch and once to stop, until it answers
    /// [`Step::Look`] with `true` (the command has ended); the answers to reads and stops are
    /// not read. Returns at once when there is nothing to do before the end.
    pub fn run(&self, started: Instant, mut step: impl FnMut(Step) -> bool) {
        if self.is_idle() {
            return;
        }
        // Intervals start once counting does (after -D's delay).
        let mut next_read = self.interval.map(|i| i + self.delay.unwrap_or_default());
        let mut delay = self.delay;
        let mut reads = 0u32;
        let mut stopped = false;
        // perf says so on standard error around its delay and at each switch (pr_info of
        // EVLIST_DISABLED_MSG and EVLIST_ENABLED_MSG in builtin-stat.c and util/evlist.c).
        if !self.starts_on() {
            eprintln!("Events disabled");
        }
        while !step(Step::Look) {
            let now = started.elapsed();
            if delay.is_some_and(|at| now >= at) {
                switch(&mut step, true, None);
                delay = None;
            }
            while let Some((command, done)) = self.control.and_then(Listener::take) {
                carry_out(&mut step, command);
                done();
            }
            if let (Some(interval), Some(at)) = (self.interval, next_read)
                && now >= at
            {
                step(Step::Read(self.since_enabled(now)));
                reads += 1;
                next_read = Some(at + interval);
                if self.count.is_some_and(|count| reads >= count) {
                    next_read = None;
                    if !stopped {
                        step(Step::Stop);
                        stopped = true;
                    }
                }
            }
            if !stopped && self.timeout.is_some_and(|timeout| now >= timeout) {
                step(Step::Stop);
                stopped = true;
            }
            let until_read = next_read
                .or(delay)
                .map_or(LOOK_EVERY, |at| at.saturating_sub(now))
                .min(LOOK_EVERY);
            match self.control {
                Some(control) => control.wait(until_read),
                None => std::thread::sleep(until_read),
            }
        }
    }
}

/// Carries out `--control`'s `command` as perf stat does (`evlist__ctlfd_process`): `stop`,
/// `ping` and `snapshot` change nothing in a count.
fn carry_out(step: &mut impl FnMut(Step) -> bool, command: ControlCommand) {
    match command {
        ControlCommand::Enable(event) => switch(step, true, event),
        ControlCommand::Disable(event) => switch(step, false, event),
        ControlCommand::List => _ = step(Step::List),
        ControlCommand::Wrong(_) => eprintln!("failed: wrong command"),
        _ => {}
    }
}

/// Switches every event or one on or off, saying so as perf does.
fn switch(step: &mut impl FnMut(Step) -> bool, on: bool, event: Option<String>) {
    let word = if on { "enabled" } else { "disabled" };
    let found = step(Step::Switch {
        on,
        event: event.clone(),
    });
    match event {
        None => eprintln!("Events {word}"),
        Some(name) if found => eprintln!("Event {name} {word}"),
        Some(name) => eprintln!("failed: can't find '{name}' event"),
    }
}

/// The command that stands for one when `-a`, `-C` or `-p` is given without one: a sleep
/// for the timeout (rounded up to the millisecond), or until Ctrl-C ends it.
pub fn timer(timeout: Option<Duration>) -> Vec<OsString> {
    let seconds = match timeout {
        Some(timeout) => format!("{}.{:03}", timeout.as_secs(), timeout.subsec_millis()),
        None => FOREVER_SECONDS.to_string(),
    };
    vec!["sleep".into(), seconds.into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `pace` over a `sleep 5` that a Stop step kills; the steps other than Look, in
    /// order, and when the run started.
    fn steps_of(pace: &Pace) -> (Vec<Step>, Instant) {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let mut steps = Vec::new();
        let started = Instant::now();
        pace.run(started, |step| {
            if step == Step::Look {
                return child.try_wait().expect("wait").is_some();
            }
            if step == Step::Stop {
                child.kill().expect("kill");
            }
            steps.push(step);
            false
        });
        child.wait().ok();
        (steps, started)
    }

    #[test]
    fn the_timer_sleeps_for_the_timeout_or_until_stopped() {
        assert_eq!(timer(Some(Duration::from_millis(1500))), ["sleep", "1.500"]);
        assert_eq!(timer(None), ["sleep", "2147483647"]);
    }

    #[test]
    fn reads_come_at_each_interval_and_stop_after_the_count() {
        let pace = Pace {
            interval: Some(Duration::from_millis(20)),
            count: Some(3),
            ..Pace::default()
        };
        let (steps, started) = steps_of(&pace);
        let reads: Vec<Duration> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Read(at) => Some(*at),
                _ => None,
            })
            .collect();
        assert_eq!(reads.len(), 3, "{steps:?}");
        assert_eq!(steps[3], Step::Stop, "{steps:?}");
        for (i, at) in reads.iter().enumerate() {
            assert!(
                *at >= Duration::from_millis(20 * (i as u64 + 1)),
                "{steps:?}"
            );
        }
        assert!(started.elapsed() < Duration::from_secs(4), "stopped early");
    }

    #[test]
    fn a_timeout_stops_once() {
        let pace = Pace {
            timeout: Some(Duration::from_millis(30)),
            ..Pace::default()
        };
        let (steps, _) = steps_of(&pace);
        assert_eq!(steps, [Step::Stop]);
        assert!(Pace::default().is_idle());
        let counted = Pace {
            interval: Some(Duration::from_millis(10)),
            count: Some(2),
            ..Pace::default()
        };
        assert!(counted.wants_last_interval(1), "the command ended first");
        assert!(!counted.wants_last_interval(2), "the count is reached");
        assert!(!Pace::default().wants_last_interval(0), "no -I");
    }

    #[test]
    fn a_delay_switches_the_events_on_once_and_moves_the_intervals() {
        let pace = Pace {
            interval: Some(Duration::from_millis(20)),
            count: Some(1),
            delay: Some(Duration::from_millis(40)),
            ..Pace::default()
        };
        assert!(
            !Pace {
                interval: None,
                ..pace
            }
            .is_idle(),
            "the delay alone acts"
        );
        let (steps, _) = steps_of(&pace);
        assert_eq!(steps.len(), 3, "{steps:?}");
        assert_eq!(
            steps[0],
            Step::Switch {
                on: true,
                event: None
            },
            "{steps:?}"
        );
        match steps[1] {
            // Stamped from the enable, after the delay (perf's -D stamps): 20 ms, not 60.
            Step::Read(at) => assert!(
                at >= Duration::from_millis(20) && at < Duration::from_millis(40),
                "{steps:?}"
            ),
            _ => panic!("{steps:?}"),
        }
        assert_eq!(steps[2], Step::Stop);
    }
}
