//! The differential fuzz test of libpfm4's grammar. Oracle: the installed libpfm4 (4.13,
//! Debian `libpfm4-dev`), through a small C program calling `pfm_get_os_event_encoding(...,
//! PFM_OS_NONE)` with user and kernel as the default levels, inactive PMUs enabled. Strings
//! naming what libpfm4's head, whose tables ours are, encodes otherwise than 4.13
//! (`tests/data/libpfm-head-changes.toml`, with the head's commits) are not compared, nor the
//! PMUs 4.13 lacks.
//!
//! For every x86 core PMU libpfm4 knows (its events and their unit masks and modifiers
//! enumerated through libpfm4's API), strings are generated from the PMU's own parts, valid
//! and invalid: unit masks alone and combined within and across groups, modifiers with and
//! without values, repeated with the same and other values, out of range, raw numbers, `.`
//! as the separator, names in mangled case, unknown names. Each string is resolved by
//! counterhal as `PMU::STRING` (always libpfm4's meaning) and as `STRING` on the PMU's CPU
//! model (libpfm4's meaning unless the string is written in the model's own spelling and
//! listed in `tests/data/libpfm-declared.toml`, or in perf's syntax, or names an event only
//! the model has), and compared with libpfm4: the event select
//! (interrupt bit 20 aside) and the second register where libpfm4 gives one, or the class of
//! error (`PFM_ERR_NOTFOUND` not found, `PFM_ERR_ATTR` unknown modifier, `PFM_ERR_ATTR_VAL`
//! value out of range, `PFM_ERR_ATTR_SET` modifier conflict, `PFM_ERR_FEATCOMB` combination
//! not allowed, `PFM_ERR_UMASK` unit mask required; `PFM_ERR_ATTR` of a name that reads as a
//! unit mask is an invalid unit mask). Two cases count as agreeing: libpfm4
//! encodes an event that counts at no privilege level (`:u=0`) and counterhal refuses it as
//! counting nothing; AMD's HostOnly and GuestOnly both set (libpfm4's `:h:g`) and neither
//! set count the same.
//!
//! Seeded and reproducible: `COUNTERHAL_PROP_SEED` picks the strings (default 0),
//! `COUNTERHAL_PROP_CASES` times 24 is how many per run (default 256, so 6,144);
//! `scripts/fuzz` runs it with new seeds. A disagreement prints the string, both results
//! and the seed. Needs a C compiler and libpfm4.

use std::collections::BTreeMap;

use counterhal_conformance::prop::{self, Gen};
use counterhal_conformance::skip::Need;
use counterhal_events::{Database, EventErrorKind};
use counterhal_hal::{Accepts, Domain, Encoding, Family};
use serde::Deserialize;

use crate::common;

/// `list PMU` prints `E name`, then `U name` (unit mask), `B name` (boolean modifier) or `I
/// name` (integer modifier) per attribute; otherwise each stdin line is encoded: `OK code
/// count second` or `ERR code`.
const PROGRAM: &str = r#"
#include <perfmon/pfmlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    char line[4096];
    if (pfm_initialize() != PFM_SUCCESS) { printf("INIT-FAILED\n"); return 1; }
    if (argc == 3 && !strcmp(argv[1], "list")) {
        int p, i, a;
        for (p = 0; p < PFM_PMU_MAX; p++) {
            pfm_pmu_info_t pmu;
            memset(&pmu, 0, sizeof pmu);
            pmu.size = sizeof pmu;
            if (pfm_get_pmu_info(p, &pmu) != PFM_SUCCESS || strcmp(pmu.name, argv[2])) continue;
            for (i = pmu.first_event; i != -1; i = pfm_get_event_next(i)) {
                pfm_event_info_t event;
                memset(&event, 0, sizeof event);
                event.size = sizeof event;
                if (pfm_get_event_info(i, PFM_OS_NONE, &event) != PFM_SUCCESS) continue;
                printf("E\t%s\n", event.name);
                for (a = 0; a < event.nattrs; a++) {
                    pfm_event_attr_info_t attr;
                    memset(&attr, 0, sizeof attr);
                    attr.size = sizeof attr;
                    if (pfm_get_event_attr_info(i, a, PFM_OS_NONE, &attr) != PFM_SUCCESS) continue;
                    printf("%c\t%s\n", attr.type == PFM_ATTR_UMASK ? 'U'
                        : attr.type == PFM_ATTR_MOD_BOOL ? 'B' : 'I', attr.name);
                }
            }
        }
        return 0;
    }
    while (fgets(line, sizeof line, stdin)) {
        pfm_pmu_encode_arg_t arg;
        int ret;
        line[strcspn(line, "\n")] = 0;
        memset(&arg, 0, sizeof arg);
        arg.size = sizeof arg;
        ret = pfm_get_os_event_encoding(line, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg);
        if (ret != PFM_SUCCESS) { printf("ERR\t%d\n", ret); fflush(stdout); continue; }
        printf("OK\t%llx\t%d\t%llx\n", (unsigned long long)arg.codes[0], arg.count,
               arg.count > 1 ? (unsigned long long)arg.codes[1] : 0ULL);
        free(arg.codes);
    }
    return 0;
}
"#;

/// An event as libpfm4 lists it: its unit masks, boolean and integer modifiers.
#[derive(Default, Clone)]
struct Event {
    name: String,
    umasks: Vec<String>,
    booleans: Vec<String>,
    integers: Vec<String>,
}

fn events_of(binary: &std::path::Path, pmu: &str) -> Vec<Event> {
    let output = std::process::Command::new(binary)
        .env("LIBPFM_ENCODE_INACTIVE", "1")
        .args(["list", pmu])
        .output()
        .expect("the libpfm4 helper runs");
    let mut events: Vec<Event> = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some((kind, name)) = line.split_once('\t') else {
            continue;
        };
        match (kind, events.last_mut()) {
            ("E", _) => events.push(Event {
                name: name.to_string(),
                ..Event::default()
            }),
            ("U", Some(e)) => e.umasks.push(name.to_string()),
            ("B", Some(e)) => e.booleans.push(name.to_string()),
            ("I", Some(e)) => e.integers.push(name.to_string()),
            _ => {}
        }
    }
    events
}

/// `name` with the case of some letters flipped.
fn mangle(g: &mut Gen, name: &str) -> String {
    name.chars()
        .map(|c| {
            if g.one_in(3) {
                if c.is_ascii_uppercase() {
                    c.to_ascii_lowercase()
                } else {
                    c.to_ascii_uppercase()
                }
            } else {
                c
            }
        })
        .collect()
}

const BOOLEAN_VALUES: &[&str] = &["0", "1", "y", "n", "T", "f", "2", "yes", ""];
const INTEGER_VALUES: &[&str] = &[
    "0", "1", "2", "3", "255", "256", "-1", "010", "0x10", "0x", "", "x", "65535", "65536", "4095",
    "4096", "+1",
];

/// One attribute of `event`: a unit mask, a modifier with or without a value, a raw number
/// or an unknown name.
fn attribute(g: &mut Gen, event: &Event) -> String {
    match g.below(12) {
        0..=4 if !event.umasks.is_empty() => {
            let name = g.pick(&event.umasks).clone();
            mangle(g, &name)
        }
        5..=7 if !event.booleans.is_empty() => {
            let name = g.pick(&event.booleans).clone();
            if g.one_in(2) {
                name
            } else {
                format!("{name}={}", g.pick(BOOLEAN_VALUES))
            }
        }
        8 | 9 if !event.integers.is_empty() => {
            let name = g.pick(&event.integers).clone();
            if g.one_in(8) {
                name
            } else {
                format!("{name}={}", g.pick(INTEGER_VALUES))
            }
        }
        10 => g
            .pick(&[
                "0x1",
                "0xff",
                "0x100",
                "0xf",
                "0x3",
                "0x0",
                "0xzz",
                "0x4000000000",
            ])
            .to_string(),
        _ => g
            .pick(&["FOO", "", "h", "g", "p", "H", "uk", "t=1", "c"])
            .to_string(),
    }
}

/// One string: an event of `events` and up to five attributes, repeats among them.
fn string(g: &mut Gen, events: &[Event]) -> String {
    let event = g.pick(events);
    let mut name = if g.one_in(4) {
        mangle(g, &event.name)
    } else {
        event.name.clone()
    };
    if g.one_in(40) {
        name.push('X');
    }
    let mut parts: Vec<String> = Vec::new();
    for _ in 0..g.below(6) {
        let part = if !parts.is_empty() && g.one_in(4) {
            // A repeat, with its value or another.
            let again = g.pick(&parts).clone();
            match again.split_once('=') {
                Some((key, _)) if g.one_in(2) => format!("{key}={}", g.pick(&["0", "1", "2"])),
                Some((key, _)) if g.one_in(2) => key.to_string(),
                _ => again,
            }
        } else {
            attribute(g, event)
        };
        parts.push(part);
    }
    let mut text = name;
    for part in parts {
        text.push(if g.one_in(6) { '.' } else { ':' });
        text.push_str(&part);
    }
    if g.one_in(100) {
        let tail: &&str = g.pick(&[",", " ", "::x"]);
        text.push_str(tail);
    }
    text
}

/// Strings of the issue that asked for libpfm4's grammar, tried on every PMU beside the
/// generated ones (where a PMU lacks the event, both must say not found).
const FIXED: &[&str] = &[
    "l2_lines_in:i:i=1",
    "L2_LINES_IN:e:e=0",
    "ISSUE_SLOTS_NOT_CONSUMED.RESOURCE_FULL.k=1.u=0",
    "RESOURCE_STALLS:SB:RS",
    "offcore_response_0:0xf",
    "LLC_REFERences",
    "instructions_retired",
    "unhalted_core_cycles",
    "BRANCH_INSTRUCTIONS_RETIRED",
    "uops_issued:0xff:stall_cycles",
    "L2_LINES_IN:SELF:PREFETCH:ANY",
    "L2_CACHE_MISS:ALL:DATA",
    "UOPS_ISSUED:ANY:e",
    "UOPS_ISSUED:ANY:e:c=1",
    "BUS_TRANS_ANY",
    "BUS_TRANS_ANY:SELF",
    "INST_RETIRED:ANY_P:u:u=0",
    "INST_RETIRED:ANY_P:e:e:e=0",
    "INST_RETIRED.ANY_P:pp",
    "RETIRED_INSTRUCTIONS:h:u",
    "RETIRED_INSTRUCTIONS:c=010",
];

/// libpfm4's answer to one string.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Theirs {
    Encoded { code: u64, second: Option<u64> },
    Refused(i32),
}

fn parse_answer(line: &str) -> Theirs {
    let fields: Vec<&str> = line.split('\t').collect();
    match fields.as_slice() {
        ["OK", code, count, second] => Theirs::Encoded {
            code: u64::from_str_radix(code, 16).expect("hex code"),
            second: (*count != "1").then(|| u64::from_str_radix(second, 16).expect("hex")),
        },
        ["ERR", code] => Theirs::Refused(code.parse().expect("error code")),
        _ => panic!("the libpfm4 helper answered `{line}`"),
    }
}

/// The kind each libpfm4 error class maps to.
fn kind_of(code: i32) -> Option<EventErrorKind> {
    Some(match code {
        -4 | -2 => EventErrorKind::NotFound,
        -8 => EventErrorKind::UnknownModifier,
        -9 | -11 => EventErrorKind::ValueOutOfRange,
        -10 => EventErrorKind::ModifierConflict,
        -5 => EventErrorKind::CombinationNotAllowed,
        -6 => EventErrorKind::UnitMaskRequired,
        _ => return None,
    })
}

type Ours = Result<(u64, Option<u64>), (EventErrorKind, String)>;

/// An x86 backend that filters user, kernel, host and guest (the msr backend on AMD): AMD's
/// `h` and `g` are host and guest.
const AMD: Accepts = Accepts::new(
    &[Family::Evtsel],
    Domain::from_bits_truncate(
        Domain::USER.bits() | Domain::KERNEL.bits() | Domain::HOST.bits() | Domain::GUEST.bits(),
    ),
    Domain::DEFAULT,
);

fn ours(db: &Database, model: &str, text: &str) -> Ours {
    let accepts = if model.starts_with("amd64") {
        &AMD
    } else {
        &common::X86
    };
    match db.resolve_exact(Some(model), text, accepts) {
        Ok(resolved) => match &resolved.terms[0].request.encoding {
            Encoding::Evtsel(e) => Ok((e.register_value(), e.extra.map(|x| x.value))),
            other => Err((
                EventErrorKind::Unsupported,
                format!("not an EVTSEL: {other}"),
            )),
        },
        Err(e) => Err((e.kind(), e.to_string())),
    }
}

/// Whether `ours` agrees with `theirs` (see the module's documentation for the two
/// equivalences).
fn agree(ours: &Ours, theirs: Theirs) -> bool {
    const HOST_GUEST: u64 = (1 << 40) | (1 << 41);
    let normal = |v: u64| {
        if v & HOST_GUEST == HOST_GUEST {
            v & !HOST_GUEST
        } else {
            v
        }
    };
    match (ours, theirs) {
        (Ok((value, extra)), Theirs::Encoded { code, second }) => {
            normal(*value) == normal(code & !(1 << 20)) && *extra == second
        }
        (Err((kind, _)), Theirs::Encoded { code, .. }) => {
            *kind == EventErrorKind::CombinationNotAllowed && code & (3 << 16) == 0
        }
        // An unknown attribute is an unknown unit mask where its name reads as one.
        (Err((EventErrorKind::UnitMaskInvalid, _)), Theirs::Refused(-8)) => true,
        (Err((kind, _)), Theirs::Refused(code)) => kind_of(code) == Some(*kind),
        (Ok(_), Theirs::Refused(_)) => false,
    }
}

/// Modifiers perf has and libpfm4 lacks.
fn perf_only(part: &str, intel: bool) -> bool {
    let key = part.split('=').next().unwrap_or_default();
    matches!(key, "p" | "pp" | "ppp" | "P" | "H" | "G" | "frontend")
        || (intel && key == "h")
        || (key.len() > 1 && key.chars().all(|c| "ukhHGpP".contains(c)))
}

/// Whether `text` is a string in perf's syntax: a name in the model's own spelling (an
/// Intel dotted name, an event without unit masks) with a modifier only perf has; such a
/// string keeps perf's meaning.
fn perf_string(db: &Database, model: &str, text: &str) -> bool {
    let mut parts = text.split(':');
    let head = parts.next().unwrap_or_default();
    let cpu = db.model(model).expect("model");
    let own = if let Some((base, mask)) = head.split_once('.') {
        cpu.event(base).is_some_and(|e| e.unit_mask(mask).is_some())
            || cpu.event(head).is_some()
            || (model.starts_with("amd64")
                && cpu
                    .event_aliases()
                    .iter()
                    .any(|(a, _)| a.eq_ignore_ascii_case(&head.replacen('.', ":", 1))))
    } else {
        !model.starts_with("amd64") && cpu.event(head).is_some_and(|e| e.unit_masks().is_empty())
    };
    own && parts.any(|p| perf_only(p, !model.starts_with("amd64")))
}

/// `tests/data/libpfm-declared.toml`: names each model spells as its source does and
/// libpfm4 encodes otherwise.
#[derive(Deserialize)]
struct Declared {
    #[serde(default)]
    differs: Vec<DeclaredNames>,
}

#[derive(Deserialize)]
struct DeclaredNames {
    pmu: String,
    names: Vec<String>,
}

/// `tests/data/libpfm-head-changes.toml`: what libpfm4's head, whose tables ours are, encodes
/// otherwise than 4.13.
#[derive(Deserialize)]
struct HeadChanges {
    changed: Vec<Changed>,
}

/// Names of some PMUs the head changed: `EVENT:UMASK` or `EVENT` (its defaults).
#[derive(Deserialize)]
struct Changed {
    pmus: Vec<String>,
    names: Vec<String>,
    evidence: String,
}

/// What the head changed since 4.13, as (PMU, event, unit mask or None for the event's
/// defaults). A string naming one is encoded as the head does, not as the installed 4.13 does
/// (the head sweep holds it), so it is not compared.
fn corrected() -> Vec<(String, String, Option<String>)> {
    let changes: HeadChanges = toml::from_str(include_str!("data/libpfm-head-changes.toml"))
        .expect("libpfm-head-changes.toml parses");
    let mut out = Vec::new();
    for c in changes.changed {
        assert!(
            !c.evidence.is_empty(),
            "a change without evidence: {:?}",
            c.names
        );
        for pmu in &c.pmus {
            for name in &c.names {
                let (event, umask) = match name.split_once(':') {
                    Some((e, u)) => (e, Some(u.to_string())),
                    None => (name.as_str(), None),
                };
                out.push((pmu.clone(), event.to_string(), umask));
            }
        }
    }
    out
}

/// Whether `text` on `pmu` names what the head changed: a changed unit mask, or an event whose
/// defaults changed with no unit mask of its own named (only modifiers, if anything, follow).
fn names_corrected(corrected: &[(String, String, Option<String>)], pmu: &str, text: &str) -> bool {
    let mut parts = text.split([':', '.']);
    let event = parts.next().unwrap_or_default();
    let attributes: Vec<&str> = parts.collect();
    let modifier = |a: &&str| {
        let key = a.split('=').next().unwrap_or_default().to_ascii_lowercase();
        [
            "k", "u", "e", "i", "c", "t", "h", "g", "ldlat", "intx", "intxcp", "fe_thres",
        ]
        .contains(&key.as_str())
    };
    corrected.iter().any(|(p, e, u)| {
        p == pmu
            && e.eq_ignore_ascii_case(event)
            && match u {
                Some(u) => attributes.iter().any(|a| a.eq_ignore_ascii_case(u)),
                None => attributes.iter().all(modifier),
            }
    })
}

#[test]
fn counterhal_reads_libpfm4_strings_as_libpfm4_does() {
    let binary = match common::libpfm::build(PROGRAM, "fuzz") {
        Ok(binary) => binary,
        Err(why) => counterhal_conformance::skip!(
            Need::Tools,
            "libpfm4 fuzz not run (libpfm4-dev and a C compiler build it): {why}"
        ),
    };
    let declared: Declared =
        toml::from_str(include_str!("data/libpfm-declared.toml")).expect("declared parses");
    let declared: BTreeMap<&str, Vec<String>> = declared
        .differs
        .iter()
        .map(|d| {
            (
                d.pmu.as_str(),
                d.names.iter().map(|n| n.to_ascii_uppercase()).collect(),
            )
        })
        .collect();
    let db = Database::shipped().expect("the shipped database loads");
    let seed: u64 = std::env::var("COUNTERHAL_PROP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut g = Gen::new(seed ^ 0x6c69_6270_666d_3400);
    let mut pmus: Vec<&str> = Database::libpfm4_pmus().collect();
    let mut per_pmu: BTreeMap<&str, Vec<Event>> = BTreeMap::new();
    for &pmu in &pmus {
        per_pmu.insert(pmu, events_of(&binary, pmu));
    }
    // The PMUs of the head the installed libpfm4 lacks (`emr`, `gnr`, `adl_glc`, Zen 5): the
    // head sweep holds those.
    pmus.retain(|pmu| !per_pmu[pmu].is_empty());
    let total = prop::cases() * 24;
    let mut cases: Vec<(&str, String)> = Vec::new();
    for _ in 0..total {
        let pmu = *g.pick(&pmus);
        let events = &per_pmu[pmu];
        if events.is_empty() {
            continue;
        }
        cases.push((pmu, string(&mut g, events)));
    }
    for &pmu in &pmus {
        for text in FIXED {
            cases.push((pmu, (*text).to_string()));
        }
    }
    let lines: Vec<String> = cases.iter().map(|(p, s)| format!("{p}::{s}")).collect();
    let answers = common::libpfm::answers(&binary, &lines).expect("the libpfm4 helper runs");
    assert_eq!(answers.len(), lines.len(), "one answer per string");
    let corrected = corrected();
    let mut failures = Vec::new();
    let (mut encoded, mut refused) = (0, 0);
    for ((pmu, text), answer) in cases.iter().zip(&answers) {
        if names_corrected(&corrected, pmu, text) {
            continue;
        }
        let theirs = parse_answer(answer);
        match theirs {
            Theirs::Encoded { .. } => encoded += 1,
            Theirs::Refused(_) => refused += 1,
        }
        let model = db
            .model(pmu)
            .map(|m| m.id.clone())
            .unwrap_or_else(|| panic!("no CPU model for libpfm4 PMU {pmu}"));
        let prefixed = format!("{pmu}::{text}");
        let with_prefix = ours(&db, &model, &prefixed);
        if !agree(&with_prefix, theirs) {
            failures.push(format!(
                "`{prefixed}`: counterhal {with_prefix:?}, libpfm4 {theirs:?}"
            ));
            continue;
        }
        // A string with `::` further on names a PMU when written alone.
        if text.contains("::") {
            continue;
        }
        let alone = ours(&db, &model, text);
        // An event libpfm4's table lacks and the model has (Intel's `UOPS_ISSUED` on
        // Tremont) is the model's, written alone.
        let name = text.split([':', '.']).next().unwrap_or_default();
        let models_own = theirs == Theirs::Refused(-4)
            && db.model(&model).is_some_and(|m| m.event(name).is_some());
        if !models_own && !agree(&alone, theirs) {
            let head = text.split(':').next().unwrap_or_default();
            let listed = declared
                .get(pmu)
                .is_some_and(|names| names.contains(&head.to_ascii_uppercase()));
            if !listed && !perf_string(&db, &model, text) {
                failures.push(format!(
                    "`{text}` on model {model}: counterhal {alone:?}, libpfm4 {theirs:?}{}",
                    if listed {
                        ""
                    } else {
                        " (not a declared difference)"
                    }
                ));
            }
        }
    }
    println!(
        "libpfm4 fuzz: {} strings over {} PMUs (seed {seed}): libpfm4 encodes {encoded}, refuses {refused}; {} disagreements",
        cases.len(),
        pmus.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} strings disagree with libpfm4 (rerun with COUNTERHAL_PROP_SEED={seed} COUNTERHAL_PROP_CASES={}):\n{}",
        failures.len(),
        cases.len(),
        prop::cases(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
