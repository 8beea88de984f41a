//! The held child as a command sees it: its signal state at exec, its exit status and time,
//! and the errors a command that cannot run gives. Each test that starts a command holds
//! [`shared`], so that no test changing the signal dispositions or the environment the
//! command inherits runs meanwhile; the one that counts its page faults runs [`alone`](crate::process_state::alone).

use std::ffi::OsString;
use std::time::{Duration, Instant};

use counterhal_hal::ErrorKind;
use counterhal_process::{WaitingChild, exit_code_for, is_child_of_this_process};

use crate::process_state::shared;

fn argv(words: &[&str]) -> Vec<OsString> {
    words.iter().map(OsString::from).collect()
}

/// The hex mask on `name`'s line of a `/proc/PID/status` text.
fn mask(status: &str, name: &str) -> u64 {
    let line = status.lines().find(|l| l.starts_with(name)).expect(name);
    u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
}

#[test]
fn the_command_starts_with_sigpipe_at_its_default_and_no_signal_blocked() {
    let _process = shared();
    // This test process ignores SIGPIPE (Rust's runtime does); the command must not.
    let out = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-sigstate-{}", std::process::id()));
    let script = format!("cat /proc/self/status > {}", out.display());
    let mut child = WaitingChild::spawn(&argv(&["sh", "-c", &script])).unwrap();
    child.release().unwrap();
    let exit = child.wait().unwrap();
    assert_eq!(exit.exit_code(), 0);
    let status = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_file(&out).ok();
    assert_eq!(
        mask(&status, "SigIgn:") & (1 << (libc_sigpipe() - 1)),
        0,
        "{status}"
    );
    assert_eq!(mask(&status, "SigBlk:"), 0, "{status}");
}

/// SIGPIPE's number on Linux and the BSDs.
fn libc_sigpipe() -> u32 {
    13
}

#[test]
fn the_held_child_is_ours_and_ends_as_a_shell_reports() {
    let _process = shared();
    let mut child = WaitingChild::spawn(&argv(&["sh", "-c", "exit 7"])).unwrap();
    assert_eq!(is_child_of_this_process(child.pid()).ok(), Some(true));
    assert_eq!(is_child_of_this_process(1).ok(), Some(false));
    child.release().unwrap();
    let exit = child.wait().unwrap();
    assert_eq!(
        (exit.exit_code(), exit.describe().as_str()),
        (7, "exited with status 7")
    );

    let mut killed = WaitingChild::spawn(&argv(&["sh", "-c", "kill -KILL $$"])).unwrap();
    killed.release().unwrap();
    let exit = killed.wait().unwrap();
    assert_eq!(exit.exit_code(), 137);
    assert!(exit.elapsed < Duration::from_secs(60));
}

#[test]
fn a_command_that_cannot_run_says_why_with_a_shells_code() {
    let _process = shared();
    let missing = WaitingChild::spawn(&argv(&["no-such-program-anywhere"])).unwrap_err();
    assert_eq!(
        (missing.kind(), exit_code_for(&missing)),
        (ErrorKind::NotFound, 127)
    );
    let mut directory = WaitingChild::spawn(&argv(&["/"])).unwrap();
    let denied = directory.release().unwrap_err();
    assert_eq!(denied.kind(), ErrorKind::PermissionDenied, "{denied}");
    assert_eq!(exit_code_for(&denied), 126);
    assert!(denied.hint().is_some(), "{denied}");
    assert_eq!(
        is_child_of_this_process(directory.pid()).ok(),
        Some(false),
        "the child that failed to exec is reaped"
    );
    let empty = WaitingChild::spawn(&[]).unwrap_err();
    assert_eq!(empty.kind(), ErrorKind::InvalidInput);
    let nul = WaitingChild::spawn(&argv(&["sh", "a\0b"])).unwrap_err();
    assert_eq!(nul.kind(), ErrorKind::InvalidInput);
}

#[test]
fn a_child_dropped_unreleased_is_reaped() {
    let _process = shared();
    let child = WaitingChild::spawn(&argv(&["sleep", "60"])).unwrap();
    let pid = child.pid();
    drop(child);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} left behind"
    );
    // Oracle: the kernel's waitid, which names no such child once it is reaped.
    assert_eq!(is_child_of_this_process(pid).ok(), Some(false));
}

#[test]
fn the_command_does_not_run_before_its_release() {
    let _process = shared();
    let mark = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-held-{}", std::process::id()));
    let script = format!("echo ran > {}", mark.display());
    for launch in [
        counterhal_process::Launch::Argv(argv(&["sh", "-c", &script])),
        counterhal_process::Launch::Command({
            let mut command = std::process::Command::new("sh");
            command.args(["-c", &script]);
            command
        }),
    ] {
        let what = format!("{launch:?}");
        let mut child = WaitingChild::launch(launch).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!mark.exists(), "{what}: ran while held");
        child.release().unwrap();
        assert_eq!(child.wait().unwrap().exit_code(), 0, "{what}");
        assert!(mark.exists(), "{what}: did not run once released");
        std::fs::remove_file(&mark).unwrap();
    }
}

#[test]
fn a_command_keeps_the_environment_directory_and_streams_it_was_given() {
    let _process = shared();
    use std::io::Read;
    let mut command = std::process::Command::new("sh");
    command
        .args(["-c", "echo $COUNTERHAL_TEST_VALUE; pwd"])
        .env("COUNTERHAL_TEST_VALUE", "42")
        .current_dir("/")
        .stdout(std::process::Stdio::piped());
    let mut child = counterhal_process::WaitingChild::from_command(command).unwrap();
    assert!(child.child().is_none(), "no handle before the release");
    child.release().unwrap();
    let mut out = String::new();
    let mut stdout = child.child().unwrap().stdout.take().unwrap();
    stdout.read_to_string(&mut out).unwrap();
    assert_eq!(child.wait().unwrap().exit_code(), 0);
    assert_eq!(out, "42\n/\n");
}

#[test]
fn try_wait_says_nothing_while_the_command_runs_and_how_it_ended_after() {
    let _process = shared();
    let mut child = WaitingChild::spawn(&argv(&["sleep", "30"])).unwrap();
    assert_eq!(
        child.try_wait().unwrap_err().kind(),
        ErrorKind::InvalidInput,
        "not released yet"
    );
    child.release().unwrap();
    assert_eq!(child.try_wait().unwrap(), None, "it sleeps");
    let exit = child.terminate(Duration::from_secs(30)).unwrap();
    assert_eq!(exit.exit_code(), 128 + 15, "{}", exit.describe());
    assert_eq!(child.try_wait().unwrap(), Some(exit), "kept once reaped");
    assert_eq!(child.wait().unwrap(), exit, "wait returns the same end");

    let mut quick = WaitingChild::spawn(&argv(&["sh", "-c", "exit 3"])).unwrap();
    quick.release().unwrap();
    let exit = loop {
        if let Some(exit) = quick.try_wait().unwrap() {
            break exit;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(exit.exit_code(), 3);
}

/// A wait in steps says nothing while the command runs and sees its end as it happens.
/// Oracle: the clock (`sleep 0.3` ends 0.3 s after its release) and its exit status.
#[test]
fn wait_for_returns_at_its_timeout_or_as_the_command_ends() {
    let _process = shared();
    let mut child = WaitingChild::spawn(&argv(&["sleep", "0.3"])).unwrap();
    child.release().unwrap();
    let started = Instant::now();
    assert_eq!(child.wait_for(Duration::from_millis(50)).unwrap(), None);
    let step = started.elapsed();
    assert!(
        step >= Duration::from_millis(50) && step < Duration::from_millis(250),
        "{step:?}"
    );
    let exit = child
        .wait_for(Duration::from_secs(30))
        .unwrap()
        .expect("ended");
    let waited = started.elapsed();
    assert_eq!(exit.exit_code(), 0, "{}", exit.describe());
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    assert!(
        exit.elapsed >= Duration::from_millis(290),
        "{:?}",
        exit.elapsed
    );
    assert_eq!(
        child.wait_for(Duration::ZERO).unwrap(),
        Some(exit),
        "kept once reaped"
    );
}

/// A variable named with a `=` is refused, as Python's subprocess refuses it ("illegal
/// environment variable name"); the standard library would pass `A=B=c`, which the command
/// reads as `A` set to `B=c`. Oracle: the command's own environment (`env`) for a value that
/// holds a `=`, which is allowed.
#[test]
fn an_environment_variable_named_with_an_equals_sign_is_refused() {
    let _process = shared();
    use std::io::Read;
    let mut bad = std::process::Command::new("env");
    bad.env_clear().env("A=B", "c");
    let Err(error) = WaitingChild::from_command(bad) else {
        panic!("started with a variable named A=B");
    };
    assert_eq!(error.kind(), ErrorKind::InvalidInput);
    assert!(error.message().contains("`A=B`"), "{error}");
    let mut good = std::process::Command::new("env");
    good.env_clear()
        .env("A", "B=c")
        .stdout(std::process::Stdio::piped());
    let mut child = WaitingChild::from_command(good).unwrap();
    child.release().unwrap();
    let mut out = String::new();
    let mut stdout = child.child().unwrap().stdout.take().unwrap();
    stdout.read_to_string(&mut out).unwrap();
    assert_eq!(child.wait().unwrap().exit_code(), 0);
    assert_eq!(out, "A=B=c\n");
}

/// A released shell that runs `trap` and then loops, returned once the trap is set: the shell
/// makes a mark file after it, which this waits for (a signal sent before would find the
/// shell's default disposition).
fn looping_shell_with(trap: &str, name: &str) -> WaitingChild {
    let mark = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-trap-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&mark);
    let script = format!(
        "{trap}; : > {}; while :; do sleep 0.01; done",
        mark.display()
    );
    let mut child = WaitingChild::spawn(&argv(&["sh", "-c", &script])).unwrap();
    child.release().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !mark.exists() {
        assert!(Instant::now() < deadline, "the shell never ran `{trap}`");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::fs::remove_file(&mark).ok();
    child
}

#[test]
fn terminate_sends_sigterm_first_and_sigkill_after_the_grace() {
    let _process = shared();
    // A command that cleans up on SIGTERM ends with its own status.
    let mut polite = looping_shell_with("trap 'exit 9' TERM", "polite");
    let exit = polite.terminate(Duration::from_secs(30)).unwrap();
    assert_eq!(exit.exit_code(), 9, "{}", exit.describe());

    // One that ignores SIGTERM is killed once the grace is over.
    let mut stubborn = looping_shell_with("trap '' TERM", "stubborn");
    let exit = stubborn.terminate(Duration::from_millis(100)).unwrap();
    assert_eq!(exit.exit_code(), 128 + 9, "{}", exit.describe());

    // One that ended already is not signalled.
    let mut done = WaitingChild::spawn(&argv(&["true"])).unwrap();
    done.release().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        done.terminate(Duration::ZERO).unwrap().exit_code(),
        0,
        "true ended on its own"
    );
}

#[test]
fn a_command_started_from_its_arguments_has_this_processs_environment() {
    let _process = shared();
    // A variable cargo sets for a test and no shell rewrites (PATH where it is not set).
    let name = ["CARGO_MANIFEST_DIR", "PATH"]
        .into_iter()
        .find(|name| std::env::var_os(name).is_some())
        .expect("CARGO_MANIFEST_DIR or PATH in this process's environment");
    let value = std::env::var(name).unwrap();
    let out = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-env-{}", std::process::id()));
    let script = format!("printf %s \"${name}\" > {}", out.display());
    let mut child = WaitingChild::spawn(&argv(&["sh", "-c", &script])).unwrap();
    child.release().unwrap();
    assert_eq!(child.wait().unwrap().exit_code(), 0);
    let seen = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_file(&out).ok();
    assert_eq!(seen, value, "${name}");
}

#[test]
fn a_held_child_can_be_sent_and_shared_between_threads() {
    // Checked by the compiler: a type that is not fails to build this test.
    fn sendable_and_shareable<T: Send + Sync>() {}
    sendable_and_shareable::<WaitingChild>();
}

/// This thread's minor page faults so far. Oracle: the kernel's own count
/// (`getrusage(RUSAGE_THREAD)`).
#[cfg(target_os = "linux")]
fn minor_faults() -> i64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the live local.
    let ret = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(ret, 0);
    usage.ru_minflt
}

/// Making the held child copies none of this process's memory where it is made with
/// `clone(CLONE_VM)`: after a `fork`, each page this process writes while the child waits is
/// a copy-on-write fault (16,384 for 64 MiB), which the kernel counts.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
#[test]
fn a_held_child_shares_this_processs_memory_instead_of_copying_it() {
    // Alone: a test beside it that forks (a held `Command` is started by `fork`) would make
    // this block copy-on-write, and the faults counted here would be that fork's copies.
    let _alone = crate::process_state::alone();
    const PAGE: usize = 4096;
    let mut block = vec![1u8; 64 << 20];
    let child = WaitingChild::spawn(&argv(&["true"])).unwrap();
    let before = minor_faults();
    for page in block.chunks_mut(PAGE) {
        page[0] = 2;
    }
    let faults = minor_faults() - before;
    drop(child);
    assert!(
        faults < 1024,
        "{faults} page faults writing {} pages while the child was held: its memory was copied",
        block.len() / PAGE
    );
}
