//! A shipped file's document read by hand from its pre-parsed tree (`crate::tree`): the events
//! and unit masks, a model's thousands of values, without serde's generic path (a `Spanned`
//! value is a map of three keys there, each field a string compared); names are borrowed from
//! the compiled-in text. The header, mappings and `toml::Value` fields, a few per file, are
//! read through serde from their nodes, as the derived code would.
//!
//! It gives what serde's derived code gives from the tree or fails: a key it does not know, a
//! key twice, a value of another type, a required key missing. A failure only sends the loader
//! to the text, whose parser then says what is wrong; a test requires every shipped file to
//! read here and to give the document the TOML parser gives.

use std::borrow::Cow;
use std::ops::Range;

use toml::Spanned;

use super::schema::{CpuDoc, EventDoc, FileDoc, UmaskDoc};
use crate::tree::{Tree, TreeError, Value};

/// The document of the file whose tree this is.
pub(super) fn file_doc(tree: Tree) -> Result<FileDoc, TreeError> {
    let mut cpu = None;
    let mut entries = Value::root(&tree)?.entries()?;
    while let Some((key, value)) = entries.next_entry()? {
        match key {
            "cpu" => set(&mut cpu, key, list(&value, |v| spanned(v, cpu_doc))?)?,
            other => return Err(unknown(other)),
        }
    }
    Ok(FileDoc {
        cpu: cpu.unwrap_or_default(),
    })
}

fn cpu_doc(value: &Value<'_>) -> Result<CpuDoc, TreeError> {
    let mut id = None;
    let mut description = None;
    let mut aliases = None;
    let mut encoder = None;
    let mut matches = None;
    let mut pmu = None;
    let mut hybrid = None;
    let mut event = None;
    let mut generalized = None;
    let mut presets = None;
    let mut event_aliases = None;
    let mut entries = value.entries()?;
    while let Some((key, value)) = entries.next_entry()? {
        match key {
            "id" => set(&mut id, key, value.deserialize()?)?,
            "description" => set(&mut description, key, value.deserialize()?)?,
            "aliases" => set(&mut aliases, key, value.deserialize()?)?,
            "encoder" => set(&mut encoder, key, value.deserialize()?)?,
            "match" => set(&mut matches, key, value.deserialize()?)?,
            "pmu" => set(&mut pmu, key, value.deserialize()?)?,
            "hybrid" => set(&mut hybrid, key, value.deserialize()?)?,
            "event" => set(&mut event, key, list(&value, |v| spanned(v, event_doc))?)?,
            "generalized" => set(&mut generalized, key, value.deserialize()?)?,
            "presets" => set(&mut presets, key, value.deserialize()?)?,
            "event_aliases" => set(&mut event_aliases, key, value.deserialize()?)?,
            other => return Err(unknown(other)),
        }
    }
    Ok(CpuDoc {
        id: required(id, "id")?,
        description,
        aliases,
        encoder,
        matches,
        pmu,
        hybrid,
        event: event.unwrap_or_default(),
        generalized,
        presets,
        event_aliases,
    })
}

fn event_doc(value: &Value<'_>) -> Result<EventDoc, TreeError> {
    let mut name = None;
    let mut code = None;
    let mut desc = None;
    let mut umask = None;
    let mut umasks = None;
    let mut counters = None;
    let mut fixed = None;
    let mut flags = None;
    let mut extra_reg = None;
    let mut extra_value = None;
    let mut entries = value.entries()?;
    while let Some((key, value)) = entries.next_entry()? {
        match key {
            "name" => set(&mut name, key, spanned(&value, name_of)?)?,
            "code" => set(&mut code, key, spanned(&value, Value::i64)?)?,
            "desc" => set(&mut desc, key, value.str()?.to_string())?,
            "umask" => set(&mut umask, key, spanned(&value, Value::i64)?)?,
            "umasks" => set(&mut umasks, key, list(&value, |v| spanned(v, umask_doc))?)?,
            "counters" => set(&mut counters, key, spanned(&value, integers)?)?,
            "fixed" => set(&mut fixed, key, spanned(&value, Value::i64)?)?,
            "flags" => set(&mut flags, key, list(&value, |v| spanned(v, name_of))?)?,
            "extra_reg" => set(&mut extra_reg, key, spanned(&value, Value::i64)?)?,
            "extra_value" => set(&mut extra_value, key, value.deserialize()?)?,
            other => return Err(unknown(other)),
        }
    }
    Ok(EventDoc {
        name: required(name, "name")?,
        code: required(code, "code")?,
        desc: desc.unwrap_or_default(),
        umask,
        umasks: umasks.unwrap_or_default(),
        counters,
        fixed,
        flags: flags.unwrap_or_default(),
        extra_reg,
        extra_value,
    })
}

fn umask_doc(value: &Value<'_>) -> Result<UmaskDoc, TreeError> {
    let mut name = None;
    let mut code = None;
    let mut desc = None;
    let mut default = None;
    let mut cmask = None;
    let mut edge = None;
    let mut inv = None;
    let mut fixed = None;
    let mut event = None;
    let mut counters = None;
    let mut group = None;
    let mut precise = None;
    let mut deprecated = None;
    let mut any = None;
    let mut extra_reg = None;
    let mut extra_value = None;
    let mut umask_ext = None;
    let mut extra_bits = None;
    let mut alone_in_group = None;
    let mut excludes_later_groups = None;
    let mut excludes_other_groups = None;
    let mut group_may_be_empty = None;
    let mut same_as = None;
    let mut entries = value.entries()?;
    while let Some((key, value)) = entries.next_entry()? {
        let number = || spanned(&value, Value::i64);
        match key {
            "name" => set(&mut name, key, spanned(&value, name_of)?)?,
            "code" => set(&mut code, key, number()?)?,
            "desc" => set(&mut desc, key, value.str()?.to_string())?,
            "default" => set(&mut default, key, value.bool()?)?,
            "cmask" => set(&mut cmask, key, number()?)?,
            "edge" => set(&mut edge, key, value.bool()?)?,
            "inv" => set(&mut inv, key, value.bool()?)?,
            "fixed" => set(&mut fixed, key, number()?)?,
            "event" => set(&mut event, key, number()?)?,
            "counters" => set(&mut counters, key, spanned(&value, integers)?)?,
            "group" => set(&mut group, key, number()?)?,
            "precise" => set(&mut precise, key, value.bool()?)?,
            "deprecated" => set(&mut deprecated, key, value.bool()?)?,
            "any" => set(&mut any, key, value.bool()?)?,
            "extra_reg" => set(&mut extra_reg, key, number()?)?,
            "extra_value" => set(&mut extra_value, key, value.deserialize()?)?,
            "umask_ext" => set(&mut umask_ext, key, number()?)?,
            "extra_bits" => set(&mut extra_bits, key, value.deserialize()?)?,
            "alone_in_group" => set(&mut alone_in_group, key, value.bool()?)?,
            "excludes_later_groups" => set(&mut excludes_later_groups, key, value.bool()?)?,
            "excludes_other_groups" => set(&mut excludes_other_groups, key, value.bool()?)?,
            "group_may_be_empty" => set(&mut group_may_be_empty, key, value.bool()?)?,
            "same_as" => set(&mut same_as, key, list(&value, |v| spanned(v, name_of))?)?,
            other => return Err(unknown(other)),
        }
    }
    Ok(UmaskDoc {
        name: required(name, "name")?,
        code: required(code, "code")?,
        desc: desc.unwrap_or_default(),
        default: default.unwrap_or_default(),
        cmask,
        edge: edge.unwrap_or_default(),
        inv: inv.unwrap_or_default(),
        fixed,
        event,
        counters,
        group,
        precise: precise.unwrap_or_default(),
        deprecated: deprecated.unwrap_or_default(),
        any: any.unwrap_or_default(),
        extra_reg,
        extra_value,
        umask_ext,
        extra_bits,
        alone_in_group: alone_in_group.unwrap_or_default(),
        excludes_later_groups: excludes_later_groups.unwrap_or_default(),
        excludes_other_groups: excludes_other_groups.unwrap_or_default(),
        group_may_be_empty: group_may_be_empty.unwrap_or_default(),
        same_as: same_as.unwrap_or_default(),
    })
}

/// A string, borrowed from the text.
fn name_of(value: &Value<'_>) -> Result<Cow<'static, str>, TreeError> {
    value.str().map(Cow::Borrowed)
}

/// An array of integers.
fn integers(value: &Value<'_>) -> Result<Vec<i64>, TreeError> {
    list(value, Value::i64)
}

/// An array, each item read by `read`.
fn list<'t, T>(
    value: &Value<'t>,
    read: impl Fn(&Value<'t>) -> Result<T, TreeError>,
) -> Result<Vec<T>, TreeError> {
    let mut items = value.items()?;
    let mut out = Vec::with_capacity(items.len());
    while let Some(item) = items.next_item()? {
        out.push(read(&item)?);
    }
    Ok(out)
}

/// A value read by `read`, with its span.
fn spanned<'t, T>(
    value: &Value<'t>,
    read: impl FnOnce(&Value<'t>) -> Result<T, TreeError>,
) -> Result<Spanned<T>, TreeError> {
    let span: Range<usize> = value.span();
    Ok(Spanned::new(span, read(value)?))
}

/// Fills a key's slot, which a key given twice finds filled.
fn set<T>(slot: &mut Option<T>, key: &str, value: T) -> Result<(), TreeError> {
    match slot.replace(value) {
        None => Ok(()),
        Some(_) => Err(TreeError::new(format!("duplicate field `{key}`"))),
    }
}

fn required<T>(slot: Option<T>, key: &str) -> Result<T, TreeError> {
    slot.ok_or_else(|| TreeError::new(format!("missing field `{key}`")))
}

fn unknown(key: &str) -> TreeError {
    TreeError::new(format!("unknown field `{key}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_of(text: &'static str) -> Tree {
        let encoded = crate::tree::encode::encode(text).unwrap();
        Tree {
            nodes: Box::leak(encoded.nodes.into_boxed_slice()),
            text,
            decoded: Box::leak(encoded.decoded.into_boxed_str()),
        }
    }

    const MODEL: &str = r#"
[[cpu]]
id = "t"
description = "x"
encoder = "intel-arch"
match = [{ vendor = "intel", family = 6, model = 0x55 }]
pmu = { general_counters = 4, counter_width = 48, fixed_counters = 3, fixed_width = 48 }

[[cpu.event]]
name = "E"
code = 0xb7
desc = "an \"event\""
umask = 1
counters = [0, 1]
fixed = 1
flags = ["exclusive", "precise"]
extra_reg = 0x1a6
extra_value = "0x8000000000000000"
umasks = [
  { name = "A", code = 1, desc = "a", default = true, cmask = 2, edge = true, inv = true, fixed = 0, event = 0xc0, counters = [3], group = 1, precise = true, deprecated = true, any = true, umask_ext = 4 },
  { name = "B", code = 2, extra_reg = 0x1a7, extra_value = 5 },
  { name = "C", code = 3, extra_bits = 0x10, alone_in_group = true, excludes_later_groups = true, excludes_other_groups = true, group_may_be_empty = true },
  { name = "D", code = 4, extra_bits = "0x20", same_as = ["C"] },
]

[[cpu.event]]
name = "F"
code = 1

[cpu.generalized]
cycles = "E:A"

[cpu.event_aliases]
"G" = "E:B"
"#;

    /// Oracle: the `toml` crate's deserializer. Every key of the schema's events and unit
    /// masks, read by hand, gives what serde gives of the text, spans included.
    #[test]
    fn every_key_reads_by_hand_as_serde_reads_it() {
        let by_hand = file_doc(tree_of(MODEL)).unwrap();
        let from_text: FileDoc = toml::from_str(MODEL).unwrap();
        assert_eq!(format!("{by_hand:?}"), format!("{from_text:?}"));
        let cpu = by_hand.cpu[0].get_ref();
        assert_eq!(cpu.event[0].get_ref().umasks.len(), 4);
        assert!(matches!(
            cpu.event[0].get_ref().name.get_ref(),
            Cow::Borrowed("E")
        ));
    }

    /// What serde refuses of a text the hand reader refuses of its tree: an unknown key, a
    /// value of another type, a required key missing (the loader then reads the text).
    #[test]
    fn what_serde_refuses_is_refused() {
        for (from, to) in [
            ("code = 3, extra_bits", "code = 3, other = 1, extra_bits"),
            ("name = \"B\", code = 2", "name = \"B\", code = \"2\""),
            ("name = \"B\", code = 2", "code = 2"),
            ("{ name = \"A\", code = 1,", "{ name = \"A\", code = 1.5,"),
            ("default = true", "default = 1"),
            ("same_as = [\"C\"]", "same_as = \"C\""),
            ("counters = [3]", "counters = [\"3\"]"),
            ("flags = [\"exclusive\", \"precise\"]", "flags = [1]"),
            ("name = \"F\"\ncode = 1", "name = \"F\"\ncode = 1\nwhat = 2"),
            ("name = \"F\"\ncode = 1", "name = \"F\""),
            ("id = \"t\"", "id = \"t\"\nunknown = 1"),
            ("umask = 1", "umask = true"),
        ] {
            assert!(MODEL.contains(from), "{from}");
            let text: &'static str = Box::leak(MODEL.replacen(from, to, 1).into_boxed_str());
            assert!(toml::from_str::<FileDoc>(text).is_err(), "serde reads {to}");
            assert!(file_doc(tree_of(text)).is_err(), "read by hand: {to}");
        }
    }
}
