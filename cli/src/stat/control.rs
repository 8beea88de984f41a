//! perf's `--control fd:CTL[,ACK]` and `fifo:CTL[,ACK]`: the descriptors or fifos opened as
//! perf opens them, and the commands read on a thread of their own and handed to the pacing
//! loop ([`Listener`]), which acknowledges each once carried out.

use std::fs::File;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::Duration;

use counterhal::{Control, ControlCommand, Error};
use counterhal_system::System;

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
    /// that cannot be opened: each named. `system` says how a descriptor is open.
    pub fn open(spec: &str, system: &System) -> Result<&'static Listener, Error> {
        let control = open_control(spec, system)?;
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
fn open_control(spec: &str, system: &System) -> Result<Control, Error> {
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
        let commands = crate::sys::readable_descriptor(system, ctl).map_err(|e| bad(&e))?;
        let acks = ack
            .map(|ack| crate::sys::writable_descriptor(system, ack).map_err(|e| bad(&e)))
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

#[cfg(test)]
mod tests {
    use super::*;

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
            let error = open_control(spec, &System::host())
                .expect_err(spec)
                .to_string();
            assert!(error.contains(says), "{spec}: {error}");
        }
    }
}
