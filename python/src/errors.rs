//! counterhal's errors as Python exceptions: each [`ErrorKind`] is a class of
//! `counterhal.errors` (`InvalidEventError`, `NotFoundError`, ...), every one a subclass of
//! `counterhal.Error`, raised with the error's text and carrying its `kind`, `message`,
//! `errno` and `hint`.

use counterhal::{Error, ErrorKind};
use pyo3::prelude::*;

/// The class of `counterhal.errors` that stands for `kind`.
fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Unsupported => "UnsupportedError",
        ErrorKind::PermissionDenied => "PermissionDeniedError",
        ErrorKind::NoCounterAvailable => "NoCounterAvailableError",
        ErrorKind::InvalidEvent => "InvalidEventError",
        ErrorKind::InvalidInput => "InvalidInputError",
        ErrorKind::DeviceMissing => "DeviceMissingError",
        ErrorKind::Busy => "BusyError",
        ErrorKind::NotFound => "NotFoundError",
        ErrorKind::NotCounted => "NotCountedError",
        ErrorKind::LimitReached => "LimitReachedError",
        _ => "Error",
    }
}

/// `error` as the Python exception of its kind.
pub(crate) fn to_python(py: Python<'_>, error: &Error) -> PyErr {
    raised(py, error).unwrap_or_else(|failed| failed)
}

/// `error`'s exception, or the error met making it (the module cannot be imported).
fn raised(py: Python<'_>, error: &Error) -> PyResult<PyErr> {
    let class = py
        .import("counterhal.errors")?
        .getattr(class_name(error.kind()))?;
    let exception = class.call1((in_python(&error.to_string()),))?;
    exception.setattr("kind", error.kind().as_str())?;
    exception.setattr("message", in_python(error.message()))?;
    exception.setattr("errno", error.errno())?;
    exception.setattr("hint", error.hint().map(in_python))?;
    Ok(PyErr::from_value(exception))
}

/// What the crate's messages and hints point a reader at, in the `counterhal` command's or
/// the Rust crate's words, and the same in this module's: a Python user has `events()`,
/// `list_metrics()` and `Session`, not the command or `Setup`. Longest first.
const SPELLINGS: [(&str, &str); 7] = [
    (
        "the counterhal command does; a library asks with Setup::mount_tracefs",
        "ask with counterhal.Session(mount_tracefs=True)",
    ),
    ("`counterhal list --metrics`", "`counterhal.list_metrics()`"),
    (
        "give --cpu-model (e.g. --cpu-model skl)",
        "name a model (e.g. counterhal.Session(cpu_model=\"skl\"))",
    ),
    (
        "give --cpu-model",
        "name a model (counterhal.Session(cpu_model=...))",
    ),
    (
        "check --cpu-model",
        "check the session's model (counterhal.Session(cpu_model=...))",
    ),
    (
        "`counterhal list --cpu-model ",
        "`counterhal.events(all=True, session=counterhal.Session(cpu_model=\"",
    ),
    ("`counterhal list`", "`counterhal.events(all=True)`"),
];

/// `text` with what it points at spelt as this module spells it ([`SPELLINGS`]).
pub(crate) fn in_python(text: &str) -> String {
    let mut spelt = text.to_string();
    for (theirs, ours) in SPELLINGS {
        if let Some(at) = spelt.find(theirs) {
            spelt.replace_range(at..at + theirs.len(), ours);
            // A model named after `--cpu-model ` closes the call around it.
            if theirs.ends_with("--cpu-model ") {
                let from = at + ours.len();
                if let Some(end) = spelt[from..].find('`') {
                    spelt.insert_str(from + end, "\"))");
                }
            }
        }
    }
    spelt
}

/// A counterhal result as a Python one.
pub(crate) trait OrRaise<T> {
    /// The value, or the error raised as its Python exception.
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrRaise<T> for Result<T, Error> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|error| to_python(py, &error))
    }
}

/// The error of an operation on a group or metric set that was closed.
pub(crate) fn closed(what: &str) -> Error {
    Error::invalid_input(format!("the {what} is closed"))
        .with_hint("a closed set counts no more: open a new one")
}

/// The error of an operation, in a child of `fork()`, on a group or metric set the parent
/// opened: its counters are the parent's (the child's descriptors are copies of the parent's,
/// so a reset or stop would change the parent's counts), and its lock may be held by a thread
/// the child does not have.
pub(crate) fn forked(what: &str) -> Error {
    Error::invalid_input(format!(
        "this {what} was opened in the parent process before fork(): its counters are the \
         parent's, and nothing of them carries over to a child"
    ))
    .with_hint(format!(
        "open a new {what} in the child (the parent's goes on counting in the parent)"
    ))
}
