//! The exact errors of event strings and their resolution.

use std::fmt;

use counterhal_hal::{Error, ErrorKind};

/// What was wrong with an event string, finer than [`ErrorKind`].
///
/// Every variant but [`Unsupported`](EventErrorKind::Unsupported) and
/// [`UnknownCpu`](EventErrorKind::UnknownCpu) becomes [`ErrorKind::InvalidEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventErrorKind {
    /// No event, unit mask owner or PMU of that name (the error lists up to three nearest
    /// names).
    NotFound,
    /// A `:name` that is neither a modifier nor a unit mask of the event, or a term the PMU
    /// does not have.
    UnknownModifier,
    /// A modifier value or raw code outside its range (`c=300`, `u=2`, `rZZ`).
    ValueOutOfRange,
    /// A modifier given twice with different values (also against a unit mask's own value).
    ModifierConflict,
    /// The event needs a unit mask and none was given.
    UnitMaskRequired,
    /// The unit mask exists, but not for this event.
    UnitMaskInvalid,
    /// The parts are valid alone but not together (two exclusive unit masks, `e` on a P5
    /// event, a filter on a fixed-counter-only event, `h` where it cannot be encoded).
    CombinationNotAllowed,
    /// The event is valid but has no encoding for this backend or CPU.
    Unsupported,
    /// The `--cpu-model` id is not in the database.
    UnknownCpu,
}

impl EventErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [EventErrorKind; 9] = [
        EventErrorKind::NotFound,
        EventErrorKind::UnknownModifier,
        EventErrorKind::ValueOutOfRange,
        EventErrorKind::ModifierConflict,
        EventErrorKind::UnitMaskRequired,
        EventErrorKind::UnitMaskInvalid,
        EventErrorKind::CombinationNotAllowed,
        EventErrorKind::Unsupported,
        EventErrorKind::UnknownCpu,
    ];

    /// A stable kebab-case name (`not-found`, `unknown-modifier`, ...), used in golden tables.
    pub const fn name(self) -> &'static str {
        match self {
            EventErrorKind::NotFound => "not-found",
            EventErrorKind::UnknownModifier => "unknown-modifier",
            EventErrorKind::ValueOutOfRange => "value-out-of-range",
            EventErrorKind::ModifierConflict => "modifier-conflict",
            EventErrorKind::UnitMaskRequired => "unit-mask-required",
            EventErrorKind::UnitMaskInvalid => "unit-mask-invalid",
            EventErrorKind::CombinationNotAllowed => "combination-not-allowed",
            EventErrorKind::Unsupported => "unsupported",
            EventErrorKind::UnknownCpu => "unknown-cpu",
        }
    }

    /// The kind with this name.
    pub fn from_name(name: &str) -> Option<EventErrorKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The generic [`ErrorKind`] this kind maps to.
    pub const fn error_kind(self) -> ErrorKind {
        match self {
            EventErrorKind::Unsupported => ErrorKind::Unsupported,
            EventErrorKind::UnknownCpu => ErrorKind::InvalidInput,
            _ => ErrorKind::InvalidEvent,
        }
    }
}

impl fmt::Display for EventErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An event-string error: its exact kind, a message naming what was wrong and what would be
/// right, an optional hint, and the nearest known names when a name was not found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventError {
    kind: EventErrorKind,
    message: String,
    hint: Option<String>,
    suggestions: Vec<String>,
}

impl EventError {
    /// An error of `kind` saying `message`.
    pub fn new(kind: EventErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            hint: None,
            suggestions: Vec::new(),
        }
    }

    /// Attaches a hint.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Attaches the nearest names; the message gains `; did you mean: A, B, C`.
    #[must_use]
    pub fn with_suggestions(mut self, suggestions: Vec<String>) -> Self {
        if !suggestions.is_empty() {
            self.message = format!("{}; did you mean: {}", self.message, suggestions.join(", "));
        }
        self.suggestions = suggestions;
        self
    }

    /// The exact kind.
    pub fn kind(&self) -> EventErrorKind {
        self.kind
    }

    /// The message (with the suggestions, if any).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The hint, if any.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// The nearest known names (at most three) when a name was not found.
    pub fn suggestions(&self) -> &[String] {
        &self.suggestions
    }
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "; hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for EventError {}

impl From<EventError> for Error {
    fn from(error: EventError) -> Error {
        let kind = error.kind.error_kind();
        let converted = Error::new(kind, error.message);
        match error.hint {
            Some(hint) => converted.with_hint(hint),
            None => converted,
        }
    }
}

pub(crate) fn err(kind: EventErrorKind, message: impl Into<String>) -> EventError {
    EventError::new(kind, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_map() {
        for kind in EventErrorKind::ALL {
            assert_eq!(EventErrorKind::from_name(kind.name()), Some(kind));
        }
        let error: Error = EventError::new(EventErrorKind::NotFound, "unknown event `FOO`")
            .with_suggestions(vec!["FOO2".into()])
            .with_hint("run `counterhal list`")
            .into();
        assert_eq!(error.kind(), ErrorKind::InvalidEvent);
        assert_eq!(error.message(), "unknown event `FOO`; did you mean: FOO2");
        assert_eq!(error.hint(), Some("run `counterhal list`"));
    }
}
