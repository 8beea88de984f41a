//! libpfm4's own expectations: every row of libpfm4's `tests/validate_x86.c` (the event
//! string, the return code, `codes[0]` and `codes[1]` libpfm4's `validate` program checks
//! `pfm_get_event_encoding` against) for a PMU the database covers, resolved by us.
//!
//! Oracle: validate_x86.c of the libpfm4 snapshot the shipped headers name (commit
//! 91970fe6eb4e80b63f77fb54a9592e28a207050c, read from `COUNTERHAL_LIBPFM4_SNAPSHOT`, a
//! directory holding `tests/validate_x86.c`; skipped without it). The rows are read at run time,
//! never copied. A row libpfm4 encodes must resolve to the same EVTSEL (the interrupt bit 20
//! masked: libpfm4 sets it, a counting EVTSEL does not) and, where the row gives `codes[1]`,
//! the same second register value; a row libpfm4 refuses must be refused. Every PMU of the
//! file must be a model id or alias, or listed as not covered with the reason; every row that
//! does not agree must be listed in `tests/data/libpfm-validate.toml` with its verdict and
//! evidence, and every entry there must still apply.

use std::collections::BTreeMap;
use std::path::PathBuf;

use counterhal_conformance::skip::Need;
use counterhal_events::{Database, EventErrorKind};
use counterhal_hal::Encoding;
use serde::Deserialize;

use crate::common;

const SNAPSHOT_ENV: &str = "COUNTERHAL_LIBPFM4_SNAPSHOT";
const LIBPFM4_COMMIT: &str = "91970fe6eb4e80b63f77fb54a9592e28a207050c";

/// One row of validate_x86.c's `x86_test_events`.
#[derive(Debug)]
struct Row {
    /// Its line in the file.
    line: usize,
    /// The event string (`PMU::EVENT:...`).
    name: String,
    /// The return code's name (`PFM_SUCCESS`, `PFM_ERR_ATTR_SET`).
    ret: String,
    /// `codes[0]`.
    code: u64,
    /// `codes[1]`, where the row gives one.
    second: Option<u64>,
}

/// The field `key` of a row's text: after `key`, an `=` and blanks, a quoted string's
/// contents, or the text up to a `,` or the row's end.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let start = text.find(key)? + key.len();
    let rest = text[start..].trim_start().strip_prefix('=')?.trim_start();
    if let Some(quoted) = rest.strip_prefix('"') {
        return quoted.find('"').map(|end| &quoted[..end]);
    }
    let end = rest.find([',', '\n', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// A C integer literal of the file (`0x5300c0ull`).
fn integer(text: &str) -> u64 {
    let digits = text.trim_end_matches(['u', 'U', 'l', 'L']);
    match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => digits.parse(),
    }
    .unwrap_or_else(|e| panic!("`{text}`: not an integer ({e})"))
}

/// The rows of `x86_test_events` in validate_x86.c's text.
fn rows(text: &str) -> Vec<Row> {
    let start = text
        .find("x86_test_events[]")
        .expect("validate_x86.c has x86_test_events");
    let end = start + text[start..].find("\n};").expect("the array ends");
    let body = &text[start..end];
    let starts: Vec<usize> = body.match_indices("SRC_LINE").map(|(i, _)| i).collect();
    let mut rows = Vec::new();
    for (k, &at) in starts.iter().enumerate() {
        let chunk = &body[at..starts.get(k + 1).copied().unwrap_or(body.len())];
        let line = text[..start + at].lines().count();
        let name = field(chunk, ".name").expect("a row has a name");
        let name = name.to_string();
        // A row without `.ret` expects 0, PFM_SUCCESS.
        let ret = field(chunk, ".ret").unwrap_or("PFM_SUCCESS");
        rows.push(Row {
            line,
            name,
            ret: ret.to_string(),
            code: field(chunk, ".codes[0]").map_or(0, integer),
            second: field(chunk, ".codes[1]").map(integer),
        });
    }
    rows
}

/// The kind of error that answers libpfm4's return code `ret`; None for PFM_SUCCESS. libpfm4's
/// classes (include/perfmon/pfmlib.h): no such event or PMU (`PFM_ERR_NOTFOUND`, and
/// `PFM_ERR_INVAL` for a string it cannot read), an unknown attribute (`PFM_ERR_ATTR`), a
/// value out of range (`PFM_ERR_ATTR_VAL`), an attribute set twice or against its unit mask
/// (`PFM_ERR_ATTR_SET`), parts that do not combine (`PFM_ERR_FEATCOMB`), a unit mask needed
/// (`PFM_ERR_UMASK`).
fn refusal(ret: &str) -> Option<EventErrorKind> {
    Some(match ret {
        "PFM_SUCCESS" => return None,
        "PFM_ERR_NOTFOUND" | "PFM_ERR_INVAL" => EventErrorKind::NotFound,
        "PFM_ERR_ATTR" => EventErrorKind::UnknownModifier,
        "PFM_ERR_ATTR_VAL" => EventErrorKind::ValueOutOfRange,
        "PFM_ERR_ATTR_SET" => EventErrorKind::ModifierConflict,
        "PFM_ERR_FEATCOMB" => EventErrorKind::CombinationNotAllowed,
        "PFM_ERR_UMASK" => EventErrorKind::UnitMaskRequired,
        other => panic!("validate_x86.c expects {other}, a code this test does not map"),
    })
}

/// `tests/data/libpfm-validate.toml`.
#[derive(Deserialize)]
struct Explanations {
    not_covered: Vec<NotCovered>,
    #[serde(default)]
    case: Vec<Case>,
}

/// PMUs of the file no model covers (`*` in a name for any text: `*_unc_*`).
#[derive(Deserialize)]
struct NotCovered {
    pmus: Vec<String>,
    reason: String,
}

/// Rows where we do not agree with the file, and why.
#[derive(Deserialize)]
struct Case {
    /// The rows' event strings, as the file writes them.
    rows: Vec<String>,
    /// `libpfm4-wrong` (libpfm4's value is not the event its name means: ours is kept, the
    /// evidence says why), `not-an-evtsel` (libpfm4 encodes a pseudo-event no event select
    /// can count, which the database refuses) or `refused-otherwise` (both refuse, with
    /// another class of error).
    verdict: String,
    evidence: String,
}

/// Whether `name` matches `pattern`, whose `*`s stand for any text.
fn matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Our answer for a row: the register value and second register value, or the error.
fn ours(
    database: &Database,
    model: &str,
    name: &str,
) -> Result<(u64, Option<u64>), (EventErrorKind, String)> {
    let resolved = database
        .resolve_exact(Some(model), name, &common::X86)
        .map_err(|e| (e.kind(), format!("{:?}: {e}", e.kind())))?;
    match &resolved.terms[0].request.encoding {
        Encoding::Evtsel(evtsel) => Ok((evtsel.register_value(), evtsel.extra.map(|e| e.value))),
        other => Err((
            EventErrorKind::Unsupported,
            format!("not an EVTSEL: {other}"),
        )),
    }
}

#[test]
fn libpfm4_validate_rows_resolve_alike() {
    let Some(root) = std::env::var_os(SNAPSHOT_ENV).map(PathBuf::from) else {
        counterhal_conformance::skip!(
            Need::Source,
            "libpfm4's validate_x86.c not compared: set {SNAPSHOT_ENV} to a libpfm4 snapshot at {LIBPFM4_COMMIT} (holding tests/validate_x86.c)"
        )
    };
    let path = root.join("tests/validate_x86.c");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let explanations: Explanations = toml::from_str(include_str!("data/libpfm-validate.toml"))
        .expect("libpfm-validate.toml parses");
    let database = Database::shipped().expect("shipped database loads");
    let rows = rows(&text);
    assert!(rows.len() > 1000, "{} rows", rows.len());
    for case in &explanations.case {
        assert!(
            !case.rows.is_empty()
                && matches!(
                    case.verdict.as_str(),
                    "libpfm4-wrong" | "not-an-evtsel" | "refused-otherwise"
                )
                && !case.evidence.is_empty(),
            "a case of libpfm-validate.toml without rows, verdict or evidence: {:?}",
            case.rows
        );
    }
    let mut used: Vec<Vec<bool>> = explanations
        .case
        .iter()
        .map(|c| vec![false; c.rows.len()])
        .collect();
    let mut covered_used = vec![false; explanations.not_covered.len()];
    let mut unexplained = Vec::new();
    // Per PMU: rows compared, rows agreeing.
    let mut tallies: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for row in &rows {
        let (pmu, _) = row
            .name
            .split_once("::")
            .unwrap_or_else(|| panic!("line {}: `{}` names no PMU", row.line, row.name));
        let not_covered = explanations
            .not_covered
            .iter()
            .position(|n| n.pmus.iter().any(|p| matches(p, pmu)));
        let model = database.model_id(pmu);
        let model = match (model, not_covered) {
            (Some(model), Some(_)) => {
                unexplained.push(format!(
                    "PMU {pmu} is listed as not covered, but is model {model}"
                ));
                continue;
            }
            (None, Some(i)) => {
                covered_used[i] = true;
                continue;
            }
            (None, None) => {
                unexplained.push(format!(
                    "line {}: PMU {pmu} is no model and not listed",
                    row.line
                ));
                continue;
            }
            (Some(model), None) => model,
        };
        let tally = tallies.entry(pmu.to_string()).or_default();
        tally.0 += 1;
        let answer = ours(&database, model, &row.name);
        let agrees = match (&answer, refusal(&row.ret)) {
            (Ok((value, extra)), None) => {
                *value == row.code & !(1 << 20) && (row.second.is_none() || *extra == row.second)
            }
            // An unknown attribute is an unknown unit mask where its name reads as one
            // (as tests/libpfm_fuzz.rs compares them).
            (Err((EventErrorKind::UnitMaskInvalid, _)), Some(EventErrorKind::UnknownModifier)) => {
                true
            }
            (Err((kind, _)), Some(theirs)) => *kind == theirs,
            _ => false,
        };
        if agrees {
            tally.1 += 1;
            continue;
        }
        let theirs = if refusal(&row.ret).is_none() {
            format!(
                "{:#x}{}",
                row.code,
                row.second.map_or(String::new(), |s| format!(" {s:#x}"))
            )
        } else {
            row.ret.clone()
        };
        let ours = match answer {
            Ok((value, extra)) => format!(
                "{value:#x}{}",
                extra.map_or(String::new(), |s| format!(" {s:#x}"))
            ),
            Err((_, e)) => e,
        };
        match explanations
            .case
            .iter()
            .enumerate()
            .find_map(|(i, c)| c.rows.iter().position(|r| *r == row.name).map(|j| (i, j)))
        {
            Some((i, j)) => used[i][j] = true,
            None => unexplained.push(format!(
                "line {}: {}: libpfm4 {theirs}, ours {ours}",
                row.line, row.name
            )),
        }
    }
    let (mut compared, mut agreeing) = (0, 0);
    for (pmu, (rows, equal)) in &tallies {
        println!("{pmu:24} {rows:4} rows, {equal:4} agree");
        compared += rows;
        agreeing += equal;
    }
    println!(
        "libpfm4 validate_x86.c: {} rows, {compared} of PMUs we cover, {agreeing} agree",
        rows.len()
    );
    assert!(
        unexplained.is_empty(),
        "{} rows not agreeing and not explained in tests/data/libpfm-validate.toml:\n{}",
        unexplained.len(),
        unexplained.join("\n")
    );
    let mut stale: Vec<String> = explanations
        .case
        .iter()
        .zip(&used)
        .flat_map(|(c, used)| {
            c.rows
                .iter()
                .zip(used)
                .filter(|(_, used)| !**used)
                .map(move |(row, _)| format!("{row} ({})", c.verdict))
        })
        .collect();
    stale.extend(
        explanations
            .not_covered
            .iter()
            .zip(&covered_used)
            .filter(|(_, used)| !**used)
            .map(|(n, _)| format!("not covered {:?} ({})", n.pmus, n.reason)),
    );
    assert!(
        stale.is_empty(),
        "entries of tests/data/libpfm-validate.toml that no longer apply:\n{}",
        stale.join("\n")
    );
}
