//! What runs around each run: `-S`'s sync and `--pre` before it, `--post` after it, each
//! through the shell as perf runs them; one that fails stops the measurement, as perf stops.

use counterhal::Error;
use counterhal_process::{ForwardSignals, WaitingChild};

use crate::error::CliError;
use crate::stat::arguments::switches::Switches;

/// Runs `--pre` (`before`) or `--post` of `switches`, and `-S`'s sync before a run, through
/// the shell; a hook that fails stops the measurement, as perf stops.
///
/// # Errors
/// A hook that cannot be run or exits with a failure (exit 1), naming it.
pub fn run(switches: &Switches, before: bool) -> Result<(), CliError> {
    if before && switches.sync {
        run_shell("sync", "-S (sync)")?;
    }
    let (hook, option) = if before {
        (&switches.pre, "--pre")
    } else {
        (&switches.post, "--post")
    };
    match hook {
        Some(command) => run_shell(command, option),
        None => Ok(()),
    }
}

/// Runs `command` with `sh -c`, its output the user's, started as the measured command is
/// (`SIGPIPE` at its default); the signals that end a command, sent to this process alone,
/// are passed on to it while it runs.
fn run_shell(command: &str, option: &str) -> Result<(), CliError> {
    let could_not = |e: &dyn std::fmt::Display| {
        CliError::failed(Error::new(
            counterhal::ErrorKind::Other,
            format!("{option} `{command}` could not be run: {e}"),
        ))
    };
    let argv = ["sh", "-c", command].map(std::ffi::OsString::from);
    let mut child = WaitingChild::spawn(&argv).map_err(|e| could_not(&e))?;
    let forwarding = ForwardSignals::to(child.pid());
    let ended = child.release().and_then(|()| child.wait());
    drop(forwarding);
    let status = ended.map_err(|e| could_not(&e))?;
    if status.exit_code() == 0 {
        return Ok(());
    }
    Err(CliError::failed(
        Error::new(
            counterhal::ErrorKind::Other,
            format!("{option} `{command}` failed: it {}", status.describe()),
        )
        .with_hint("the measurement stops where a --pre or --post command fails, as perf's does"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::arguments::parse;

    #[test]
    fn hooks_run_and_a_failing_one_stops() {
        let args = parse(&["--pre", "true", "--post", "exit 3", "--", "true"]).unwrap();
        assert!(run(&args.more, true).is_ok());
        let error = run(&args.more, false).expect_err("exit 3");
        assert!(
            error.error.to_string().contains("--post"),
            "{}",
            error.error
        );
    }
}
