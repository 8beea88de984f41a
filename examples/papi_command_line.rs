//! A `papi_command_line`-like tool: adds each event named on the command line to an event
//! set (reporting each one that cannot be added, and why), runs a small workload, and prints
//! every counted event with its time running.
//!
//! ```text
//! cargo run --example papi_command_line -- page-faults task-clock PAPI_TOT_INS nosuch
//! ```

use counterhal::OpenOptions;
use counterhal::prelude::*;

/// PAPI's command-line workload in spirit: memory touched and arithmetic done.
fn workload() -> f64 {
    let data: Vec<f64> = (0..2_000_000).map(|i| f64::from(i) * 0.5).collect();
    data.iter().map(|x| x.sqrt()).sum()
}

fn main() -> std::process::ExitCode {
    let names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        eprintln!("usage: papi_command_line EVENT...   (see `counterhal list`)");
        return std::process::ExitCode::from(2);
    }
    let backend = match open_default() {
        Ok(backend) => backend,
        Err(e) => {
            eprintln!("no counter backend here: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut builder = backend.builder(Target::this_thread(), OpenOptions::default());
    for name in &names {
        match builder.add(name) {
            Ok(_) => println!("Successfully added: {name}"),
            Err(e) => println!("Failed adding: {name}\nbecause: {e}"),
        }
    }
    let mut set = match builder.open() {
        Ok(set) => set,
        Err(e) => {
            eprintln!("nothing to count: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let run = set.enable().and_then(|()| {
        std::hint::black_box(workload());
        set.disable()?;
        set.read_to_vec()
    });
    let readings = match run {
        Ok(readings) => readings,
        Err(e) => {
            eprintln!("counting failed: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    println!("\ncounts on {}:", backend.label());
    for (event, reading) in set.events().iter().zip(&readings) {
        let running = reading.fraction_running().map_or(0.0, |f| f * 100.0);
        println!(
            "{:<32} {:>16} ({running:.2}% running)",
            event.name,
            reading.scaled().unwrap_or(0)
        );
    }
    std::process::ExitCode::SUCCESS
}
