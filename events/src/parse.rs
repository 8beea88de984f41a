//! The event-string parser.
//!
//! Accepted forms (case-insensitive names):
//! - libpfm4 style `[pmu::]EVENT[:UMASK]...[:mod[=val]]...`, with `.` accepted like `:`
//!   between the event and its first unit mask (`INST_RETIRED.ANY_P`);
//! - perf style generalized names with modifiers (`cycles:u`, `cycles:uk`,
//!   `L1-dcache-load-misses`);
//! - raw codes `rNNNN` (hexadecimal), optionally with modifiers (`r00c0:u`);
//! - PMU terms `pmu/term=value,term/[mods]` (`cpu/event=0x3c,umask=0x00/u`).
//!
//! Modifiers: `u`, `k`, `h` (user, kernel, hypervisor), `H` (host only), `G` (guest only),
//! `p`, `pp`, `ppp`, `P` (precision, which only sampling uses), `e` (edge), `i` (invert),
//! `c=0..255` (counter mask), `t` (AnyThread), `intx` and `intxcp` (Intel's TSX filters IN_TX
//! and IN_TXCP, libpfm4's names), `ldlat=N`, `frontend=V`, `fe_thres=N` (the load-latency and
//! frontend MSR values of the events that program them). Modifiers are case-insensitive except `H` and `G`, which are
//! perf's host-only and guest-only modifiers only in upper case (`h` is the hypervisor), and
//! `P`, which differs from `p` as in perf. The boolean ones take an optional `=0` or `=1`.
//! Level, context and precision letters may be grouped as perf groups them (`uk`, `uH`, `upp`).

use crate::error::{EventError, EventErrorKind, err};

/// The modifiers an error lists.
const MODIFIERS: &str = "u, k, h, H, G, p, pp, ppp, P, e, i, t, intx, intxcp, c=0..255, ldlat=, frontend= and fe_thres=";

/// The terms of a `pmu/term=value,.../` string: lower-cased names with their values (`None`
/// for a bare term such as `edge`).
pub type PmuTerms = Vec<(String, Option<u64>)>;

/// The modifiers of an event string; `None` means "not given".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Modifiers {
    /// `u`: count in user mode.
    pub user: Option<bool>,
    /// `k`: count in kernel mode.
    pub kernel: Option<bool>,
    /// `h`: count in the hypervisor.
    pub hypervisor: Option<bool>,
    /// `e`: count edges (occurrences) rather than cycles.
    pub edge: Option<bool>,
    /// `i`: invert the counter-mask comparison.
    pub invert: Option<bool>,
    /// `c=N`: the counter mask (threshold), 0..=255.
    pub cmask: Option<u8>,
    /// `H` (upper case only): count in the host only, not in guests (perf's `exclude_guest`).
    pub host_only: Option<bool>,
    /// `G` (upper case only): count in guests only, not in the host (perf's `exclude_host`).
    pub guest_only: Option<bool>,
    /// `p`, `pp`, `ppp`: the sampling precision asked for (1, 2, 3); `P` (the highest the PMU
    /// has) is kept as 3. Counting ignores it: it only affects where samples are taken.
    pub precise: Option<u8>,
    /// `t`: AnyThread (EVTSEL bit 21): count the event of both hyper-threads of the core
    /// (Intel architectural perfmon v3 and v4 only; a backend refuses it elsewhere).
    pub any_thread: Option<bool>,
    /// `intx`: count only inside TSX transactions (EVTSEL bit 32, IN_TX; Intel with TSX).
    pub in_tx: Option<bool>,
    /// `intxcp`: leave out aborted TSX transactions (EVTSEL bit 33, IN_TXCP; Intel with TSX).
    pub in_tx_cp: Option<bool>,
    /// `ldlat=N`: the load-latency threshold in cycles (MSR 0x3F6), 1..=65535.
    pub ldlat: Option<u16>,
    /// `frontend=V`: the whole frontend event selection (MSR 0x3F7), 24 bits.
    pub frontend: Option<u32>,
    /// `fe_thres=N`: the frontend latency threshold (MSR 0x3F7 bits 19:8), 1..=4095.
    pub fe_thres: Option<u16>,
}

impl Modifiers {
    /// Whether any privilege-level modifier (`u`, `k`, `h`) was given.
    pub fn has_levels(&self) -> bool {
        self.user.is_some() || self.kernel.is_some() || self.hypervisor.is_some()
    }

    /// Whether host-only (`H`) or guest-only (`G`) was asked for.
    pub fn has_contexts(&self) -> bool {
        self.host_only == Some(true) || self.guest_only == Some(true)
    }

    /// Whether any filter modifier (`e`, `i`, `c`) was given with a non-zero value.
    pub fn has_filters(&self) -> bool {
        self.edge == Some(true) || self.invert == Some(true) || self.cmask.is_some_and(|c| c > 0)
    }

    /// Applies one modifier `key[=value]`; `Ok(false)` when `key` is not a modifier name.
    ///
    /// # Errors
    /// [`EventErrorKind::ValueOutOfRange`] for a bad value,
    /// [`EventErrorKind::ModifierConflict`] for a second, different value.
    pub fn apply(&mut self, key: &str, value: Option<&str>) -> Result<bool, EventError> {
        let lower = match key {
            "H" | "G" => key.to_string(),
            _ => key.to_ascii_lowercase(),
        };
        let slot_bool = match lower.as_str() {
            "H" => Some(&mut self.host_only),
            "G" => Some(&mut self.guest_only),
            "u" => Some(&mut self.user),
            "k" => Some(&mut self.kernel),
            "h" => Some(&mut self.hypervisor),
            "e" => Some(&mut self.edge),
            "i" => Some(&mut self.invert),
            "t" => Some(&mut self.any_thread),
            "intx" => Some(&mut self.in_tx),
            "intxcp" => Some(&mut self.in_tx_cp),
            "c" => None,
            "ldlat" => {
                let v = extra_value(&lower, value, 1, 0xffff)?;
                set_once(
                    &mut self.ldlat,
                    u16::try_from(v).unwrap_or(u16::MAX),
                    "ldlat",
                )?;
                return Ok(true);
            }
            "frontend" => {
                let v = extra_value(&lower, value, 0, 0xff_ffff)?;
                set_once(
                    &mut self.frontend,
                    u32::try_from(v).unwrap_or(u32::MAX),
                    "frontend",
                )?;
                return Ok(true);
            }
            "fe_thres" => {
                let v = extra_value(&lower, value, 1, 0xfff)?;
                set_once(
                    &mut self.fe_thres,
                    u16::try_from(v).unwrap_or(u16::MAX),
                    "fe_thres",
                )?;
                return Ok(true);
            }
            _ => return Ok(false),
        };
        match slot_bool {
            Some(slot) => {
                let flag = match value {
                    None => true,
                    Some(text) => match parse_number(text) {
                        Some(0) => false,
                        Some(1) => true,
                        _ => {
                            return Err(err(
                                EventErrorKind::ValueOutOfRange,
                                format!("modifier `{lower}={text}`: the value must be 0 or 1"),
                            ));
                        }
                    },
                };
                set_once(slot, flag, &lower)?;
            }
            None => {
                let text = value.ok_or_else(|| {
                    err(
                        EventErrorKind::ValueOutOfRange,
                        "modifier `c` needs a counter mask value 0..=255 (`c=2`)",
                    )
                })?;
                let number = parse_number(text).filter(|n| *n <= 255).ok_or_else(|| {
                    err(
                        EventErrorKind::ValueOutOfRange,
                        format!("modifier `c={text}`: the counter mask must be 0..=255"),
                    )
                })?;
                // The filter keeps the value within 0..=255.
                let cmask = u8::try_from(number).unwrap_or(u8::MAX);
                set_once(&mut self.cmask, cmask, "c")?;
            }
        }
        Ok(true)
    }

    /// Applies a perf-style group of letters (`uk`, `ku`, `uh`, `uH`, `ppp`, `kP`); `Ok(false)`
    /// when `group` is not made only of `u`, `k`, `h` (any case but `H`), `H`, `G`, `p` and
    /// `P`.
    ///
    /// # Errors
    /// [`EventErrorKind::ModifierConflict`] when a letter contradicts an earlier `=0` or an
    /// earlier precision; [`EventErrorKind::ValueOutOfRange`] for more than three `p`.
    pub fn apply_group(&mut self, group: &str) -> Result<bool, EventError> {
        if group.is_empty()
            || !group
                .chars()
                .all(|c| matches!(c, 'u' | 'U' | 'k' | 'K' | 'h' | 'H' | 'G' | 'p' | 'P'))
        {
            return Ok(false);
        }
        // perf's check_modifier: every letter but `p` at most once (`task-clock:uu` is a
        // syntax error to perf).
        if let Some((_, twice)) = group
            .char_indices()
            .find(|&(at, c)| c != 'p' && group[at + c.len_utf8()..].contains(c))
        {
            return Err(err(
                EventErrorKind::ModifierConflict,
                format!("modifier `{group}`: `{twice}` given twice (each letter but `p` once)"),
            ));
        }
        let mut precise = 0u8;
        let mut precise_max = false;
        for letter in group.chars() {
            match letter {
                'p' => precise = precise.saturating_add(1),
                'P' => precise_max = true,
                _ => {
                    let mut buffer = [0u8; 4];
                    self.apply(letter.encode_utf8(&mut buffer), None)?;
                }
            }
        }
        if precise > 3 {
            return Err(err(
                EventErrorKind::ValueOutOfRange,
                format!(
                    "modifier `{group}`: precision is `p`, `pp` or `ppp` (or `P`, the highest)"
                ),
            ));
        }
        if precise_max {
            precise = 3;
        }
        if precise > 0 {
            set_once(&mut self.precise, precise, "p")?;
        }
        Ok(true)
    }

    /// Merges `other` (a unit mask's own filter bits, a mapping's modifiers) into `self`.
    ///
    /// # Errors
    /// [`EventErrorKind::ModifierConflict`] when both set the same modifier differently.
    pub fn merge(&mut self, other: &Modifiers) -> Result<(), EventError> {
        merge_one(&mut self.user, other.user, "u")?;
        merge_one(&mut self.kernel, other.kernel, "k")?;
        merge_one(&mut self.hypervisor, other.hypervisor, "h")?;
        merge_one(&mut self.edge, other.edge, "e")?;
        merge_one(&mut self.invert, other.invert, "i")?;
        merge_one(&mut self.cmask, other.cmask, "c")?;
        merge_one(&mut self.host_only, other.host_only, "H")?;
        merge_one(&mut self.guest_only, other.guest_only, "G")?;
        merge_one(&mut self.precise, other.precise, "p")?;
        merge_one(&mut self.any_thread, other.any_thread, "t")?;
        merge_one(&mut self.in_tx, other.in_tx, "intx")?;
        merge_one(&mut self.in_tx_cp, other.in_tx_cp, "intxcp")?;
        merge_one(&mut self.ldlat, other.ldlat, "ldlat")?;
        merge_one(&mut self.frontend, other.frontend, "frontend")?;
        merge_one(&mut self.fe_thres, other.fe_thres, "fe_thres")?;
        Ok(())
    }
}

/// The value of an extra-MSR modifier (`ldlat=`, `frontend=`, `fe_thres=`) in `min..=max`.
fn extra_value(key: &str, value: Option<&str>, min: u64, max: u64) -> Result<u64, EventError> {
    let text = value.unwrap_or_default();
    parse_number(text)
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| {
            err(
                EventErrorKind::ValueOutOfRange,
                format!("modifier `{key}={text}`: the value must be {min:#x}..={max:#x}"),
            )
        })
}

fn merge_one<T: Copy + PartialEq + std::fmt::Display>(
    slot: &mut Option<T>,
    other: Option<T>,
    name: &str,
) -> Result<(), EventError> {
    match other {
        Some(value) => set_once(slot, value, name),
        None => Ok(()),
    }
}

fn set_once<T: Copy + PartialEq + std::fmt::Display>(
    slot: &mut Option<T>,
    value: T,
    name: &str,
) -> Result<(), EventError> {
    match *slot {
        Some(previous) if previous != value => Err(err(
            EventErrorKind::ModifierConflict,
            format!("modifier `{name}` given twice with different values ({previous} and {value})"),
        )),
        _ => {
            *slot = Some(value);
            Ok(())
        }
    }
}

/// A number in decimal or `0x` hexadecimal.
pub(crate) fn parse_number(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() => u64::from_str_radix(hex, 16).ok(),
        Some(_) => None,
        None => text.parse().ok(),
    }
}

/// A named event string: `[pmu::]NAME[:UNIT_MASK]...[:modifier]...`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct EventSpec {
    /// The PMU (CPU model id) named before `::`, if any.
    pub pmu: Option<String>,
    /// The event name as written.
    pub name: String,
    /// The unit-mask names as written, in order.
    pub unit_masks: Vec<String>,
    /// The modifiers.
    pub modifiers: Modifiers,
    /// Whether the name contains a `.` (`INST_RETIRED.ANY_P`): the resolver then also tries
    /// the part after the dot as the first unit mask.
    pub(crate) dotted: bool,
}

/// A parsed event string.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ParsedEvent {
    /// A named event (generalized, preset or native).
    Named(EventSpec),
    /// `rNNNN`: a raw event-select code.
    Raw {
        /// The code: event bits 7:0 and 35:32, unit mask 15:8, edge 18, invert 23, counter
        /// mask 31:24.
        config: u64,
        /// The modifiers after it.
        modifiers: Modifiers,
    },
    /// `pmu/term=value,.../`: a PMU and its terms.
    PmuTerms {
        /// The PMU name.
        pmu: String,
        /// The terms, lower-cased, with their values (`None` for a bare term such as `edge`).
        terms: Vec<(String, Option<u64>)>,
        /// The modifiers after the closing `/`.
        modifiers: Modifiers,
    },
}

/// Parses an event string into its parts, without looking anything up.
///
/// # Errors
/// [`EventErrorKind::NotFound`] for an empty name, [`EventErrorKind::UnknownModifier`] for an
/// empty part or a `name=value` that is no modifier, [`EventErrorKind::ValueOutOfRange`] and
/// [`EventErrorKind::ModifierConflict`] for bad modifiers.
pub fn parse_event(text: &str) -> Result<ParsedEvent, EventError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(err(EventErrorKind::NotFound, "empty event name"));
    }
    if text.contains('/') {
        let (pmu, terms, rest) = split_pmu_terms(text)?;
        let mut modifiers = Modifiers::default();
        for part in rest.split(':').filter(|p| !p.is_empty()) {
            apply_modifier_part(&mut modifiers, part)?;
        }
        return Ok(ParsedEvent::PmuTerms {
            pmu,
            terms,
            modifiers,
        });
    }
    let (pmu, body) = match text.split_once("::") {
        Some((pmu, body)) => {
            if pmu.is_empty() {
                return Err(err(
                    EventErrorKind::NotFound,
                    format!("`{text}`: empty PMU name before `::`"),
                ));
            }
            (Some(pmu.to_string()), body)
        }
        None => (None, text),
    };
    let mut parts = body.split(':');
    let head = parts.next().unwrap_or_default();
    if head.is_empty() {
        return Err(err(
            EventErrorKind::NotFound,
            format!("`{text}`: empty event name"),
        ));
    }
    if pmu.is_none()
        && let Some(config) = parse_raw(head)?
    {
        let mut modifiers = Modifiers::default();
        for part in parts {
            apply_modifier_part(&mut modifiers, part)?;
        }
        return Ok(ParsedEvent::Raw { config, modifiers });
    }
    let mut spec = EventSpec {
        pmu,
        name: head.to_string(),
        ..EventSpec::default()
    };
    if let Some((name, mask)) = head.split_once('.') {
        if name.is_empty() || mask.is_empty() {
            return Err(err(
                EventErrorKind::NotFound,
                format!("`{head}`: empty name around `.`"),
            ));
        }
        spec.dotted = true;
    }
    for part in parts {
        if part.is_empty() {
            return Err(err(
                EventErrorKind::UnknownModifier,
                format!("`{text}`: empty unit mask or modifier after `:`"),
            ));
        }
        let (key, value) = match part.split_once('=') {
            Some((key, value)) => (key, Some(value)),
            None => (part, None),
        };
        if spec.modifiers.apply(key, value)? {
            continue;
        }
        if value.is_some() {
            return Err(err(
                EventErrorKind::UnknownModifier,
                format!("unknown modifier `{key}`; modifiers are {MODIFIERS}"),
            ));
        }
        spec.unit_masks.push(part.to_string());
    }
    Ok(ParsedEvent::Named(spec))
}

fn apply_modifier_part(modifiers: &mut Modifiers, part: &str) -> Result<(), EventError> {
    if part.is_empty() {
        return Err(err(
            EventErrorKind::UnknownModifier,
            "empty modifier after `:`",
        ));
    }
    let (key, value) = match part.split_once('=') {
        Some((key, value)) => (key, Some(value)),
        None => (part, None),
    };
    if modifiers.apply(key, value)? || (value.is_none() && modifiers.apply_group(key)?) {
        return Ok(());
    }
    Err(err(
        EventErrorKind::UnknownModifier,
        format!("unknown modifier `{part}`; modifiers are {MODIFIERS}"),
    ))
}

/// `rNNNN` (lower-case `r`, hexadecimal digits) as a raw code; `Ok(None)` when `head` is not of
/// that shape.
fn parse_raw(head: &str) -> Result<Option<u64>, EventError> {
    let Some(digits) = head.strip_prefix('r') else {
        return Ok(None);
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Ok(None);
    }
    u64::from_str_radix(digits, 16).map(Some).map_err(|_| {
        err(
            EventErrorKind::ValueOutOfRange,
            format!("raw code `{head}` does not fit in 64 bits"),
        )
    })
}

fn split_pmu_terms(text: &str) -> Result<(String, PmuTerms, &str), EventError> {
    let bad = |why: &str| {
        err(
            EventErrorKind::NotFound,
            format!("`{text}`: {why}; the form is `pmu/term=value,term/` (e.g. `cpu/event=0x3c/`)"),
        )
    };
    let (pmu, rest) = text.split_once('/').ok_or_else(|| bad("no `/`"))?;
    let (body, after) = rest.rsplit_once('/').ok_or_else(|| bad("no closing `/`"))?;
    if pmu.is_empty() {
        return Err(bad("empty PMU name"));
    }
    if !pmu
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
    {
        return Err(bad("bad PMU name"));
    }
    let terms = parse_term_list(body).map_err(|e| {
        if e.kind() == EventErrorKind::NotFound {
            bad("empty term name")
        } else {
            e
        }
    })?;
    Ok((pmu.to_string(), terms, after))
}

/// Parses the terms between a PMU's slashes, `term=value,term,...` (also the body of a
/// sysfs `events/` alias): lower-cased names with their values, `None` for a bare term.
/// Empty items are skipped; a term given twice with the same value counts once.
///
/// # Errors
/// [`EventErrorKind::ValueOutOfRange`] for a value that is not a number (decimal or `0x`
/// hexadecimal), [`EventErrorKind::ModifierConflict`] for a term given twice with different
/// values, [`EventErrorKind::NotFound`] for an empty term name.
pub fn parse_term_list(body: &str) -> Result<PmuTerms, EventError> {
    let mut terms: Vec<(String, Option<u64>)> = Vec::new();
    for term in body.split(',') {
        let term = term.trim();
        if term.is_empty() {
            continue;
        }
        let (key, value) = match term.split_once('=') {
            Some((key, value)) => {
                let number = parse_number(value).ok_or_else(|| {
                    err(
                        EventErrorKind::ValueOutOfRange,
                        format!("`{term}`: `{value}` is not a number (decimal or 0x hexadecimal)"),
                    )
                })?;
                (key.trim(), Some(number))
            }
            None => (term, None),
        };
        if key.is_empty() || key.contains('/') {
            return Err(err(
                EventErrorKind::NotFound,
                format!("`{term}`: empty or malformed term name"),
            ));
        }
        let key = key.to_ascii_lowercase();
        if let Some((_, previous)) = terms.iter().find(|(k, _)| *k == key) {
            if *previous != value {
                return Err(err(
                    EventErrorKind::ModifierConflict,
                    format!("term `{key}` given twice with different values"),
                ));
            }
            continue;
        }
        terms.push((key, value));
    }
    Ok(terms)
}

/// Parses perf's `pmu/term=value,term/` syntax into the PMU name and its terms (lower-cased
/// names; `None` for a bare term such as `edge`). Anything after the closing `/` is ignored
/// here (see [`parse_event`] for modifiers).
///
/// # Errors
/// [`EventErrorKind::NotFound`] for a malformed string, [`EventErrorKind::ValueOutOfRange`] for
/// a value that is not a number, [`EventErrorKind::ModifierConflict`] for a term given twice
/// with different values.
pub fn parse_pmu_terms(text: &str) -> Result<(String, PmuTerms), EventError> {
    let (pmu, terms, _) = split_pmu_terms(text.trim())?;
    Ok((pmu, terms))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// perf's parse-events.c `check_modifier`: each letter but `p` once in a group.
    #[test]
    fn a_letter_given_twice_is_refused_as_perf_refuses_it() {
        for group in ["uu", "uuuu", "ukuk", "kHk"] {
            let mut m = Modifiers::default();
            let e = m.apply_group(group).unwrap_err();
            assert_eq!(e.kind(), EventErrorKind::ModifierConflict, "{group}");
            assert!(e.message().contains(group), "{e:?}");
        }
        assert!(Modifiers::default().apply_group("ukppp").unwrap());
    }

    fn named(text: &str) -> EventSpec {
        match parse_event(text).unwrap() {
            ParsedEvent::Named(spec) => spec,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn libpfm_style() {
        let spec = named("p6::L2_RQSTS:MODIFIED:u:c=2:e");
        assert_eq!(spec.pmu.as_deref(), Some("p6"));
        assert_eq!(spec.name, "L2_RQSTS");
        assert_eq!(spec.unit_masks, vec!["MODIFIED"]);
        assert_eq!(spec.modifiers.user, Some(true));
        assert_eq!(spec.modifiers.cmask, Some(2));
        assert_eq!(spec.modifiers.edge, Some(true));
        assert!(named("INST_RETIRED.ANY_P").dotted);
        let spec = named("cycles:uk");
        assert_eq!(spec.unit_masks, vec!["uk"]);
    }

    #[test]
    fn modifier_errors() {
        let kind = |t: &str| parse_event(t).unwrap_err().kind();
        assert_eq!(kind("INST_RETIRED:c=256"), EventErrorKind::ValueOutOfRange);
        assert_eq!(kind("INST_RETIRED:c"), EventErrorKind::ValueOutOfRange);
        assert_eq!(kind("INST_RETIRED:u=2"), EventErrorKind::ValueOutOfRange);
        assert_eq!(
            kind("INST_RETIRED:c=1:c=2"),
            EventErrorKind::ModifierConflict
        );
        assert_eq!(kind("INST_RETIRED:t=2"), EventErrorKind::ValueOutOfRange);
        assert_eq!(kind("INST_RETIRED:x=1"), EventErrorKind::UnknownModifier);
        assert_eq!(kind("INST_RETIRED:u:"), EventErrorKind::UnknownModifier);
        assert_eq!(kind("INST_RETIRED::"), EventErrorKind::NotFound);
        assert_eq!(kind(""), EventErrorKind::NotFound);
        assert!(parse_event("INST_RETIRED:u:u=1").is_ok());
    }

    #[test]
    fn host_guest_and_precision() {
        let m = named("cycles:H").modifiers;
        assert_eq!((m.host_only, m.hypervisor), (Some(true), None));
        let m = named("cycles:h").modifiers;
        assert_eq!((m.host_only, m.hypervisor), (None, Some(true)));
        let m = named("cycles:G:U").modifiers;
        assert_eq!((m.guest_only, m.user), (Some(true), Some(true)));
        // Groups: perf's letters in any order; `H` upper case only.
        let mut m = Modifiers::default();
        assert!(m.apply_group("uHpp").unwrap());
        assert_eq!(
            (m.user, m.host_only, m.hypervisor, m.precise),
            (Some(true), Some(true), None, Some(2))
        );
        let mut m = Modifiers::default();
        assert!(m.apply_group("P").unwrap());
        assert_eq!(m.precise, Some(3));
        assert!(!Modifiers::default().apply_group("ug").unwrap());
        assert!(!Modifiers::default().apply_group("ANY").unwrap());
        assert_eq!(
            Modifiers::default().apply_group("pppp").unwrap_err().kind(),
            EventErrorKind::ValueOutOfRange
        );
        // Precision is never a unit mask: it parses on raw codes too.
        assert!(matches!(
            parse_event("r00c0:ppp").unwrap(),
            ParsedEvent::Raw { modifiers, .. } if modifiers.precise == Some(3)
        ));
    }

    #[test]
    fn raw_and_terms() {
        assert_eq!(
            parse_event("r1c0:u").unwrap(),
            ParsedEvent::Raw {
                config: 0x1c0,
                modifiers: Modifiers {
                    user: Some(true),
                    ..Modifiers::default()
                }
            }
        );
        assert!(matches!(
            parse_event("RETIRED").unwrap(),
            ParsedEvent::Named(_)
        ));
        let (pmu, terms) = parse_pmu_terms("cpu/event=0x3c,umask=1,edge/").unwrap();
        assert_eq!(pmu, "cpu");
        assert_eq!(
            terms,
            vec![
                ("event".into(), Some(0x3c)),
                ("umask".into(), Some(1)),
                ("edge".into(), None)
            ]
        );
        assert_eq!(
            parse_pmu_terms("cpu/event=zz/").unwrap_err().kind(),
            EventErrorKind::ValueOutOfRange
        );
        assert!(matches!(
            parse_event("cpu/event=0x3c/uk").unwrap(),
            ParsedEvent::PmuTerms { .. }
        ));
    }
}
