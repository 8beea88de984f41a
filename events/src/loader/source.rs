//! A file being loaded, errors that name its file:line:column and key, and the numbers and
//! number sets its values hold.

use std::ops::Range;

use counterhal_hal::Error;
use toml::Spanned;

use crate::model::NumberSet;

/// One file being loaded: its name (for messages) and text (for line:column).
pub(crate) struct Source<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = self.text.get(..offset).unwrap_or(self.text);
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }

    pub(crate) fn error(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl std::fmt::Display,
    ) -> Error {
        let (line, column) = self.line_col(span.start);
        Error::invalid_input(format!(
            "{}:{line}:{column}: key `{key}`: {message}",
            self.name
        ))
        .with_hint("see events/README.md for the events.toml schema")
    }
}

pub(super) fn number<T: TryFrom<i64>>(
    source: &Source<'_>,
    value: &Spanned<i64>,
    key: &str,
    max: i64,
) -> Result<T, Error> {
    let v = *value.get_ref();
    if !(0..=max).contains(&v) {
        return Err(source.error(
            value.span(),
            key,
            format!("{v:#x} is out of range 0..={max:#x}"),
        ));
    }
    T::try_from(v).map_err(|_| source.error(value.span(), key, "value out of range"))
}

pub(super) fn number_set(
    source: &Source<'_>,
    value: &Spanned<toml::Value>,
    key: &str,
) -> Result<NumberSet, Error> {
    let bad = |why: &str| {
        source.error(
            value.span(),
            key,
            format!(
                "{why}; write a number, a range string such as \"0x30-0x3f\", or a list of them"
            ),
        )
    };
    let one = |item: &toml::Value| -> Result<(u32, u32), Error> {
        match item {
            toml::Value::Integer(n) => {
                let n = u32::try_from(*n).map_err(|_| bad("negative or too large"))?;
                Ok((n, n))
            }
            toml::Value::String(s) => {
                let (lo, hi) = match s.split_once('-') {
                    Some((lo, hi)) => (lo, hi),
                    None => (s.as_str(), s.as_str()),
                };
                let parse = |t: &str| {
                    crate::parse::parse_number(t)
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| bad("not a number"))
                };
                let (lo, hi) = (parse(lo)?, parse(hi)?);
                if lo > hi {
                    return Err(bad("range start above its end"));
                }
                Ok((lo, hi))
            }
            _ => Err(bad("wrong type")),
        }
    };
    let ranges = match value.get_ref() {
        toml::Value::Array(items) => items.iter().map(one).collect::<Result<Vec<_>, _>>()?,
        other => vec![one(other)?],
    };
    Ok(NumberSet { ranges })
}
