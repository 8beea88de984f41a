//! `counterhal list` shows each native event's code and, under it, every unit mask with the
//! fields of its encoding, in text and in JSON, for every backend and CPU model it lists.
//!
//! The values checked are those of the data files (`events/data/generated/hsw.toml`:
//! `BR_INST_RETIRED` is event 0xc4, its `ALL_BRANCHES` unit mask 0x00 and `ALL_BRANCHES_PEBS`
//! 0x04), and every listed unit mask of a model is checked against what `encode` programs.

use crate::common::*;
use serde_json::Value;

/// `list ARGS`, which must succeed, as text.
fn list(args: &[&str]) -> String {
    let mut all = vec!["list"];
    all.extend_from_slice(args);
    let out = counterhal(&all);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// `list --json ARGS` as its array of events.
fn list_json(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let text = list(&all);
    let value: Value = serde_json::from_str(&text).expect("JSON");
    value.as_array().expect("an array").clone()
}

/// The lines of `text` with their runs of spaces made one, and their indentation.
fn spaced_lines(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .map(|l| {
            let indent = l.len() - l.trim_start().len();
            (indent, l.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .collect()
}

/// The native (and deprecated) events of a JSON listing.
fn natives(listed: &[Value]) -> Vec<&Value> {
    listed
        .iter()
        .filter(|e| e["section"] == "native" || e["section"] == "deprecated")
        .collect()
}

#[test]
fn text_shows_the_event_code_and_each_unit_mask_under_it() {
    let text = list(&["--cpu-model", "hsw", "BR_INST_RETIRED"]);
    let lines = spaced_lines(&text);
    let at = |wanted: &str| {
        lines
            .iter()
            .position(|(_, l)| l == wanted)
            .unwrap_or_else(|| panic!("no line `{wanted}` in:\n{text}"))
    };
    // An event with a default unit mask (libpfm4's) shows what it resolves to alone.
    let event = at("BR_INST_RETIRED event=0xc4 umask=0x00 (precise)");
    assert_eq!(lines[event].0, 4, "{text}");
    for (i, wanted) in [
        "BR_INST_RETIRED.ALL_BRANCHES event=0xc4 umask=0x00 (default)",
        "BR_INST_RETIRED.ALL_BRANCHES_PEBS event=0xc4 umask=0x04 (precise)",
        "BR_INST_RETIRED.CONDITIONAL event=0xc4 umask=0x01 (precise)",
        "BR_INST_RETIRED.FAR_BRANCH event=0xc4 umask=0x40",
        "BR_INST_RETIRED.NEAR_CALL event=0xc4 umask=0x02 (precise)",
        "BR_INST_RETIRED.NEAR_CALL_R3 event=0xc4 umask=0x02 (precise)",
        "BR_INST_RETIRED.NEAR_RETURN event=0xc4 umask=0x08 (precise)",
        "BR_INST_RETIRED.NEAR_TAKEN event=0xc4 umask=0x20 (precise)",
        "BR_INST_RETIRED.NOT_TAKEN event=0xc4 umask=0x10",
    ]
    .into_iter()
    .enumerate()
    {
        let line = at(wanted);
        assert_eq!(line, event + 1 + i, "in the data file's order:\n{text}");
        assert_eq!(lines[line].0, 6, "indented under the event:\n{text}");
    }
    assert!(
        text.contains("1 events listed (9 unit masks)"),
        "the footer counts the unit masks:\n{text}"
    );
    // Counter mask, edge, AnyThread, counter restriction, fixed counter, extra MSR.
    let text = list(&["--cpu-model", "hsw"]);
    let lines = spaced_lines(&text);
    // An event that needs a unit mask shows its code; never usable alone, so never marked.
    assert!(
        lines
            .iter()
            .any(|(indent, l)| *indent == 4 && l == "CPL_CYCLES event=0x5c"),
        "no line `CPL_CYCLES event=0x5c` in:\n{text}"
    );
    for wanted in [
        "CPL_CYCLES.RING0_TRANS event=0x5c umask=0x01 cmask=1 edge=1",
        "CPU_CLK_UNHALTED.THREAD_P_ANY event=0x3c umask=0x00 any=1",
        "CYCLE_ACTIVITY.CYCLES_L1D_PENDING event=0xa3 umask=0x08 cmask=8 counters=2",
        "CPU_CLK_UNHALTED.REF_TSC event=0x00 umask=0x03 fixed=2 only",
        "OFFCORE_RESPONSE_0.ANY_RESPONSE event=0xb7 umask=0x01 msr 0x1a6=0x18fff (default)",
    ] {
        assert!(
            lines.iter().any(|(indent, l)| *indent == 6 && l == wanted),
            "no line `{wanted}` in:\n{text}"
        );
    }
}

#[test]
fn a_pattern_on_a_unit_mask_lists_the_matching_masks_under_their_event() {
    let listed = list_json(&["--cpu-model", "hsw", "ALL_BRANCHES_PEBS"]);
    let found: Vec<(String, Vec<String>)> = natives(&listed)
        .iter()
        .map(|e| {
            let masks = e["umasks"].as_array().unwrap();
            let names = masks.iter().map(|m| m["name"].to_string()).collect();
            (e["name"].as_str().unwrap().to_string(), names)
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                "BR_INST_RETIRED".to_string(),
                vec!["\"BR_INST_RETIRED.ALL_BRANCHES_PEBS\"".to_string()]
            ),
            (
                "BR_MISP_RETIRED".to_string(),
                vec!["\"BR_MISP_RETIRED.ALL_BRANCHES_PEBS\"".to_string()]
            ),
        ]
    );
    let text = list(&["--cpu-model", "hsw", "all_branches_pebs"]);
    let lines = spaced_lines(&text);
    let shown: Vec<&str> = lines
        .iter()
        .filter(|(indent, _)| *indent >= 4)
        .map(|(_, l)| l.as_str())
        .collect();
    assert_eq!(
        shown,
        [
            "BR_INST_RETIRED event=0xc4 umask=0x00 (precise)",
            "BR_INST_RETIRED.ALL_BRANCHES_PEBS event=0xc4 umask=0x04 (precise)",
            "BR_MISP_RETIRED event=0xc5 umask=0x00 (precise)",
            "BR_MISP_RETIRED.ALL_BRANCHES_PEBS event=0xc5 umask=0x04 (precise)",
        ],
        "{text}"
    );
    // libpfm4's spelling finds the same masks; a pattern on the event's name shows them all.
    let colon = list_json(&["--cpu-model", "hsw", "BR_INST_RETIRED:NEAR_"]);
    let masks: Vec<&str> = natives(&colon)
        .iter()
        .flat_map(|e| e["umasks"].as_array().unwrap())
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        masks,
        [
            "BR_INST_RETIRED.NEAR_CALL",
            "BR_INST_RETIRED.NEAR_CALL_R3",
            "BR_INST_RETIRED.NEAR_RETURN",
            "BR_INST_RETIRED.NEAR_TAKEN",
        ]
    );
    let whole = list_json(&["--cpu-model", "hsw", "CPL_CYCLES"]);
    assert_eq!(natives(&whole)[0]["umasks"].as_array().unwrap().len(), 3);
}

/// The shape of `list --json`: the fields every entry had before, and each native event's
/// `fields` and `umasks`, each mask with `name`, `encoding` (as its event's: text or null),
/// `default` and the rest.
#[test]
fn json_has_the_documented_shape() {
    let listed = list_json(&["--cpu-model", "hsw"]);
    let is_text_or_null = |v: &Value| v.is_string() || v.is_null();
    let mut masks = 0;
    for entry in &listed {
        let keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "aliases",
                "backend",
                "description",
                "encoding",
                "fields",
                "libpfm4_note",
                "name",
                "precise",
                "reason",
                "section",
                "umasks",
                "usable",
            ],
            "{entry}"
        );
        assert!(entry["name"].is_string() && entry["description"].is_string());
        assert!(is_text_or_null(&entry["encoding"]) && is_text_or_null(&entry["reason"]));
        assert!(is_text_or_null(&entry["backend"]));
        assert!(entry["usable"].is_boolean() && entry["precise"].is_boolean());
        assert!(
            entry["aliases"]
                .as_array()
                .unwrap()
                .iter()
                .all(Value::is_string)
        );
        let native = entry["section"] == "native" || entry["section"] == "deprecated";
        let umasks = entry["umasks"].as_array().unwrap();
        if !native {
            assert!(entry["fields"].is_null() && umasks.is_empty(), "{entry}");
            continue;
        }
        let fields = entry["fields"].as_str().unwrap();
        assert!(fields.starts_with("event=0x"), "{entry}");
        let prefix = format!("{}.", entry["name"].as_str().unwrap());
        for mask in umasks {
            masks += 1;
            let keys: Vec<&String> = mask.as_object().unwrap().keys().collect();
            assert_eq!(
                keys,
                [
                    "default",
                    "deprecated",
                    "description",
                    "encoding",
                    "fields",
                    "libpfm4_note",
                    "name",
                    "precise",
                    "reason"
                ],
                "{mask}"
            );
            assert!(
                mask["name"].as_str().unwrap().starts_with(&prefix),
                "{mask}"
            );
            assert!(mask["description"].is_string());
            let mask_fields = mask["fields"].as_str().unwrap();
            assert!(mask_fields.contains(" umask=0x"), "{mask}");
            assert!(is_text_or_null(&mask["encoding"]) && is_text_or_null(&mask["reason"]));
            assert!(is_text_or_null(&mask["libpfm4_note"]));
            // Resolved on the backend, or a reason; with no backend here, the event says why.
            if !entry["backend"].is_null() {
                assert_ne!(
                    mask["encoding"].is_null(),
                    mask["reason"].is_null(),
                    "{mask}"
                );
            }
            for flag in ["default", "precise", "deprecated"] {
                assert!(mask[flag].is_boolean(), "{mask}");
            }
        }
    }
    assert!(masks > 400, "{masks} unit masks on hsw");
    let event = listed
        .iter()
        .find(|e| e["name"] == "BR_INST_RETIRED")
        .unwrap();
    assert_eq!(event["fields"], "event=0xc4 umask=0x00");
    let all = &event["umasks"][0];
    assert_eq!(all["name"], "BR_INST_RETIRED.ALL_BRANCHES");
    assert_eq!(all["fields"], "event=0xc4 umask=0x00");
    assert_eq!(all["default"], true);
    let pebs = &event["umasks"][1];
    assert_eq!(pebs["fields"], "event=0xc4 umask=0x04");
    assert_eq!(pebs["precise"], true);
    if event["backend"] == "linux" {
        assert_eq!(
            all["encoding"],
            "perf type=4 config=0xc4 config1=0x0 config2=0x0 exclude=none"
        );
        assert_eq!(
            pebs["encoding"],
            "perf type=4 config=0x4c4 config1=0x0 config2=0x0 exclude=none"
        );
    }
}

/// The fields of one unit mask, split off the listing: `event=0xc4` and the rest by name.
fn parse_fields(fields: &str) -> std::collections::BTreeMap<String, String> {
    let mut parsed = std::collections::BTreeMap::new();
    let mut words = fields.split_whitespace();
    while let Some(word) = words.next() {
        match word {
            "msr" => {
                let (msr, value) = words.next().unwrap().split_once('=').unwrap();
                parsed.insert("msr".to_string(), msr.to_string());
                parsed.insert("msr_value".to_string(), value.to_string());
            }
            "only" => {}
            word => {
                let (key, value) = word.split_once('=').unwrap();
                parsed.insert(key.to_string(), value.to_string());
            }
        }
    }
    parsed
}

/// Every unit mask `list` shows for a backend and model is what `encode` programs for that
/// name on the backend's model of its device: event code, unit mask, filter bits, extra MSR.
#[test]
fn every_listed_unit_mask_is_what_encode_programs() {
    for (backend, model) in [
        ("msr", "hsw"),
        ("msr", "skl"),
        ("msr", "adl_glc"),
        ("msr", "lnl_lnc"),
        ("msr", "amd64_fam19h_zen3"),
        ("pctr", "p6"),
    ] {
        let listed = list_json(&["--backend", backend, "--cpu-model", model]);
        let masks: Vec<&Value> = natives(&listed)
            .iter()
            .flat_map(|e| e["umasks"].as_array().unwrap())
            .collect();
        assert!(!masks.is_empty(), "{backend} {model}");
        let mut args = vec![
            "encode",
            "--json",
            "--backend",
            backend,
            "--cpu-model",
            model,
        ];
        args.extend(masks.iter().map(|m| m["name"].as_str().unwrap()));
        let out = counterhal(&args);
        assert!(out.status.success(), "{backend} {model}: {}", stderr(&out));
        let encoded: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(encoded.len(), masks.len(), "{backend} {model}");
        for (mask, encoded) in masks.iter().zip(&encoded) {
            let fields = parse_fields(mask["fields"].as_str().unwrap());
            let select = encoded["event_select"].as_u64().unwrap();
            let hex = |v: u64| format!("{v:#04x}");
            let code = (select & 0xff) | ((select >> 32) & 0xf) << 8;
            let what = format!("{backend} {model} {mask} {encoded}");
            assert_eq!(fields["event"], hex(code), "{what}");
            assert_eq!(fields["umask"], hex((select >> 8) & 0xff), "{what}");
            let cmask = (select >> 24) & 0xff;
            assert_eq!(
                fields.get("cmask"),
                (cmask != 0).then(|| cmask.to_string()).as_ref(),
                "{what}"
            );
            if !model.starts_with("amd64") {
                let umask2 = (select >> 40) & 0xff;
                let umask2 = (umask2 != 0).then(|| hex(umask2));
                assert_eq!(fields.get("umask2"), umask2.as_ref(), "{what}");
            }
            for (name, bit) in [("edge", 18), ("any", 21), ("inv", 23)] {
                let set = select & (1 << bit) != 0;
                assert_eq!(fields.contains_key(name), set, "{name}: {what}");
            }
            let msr = encoded["extra_msr"].as_u64().map(|m| format!("{m:#x}"));
            assert_eq!(fields.get("msr"), msr.as_ref(), "{what}");
            let value = encoded["extra_value"].as_u64().map(|v| format!("{v:#x}"));
            assert_eq!(fields.get("msr_value"), value.as_ref(), "{what}");
            let fixed = encoded["fixed"].as_u64().map(|f| f.to_string());
            assert_eq!(fields.get("fixed"), fixed.as_ref(), "{what}");
        }
    }
}

/// The text shows the unit masks for every backend and model `list` takes: a backend that
/// cannot be used here still lists them, from the event database.
#[test]
fn every_backend_and_model_shows_unit_masks() {
    for (args, wanted) in [
        (
            &["--backend", "msr", "--cpu-model", "skl"][..],
            "BR_INST_RETIRED.ALL_BRANCHES event=0xc4 umask=0x00 (default)",
        ),
        (
            &["--backend", "pctr", "--cpu-model", "p6"],
            "L2_IFETCH.MODIFIED event=0x28 umask=0x08 lines in modified state",
        ),
        (
            &["--cpu-model", "amd64_fam19h_zen3"],
            "IC_TAG_HIT_MISS.IC_MISS event=0x18e umask=0x18",
        ),
        (
            &["--cpu-model", "adl_glc"],
            "BR_INST_RETIRED.COND event=0xc4 umask=0x11 (precise)",
        ),
        (
            &["--backend", "linux", "--cpu-model", "adl_grt"],
            "BR_INST_RETIRED.ALL_BRANCHES event=0xc4 umask=0x00 (default, precise)",
        ),
    ] {
        let text = list(args);
        assert!(
            spaced_lines(&text)
                .iter()
                .any(|(indent, l)| *indent == 6 && l == wanted),
            "{args:?}: no line `{wanted}` in:\n{text}"
        );
    }
    // A MESI event resolves alone to all four cache states; the P5 has no unit masks.
    let text = list(&["--backend", "pctr", "--cpu-model", "p6", "L2_IFETCH"]);
    assert!(
        spaced_lines(&text)
            .iter()
            .any(|(_, l)| l == "L2_IFETCH event=0x28 umask=0x0f L2 instruction fetches"),
        "{text}"
    );
    let text = list(&["--backend", "msr", "--cpu-model", "p5", "DATA_READ"]);
    assert!(
        spaced_lines(&text)
            .iter()
            .any(|(_, l)| l == "DATA_READ event=0x00 Data reads"),
        "{text}"
    );
}

/// A name in Intel's spelling that libpfm4 encodes otherwise carries a note in `list` and
/// `encode`, text and JSON; a name both read alike carries none. Oracle: libpfm4's Haswell
/// table (libpfm4 4.13, which `events/tests/libpfm_fuzz.rs` checks it against) and Intel's.
#[test]
fn names_libpfm4_reads_otherwise_are_noted() {
    let text = list(&["--cpu-model", "hsw", "L2_RQSTS.RFO_HIT"]);
    assert!(
        text.contains("note: libpfm4 encodes `L2_RQSTS.RFO_HIT` as")
            && text.contains("`hsw::L2_RQSTS.RFO_HIT`"),
        "{text}"
    );
    let listed = list_json(&["--cpu-model", "hsw", "L2_RQSTS"]);
    let notes: Vec<&str> = natives(&listed)
        .iter()
        .flat_map(|e| e["umasks"].as_array().unwrap())
        .filter(|m| m["libpfm4_note"].is_string())
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(notes.contains(&"L2_RQSTS.RFO_HIT"), "{notes:?}");
    assert!(!notes.contains(&"L2_RQSTS.ALL_RFO"), "{notes:?}");
    let out = counterhal(&[
        "encode",
        "--cpu-model",
        "hsw",
        "--backend",
        "msr",
        "L2_RQSTS.RFO_HIT",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("note: libpfm4 encodes"),
        "{}",
        stdout(&out)
    );
    let out = counterhal(&[
        "encode",
        "--cpu-model",
        "hsw",
        "--backend",
        "msr",
        "L2_RQSTS.ALL_RFO",
    ]);
    assert!(!stdout(&out).contains("note:"), "{}", stdout(&out));
}
