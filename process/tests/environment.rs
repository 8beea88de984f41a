//! The environment a command started from its arguments gets: this process's when the command
//! was started, whatever this process does to its own before the release. One test in this
//! file: it changes the process's environment, which nothing else may read meanwhile.

use std::ffi::OsString;

use counterhal_process::WaitingChild;

#[test]
fn the_command_gets_the_environment_as_it_was_when_it_was_started() {
    let out = std::env::temp_dir().join(format!("counterhal-held-env-{}", std::process::id()));
    let script = format!(
        "printf %s \"$COUNTERHAL_HELD_PROBE:${{COUNTERHAL_HELD_LATER-unset}}\" > {}",
        out.display()
    );
    // SAFETY: the one test of this binary: no other thread reads or writes the environment.
    unsafe { std::env::set_var("COUNTERHAL_HELD_PROBE", "at-start") };
    let argv: Vec<OsString> = ["sh", "-c", &script].iter().map(OsString::from).collect();
    let mut child = WaitingChild::spawn(&argv).unwrap();
    // After the start: the value replaced, and enough new variables that the C library moves
    // its array (freeing the one there was), then memory allocated over what it freed.
    // SAFETY: as above.
    unsafe { std::env::set_var("COUNTERHAL_HELD_PROBE", "changed") };
    for i in 0..200 {
        // SAFETY: as above.
        unsafe { std::env::set_var(format!("COUNTERHAL_HELD_LATER{i}"), "x") };
    }
    // SAFETY: as above.
    unsafe { std::env::set_var("COUNTERHAL_HELD_LATER", "set") };
    let overwrite: Vec<Vec<u8>> = (0..2000).map(|_| vec![0x41; 64]).collect();
    child.release().unwrap();
    assert_eq!(child.wait().unwrap().exit_code(), 0);
    drop(overwrite);
    let seen = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_file(&out).ok();
    assert_eq!(seen, "at-start:unset");
}
