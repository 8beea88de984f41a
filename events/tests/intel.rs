//! The generated Intel models: each one's overlay maps the generalized events onto Intel's
//! architectural events, and a fixed-counter pseudo-event stays on its fixed counter.

use counterhal_events::{Database, EncoderKind};
use counterhal_hal::Encoding;

use crate::common;

/// (generalized event, event code, unit mask): the architectural events (Intel SDM vol. 3,
/// "Pre-defined architectural performance events"), where a core's table lists them so.
const ARCHITECTURAL: &[(&str, u16, u8)] = &[
    ("cycles", 0x3c, 0x00),
    ("instructions", 0xc0, 0x00),
    ("cache-references", 0x2e, 0x4f),
    ("cache-misses", 0x2e, 0x41),
    ("branches", 0xc4, 0x00),
    ("branch-misses", 0xc5, 0x00),
];

/// Cores whose tables list an architectural event under another unit mask: (model, event,
/// unit mask in Intel's table).
const OWN_UNIT_MASK: &[(&str, &str, u8)] = &[
    ("nhm", "instructions", 0x01),
    ("nhm_ex", "instructions", 0x01),
    ("wsm", "instructions", 0x01),
    ("wsm_dp", "instructions", 0x01),
    ("wsm_ex", "instructions", 0x01),
    ("nhm", "branches", 0x04),
    ("nhm_ex", "branches", 0x04),
    ("wsm", "branches", 0x04),
    ("wsm_dp", "branches", 0x04),
    ("wsm_ex", "branches", 0x04),
    ("wsm", "branch-misses", 0x04),
    ("wsm_dp", "branch-misses", 0x04),
    ("wsm_ex", "branch-misses", 0x04),
];

#[test]
fn generalized_events_are_the_architectural_events() {
    let database = Database::shipped().unwrap();
    let mut checked = 0;
    let mut models = 0;
    for model in database.models() {
        if model.encoder != EncoderKind::IntelArch || model.id == "intel-arch" {
            continue;
        }
        models += 1;
        for &(name, code, umask) in ARCHITECTURAL {
            let Ok(resolved) = database.resolve(Some(&model.id), name, &common::X86) else {
                continue;
            };
            let Encoding::Evtsel(evtsel) = &resolved.terms[0].request.encoding else {
                panic!("{}: {name} is not an event select", model.id);
            };
            let umask = OWN_UNIT_MASK
                .iter()
                .find(|(m, e, _)| *m == model.id && *e == name)
                .map_or(umask, |(_, _, u)| *u);
            assert_eq!(
                (evtsel.code, evtsel.umask),
                (code, umask),
                "{}: {name}",
                model.id
            );
            assert!(!evtsel.counters.is_empty(), "{}: {name}", model.id);
            checked += 1;
        }
        // Every core has cycles and instructions.
        for name in ["cycles", "instructions", "PAPI_TOT_INS"] {
            assert!(
                database
                    .resolve(Some(&model.id), name, &common::X86)
                    .is_ok(),
                "{}: {name}",
                model.id
            );
        }
    }
    assert!(models >= 47, "only {models} Intel models");
    assert!(checked >= 47 * 5, "only {checked} checked");
}

#[test]
fn fixed_counter_pseudo_events_stay_on_their_counter() {
    let database = Database::shipped().unwrap();
    for (model, event, fixed) in [
        ("spr", "INST_RETIRED.ANY", 0),
        ("spr", "TOPDOWN.SLOTS", 3),
        ("hsw", "CPU_CLK_UNHALTED.THREAD", 1),
        ("nhm", "CPU_CLK_UNHALTED.REF", 2),
        ("adl_grt", "CPU_CLK_UNHALTED.REF_TSC", 2),
    ] {
        let resolved = database.resolve(Some(model), event, &common::X86).unwrap();
        let Encoding::Evtsel(evtsel) = &resolved.terms[0].request.encoding else {
            panic!("{model}: {event}");
        };
        assert_eq!(evtsel.fixed, Some(fixed), "{model}: {event}");
        assert!(evtsel.counters.is_empty(), "{model}: {event}");
    }
}
