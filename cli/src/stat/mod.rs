//! `counterhal stat`: run a command (or attach) and count events, like `perf stat`.
//!
//! A measurement passes through the rooms in order, and each imports only rooms before it:
//! [`arguments`] (the command line and its checks), [`targets`] (what to count: the command,
//! a process's threads, CPUs), [`pacing`] (intervals, timeouts, the timer that stands for a
//! command), [`results`] (what a run yields), [`counted`] and [`attached`] (the two ways of
//! counting), [`measurement`] (the backend, the events, the path, repeats), [`summary`]
//! (means, spreads, times, intervals and places), [`metrics`] (perf's metric column),
//! [`named_metrics`] (`-M`, over the event database's metrics and
//! [`counterhal::events::expression`]),
//! [`separated`] (perf's `-x` and `-j` lines), [`document`] (the `--json` document) and
//! [`printing`] (the table, and where the results go), [`plot`] (`--plot`). This module only joins them.

mod arguments;
mod attached;
mod counted;
mod document;
mod machine;
mod measurement;
mod metrics;
pub(crate) mod named_metrics;
mod pacing;
mod plot;
mod printing;
mod results;
mod separated;
mod summary;
mod targets;

use std::process::ExitCode;

use counterhal::Backend;

use self::arguments::USAGE;
pub use self::arguments::{HELP, StatArgs};
use self::summary::Summary;
use self::targets::Targets;
use crate::error::CliError;
use crate::output::OutputFile;

/// Runs `counterhal stat`.
///
/// # Errors
/// Bad arguments (exit 2, with the usage line), a command that is not found (127) or cannot
/// be executed (126), a measurement that fails (1). Otherwise the command's own exit status
/// is returned.
pub fn run(args: StatArgs) -> Result<ExitCode, CliError> {
    args.check()?;
    let targets = Targets::from_options(args.pid, args.all_cpus, args.cpu_list.as_deref())
        .map_err(|e| CliError::usage(e, USAGE))?;
    let context = args.database.context()?;
    // The Linux backend is probed once and used as itself (no dynamic dispatch on the read
    // path); any other backend is used through the portable facade.
    #[cfg(target_os = "linux")]
    if args
        .backend
        .is_none_or(|registration| registration.name == "linux")
    {
        match counterhal::linux::probe(context.database.clone(), context.model.clone()) {
            Ok(linux) => return stat_with(&args, &targets, &linux, context.model.as_deref()),
            Err(e) if args.backend.is_some() => return Err(CliError::failed(e)),
            Err(_) => {}
        }
    }
    let backend = measurement::choose_backend(args.backend, &context)?;
    stat_with(&args, &targets, &backend, context.model.as_deref())
}

/// Plans the events on `backend`, measures, and writes the summary; `-M` looks up the
/// metrics of the database model `model` and the portable ones.
fn stat_with<B: Backend>(
    args: &StatArgs,
    targets: &Targets,
    backend: &B,
    model: Option<&str>,
) -> Result<ExitCode, CliError> {
    let chosen =
        named_metrics::chosen(&args.metrics, model).map_err(|e| CliError::usage(e, USAGE))?;
    let (mut names, groups) = args.event_groups();
    if args.event_names.is_empty() && !chosen.is_empty() {
        // -M alone counts the metrics' events, not the default set (as perf does).
        names.clear();
    }
    // The events the metrics read, unless given already (with or without a modifier).
    for needed in named_metrics::events_needed(&chosen) {
        if !names
            .iter()
            .any(|n| n == &needed || n.split(':').next() == Some(&needed))
        {
            names.push(needed);
        }
    }
    // A metric's event the model does not have is refused naming the metric.
    for metric in &chosen {
        for event in named_metrics::events_needed(&[metric]) {
            match backend.resolve(&event) {
                Err(e) if e.kind() == counterhal::ErrorKind::InvalidEvent => {
                    let e = e.context(format_args!("metric `{}` reads `{event}`", metric.name));
                    return Err(CliError::usage(e, USAGE));
                }
                _ => {}
            }
        }
    }
    let mut events = measurement::plan(backend, &names)?;
    // Checked before the command runs, but emptied only once the results are ready: a bad
    // event or a command that cannot run leaves an earlier file as it was.
    let output = args
        .output
        .as_deref()
        .map(OutputFile::open)
        .transpose()
        .map_err(|e| CliError::usage(e.error, USAGE))?;
    let fallback = measurement::fall_back_to_user_space(backend, &mut events);
    let timer = args.command.is_empty();
    let command = if timer {
        pacing::timer(args.timeout())
    } else {
        args.command.clone()
    };
    let plan = results::Plan {
        per_place: args.per_place(),
        pace: pacing::Pace {
            interval: args.interval(),
            count: args.interval_count,
            timeout: args.timeout(),
        },
        timer,
    };
    let mut runs = measurement::measure_repeatedly(
        backend,
        &events,
        targets,
        &groups,
        &command,
        args.repeat,
        plan,
    )?;
    if let Some(fallback) = fallback {
        for run in &mut runs {
            run.end.note = Some(match run.end.note.take() {
                Some(note) => format!("{fallback}; {note}"),
                None => fallback.clone(),
            });
        }
    }
    let summary = Summary::of(&runs);
    printing::write(output, &printing::render(args, &summary, &chosen))?;
    if let Some(path) = &args.plot {
        plot::draw(&summary, path).map_err(CliError::failed)?;
    }
    Ok(ExitCode::from(summary.end.exit_code))
}
