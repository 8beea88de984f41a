//! `counterhal list`: the events available here, each marked usable or not.

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Args;
use counterhal::hal::{Countable, GeneralizedEvent, Preset, countable_form};
use counterhal::{AnyBackend, Backend, Context, Registration, Target};
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

/// One listed event.
struct Entry {
    section: &'static str,
    name: String,
    description: String,
    usable: Option<bool>,
    reason: Option<String>,
}

fn usability(backend: Option<&AnyBackend>, name: &str) -> (Option<bool>, Option<String>) {
    let Some(backend) = backend else {
        return (Some(false), Some("the backend cannot be used here".into()));
    };
    let countable = backend
        .resolve(name)
        .and_then(|event| countable_form(backend, &event, &Target::ThisThread));
    match countable {
        Ok(Countable {
            kernel_refused: None,
            ..
        }) => (Some(true), None),
        Ok(Countable {
            event,
            kernel_refused: Some(refused),
        }) => (
            Some(true),
            Some(format!(
                "counts user space only here, as {}: {}",
                event.name,
                refused.hint().unwrap_or(refused.message())
            )),
        ),
        Err(e) => (Some(false), Some(e.to_string())),
    }
}

fn collect(context: &Context, backend: Option<&AnyBackend>, pattern: &str) -> Vec<Entry> {
    let matches = |name: &str, description: &str| {
        pattern.is_empty()
            || name.to_ascii_lowercase().contains(pattern)
            || description.to_ascii_lowercase().contains(pattern)
    };
    let mut entries = Vec::new();
    for event in GeneralizedEvent::all() {
        let (section, description) = match event {
            GeneralizedEvent::Hardware(_) => ("hardware", "perf generalized hardware event"),
            GeneralizedEvent::Software(_) => ("software", "perf software event"),
            GeneralizedEvent::Cache(_) => ("cache", "perf generalized cache event"),
            GeneralizedEvent::Preset(p) => ("preset", p.description()),
        };
        let name = event.name().into_owned();
        if !matches(&name, description) {
            continue;
        }
        let (usable, reason) = usability(backend, &name);
        entries.push(Entry {
            section,
            name,
            description: description.into(),
            usable,
            reason,
        });
    }
    debug_assert!(Preset::ALL.len() > 20);
    if let Some(model) = context
        .model
        .as_deref()
        .and_then(|id| context.database.model(id))
    {
        for event in model.events() {
            let description = if event.description.is_empty() {
                native_encoding(event)
            } else {
                event.description.clone()
            };
            let name = event.name.clone();
            if matches(&name, &description) {
                let (usable, reason) = usability(backend, &name);
                entries.push(Entry {
                    section: "native",
                    name,
                    description,
                    usable,
                    reason,
                });
            }
        }
    }
    if let Some(backend) = backend {
        for (name, description) in backend.own_events() {
            if matches(&name, &description) {
                // Backend-specific names are listed from what the OS exposes: resolvable means
                // usable; opening thousands of tracepoints here would only slow the listing.
                let (usable, reason) = match backend.resolve(&name) {
                    Ok(_) => (Some(true), None),
                    Err(e) => (Some(false), Some(e.to_string())),
                };
                entries.push(Entry {
                    section: "backend",
                    name,
                    description,
                    usable,
                    reason,
                });
            }
        }
    }
    entries
}

/// A native event without a description of its own (generated tables carry none): its
/// encoding, `event 0xd1, unit masks L1_HIT 0x01, L2_HIT 0x02, ...`.
fn native_encoding(event: &counterhal::events::NativeEvent) -> String {
    let mut text = format!("event {:#04x}", event.code);
    if event.base_umask != 0 {
        _ = write!(text, " unit mask {:#04x}", event.base_umask);
    }
    let masks: Vec<String> = event
        .unit_masks()
        .iter()
        .take(4)
        .map(|u| format!("{} {:#04x}", u.name, u.code))
        .collect();
    if !masks.is_empty() {
        _ = write!(text, ", unit masks {}", masks.join(", "));
        if event.unit_masks().len() > masks.len() {
            _ = write!(text, ", ... ({} in all)", event.unit_masks().len());
        }
    }
    text
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
    let pattern = args.pattern.as_deref().unwrap_or("").to_ascii_lowercase();
    let entries = collect(&context, backend.as_ref(), &pattern);
    if args.json {
        let array: Vec<_> = entries
            .iter()
            .map(|e| {
                json!({
                    "section": e.section,
                    "name": e.name,
                    "description": e.description,
                    "backend": backend.as_ref().map(|b| b.label()),
                    "usable": e.usable,
                    "reason": e.reason,
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
    let mut section = "";
    for entry in &entries {
        if entry.section != section {
            section = entry.section;
            _ = writeln!(out, "\n{section}:");
        }
        let mark = match entry.usable {
            Some(true) => "*",
            Some(false) => " ",
            None => "?",
        };
        _ = writeln!(out, "  {mark} {:<40} {}", entry.name, entry.description);
    }
    let usable = entries.iter().filter(|e| e.usable == Some(true)).count();
    _ = writeln!(
        out,
        "\n{} events listed, {usable} usable here",
        entries.len()
    );
    crate::output::emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
