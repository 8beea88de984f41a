//! From a chosen native event to the encoding of its CPU model's family (x86 EVTSEL or P5
//! CESR), and from raw codes to a chosen event.

use counterhal_hal::{Accepts, CounterSet, Encoding, Evtsel, P5Cesr};

use crate::domain::check_domain;
use crate::error::{EventError, EventErrorKind, err};
use crate::model::{CpuModel, EncoderKind};
use crate::parse::Modifiers;
use crate::select::{NativeChoice, check_intel_bits};

/// Encodes `choice`, a native event of `model`, in the model's family, for a backend that
/// takes `accepts`; `name` is the event as the user typed it.
///
/// # Errors
/// [`EventErrorKind::Unsupported`] when the backend does not take the model's family or
/// cannot filter the domain asked for; [`EventErrorKind::CombinationNotAllowed`] when no
/// privilege level is left.
pub(crate) fn encode_native(
    model: &CpuModel,
    choice: &NativeChoice,
    accepts: &Accepts,
    name: &str,
) -> Result<Encoding, EventError> {
    let family = model.encoder.family();
    if !accepts.takes(family) {
        return Err(err(
            EventErrorKind::Unsupported,
            format!(
                "`{name}` on CPU model `{}` is encoded as a {family}, which this backend does not program (it takes {})",
                model.id,
                accepts.families_text()
            ),
        ));
    }
    let domain = check_domain(&choice.modifiers, accepts, name)?;
    Ok(match model.encoder {
        EncoderKind::P5 => {
            let mut cesr = P5Cesr::new(u8::try_from(choice.code).unwrap_or(u8::MAX));
            cesr.count_cycles = choice.cmask == 1;
            cesr.domain = domain;
            cesr.counters = choice.counters;
            Encoding::P5Cesr(cesr)
        }
        EncoderKind::P6 | EncoderKind::IntelArch | EncoderKind::Amd64 => {
            let mut evtsel = Evtsel::new(choice.code, choice.umask);
            evtsel.edge = choice.edge;
            evtsel.invert = choice.invert;
            evtsel.cmask = choice.cmask;
            evtsel.domain = domain;
            evtsel.counters = choice.counters;
            evtsel.fixed = choice.fixed;
            evtsel.extra = choice.extra;
            evtsel.any_thread = choice.any_thread;
            evtsel.umask2 = choice.umask2;
            evtsel.in_tx = choice.in_tx;
            evtsel.in_tx_cp = choice.in_tx_cp;
            Encoding::Evtsel(evtsel)
        }
        EncoderKind::Armv8 => crate::arm::encode(choice, domain, name)?,
    })
}

/// The levels and contexts of `m` apart from its filters (edge, invert, counter mask).
pub(crate) fn split_levels(m: Modifiers) -> (Modifiers, Modifiers) {
    let levels = Modifiers {
        user: m.user,
        kernel: m.kernel,
        hypervisor: m.hypervisor,
        host_only: m.host_only,
        guest_only: m.guest_only,
        precise: m.precise,
        ..Modifiers::default()
    };
    let filters = Modifiers {
        edge: m.edge,
        invert: m.invert,
        cmask: m.cmask,
        any_thread: m.any_thread,
        in_tx: m.in_tx,
        in_tx_cp: m.in_tx_cp,
        ..Modifiers::default()
    };
    (levels, filters)
}

/// The event-select bits of the filters in `m`.
pub(crate) fn filter_bits(m: &Modifiers) -> u64 {
    let mut bits = u64::from(m.cmask.unwrap_or(0)) << 24;
    if m.edge == Some(true) {
        bits |= Evtsel::EDGE;
    }
    if m.invert == Some(true) {
        bits |= Evtsel::INV;
    }
    if m.any_thread == Some(true) {
        bits |= Evtsel::ANY;
    }
    if m.in_tx == Some(true) {
        bits |= Evtsel::IN_TX;
    }
    if m.in_tx_cp == Some(true) {
        bits |= Evtsel::IN_TX_CP;
    }
    bits
}

/// A raw event-select code (`r01c2`) as a chosen event of `model`.
///
/// # Errors
/// [`EventErrorKind::ValueOutOfRange`] for bits outside event, unit mask, edge, invert and
/// counter mask, an event code the model's encoder cannot express, or a P5 code with more
/// than a 6-bit event and `c=1`; [`EventErrorKind::ModifierConflict`] when a modifier
/// contradicts the code.
pub(crate) fn raw_choice(
    model: &CpuModel,
    text: &str,
    config: u64,
    modifiers: Modifiers,
) -> Result<NativeChoice, EventError> {
    if model.encoder == EncoderKind::Armv8 {
        let code = crate::arm::raw_code(text, config)?;
        let (levels, filters) = split_levels(modifiers);
        if filters != Modifiers::default() {
            return Err(err(
                EventErrorKind::CombinationNotAllowed,
                format!(
                    "raw code `{text}`: an Arm PMUv3 event takes no edge, invert or counter mask"
                ),
            ));
        }
        return Ok(NativeChoice {
            code,
            umask: 0,
            edge: false,
            invert: false,
            cmask: 0,
            counters: CounterSet::first(model.pmu.general_counters),
            fixed: None,
            extra: None,
            any_thread: false,
            umask2: 0,
            in_tx: false,
            in_tx_cp: false,
            modifiers: levels,
        });
    }
    // AnyThread (bit 21), IN_TX (32), IN_TXCP (33) and the second unit-mask byte (47:40)
    // exist on Intel architectural perfmon only; bits 35:32 are AMD's high event bits.
    let intel = model.encoder == EncoderKind::IntelArch;
    let intel_high = Evtsel::IN_TX | Evtsel::IN_TX_CP | Evtsel::UMASK2;
    let known = if intel {
        (Evtsel::EVENT_SELECT_BITS & !Evtsel::EVENT_HIGH) | intel_high
    } else {
        Evtsel::EVENT_SELECT_BITS & !Evtsel::ANY
    };
    if config & !known != 0 {
        let fields = if intel {
            "event (7:0), unit mask (15:8 and 47:40), edge (18), AnyThread (21), invert (23), counter mask (31:24), IN_TX (32) and IN_TXCP (33)"
        } else {
            "event (7:0, 35:32), unit mask (15:8), edge (18), invert (23) and counter mask (31:24)"
        };
        return Err(err(
            EventErrorKind::ValueOutOfRange,
            format!(
                "raw code `{text}` sets bits {:#x}, outside {fields}; the domain comes from u/k modifiers",
                config & !known
            ),
        ));
    }
    let (high, config) = if intel {
        (config & intel_high, config & !intel_high)
    } else {
        (0, config)
    };
    let (levels, filters) = split_levels(modifiers);
    let mut m = levels;
    m.merge(&Modifiers {
        edge: (config & Evtsel::EDGE != 0).then_some(true),
        invert: (config & Evtsel::INV != 0).then_some(true),
        any_thread: (config & Evtsel::ANY != 0).then_some(true),
        in_tx: (high & Evtsel::IN_TX != 0).then_some(true),
        in_tx_cp: (high & Evtsel::IN_TX_CP != 0).then_some(true),
        cmask: u8::try_from((config >> 24) & 0xff).ok().filter(|c| *c != 0),
        ..Modifiers::default()
    })?;
    m.merge(&filters)?;
    check_intel_bits(model, text, &m)?;
    if m.in_tx_cp == Some(true) && model.pmu.general_counters < 3 {
        return Err(err(
            EventErrorKind::CombinationNotAllowed,
            format!(
                "raw code `{text}`: IN_TXCP counts on general counter 2 only, and CPU model `{}` has {} general counters",
                model.id, model.pmu.general_counters
            ),
        ));
    }
    let decoded = Evtsel::from_event_select(config);
    if decoded.code > model.encoder.max_event_code() {
        return Err(err(
            EventErrorKind::ValueOutOfRange,
            format!(
                "raw code `{text}`: event {:#x} is out of range for encoder {}",
                decoded.code,
                model.encoder.name()
            ),
        ));
    }
    if model.encoder == EncoderKind::P5
        && (decoded.umask != 0
            || m.edge.is_some()
            || m.invert.is_some()
            || m.cmask.is_some_and(|c| c > 1))
    {
        return Err(err(
            EventErrorKind::ValueOutOfRange,
            format!("raw code `{text}`: P5 codes are 6-bit events (c=1 counts cycles)"),
        ));
    }
    Ok(NativeChoice {
        code: decoded.code,
        umask: decoded.umask,
        edge: m.edge == Some(true),
        invert: m.invert == Some(true),
        cmask: m.cmask.unwrap_or(0),
        // Haswell's IN_TXCP works on general counter 2 only.
        counters: if m.in_tx_cp == Some(true) {
            CounterSet::first(model.pmu.general_counters).intersection(CounterSet::only(2))
        } else {
            CounterSet::first(model.pmu.general_counters)
        },
        fixed: None,
        extra: None,
        any_thread: m.any_thread == Some(true),
        umask2: ((high & Evtsel::UMASK2) >> 40) as u8,
        in_tx: m.in_tx == Some(true),
        in_tx_cp: m.in_tx_cp == Some(true),
        modifiers: m,
    })
}
