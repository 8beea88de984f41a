//! Which frontend unit masks take a `fe_thres=` of their own, read through each model's own
//! data (`Database::resolve_model_data`, libpfm4's grammar aside), against libpfm4 4.13.
//!
//! Oracle: the installed libpfm4 4.13 (`pfm_get_os_event_encoding`, every inactive PMU
//! enabled). For every libpfm4 core PMU that is one of our models and every unit mask of its
//! FRONTEND_RETIRED that both have, `FRONTEND_RETIRED:UMASK:fe_thres=4095` is encoded by
//! libpfm4 and resolved by us as `FRONTEND_RETIRED.UMASK:fe_thres=4095` from the model's data:
//! libpfm4 refuses it (PFM_ERR_ATTR_SET) exactly where the unit mask hard-wires its threshold
//! (`LATENCY_GE_4`), and we must refuse it there as a modifier conflict, and take it elsewhere
//! (`IDQ_4_BUBBLES`, `DSB_MISS` on Skylake), as libpfm4 does. So the models libpfm4 4.13 has no
//! table for (Emerald Rapids, Granite Rapids, Alder Lake), which read their own data for
//! libpfm4's strings too, refuse what libpfm4's later tables refuse (its tests/validate_x86.c:
//! `emr::FRONTEND_RETIRED:LATENCY_GE_4:fe_thres=4095`, PFM_ERR_ATTR_SET). Needs a C compiler
//! and libpfm4 (Debian `libpfm4-dev`).

use counterhal_conformance::skip::Need;
use counterhal_events::{Database, EventErrorKind};

use crate::common;

/// libpfm4 4.13's core PMUs with a FRONTEND_RETIRED event, each one of our models.
const PMUS: [&str; 9] = [
    "skl", "skx", "clx", "icl", "icx", "spr", "glm", "bdw", "hsw",
];

/// PFM_ERR_ATTR_SET.
const ATTR_SET: &str = "ERR -10";

#[test]
fn fe_thres_is_refused_where_the_unit_mask_hard_wires_it() {
    let binary = match common::libpfm::build(common::libpfm::ENCODE, "fe-thres") {
        Ok(binary) => binary,
        Err(why) => counterhal_conformance::skip!(
            Need::Tools,
            "fe_thres not compared with libpfm4 (libpfm4-dev and a C compiler build it): {why}"
        ),
    };
    let database = Database::shipped().expect("shipped database loads");
    // (PMU, unit mask) of every unit mask both have.
    let mut cases = Vec::new();
    for pmu in PMUS {
        let model = database
            .model(pmu)
            .unwrap_or_else(|| panic!("{pmu}: no model"));
        let Some(event) = model.event("FRONTEND_RETIRED") else {
            continue;
        };
        for mask in event.unit_masks() {
            cases.push((pmu, mask.name.clone()));
        }
    }
    let queries: Vec<String> = cases
        .iter()
        .map(|(pmu, mask)| format!("{pmu}::FRONTEND_RETIRED:{mask}:fe_thres=4095"))
        .collect();
    let answers = match common::libpfm::answers(&binary, &queries) {
        Ok(answers) => answers,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "libpfm4 not run: {why}"),
    };
    assert_eq!(answers.len(), queries.len(), "one answer per query");
    let (mut hard_wired, mut free, mut compared) = (0, 0, 0);
    let mut differ = Vec::new();
    for ((pmu, mask), theirs) in cases.iter().zip(&answers) {
        // Taken or refused is what is compared here, not the code libpfm4 gives.
        let theirs = if theirs.starts_with("OK") {
            "OK"
        } else {
            theirs.as_str()
        };
        let text = format!("FRONTEND_RETIRED.{mask}:fe_thres=4095");
        let ours = database.resolve_model_data(pmu, &text, &common::X86);
        // Unit masks libpfm4 names otherwise (no such unit mask), or refuses for another
        // reason, say nothing about thresholds.
        let agree = match (theirs, &ours) {
            (ATTR_SET, Err(e)) if e.kind() == EventErrorKind::ModifierConflict => {
                hard_wired += 1;
                true
            }
            ("OK", Ok(_)) => {
                free += 1;
                true
            }
            (ATTR_SET, _) | ("OK", Err(_)) => false,
            _ => continue,
        };
        compared += 1;
        if !agree {
            differ.push(format!(
                "{pmu} {text}: libpfm4 {theirs}, ours {:?}",
                ours.map(|r| r.terms[0].request.encoding.to_string())
                    .map_err(|e| e.to_string())
            ));
        }
    }
    println!(
        "fe_thres=4095 on FRONTEND_RETIRED: {compared} unit masks compared, {hard_wired} refused by both, {free} taken by both"
    );
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    assert!(
        hard_wired >= 30 && free >= 30,
        "{hard_wired} refused, {free} taken"
    );
}
