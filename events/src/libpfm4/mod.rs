//! libpfm4's grammar, exactly: event strings in libpfm4's syntax resolved as libpfm4's
//! `pfm_get_os_event_encoding(..., PFM_OS_NONE)` encodes them, from libpfm4's own tables
//! (generated per PMU into `data/generated/libpfm4/` from libpfm4's head as Debian sid ships it,
//! 4.13.0+git106-g3e4031b, keeping what 4.13 has and the head lacks; written into the shipped
//! tables by `counterhal-gen tables`), or refused where libpfm4 refuses them, with the same
//! class of error. The parser and encoders are 4.13's, which the head's still are for
//! `PFM_OS_NONE`. Where a table is wrong, the generator corrects it by an erratum with its
//! evidence (`gen/errata/libpfm4/`: none today; Sapphire Rapids' `INST_RETIRED:ANY`, which 4.13
//! had wrong, the head corrected).
//!
//! Which strings mean what libpfm4 means ("a name written in a source's spelling means what
//! that source means"):
//! - `PMU::EVENT...` where `PMU` is one of libpfm4's x86 core PMUs: always libpfm4's;
//! - on a CPU model that libpfm4 has a table for (its id or an alias is the PMU's name), a
//!   string whose event name (up to the first `:` or `.`) libpfm4's table has, unless it is
//!   written in the model's source's spelling: the part before the first `:` is one of the
//!   model's dotted names (Intel's `EVENT.UMASK`, perf's lower-case aliases), or, on a model
//!   generated from Intel's tables, an event of Intel's table that has no unit masks
//!   (`BOGUS_BR`). Those keep the model's meaning; where libpfm4 encodes the same string
//!   otherwise, [`Database::libpfm4_difference`](crate::database::Database::libpfm4_difference)
//!   says so (and `counterhal list` and `encode` print it);
//! - everything else (perf's generalized names, presets, raw codes, `cpu/.../`, names only
//!   the model has) resolves as before.
//!
//! [`grammar`] parses, [`intel`] and [`amd`] encode as libpfm4's two x86 encoders do, and
//! the result becomes a chosen native event of the model, encoded for the backend as any other.

mod amd;
// The one reader of the generated tables: `counterhal-gen tables`' (`table_writer/libpfm4.rs`)
// and the tests'; the library takes its flags and modifiers alone.
#[cfg(any(test, feature = "table-writer"))]
pub(crate) mod file;
mod grammar;
mod intel;
pub(crate) mod table;

use counterhal_hal::{Accepts, CounterSet, Encoding, EventRequest, ExtraMsr, ResolvedEvent};

use crate::database::Database;
use crate::encode::encode_native;
use crate::error::{EventError, EventErrorKind, err};
use crate::model::{CpuModel, EncoderKind, alias_key};
use crate::parse::Modifiers;
use crate::select::NativeChoice;

pub(crate) use grammar::{Pfm, PfmError};

/// The second register libpfm4 gives (its `codes[1]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Second {
    /// Offcore response (MSR 0x1a6 or 0x1a7).
    Offcore(u64),
    /// The precise frontend event (MSR 0x3f7).
    Frontend(u64),
    /// The load-latency threshold (MSR 0x3f6).
    LoadLatency(u64),
}

impl Second {
    /// The value libpfm4 puts in `codes[1]`.
    pub fn value(self) -> u64 {
        match self {
            Second::Offcore(v) | Second::Frontend(v) | Second::LoadLatency(v) => v,
        }
    }
}

/// libpfm4's encoding of one string.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Encoded {
    /// `codes[0]`: the event-select register, with EN and INT set.
    pub register: u64,
    /// `codes[1]`, where libpfm4 gives one.
    pub second: Option<Second>,
    /// Whether a privilege level was given (else libpfm4 applies its default, user and
    /// kernel, and we the backend's).
    pub levels_given: bool,
    /// The counters it may use (bits 0-31 general, 32 on fixed), 0 for any general one.
    pub cntmsk: u64,
}

/// Encodes `text` (after any `PMU::`) on libpfm4 PMU `pmu` as libpfm4 does.
pub(crate) fn encode_on(pmu: &table::Pmu, text: &str) -> Result<Encoded, PfmError> {
    let desc = grammar::parse(pmu, text)?;
    if pmu.intel {
        intel::encode(desc)
    } else {
        amd::encode(desc)
    }
}

/// The kind of error libpfm4's class maps to.
pub(crate) fn error_kind(code: Pfm) -> EventErrorKind {
    match code {
        Pfm::NotFound | Pfm::Inval => EventErrorKind::NotFound,
        Pfm::Attr => EventErrorKind::UnknownModifier,
        Pfm::NoUnitMask => EventErrorKind::UnitMaskInvalid,
        Pfm::AttrVal | Pfm::TooMany => EventErrorKind::ValueOutOfRange,
        Pfm::AttrSet => EventErrorKind::ModifierConflict,
        Pfm::FeatComb => EventErrorKind::CombinationNotAllowed,
        Pfm::Umask => EventErrorKind::UnitMaskRequired,
    }
}

/// The libpfm4 table of `model`: its id's or one of its aliases'.
fn table_of(model: &CpuModel) -> Option<table::Pmu> {
    std::iter::once(model.id.as_str())
        .chain(model.aliases.iter().map(String::as_str))
        .find_map(table::pmu)
}

/// Whether `head` (a string's part before its first `:`) is written in `model`'s own
/// spelling: one of its dotted names, or on a model from Intel's tables an event without
/// unit masks.
fn source_spelling(model: &CpuModel, head: &str) -> bool {
    let intel = model.encoder == EncoderKind::IntelArch;
    if head.contains('.') {
        // On Intel's models the aliases are libpfm4's spellings; elsewhere perf's names.
        return model.event(head).is_some()
            || head.split_once('.').is_some_and(|(base, mask)| {
                model
                    .event(base)
                    .is_some_and(|e| e.unit_mask(mask).is_some())
            })
            || (!intel && model.event_aliases.contains_key(&alias_key(head)));
    }
    intel && model.event(head).is_some_and(|e| e.unit_masks().is_empty())
}

/// Modifiers perf has and libpfm4 lacks: a string using one after a name in the model's own
/// spelling is perf's (`INST_RETIRED.ANY_P:pp`, `BOGUS_BR:uk`).
fn perf_only(part: &str, intel: bool) -> bool {
    let key = part.split('=').next().unwrap_or_default();
    matches!(key, "p" | "pp" | "ppp" | "P" | "H" | "G" | "frontend")
        || (intel && key == "h")
        || (key.len() > 1 && key.chars().all(|c| "ukhHGpP".contains(c)))
}

/// How the model's own meaning of a name compares with libpfm4's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Meaning {
    /// Both encode it alike (or the model does not resolve it): libpfm4's grammar applies.
    Same,
    /// libpfm4 encodes it otherwise, or refuses what the model defines (a declared
    /// difference: the model's meaning holds).
    Differs,
    /// Not libpfm4's name (an event or unit mask libpfm4 does not have).
    Foreign,
}

/// How the model's own meaning of `head` compares with libpfm4's, with libpfm4's encoding
/// and the model's register value where both encode it.
fn meaning(
    database: &Database,
    model: &CpuModel,
    pmu: &table::Pmu,
    head: &str,
) -> (Meaning, Option<(Encoded, u64)>) {
    let theirs = encode_on(pmu, head);
    let ours = database.resolve_own(Some(model), head, &X86_DEFAULT);
    let ours = match ours.as_ref().map(|r| &r.terms[0].request.encoding) {
        Ok(Encoding::Evtsel(evtsel)) => evtsel,
        _ => return (Meaning::Same, None),
    };
    match theirs {
        Ok(theirs) => {
            let same = theirs.register & !(1 << 20) == ours.register_value()
                && theirs.second.map(Second::value) == ours.extra.map(|x| x.value);
            let meaning = if same {
                Meaning::Same
            } else {
                Meaning::Differs
            };
            (meaning, Some((theirs, ours.register_value())))
        }
        Err(e) if matches!(e.code, Pfm::NotFound | Pfm::Attr | Pfm::NoUnitMask) => {
            (Meaning::Foreign, None)
        }
        Err(_) => (Meaning::Differs, None),
    }
}

/// How `text` resolves under libpfm4's grammar, or None when it is not libpfm4's to resolve
/// (see the module's documentation).
pub(crate) fn route(
    database: &Database,
    model: Option<&CpuModel>,
    text: &str,
    accepts: &Accepts,
) -> Option<Result<ResolvedEvent, EventError>> {
    if text.contains('/') {
        return None;
    }
    if let Some((name, rest)) = pmu_prefixed(text) {
        let pmu = table::pmu(name)?;
        let model = database
            .model(name)
            .or_else(|| database.model(pmu.name()))
            .or(model);
        let Some(model) = model else {
            return Some(Err(err(
                EventErrorKind::Unsupported,
                format!("`{text}`: no CPU model describes libpfm4's PMU `{name}`"),
            )));
        };
        return Some(resolve_on(database, &pmu, model, rest, text, accepts));
    }
    let model = model?;
    // A name in the model's own spelling with no modifier or only levels (`:u`, `:k`) means
    // what the model says whatever libpfm4's table holds: where libpfm4 encodes the name
    // alike, both readings give one encoding; where it differs, the model's spelling keeps
    // the model's meaning. So the table is not looked up for it.
    // (Asked first: the commonest case, and cheaper than the check below, which also ends
    // in None.)
    let head = text.split(':').next().unwrap_or_default();
    if text
        .split(':')
        .skip(1)
        .all(|part| matches!(part, "u" | "k"))
        && source_spelling(model, head)
    {
        return None;
    }
    let name = text.split([':', '.']).next().unwrap_or_default();
    let name = name.trim_matches(grammar::EVENT_DELIMITERS);
    // Decided before any table is looked up: libpfm4's x86 event names are letters, digits
    // and `_`, none of them a generalized name or a raw code (a test checks every table), so
    // `task-clock`, `cycles`, `PAPI_TOT_INS` or `r00c0` never search one.
    if !could_be_libpfm4(name) {
        return None;
    }
    let pmu = table_of(model)?;
    if !pmu.events().any(|e| e.is_named(name)) {
        return None;
    }
    let mut parts = text.split(':');
    parts.next();
    if source_spelling(model, head)
        && (parts.any(|p| perf_only(p, pmu.intel))
            || meaning(database, model, &pmu, head).0 != Meaning::Same)
    {
        return None;
    }
    Some(resolve_on(database, &pmu, model, text, text, accepts))
}

/// `PMU::REST` split at its first `::`; None for a string without one (most: a `:` is looked
/// for first, which costs less than a search for two).
fn pmu_prefixed(text: &str) -> Option<(&str, &str)> {
    if !text.contains(':') {
        return None;
    }
    text.split_once("::")
}

/// Whether `name` could be one of libpfm4's x86 event names: letters, digits and `_`, and
/// neither a generalized event's name nor a raw code (`r00c0`).
fn could_be_libpfm4(name: &str) -> bool {
    let raw = name.len() > 1
        && name.starts_with(['r', 'R'])
        && name[1..].chars().all(|c| c.is_ascii_hexdigit());
    !name.is_empty()
        && !raw
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && counterhal_hal::GeneralizedEvent::from_name(name).is_none()
}

/// A not-found error for `text` on `model` where neither libpfm4's table nor the model knows
/// its event name (the model's own resolution may have failed for another reason first).
pub(crate) fn not_found(model: Option<&CpuModel>, text: &str) -> Option<EventError> {
    let model = model?;
    if pmu_prefixed(text).is_some() || text.contains('/') {
        return None;
    }
    let name = text.split([':', '.']).next().unwrap_or_default();
    if !could_be_libpfm4(name) {
        return None;
    }
    let pmu = table_of(model)?;
    let head = text.split(':').next().unwrap_or_default();
    let known = pmu.events().any(|e| e.is_named(name))
        || model.event(name).is_some()
        || model.event(head).is_some()
        || model.event_aliases.contains_key(&alias_key(head))
        || model.event_aliases.contains_key(&alias_key(name))
        || counterhal_hal::GeneralizedEvent::from_name(name).is_some()
        || counterhal_hal::GeneralizedEvent::from_name(head).is_some()
        || name.is_empty()
        || text.starts_with(['r', 'R'])
            && text[1..]
                .split(':')
                .next()
                .is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
    (!known).then(|| {
        err(
            EventErrorKind::NotFound,
            format!("unknown event `{name}` on CPU model `{}`", model.id),
        )
        .with_hint(format!(
            "`counterhal list --cpu-model {}` shows its events",
            model.id
        ))
    })
}

fn resolve_on(
    database: &Database,
    pmu: &table::Pmu,
    model: &CpuModel,
    rest: &str,
    text: &str,
    accepts: &Accepts,
) -> Result<ResolvedEvent, EventError> {
    let encoded = encode_on(pmu, rest).map_err(|e| {
        let error = err(
            error_kind(e.code),
            format!("`{text}` (libpfm4's PMU `{}`): {}", pmu.name(), e.why),
        );
        if e.code == Pfm::NotFound {
            let name = rest.split([':', '.']).next().unwrap_or_default();
            error.with_suggestions(crate::suggest::nearest(
                name,
                pmu.events().map(|e| e.name().to_string()),
                3,
            ))
        } else {
            error.with_hint(format!(
                "`counterhal list --cpu-model {}` shows the unit masks; libpfm4's modifiers are {}",
                model.id,
                if pmu.intel {
                    "k u e i c t ldlat intx intxcp fe_thres (as the event takes them)"
                } else {
                    "k u e i c h g (as the event takes them)"
                }
            ))
        }
    })?;
    let mut choice = choice(model, pmu.intel, &encoded, text)?;
    // Where the model's own reading of the string selects the same event, its counters
    // (which know the fixed counters) place it.
    if let Ok(own) = database.resolve_own(Some(model), rest, accepts)
        && let Encoding::Evtsel(own) = &own.terms[0].request.encoding
        && own.event_select() == choice_select(&choice)
    {
        choice.counters = own.counters;
        choice.fixed = own.fixed;
    }
    let encoding = encode_native(model, &choice, accepts, text)?;
    Ok(ResolvedEvent::single(EventRequest::new(text, encoding)))
}

/// The event-select bits of `choice` (no domain), as [`counterhal_hal::Evtsel::event_select`]
/// gives them.
fn choice_select(choice: &NativeChoice) -> u64 {
    let mut evtsel = counterhal_hal::Evtsel::new(choice.code, choice.umask);
    evtsel.edge = choice.edge;
    evtsel.invert = choice.invert;
    evtsel.cmask = choice.cmask;
    evtsel.any_thread = choice.any_thread;
    evtsel.in_tx = choice.in_tx;
    evtsel.in_tx_cp = choice.in_tx_cp;
    evtsel.event_select()
}

/// libpfm4's encoding as a chosen native event of `model`.
fn choice(
    model: &CpuModel,
    intel: bool,
    encoded: &Encoded,
    text: &str,
) -> Result<NativeChoice, EventError> {
    let r = encoded.register;
    let bit = |n: u32| r & (1 << n) != 0;
    let known: u64 = if intel {
        0xffff_ffff_u64 & !(1 << 19) | (1 << 32) | (1 << 33)
    } else {
        0xffff_ffff_u64 & !(1 << 19) & !(1 << 21) | (0xf << 32) | (1 << 40) | (1 << 41)
    };
    if r & !known != 0 {
        return Err(err(
            EventErrorKind::Unsupported,
            format!(
                "`{text}`: libpfm4 encodes it as {r:#x}, with bits {:#x} no event-select field holds",
                r & !known
            ),
        ));
    }
    let mut modifiers = Modifiers::default();
    if encoded.levels_given {
        modifiers.user = Some(bit(16));
        modifiers.kernel = Some(bit(17));
    }
    if !intel && bit(41) != bit(40) {
        modifiers.host_only = Some(bit(41));
        modifiers.guest_only = Some(bit(40));
    }
    let filtered = bit(18) || bit(23) || (r >> 24) & 0xff != 0 || bit(32) || bit(33);
    let general = CounterSet::first(model.pmu.general_counters);
    let mut counters = match encoded.cntmsk & 0xffff_ffff {
        0 => general,
        mask => general.intersection(CounterSet::from_mask(mask as u32)),
    };
    let fixed = (0..model.pmu.fixed_counters)
        .find(|n| encoded.cntmsk & (1 << (32 + n)) != 0)
        .filter(|_| !filtered && encoded.second.is_none());
    if counters.is_empty() && fixed.is_none() && encoded.cntmsk & 0xffff_ffff != 0 {
        // General counters the model does not have (libpfm4's Goldmont table gives its
        // cycle events bits 29 and 30, for fixed counters 1 and 2): libpfm4 does not place
        // events, so any general counter.
        counters = general;
    }
    if counters.is_empty() && fixed.is_none() {
        return Err(err(
            EventErrorKind::CombinationNotAllowed,
            format!(
                "`{text}` counts only on a fixed counter, which has no edge, invert, counter-mask or TSX filters"
            ),
        ));
    }
    let code = (r & 0xff) as u16;
    let umask = ((r >> 8) & 0xff) as u8;
    let extra = encoded.second.map(|second| match second {
        Second::Offcore(v) => ExtraMsr::new(
            if matches!((code, umask), (0xbb | 0x2b, 0x01) | (0xb7, 0x02)) {
                ExtraMsr::OFFCORE_RSP_1
            } else {
                ExtraMsr::OFFCORE_RSP_0
            },
            v,
        ),
        Second::Frontend(v) => ExtraMsr::new(ExtraMsr::FRONTEND, v),
        Second::LoadLatency(v) => ExtraMsr::new(ExtraMsr::LOAD_LATENCY, v),
    });
    Ok(NativeChoice {
        code: if intel {
            code
        } else {
            code | (((r >> 32) & 0xf) as u16) << 8
        },
        umask,
        edge: bit(18),
        invert: bit(23),
        cmask: ((r >> 24) & 0xff) as u8,
        counters,
        fixed,
        extra,
        any_thread: intel && bit(21),
        umask2: 0,
        in_tx: intel && bit(32),
        in_tx_cp: intel && bit(33),
        modifiers,
    })
}

impl Database {
    /// Where `text`, resolved on CPU model `cpu` in the model's own spelling (an Intel dotted
    /// name, an event of Intel's table), means something else to libpfm4: libpfm4's event
    /// select and second register (`codes[0]` without its interrupt bit 20, `codes[1]`), or
    /// its refusal. None where the model has no libpfm4 table, libpfm4's grammar resolves
    /// `text` itself, or both agree.
    pub fn libpfm4_difference(&self, cpu: &str, text: &str) -> Option<String> {
        let model = self.model(cpu)?;
        let pmu = table_of(model)?;
        if pmu_prefixed(text).is_some() || text.contains('/') {
            return None;
        }
        let head = text.split(':').next().unwrap_or_default();
        if !source_spelling(model, head) {
            return None;
        }
        let (meaning, values) = meaning(self, model, &pmu, head);
        if meaning != Meaning::Differs {
            return None;
        }
        let note = match values {
            Some((theirs, ours)) => {
                let second = theirs.second.map_or(String::new(), |s| {
                    format!(" (second register {:#x})", s.value())
                });
                format!(
                    "libpfm4 encodes `{head}` as {:#x}{second}; {}'s own meaning is {ours:#x}",
                    theirs.register & !(1 << 20),
                    model.id
                )
            }
            None => format!("libpfm4 refuses `{head}`, which {} defines", model.id),
        };
        Some(format!(
            "{note}; write `{}::{head}` for libpfm4's",
            pmu.name()
        ))
    }

    /// How many of libpfm4's tables this process has looked up (for the test that a program
    /// naming no libpfm4 event looks none up). The tables are rows read in place: a lookup
    /// parses nothing, and this counts the tables a string made the router search.
    #[doc(hidden)]
    pub fn libpfm4_tables_parsed() -> usize {
        table::used()
    }

    /// The names of libpfm4's x86 core PMUs whose tables are shipped, sorted.
    pub fn libpfm4_pmus() -> impl Iterator<Item = &'static str> {
        table::pmu_names()
    }
}

/// The profile differences are stated for: an x86 counter's user and kernel bits.
pub(crate) const X86_DEFAULT: Accepts = Accepts::new(
    &[counterhal_hal::Family::Evtsel],
    counterhal_hal::Domain::from_bits_truncate(
        counterhal_hal::Domain::USER.bits() | counterhal_hal::Domain::KERNEL.bits(),
    ),
    counterhal_hal::Domain::DEFAULT,
);

#[cfg(test)]
mod tests {
    use super::file::{self, EventEntry, UmaskEntry};
    use super::table::{self, Event, Umask};

    fn same_event(pmu: &str, ours: &Event, theirs: &EventEntry) {
        let at = format!("{pmu}: event {}", theirs.name);
        assert_eq!(ours.name(), theirs.name, "{at}");
        assert_eq!(ours.equiv(), theirs.equiv.as_deref(), "{at}");
        assert_eq!(
            (ours.code(), ours.cntmsk(), ours.ngrp()),
            (theirs.code, theirs.cntmsk, theirs.ngrp),
            "{at}"
        );
        assert_eq!(
            (ours.modmsk(), ours.modmsk_req(), ours.flags()),
            (theirs.modmsk, theirs.modmsk_req, theirs.flags),
            "{at}"
        );
        assert_eq!(ours.umasks().len(), theirs.umasks.len(), "{at}");
        for (ours, theirs) in ours.umasks().iter().zip(&theirs.umasks) {
            same_umask(&at, &ours, theirs);
        }
    }

    fn same_umask(at: &str, ours: &Umask, theirs: &UmaskEntry) {
        let at = format!("{at}: unit mask {}", theirs.name);
        assert_eq!(ours.name(), theirs.name, "{at}");
        assert_eq!(ours.equiv(), theirs.equiv.as_deref(), "{at}");
        assert_eq!(
            (ours.code(), ours.grpid(), ours.flags(), ours.cntmsk()),
            (theirs.code, theirs.grpid, theirs.flags, theirs.cntmsk),
            "{at}"
        );
        assert_eq!(
            (ours.modhw(), ours.modmsk_req()),
            (theirs.modhw, theirs.modmsk_req),
            "{at}"
        );
    }

    /// Oracle: the generated files on disk, read by the `toml` crate through the one reader
    /// of them (`file.rs`). Every shipped table is its file's: each event and unit mask,
    /// field by field, in order; and there is one table per file.
    #[test]
    fn every_compiled_table_is_its_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/generated/libpfm4");
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("a directory entry reads").path())
            .filter(|path| path.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        let names: Vec<&str> = table::pmu_names().collect();
        assert_eq!(files.len(), names.len());
        for (path, &name) in files.iter().zip(&names) {
            let text = std::fs::read_to_string(path).expect("the generated file reads");
            let theirs = file::read(&path.display().to_string(), &text)
                .unwrap_or_else(|why| panic!("{why}"));
            let ours = table::pmu(name).unwrap_or_else(|| panic!("{name}: no table"));
            assert_eq!(ours.name(), theirs.name);
            assert_eq!(
                (ours.intel, ours.raw_umask, ours.ecmask),
                (theirs.intel, theirs.raw_umask, theirs.ecmask),
                "{name}"
            );
            assert_eq!(ours.events().len(), theirs.events.len(), "{name}");
            for (ours, theirs) in ours.events().zip(&theirs.events) {
                same_event(name, &ours, theirs);
            }
        }
    }

    /// Every shipped table has events, and its event names are what the router assumes before
    /// it searches one: letters, digits and `_`, and no generalized event's name.
    #[test]
    fn every_shipped_table_has_router_names() {
        for name in table::pmu_names() {
            let pmu = table::pmu(name).unwrap_or_else(|| panic!("{name}: no table"));
            assert_eq!(pmu.name(), name);
            assert!(pmu.events().next().is_some(), "{name}");
            for event in pmu.events() {
                assert!(
                    super::could_be_libpfm4(event.name()),
                    "{name}: {} is not what the router takes for a libpfm4 name",
                    event.name()
                );
            }
        }
    }

    /// Tables are found as libpfm4 finds PMUs: without case, and by libpfm4's other names.
    #[test]
    fn tables_are_found_by_any_case_and_other_names() {
        let name = |text: &str| table::pmu(text).map(|pmu| pmu.name());
        assert_eq!(name("SKL"), Some("skl"));
        assert_eq!(name("Amd64_Fam17h"), Some("amd64_fam17h_zen1"));
        assert_eq!(name("amd64_fam17h_zen1"), Some("amd64_fam17h_zen1"));
        assert_eq!(name("skl "), None);
        assert_eq!(name("p6"), None);
        assert_eq!(name(""), None);
    }

    /// A rejected file names itself, the event and unit mask, and what is wrong.
    #[test]
    fn the_reader_names_what_is_wrong() {
        let table =
            |event: &str| format!("pmu = \"x\"\nkind = \"intel\"\nflags = []\n[[event]]\n{event}");
        let wrong = |text: &str| file::read("x.toml", text).expect_err("refused");
        assert_eq!(
            wrong(&table("name = \"E\"\ncode = 1\nmodmsk = [\"h\"]")),
            "x.toml: event `E`: unknown modifier `h`"
        );
        assert_eq!(
            wrong(&table(
                "name = \"E\"\ncode = 1\nmodmsk = []\numasks = [{ name = \"U\", code = 1, flags = [\"NEW\"] }]"
            )),
            "x.toml: event `E`: unit mask `U`: unknown flag `NEW`"
        );
        assert_eq!(
            wrong(&table("name = \"E\"\nequiv = \"\"\ncode = 1\nmodmsk = []")),
            "x.toml: event `E`: an empty `equiv`"
        );
        assert_eq!(
            wrong(&table("name = \"E\"\ncode = 1\nngrp = 32\nmodmsk = []")),
            "x.toml: event `E`: 32 unit-mask groups, above 31"
        );
        assert!(wrong("pmu = \"x\"\nkind = \"arm\"\nflags = []").contains("unknown kind `arm`"));
    }
}
