//! How a subcommand fails: the error, the exit status it ends the command with, and for bad
//! arguments the usage line that fixes them.

use counterhal::Error;

/// An error with the exit code it ends the command with, and the usage line that fixes it.
#[derive(Debug)]
pub struct CliError {
    /// What went wrong.
    pub error: Error,
    /// The usage line that fixes it, for bad arguments.
    pub usage: Option<&'static str>,
    /// The exit status the command ends with.
    pub exit_code: u8,
}

impl CliError {
    /// A failure of the measurement itself (exit 1).
    pub fn failed(error: Error) -> Self {
        Self {
            error,
            usage: None,
            exit_code: 1,
        }
    }

    /// Bad input (exit 2), with the usage line that fixes it.
    pub fn usage(error: Error, usage: &'static str) -> Self {
        Self {
            error,
            usage: Some(usage),
            exit_code: 2,
        }
    }

    /// Bad input (exit 2) where no usage line helps.
    pub fn input(error: Error) -> Self {
        Self {
            error,
            usage: None,
            exit_code: 2,
        }
    }
}
