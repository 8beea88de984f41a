//! Intel's event-select bits above 31: the second unit-mask byte (perfmon's `UMaskExt`, EVTSEL
//! bits 47:40, TOML `umask_ext`) from the generated tables, and the TSX filters IN_TX (bit 32)
//! and IN_TXCP (bit 33) as libpfm4's `intx` and `intxcp` modifiers or in a raw code. Other
//! encoders refuse them: on AMD those bits are event-code and host/guest bits.

use counterhal_events::{Database, EventErrorKind};
use counterhal_hal::{CounterSet, Encoding, Evtsel};

use crate::common::X86;

fn evtsel(db: &Database, cpu: &str, event: &str) -> Evtsel {
    let resolved = db
        .resolve(Some(cpu), event, &X86)
        .unwrap_or_else(|e| panic!("{cpu} {event}: {e}"));
    match resolved.terms[0].request.encoding {
        Encoding::Evtsel(e) => e,
        ref other => panic!("{event}: {other:?}"),
    }
}

#[test]
fn the_second_unit_mask_byte_comes_from_intels_tables() {
    let db = Database::shipped().unwrap();
    // Intel perfmon's Lunar Lake P-core table: UMask 0x20, UMaskExt 0x03.
    let stlb_hit = evtsel(&db, "lnl_lnc", "DTLB_LOAD_MISSES.STLB_HIT");
    assert_eq!(stlb_hit.umask2, 0x03);
    assert_eq!(stlb_hit.event_select(), 0x0300_0000_2012);
    // Conditional branches: UMask 0x11 with UMaskExt 0x01, as perf's `umask=0x111`.
    let cond = evtsel(&db, "lnl_lnc", "BR_INST_RETIRED.COND");
    assert_eq!(cond.event_select(), 0x0100_0000_11c4);
    // A unit mask without the second byte leaves bits 47:40 clear.
    let walk = evtsel(&db, "lnl_lnc", "DTLB_LOAD_MISSES.WALK_COMPLETED");
    assert_eq!(walk.umask2, 0);
    assert_eq!(walk.event_select() & Evtsel::UMASK2, 0);
    // Panther Lake's E-core and Clearwater Forest: the second byte on the L2 requests.
    assert_eq!(evtsel(&db, "cwf", "L2_REQUEST.MISS").umask2, 0x01);
}

#[test]
fn intx_and_intxcp_set_the_tsx_filters() {
    let db = Database::shipped().unwrap();
    let plain = evtsel(&db, "skl", "INST_RETIRED.ANY_P");
    let in_tx = evtsel(&db, "skl", "INST_RETIRED.ANY_P:intx");
    assert_eq!(
        in_tx.register_value(),
        plain.register_value() | Evtsel::IN_TX
    );
    assert_eq!(in_tx.counters, plain.counters);
    assert_eq!(in_tx.fixed, None, "the fixed counters have no TSX filters");
    // IN_TXCP counts on general counter 2 only, as the kernel constrains it.
    let cp = evtsel(&db, "skl", "INST_RETIRED.ANY_P:intx=1:intxcp=1");
    assert_eq!(
        cp.register_value(),
        plain.register_value() | Evtsel::IN_TX | Evtsel::IN_TX_CP
    );
    assert_eq!(cp.counters, CounterSet::only(2));
    assert!(!evtsel(&db, "skl", "INST_RETIRED.ANY_P:intx=0").in_tx);
    // A raw code holds them at bits 32 and 33 on Intel, where bits 35:32 are no event bits.
    let raw = evtsel(&db, "skl", "r3000000c0");
    assert!(raw.in_tx && raw.in_tx_cp, "{raw:?}");
    assert_eq!(raw.code, 0xc0);
    let raw_umask2 = evtsel(&db, "lnl_lnc", "r030000002012");
    assert_eq!(raw_umask2.umask2, 0x03);
    assert_eq!(raw_umask2.event_select(), 0x0300_0000_2012);
}

#[test]
fn other_encoders_refuse_intels_high_bits() {
    let db = Database::shipped().unwrap();
    for (cpu, event, kind) in [
        // libpfm4's K8 table has no `intx` (libpfm4 4.13 refuses it as an unknown attribute).
        (
            "k8",
            "RETIRED_INSTRUCTIONS:intx",
            EventErrorKind::UnknownModifier,
        ),
        ("k8", "r00c0:intxcp", EventErrorKind::CombinationNotAllowed),
        ("skl", "cycles:intx", EventErrorKind::CombinationNotAllowed),
        (
            "skl",
            "INST_RETIRED.ANY_P:intx=2",
            EventErrorKind::ValueOutOfRange,
        ),
        // The kernel refuses IN_TX with AnyThread (libpfm4 encodes the pair: the refusal
        // of `INST_RETIRED.ANY_P:intx:t` comes when the event is opened).
        (
            "skl",
            "cycles:intx:t",
            EventErrorKind::CombinationNotAllowed,
        ),
        // Bit 36 (EQ) is not taken in a raw code.
        ("skl", "r10000000c0", EventErrorKind::ValueOutOfRange),
    ] {
        let error = db.resolve_exact(Some(cpu), event, &X86).unwrap_err();
        assert_eq!(error.kind(), kind, "{cpu} {event}: {error}");
    }
    // On AMD, bits 35:32 of a raw code are the event's high bits, not TSX filters.
    assert_eq!(evtsel(&db, "amd64_fam19h_zen3", "r1000000c0").code, 0x1c0);
    let amd = "[[cpu]]\nid = \"amdext\"\nencoder = \"amd64\"\nmatch = [{ vendor = \"amd\", family = 0x17 }]\npmu = { general_counters = 6, counter_width = 48 }\n[[cpu.event]]\nname = \"E\"\ncode = 0x1\numasks = [{ name = \"ALL\", code = 1, umask_ext = 1 }]\n";
    let error = Database::from_toml_str("amd.toml", amd).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("intel-arch") && text.contains("umask_ext"),
        "{text}"
    );
    assert!(text.contains("amd.toml:9:"), "points at the line: {text}");
}

/// `intx` and `intxcp` only where the model's core has TSX (`pmu = { tsx = true }`, where
/// Intel's table lists RTM_RETIRED): Haswell to Sapphire Rapids, not the Atom cores, not Alder
/// Lake's or later client P-cores (TSX gone), not the cores before Haswell. A model that does
/// not say (a user's) leaves it to the backend.
#[test]
fn the_tsx_filters_only_where_the_core_has_tsx() {
    let db = Database::shipped().unwrap();
    for cpu in ["hsw", "bdw_ep", "skl", "icx", "spr", "gnr"] {
        assert!(evtsel(&db, cpu, "r00c0:intx").in_tx, "{cpu}");
    }
    for cpu in [
        "snb", "nhm", "core", "atom", "slm", "adl_glc", "adl_grt", "mtl_rwc", "lnl_lnc", "srf",
    ] {
        for event in ["r00c0:intx", "r00c0:intxcp", "r3000000c0"] {
            let error = db.resolve_exact(Some(cpu), event, &X86).unwrap_err();
            assert_eq!(
                error.kind(),
                EventErrorKind::CombinationNotAllowed,
                "{cpu} {event}: {error}"
            );
            assert!(
                error.to_string().contains("has no TSX"),
                "{cpu} {event}: {error}"
            );
        }
    }
    let user = "[[cpu]]\nid = \"mine\"\nencoder = \"intel-arch\"\nmatch = [{ vendor = \"intel\", family = 6, model = 0x3c }]\npmu = { general_counters = 4, counter_width = 48 }\n";
    let db = Database::from_toml_str("mine.toml", user).unwrap();
    assert!(evtsel(&db, "mine", "r00c0:intx").in_tx);
    let no = user.replace("counter_width = 48", "counter_width = 48, tsx = false");
    let db = Database::from_toml_str("mine.toml", &no).unwrap();
    assert!(db.resolve_exact(Some("mine"), "r00c0:intx", &X86).is_err());
}

/// A fixed counter counts its own unit mask only: raw unit-mask bits added to a unit mask
/// that may count on one (`CPU_CLK_UNHALTED.THREAD_P:0x01`, which is 0x3c/0x01) leave the
/// fixed counter out.
#[test]
fn raw_unit_mask_bits_leave_the_fixed_counter_out() {
    let db = Database::shipped().unwrap();
    let plain = evtsel(&db, "skl", "CPU_CLK_UNHALTED.THREAD_P");
    assert_eq!(plain.fixed, Some(1));
    // A raw unit mask replaces the named ones (libpfm4 refuses both together:
    // `CPU_CLK_UNHALTED.THREAD_P:0x01` is `CPU_CLK_UNHALTED:THREAD_P:0x01` to it).
    let raw = evtsel(&db, "skl", "CPU_CLK_UNHALTED:0x01");
    assert_eq!((raw.code, raw.umask, raw.fixed), (0x3c, 0x01, None));
    assert_eq!(evtsel(&db, "hsw", "INST_RETIRED:0x01").fixed, None);
}
