//! The golden table: `tests/data/golden.toml` rows of event string, CPU model and the kind of
//! backend it is resolved for, each with the expected encoding or the expected exact error
//! kind.

use counterhal_events::{Database, EventErrorKind};
use counterhal_hal::{ResolvedEvent, Sign};
use serde::Deserialize;

use crate::common;

#[derive(Deserialize)]
struct Table {
    row: Vec<Row>,
}

#[derive(Deserialize)]
struct Row {
    /// The event string.
    e: String,
    /// The CPU model id (absent for none).
    #[serde(default)]
    cpu: String,
    /// What it is resolved for: `perf` or `x86` (see `common`).
    #[serde(rename = "for")]
    profile: String,
    /// The expected encoding, as `Encoding`'s Display prints it.
    want: Option<String>,
    /// The expected error kind name.
    error: Option<String>,
}

/// The terms' encodings as `Encoding`'s Display prints them, joined by their signs.
fn describe(resolved: &ResolvedEvent) -> String {
    let mut text = String::new();
    for (i, term) in resolved.terms.iter().enumerate() {
        if i > 0 {
            text.push_str(if term.sign == Sign::Plus {
                " + "
            } else {
                " - "
            });
        }
        text.push_str(&term.request.encoding.to_string());
    }
    text
}

#[test]
fn golden_table() {
    let text = include_str!("data/golden.toml");
    let table: Table = toml::from_str(text).expect("golden.toml parses");
    let database = Database::shipped().expect("shipped database loads");
    let mut failures = Vec::new();
    let mut kinds_seen = std::collections::HashSet::new();
    let mut cpus_seen = std::collections::HashSet::new();
    for row in &table.row {
        let accepts = common::accepts(&row.profile);
        let cpu = (!row.cpu.is_empty()).then_some(row.cpu.as_str());
        cpus_seen.insert(row.cpu.clone());
        let got = database.resolve_exact(cpu, &row.e, accepts);
        let outcome = match &got {
            Ok(resolved) => describe(resolved),
            Err(error) => format!("error {}", error.kind().name()),
        };
        let expected = match (&row.want, &row.error) {
            (Some(want), None) => want.clone(),
            (None, Some(kind)) => {
                assert!(
                    EventErrorKind::from_name(kind).is_some(),
                    "unknown error kind {kind}"
                );
                kinds_seen.insert(kind.clone());
                format!("error {kind}")
            }
            _ => panic!("row {:?} needs exactly one of want and error", row.e),
        };
        if outcome != expected {
            let detail = match &got {
                Err(error) => format!(" ({error})"),
                Ok(_) => String::new(),
            };
            failures.push(format!(
                "{} [{}/{}]: want `{expected}`, got `{outcome}`{detail}",
                row.e, row.cpu, row.profile
            ));
        }
    }
    println!("golden rows: {}", table.row.len());
    assert!(
        failures.is_empty(),
        "{} of {} rows differ:\n{}",
        failures.len(),
        table.row.len(),
        failures.join("\n")
    );
    assert!(
        table.row.len() >= 150,
        "the golden table needs at least 150 rows"
    );
    for kind in EventErrorKind::ALL {
        assert!(
            kinds_seen.contains(kind.name()),
            "no golden row for error kind {}",
            kind.name()
        );
    }
    for model in database.models() {
        assert!(
            cpus_seen.contains(&model.id),
            "no golden row for CPU {}",
            model.id
        );
    }
}
