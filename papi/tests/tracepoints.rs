//! Tracepoints by name (`sched:sched_switch`), looked up and added by a caller with and
//! without the privilege to read the kernel's tracefs, where each tracepoint's id is: the
//! answer each name gets is what perf says of it for the same caller. Oracle: perf 6.1
//! (`perf stat -e NAME`), run as the same user on the same machine.

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::Path;
use std::process::Command;

/// The tracepoints asked about: two the kernel usually has and one no kernel has.
const NAMES: [&str; 3] = [
    "sched:sched_switch",
    "syscalls:sys_enter_read",
    "sched:no_such_event",
];

/// `program` run with `args`, as the unprivileged user nobody (`setpriv`) when `nobody`.
fn command(program: &Path, args: &[&str], nobody: bool) -> Command {
    let mut command = if nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(program);
        c
    } else {
        Command::new(program)
    };
    command.args(args).current_dir("/");
    command
}

/// PAPI's code for what perf says of tracepoint `name` for this caller: counted
/// (`PAPI_OK`), no permission to read it or to count it (`PAPI_EPERM`), no such tracepoint
/// (`PAPI_ENOEVNT`).
fn perfs_answer(name: &str, nobody: bool) -> i32 {
    let out = command(Path::new("perf"), &["stat", "-e", name, "true"], nobody)
        .output()
        .expect("perf runs");
    let text = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        0
    } else if text.contains("No permissions") || text.contains("perf_event_paranoid") {
        -15
    } else if text.contains("unknown tracepoint") {
        -7
    } else {
        panic!("perf's answer for {name} is none of counted, no permission, unknown:\n{text}")
    }
}

/// A tracepoint the caller may not read is `PAPI_EPERM` (perf: "No permissions to read
/// /sys/kernel/tracing/events/..."), not `PAPI_ENOEVNT`: the caller learns to ask for the
/// privilege. As root and as nobody, each name's lookup and add answer what perf says.
/// Oracle: perf 6.1 run as the same user.
#[test]
fn tracepoints_answer_as_perf_says() {
    if Command::new("perf").arg("--version").output().is_err() {
        skip!(
            Need::Tools,
            "perf is not installed (apt-get install linux-perf)"
        );
    }
    system_papi_or_skip!();
    if !crate::common::is_root() {
        skip!(Need::Privilege, "running as nobody (setpriv) needs root");
    }
    // perf mounts tracefs where it is absent; libpapi, as PAPI, mounts nothing: mounted first,
    // both see the same tracepoints.
    let _ = counterhal_conformance::fixtures::tracefs_mounted();
    let program = crate::common::c_program("lookup", "theirs", Path::new("/usr/include"), true);
    // Our libpapi where nobody can load it, whatever folder the workspace is in.
    let library = crate::common::library_dir().join("libpapi.so.7.0");
    let anyone = counterhal_conformance::fixtures::ForAnyone::new(
        "papi-tracepoints",
        &[(&library, "libpapi.so.7.0")],
    )
    .unwrap();
    for nobody in [false, true] {
        let out = command(&program, &NAMES, nobody)
            .env("LD_LIBRARY_PATH", &anyone.dir)
            .output()
            .expect("the program runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{out:?}");
        for name in NAMES {
            let perf = perfs_answer(name, nobody);
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("'{name}' ")))
                .unwrap_or_else(|| panic!("no line for {name}:\n{text}"));
            let add: i32 = line.rsplit(' ').next().unwrap().parse().unwrap();
            assert_eq!(
                add,
                perf,
                "{name} as {}: {line}",
                if nobody { "nobody" } else { "root" }
            );
            if perf != 0 {
                assert!(line.contains(&format!(" code {perf} ")), "{line}");
            }
        }
    }
}
