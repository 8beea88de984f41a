//! `counterhal info`: the OS, the CPU, and each backend with its status.

use std::process::ExitCode;

use clap::Args;
use counterhal::{BackendKind, Capabilities, DeviceKind, OS};

use super::{CliError, DatabaseArgs};

/// Arguments of `counterhal info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    #[command(flatten)]
    database: DatabaseArgs,
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn describe_capabilities(caps: &Capabilities) -> String {
    let counters = match (caps.general_counters, caps.counter_width) {
        (Some(n), Some(w)) => format!("{n} general counters x {w} bits"),
        (Some(n), None) => format!("{n} general counters"),
        _ => "counters scheduled by the OS".to_string(),
    };
    let fixed = match caps.fixed_width {
        Some(w) if caps.fixed_counters > 0 => format!(", {} fixed x {w} bits", caps.fixed_counters),
        _ => String::new(),
    };
    let scope = match caps.scope {
        counterhal::hal::Scope::PerProcess => "per process",
        counterhal::hal::Scope::SystemWidePerCpu => "system wide per CPU",
    };
    format!(
        "{counters}{fixed}; {scope}; domains {}; multiplexing {}; {} generalized events",
        caps.domains,
        if caps.multiplexing { "yes" } else { "no" },
        caps.generalized.len()
    )
}

/// Runs `counterhal info`.
pub fn run(args: InfoArgs) -> Result<ExitCode, CliError> {
    let context = args.database.context()?;
    println!("counterhal {}", env!("CARGO_PKG_VERSION"));
    match read_trimmed("/proc/sys/kernel/osrelease") {
        Some(release) => println!("OS:      {OS} {release}"),
        None => println!("OS:      {OS}"),
    }
    match &context.cpu {
        Some(cpu) => println!("CPU:     {cpu}"),
        None => println!("CPU:     not detected"),
    }
    match &context.model {
        Some(model) => {
            let description = context
                .database
                .model(model)
                .map(|m| m.description.clone())
                .unwrap_or_default();
            println!("model:   {model} ({description})");
        }
        None => println!("model:   none in the event database matches this CPU (use --cpu MODEL)"),
    }
    if cfg!(target_os = "linux") {
        let paranoid = read_trimmed("/proc/sys/kernel/perf_event_paranoid")
            .unwrap_or_else(|| "unknown".into());
        println!("perf_event_paranoid: {paranoid}");
        let rdpmc = match read_trimmed("/sys/bus/event_source/devices/cpu/rdpmc") {
            Some(v) if v == "0" => "off (/sys/bus/event_source/devices/cpu/rdpmc = 0)".to_string(),
            Some(v) => format!("available (/sys/bus/event_source/devices/cpu/rdpmc = {v})"),
            None => "unavailable: no `cpu` PMU in /sys/bus/event_source/devices".to_string(),
        };
        println!("rdpmc:   {rdpmc}");
    }
    println!("backends:");
    let probes = counterhal::probe_all(&context);
    for kind in BackendKind::ALL {
        match probes.iter().find(|p| p.kind == kind) {
            Some(probe) => match &probe.result {
                Ok(backend) => {
                    let device = match backend.device() {
                        DeviceKind::Real => "real device",
                        DeviceKind::Model => "model",
                    };
                    println!(
                        "  {:<6} usable ({device}): {}",
                        kind.name(),
                        describe_capabilities(&backend.capabilities())
                    );
                }
                Err(e) => println!("  {:<6} unusable: {e}", kind.name()),
            },
            None => println!(
                "  {:<6} not built for {OS} (its model runs with `counterhal check --models`)",
                kind.name()
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}
