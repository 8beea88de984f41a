//! libpfm4's names a model's own table lacks (`gen/src/dropped.rs`), on a libpfm4-shaped
//! fixture of the project's own (`tests/data/libpfm4-dropped`): a name the model does not
//! resolve is added with libpfm4's encoding, a name it has (by its own table or an alias)
//! is not, and every name that resolved before resolves to the same encoding after.

use std::path::Path;

use counterhal_events::Database;
use counterhal_gen::dropped::add_libpfm4_dropped;
use counterhal_gen::model::{GenEvent, GenModel, GenUnitMask, Provenance};
use counterhal_gen::write::model_toml;
use counterhal_hal::{Accepts, Domain, Encoding, Family};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

const X86: Accepts = Accepts::new(&[Family::Evtsel], Domain::ALL, Domain::DEFAULT);

fn mask(name: &str, code: u8, cmask: u8, inv: bool) -> GenUnitMask {
    GenUnitMask {
        name: name.to_string(),
        code,
        cmask,
        inv,
        ..GenUnitMask::default()
    }
}

/// An Intel model as perfmon would give it: `UOPS_ISSUED` with two unit masks (one of them,
/// `STALL_CYCLES`, encoded otherwise than libpfm4 does), and an alias `OLD_CYCLES`.
fn intel_model() -> GenModel {
    GenModel {
        id: "nhm".to_string(),
        description: "A test core".to_string(),
        encoder: "intel-arch",
        general_counters: 4,
        counter_width: 48,
        source: Provenance {
            source: "test".to_string(),
            commit: COMMIT.to_string(),
            file: "test.json".to_string(),
        },
        events: vec![
            GenEvent {
                name: "CPU_CLK_UNHALTED".to_string(),
                code: 0x3c,
                umasks: vec![mask("THREAD_P", 0x00, 0, false)],
                ..GenEvent::default()
            },
            GenEvent {
                name: "UOPS_ISSUED".to_string(),
                code: 0x0e,
                umasks: vec![
                    mask("ANY", 0x01, 0, false),
                    mask("STALL_CYCLES", 0x01, 1, true),
                ],
                ..GenEvent::default()
            },
        ],
        aliases: vec![(
            "OLD_CYCLES".to_string(),
            "CPU_CLK_UNHALTED.THREAD_P".to_string(),
        )],
        ..GenModel::default()
    }
}

/// The EVTSEL without EN, USR and OS (bits 22, 16, 17), and the general counters.
fn encode(db: &Database, text: &str) -> Option<(u64, Vec<u32>)> {
    let resolved = db.resolve_model_data("nhm", text, &X86).ok()?;
    match &resolved.terms[0].request.encoding {
        Encoding::Evtsel(e) => Some((
            e.register_value() & !0x0043_0000,
            (0..32).filter(|&i| e.counters.contains(i)).collect(),
        )),
        other => panic!("{text}: {other:?}"),
    }
}

const NAMES: &[&str] = &[
    "CPU_CLK_UNHALTED:THREAD_P",
    "UOPS_ISSUED:ANY",
    "UOPS_ISSUED:STALL_CYCLES",
    "OLD_CYCLES",
    "UOPS_ISSUED",
    "UOPS_ISSUED:CORE_STALL_CYCLES",
    "UOPS_ISSUED:FUSED",
    "BOGUS_BR",
    "L2_HW_PREFETCH",
    "L2_HW_PREFETCH:HIT",
    "L2_HW_PREFETCH:ALLOC",
    "L2_HW_PREFETCH:ALLOC_ANY",
];

#[test]
fn libpfm4_names_the_model_lacks_are_added_and_its_own_keep_their_encodings() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/libpfm4-dropped");
    let before = model_toml(&intel_model());
    let mut models = vec![intel_model()];
    add_libpfm4_dropped(&mut models, &root, COMMIT).unwrap();
    let after = model_toml(&models[0]);
    let mut again = vec![intel_model()];
    add_libpfm4_dropped(&mut again, &root, COMMIT).unwrap();
    assert_eq!(after, model_toml(&again[0]), "deterministic");
    assert!(
        after.contains(&format!(
            "# libpfm4 names: 2 events with 3 unit masks, 2 unit masks of this table's events, 1 defaults, 0 events combining unit masks: {}, commit {COMMIT}, file lib/events/intel_nhm_events.h",
            counterhal_gen::libpfm4::SOURCE
        )),
        "{after}"
    );
    let before = Database::from_toml_str("before.toml", &before).unwrap();
    let after = Database::from_toml_str("after.toml", &after).unwrap();
    // Every name that resolved before resolves to the same encoding and counters.
    for name in NAMES {
        if let Some(old) = encode(&before, name) {
            assert_eq!(encode(&after, name), Some(old), "{name}");
        }
    }
    let all = vec![0, 1, 2, 3];
    let expect = [
        // Intel's names and the alias: Intel's encodings (STALL_CYCLES is c=1, not libpfm4's 2).
        ("CPU_CLK_UNHALTED:THREAD_P", Some((0x3c, all.clone()))),
        ("UOPS_ISSUED:STALL_CYCLES", Some((0x0180_010e, all.clone()))),
        ("OLD_CYCLES", Some((0x3c, all.clone()))),
        // Intel's event named alone: libpfm4's default unit mask (ANY).
        ("UOPS_ISSUED", Some((0x010e, all.clone()))),
        // Unit masks of Intel's event: AnyThread, invert, counter mask and `.ucntmsk`.
        (
            "UOPS_ISSUED:CORE_STALL_CYCLES",
            Some((0x01a0_010e, vec![0, 1])),
        ),
        ("UOPS_ISSUED:FUSED", Some((0x020e, all.clone()))),
        // Events Intel's table lacks: the unit-mask byte of `.code`, the default, `.cntmsk`.
        ("BOGUS_BR", Some((0x01e4, all))),
        ("L2_HW_PREFETCH", Some((0x01f3, vec![0, 1]))),
        ("L2_HW_PREFETCH:HIT", Some((0x01f3, vec![0, 1]))),
        ("L2_HW_PREFETCH:ALLOC", Some((0x02f3, vec![0, 1]))),
        ("L2_HW_PREFETCH:ALLOC_ANY", Some((0x0020_02f3, vec![0, 1]))),
    ];
    for (name, want) in &expect {
        assert_eq!(&encode(&after, name), want, "{name}");
    }
    // Not resolved before the libpfm4 names and defaults were added.
    for (name, _) in &expect[3..] {
        assert_eq!(encode(&before, name), None, "{name}");
    }
}
