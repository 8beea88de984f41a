//! Choosing a native event's unit masks and filters from what an event string asks.

use counterhal_hal::{CounterSet, ExtraMsr};

use crate::compose;
use crate::error::{EventError, EventErrorKind, err};
use crate::model::{CpuModel, EncoderKind, NativeEvent, UnitMask, UnitMaskClass};
use crate::parse::{EventSpec, Modifiers};

/// P6 cache-state unit-mask bits (`UM_I`, `UM_S`, `UM_E`, `UM_M` in the P6 manuals), all four.
pub const MESI_ALL: u8 = 0x0f;

/// A native event with its unit masks and filters chosen, before it is encoded.
#[derive(Clone, Debug)]
pub(crate) struct NativeChoice {
    pub code: u16,
    pub umask: u8,
    pub edge: bool,
    pub invert: bool,
    pub cmask: u8,
    pub counters: CounterSet,
    pub fixed: Option<u32>,
    pub extra: Option<ExtraMsr>,
    pub any_thread: bool,
    /// The second unit-mask byte (Intel's UMaskExt, EVTSEL bits 47:40).
    pub umask2: u8,
    pub in_tx: bool,
    pub in_tx_cp: bool,
    pub modifiers: Modifiers,
}

fn valid_masks(event: &NativeEvent) -> String {
    if event.unit_masks.is_empty() {
        format!("`{}` takes no unit masks", event.name)
    } else {
        let names: Vec<&str> = event.unit_masks.iter().map(|u| u.name.as_str()).collect();
        format!("valid unit masks of `{}`: {}", event.name, names.join(", "))
    }
}

/// A unit mask given as a number (`:0x6`, libpfm4's raw unit mask), if `name` is one.
fn raw_unit_mask(name: &str, event: &NativeEvent) -> Result<Option<u8>, EventError> {
    let Some(hex) = name.strip_prefix("0x").or_else(|| name.strip_prefix("0X")) else {
        return Ok(None);
    };
    u8::from_str_radix(hex, 16).map(Some).map_err(|_| {
        err(
            EventErrorKind::ValueOutOfRange,
            format!(
                "raw unit mask `{name}` of `{}` is not a hex byte (0x0..=0xff)",
                event.name
            ),
        )
    })
}

/// Whether `event` has register-bit unit masks (libpfm4's offcore-response bits).
fn register_bits(event: &NativeEvent) -> bool {
    event.unit_masks.iter().any(|u| u.extra_bits.is_some())
}

/// The unit masks an event string names, sorted by kind, before defaults are added.
struct NamedMasks<'e> {
    /// Plain unit masks, each once, those standing for others (libpfm4's `uequiv`) replaced.
    plain: Vec<&'e UnitMask>,
    /// P6 cache-state bits named (`MODIFIED`, ...).
    state_bits: u8,
    /// Any-initiator bits named.
    any_bits: u8,
    /// Bits named as a number (`:0x6`).
    raw_bits: Option<u8>,
}

/// Chooses unit masks and filters for `event` as `spec` asks.
pub(crate) fn select(
    model: &CpuModel,
    event: &NativeEvent,
    spec: &EventSpec,
    extra_masks: &[&str],
) -> Result<NativeChoice, EventError> {
    let mut modifiers = spec.modifiers;
    // libpfm4's AMD natives take `h` as host (HostOnly, bit 41) and `g` as guest (GuestOnly,
    // bit 40), where perf writes `H` and `G`; AMD counters have no hypervisor level.
    let amd = model.encoder == EncoderKind::Amd64;
    let names = extra_masks
        .iter()
        .copied()
        .chain(spec.unit_masks.iter().map(String::as_str));
    let mut named = name_masks(model, event, names, &mut modifiers)?;
    // (`h=0` is dropped: it asks for nothing on AMD.)
    if amd
        && let Some(host) = modifiers.hypervisor.take()
        && host
    {
        modifiers.merge(&Modifiers {
            host_only: Some(true),
            ..Modifiers::default()
        })?;
    }
    let composed = compose_register_bits(event, &mut named)?;
    if named.plain.len() > 1 && composed.is_none() {
        check_combination(event, &named.plain)?;
    }
    add_defaults(event, &mut named, composed.is_some())?;
    let mut programmed = program(event, &named);
    modifiers.merge(&programmed.implied)?;
    if model.encoder == EncoderKind::P5 {
        check_p5(event, &modifiers)?;
    }
    drop_fixed_for_filters(event, &modifiers, &mut programmed)?;
    check_intel_bits(model, &event.name, &modifiers)?;
    place_tsx_filters(event, &modifiers, &mut programmed)?;
    if let (Some(bits), Some(e)) = (composed, programmed.extra.as_mut()) {
        e.value |= bits;
    }
    let extra = extra_with_modifiers(event, programmed.extra, &modifiers)?;
    Ok(NativeChoice {
        extra,
        any_thread: modifiers.any_thread == Some(true),
        umask2: programmed.umask2,
        in_tx: modifiers.in_tx == Some(true),
        in_tx_cp: modifiers.in_tx_cp == Some(true),
        code: programmed.code,
        umask: programmed.umask,
        edge: modifiers.edge == Some(true),
        invert: modifiers.invert == Some(true),
        cmask: modifiers.cmask.unwrap_or(0),
        counters: programmed.counters,
        fixed: programmed.fixed,
        modifiers,
    })
}

/// Sorts the unit masks `names` gives into `NamedMasks`; a name that is no unit mask of
/// `event` may be a modifier group (applied to `modifiers`), a raw unit mask or, on AMD, `g`.
fn name_masks<'e, 'n>(
    model: &CpuModel,
    event: &'e NativeEvent,
    names: impl Iterator<Item = &'n str>,
    modifiers: &mut Modifiers,
) -> Result<NamedMasks<'e>, EventError> {
    let mut named = NamedMasks {
        plain: Vec::new(),
        state_bits: 0,
        any_bits: 0,
        raw_bits: None,
    };
    for name in names {
        let Some(mask) = event.unit_mask(name) else {
            if let Some(bits) = not_a_unit_mask(model, event, name, modifiers)? {
                named.raw_bits = Some(named.raw_bits.unwrap_or(0) | bits);
            }
            continue;
        };
        match mask.class {
            UnitMaskClass::Plain => {
                // A mask that stands for others (libpfm4's `uequiv`) is replaced by them.
                let masks: Vec<&UnitMask> = if mask.same_as.is_empty() {
                    vec![mask]
                } else {
                    mask.same_as
                        .iter()
                        .filter_map(|n| event.unit_mask(n))
                        .collect()
                };
                for mask in masks {
                    if !named.plain.iter().any(|m| m.name == mask.name) {
                        named.plain.push(mask);
                    }
                }
            }
            UnitMaskClass::CacheState => named.state_bits |= mask.code,
            UnitMaskClass::AnyInitiator => named.any_bits |= mask.code,
        }
    }
    Ok(named)
}

/// What `name`, which is no unit mask of `event`, is: AMD's guest `g` or a modifier group
/// (applied to `modifiers`, `None`), a raw unit mask (its bits), or an error naming the valid
/// unit masks.
fn not_a_unit_mask(
    model: &CpuModel,
    event: &NativeEvent,
    name: &str,
    modifiers: &mut Modifiers,
) -> Result<Option<u8>, EventError> {
    if model.encoder == EncoderKind::Amd64 && name == "g" {
        modifiers.merge(&Modifiers {
            guest_only: Some(true),
            ..Modifiers::default()
        })?;
        return Ok(None);
    }
    if register_bits(event) && name.to_ascii_lowercase().starts_with("0x") {
        return Err(err(
            EventErrorKind::UnitMaskInvalid,
            format!(
                "`{}` takes its extra register's bits as named unit masks, not a number (`{name}`); {}",
                event.name,
                valid_masks(event)
            ),
        ));
    }
    if let Some(bits) = raw_unit_mask(name, event)? {
        return Ok(Some(bits));
    }
    if modifiers.apply_group(name)? {
        return Ok(None);
    }
    let elsewhere = model.events.iter().any(|e| e.unit_mask(name).is_some())
        || [
            "MODIFIED",
            "EXCLUSIVE",
            "SHARED",
            "INVALID",
            "ANY_INITIATOR",
        ]
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name));
    let what = if elsewhere {
        "is not valid for this event"
    } else {
        "is unknown"
    };
    Err(err(
        EventErrorKind::UnitMaskInvalid,
        format!(
            "unit mask `{name}` {what} (`{}`); {}",
            event.name,
            valid_masks(event)
        ),
    ))
}

/// libpfm4's register-bit masks (offcore response): the named ones, or the defaults alone,
/// composed into the extra register's bits (`named.plain` becomes the masks composed); `None`
/// when the event string names none and no default has any.
fn compose_register_bits<'e>(
    event: &'e NativeEvent,
    named: &mut NamedMasks<'e>,
) -> Result<Option<u64>, EventError> {
    let plain = &named.plain;
    let wanted = plain.iter().any(|m| m.extra_bits.is_some())
        || (plain.is_empty()
            && named.raw_bits.is_none()
            && event
                .unit_masks
                .iter()
                .any(|u| u.extra_bits.is_some() && u.default));
    if !wanted {
        return Ok(None);
    }
    if let Some(other) = plain.iter().find(|m| m.extra_bits.is_none()) {
        let bits = plain
            .iter()
            .find(|m| m.extra_bits.is_some())
            .map_or("", |m| &m.name);
        return Err(err(
            EventErrorKind::CombinationNotAllowed,
            format!(
                "unit mask `{}` of `{}` is a whole encoding of its own and cannot be combined with `{bits}`, which sets bits of the extra register; name either",
                other.name, event.name
            ),
        ));
    }
    let composed = compose::compose(event, plain)?;
    named.plain = composed.masks;
    Ok(Some(composed.bits))
}

/// Refuses several plain unit masks together where the event or one of them forbids it.
fn check_combination(event: &NativeEvent, plain: &[&UnitMask]) -> Result<(), EventError> {
    if event.flags.exclusive {
        return Err(err(
            EventErrorKind::CombinationNotAllowed,
            format!(
                "`{}` takes one unit mask at a time, got {}",
                event.name,
                plain
                    .iter()
                    .map(|m| m.name.as_str())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        ));
    }
    if let Some(m) = plain.iter().find(|m| m.overrides_event()) {
        return Err(err(
            EventErrorKind::CombinationNotAllowed,
            format!(
                "unit mask `{}` of `{}` selects its own event code or counters and cannot be combined",
                m.name, event.name
            ),
        ));
    }
    if let Some(m) = plain.iter().find(|m| m.has_filters()) {
        return Err(err(
            EventErrorKind::CombinationNotAllowed,
            format!(
                "unit mask `{}` of `{}` sets its own filters and cannot be combined",
                m.name, event.name
            ),
        ));
    }
    Ok(())
}

/// Adds the event's default unit masks where the string leaves them to it: all of them when
/// it names none (an error when the event needs one), a group's when it names none of that
/// group. `composed`: the register-bit masks are composed, their defaults in already.
fn add_defaults<'e>(
    event: &'e NativeEvent,
    named: &mut NamedMasks<'e>,
    composed: bool,
) -> Result<(), EventError> {
    let has_plain = event
        .unit_masks
        .iter()
        .any(|u| u.class == UnitMaskClass::Plain);
    if composed {
        // The groups' defaults are in already.
    } else if named.plain.is_empty() && has_plain && named.raw_bits.is_none() {
        if event.needs_unit_mask() {
            let names: Vec<&str> = event
                .unit_masks
                .iter()
                .filter(|u| u.class == UnitMaskClass::Plain)
                .map(|u| u.name.as_str())
                .collect();
            // Intel's one-letter unit masks (`L2_LINES_IN.E`) read as modifiers after `:`.
            let dotted = match names.iter().find(|n| n.len() == 1) {
                Some(letter) => format!(
                    " (`{0}.{letter}`: after `:` a one-letter name is a modifier)",
                    event.name
                ),
                None => String::new(),
            };
            return Err(err(
                EventErrorKind::UnitMaskRequired,
                format!(
                    "`{}` needs a unit mask: one of {}{dotted}",
                    event.name,
                    names.join(", ")
                ),
            ));
        }
        named
            .plain
            .extend(event.unit_masks.iter().filter(|u| u.default));
    } else if !named.plain.is_empty() {
        // A group none of the named unit masks belongs to keeps its defaults (libpfm4's
        // grouped unit masks: naming a request type keeps the default core selection).
        let groups: Vec<u8> = named.plain.iter().map(|m| m.group).collect();
        named.plain.extend(event.unit_masks.iter().filter(|u| {
            u.default
                && u.class == UnitMaskClass::Plain
                && u.extra_bits.is_none()
                && !groups.contains(&u.group)
        }));
    }
    Ok(())
}

/// What the chosen unit masks program, before the user's modifiers are applied.
struct Programmed {
    code: u16,
    umask: u8,
    umask2: u8,
    counters: CounterSet,
    fixed: Option<u32>,
    extra: Option<ExtraMsr>,
    /// The filters the unit masks imply (`cmask`, edge, ...), merged with the user's.
    implied: Modifiers,
}

/// The event code, unit mask bytes, counters, extra register and implied filters that
/// `named`'s unit masks program on `event`.
fn program(event: &NativeEvent, named: &NamedMasks<'_>) -> Programmed {
    let has_plain = event
        .unit_masks
        .iter()
        .any(|u| u.class == UnitMaskClass::Plain);
    let raw_bits = named.raw_bits;
    let mut programmed = Programmed {
        code: event.code,
        umask: event.base_umask | named.any_bits | raw_bits.unwrap_or(0),
        umask2: 0,
        counters: event.counters,
        // The event's fixed counter counts its own unit mask only: not with plain or raw
        // bits added (`EVENT:0x01`).
        fixed: if has_plain || raw_bits.is_some() {
            None
        } else {
            event.fixed
        },
        extra: event.extra,
        implied: Modifiers {
            any_thread: event.flags.any_thread.then_some(true),
            ..Modifiers::default()
        },
    };
    let implied = &mut programmed.implied;
    for mask in &named.plain {
        programmed.umask2 |= mask.umask2;
        if mask.extra.is_some() {
            programmed.extra = mask.extra;
        }
        if let Some(c) = mask.event_code {
            programmed.code = c;
        }
        if let Some(c) = mask.counters {
            programmed.counters = c;
        }
        programmed.umask |= mask.code;
        if mask.cmask != 0 {
            implied.cmask = Some(mask.cmask);
        }
        if mask.edge {
            implied.edge = Some(true);
        }
        if mask.invert {
            implied.invert = Some(true);
        }
        if mask.any_thread {
            implied.any_thread = Some(true);
        }
        if let Some(threshold) = stated_threshold(mask) {
            implied.fe_thres = Some(threshold);
        }
        if named.plain.len() == 1 && raw_bits.is_none() {
            programmed.fixed = mask.fixed;
        }
    }
    if event.flags.mesi {
        programmed.umask |= if named.state_bits == 0 {
            MESI_ALL
        } else {
            named.state_bits
        };
    }
    programmed
}

/// Refuses the filters a P5 counter lacks: edge and invert, and a count mask above 1.
fn check_p5(event: &NativeEvent, modifiers: &Modifiers) -> Result<(), EventError> {
    if modifiers.edge == Some(true) || modifiers.invert == Some(true) {
        return Err(err(
            EventErrorKind::CombinationNotAllowed,
            format!(
                "`{}`: P5 counters have no edge or invert bit (use c=1 to count cycles)",
                event.name
            ),
        ));
    }
    if modifiers.cmask.is_some_and(|c| c > 1) {
        return Err(err(
            EventErrorKind::ValueOutOfRange,
            format!(
                "`{}`: on P5, c is 0 (count occurrences) or 1 (count cycles)",
                event.name
            ),
        ));
    }
    Ok(())
}

/// Leaves the fixed counter out when `modifiers` asks for e/i/c filters, which it lacks; an
/// error when the event has no general counter.
fn drop_fixed_for_filters(
    event: &NativeEvent,
    modifiers: &Modifiers,
    programmed: &mut Programmed,
) -> Result<(), EventError> {
    if modifiers.has_filters() {
        if programmed.counters.is_empty() {
            return Err(err(
                EventErrorKind::CombinationNotAllowed,
                format!(
                    "`{}` counts only on fixed counter {}, which has no e/i/c filters",
                    event.name,
                    programmed.fixed.or(event.fixed).unwrap_or(0)
                ),
            ));
        }
        programmed.fixed = None;
    }
    Ok(())
}

/// Narrows the counters `programmed` may use to those with the TSX filters `modifiers` asks
/// for: a fixed counter has none, and Haswell's IN_TXCP counts on general counter 2 only; an
/// error when no counter is left or AnyThread is asked for too.
fn place_tsx_filters(
    event: &NativeEvent,
    modifiers: &Modifiers,
    programmed: &mut Programmed,
) -> Result<(), EventError> {
    let in_tx = modifiers.in_tx == Some(true);
    let in_tx_cp = modifiers.in_tx_cp == Some(true);
    if (in_tx || in_tx_cp) && modifiers.any_thread == Some(true) {
        // The kernel refuses the pair (EOPNOTSUPP): the counts would mean nothing.
        return Err(err(
            EventErrorKind::CombinationNotAllowed,
            format!(
                "`{}`: intx and intxcp do not combine with AnyThread (`t`)",
                event.name
            ),
        ));
    }
    if in_tx || in_tx_cp {
        // The fixed counters have no TSX filters, and Haswell's IN_TXCP works on general
        // counter 2 only (as the kernel constrains it).
        if in_tx_cp {
            programmed.counters = programmed.counters.intersection(CounterSet::only(2));
        }
        if programmed.counters.is_empty() {
            return Err(err(
                EventErrorKind::CombinationNotAllowed,
                format!(
                    "`{}`: intx and intxcp need a general counter (intxcp counter 2), which this event cannot use",
                    event.name
                ),
            ));
        }
        programmed.fixed = None;
    }
    Ok(())
}

/// The frontend latency threshold a unit mask both names and programs: Intel's
/// `FRONTEND_RETIRED.LATENCY_GE_N` (and `LATENCY_GE_N_BUBBLES_GE_M`) write N into bits 19:8 of
/// register 0x3f7. The threshold is then the unit mask's own, so a `fe_thres=` that differs
/// conflicts with it, as libpfm4 refuses one (`PFM_ERR_ATTR_SET`: its LATENCY_GE unit masks
/// hard-wire `fe_thres`) where the name would otherwise lie (`LATENCY_GE_4:fe_thres=4095`).
/// Unit masks whose name states no threshold (`IDQ_4_BUBBLES`, `DSB_MISS`) take any.
fn stated_threshold(mask: &UnitMask) -> Option<u16> {
    let extra = mask.extra.filter(|e| e.address() == ExtraMsr::FRONTEND)?;
    let threshold = u16::try_from((extra.value >> 8) & 0xfff).ok()?;
    let digits: String = mask
        .name
        .strip_prefix("LATENCY_GE_")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (threshold != 0 && digits.parse::<u16>().ok()? == threshold).then_some(threshold)
}

/// `extra` with the user's `ldlat=`, `frontend=` and `fe_thres=` applied; an error when the
/// event programs no MSR those modifiers set.
fn extra_with_modifiers(
    event: &NativeEvent,
    extra: Option<ExtraMsr>,
    modifiers: &Modifiers,
) -> Result<Option<ExtraMsr>, EventError> {
    let refuse = |modifier: &str, address: u32| {
        err(
            EventErrorKind::CombinationNotAllowed,
            format!(
                "modifier `{modifier}` applies to events that program register {address:#x}; `{}` {}",
                event.name,
                match extra {
                    Some(e) => format!("programs register {:#x}", e.address()),
                    None => "programs no extra register".to_string(),
                }
            ),
        )
    };
    let mut extra = extra;
    if let Some(ldlat) = modifiers.ldlat {
        match &mut extra {
            Some(e) if e.address() == ExtraMsr::LOAD_LATENCY => e.value = u64::from(ldlat),
            _ => return Err(refuse("ldlat", ExtraMsr::LOAD_LATENCY)),
        }
    }
    if modifiers.frontend.is_some() || modifiers.fe_thres.is_some() {
        let Some(e) = extra.as_mut().filter(|e| e.address() == ExtraMsr::FRONTEND) else {
            let which = if modifiers.frontend.is_some() {
                "frontend"
            } else {
                "fe_thres"
            };
            return Err(refuse(which, ExtraMsr::FRONTEND));
        };
        if let Some(value) = modifiers.frontend {
            e.value = u64::from(value);
        }
        if let Some(threshold) = modifiers.fe_thres {
            e.value = (e.value & !(0xfff << 8)) | (u64::from(threshold) << 8);
        }
    }
    Ok(extra)
}

/// Refuses AnyThread (`t`) and the TSX filters (`intx`, `intxcp`) on a model whose encoder is
/// not Intel architectural perfmon: they are EVTSEL bits 21, 32 and 33 there, and bit 21 is
/// reserved and bits 32 and 33 are event-code bits on AMD. `name` is the event for the message.
pub(crate) fn check_intel_bits(
    model: &CpuModel,
    name: &str,
    modifiers: &Modifiers,
) -> Result<(), EventError> {
    if model.encoder == EncoderKind::IntelArch {
        let tsx = [
            (modifiers.in_tx, "IN_TX (`intx`)"),
            (modifiers.in_tx_cp, "IN_TXCP (`intxcp`)"),
        ];
        return match tsx.iter().find(|(set, _)| *set == Some(true)) {
            Some((_, what)) if model.pmu.tsx == Some(false) => Err(err(
                EventErrorKind::CombinationNotAllowed,
                format!(
                    "`{name}`: {what} filters TSX transactions, and CPU model `{}` has no TSX (its `pmu` says `tsx = false`)",
                    model.id
                ),
            )
            .with_hint("drop the modifier; Haswell to Sapphire Rapids server and client cores with TSX take it")),
            _ => Ok(()),
        };
    }
    let asked = [
        (modifiers.any_thread, "AnyThread (`t`)"),
        (modifiers.in_tx, "IN_TX (`intx`)"),
        (modifiers.in_tx_cp, "IN_TXCP (`intxcp`)"),
    ];
    match asked.iter().find(|(set, _)| *set == Some(true)) {
        Some((_, what)) => Err(err(
            EventErrorKind::CombinationNotAllowed,
            format!(
                "`{name}`: {what} is an Intel architectural perfmon bit; encoder {} has none",
                model.encoder.name()
            ),
        )),
        None => Ok(()),
    }
}
