//! The Arm PMUv3 family: a native event of an Arm core is a 16-bit event number, counted
//! through perf as a raw event of the core PMU.
//!
//! The kernel's `arm_pmuv3` driver (`drivers/perf/arm_pmuv3.c`) publishes its format as
//! `event` = `config:0-15` and `long` = `config1:0` (a 64-bit counter made of two chained
//! 32-bit ones), and maps a `PERF_TYPE_RAW` attr, like one of its own dynamic type, through
//! `armpmu_map_raw_event` (`drivers/perf/arm_pmu.c`). Privilege levels are perf's exclude bits,
//! which `armv8pmu_set_event_filter` turns into the PMU's EL0/EL1/EL2 filter bits.

use counterhal_hal::{Domain, Encoding, PerfAttr};

use crate::error::{EventError, EventErrorKind, err};
use crate::parse::EventSpec;
use crate::perf;
use crate::select::NativeChoice;

/// The `long` format attribute's bit in `config1`: count in a 64-bit chained counter.
pub const CONFIG1_LONG: u64 = 1;

/// The unit-mask spelling of the chained form: `CPU_CYCLES:long`, as perf writes
/// `armv8_pmuv3/event=0x11,long/`.
pub(crate) const LONG: &str = "long";

/// `spec` without its `long` unit mask, and whether it had one.
pub(crate) fn split_long(spec: &EventSpec) -> (EventSpec, bool) {
    let mut out = spec.clone();
    let before = out.unit_masks.len();
    out.unit_masks.retain(|m| !m.eq_ignore_ascii_case(LONG));
    let long = out.unit_masks.len() != before;
    (out, long)
}

/// The perf attr of a chosen PMUv3 event: `PERF_TYPE_RAW`, `config` the event number,
/// `config1` bit 0 for the chained form, the domain as exclude bits.
///
/// # Errors
/// [`EventErrorKind::CombinationNotAllowed`] for an x86 filter (edge, invert, counter mask,
/// AnyThread, TSX bits), which the PMUv3 has not.
pub(crate) fn encode(
    choice: &NativeChoice,
    domain: Domain,
    name: &str,
) -> Result<Encoding, EventError> {
    if choice.edge
        || choice.invert
        || choice.cmask != 0
        || choice.any_thread
        || choice.in_tx
        || choice.in_tx_cp
        || choice.umask != 0
        || choice.umask2 != 0
    {
        return Err(err(
            EventErrorKind::CombinationNotAllowed,
            format!(
                "`{name}`: an Arm PMUv3 event is an event number alone; it takes no edge, invert, counter mask, unit mask or TSX bits (modifiers u, k, h and the `long` form only)"
            ),
        ));
    }
    let attr = PerfAttr::new(perf::TYPE_RAW, u64::from(choice.code)).with_domain(domain);
    Ok(Encoding::Perf(attr))
}

/// `encoding` in the chained 64-bit form when `long` (the `long` format attribute set).
pub(crate) fn with_long(encoding: Encoding, long: bool) -> Encoding {
    match encoding {
        Encoding::Perf(mut attr) if long => {
            attr.config1 |= CONFIG1_LONG;
            Encoding::Perf(attr)
        }
        other => other,
    }
}

/// A raw PMUv3 code (`r08`): the event number alone, bits 15:0.
///
/// # Errors
/// [`EventErrorKind::ValueOutOfRange`] for bits above 15.
pub(crate) fn raw_code(text: &str, config: u64) -> Result<u16, EventError> {
    u16::try_from(config).map_err(|_| {
        err(
            EventErrorKind::ValueOutOfRange,
            format!(
                "raw code `{text}` sets bits {:#x}; an Arm PMUv3 event number is 16 bits (config:0-15)",
                config & !0xffff
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{ParsedEvent, parse_event};

    fn spec(text: &str) -> EventSpec {
        match parse_event(text).unwrap() {
            ParsedEvent::Named(spec) => spec,
            other => panic!("{text}: {other:?}"),
        }
    }

    /// Oracle: the kernel's `arm_pmuv3` format attributes (`event` config:0-15, `long`
    /// config1:0), as the aarch64 lab's guest shows them in
    /// /sys/bus/event_source/devices/armv8_pmuv3/format.
    #[test]
    fn the_long_form_is_config1_bit_0() {
        let (plain, long) = split_long(&spec("CPU_CYCLES:LONG:u"));
        assert!(long);
        assert!(plain.unit_masks.is_empty());
        let (_, long) = split_long(&spec("CPU_CYCLES:u"));
        assert!(!long);
        let attr = PerfAttr::new(perf::TYPE_RAW, 0x11);
        let Encoding::Perf(out) = with_long(Encoding::Perf(attr), true) else {
            panic!("not a perf attr");
        };
        assert_eq!((out.config, out.config1), (0x11, 1));
        assert_eq!(raw_code("r11", 0x11).unwrap(), 0x11);
        assert!(raw_code("r10011", 0x1_0011).is_err());
    }
}
