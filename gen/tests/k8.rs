//! K8's revisions on a fixture of our own (tests/data/libpfm4): one model per run of revisions
//! with the same table, each with the events and unit masks its revision flags keep, the
//! revisions' names as aliases, and detection by model and stepping.

use std::path::{Path, PathBuf};

use counterhal_gen::k8::k8_models;
use counterhal_gen::write::model_toml;

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/libpfm4")
}

#[test]
fn revisions_with_the_same_table_share_a_model() {
    let models = k8_models(&fixture(), COMMIT).unwrap();
    let ids: Vec<(&str, Vec<&str>)> = models
        .iter()
        .map(|m| {
            let aliases = m.model_aliases.iter().map(String::as_str).collect();
            (m.id.as_str(), aliases)
        })
        .collect();
    // The fixture's flags tell B and C apart from D, and F from E; nothing tells D from E.
    assert_eq!(
        ids,
        [
            ("amd64_k8_revc", vec!["amd64_k8_revb"]),
            ("amd64_k8_reve", vec!["amd64_k8_revd"]),
            ("amd64_k8_revg", vec!["amd64_k8_revf", "k8"]),
        ]
    );
    let texts: Vec<String> = models.iter().map(model_toml).collect();
    let again: Vec<String> = k8_models(&fixture(), COMMIT)
        .unwrap()
        .iter()
        .map(model_toml)
        .collect();
    assert_eq!(texts, again, "deterministic");
    assert!(texts.iter().all(|t| !t.contains("fixture text")));
    assert!(texts[0].contains("aliases = [\"amd64_k8_revb\"]"));
    assert!(
        texts[0].contains("{ vendor = \"amd\", family = 0xf, model = 0x5, stepping = [0, 1] }")
    );
    assert!(texts[2].contains("model = \"0xc0-0xcf\""));
}

#[test]
fn each_revision_resolves_its_own_unit_masks_and_is_detected() {
    let text: String = k8_models(&fixture(), COMMIT)
        .unwrap()
        .iter()
        .map(model_toml)
        .collect::<Vec<_>>()
        .join("\n");
    let db = counterhal_events::Database::from_toml_str("k8.toml", &text).unwrap();
    let x86 = counterhal_hal::Accepts::new(
        &[counterhal_hal::Family::Evtsel],
        counterhal_hal::Domain::USER,
        counterhal_hal::Domain::USER,
    );
    let encode = |model: &str, event: &str| {
        let resolved = db.resolve_model_data(model, event, &x86).ok()?;
        match &resolved.terms[0].request.encoding {
            counterhal_hal::Encoding::Evtsel(evtsel) => Some(evtsel.register_value()),
            _ => None,
        }
    };
    // Until revision C, `ALL` is the one bit; from D, two.
    assert_eq!(encode("amd64_k8_revb", "PROBE"), Some(0x41_01ec));
    assert_eq!(encode("amd64_k8_revd", "PROBE"), Some(0x41_03ec));
    assert_eq!(encode("amd64_k8_revc", "PROBE:LATER"), None);
    assert_eq!(encode("amd64_k8_reve", "PROBE:LATER"), Some(0x41_02ec));
    assert_eq!(encode("amd64_k8_reve", "NEWER"), None);
    assert_eq!(encode("k8", "NEWER"), Some(0x41_00e5));
    for (signature, model) in [
        ("AuthenticAMD-15-5-1", "amd64_k8_revc"),
        ("AuthenticAMD-15-5-2", "amd64_k8_revc"),
        ("AuthenticAMD-15-A0-0", "amd64_k8_revc"),
        ("AuthenticAMD-15-10-0", "amd64_k8_reve"),
        ("AuthenticAMD-15-3F-0", "amd64_k8_reve"),
        ("AuthenticAMD-15-C3-0", "amd64_k8_revg"),
        ("AuthenticAMD-15-6B-1", "amd64_k8_revg"),
    ] {
        assert_eq!(
            db.model(signature).map(|m| m.id.as_str()),
            Some(model),
            "{signature}"
        );
    }
}

#[test]
fn a_revision_without_a_detection_rule_is_an_error() {
    let dir = std::env::temp_dir().join(format!("counterhal-gen-{}-k8", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("lib/events")).unwrap();
    let copy = |file: &str, edit: &dyn Fn(String) -> String| {
        let text = std::fs::read_to_string(fixture().join(file)).unwrap();
        std::fs::write(dir.join(file), edit(text)).unwrap();
    };
    copy("lib/events/amd64_events_k8.h", &|t| t);
    copy("lib/pfmlib_amd64_priv.h", &|t| {
        t.replace("AMD64_K8_REV_G,", "AMD64_K8_REV_G,\n\tAMD64_K8_REV_H,")
    });
    copy("lib/pfmlib_amd64_k8.c", &|t| {
        t + "DEFINE_K8_REV(RevH, revh, AMD64_K8_REV_H, PFM_PMU_AMD64_K8_REVH);\n"
    });
    let error = k8_models(&dir, COMMIT).unwrap_err().to_string();
    assert!(error.contains("amd64_k8_revh"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}
