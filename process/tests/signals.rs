//! Signals passed on to the measured command. Signal dispositions are the whole process's,
//! and the test sends signals to the process: it runs alone ([`alone`]), and puts back the
//! dispositions it found.

use std::ffi::OsString;

use counterhal_process::{ForwardSignals, WaitingChild};

use crate::process_state::alone;

/// The mask of signals this process has a handler for (`SigCgt` in `/proc/self/status`).
fn caught() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("SigCgt:")).unwrap();
    u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
}

fn bit(signal: u32) -> u64 {
    1 << (signal - 1)
}

/// Sets `signal`'s disposition (`SIG_DFL`, `SIG_IGN`, or one `set` returned) and returns
/// the one it replaces.
fn set(signal: libc::c_int, disposition: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: signal(2) with a plain disposition, or with one it returned earlier in the test,
    // which is plain too: no code of this binary installs a handler for these signals but
    // ForwardSignals, which puts back what it found, and no other test runs meanwhile (the
    // test checks that none is installed before and after).
    let replaced = unsafe { libc::signal(signal, disposition) };
    assert_ne!(replaced, libc::SIG_ERR, "signal({signal})");
    replaced
}

#[test]
fn signals_sent_to_this_process_reach_the_command_and_spare_this_process() {
    let _alone = alone();
    const SIGINT: u32 = 2;
    const SIGTERM: u32 = 15;
    // An ignored signal stays ignored (`nohup`): no handler while forwarding, and the command
    // inherits it ignored.
    let mut found = vec![(libc::SIGHUP, set(libc::SIGHUP, libc::SIG_IGN))];
    {
        let _forwarding = ForwardSignals::to(0);
        assert_eq!(caught() & bit(1), 0, "a handler for an ignored SIGHUP");
    }
    // The rest as a terminal's job starts, whoever ran the tests (`nohup` ignores HUP; a
    // shell without job control starts a background job with INT and QUIT ignored).
    for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM] {
        found.push((signal, set(signal, libc::SIG_DFL)));
    }
    set(libc::SIGHUP, libc::SIG_DFL);
    let before = caught();
    assert_eq!(
        before & (bit(SIGINT) | bit(SIGTERM)),
        0,
        "handlers before the test"
    );
    for (signal, number) in [
        ("-TERM", SIGTERM),
        ("-INT", SIGINT),
        ("-HUP", 1),
        ("-QUIT", 3),
    ] {
        let mut child = WaitingChild::spawn(&[OsString::from("sleep"), "60".into()]).unwrap();
        let forwarding = ForwardSignals::to(child.pid());
        assert_ne!(
            caught() & bit(number),
            0,
            "no handler for {signal} while forwarding"
        );
        child.release().unwrap();
        // kill(1) sends to this process alone: passed on, and this process lives on.
        counterhal_conformance::fixtures::send_signal(std::process::id() as i32, signal).unwrap();
        let exit = child.wait().unwrap();
        drop(forwarding);
        assert_eq!(
            exit.exit_code(),
            128 + number as u8,
            "{signal}: {}",
            exit.describe()
        );
    }
    // Every disposition is back as it was.
    assert_eq!(caught(), before);
    for (signal, disposition) in found {
        set(signal, disposition);
    }
}
