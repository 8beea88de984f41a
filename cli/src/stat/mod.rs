//! `counterhal stat`: run a command (or attach) and count events, like `perf stat`.
//!
//! The rooms, in the order a run passes through them: the arguments and their checks
//! (`args`), what is counted (`targets`), the counting itself (`measure`), the numbers a
//! report shows (`summary`), and the report (`print`).

mod args;
mod measure;
mod print;
mod summary;
mod targets;

use std::process::ExitCode;

use counterhal::{Backend, Error};

pub use args::StatArgs;
use measure::{Linux, choose_backend, measure, resolve_all};
use print::{print_csv, print_json, print_table};
use summary::{mean_run, summarize};

use crate::common::CliError;

/// Extra help for `counterhal stat`.
pub const HELP: &str = "\
Examples:
  counterhal stat -- ls
  counterhal stat -e page-faults,context-switches -e task-clock -- true
  counterhal stat -e syscalls:sys_enter_getpid -x, -- ./bench
  counterhal stat -a -e cpu-clock -- sleep 1
Events not supported here are printed as <not supported>, with the reason below the table.";

/// Runs `counterhal stat`.
pub fn run(args: StatArgs) -> Result<ExitCode, CliError> {
    args.check()?;
    let context = args.database.context()?;
    // The Linux backend is probed once and used directly (it runs commands itself); any other
    // backend is used through the portable facade.
    #[cfg(target_os = "linux")]
    if args
        .backend
        .is_none_or(|registration| registration.name == "linux")
    {
        match counterhal::linux::probe(context.database.clone(), context.model.clone()) {
            Ok(linux) => return stat_with(&args, &linux, Some(&linux)),
            Err(e) if args.backend.is_some() => return Err(CliError::failed(e)),
            Err(_) => {}
        }
    }
    let backend = choose_backend(&args, &context)?;
    stat_with(&args, &backend, None)
}

fn stat_with<B: Backend>(
    args: &StatArgs,
    backend: &B,
    linux: Option<&Linux>,
) -> Result<ExitCode, CliError> {
    let events = resolve_all(backend, &args.events()?)?;
    let mut runs = Vec::new();
    for _ in 0..args.repeat {
        runs.push(measure(args, backend, linux, &events)?);
    }
    let summary = summarize(&runs);
    let mean = mean_run(&runs);
    let last = &mean;
    let mut out = String::new();
    if args.json {
        print_json(&mut out, args, &summary, last);
    } else if let Some(separator) = &args.separator {
        print_csv(&mut out, separator, &summary);
    } else {
        print_table(&mut out, args, &summary, last, runs.len());
    }
    match &args.output {
        Some(path) => std::fs::write(path, &out).map_err(|e| {
            CliError::input(Error::invalid_input(format!(
                "cannot write {}: {e}",
                path.display()
            )))
        })?,
        None => eprint!("{out}"),
    }
    Ok(ExitCode::from(last.exit_code))
}
