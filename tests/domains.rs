//! What an unprivileged caller's events count, and how a harness learns it: at
//! `perf_event_paranoid` 2, an event without a modifier falls back to user space
//! (`EventSet::counted_domain` says so beside the note), `OpenOptions::strict_domain` refuses
//! instead, and a tracepoint counted in the kernel is refused asking for what the kernel
//! checks (1 or lower), while in user space it counts at 2.
//!
//! Oracle: the kernel's permission checks, on Linux 6.18 here (perf_event_open(2): counting
//! the kernel needs `perf_event_paranoid` 1 or lower; a tracepoint counted without raw
//! samples needs no more), with 100 `getpid` calls counted by `syscalls:sys_enter_getpid`.

use counterhal::ErrorKind;
use counterhal::OpenOptions;
use counterhal::prelude::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// As `nobody` (the test drops to it in a child), a default set falls back and says which
/// domain it counted; a strict one is refused, as a strict command's events are; the
/// tracepoint by id counts in user space, and is refused in the kernel with the hint that
/// asks for 1, not -1.
#[test]
fn a_strict_domain_refuses_the_fallback_a_default_set_reports() {
    use std::os::unix::process::CommandExt;
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok());
    if paranoid != Some(2) {
        skip!(Need::System, "perf_event_paranoid is {paranoid:?}, not 2");
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        skip!(Need::Privilege, "becoming nobody needs root");
    }
    let root = match counterhal_conformance::fixtures::tracefs_mounted() {
        Ok(root) => root,
        Err((need, why)) => skip!(need, "{why}"),
    };
    let id_file = format!("{root}/events/syscalls/sys_enter_getpid/id");
    let Ok(id) = std::fs::read_to_string(&id_file) else {
        skip!(Need::System, "no {id_file} here");
    };
    // This test binary where nobody can run it, whatever folder the workspace is in.
    let anyone = counterhal_conformance::fixtures::ForAnyone::new(
        "domains",
        &[(&std::env::current_exe().unwrap(), "domains")],
    )
    .unwrap();
    let output = std::process::Command::new(anyone.path("domains"))
        .args([
            "--ignored",
            "--exact",
            "domains::as_nobody",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("COUNTERHAL_DOMAINS_TRACEPOINT", id.trim())
        .current_dir("/")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    eprintln!("{text}");
    assert!(output.status.success(), "{text}");
    assert!(text.contains("as nobody: checked"), "{text}");
}

/// The child of [`a_strict_domain_refuses_the_fallback_a_default_set_reports`], as `nobody`.
#[test]
#[ignore = "run as nobody by a_strict_domain_refuses_the_fallback_a_default_set_reports"]
fn as_nobody() {
    let id = std::env::var("COUNTERHAL_DOMAINS_TRACEPOINT").expect("the tracepoint's id");
    let tracepoint = format!("tracepoint/config={id}/");
    let backend = open_default().unwrap();
    let this = Target::this_thread();
    // The default: context switches counted in user space only, where none happen.
    let names = ["context-switches", tracepoint.as_str()];
    let mut set = backend
        .open_named(&names, &this, &OpenOptions::default())
        .unwrap();
    assert!(set.note().is_some(), "a note on the fallback");
    for index in 0..2 {
        let domain = set.counted_domain(index).unwrap();
        assert!(
            domain.contains(Domain::USER) && !domain.contains(Domain::KERNEL),
            "event {index} counts {domain}"
        );
    }
    assert_eq!(set.counted_domain(2), None);
    set.enable().unwrap();
    for _ in 0..100 {
        // SAFETY: getpid has no preconditions (and glibc does not cache it).
        std::hint::black_box(unsafe { libc::getpid() });
    }
    std::thread::sleep(std::time::Duration::from_millis(10));
    set.disable().unwrap();
    let readings = set.read_to_vec().unwrap();
    assert_eq!(
        readings[1].value, 100,
        "getpid calls in user space: {readings:?}"
    );
    // Strict: refused, with the setting named, for the software event and the tracepoint.
    let strict = OpenOptions::default().strict_domain(true);
    let refused = backend.open_named(&["context-switches"], &this, &strict);
    let e = refused.expect_err("a strict domain refuses the fallback");
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    assert!(
        e.hint().unwrap_or("").contains("perf_event_paranoid is 2"),
        "{e}"
    );
    let e = backend
        .open_named(&[tracepoint.as_str()], &this, &strict)
        .expect_err("a tracepoint counted in the kernel is refused at 2");
    let hint = e.hint().unwrap_or("");
    assert!(hint.contains("needs 1 or lower"), "{e}");
    assert!(!hint.contains("need -1"), "{e}");
    // The tracepoint asked for in user space counts at 2 as it is, strict or not.
    let user = format!("{tracepoint}u");
    let mut set = backend
        .open_named(&[user.as_str()], &this, &strict)
        .unwrap();
    set.enable().unwrap();
    for _ in 0..100 {
        // SAFETY: as above.
        std::hint::black_box(unsafe { libc::getpid() });
    }
    set.disable().unwrap();
    assert_eq!(set.read_to_vec().unwrap()[0].value, 100);
    assert_eq!(set.note(), None);
    // A strict command: its event is refused, not counted in user space.
    let counted = backend.count_command(
        &["context-switches"],
        std::process::Command::new("true"),
        &strict,
    );
    let refused = match &counted {
        Ok(count) => count.readings[0]
            .as_ref()
            .is_err_and(|e| e.kind() == ErrorKind::PermissionDenied),
        Err(e) => e.kind() == ErrorKind::PermissionDenied,
    };
    assert!(refused, "{counted:?}");
    // A sampler falls back as a set does, and says so; strict, it is refused.
    let sampling = SampleOptions::period(1, SampleFields::profile());
    let sampler = backend
        .open_sampler(&["context-switches"], &this, &sampling)
        .unwrap();
    let domain = sampler.counted_domain(0).unwrap();
    assert!(!domain.contains(Domain::KERNEL), "it samples {domain}");
    let e = backend
        .open_sampler(&["context-switches"], &this, &sampling.strict_domain(true))
        .expect_err("a strict sampler refuses the fallback");
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    println!("as nobody: checked; the tracepoint in the kernel: {hint}");
}
