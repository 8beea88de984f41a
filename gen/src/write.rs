//! Writing a generated model as one deterministic TOML file: the same model gives the same
//! bytes, with its source and the source's commit in the header.

use std::fmt::Write as _;

use crate::model::{GenEvent, GenModel, GenUnitMask, Signature};

/// The line every generated file carries, and the loader's tests look for.
pub const GENERATED_MARK: &str = "generated: do not edit";

/// The TOML text of `model`.
pub fn model_toml(model: &GenModel) -> String {
    let mut out = String::new();
    let p = &model.source;
    let _ = writeln!(
        out,
        "# {GENERATED_MARK} (counterhal-gen; edit the overlay instead)"
    );
    let _ = writeln!(out, "# source: {}", p.source);
    let _ = writeln!(out, "# commit: {}", p.commit);
    let _ = writeln!(out, "# file: {}", p.file);
    for a in &model.alias_sources {
        let _ = writeln!(
            out,
            "# aliases: {}, commit {}, file {}",
            a.source, a.commit, a.file
        );
    }
    for a in &model.extra_mask_sources {
        let _ = writeln!(
            out,
            "# extra-register unit masks: {}, commit {}, file {}",
            a.source, a.commit, a.file
        );
    }
    if let Some((a, n)) = &model.dropped_names {
        let _ = writeln!(
            out,
            "# libpfm4 names: {} events with {} unit masks, {} unit masks of this table's events, {} defaults, {} events combining unit masks: {}, commit {}, file {}",
            n.events, n.event_masks, n.masks, n.defaults, n.combinable, a.source, a.commit, a.file
        );
    }
    if let Some((file, count)) = &model.errata {
        let _ = writeln!(
            out,
            "# errata: {count} of the source's entries corrected by {file}, each with its evidence"
        );
    }
    for (reason, count) in &model.left_out {
        let _ = writeln!(out, "# left out: {count} {reason}");
    }
    out.push('\n');
    out.push_str("[[cpu]]\n");
    let _ = writeln!(out, "id = {}", quoted(&model.id));
    if !model.model_aliases.is_empty() {
        let aliases: Vec<String> = model.model_aliases.iter().map(|a| quoted(a)).collect();
        let _ = writeln!(out, "aliases = [{}]", aliases.join(", "));
    }
    let _ = writeln!(out, "description = {}", quoted(&model.description));
    let _ = writeln!(out, "encoder = {}", quoted(model.encoder));
    out.push_str("match = [\n");
    for s in &model.signatures {
        let _ = writeln!(out, "  {},", signature(s));
    }
    out.push_str("]\n");
    let _ = write!(
        out,
        "pmu = {{ general_counters = {}, counter_width = {}",
        model.general_counters, model.counter_width
    );
    if model.fixed_counters > 0 {
        let _ = write!(
            out,
            ", fixed_counters = {}, fixed_width = {}",
            model.fixed_counters, model.fixed_width
        );
    }
    if let Some(tsx) = model.tsx {
        let _ = write!(out, ", tsx = {tsx}");
    }
    out.push_str(" }\n");
    for event in &model.events {
        out.push('\n');
        write_event(&mut out, event);
    }
    if !model.aliases.is_empty() {
        out.push_str("\n[cpu.event_aliases]\n");
        for (alias, name) in &model.aliases {
            let _ = writeln!(out, "{} = {}", quoted(alias), quoted(name));
        }
    }
    out
}

fn signature(s: &Signature) -> String {
    let mut text = format!("{{ vendor = {}, family = {:#x}", quoted(s.vendor), s.family);
    match (s.model, s.last_model) {
        (Some(first), Some(last)) if last != first => {
            let _ = write!(text, ", model = \"{first:#04x}-{last:#04x}\"");
        }
        (Some(model), _) => {
            let _ = write!(text, ", model = {model:#x}");
        }
        (None, _) => {}
    }
    if !s.steppings.is_empty() {
        let list: Vec<String> = s.steppings.iter().map(u32::to_string).collect();
        let _ = write!(text, ", stepping = [{}]", list.join(", "));
    }
    text.push_str(" }");
    text
}

fn write_event(out: &mut String, e: &GenEvent) {
    out.push_str("[[cpu.event]]\n");
    let _ = writeln!(out, "name = {}", quoted(&e.name));
    let _ = writeln!(out, "code = {:#04x}", e.code);
    if let Some(u) = e.umask {
        let _ = writeln!(out, "umask = {u:#04x}");
    }
    if let Some(c) = &e.counters {
        let _ = writeln!(out, "counters = {}", list(c));
    }
    if let Some(f) = e.fixed {
        let _ = writeln!(out, "fixed = {f}");
    }
    if let Some((msr, value)) = e.extra {
        let _ = writeln!(out, "extra_reg = {msr:#x}");
        let _ = writeln!(out, "extra_value = {}", msr_value(value));
    }
    if !e.flags.is_empty() {
        let flags: Vec<String> = e.flags.iter().map(|f| quoted(f)).collect();
        let _ = writeln!(out, "flags = [{}]", flags.join(", "));
    }
    if !e.umasks.is_empty() {
        out.push_str("umasks = [\n");
        for u in &e.umasks {
            let _ = writeln!(out, "  {},", umask(u));
        }
        out.push_str("]\n");
    }
}

fn umask(u: &GenUnitMask) -> String {
    let mut text = format!("{{ name = {}, code = {:#04x}", quoted(&u.name), u.code);
    if u.umask_ext != 0 {
        let _ = write!(text, ", umask_ext = {:#04x}", u.umask_ext);
    }
    if let Some(e) = u.event {
        let _ = write!(text, ", event = {e:#04x}");
    }
    if let Some(c) = &u.counters {
        let _ = write!(text, ", counters = {}", list(c));
    }
    if let Some(f) = u.fixed {
        let _ = write!(text, ", fixed = {f}");
    }
    if u.cmask != 0 {
        let _ = write!(text, ", cmask = {}", u.cmask);
    }
    if u.edge {
        text.push_str(", edge = true");
    }
    if u.inv {
        text.push_str(", inv = true");
    }
    if u.default {
        text.push_str(", default = true");
    }
    if u.group != 0 {
        let _ = write!(text, ", group = {}", u.group);
    }
    if let Some((msr, value)) = u.extra {
        let _ = write!(
            text,
            ", extra_reg = {msr:#x}, extra_value = {}",
            msr_value(value)
        );
    }
    if let Some(bits) = u.extra_bits {
        let _ = write!(text, ", extra_bits = {}", msr_value(bits));
    }
    for (set, key) in [
        (u.combine.alone_in_group, "alone_in_group"),
        (u.combine.excludes_later_groups, "excludes_later_groups"),
        (u.combine.excludes_other_groups, "excludes_other_groups"),
        (u.combine.group_may_be_empty, "group_may_be_empty"),
    ] {
        if set {
            let _ = write!(text, ", {key} = true");
        }
    }
    if !u.same_as.is_empty() {
        let names: Vec<String> = u.same_as.iter().map(|n| quoted(n)).collect();
        let _ = write!(text, ", same_as = [{}]", names.join(", "));
    }
    if u.precise {
        text.push_str(", precise = true");
    }
    if u.deprecated {
        text.push_str(", deprecated = true");
    }
    if u.any {
        text.push_str(", any = true");
    }
    text.push_str(" }");
    text
}

/// An extra MSR value: a hexadecimal integer, or a string at or above 2^63 (TOML integers
/// are i64).
fn msr_value(value: u64) -> String {
    if i64::try_from(value).is_ok() {
        format!("{value:#x}")
    } else {
        format!("\"{value:#x}\"")
    }
}

fn list(values: &[u32]) -> String {
    let items: Vec<String> = values.iter().map(u32::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// A TOML basic string (names and descriptions here are printable ASCII; anything else is
/// escaped). The metric tables write their formulas with it too.
pub(crate) fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_ascii_graphic() || c == ' ' => out.push(c),
            c => {
                let _ = write!(out, "\\u{:04x}", u32::from(c) & 0xffff);
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped() {
        assert_eq!(quoted("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }

    #[test]
    fn msr_values_above_i64_are_strings() {
        assert_eq!(msr_value(0x10001), "0x10001");
        assert_eq!(msr_value(i64::MAX as u64), "0x7fffffffffffffff");
        assert_eq!(msr_value(1 << 63), "\"0x8000000000000000\"");
        let text = umask(&GenUnitMask {
            name: "A.B".into(),
            code: 1,
            extra: Some((0x1a6, 0x8000_0000_0001_0001)),
            precise: true,
            ..GenUnitMask::default()
        });
        assert_eq!(
            text,
            "{ name = \"A.B\", code = 0x01, extra_reg = 0x1a6, extra_value = \"0x8000000000010001\", precise = true }"
        );
    }

    #[test]
    fn register_bit_masks_write_their_bits_rules_and_equivalents() {
        let text = umask(&GenUnitMask {
            name: "ANY_RESPONSE".into(),
            code: 1,
            default: true,
            group: 1,
            extra_bits: Some(0x1_0000),
            combine: crate::model::Combine {
                alone_in_group: true,
                excludes_later_groups: true,
                ..crate::model::Combine::default()
            },
            same_as: vec!["A".into(), "B".into()],
            ..GenUnitMask::default()
        });
        assert_eq!(
            text,
            "{ name = \"ANY_RESPONSE\", code = 0x01, default = true, group = 1, extra_bits = 0x10000, alone_in_group = true, excludes_later_groups = true, same_as = [\"A\", \"B\"] }"
        );
    }

    #[test]
    fn a_signature_writes_its_steppings() {
        let s = Signature {
            vendor: "intel",
            family: 6,
            model: Some(0x55),
            last_model: None,
            steppings: vec![5, 6],
        };
        assert_eq!(
            signature(&s),
            "{ vendor = \"intel\", family = 0x6, model = 0x55, stepping = [5, 6] }"
        );
        let range = Signature {
            vendor: "amd",
            family: 0xf,
            model: Some(0x4),
            last_model: Some(0x5f),
            steppings: Vec::new(),
        };
        assert_eq!(
            signature(&range),
            "{ vendor = \"amd\", family = 0xf, model = \"0x04-0x5f\" }"
        );
    }
}
