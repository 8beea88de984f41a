//! libpfm4's tables are parsed only when a string needs one: a program naming perf's events,
//! presets and raw codes parses none (the start-up cost `counterhal stat -e task-clock` pays
//! is tracked), and a libpfm4 string parses its PMU's table alone. The tables parsed are the
//! process's, so the check runs in a child process of its own (this test alone), where
//! nothing else parses a table first. Oracle: the count of parsed tables the crate keeps.

use counterhal_events::Database;

use crate::common;

#[test]
fn only_a_libpfm4_string_parses_a_libpfm4_table() {
    const CHECK: &str = "lazy";
    if common::child::check().is_none() {
        common::child::run(
            module_path!(),
            "only_a_libpfm4_string_parses_a_libpfm4_table",
            CHECK,
            |_| {},
        );
        return;
    }
    let db = Database::shipped().expect("the shipped database loads");
    for text in [
        "task-clock",
        "cycles:u",
        "instructions",
        "PAPI_TOT_INS",
        "r00c0",
        "cpu/event=0x3c/",
        "page-faults",
    ] {
        let _ = db.resolve_exact(Some("skl"), text, &common::X86);
    }
    assert_eq!(Database::libpfm4_tables_parsed(), 0);
    db.resolve_exact(Some("skl"), "INST_RETIRED:ANY_P:u", &common::X86)
        .expect("libpfm4's string resolves");
    assert_eq!(Database::libpfm4_tables_parsed(), 1);
    common::child::done(CHECK);
}
