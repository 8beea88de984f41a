//! Presets in PAPI's form in an events file: folded into weighted sums, left out with the
//! reason where a native does not resolve, refused with file, line and key where malformed.

use counterhal_events::Database;
use counterhal_hal::{Encoding, GeneralizedEvent, Preset, Sign};

use crate::common;

const MODEL: &str = r#"
[[cpu]]
id = "toy"
encoder = "intel-arch"
pmu = { general_counters = 8, counter_width = 48 }

[[cpu.event]]
name = "FP_ARITH"
code = 0xc7
umasks = [
  { name = "SCALAR_DOUBLE", code = 0x01 },
  { name = "128B_PACKED_DOUBLE", code = 0x04 },
]

[[cpu.event]]
name = "BR_INST_RETIRED"
code = 0xc4
umasks = [{ name = "ALL_BRANCHES", code = 0x00, default = true }, { name = "COND", code = 0x01 }]

[cpu.presets]
PAPI_DP_OPS = { papi = "DERIVED_POSTFIX", postfix = "N0|N1|2|*|+|", natives = ["FP_ARITH:SCALAR_DOUBLE", "FP_ARITH:128B_PACKED_DOUBLE"] }
PAPI_BR_UCN = { papi = "DERIVED_SUB", natives = ["BR_INST_RETIRED:ALL_BRANCHES", "BR_INST_RETIRED:COND"] }
PAPI_BR_CN = { papi = "NOT_DERIVED", natives = ["BR_INST_RETIRED:COND", "FP_ARITH:SCALAR_DOUBLE"] }
PAPI_L1_DCM = { papi = "NOT_DERIVED", natives = ["L1D:REPLACEMENT"] }
PAPI_FP_OPS = { papi = "DERIVED_PS", natives = ["BR_INST_RETIRED:COND", "FP_ARITH:SCALAR_DOUBLE"] }
"#;

/// Oracle: PAPI 7.0's arithmetic (`handle_derived` in src/papi_internal.c): a postfix
/// formula's factors, a difference's signs, `NOT_DERIVED` counting its first native alone.
#[test]
fn papi_forms_load_as_weighted_sums() {
    let db = Database::from_toml_str("toy.toml", MODEL).expect("loads");
    let model = db.model("toy").unwrap();
    let preset = |p| model.mapping(GeneralizedEvent::Preset(p));
    let dp = preset(Preset::DpOps).expect("PAPI_DP_OPS maps");
    let terms: Vec<(Sign, u32, String)> = dp.terms().collect();
    assert_eq!(
        terms,
        [
            (Sign::Plus, 1, "FP_ARITH:SCALAR_DOUBLE".to_string()),
            (Sign::Plus, 2, "FP_ARITH:128B_PACKED_DOUBLE".to_string()),
        ]
    );
    assert_eq!(
        dp.expression,
        "FP_ARITH:SCALAR_DOUBLE + 2 * FP_ARITH:128B_PACKED_DOUBLE"
    );
    assert_eq!(dp.papi.as_ref().unwrap().derived, "DERIVED_POSTFIX");
    let ucn: Vec<Sign> = preset(Preset::BrUcn)
        .unwrap()
        .terms()
        .map(|t| t.0)
        .collect();
    assert_eq!(ucn, [Sign::Plus, Sign::Minus]);
    // NOT_DERIVED counts its first native; PAPI opens the others without counting them.
    assert_eq!(preset(Preset::BrCn).unwrap().terms().count(), 1);
    // Left out with the reason: a native the model lacks, a rate.
    assert!(preset(Preset::L1Dcm).is_none() && preset(Preset::FpOps).is_none());
    let why = |p| {
        model
            .refused_presets()
            .iter()
            .find(|(e, _)| *e == GeneralizedEvent::Preset(p))
            .map(|(_, why)| why.clone())
            .unwrap_or_default()
    };
    assert!(
        why(Preset::L1Dcm).contains("L1D:REPLACEMENT"),
        "{}",
        why(Preset::L1Dcm)
    );
    assert!(
        why(Preset::FpOps).contains("rate"),
        "{}",
        why(Preset::FpOps)
    );
    // The weighted preset resolves to terms carrying their factors.
    let resolved = db
        .resolve_exact(Some("toy"), "PAPI_DP_OPS", &common::X86)
        .unwrap();
    let shape: Vec<(u32, u8)> = resolved
        .terms
        .iter()
        .map(|t| match &t.request.encoding {
            Encoding::Evtsel(e) => (t.factor, e.umask),
            other => panic!("{other}"),
        })
        .collect();
    assert_eq!(shape, [(1, 0x01), (2, 0x04)]);
    // A later file's hand-written expression replaces a preset, with a factor of its own.
    let text =
        "[[cpu]]\nid = \"toy\"\n[cpu.presets]\nPAPI_L1_DCM = \"3 * FP_ARITH:SCALAR_DOUBLE\"\n";
    let db = db.with_toml_str("mine.toml", text).unwrap();
    let model = db.model("toy").unwrap();
    let dcm = model
        .mapping(GeneralizedEvent::Preset(Preset::L1Dcm))
        .unwrap();
    assert_eq!(dcm.terms().next().unwrap().1, 3);
}

#[test]
fn malformed_papi_forms_are_errors_naming_the_place() {
    for (entry, why) in [
        (
            r#"PAPI_SP_OPS = { papi = "NOT_DERIVED", natives = ["FP_ARITH:SCALAR_DOUBLE"], note = "x" }"#,
            "unknown field",
        ),
        (r#"PAPI_SP_OPS = { papi = "NOT_DERIVED" }"#, "natives"),
        (
            r#"PAPI_SP_OPS = 3"#,
            "an expression string, or a table in PAPI's form",
        ),
        (
            r#"PAPI_L4_TCM = { papi = "NOT_DERIVED", natives = ["FP_ARITH:SCALAR_DOUBLE"] }"#,
            "not a name",
        ),
    ] {
        let text = format!("{MODEL}{entry}\n");
        let error = Database::from_toml_str("bad.toml", &text).unwrap_err();
        let message = error.message();
        assert!(message.starts_with("bad.toml:"), "{message}");
        assert!(message.contains(why), "{entry}: {message}");
    }
    // A generalized (perf) event takes no PAPI form.
    let text = format!(
        "{MODEL}[cpu.generalized]\ninstructions = {{ papi = \"NOT_DERIVED\", natives = [\"FP_ARITH:SCALAR_DOUBLE\"] }}\n"
    );
    let error = Database::from_toml_str("bad.toml", &text).unwrap_err();
    assert!(error.message().contains("an expression string"), "{error}");
}
