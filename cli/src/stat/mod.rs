//! `counterhal stat`: run a command (or attach) and count events, like `perf stat`.
//!
//! A measurement goes one way through four parts, each taking what the one before made:
//! [`arguments`] (the command line, read once by stat's one parser and checked), [`plan`]
//! (what is counted, planned once on a backend: the targets, the events and metrics, their
//! groups, cgroups and PMU boxes), [`measure`] (the plan counted: the command run, counters
//! opened, read and paced) and [`report`] (the runs summed up and printed, none of it reading
//! the command line). [`recording`] is perf's stat records, read and written, which knows
//! nothing else of `stat`. This module only joins them.

pub mod arguments;
pub mod measure;
pub mod plan;
pub mod recording;
pub mod report;

use std::process::ExitCode;

use counterhal_hal::{Backend, BackendExt};
use counterhal_process::ForwardSignals;

use self::arguments::record::{self, Subcommand};
pub use self::arguments::{HELP, StatArgs};
use self::measure::model;
use self::plan::backend::{self, Modeled};
use self::plan::targets::Targets;
use self::report::Report;
use self::report::gather::{self, Merge};
use self::report::intervals::Intervals;
use self::report::outputs::Outputs;
use self::report::summary::Summary;
use self::report::{recorded, verbose};
use crate::error::CliError;
use crate::output::emit_to_stderr;

/// Runs `counterhal stat`.
///
/// # Errors
/// Bad arguments (exit 2, with the usage line), a command that is not found (127) or cannot
/// be executed (126), a measurement that fails (1). Otherwise the command's own exit status
/// is returned.
pub fn run(mut args: StatArgs) -> Result<ExitCode, CliError> {
    let first = args.command.first().and_then(|word| Subcommand::of(word));
    if args.record.is_none() && first == Some(Subcommand::Report) {
        return report_recording(args);
    }
    args.default_to_system_wide();
    args.check()?;
    if args.record.is_some() {
        record::check(&args)?;
    }
    let targets = plan::targets(&args)?;
    let (context, others) = plan::context(&mut args)?;
    if args.model
        && let Some(registration) = args.backend
    {
        let modeled = Modeled::of(registration, &context)?;
        return model::while_fed(&modeled.model, || {
            let note = Some(modeled.note());
            let (backend, id) = (&modeled.model.backend, Some(modeled.id.as_str()));
            stat_with(&args, &modeled.targets, backend, id, &[], note)
        });
    }
    let backend = backend::of(&args, &context)?;
    stat_with(&args, &targets, &backend, context.model(), &others, None)
}

/// `stat report`: reads the recording `-i` names after the word `report` (perf's `perf.data`
/// by default, standard input when it is a pipe) and prints it as `stat` prints a run, with
/// the metrics `-M` names (before `report`) computed from its counts.
///
/// # Errors
/// A bad option or metric name (exit 2), a recording that cannot be read or is not one
/// (exit 2).
fn report_recording(args: StatArgs) -> Result<ExitCode, CliError> {
    let input = record::input_of(&args.command[1..])?;
    let recording = recording::read::read(&input, None).map_err(CliError::input)?;
    let metrics = match args.metrics.is_empty() {
        true => Vec::new(),
        false => {
            let context = args.database.context()?;
            counterhal::metrics::chosen(&args.metrics, context.model())
                .map_err(|e| CliError::usage(e, arguments::USAGE))?
        }
    };
    recorded::print(args, &recording, &metrics)
}

/// Plans the events on `backend`, measures, and writes the summary, with `note` (what was
/// counted, when it is not what the command line says) under it; `-M` looks up the metrics
/// of the database model `model` and the portable ones, and those of `others` (a hybrid
/// chip's other kind of core's model and its `-M` names: `--topdown`'s).
fn stat_with<B: Backend + 'static>(
    args: &StatArgs,
    targets: &Targets,
    backend: &B,
    model: Option<&str>,
    others: &[(String, Vec<String>)],
    note: Option<String>,
) -> Result<ExitCode, CliError> {
    let counting = plan::plan(args, backend, model, others)?;
    let mut outputs = Outputs::open(args)?;
    let report = Report::of(args, &counting.chosen);
    if args.more.verbose {
        emit_to_stderr(&verbose::planned(counting.plan.what(), &backend.label()));
    }
    // -I's intervals are printed as they end, each event as planned.
    let merge = Merge::of(&counting.boxes);
    let planned = gather::planned(&report, &counting.plan, &merge, &backend.label());
    let plot = outputs.plot.is_some();
    let mut intervals = Intervals::new(&report, &merge, planned, outputs.results.take(), plot);
    // Until the results are out, a signal that ends a command (Ctrl-C, `kill`, `timeout`)
    // ends the whole measurement, whatever runs: the measured command or a hook is passed it,
    // and what was counted is printed.
    let _watching = ForwardSignals::to(0);
    let (mut runs, signalled) =
        measure::runs(args, targets, backend, &counting.plan, &mut |snapshot| {
            intervals.take(snapshot)
        })?;
    let taken = intervals.end();
    let exit_for_signal = |signal: i32| ExitCode::from(u8::try_from(128 + signal).unwrap_or(1));
    if runs.is_empty() {
        // Stopped before anything was counted.
        return Ok(signalled.map_or(ExitCode::SUCCESS, exit_for_signal));
    }
    gather::runs(
        &report,
        &counting.plan,
        &merge,
        &mut runs,
        [counting.fell_back, note],
    );
    let summary = Summary::of(report.machine.clone(), &runs);
    let planned: Vec<_> = counting.plan.what().collect();
    outputs.write(&report, &summary, taken, &planned)?;
    Ok(signalled.map_or(ExitCode::from(summary.end.exit_code), exit_for_signal))
}
