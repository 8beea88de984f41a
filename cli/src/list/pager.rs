//! `list`'s pager: a listing written to a terminal goes through `$PAGER` (`less` where unset,
//! with `LESS=FRX`: it quits when the listing fits one screen, keeps colours and leaves the
//! screen as it was), as perf's `list` pages (`setup_pager`, tools/lib/subcmd/pager.c); written
//! anywhere else, or with `PAGER` empty or `cat`, it is written as it is.

use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

use crate::error::CliError;

/// The pager to run for a listing on standard output, if any: `None` where standard output is
/// not a terminal, or `$PAGER` is empty or `cat`.
fn pager() -> Option<String> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less".to_string());
    match pager.trim() {
        "" | "cat" => None,
        pager => Some(pager.to_string()),
    }
}

/// Writes `text` to standard output through the pager ([`pager`]): run by `sh -c` (perf's
/// way, so `PAGER='less -S'` works), waited for. Where the pager cannot be started, `text` is
/// written directly.
///
/// # Errors
/// As [`crate::output::emit`], where the text is written directly.
pub fn emit(text: &str) -> Result<(), CliError> {
    let Some(pager) = pager() else {
        return crate::output::emit(text);
    };
    let mut command = Command::new("sh");
    command.args(["-c", &pager]).stdin(Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        command.env("LESS", "FRX");
    }
    let Ok(mut child) = command.spawn() else {
        return crate::output::emit(text);
    };
    if let Some(mut input) = child.stdin.take() {
        // A pager quit before the end (`q`) closes its input: that is the reader's choice.
        _ = input.write_all(text.as_bytes());
    }
    _ = child.wait();
    Ok(())
}
