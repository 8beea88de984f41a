//! Arbitrary event strings and arbitrary (mutated) TOML never panic, and loader errors name
//! file:line:column and the key.

use counterhal_events::{Database, shipped_files};
use counterhal_hal::{Encoding, ErrorKind};

use counterhal_conformance::prop::Gen;

use crate::common;

const PIECES: &[&str] = &[
    "INST_RETIRED",
    "L2_RQSTS",
    ":",
    "::",
    ".",
    "=",
    "/",
    ",",
    "u",
    "k",
    "h",
    "e",
    "i",
    "c=",
    "c=300",
    "0x",
    "ff",
    "MODIFIED",
    "ANY_INITIATOR",
    "cycles",
    "PAPI_",
    "TOT_INS",
    "r",
    "cpu/",
    "event=0x3c",
    "umask=",
    "-",
    " + ",
    "skl::",
    "p6::",
    "\u{e9}",
    "\0",
    "ANY_P",
    "999999999999999999999",
];

/// Strings built from the grammar's pieces, 5,000 a run: a quick check in `cargo test`; the
/// coverage-guided fuzz target `event_string` (fuzz/, scripts/fuzz-targets, 15 s in CI) feeds
/// the same call arbitrary bytes for longer.
#[test]
fn arbitrary_event_strings_never_panic() {
    let database = Database::shipped().unwrap();
    let cpus: Vec<Option<String>> = std::iter::once(None)
        .chain(database.models().map(|m| Some(m.id.clone())))
        .collect();
    let mut rng = Gen::new(0x9e37_79b9_7f4a_7c15);
    let mut resolved = 0;
    for _ in 0..5_000 {
        let mut text = String::new();
        for _ in 0..rng.index(6) + 1 {
            if rng.index(4) == 0 {
                text.push(
                    char::from_u32(u32::try_from(rng.index(0x250)).unwrap_or(0)).unwrap_or('?'),
                );
            } else {
                text.push_str(PIECES[rng.index(PIECES.len())]);
            }
        }
        let cpu = &cpus[rng.index(cpus.len())];
        let accepts = [&common::PERF, &common::X86][rng.index(2)];
        if let Ok(event) = database.resolve(cpu.as_deref(), &text, accepts) {
            assert!(!event.terms.is_empty(), "{text}");
            resolved += 1;
        }
        let _ = counterhal_events::parse_pmu_terms(&text);
    }
    println!("arbitrary strings: {resolved} of 5000 resolved, none panicked");
}

/// A shipped file's text, from the source tree (the build compiled it in, loaded).
fn shipped_text(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn arbitrary_toml_never_panics() {
    let mut rng = Gen::new(0xdead_beef_cafe_f00d);
    let mut accepted = 0;
    for round in 0..600 {
        let text = shipped_text(shipped_files()[round % shipped_files().len()]);
        let mut bytes: Vec<u8> = text.as_bytes().to_vec();
        for _ in 0..rng.index(4) + 1 {
            if bytes.is_empty() {
                break;
            }
            let at = rng.index(bytes.len());
            match rng.index(4) {
                0 => {
                    bytes.remove(at);
                }
                1 => bytes.insert(at, b"=[]{}\"0x#\n,.-_Aa9"[rng.index(17)]),
                2 => bytes.truncate(at),
                _ => {
                    let to = rng.index(bytes.len());
                    bytes.swap(at, to);
                }
            }
        }
        let mutated = String::from_utf8_lossy(&bytes);
        match Database::from_toml_str("mutated.toml", &mutated) {
            Ok(_) => accepted += 1,
            Err(error) => {
                assert_eq!(error.kind(), ErrorKind::InvalidInput);
                assert!(error.message().starts_with("mutated.toml:"), "{error}");
                assert!(error.message().contains("key `"), "{error}");
            }
        }
        // As a user layer over the shipped data, too.
        let _ = Database::shipped()
            .unwrap()
            .with_toml_str("layer.toml", &mutated);
    }
    println!("mutated TOML: {accepted} of 600 still valid, none panicked");
}

fn load_error(text: &str) -> String {
    Database::from_toml_str("user.toml", text)
        .unwrap_err()
        .message()
        .to_string()
}

const HEAD: &str =
    "[[cpu]]\nid = \"x\"\nencoder = \"p6\"\npmu = { general_counters = 2, counter_width = 40 }\n";

#[test]
fn loader_errors_name_file_line_column_and_key() {
    let cases: &[(String, &str)] = &[
        (format!("{HEAD}event = [{{ name = \"A\", code = 1 }}, {{ name = \"a\", code = 2 }}]\n"), "user.toml:5:"),
        (format!("{HEAD}event = [{{ name = \"A\", code = 0x100 }}]\n"), "key `code`"),
        (format!("{HEAD}event = [{{ name = \"A\", code = 1, umasks = [{{ name = \"XX\", code = 0x100 }}] }}]\n"), "key `code`"),
        (format!("{HEAD}event = [{{ name = \"A\", code = 1, counters = [2] }}]\n"), "unknown counter 2"),
        (format!("{HEAD}event = [{{ name = \"A\", code = 1, umasks = [{{ name = \"XX\", code = 1, cmask = 256 }}] }}]\n"), "key `cmask`"),
        (format!("{HEAD}presets = {{ PAPI_TOT_INS = \"NOPE\" }}\n"), "no native event `NOPE`"),
        (format!("{HEAD}event = [{{ name = \"A\", code = 1 }}]\npresets = {{ PAPI_TOT_INS = \"A:c=300\" }}\n"), "0..=255"),
        ("[[cpu]]\nid = \"x\"\nencoder = \"p7\"\npmu = { general_counters = 2, counter_width = 40 }\n".to_string(), "user.toml:3:11: key `encoder`: unknown encoder `p7`"),
        (format!("{HEAD}{HEAD}"), "user.toml:6:6: key `id`: model id `x` is used twice"),
        (format!("{HEAD}bogus = 1\n"), "user.toml:5:"),
        (format!("{HEAD}event = [{{ name = \"A\", code = 1, flags = [\"weird\"] }}]\n"), "key `flags`"),
        ("[[cpu]]\nid = \"y\"\nencoder = \"p5\"\npmu = { general_counters = 2, counter_width = 40 }\nevent = [{ name = \"A\", code = 0x40 }]\n".to_string(), "out of range for encoder p5"),
        ("[[cpu]]\nid = \"z\"\nencoder = \"amd64\"\npmu = { general_counters = 4, counter_width = 48 }\nevent = [{ name = \"A\", code = 0x1000 }]\n".to_string(), "out of range for encoder amd64"),
    ];
    for (text, expected) in cases {
        let message = load_error(text);
        assert!(
            message.contains(expected),
            "`{message}` should contain `{expected}`"
        );
        assert!(message.starts_with("user.toml:"), "{message}");
        let location: Vec<&str> = message.splitn(4, ':').collect();
        assert!(
            location[1].parse::<usize>().is_ok() && location[2].parse::<usize>().is_ok(),
            "{message}"
        );
    }
    let duplicate = load_error(&cases[0].0);
    assert!(
        duplicate.contains("duplicate event name `a`"),
        "{duplicate}"
    );
}

#[test]
fn user_layer_overrides_and_adds() {
    let layer = "[[cpu]]\nid = \"p6\"\nevent = [{ name = \"INST_RETIRED\", code = 0xc0, counters = [1], desc = \"mine\" }, { name = \"MY_EVENT\", code = 0x99 }]\n\n\
                 [[cpu]]\nid = \"mycpu\"\ndescription = \"test\"\nencoder = \"amd64\"\nmatch = [{ vendor = \"amd\", family = 0x42, model = \"1-3\" }]\n\
                 pmu = { general_counters = 4, counter_width = 48 }\nevent = [{ name = \"THING\", code = 0x1c0 }]\n";
    let database = Database::shipped()
        .unwrap()
        .with_toml_str("layer.toml", layer)
        .unwrap();
    let p6 = database.model("p6").unwrap();
    assert_eq!(p6.event("INST_RETIRED").unwrap().description, "mine");
    assert!(p6.event("MY_EVENT").is_some());
    assert!(p6.event("L2_RQSTS").is_some(), "shipped events stay");
    let resolved = database
        .resolve(Some("mycpu"), "THING:u", &common::X86)
        .unwrap();
    let Encoding::Evtsel(evtsel) = resolved.terms[0].request.encoding else {
        panic!("{resolved:?}");
    };
    assert_eq!(evtsel.register_value(), 0x1_0041_00c0);
    assert_eq!(evtsel.counters, counterhal_hal::CounterSet::first(4));
    assert_eq!(evtsel.fixed, None);
    let cpu = counterhal_events::CpuIdentity {
        vendor: counterhal_events::Vendor::Amd,
        family: 0x42,
        model: 2,
        stepping: 0,
    };
    assert_eq!(database.detect(&cpu).map(|m| m.id.as_str()), Some("mycpu"));
    // Breaking a shipped preset from a layer is reported at the layer's model id.
    let broken = "[[cpu]]\nid = \"p6\"\nencoder = \"p5\"\n";
    let error = Database::shipped()
        .unwrap()
        .with_toml_str("broken.toml", broken)
        .unwrap_err();
    assert!(error.message().starts_with("broken.toml:3:"), "{error}");
}

#[test]
fn very_long_names_fail_quickly_without_suggestions() {
    let database = Database::shipped().expect("shipped database loads");
    // Baseline: a normal unknown name, which is compared with every known name.
    let started = std::time::Instant::now();
    let normal = database
        .resolve_exact(Some("skl"), "INST_RETIRD", &common::X86)
        .unwrap_err();
    let baseline = started.elapsed();
    assert!(!normal.suggestions().is_empty(), "{normal}");
    for (len, cpu) in [(200, Some("skl")), (1 << 20, Some("skl")), (1 << 20, None)] {
        let name = "X".repeat(len);
        let started = std::time::Instant::now();
        let error = database
            .resolve_exact(cpu, &name, &common::X86)
            .unwrap_err();
        let took = started.elapsed();
        assert_eq!(error.kind(), counterhal_events::EventErrorKind::NotFound);
        assert!(
            error.suggestions().is_empty(),
            "a {len}-character name got suggestions"
        );
        // Printed, not asserted: the time depends on the machine; what is asserted is that the
        // quadratic suggestion search is skipped (the empty list above).
        println!("{len}-character name: {took:?} (a normal unknown name: {baseline:?})");
    }
    // The 1 MB name also as a PMU prefix and as a unit mask.
    let long = "Y".repeat(1 << 20);
    let error = database
        .resolve_exact(None, &format!("{long}::cycles"), &common::PERF)
        .unwrap_err();
    assert!(error.suggestions().is_empty());
    let error = database
        .resolve_exact(Some("skl"), &format!("INST_RETIRED:{long}"), &common::X86)
        .unwrap_err();
    assert!(error.suggestions().is_empty());
}
