//! `COUNTERHAL_EVENTS`: the file it names is loaded by [`Database::load`]. The variable is
//! set only in a child process (this test binary, re-executed for one test), so the test
//! process's own environment is never changed.

use std::path::PathBuf;

use counterhal_events::{Database, EVENTS_ENV};
use counterhal_hal::{Encoding, ErrorKind};

use crate::common;

const GOOD: &str = r#"
[[cpu]]
id = "envcore"
description = "A model only the environment file has"
encoder = "amd64"
match = [{ vendor = "amd", family = 0x7f }]
pmu = { general_counters = 2, counter_width = 48 }
event = [{ name = "ENV_CYCLES", code = 0x76, desc = "Cycles" }]

[[cpu]]
id = "skl"
event = [{ name = "ENV_ADDED", code = 0x12, umask = 0x34, desc = "An event added to skl" }]
"#;

const BAD: &str = "[[cpu]]\nid = \"envbad\"\nencoder = \"z80\"\n";

fn child_check(mode: &str) {
    match mode {
        "good" => {
            let database = Database::load(None).expect("the environment file loads");
            let event = database
                .resolve(Some("envcore"), "ENV_CYCLES:u", &common::X86)
                .expect("the environment file's model resolves");
            let Encoding::Evtsel(evtsel) = &event.terms[0].request.encoding else {
                panic!("not an event select");
            };
            assert_eq!(evtsel.register_value(), 0x41_0076);
            let added = database
                .resolve(Some("skl"), "ENV_ADDED", &common::X86)
                .expect("the override added an event to skl");
            let Encoding::Evtsel(evtsel) = &added.terms[0].request.encoding else {
                panic!("not an event select");
            };
            assert_eq!(evtsel.register_value(), 0x43_3412);
            // The shipped data is still there.
            database
                .resolve(Some("skl"), "INST_RETIRED.ANY_P", &common::X86)
                .expect("shipped skl events remain");
        }
        "bad" => {
            let error = Database::load(None).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidInput);
            let text = error.to_string();
            assert!(text.contains(EVENTS_ENV), "{text}");
            assert!(text.contains(":3:"), "no line number: {text}");
            assert!(text.contains("z80"), "{text}");
        }
        "empty" => {
            let database = Database::load(None).expect("an empty variable is ignored");
            assert!(database.model("envcore").is_none());
        }
        other => panic!("unknown child mode {other}"),
    }
    common::child::done(mode);
}

fn run_child(mode: &str, file: Option<&PathBuf>) {
    common::child::run(
        module_path!(),
        "events_file_from_the_environment",
        mode,
        |command| {
            command.env(EVENTS_ENV, file.map(|f| f.as_os_str()).unwrap_or_default());
        },
    );
}

#[test]
fn events_file_from_the_environment() {
    if let Some(mode) = common::child::check() {
        child_check(&mode);
        return;
    }
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let good = dir.join("good.toml");
    let bad = dir.join("bad.toml");
    std::fs::write(&good, GOOD).expect("write good.toml");
    std::fs::write(&bad, BAD).expect("write bad.toml");
    run_child("good", Some(&good));
    run_child("bad", Some(&bad));
    run_child("empty", None);
    // The parent's environment is untouched and has no such model.
    let here = Database::load(None);
    if std::env::var_os(EVENTS_ENV).is_none() {
        assert!(here.expect("loads").model("envcore").is_none());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
