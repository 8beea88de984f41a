//! Writing results without panicking and without losing them: standard output, where a reader
//! that went away (`counterhal list | head`) ends the output quietly and any other failure is
//! the command's failure; standard error, which is written or given up on silently (there is
//! nowhere left to say it failed); and files named on the command line, checked before any
//! work is done and emptied only when the results are ready to go in.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use counterhal::Error;

use crate::error::CliError;

/// Writes `text` to standard output.
///
/// # Errors
/// A write that fails for another reason than a closed pipe (a full disk): exit 1.
pub fn emit(text: &str) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    match written {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::failed(Error::new(
                counterhal::ErrorKind::Other,
                format!("cannot write to standard output: {error}"),
            )))
        }
        _ => Ok(()),
    }
}

/// Writes `text` to standard error; `false` when that failed (a full disk, a closed pipe).
pub fn emit_to_stderr(text: &str) -> bool {
    let mut stderr = std::io::stderr().lock();
    stderr
        .write_all(text.as_bytes())
        .and_then(|()| stderr.flush())
        .is_ok()
}

/// A file results go to, opened before the work that produces them: it exists and can be
/// written, but keeps what it held until the first [`OutputFile::write`].
pub struct OutputFile {
    path: PathBuf,
    file: File,
    /// Whether results go after what the file holds ([`OutputFile::append`]).
    append: bool,
    /// Whether results were written already (the file emptied, where it is emptied).
    started: bool,
}

impl OutputFile {
    /// Opens (or creates) `path` for writing, leaving its contents as they are.
    ///
    /// # Errors
    /// A file that cannot be opened for writing: bad input (exit 2).
    pub fn open(path: &Path) -> Result<OutputFile, CliError> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| CliError::input(cannot_write(path, &e)))?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            file,
            append: false,
            started: false,
        })
    }

    /// Opens (or creates) `path` for adding to its end: [`replace_with`](Self::replace_with)
    /// then writes after what it holds (perf's `--append`, and an open descriptor such as
    /// `/dev/fd/3`).
    ///
    /// # Errors
    /// A file that cannot be opened for writing: bad input (exit 2).
    pub fn append(path: &Path) -> Result<OutputFile, CliError> {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| CliError::input(cannot_write(path, &e)))?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            file,
            append: true,
            started: false,
        })
    }

    /// The open descriptor `fd` of this process (`--log-fd`), written to itself, after what
    /// it holds, as perf writes to it; never reopened, so that a descriptor opened for reading
    /// only is refused, and a socket or pipe takes the results.
    ///
    /// # Errors
    /// A descriptor that is not open (as `system` says), or not open for writing: bad input
    /// (exit 2), naming `option` (`--log-fd 3`).
    pub fn descriptor(
        system: &counterhal_system::System,
        fd: u32,
        option: &str,
    ) -> Result<OutputFile, CliError> {
        let file = crate::sys::writable_descriptor(system, fd).map_err(|e| {
            CliError::input(
                Error::invalid_input(format!("{option}: {e}"))
                    .with_hint("open the descriptor for writing (`3>>FILE`, `3>&1`), or use -o"),
            )
        })?;
        Ok(OutputFile {
            path: PathBuf::from(option),
            file,
            append: true,
            started: false,
        })
    }

    /// Replaces the file's contents with `text` (a device or a pipe, such as `/dev/stdout`,
    /// is written to as it is; a file opened to [`append`](Self::append) keeps its contents
    /// and gets `text` at its end).
    ///
    /// # Errors
    /// A write that fails (a full disk): exit 1, the error naming the file.
    pub fn replace_with(mut self, text: &str) -> Result<(), CliError> {
        self.write(text)
    }

    /// Writes `text` after what this value wrote before, at once: the first write replaces
    /// the file's contents as [`replace_with`](Self::replace_with) does (`-I`'s intervals
    /// are written one by one as they end).
    ///
    /// # Errors
    /// A write that fails (a full disk): exit 1, the error naming the file.
    pub fn write(&mut self, text: &str) -> Result<(), CliError> {
        let regular =
            !self.started && !self.append && self.file.metadata().is_ok_and(|m| m.is_file());
        let emptied = if regular {
            self.file.set_len(0)
        } else {
            Ok(())
        };
        self.started = true;
        let written = emptied
            .and_then(|()| self.file.write_all(text.as_bytes()))
            .and_then(|()| self.file.flush());
        written.map_err(|e| CliError::failed(cannot_write(&self.path, &e)))
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn cannot_write(path: &Path, error: &std::io::Error) -> Error {
    Error::invalid_input(format!("cannot write {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_keeps_its_contents_until_replaced() {
        let path = std::env::temp_dir().join(format!("counterhal-out-{}", std::process::id()));
        std::fs::write(&path, "earlier results\n").unwrap();
        let file = OutputFile::open(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "earlier results\n");
        file.replace_with("new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        OutputFile::append(&path)
            .unwrap()
            .replace_with(" more")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new more");
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn unwritable_files_are_named() {
        let error = OutputFile::open(Path::new("/nonexistent/dir/r.json"))
            .err()
            .unwrap();
        assert_eq!(error.exit_code, 2);
        assert!(error.error.message().contains("/nonexistent/dir/r.json"));
        if Path::new("/dev/full").exists() {
            let full = OutputFile::open(Path::new("/dev/full")).unwrap();
            let error = full.replace_with("results").unwrap_err();
            assert_eq!(error.exit_code, 1);
            assert!(
                error.error.message().contains("/dev/full"),
                "{}",
                error.error
            );
        }
    }
}
