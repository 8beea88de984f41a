//! Who mounts tracefs through the face: `Setup::mount_tracefs` asks for it; a default setup
//! leaves the system as it was and says tracefs is not mounted. Each check runs in a mount
//! namespace of its own where tracefs is mounted nowhere, so that what it mounts stays there.
//!
//! Oracle: the kernel's list of this process's mounts (`/proc/self/mountinfo`) on Linux 6.18,
//! before and after resolving `syscalls:sys_enter_getpid` as root.

use counterhal::ErrorKind;
use counterhal::prelude::*;
use counterhal_conformance::fixtures::{tracefs_mounted_anywhere, without_tracefs};
use counterhal_conformance::skip;

#[test]
fn only_a_setup_that_asks_mounts_tracefs() {
    let output = match without_tracefs("tracefs_mount::setups_in_a_namespace_of_their_own") {
        Ok(output) => output,
        Err((need, why)) => skip!(need, "{why}"),
    };
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("checked: mounted only when asked"), "{text}");
}

/// The child of [`only_a_setup_that_asks_mounts_tracefs`], in its mount namespace.
#[test]
#[ignore = "run by only_a_setup_that_asks_mounts_tracefs in a mount namespace of its own"]
fn setups_in_a_namespace_of_their_own() {
    assert!(!tracefs_mounted_anywhere(), "tracefs was unmounted here");
    let chosen = open_default().unwrap();
    let refused = chosen.resolve("syscalls:sys_enter_getpid").unwrap_err();
    assert!(
        !tracefs_mounted_anywhere(),
        "a default setup mounted tracefs"
    );
    assert_eq!(refused.kind(), ErrorKind::InvalidEvent, "{refused}");
    assert!(
        refused
            .hint()
            .unwrap_or("")
            .contains("Setup::mount_tracefs"),
        "{refused}"
    );
    let asked = Setup::new().mount_tracefs(true).open().unwrap();
    let resolved = asked.resolve("syscalls:sys_enter_getpid");
    assert!(resolved.is_ok(), "{resolved:?}");
    assert!(
        tracefs_mounted_anywhere(),
        "asked to, the setup mounted tracefs"
    );
    println!("checked: mounted only when asked");
}
