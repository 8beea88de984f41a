//! perf's `--control fd:CTL[,ACK]` and `fifo:CTL[,ACK]`, `-D MS` and `-D -1`: the commands
//! read on their own thread and handed to the pacing loop ([`Listener`]), and the windows in
//! which events count ([`Windows`]): the counters run on, and what they count while switched
//! off is read at each switch and taken out of every later count.

use std::fs::File;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::Duration;

use counterhal::{Control, ControlCommand, Error};
use counterhal_hal::Reading;

use super::results::{Counts, Place, Run};

/// A command and where to say it was carried out (the reader then acknowledges it).
type Message = (ControlCommand, SyncSender<()>);

/// The commands of `--control`, read by a thread of their own and taken by the pacing loop.
#[derive(Debug)]
pub struct Listener {
    commands: Mutex<Receiver<Message>>,
    pending: Mutex<Option<Message>>,
}

impl Listener {
    /// Opens perf's `--control` `spec` (`fd:CTL[,ACK]`: descriptors this process was given;
    /// `fifo:CTL[,ACK]`: fifos opened for reading and writing, as perf opens them) and starts
    /// reading commands; the listener lives as long as the process.
    ///
    /// # Errors
    /// A spec perf would not read, a descriptor not open (or not open the right way), a fifo
    /// that cannot be opened: each named.
    pub fn open(spec: &str) -> Result<&'static Listener, Error> {
        let control = open_control(spec)?;
        let (sender, commands) = sync_channel(0);
        std::thread::Builder::new()
            .name("control".into())
            .spawn(move || read_commands(control, &sender))
            .map_err(|e| Error::invalid_input(format!("--control {spec}: no thread: {e}")))?;
        Ok(Box::leak(Box::new(Listener {
            commands: Mutex::new(commands),
            pending: Mutex::new(None),
        })))
    }

    /// Waits at most `timeout` for a command (it is then [`take`](Listener::take)n next).
    pub fn wait(&self, timeout: Duration) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.is_none() {
            let commands = self.commands.lock().unwrap_or_else(|e| e.into_inner());
            match commands.recv_timeout(timeout) {
                Ok(message) => *pending = Some(message),
                // The commands have ended: wait as a sleep would.
                Err(RecvTimeoutError::Disconnected) => std::thread::sleep(timeout),
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// The next command received, without waiting, and where to say it was carried out.
    pub fn take(&self) -> Option<(ControlCommand, impl FnOnce())> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let message = pending.take().or_else(|| {
            let commands = self.commands.lock().unwrap_or_else(|e| e.into_inner());
            commands.try_recv().ok()
        })?;
        let (command, done) = message;
        Some((command, move || _ = done.send(())))
    }
}

/// Reads commands until the descriptor ends (perf then stops listening), handing each on and
/// acknowledging it once carried out.
fn read_commands(mut control: Control, to: &SyncSender<Message>) {
    loop {
        let command = match control.receive() {
            Ok(Some(command)) => command,
            Ok(None) => return,
            Err(e) => {
                eprintln!("counterhal: --control: {e}");
                return;
            }
        };
        let (done, carried_out) = sync_channel(1);
        if to.send((command.clone(), done)).is_err() || carried_out.recv().is_err() {
            return;
        }
        if let Err(e) = control.acknowledge(&command) {
            eprintln!("counterhal: --control: {e}");
        }
    }
}

/// `spec` opened as perf's `evlist__parse_control` opens it.
fn open_control(spec: &str) -> Result<Control, Error> {
    let bad = |why: &str| {
        Error::invalid_input(format!("--control {spec}: {why}"))
            .with_hint("give fd:CTL[,ACK] (descriptor numbers) or fifo:CTL[,ACK] (fifo paths)")
    };
    if let Some(numbers) = spec.strip_prefix("fd:") {
        let (ctl, ack) = match numbers.split_once(',') {
            Some((ctl, ack)) => (ctl, Some(ack)),
            None => (numbers, None),
        };
        let number = |text: &str| {
            descriptor_number(text).ok_or_else(|| bad(&format!("`{text}` is no descriptor number")))
        };
        let (ctl, ack) = (number(ctl)?, ack.map(number).transpose()?);
        let commands = crate::sys::readable_descriptor(ctl).map_err(|e| bad(&e))?;
        let acks = ack
            .map(|ack| crate::sys::writable_descriptor(ack).map_err(|e| bad(&e)))
            .transpose()?;
        return Ok(Control::new(commands.into(), acks.map(Into::into)));
    }
    let Some(paths) = spec.strip_prefix("fifo:") else {
        return Err(bad("it starts with neither fd: nor fifo:"));
    };
    let (ctl, ack) = match paths.split_once(',') {
        Some((ctl, ack)) => (ctl, (!ack.is_empty()).then_some(ack)),
        None => (paths, None),
    };
    if ctl.is_empty() {
        return Err(bad("no fifo to read commands from"));
    }
    // Read and write: writers may come and go without an end of file (perf's O_RDWR).
    let open = |path: &str| {
        File::options()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| bad(&format!("cannot open `{path}`: {e}")))
    };
    let commands = open(ctl)?;
    let acks = ack.map(open).transpose()?;
    Ok(Control::new(commands.into(), acks.map(Into::into)))
}

/// A descriptor number as perf's `strtoul(..., 0)` reads it: decimal, `0x` hexadecimal or
/// `0` octal.
fn descriptor_number(text: &str) -> Option<u32> {
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        return u32::from_str_radix(hex, 16).ok();
    }
    if text.len() > 1
        && let Some(octal) = text.strip_prefix('0')
    {
        return u32::from_str_radix(octal, 8).ok();
    }
    digits(text)
}

/// Decimal digits alone.
fn digits(text: &str) -> Option<u32> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

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
        use super::super::results::{CommandEnd, EventResult};
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

    /// Oracle: perf 7.2's `evlist__parse_control` (strtoul with base 0) and its fifo form.
    #[test]
    fn specs_are_read_as_perf_reads_them() {
        assert_eq!(descriptor_number("10"), Some(10));
        assert_eq!(descriptor_number("0x1f"), Some(31));
        assert_eq!(descriptor_number("010"), Some(8));
        assert_eq!(descriptor_number("0"), Some(0));
        assert_eq!(descriptor_number(""), None);
        assert_eq!(descriptor_number("3x"), None);
        for (spec, says) in [
            ("pipe:3", "neither fd: nor fifo:"),
            ("fd:", "no descriptor number"),
            ("fd:x,4", "`x` is no descriptor number"),
            ("fd:3,", "`` is no descriptor number"),
            ("fd:999999", "not an open descriptor"),
            ("fifo:", "no fifo"),
            ("fifo:,ack", "no fifo"),
            ("fifo:/nonexistent/ctl", "cannot open `/nonexistent/ctl`"),
        ] {
            let error = open_control(spec).expect_err(spec).to_string();
            assert!(error.contains(says), "{spec}: {error}");
        }
    }
}
