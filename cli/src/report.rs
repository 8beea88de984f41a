//! The conformance runs behind `counterhal check`: the suite on this machine's backends (and,
//! on request, on the device models), and the JSON report a user on any OS can send back.

use counterhal::{Context, OS, REGISTRY, Registration};
use counterhal_conformance::{CaseResult, Outcome, Report};
use counterhal_hal::DeviceKind;
use serde_json::{Value, json};

/// A report for a backend that could not run any case, with the reason.
fn unavailable(name: &str, device: DeviceKind, reason: String) -> Report {
    Report {
        backend: name.to_string(),
        device: device.name().to_string(),
        description: "not usable here".to_string(),
        cases: vec![CaseResult {
            case: "device_available",
            hardware: false,
            outcome: Outcome::Skip(reason),
        }],
    }
}

/// Runs the suite on the real device of every backend of this OS (or only `only`) and, when
/// `models` is set, on every device model. A backend that cannot be used here gets a report
/// whose single case is skipped with the reason.
pub fn run_all(
    context: &Context,
    only: Option<&'static Registration>,
    models: bool,
) -> Vec<Report> {
    let wanted = |r: &Registration| only.is_none_or(|o| o.name == r.name);
    let mut reports = Vec::new();
    if let Some(registration) = only
        && !registration.runs_here()
        && !models
    {
        reports.push(unavailable(
            registration.name,
            DeviceKind::Real,
            format!(
                "the {} backend runs on {}, not on {OS}; its device model runs with --models",
                registration.name,
                registration.systems.join(", ")
            ),
        ));
    }
    for registration in REGISTRY.iter().filter(|r| r.runs_here() && wanted(r)) {
        let report = (registration.conformance.real)(context)
            .unwrap_or_else(|e| unavailable(registration.name, DeviceKind::Real, e.to_string()));
        reports.push(report);
    }
    if models {
        for registration in REGISTRY.iter().filter(|r| wanted(r)) {
            reports.extend((registration.conformance.models)(context));
        }
    }
    reports
}

/// The JSON document `counterhal check --json` writes: the machine, OS, CPU, and per backend
/// and device kind, each case's result and reason.
pub fn json_report(context: &Context, reports: &[Report]) -> Value {
    let system = context.system();
    json!({
        "counterhal": env!("CARGO_PKG_VERSION"),
        "machine": system.hostname(),
        "os": OS,
        "os_release": system.os_release(),
        "arch": std::env::consts::ARCH,
        "cpu": context.cpu().map(|c| json!({
            "vendor": c.vendor.name(),
            "family": c.family,
            "model": c.model,
            "stepping": c.stepping,
        })),
        "cpu_model": context.model(),
        "reports": reports,
    })
}
