//! `counterhal check`: the conformance suite on this machine.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use counterhal::Registration;

use crate::error::CliError;
use crate::options::{DatabaseArgs, parse_backend};

/// Arguments of `counterhal check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Only this backend (linux, msr, pctr).
    #[arg(long, value_parser = parse_backend)]
    backend: Option<&'static Registration>,
    /// Also run the suite on the device models (pctr driver, MSR PMUs).
    #[arg(long)]
    models: bool,
    /// Write the JSON report here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    database: DatabaseArgs,
}

/// Runs `counterhal check`.
pub fn run(args: CheckArgs) -> Result<ExitCode, CliError> {
    let mut out = String::new();
    let context = args.database.context()?;
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
    if let Some(path) = &args.json {
        let document = crate::report::json_report(&context, &reports);
        let text = serde_json::to_string_pretty(&document).expect("JSON of plain values");
        std::fs::write(path, text + "\n").map_err(|e| {
            CliError::input(counterhal::Error::invalid_input(format!(
                "cannot write {}: {e}",
                path.display()
            )))
        })?;
        _ = writeln!(out, "report written to {}", path.display());
    }
    // A backend that cannot be used here is a skip; a failed case, or a run in which nothing
    // passed at all, is a failure.
    let nothing_passed = reports.iter().all(|r| r.counts().0 == 0);
    if nothing_passed {
        eprintln!("counterhal check: no case passed on any backend");
    }
    crate::output::emit(&out);
    Ok(if failed || nothing_passed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
