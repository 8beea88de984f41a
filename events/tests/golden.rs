//! The golden table: `tests/data/golden.toml` rows of event string, CPU model and backend, each
//! with the expected encoding or the expected exact error kind.

use counterhal_events::{Database, EventErrorKind};
use counterhal_hal::{BackendKind, Domain, Encoding, ResolvedEvent, Sign};
use serde::Deserialize;

#[derive(Deserialize)]
struct Table {
    row: Vec<Row>,
}

#[derive(Deserialize)]
struct Row {
    /// The event string.
    e: String,
    /// The CPU model id ("" for none).
    #[serde(default)]
    cpu: String,
    /// The backend: linux, pctr, msr.
    b: String,
    /// The expected encoding, as `describe` prints it.
    want: Option<String>,
    /// The expected error kind name.
    error: Option<String>,
}

fn levels(domain: Domain) -> String {
    let mut text = String::new();
    for (level, letter) in [
        (Domain::USER, 'u'),
        (Domain::KERNEL, 'k'),
        (Domain::HYPERVISOR, 'h'),
    ] {
        if domain.contains(level) {
            text.push(letter);
        }
    }
    // Contexts are printed only when one is left out (`H`, `G`).
    for (context, name) in [
        (Domain::IDLE, "idle"),
        (Domain::HOST, "host"),
        (Domain::GUEST, "guest"),
    ] {
        if !domain.contains(context) {
            text.push_str(" -");
            text.push_str(name);
        }
    }
    text
}

/// A compact, stable description of an encoding.
fn describe_encoding(encoding: &Encoding) -> String {
    match encoding {
        Encoding::Perf(p) => format!("perf {} {:#x} {}", p.type_, p.config, levels(p.domain)),
        Encoding::Pctr(p) => format!("pctr {:#x} ctr={}", p.function, p.counters),
        Encoding::Msr(m) => match m.fixed {
            Some(f) => format!("msr {:#x} ctr={} fixed={f}", m.evtsel, m.counters),
            None => format!("msr {:#x} ctr={}", m.evtsel, m.counters),
        },
    }
}

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
        text.push_str(&describe_encoding(&term.request.encoding));
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
        let backend =
            BackendKind::from_name(&row.b).unwrap_or_else(|| panic!("bad backend {}", row.b));
        let cpu = (!row.cpu.is_empty()).then_some(row.cpu.as_str());
        cpus_seen.insert(row.cpu.clone());
        let got = database.resolve_exact(cpu, &row.e, backend);
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
                row.e, row.cpu, row.b
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
