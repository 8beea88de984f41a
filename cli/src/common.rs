//! What every subcommand shares: the options that pick the event database and CPU model, the
//! error a subcommand ends with, and the backend-name parser.

use std::path::PathBuf;

use clap::Args;
use counterhal::{Context, Error, Registration};

/// Options shared by the commands that resolve event names.
#[derive(Args, Debug, Clone, Default)]
pub struct DatabaseArgs {
    /// CPU model id from the event database (e.g. p6, skl, amd64_fam19h_zen3) instead of the
    /// detected one.
    #[arg(long, value_name = "MODEL")]
    cpu: Option<String>,
    /// An events file that adds CPU models or overrides events (also COUNTERHAL_EVENTS).
    #[arg(long = "events", value_name = "FILE")]
    events_file: Option<PathBuf>,
}

impl DatabaseArgs {
    /// The database and CPU model these options name.
    pub fn context(&self) -> Result<Context, CliError> {
        Context::new(self.events_file.as_deref(), self.cpu.as_deref())
            .map_err(|e| CliError::usage(e, "--cpu MODEL (see `counterhal info`) --events FILE"))
    }
}

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

/// The registered backend named `name`, for clap.
pub fn parse_backend(name: &str) -> Result<&'static Registration, String> {
    counterhal::registration(name).map_err(|_| {
        format!(
            "unknown backend `{name}`: use {}",
            counterhal::registry::names().join(", ")
        )
    })
}
