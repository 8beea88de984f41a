//! `--control`'s descriptors or fifos opened as perf opens them, and perf's control protocol
//! read on them by the library's [`Control`] on a thread of its own: each command handed to
//! the pacing loop ([`Listener`]) and acknowledged once carried out. What `--control` names is
//! [`ControlSpec`]'s to read.

use std::fs::File;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::Duration;

use counterhal::{Control, ControlCommand, Error};
use counterhal_system::System;

use crate::stat::arguments::control::{ControlEnds, ControlSpec};

/// A command and where to say it was carried out (the reader then acknowledges it).
type Message = (ControlCommand, SyncSender<()>);

/// The commands of `--control`, read by a thread of their own and taken by the pacing loop.
#[derive(Debug)]
pub struct Listener {
    commands: Mutex<Receiver<Message>>,
    pending: Mutex<Option<Message>>,
}

impl Listener {
    /// Opens what `--control`'s `spec` names (descriptors this process was given; fifos
    /// opened for reading and writing, as perf opens them) and starts reading commands; the
    /// listener lives as long as the process.
    ///
    /// # Errors
    /// A descriptor not open (or not open the right way), a fifo that cannot be opened, no
    /// thread to read on: each named. `system` says how a descriptor is open.
    pub fn open(spec: &ControlSpec, system: &System) -> Result<&'static Listener, Error> {
        let control = open_control(spec, system)?;
        let (sender, commands) = sync_channel(0);
        std::thread::Builder::new()
            .name("control".into())
            .spawn(move || read_commands(control, &sender))
            .map_err(|e| {
                Error::invalid_input(format!("--control {}: no thread: {e}", spec.text()))
            })?;
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

/// What `spec` names, opened as perf's `evlist__parse_control` opens it.
fn open_control(spec: &ControlSpec, system: &System) -> Result<Control, Error> {
    let bad = |why: &str| spec.refuse(why);
    match &spec.ends {
        ControlEnds::Descriptors { commands, acks } => {
            let commands =
                crate::sys::readable_descriptor(system, *commands).map_err(|e| bad(&e))?;
            let acks = acks
                .map(|ack| crate::sys::writable_descriptor(system, ack).map_err(|e| bad(&e)))
                .transpose()?;
            Ok(Control::new(commands.into(), acks.map(Into::into)))
        }
        ControlEnds::Fifos { commands, acks } => {
            // Read and write: writers may come and go without an end of file (perf's O_RDWR).
            let open = |path: &String| {
                File::options()
                    .read(true)
                    .write(true)
                    .open(path)
                    .map_err(|e| bad(&format!("cannot open `{path}`: {e}")))
            };
            let commands = open(commands)?;
            let acks = acks.as_ref().map(open).transpose()?;
            Ok(Control::new(commands.into(), acks.map(Into::into)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: perf 7.2's `evlist__parse_control`: a descriptor it was not given and a fifo
    /// that is not there are refused as it refuses them.
    #[test]
    fn specs_are_read_as_perf_reads_them() {
        for (spec, says) in [
            ("fd:999999", "not an open descriptor"),
            ("fifo:/nonexistent/ctl", "cannot open `/nonexistent/ctl`"),
        ] {
            let error = ControlSpec::parse(spec)
                .and_then(|spec| open_control(&spec, &System::host()))
                .expect_err(spec)
                .to_string();
            assert!(error.contains(says), "{spec}: {error}");
        }
    }
}
