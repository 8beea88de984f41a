//! An uncore table as TOML gives it (`data/generated/uncore/DIR.toml`, written by
//! `counterhal-gen uncore`), and what makes it valid: the one reader of uncore tables. The
//! `counterhal-gen tables` reads the shipped tables through it into their rows
//! (`table_writer/uncore.rs`).

use serde::Deserialize;

/// An uncore table: the kernel's perf JSON directory it comes from, and its PMUs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UncoreFile {
    pub(crate) directory: String,
    #[serde(default, rename = "pmu")]
    pub(crate) pmus: Vec<PmuEntry>,
}

/// One `[[pmu]]`: perf's name for it, the JSON `Unit` it comes from, its events.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PmuEntry {
    pub(crate) name: String,
    /// Read and checked, not written into the rows: the name is what perf and counterhal use.
    #[allow(dead_code)]
    pub(crate) unit: String,
    #[serde(default)]
    pub(crate) events: Vec<EventEntry>,
}

/// One event of a PMU: its name, perf's terms, the scale and unit of its count where perf
/// scales it, whether it is deprecated.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventEntry {
    pub(crate) name: String,
    pub(crate) terms: String,
    pub(crate) scale: Option<f64>,
    pub(crate) unit: Option<String>,
    #[serde(default)]
    pub(crate) deprecated: bool,
}

/// Reads table `name` (its `text`) and checks it: every PMU named once, every event with a
/// name (printable, without `/` and `,`, not given twice on its PMU) and terms of `term=value` pairs
/// (or bare terms) without `/`, a scale that is finite and not 0 and comes with a unit.
pub(crate) fn read(name: &str, text: &str) -> Result<UncoreFile, String> {
    let file: UncoreFile = toml::from_str(text).map_err(|e| format!("{name}: {}", e.message()))?;
    let mut pmus: Vec<&str> = Vec::new();
    for pmu in &file.pmus {
        if pmu.name.is_empty() || pmu.name.contains('/') || pmus.contains(&pmu.name.as_str()) {
            return Err(format!(
                "{name}: PMU `{}` is empty, has `/` or is given twice",
                pmu.name
            ));
        }
        pmus.push(&pmu.name);
        let mut names: Vec<String> = pmu
            .events
            .iter()
            .map(|e| e.name.to_ascii_lowercase())
            .collect();
        names.sort();
        if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!(
                "{name}: {}: `{}` is given twice",
                pmu.name, twice[0]
            ));
        }
        for event in &pmu.events {
            let at = || format!("{name}: {}/{}", pmu.name, event.name);
            if event.name.is_empty()
                || !event
                    .name
                    .chars()
                    .all(|c| c.is_ascii_graphic() && c != '/' && c != ',')
            {
                return Err(format!("{}: not an event name perf reads", at()));
            }
            if event.terms.is_empty()
                || event.terms.contains('/')
                || event.terms.split(',').any(str::is_empty)
            {
                return Err(format!("{}: terms `{}` are not perf's", at(), event.terms));
            }
            match (event.scale, &event.unit) {
                (Some(scale), Some(_)) if scale.is_finite() && scale != 0.0 => {}
                (None, None) => {}
                _ => return Err(format!("{}: a scale needs a unit, finite and not 0", at())),
            }
        }
    }
    Ok(file)
}

/// `number` as perf's generator writes it (`%#llx`: below 10 in decimal, else `0x` and hex).
pub(crate) fn llx(number: u64) -> String {
    if number < 10 {
        number.to_string()
    } else {
        format!("{number:#x}")
    }
}

/// The terms split into the event code of their leading `event=` (where it fits 16 bits and
/// reads back as written) and the rest, without its comma; `None` and all of them otherwise.
pub(crate) fn split_code(terms: &str) -> (Option<u16>, &str) {
    let (first, rest) = terms.split_once(',').unwrap_or((terms, ""));
    let code = first
        .strip_prefix("event=")
        .and_then(|v| match v.strip_prefix("0x") {
            Some(hex) => u16::from_str_radix(hex, 16).ok(),
            None => v.parse().ok(),
        });
    match code {
        Some(code) if first == format!("event={}", llx(u64::from(code))) => (Some(code), rest),
        _ => (None, terms),
    }
}

/// An event's name split before its first `.` (the second part, from the `.` on, empty where
/// it has none).
pub(crate) fn split_name(name: &str) -> (&str, &str) {
    name.split_at(name.find('.').unwrap_or(name.len()))
}
