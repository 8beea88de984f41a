//! Where the results go, opened before the command runs, so that a path that cannot be
//! written is refused before anything is counted (a file is emptied only once the results are
//! ready: a bad event or a command that cannot run leaves an earlier file as it was):
//! standard error, `-o FILE` (`--append`), `--log-fd`, `stat record`'s records (`-o`,
//! perf.data by default, `-` for a pipe) and `--plot`'s SVG file; and the results written
//! there once the runs are summed up.

use std::ffi::OsString;

use super::Report;
use super::intervals::Taken;
use super::plot;
use super::printing;
use super::recorded::{Destination, recording};
use super::summary::Summary;
use crate::error::CliError;
use crate::output::{OutputFile, emit_to_stderr};
use crate::stat::arguments::record::RECORD_USAGE;
use crate::stat::arguments::{StatArgs, USAGE};
use crate::stat::plan::planned::Planned;

/// Where the results go.
pub struct Outputs {
    /// The results' file (`-o`, `--log-fd`; `None`: standard error), until `-I`'s intervals
    /// take it.
    pub results: Option<OutputFile>,
    /// `--plot`'s file.
    pub plot: Option<OutputFile>,
    /// `stat record`'s records, and its command line as given.
    records: Option<(Destination, Vec<OsString>)>,
}

impl Outputs {
    /// Opens where `args` send the results.
    ///
    /// # Errors
    /// A file that cannot be created or written, a descriptor not open for writing (exit 2).
    pub fn open(args: &StatArgs) -> Result<Outputs, CliError> {
        // `stat record`: -o names where the records go, opened before the command runs.
        let records = args
            .record
            .as_ref()
            .map(|line| {
                Destination::open(args.output.as_deref(), &args.sysfs.system())
                    .map(|destination| (destination, line.clone()))
            })
            .transpose()
            .map_err(|e| CliError::usage(e, RECORD_USAGE))?;
        let results_to = args.output.as_ref().filter(|_| records.is_none());
        let results = match (results_to, args.more.log_fd()) {
            (Some(path), _) if args.more.append => Some(OutputFile::append(path)),
            (Some(path), _) => Some(OutputFile::open(path)),
            (None, Some(fd)) => Some(OutputFile::descriptor(
                &args.sysfs.system(),
                fd,
                &format!("--log-fd {fd}"),
            )),
            (None, None) => None,
        }
        .transpose()
        .map_err(|e| CliError::usage(e.error, USAGE))?;
        let plot = args
            .plot
            .as_deref()
            .map(OutputFile::open)
            .transpose()
            .map_err(|e| CliError::usage(e.error, USAGE))?;
        Ok(Outputs {
            results,
            plot,
            records,
        })
    }

    /// Writes `summary` as `report` asks, after what `-I`'s intervals left (`taken`): the
    /// results where they go (to standard error where the intervals' output failed; nothing
    /// for a pipe of records, as perf prints none), `stat record`'s records of the events
    /// `planned`, and `--plot`'s rates.
    ///
    /// # Errors
    /// Output that cannot be written (exit 1), the intervals' first failure among them.
    pub fn write(
        self,
        report: &Report,
        summary: &Summary,
        taken: Taken,
        planned: &[&Planned],
    ) -> Result<(), CliError> {
        let mut text = if report.intervals {
            printing::render_after_intervals(report, summary, taken.objects)
        } else {
            printing::render(report, summary)
        };
        if report.summary {
            // The whole run, as without -I.
            text.push_str(&printing::render_summary(report, summary));
        }
        let piped = self
            .records
            .as_ref()
            .is_some_and(|(destination, _)| destination.is_pipe());
        if let Some((destination, line)) = self.records {
            let recording = recording(&line, planned, &summary.events, summary.end.elapsed_ns);
            destination.write(&recording).map_err(CliError::failed)?;
        }
        let written = match taken.failed {
            // The intervals' output failed: the rest goes where they went, to standard error.
            Some(failed) => {
                emit_to_stderr(&text);
                Err(failed)
            }
            // A pipe of records gets no table (perf prints none either).
            None if report.quiet || piped => Ok(()),
            None => printing::write(taken.output, &text),
        };
        if let (Some(plot), Some(file)) = (&taken.plot, self.plot) {
            plot::draw(plot, &summary.events, file)?;
        }
        written
    }
}
