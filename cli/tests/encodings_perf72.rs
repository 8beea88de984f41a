//! Every core event perf 7.2 lists, encoded by counterhal as perf 7.2 opens it: the oracle is
//! Debian sid's perf 7.2.13 (`linux-perf` 7.2.13-1) in the current-releases lab's root
//! (`scripts/current-lab`, under `COUNTERHAL_CURRENT_LAB`, by default
//! /var/cache/counterhal-lab), run by the root's own loader. perf lists a model's JSON events
//! only where the model's core PMU is there, so for each row of perf 7.2's x86 mapfile that
//! `tests/data/encodings_perf72.toml` lists, a private mount namespace puts a core PMU tree of
//! the row's kind over /sys/bus/event_source/devices: `cpu` (Intel or AMD), or a hybrid chip's
//! `cpu_core` (type 4) and `cpu_atom` (type 10), their `events/` aliases those of the machines'
//! trees (backend-linux's tests/data/machines: spr-2s, adl, zen4, read from real machines) and
//! their `format/` files Linux 7.2's (arch/x86/events/intel/core.c's `PMU_FORMAT_ATTR` and
//! `umask2_show`: `umask` is `config:8-15,40-47` where the CPU enumerates umask2;
//! arch/x86/events/amd/core.c's). `PERF_CPUID=... perf list -j` then gives every JSON core
//! event and its terms (`cpu_core/event=0xc5,period=400009,umask=0x8001/`); the terms set over
//! the tree's formats, as perf's parser sets them, are what perf opens (`period` is the
//! sampling period, no part of the encoding). `counterhal encode --json --sysfs TREE
//! --cpu-model CPUID` of every name gives ours: for each name, the set of (PMU, config,
//! config1) of both must be equal, or the name be listed in the data file with its verdict
//! and evidence (docs/event-data-errata.md says each decision). For each listed difference
//! that ours encodes, `perf stat -vv -e NAME true` under the same tree (each open let through
//! as a software event by `open_anything.c`) must open exactly what the terms gave: perf's
//! value in the data file is what perf opens.
//!
//! perf 7.2 also opens the generic `instructions`, `cache-misses`, `branch-misses`,
//! `ref-cycles` (and the others its core PMU's `events/` holds) through those sysfs aliases, as
//! raw events of the core PMU, where counterhal opens the generic hardware event (type 0, on a
//! hybrid chip with the PMU's type in config's upper half): the kernel writes each alias as the
//! very code it programs for the generic event (`events_sysfs_show` prints
//! `x86_pmu.event_map(id)`, which `x86_setup_perfctr` programs for type 0, Linux 7.2
//! arch/x86/events/core.c), and the generic event works where a PMU has no such alias. Each is
//! checked to be the generic event of that name on the PMU perf opens it on.
//!
//! Figures (perf 7.2's JSON core event names that encode alike, of those it lists): 16,740 of
//! 17,757 over 45 rows (16,721 before Nehalem's, Westmere's and Bonnell's fixed-counter events
//! opened the kernel's codes); Skylake-SP 467 of 469, Ice Lake-SP 359 of 360, Sapphire Rapids
//! 401 of 402, Granite Rapids 397 of 398, Alder Lake 450 of 451, Meteor Lake 502 of 507, Lunar
//! Lake 543 of 556, Arrow Lake 544 of 555, Panther Lake 507 of 516, Clearwater Forest 248 of
//! 249; the rest listed (docs/event-data-errata.md says each decision).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use counterhal_conformance::fixtures::perf_tree::{build_shim, runs};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use serde_json::Value;

use crate::common::{counterhal, output_under, perf_7_2, perf_7_2_under, stderr};
use crate::sysfs_root::machines;

/// The data file: the mapfile's rows, and the differences, each with its verdict.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Data {
    model: Vec<Row>,
    #[serde(default)]
    differ: Vec<Differ>,
}

/// One row of perf 7.2's x86 mapfile.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    /// perf's directory (`lunarlake`).
    dir: String,
    /// A `PERF_CPUID` perf 7.2 takes the directory for.
    cpuid: String,
    /// The core PMU tree: `intel`, `hybrid` or `amd`.
    tree: String,
    /// Whether the CPU enumerates umask2 (Linux 7.2's `umask` format `config:8-15,40-47`).
    #[serde(default)]
    umask2: bool,
}

/// A name whose encodings differ, or a set of names (`L2_LINES_IN.*`), with the verdict.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Differ {
    /// The rows (perf's directories) it holds for.
    dirs: Vec<String>,
    /// perf's name (any case), or every name starting with what comes before a final `*`.
    event: String,
    /// What perf 7.2 opens, as [`render`] writes it (a single name's).
    #[serde(default)]
    perf: Option<String>,
    /// What counterhal opens, as [`render`] writes it, or `unknown`.
    #[serde(default)]
    ours: Option<String>,
    /// `intel` (ours follows Intel's perfmon table, perf's is older data or lost a field),
    /// `erratum` (ours corrects Intel's table, gen/errata/), `both-valid` (both count the same)
    /// or `perf` (perf's is right; ours waits on a fix).
    verdict: String,
    /// The evidence: Intel perfmon's table at the mirror's commit, the kernel source.
    evidence: String,
}

impl Differ {
    fn lists(&self, dir: &str, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        let event = self.event.to_ascii_lowercase();
        self.dirs.iter().any(|d| d == dir)
            && match event.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == event,
            }
    }
}

/// Linux 7.2's format files of Intel's core PMUs (arch/x86/events/intel/core.c).
const INTEL_FORMATS: &[(&str, &str)] = &[
    ("event", "config:0-7"),
    ("umask", "config:8-15"),
    ("edge", "config:18"),
    ("pc", "config:19"),
    ("any", "config:21"),
    ("inv", "config:23"),
    ("cmask", "config:24-31"),
    ("in_tx", "config:32"),
    ("in_tx_cp", "config:33"),
    ("eq", "config:36"),
    ("offcore_rsp", "config1:0-63"),
    ("ldlat", "config1:0-15"),
    ("frontend", "config1:0-23"),
    ("snoop_rsp", "config1:0-63"),
];

/// Linux 7.2's format files of AMD's core PMU (arch/x86/events/amd/core.c).
const AMD_FORMATS: &[(&str, &str)] = &[
    ("event", "config:0-7,32-35"),
    ("umask", "config:8-15"),
    ("edge", "config:18"),
    ("inv", "config:23"),
    ("cmask", "config:24-31"),
];

/// The generic hardware events by `enum perf_hw_id` value (include/uapi/linux/perf_event.h),
/// as the core PMU's `events/` names them.
const GENERIC: &[&str] = &[
    "cpu-cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branch-instructions",
    "branch-misses",
    "bus-cycles",
    "stalled-cycles-frontend",
    "stalled-cycles-backend",
    "ref-cycles",
];

/// One open: the PMU, config and config1.
type Open = (String, u64, u64);

/// Why the namespace cannot be made here, if it cannot.
fn unready() -> Option<(Need, String)> {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            == Some("0")
    });
    if !root {
        return Some((
            Need::Privilege,
            "mounting a PMU tree over /sys/bus/event_source/devices needs root".to_string(),
        ));
    }
    ["unshare", "gcc"]
        .into_iter()
        .find(|program| !runs(program, "--version"))
        .map(|program| {
            let package = counterhal_conformance::fixtures::perf_tree::debian_package(program);
            (
                Need::Tools,
                format!("{program} is not installed (apt-get install {package})"),
            )
        })
}

/// Copies directory `from` into `to`, files and directories only.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Writes the core PMU tree of `row` under `root` (`root/bus/event_source/devices`): the
/// machine tree's PMU directories with Linux 7.2's formats.
fn write_tree(row: &Row, root: &Path) -> PathBuf {
    let devices = root.join("bus/event_source/devices");
    let (machine, pmus, formats) = match row.tree.as_str() {
        "intel" => ("spr-2s", &["cpu"][..], INTEL_FORMATS),
        "hybrid" => ("adl", &["cpu_core", "cpu_atom"][..], INTEL_FORMATS),
        "amd" => ("zen4", &["cpu"][..], AMD_FORMATS),
        other => panic!("{}: tree `{other}` is none of intel, hybrid, amd", row.dir),
    };
    let from = machines().join(machine).join("bus/event_source/devices");
    for pmu in pmus {
        let dir = devices.join(pmu);
        copy_tree(&from.join(pmu), &dir);
        let format = dir.join("format");
        std::fs::remove_dir_all(&format).unwrap();
        std::fs::create_dir_all(&format).unwrap();
        for (name, bits) in formats {
            let bits = match *name {
                "umask" if row.umask2 => "config:8-15,40-47",
                _ => bits,
            };
            std::fs::write(format.join(name), format!("{bits}\n")).unwrap();
        }
    }
    devices
}

/// perf 7.2's `args` under `devices` ([`perf_7_2_under`]) with `PERF_CPUID` `cpuid` and,
/// where given, the shim: standard output and error.
fn in_namespace(devices: &Path, args: &[&str], cpuid: &str, shim: Option<&Path>) -> String {
    let mut perf = perf_7_2_under(devices, cpuid, shim).unwrap();
    let output = output_under(perf.args(args));
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    text
}

/// A number as perf writes one: hexadecimal after `0x`, else decimal.
fn number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// `value` set over `attr` by the format `bits` (`config:8-15,40-47`): its bits, low first,
/// into each range in turn, as perf's `pmu_format_value` places them.
fn set_format(bits: &str, value: u64, attr: &mut [u64; 2]) -> Result<(), String> {
    let (field, ranges) = bits.trim().split_once(':').ok_or("no field")?;
    let word = match field {
        "config" => 0,
        "config1" => 1,
        other => return Err(format!("field {other}")),
    };
    let mut value = value;
    for range in ranges.split(',') {
        let (low, high) = range.split_once('-').unwrap_or((range, range));
        let (low, high): (u32, u32) = (
            low.parse().map_err(|_| range.to_string())?,
            high.parse().map_err(|_| range.to_string())?,
        );
        let width = high - low + 1;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1 << width) - 1
        };
        attr[word] |= (value & mask) << low;
        value = value.checked_shr(width).unwrap_or(0);
    }
    if value != 0 {
        return Err(format!("too big for `{bits}`"));
    }
    Ok(())
}

/// What perf opens for an event whose terms perf lists as `encoding`
/// (`cpu_core/event=0xc5,period=400009,umask=0x8001/`) on the tree's `formats`.
fn perf_open(encoding: &str, formats: &[(&str, &str)], umask2: bool) -> Result<Open, String> {
    let (pmu, rest) = encoding
        .split_once('/')
        .ok_or_else(|| format!("`{encoding}`: no PMU"))?;
    let terms = rest.trim_end_matches('/');
    let mut attr = [0u64; 2];
    for term in terms.split(',') {
        let (name, value) = term.split_once('=').unwrap_or((term, "1"));
        if name == "period" {
            continue;
        }
        let bits = formats
            .iter()
            .find(|(f, _)| *f == name)
            .map(|(_, b)| {
                if name == "umask" && umask2 {
                    "config:8-15,40-47"
                } else {
                    b
                }
            })
            .ok_or_else(|| format!("`{encoding}`: term `{name}` is no format of the tree"))?;
        let value = number(value).ok_or_else(|| format!("`{encoding}`: `{value}`"))?;
        set_format(bits, value, &mut attr).map_err(|e| format!("`{encoding}`: {e}"))?;
    }
    Ok((pmu.to_string(), attr[0], attr[1]))
}

/// A set of opens as text: `cpu_core:0x41c5` (config1 after a comma where not 0), by PMU.
fn render(opens: &BTreeSet<Open>) -> String {
    opens
        .iter()
        .map(|(pmu, config, config1)| match config1 {
            0 => format!("{pmu}:{config:#x}"),
            c => format!("{pmu}:{config:#x},{c:#x}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// perf 7.2's JSON core events on the tree (every core PMU's), by name in lower case: the
/// opens their terms give. And the generic names it opens through an alias, with the PMUs.
type Listed = (
    BTreeMap<String, Result<BTreeSet<Open>, String>>,
    BTreeMap<String, BTreeSet<String>>,
);

fn perf_lists(devices: &Path, row: &Row) -> Listed {
    let formats = if row.tree == "amd" {
        AMD_FORMATS
    } else {
        INTEL_FORMATS
    };
    let text = in_namespace(devices, &["list", "-j"], &row.cpuid, None);
    let start = text
        .find('[')
        .unwrap_or_else(|| panic!("{}: {text}", row.dir));
    let end = text.rfind(']').unwrap();
    let list: Vec<Value> = serde_json::from_str(&text[start..=end])
        .unwrap_or_else(|e| panic!("{}: perf list -j: {e}", row.dir));
    let pmus: Vec<String> = std::fs::read_dir(devices)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut events: BTreeMap<String, Result<BTreeSet<Open>, String>> = BTreeMap::new();
    let mut generic: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in &list {
        let (Some(unit), Some(name), Some(encoding)) = (
            entry["Unit"].as_str(),
            entry["EventName"].as_str(),
            entry["Encoding"].as_str(),
        ) else {
            continue;
        };
        if !pmus.iter().any(|p| p == unit) {
            continue;
        }
        if entry.get("EventAlias").is_some() {
            continue;
        }
        let slot = events
            .entry(name.to_ascii_lowercase())
            .or_insert_with(|| Ok(BTreeSet::new()));
        match (perf_open(encoding, formats, row.umask2), slot.as_mut()) {
            (Ok(open), Ok(set)) => _ = set.insert(open),
            (Err(why), Ok(_)) => *slot = Err(why),
            (_, Err(_)) => {}
        }
    }
    // The generic names the core PMUs have an alias of (perf list -j does not list them).
    for pmu in &pmus {
        for name in GENERIC {
            if devices.join(pmu).join("events").join(name).is_file() {
                generic
                    .entry(name.to_string())
                    .or_default()
                    .insert(pmu.clone());
            }
        }
    }
    (events, generic)
}

/// counterhal's opens of `names` on the tree under `root`, by name in lower case: the set of
/// (PMU, config, config1), or the error. The PMU of an object without one is the tree's
/// (`cpu`), of a generic event `generic`.
fn ours(
    root: &Path,
    cpuid: &str,
    names: &[&str],
) -> BTreeMap<String, Result<BTreeSet<Open>, String>> {
    let mut args = vec![
        "encode",
        "--json",
        "--sysfs",
        root.to_str().unwrap(),
        "--cpu-model",
        cpuid,
    ];
    args.extend(names);
    let out = counterhal(&args);
    let objects: Vec<Value> = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{cpuid}: encode: {e}: {}", stderr(&out)));
    let mut by_name: BTreeMap<String, Result<BTreeSet<Open>, String>> = BTreeMap::new();
    for object in &objects {
        let name = object["event"].as_str().unwrap().to_ascii_lowercase();
        if let Some(error) = object["error"].as_str() {
            by_name.insert(name, Err(error.to_string()));
            continue;
        }
        let pmu = match (object["pmu"].as_str(), object["type"].as_u64()) {
            (Some(pmu), _) => pmu.to_string(),
            (None, Some(0)) => "generic".to_string(),
            (None, _) => "cpu".to_string(),
        };
        let open = (
            pmu,
            object["config"].as_u64().unwrap(),
            object["config1"].as_u64().unwrap(),
        );
        if let Ok(set) = by_name.entry(name).or_insert_with(|| Ok(BTreeSet::new())) {
            set.insert(open);
        }
    }
    by_name
}

/// What `perf stat -vv -e NAME true` opens under the tree, by name: each attr of an open
/// whose pid is the workload's (perf's own probes open with pid 0), its PMU by type.
fn perf_stat_opens(
    devices: &Path,
    row: &Row,
    shim: &Path,
    names: &[&str],
) -> BTreeMap<String, BTreeSet<Open>> {
    let types: BTreeMap<u64, String> = std::fs::read_dir(devices)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let t = std::fs::read_to_string(e.path().join("type")).unwrap();
            (
                t.trim().parse().unwrap(),
                e.file_name().to_string_lossy().into_owned(),
            )
        })
        .collect();
    let mut all = BTreeMap::new();
    for name in names {
        let text = in_namespace(
            devices,
            &["stat", "-vv", "-e", name, "true"],
            &row.cpuid,
            Some(shim),
        );
        let mut opens = BTreeSet::new();
        // perf prints its probes' attrs and opens inside the printing of the event's attr
        // (after its type): each attr block is closed by its open, the latest first.
        let mut blocks: Vec<(u64, u64, u64)> = Vec::new();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let top = blocks.last_mut();
            match (words.as_slice(), top) {
                (["perf_event_attr:"], _) => blocks.push((0, 0, 0)),
                (["type", t, ..], Some(attr)) => attr.0 = t.parse().unwrap_or(u64::MAX),
                (["config", c, ..], Some(attr)) => attr.1 = number(c).unwrap_or(u64::MAX),
                (["{", "bp_addr,", "config1", "}", c], Some(attr)) => {
                    attr.2 = number(c).unwrap_or(u64::MAX)
                }
                (["sys_perf_event_open:", "pid", pid, ..], Some(_)) => {
                    let attr = blocks.pop().unwrap();
                    if *pid != "0" {
                        let pmu = types.get(&attr.0).cloned().unwrap_or(attr.0.to_string());
                        opens.insert((pmu, attr.1, attr.2));
                    }
                }
                _ => {}
            }
        }
        assert!(
            !opens.is_empty(),
            "{}: perf stat -e {name} opened nothing:\n{text}",
            row.dir
        );
        all.insert(name.to_string(), opens);
    }
    all
}

/// Oracle: perf 7.2.13 (Debian sid's), `perf list -j` under a core PMU tree of each row's
/// kind with Linux 7.2's formats and the row's `PERF_CPUID`, and `perf stat -vv -e NAME true`
/// for each difference ours encodes. Every JSON core event perf lists encodes as perf opens
/// it, on the same PMUs, or is listed in tests/data/encodings_perf72.toml with its verdict and
/// evidence; every generic event perf opens through a core PMU's alias is ours the generic
/// event of that name. Before, Nehalem's INST_RETIRED.ANY opened config 0 where perf opens
/// 0xc0.
#[test]
fn every_core_event_perf_7_2_lists_encodes_as_perf_opens_it() {
    if let Err(why) = perf_7_2() {
        skip!(Need::Tools, "{why}");
    }
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/encodings_perf72.toml");
    let data: Data = toml::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let shim = build_shim("encodings72").unwrap();
    let scratch = shim.parent().unwrap().to_path_buf();
    let mut faults: Vec<String> = Vec::new();
    let mut used = vec![false; data.differ.len()];
    let (mut total, mut total_equal, mut total_generic) = (0, 0, 0);
    for listed in &data.differ {
        assert!(
            !listed.evidence.trim().is_empty()
                && ["intel", "both-valid", "erratum", "perf"].contains(&listed.verdict.as_str()),
            "{:?} {}: no evidence, or a verdict other than intel, both-valid, erratum, perf",
            listed.dirs,
            listed.event
        );
    }
    for row in &data.model {
        let root = scratch.join(&row.dir);
        let devices = write_tree(row, &root);
        let (listed, generic) = perf_lists(&devices, row);
        assert!(
            listed.len() > 50,
            "{}: perf 7.2 lists {} core events",
            row.dir,
            listed.len()
        );
        let mut names: Vec<&str> = listed.keys().map(String::as_str).collect();
        names.extend(generic.keys().map(String::as_str));
        let encoded = ours(&root, &row.cpuid, &names);
        let (mut equal, mut differ_listed) = (0, 0);
        let mut to_check: Vec<(&str, &BTreeSet<Open>)> = Vec::new();
        for (name, theirs) in &listed {
            let theirs = match theirs {
                Ok(theirs) => theirs,
                Err(why) => {
                    match data.differ.iter().position(|d| d.lists(&row.dir, name)) {
                        Some(index) => used[index] = true,
                        None => faults.push(format!("{}: {name}: perf's terms: {why}", row.dir)),
                    }
                    continue;
                }
            };
            let mine = encoded
                .get(name)
                .cloned()
                .unwrap_or_else(|| Err("not encoded".to_string()));
            if mine.as_ref() == Ok(theirs) {
                equal += 1;
                continue;
            }
            let ours_text = match &mine {
                Ok(set) => render(set),
                Err(_) => "unknown".to_string(),
            };
            // perf list leaves deprecated events out, which perf stat still opens on every
            // PMU whose table has them: what perf stat opens is the oracle.
            if let Ok(mine) = &mine
                && perf_stat_opens(&devices, row, &shim, &[name])[name.as_str()] == *mine
            {
                equal += 1;
                continue;
            }
            let found = data.differ.iter().position(|d| d.lists(&row.dir, name));
            let Some(index) = found else {
                faults.push(format!(
                    "{}: {name}: perf 7.2 opens {}, ours {ours_text}{}: not listed",
                    row.dir,
                    render(theirs),
                    mine.as_ref()
                        .err()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default()
                ));
                continue;
            };
            used[index] = true;
            let listed = &data.differ[index];
            if listed.perf.as_ref().is_some_and(|p| *p != render(theirs))
                || listed.ours.as_ref().is_some_and(|o| *o != ours_text)
            {
                faults.push(format!(
                    "{}: {name}: listed as perf {:?}, ours {:?}; now perf {}, ours {ours_text}",
                    row.dir,
                    listed.perf,
                    listed.ours,
                    render(theirs)
                ));
            }
            differ_listed += 1;
            if mine.is_ok() {
                to_check.push((name, theirs));
            }
        }
        // perf's value of each difference ours encodes is what perf opens.
        let checked: Vec<&str> = to_check.iter().map(|(n, _)| *n).collect();
        let opened = perf_stat_opens(&devices, row, &shim, &checked);
        for (name, theirs) in &to_check {
            if opened[*name] != **theirs {
                faults.push(format!(
                    "{}: {name}: perf's terms give {}, perf stat opens {}",
                    row.dir,
                    render(theirs),
                    render(&opened[*name])
                ));
            }
        }
        // The generic events perf opens through the core PMUs' aliases: perf stat opens each
        // alias's code on its PMU; ours, the generic event on the same PMUs.
        let generic_names: Vec<&str> = generic.keys().map(String::as_str).collect();
        let generic_opened = perf_stat_opens(&devices, row, &shim, &generic_names);
        for (name, pmus) in &generic {
            let formats = if row.tree == "amd" {
                AMD_FORMATS
            } else {
                INTEL_FORMATS
            };
            let aliases: BTreeSet<Open> = pmus
                .iter()
                .map(|pmu| {
                    let terms =
                        std::fs::read_to_string(devices.join(pmu).join("events").join(name))
                            .unwrap();
                    perf_open(&format!("{pmu}/{}/", terms.trim()), formats, row.umask2)
                        .unwrap_or_else(|e| panic!("{}: {pmu}/{name}: {e}", row.dir))
                })
                .collect();
            if generic_opened[name.as_str()] != aliases {
                faults.push(format!(
                    "{}: {name}: perf 7.2 opens {}, not its core PMUs' aliases {}",
                    row.dir,
                    render(&generic_opened[name.as_str()]),
                    render(&aliases)
                ));
            }
            let id = GENERIC.iter().position(|g| g == name).unwrap() as u64;
            let hybrid = row.tree == "hybrid";
            let want: BTreeSet<Open> = pmus
                .iter()
                .map(|pmu| {
                    let config = match hybrid {
                        true => {
                            let t =
                                std::fs::read_to_string(devices.join(pmu).join("type")).unwrap();
                            (t.trim().parse::<u64>().unwrap() << 32) | id
                        }
                        false => id,
                    };
                    let pmu = if hybrid {
                        pmu.clone()
                    } else {
                        "generic".to_string()
                    };
                    (pmu, config, 0)
                })
                .collect();
            match encoded.get(name.as_str()) {
                Some(Ok(mine)) if *mine == want => total_generic += 1,
                other => faults.push(format!(
                    "{}: {name}: perf 7.2 opens it through {pmus:?}'s alias; ours {other:?}, \
                     not the generic event {}",
                    row.dir,
                    render(&want)
                )),
            }
        }
        println!(
            "{} (PERF_CPUID={}): {equal} of perf 7.2's {} core events encode alike, {differ_listed} \
             listed differences; {} generic events through aliases",
            row.dir,
            row.cpuid,
            listed.len(),
            generic.len()
        );
        total += listed.len();
        total_equal += equal;
    }
    std::fs::remove_dir_all(&scratch).unwrap();
    println!(
        "{} rows: {total_equal} of {total} core events alike; {total_generic} generic events",
        data.model.len()
    );
    for (index, used) in used.iter().enumerate() {
        if !used {
            println!(
                "listed but alike now (the data file may drop it): {:?} {}",
                data.differ[index].dirs, data.differ[index].event
            );
        }
    }
    assert!(
        faults.is_empty(),
        "{} faults:\n{}",
        faults.len(),
        faults.join("\n")
    );
}
