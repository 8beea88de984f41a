//! A "measure this region" harness: named regions begun and ended from several threads,
//! their counts, calls and times accumulated and printed as a table and as JSON.
//!
//! ```text
//! cargo run --example regions                          # default events
//! cargo run --example regions -- page-faults task-clock
//! COUNTERHAL_REGION_EVENTS=page-faults cargo run --example regions -- --global
//! ```
//!
//! With `--global` the process-wide regions are used instead (`counterhal::region::begin` and
//! `end`): their events come from `COUNTERHAL_REGION_EVENTS` and their report is written when
//! the program exits, to `COUNTERHAL_REGION_OUTPUT` (standard error when unset).

use std::sync::Arc;

use counterhal::Result;
use counterhal::prelude::*;
use counterhal::region::{self, DEFAULT_EVENTS, Regions};

/// Work worth measuring: fill a fresh buffer and sum it.
fn fill_and_sum(bytes: usize) -> u64 {
    let buffer: Vec<u8> = (0..bytes).map(|i| i as u8).collect();
    buffer.iter().map(|&b| u64::from(b)).sum()
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--global") {
        for _ in 0..3 {
            region::begin("fill")?;
            std::hint::black_box(fill_and_sum(8 << 20));
            region::end("fill")?;
        }
        return Ok(()); // the report is written at exit
    }
    let names: Vec<&str> = match args.is_empty() {
        true => DEFAULT_EVENTS.split(',').collect(),
        false => args.iter().map(String::as_str).collect(),
    };
    let backend = open_default()?;
    println!("counting on {}", backend.label());
    let regions = Arc::new(Regions::new(backend.into_backend(), &names));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let regions = regions.clone();
            std::thread::spawn(move || -> Result<()> {
                for _ in 0..4 {
                    regions.begin("iteration")?;
                    regions.begin("fill")?;
                    std::hint::black_box(fill_and_sum(4 << 20));
                    regions.end("fill")?;
                    regions.end("iteration")?;
                }
                Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a worker panicked")?;
    }
    let report = regions.report();
    print!("{}", report.table());
    print!("{}", report.json());
    Ok(())
}
