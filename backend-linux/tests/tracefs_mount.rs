//! Who mounts tracefs: a backend mounts it to resolve a tracepoint only where asked
//! (`LinuxBackend::set_mount_tracefs`), never by default. Each check runs in a mount
//! namespace of its own where tracefs is mounted nowhere, so that what it mounts stays there.
//!
//! Oracle: the kernel's list of this process's mounts (`/proc/self/mountinfo`) on Linux 6.18,
//! before and after resolving `syscalls:sys_enter_getpid` as root.

use std::sync::Arc;

use counterhal_conformance::fixtures::{tracefs_mounted_anywhere, without_tracefs};
use counterhal_conformance::skip;
use counterhal_hal::{Backend, ErrorKind};

/// A default backend resolving a tracepoint leaves tracefs unmounted and says it is not
/// mounted; one allowed to mount it mounts it at `/sys/kernel/tracing` and resolves the name.
#[test]
fn only_a_backend_asked_to_mounts_tracefs() {
    let output = match without_tracefs("tracefs_mount::resolving_with_and_without_mounting") {
        Ok(output) => output,
        Err((need, why)) => skip!(need, "{why}"),
    };
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("checked: mounted only when asked"), "{text}");
}

/// The child of [`only_a_backend_asked_to_mounts_tracefs`], in its mount namespace.
#[test]
#[ignore = "run by only_a_backend_asked_to_mounts_tracefs in a mount namespace of its own"]
fn resolving_with_and_without_mounting() {
    assert!(!tracefs_mounted_anywhere(), "tracefs was unmounted here");
    let db = Arc::new(counterhal_events::Database::shipped().unwrap());
    let mut linux = counterhal_linux::probe(db, None, counterhal_system::System::host()).unwrap();
    let refused = linux.resolve("syscalls:sys_enter_getpid").unwrap_err();
    assert!(
        !tracefs_mounted_anywhere(),
        "a default backend mounted tracefs"
    );
    assert_eq!(refused.kind(), ErrorKind::InvalidEvent, "{refused}");
    assert!(
        refused.message().contains("tracefs is not mounted"),
        "{refused}"
    );
    assert!(
        refused.hint().unwrap_or("").contains("mount -t tracefs"),
        "{refused}"
    );
    linux.set_mount_tracefs(true);
    let resolved = linux.resolve("syscalls:sys_enter_getpid");
    assert!(resolved.is_ok(), "{resolved:?}");
    assert!(
        tracefs_mounted_anywhere(),
        "asked to, the backend mounted tracefs"
    );
    println!("checked: mounted only when asked");
}
