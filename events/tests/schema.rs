//! What the generated Intel and AMD tables need from the schema: a unit mask with its own event
//! code or counters (fixed-counter pseudo-events), dotted unit-mask names, raw hex unit masks.

use counterhal_events::{Database, EventErrorKind};
use counterhal_hal::Encoding;

use crate::common;

const MODEL: &str = r#"
[[cpu]]
id = "testcore"
description = "A made-up core for the schema's extensions"
encoder = "intel-arch"
match = [{ vendor = "intel", family = 6, model = 0xfe }]
pmu = { general_counters = 4, counter_width = 48, fixed_counters = 3, fixed_width = 48 }

[[cpu.event]]
name = "INST_RETIRED"
code = 0xc0
flags = ["exclusive"]
umasks = [
  { name = "ANY_P", code = 0x00, default = true },
  { name = "ANY", code = 0x01, event = 0x00, counters = [], fixed = 0 },
  { name = "PREC_DIST", code = 0x01, counters = [0] },
]

[[cpu.event]]
name = "OCR"
code = 0xb7
flags = ["exclusive"]
umasks = [
  { name = "DEMAND_DATA_RD.ANY_RESPONSE", code = 0x01 },
  { name = "DEMAND_RFO.ANY_RESPONSE", code = 0x01 },
]

[[cpu.event]]
name = "L2_LINES_IN"
code = 0x25
flags = ["exclusive"]
umasks = [{ name = "E", code = 0x04 }, { name = "S", code = 0x02 }]

[[cpu.event]]
name = "MEM_LOAD"
code = 0xd1
umasks = [{ name = "L1_HIT", code = 0x01 }, { name = "L2_HIT", code = 0x02 }]
"#;

fn database() -> Database {
    Database::from_toml_str("schema.toml", MODEL).unwrap()
}

/// (EVTSEL value, counters, fixed counter) of `event` on the test core.
fn encode(event: &str) -> Result<(u64, String), EventErrorKind> {
    let resolved = database()
        .resolve_exact(Some("testcore"), event, &common::X86)
        .map_err(|e| e.kind())?;
    let Encoding::Evtsel(evtsel) = &resolved.terms[0].request.encoding else {
        panic!("{event}: not an event select");
    };
    Ok((
        evtsel.register_value(),
        resolved.terms[0].request.encoding.to_string(),
    ))
}

#[test]
fn a_unit_mask_may_select_its_own_code_and_counters() {
    let (value, text) = encode("INST_RETIRED.ANY:u").unwrap();
    assert_eq!(value & 0xffff, 0x0100, "{text}");
    assert!(text.contains("fixed=0"), "{text}");
    let (value, text) = encode("INST_RETIRED:PREC_DIST").unwrap();
    assert_eq!(value & 0xffff, 0x01c0);
    assert!(
        text.contains("counters=0 ") || text.ends_with("counters=0"),
        "{text}"
    );
    let (value, _) = encode("INST_RETIRED").unwrap();
    assert_eq!(value & 0xffff, 0x00c0);
    // A fixed-only mask takes no filters; it never combines with another mask.
    assert_eq!(
        encode("INST_RETIRED.ANY:c=1"),
        Err(EventErrorKind::CombinationNotAllowed)
    );
}

#[test]
fn dotted_unit_mask_names_resolve_in_every_spelling() {
    let upper = encode("OCR.DEMAND_DATA_RD.ANY_RESPONSE").unwrap();
    assert_eq!(upper.0 & 0xffff, 0x01b7);
    assert_eq!(encode("ocr.demand_data_rd.any_response"), Ok(upper.clone()));
    assert_eq!(encode("OCR:DEMAND_DATA_RD.ANY_RESPONSE"), Ok(upper));
    assert_eq!(
        encode("OCR.DEMAND_DATA_RD"),
        Err(EventErrorKind::UnitMaskInvalid)
    );
}

/// Intel's one-letter unit masks (perfmon's Meteor Lake Crestmont table: `L2_LINES_IN.E`,
/// event 0x25, unit mask 0x04, as perf 7.2 opens `l2_lines_in.e`) resolve in the dotted form;
/// after `:` the letter is the modifier (`e`, edge), and the error says how to write the
/// unit mask.
#[test]
fn one_letter_unit_masks_are_written_after_a_dot() {
    assert_eq!(encode("L2_LINES_IN.E").unwrap().0 & 0xffff, 0x0425);
    assert_eq!(encode("l2_lines_in.s").unwrap().0 & 0xffff, 0x0225);
    let edge = encode("L2_LINES_IN.E:e").unwrap().0;
    assert_eq!(edge & 0x4_ffff, 0x4_0425);
    let error = database()
        .resolve_exact(Some("testcore"), "L2_LINES_IN:E", &common::X86)
        .unwrap_err();
    assert_eq!(error.kind(), EventErrorKind::UnitMaskRequired);
    assert!(error.message().contains("`L2_LINES_IN.E`"), "{error}");
}

#[test]
fn raw_hex_unit_masks_are_ored_in() {
    assert_eq!(encode("MEM_LOAD:0x6").unwrap().0 & 0xffff, 0x06d1);
    assert_eq!(encode("MEM_LOAD:L1_HIT:0x4").unwrap().0 & 0xffff, 0x05d1);
    assert_eq!(
        encode("MEM_LOAD:0x100"),
        Err(EventErrorKind::ValueOutOfRange)
    );
}

#[test]
fn bad_overrides_are_refused_with_the_key() {
    for (bad, key) in [
        ("event = 0x100", "event"),
        ("counters = [7]", "counters"),
        ("counters = []", "counters"),
    ] {
        let text = MODEL.replace(
            r#"{ name = "L2_HIT", code = 0x02 }"#,
            &format!(r#"{{ name = "L2_HIT", code = 0x02, {bad} }}"#),
        );
        let error = Database::from_toml_str("bad.toml", &text)
            .err()
            .unwrap_or_else(|| panic!("`{bad}` loaded"));
        assert!(
            error.message().contains(&format!("key `{key}`")),
            "{bad}: {error}"
        );
    }
    let text = MODEL.replace(
        "description = \"A made-up",
        "aliases = [\"ok\", \"not ok\"]\ndescription = \"A made-up",
    );
    let error = Database::from_toml_str("bad.toml", &text).err().unwrap();
    assert!(
        error
            .message()
            .contains("key `aliases`: `not ok` is not a valid model id"),
        "{error}"
    );
    let text = MODEL.replace(
        "description = \"A made-up",
        "aliases = [\"madeup\"]\ndescription = \"A made-up",
    );
    let db = Database::from_toml_str("aliases.toml", &text).unwrap();
    assert_eq!(db.model("MADEUP").map(|m| m.id.as_str()), Some("testcore"));
    let text = MODEL.replace("\"L2_HIT\"", "\"L2_HIT.\"");
    let error = Database::from_toml_str("bad.toml", &text).err().unwrap();
    assert!(
        error.message().contains("not a valid unit-mask name"),
        "{error}"
    );
}

/// A table whose `id` lists several models changes each of those loaded before (an overlay
/// they share); ids of models not loaded are passed over, and a list naming none is refused.
#[test]
fn a_list_of_ids_changes_every_model_loaded_before() {
    let two = MODEL.to_string() + &MODEL.replace("testcore", "othercore");
    let shared = r#"
[[cpu]]
id = ["testcore", "othercore", "notloaded"]
[cpu.presets]
PAPI_TOT_INS = "INST_RETIRED"
"#;
    let database = Database::from_toml_str("two.toml", &two)
        .unwrap()
        .with_toml_str("shared.toml", shared)
        .unwrap();
    for id in ["testcore", "othercore"] {
        let resolved = database.resolve_exact(Some(id), "PAPI_TOT_INS", &common::X86);
        assert!(resolved.is_ok(), "{id}: {resolved:?}");
    }
    assert!(database.model("notloaded").is_none());
    let none = Database::from_toml_str("two.toml", &two)
        .unwrap()
        .with_toml_str("none.toml", "[[cpu]]\nid = [\"nothere\"]\n")
        .unwrap_err();
    assert!(none.to_string().contains("none.toml:2"), "{none}");
    let number = Database::from_toml_str("number.toml", "[[cpu]]\nid = 7\n").unwrap_err();
    assert!(
        number.to_string().contains("a model id is a string"),
        "{number}"
    );
}

/// A shipped overlay whose `id` lists several models changes each of them: every id it lists
/// names a shipped model (a misspelled one would be passed over without a word).
#[test]
fn every_id_a_shipped_overlay_lists_names_a_shipped_model() {
    let db = Database::shipped().unwrap();
    let mut lists = 0;
    for name in counterhal_events::shipped_files() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let doc: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        for cpu in doc
            .get("cpu")
            .and_then(|c| c.as_array())
            .into_iter()
            .flatten()
        {
            let Some(ids) = cpu.get("id").and_then(|i| i.as_array()) else {
                continue;
            };
            lists += 1;
            for id in ids {
                let id = id
                    .as_str()
                    .unwrap_or_else(|| panic!("{name}: id {id} is no string"));
                assert!(
                    db.model(id).is_some(),
                    "{name}: `{id}` names no shipped model"
                );
            }
        }
    }
    assert!(
        lists > 0,
        "no shipped overlay lists several ids (k8.toml does)"
    );
}

/// A unit mask named twice in one event (any case, any space around it) is refused at the
/// second, naming it, in events of few unit masks and of many; names alike but not equal load;
/// a name a modifier would read (`uk`, `Ku`, one letter) is refused.
#[test]
fn a_unit_mask_named_twice_or_like_a_modifier_is_refused() {
    let many: String = (0..40)
        .map(|i| format!("{{ name = \"MASK_{i}\", code = {i} }}, "))
        .collect();
    for (masks, refused) in [
        (
            "{ name = \"L1_HIT\", code = 0x01 }, { name = \" l1_hit\", code = 0x02 }",
            Some("duplicate unit mask `l1_hit` in event `MEM_LOAD`"),
        ),
        (
            &format!("{many}{{ name = \"mask_7 \", code = 0x02 }}"),
            Some("duplicate unit mask `mask_7` in event `MEM_LOAD`"),
        ),
        (
            &format!("{{ name = \"MASK_7\", code = 0x02 }}, {many}"),
            Some("duplicate unit mask `MASK_7` in event `MEM_LOAD`"),
        ),
        (
            &format!(
                "{many}{{ name = \"MASK_7X\", code = 0x02 }}, {{ name = \"MASK.7\", code = 0x02 }}"
            ),
            None,
        ),
        (
            "{ name = \"uk\", code = 0x01 }",
            Some("unit mask `uk` would shadow a modifier"),
        ),
        (
            "{ name = \"Ku\", code = 0x01 }",
            Some("unit mask `Ku` would shadow a modifier"),
        ),
        // A one-letter name loads: it is written after a dot (`MEM_LOAD.U`).
        ("{ name = \"U\", code = 0x01 }", None),
        ("{ name = \"UKA\", code = 0x01 }", None),
    ] {
        let text = MODEL.replace(
            r#"{ name = "L1_HIT", code = 0x01 }, { name = "L2_HIT", code = 0x02 }"#,
            masks,
        );
        let loaded = Database::from_toml_str("masks.toml", &text);
        match (refused, loaded) {
            (None, Ok(db)) => {
                let event = db.model("testcore").unwrap().event("MEM_LOAD").unwrap();
                assert_eq!(event.unit_masks().len(), masks.matches("name =").count());
            }
            (Some(needle), Err(e)) => assert!(e.message().contains(needle), "{masks}: {e}"),
            (None, Err(e)) => panic!("{masks}: {e}"),
            (Some(needle), Ok(_)) => panic!("{masks}: loaded, not refused with {needle}"),
        }
    }
}
