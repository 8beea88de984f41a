//! Tracepoints (`subsystem:name`) found through tracefs.

use std::fs;
use std::path::{Path, PathBuf};

use counterhal_hal::{Error, ErrorKind, PerfEncoding, Result};

use crate::sys::TYPE_TRACEPOINT;

/// Where tracefs is usually mounted, in the order they are tried.
pub const DEFAULT_ROOTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Whether `name` has the shape of a tracepoint: `subsystem:event`, lower-case identifiers.
pub fn looks_like_tracepoint(name: &str) -> bool {
    let Some((system, event)) = name.split_once(':') else {
        return false;
    };
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    ident(system) && ident(event)
}

/// The first root that holds an `events/` directory.
pub fn mounted_root(roots: &[PathBuf]) -> Option<&Path> {
    roots
        .iter()
        .map(PathBuf::as_path)
        .find(|root| root.join("events").is_dir())
}

/// Resolves `subsystem:event` to a tracepoint encoding (type 2, config = its id), or `None`
/// when no mounted tracefs knows it.
///
/// # Errors
/// [`ErrorKind::InvalidEvent`] when the `id` file is unreadable or malformed.
pub fn resolve(roots: &[PathBuf], name: &str) -> Result<Option<PerfEncoding>> {
    if !looks_like_tracepoint(name) {
        return Ok(None);
    }
    let Some(root) = mounted_root(roots) else {
        return Ok(None);
    };
    let (system, event) = name.split_once(':').unwrap_or((name, ""));
    let id_path = root.join("events").join(system).join(event).join("id");
    if !id_path.exists() {
        return Ok(None);
    }
    let text = fs::read_to_string(&id_path).map_err(|e| {
        Error::new(
            ErrorKind::PermissionDenied,
            format!("{name}: cannot read {}: {e}", id_path.display()),
        )
        .with_hint("tracepoint ids are readable by root (or with tracefs permissions relaxed)")
    })?;
    let id: u64 = text.trim().parse().map_err(|_| {
        Error::invalid_event(format!(
            "{name}: malformed tracepoint id in {}",
            id_path.display()
        ))
    })?;
    let mut encoding = PerfEncoding::new(TYPE_TRACEPOINT, id);
    encoding.pmu = Some("tracepoint".to_string());
    Ok(Some(encoding))
}

/// The error for a tracepoint-shaped name that no tracefs knows.
pub fn not_found(roots: &[PathBuf], name: &str) -> Error {
    match mounted_root(roots) {
        Some(root) => Error::invalid_event(format!(
            "unknown event `{name}` (and no tracepoint of that name in {}/events)",
            root.display()
        ))
        .with_hint(format!(
            "list tracepoints with `ls {}/events/<subsystem>`",
            root.display()
        )),
        None => Error::invalid_event(format!(
            "unknown event `{name}`; tracefs is not mounted, so tracepoints cannot be resolved"
        ))
        .with_hint("mount it: mount -t tracefs nodev /sys/kernel/tracing"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape() {
        assert!(looks_like_tracepoint("syscalls:sys_enter_getpid"));
        assert!(looks_like_tracepoint("sched:sched_switch"));
        assert!(!looks_like_tracepoint("INST_RETIRED:u"));
        assert!(!looks_like_tracepoint("mem:0x1000:x"));
        assert!(!looks_like_tracepoint("cycles"));
        assert!(!looks_like_tracepoint("a:"));
    }

    #[test]
    fn fixture_root() {
        let dir = std::env::temp_dir().join(format!("counterhal-tracefs-{}", std::process::id()));
        let event = dir.join("events/demo/hello");
        fs::create_dir_all(&event).unwrap();
        fs::write(event.join("id"), "123\n").unwrap();
        let roots = vec![PathBuf::from("/nonexistent/tracing"), dir.clone()];
        let e = resolve(&roots, "demo:hello").unwrap().unwrap();
        assert_eq!((e.type_, e.config), (2, 123));
        assert_eq!(resolve(&roots, "demo:absent").unwrap(), None);
        assert!(
            not_found(&roots, "demo:absent")
                .to_string()
                .contains("demo:absent")
        );
        let none = vec![PathBuf::from("/nonexistent")];
        assert!(
            not_found(&none, "a:b")
                .hint()
                .unwrap()
                .contains("mount -t tracefs")
        );
        fs::write(event.join("id"), "x\n").unwrap();
        assert!(resolve(&roots, "demo:hello").is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
