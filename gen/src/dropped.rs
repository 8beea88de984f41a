//! libpfm4's names for events and unit masks that Intel's current tables dropped (Nehalem's
//! `BOGUS_BR`, `L2_HW_PREFETCH:*`) or never had (libpfm4's AnyThread unit masks): each
//! `EVENT:UNIT_MASK` (or `EVENT`) of the model's libpfm4 table that does not resolve in the
//! model, by its own name or an alias, is added with libpfm4's encoding: event select, unit
//! mask, counter mask, edge, invert and AnyThread as libpfm4 encodes the name alone (with the
//! defaults of the other groups), and its general counters (the unit mask's `.ucntmsk`, else
//! the event's `.cntmsk`). An event the model lacks is added whole, `exclusive` (each unit mask
//! carries its whole encoding), with libpfm4's default where it has exactly one; a unit mask of
//! an event the model has is added to it where the event takes plain unit masks (no unit-mask
//! byte always set, no extra register, no fixed counter). Not added: one-letter unit-mask
//! names (`:e` and `:i` are modifiers), events on fixed counters only, an event whose name is a
//! whole-event alias (the alias would stop applying), offcore-response, load-latency and
//! frontend names (`offcore.rs`, `thresholds.rs` add those), and unit masks whose code
//! disagrees with their stated equivalent ([`libpfm4_spellings`] leaves them out). Intel stays
//! the authority: a name the model resolves is never added, and none changes encoding. Names,
//! codes and counters are facts; nothing else carries over.

use std::collections::BTreeMap;
use std::path::Path;

use crate::GenError;
use crate::aliases::{Bits, expression, known, libpfm4_spellings};
use crate::cparse::{Fields, integer};
use crate::intel_tables::{AliasTable, for_each_intel_model};
use crate::model::{DroppedCounts, GenEvent, GenModel, GenUnitMask};

/// What the generator needs of one libpfm4 event besides its spellings' bits.
#[derive(Default)]
struct EventFacts {
    /// `.cntmsk` (None: every counter).
    cntmsk: Option<u64>,
    /// It programs another register (offcore response, frontend) or has a code beyond 16 bits.
    skip: bool,
    /// Its unit masks flagged `INTEL_X86_DFL`.
    defaults: Vec<String>,
    /// Its unit masks that program another register (load latency).
    skip_masks: Vec<String>,
    /// The unit masks with counters of their own (`.ucntmsk`).
    mask_counters: BTreeMap<String, u64>,
    /// It has a one-letter unit mask (`L2_LINES_IN:E`), which reads as a modifier.
    one_letter: bool,
    /// A unit mask flagged `INTEL_X86_NCOMBO`: libpfm4 refuses to combine it with others.
    no_combo: bool,
}

/// What [`add_dropped`] needs of each event of table `t` besides its spellings' bits.
fn facts(
    entries: &[Fields],
    umask_arrays: &BTreeMap<String, Vec<Fields>>,
    t: &AliasTable,
) -> BTreeMap<String, EventFacts> {
    let mut out = BTreeMap::new();
    for entry in entries {
        let Some(name) = entry.get("name") else {
            continue;
        };
        let flags = entry.get("flags").map_or("", String::as_str);
        let mut f = EventFacts {
            cntmsk: entry.get("cntmsk").and_then(|c| integer(c)),
            skip: flags.contains("INTEL_X86_FRONTEND")
                || name.starts_with("OFFCORE_RESPONSE")
                || name == "OCR"
                || entry
                    .get("code")
                    .and_then(|c| expression(c))
                    .is_none_or(|c| c > 0xffff),
            ..EventFacts::default()
        };
        for mask in entry
            .get("umasks")
            .and_then(|u| umask_arrays.get(u))
            .into_iter()
            .flatten()
            .filter(|m| m.get("umodel").is_none_or(|u| u.trim() == t.pmu))
        {
            let Some(uname) = mask.get("uname") else {
                continue;
            };
            f.one_letter |= uname.len() == 1;
            let uflags = mask.get("uflags").map_or("", String::as_str);
            f.no_combo |= uflags.contains("INTEL_X86_NCOMBO");
            if uflags.contains("INTEL_X86_DFL") {
                f.defaults.push(uname.clone());
            }
            if uflags.contains("INTEL_X86_LDLAT") || uflags.contains("INTEL_X86_FETHR") {
                f.skip_masks.push(uname.clone());
            }
            if let Some(c) = mask.get("ucntmsk").and_then(|c| integer(c)) {
                f.mask_counters.insert(uname.clone(), c);
            }
        }
        out.insert(name.clone(), f);
    }
    out
}

/// A unit mask named `name` with libpfm4's encoding `bits`, on an event of code `event`.
fn mask_of(name: &str, bits: Bits, event: u16) -> GenUnitMask {
    let code = (bits & 0xff) as u16;
    GenUnitMask {
        name: name.to_string(),
        code: (bits >> 8 & 0xff) as u8,
        edge: bits >> 18 & 1 == 1,
        any: bits >> 21 & 1 == 1,
        inv: bits >> 23 & 1 == 1,
        cmask: (bits >> 24 & 0xff) as u8,
        event: (code != event).then_some(code),
        ..GenUnitMask::default()
    }
}

/// The general counters of `cntmsk` among `general` (None: every counter).
fn counters_of(cntmsk: Option<u64>, general: u32) -> Vec<u32> {
    (0..general)
        .filter(|i| cntmsk.is_none_or(|c| c >> i & 1 == 1))
        .collect()
}

/// A name event strings can spell and that no modifier shadows.
fn valid_name(name: &str) -> bool {
    name.len() > 1 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Adds to `model` libpfm4's spellings of table `t` (with their bits, as
/// [`libpfm4_spellings`] gives them) that it does not resolve; returns what was added.
pub fn add_dropped(
    model: &mut GenModel,
    spellings: &[(String, Bits)],
    entries: &[Fields],
    umask_arrays: &BTreeMap<String, Vec<Fields>>,
    t: &AliasTable,
) -> DroppedCounts {
    let facts = facts(entries, umask_arrays, t);
    let alias_keys: std::collections::BTreeSet<String> = model
        .aliases
        .iter()
        .map(|(a, _)| a.to_ascii_uppercase())
        .collect();
    let aliased = |key: &str| alias_keys.contains(&key.to_ascii_uppercase());
    // Event name -> the unit masks (or the event alone: None) to add, in libpfm4's order.
    let mut wanted: BTreeMap<String, Vec<(Option<String>, Bits)>> = BTreeMap::new();
    for (spelling, bits) in spellings {
        if known(model, spelling) || aliased(spelling) || bits >> 32 != 0 {
            continue;
        }
        let (event, mask) = match spelling.split_once(':') {
            Some((e, m)) => (e, Some(m)),
            None => (spelling.as_str(), None),
        };
        let Some(f) = facts.get(event) else {
            continue;
        };
        if f.skip
            || !valid_name(event)
            || mask.is_some_and(|m| !valid_name(m) || f.skip_masks.iter().any(|s| s == m))
        {
            continue;
        }
        let adds = wanted.entry(event.to_string()).or_default();
        // libpfm4 lists an event once per table; a name given twice keeps its first encoding.
        if !adds.iter().any(|(m, _)| m.as_deref() == mask) {
            adds.push((mask.map(str::to_string), *bits));
        }
    }
    let mut counts = DroppedCounts::default();
    let general = model.general_counters;
    for (name, adds) in wanted {
        let f = &facts[&name];
        let counters = counters_of(f.cntmsk, general);
        if counters.is_empty() {
            continue;
        }
        let counters = (counters.len() as u32 != general).then_some(counters);
        // A unit mask's own counters (`.ucntmsk`) replace the event's, as in libpfm4: None
        // where the mask runs on no counter.
        let all = |c: &Option<Vec<u32>>| c.clone().unwrap_or_else(|| (0..general).collect());
        let mask_counters = |mask: &str| match f.mask_counters.get(mask) {
            Some(&c) => Some(counters_of(Some(c), general)).filter(|c| !c.is_empty()),
            None => Some(all(&counters)),
        };
        let existing = model
            .events
            .iter()
            .position(|e| e.name.eq_ignore_ascii_case(&name));
        match existing {
            Some(i) => {
                let event = &mut model.events[i];
                if event.umask.is_some()
                    || event.fixed.is_some()
                    || event.extra.is_some()
                    || event.umasks.is_empty()
                    || event
                        .umasks
                        .iter()
                        .any(|m| m.extra.is_some() || m.extra_bits.is_some())
                {
                    continue;
                }
                for (mask, bits) in adds {
                    let Some(mask) = mask else {
                        continue;
                    };
                    let Some(own) = mask_counters(&mask) else {
                        continue;
                    };
                    let mut m = mask_of(&mask, bits, event.code);
                    m.counters = (own != all(&event.counters)).then_some(own);
                    event.umasks.push(m);
                    counts.masks += 1;
                }
                event.umasks.sort_by(|a, b| a.name.cmp(&b.name));
            }
            None => {
                // A whole-event alias would be shadowed (one of a unit mask, `EVENT:MASK`, still
                // applies where the event has no such unit mask).
                if aliased(&name) {
                    continue;
                }
                let first = adds[0].1;
                let mut event = GenEvent {
                    name: name.clone(),
                    code: (first & 0xff) as u16,
                    counters: counters.clone(),
                    ..GenEvent::default()
                };
                if adds[0].0.is_none() {
                    if first >> 16 != 0 {
                        continue;
                    }
                    event.umask = Some((first >> 8 & 0xff) as u8).filter(|u| *u != 0);
                } else {
                    event.flags.push("exclusive");
                    for (mask, bits) in &adds {
                        let (Some(mask), Some(own)) =
                            (mask, mask.as_deref().and_then(mask_counters))
                        else {
                            continue;
                        };
                        let mut m = mask_of(mask, *bits, event.code);
                        m.counters = (own != all(&event.counters)).then_some(own);
                        m.default = f.defaults.len() == 1 && f.defaults[0] == *mask;
                        event.umasks.push(m);
                    }
                    event.umasks.sort_by(|a, b| a.name.cmp(&b.name));
                    counts.event_masks += event.umasks.len();
                }
                counts.events += 1;
                model.events.push(event);
            }
        }
    }
    model.events.sort_by(|a, b| a.name.cmp(&b.name));
    counts
}

/// The facts of libpfm4's event named `name` (case-insensitive).
fn facts_of<'f>(facts: &'f BTreeMap<String, EventFacts>, name: &str) -> Option<&'f EventFacts> {
    facts
        .iter()
        .find(|(event, _)| event.eq_ignore_ascii_case(name))
        .map(|(_, f)| f)
}

/// Gives each event of `model`'s own table that has no default unit mask libpfm4's default,
/// so that the event named alone encodes as in libpfm4 (`BR_INST_RETIRED` is
/// `BR_INST_RETIRED:ALL_BRANCHES`): where libpfm4's event of that name has one default (one
/// unit-mask group), and one of the event's unit masks encodes what libpfm4's `EVENT:DEFAULT`
/// does (the same-named one first). Returns how many events got one.
fn add_defaults(
    model: &mut GenModel,
    spellings: &[(String, Bits)],
    facts: &BTreeMap<String, EventFacts>,
) -> usize {
    let bits_of: BTreeMap<String, Bits> = spellings
        .iter()
        .map(|(s, b)| (s.to_ascii_uppercase(), *b))
        .collect();
    let alias_of: BTreeMap<String, String> = model.aliases.iter().cloned().collect();
    let mut whole = Vec::new();
    let mut added = 0;
    for event in &mut model.events {
        let Some(f) = facts_of(facts, &event.name) else {
            continue;
        };
        let [default] = f.defaults.as_slice() else {
            continue;
        };
        let key = format!("{}:{default}", event.name).to_ascii_uppercase();
        let Some(&bits) = bits_of.get(&key) else {
            continue;
        };
        // libpfm4's one-letter unit masks (`L2_LINES_IN:E`) read as modifiers here (`:e`,
        // edge): with a default, such a spelling would resolve to the default and the modifier.
        if f.one_letter
            || event.umask.is_some()
            || event.extra.is_some()
            || event.umasks.iter().any(|m| m.default || m.extra.is_some())
        {
            continue;
        }
        // libpfm4's default is another of the model's events under an alias
        // (`CPU_CLK_THREAD_UNHALTED:THREAD_P` is `CPU_CLK_UNHALTED.THREAD_P`): the event named
        // alone stands for it too.
        if let Some(target) = alias_of.get(&key) {
            whole.push((event.name.to_ascii_uppercase(), target.clone()));
            added += 1;
            continue;
        }
        let code = event.code;
        let encodes = |m: &GenUnitMask| {
            let own = u64::from(m.event.unwrap_or(code) & 0xff)
                | u64::from(m.code) << 8
                | u64::from(m.edge) << 18
                | u64::from(m.any) << 21
                | u64::from(m.inv) << 23
                | u64::from(m.cmask) << 24;
            own == bits && m.umask_ext == 0
        };
        let same_name = event
            .umasks
            .iter()
            .position(|m| m.name.eq_ignore_ascii_case(default) && encodes(m));
        let current = |m: &GenUnitMask| encodes(m) && !m.deprecated;
        let other = event
            .umasks
            .iter()
            .position(current)
            .or_else(|| event.umasks.iter().position(encodes));
        if let Some(i) = same_name.or(other) {
            event.umasks[i].default = true;
            added += 1;
        }
    }
    for (alias, target) in whole {
        if !alias_of.contains_key(&alias) {
            model.aliases.push((alias, target));
        }
    }
    model.aliases.sort();
    added
}

/// Whether unit-mask `codes` are bit fields that OR into their union: none is zero (a mask
/// that selects by having no bit, Tremont's `MACHINE_CLEARS.ANY`), and two that share a bit
/// nest, the larger the OR of the codes it holds (`SCALAR` 0x03 is `SCALAR_DOUBLE` 0x01 and
/// `SCALAR_SINGLE` 0x02). Tremont's branch masks, which each clear one bit (0x7e, 0xf7, 0xfe),
/// are not.
fn bit_fields(codes: &[u8]) -> bool {
    let held = |outer: u8| {
        codes
            .iter()
            .filter(|&&c| c != outer && c & !outer == 0)
            .fold(0u8, |all, &c| all | c)
    };
    codes.iter().all(|&a| {
        a != 0
            && codes.iter().all(|&b| {
                let nested = a & !b == 0 || b & !a == 0;
                a & b == 0 || a == b || nested
            })
            && (held(a) == 0 || held(a) == a)
    })
}

/// Lets the unit masks of each event of `model`'s own table combine (their codes ORed, as
/// libpfm4 does: `FP_ARITH_INST_RETIRED:SCALAR_DOUBLE:SCALAR_SINGLE`) where libpfm4's event of
/// that name flags none of its unit masks `INTEL_X86_NCOMBO`, every unit mask here is a
/// plain unit-mask byte (no filter, fixed counter, other event code, extra register or second
/// byte), and their codes are non-zero and share no bit. Returns how many events.
fn allow_combinations(model: &mut GenModel, facts: &BTreeMap<String, EventFacts>) -> usize {
    let mut count = 0;
    for event in &mut model.events {
        let Some(f) = facts_of(facts, &event.name) else {
            continue;
        };
        let plain = |m: &GenUnitMask| {
            m.cmask == 0
                && !m.edge
                && !m.inv
                && !m.any
                && m.fixed.is_none()
                && m.event.is_none()
                && m.extra.is_none()
                && m.umask_ext == 0
                && m.extra_bits.is_none()
                && m.counters.is_none()
        };
        let codes: Vec<u8> = event.umasks.iter().map(|m| m.code).collect();
        if f.no_combo
            || !bit_fields(&codes)
            || f.one_letter
            || event.umasks.len() < 2
            || event.extra.is_some()
            || !event.flags.contains(&"exclusive")
            || !event.umasks.iter().all(plain)
        {
            continue;
        }
        event.flags.retain(|f| *f != "exclusive");
        count += 1;
    }
    count
}

/// Adds libpfm4's names each model of [`INTEL_TABLES`](crate::intel_tables::INTEL_TABLES) in `models` lacks (see the module).
///
/// # Errors
/// A missing or malformed libpfm4 header.
pub fn add_libpfm4_dropped(
    models: &mut [GenModel],
    root: &Path,
    commit: &str,
) -> Result<(), GenError> {
    for_each_intel_model(models, root, |model, t, table| {
        let spellings = libpfm4_spellings(table, t)?;
        let (entries, umask_arrays) = (&table.entries, &table.umasks);
        let mut counts = add_dropped(model, &spellings, entries, umask_arrays, t);
        let facts = facts(entries, umask_arrays, t);
        counts.defaults = add_defaults(model, &spellings, &facts);
        counts.combinable = allow_combinations(model, &facts);
        if counts != DroppedCounts::default() {
            model.dropped_names = Some((t.provenance(commit), counts));
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::bit_fields;

    #[test]
    fn unit_masks_combine_only_as_bit_fields() {
        // Skylake's FP_ARITH_INST_RETIRED: single bits and their unions.
        assert!(bit_fields(&[
            0x01, 0x02, 0x03, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x18, 0xfc
        ]));
        // Tremont's BR_INST_RETIRED: each clears one bit.
        assert!(!bit_fields(&[0x7e, 0xf7, 0xfe, 0xf9]));
        // A mask of no bit, and a union with a bit none of the others has.
        assert!(!bit_fields(&[0x00, 0x01]));
        assert!(!bit_fields(&[0x01, 0x02, 0x07]));
    }
}
