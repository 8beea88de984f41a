//! One error model for every backend.

use std::fmt;

/// What went wrong, in terms generic code can branch on.
///
/// Each backend maps its OS errors onto these kinds in one documented `match`.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The backend, OS or hardware cannot do this (no PMU, no such event on this PMU, a target
    /// the backend cannot attach to).
    Unsupported,
    /// The OS refused for lack of privilege (perf_event_paranoid, capabilities, device modes).
    PermissionDenied,
    /// More events, or more constrained events, than free counters.
    NoCounterAvailable,
    /// The event name, modifier or encoding is not valid.
    InvalidEvent,
    /// An argument other than an event is not valid (a CPU number, a PID, a buffer size).
    InvalidInput,
    /// The device or driver the backend needs is not present.
    DeviceMissing,
    /// The resource exists but is in use.
    Busy,
    /// The target (a process or a CPU) does not exist.
    NotFound,
    /// A read came back in a state that carries no values (e.g. a pinned perf group in error).
    NotCounted,
    /// A limit of this process or system was reached (open files: one per event on Linux);
    /// nothing is wrong with the event, and raising the limit the hint names lets it open.
    LimitReached,
    /// Anything else; the message says what.
    Other,
}

impl ErrorKind {
    /// A short lower-case name, as printed in messages and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::PermissionDenied => "permission denied",
            ErrorKind::NoCounterAvailable => "no counter available",
            ErrorKind::InvalidEvent => "invalid event",
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::DeviceMissing => "device missing",
            ErrorKind::Busy => "busy",
            ErrorKind::NotFound => "not found",
            ErrorKind::NotCounted => "not counted",
            ErrorKind::LimitReached => "limit reached",
            ErrorKind::Other => "other",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error: its kind, what happened, the OS error number when there was one, and a hint that
/// tells the user what to do about it.
///
/// Its `Debug` form is the message and the kind (`{:#?}` shows the fields), so that a `main`
/// returning `Result<(), Error>` prints what went wrong rather than a struct.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    errno: Option<i32>,
    hint: Option<String>,
}

impl Error {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            errno: None,
            hint: None,
        }
    }

    /// Attaches the OS error number the failure came with.
    #[must_use]
    pub fn with_errno(mut self, errno: i32) -> Self {
        self.errno = Some(errno);
        self
    }

    /// Attaches a hint: what the user can do about it.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Prefixes the message with context (e.g. the event name), keeping kind, errno and hint.
    #[must_use]
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }

    /// The kind, for generic code to branch on.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What happened, without the hint.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The OS error number, when the failure came from a system call.
    pub fn errno(&self) -> Option<i32> {
        self.errno
    }

    /// What the user can do about it, when known.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// Shorthand for an [`ErrorKind::Unsupported`] error.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }

    /// Shorthand for an [`ErrorKind::InvalidEvent`] error.
    pub fn invalid_event(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidEvent, message)
    }

    /// Shorthand for an [`ErrorKind::InvalidInput`] error.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(errno) = self.errno {
            // A message made from an `io::Error` already ends with it.
            let suffix = format!("(os error {errno})");
            if !self.message.ends_with(&suffix) {
                write!(f, " {suffix}")?;
            }
        }
        if let Some(hint) = &self.hint {
            write!(f, "; hint: {hint}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            return f
                .debug_struct("Error")
                .field("kind", &self.kind)
                .field("message", &self.message)
                .field("errno", &self.errno)
                .field("hint", &self.hint)
                .finish();
        }
        write!(f, "{self} ({})", self.kind)
    }
}

impl std::error::Error for Error {}

/// The result type of every fallible counterhal function.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_carries_errno_and_hint() {
        let error = Error::new(ErrorKind::PermissionDenied, "cannot open cycles")
            .with_errno(13)
            .with_hint("set /proc/sys/kernel/perf_event_paranoid to 1 or run with CAP_PERFMON");
        assert_eq!(error.kind(), ErrorKind::PermissionDenied);
        assert_eq!(error.errno(), Some(13));
        assert_eq!(
            error.to_string(),
            "cannot open cycles (os error 13); hint: set /proc/sys/kernel/perf_event_paranoid \
             to 1 or run with CAP_PERFMON"
        );
    }

    /// Oracle: Rust's `impl Termination for Result<(), E: Debug>` (library/std/src/process.rs,
    /// Rust 1.95), which prints `Error: {err:?}` when `main` returns an error: the user reads
    /// the message, not the struct's fields.
    #[test]
    fn debug_is_the_message_and_the_kind() {
        let error = Error::new(ErrorKind::NotFound, "no cgroup /x")
            .with_errno(2)
            .with_hint("name a cgroup that exists");
        assert_eq!(
            format!("{error:?}"),
            "no cgroup /x (os error 2); hint: name a cgroup that exists (not found)"
        );
        let fields = format!("{error:#?}");
        assert!(
            fields.starts_with("Error {") && fields.contains("errno: Some("),
            "{fields}"
        );
    }

    #[test]
    fn the_os_error_is_said_once() {
        let io = std::io::Error::from_raw_os_error(2);
        let error = Error::new(ErrorKind::NotFound, format!("cannot run /x: {io}")).with_errno(2);
        let text = error.to_string();
        assert_eq!(text.matches("(os error 2)").count(), 1, "{text}");
    }

    #[test]
    fn context_keeps_kind_and_hint() {
        let error = Error::invalid_event("no such event").with_hint("try `counterhal list`");
        let error = error.context("FOO_BAR");
        assert_eq!(error.kind(), ErrorKind::InvalidEvent);
        assert_eq!(error.message(), "FOO_BAR: no such event");
        assert_eq!(error.hint(), Some("try `counterhal list`"));
        assert!(error.to_string().ends_with("hint: try `counterhal list`"));
    }

    #[test]
    fn kinds_have_distinct_names() {
        let kinds = [
            ErrorKind::Unsupported,
            ErrorKind::PermissionDenied,
            ErrorKind::NoCounterAvailable,
            ErrorKind::InvalidEvent,
            ErrorKind::InvalidInput,
            ErrorKind::DeviceMissing,
            ErrorKind::Busy,
            ErrorKind::NotFound,
            ErrorKind::NotCounted,
            ErrorKind::Other,
        ];
        let names: std::collections::HashSet<_> = kinds.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), kinds.len());
    }
}
