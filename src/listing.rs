//! Listing events by source: the database's native events and each backend's own names.

use std::path::Path;

use counterhal_events::CpuModel;
use counterhal_hal::BackendKind;

/// The tracefs mount points, in the order the kernel documents them.
const TRACEFS: [&str; 2] = [
    "/sys/kernel/tracing/events",
    "/sys/kernel/debug/tracing/events",
];

/// Subdirectory names of `dir`, sorted; empty when it cannot be read.
fn subdirectories(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// The names only one backend knows, with a description: on Linux the dynamic PMUs' event
/// aliases (`msr/tsc/`) and the tracepoints (`syscalls:sys_enter_getpid`).
pub fn backend_events(kind: BackendKind) -> Vec<(String, String)> {
    let mut events = Vec::new();
    if kind != BackendKind::Linux {
        return events;
    }
    let pmus = Path::new("/sys/bus/event_source/devices");
    for pmu in std::fs::read_dir(pmus)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
    {
        let pmu_name = pmu.file_name().to_string_lossy().into_owned();
        let Ok(aliases) = std::fs::read_dir(pmu.path().join("events")) else {
            continue;
        };
        let mut names: Vec<(String, String)> = aliases
            .filter_map(|e| e.ok())
            .filter_map(|alias| {
                let name = alias.file_name().into_string().ok()?;
                // `.scale`, `.unit` and similar files qualify an alias; they are not events.
                if name.contains('.') {
                    return None;
                }
                let terms = std::fs::read_to_string(alias.path()).unwrap_or_default();
                Some((
                    format!("{pmu_name}/{name}/"),
                    format!("{pmu_name} PMU: {}", terms.trim()),
                ))
            })
            .collect();
        names.sort();
        events.extend(names);
    }
    if let Some(root) = TRACEFS.iter().map(Path::new).find(|p| p.is_dir()) {
        for system in subdirectories(root) {
            for name in subdirectories(&root.join(&system)) {
                if root.join(&system).join(&name).join("id").is_file() {
                    events.push((format!("{system}:{name}"), "tracepoint".to_string()));
                }
            }
        }
    }
    events
}

/// The native events a CPU model defines, with their descriptions.
pub fn native_events(model: &CpuModel) -> Vec<(String, String)> {
    model
        .events()
        .iter()
        .map(|event| (event.name.clone(), event.description.clone()))
        .collect()
}
