//! `counterhal check`: the conformance suite on this machine's backends (and, on request, on
//! the device models), and the JSON report a user on any OS can send back.

use counterhal_conformance::{CaseResult, Outcome, Report};
use counterhal_hal::{BackendKind, DeviceKind};
use serde_json::{Value, json};

use crate::{Context, OS};

/// A report for a backend that could not run any case, with the reason.
fn unavailable(kind: BackendKind, device: DeviceKind, reason: String) -> Report {
    Report {
        backend: kind.name().to_string(),
        device: device.name().to_string(),
        description: "not usable here".to_string(),
        cases: vec![CaseResult {
            case: "device_available",
            hardware: false,
            outcome: Outcome::Skip(reason),
        }],
    }
}

/// Runs the suite on every real backend compiled for this OS (or only `only`) and, when
/// `models` is set, on every device model. A backend that cannot be used here gets a report
/// whose single case is skipped with the reason.
pub fn run_all(context: &Context, only: Option<BackendKind>, models: bool) -> Vec<Report> {
    let wanted = |kind: BackendKind| only.is_none_or(|o| o == kind);
    let mut reports = Vec::new();
    if let Some(kind) = only
        && !crate::compiled_backends().contains(&kind)
        && !models
    {
        reports.push(unavailable(
            kind,
            DeviceKind::Real,
            format!(
                "the {kind} backend is not built for {OS}; its device model runs with --models"
            ),
        ));
    }
    for &kind in crate::compiled_backends().iter().filter(|k| wanted(**k)) {
        let report = match kind {
            BackendKind::Linux => {
                match counterhal_linux::probe(context.database.clone(), context.model.clone()) {
                    Ok(backend) => counterhal_conformance::run_quietly(
                        &counterhal_linux::conformance::LinuxSubject::new(backend),
                    ),
                    Err(e) => unavailable(kind, DeviceKind::Real, e.to_string()),
                }
            }
            BackendKind::Pctr => {
                match counterhal_pctr::probe(context.database.clone(), context.model.clone()) {
                    Ok(backend) => counterhal_conformance::run_quietly(
                        &counterhal_pctr::conformance::RealSubject::new(backend),
                    ),
                    Err(e) => unavailable(kind, DeviceKind::Real, e.to_string()),
                }
            }
            BackendKind::Msr => {
                match counterhal_msr::probe(context.database.clone(), context.model.clone()) {
                    Ok(backend) => counterhal_conformance::run_quietly(
                        &counterhal_msr::conformance::RealSubject::new(backend),
                    ),
                    Err(e) => unavailable(kind, DeviceKind::Real, e.to_string()),
                }
            }
        };
        reports.push(report);
    }
    if models {
        if wanted(BackendKind::Pctr) {
            for subject in counterhal_pctr::conformance::model_subjects(context.database.clone()) {
                reports.push(counterhal_conformance::run_quietly(&subject));
            }
        }
        if wanted(BackendKind::Msr) {
            for subject in counterhal_msr::conformance::model_subjects(context.database.clone()) {
                reports.push(counterhal_conformance::run_quietly(&subject));
            }
        }
    }
    reports
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The JSON document `counterhal check --json` writes: the machine, OS, CPU, and per backend
/// and device kind, each case's result and reason.
pub fn json_report(context: &Context, reports: &[Report]) -> Value {
    json!({
        "counterhal": env!("CARGO_PKG_VERSION"),
        "machine": read_trimmed("/proc/sys/kernel/hostname").or_else(|| read_trimmed("/etc/hostname")),
        "os": OS,
        "os_release": read_trimmed("/proc/sys/kernel/osrelease"),
        "arch": std::env::consts::ARCH,
        "cpu": context.cpu.as_ref().map(|c| json!({
            "vendor": c.vendor.name(),
            "family": c.family,
            "model": c.model,
            "stepping": c.stepping,
        })),
        "cpu_model": context.model,
        "reports": reports,
    })
}
