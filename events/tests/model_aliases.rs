//! perf's x86 directory names resolve as model aliases to the model detection gives for their
//! CPUs. Oracle: the kernel's tools/perf/pmu-events/arch/x86/mapfile.csv (Debian's
//! linux-source-6.12), whose rows map CPUID patterns (POSIX extended regular expressions over
//! `Vendor-Family-Model[-Stepping]`, tried in file order) to directories.

use counterhal_conformance::fixtures;
use counterhal_conformance::skip::Need;
use counterhal_events::model_aliases::{PERF_DIRECTORIES, SHORT_NAMES};
use counterhal_events::{CpuIdentity, Database};

/// Where our match rules and the mapfile's rows differ, and why: (the first hex digit of
/// sixteen models, `AuthenticAMD-26-3` for 0x30-0x3f; why).
const KNOWN: &[(&str, &str)] = &[
    ("AuthenticAMD-26-3", ZEN6),
    ("AuthenticAMD-26-5", ZEN6),
    ("AuthenticAMD-26-8", ZEN6),
    ("AuthenticAMD-26-9", ZEN6),
    ("AuthenticAMD-26-A", ZEN6),
    ("AuthenticAMD-26-B", ZEN6),
    ("AuthenticAMD-26-C", ZEN6),
    ("AuthenticAMD-26-D", ZEN6),
    ("AuthenticAMD-26-E", ZEN6),
    ("AuthenticAMD-26-F", ZEN6),
];

/// The directories Linux 7.2's mapfile adds to 6.12's (tests/perf72_models.rs checks them).
const LINUX_7_2_DIRECTORIES: &[&str] = &["amdzen6", "arrowlake", "clearwaterforest", "pantherlake"];

/// Why family 1Ah's Zen 6 models differ from Linux 6.12's mapfile.
const ZEN6: &str = "family 1Ah models 0x30-0x3f, 0x50-0x5f and 0x80-0xff are Zen 6 in Linux 7.2's mapfile (its amdzen6 row), which events/tests/perf72_models.rs holds; 6.12's amdzen5 row takes the whole family";

/// One piece of a mapfile pattern: a set of characters (once, or `+`: once or more), or
/// alternatives (each a pattern).
pub(crate) enum Piece {
    Class(Vec<char>, bool),
    Alternatives(Vec<Vec<Piece>>),
}

/// The mapfile's pattern subset: literals, `(a|b)`, `[...]` with ranges and `[:xdigit:]`,
/// and `+` after a class.
pub(crate) fn compile(pattern: &str) -> Vec<Piece> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '(' => {
                let end = i + chars[i..].iter().position(|&c| c == ')').unwrap();
                let group: String = chars[i + 1..end].iter().collect();
                pieces.push(Piece::Alternatives(group.split('|').map(compile).collect()));
                i = end + 1;
            }
            '[' => {
                let mut set = Vec::new();
                i += 1;
                while chars[i] != ']' {
                    let rest: String = chars[i..].iter().collect();
                    if rest.starts_with("[:xdigit:]") {
                        set.extend("0123456789ABCDEFabcdef".chars());
                        i += "[:xdigit:]".len();
                    } else if chars[i + 1] == '-' && chars[i + 2] != ']' {
                        set.extend(chars[i]..=chars[i + 2]);
                        i += 3;
                    } else {
                        set.push(chars[i]);
                        i += 1;
                    }
                }
                i += 1;
                let plus = chars.get(i) == Some(&'+');
                if plus {
                    i += 1;
                }
                pieces.push(Piece::Class(set, plus));
            }
            c => {
                pieces.push(Piece::Class(vec![c], false));
                i += 1;
            }
        }
    }
    pieces
}

/// Whether `pieces` match a prefix of `text` whose rest `then` accepts.
fn matches_then(pieces: &[Piece], text: &str, then: &dyn Fn(&str) -> bool) -> bool {
    let Some((first, rest)) = pieces.split_first() else {
        return then(text);
    };
    match first {
        Piece::Alternatives(options) => options
            .iter()
            .any(|o| matches_then(o, text, &|t| matches_then(rest, t, then))),
        Piece::Class(set, plus) => {
            let taken = text.chars().take_while(|c| set.contains(c)).count();
            let most = if *plus { taken } else { taken.min(1) };
            (1..=most).any(|n| matches_then(rest, &text[n..], then))
        }
    }
}

/// Whether `pieces` match all of `text`.
pub(crate) fn matches_all(pieces: &[Piece], text: &str) -> bool {
    matches_then(pieces, text, &str::is_empty)
}

/// Oracle: perf's mapfile. For each row, every signature of its vendor and family (models
/// 0-0xff, steppings 0-15) that the row is the first to match, and that detects a model at
/// all, detects the model its directory name resolves to as an alias (`KNOWN` says where our
/// match rules differ from the mapfile); each row has such a signature.
#[test]
fn perf_directory_names_resolve_to_the_models_of_their_cpus() {
    let tree = match fixtures::kernel_source() {
        Ok(tree) => tree,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "{why}"),
    };
    let mapfile =
        std::fs::read_to_string(tree.join("tools/perf/pmu-events/arch/x86/mapfile.csv")).unwrap();
    let rows: Vec<(Vec<Piece>, bool, String, String)> = mapfile
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            let prefix: Vec<&str> = fields[0].splitn(3, '-').collect();
            let stepped = fields[0].matches('-').count() == 3;
            let vendor_family = format!("{}-{}-", prefix[0], prefix[1]);
            (
                compile(fields[0]),
                stepped,
                vendor_family,
                fields[2].to_string(),
            )
        })
        .collect();
    assert!(rows.len() > 40, "{} rows", rows.len());
    let db = Database::shipped().unwrap();
    let mut wrong = Vec::new();
    let mut checked = 0;
    let mut found = vec![false; rows.len()];
    let mut first_row = std::collections::HashMap::new();
    for (index, (_, _, vendor_family, dir)) in rows.iter().enumerate() {
        let Some(alias) = db.model(dir) else {
            wrong.push(format!("{dir}: no model"));
            continue;
        };
        for model in 0..=0xffu32 {
            for stepping in 0..=15u32 {
                let signature = format!("{vendor_family}{model:X}-{stepping:X}");
                let without = format!("{vendor_family}{model:X}");
                let first = *first_row.entry(signature.clone()).or_insert_with(|| {
                    rows.iter().position(|(pieces, stepped, _, _)| {
                        matches_all(pieces, if *stepped { &signature } else { &without })
                    })
                });
                if first != Some(index) {
                    continue;
                }
                let cpu = CpuIdentity::from_signature(&signature).unwrap();
                let detected = db.detect(&cpu).map(|m| m.id.as_str());
                // A CPU the database has no model for says nothing about the name.
                let known = KNOWN
                    .iter()
                    .any(|(p, _)| without.starts_with(p) && without.len() == p.len() + 1);
                if detected.is_none() || known {
                    continue;
                }
                checked += 1;
                found[index] = true;
                if detected != Some(alias.id.as_str()) {
                    wrong.push(format!(
                        "{dir} resolves to {}, {signature} detects {detected:?}",
                        alias.id
                    ));
                }
            }
        }
    }
    for (index, (_, _, _, dir)) in rows.iter().enumerate() {
        if !found[index] {
            wrong.push(format!("{dir}: no signature of its row detects a model"));
        }
    }
    for &(dir, id) in PERF_DIRECTORIES {
        if !rows.iter().any(|(_, _, _, d)| d == dir) && !LINUX_7_2_DIRECTORIES.contains(&dir) {
            wrong.push(format!("{dir} ({id}) is not a directory of the mapfile"));
        }
    }
    assert!(checked > 1000, "only {checked} signatures checked");
    wrong.dedup();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Each short name resolves to the model of the perf directory it stands for (the oracle's
/// name, checked above), and is no model id itself.
#[test]
fn short_names_resolve_as_their_directories() {
    let db = Database::shipped().unwrap();
    for &(short, dir) in SHORT_NAMES {
        let model = db.model(short).map(|m| m.id.as_str());
        assert_eq!(model, db.model(dir).map(|m| m.id.as_str()), "{short}");
        assert!(model.is_some(), "{short}");
        assert!(db.models().all(|m| !m.id.eq_ignore_ascii_case(short)));
    }
    assert_eq!(db.model("zen4").unwrap().id, "amd64_fam19h_zen4");
    assert_eq!(db.model("SapphireRapids").unwrap().id, "spr");
    assert_eq!(db.model("icelake-server").unwrap().id, "icx");
}
