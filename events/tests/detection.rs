//! Detection picks the model that describes the CPU: no signature in a model's `match` list is
//! taken by a less specific model, and the signatures libpfm4 and perf give a PMU detect the
//! model of that PMU. pctr(1)'s names of the P6 events mean on each P6 model what they mean on
//! `p6`, the table of OpenBSD pctr(4)'s names.

use counterhal_conformance::fixtures;
use counterhal_conformance::skip::Need;
use counterhal_events::{CpuIdentity, CpuModel, Database, MatchRule, Vendor};
use counterhal_hal::Encoding;

use crate::common;

/// How specific a rule is: a stepping beats a model, a model beats a family; among equals, the
/// narrower set wins. Larger is more specific.
fn specificity(rule: &MatchRule) -> (bool, bool, i64, i64) {
    let width = |ranges: &[(u32, u32)]| -> i64 {
        ranges.iter().map(|(lo, hi)| i64::from(hi - lo) + 1).sum()
    };
    (
        !rule.stepping.ranges.is_empty(),
        !rule.model.ranges.is_empty(),
        -width(&rule.model.ranges),
        -width(&rule.stepping.ranges),
    )
}

/// The most specific of `model`'s rules that matches `cpu`.
fn best_rule(model: &CpuModel, cpu: &CpuIdentity) -> Option<(bool, bool, i64, i64)> {
    model
        .match_rules()
        .iter()
        .filter(|r| r.matches(cpu))
        .map(specificity)
        .max()
}

/// The signatures a rule names: each family, model (up to 0xff) and stepping (0..=15 where
/// the rule names none) it takes; none for a rule naming no model (a whole family).
fn signatures(rule: &MatchRule) -> Vec<CpuIdentity> {
    let values = |ranges: &[(u32, u32)], limit: u32| -> Vec<u32> {
        ranges
            .iter()
            .flat_map(|(lo, hi)| *lo..=(*hi).min(limit))
            .collect()
    };
    if rule.model.ranges.is_empty() {
        return Vec::new();
    }
    let steppings = if rule.stepping.ranges.is_empty() {
        (0..=15).collect()
    } else {
        values(&rule.stepping.ranges, 15)
    };
    let mut out = Vec::new();
    for family in values(&rule.family.ranges, 0xff) {
        for model in values(&rule.model.ranges, 0xff) {
            for &stepping in &steppings {
                out.push(CpuIdentity {
                    vendor: rule.vendor.clone(),
                    family,
                    model,
                    stepping,
                });
            }
        }
    }
    out
}

/// Oracle: the models' own `match` lists (libpfm4's model lists and Intel's and the kernel's
/// mapfiles, as the generator read them). For every signature a model's list names, the model
/// detected has a rule at least as specific as the most specific rule naming it (a hybrid
/// chip's models share their rules: the first, its P-cores', is detected).
#[test]
fn no_signature_is_shadowed_by_a_less_specific_model() {
    let db = Database::shipped().unwrap();
    let mut checked = 0;
    let mut shadowed = Vec::new();
    for model in db.models() {
        for rule in model.match_rules() {
            for cpu in signatures(rule) {
                checked += 1;
                let best = db
                    .models()
                    .filter_map(|m| best_rule(m, &cpu).map(|s| (s, m.id.clone())))
                    .max_by_key(|(s, _)| *s)
                    .expect("the model itself matches");
                let detected = db.detect(&cpu).expect("a model matches");
                let theirs = best_rule(detected, &cpu).expect("the detected model matches");
                if theirs < best.0 {
                    shadowed.push(format!(
                        "{}: `{}` names it ({:?}), `{}` is detected ({theirs:?})",
                        cpu.signature(),
                        best.1,
                        best.0,
                        detected.id
                    ));
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} signatures checked");
    shadowed.dedup();
    assert!(
        shadowed.is_empty(),
        "{} signatures detect a less specific model:\n{}",
        shadowed.len(),
        shadowed.join("\n")
    );
}

/// Oracle: libpfm4's own detection (github wcohen/libpfm4 at 91970fe6eb4e: the model lists of
/// lib/pfmlib_intel_p6.c, pfmlib_intel_coreduo.c and pfmlib_intel_core.c): each family-6
/// model it gives a P6-era PMU detects our model of that PMU (libpfm4's `p6` is our `piii`).
#[test]
fn the_p6_era_detects_as_libpfm4_does() {
    let db = Database::shipped().unwrap();
    let libpfm4: [(&str, &[u32]); 6] = [
        ("ppro", &[1]),
        ("pii", &[3, 5, 6]),
        ("piii", &[7, 8, 10, 11]),
        ("pm", &[9, 13]),
        ("coreduo", &[14]),
        ("core", &[15, 23, 29]),
    ];
    for (id, models) in libpfm4 {
        for &model in models {
            let signature = format!("GenuineIntel-6-{model:X}");
            let cpu = CpuIdentity::from_signature(&signature).unwrap();
            assert_eq!(
                db.detect(&cpu).map(|m| m.id.as_str()),
                Some(id),
                "{signature}"
            );
        }
    }
    // The Pentium M of the issue, and pctr(4)'s table still named by its id.
    let pentium_m = CpuIdentity::from_signature("GenuineIntel-6-D-6").unwrap();
    assert_eq!(db.detect(&pentium_m).unwrap().id, "pm");
    assert_eq!(db.model("p6").unwrap().id, "p6");
    // A family-6 model below Core 2 that libpfm4 names no PMU for keeps pctr(4)'s table.
    let other = CpuIdentity::from_signature("GenuineIntel-6-2").unwrap();
    assert_eq!(db.detect(&other).unwrap().id, "p6");
}

/// The kernel's directory of each mapfile row and our model of it (a hybrid chip's signature
/// alone detects its P-cores' model): the library's own table of perf's directory names,
/// which `--cpu-model` takes, checked here against the mapfile's signatures.
const KERNEL_MODELS: &[(&str, &str)] = counterhal_events::model_aliases::PERF_DIRECTORIES;

/// The strings a mapfile pattern matches: literals, `(A|B)` alternatives and `[..]` classes
/// (the only forms the x86 mapfile uses; anything else is `None`).
fn expand(pattern: &str) -> Option<Vec<String>> {
    let mut out = vec![String::new()];
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        let choices: Vec<String> = match c {
            '(' => {
                let group: String = chars.by_ref().take_while(|c| *c != ')').collect();
                group.split('|').map(str::to_string).collect()
            }
            '[' => {
                let class: Vec<char> = chars.by_ref().take_while(|c| *c != ']').collect();
                let mut set = Vec::new();
                let mut i = 0;
                while i < class.len() {
                    if i + 2 < class.len() && class[i + 1] == '-' {
                        set.extend((class[i]..=class[i + 2]).map(String::from));
                        i += 3;
                    } else {
                        set.push(class[i].to_string());
                        i += 1;
                    }
                }
                set
            }
            c if c.is_ascii_alphanumeric() || c == '-' => vec![c.to_string()],
            _ => return None,
        };
        out = out
            .iter()
            .flat_map(|prefix| choices.iter().map(move |c| format!("{prefix}{c}")))
            .collect();
    }
    Some(out)
}

/// Oracle: perf's mapfile (tools/perf/pmu-events/arch/x86/mapfile.csv of Debian's
/// linux-source-6.12): every Intel signature of a row (Nehalem on) detects our model of the
/// row's directory; rows naming steppings are checked at those steppings, others at 0 and 15.
#[test]
fn intel_signatures_detect_as_perfs_mapfile() {
    let tree = match fixtures::kernel_source() {
        Ok(tree) => tree,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "{why}"),
    };
    let mapfile =
        std::fs::read_to_string(tree.join("tools/perf/pmu-events/arch/x86/mapfile.csv")).unwrap();
    let db = Database::shipped().unwrap();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for line in mapfile.lines().filter(|l| l.starts_with("GenuineIntel-6-")) {
        let fields: Vec<&str> = line.split(',').collect();
        let (pattern, dir) = (fields[0], fields[2]);
        let Some(&(_, id)) = KERNEL_MODELS.iter().find(|(d, _)| *d == dir) else {
            panic!("mapfile row `{line}`: directory {dir} is not in KERNEL_MODELS");
        };
        let signatures = expand(pattern).unwrap_or_else(|| panic!("pattern {pattern}"));
        for signature in signatures {
            let with_steppings: Vec<String> = if signature.matches('-').count() == 3 {
                vec![signature.clone()]
            } else {
                vec![format!("{signature}-0"), format!("{signature}-F")]
            };
            for text in with_steppings {
                let cpu = CpuIdentity::from_signature(&text).unwrap();
                assert_eq!(cpu.vendor, Vendor::Intel);
                checked += 1;
                let detected = db.detect(&cpu).map(|m| m.id.clone());
                if detected.as_deref() != Some(id) {
                    wrong.push(format!(
                        "{text} ({dir}): {detected:?}, perf's mapfile: {id}"
                    ));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} signatures in the mapfile");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Oracle: model `p6`, the table of OpenBSD pctr(4)'s P6 names (the names pctr(1) and its man
/// page use): each of its events, alone and with each unit mask, resolves on every P6 model
/// libpfm4 describes to the same event select as on `p6`.
#[test]
fn pctr_names_mean_the_same_on_every_p6_model() {
    let db = Database::shipped().unwrap();
    let p6 = db.model("p6").unwrap();
    let evtsel = |model: &str, name: &str| -> Result<u64, String> {
        match db.resolve_exact(Some(model), name, &common::X86) {
            Ok(resolved) => match &resolved.terms[0].request.encoding {
                Encoding::Evtsel(e) => Ok(e.register_value()),
                other => Err(format!("not an event select: {other}")),
            },
            Err(e) => Err(e.to_string()),
        }
    };
    let mut names = Vec::new();
    for event in p6.events() {
        names.push(event.name.clone());
        for mask in event.unit_masks() {
            names.push(format!("{}:{}", event.name, mask.name));
        }
    }
    assert!(names.len() > 90, "{} pctr names", names.len());
    let mut wrong = Vec::new();
    for model in ["ppro", "pii", "piii", "pm"] {
        for name in &names {
            let theirs = evtsel("p6", name).unwrap();
            match evtsel(model, name) {
                Ok(ours) if ours == theirs => {}
                Ok(ours) => wrong.push(format!("{model} {name}: {ours:#x}, p6 {theirs:#x}")),
                Err(e) => wrong.push(format!("{model} {name}: {e}")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
