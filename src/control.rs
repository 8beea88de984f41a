//! perf's control protocol (`perf stat --control fd:CTL,ACK`): a harness writes command lines
//! (`enable`, `disable`, ...) on one descriptor and reads an acknowledgement on another after
//! each, to count only the region it measures.

use std::fs::File;
use std::io::{BufReader, ErrorKind as IoKind, Read, Write};
use std::os::fd::{AsFd, OwnedFd};

use counterhal_hal::{Error, ErrorKind, Group, Result};

/// The longest command perf reads (`EVLIST_CTL_CMD_MAX_LEN`, 64 with its NUL): a longer line
/// is read as several commands.
const LONGEST: usize = 63;

/// What perf writes to the acknowledgement descriptor after a command: `"ack\n"` and the NUL
/// that ends it (`write(ack, EVLIST_CTL_CMD_ACK_TAG, sizeof(EVLIST_CTL_CMD_ACK_TAG))`).
const ACK: &[u8] = b"ack\n\0";

/// One command of perf's control protocol, as perf's `evlist__ctlfd_recv` reads it: a line (or
/// text ended by a NUL, or 63 bytes) that starts with the command's word.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlCommand {
    /// `enable`, or `enable NAME` for one event by name: start counting.
    Enable(Option<String>),
    /// `disable`, or `disable NAME`: stop counting until the next `enable`.
    Disable(Option<String>),
    /// `snapshot`: perf stat does nothing with it and sends no acknowledgement.
    Snapshot,
    /// `evlist` (with `-v`, `-g` or `-F`): perf lists the events on standard error.
    List,
    /// `stop`: perf stat only acknowledges it (perf record stops).
    Stop,
    /// `ping`: acknowledged, nothing else.
    Ping,
    /// A command word followed by something other than a space and an argument
    /// (`enablex`): acknowledged, as perf does after saying "failed: wrong command".
    Wrong(String),
}

impl ControlCommand {
    /// `text` (one command, without its end) as perf reads it; `None` for what perf ignores
    /// (no command word it knows at the start: no acknowledgement either).
    fn parse(text: &str) -> Option<ControlCommand> {
        // perf compares the start alone (strncmp with the word's length), in this order.
        let argument = |word: &str| -> Result<Option<String>, ()> {
            match &text[word.len()..] {
                "" => Ok(None),
                rest => rest
                    .strip_prefix(' ')
                    .map(|name| Some(name.to_string()))
                    .ok_or(()),
            }
        };
        let wrong = |_| ControlCommand::Wrong(text.to_string());
        Some(if text.starts_with("enable") {
            argument("enable").map_or_else(wrong, ControlCommand::Enable)
        } else if text.starts_with("disable") {
            argument("disable").map_or_else(wrong, ControlCommand::Disable)
        } else if text.starts_with("snapshot") {
            ControlCommand::Snapshot
        } else if text.starts_with("evlist") {
            match argument("evlist") {
                Ok(None) => ControlCommand::List,
                Ok(Some(flag)) if ["-v", "-g", "-F"].contains(&flag.as_str()) => {
                    ControlCommand::List
                }
                _ => ControlCommand::Wrong(text.to_string()),
            }
        } else if text.starts_with("stop") {
            ControlCommand::Stop
        } else if text.starts_with("ping") {
            ControlCommand::Ping
        } else {
            return None;
        })
    }
}

/// The receiving end of perf's control protocol, for a harness that counts in its own process
/// what `perf stat --control fd:CTL,ACK` would count: commands read from one descriptor (a
/// pipe, a fifo), each acknowledged on the other as perf acknowledges it.
///
/// ```no_run
/// use counterhal::prelude::*;
/// use counterhal::{Control, OpenOptions, Target};
///
/// let chosen = open_default()?;
/// let pid = std::process::id();
/// let mut set = chosen.open_named(&["page-faults"], &Target::process(pid), &OpenOptions::default())?;
/// let (commands, harness_writes) = std::io::pipe().expect("pipe");
/// let (harness_reads, acks) = std::io::pipe().expect("pipe");
/// // ... hand `harness_writes` and `harness_reads` to the code that says what to count ...
/// # drop((harness_writes, harness_reads));
/// let mut control = Control::new(commands.into(), Some(acks.into()));
/// // Enables and disables `set` as told, until `stop` or the writers close.
/// while let Some(command) = control.serve(&mut set)? {
///     control.acknowledge(&command)?;
/// }
/// println!("{:?}", set.read_to_vec()?);
/// # Ok::<(), counterhal::Error>(())
/// ```
#[derive(Debug)]
pub struct Control {
    commands: BufReader<File>,
    acks: Option<File>,
}

impl Control {
    /// Commands read from `commands`, acknowledged on `acks` (none: no acknowledgements,
    /// perf's `fd:CTL` without `,ACK`). A fifo is best opened for reading and writing (perf's
    /// `O_RDWR`), so that writers may come and go without ending the commands.
    pub fn new(commands: OwnedFd, acks: Option<OwnedFd>) -> Control {
        Control {
            commands: BufReader::new(File::from(commands)),
            acks: acks.map(File::from),
        }
    }

    /// The next command perf would act on, waiting for it (on a descriptor its giver opened
    /// `O_NONBLOCK` too, as perf polls); text perf ignores is skipped. `None` once every
    /// writer has closed its end.
    ///
    /// # Errors
    /// [`ErrorKind::Other`] when the descriptor cannot be read, with the OS error.
    pub fn receive(&mut self) -> Result<Option<ControlCommand>> {
        loop {
            let mut text = Vec::with_capacity(LONGEST);
            let mut ended = false;
            while text.len() < LONGEST {
                let mut byte = [0u8];
                match self.commands.read(&mut byte) {
                    Ok(0) => {
                        ended = true;
                        break;
                    }
                    Ok(_) if byte[0] == b'\n' || byte[0] == 0 => break,
                    Ok(_) => text.push(byte[0]),
                    Err(e) if e.kind() == IoKind::Interrupted => {}
                    // A descriptor its giver opened O_NONBLOCK: wait for input, as perf polls.
                    Err(e) if e.kind() == IoKind::WouldBlock => {
                        counterhal_process::wait_ready(self.commands.get_ref().as_fd(), false)
                            .map_err(|e| io_error("cannot wait for the control descriptor", &e))?
                    }
                    Err(e) => return Err(io_error("cannot read the control descriptor", &e)),
                }
            }
            if let Some(command) = ControlCommand::parse(&String::from_utf8_lossy(&text)) {
                return Ok(Some(command));
            }
            if ended {
                return Ok(None);
            }
        }
    }

    /// Writes perf's acknowledgement (`ack\n` and a NUL) for `command`: after every command
    /// but [`ControlCommand::Snapshot`], as perf writes it, waiting for room where a
    /// non-blocking descriptor is full; nothing without an acknowledgement descriptor.
    ///
    /// # Errors
    /// [`ErrorKind::Other`] when the acknowledgement cannot be written, with the OS error.
    pub fn acknowledge(&mut self, command: &ControlCommand) -> Result<()> {
        let Some(acks) = &mut self.acks else {
            return Ok(());
        };
        if *command == ControlCommand::Snapshot {
            return Ok(());
        }
        let mut rest = ACK;
        while !rest.is_empty() {
            match acks.write(rest) {
                Ok(0) => {
                    let e = std::io::Error::from(IoKind::WriteZero);
                    return Err(io_error("cannot write the acknowledgement", &e));
                }
                Ok(written) => rest = &rest[written..],
                Err(e) if e.kind() == IoKind::Interrupted => {}
                // A full pipe its giver opened O_NONBLOCK: wait for room.
                Err(e) if e.kind() == IoKind::WouldBlock => {
                    counterhal_process::wait_ready(acks.as_fd(), true)
                        .map_err(|e| io_error("cannot wait for the acknowledgement", &e))?
                }
                Err(e) => return Err(io_error("cannot write the acknowledgement", &e)),
            }
        }
        Ok(())
    }

    /// Enables and disables `counters` as `enable` and `disable` say, acknowledging them and
    /// `ping`, until a command it leaves to the caller: `stop`, `snapshot`, `evlist`, a
    /// malformed one, or an `enable NAME` or `disable NAME` (a set is enabled as one), which
    /// is returned unacknowledged, to [`acknowledge`](Control::acknowledge) once acted on.
    /// `None` once every writer has closed its end.
    ///
    /// # Errors
    /// As [`receive`](Control::receive) and [`acknowledge`](Control::acknowledge), and as
    /// [`Group::enable`] and [`Group::disable`].
    pub fn serve(&mut self, counters: &mut impl Group) -> Result<Option<ControlCommand>> {
        while let Some(command) = self.receive()? {
            match command {
                ControlCommand::Enable(None) => counters.enable()?,
                ControlCommand::Disable(None) => counters.disable()?,
                ControlCommand::Ping => {}
                other => return Ok(Some(other)),
            }
            self.acknowledge(&command)?;
        }
        Ok(None)
    }
}

/// `what` failed with `e`.
fn io_error(what: &str, e: &std::io::Error) -> Error {
    let error = Error::new(ErrorKind::Other, format!("{what}: {e}"));
    match e.raw_os_error() {
        Some(errno) => error.with_errno(errno),
        None => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: perf 7.2's `evlist__ctlfd_recv` and `evlist__ctlfd_enable` (tools/perf/util/
    /// evlist.c of linux-source-7.2): words matched at the start, in its order, an argument
    /// after one space, anything else after the word wrong.
    #[test]
    fn commands_are_read_as_perf_reads_them() {
        use ControlCommand::*;
        for (text, expect) in [
            ("enable", Some(Enable(None))),
            ("disable", Some(Disable(None))),
            (
                "enable page-faults",
                Some(Enable(Some("page-faults".into()))),
            ),
            ("disable cycles:u", Some(Disable(Some("cycles:u".into())))),
            ("enablex", Some(Wrong("enablex".into()))),
            ("snapshot", Some(Snapshot)),
            ("snapshotted", Some(Snapshot)),
            ("evlist", Some(List)),
            ("evlist -v", Some(List)),
            ("evlist -x", Some(Wrong("evlist -x".into()))),
            ("stop", Some(Stop)),
            ("ping", Some(Ping)),
            ("pingpong", Some(Ping)),
            ("ack", None),
            ("start", None),
            ("", None),
            (" enable", None),
        ] {
            assert_eq!(ControlCommand::parse(text), expect, "{text:?}");
        }
    }

    /// Oracle: perf 7.2's `evlist__ctlfd_recv` (a command ends at a newline, a NUL or 63
    /// bytes) and `evlist__ctlfd_process` (every command acknowledged with "ack\n" and its NUL
    /// but snapshot and what it ignores).
    #[test]
    fn a_stream_of_commands_is_split_and_acknowledged_as_perfs() {
        let (commands, mut writer) = std::io::pipe().expect("pipe");
        let (mut acks_read, acks) = std::io::pipe().expect("pipe");
        let long = format!("ping{}", "x".repeat(59));
        writer
            .write_all(format!("enable\0bogus\nsnapshot\n{long}enable\ndisable").as_bytes())
            .expect("write");
        drop(writer);
        let mut control = Control::new(commands.into(), Some(acks.into()));
        let mut seen = Vec::new();
        while let Some(command) = control.receive().expect("receive") {
            control.acknowledge(&command).expect("ack");
            seen.push(command);
        }
        use ControlCommand::*;
        assert_eq!(
            seen,
            [Enable(None), Snapshot, Ping, Enable(None), Disable(None)]
        );
        drop(control);
        let mut written = Vec::new();
        acks_read.read_to_end(&mut written).expect("read");
        assert_eq!(written, b"ack\n\0".repeat(4));
    }

    /// Descriptors a harness opened `O_NONBLOCK` (here a socket pair, whose reads and writes
    /// answer `EWOULDBLOCK` as a pipe's do): commands that come later are waited for, and
    /// acknowledgements wait for room, where the first `EWOULDBLOCK` ended the commands
    /// before ("Resource temporarily unavailable").
    #[test]
    fn non_blocking_descriptors_are_waited_on() {
        use std::os::unix::net::UnixStream;
        let (commands, mut writer) = UnixStream::pair().expect("socketpair");
        let (mut acks_read, acks) = UnixStream::pair().expect("socketpair");
        for end in [&commands, &writer, &acks_read, &acks] {
            end.set_nonblocking(true).expect("O_NONBLOCK");
        }
        let harness = std::thread::spawn(move || {
            for text in ["enable\n", "ping\n", "disable\n"] {
                std::thread::sleep(std::time::Duration::from_millis(30));
                writer.write_all(text.as_bytes()).expect("write");
            }
        });
        let mut control = Control::new(commands.into(), Some(acks.into()));
        let mut seen = Vec::new();
        while let Some(command) = control.receive().expect("receive") {
            control.acknowledge(&command).expect("ack");
            seen.push(command);
        }
        harness.join().expect("the harness");
        use ControlCommand::*;
        assert_eq!(seen, [Enable(None), Ping, Disable(None)]);
        drop(control);
        acks_read.set_nonblocking(false).expect("blocking");
        let mut written = Vec::new();
        acks_read.read_to_end(&mut written).expect("read");
        assert_eq!(written, b"ack\n\0".repeat(3));
    }

    /// A set is enabled and disabled as told; what `serve` leaves to the caller comes back
    /// unacknowledged.
    #[test]
    fn serve_enables_and_disables_and_hands_back_the_rest() {
        #[derive(Default)]
        struct Switch(Vec<bool>);
        impl Group for Switch {
            fn len(&self) -> usize {
                0
            }
            fn enable(&mut self) -> Result<()> {
                self.0.push(true);
                Ok(())
            }
            fn disable(&mut self) -> Result<()> {
                self.0.push(false);
                Ok(())
            }
            fn reset(&mut self) -> Result<()> {
                Ok(())
            }
            fn read(&mut self, _: &mut [counterhal_hal::Reading]) -> Result<()> {
                Ok(())
            }
        }
        let (commands, mut writer) = std::io::pipe().expect("pipe");
        let (mut acks_read, acks) = std::io::pipe().expect("pipe");
        writer
            .write_all(b"enable\nping\ndisable\nstop\nenable\n")
            .expect("write");
        drop(writer);
        let mut control = Control::new(commands.into(), Some(acks.into()));
        let mut switch = Switch::default();
        assert_eq!(
            control.serve(&mut switch).expect("serve"),
            Some(ControlCommand::Stop)
        );
        assert_eq!(switch.0, [true, false]);
        assert_eq!(control.serve(&mut switch).expect("serve"), None);
        assert_eq!(switch.0, [true, false, true]);
        drop(control);
        let mut written = Vec::new();
        acks_read.read_to_end(&mut written).expect("read");
        assert_eq!(written, b"ack\n\0".repeat(4), "stop is the caller's to ack");
    }
}
