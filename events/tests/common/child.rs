//! A test run again in a child process: this test binary, for that one test alone. For a test
//! that needs a process of its own (a variable in its environment, state the process builds
//! once) while its module stays in the one test binary.

use std::process::Command;

/// Set in the child: which check of the test to run.
const CHECK_ENV: &str = "COUNTERHAL_EVENTS_TEST_CHILD";

/// The check to run, in a child that [`run`] started; `None` in the test's own process.
pub fn check() -> Option<String> {
    std::env::var(CHECK_ENV).ok()
}

/// Said by the child once `check` passed; [`run`] looks for it.
pub fn done(check: &str) {
    println!("child check {check} done");
}

/// Runs test `name` of `module` (the caller's `module_path!()`) alone in a child process, with
/// `check` for [`check`] to return there and whatever else `setup` gives the command, and
/// asserts that the child ran the check and it passed.
pub fn run(module: &str, name: &str, check: &str, setup: impl FnOnce(&mut Command)) {
    // The harness names a test by its path below the binary's root (`env::name`).
    let test = match module.split_once("::") {
        Some((_binary, module)) => format!("{module}::{name}"),
        None => name.to_string(),
    };
    let mut command = Command::new(std::env::current_exe().expect("the test binary's path"));
    command
        .args(["--exact", &test, "--nocapture", "--test-threads=1"])
        .env(CHECK_ENV, check);
    setup(&mut command);
    let output = command.output().expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "child `{check}` of {test} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(&format!("child check {check} done")),
        "the child did not run the check `{check}` of {test}:\n{stdout}"
    );
}
