//! A model's native events and their unit masks, validated against the model.

use std::fmt;

use counterhal_hal::{CounterSet, Error, ExtraMsr};
use toml::Spanned;

use super::header::{counter_set, fixed_counter};
use super::schema::{EventDoc, UmaskDoc};
use super::source::{Source, number};
use crate::limits::MAX_UNIT_MASKS;
use crate::model::{
    CombineRules, CpuModel, EncoderKind, EventFlags, NativeEvent, PmuDescription, UnitMask,
    UnitMaskClass,
};

pub(super) fn native_event(
    source: &Source<'_>,
    encoder: EncoderKind,
    pmu: &PmuDescription,
    doc: &EventDoc,
) -> Result<NativeEvent, Error> {
    let name = doc.name.get_ref().trim().to_string();
    if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
        return Err(source.error(
            doc.name.span(),
            "name",
            format!("`{name}` is not a valid event name (letters, digits, _)"),
        ));
    }
    let max = i64::from(encoder.max_event_code());
    let code = *doc.code.get_ref();
    if !(0..=max).contains(&code) {
        return Err(source.error(
            doc.code.span(),
            "code",
            format!(
                "event code {code:#x} of `{name}` is out of range for encoder {} (0..={max:#x})",
                encoder.name()
            ),
        ));
    }
    let code = u16::try_from(code).unwrap_or(0);
    let flags = event_flags(source, encoder, doc, &name)?;
    let base_umask = match &doc.umask {
        Some(v) => number(source, v, "umask", 0xff)?,
        None => 0,
    };
    let counters = match &doc.counters {
        Some(v) => counter_set(source, pmu, v)?,
        None => CounterSet::first(pmu.general_counters),
    };
    let fixed = match &doc.fixed {
        Some(v) => Some(fixed_counter(source, pmu, v)?),
        None => None,
    };
    if counters.is_empty() && fixed.is_none() {
        return Err(source.error(
            doc.name.span(),
            "counters",
            format!("`{name}` has no counter: give `counters` or `fixed`"),
        ));
    }
    let extra = extra_register(
        source,
        encoder,
        format_args!("{name}"),
        doc.extra_reg.as_ref(),
        doc.extra_value.as_ref(),
    )?;
    let event = EventAt {
        source,
        encoder,
        pmu,
        name: &name,
        extra,
    };
    let mut unit_masks = event.unit_masks(doc)?;
    state_masks(flags, &mut unit_masks);
    Ok(NativeEvent {
        name,
        code,
        base_umask,
        description: doc.desc.clone(),
        counters,
        fixed,
        flags,
        extra,
        unit_masks,
    })
}

/// The event's `flags`, checked against its encoder: AnyThread only with intel-arch, and
/// no unit masks on P5.
fn event_flags(
    source: &Source<'_>,
    encoder: EncoderKind,
    doc: &EventDoc,
    name: &str,
) -> Result<EventFlags, Error> {
    let mut flags = EventFlags::default();
    for flag in &doc.flags {
        match flag.get_ref().as_ref() {
            "umask_required" => flags.umask_required = true,
            "mesi" => flags.mesi = true,
            "any_initiator" => flags.any_initiator = true,
            "exclusive" => flags.exclusive = true,
            "precise" => flags.precise = true,
            "deprecated" => flags.deprecated = true,
            "any_thread" => flags.any_thread = true,
            other => {
                return Err(source.error(
                    flag.span(),
                    "flags",
                    format!("unknown flag `{other}`; one of umask_required, mesi, any_initiator, exclusive, precise, deprecated, any_thread"),
                ));
            }
        }
    }
    if (flags.any_thread || doc.umasks.iter().any(|u| u.get_ref().any))
        && encoder != EncoderKind::IntelArch
    {
        return Err(source.error(
            doc.name.span(),
            "flags",
            format!(
                "`{name}`: AnyThread (`any_thread`, `any`) exists only with encoder intel-arch"
            ),
        ));
    }
    if encoder == EncoderKind::P5
        && (doc.umask.is_some() || !doc.umasks.is_empty() || flags.mesi || flags.any_initiator)
    {
        return Err(source.error(
            doc.name.span(),
            "umasks",
            format!("`{name}`: P5 events take no unit masks"),
        ));
    }
    Ok(flags)
}

/// An event being read, with what its unit masks are checked against.
struct EventAt<'a> {
    source: &'a Source<'a>,
    encoder: EncoderKind,
    pmu: &'a PmuDescription,
    /// The event's name, for messages.
    name: &'a str,
    /// The extra register the event itself programs.
    extra: Option<ExtraMsr>,
}

impl EventAt<'_> {
    /// The event's unit masks from its `umasks`, each checked, and the `same_as` between them.
    fn unit_masks(&self, doc: &EventDoc) -> Result<Vec<UnitMask>, Error> {
        if doc.umasks.len() > MAX_UNIT_MASKS {
            return Err(self.source.error(
                doc.name.span(),
                "umasks",
                format!(
                    "`{}` has {} unit masks, above the limit of {MAX_UNIT_MASKS} an event (the \
                     shipped data's most is 1,008)",
                    self.name,
                    doc.umasks.len()
                ),
            ));
        }
        let mut unit_masks: Vec<UnitMask> = Vec::with_capacity(doc.umasks.len());
        // Whether two unit masks may share a name, which each is then checked for (an event may
        // have hundreds: a check of each against those before is quadratic).
        let may_repeat = names_may_repeat(doc);
        for umask in &doc.umasks {
            let u = umask.get_ref();
            let uname = self.unit_mask_name(u, &unit_masks, may_repeat)?;
            unit_masks.push(self.unit_mask(u, uname)?);
        }
        self.check_same_as(doc, &unit_masks)?;
        Ok(unit_masks)
    }

    /// The unit mask's name, trimmed: refused when it is not a name, would shadow a group of
    /// modifiers (`uk`; a one-letter name is written after a dot, `L2_LINES_IN.E`),
    /// or repeats one of `before` (looked for only when `may_repeat`).
    fn unit_mask_name(
        &self,
        u: &UmaskDoc,
        before: &[UnitMask],
        may_repeat: bool,
    ) -> Result<String, Error> {
        let (source, name) = (self.source, self.name);
        let uname = u.name.get_ref().trim().to_string();
        if uname.is_empty()
            || uname.starts_with('.')
            || uname.ends_with('.')
            || !uname
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
        {
            return Err(source.error(
                u.name.span(),
                "name",
                format!("`{uname}` is not a valid unit-mask name (letters, digits, _ and inner .)"),
            ));
        }
        if uname.eq_ignore_ascii_case("uk") || uname.eq_ignore_ascii_case("ku") {
            return Err(source.error(
                u.name.span(),
                "name",
                format!("unit mask `{uname}` would shadow a modifier; use a longer name"),
            ));
        }
        if may_repeat && before.iter().any(|m| m.name.eq_ignore_ascii_case(&uname)) {
            return Err(source.error(
                u.name.span(),
                "name",
                format!("duplicate unit mask `{uname}` in event `{name}`"),
            ));
        }
        Ok(uname)
    }

    /// The unit mask `u`, named `uname`, checked against the event's encoder, PMU and extra
    /// register.
    fn unit_mask(&self, u: &UmaskDoc, uname: String) -> Result<UnitMask, Error> {
        let (source, encoder, pmu, name) = (self.source, self.encoder, self.pmu, self.name);
        let max = i64::from(encoder.max_event_code());
        let ucode = number(source, &u.code, "code", 0xff)?;
        let umask2 = match &u.umask_ext {
            Some(v) if encoder == EncoderKind::IntelArch => number(source, v, "umask_ext", 0xff)?,
            Some(v) => {
                return Err(source.error(
                    v.span(),
                    "umask_ext",
                    format!(
                        "unit mask `{uname}` of `{name}`: a second unit-mask byte (`umask_ext`, EVTSEL bits 47:40) exists only with encoder intel-arch"
                    ),
                ));
            }
            None => 0,
        };
        let cmask = match &u.cmask {
            Some(v) => number(source, v, "cmask", 0xff)?,
            None => 0,
        };
        let ufixed = match &u.fixed {
            Some(v) => Some(fixed_counter(source, pmu, v)?),
            None => None,
        };
        let event_code = match &u.event {
            Some(v) => {
                let c = *v.get_ref();
                if !(0..=max).contains(&c) {
                    return Err(source.error(
                        v.span(),
                        "event",
                        format!(
                            "event code {c:#x} of unit mask `{uname}` is out of range for encoder {} (0..={max:#x})",
                            encoder.name()
                        ),
                    ));
                }
                u16::try_from(c).ok()
            }
            None => None,
        };
        let group = match &u.group {
            Some(v) => number(source, v, "group", 0xff)?,
            None => 0,
        };
        let ucounters = match &u.counters {
            Some(v) => Some(counter_set(source, pmu, v)?),
            None => None,
        };
        if ucounters.is_some_and(|c| c.is_empty()) && ufixed.is_none() {
            return Err(source.error(
                u.name.span(),
                "counters",
                format!(
                    "unit mask `{uname}` of `{name}` has no counter: give `counters` or `fixed`"
                ),
            ));
        }
        // The unit mask's name is formatted only for a message (a model has thousands).
        let uextra = extra_register(
            source,
            encoder,
            format_args!("{name}:{uname}"),
            u.extra_reg.as_ref(),
            u.extra_value.as_ref(),
        )?;
        let extra_bits = match &u.extra_bits {
            None => None,
            Some(bits) => Some(register_bits(
                source,
                format_args!("{name}:{uname}"),
                self.extra.is_some() && uextra.is_none(),
                bits,
            )?),
        };
        let combine = CombineRules {
            alone_in_group: u.alone_in_group,
            excludes_later_groups: u.excludes_later_groups,
            excludes_other_groups: u.excludes_other_groups,
            group_may_be_empty: u.group_may_be_empty,
        };
        if (combine != CombineRules::default() || !u.same_as.is_empty()) && extra_bits.is_none() {
            return Err(source.error(
                u.name.span(),
                "extra_bits",
                format!("unit mask `{uname}` of `{name}` gives combination rules (alone_in_group, excludes_later_groups, excludes_other_groups, group_may_be_empty, same_as), which apply to register-bit masks only; give `extra_bits`"),
            ));
        }
        Ok(UnitMask {
            same_as: u
                .same_as
                .iter()
                .map(|n| n.get_ref().trim().to_string())
                .collect(),
            extra_bits,
            combine,
            extra: uextra,
            precise: u.precise,
            deprecated: u.deprecated,
            any_thread: u.any,
            umask2,
            name: uname,
            code: ucode,
            description: u.desc.clone(),
            default: u.default,
            cmask,
            edge: u.edge,
            invert: u.inv,
            fixed: ufixed,
            event_code,
            counters: ucounters,
            group,
            class: UnitMaskClass::Plain,
        })
    }

    /// Refuses a `same_as` that names no register-bit unit mask of the event (or one with a
    /// `same_as` of its own).
    fn check_same_as(&self, doc: &EventDoc, unit_masks: &[UnitMask]) -> Result<(), Error> {
        let (source, name) = (self.source, self.name);
        if unit_masks.iter().all(|m| m.same_as.is_empty()) {
            return Ok(());
        }
        // The first unit mask of each name, blind to case: looked up once per `same_as` (a
        // search of all of them each time is quadratic in an event of thousands).
        let mut by_name = crate::fast_map::FastMap::default();
        for mask in unit_masks.iter().rev() {
            by_name.insert(mask.name.to_ascii_uppercase(), mask);
        }
        for (umask, mask) in doc.umasks.iter().zip(unit_masks) {
            for (name_doc, target) in umask.get_ref().same_as.iter().zip(&mask.same_as) {
                let found = by_name.get(&target.to_ascii_uppercase());
                if !found.is_some_and(|m| m.extra_bits.is_some() && m.same_as.is_empty()) {
                    return Err(source.error(
                        name_doc.span(),
                        "same_as",
                        format!(
                            "unit mask `{}` of `{name}` stands for `{target}`, which is no register-bit unit mask of the event without a `same_as` of its own",
                            mask.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Adds the unit masks the `mesi` and `any_initiator` flags stand for.
fn state_masks(flags: EventFlags, unit_masks: &mut Vec<UnitMask>) {
    if flags.mesi {
        for (mname, bit, what) in [
            ("MODIFIED", 0x08, "modified"),
            ("EXCLUSIVE", 0x04, "exclusive"),
            ("SHARED", 0x02, "shared"),
            ("INVALID", 0x01, "invalid"),
        ] {
            unit_masks.push(state_mask(
                mname,
                bit,
                &format!("lines in {what} state"),
                UnitMaskClass::CacheState,
            ));
        }
    }
    if flags.any_initiator {
        unit_masks.push(state_mask(
            "ANY_INITIATOR",
            0x20,
            "bus transactions of any agent, not only this processor",
            UnitMaskClass::AnyInitiator,
        ));
    }
}

/// Whether two of an event's unit masks may have names equal but for case (false: none
/// needs checking against the others). An event of a few unit masks is checked; in one of
/// many, each name's hash, blind to case, is compared: equal names always give equal hashes,
/// and equal hashes only make the caller check.
fn names_may_repeat(doc: &EventDoc) -> bool {
    /// Up to this many, checking each name against those before costs less than hashing.
    const FEW: usize = 16;
    if doc.umasks.len() <= FEW {
        return doc.umasks.len() > 1;
    }
    let mut hashes: Vec<u64> = doc
        .umasks
        .iter()
        .map(|u| caseless_hash(u.get_ref().name.get_ref().trim()))
        .collect();
    hashes.sort_unstable();
    hashes.windows(2).any(|pair| pair[0] == pair[1])
}

/// A hash of `name` that ASCII case does not change: each byte with bit 5 set (which maps `A`
/// to `a` and leaves `a` and every byte outside ASCII letters' pairs as they are, or maps them
/// onto another byte: a coarser folding, never a finer one).
fn caseless_hash(name: &str) -> u64 {
    use std::hash::Hasher;
    let mut hasher = crate::fast_map::FastHasher::default();
    for byte in name.bytes() {
        hasher.write_u8(byte | 0x20);
    }
    hasher.finish()
}

/// The MSRs an event may program besides its event select, and what each is.
const EXTRA_MSRS: [(u32, &str); 4] = [
    (ExtraMsr::OFFCORE_RSP_0, "offcore response 0"),
    (ExtraMsr::OFFCORE_RSP_1, "offcore response 1"),
    (ExtraMsr::LOAD_LATENCY, "load latency"),
    (ExtraMsr::FRONTEND, "frontend"),
];

/// A unit mask's `extra_bits` (`what` names it): an integer or a string `"0x..."`, given only
/// where the event programs an extra register and the mask brings no value of its own
/// (`allowed`).
fn register_bits(
    source: &Source<'_>,
    what: fmt::Arguments<'_>,
    allowed: bool,
    bits: &Spanned<toml::Value>,
) -> Result<u64, Error> {
    if !allowed {
        return Err(source.error(
            bits.span(),
            "extra_bits",
            format!(
                "`{what}`: `extra_bits` are ORed into the event's extra register: give the event `extra_reg` and `extra_value`, and the unit mask no `extra_reg` of its own"
            ),
        ));
    }
    register_value(bits.get_ref()).ok_or_else(|| {
        source.error(
            bits.span(),
            "extra_bits",
            format!(
                "`{what}`: `extra_bits` must be a non-negative integer or, at or above 2^63, a string such as \"0x8000000000000000\""
            ),
        )
    })
}

/// An extra register's value or bits: a non-negative integer, or a string such as `"0x..."`.
fn register_value(value: &toml::Value) -> Option<u64> {
    match value {
        toml::Value::Integer(n) => u64::try_from(*n).ok(),
        toml::Value::String(text) => crate::parse::parse_number(text),
        _ => None,
    }
}

/// `extra_reg` and `extra_value` of an event or unit mask (`what` names it) as an extra MSR; the
/// value is an integer or, at or above 2^63 (TOML integers are i64), a string `"0x..."`.
fn extra_register(
    source: &Source<'_>,
    encoder: EncoderKind,
    what: fmt::Arguments<'_>,
    register: Option<&Spanned<i64>>,
    value: Option<&Spanned<toml::Value>>,
) -> Result<Option<ExtraMsr>, Error> {
    let (register, value) = match (register, value) {
        (None, None) => return Ok(None),
        (Some(register), Some(value)) => (register, value),
        (Some(register), None) => {
            return Err(source.error(
                register.span(),
                "extra_value",
                format!("`{what}` gives `extra_reg` without `extra_value`; give both"),
            ));
        }
        (None, Some(value)) => {
            return Err(source.error(
                value.span(),
                "extra_reg",
                format!("`{what}` gives `extra_value` without `extra_reg`; give both"),
            ));
        }
    };
    let address = u32::try_from(*register.get_ref())
        .ok()
        .filter(|a| EXTRA_MSRS.iter().any(|(m, _)| m == a));
    let Some(address) = address.filter(|_| encoder == EncoderKind::IntelArch) else {
        let known: Vec<String> = EXTRA_MSRS
            .iter()
            .map(|(m, name)| format!("{m:#x} ({name})"))
            .collect();
        return Err(source.error(
            register.span(),
            "extra_reg",
            format!(
                "`{what}`: extra register {:#x} is not one the intel-arch encoder programs with an event; one of {}",
                register.get_ref(),
                known.join(", ")
            ),
        ));
    };
    let Some(number) = register_value(value.get_ref()) else {
        return Err(source.error(
            value.span(),
            "extra_value",
            format!(
                "`{what}`: the extra register's value must be a non-negative integer or, at or above 2^63, a string such as \"0x8000000000010001\""
            ),
        ));
    };
    Ok(Some(ExtraMsr::new(address, number)))
}

pub(super) fn state_mask(
    name: &str,
    code: u8,
    description: &str,
    class: UnitMaskClass,
) -> UnitMask {
    UnitMask {
        name: name.to_string(),
        code,
        description: description.to_string(),
        default: false,
        cmask: 0,
        edge: false,
        invert: false,
        fixed: None,
        event_code: None,
        counters: None,
        group: 0,
        class,
        extra: None,
        precise: false,
        deprecated: false,
        any_thread: false,
        umask2: 0,
        extra_bits: None,
        combine: CombineRules::default(),
        same_as: Vec::new(),
    }
}

pub(super) fn check_event_fits(model: &CpuModel, event: &NativeEvent) -> Result<(), String> {
    if event.code > model.encoder.max_event_code() {
        return Err(format!(
            "event code {:#x} is out of range for encoder {}",
            event.code,
            model.encoder.name()
        ));
    }
    if event
        .counters
        .iter()
        .any(|c| c >= model.pmu.general_counters)
    {
        return Err(format!(
            "counters {} exceed the PMU's {}",
            event.counters, model.pmu.general_counters
        ));
    }
    if model.encoder == EncoderKind::P5 && !event.unit_masks.is_empty() {
        return Err("P5 events take no unit masks".to_string());
    }
    Ok(())
}
