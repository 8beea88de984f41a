//! Cross-check against libpfm4: every shipped event (and each of its unit masks) of the CPU
//! models libpfm4 also knows, resolved through the model's own data
//! (`Database::resolve_model_data`: libpfm4's spellings otherwise read libpfm4's own tables), is encoded by libpfm4 (forcing the PMU, LIBPFM_ENCODE_INACTIVE=1,
//! pfm_get_os_event_encoding with PFM_OS_NONE) and by us; the EVTSEL values must agree with
//! the interrupt bit 20 masked (libpfm4 sets it, a counting EVTSEL does not).
//!
//! Needs a C compiler and libpfm4 (Debian `libpfm4-dev`); without them the test prints why it
//! skipped.

use counterhal_conformance::skip::Need;

use counterhal_events::{Database, UnitMaskClass};
use counterhal_hal::Encoding;

use crate::common;

/// Whether `name` (`EVENT:MASK`, or `EVENT:*`) of [`GENERATED_DIFFERENCES`] explains the
/// mismatch `line` (`model: EVENT:MASK: ours ...`).
fn covers(name: &str, line: &str) -> bool {
    let Some(event) = line.split(": ").nth(1) else {
        return false;
    };
    match name.strip_suffix('*') {
        Some(prefix) => event.starts_with(prefix),
        None => event == name,
    }
}

/// Our model id -> the libpfm4 PMU its events are compared under. Every shipped model whose
/// events carry libpfm4's names is here; `p5` and `p6` are not (libpfm4 has no P5 table and
/// builds its P6 tables only for 32-bit x86).
const PMUS: &[(&str, &str)] = &[
    ("amd64_k7", "amd64_k7"),
    ("amd64_k8_revc", "amd64_k8_revc"),
    ("amd64_k8_revd", "amd64_k8_revd"),
    ("amd64_k8_reve", "amd64_k8_reve"),
    ("amd64_k8_revg", "amd64_k8_revg"),
    ("amd64_fam17h_zen1", "amd64_fam17h_zen1"),
    ("amd64_fam17h_zen2", "amd64_fam17h_zen2"),
    ("amd64_fam19h_zen3", "amd64_fam19h_zen3"),
    ("amd64_fam19h_zen4", "amd64_fam19h_zen4"),
    // libpfm4's `ix86arch` has no events unless CPUID reports architectural perfmon (not on
    // AMD hosts), so the architectural events are compared under Skylake's table, where the
    // names are the same, except for the three renamed below.
    ("intel-arch", "skl"),
];

/// Events whose libpfm4 name differs in the PMU they are compared under:
/// (model id, our name, libpfm4 string).
const RENAMED: &[(&str, &str, &str)] = &[
    (
        "intel-arch",
        "LLC_REFERENCES",
        "skl::LONGEST_LAT_CACHE:REFERENCE",
    ),
    ("intel-arch", "LLC_MISSES", "skl::LONGEST_LAT_CACHE:MISS"),
    // Skylake has no top-down slots event; Ice Lake is the first core with it.
    ("intel-arch", "TOPDOWN_SLOTS", "icl::TOPDOWN:SLOTS_P"),
];

/// Generated models (Intel perfmon's names) and the libpfm4 PMU for the same core. Names
/// libpfm4 spells otherwise are counted, not failed; encodings of the names both know must
/// agree (at most 0.5% apart, each difference listed in `GENERATED_DIFFERENCES`).
const GENERATED: &[(&str, &str)] = &[
    ("nhm", "nhm"),
    ("nhm_ex", "nhm_ex"),
    ("wsm", "wsm"),
    ("wsm_dp", "wsm_dp"),
    ("snb", "snb"),
    ("snb_ep", "snb_ep"),
    ("ivb", "ivb"),
    ("ivb_ep", "ivb_ep"),
    ("hsw", "hsw"),
    ("hsw_ep", "hsw_ep"),
    ("bdw", "bdw"),
    ("bdw_ep", "bdw_ep"),
    // Skylake: the generated table under the hand-written overlay that keeps libpfm4's names.
    ("skl", "skl"),
    ("skx", "skx"),
    ("clx", "clx"),
    ("icl", "icl"),
    ("icx", "icx"),
    ("spr", "spr"),
    ("knl", "knl"),
    ("slm", "slm"),
    ("glm", "glm"),
    ("tmt", "tmt"),
    ("adl_glc", "adl_glc"),
    ("adl_grt", "adl_grt"),
    // Generated from libpfm4's own tables (a later git snapshot than the installed 4.13).
    ("core", "core"),
    ("amd64_fam10h_barcelona", "amd64_fam10h_barcelona"),
    ("amd64_fam10h_shanghai", "amd64_fam10h_shanghai"),
    ("amd64_fam10h_istanbul", "amd64_fam10h_istanbul"),
    ("amd64_fam11h_turion", "amd64_fam11h_turion"),
    ("amd64_fam12h_llano", "amd64_fam12h_llano"),
    ("amd64_fam14h_bobcat", "amd64_fam14h_bobcat"),
    ("amd64_fam15h_interlagos", "amd64_fam15h_interlagos"),
    ("amd64_fam16h", "amd64_fam16h"),
];

/// Where a generated model's encoding differs from libpfm4 4.13's, and why: (event as the
/// test names it, `EVENT:*` for all its unit masks, why). Intel perfmon is the authority for Intel cores; libpfm4 4.13 keeps
/// older values for a few unit masks and filters.
const GENERATED_DIFFERENCES: &[(&str, &str)] = &[
    (
        "INT_MISC:UNKNOWN_BRANCH_CYCLES",
        "Sapphire Rapids: Intel gives unit mask 0x40 with frontend MSR 0x3f7 = 0x7; libpfm4 puts 0x7 in the unit mask",
    ),
    (
        "UOPS_RETIRED:MS",
        "Sapphire Rapids: Intel gives unit mask 0x04 with frontend MSR 0x3f7 = 0x8; libpfm4 puts 0x8 in the unit mask",
    ),
    (
        "ARITH:INT_DIVIDER_ACTIVE",
        "deprecated in Intel's table, with counter mask 1 as its successor ARITH.IDIV_ACTIVE; libpfm4's alias drops the counter mask",
    ),
    (
        "INST_RETIRED:ANY",
        "fixed-counter pseudo-event: Intel lists it as event 0x00 on fixed counter 0 only; libpfm4 as 0xc0 on any counter",
    ),
    (
        "INST_RETIRED",
        "named alone: libpfm4's default is INST_RETIRED:ANY, the fixed-counter pseudo-event above",
    ),
    (
        "CPU_CLK_UNHALTED:CORE",
        "fixed-counter pseudo-event (Tremont): event 0x00 on fixed counter 1 in Intel's table",
    ),
    (
        "CPU_CLK_UNHALTED:CORE_P",
        "Goldmont: Intel lists 0x3c/0x00 on general counters; libpfm4 the fixed pseudo-encoding",
    ),
    (
        "CPU_CLK_UNHALTED:REF",
        "Goldmont: Intel lists 0x3c/0x01 on general counters; libpfm4 the fixed pseudo-encoding",
    ),
    (
        "TOPDOWN:BACKEND_BOUND_SLOTS",
        "Intel lists event 0xa4; libpfm4 writes the metrics pseudo-event 0x00",
    ),
    (
        "TOPDOWN:BAD_SPEC_SLOTS",
        "Intel lists event 0xa4; libpfm4 writes the metrics pseudo-event 0x00",
    ),
    (
        "TOPDOWN:BR_MISPREDICT_SLOTS",
        "Intel lists event 0xa4; libpfm4 writes the metrics pseudo-event 0x00",
    ),
    (
        "TOPDOWN:MEMORY_BOUND_SLOTS",
        "Intel lists event 0xa4; libpfm4 writes the metrics pseudo-event 0x00",
    ),
    (
        "INST_RETIRED:ANY_P",
        "Nehalem/Westmere: Intel's table has unit mask 0x01, libpfm4 the architectural 0x00",
    ),
    (
        "BR_INST_RETIRED:ALL_BRANCHES",
        "Nehalem/Westmere: Intel 0x04, libpfm4 0x00; Sandy Bridge: Intel 0x00, libpfm4 0x04",
    ),
    (
        "BR_MISP_RETIRED:ALL_BRANCHES",
        "Sandy Bridge: Intel 0x00, libpfm4 0x04",
    ),
    (
        "MACRO_INSTS:FUSIONS_DECODED",
        "Nehalem/Westmere: Intel lists event 0xa6, libpfm4 0xd0",
    ),
    (
        "MOVE_ELIMINATION:INT_ELIMINATED",
        "Ivy Bridge: Intel's current table swaps 0x01/0x04 against libpfm4's",
    ),
    (
        "MOVE_ELIMINATION:INT_NOT_ELIMINATED",
        "Ivy Bridge: Intel's current table swaps 0x01/0x04 against libpfm4's",
    ),
    (
        "MEM_LOAD_UOPS_LLC_MISS_RETIRED:LOCAL_DRAM",
        "Ivy Bridge EP: Intel 0x03, libpfm4 0x01",
    ),
    (
        "L2_RQSTS:CODE_RD_HIT",
        "Haswell/Broadwell: Intel's current unit mask 0xc4, libpfm4's older 0x44",
    ),
    (
        "L2_RQSTS:DEMAND_DATA_RD_HIT",
        "Haswell/Broadwell: Intel 0xc1, libpfm4 0x41",
    ),
    (
        "L2_RQSTS:RFO_HIT",
        "Haswell/Broadwell: Intel 0xc2, libpfm4 0x42",
    ),
    (
        "UOPS_RETIRED:TOTAL_CYCLES",
        "Intel's counter mask 16 (10 before), and unit mask 0x02 from Skylake-X",
    ),
    (
        "UOPS_RETIRED:STALL_CYCLES",
        "Skylake-X/Cascade Lake: Intel unit mask 0x02, libpfm4 0x01",
    ),
    (
        "MEM_LOAD_MISC_RETIRED:UC",
        "Ice Lake: Intel event 0xd4, libpfm4 0xc4",
    ),
    (
        "ARITH:IDIV_ACTIVE",
        "Sapphire Rapids: Intel sets counter mask 1, libpfm4 none",
    ),
    (
        "MEM_TRANS_RETIRED:STORE_SAMPLE",
        "Sapphire Rapids: Intel unit mask 0x02, libpfm4 0x03",
    ),
    (
        "PAGE_WALKS:D_SIDE_WALKS",
        "Knights Landing: Intel sets edge without a counter mask, libpfm4 adds counter mask 1",
    ),
    (
        "PAGE_WALKS:I_SIDE_WALKS",
        "Knights Landing: as D_SIDE_WALKS",
    ),
    (
        "PAGE_WALKS:WALKS",
        "Knights Landing: as D_SIDE_WALKS; Bonnell: an erratum (gen/errata/atom.toml) sets edge, which libpfm4's table states and 4.13 drops",
    ),
];

/// Shipped models libpfm4 4.13 has no table for (on x86-64 builds).
const NOT_IN_LIBPFM4: &[&str] = &[
    "p5",
    "p6",
    // libpfm4 builds its P6-family PMUs (ppro, pii, p6, pm) for i386 only.
    "ppro",
    "pii",
    "piii",
    "pm",
    "wsm_ex",
    "bdw_de",
    "tgl",
    "rkl",
    "emr",
    "gnr",
    "atom",
    "glp",
    "ehl",
    "grr",
    "srf",
    "cwf",
    "mtl_rwc",
    "mtl_cmt",
    "lnl_lnc",
    "lnl_skt",
    "arl_lnc",
    "arl_skt",
    "arl_cmt",
    "ptl_cgc",
    "ptl_dkt",
    "nvl_cyc",
    "nvl_arw",
    "amd64_fam1ah_zen5",
    // Zen 6: perf 7.2's JSON; no libpfm4 release has it.
    "amd64_fam1ah_zen6",
    "coreduo",
];

#[test]
fn evtsel_matches_libpfm4() {
    let binary = match common::libpfm::build(common::libpfm::ENCODE, "encode") {
        Ok(binary) => binary,
        Err(why) => counterhal_conformance::skip!(
            Need::Tools,
            "libpfm4 cross-check not run (libpfm4-dev and gcc build it): {why}"
        ),
    };
    let database = Database::shipped().expect("shipped database loads");
    // The Arm cores: Debian's x86 build of libpfm4 4.13 has no Arm PMU (pfm_get_pmu_info lists
    // none); gen/tests/arm64.rs compares them with libpfm4's source instead.
    for model in database
        .models()
        .filter(|m| m.encoder != counterhal_events::EncoderKind::Armv8)
    {
        assert!(
            PMUS.iter().chain(GENERATED).any(|(id, _)| *id == model.id)
                || NOT_IN_LIBPFM4.contains(&model.id.as_str()),
            "shipped model {} is neither cross-checked against libpfm4 nor listed as absent there",
            model.id
        );
    }
    // (our string, libpfm4 string, our EVTSEL)
    let mut cases: Vec<(String, String, u64)> = Vec::new();
    for (model_id, pmu) in PMUS.iter().chain(GENERATED) {
        let model = database.model(model_id).expect("model exists");
        for event in model.events() {
            let mut names = vec![event.name.clone()];
            for mask in event.unit_masks() {
                if mask.class == UnitMaskClass::Plain {
                    names.push(format!("{}:{}", event.name, mask.name));
                }
            }
            for name in names {
                // The model's own data, not libpfm4's tables (which libpfm4's spelling now reads).
                let Ok(resolved) = database.resolve_model_data(model_id, &name, &common::X86)
                else {
                    continue;
                };
                let Encoding::Evtsel(evtsel) = &resolved.terms[0].request.encoding else {
                    continue;
                };
                let theirs = RENAMED
                    .iter()
                    .find(|(m, ours, _)| m == model_id && *ours == name)
                    .map_or_else(|| format!("{pmu}::{name}"), |(_, _, t)| t.to_string());
                cases.push((
                    format!("{model_id}: {name}"),
                    theirs,
                    evtsel.register_value(),
                ));
            }
        }
    }
    let lines: Vec<String> = cases.iter().map(|c| c.1.clone()).collect();
    let answers = match common::libpfm::answers(&binary, &lines) {
        Ok(answers) => answers,
        Err(why) => counterhal_conformance::skip!(
            Need::Tools,
            "libpfm4 cross-check not run (libpfm4-dev and gcc build it): {why}"
        ),
    };
    assert_eq!(answers.len(), cases.len(), "one answer per query");
    // Unit masks the generator adds to libpfm4's AMD tables for perf's encodings libpfm4's
    // masks do not give (gen/src/amd_json.rs): each the target of perf's name as an alias.
    let mut perf_masks = std::collections::BTreeSet::new();
    for (model_id, _) in PMUS {
        let model = database.model(model_id).expect("model exists");
        for (_, target) in model.event_aliases() {
            if let Some((event, mask)) = target.split_once('.') {
                perf_masks.insert(format!("{model_id}: {event}:{mask}"));
            }
        }
    }
    // Events the generator adds to libpfm4's AMD tables from perf's JSON, of event codes
    // libpfm4's table has no event of (gen/src/amd_json.rs, `add_perf_events`): the codes of
    // libpfm4's own table (its head's, events/data/generated/libpfm4/) per PMU.
    let libpfm4_codes = |pmu: &str| -> std::collections::BTreeSet<u64> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("data/generated/libpfm4/{pmu}.toml"));
        let Ok(text) = std::fs::read_to_string(path) else {
            return Default::default();
        };
        let table: toml::Table = toml::from_str(&text).expect("libpfm4's table parses");
        table
            .get("event")
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| e.get("code").and_then(toml::Value::as_integer))
            .map(|c| c as u64)
            .collect()
    };
    let perf_events: std::collections::BTreeMap<&str, std::collections::BTreeSet<u64>> = PMUS
        .iter()
        .map(|(_, pmu)| (*pmu, libpfm4_codes(pmu)))
        .collect();
    let perf_only = |theirs: &str, evtsel: u64| {
        let code = evtsel & 0xff | (evtsel >> 32 & 0xf) << 8;
        theirs.split_once("::").is_some_and(|(pmu, _)| {
            pmu.starts_with("amd64_fam")
                && perf_events
                    .get(pmu)
                    .is_some_and(|codes| !codes.is_empty() && !codes.contains(&code))
        })
    };
    let mut compared = 0;
    let mut unknown = Vec::new();
    let mut mismatches = Vec::new();
    let (mut generated_compared, mut generated_unknown) = (0, 0);
    let mut generated_mismatches = Vec::new();
    for ((ours, theirs, evtsel), answer) in cases.iter().zip(&answers) {
        let generated = GENERATED
            .iter()
            .any(|(id, _)| ours.starts_with(&format!("{id}: ")));
        match answer
            .strip_prefix("OK 0x")
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        {
            Some(code) => {
                let differs = code & !(1 << 20) != *evtsel;
                let line = format!("{ours}: ours {evtsel:#x}, libpfm4 {code:#x} ({theirs})");
                if generated {
                    generated_compared += 1;
                    if differs {
                        generated_mismatches.push(line);
                    }
                } else {
                    compared += 1;
                    if differs {
                        mismatches.push(line);
                    }
                }
            }
            None if generated => generated_unknown += 1,
            None if perf_masks.contains(ours) || perf_only(theirs, *evtsel) => {}
            None => unknown.push(format!("{theirs} ({answer})")),
        }
    }
    println!(
        "libpfm4 cross-check of the generated models: compared {generated_compared}, {} differ, {generated_unknown} names libpfm4 spells otherwise",
        generated_mismatches.len()
    );
    let unexplained: Vec<&String> = generated_mismatches
        .iter()
        .filter(|line| {
            !GENERATED_DIFFERENCES
                .iter()
                .any(|(name, _)| covers(name, line))
        })
        .collect();
    assert!(
        unexplained.is_empty(),
        "{} unexplained differences from libpfm4 in the generated models:\n{}",
        unexplained.len(),
        unexplained
            .iter()
            .map(|l| l.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    for (name, _) in GENERATED_DIFFERENCES {
        assert!(
            generated_mismatches.iter().any(|line| covers(name, line)),
            "GENERATED_DIFFERENCES lists {name}, which no longer differs"
        );
    }
    assert!(
        generated_compared >= 4000,
        "only {generated_compared} generated encodings compared"
    );
    // Every difference is explained above; most are libpfm4 4.13 keeping values Intel has
    // since changed, the rest fixed-counter pseudo-events written two ways.
    assert!(
        generated_mismatches.len() * 1000 <= generated_compared * 16,
        "{} of {generated_compared} differ",
        generated_mismatches.len()
    );
    println!(
        "libpfm4 cross-check: compared {compared} encodings over {} CPU models",
        PMUS.len()
    );
    assert!(
        unknown.is_empty(),
        "{} shipped events are unknown to libpfm4 under the names we give them:\n{}",
        unknown.len(),
        unknown.join("\n")
    );
    assert!(
        mismatches.is_empty(),
        "{} EVTSEL mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(
        compared > 0,
        "nothing was compared; libpfm4 answered: {answers:?}"
    );
}
