//! Options several subcommands share: the event database and CPU model (`--events`,
//! `--cpu-model`),
//! and the parser of `--backend`.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use counterhal::{Context, Registration};
use counterhal_events::DESCRIPTIONS_ENV;

use crate::error::CliError;

/// Options shared by the commands that resolve event names.
#[derive(Args, Debug, Clone, Default)]
pub struct DatabaseArgs {
    /// CPU model from the event database instead of the detected one: an id (e.g. p6, skl,
    /// amd64_fam19h_zen3) or perf's signature Vendor-Family-Model[-Stepping] (GenuineIntel-6-8F-8,
    /// AuthenticAMD-26-2-0), detected as this CPU would be; on a hybrid chip, -atom or -core
    /// after it names the core (GenuineIntel-6-97-2-atom).
    #[arg(long = "cpu-model", value_name = "MODEL")]
    pub(crate) cpu: Option<String>,
    /// An events file that adds CPU models or overrides events (also COUNTERHAL_EVENTS).
    #[arg(long = "events", value_name = "FILE")]
    pub(crate) events_file: Option<PathBuf>,
    /// Descriptions of the CPU model's native events and unit masks, read from perf's JSON
    /// event files: the kernel's tools/perf/pmu-events/arch/x86 directory, one model's
    /// directory of it, or a perfmon tree (also COUNTERHAL_DESCRIPTIONS). `list` shows them
    /// and its PATTERN matches them.
    #[arg(long = "descriptions", value_name = "DIR")]
    descriptions: Option<PathBuf>,
}

impl DatabaseArgs {
    /// The event database (with the events file) and the CPU model (named or detected).
    ///
    /// # Errors
    /// A bad events file or an unknown CPU model: bad input (exit 2) with the usage line.
    pub fn context(&self) -> Result<Context, CliError> {
        let mut context =
            Context::new(self.events_file.as_deref(), self.cpu.as_deref()).map_err(|e| {
                CliError::usage(
                    e,
                    "--cpu-model MODEL (see `counterhal list --models`) --events FILE",
                )
            })?;
        // A hybrid chip's signature without its core: say which core's table was taken.
        if let Some(note) = self
            .cpu
            .as_deref()
            .and_then(|id| context.database.hybrid_note(id))
        {
            crate::output::emit_to_stderr(&format!("counterhal: note: {note}\n"));
        }
        // Descriptions are read only when asked, for the model in use alone.
        let descriptions = self.descriptions.clone().or_else(|| {
            std::env::var_os(DESCRIPTIONS_ENV)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
        });
        if let (Some(dir), Some(model)) = (descriptions, context.model.as_deref()) {
            let (database, _) = (*context.database)
                .clone()
                .with_descriptions(model, &dir)
                .map_err(|e| CliError::usage(e, "--descriptions DIR (perf's JSON event files)"))?;
            context.database = Arc::new(database);
        }
        Ok(context)
    }
}

/// Parses `--backend NAME` into its registration; the error lists the known names.
pub fn parse_backend(name: &str) -> Result<&'static Registration, String> {
    counterhal::registration(name).map_err(|_| {
        format!(
            "unknown backend `{name}`: use {}",
            counterhal::registry::names().join(", ")
        )
    })
}
