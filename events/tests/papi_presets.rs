//! Every preset of every model against PAPI's own mapping.
//!
//! Oracles: PAPI 7.0's preset table as Debian's libpapi7.0 installs it
//! (`/usr/share/papi/7.0/papi_events.csv`), read here the way PAPI's `papi_load_derived_events`
//! (src/papi_preset.c) reads it, with this file's own reader and its own evaluation of PAPI's
//! forms (`handle_derived` and `_papi_hwi_postfix_calc` in src/papi_internal.c, evaluated on
//! unit vectors); each native event encoded by the installed libpfm4 4.13 as PAPI's
//! perf_event component encodes it (`pfm_get_os_event_encoding` on the PMU, user and kernel);
//! and the preset names and descriptions `papi_avail` prints.
//!
//! For each libpfm4 PMU of the table with a model here, each preset PAPI offers there (all its
//! natives encode) must map here to the same natives, by their encodings (EVTSEL with bit 20
//! masked, and the second register where libpfm4 gives one), with the same factors; a preset
//! PAPI cannot offer (libpfm4 refuses a native) must not be mapped here; a preset mapped here
//! and not in PAPI's table must be one PAPI's table lacks. Every other case is a verdict in
//! `tests/data/papi-presets.toml`, with its reason, and every verdict must still apply. Needs
//! PAPI's table, a C compiler and libpfm4 (Debian `libpapi7.0`, `libpfm4-dev`).

use std::collections::BTreeMap;
use std::path::Path;

use counterhal_conformance::skip::Need;
use counterhal_events::{CpuModel, Database};
use counterhal_hal::{Encoding, GeneralizedEvent, Preset, Sign};
use serde::Deserialize;

use crate::common;

const CSV: &str = "/usr/share/papi/7.0/papi_events.csv";

/// Where Debian's libpapi7.2 installs PAPI 7.2's table (in the lab's sid root).
const CSV_7_2: &str = "/usr/share/papi/7.2/papi_events.csv";

/// Encodes `pmu::native` per input line `pmu<TAB>native`: `C code0 count code1` or `E error`;
/// for a line `?` lists the PMUs libpfm4 knows (`P name`) and ends with `.`.
const PROGRAM: &str = r#"
#include <perfmon/pfmlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    char line[4096];
    if (pfm_initialize() != PFM_SUCCESS) { printf("INIT-FAILED\n"); return 1; }
    while (fgets(line, sizeof line, stdin)) {
        char text[4200], *tab;
        pfm_pmu_encode_arg_t arg;
        int ret, p;
        line[strcspn(line, "\n")] = 0;
        if (!strcmp(line, "?")) {
            for (p = 0; p < PFM_PMU_MAX; p++) {
                pfm_pmu_info_t pmu;
                memset(&pmu, 0, sizeof pmu);
                pmu.size = sizeof pmu;
                if (pfm_get_pmu_info(p, &pmu) == PFM_SUCCESS) printf("P\t%s\n", pmu.name);
            }
            printf(".\n");
            continue;
        }
        tab = strchr(line, '\t');
        if (!tab) { printf("E\tbad query\n"); continue; }
        *tab = 0;
        snprintf(text, sizeof text, "%s::%s", line, tab + 1);
        memset(&arg, 0, sizeof arg);
        arg.size = sizeof arg;
        ret = pfm_get_os_event_encoding(text, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg);
        if (ret != PFM_SUCCESS) { printf("E\t%s\n", pfm_strerror(ret)); continue; }
        printf("C\t%llx\t%d\t%llx\n", (unsigned long long)arg.codes[0], arg.count,
               arg.count > 1 ? (unsigned long long)arg.codes[1] : 0ULL);
        free(arg.codes);
    }
    return 0;
}
"#;

/// `tests/data/papi-presets.toml`.
#[derive(Deserialize)]
struct Verdicts {
    /// libpfm4 PMU names of the table that are not a model's id or alias here.
    #[serde(default)]
    pmu: Vec<PmuModel>,
    /// libpfm4 PMUs of the table with no model.
    #[serde(default)]
    not_covered: Vec<NotCovered>,
    /// Blocks of the table PAPI never reads, with why.
    #[serde(default)]
    ignored: Vec<NotCovered>,
    verdict: Vec<Verdict>,
}

#[derive(Deserialize)]
struct PmuModel {
    name: String,
    model: String,
    reason: String,
}

#[derive(Deserialize)]
struct NotCovered {
    pmu: String,
    reason: String,
}

/// Presets of some models (`*`: all presets) that differ from PAPI's, and why.
#[derive(Deserialize)]
struct Verdict {
    models: Vec<String>,
    presets: Vec<String>,
    /// `grammar` (libpfm4's spelling resolves differently here: issue 27 item 1), `data`
    /// (our table or libpfm4's lacks or differs), `papi-lacks` (PAPI's table has no such preset
    /// for the PMU), `no-papi-block` (no PAPI block for the model), `papi` (PAPI's own defect),
    /// `papi-7.2` (against PAPI 7.0's table: PAPI 7.2's, the shipped one, changed it).
    kind: String,
    reason: String,
}

/// One preset of PAPI's table for a PMU: derived type, postfix and natives.
#[derive(Clone, Debug)]
struct CsvPreset {
    derived: String,
    postfix: Option<String>,
    natives: Vec<String>,
}

/// PAPI's reader (src/papi_preset.c): `strtok` fields trimmed of blanks; a run of CPU lines
/// opens a block when one names the PMU, a CPU line after presets closes it; later
/// definitions replace earlier ones; at most 8 natives, ending at NOTE/LDESC/SDESC.
fn papi_table(text: &str, pmu: &str) -> BTreeMap<String, CsvPreset> {
    let mut presets = BTreeMap::new();
    let (mut reading, mut found) = (false, false);
    for line in text.lines() {
        let mut fields = line
            .split(',')
            .map(|f| f.trim_matches([' ', '\t']))
            .filter(|f| !f.is_empty());
        let Some(first) = fields.next() else { continue };
        if first.eq_ignore_ascii_case("CPU") {
            if reading && found {
                (reading, found) = (false, false);
            }
            if fields.next().is_some_and(|n| n.eq_ignore_ascii_case(pmu)) {
                reading = true;
            }
        } else if first.eq_ignore_ascii_case("PRESET") && reading {
            found = true;
            let (Some(name), Some(derived)) = (fields.next(), fields.next()) else {
                continue;
            };
            let postfix = (derived == "DERIVED_POSTFIX")
                .then(|| fields.next().map(str::to_string))
                .flatten();
            let natives: Vec<String> = fields
                .take_while(|f| !matches!(*f, "NOTE" | "LDESC" | "SDESC"))
                .take(8)
                .map(str::to_string)
                .collect();
            // Another component's preset (PAPI 7.2's `PAPI_CUDA_*` on `cuda:::` natives, in
            // its arm_v1 block), which PAPI offers only with that component.
            if natives.iter().any(|n| n.contains(":::")) {
                continue;
            }
            presets.insert(
                name.to_ascii_uppercase(),
                CsvPreset {
                    derived: derived.to_string(),
                    postfix,
                    natives,
                },
            );
        }
    }
    presets
}

/// PAPI's value of a preset as a factor per native, computed the way PAPI computes it, on
/// unit vectors (`None`: a form that is no weighted sum, such as a rate).
fn papi_factors(preset: &CsvPreset) -> Option<Vec<f64>> {
    let n = preset.natives.len();
    let unit = |k: usize| {
        (0..=n)
            .map(|i| f64::from(u8::from(i == k)))
            .collect::<Vec<_>>()
    };
    match preset.derived.as_str() {
        "NOT_DERIVED" | "DERIVED_CMPD" => Some(unit(0)[..n].to_vec()),
        "DERIVED_ADD" => Some(vec![1.0; n]),
        "DERIVED_SUB" => Some((0..n).map(|i| if i == 0 { 1.0 } else { -1.0 }).collect()),
        "DERIVED_POSTFIX" => {
            // Each value: a factor per native and a constant (index n).
            let mut stack: Vec<Vec<f64>> = Vec::new();
            let formula = preset.postfix.as_deref()?;
            let mut chars = formula.chars().peekable();
            while let Some(c) = chars.next() {
                let mut digits = String::new();
                if c == 'N' || c.is_ascii_digit() {
                    if c != 'N' {
                        digits.push(c);
                    }
                    while let Some(d) = chars.next_if(char::is_ascii_digit) {
                        digits.push(d);
                    }
                    let value: usize = digits.parse().ok()?;
                    stack.push(if c == 'N' {
                        (value < n).then(|| unit(value))?
                    } else {
                        let mut constant = vec![0.0; n + 1];
                        constant[n] = value as f64;
                        constant
                    });
                    continue;
                }
                if c == '|' {
                    continue;
                }
                let (b, a) = (stack.pop()?, stack.pop()?);
                let constant = |v: &[f64]| v[..n].iter().all(|x| *x == 0.0).then_some(v[n]);
                let value: Vec<f64> = match c {
                    '+' => a.iter().zip(&b).map(|(x, y)| x + y).collect(),
                    '-' => a.iter().zip(&b).map(|(x, y)| x - y).collect(),
                    '*' => match (constant(&a), constant(&b)) {
                        (_, Some(k)) => a.iter().map(|x| x * k).collect(),
                        (Some(k), _) => b.iter().map(|x| x * k).collect(),
                        _ => return None,
                    },
                    '/' => {
                        let k = constant(&b)?;
                        a.iter().map(|x| x / k).collect()
                    }
                    _ => return None,
                };
                stack.push(value);
            }
            let [value] = stack.as_slice() else {
                return None;
            };
            (value[n] == 0.0).then(|| value[..n].to_vec())
        }
        _ => None,
    }
}

/// An encoding: the EVTSEL (bit 20 masked) and the second register's value, if any.
type Code = (u64, Option<u64>);

/// What PAPI offers for a preset on a PMU.
enum Papi {
    /// Each native's encoding with its factor (natives PAPI opens but does not count omitted).
    Offered(BTreeMap<Code, i64>),
    /// Natives compared by name (no libpfm4 PMU here to encode them).
    ByName(BTreeMap<String, i64>),
    /// Not offered: why.
    Refused(String),
}

/// Our mapping of a preset, in the same terms.
fn ours(
    db: &Database,
    model: &CpuModel,
    preset: GeneralizedEvent,
    by_name: bool,
) -> Result<Papi, String> {
    let Some(mapping) = model.mapping(preset) else {
        let why = model
            .refused_presets()
            .iter()
            .find(|(e, _)| *e == preset)
            .map_or("not mapped".to_string(), |(_, why)| why.clone());
        return Err(why);
    };
    let mut codes = BTreeMap::new();
    let mut names = BTreeMap::new();
    for (sign, factor, text) in mapping.terms() {
        let factor = i64::from(factor) * if sign == Sign::Minus { -1 } else { 1 };
        *names.entry(text.clone()).or_insert(0) += factor;
        if by_name {
            continue;
        }
        let resolved = db
            .resolve_exact(Some(&model.id), &text, &common::X86)
            .map_err(|e| format!("term `{text}` does not resolve: {e}"))?;
        let Encoding::Evtsel(evtsel) = &resolved.terms[0].request.encoding else {
            return Err(format!("term `{text}` is no EVTSEL"));
        };
        let code = (
            evtsel.register_value() & !(1 << 20),
            evtsel.extra.map(|e| e.value),
        );
        *codes.entry(code).or_insert(0) += factor;
    }
    codes.retain(|_, f| *f != 0);
    names.retain(|_, f| *f != 0);
    Ok(if by_name {
        Papi::ByName(names)
    } else {
        Papi::Offered(codes)
    })
}

/// PAPI 7.2's table (the shipped presets' source), its natives encoded by libpfm4's head, as
/// the current-releases lab's Debian sid root installs both (`scripts/current-lab`); the
/// verdicts are `tests/data/papi-presets-7.2.toml`.
#[test]
fn every_preset_of_every_model_is_papi_7_2s_or_has_a_verdict() {
    let root = match common::libpfm::head_root() {
        Ok(root) => root,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "{why}"),
    };
    let csv = root.join(CSV_7_2.trim_start_matches('/'));
    let text = match std::fs::read_to_string(&csv) {
        Ok(text) => text,
        Err(e) => counterhal_conformance::skip!(
            Need::Tools,
            "PAPI 7.2's preset table {} is not readable (scripts/current-lab installs \
             libpapi-dev in the sid root): {e}",
            csv.display()
        ),
    };
    let verdicts: Verdicts = toml::from_str(include_str!("data/papi-presets-7.2.toml"))
        .expect("papi-presets-7.2.toml parses");
    every_preset_is_papis(&text, Some(&root), &verdicts, "papi-presets-7.2.toml");
}

/// PAPI 7.0's table as Debian 12 installs it, its natives encoded by the installed libpfm4
/// 4.13; the verdicts are `tests/data/papi-presets.toml`, whose `papi-7.2` verdicts are the
/// presets PAPI 7.2's table changed.
#[test]
fn every_preset_of_every_model_is_papi_7_0s_or_has_a_verdict() {
    let text = match std::fs::read_to_string(CSV) {
        Ok(text) => text,
        Err(e) => counterhal_conformance::skip!(
            Need::Tools,
            "PAPI's preset table {CSV} is not readable (Debian libpapi7.0 installs it): {e}"
        ),
    };
    let verdicts: Verdicts =
        toml::from_str(include_str!("data/papi-presets.toml")).expect("papi-presets.toml parses");
    every_preset_is_papis(&text, None, &verdicts, "papi-presets.toml");
}

/// Every preset of every model against PAPI's table `text`, its natives encoded by the
/// libpfm4 of Debian root `root` (the installed one for `None`), with `verdicts` (from the
/// file `file`).
fn every_preset_is_papis(text: &str, root: Option<&Path>, verdicts: &Verdicts, file: &str) {
    // A binary of its own for each oracle: the two tests run at once.
    let stem = format!("papi-presets-{}", file.trim_end_matches(".toml"));
    let binary = match common::libpfm::build_for(root, PROGRAM, &stem) {
        Ok(binary) => binary,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "libpfm4 helper not built: {why}"),
    };
    let answers =
        |lines: &[String]| common::libpfm::answers_in(root, &binary, lines).expect("libpfm4 runs");
    let listing = answers(&["?".to_string()]);
    let libpfm_pmus: Vec<&str> = listing
        .iter()
        .filter_map(|l| l.strip_prefix("P\t"))
        .collect();
    let db = Database::shipped().expect("shipped database loads");
    for v in &verdicts.verdict {
        assert!(
            !v.models.is_empty() && !v.presets.is_empty() && !v.reason.is_empty(),
            "a verdict without models, presets or reason: {:?} {:?}",
            v.models,
            v.presets
        );
        assert!(
            [
                "grammar",
                "data",
                "papi-lacks",
                "no-papi-block",
                "papi",
                "papi-7.2"
            ]
            .contains(&v.kind.as_str()),
            "unknown verdict kind `{}`",
            v.kind
        );
    }
    let mut used: Vec<Vec<bool>> = verdicts
        .verdict
        .iter()
        .map(|v| vec![false; v.presets.len()])
        .collect();
    let mut covering = |model: &str, preset: &str| -> Option<(String, String)> {
        for (i, v) in verdicts.verdict.iter().enumerate() {
            if !v.models.iter().any(|m| m == model) {
                continue;
            }
            if let Some(p) = v.presets.iter().position(|p| p == preset || p == "*") {
                used[i][p] = true;
                return Some((v.kind.clone(), v.reason.clone()));
            }
        }
        None
    };
    // The table's CPU names, in order, each once.
    let mut names: Vec<&str> = Vec::new();
    for line in text.lines() {
        let mut fields = line.split(',').map(str::trim);
        if fields.next() == Some("CPU")
            && let Some(name) = fields.next()
            && !names.contains(&name)
        {
            names.push(name);
        }
    }
    let mut problems = Vec::new();
    let mut models_seen: BTreeMap<String, String> = BTreeMap::new();
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    let mut per_model = Vec::new();
    for name in names {
        if verdicts.ignored.iter().any(|i| i.pmu == name) {
            continue;
        }
        let listed = verdicts.pmu.iter().find(|p| p.name == name);
        let model = match listed {
            Some(p) => db.model(&p.model),
            None => db.model(name),
        };
        let not_covered = verdicts.not_covered.iter().any(|n| n.pmu == name);
        let Some(model) = model else {
            if libpfm_pmus.contains(&name) && !not_covered {
                problems.push(format!(
                    "PAPI's table has presets for libpfm4 PMU `{name}`, which no model covers and {file} does not list"
                ));
            }
            continue;
        };
        if models_seen.contains_key(&model.id) {
            // Another libpfm4 name of the same model (amd64_k8_revb for amd64_k8_revc): its
            // presets must be the same table.
            let first = &models_seen[&model.id];
            let (a, b) = (papi_table(text, first), papi_table(text, name));
            let same = a.len() == b.len()
                && a.iter().zip(&b).all(|((n, p), (m, q))| {
                    n == m
                        && p.derived == q.derived
                        && p.postfix == q.postfix
                        && p.natives == q.natives
                });
            if !same {
                problems.push(format!(
                    "{}: PAPI's presets for `{name}` differ from `{first}`'s",
                    model.id
                ));
            }
            continue;
        }
        models_seen.insert(model.id.clone(), name.to_string());
        let table = papi_table(text, name);
        let encodable = libpfm_pmus.contains(&name);
        // Every native once, encoded by libpfm4.
        let natives: Vec<&String> = table.values().flat_map(|p| &p.natives).collect();
        let codes: BTreeMap<&String, Result<Code, String>> = if encodable {
            let queries: Vec<String> = natives.iter().map(|n| format!("{name}\t{n}")).collect();
            let answers = answers(&queries);
            natives
                .iter()
                .zip(answers)
                .map(|(n, a)| {
                    let fields: Vec<&str> = a.split('\t').collect();
                    let code = match fields.as_slice() {
                        ["C", code, count, second] => {
                            let code = u64::from_str_radix(code, 16).unwrap() & !(1 << 20);
                            let second =
                                (*count != "1").then(|| u64::from_str_radix(second, 16).unwrap());
                            Ok((code, second))
                        }
                        [_, error] => Err(format!("libpfm4 refuses `{n}`: {error}")),
                        _ => Err(format!("libpfm4 answered `{a}`")),
                    };
                    (*n, code)
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        let (mut equal, mut offered) = (0, 0);
        for (preset_name, preset) in &table {
            let Some(preset_event) = Preset::from_name(preset_name) else {
                problems.push(format!("{name}: `{preset_name}` is no preset name here"));
                continue;
            };
            let event = GeneralizedEvent::Preset(preset_event);
            let theirs = match papi_factors(preset) {
                None => Papi::Refused(format!("{} is no weighted sum", preset.derived)),
                Some(factors) if !encodable => Papi::ByName(
                    preset
                        .natives
                        .iter()
                        .zip(&factors)
                        .filter(|(_, f)| **f != 0.0)
                        .map(|(n, f)| (n.clone(), *f as i64))
                        .collect(),
                ),
                Some(factors) => {
                    let mut map = BTreeMap::new();
                    let mut refused = None;
                    for (native, factor) in preset.natives.iter().zip(&factors) {
                        match &codes[native] {
                            Ok(code) => *map.entry(*code).or_insert(0) += *factor as i64,
                            Err(why) => refused = Some(why.clone()),
                        }
                    }
                    map.retain(|_, f| *f != 0);
                    match refused {
                        Some(why) => Papi::Refused(why),
                        None => Papi::Offered(map),
                    }
                }
            };
            let mine = ours(&db, model, event, !encodable);
            let difference = match (&theirs, &mine) {
                (Papi::Refused(_), Err(_)) => {
                    *tally
                        .entry("not offered by PAPI, nor mapped here")
                        .or_default() += 1;
                    continue;
                }
                (Papi::Offered(a), Ok(Papi::Offered(b))) if a == b => None,
                (Papi::ByName(a), Ok(Papi::ByName(b))) if a == b => None,
                (Papi::Refused(why), Ok(_)) => {
                    Some(format!("mapped here, but PAPI does not offer it: {why}"))
                }
                (_, Err(why)) => Some(format!("PAPI offers it, not mapped here: {why}")),
                (theirs, Ok(mine)) => Some(format!(
                    "differs: PAPI {}, ours {}",
                    show(theirs),
                    show(mine)
                )),
            };
            offered += usize::from(!matches!(theirs, Papi::Refused(_)));
            match difference {
                None => {
                    equal += 1;
                    let key = if encodable {
                        "equal, every native's encoding libpfm4's"
                    } else {
                        "equal by name (no libpfm4 PMU to encode)"
                    };
                    *tally.entry(key).or_default() += 1;
                }
                Some(what) => match covering(&model.id, preset_name) {
                    Some((kind, _)) => *tally.entry(verdict_label(&kind)).or_default() += 1,
                    None => problems.push(format!("{} ({name}) {preset_name}: {what}", model.id)),
                },
            }
        }
        // Presets mapped here that PAPI's table lacks for the PMU.
        for mapping in model.mappings() {
            let GeneralizedEvent::Preset(p) = mapping.event else {
                continue;
            };
            if table.contains_key(p.name()) {
                continue;
            }
            match covering(&model.id, p.name()) {
                Some((kind, _)) if kind == "papi-lacks" || kind == "papi-7.2" => {
                    *tally
                        .entry("mapped here, PAPI's table lacks it (verdict)")
                        .or_default() += 1
                }
                _ => problems.push(format!(
                    "{} ({name}) {}: mapped here, not in PAPI's table, and no papi-lacks verdict",
                    model.id,
                    p.name()
                )),
            }
        }
        per_model.push(format!(
            "{:24} {name:24} PAPI {:3}, offered {:3}, equal {:3}",
            model.id,
            table.len(),
            offered,
            equal
        ));
    }
    // Models with no PAPI block: every preset needs a verdict.
    for model in db.models() {
        if models_seen.contains_key(&model.id) {
            continue;
        }
        for mapping in model.mappings() {
            let GeneralizedEvent::Preset(p) = mapping.event else {
                continue;
            };
            match covering(&model.id, p.name()) {
                Some((kind, _)) if kind == "no-papi-block" || kind == "papi-7.2" => {
                    *tally
                        .entry("mapped here, no PAPI block for the model (verdict)")
                        .or_default() += 1
                }
                _ => problems.push(format!(
                    "{} {}: no PAPI block for this model, and no no-papi-block verdict",
                    model.id,
                    p.name()
                )),
            }
        }
    }
    for line in &per_model {
        println!("{line}");
    }
    for (what, count) in &tally {
        println!("{count:5} {what}");
    }
    assert!(
        problems.is_empty(),
        "{} presets differ from PAPI's without a verdict in tests/data/{file}:\n{}",
        problems.len(),
        problems.join("\n")
    );
    let stale: Vec<String> = verdicts
        .verdict
        .iter()
        .zip(&used)
        .flat_map(|(v, used)| {
            v.presets
                .iter()
                .zip(used)
                .filter(|(_, u)| !**u)
                .map(move |(p, _)| format!("{:?} {p} ({})", v.models, v.reason))
        })
        .collect();
    assert!(
        stale.is_empty(),
        "verdicts in tests/data/{file} that no longer apply:\n{}",
        stale.join("\n")
    );
    for p in &verdicts.pmu {
        assert!(
            !p.reason.is_empty() && db.model(&p.model).is_some(),
            "pmu {} -> {}",
            p.name,
            p.model
        );
    }
    for n in &verdicts.not_covered {
        assert!(
            !n.reason.is_empty() && db.model(&n.pmu).is_none(),
            "not covered: {}",
            n.pmu
        );
    }
    assert!(
        models_seen.len() >= 40,
        "only {} models have PAPI presets",
        models_seen.len()
    );
}

fn verdict_label(kind: &str) -> &'static str {
    match kind {
        "grammar" => "differ: natives not read through libpfm4's grammar",
        "data" => "differ: data (verdict)",
        "papi" => "differ: PAPI with libpfm4 4.13 cannot offer it, kept hand-written (verdict)",
        "papi-lacks" => "differ: PAPI's table lacks it (verdict)",
        "papi-7.2" => "differ: PAPI 7.2's table changed it (verdict)",
        _ => "differ: other (verdict)",
    }
}

fn show(papi: &Papi) -> String {
    match papi {
        Papi::Offered(map) => map
            .iter()
            .map(|((code, extra), f)| match extra {
                Some(e) => format!("{f}*{code:#x}/{e:#x}"),
                None => format!("{f}*{code:#x}"),
            })
            .collect::<Vec<_>>()
            .join(" + "),
        Papi::ByName(map) => map
            .iter()
            .map(|(n, f)| format!("{f}*{n}"))
            .collect::<Vec<_>>()
            .join(" + "),
        Papi::Refused(why) => format!("refused ({why})"),
    }
}

/// Oracle: `papi_avail` (Debian papi-tools) lists PAPI 7.0's 108 presets with their codes and
/// descriptions; ours are the same names, in PAPI's order of codes where they were added, with
/// the same descriptions.
#[test]
fn preset_names_and_descriptions_are_papis() {
    let output = match std::process::Command::new("papi_avail").output() {
        Ok(output) => output,
        Err(e) => counterhal_conformance::skip!(
            Need::Tools,
            "papi_avail (Debian papi-tools) does not run: {e}"
        ),
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let mut theirs = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("PAPI_")) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let description = fields[4..].join(" ");
        theirs.push((fields[0].to_string(), description));
    }
    if theirs.is_empty() {
        counterhal_conformance::skip!(
            Need::Tools,
            "papi_avail listed no presets: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert_eq!(theirs.len(), 108, "PAPI 7.0 has 108 presets");
    assert_eq!(Preset::ALL.len(), theirs.len());
    for (name, description) in &theirs {
        let preset = Preset::from_name(name).unwrap_or_else(|| panic!("{name} is no preset here"));
        // papi_avail appends a note in parentheses to some.
        assert!(
            description.starts_with(preset.description()),
            "{name}: PAPI `{description}`, ours `{}`",
            preset.description()
        );
    }
    // PAPI_BR_MSP is, by PAPI's own description, conditional branches.
    assert_eq!(
        Preset::BrMsp.description(),
        "Conditional branch instructions mispredicted"
    );
}
