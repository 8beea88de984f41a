//! `PAPI_DOMAIN` changes what a set counts: perf::PAGE-FAULTS over 1,000 fresh pages touched
//! from user mode (tests/c/domains.c), counted in the user, kernel and all domains. Oracles:
//! the kernel's exact count (one fault per fresh page, in user mode) and perf's own `:u` and
//! `:k` modifiers on the same program (`perf stat -e page-faults:u,page-faults:k`), which
//! attribute the touching program's faults to user mode the same way.

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::Path;
use std::process::Command;

#[test]
fn the_domain_decides_what_a_software_event_counts() {
    system_papi_or_skip!();
    let program = crate::common::c_program(
        "domains",
        "ours",
        &crate::common::manifest().join("include"),
        true,
    );
    let out = crate::common::run(&program, &[], true);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let count = |domain: &str| -> i64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{domain} ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {domain} count in:\n{text}"))
    };
    if text.contains("add -") {
        skip!(
            Need::System,
            "perf's software events do not open here: {text}"
        );
    }
    assert_eq!(count("user"), 1000, "{text}");
    assert_eq!(count("kernel"), 0, "{text}");
    assert_eq!(count("all"), 1000, "{text}");

    let Ok(perf) = Command::new("perf")
        .args(["stat", "-x,", "-e", "page-faults:u,page-faults:k", "--"])
        .arg(&program)
        .arg("touch")
        .env("LD_LIBRARY_PATH", crate::common::library_dir())
        .output()
    else {
        skip!(
            Need::Tools,
            "perf is not installed (apt-get install linux-perf)"
        );
    };
    let report = String::from_utf8_lossy(&perf.stderr).into_owned();
    let perf_count = |event: &str| -> i64 {
        report
            .lines()
            .find(|l| l.contains(event))
            .and_then(|l| l.split(',').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {event} in perf's report:\n{report}"))
    };
    // The whole process under perf: the 1,000 touched pages and its start-up, in user mode;
    // few in kernel mode, as ours.
    assert!(perf_count("page-faults:u") >= 1000, "{report}");
    assert!(perf_count("page-faults:k") < 100, "{report}");
}

/// `PAPI_GRANUL` and `PAPI_set_granularity` (tests/c/granularity.c), built against Debian's
/// papi.h and run on Debian's PAPI 7.0 (the oracle) and on ours, as root and as `nobody`:
/// every answer must be PAPI's, and a set of `PAPI_GRN_SYS` must count every process on the
/// caller's CPU (a child's 2,000 page faults there; the kernel's exact count), as PAPI 7.0's
/// perf_event component binds it (`_papi_getcpu()`). Two answers differ by design, where PAPI
/// accepts `PAPI_GRN_SYS` and then counts something else: set after an event is added, PAPI
/// keeps the thread's counters already open; as the default, PAPI opens on no CPU and its
/// add fails. Ours counts the CPU both times (or answers PAPI_EPERM where the user may not).
#[test]
fn system_granularity_counts_the_callers_cpu() {
    system_papi_or_skip!();
    papi_perf_event_or_skip!();
    let program =
        crate::common::c_program("granularity", "theirs", Path::new("/usr/include"), true);
    let lines = |out: std::process::Output| -> Vec<String> {
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let compare = |theirs: Vec<String>, ours: Vec<String>, privileged: bool| {
        assert!(theirs.len() > 40, "{theirs:?}");
        assert_eq!(theirs.len(), ours.len(), "{theirs:#?}\n{ours:#?}");
        for (t, o) in theirs.iter().zip(&ours) {
            let by_design = t.starts_with("after an event: st") || t.starts_with("default: ");
            if !by_design {
                assert_eq!(t, o, "PAPI 7.0 vs ours");
                continue;
            }
            let expected = match (o.split(':').nth(1).map(str::trim), privileged) {
                (Some(s), true) if s.starts_with("stop") => "stop 0 counted 1",
                (Some(s), true) if s.starts_with("add") => "add 0",
                (Some(s), true) if s.starts_with("start") => "start 0",
                (Some(s), false) if s.starts_with("add") => "add -15",
                (Some(s), false) if s.starts_with("start") && o.starts_with("after") => "start -15",
                (Some(s), false) if s.starts_with("start") => "start -1",
                (Some(s), false) if s.starts_with("stop") => "stop -9 counted 0",
                _ => t.split_once(": ").unwrap().1,
            };
            assert!(o.ends_with(expected), "ours: {o}; expected {expected}");
        }
    };
    // As root: PAPI's own answer shows that the child's faults are seen on the CPU.
    let theirs = lines(crate::common::run(&program, &[], false));
    assert!(
        theirs.contains(&"after a component: stop 0 counted 1".to_owned()),
        "{theirs:#?}"
    );
    let privileged = theirs.contains(&"after a component: add 0".to_owned());
    compare(
        theirs,
        lines(crate::common::run(&program, &[], true)),
        privileged,
    );

    // As nobody, at this machine's perf_event_paranoid.
    if !crate::common::is_root() {
        skip!(
            Need::Privilege,
            "running the PAPI program as nobody needs root to drop to that user"
        );
    }
    let library = program.with_file_name("libpapi.so.7.0");
    std::fs::copy(
        crate::common::library_dir().join("libpapi.so.7.0"),
        &library,
    )
    .unwrap();
    let as_nobody = |ours: bool| {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(&program);
        command.uid(65534).gid(65534).current_dir("/");
        if ours {
            command.env("LD_LIBRARY_PATH", program.parent().unwrap());
        }
        command.output().expect("the program runs as nobody")
    };
    let theirs = lines(as_nobody(false));
    let privileged = theirs.contains(&"after a component: add 0".to_owned());
    compare(theirs, lines(as_nobody(true)), privileged);
}
