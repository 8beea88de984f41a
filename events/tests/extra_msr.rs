//! The schema's fields for Intel's extra MSRs (offcore response, load latency, frontend) and
//! the precise and deprecated marks: a small file of our own loads, its values come back
//! through resolution (an MSR value at or above 2^63 written as a string), the `ldlat=`,
//! `frontend=` and `fe_thres=` modifiers change them (`fe_thres` not against a unit mask that
//! names its threshold, `LATENCY_GE_2`), and bad files and strings are refused
//! with messages that say what would be right.

use counterhal_events::{Database, EventErrorKind};
use counterhal_hal::{Encoding, Evtsel, ExtraMsr};

use crate::common::{PERF, X86};

const MODEL: &str = r#"
[[cpu]]
id = "msrcore"
description = "A made-up core whose events program extra MSRs"
encoder = "intel-arch"
match = [{ vendor = "intel", family = 6, model = 0xfd }]
pmu = { general_counters = 4, counter_width = 48, fixed_counters = 3, fixed_width = 48 }

[[cpu.event]]
name = "OCR"
code = 0xb7
flags = ["exclusive"]
umasks = [
  { name = "DEMAND_DATA_RD.ANY_RESPONSE", code = 0x01, extra_reg = 0x1a6, extra_value = 0x10001 },
  { name = "DEMAND_RFO.HIGH", code = 0x01, extra_reg = 0x1a6, extra_value = "0x8000000000010002" },
  { name = "OLD_NAME", code = 0x01, extra_reg = 0x1a7, extra_value = 0x10004, deprecated = true },
]

[[cpu.event]]
name = "MEM_TRANS_RETIRED"
code = 0xcd
umasks = [
  { name = "LOAD_LATENCY_GT_4", code = 0x01, extra_reg = 0x3f6, extra_value = 4, precise = true },
]

[[cpu.event]]
name = "FRONTEND_RETIRED"
code = 0xc6
umasks = [
  { name = "LATENCY_GE_2", code = 0x01, extra_reg = 0x3f7, extra_value = 0x100206, precise = true },
  { name = "DSB_MISS", code = 0x01, extra_reg = 0x3f7, extra_value = 0x11 },
]

[[cpu.event]]
name = "OFFCORE_RESPONSE_0"
code = 0xb7
umask = 0x01
extra_reg = 0x1a6
extra_value = 0x3f80408fff
flags = ["precise", "deprecated"]

[[cpu.event]]
name = "PLAIN"
code = 0xc0
"#;

fn db() -> Database {
    Database::from_toml_str("msrcore.toml", MODEL).unwrap()
}

fn evtsel(db: &Database, event: &str) -> Evtsel {
    let resolved = db.resolve(Some("msrcore"), event, &X86).unwrap();
    match resolved.terms[0].request.encoding {
        Encoding::Evtsel(e) => e,
        ref other => panic!("{event}: {other:?}"),
    }
}

#[test]
fn extra_msr_values_round_trip_through_resolution() {
    let db = db();
    let cases = [
        ("OCR.DEMAND_DATA_RD.ANY_RESPONSE", 0x1a6, 0x10001),
        ("OCR:DEMAND_RFO.HIGH", 0x1a6, 0x8000_0000_0001_0002),
        ("OCR.OLD_NAME", 0x1a7, 0x10004),
        ("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4", 0x3f6, 4),
        ("FRONTEND_RETIRED.LATENCY_GE_2", 0x3f7, 0x10_0206),
        ("OFFCORE_RESPONSE_0", 0x1a6, 0x3f_8040_8fff),
    ];
    for (event, msr, value) in cases {
        let e = evtsel(&db, event);
        assert_eq!(e.extra, Some(ExtraMsr::new(msr, value)), "{event}");
        assert_eq!(
            e.event_select() & 0xffff,
            u64::from(e.umask) << 8 | u64::from(e.code)
        );
        // The text form shows the MSR.
        let text = Encoding::Evtsel(e).to_string();
        assert!(
            text.contains(&format!("msr {msr:#x}={value:#x}")),
            "{event}: {text}"
        );
    }
    assert_eq!(evtsel(&db, "PLAIN").extra, None);
    // The perf profile resolves the same event select (the Linux backend moves the value
    // into config1).
    let perf = db
        .resolve(Some("msrcore"), "OCR.DEMAND_DATA_RD.ANY_RESPONSE", &PERF)
        .unwrap();
    let Encoding::Evtsel(e) = perf.terms[0].request.encoding else {
        panic!("{perf:?}");
    };
    assert_eq!(e.extra.map(|x| x.value), Some(0x10001));
}

#[test]
fn precise_and_deprecated_marks_are_kept() {
    let db = db();
    let model = db.model("msrcore").unwrap();
    let ocr = model.event("OCR").unwrap();
    let old = ocr.unit_mask("OLD_NAME").unwrap();
    assert!(old.deprecated && !old.precise);
    assert!(
        !ocr.unit_mask("DEMAND_DATA_RD.ANY_RESPONSE")
            .unwrap()
            .deprecated
    );
    let ldlat = model.event("MEM_TRANS_RETIRED").unwrap();
    assert!(ldlat.unit_mask("LOAD_LATENCY_GT_4").unwrap().precise);
    let offcore = model.event("OFFCORE_RESPONSE_0").unwrap();
    assert!(offcore.flags.precise && offcore.flags.deprecated);
    assert!(!model.event("PLAIN").unwrap().flags.deprecated);
}

#[test]
fn ldlat_frontend_and_fe_thres_change_the_msr_value() {
    let db = db();
    let e = evtsel(&db, "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4:ldlat=64");
    assert_eq!(e.extra, Some(ExtraMsr::new(0x3f6, 64)));
    // A unit mask that names its threshold keeps it: the same value is accepted, another
    // conflicts (as libpfm4 4.13 refuses `icl::FRONTEND_RETIRED:LATENCY_GE_4:fe_thres=4095`
    // with PFM_ERR_ATTR_SET, tests/libpfm_validate.rs); one that names none takes any.
    let e = evtsel(&db, "FRONTEND_RETIRED.LATENCY_GE_2:fe_thres=2");
    assert_eq!(e.extra, Some(ExtraMsr::new(0x3f7, 0x10_0206)));
    let e = evtsel(&db, "FRONTEND_RETIRED.DSB_MISS:frontend=0x12");
    assert_eq!(e.extra, Some(ExtraMsr::new(0x3f7, 0x12)));
    let e = evtsel(&db, "FRONTEND_RETIRED.DSB_MISS:frontend=0x6:fe_thres=4");
    assert_eq!(e.extra, Some(ExtraMsr::new(0x3f7, 0x406)));
    for (event, kind, needle) in [
        (
            "PLAIN:ldlat=3",
            EventErrorKind::CombinationNotAllowed,
            "0x3f6",
        ),
        (
            "OCR.DEMAND_DATA_RD.ANY_RESPONSE:ldlat=3",
            EventErrorKind::CombinationNotAllowed,
            "programs register 0x1a6",
        ),
        (
            "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4:frontend=1",
            EventErrorKind::CombinationNotAllowed,
            "0x3f7",
        ),
        (
            "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4:ldlat=0",
            EventErrorKind::ValueOutOfRange,
            "0x1..=0xffff",
        ),
        (
            "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4:ldlat=0x10000",
            EventErrorKind::ValueOutOfRange,
            "ldlat",
        ),
        (
            "FRONTEND_RETIRED.LATENCY_GE_2:fe_thres=0x20",
            EventErrorKind::ModifierConflict,
            "fe_thres",
        ),
        (
            "FRONTEND_RETIRED.DSB_MISS:fe_thres=0x1000",
            EventErrorKind::ValueOutOfRange,
            "fe_thres",
        ),
        (
            "FRONTEND_RETIRED.DSB_MISS:frontend=x",
            EventErrorKind::ValueOutOfRange,
            "frontend",
        ),
    ] {
        let error = db.resolve_exact(Some("msrcore"), event, &X86).unwrap_err();
        assert_eq!(error.kind(), kind, "{event}: {error}");
        assert!(error.message().contains(needle), "{event}: {error}");
    }
}

/// The header of a model the refusal tests give one bad event each.
const BAD_HEAD: &str = r#"
[[cpu]]
id = "bad"
encoder = "intel-arch"
match = [{ vendor = "intel", family = 6, model = 0xfc }]
pmu = { general_counters = 4, counter_width = 48 }
"#;

#[test]
fn bad_extra_msr_fields_are_refused_with_what_is_right() {
    let head = BAD_HEAD;
    for (event, needle) in [
        ("extra_reg = 0x1a6", "without `extra_value`"),
        ("extra_value = 1", "without `extra_reg`"),
        (
            "extra_reg = 0x199, extra_value = 1",
            "0x1a6 (offcore response 0)",
        ),
        ("extra_reg = 0x1a6, extra_value = -1", "non-negative"),
        (
            "extra_reg = 0x1a6, extra_value = \"0xzz\"",
            "0x8000000000010001",
        ),
        ("extra_reg = 0x1a6, extra_value = true", "non-negative"),
    ] {
        let text = format!(
            "{head}\n[[cpu.event]]\nname = \"E\"\ncode = 0xb7\numasks = [{{ name = \"MASK\", code = 1, {event} }}]\n"
        );
        let error = Database::from_toml_str("bad.toml", &text).unwrap_err();
        assert!(error.to_string().contains(needle), "{event}: {error}");
    }
    // An AMD model has none of these MSRs.
    let amd = "[[cpu]]\nid = \"amdbad\"\nencoder = \"amd64\"\nmatch = [{ vendor = \"amd\", family = 0x17 }]\npmu = { general_counters = 6, counter_width = 48 }\n[[cpu.event]]\nname = \"E\"\ncode = 0x1\nextra_reg = 0x1a6\nextra_value = 1\n";
    let error = Database::from_toml_str("amd.toml", amd).unwrap_err();
    assert!(error.to_string().contains("intel-arch"), "{error}");
}

/// A made-up offcore event whose unit masks are register bits, in libpfm4's groups.
const BITS_MODEL: &str = r#"
[[cpu]]
id = "bitscore"
description = "A made-up core whose offcore unit masks are register bits"
encoder = "intel-arch"
match = [{ vendor = "intel", family = 6, model = 0xfb }]
pmu = { general_counters = 4, counter_width = 48 }

[[cpu.event]]
name = "OFFCORE_RESPONSE_0"
code = 0xb7
extra_reg = 0x1a6
extra_value = 0
umasks = [
  { name = "DMND_DATA_RD", code = 0x01, extra_bits = 0x1 },
  { name = "DMND_RFO", code = 0x01, extra_bits = 0x2 },
  { name = "ANY_DMND", code = 0x01, extra_bits = 0x3, same_as = ["DMND_DATA_RD", "DMND_RFO"] },
  { name = "ANY_REQUEST", code = 0x01, extra_bits = 0x8fff, default = true, alone_in_group = true },
  { name = "ANY_RESPONSE", code = 0x01, group = 1, extra_bits = 0x10000, default = true, alone_in_group = true, excludes_later_groups = true },
  { name = "L3_MISS", code = 0x01, group = 1, extra_bits = 0x400000 },
  { name = "SNP_ANY", code = 0x01, group = 2, extra_bits = "0x8000003f80000000", default = true },
]
"#;

#[test]
fn register_bit_unit_masks_load_and_compose() {
    let db = Database::from_toml_str("bits.toml", BITS_MODEL).unwrap();
    for (event, value) in [
        ("OFFCORE_RESPONSE_0", 0x1_8fff),
        ("OFFCORE_RESPONSE_0:DMND_DATA_RD", 0x1_0001),
        ("OFFCORE_RESPONSE_0:ANY_DMND:L3_MISS", 0x8000_003f_8040_0003),
        ("OFFCORE_RESPONSE_0:ANY_DMND:DMND_RFO", 0x1_0003),
    ] {
        let resolved = db.resolve(Some("bitscore"), event, &X86).unwrap();
        let Encoding::Evtsel(evtsel) = &resolved.terms[0].request.encoding else {
            panic!("{event}: not an EVTSEL");
        };
        assert_eq!(
            (evtsel.code, evtsel.umask, evtsel.extra),
            (0xb7, 0x01, Some(ExtraMsr::new(0x1a6, value))),
            "{event}"
        );
    }
}

#[test]
fn bad_register_bit_fields_are_refused_with_what_is_right() {
    let head = BAD_HEAD;
    for (event, masks, needle) in [
        // Bits need the event's register.
        (
            "",
            "{ name = \"A_BIT\", code = 1, extra_bits = 1 }",
            "give the event `extra_reg`",
        ),
        (
            "extra_reg = 0x1a6\nextra_value = 0\n",
            "{ name = \"A_BIT\", code = 1, extra_bits = 1, extra_reg = 0x1a7, extra_value = 1 }",
            "no `extra_reg` of its own",
        ),
        (
            "extra_reg = 0x1a6\nextra_value = 0\n",
            "{ name = \"A_BIT\", code = 1, extra_bits = -1 }",
            "non-negative",
        ),
        // Combination rules apply to register bits only.
        (
            "extra_reg = 0x1a6\nextra_value = 0\n",
            "{ name = \"A_BIT\", code = 1, alone_in_group = true }",
            "register-bit masks only",
        ),
        (
            "extra_reg = 0x1a6\nextra_value = 0\n",
            "{ name = \"A_BIT\", code = 1, extra_bits = 1, same_as = [\"NOPE\"] }",
            "stands for `NOPE`",
        ),
    ] {
        let text = format!(
            "{head}\n[[cpu.event]]\nname = \"E\"\ncode = 0xb7\n{event}umasks = [{masks}]\n"
        );
        let error = Database::from_toml_str("bad.toml", &text).unwrap_err();
        assert!(error.to_string().contains(needle), "{masks}: {error}");
    }
}
