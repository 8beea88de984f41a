//! `--control`'s value, read as perf's `evlist__parse_control` reads it (tools/perf/util/
//! evlist.c): `fd:CTL[,ACK]`, descriptors this process was given, or `fifo:CTL[,ACK]`, fifos by
//! path. What comes through them is perf's control protocol, which the library's
//! [`counterhal::Control`] reads and acknowledges; the measurement opens them.

use counterhal::Error;

/// Where `--control`'s commands come from and where they are acknowledged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlEnds {
    /// Descriptors this process was given (`fd:CTL[,ACK]`).
    Descriptors {
        /// The descriptor commands are read from.
        commands: u32,
        /// The descriptor acknowledgements are written to, if any.
        acks: Option<u32>,
    },
    /// Fifos (`fifo:CTL[,ACK]`), opened for reading and writing as perf opens them.
    Fifos {
        /// The fifo commands are read from.
        commands: String,
        /// The fifo acknowledgements are written to, if any.
        acks: Option<String>,
    },
}

/// `--control`'s value: as given, and read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlSpec {
    /// The value as given, for messages.
    text: String,
    /// What it names.
    pub ends: ControlEnds,
}

impl ControlSpec {
    /// `text` read as perf reads it.
    ///
    /// # Errors
    /// A value perf would not read (bad input), naming what is wrong ([`ControlSpec::refuse`]).
    pub fn parse(text: &str) -> Result<ControlSpec, Error> {
        let spec = |ends| ControlSpec {
            text: text.to_string(),
            ends,
        };
        let bad = |why: &str| refuse(text, why);
        if let Some(numbers) = text.strip_prefix("fd:") {
            let (commands, acks) = match numbers.split_once(',') {
                Some((commands, acks)) => (commands, Some(acks)),
                None => (numbers, None),
            };
            let number = |text: &str| {
                descriptor_number(text)
                    .ok_or_else(|| bad(&format!("`{text}` is no descriptor number")))
            };
            let (commands, acks) = (number(commands)?, acks.map(number).transpose()?);
            return Ok(spec(ControlEnds::Descriptors { commands, acks }));
        }
        let Some(paths) = text.strip_prefix("fifo:") else {
            return Err(bad("it starts with neither fd: nor fifo:"));
        };
        let (commands, acks) = match paths.split_once(',') {
            Some((commands, acks)) => (commands, (!acks.is_empty()).then_some(acks)),
            None => (paths, None),
        };
        if commands.is_empty() {
            return Err(bad("no fifo to read commands from"));
        }
        Ok(spec(ControlEnds::Fifos {
            commands: commands.to_string(),
            acks: acks.map(str::to_string),
        }))
    }

    /// The value as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Bad input about this value: `why`, with what would be right.
    pub fn refuse(&self, why: &str) -> Error {
        refuse(&self.text, why)
    }
}

/// Bad input about `--control`'s value `text`: `why`, with what would be right.
fn refuse(text: &str, why: &str) -> Error {
    Error::invalid_input(format!("--control {text}: {why}"))
        .with_hint("give fd:CTL[,ACK] (descriptor numbers) or fifo:CTL[,ACK] (fifo paths)")
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
            ("fifo:", "no fifo"),
            ("fifo:,ack", "no fifo"),
        ] {
            let error = ControlSpec::parse(spec).expect_err(spec).to_string();
            assert!(error.contains(says), "{spec}: {error}");
        }
    }
}
