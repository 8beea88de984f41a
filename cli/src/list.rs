//! `counterhal list`: the events available here, each marked usable or not.

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Args;
use counterhal::{AnyBackend, Backend, Listed, Registration, list_events};
use serde_json::json;

use crate::error::CliError;
use crate::options::{DatabaseArgs, parse_backend};

/// Arguments of `counterhal list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// The backend whose events to list (default: the first that works here).
    #[arg(long, value_parser = parse_backend)]
    backend: Option<&'static Registration>,
    #[command(flatten)]
    database: DatabaseArgs,
    /// Print a JSON array instead of text.
    #[arg(long)]
    json: bool,
    /// List the CPU models of the event database (id, vendor, name, perf's signatures,
    /// counters, number of events) instead of events.
    #[arg(long)]
    models: bool,
    /// Only events whose name or description contains this (case-insensitive).
    pattern: Option<String>,
}

/// Runs `counterhal list`.
pub fn run(args: ListArgs) -> Result<ExitCode, CliError> {
    let mut out = String::new();
    let context = args.database.context()?;
    if args.models {
        crate::output::emit(&crate::models::render(context.database.models(), args.json))?;
        return Ok(ExitCode::SUCCESS);
    }
    // A backend that cannot be used here still has events to list: all marked unusable, with
    // the reason in the header.
    let (backend, unusable) = match args.backend {
        Some(registration) => match counterhal::probe(registration, &context) {
            Ok(backend) => (Some(backend), None),
            Err(e) => (None, Some(format!("{}: {e}", registration.name))),
        },
        None => {
            let first = counterhal::probe_all(&context)
                .into_iter()
                .find_map(|p| p.result.ok());
            let reason = first
                .is_none()
                .then(|| "no usable backend here".to_string());
            (first, reason)
        }
    };
    let pattern = args.pattern.as_deref().unwrap_or("");
    let entries: Vec<Listed> = match &backend {
        Some(backend) => list_events(&context, Ok(backend), pattern),
        None => {
            list_events::<AnyBackend>(&context, Err("the backend cannot be used here"), pattern)
        }
    };
    if args.json {
        let array: Vec<_> = entries
            .iter()
            .map(|e| {
                json!({
                    "section": e.section.name(),
                    "name": e.name,
                    "description": e.description,
                    "encoding": e.encoding,
                    "backend": backend.as_ref().map(|b| b.label()),
                    "usable": e.usable,
                    "reason": e.reason,
                    "aliases": e.aliases,
                })
            })
            .collect();
        _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&array).expect("JSON of plain values")
        );
        crate::output::emit(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let label = match (&backend, &unusable) {
        (Some(backend), _) => backend.label(),
        (None, Some(reason)) => format!("no usable backend ({reason})"),
        (None, None) => "no backend".to_string(),
    };
    let model = context.model.as_deref().unwrap_or("no database model");
    _ = writeln!(
        out,
        "events for {label}, CPU model {model} (* = usable here)"
    );
    let mut section = None;
    for entry in &entries {
        if section != Some(entry.section) {
            section = Some(entry.section);
            _ = writeln!(out, "\n{}:", entry.section.name());
        }
        let mark = if entry.usable { "*" } else { " " };
        // Generated native events carry no description: their encoding says what they are.
        let about = match (entry.description.is_empty(), &entry.encoding) {
            (true, Some(encoding)) => encoding.as_str(),
            _ => entry.description.as_str(),
        };
        _ = writeln!(out, "  {mark} {:<40} {about}", entry.name);
    }
    let usable = entries.iter().filter(|e| e.usable).count();
    _ = writeln!(
        out,
        "\n{} events listed, {usable} usable here",
        entries.len()
    );
    crate::output::emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
