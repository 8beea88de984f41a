//! The generator on a small fixture of our own (tests/data/perfmon): the same snapshot gives
//! the same bytes, whatever the order of its entries; the output is exactly the expected file
//! and loads in the event database; bad snapshots give errors naming what is wrong.

use std::path::{Path, PathBuf};

use counterhal_gen::perfmon;
use counterhal_gen::write::{GENERATED_MARK, model_toml};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perfmon")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("counterhal-gen-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("TST/events")).unwrap();
    dir
}

fn generate(root: &Path) -> String {
    let models = perfmon::models(root, COMMIT).unwrap();
    assert_eq!(models.len(), 1, "one core file in the fixture");
    model_toml(&models[0])
}

#[test]
fn the_fixture_generates_exactly_the_expected_file_twice() {
    let expected = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perfmon-expected.toml"),
    )
    .unwrap();
    let first = generate(&fixture());
    assert_eq!(first, expected);
    assert_eq!(generate(&fixture()), first);
    assert!(first.starts_with(&format!("# {GENERATED_MARK}")));
    assert!(first.contains(COMMIT));
    // Facts only: none of the fixture's description sentences is copied.
    assert!(!first.contains("fixture text"));
}

#[test]
fn the_order_of_upstream_entries_does_not_change_the_output() {
    let dir = scratch("reversed");
    let text = std::fs::read_to_string(fixture().join("TST/events/skylake_core.json")).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["Events"].as_array_mut().unwrap().reverse();
    std::fs::write(
        dir.join("TST/events/skylake_core.json"),
        serde_json::to_string(&json).unwrap(),
    )
    .unwrap();
    let mapfile = std::fs::read_to_string(fixture().join("mapfile.csv")).unwrap();
    let mut lines: Vec<&str> = mapfile.lines().collect();
    lines[1..].reverse();
    std::fs::write(dir.join("mapfile.csv"), lines.join("\n")).unwrap();
    assert_eq!(generate(&dir), generate(&fixture()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_output_loads_and_encodes_as_upstream_says() {
    let text = generate(&fixture());
    // A made-up id, so the fixture does not override the shipped model of the same id.
    let text = text.replace("id = \"skl\"", "id = \"fixture\"");
    let db = counterhal_events::Database::from_toml_str("fixture.toml", &text).unwrap();
    let x86 = counterhal_hal::Accepts::new(
        &[counterhal_hal::Family::Evtsel],
        counterhal_hal::Domain::USER,
        counterhal_hal::Domain::USER,
    );
    for (event, encoding) in [
        (
            "INST_RETIRED.ANY_P",
            "evtsel=0x4100c0 counters=0,1,2,3 fixed=0",
        ),
        ("inst_retired.any", "evtsel=0x410100 fixed=0 only"),
        ("INST_RETIRED:PREC_DIST", "evtsel=0x4101c0 counters=1"),
        (
            "UOPS_ISSUED.STALL_CYCLES",
            "evtsel=0x1c1010e counters=0,1,2,3",
        ),
        ("ASSISTS_ANY", "evtsel=0x4102c1 counters=0,1,2,3"),
    ] {
        let resolved = db.resolve(Some("fixture"), event, &x86).unwrap();
        assert_eq!(
            resolved.terms[0].request.encoding.to_string(),
            encoding,
            "{event}"
        );
    }
}

#[test]
fn bad_snapshots_name_what_is_wrong() {
    let missing = perfmon::models(Path::new("/nonexistent/perfmon"), COMMIT).unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("/nonexistent/perfmon/mapfile.csv"),
        "{missing}"
    );

    let dir = scratch("unknown");
    std::fs::write(
        dir.join("mapfile.csv"),
        "Family-model,Version,Filename,EventType\nGenuineIntel-6-4E,V1,/TST/events/madeup_core.json,core\n",
    )
    .unwrap();
    let unknown = perfmon::models(&dir, COMMIT).unwrap_err();
    assert!(
        unknown
            .to_string()
            .contains("madeup_core.json` has no model id"),
        "{unknown}"
    );

    std::fs::write(
        dir.join("mapfile.csv"),
        "Family-model,Version,Filename,EventType\nGenuineIntel-six-4E,V1,/TST/events/skylake_core.json,core\n",
    )
    .unwrap();
    let bad = perfmon::models(&dir, COMMIT).unwrap_err();
    assert!(bad.to_string().contains("mapfile.csv:2"), "{bad}");

    std::fs::write(
        dir.join("mapfile.csv"),
        "Family-model,Version,Filename,EventType\nGenuineIntel-6-4E,V1,/TST/events/skylake_core.json,core\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("TST/events/skylake_core.json"),
        "{ \"Events\": 3 }",
    )
    .unwrap();
    let malformed = perfmon::models(&dir, COMMIT).unwrap_err();
    assert!(
        malformed.to_string().contains("no `Events` array"),
        "{malformed}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const LIBPFM4_EXPECTED: &str = r#"# generated: do not edit (counterhal-gen; edit the overlay instead)
# source: libpfm4 (https://github.com/wcohen/libpfm4, MIT)
# commit: 0123456789abcdef0123456789abcdef01234567
# file: lib/events/amd64_events_fam1ah_zen5.h
# left out: 1 events with a unit mask above 8 bits

[[cpu]]
id = "amd64_fam1ah_zen5"
description = "AMD family 1Ah Zen 5 core PMU"
encoder = "amd64"
match = [
  { vendor = "amd", family = 0x1a },
]
pmu = { general_counters = 6, counter_width = 48 }

[[cpu.event]]
name = "CYCLES"
code = 0x76

[[cpu.event]]
name = "FLOPS"
code = 0x03
umasks = [
  { name = "ADD_SUB", code = 0x01 },
  { name = "ALL_TYPE", code = 0x00, default = true, group = 1 },
  { name = "ANY", code = 0x0f, default = true, group = 1 },
  { name = "MULT", code = 0x02 },
]

[[cpu.event]]
name = "WIDE"
code = 0x1c0
"#;

#[test]
fn the_libpfm4_fixture_generates_exactly_the_expected_file_and_encodes() {
    use counterhal_gen::libpfm4;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/libpfm4");
    let zen5 = libpfm4::MODELS
        .iter()
        .find(|t| t.id == "amd64_fam1ah_zen5")
        .unwrap();
    let first = model_toml(&libpfm4::model(&root, COMMIT, zen5).unwrap());
    assert_eq!(first, LIBPFM4_EXPECTED);
    assert_eq!(
        model_toml(&libpfm4::model(&root, COMMIT, zen5).unwrap()),
        first
    );
    assert!(!first.contains("fixture text"));
    let text = first.replace("amd64_fam1ah_zen5", "fixture5");
    let db = counterhal_events::Database::from_toml_str("fixture.toml", &text).unwrap();
    let x86 = counterhal_hal::Accepts::new(
        &[counterhal_hal::Family::Evtsel],
        counterhal_hal::Domain::USER,
        counterhal_hal::Domain::USER,
    );
    for (event, value) in [
        // The defaults of both groups.
        ("FLOPS", 0x41_0f03_u64),
        // A mask of group 0 named: group 1 keeps its defaults.
        ("FLOPS:MULT", 0x41_0f03),
        ("WIDE", 0x1_0041_00c0),
    ] {
        let resolved = db.resolve(Some("fixture5"), event, &x86).unwrap();
        let counterhal_hal::Encoding::Evtsel(evtsel) = &resolved.terms[0].request.encoding else {
            panic!("{event}");
        };
        assert_eq!(evtsel.register_value(), value, "{event}");
    }
    // A table the snapshot lacks names the file.
    let fam10h = &libpfm4::MODELS[0];
    let missing = libpfm4::model(&root, COMMIT, fam10h).unwrap_err();
    assert!(
        missing.to_string().contains("amd64_events_fam10h.h"),
        "{missing}"
    );
}

#[test]
fn the_libpfm4_intel_fixture_encodes_as_libpfm4_writes_it() {
    use counterhal_gen::libpfm4;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/libpfm4");
    let table = &libpfm4::INTEL_MODELS[0];
    let model = libpfm4::intel_model(&root, COMMIT, table).unwrap();
    let text = model_toml(&model);
    assert_eq!(
        text,
        model_toml(&libpfm4::intel_model(&root, COMMIT, table).unwrap())
    );
    assert!(text.contains("# left out: 1 fixed-counter events of a PMU without fixed counters"));
    assert!(!text.contains("fixture text"));
    let text = text.replace("id = \"coreduo\"", "id = \"fixtureduo\"");
    let db = counterhal_events::Database::from_toml_str("fixture.toml", &text).unwrap();
    let x86 = counterhal_hal::Accepts::new(
        &[counterhal_hal::Family::Evtsel],
        counterhal_hal::Domain::USER,
        counterhal_hal::Domain::USER,
    );
    for (event, encoding) in [
        ("CYCLES", "evtsel=0x41003c counters=0,1"),
        ("MEM_REF", "evtsel=0x410143 counters=0"),
        ("LINES_IN", "evtsel=0x417024 counters=0,1"),
        ("LINES_IN:BOTH_CORES", "evtsel=0x41f024 counters=0,1"),
        ("TRIP:TRIPS", "evtsel=0x45c03b counters=0,1"),
    ] {
        let resolved = db.resolve(Some("fixtureduo"), event, &x86).unwrap();
        assert_eq!(
            resolved.terms[0].request.encoding.to_string(),
            encoding,
            "{event}"
        );
    }
}

/// The P6-family tables: the P6 event select, libpfm4's one-letter cache-state unit masks
/// renamed (`e` and `i` are modifiers), counters from `.cntmsk`; deterministic.
#[test]
fn the_libpfm4_p6_family_fixture_renames_cache_states() {
    use counterhal_gen::libpfm4;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/libpfm4");
    let models = libpfm4::p6_family_models(&root, COMMIT).unwrap();
    let ids: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["ppro", "pii", "piii", "pm"]);
    let again = libpfm4::p6_family_models(&root, COMMIT).unwrap();
    for (model, again) in models.iter().zip(&again) {
        assert_eq!(model_toml(model), model_toml(again));
    }
    let text = model_toml(&models[2]);
    assert!(text.contains("encoder = \"p6\""), "{text}");
    assert!(
        text.contains("file: lib/events/intel_p6_events.h"),
        "{text}"
    );
    assert!(!text.contains("fixture text"));
    let names: Vec<&str> = models[2].events[1]
        .umasks
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(
        (models[2].events[1].name.as_str(), names),
        (
            "STATE_READS",
            vec!["E_STATE", "I_STATE", "M_STATE", "S_STATE", "WIDE"]
        )
    );
    let text = text.replace("id = \"piii\"", "id = \"fixture3\"");
    let db = counterhal_events::Database::from_toml_str("fixture.toml", &text).unwrap();
    let x86 = counterhal_hal::Accepts::new(
        &[counterhal_hal::Family::Evtsel],
        counterhal_hal::Domain::USER,
        counterhal_hal::Domain::USER,
    );
    for (event, encoding) in [
        ("TICKS", "evtsel=0x410079 counters=0,1"),
        ("ONLY_FIRST", "evtsel=0x4100c1 counters=0"),
        (
            "STATE_READS:M_STATE:E_STATE",
            "evtsel=0x410c29 counters=0,1",
        ),
    ] {
        let resolved = db.resolve(Some("fixture3"), event, &x86).unwrap();
        assert_eq!(
            resolved.terms[0].request.encoding.to_string(),
            encoding,
            "{event}"
        );
    }
}
