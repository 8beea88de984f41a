//! Aliases on the generator's fixtures (tests/data): libpfm4's spellings of the perfmon
//! fixture's encodings, and perf's names of the Zen 5 fixture's; the same snapshots give the
//! same bytes, and each alias resolves in the database to its event's encoding.

use std::path::{Path, PathBuf};

use counterhal_events::Database;
use counterhal_gen::write::model_toml;
use counterhal_gen::{aliases, libpfm4, perfmon};
use counterhal_hal::{Accepts, Domain, Encoding, Family};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

const X86: Accepts = Accepts::new(&[Family::Evtsel], Domain::ALL, Domain::DEFAULT);

fn data(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(dir)
}

/// The perfmon fixture's model with libpfm4's spellings as aliases, as TOML.
fn perfmon_with_aliases() -> String {
    let mut models = perfmon::models(&data("perfmon"), COMMIT).unwrap();
    aliases::add_libpfm4_aliases(&mut models, &data("libpfm4"), COMMIT).unwrap();
    model_toml(&models[0])
}

fn evtsel(db: &Database, cpu: &str, text: &str) -> u64 {
    let resolved = db
        .resolve_model_data(cpu, text, &X86)
        .unwrap_or_else(|e| panic!("{cpu} {text}: {e}"));
    match resolved.terms[0].request.encoding {
        Encoding::Evtsel(e) => e.register_value(),
        ref other => panic!("{text}: {other:?}"),
    }
}

#[test]
fn libpfm4_spellings_become_aliases_by_equal_encodings() {
    let text = perfmon_with_aliases();
    assert_eq!(text, perfmon_with_aliases(), "deterministic");
    assert!(
        text.contains(&format!(
            "# aliases: {}, commit {COMMIT}, file lib/events/intel_skl_events.h",
            libpfm4::SOURCE
        )),
        "{text}"
    );
    let table = &text[text.find("[cpu.event_aliases]\n").expect("an alias table")..];
    let lines: Vec<&str> = table.lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            // CODE_OVERRIDE: the unit mask's own event code 0x00, Intel's fixed pseudo-event.
            "\"CPU_CLK_UNHALTED_EXTRA:REF_XCLK\" = \"CPU_CLK_UNHALTED.REF_TSC\"",
            "\"INSTRUCTIONS_RETIRED\" = \"INST_RETIRED.ANY_P\"",
            "\"MEM_LOAD_UOPS_RETIRED:L1_HIT\" = \"MEM_LOAD_RETIRED.L1_HIT\"",
            // Counter mask and invert take part in the encoding.
            "\"UOPS_ISSUED:STALLS\" = \"UOPS_ISSUED.STALL_CYCLES\"",
        ],
        "not aliased: names the table has (UOPS_ISSUED:ANY), another model's unit mask \
         (L2_HIT, skx only), AnyThread (CORE_STALLS, and CORE_STALLS_TOO through its `t=1` \
         equivalent) and offcore (OFFCORE_RESPONSE_0)"
    );
    let db = Database::from_toml_str("skl.toml", &text).unwrap();
    for (alias, canonical) in [
        ("INSTRUCTIONS_RETIRED", "INST_RETIRED.ANY_P"),
        (
            "MEM_LOAD_UOPS_RETIRED:L1_HIT:u",
            "MEM_LOAD_RETIRED.L1_HIT:u",
        ),
        ("uops_issued.stalls", "UOPS_ISSUED.STALL_CYCLES"),
    ] {
        assert_eq!(
            evtsel(&db, "skl", alias),
            evtsel(&db, "skl", canonical),
            "{alias}"
        );
    }
}

#[test]
fn perf_names_become_aliases_of_the_zen_tables() {
    let generate = || {
        let zen5 = libpfm4::MODELS
            .iter()
            .find(|t| t.id == "amd64_fam1ah_zen5")
            .unwrap();
        let mut models = vec![libpfm4::model(&data("libpfm4"), COMMIT, zen5).unwrap()];
        aliases::add_perf_aliases(&mut models, &data("perf"), "fixture-1.0").unwrap();
        model_toml(&models[0])
    };
    let text = generate();
    assert_eq!(text, generate(), "deterministic");
    assert!(
        text.contains("commit fixture-1.0, file tools/perf/pmu-events/arch/x86/amdzen5"),
        "{text}"
    );
    // The L3 entry (a `Unit`), the metric and the name with no equal encoding are left out.
    assert!(
        text.ends_with("[cpu.event_aliases]\n\"FIXTURE_FLOPS.ANY\" = \"FLOPS.ANY\"\n"),
        "{text}"
    );
    let db = Database::from_toml_str("zen5.toml", &text).unwrap();
    assert_eq!(
        evtsel(&db, "amd64_fam1ah_zen5", "fixture_flops.any:u"),
        evtsel(&db, "amd64_fam1ah_zen5", "FLOPS:ANY:u")
    );
}

#[test]
fn a_missing_table_or_directory_is_named() {
    let mut models = perfmon::models(&data("perfmon"), COMMIT).unwrap();
    let error =
        aliases::add_libpfm4_aliases(&mut models, Path::new("/nonexistent"), COMMIT).unwrap_err();
    assert!(error.to_string().contains("intel_skl_events.h"), "{error}");
    let mut zen = vec![counterhal_gen::model::GenModel {
        id: "amd64_fam19h_zen3".into(),
        ..Default::default()
    }];
    let error = aliases::add_perf_aliases(&mut zen, Path::new("/nonexistent"), "x").unwrap_err();
    assert!(error.to_string().contains("amdzen3"), "{error}");
}
