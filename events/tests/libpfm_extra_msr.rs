//! Cross-check of the extra MSR values against libpfm4: every offcore response (`OCR.*`) and
//! frontend (`FRONTEND_RETIRED.*`) unit mask of the generated models libpfm4 also knows is
//! encoded by libpfm4 (its second code is the MSR value) and by us; the event selects (bit 20
//! masked, libpfm4 sets it) and the MSR values must agree. libpfm4 spells Intel's inner dots
//! as underscores (`OCR.DEMAND_DATA_RD.ANY_RESPONSE` is `OCR:DEMAND_DATA_RD_ANY_RESPONSE`).
//!
//! Needs a C compiler and libpfm4 (Debian `libpfm4-dev`); without them the test skips.

use counterhal_conformance::skip::Need;
use counterhal_events::Database;
use counterhal_hal::{Accepts, Domain, Encoding, Family};

use crate::common;

const X86: Accepts = Accepts::new(&[Family::Evtsel], Domain::ALL, Domain::DEFAULT);

/// Prints every code libpfm4 gives an event string: `OK code0 code1 ...` or `ERR n`.
const PROGRAM: &str = r#"
#include <perfmon/pfmlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    char line[1024];
    if (pfm_initialize() != PFM_SUCCESS) { printf("INIT-FAILED\n"); return 1; }
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        pfm_pmu_encode_arg_t arg;
        memset(&arg, 0, sizeof arg);
        arg.size = sizeof arg;
        int ret = pfm_get_os_event_encoding(line, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg);
        if (ret != PFM_SUCCESS) { printf("ERR %d\n", ret); continue; }
        printf("OK");
        for (int i = 0; i < arg.count; i++) printf(" 0x%llx", (unsigned long long)arg.codes[i]);
        printf("\n");
        free(arg.codes);
    }
    return 0;
}
"#;

/// Our generated model and libpfm4's PMU for the same core.
const PAIRS: &[(&str, &str)] = &[("icl", "icl"), ("icx", "icx"), ("spr", "spr")];

/// The events compared, by their Intel name.
const EVENTS: &[&str] = &["OCR", "FRONTEND_RETIRED"];

fn parse_codes(answer: &str) -> Option<Vec<u64>> {
    let rest = answer.strip_prefix("OK")?;
    rest.split_whitespace()
        .map(|c| u64::from_str_radix(c.trim_start_matches("0x"), 16).ok())
        .collect()
}

#[test]
fn offcore_and_frontend_values_match_libpfm4() {
    let binary = match common::libpfm::build(PROGRAM, "pfmx") {
        Ok(binary) => binary,
        Err(why) => counterhal_conformance::skip!(
            Need::Tools,
            "libpfm4 extra-MSR cross-check not run (libpfm4-dev and gcc build it): {why}"
        ),
    };
    let db = Database::shipped().unwrap();
    // (our string, libpfm4's string, our event select, our MSR value)
    let mut cases = Vec::new();
    for (ours, pmu) in PAIRS {
        let model = db.model(ours).unwrap();
        for event in EVENTS {
            let Some(native) = model.event(event) else {
                continue;
            };
            for mask in native.unit_masks() {
                let Some(extra) = mask.extra else {
                    continue;
                };
                let name = format!("{event}.{}", mask.name);
                let resolved = db.resolve(Some(ours), &name, &X86).unwrap();
                let Encoding::Evtsel(e) = resolved.terms[0].request.encoding else {
                    panic!("{name}: {resolved:?}");
                };
                let theirs = format!("{pmu}::{event}:{}", mask.name.replace('.', "_"));
                cases.push((
                    format!("{ours}: {name}"),
                    theirs,
                    e.register_value(),
                    extra.value,
                ));
            }
        }
    }
    assert!(cases.len() > 100, "only {} cases", cases.len());
    let lines: Vec<String> = cases.iter().map(|c| c.1.clone()).collect();
    let answers = match common::libpfm::answers(&binary, &lines) {
        Ok(answers) => answers,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "libpfm4 helper failed: {why}"),
    };
    assert_eq!(answers.len(), cases.len());
    let (mut compared, mut unknown) = (0usize, 0usize);
    let mut differences = Vec::new();
    for ((ours, theirs, evtsel, value), answer) in cases.iter().zip(&answers) {
        let Some(codes) = parse_codes(answer) else {
            unknown += 1;
            continue;
        };
        compared += 1;
        let their_select = codes[0] & !(1 << 20);
        let their_value = codes.get(1).copied().unwrap_or(0);
        if their_select != *evtsel || their_value != *value {
            differences.push(format!(
                "{ours}: ours {evtsel:#x} msr {value:#x}, libpfm4 {their_select:#x} msr {their_value:#x} ({theirs})"
            ));
        }
    }
    println!(
        "libpfm4 extra-MSR cross-check: {} cases, {compared} compared, {} differ, {unknown} unknown to libpfm4",
        cases.len(),
        differences.len()
    );
    // libpfm4 knows nearly all of Intel's offcore and frontend names on these cores, and
    // where it knows one it agrees with Intel's event select and MSR value.
    assert!(
        compared * 100 >= cases.len() * 95,
        "libpfm4 knew only {compared}"
    );
    assert!(
        differences.is_empty(),
        "{} differences:\n{}",
        differences.len(),
        differences.join("\n")
    );
}
