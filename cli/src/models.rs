//! `counterhal list --models`: every CPU model of the event database, with what matches it
//! (perf's signatures) and its PMU.

use std::fmt::Write as _;

use counterhal_events::{CpuModel, MatchRule, NumberSet, Vendor};
use serde_json::json;

/// A number set as perf writes model and stepping numbers: upper-case hex, ranges `LO-HI`,
/// several joined by `|`; `*` for any.
fn hex_set(set: &NumberSet) -> String {
    if set.ranges.is_empty() {
        return "*".to_string();
    }
    // Adjacent ranges (steppings listed one by one) join: 5..F.
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for &(lo, hi) in &set.ranges {
        match ranges.last_mut() {
            Some(last) if last.1.checked_add(1) == Some(lo) => last.1 = hi,
            _ => ranges.push((lo, hi)),
        }
    }
    let items: Vec<String> = ranges
        .iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                format!("{lo:X}")
            } else {
                format!("{lo:X}..{hi:X}")
            }
        })
        .collect();
    items.join("|")
}

/// A match rule as perf's signature: `GenuineIntel-6-55-5..F` (family decimal); an Arm rule
/// of one part as perf's arm64 mapfile writes its MIDR (`0x00000000410fd0c0`, any variant and
/// revision).
fn signature(rule: &MatchRule) -> String {
    if let (Vendor::Arm(implementer), [(family, _)], [(part, last)], []) = (
        &rule.vendor,
        rule.family.ranges.as_slice(),
        rule.model.ranges.as_slice(),
        rule.stepping.ranges.as_slice(),
    ) && part == last
    {
        let midr = u64::from(*implementer) << 24
            | u64::from(*family & 0xf) << 16
            | u64::from(*part & 0xfff) << 4;
        return format!("{midr:#018x}");
    }
    let vendor = match &rule.vendor {
        Vendor::Intel => "GenuineIntel",
        Vendor::Amd => "AuthenticAMD",
        Vendor::Arm(_) | Vendor::Other(_) => rule.vendor.name(),
    };
    let family = if rule.family.ranges.is_empty() {
        "*".to_string()
    } else {
        let items: Vec<String> = rule
            .family
            .ranges
            .iter()
            .map(|&(lo, hi)| {
                if lo == hi {
                    lo.to_string()
                } else {
                    format!("{lo}..{hi}")
                }
            })
            .collect();
        items.join("|")
    };
    let mut text = format!("{vendor}-{family}-{}", hex_set(&rule.model));
    if !rule.stepping.ranges.is_empty() {
        text.push('-');
        text.push_str(&hex_set(&rule.stepping));
    }
    text
}

/// The vendor of a model: its first match rule's.
fn vendor(model: &CpuModel) -> &str {
    model
        .match_rules()
        .first()
        .map_or("any", |r| r.vendor.name())
}

/// The models as text (one block per model) or a JSON array.
pub fn render<'m>(models: impl Iterator<Item = &'m CpuModel>, as_json: bool) -> String {
    let models: Vec<&CpuModel> = models.collect();
    let mut out = String::new();
    if as_json {
        let array: Vec<_> = models
            .iter()
            .map(|m| {
                json!({
                    "id": m.id,
                    "aliases": m.aliases,
                    "names": counterhal_events::model_aliases::aliases_of(&m.id),
                    "vendor": vendor(m),
                    "name": m.description,
                    "encoder": m.encoder.name(),
                    "signatures": m.match_rules().iter().map(signature).collect::<Vec<_>>(),
                    "counters": {
                        "general": m.pmu.general_counters,
                        "width": m.pmu.counter_width,
                        "fixed": m.pmu.fixed_counters,
                        "fixed_width": m.pmu.fixed_width,
                    },
                    "events": m.events().len(),
                    "hybrid": m.hybrid.map(|h| json!({
                        "core_type": h.core_type,
                        "core": h.type_name(),
                        "native_model": h.native_model,
                    })),
                })
            })
            .collect();
        _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&array).expect("JSON of plain values")
        );
        return out;
    }
    for m in &models {
        let signatures: Vec<String> = m.match_rules().iter().map(signature).collect();
        _ = writeln!(out, "{:<26} {}", m.id, m.description);
        if !m.aliases.is_empty() {
            _ = writeln!(out, "{:<26} also {}", "", m.aliases.join(", "));
        }
        let names = counterhal_events::model_aliases::aliases_of(&m.id);
        if !names.is_empty() {
            _ = writeln!(out, "{:<26} named {}", "", names.join(", "));
        }
        _ = writeln!(
            out,
            "{:<26} vendor {}, {} general counters of {} bits, {} fixed, {} events",
            "",
            vendor(m),
            m.pmu.general_counters,
            m.pmu.counter_width,
            m.pmu.fixed_counters,
            m.events().len()
        );
        if !signatures.is_empty() {
            _ = writeln!(out, "{:<26} matches {}", "", signatures.join(" "));
        }
        if let Some(core) = m.hybrid {
            _ = writeln!(out, "{:<26} on its {core} cores (CPUID leaf 0x1A)", "");
        }
    }
    _ = writeln!(out, "\n{} CPU models", models.len());
    out
}

/// The models as the Markdown table of events/README.md ("Shipped CPU models"), in match
/// order: id, libpfm4's other names, vendor, name, perf's signatures, counters, events.
pub fn markdown(models: impl Iterator<Item = impl std::ops::Deref<Target = CpuModel>>) -> String {
    let mut out = String::from(
        "| id | also | vendor | name | signatures (first match wins) | counters: general x width, fixed x width | events |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for m in models {
        let signatures: Vec<String> = m
            .match_rules()
            .iter()
            .map(|r| format!("`{}`", signature(r).replace('|', "\\|")))
            .collect();
        let mut signatures = signatures.join(" ");
        if let Some(core) = m.hybrid {
            _ = write!(signatures, " ({} cores)", core.type_name());
        }
        if signatures.is_empty() {
            signatures = "none (named only)".to_string();
        }
        let aliases: Vec<String> = m.aliases.iter().map(|a| format!("`{a}`")).collect();
        let fixed = if m.pmu.fixed_counters == 0 {
            String::new()
        } else {
            format!(", {} x {}", m.pmu.fixed_counters, m.pmu.fixed_width)
        };
        _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} x {}{fixed} | {} |",
            m.id,
            aliases.join(" "),
            vendor(&m),
            m.description.replace('|', "\\|"),
            signatures,
            m.pmu.general_counters,
            m.pmu.counter_width,
            m.events().len()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_events::Database;

    #[test]
    fn signatures_are_written_as_perf_writes_them() {
        let db = Database::shipped().unwrap();
        let clx = db.model("clx").unwrap();
        assert_eq!(signature(&clx.match_rules()[0]), "GenuineIntel-6-55-5..F");
        let zen5 = db.model("amd64_fam1ah_zen5").unwrap();
        // Zen 5's models as perf 7.2's mapfile has them (family 1Ah, models 00-2F, 40-4F and
        // 60-7F; the rest is Zen 6).
        assert_eq!(
            signature(&zen5.match_rules()[0]),
            "AuthenticAMD-26-0..2F|40..4F|60..7F"
        );
        let text = render(db.models(), false);
        assert!(text.contains("\nspr "), "{text}");
        assert!(text.ends_with(&format!("\n{} CPU models\n", db.models().count())));
        let json: serde_json::Value = serde_json::from_str(&render(db.models(), true)).unwrap();
        let spr = json
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == "spr")
            .unwrap();
        assert_eq!(spr["counters"]["general"], 8);
        assert_eq!(spr["vendor"], "intel");
        assert!(spr["events"].as_u64().unwrap() > 50);
    }

    /// The table in events/README.md is the data's: regenerate it with
    /// `COUNTERHAL_WRITE_README=1 cargo test -p counterhal-cli readme_model_table` (or paste
    /// `counterhal list --models --markdown`).
    #[test]
    fn readme_model_table_is_the_datas() {
        const BEGIN: &str =
            "<!-- models: generated by `counterhal list --models`'s test; do not edit -->\n";
        const END: &str = "<!-- end of models -->";
        let db = Database::shipped().unwrap();
        let table = markdown(db.models());
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/README.md");
        let readme = std::fs::read_to_string(&path).unwrap();
        let start = readme
            .find(BEGIN)
            .expect("the README marks its model table")
            + BEGIN.len();
        let end = start
            + readme[start..]
                .find(END)
                .expect("the table's end is marked");
        if std::env::var_os("COUNTERHAL_WRITE_README").is_some() {
            let text = format!("{}{table}{}", &readme[..start], &readme[end..]);
            std::fs::write(&path, text).unwrap();
            return;
        }
        assert_eq!(
            readme[start..end],
            table,
            "events/README.md's model table differs from the data: regenerate it with \
             COUNTERHAL_WRITE_README=1 cargo test -p counterhal-cli readme_model_table"
        );
        // One row per model, each naming its events count.
        assert_eq!(table.lines().count(), db.models().count() + 2);
        assert!(table.contains("| `clx` |"), "{table}");
        assert!(table.contains("`GenuineIntel-6-55-5..F`"), "{table}");
        assert!(table.contains("(atom cores)"), "{table}");
    }
}
