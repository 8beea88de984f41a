//! Names users type (on skl, hsw, icx, tgl, spr, Zen 3 and Zen 4): Intel's `INST_RETIRED.ANY_P`,
//! libpfm4's `INST_RETIRED:ANY_P` with its modifiers, perf's lower-case JSON names (`inst_retired.any_p`, AMD
//! `ls_mab_alloc.load_store_allocations`) and libpfm4's older spellings kept as aliases
//! (`[cpu.event_aliases]`): each resolves to the same encoding, and an alias is no event of
//! its own.

use counterhal_events::{Database, EventErrorKind};
use counterhal_hal::Encoding;

use crate::common;

/// The EVTSEL `text` resolves to on `cpu`, or the error's message.
fn evtsel(db: &Database, cpu: &str, text: &str) -> Result<u64, String> {
    let resolved = db
        .resolve_exact(Some(cpu), text, &common::X86)
        .map_err(|e| e.to_string())?;
    match &resolved.terms[0].request.encoding {
        Encoding::Evtsel(e) => Ok(e.register_value()),
        other => Err(format!("not an EVTSEL: {other}")),
    }
}

/// (model, EVTSEL with user and kernel bits, spellings of it).
const SPELLINGS: &[(&str, u64, &[&str])] = &[
    (
        "skl",
        0x43_00c0,
        &[
            "INST_RETIRED.ANY_P",
            "INST_RETIRED:ANY_P",
            "inst_retired.any_p",
            "skl::INST_RETIRED:ANY_P",
            // libpfm4's names of the architectural event.
            "INSTRUCTION_RETIRED",
            "INSTRUCTIONS_RETIRED",
        ],
    ),
    (
        "skl",
        0x43_01c5,
        &[
            "BR_MISP_RETIRED.CONDITIONAL",
            "br_misp_retired.conditional",
            // libpfm4's name (an alias in the generated table).
            "BR_MISP_RETIRED:COND",
            "br_misp_retired.cond",
        ],
    ),
    (
        "hsw",
        0x43_003c,
        &[
            "CPU_CLK_UNHALTED.THREAD_P",
            "cpu_clk_unhalted.thread_p",
            // libpfm4's bare name of the event Intel's table splits by unit mask.
            "CPU_CLK_UNHALTED",
        ],
    ),
    (
        "icx",
        0x43_00c0,
        &[
            "INST_RETIRED.ANY_P",
            "INST_RETIRED:ANY_P",
            "inst_retired.any_p",
        ],
    ),
    (
        "icx",
        0x43_02d2,
        &[
            "MEM_LOAD_L3_HIT_RETIRED.XSNP_NO_FWD",
            "mem_load_l3_hit_retired.xsnp_no_fwd",
            "MEM_LOAD_L3_HIT_RETIRED:XSNP_HIT",
        ],
    ),
    (
        // Tiger Lake: libpfm4's `icl` table covers it, so its spellings are aliases here too.
        "tgl",
        0x43_00c0,
        &[
            "INST_RETIRED.ANY_P",
            "inst_retired.any_p",
            "INSTRUCTIONS_RETIRED",
        ],
    ),
    (
        "spr",
        0x43_00c0,
        &[
            "INST_RETIRED.ANY_P",
            "INST_RETIRED:ANY_P",
            "inst_retired.any_p",
            "INSTRUCTIONS_RETIRED",
        ],
    ),
    (
        "spr",
        0x0143_09b0,
        &[
            "ARITH.DIV_ACTIVE",
            "arith.div_active",
            "ARITH:DIVIDER_ACTIVE",
        ],
    ),
    (
        "amd64_fam19h_zen3",
        0x43_3f41,
        &[
            // libpfm4's name, its dotted form, perf's name as the kernel JSON spells it.
            "MAB_ALLOCATION_BY_TYPE:LS",
            "MAB_ALLOCATION_BY_TYPE.LS",
            "ls_mab_alloc.load_store_allocations",
            "LS_MAB_ALLOC.LOAD_STORE_ALLOCATIONS",
            "LS_MAB_ALLOC:LOAD_STORE_ALLOCATIONS",
        ],
    ),
    (
        // perf's name of a combination of libpfm4's unit masks.
        "amd64_fam19h_zen3",
        0x43_0729,
        &[
            "all_data_cache_accesses",
            "LS_DISPATCH:LD_DISPATCH:STORE_DISPATCH:LD_ST_DISPATCH",
        ],
    ),
    (
        "amd64_fam19h_zen4",
        0x43_3f41,
        &[
            "MAB_ALLOCATION_BY_TYPE:LS",
            "ls_mab_alloc.load_store_allocations",
        ],
    ),
];

#[test]
fn every_spelling_resolves_to_the_same_encoding() {
    let db = Database::shipped().unwrap();
    for (cpu, want, spellings) in SPELLINGS {
        for text in *spellings {
            assert_eq!(
                evtsel(&db, cpu, text),
                Ok(*want),
                "{cpu} {text}: want {want:#x}"
            );
        }
    }
}

/// libpfm4's modifiers apply to an alias as to the event it stands for.
#[test]
fn modifiers_apply_through_aliases() {
    let db = Database::shipped().unwrap();
    for (cpu, alias, canonical) in [
        (
            "skl",
            "BR_MISP_RETIRED:COND:u:c=2:i",
            "BR_MISP_RETIRED.CONDITIONAL:u:c=2:i",
        ),
        ("skl", "INST_RETIRED:ANY_P:k", "inst_retired.any_p:k"),
        (
            "amd64_fam19h_zen3",
            "ls_mab_alloc.load_store_allocations:u:e",
            "MAB_ALLOCATION_BY_TYPE:LS:u:e",
        ),
        (
            "amd64_fam19h_zen4",
            "LS_MAB_ALLOC.LOAD_STORE_ALLOCATIONS:k",
            "MAB_ALLOCATION_BY_TYPE:LS:k",
        ),
    ] {
        let ours = evtsel(&db, cpu, canonical).unwrap();
        assert_eq!(evtsel(&db, cpu, alias), Ok(ours), "{cpu} {alias}");
    }
    // User only, counter mask 2, invert: the bits show in the EVTSEL.
    assert_eq!(
        evtsel(&db, "skl", "BR_MISP_RETIRED:COND:u:c=2:i"),
        Ok(0x02c1_01c5)
    );
    // A unit mask the alias does not know is still an error naming it.
    let error = db
        .resolve_exact(Some("skl"), "BR_MISP_RETIRED:COND:BOGUS", &common::X86)
        .unwrap_err();
    assert_eq!(error.kind(), EventErrorKind::UnitMaskInvalid, "{error}");
}

/// The database lists one canonical spelling per event: aliases are not events, and each
/// names an event and unit mask the model has.
#[test]
fn aliases_are_not_listed_as_events() {
    let db = Database::shipped().unwrap();
    for id in [
        "skl",
        "icx",
        "spr",
        "amd64_fam19h_zen3",
        "amd64_fam19h_zen4",
    ] {
        let model = db.model(id).unwrap();
        let aliases = model.event_aliases();
        assert!(aliases.len() >= 5, "{id}: {} aliases", aliases.len());
        for (alias, target) in &aliases {
            let event = alias.split(':').next().unwrap();
            let own = model
                .event(event)
                .is_some_and(|e| e.unit_mask(alias.split(':').nth(1).unwrap_or("")).is_some());
            assert!(
                !own,
                "{id}: alias {alias} is also one of the model's own names"
            );
            assert!(
                evtsel(&db, id, target).is_ok(),
                "{id}: alias {alias} -> {target}"
            );
        }
        let zen3 = db.model("amd64_fam19h_zen3").unwrap();
        let mab = zen3.event("MAB_ALLOCATION_BY_TYPE").unwrap();
        assert!(
            zen3.aliases_of(mab)
                .contains(&"LS_MAB_ALLOC:LOAD_STORE_ALLOCATIONS")
        );
        assert!(zen3.event("LS_MAB_ALLOC").is_none());
    }
}

const FILE: &str = r#"
[[cpu]]
id = "aliascore"
description = "A made-up core with aliases"
encoder = "intel-arch"
match = [{ vendor = "intel", family = 6, model = 0xfd }]
pmu = { general_counters = 4, counter_width = 48 }

[[cpu.event]]
name = "MEM_LOAD_RETIRED"
code = 0xd1
umasks = [{ name = "L1_HIT", code = 0x01 }, { name = "L2_HIT", code = 0x02 }]

[cpu.event_aliases]
"MEM_LOAD_UOPS_RETIRED:L1_HIT" = "MEM_LOAD_RETIRED.L1_HIT"
"LOADS_RETIRED" = "MEM_LOAD_RETIRED"
"#;

#[test]
fn a_file_declares_aliases_and_bad_ones_are_refused() {
    let db = Database::from_toml_str("aliases.toml", FILE).unwrap();
    assert_eq!(
        evtsel(&db, "aliascore", "MEM_LOAD_UOPS_RETIRED:L1_HIT:u"),
        Ok(0x41_01d1)
    );
    assert_eq!(
        evtsel(&db, "aliascore", "mem_load_uops_retired.l1_hit"),
        Ok(0x43_01d1)
    );
    // A whole-event alias keeps the unit masks typed after it.
    assert_eq!(
        evtsel(&db, "aliascore", "LOADS_RETIRED:L2_HIT"),
        Ok(0x43_02d1)
    );
    for (bad, what) in [
        (
            "\"MEM_LOAD_UOPS_RETIRED:L3_HIT\" = \"MEM_LOAD_RETIRED.L3_HIT\"",
            "does not resolve",
        ),
        (
            "\"A:B:C\" = \"MEM_LOAD_RETIRED.L1_HIT\"",
            "not a valid event alias",
        ),
        (
            "\"X\" = \"MEM_LOAD_RETIRED.L1_HIT:u\"",
            "no PMU, no modifier",
        ),
    ] {
        let text = format!("{FILE}{bad}\n");
        let error = Database::from_toml_str("bad.toml", &text).unwrap_err();
        assert!(error.message().contains(what), "{bad}: {error}");
        assert!(error.message().starts_with("bad.toml:"), "{error}");
    }
}

/// An alias whose event a later file replaces without the unit mask it named is dropped; one
/// whose target survives keeps working.
#[test]
fn a_replaced_event_drops_the_aliases_it_broke() {
    let over = r#"
[[cpu]]
id = "aliascore"

[[cpu.event]]
name = "MEM_LOAD_RETIRED"
code = 0xd1
umasks = [{ name = "L2_HIT", code = 0x02 }]
"#;
    let db = Database::from_toml_str("aliases.toml", FILE)
        .unwrap()
        .with_toml_str("over.toml", over)
        .unwrap();
    let error = db
        .resolve_exact(
            Some("aliascore"),
            "MEM_LOAD_UOPS_RETIRED:L1_HIT",
            &common::X86,
        )
        .unwrap_err();
    assert_eq!(error.kind(), EventErrorKind::NotFound, "{error}");
    assert_eq!(
        evtsel(&db, "aliascore", "LOADS_RETIRED:L2_HIT"),
        Ok(0x43_02d1)
    );
}
