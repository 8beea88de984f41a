//! AnyThread (EVTSEL bit 21): Intel's `*_ANY` events carry it from the data (`any = true`),
//! `t` sets it on any native event of an Intel architectural model, a raw code may hold it,
//! and every other encoder refuses it.

use counterhal_events::{Database, EventErrorKind};
use counterhal_hal::{Encoding, Evtsel};

use crate::common::X86;

fn evtsel(db: &Database, cpu: &str, event: &str) -> Evtsel {
    let resolved = db.resolve(Some(cpu), event, &X86).unwrap();
    match resolved.terms[0].request.encoding {
        Encoding::Evtsel(e) => e,
        ref other => panic!("{event}: {other:?}"),
    }
}

#[test]
fn any_thread_comes_from_the_data_the_modifier_or_the_raw_code() {
    let db = Database::shipped().unwrap();
    let any = evtsel(&db, "skl", "CPU_CLK_UNHALTED.THREAD_ANY");
    assert!(any.any_thread);
    assert_eq!(any.fixed, Some(1));
    assert_eq!(any.event_select() & Evtsel::ANY, Evtsel::ANY);
    let plain = evtsel(&db, "skl", "INST_RETIRED.ANY_P");
    assert!(!plain.any_thread);
    let t = evtsel(&db, "skl", "INST_RETIRED.ANY_P:t");
    assert_eq!(t.register_value(), plain.register_value() | Evtsel::ANY);
    assert!(!evtsel(&db, "skl", "INST_RETIRED.ANY_P:t=0").any_thread);
    assert!(evtsel(&db, "skl", "r2000c0").any_thread);
    // `t=0` contradicts an event whose data sets AnyThread.
    let conflict = db
        .resolve_exact(Some("skl"), "CPU_CLK_UNHALTED.THREAD_ANY:t=0", &X86)
        .unwrap_err();
    assert_eq!(
        conflict.kind(),
        EventErrorKind::ModifierConflict,
        "{conflict}"
    );
}

#[test]
fn encoders_without_any_thread_refuse_it() {
    let db = Database::shipped().unwrap();
    for (cpu, event, kind) in [
        // libpfm4's K8 table has no `t` (libpfm4 4.13 refuses it as an unknown attribute).
        (
            "k8",
            "RETIRED_INSTRUCTIONS:t",
            EventErrorKind::UnknownModifier,
        ),
        ("k8", "r2000c0", EventErrorKind::ValueOutOfRange),
        ("k8", "r00c0:t", EventErrorKind::CombinationNotAllowed),
        ("skl", "cycles:t", EventErrorKind::CombinationNotAllowed),
    ] {
        let error = db.resolve_exact(Some(cpu), event, &X86).unwrap_err();
        assert_eq!(error.kind(), kind, "{cpu} {event}: {error}");
    }
    let amd = "[[cpu]]\nid = \"amdany\"\nencoder = \"amd64\"\nmatch = [{ vendor = \"amd\", family = 0x17 }]\npmu = { general_counters = 6, counter_width = 48 }\n[[cpu.event]]\nname = \"E\"\ncode = 0x1\numasks = [{ name = \"ALL\", code = 1, any = true }]\n";
    let error = Database::from_toml_str("amd.toml", amd).unwrap_err();
    assert!(error.to_string().contains("intel-arch"), "{error}");
}
