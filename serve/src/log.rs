//! The exporter's log: one logfmt line per event on standard error, as Prometheus and its
//! exporters write theirs (`time=2026-11-27T13:35:53.123Z level=info msg=serving
//! url=http://127.0.0.1:19110/metrics`): the time in RFC 3339, UTC, to the millisecond; the
//! level (`info`, `warn`, `error`); the message; then the fields, each `key=value`. A value is
//! quoted where go-logfmt's encoder quotes it (a space, `=`, `"`, a control character, DEL or
//! U+FFFD in it), with its escapes.

use std::fmt::{Display, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

/// How much a line matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// What the exporter does (serving, what it counts).
    Info,
    /// What it cannot count, or a request it did not act on; it serves on.
    Warn,
    /// A failure the operator must mend (a configuration that does not read).
    Error,
}

impl Level {
    /// Its `level=` value.
    pub fn name(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// Writes an `info` line; `false` where standard error could not take it.
pub fn info(msg: &str, fields: &[(&str, &dyn Display)]) -> bool {
    write(Level::Info, msg, fields)
}

/// Writes a `warn` line; `false` where standard error could not take it.
pub fn warn(msg: &str, fields: &[(&str, &dyn Display)]) -> bool {
    write(Level::Warn, msg, fields)
}

/// Writes an `error` line; `false` where standard error could not take it.
pub fn error(msg: &str, fields: &[(&str, &dyn Display)]) -> bool {
    write(Level::Error, msg, fields)
}

/// Writes the line of `level`, `msg` and `fields` at this time to standard error, the
/// exporter's log (unbuffered, one write); `false` when that failed (a full disk, a closed
/// pipe), which nothing can be told.
fn write(level: Level, msg: &str, fields: &[(&str, &dyn Display)]) -> bool {
    let text = line(SystemTime::now(), level, msg, fields);
    std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes()).is_ok()
}

/// The line of `level`, `msg` and `fields` at `now`, with its newline.
pub fn line(now: SystemTime, level: Level, msg: &str, fields: &[(&str, &dyn Display)]) -> String {
    let mut line = format!("time={} level={} msg=", rfc3339(now), level.name());
    value(&mut line, msg);
    for (key, field) in fields {
        line.push(' ');
        line.push_str(key);
        line.push('=');
        value(&mut line, &field.to_string());
    }
    line.push('\n');
    line
}

/// `now` in RFC 3339, UTC, to the millisecond (`2026-11-27T13:35:53.123Z`); a time before
/// 1970 is 1970's start.
fn rfc3339(now: SystemTime) -> String {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let (days, second) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        second / 3600,
        second / 60 % 60,
        second % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`,
/// for days on or after the epoch).
fn civil(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Appends `text` as a logfmt value: as it is, or quoted and escaped where go-logfmt's
/// encoder quotes it (`needsQuotedValueRune`, `writeQuotedString`; and `null`, which it
/// quotes so that it is not read as no value).
fn value(line: &mut String, text: &str) {
    let quoted = text == "null"
        || text
            .chars()
            .any(|c| c <= ' ' || c == '=' || c == '"' || c == '\u{7f}' || c == '\u{fffd}');
    if !quoted {
        line.push_str(text);
        return;
    }
    line.push('"');
    for c in text.chars() {
        match c {
            '\\' | '"' => {
                line.push('\\');
                line.push(c);
            }
            '\n' => line.push_str("\\n"),
            '\r' => line.push_str("\\r"),
            '\t' => line.push_str("\\t"),
            '\u{fffd}' => line.push_str("\\ufffd"),
            c if c < ' ' || c == '\u{7f}' => {
                let _ = write!(line, "\\u{:04x}", u32::from(c));
            }
            c => line.push(c),
        }
    }
    line.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The time of a line at `seconds` and `millis` after the epoch.
    fn at(seconds: u64, millis: u64) -> String {
        rfc3339(UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_millis(millis))
    }

    /// Dates against GNU date's (`date -u -d @SECONDS +%FT%T`), across leap days, centuries
    /// and the 400-year rule.
    #[test]
    fn times_are_rfc3339_utc_to_the_millisecond() {
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 7), "2000-02-29T00:00:00.007Z");
        assert_eq!(at(1_709_251_199, 999), "2024-02-29T23:59:59.999Z");
        assert_eq!(at(1_795_786_553, 123), "2026-11-27T13:35:53.123Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
        assert_eq!(at(253_402_300_799, 0), "9999-12-31T23:59:59.000Z");
    }

    /// Values are quoted and escaped as go-logfmt's encoder writes them: the string cases of
    /// `TestEncodeKeyval` in go-logfmt v0.6.1's encode_test.go (`k=` left out), then ours.
    #[test]
    fn values_are_quoted_as_go_logfmt_quotes_them() {
        let cases = [
            ("v", "v"),
            ("", ""),
            ("null", r#""null""#),
            ("<nil>", "<nil>"),
            ("v v", r#""v v""#),
            (" ", r#"" ""#),
            ("\"", r#""\"""#),
            ("=", r#""=""#),
            ("\\", "\\"),
            ("=\\", r#""=\\""#),
            ("\\\"", r#""\\\"""#),
            ("\u{fffd}\u{0}", r#""\ufffd\u0000""#),
            // Ours: an address, and each escape.
            ("http://[::1]:19110/metrics", "http://[::1]:19110/metrics"),
            ("\n\r\t", r#""\n\r\t""#),
            ("\u{1}\u{7f}", r#""\u0001\u007f""#),
            ("é ü", r#""é ü""#),
        ];
        for (text, written) in cases {
            let mut line = String::new();
            value(&mut line, text);
            assert_eq!(line, written, "{text:?}");
        }
    }

    #[test]
    fn a_line_is_time_level_msg_then_fields() {
        let now = UNIX_EPOCH + Duration::from_millis(1_795_786_553_123);
        let line = line(
            now,
            Level::Warn,
            "not counted here",
            &[("event", &"power/energy-pkg/"), ("places", &3)],
        );
        assert_eq!(
            line,
            "time=2026-11-27T13:35:53.123Z level=warn msg=\"not counted here\" \
             event=power/energy-pkg/ places=3\n"
        );
    }
}
