//! Prometheus' text format 0.0.4 and OpenMetrics 1.0 as serve writes them: the format
//! negotiated from `Accept`, a family's `# HELP`/`# TYPE` lines, a sample's labels (escaped as
//! the format says) and its number (integers and exact decimal seconds written without Rust's
//! formatting machinery), into a reused buffer: the one writer every collector writes its
//! families with.

use std::io::Write;

/// The exposition format of a scrape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Prometheus' text format 0.0.4.
    Text,
    /// OpenMetrics 1.0's text format.
    OpenMetrics,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics 1.0 where it accepts it (without
    /// a version, or 1.0.0) at least as much as the text format (`text/plain`, `text/*`,
    /// `*/*`); else the text format, also without a header or for one accepting neither.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Text;
        };
        let (mut open_metrics, mut text) = (0.0f64, 0.0f64);
        for range in accept.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let (mut quality, mut version) = (1.0f64, None);
            for parameter in parts {
                let Some((key, value)) = parameter.split_once('=') else {
                    continue;
                };
                match key.trim().to_ascii_lowercase().as_str() {
                    "q" => quality = value.trim().parse().unwrap_or(0.0),
                    "version" => version = Some(value.trim().trim_matches('"').to_string()),
                    _ => {}
                }
            }
            match media.as_str() {
                "application/openmetrics-text"
                    if version.as_deref().is_none_or(|v| v == "1.0.0") =>
                {
                    open_metrics = open_metrics.max(quality);
                }
                "text/plain" if version.as_deref().is_none_or(|v| v == "0.0.4") => {
                    text = text.max(quality);
                }
                "text/*" | "*/*" => text = text.max(quality),
                _ => {}
            }
        }
        if open_metrics > 0.0 && open_metrics >= text {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }

    /// The `Content-Type` of a scrape in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// A family's type.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Info,
}

/// A metric family: its name (without `_total` or `_info`), type, unit and help.
pub(crate) struct Family {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) unit: Option<&'static str>,
    pub(crate) help: &'static str,
}

/// A sample's value.
#[derive(Clone, Copy)]
pub(crate) enum Number {
    Int(u64),
    Float(f64),
    /// Nanoseconds, written as seconds.
    Seconds(u64),
}

impl Number {
    /// ` VALUE\n`: an integer's digits; nanoseconds as seconds with up to 9 decimals (the
    /// exact decimal, which a reader rounds to the float nearest `ns / 1e9`); other floats as
    /// Rust's shortest round-trip form.
    pub(crate) fn write(self, out: &mut Vec<u8>) {
        out.push(b' ');
        match self {
            Number::Int(n) => decimal(out, n),
            Number::Float(x) => {
                let _ = write!(out, "{x}");
            }
            Number::Seconds(ns) => {
                decimal(out, ns / 1_000_000_000);
                let mut fraction = ns % 1_000_000_000;
                if fraction != 0 {
                    let mut digits = 9;
                    while fraction % 10 == 0 {
                        fraction /= 10;
                        digits -= 1;
                    }
                    out.push(b'.');
                    let start = out.len();
                    out.resize(start + digits, b'0');
                    for at in (start..start + digits).rev() {
                        out[at] = b'0' + (fraction % 10) as u8;
                        fraction /= 10;
                    }
                }
            }
        }
        out.push(b'\n');
    }
}

/// `n`'s decimal digits.
pub(crate) fn decimal(out: &mut Vec<u8>, mut n: u64) {
    // Two digits a step, from the table of 00 to 99.
    const PAIRS: [u8; 200] = {
        let mut pairs = [0u8; 200];
        let mut pair = 0;
        while pair < 100 {
            pairs[2 * pair] = b'0' + (pair / 10) as u8;
            pairs[2 * pair + 1] = b'0' + (pair % 10) as u8;
            pair += 1;
        }
        pairs
    };
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[n as usize * 2..n as usize * 2 + 2]);
    } else {
        at -= 1;
        digits[at] = b'0' + n as u8;
    }
    out.extend_from_slice(&digits[at..]);
}

impl Family {
    pub(crate) const fn new(name: &'static str, kind: Kind, help: &'static str) -> Family {
        Family {
            name,
            kind,
            unit: None,
            help,
        }
    }

    pub(crate) const fn seconds(name: &'static str, kind: Kind, help: &'static str) -> Family {
        Family {
            name,
            kind,
            unit: Some("seconds"),
            help,
        }
    }

    /// The `# HELP`, `# TYPE` (and in OpenMetrics `# UNIT`) lines.
    pub(crate) fn header(&self, out: &mut Vec<u8>, format: Format) {
        let kind = match (self.kind, format) {
            (Kind::Counter, _) => "counter",
            (Kind::Gauge, _) | (Kind::Info, Format::Text) => "gauge",
            (Kind::Info, Format::OpenMetrics) => "info",
        };
        let suffix = match (self.kind, format) {
            (Kind::Counter, Format::Text) => "_total",
            (Kind::Info, Format::Text) => "_info",
            _ => "",
        };
        let name = self.name;
        let _ = writeln!(out, "# HELP {name}{suffix} {}", self.help);
        let _ = writeln!(out, "# TYPE {name}{suffix} {kind}");
        if let (Some(unit), Format::OpenMetrics) = (self.unit, format) {
            let _ = writeln!(out, "# UNIT {name} {unit}");
        }
    }

    /// The family with one sample, unlabelled: its header, then `value` (a counter's with
    /// its `_created`, [`counted`](Family::counted)).
    pub(crate) fn single(&self, out: &mut Vec<u8>, format: Format, value: Number, created: f64) {
        self.header(out, format);
        self.counted(out, format, &[], value, created);
    }

    /// One sample, and where the family is a counter written in OpenMetrics, its `_created`
    /// sample with the same labels: `created`, when its counting began (seconds since the
    /// epoch), so that Prometheus 3 knows where the series starts from zero. The text format
    /// has no such sample.
    pub(crate) fn counted(
        &self,
        out: &mut Vec<u8>,
        format: Format,
        labels: &[(&str, Label<'_>)],
        value: Number,
        created: f64,
    ) {
        let start = self.begin(out);
        labels_into(out, labels);
        let end = self.end(out, start, value);
        self.created(out, format, start..end, created);
    }

    /// One sample: its name, labels and value. A label whose value is empty is left out, as
    /// Prometheus takes an empty label for an absent one.
    pub(crate) fn sample(&self, out: &mut Vec<u8>, labels: &[(&str, Label<'_>)], value: Number) {
        let start = self.begin(out);
        labels_into(out, labels);
        self.end(out, start, value);
    }

    /// A sample's name, then the place where its labels start: each written after it by
    /// [`labels_into`] (or copied, as it wrote them), then [`end`](Family::end).
    pub(crate) fn begin(&self, out: &mut Vec<u8>) -> usize {
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(match self.kind {
            Kind::Counter => b"_total",
            Kind::Info => b"_info",
            Kind::Gauge => b"",
        });
        out.len()
    }

    /// A sample's end: its labels, written since `start`, in braces (none without a label),
    /// and its value; where the labels (braces included) end.
    pub(crate) fn end(&self, out: &mut Vec<u8>, start: usize, value: Number) -> usize {
        if out.len() > start {
            // The first label's comma opens the braces.
            out[start] = b'{';
            out.push(b'}');
        }
        let end = out.len();
        value.write(out);
        end
    }

    /// After a counter's sample, in OpenMetrics, its `_created` sample: the labels written
    /// at `labels` (braces included) and `created` (seconds since the epoch); nothing for
    /// another kind of family, or in the text format.
    pub(crate) fn created(
        &self,
        out: &mut Vec<u8>,
        format: Format,
        labels: std::ops::Range<usize>,
        created: f64,
    ) {
        if format != Format::OpenMetrics || self.kind != Kind::Counter {
            return;
        }
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(b"_created");
        out.extend_from_within(labels);
        Number::Float(created).write(out);
    }
}

/// Each label of `labels` as `,name="value"`, the value escaped; a label whose value is
/// empty is left out, as Prometheus takes an empty label for an absent one.
pub(crate) fn labels_into(out: &mut Vec<u8>, labels: &[(&str, Label<'_>)]) {
    for (name, value) in labels {
        if matches!(value, Label::Text("")) {
            continue;
        }
        out.push(b',');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"=\"");
        match value {
            Label::Text(text) => escaped(out, text),
            Label::Int(n) => decimal(out, *n),
        }
        out.push(b'"');
    }
}

/// The seconds since the epoch of `time` (a `_created` sample's value); 0 before it.
pub(crate) fn epoch_seconds(time: std::time::SystemTime) -> f64 {
    time.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}

/// Nanoseconds as seconds.
pub(crate) fn seconds(ns: u64) -> Number {
    Number::Seconds(ns)
}

/// A label's value.
#[derive(Clone, Copy)]
pub(crate) enum Label<'a> {
    Text(&'a str),
    Int(u64),
}

/// A label value escaped as both formats escape it: backslash, double quote, newline (the
/// runs between them copied whole).
pub(crate) fn escaped(out: &mut Vec<u8>, text: &str) {
    let special = |b: &u8| matches!(b, b'\\' | b'"' | b'\n');
    // Most values have none: a pass without branches (vectorized), then one copy.
    if !text
        .as_bytes()
        .iter()
        .fold(false, |seen, b| seen | special(b))
    {
        out.extend_from_slice(text.as_bytes());
        return;
    }
    let mut rest = text.as_bytes();
    while let Some(at) = rest.iter().position(special) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(match rest[at] {
            b'\\' => b"\\\\",
            b'"' => b"\\\"",
            _ => b"\\n",
        });
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_accept_header_gets_openmetrics_and_others_the_text_format() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                          version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate(Some(prometheus)), Format::OpenMetrics);
        // Prometheus 3.5's, which adds the text format 1.0.0 (0.0.4 is served for it).
        let prometheus_3 = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;\
                            q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;\
                            version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;\
                            q=0.3,*/*;q=0.2";
        assert_eq!(Format::negotiate(Some(prometheus_3)), Format::OpenMetrics);
        assert_eq!(
            Format::negotiate(Some(
                "text/plain;version=1.0.0;escaping=allow-utf-8,*/*;q=0.1"
            )),
            Format::Text
        );
        assert_eq!(Format::negotiate(None), Format::Text);
        assert_eq!(Format::negotiate(Some("*/*")), Format::Text);
        assert_eq!(Format::negotiate(Some("text/plain")), Format::Text);
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text")),
            Format::OpenMetrics
        );
        // A version not served, or OpenMetrics preferred less than text.
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text; version=2.0.0")),
            Format::Text
        );
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text;q=0.2,text/plain;q=0.9")),
            Format::Text
        );
        assert_eq!(Format::negotiate(Some(";;,,q=x,=")), Format::Text);
    }

    #[test]
    fn families_are_written_as_each_format_names_them() {
        const EVENT_SECONDS: Family = Family::seconds(
            "counterhal_event_seconds",
            Kind::Counter,
            "Clock events counted, in seconds (task-clock, cpu-clock).",
        );
        let mut text = Vec::new();
        EVENT_SECONDS.header(&mut text, Format::Text);
        let labels = [("event", Label::Text("a\\\"b\n")), ("cpu", Label::Int(3))];
        EVENT_SECONDS.sample(&mut text, &labels, Number::Float(0.5));
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "# HELP counterhal_event_seconds_total Clock events counted, in seconds (task-clock, \
             cpu-clock).\n# TYPE counterhal_event_seconds_total counter\n\
             counterhal_event_seconds_total{event=\"a\\\\\\\"b\\n\",cpu=\"3\"} 0.5\n"
        );
        let mut open = Vec::new();
        EVENT_SECONDS.header(&mut open, Format::OpenMetrics);
        let open = String::from_utf8(open).unwrap();
        assert!(
            open.contains("# TYPE counterhal_event_seconds counter\n"),
            "{open}"
        );
        assert!(
            open.contains("# UNIT counterhal_event_seconds seconds\n"),
            "{open}"
        );
    }

    /// Nanoseconds are written as the seconds a reader parses to the float nearest
    /// `ns / 1e9` (the value written before as that float's shortest form), integers as
    /// their digits.
    ///
    /// Oracle: Rust's `f64` division (correctly rounded, IEEE 754) and its `str::parse`
    /// (correctly rounded), over a range of values with and without trailing zeros.
    #[test]
    fn seconds_and_integers_read_back_as_the_numbers_written() {
        let written = |number: Number| {
            let mut out = Vec::new();
            number.write(&mut out);
            let text = String::from_utf8(out).unwrap();
            text.strip_prefix(' ')
                .and_then(|t| t.strip_suffix('\n'))
                .unwrap()
                .to_string()
        };
        let mut ns: Vec<u64> = vec![0, 1, 10, 999_999_999, 1_000_000_000, 1_500_000_000];
        ns.extend([
            3_600_000_000_123,
            (1 << 53) - 1,
            1 << 52,
            123_456_789_012_345,
        ]);
        ns.extend((0..64).map(|shift| 0x9e37_79b9_7f4a_7c15u64 >> shift));
        for ns in ns {
            let text = written(Number::Seconds(ns));
            let read: f64 = text.parse().unwrap();
            if ns < 1 << 53 {
                assert_eq!(read, ns as f64 / 1e9, "{ns} ns written {text}");
            }
            let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
            assert_eq!(whole, (ns / 1_000_000_000).to_string(), "{ns}: {text}");
            assert!(
                fraction.len() <= 9 && !fraction.ends_with('0'),
                "{ns}: {text}"
            );
            assert_eq!(written(Number::Int(ns)), ns.to_string());
        }
        assert_eq!(written(Number::Seconds(1_500_000_000)), "1.5");
        assert_eq!(written(Number::Seconds(1)), "0.000000001");
        assert_eq!(written(Number::Int(u64::MAX)), u64::MAX.to_string());
    }
}
