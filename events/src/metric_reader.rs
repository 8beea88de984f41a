//! A reader for the shape `counterhal-gen metrics` writes its metric tables in, much cheaper
//! than a TOML parser (`stat -M` reads one whole table to find the metrics it asks for).
//!
//! The shape, line by line: comments and blank lines; `model = "ID"`; an `[events]` table of
//! `"NAME" = "EVENT"` lines; `[[metric]]` tables of `name`, `groups` (an array of strings on
//! one line), `expression`, `scale` (a number) and `unit`. Strings are TOML basic strings whose
//! only escapes are `\\` and `\"`. Anything else (another key, escape, value form or line) makes
//! [`read`] return `None`, and the caller reads the text with the TOML parser instead, which
//! also gives any error its message: this reader never refuses, it only declines. A test checks
//! that every shipped table takes this path and reads exactly as the TOML parser reads it.

use std::collections::BTreeMap;

use crate::metrics::{Metric, MetricTable};

/// The table `text` holds, when it is in the generator's shape; `None` otherwise.
pub(crate) fn read(text: &str) -> Option<MetricTable> {
    let mut model = None;
    let mut events = BTreeMap::new();
    let mut metrics: Vec<Metric> = Vec::new();
    let mut section = Section::Top;
    // The keys given for the metric being read, to decline one given twice or missing.
    let mut given = Given::default();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line == "[[metric]]" {
            finish(&mut metrics, &given)?;
            metrics.push(Metric {
                name: String::new(),
                groups: Vec::new(),
                expression: String::new(),
                scale: 1.0,
                unit: String::new(),
            });
            given = Given::default();
            section = Section::Metric;
            continue;
        }
        if line == "[events]" {
            if section != Section::Top || !events.is_empty() {
                return None;
            }
            section = Section::Events;
            continue;
        }
        match section {
            Section::Top => {
                let ("model", rest) = key_value(line)? else {
                    return None;
                };
                if model.is_some() {
                    return None;
                }
                model = Some(whole_string(rest)?);
            }
            Section::Events => {
                let (key, rest) = quoted_key_value(line)?;
                if events.insert(key, whole_string(rest)?).is_some() {
                    return None;
                }
            }
            Section::Metric => {
                let metric = metrics.last_mut()?;
                let (key, rest) = key_value(line)?;
                let seen = match key {
                    "name" => {
                        metric.name = whole_string(rest)?;
                        &mut given.name
                    }
                    "expression" => {
                        metric.expression = whole_string(rest)?;
                        &mut given.expression
                    }
                    "unit" => {
                        metric.unit = whole_string(rest)?;
                        &mut given.unit
                    }
                    "groups" => {
                        metric.groups = string_array(rest)?;
                        &mut given.groups
                    }
                    "scale" => {
                        metric.scale = number(rest)?;
                        &mut given.scale
                    }
                    _ => return None,
                };
                if std::mem::replace(seen, true) {
                    return None;
                }
            }
        }
    }
    finish(&mut metrics, &given)?;
    Some(MetricTable {
        model: model?,
        events,
        metrics,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Top,
    Events,
    Metric,
}

#[derive(Default)]
struct Given {
    name: bool,
    expression: bool,
    unit: bool,
    groups: bool,
    scale: bool,
}

/// Declines a metric without its required keys (the TOML parser then says which).
fn finish(metrics: &mut [Metric], given: &Given) -> Option<()> {
    match metrics.last() {
        Some(_) if !(given.name && given.expression) => None,
        _ => Some(()),
    }
}

/// `key = rest` with a bare key.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let (key, rest) = line.split_once('=')?;
    let key = key.trim();
    key.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        .then_some((key, rest.trim()))
}

/// `"key" = rest`.
fn quoted_key_value(line: &str) -> Option<(String, &str)> {
    let (key, rest) = string(line)?;
    let rest = rest.trim_start().strip_prefix('=')?;
    Some((key, rest.trim()))
}

/// A basic string that is the whole of `text`.
fn whole_string(text: &str) -> Option<String> {
    let (value, rest) = string(text)?;
    rest.trim().is_empty().then_some(value)
}

/// A basic string at the start of `text`, and what follows it.
fn string(text: &str) -> Option<(String, &str)> {
    let mut body = text.strip_prefix('"')?;
    let mut value = String::new();
    loop {
        // Copied a run at a time, up to the next quote or backslash; control characters
        // (tab included, which TOML would take) are left to TOML.
        let stop = body
            .bytes()
            .position(|b| b == b'"' || b == b'\\' || b < 0x20 || b == 0x7f)?;
        let run = &body[..stop];
        value.push_str(run);
        if body.as_bytes()[stop] == b'"' {
            return Some((value, &body[stop + 1..]));
        }
        if body.as_bytes()[stop] != b'\\' {
            return None;
        }
        match body.as_bytes().get(stop + 1)? {
            b'\\' => value.push('\\'),
            b'"' => value.push('"'),
            _ => return None,
        }
        body = &body[stop + 2..];
    }
}

/// `["a", "b"]` on one line.
fn string_array(text: &str) -> Option<Vec<String>> {
    let mut rest = text.strip_prefix('[')?.trim_start();
    let mut values = Vec::new();
    loop {
        if let Some(after) = rest.strip_prefix(']') {
            return after.trim().is_empty().then_some(values);
        }
        let (value, after) = string(rest)?;
        values.push(value);
        rest = after.trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after.trim_start();
        } else if !rest.starts_with(']') {
            return None;
        }
    }
}

/// A decimal number as TOML writes one without `_`, `inf` or `nan`: digits, a point, an
/// exponent.
fn number(text: &str) -> Option<f64> {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && text.bytes().any(|b| b.is_ascii_digit());
    plain.then(|| text.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::SHIPPED_METRIC_FILES;

    /// Oracle: the `toml` crate's parser. Every shipped table is in the generator's shape and
    /// reads here exactly as TOML reads it.
    #[test]
    fn every_shipped_table_reads_as_toml_reads_it() {
        for (name, _, text) in SHIPPED_METRIC_FILES {
            let ours = read(text).unwrap_or_else(|| panic!("{name}: not in the generator's shape"));
            let toml: MetricTable = toml::from_str(text).unwrap();
            assert_eq!(ours, toml, "{name}");
        }
    }

    /// Oracle: the `toml` crate's parser, on small tables: where this reader answers it
    /// answers as TOML does, and every form it does not know it declines.
    #[test]
    fn other_forms_are_declined_and_known_ones_read_as_toml_does() {
        let known = [
            "model = \"m\"\n",
            "# c\nmodel = \"m\"\n[events]\n\"a.b\" = \"r76\"\n[[metric]]\nname = \"x\"\nexpression = \"a \\\\ b\"\nscale = 1e-9\nunit = \"\\\"u\\\"\"\ngroups = [\"g\", \"h\"]\n",
            "model = \"m\"\n[[metric]]\nname = \"x\"\nexpression = \"1\"\ngroups = []\nscale = 100\n",
        ];
        for text in known {
            let toml: MetricTable = toml::from_str(text).unwrap();
            assert_eq!(read(text), Some(toml), "{text}");
        }
        let declined = [
            "",
            "model = 'm'\n",
            "model = \"m\"\nmodel = \"n\"\n",
            "model = \"m\"\n[[metric]]\nname = \"x\"\n",
            "model = \"m\"\n[[metric]]\nname = \"x\"\nexpression = \"1\"\nname = \"y\"\n",
            "model = \"m\"\n[[metric]]\nname = \"x\"\nexpression = \"1\"\nextra = \"y\"\n",
            "model = \"m\"\n[[metric]]\nname = \"x\\u0041\"\nexpression = \"1\"\n",
            "model = \"m\"\n[[metric]]\nname = \"x\"\nexpression = \"1\"\nscale = 1_000\n",
            "model = \"m\"\n[[metric]]\nname = \"x\"\nexpression = \"1\"\nscale = inf\n",
            "model = \"m\"\n[[metric]]\nname = \"x\"\nexpression = \"\"\"1\"\"\"\n",
            "model = \"m\"\n[[metric]]\nname = \"x\"\nexpression = \"1\"\ngroups = [\"a\"\n",
            "model = \"m\"\n[[metric]]\nname = \"x\" # c\nexpression = \"1\"\n",
            "model = \"m\"\n[other]\n",
        ];
        for text in declined {
            assert_eq!(read(text), None, "{text}");
        }
    }
}
