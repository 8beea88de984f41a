//! Writing results to standard output without panicking when the reader goes away.

use std::io::Write;

/// Writes `text` to standard output. A closed pipe (`counterhal list | head`) ends the output
/// quietly, as it does for other Unix tools; other write errors are reported once on stderr.
pub fn emit(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    if let Err(error) = written
        && error.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("counterhal: cannot write to standard output: {error}");
    }
}
