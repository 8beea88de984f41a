//! From a native event and its unit masks and modifiers to the words each backend programs.

use counterhal_hal::{
    BackendKind, CounterSet, Domain, Encoding, MsrEncoding, PctrEncoding, PerfEncoding,
};

use crate::error::{EventError, EventErrorKind, err};
use crate::model::{CpuModel, EncoderKind, NativeEvent, UnitMaskClass};
use crate::parse::{EventSpec, Modifiers};

/// EVTSEL bits (Intel PERFEVTSEL / AMD PerfEvtSel).
pub mod evtsel {
    /// USR: count in ring 3.
    pub const USR: u64 = 1 << 16;
    /// OS: count in ring 0.
    pub const OS: u64 = 1 << 17;
    /// E: edge detect.
    pub const EDGE: u64 = 1 << 18;
    /// INT: interrupt on overflow (never set by counterhal).
    pub const INT: u64 = 1 << 20;
    /// EN: enable.
    pub const EN: u64 = 1 << 22;
    /// INV: invert the counter-mask comparison.
    pub const INV: u64 = 1 << 23;
}

/// P5 CESR function bits, as pctr(4) names them.
pub mod p5 {
    /// P5CTR_K: count in kernel mode.
    pub const K: u32 = 0x40;
    /// P5CTR_U: count in user mode.
    pub const U: u32 = 0x80;
    /// P5CTR_C: count cycles rather than occurrences.
    pub const C: u32 = 0x100;
}

/// P6 cache-state unit-mask bits (pctr(4)'s `UM_I`, `UM_S`, `UM_E`, `UM_M`), all four.
pub const MESI_ALL: u8 = 0x0f;

/// A native event with its unit masks and filters chosen, before the backend is known.
#[derive(Clone, Debug)]
pub(crate) struct NativeChoice {
    pub code: u16,
    pub umask: u8,
    pub edge: bool,
    pub invert: bool,
    pub cmask: u8,
    pub counters: CounterSet,
    pub fixed: Option<u32>,
    pub modifiers: Modifiers,
}

/// The domain a set of modifiers asks for on `backend`.
///
/// On Linux, an event without any level or context modifier gets [`Domain::ALL`] (perf's
/// default: the event counts whatever its PMU counts, no exclude bit); with modifiers, the
/// levels named (`u`, `k`, `h`), or all three minus those set to `=0`, in every context but the
/// one `H` (host only) or `G` (guest only) leaves out. So `:uk` is user and kernel
/// ([`Domain::DEFAULT`], the hypervisor excluded), `:h=0` everything but the hypervisor.
///
/// On pctr and msr (user and kernel bits only) the levels named, or user and kernel minus
/// those set to `=0`; `h`, `H` and `G` are refused by [`check_levels`].
pub(crate) fn domain_of(m: &Modifiers, backend: BackendKind) -> Domain {
    let linux = backend == BackendKind::Linux;
    if linux && !m.has_levels() && m.host_only.is_none() && m.guest_only.is_none() {
        return Domain::ALL;
    }
    let pairs = [
        (m.user, Domain::USER),
        (m.kernel, Domain::KERNEL),
        (m.hypervisor, Domain::HYPERVISOR),
    ];
    let mut levels = Domain::NONE;
    for (value, level) in pairs {
        if value == Some(true) {
            levels |= level;
        }
    }
    if levels == Domain::NONE {
        levels = if linux {
            Domain::LEVELS
        } else {
            Domain::USER | Domain::KERNEL
        };
    }
    for (value, level) in pairs {
        if value == Some(false) {
            levels = levels.difference(level);
        }
    }
    let mut domain = Domain::ALL.with_levels(levels);
    let host_only = m.host_only == Some(true);
    let guest_only = m.guest_only == Some(true);
    // perf: `H` and `G` together count both.
    if host_only && !guest_only {
        domain = domain.difference(Domain::GUEST);
    }
    if guest_only && !host_only {
        domain = domain.difference(Domain::HOST);
    }
    domain
}

/// Refuses what `backend` cannot count as `modifiers` ask; `name` is the event as the user
/// typed it.
///
/// # Errors
/// [`EventErrorKind::Unsupported`] for `h`, `H` or `G` on pctr or msr (no such bit);
/// [`EventErrorKind::CombinationNotAllowed`] when no privilege level is left.
pub(crate) fn check_levels(
    modifiers: &Modifiers,
    backend: BackendKind,
    name: &str,
) -> Result<Domain, EventError> {
    if backend != BackendKind::Linux {
        if modifiers.hypervisor == Some(true) {
            return Err(err(
                EventErrorKind::Unsupported,
                format!(
                    "`{name}`: {backend} cannot filter the hypervisor (`h`): the hardware has no such bit"
                ),
            )
            .with_hint("drop `h` (user and kernel are what it counts), or use the Linux backend"));
        }
        if modifiers.has_contexts() {
            return Err(err(
                EventErrorKind::Unsupported,
                format!(
                    "`{name}`: {backend} cannot count host only (`H`) or guest only (`G`): it programs no such bit"
                ),
            )
            .with_hint("drop `H`/`G`, or use the Linux backend"));
        }
    }
    let domain = domain_of(modifiers, backend);
    if !domain.intersects(Domain::LEVELS) {
        let what = if backend == BackendKind::Linux {
            "neither user, kernel nor hypervisor mode is selected"
        } else {
            "neither user nor kernel mode is selected"
        };
        return Err(err(
            EventErrorKind::CombinationNotAllowed,
            format!("`{name}` would count nothing: {what}"),
        ));
    }
    Ok(domain)
}

fn valid_masks(event: &NativeEvent) -> String {
    if event.unit_masks.is_empty() {
        format!("`{}` takes no unit masks", event.name)
    } else {
        let names: Vec<&str> = event.unit_masks.iter().map(|u| u.name.as_str()).collect();
        format!("valid unit masks of `{}`: {}", event.name, names.join(", "))
    }
}

/// Chooses unit masks and filters for `event` as `spec` asks.
pub(crate) fn select(
    model: &CpuModel,
    event: &NativeEvent,
    spec: &EventSpec,
    extra_masks: &[&str],
) -> Result<NativeChoice, EventError> {
    let mut modifiers = spec.modifiers;
    let mut plain = Vec::new();
    let mut state_bits = 0u8;
    let mut any_bits = 0u8;
    for name in extra_masks
        .iter()
        .copied()
        .chain(spec.unit_masks.iter().map(String::as_str))
    {
        match event.unit_mask(name) {
            Some(mask) => match mask.class {
                UnitMaskClass::Plain => {
                    if !plain.iter().any(|m: &&crate::UnitMask| m.name == mask.name) {
                        plain.push(mask);
                    }
                }
                UnitMaskClass::CacheState => state_bits |= mask.code,
                UnitMaskClass::AnyInitiator => any_bits |= mask.code,
            },
            None => {
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
    if plain.len() > 1 {
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
    if plain.is_empty() && has_plain {
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
    }
    let mut umask = event.base_umask | any_bits;
    let mut implied = Modifiers::default();
    let mut fixed = if has_plain { None } else { event.fixed };
    for mask in &plain {
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
        if plain.len() == 1 {
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
        if event.counters.is_empty() {
            return Err(err(
                EventErrorKind::CombinationNotAllowed,
                format!(
                    "`{}` counts only on fixed counter {}, which has no e/i/c filters",
                    event.name,
                    event.fixed.unwrap_or(0)
                ),
            ));
        }
        fixed = None;
    }
    Ok(NativeChoice {
        code: event.code,
        umask,
        edge: modifiers.edge == Some(true),
        invert: modifiers.invert == Some(true),
        cmask: modifiers.cmask.unwrap_or(0),
        counters: event.counters,
        fixed,
        modifiers,
    })
}

/// The EVTSEL bits that select the event: event 7:0 and 35:32, unit mask, edge, invert,
/// counter mask. No USR/OS/EN.
pub(crate) fn event_bits(choice: &NativeChoice) -> u64 {
    let code = u64::from(choice.code);
    let mut bits = (code & 0xff) | (u64::from(choice.umask) << 8) | (u64::from(choice.cmask) << 24);
    bits |= ((code >> 8) & 0xf) << 32;
    if choice.edge {
        bits |= evtsel::EDGE;
    }
    if choice.invert {
        bits |= evtsel::INV;
    }
    bits
}

fn levels_bits(
    modifiers: &Modifiers,
    backend: BackendKind,
    name: &str,
) -> Result<(bool, bool), EventError> {
    let domain = check_levels(modifiers, backend, name)?;
    Ok((
        domain.contains(Domain::USER),
        domain.contains(Domain::KERNEL),
    ))
}

/// Encodes a chosen native event for `backend`.
pub(crate) fn encode(
    model: &CpuModel,
    choice: &NativeChoice,
    backend: BackendKind,
    name: &str,
) -> Result<Encoding, EventError> {
    let bits = event_bits(choice);
    match backend {
        BackendKind::Linux => {
            if model.encoder == EncoderKind::P5 {
                return Err(err(
                    EventErrorKind::Unsupported,
                    format!("`{name}`: Linux perf has no driver for P5 (Pentium) counters"),
                )
                .with_hint("use the pctr backend on OpenBSD/i386"));
            }
            let mut perf = PerfEncoding::new(crate::perf::TYPE_RAW, bits);
            perf.domain = check_levels(&choice.modifiers, backend, name)?;
            Ok(Encoding::Perf(perf))
        }
        BackendKind::Pctr => {
            let (user, kernel) = levels_bits(&choice.modifiers, backend, name)?;
            let counters =
                choice.counters.mask() & CounterSet::first(model.encoder.pctr_counters()).mask();
            if counters == 0 {
                return Err(err(
                    EventErrorKind::Unsupported,
                    format!(
                        "`{name}` needs a counter pctr does not program (it uses {} general counters, no fixed ones)",
                        model.encoder.pctr_counters()
                    ),
                ));
            }
            let function = if model.encoder == EncoderKind::P5 {
                let mut f = u32::from(choice.code) & 0x3f;
                if kernel {
                    f |= p5::K;
                }
                if user {
                    f |= p5::U;
                }
                if choice.cmask == 1 {
                    f |= p5::C;
                }
                f
            } else {
                if bits >> 32 != 0 {
                    return Err(err(
                        EventErrorKind::Unsupported,
                        format!(
                            "`{name}`: event code {:#x} needs EVTSEL bits 35:32, which pctr's 32-bit function cannot carry",
                            choice.code
                        ),
                    ));
                }
                let mut f = bits | evtsel::EN;
                if user {
                    f |= evtsel::USR;
                }
                if kernel {
                    f |= evtsel::OS;
                }
                u32::try_from(f).unwrap_or(u32::MAX)
            };
            Ok(Encoding::Pctr(PctrEncoding {
                function,
                counters: CounterSet::from_mask(counters),
            }))
        }
        BackendKind::Msr => {
            if model.encoder == EncoderKind::P5 {
                return Err(err(
                    EventErrorKind::Unsupported,
                    format!("`{name}`: the MSR backend programs PERFEVTSEL registers; P5's CESR is not supported"),
                )
                .with_hint("use the pctr backend on OpenBSD/i386"));
            }
            let (user, kernel) = levels_bits(&choice.modifiers, backend, name)?;
            let mut value = bits | evtsel::EN;
            if user {
                value |= evtsel::USR;
            }
            if kernel {
                value |= evtsel::OS;
            }
            Ok(Encoding::Msr(MsrEncoding {
                evtsel: value,
                counters: choice.counters,
                fixed: choice.fixed,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mods(text: &str) -> Modifiers {
        let mut m = Modifiers::default();
        for part in text.split(':').filter(|p| !p.is_empty()) {
            let (key, value) = match part.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (part, None),
            };
            assert!(
                m.apply(key, value).unwrap() || m.apply_group(key).unwrap(),
                "{part}"
            );
        }
        m
    }

    #[test]
    fn linux_default_is_all_and_explicit_levels_are_not() {
        let linux = |t: &str| domain_of(&mods(t), BackendKind::Linux);
        assert_eq!(linux(""), Domain::ALL);
        assert_eq!(linux("pp"), Domain::ALL);
        assert_eq!(linux("uk"), Domain::DEFAULT);
        assert_eq!(linux("h=0"), Domain::DEFAULT);
        assert_eq!(linux("u"), Domain::ALL.with_levels(Domain::USER));
        assert_eq!(
            linux("k=0"),
            Domain::ALL.with_levels(Domain::USER | Domain::HYPERVISOR)
        );
        assert_eq!(linux("H"), Domain::ALL.difference(Domain::GUEST));
        assert_eq!(linux("G"), Domain::ALL.difference(Domain::HOST));
        assert_eq!(linux("GH"), Domain::ALL);
        assert_eq!(
            linux("uH"),
            Domain::DEFAULT
                .with_levels(Domain::USER)
                .difference(Domain::GUEST)
        );
    }

    #[test]
    fn pctr_and_msr_default_to_user_and_kernel() {
        for backend in [BackendKind::Pctr, BackendKind::Msr] {
            let d = |t: &str| {
                check_levels(&mods(t), backend, "x").map(|d| d.intersection(Domain::LEVELS))
            };
            assert_eq!(d("").unwrap(), Domain::USER | Domain::KERNEL);
            assert_eq!(d("ppp").unwrap(), Domain::USER | Domain::KERNEL);
            assert_eq!(d("h=0").unwrap(), Domain::USER | Domain::KERNEL);
            assert_eq!(d("k=0").unwrap(), Domain::USER);
            for refused in ["h", "uh", "H", "G"] {
                assert_eq!(
                    d(refused).unwrap_err().kind(),
                    EventErrorKind::Unsupported,
                    "{refused}"
                );
            }
            assert_eq!(
                d("u=0:k=0").unwrap_err().kind(),
                EventErrorKind::CombinationNotAllowed
            );
        }
    }
}
