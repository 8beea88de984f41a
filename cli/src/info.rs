//! `counterhal info`: the OS, the CPU, and each backend with its status.

use counterhal_hal::BackendExt;
use std::fmt::Write as _;
use std::process::ExitCode;

use counterhal::{OS, REGISTRY};
use counterhal_hal::Backend;
use counterhal_hal::{Capabilities, DeviceKind};
use counterhal_system::System;

use crate::args::Table;
use crate::args::spec::Spec;
use crate::error::CliError;
use crate::options::{DatabaseArgs, Databased, cpu_model, descriptions, events_file};

/// Arguments of `counterhal info`.
#[derive(Debug, Default)]
pub struct InfoArgs {
    /// `--cpu-model`, `--events`, `--descriptions`.
    database: DatabaseArgs,
}

impl Databased for InfoArgs {
    fn database(&mut self) -> &mut DatabaseArgs {
        &mut self.database
    }
}

impl Table for InfoArgs {
    const NAME: &'static str = "info";
    const USAGE: &'static str = "counterhal info [--cpu-model MODEL] [--events FILE]";
    const OPTIONS: &'static [Spec<InfoArgs>] = &[cpu_model(), events_file(), descriptions()];
}

fn describe_capabilities(caps: &Capabilities, generalized: usize) -> String {
    let counters = match (caps.general_counters(), caps.counter_width()) {
        (Some(n), Some(w)) => format!("{n} general counters x {w} bits"),
        (Some(n), None) => format!("{n} general counters"),
        _ => "counters scheduled by the OS".to_string(),
    };
    let fixed = match caps.fixed_width() {
        Some(w) if caps.fixed_counters() > 0 => {
            format!(", {} fixed x {w} bits", caps.fixed_counters())
        }
        _ => String::new(),
    };
    let scope = match caps.scope() {
        counterhal_hal::Scope::SystemWidePerCpu => "system wide per CPU",
        _ => "per process",
    };
    format!(
        "takes {}; {counters}{fixed}; {scope}; domains {}; multiplexing {}; {generalized} generalized events",
        caps.accepts().families_text(),
        caps.domains(),
        multiplexing(caps),
    )
}

/// How a backend that cannot run here would multiplex, from its model: "; multiplexing
/// software, 4 ms slices" (nothing when it has no model).
fn model_multiplexing(
    registration: &counterhal::Registration,
    context: &counterhal::Context,
) -> String {
    registration
        .model
        .and_then(|model| model(context).ok())
        .map(|backend| format!("; multiplexing {}", multiplexing(backend.capabilities())))
        .unwrap_or_default()
}

/// How a backend multiplexes: "kernel", "software, N ms slices" or "none".
fn multiplexing(caps: &Capabilities) -> String {
    match (caps.multiplexing(), caps.multiplex_slice()) {
        (false, _) => "none".to_string(),
        (true, None) => "kernel".to_string(),
        (true, Some(slice)) if slice.subsec_micros() % 1_000 == 0 => {
            format!("software, {} ms slices", slice.as_millis())
        }
        (true, Some(slice)) => format!("software, {:.3} ms slices", slice.as_secs_f64() * 1_000.0),
    }
}

/// The kernel's core PMUs, found as perf finds them: `cpu`, or a PMU with a `cpus` file.
fn core_pmus(system: &System) -> Vec<String> {
    let pmus = system.pmus();
    let has_cpus = |name: &str| {
        let device = pmus.device(name).ok().flatten();
        device.is_some_and(|device| device.lists_core_cpus())
    };
    let mut cores = pmus.names();
    cores.retain(|name| name == "cpu" || has_cpus(name));
    cores
}

/// Whether user-space counter reads are allowed, per core PMU (`cores`): on x86 its `rdpmc`
/// file (0 off, 1 while an event is mapped, 2 always); on Arm64, whose PMUs grant it per event
/// (their `rdpmc` format), `kernel.perf_user_access` (0 off, 1 on).
fn rdpmc_status(system: &System, cores: &[String]) -> String {
    let settings: Vec<String> = cores
        .iter()
        .filter_map(|pmu| {
            let device = system.pmu(pmu)?;
            if device.has_format("rdpmc") {
                let access = system.perf_user_access()?;
                return Some(format!("{pmu}: kernel.perf_user_access = {access}"));
            }
            let value = device.rdpmc().ok()??;
            Some(format!("{pmu}/rdpmc = {value}"))
        })
        .collect();
    if settings.is_empty() {
        return format!("unavailable: {}", no_core_pmu(system));
    }
    let on = settings.iter().any(|s| !s.ends_with("= 0"));
    let verdict = if on { "available" } else { "off" };
    format!("{verdict} ({})", settings.join(", "))
}

/// What is said where the kernel has no core PMU.
fn no_core_pmu(system: &System) -> String {
    format!(
        "no core PMU in {} (no `cpu`, and no PMU with a `cpus` file)",
        system.pmus().path().display()
    )
}

/// The hierarchy each of serve's cgroup modes follows here, and what each cannot see.
#[cfg(feature = "serve")]
fn cgroups(out: &mut String, system: &System) {
    let hierarchies = counterhal_serve::hierarchy::Hierarchies::of(system);
    for (mode, bpf) in [("perf-event", false), ("bpf", true)] {
        let Some(followed) = hierarchies.followed(bpf) else {
            _ = writeln!(
                out,
                "cgroups: serve's {mode} mode finds no hierarchy to follow"
            );
            continue;
        };
        let kind = match hierarchies.perf_event_v1.as_deref() == Some(followed) {
            true => "cgroup v1, perf_event",
            false => "cgroup v2",
        };
        _ = writeln!(
            out,
            "cgroups: serve's {mode} mode follows {} ({kind})",
            followed.display()
        );
        for unseen in hierarchies.unseen(system, bpf) {
            _ = writeln!(out, "  not counted: {unseen}");
        }
    }
}

/// Runs `counterhal info`.
pub fn run(args: InfoArgs) -> Result<ExitCode, CliError> {
    let mut out = String::new();
    let context = args.database.context()?;
    let system = context.system();
    _ = writeln!(out, "counterhal {}", env!("CARGO_PKG_VERSION"));
    match system.os_release() {
        Some(release) => _ = writeln!(out, "OS:      {OS} {release}"),
        None => _ = writeln!(out, "OS:      {OS}"),
    }
    match &context.cpu() {
        Some(cpu) => _ = writeln!(out, "CPU:     {cpu}"),
        None => _ = writeln!(out, "CPU:     not detected"),
    }
    // Where the kernel has no core PMU (a VM without one), hardware events are refused
    // whatever the model says.
    let cores = if cfg!(target_os = "linux") {
        Some(core_pmus(system))
    } else {
        None
    };
    let no_core = cores.as_ref().is_some_and(Vec::is_empty);
    match context.model().and_then(|id| context.database().model(id)) {
        Some(model) => {
            let pmu = &model.pmu;
            _ = writeln!(out, "model:   {} ({})", model.id, model.description);
            let fixed = if pmu.fixed_counters > 0 {
                format!(", {} fixed x {} bits", pmu.fixed_counters, pmu.fixed_width)
            } else {
                String::new()
            };
            let counters = format!(
                "{} general counters x {} bits{fixed}",
                pmu.general_counters, pmu.counter_width
            );
            if no_core {
                _ = writeln!(
                    out,
                    "PMU:     none in the kernel here (the model's has {counters}, per the \
                     event database)"
                );
            } else {
                _ = writeln!(out, "PMU:     {counters} (per the event database)");
            }
        }
        None => {
            _ = writeln!(
                out,
                "model:   none in the event database matches this CPU (use --cpu-model MODEL)"
            )
        }
    }
    if cfg!(target_os = "linux") {
        let paranoid = system
            .perf_event_paranoid()
            .map_or_else(|| "unknown".into(), |level| level.to_string());
        _ = writeln!(out, "perf_event_paranoid: {paranoid}");
        let rdpmc = rdpmc_status(system, cores.as_deref().unwrap_or_default());
        _ = writeln!(out, "rdpmc:   {rdpmc}");
        #[cfg(feature = "serve")]
        cgroups(&mut out, system);
    }
    _ = writeln!(out, "backends:");
    let probes = counterhal::probe_all(&context);
    for registration in REGISTRY {
        let name = registration.name;
        match probes.iter().find(|p| p.registration.name == name) {
            Some(probe) => match &probe.result {
                Ok(backend) => {
                    let device = match backend.device() {
                        DeviceKind::Real => "real device",
                        _ => "model",
                    };
                    let caps =
                        describe_capabilities(backend.capabilities(), backend.generalized().len());
                    // The kernel's interface without a core PMU counts software events and
                    // tracepoints; its hardware events are refused.
                    let limit = if no_core && registration.interface == "perf_event_open" {
                        format!(
                            "; {}: hardware events are refused, software events and \
                             tracepoints count",
                            no_core_pmu(system)
                        )
                    } else {
                        String::new()
                    };
                    _ = writeln!(out, "  {name:<6} usable ({device}): {caps}{limit}");
                }
                Err(e) => {
                    _ = writeln!(
                        out,
                        "  {name:<6} unusable: {e}{}",
                        model_multiplexing(registration, &context)
                    )
                }
            },
            None => {
                _ = writeln!(
                    out,
                    "  {name:<6} runs on {}, not {OS} (its model runs with `counterhal check --models`){}",
                    registration.systems.join(", "),
                    model_multiplexing(registration, &context)
                )
            }
        }
    }
    crate::output::emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
