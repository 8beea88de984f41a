//! Metrics by name through the library: the events a CPU model's metrics read and how they
//! are encoded there (IPC and the top-down level 1 breakdown, `TopdownL1`), then a metric
//! counted on this thread (the page-fault rate of a workload that touches fresh memory).
//!
//! ```text
//! cargo run --example metrics                        # this CPU's model
//! cargo run --example metrics -- --cpu-model spr     # Sapphire Rapids' encodings, anywhere
//! ```
//!
//! The encodings need no PMU: they are what would be programmed on that model. The rate is
//! counted here, by the software event `page-faults`.

use std::process::ExitCode;

use counterhal::OpenOptions;
use counterhal::prelude::*;
use counterhal::{Result, metrics};

/// Touches `pages` fresh 4 KiB pages: one page fault each, at least.
fn touch_fresh_pages(pages: usize) -> u64 {
    let mut memory = vec![0u8; pages * 4096];
    for page in memory.chunks_mut(4096) {
        page[0] = 1;
    }
    let touched = std::hint::black_box(&memory).iter().step_by(4096);
    touched.map(|&byte| u64::from(byte)).sum()
}

/// Prints the metrics `group` names on `backend`'s model, their formulas, and each event
/// they read with its encoding there (or why it has none).
fn print_encodings(backend: &Chosen, group: &str) -> Result<()> {
    let chosen = metrics::chosen(&[group.to_string()], backend.cpu_model())?;
    println!("{group}:");
    for metric in &chosen {
        println!("  {} = {}", metric.name, metric.expression());
    }
    for event in metrics::events_needed(&backend.context().system().clone().into(), &chosen) {
        match backend.resolve(&event) {
            Ok(resolved) => {
                let encodings: Vec<String> = resolved
                    .terms
                    .iter()
                    .map(|term| term.request.encoding.to_string())
                    .collect();
                println!("    {event}: {}", encodings.join(" + "));
            }
            Err(e) => println!("    {event}: not here: {e}"),
        }
    }
    Ok(())
}

fn run(model: Option<&str>) -> Result<()> {
    let mut setup = Setup::new();
    if let Some(model) = model {
        setup = setup.cpu_model(model);
    }
    let backend = setup.open()?;
    let shown = backend.cpu_model().unwrap_or("no model");
    println!("model: {shown} (backend {})", backend.label());
    for group in ["IPC", "TopdownL1"] {
        if let Err(e) = print_encodings(&backend, group) {
            println!("{group}: {e}");
        }
    }
    let mut rate = backend.open_metrics(
        &["page_faults_per_second"],
        &Target::this_thread(),
        &OpenOptions::default(),
    )?;
    rate.enable()?;
    let pages = 4096;
    std::hint::black_box(touch_fresh_pages(pages));
    rate.disable()?;
    for value in rate.read()? {
        let faults = rate.readings()[0].reading.and_then(|r| r.scaled());
        match (value.value, faults) {
            (Some(v), Some(faults)) => println!(
                "counted: {} = {v:.0} {} ({faults} page-faults, {pages} pages touched)",
                value.name, value.unit
            ),
            _ => println!("counted: {} did not run", value.name),
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let model = match args.as_slice() {
        [] => None,
        [flag, model] if flag == "--cpu-model" => Some(model.as_str()),
        _ => {
            eprintln!("usage: metrics [--cpu-model MODEL]   (see `counterhal list --models`)");
            return ExitCode::from(2);
        }
    };
    match run(model) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("metrics: {e}");
            ExitCode::FAILURE
        }
    }
}
