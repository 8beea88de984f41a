//! The environment a command started from its arguments gets: this process's when the command
//! was started, whatever this process does to its own before the release. The test changes
//! the process's environment, which nothing else may read meanwhile: it runs alone
//! ([`alone`]), and removes the variables it set before it ends.

use std::ffi::OsString;

use counterhal_process::WaitingChild;

use crate::process_state::alone;

/// The variables the test sets: one the command reads, the rest only to make the C library
/// move its array.
const PROBE: &str = "COUNTERHAL_HELD_PROBE";
const LATER: &str = "COUNTERHAL_HELD_LATER";

#[test]
fn the_command_gets_the_environment_as_it_was_when_it_was_started() {
    let _alone = alone();
    let out = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-held-env-{}", std::process::id()));
    let script = format!(
        "printf %s \"$COUNTERHAL_HELD_PROBE:${{COUNTERHAL_HELD_LATER-unset}}\" > {}",
        out.display()
    );
    // SAFETY: this test runs alone (`alone`): no other thread reads or writes the environment.
    unsafe { std::env::set_var(PROBE, "at-start") };
    let argv: Vec<OsString> = ["sh", "-c", &script].iter().map(OsString::from).collect();
    let mut child = WaitingChild::spawn(&argv).unwrap();
    // After the start: the value replaced, and enough new variables that the C library moves
    // its array (freeing the one there was), then memory allocated over what it freed.
    // SAFETY: as above.
    unsafe { std::env::set_var(PROBE, "changed") };
    for i in 0..200 {
        // SAFETY: as above.
        unsafe { std::env::set_var(format!("{LATER}{i}"), "x") };
    }
    // SAFETY: as above.
    unsafe { std::env::set_var(LATER, "set") };
    let overwrite: Vec<Vec<u8>> = (0..2000).map(|_| vec![0x41; 64]).collect();
    child.release().unwrap();
    let exit = child.wait().unwrap();
    drop(overwrite);
    for i in 0..200 {
        // SAFETY: as above.
        unsafe { std::env::remove_var(format!("{LATER}{i}")) };
    }
    // SAFETY: as above.
    unsafe { std::env::remove_var(LATER) };
    // SAFETY: as above.
    unsafe { std::env::remove_var(PROBE) };
    assert_eq!(exit.exit_code(), 0);
    let seen = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_file(&out).ok();
    assert_eq!(seen, "at-start:unset");
}
