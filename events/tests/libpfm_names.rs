//! libpfm4's names for events and unit masks Intel's current tables dropped, and its AnyThread
//! unit masks, resolve on the generated Intel models with libpfm4's encoding; a name Intel's
//! table has keeps Intel's. The values are the installed libpfm4's (4.13,
//! `pfm_get_os_event_encoding` with the PMU forced, bit 20 masked), which `libpfm.rs` and
//! `libpfm_sweep.rs` cross-check for every name with the library itself.

use counterhal_events::Database;
use counterhal_hal::Encoding;

use crate::common;

fn evtsel(database: &Database, cpu: &str, text: &str) -> u64 {
    let resolved = database
        .resolve(Some(cpu), text, &common::X86)
        .unwrap_or_else(|e| panic!("{cpu}::{text}: {e}"));
    match &resolved.terms[0].request.encoding {
        Encoding::Evtsel(e) => e.register_value(),
        other => panic!("{cpu}::{text}: {other:?}"),
    }
}

#[test]
fn libpfm4_names_intel_dropped_resolve_with_libpfm4s_encoding() {
    let database = Database::shipped().expect("the shipped database loads");
    for (cpu, text, libpfm4) in [
        // Events Nehalem's and Westmere's current Intel tables no longer list.
        ("nhm", "BOGUS_BR", 0x0043_01e4),
        ("nhm", "L2_HW_PREFETCH:HIT", 0x0043_01f3),
        ("wsm", "THREAD_ACTIVE", 0x0043_01ec),
        // AnyThread unit masks (bit 21), with invert and a counter mask where libpfm4 sets them.
        ("skx", "UOPS_DISPATCHED:PORT_0_CORE", 0x0063_01a1),
        ("bdw", "UOPS_ISSUED:CORE_STALL_CYCLES", 0x01e3_010e),
    ] {
        assert_eq!(evtsel(&database, cpu, text), libpfm4, "{cpu}::{text}");
    }
}

#[test]
fn a_name_intels_table_has_keeps_intels_encoding() {
    let database = Database::shipped().expect("the shipped database loads");
    // Intel's table gives unit mask 0x04; libpfm4 0x00. Intel's spelling means Intel's,
    // libpfm4's libpfm4's, and the difference is declared (tests/data/libpfm-declared.toml).
    assert_eq!(
        evtsel(&database, "nhm", "BR_INST_RETIRED.ALL_BRANCHES"),
        0x0043_04c4
    );
    assert_eq!(
        evtsel(&database, "nhm", "BR_INST_RETIRED:ALL_BRANCHES"),
        0x0043_00c4
    );
    let note = database
        .libpfm4_difference("nhm", "BR_INST_RETIRED.ALL_BRANCHES")
        .expect("a declared difference");
    assert!(
        note.contains("0x4300c4") && note.contains("nhm::"),
        "{note}"
    );
}
