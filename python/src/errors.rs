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
    let exception = class.call1((error.to_string(),))?;
    exception.setattr("kind", error.kind().as_str())?;
    exception.setattr("message", error.message())?;
    exception.setattr("errno", error.errno())?;
    exception.setattr("hint", error.hint())?;
    Ok(PyErr::from_value(exception))
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
