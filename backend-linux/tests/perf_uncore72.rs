//! Every uncore event perf 7.2 lists, encoded by counterhal as perf 7.2 opens it. The oracle is
//! Debian sid's perf 7.2.13 (`linux-perf` 7.2.13-1) in the current-releases lab's root
//! (`scripts/current-lab`; `COUNTERHAL_CURRENT_LAB`, by default /var/cache/counterhal-lab), run
//! by the root's own loader. For each directory of perf 7.2's x86 mapfile with uncore JSON, a
//! private mount namespace puts a tree of the PMUs of our table for the model that detection
//! gives for the row's CPU over /sys/bus/event_source/devices (`uncore_cha_0`, `amd_l3`; their
//! `format/` files one field per term, wide enough for every value: perf and ours read the
//! same tree). `PERF_CPUID=CPU perf list -j` then gives every JSON uncore event perf 7.2 lists,
//! its PMU and its terms: ours must have the name on that PMU with those terms, or differ only
//! as the errata decide (docs/event-data-errata.md, "perf 7.2's uncore events": perf 6.1's
//! extended event select, [`KEPT_OLDER`]). `perf stat -vv -a -e NAME true` then opens by name
//! the names perf lists without terms (`amd_umc/umc_act_cmd.all/`), the deprecated names
//! (`perf list -j` leaves them out; perf takes them), and, for the tables Linux 7.2 adds
//! ([`STAT_DIRECTORIES`]), every name: each must open the attrs and CPUs that
//! `counterhal_linux::uncore_pmu_events` gives. A name ours keeps from Linux 6.12 or perf 6.1
//! that perf 7.2 does not know is opened by perf 7.2 in its PMU syntax with our terms
//! (`uncore_imc_0/event=4,umask=3/`), and must open alike.
//!
//! Figures (Linux 7.2's tables, 36 rows): of the 25,373 uncore events perf 7.2 lists, 24,851
//! have our PMU and terms and 522 are decisions of the errata (23,058 had before, from Linux
//! 6.12); 2,462 opened by name alike; 72 names perf 7.2 does not know opened alike by terms.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use counterhal_conformance::fixtures::perf_tree::{
    Asked, Open, build_shim, parse_perf, perf_7_2, run_perf_as,
};

use crate::perf_uncore::{Terms, normalized, opens};
use counterhal_conformance::skip::Need;
use counterhal_events::{CpuIdentity, Database};
use counterhal_system::PmuDevices;

/// perf 7.2's x86 mapfile directories with uncore JSON, each with a CPU of its row.
const ROWS: &[(&str, &str)] = &[
    ("alderlake", "GenuineIntel-6-97-2"),
    ("alderlaken", "GenuineIntel-6-BE-0"),
    ("arrowlake", "GenuineIntel-6-C6-2"),
    ("broadwell", "GenuineIntel-6-3D-4"),
    ("broadwellde", "GenuineIntel-6-56-0"),
    ("broadwellx", "GenuineIntel-6-4F-1"),
    ("cascadelakex", "GenuineIntel-6-55-7"),
    ("clearwaterforest", "GenuineIntel-6-DD-0"),
    ("emeraldrapids", "GenuineIntel-6-CF-2"),
    ("grandridge", "GenuineIntel-6-B6-0"),
    ("graniterapids", "GenuineIntel-6-AD-1"),
    ("haswell", "GenuineIntel-6-3C-3"),
    ("haswellx", "GenuineIntel-6-3F-2"),
    ("icelake", "GenuineIntel-6-7E-5"),
    ("icelakex", "GenuineIntel-6-6A-6"),
    ("ivybridge", "GenuineIntel-6-3A-0"),
    ("ivytown", "GenuineIntel-6-3E-0"),
    ("jaketown", "GenuineIntel-6-2D-0"),
    ("knightslanding", "GenuineIntel-6-57-0"),
    ("lunarlake", "GenuineIntel-6-BD-1"),
    ("meteorlake", "GenuineIntel-6-AA-4"),
    ("pantherlake", "GenuineIntel-6-CC-0"),
    ("rocketlake", "GenuineIntel-6-A7-1"),
    ("sandybridge", "GenuineIntel-6-2A-0"),
    ("sapphirerapids", "GenuineIntel-6-8F-8"),
    ("sierraforest", "GenuineIntel-6-AF-3"),
    ("skylake", "GenuineIntel-6-5E-3"),
    ("skylakex", "GenuineIntel-6-55-4"),
    ("snowridgex", "GenuineIntel-6-86-0"),
    ("tigerlake", "GenuineIntel-6-8C-1"),
    ("amdzen1", "AuthenticAMD-23-1-2"),
    ("amdzen2", "AuthenticAMD-23-31-0"),
    ("amdzen3", "AuthenticAMD-25-1-1"),
    ("amdzen4", "AuthenticAMD-25-17-1"),
    ("amdzen5", "AuthenticAMD-26-2-0"),
    ("amdzen6", "AuthenticAMD-26-80-0"),
];

/// The directories whose every uncore event is also opened by `perf stat` (Linux 7.2's new
/// tables).
const STAT_DIRECTORIES: &[&str] = &[
    "amdzen6",
    "arrowlake",
    "clearwaterforest",
    "lunarlake",
    "pantherlake",
];

/// Names whose terms ours keeps from Linux 6.12 where perf 7.2's differ: (directory, name
/// prefix). Skylake-SP's and Cascade Lake's CHA TOR events with an opcode filter: Linux 7.2's
/// JSON writes Intel perfmon's `Filter1` value (`FILTER_VALUE` 0x40233) as `config1=0x40233`,
/// which the kernel writes to FILTER0 (thread and state filters; perf 7.2 itself warns that
/// those bits are no format's); Linux 6.12's `config1=0x4023300000000` puts it in config1's
/// upper half, which `hswep_cbox_enable_event` writes to FILTER1 (arch/x86/events/intel/
/// uncore_snbep.c: `filter_opc_0` is `config1:41-50`).
const KEPT_OLDER: &[(&str, &str)] = &[
    ("skylakex", "unc_cha_tor_"),
    ("cascadelakex", "unc_cha_tor_"),
];

/// Each term's field in the tree's `format/` files: one field each, wide enough for every
/// value of the tables.
const FORMATS: &[(&str, &str)] = &[
    ("event", "config:0-15"),
    ("umask", "config:16-55"),
    ("edge", "config:56"),
    ("inv", "config:57"),
    ("cmask", "config:58-63"),
    ("ch_mask", "config2:0-15"),
    ("fc_mask", "config2:16-23"),
    ("enallcores", "config2:24"),
    ("enallslices", "config2:25"),
    ("sliceid", "config2:26-29"),
    ("threadmask", "config2:30-33"),
    ("rdwrmask", "config2:34-35"),
    ("occ_sel", "config2:36-39"),
    ("filter_opc", "config2:40-49"),
    ("filter_nc", "config2:50"),
    ("filter_tid", "config2:51-57"),
    ("filter_state", "config2:58-61"),
];

/// The tree's directory for a PMU of our tables: AMD's and numbered ones as named, an Intel
/// kind as its box 0.
fn box_name(pmu: &str) -> String {
    if pmu.starts_with("amd_") || pmu.ends_with(|c: char| c.is_ascii_digit()) {
        pmu.to_string()
    } else {
        format!("{pmu}_0")
    }
}

/// Writes the tree of `pmus` under `devices`.
fn write_tree(devices: &Path, pmus: &[&str]) {
    for (index, pmu) in pmus.iter().enumerate() {
        let dir = devices.join(box_name(pmu));
        std::fs::create_dir_all(dir.join("format")).unwrap();
        std::fs::write(dir.join("type"), format!("{}\n", 40 + index)).unwrap();
        std::fs::write(dir.join("cpumask"), "0\n").unwrap();
        for (name, bits) in FORMATS {
            std::fs::write(dir.join("format").join(name), format!("{bits}\n")).unwrap();
        }
    }
}

/// `PERF_CPUID=cpuid perf list -j` under `devices`: each uncore event's name (lower case),
/// PMU and terms.
fn perf_lists(perf: &[PathBuf], devices: &Path, cpuid: &str) -> Vec<(String, String, String)> {
    let script = r#"mount --bind "$1" /sys/bus/event_source/devices || exit 97
        shift
        exec "$@" list -j --deprecated"#;
    let output = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(devices)
        .args(perf)
        .env("PERF_CPUID", cpuid)
        .env("LC_ALL", "C")
        .output()
        .unwrap_or_else(|e| panic!("unshare: {e}"));
    assert!(
        output.status.success(),
        "perf list -j under the tree: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let listed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            // Some names come as the box's event (`uncore_cbox_0/unc_c_ring_sink_starved.iv/`).
            let name = e.get("EventName")?.as_str()?;
            let name = name.split('/').nth(1).unwrap_or(name);
            let (pmu, terms) = e.get("Encoding")?.as_str()?.split_once('/')?;
            let uncore = pmu.starts_with("uncore_") || pmu.starts_with("amd_");
            // The PMU's own syntax line (`amd_l3/edge,...,event=0..0xffff/modifier`).
            (uncore && !terms.contains("..")).then(|| {
                (
                    name.to_ascii_lowercase(),
                    pmu.to_string(),
                    terms.trim_end_matches('/').to_string(),
                )
            })
        })
        .collect()
}

/// Whether `ours` is `theirs` but for an `event` whose low byte is theirs and which has bits
/// above it: perf 6.1's extended event select (perfmon's `ExtSel`), which Linux 6.12's and
/// 7.2's JSON lost on Sandy Bridge-EP, Ivy Bridge-EP, Haswell-EP and Broadwell-EP (the kernel's
/// QPI and R3QPI formats put it at config bit 21: `event=config:0-7,21`, uncore_snbep.c).
fn extended_select(ours: &str, theirs: &str) -> bool {
    let ((mine, my_rest), (their, their_rest)) = (split(ours, "event"), split(theirs, "event"));
    mine > 0xff && mine & 0xff == their && my_rest == their_rest
}

/// `terms` as the value of its term `field` (0 without one) and the rest, normalized.
fn split(terms: &str, field: &str) -> (u64, Terms) {
    let mut rest = normalized(terms);
    let value = rest
        .iter()
        .position(|t| t.0 == field)
        .map(|i| rest.remove(i).1.unwrap_or(0));
    (value.unwrap_or(0), rest)
}

/// Whether perf 7.2 opened, by name, `ours` without the extended event select (config bit 21
/// under the tree's `event` field: bits 8-15), as [`extended_select`] explains.
fn extended_select_opens(ours: &[Open], theirs: &[Open]) -> bool {
    ours != theirs
        && ours.len() == theirs.len()
        && ours.iter().zip(theirs).all(|(o, t)| {
            o.1 & !0xff00 == t.1 && (o.0, o.2, o.3, o.4, o.5) == (t.0, t.2, t.3, t.4, t.5)
        })
}

/// Whether `theirs` is `ours` but for a `config1` shifted down 32 bits ([`KEPT_OLDER`]).
fn filter1_terms(ours: &str, theirs: &str) -> bool {
    let ((mine, my_rest), (their, their_rest)) = (split(ours, "config1"), split(theirs, "config1"));
    their != 0 && mine == their << 32 && my_rest == their_rest
}

/// Whether perf 7.2 opened `ours` with config1 shifted down 32 bits, as [`KEPT_OLDER`] says.
fn filter1_opens(ours: &[Open], theirs: &[Open]) -> bool {
    ours.len() == theirs.len()
        && !ours.is_empty()
        && ours.iter().zip(theirs).all(|(o, t)| {
            t.2 != 0 && o.2 == t.2 << 32 && (o.0, o.1, o.3, o.4, o.5) == (t.0, t.1, t.3, t.4, t.5)
        })
}

/// What `counterhal_linux::uncore_pmu_events` opens for `name` under `devices`.
fn our_opens(devices: &Path, db: &Database, model: &str, name: &str) -> Vec<Open> {
    match counterhal_linux::uncore_pmu_events(&PmuDevices::at(devices), db, Some(model), name) {
        Some(Ok(ours)) => opens(&ours),
        _ => Vec::new(),
    }
}

/// `perf stat -vv -a -e ITEM true` of perf 7.2 for each of `items` under `devices`, read by
/// `parse_perf` (which reads perf 6.1's attr lines: perf 7.2 names the PMU and event after a
/// value, `type 30 (uncore_imc_0)`, and those names are dropped first).
fn perf_stat(
    perf: &[PathBuf],
    devices: &Path,
    shim: &Path,
    items: &[String],
    cpuid: &str,
) -> BTreeMap<String, counterhal_conformance::fixtures::perf_tree::PerfSaw> {
    if items.is_empty() {
        return BTreeMap::new();
    }
    let output = run_perf_as(perf, devices, shim, Asked::Events, items, Some(cpuid))
        .unwrap_or_else(|why| panic!("perf 7.2 under {}: {why}", devices.display()));
    let output: String = output
        .lines()
        .map(|line| match line.trim_end().strip_suffix(')') {
            Some(rest) if line.starts_with("  ") && rest.contains(" (") => {
                format!("{}\n", &rest[..rest.rfind(" (").unwrap_or(rest.len())])
            }
            _ => format!("{line}\n"),
        })
        .collect();
    parse_perf(&output)
}

/// Oracle: perf 7.2.13 (Debian sid's), `perf list -j` and `perf stat -vv` under a tree of each
/// model's uncore PMUs, as the module's documentation says.
#[test]
fn every_uncore_event_perf_7_2_lists_encodes_as_perf_7_2_opens_it() {
    if let Some((need, why)) = counterhal_conformance::fixtures::perf_tree::unready() {
        counterhal_conformance::skip!(need, "{why}");
    }
    let perf = match perf_7_2() {
        Ok(perf) => perf,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "{why}"),
    };
    let db = Database::shipped().unwrap();
    let shim = build_shim("uncore72").unwrap();
    let scratch = shim.parent().unwrap().to_path_buf();
    let (mut listed_total, mut alike_total, mut kept_total) = (0, 0, 0);
    let (mut old_total, mut old_alike, mut stat_total, mut stat_alike) = (0, 0, 0, 0);
    let mut stat_kept = 0;
    let mut wrong = Vec::new();
    let mut models = Vec::new();
    for &(dir, cpuid) in ROWS {
        let cpu = CpuIdentity::from_signature(cpuid).unwrap();
        let model = db
            .detect(&cpu)
            .unwrap_or_else(|| panic!("{dir}: {cpuid} detects no model"))
            .id
            .clone();
        let table = db.uncore_table(&model);
        assert!(!table.is_empty(), "{dir} ({model}): no uncore table");
        models.push(model.clone());
        let mut pmus: Vec<&str> = table.iter().map(|e| e.pmu).collect();
        pmus.sort_unstable();
        pmus.dedup();
        let devices = scratch.join(dir).join("devices");
        write_tree(&devices, &pmus);
        let listed = perf_lists(&perf, &devices, cpuid);
        let (mut alike, mut kept) = (0, 0);
        // perf 7.2 lists the events of a PMU named without a box number by name
        // (`amd_umc/umc_act_cmd.all/`): those are opened by `perf stat`.
        let mut by_name = Vec::new();
        for (name, pmu, terms) in &listed {
            let ours = db.uncore_events(&model, name);
            if !terms.contains('=') {
                by_name.push(name.clone());
                continue;
            }
            if ours
                .iter()
                .any(|e| e.pmu == pmu && extended_select(&e.terms, terms))
            {
                kept += 1;
                continue;
            }
            let same = ours
                .iter()
                .any(|e| e.pmu == pmu && normalized(&e.terms) == normalized(terms));
            if same {
                alike += 1;
            } else if KEPT_OLDER
                .iter()
                .any(|(d, prefix)| *d == dir && name.starts_with(prefix))
                && ours
                    .iter()
                    .any(|e| e.pmu == pmu && filter1_terms(&e.terms, terms))
            {
                kept += 1;
            } else {
                let ours: Vec<String> = ours.iter().map(|e| e.on_pmu(e.pmu, "")).collect();
                wrong.push(format!(
                    "{dir} {name}: perf 7.2 {pmu}/{terms}/, ours {ours:?}"
                ));
            }
        }
        // The names ours has that perf 7.2 does not list (`perf list -j` leaves out the
        // deprecated ones, which it still takes by name), and those it lists by name alone:
        // opened by name. A name perf 7.2 does not know (ours keeps it from Linux 6.12 or perf
        // 6.1) is opened again in perf's PMU syntax with our terms.
        let known: Vec<&str> = listed.iter().map(|l| l.0.as_str()).collect();
        let unlisted: Vec<String> = table
            .iter()
            .filter(|e| !known.contains(&e.name.to_ascii_lowercase().as_str()))
            .map(|e| e.name.clone())
            .collect();
        let stat = STAT_DIRECTORIES.contains(&dir);
        let mut names: Vec<String> = match stat {
            true => table.iter().map(|e| e.name.clone()).collect(),
            false => unlisted.iter().chain(&by_name).cloned().collect(),
        };
        names.sort_unstable();
        names.dedup();
        let saw = perf_stat(&perf, &devices, &shim, &names, cpuid);
        let mut unknown = Vec::new();
        for name in &names {
            if saw[name].aliases.is_empty() {
                unknown.push(name.clone());
                continue;
            }
            let ours = our_opens(&devices, &db, &model, name);
            let mut theirs = saw[name].opens.clone();
            theirs.sort_unstable();
            let equal = ours == theirs && !ours.is_empty();
            let kept_older = extended_select_opens(&ours, &theirs)
                || filter1_opens(&ours, &theirs)
                    && KEPT_OLDER
                        .iter()
                        .any(|(d, p)| *d == dir && name.to_ascii_lowercase().starts_with(p));
            stat_total += 1;
            stat_alike += usize::from(equal);
            stat_kept += usize::from(kept_older);
            if !equal && !kept_older {
                wrong.push(format!(
                    "{dir} {name}: ours {ours:x?}, perf 7.2 {theirs:x?}"
                ));
            }
        }
        let written: Vec<String> = unknown
            .iter()
            .flat_map(|name| db.uncore_events(&model, name))
            .map(|e| e.on_pmu(&box_name(e.pmu), ""))
            .collect();
        let by_terms = perf_stat(&perf, &devices, &shim, &written, cpuid);
        for name in &unknown {
            let ours = our_opens(&devices, &db, &model, name);
            let mut theirs: Vec<Open> = db
                .uncore_events(&model, name)
                .iter()
                .flat_map(|e| by_terms[&e.on_pmu(&box_name(e.pmu), "")].opens.clone())
                .collect();
            theirs.sort_unstable();
            old_total += 1;
            if ours == theirs && !ours.is_empty() {
                old_alike += 1;
            } else {
                wrong.push(format!(
                    "{dir} {name} by its terms: ours {ours:x?}, perf 7.2 {theirs:x?}"
                ));
            }
        }
        println!(
            "{dir} ({model}, PERF_CPUID={cpuid}): perf 7.2 lists {} uncore events, {alike} \
             alike, {kept} kept older (errata); {} names it does not list, {} of them unknown to \
             it{}",
            listed.len(),
            unlisted.len(),
            unknown.len(),
            if stat {
                ", every name opened by perf stat"
            } else {
                ""
            }
        );
        listed_total += listed.len();
        alike_total += alike;
        kept_total += kept;
    }
    std::fs::remove_dir_all(&scratch).unwrap();
    // Every shipped table is a row's: each model detection gives a row's CPU.
    models.sort_unstable();
    let mut shipped: Vec<String> = counterhal_events::shipped_uncore_models()
        .iter()
        .map(|m| m.to_string())
        .collect();
    shipped.sort_unstable();
    assert_eq!(
        models, shipped,
        "the rows' models and the shipped uncore tables"
    );
    let by_dir: BTreeMap<&str, usize> = wrong.iter().fold(BTreeMap::new(), |mut m, w| {
        *m.entry(w.split(' ').next().unwrap_or_default())
            .or_default() += 1;
        m
    });
    println!(
        "all: perf 7.2 lists {listed_total} uncore events over {} rows: {alike_total} with \
         our PMU and terms, {kept_total} kept older (errata); by name, {stat_alike} of \
         {stat_total} opened alike ({stat_kept} kept older); {old_alike} of {old_total} names \
         perf 7.2 does not know opened alike by their terms; differing by row: {by_dir:?}",
        ROWS.len()
    );
    assert!(
        wrong.is_empty(),
        "{} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
