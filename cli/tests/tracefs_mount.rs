//! The command mounts tracefs where it is absent, as root, as perf does (the library only
//! where asked): `stat` of the getpid tracepoint counts with tracefs mounted nowhere before.
//! Run in a mount namespace of its own, so that what it mounts stays there.
//!
//! Oracle: the kernel's list of mounts (`/proc/self/mountinfo`) on Linux 6.18, and its exact
//! count of the tracepoint's hits (`true` calls getpid as often in every run, as perf's
//! `stat -e syscalls:sys_enter_getpid -- true` shows: a count, not `<not supported>`).

use counterhal_conformance::fixtures::{tracefs_mounted_anywhere, without_tracefs};
use counterhal_conformance::skip;

use crate::common::counterhal;

#[test]
fn stat_mounts_tracefs_for_a_tracepoint_where_it_is_absent() {
    let output = match without_tracefs("tracefs_mount::stat_in_a_namespace_of_its_own") {
        Ok(output) => output,
        Err((need, why)) => skip!(need, "{why}"),
    };
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("checked: the command mounted tracefs"),
        "{text}"
    );
}

/// The child of [`stat_mounts_tracefs_for_a_tracepoint_where_it_is_absent`].
#[test]
#[ignore = "run by stat_mounts_tracefs_for_a_tracepoint_where_it_is_absent in a mount namespace"]
fn stat_in_a_namespace_of_its_own() {
    assert!(!tracefs_mounted_anywhere(), "tracefs was unmounted here");
    let out = counterhal(&[
        "stat",
        "-x,",
        "-e",
        "syscalls:sys_enter_getpid",
        "--",
        "true",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let count = stderr
        .lines()
        .find(|l| l.contains("syscalls:sys_enter_getpid"))
        .and_then(|l| l.split(',').next())
        .and_then(|v| v.parse::<u64>().ok());
    assert!(count.is_some(), "a count of the tracepoint: {stderr}");
    assert!(tracefs_mounted_anywhere(), "the command mounted tracefs");
    println!("checked: the command mounted tracefs");
}
