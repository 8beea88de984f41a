//! `counterhal check`: the conformance suite on this machine.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use counterhal::Registration;

use crate::args::spec::{Spec, flag, path, text};
use crate::args::{Table, Words};
use crate::error::CliError;
use crate::options::{
    DatabaseArgs, Databased, cpu_model, descriptions, events_file, parse_backend,
};
use crate::output::{OutputFile, emit_to_stderr};

/// Arguments of `counterhal check`.
#[derive(Debug, Default)]
pub struct CheckArgs {
    /// `--backend`.
    backend: Option<&'static Registration>,
    /// `--models`.
    models: bool,
    /// `--json`.
    json: Option<PathBuf>,
    /// `--cpu-model`, `--events`, `--descriptions`.
    database: DatabaseArgs,
}

impl Databased for CheckArgs {
    fn database(&mut self) -> &mut DatabaseArgs {
        &mut self.database
    }
}

impl Table for CheckArgs {
    const NAME: &'static str = "check";
    const USAGE: &'static str = "counterhal check [--backend B] [--models] [--json FILE]";
    const OPTIONS: &'static [Spec<CheckArgs>] = &[
        text(None, "backend", "BACKEND", |a: &mut CheckArgs, v| {
            a.backend = Some(parse_backend(v)?);
            Ok(())
        })
        .says("Only this backend (a name `counterhal info` lists)"),
        flag(None, "models", |a: &mut CheckArgs| a.models = true).says(
            "Also run the suite on the device models (of the drivers and PMUs the backends \
            model)",
        ),
        path(None, "json", "FILE", |a: &mut CheckArgs, v| {
            a.json = Some(v)
        })
        .says("Write the JSON report here"),
        cpu_model(),
        events_file(),
        descriptions(),
    ];
    const WORDS: Words = Words::None;
}

/// Runs `counterhal check`.
pub fn run(args: CheckArgs) -> Result<ExitCode, CliError> {
    let mut out = String::new();
    let context = args.database.context()?;
    // The report's file is checked before the suite runs, which takes a while.
    let json_file = args.json.as_deref().map(OutputFile::open).transpose()?;
    let reports = crate::report::run_all(&context, args.backend, args.models);
    let mut failed = false;
    _ = writeln!(
        out,
        "{:<8} {:<6} {:<34} {:<5} reason",
        "backend", "device", "case", "result"
    );
    for report in &reports {
        for case in &report.cases {
            _ = writeln!(
                out,
                "{:<8} {:<6} {:<34} {:<5} {}",
                report.backend,
                report.device,
                case.case,
                case.outcome.label(),
                case.outcome.reason()
            );
        }
        let (pass, skip, fail) = report.counts();
        _ = writeln!(
            out,
            "  {} / {} ({}): {pass} passed, {fail} failed, {skip} skipped",
            report.backend, report.device, report.description
        );
        failed |= report.counts().2 > 0;
    }
    let mut json_written = Ok(());
    if let Some(file) = json_file {
        let document = crate::report::json_report(&context, &reports);
        let text = serde_json::to_string_pretty(&document).expect("JSON of plain values");
        let path = file.path().display().to_string();
        json_written = file.replace_with(&(text + "\n"));
        if json_written.is_ok() {
            _ = writeln!(out, "report written to {path}");
        }
    }
    // A backend that cannot be used here is a skip; a failed case, or a run in which nothing
    // passed at all, is a failure.
    let nothing_passed = reports.iter().all(|r| r.counts().0 == 0);
    if nothing_passed {
        emit_to_stderr("counterhal check: no case passed on any backend\n");
    }
    // The table first, so that a report that could not be written loses nothing.
    crate::output::emit(&out)?;
    json_written?;
    Ok(if failed || nothing_passed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
