//! Records this machine's CPUID answers (the leaves the crate reads) as a dump that
//! `CpuidDump::from_file` and `CpuidDump::parse` read back.
//!
//! ```sh
//! cargo run -p counterhal-msr --example record_cpuid -- "AMD EPYC (this machine)" > my.cpuid
//! ```
//!
//! The answers come from the CPUID instruction on whichever CPU the program runs on; with
//! `--device N`, from Linux's `/dev/cpu/N/cpuid` instead.

use counterhal_msr::{CpuidDevice, CpuidDump, CpuidInstruction, CpuidSource};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut name = None;
    let mut device = None;
    while let Some(arg) = args.next() {
        if arg == "--device" {
            let cpu = args.next().and_then(|n| n.parse::<u32>().ok());
            let Some(cpu) = cpu else {
                eprintln!("--device needs a CPU number");
                std::process::exit(2);
            };
            device = Some(cpu);
        } else {
            name = Some(arg);
        }
    }
    let name = name.unwrap_or_else(|| "this machine".to_string());
    let result = match device {
        Some(cpu) => CpuidDevice::open(cpu).and_then(|d| record(&name, &d)),
        None => record(&name, &CpuidInstruction),
    };
    match result {
        Ok(text) => print!("{text}"),
        Err(error) => {
            eprintln!("cannot record CPUID: {error}");
            std::process::exit(1);
        }
    }
}

fn record(name: &str, source: &dyn CpuidSource) -> counterhal_hal::Result<String> {
    let dump = CpuidDump::record(name, source)?;
    let mut text = dump.to_text();
    // A `CPU 0:` line keeps the file in the layout of `cpuid -r`.
    let body = text.split_off(text.find('\n').map_or(text.len(), |i| i + 1));
    text.push_str(&format!("# Recorded from {}.\nCPU 0:\n", source.describe()));
    text.push_str(&body);
    Ok(text)
}
