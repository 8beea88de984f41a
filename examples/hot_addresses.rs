//! Where a program spends its time: samples this program's own two busy loops (one doing
//! three times the work of the other) with `cpu-clock:u` at 1 kHz for MILLISECONDS of its own
//! CPU time (so that a busy machine gives it as many samples as an idle one), and prints the
//! hottest addresses, each with the loop it lies in.
//!
//! `cargo run --release --example hot_addresses [MILLISECONDS]` (default 400).

use std::collections::BTreeMap;
use std::hint::black_box;

use counterhal::prelude::*;
use counterhal::{Record, Result, SampleFields, SampleOptions, Sampler};

// The loops use plain operators only, so that even a debug build keeps their work inside
// them (no call to an iterator or a helper).
#[inline(never)]
fn light(n: u64) -> u64 {
    let (mut x, mut i) = (black_box(n), 0);
    while i < n {
        x = (x.wrapping_mul(5) >> 1) ^ i;
        i += 1;
    }
    x
}

#[inline(never)]
fn heavy(n: u64) -> u64 {
    let (mut x, mut i) = (black_box(n), 0);
    while i < 3 * n {
        x = (x.wrapping_mul(7) >> 1) ^ i;
        i += 1;
    }
    x
}

fn main() -> Result<()> {
    let millis = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(400);
    let backend = open_default()?;
    let options = SampleOptions::frequency(1000, SampleFields::profile());
    let mut sampler = backend.open_sampler(&["cpu-clock:u"], &Target::this_thread(), &options)?;
    sampler.enable()?;
    let end = counterhal::time::process_cpu_ns() + millis * 1_000_000;
    // Each turn's length varies (a step of a linear congruential sequence), so that the
    // turns cannot keep step with the sampling timer and land its ticks in one loop.
    let mut n: u64 = 200_000;
    while counterhal::time::process_cpu_ns() < end {
        black_box(light(black_box(n)));
        black_box(heavy(black_box(n)));
        n = 150_000 + (n.wrapping_mul(1_103_515_245).wrapping_add(12_345) >> 16) % 100_000;
    }
    sampler.disable()?;

    let mut by_address: BTreeMap<u64, u64> = BTreeMap::new();
    let walked = sampler.walk(&mut |record| {
        if let Record::Sample(sample) = record
            && let Some(ip) = sample.ip
        {
            *by_address.entry(ip).or_default() += 1;
        }
    })?;
    // Each loop's code lies between its start and the next function's (near enough here).
    let mut functions = [
        ("light", light as *const () as u64),
        ("heavy", heavy as *const () as u64),
    ];
    functions.sort_by_key(|(_, start)| *start);
    let name_of = |ip: u64| {
        functions
            .iter()
            .rev()
            .find(|(_, start)| ip >= *start && ip - start < 4096)
            .map_or("elsewhere", |(name, _)| name)
    };
    let mut hottest: Vec<(u64, u64)> = by_address.into_iter().collect();
    hottest.sort_by_key(|&(_, count)| std::cmp::Reverse(count));
    println!(
        "{} samples ({} lost) over {millis} ms of CPU time",
        walked.samples, walked.lost
    );
    for (ip, count) in hottest.iter().take(8) {
        println!("{count:>6}  {ip:#018x}  {}", name_of(*ip));
    }
    let in_fn = |f: &str| {
        hottest
            .iter()
            .filter(|(ip, _)| name_of(*ip) == f)
            .map(|(_, c)| c)
            .sum::<u64>()
    };
    println!(
        "light {} samples, heavy {} samples",
        in_fn("light"),
        in_fn("heavy")
    );
    Ok(())
}
