//! Distinct names with one encoding: over every model of the shipped database, every pair of
//! native names (an event without unit masks, or an event's unit mask, written `EVENT.UMASK`)
//! that resolve to the same encoding (the same event-select value with the same filter bits
//! and the same extra-register value, or the same CESR field) and are not declared to stand
//! for one another (an event alias, or a unit mask libpfm4 defines as others, `same_as`).
//!
//! Two names of different meaning cannot share an encoding: such a pair is a data error
//! unless it is a documented synonym. `tests/data/duplicate-encodings.toml` classifies every
//! pair; the test fails on a pair it does not classify, on a classification that no longer
//! applies (the pair is gone), and on a `deprecated-synonym` neither of whose names is flagged
//! deprecated. The pairs classified `libpfm4-synonym` are asked of the installed libpfm4 4.13,
//! which must encode both names alike wherever it has both; the other classes cite the source
//! table each model's header names (Intel perfmon's own "This event is alias to ...", its
//! descriptions, the generator's modules that add libpfm4's names).
//!
//! A fixed-counter-only pseudo-event is compared with its fixed counter: the older Intel tables
//! give all of them one code.

use std::collections::{BTreeMap, BTreeSet};

use counterhal_events::{CpuModel, Database};
use counterhal_hal::{CounterSet, Encoding, Evtsel};
use serde::Deserialize;

use crate::common;

/// `tests/data/duplicate-encodings.toml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Classes {
    #[serde(default)]
    rule: Vec<Rule>,
    pair: Vec<Pair>,
}

/// A class for every pair of two spellings of one name (`OCR.*` and `OFFCORE_RESPONSE_0.*`: the
/// starred parts equal with `.` and `_` read alike), on some models.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    models: Vec<String>,
    names: [String; 2],
    class: String,
    reason: String,
}

impl Rule {
    /// Whether the rule covers the (sorted) pair `names`.
    fn covers(&self, names: &[String; 2]) -> bool {
        let rest = |name: &str, pattern: &str| {
            let prefix = pattern.strip_suffix('*')?;
            name.strip_prefix(prefix).map(|r| r.replace('.', "_"))
        };
        let [p, q] = &self.names;
        let [a, b] = names;
        let matched = |x: &str, y: &str| match (rest(x, p), rest(y, q)) {
            (Some(r1), Some(r2)) => r1 == r2,
            _ => false,
        };
        matched(a, b) || matched(b, a)
    }
}

/// One classified pair, on some models.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Pair {
    models: Vec<String>,
    /// The two names, sorted.
    names: [String; 2],
    class: String,
    reason: String,
}

/// The classes a pair may have.
const CLASSES: &[&str] = &[
    // Intel's table lists both names, one flagged deprecated (a renamed event kept).
    "deprecated-synonym",
    // Intel's table lists both names, current, for one encoding: a documented synonym.
    "intel-synonym",
    // libpfm4's table lists both names for one encoding (a synonym it keeps).
    "libpfm4-synonym",
    // A libpfm4 name added beside Intel's (dropped.rs) whose encoding equals an Intel name's.
    "libpfm4-name-beside-intel",
    // The two names count the same by the architecture (fixed-counter twins and the like).
    "architectural-twin",
    // A data error of the source, kept: the reason says why it is not corrected.
    "source-error-kept",
];

/// The compared part of an encoding: every programmed field but the privilege bits and the
/// counters it may use.
fn key(encoding: &Encoding) -> Option<String> {
    match encoding {
        Encoding::Evtsel(e) => {
            let value = e.register_value() & !(Evtsel::USR | Evtsel::OS | Evtsel::INT | Evtsel::EN);
            // A fixed-counter pseudo-event is told apart by its fixed counter alone (the older
            // tables give every one event 0x0a or 0x00 with unit mask 0).
            let fixed = if e.counters == CounterSet::NONE {
                e.fixed
            } else {
                None
            };
            Some(format!(
                "evtsel {value:#x} extra {:?} fixed-only {fixed:?}",
                e.extra.map(|x| (x.address(), x.value))
            ))
        }
        Encoding::P5Cesr(c) => Some(format!("cesr {:#x} c {}", c.event, c.count_cycles)),
        _ => None,
    }
}

/// Every native name of `model` that resolves alone, and its encoding key, with whether it
/// is flagged deprecated.
fn names(database: &Database, model: &CpuModel) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for event in model.events() {
        let mut texts = Vec::new();
        if event.unit_masks().is_empty() {
            texts.push((event.name.clone(), event.flags.deprecated));
        }
        for mask in event.unit_masks() {
            // Declared to stand for other unit masks (libpfm4's `uequiv`).
            if !mask.same_as.is_empty() {
                continue;
            }
            texts.push((
                format!("{}.{}", event.name, mask.name),
                event.flags.deprecated || mask.deprecated,
            ));
        }
        for (text, deprecated) in texts {
            let Ok(resolved) = database.resolve_exact(Some(&model.id), &text, &common::X86) else {
                continue;
            };
            let [term] = &resolved.terms[..] else {
                continue;
            };
            if let Some(k) = key(&term.request.encoding) {
                out.push((text.to_ascii_uppercase(), k, deprecated));
            }
        }
    }
    out
}

/// Every pair of distinct names of one encoding on each model: (model, [a, b]) -> whether
/// one of the two is deprecated.
fn pairs(database: &Database) -> BTreeMap<(String, [String; 2]), bool> {
    let mut out = BTreeMap::new();
    for model in database.models() {
        let mut by_key: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
        for (name, k, deprecated) in names(database, model) {
            by_key.entry(k).or_default().push((name, deprecated));
        }
        for group in by_key.values() {
            for (i, (a, da)) in group.iter().enumerate() {
                for (b, db) in &group[i + 1..] {
                    if a == b {
                        continue;
                    }
                    let mut names = [a.clone(), b.clone()];
                    names.sort();
                    out.insert((model.id.clone(), names), *da || *db);
                }
            }
        }
    }
    out
}

/// Every pair of distinct names with one encoding is classified, every classification still
/// applies, and no class contradicts the data. Oracle: the source tables named in each
/// generated file's header (Intel perfmon, libpfm4), as each reason cites them.
#[test]
fn every_pair_of_names_with_one_encoding_is_classified() {
    let classes: Classes = toml::from_str(include_str!("data/duplicate-encodings.toml"))
        .expect("duplicate-encodings.toml parses");
    let database = Database::shipped().expect("shipped database loads");
    let found = pairs(&database);
    let mut problems = Vec::new();
    let mut listed = BTreeSet::new();
    let mut per_class: BTreeMap<&str, usize> = BTreeMap::new();
    for pair in &classes.pair {
        assert!(
            CLASSES.contains(&pair.class.as_str()),
            "{:?}: class `{}` is none of {CLASSES:?}",
            pair.names,
            pair.class
        );
        assert!(pair.reason.len() > 20, "{:?}: no reason", pair.names);
        for model in &pair.models {
            let key = (model.clone(), pair.names.clone());
            assert!(listed.insert(key.clone()), "{key:?} classified twice");
            *per_class.entry(pair.class.as_str()).or_default() += 1;
            match found.get(&key) {
                None => problems.push(format!(
                    "{model} {:?}: no longer one encoding (classified {})",
                    pair.names, pair.class
                )),
                Some(false) if pair.class == "deprecated-synonym" => problems.push(format!(
                    "{model} {:?}: classified deprecated-synonym, but neither is deprecated",
                    pair.names
                )),
                Some(_) => {}
            }
        }
    }
    for rule in &classes.rule {
        assert!(
            CLASSES.contains(&rule.class.as_str()) && rule.reason.len() > 20,
            "rule {:?}: class `{}` or reason",
            rule.names,
            rule.class
        );
        assert!(
            rule.names.iter().all(|n| n.ends_with(".*")),
            "rule {:?}: each name is `PREFIX.*`",
            rule.names
        );
    }
    // Per rule, per model: how many pairs it covered.
    let mut covered: BTreeMap<(usize, &str), usize> = BTreeMap::new();
    for (model, names) in found.keys() {
        let by_rule: Vec<usize> = classes
            .rule
            .iter()
            .enumerate()
            .filter(|(_, r)| r.models.contains(model) && r.covers(names))
            .map(|(i, _)| i)
            .collect();
        let by_pair = listed.contains(&(model.clone(), names.clone()));
        match (by_rule.as_slice(), by_pair) {
            ([], false) => {
                problems.push(format!("unclassified: {model} {} {}", names[0], names[1]));
            }
            ([i], false) => {
                *covered.entry((*i, model.as_str())).or_default() += 1;
                *per_class
                    .entry(classes.rule[*i].class.as_str())
                    .or_default() += 1;
            }
            ([], true) => {}
            _ => problems.push(format!(
                "{model} {names:?}: classified more than once (pairs and rules)"
            )),
        }
    }
    for (i, rule) in classes.rule.iter().enumerate() {
        for model in &rule.models {
            if !covered.contains_key(&(i, model.as_str())) {
                problems.push(format!(
                    "rule {:?} covers no pair on {model} any more",
                    rule.names
                ));
            }
        }
    }
    println!(
        "{} pairs of distinct names with one encoding over {} models: {per_class:?}",
        found.len(),
        database.models().count()
    );
    assert!(
        problems.is_empty(),
        "{} problems with tests/data/duplicate-encodings.toml:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Encodes each `PMU::EVENT:UMASK` line read from stdin with libpfm4: `OK code second` or `ERR n`.
const PROGRAM: &str = r#"
#include <perfmon/pfmlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    char line[1024];
    if (pfm_initialize() != PFM_SUCCESS) { printf("INIT-FAILED\n"); return 1; }
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        pfm_pmu_encode_arg_t arg;
        memset(&arg, 0, sizeof arg);
        arg.size = sizeof arg;
        int ret = pfm_get_os_event_encoding(line, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg);
        if (ret != PFM_SUCCESS) { printf("ERR %d\n", ret); continue; }
        printf("OK %llx %llx\n", (unsigned long long)arg.codes[0],
               arg.count > 1 ? (unsigned long long)arg.codes[1] : 0ULL);
        free(arg.codes);
    }
    return 0;
}
"#;

/// Every pair classified `libpfm4-synonym` is one encoding in libpfm4 too: libpfm4 4.13, asked
/// for both names on the model's PMU, encodes them alike (where 4.13 has both names; the
/// pairs it lacks a name of are counted, and most pairs must be confirmed). Oracle: the
/// installed libpfm4 4.13 through a C program linked with `-lpfm`.
#[test]
fn libpfm4_synonyms_encode_alike_in_libpfm4() {
    let classes: Classes = toml::from_str(include_str!("data/duplicate-encodings.toml"))
        .expect("duplicate-encodings.toml parses");
    let binary = match common::libpfm::build(PROGRAM, "duplicates") {
        Ok(binary) => binary,
        Err(why) => counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::Tools,
            "libpfm4 synonyms not checked (libpfm4-dev and a C compiler build the helper): {why}"
        ),
    };
    // libpfm4's spelling: the first `.` is its `:`.
    let spelled = |pmu: &str, name: &str| format!("{pmu}::{}", name.replacen('.', ":", 1));
    let mut queries = Vec::new();
    let mut asked = Vec::new();
    for pair in classes.pair.iter().filter(|p| p.class == "libpfm4-synonym") {
        for model in &pair.models {
            queries.push(spelled(model, &pair.names[0]));
            queries.push(spelled(model, &pair.names[1]));
            asked.push((model.clone(), pair.names.clone()));
        }
    }
    let answers = common::libpfm::answers(&binary, &queries).expect("the libpfm4 helper runs");
    assert_eq!(answers.len(), queries.len(), "one answer per query");
    let (mut confirmed, mut lacking) = (0, 0);
    let mut problems = Vec::new();
    for (i, (model, names)) in asked.iter().enumerate() {
        let (a, b) = (&answers[2 * i], &answers[2 * i + 1]);
        if !a.starts_with("OK") || !b.starts_with("OK") {
            lacking += 1;
            continue;
        }
        // The interrupt bit aside.
        let value = |answer: &str| {
            let mut fields = answer.split(' ').skip(1);
            let code = u64::from_str_radix(fields.next().unwrap_or(""), 16).unwrap_or(0);
            (code & !Evtsel::INT, fields.next().map(str::to_string))
        };
        if value(a) == value(b) {
            confirmed += 1;
        } else {
            problems.push(format!(
                "{model} {names:?}: libpfm4 encodes {a} and {b}, not one encoding"
            ));
        }
    }
    println!(
        "libpfm4-synonym pairs: {confirmed} encode alike in libpfm4 4.13, {lacking} name a name 4.13 lacks"
    );
    assert!(
        problems.is_empty(),
        "pairs classified libpfm4-synonym that libpfm4 does not encode alike:\n{}",
        problems.join("\n")
    );
    assert!(
        confirmed * 2 > confirmed + lacking,
        "only {confirmed} of {} libpfm4-synonym pairs could be asked of libpfm4",
        confirmed + lacking
    );
}
