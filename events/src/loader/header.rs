//! A model's header: its PMU description, match rules, counters and fixed counters.

use counterhal_hal::{CounterSet, Error};
use toml::Spanned;

use super::schema::{HybridDoc, MatchDoc, PmuDoc};
use super::source::{Source, number, number_set};
use crate::cpu::{HybridCore, Vendor};
use crate::model::{MatchRule, NumberSet, PmuDescription};

pub(super) fn pmu_description(source: &Source<'_>, doc: &PmuDoc) -> Result<PmuDescription, Error> {
    let general_counters = number(source, &doc.general_counters, "general_counters", 32)?;
    let counter_width = number(source, &doc.counter_width, "counter_width", 64)?;
    let fixed_counters = match &doc.fixed_counters {
        Some(v) => number(source, v, "fixed_counters", 8)?,
        None => 0,
    };
    let fixed_width = match &doc.fixed_width {
        Some(v) => number(source, v, "fixed_width", 64)?,
        None => 0,
    };
    Ok(PmuDescription {
        general_counters,
        counter_width,
        fixed_counters,
        fixed_width,
        tsx: doc.tsx,
    })
}

/// A hybrid chip's core: `{ core_type = 0x20, native_model = 0x2 }` (CPUID leaf 0x1A EAX bits
/// 31:24 and 23:0).
pub(super) fn hybrid_core(source: &Source<'_>, doc: &HybridDoc) -> Result<HybridCore, Error> {
    let core_type = number(source, &doc.core_type, "core_type", 0xff)?;
    if core_type == 0 {
        return Err(source.error(
            doc.core_type.span(),
            "core_type",
            "0 names no core; 0x20 (Atom) or 0x40 (Core)",
        ));
    }
    let native_model = match &doc.native_model {
        Some(v) => Some(number(source, v, "native_model", 0xff_ffff)?),
        None => None,
    };
    Ok(HybridCore {
        core_type,
        native_model,
    })
}

pub(super) fn match_rule(source: &Source<'_>, doc: &MatchDoc) -> Result<MatchRule, Error> {
    let vendor = Vendor::from_cpuid(doc.vendor.get_ref());
    if let Vendor::Other(name) = &vendor {
        return Err(source.error(
            doc.vendor.span(),
            "vendor",
            format!("unknown vendor `{name}`; `intel` or `amd`"),
        ));
    }
    let family = number_set(source, &doc.family, "family")?;
    let model = match &doc.model {
        Some(v) => number_set(source, v, "model")?,
        None => NumberSet::default(),
    };
    let stepping = match &doc.stepping {
        Some(v) => number_set(source, v, "stepping")?,
        None => NumberSet::default(),
    };
    Ok(MatchRule {
        vendor,
        family,
        model,
        stepping,
    })
}

pub(super) fn counter_set(
    source: &Source<'_>,
    pmu: &PmuDescription,
    value: &Spanned<Vec<i64>>,
) -> Result<CounterSet, Error> {
    let mut mask = 0u32;
    for &index in value.get_ref() {
        if index < 0 || index >= i64::from(pmu.general_counters) {
            return Err(source.error(
                value.span(),
                "counters",
                format!(
                    "unknown counter {index}: the PMU has general counters 0..{}",
                    pmu.general_counters
                ),
            ));
        }
        mask |= 1 << index;
    }
    Ok(CounterSet::from_mask(mask))
}

pub(super) fn fixed_counter(
    source: &Source<'_>,
    pmu: &PmuDescription,
    value: &Spanned<i64>,
) -> Result<u32, Error> {
    let index = *value.get_ref();
    if index < 0 || index >= i64::from(pmu.fixed_counters) {
        return Err(source.error(
            value.span(),
            "fixed",
            format!(
                "unknown fixed counter {index}: the PMU has {} fixed counters",
                pmu.fixed_counters
            ),
        ));
    }
    Ok(u32::try_from(index).unwrap_or(0))
}
