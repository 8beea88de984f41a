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
    let mut plain = Vec::new();
    let mut state_bits = 0u8;
    let mut any_bits = 0u8;
    let mut raw_bits = None::<u8>;
    for name in extra_masks
        .iter()
        .copied()
        .chain(spec.unit_masks.iter().map(String::as_str))
    {
        match event.unit_mask(name) {
            Some(mask) => match mask.class {
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
                        if !plain.iter().any(|m: &&UnitMask| m.name == mask.name) {
                            plain.push(mask);
                        }
                    }
                }
                UnitMaskClass::CacheState => state_bits |= mask.code,
                UnitMaskClass::AnyInitiator => any_bits |= mask.code,
            },
            None => {
                if amd && name == "g" {
                    modifiers.merge(&Modifiers {
                        guest_only: Some(true),
                        ..Modifiers::default()
                    })?;
                    continue;
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
                    raw_bits = Some(raw_bits.unwrap_or(0) | bits);
                    continue;
                }
                if modifiers.apply_group(name)? {
                    continue;
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
                return Err(err(
                    EventErrorKind::UnitMaskInvalid,
                    format!(
                        "unit mask `{name}` {what} (`{}`); {}",
                        event.name,
                        valid_masks(event)
                    ),
                ));
            }
        }
    }
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
    // libpfm4's register-bit masks (offcore response): named ones, or the defaults alone.
    let composed = if plain.iter().any(|m| m.extra_bits.is_some())
        || (plain.is_empty()
            && raw_bits.is_none()
            && event
                .unit_masks
                .iter()
                .any(|u| u.extra_bits.is_some() && u.default))
    {
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
        let composed = compose::compose(event, &plain)?;
        plain = composed.masks;
        Some(composed.bits)
    } else {
        None
    };
    if plain.len() > 1 && composed.is_none() {
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
    }
    let has_plain = event
        .unit_masks
        .iter()
        .any(|u| u.class == UnitMaskClass::Plain);
    if composed.is_some() {
        // The groups' defaults are in already.
    } else if plain.is_empty() && has_plain && raw_bits.is_none() {
        if event.needs_unit_mask() {
            let names: Vec<&str> = event
                .unit_masks
                .iter()
                .filter(|u| u.class == UnitMaskClass::Plain)
                .map(|u| u.name.as_str())
                .collect();
            return Err(err(
                EventErrorKind::UnitMaskRequired,
                format!(
                    "`{}` needs a unit mask: one of {}",
                    event.name,
                    names.join(", ")
                ),
            ));
        }
        plain.extend(event.unit_masks.iter().filter(|u| u.default));
    } else if !plain.is_empty() {
        // A group none of the named unit masks belongs to keeps its defaults (libpfm4's
        // grouped unit masks: naming a request type keeps the default core selection).
        let named: Vec<u8> = plain.iter().map(|m| m.group).collect();
        plain.extend(event.unit_masks.iter().filter(|u| {
            u.default
                && u.class == UnitMaskClass::Plain
                && u.extra_bits.is_none()
                && !named.contains(&u.group)
        }));
    }
    let mut umask = event.base_umask | any_bits | raw_bits.unwrap_or(0);
    let mut implied = Modifiers {
        any_thread: event.flags.any_thread.then_some(true),
        ..Modifiers::default()
    };
    // The event's fixed counter counts its own unit mask only: not with plain or raw bits
    // added (`EVENT:0x01`).
    let mut fixed = if has_plain || raw_bits.is_some() {
        None
    } else {
        event.fixed
    };
    let mut code = event.code;
    let mut counters = event.counters;
    let mut extra = event.extra;
    let mut umask2 = 0;
    for mask in &plain {
        umask2 |= mask.umask2;
        if mask.extra.is_some() {
            extra = mask.extra;
        }
        if let Some(c) = mask.event_code {
            code = c;
        }
        if let Some(c) = mask.counters {
            counters = c;
        }
        umask |= mask.code;
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
        if plain.len() == 1 && raw_bits.is_none() {
            fixed = mask.fixed;
        }
    }
    if event.flags.mesi {
        umask |= if state_bits == 0 {
            MESI_ALL
        } else {
            state_bits
        };
    }
    modifiers.merge(&implied)?;
    if model.encoder == EncoderKind::P5 {
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
    }
    if modifiers.has_filters() {
        if counters.is_empty() {
            return Err(err(
                EventErrorKind::CombinationNotAllowed,
                format!(
                    "`{}` counts only on fixed counter {}, which has no e/i/c filters",
                    event.name,
                    fixed.or(event.fixed).unwrap_or(0)
                ),
            ));
        }
        fixed = None;
    }
    check_intel_bits(model, &event.name, &modifiers)?;
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
            counters = counters.intersection(CounterSet::only(2));
        }
        if counters.is_empty() {
            return Err(err(
                EventErrorKind::CombinationNotAllowed,
                format!(
                    "`{}`: intx and intxcp need a general counter (intxcp counter 2), which this event cannot use",
                    event.name
                ),
            ));
        }
        fixed = None;
    }
    if let (Some(bits), Some(e)) = (composed, extra.as_mut()) {
        e.value |= bits;
    }
    let extra = extra_with_modifiers(event, extra, &modifiers)?;
    Ok(NativeChoice {
        extra,
        any_thread: modifiers.any_thread == Some(true),
        umask2,
        in_tx,
        in_tx_cp,
        code,
        umask,
        edge: modifiers.edge == Some(true),
        invert: modifiers.invert == Some(true),
        cmask: modifiers.cmask.unwrap_or(0),
        counters,
        fixed,
        modifiers,
    })
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
