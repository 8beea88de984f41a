//! The sysfs trees of machines this one is not, written from the kernel's own definitions of
//! their PMUs: each `tests/data/machines/<name>/` holds `bus/event_source/devices` (the PMUs'
//! `type`, `cpumask`, `alias`, `format/*` and `events/*`, with `.scale`, `.unit` and
//! `.snapshot`) and `devices/system/cpu/online`, and a `SOURCE` file naming the kernel files
//! and symbols each PMU comes from. What the source does not fix (the dynamic `type` numbers,
//! the topology behind a `cpumask`, how many boxes) is chosen below, realistically, and said in
//! `SOURCE`.
//!
//! The trees are generated, never edited: [`the_machine_trees_are_the_kernels_definitions`]
//! reads the definitions from Debian's linux-source-6.12 tarball and fails when a committed
//! tree differs from what they give;
//! `COUNTERHAL_WRITE_MACHINES=1 cargo test -p counterhal-linux --test main machines::`
//! writes them again.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use counterhal_conformance::skip::Need;

const TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";
const KERNEL: &str = "Linux 6.12 (Debian's linux-source-6.12 tarball)";

/// The folder holding the trees.
pub fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/machines")
}

/// The sysfs root of machine `name` (`spr-2s`, `skl-client`, `zen4`).
pub fn root(name: &str) -> PathBuf {
    folder().join(name)
}

/// The PMU directory of machine `name`'s tree.
pub fn devices(name: &str) -> PathBuf {
    root(name).join("bus/event_source/devices")
}

/// Where a PMU's format fields come from.
enum Formats {
    /// Every `&format_attr_X.attr` of the attribute array of that name.
    List(&'static str),
    /// These format variables (`DEFINE_UNCORE_FORMAT_ATTR(var, ...)`, `PMU_FORMAT_ATTR(var,
    /// ...)`), where the driver assembles the list in code.
    Vars(&'static [&'static str]),
}

/// Where a PMU's events come from.
enum Events {
    /// None (the kernel gives this PMU no `events/`).
    None,
    /// Every `INTEL_UNCORE_EVENT_DESC(name, "value")` of the `uncore_event_desc` array of that
    /// name.
    Descs(&'static str),
    /// The calls of macro `.0` (`RAPL_EVENT_ATTR_STR`, `PMU_EVENT_ATTR_STRING`) naming these
    /// events or their `.scale`, `.unit` and `.snapshot` files (the ones the model shows).
    Named(&'static str, &'static [&'static str]),
}

/// One PMU of a machine, or one kind of box (`uncore_imc_0`..`uncore_imc_3`).
struct PmuSpec {
    /// The name, with `{}` for the box number where `boxes` is not zero.
    name: &'static str,
    /// How many boxes (0: one PMU named `name`).
    boxes: u32,
    /// The `type` of the first box; the next boxes count up.
    first_type: u32,
    /// The `cpumask` file (None: the PMU has none and counts on any CPU).
    cpumask: Option<&'static str>,
    /// The `alias` file, with `{}` for the box number.
    alias: Option<&'static str>,
    /// The kernel file that defines it.
    source: &'static str,
    formats: Formats,
    events: Events,
    /// Why it looks as it does, where the source alone does not say.
    why: &'static str,
}

/// A machine: its tree's name, what it is, its online CPUs and its PMUs.
struct Machine {
    name: &'static str,
    describes: &'static str,
    online: &'static str,
    pmus: &'static [PmuSpec],
}

/// The `msr` PMU with the events of `events` (msr.c shows each where its test passes).
const fn msr(events: &'static [&'static str], why: &'static str) -> PmuSpec {
    PmuSpec {
        name: "msr",
        boxes: 0,
        first_type: 10,
        cpumask: None,
        alias: None,
        source: "arch/x86/events/msr.c",
        formats: Formats::Vars(&["event"]),
        events: Events::Named("PMU_EVENT_ATTR_STRING", events),
        why,
    }
}

/// Sapphire Rapids, two sockets of 56 cores with two threads each: CPUs 0-55 and 112-167 on
/// socket 0, 56-111 and 168-223 on socket 1, so a package PMU's cpumask is `0,56`.
const SPR_2S: Machine = Machine {
    name: "spr-2s",
    describes: "Intel Sapphire Rapids (GenuineIntel-6-8F), two sockets of 56 cores, 224 CPUs",
    online: "0-223",
    pmus: &[
        msr(
            &["tsc", "aperf", "mperf", "smi", "cpu_thermal_margin"],
            "tsc always; aperf and mperf with APERFMPERF; smi where test_intel() lists \
             SAPPHIRERAPIDS_X; cpu_thermal_margin (with .snapshot and .unit) with DTHERM",
        ),
        PmuSpec {
            name: "power",
            boxes: 0,
            first_type: 11,
            cpumask: Some("0,56"),
            alias: None,
            source: "arch/x86/events/rapl.c",
            formats: Formats::Vars(&["event"]),
            events: Events::Named(
                "RAPL_EVENT_ATTR_STR",
                &["energy-cores", "energy-pkg", "energy-ram", "energy-psys"],
            ),
            why: "model_spr: PP0, PKG, RAM and PSYS; one CPU per package",
        },
        PmuSpec {
            name: "uncore_imc_{}",
            boxes: 4,
            first_type: 12,
            cpumask: Some("0,56"),
            alias: Some("uncore_type_6_{}"),
            source: "arch/x86/events/intel/uncore_snbep.c",
            formats: Formats::List("spr_uncore_raw_formats_attr"),
            events: Events::Descs("spr_uncore_imc_events"),
            why: "spr_uncore_imc (UNCORE_SPR_IMC is discovery type 6; the alias file is \
                  uncore_alias_groups' uncore_type_<type>_<box>); 4 of a socket's 8 boxes",
        },
        PmuSpec {
            name: "uncore_imc_free_running_{}",
            boxes: 2,
            first_type: 16,
            cpumask: Some("0,56"),
            alias: None,
            source: "arch/x86/events/intel/uncore_snbep.c",
            formats: Formats::List("skx_uncore_iio_freerunning_formats_attr"),
            events: Events::Descs("spr_uncore_imc_freerunning_events"),
            why: "spr_uncore_imc_free_running (format group \
                  skx_uncore_iio_freerunning_format_group)",
        },
        PmuSpec {
            name: "uncore_cha_{}",
            boxes: 2,
            first_type: 18,
            cpumask: Some("0,56"),
            alias: Some("uncore_type_0_{}"),
            source: "arch/x86/events/intel/uncore_snbep.c",
            formats: Formats::List("spr_uncore_cha_formats_attr"),
            events: Events::None,
            why: "spr_uncore_chabox (UNCORE_SPR_CHA is discovery type 0); 2 of a socket's \
                  56 boxes",
        },
    ],
};

/// A Skylake client: one socket of 4 cores with two threads each.
const SKL_CLIENT: Machine = Machine {
    name: "skl-client",
    describes: "Intel Skylake client (GenuineIntel-6-5E), one socket of 4 cores, 8 CPUs",
    online: "0-7",
    pmus: &[
        msr(
            &[
                "tsc",
                "aperf",
                "mperf",
                "pperf",
                "smi",
                "cpu_thermal_margin",
            ],
            "tsc always; aperf and mperf with APERFMPERF; smi and pperf where test_intel() \
             lists SKYLAKE; cpu_thermal_margin (with .snapshot and .unit) with DTHERM",
        ),
        PmuSpec {
            name: "power",
            boxes: 0,
            first_type: 11,
            cpumask: Some("0"),
            alias: None,
            source: "arch/x86/events/rapl.c",
            formats: Formats::Vars(&["event"]),
            events: Events::Named(
                "RAPL_EVENT_ATTR_STR",
                &[
                    "energy-cores",
                    "energy-pkg",
                    "energy-ram",
                    "energy-gpu",
                    "energy-psys",
                ],
            ),
            why: "model_skl: PP0, PKG, RAM, PP1 and PSYS",
        },
        PmuSpec {
            name: "uncore_imc",
            boxes: 0,
            first_type: 12,
            cpumask: Some("0"),
            alias: None,
            source: "arch/x86/events/intel/uncore_snb.c",
            formats: Formats::List("snb_uncore_imc_formats_attr"),
            events: Events::Descs("snb_uncore_imc_events"),
            why: "snb_uncore_imc, the client IMC's free-running counters (one box: the name \
                  has no number)",
        },
        PmuSpec {
            name: "uncore_cbox_{}",
            boxes: 4,
            first_type: 13,
            cpumask: Some("0"),
            alias: None,
            source: "arch/x86/events/intel/uncore_snb.c",
            formats: Formats::List("snb_uncore_formats_attr"),
            events: Events::Descs("snb_uncore_events"),
            why: "skl_uncore_cbox, one box per core",
        },
        PmuSpec {
            name: "uncore_arb",
            boxes: 0,
            first_type: 17,
            cpumask: Some("0"),
            alias: None,
            source: "arch/x86/events/intel/uncore_snb.c",
            formats: Formats::List("snb_uncore_formats_attr"),
            events: Events::None,
            why: "snb_uncore_arb",
        },
    ],
};

/// Zen 4 (Raphael), one socket of 16 cores in two CCDs with two threads each: CPUs 0-7 and
/// 16-23 share one L3, 8-15 and 24-31 the other.
const ZEN4: Machine = Machine {
    name: "zen4",
    describes: "AMD Zen 4 (AuthenticAMD-25-61), one socket of 16 cores in 2 CCDs, 32 CPUs",
    online: "0-31",
    pmus: &[
        msr(
            &["tsc", "aperf", "mperf", "irperf"],
            "tsc always; aperf and mperf with APERFMPERF; irperf with IRPERF (family 17h on)",
        ),
        PmuSpec {
            name: "power",
            boxes: 0,
            first_type: 11,
            cpumask: Some("0"),
            alias: None,
            source: "arch/x86/events/rapl.c",
            formats: Formats::Vars(&["event"]),
            events: Events::Named("RAPL_EVENT_ATTR_STR", &["energy-pkg"]),
            why: "model_amd_hygon: PKG alone (arch/x86/events/amd/power.c's own `power` PMU \
                  is Family 15h's, with ACC_POWER; Zen has RAPL)",
        },
        PmuSpec {
            name: "amd_df",
            boxes: 0,
            first_type: 12,
            cpumask: Some("0"),
            alias: None,
            source: "arch/x86/events/amd/uncore.c",
            formats: Formats::Vars(&["event14v2", "umask12"]),
            events: Events::None,
            why: "amd_uncore_df_ctx_init: PerfMonV2 (Zen 4) gives event14v2 and umask12; one \
                  CPU per node",
        },
        PmuSpec {
            name: "amd_l3",
            boxes: 0,
            first_type: 13,
            cpumask: Some("0,8"),
            alias: None,
            source: "arch/x86/events/amd/uncore.c",
            formats: Formats::Vars(&[
                "event8",
                "umask8",
                "threadmask2",
                "coreid",
                "enallslices",
                "enallcores",
                "sliceid",
            ]),
            events: Events::None,
            why: "amd_uncore_l3_ctx_init for family 19h (event8, umask8, threadmask2) and \
                  amd_f19h_uncore_l3_format_attr; one CPU per L3 (CCX)",
        },
        PmuSpec {
            name: "amd_umc_{}",
            boxes: 2,
            first_type: 14,
            cpumask: Some("0"),
            alias: None,
            source: "arch/x86/events/amd/uncore.c",
            formats: Formats::List("amd_uncore_umc_format_attr"),
            events: Events::None,
            why: "amd_uncore_umc_ctx_init: one PMU per memory controller of the node \
                  (two channels), each with the node's CPU",
        },
    ],
};

/// Every machine with a tree.
const MACHINES: &[&Machine] = &[&SPR_2S, &SKL_CLIENT, &ZEN4];

/// The names of the machines with trees.
pub fn names() -> Vec<&'static str> {
    MACHINES.iter().map(|m| m.name).collect()
}

/// The arguments of every call of `name(...)` in `source`, string literals unquoted.
fn macro_calls(source: &str, name: &str) -> Vec<Vec<String>> {
    let mut calls = Vec::new();
    let pattern = format!("{name}(");
    let mut rest = source;
    while let Some(at) = rest.find(&pattern) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + pattern.len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let mut args = vec![String::new()];
        let mut quoted = false;
        let mut depth = 0;
        for c in rest.chars() {
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted && depth == 0 => args.push(String::new()),
                '(' if !quoted => depth += 1,
                ')' if !quoted && depth == 0 => break,
                ')' if !quoted => depth -= 1,
                c if quoted || !c.is_whitespace() => args.last_mut().unwrap().push(c),
                _ => {}
            }
        }
        calls.push(args);
    }
    calls
}

/// The body of the array `name[] = { ... };` in `source`.
fn array<'a>(source: &'a str, name: &str) -> Result<&'a str, String> {
    let pattern = format!("{name}[] = {{");
    let start = source
        .match_indices(&pattern)
        .map(|(at, _)| at)
        .find(|&at| {
            !source[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .ok_or_else(|| format!("no array {name}"))?;
    let body = &source[start..];
    let end = body
        .find("};")
        .ok_or_else(|| format!("{name} has no end"))?;
    Ok(&body[..end])
}

/// The format variables of `source`: variable to (field name, bits).
fn format_vars(source: &str) -> BTreeMap<String, (String, String)> {
    let mut vars = BTreeMap::new();
    for args in macro_calls(source, "DEFINE_UNCORE_FORMAT_ATTR") {
        if let [var, name, bits] = args.as_slice() {
            vars.insert(var.clone(), (name.clone(), bits.clone()));
        }
    }
    for args in macro_calls(source, "PMU_FORMAT_ATTR") {
        if let [name, bits] = args.as_slice() {
            vars.insert(name.clone(), (name.clone(), bits.clone()));
        }
    }
    vars
}

/// One PMU's files, relative to its directory, with their contents.
fn pmu_files(spec: &PmuSpec, source: &str) -> Result<BTreeMap<String, String>, String> {
    let vars = format_vars(source);
    let names: Vec<String> = match spec.formats {
        Formats::List(list) => array(source, list)?
            .split("&format_attr_")
            .skip(1)
            .map(|s| s.split('.').next().unwrap_or_default().to_string())
            .collect(),
        Formats::Vars(list) => list.iter().map(|s| s.to_string()).collect(),
    };
    let mut files = BTreeMap::new();
    for var in names {
        let (name, bits) = vars
            .get(&var)
            .ok_or_else(|| format!("{}: no format variable {var}", spec.source))?;
        files.insert(format!("format/{name}"), bits.clone());
    }
    let events: Vec<(String, String)> = match spec.events {
        Events::None => Vec::new(),
        Events::Descs(list) => macro_calls(array(source, list)?, "INTEL_UNCORE_EVENT_DESC")
            .into_iter()
            .filter_map(|args| match args.as_slice() {
                [name, value] => Some((name.clone(), value.clone())),
                _ => None,
            })
            .collect(),
        Events::Named(macro_name, wanted) => {
            let found: Vec<(String, String)> = macro_calls(source, macro_name)
                .into_iter()
                .filter_map(|args| match args.as_slice() {
                    [name, _, value] => Some((name.clone(), value.clone())),
                    _ => None,
                })
                .filter(|(name, _)| wanted.contains(&name.split('.').next().unwrap_or_default()))
                .collect();
            for want in wanted {
                if !found.iter().any(|(name, _)| name == want) {
                    return Err(format!("{}: no event {want}", spec.source));
                }
            }
            found
        }
    };
    for (name, value) in events {
        files.insert(format!("events/{name}"), value);
    }
    Ok(files)
}

/// Every file of `machine`'s tree, relative to its root, with its contents (each written with
/// a newline after it, as the kernel's show functions write them).
fn tree(machine: &Machine, kernel: &Path) -> Result<BTreeMap<String, String>, String> {
    let mut files = BTreeMap::new();
    let mut source_note = format!(
        "{}\n\nA fake sysfs root for tests: the PMUs under bus/event_source/devices as {KERNEL}\n\
         defines them. Generated by backend-linux/tests/machines.rs; do not edit (write it again\n\
         with COUNTERHAL_WRITE_MACHINES=1 cargo test -p counterhal-linux --test main machines::).\n\n",
        machine.describes
    );
    files.insert(
        "devices/system/cpu/online".to_string(),
        machine.online.into(),
    );
    for spec in machine.pmus {
        let text = std::fs::read_to_string(kernel.join(spec.source))
            .map_err(|e| format!("{}: {e}", spec.source))?;
        let own = pmu_files(spec, &text)?;
        let boxes: Vec<Option<u32>> = match spec.boxes {
            0 => vec![None],
            n => (0..n).map(Some).collect(),
        };
        let names: Vec<String> = boxes
            .iter()
            .map(|b| spec.name.replace("{}", &b.unwrap_or(0).to_string()))
            .collect();
        let _ = writeln!(
            source_note,
            "{} (type {}{}): {} ({}).",
            names.join(", "),
            spec.first_type,
            if names.len() > 1 { " up" } else { "" },
            spec.source,
            spec.why.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        for (index, (name, number)) in names.iter().zip(&boxes).enumerate() {
            let dir = format!("bus/event_source/devices/{name}");
            files.insert(
                format!("{dir}/type"),
                (spec.first_type + index as u32).to_string(),
            );
            if let Some(mask) = spec.cpumask {
                files.insert(format!("{dir}/cpumask"), mask.to_string());
            }
            if let (Some(alias), Some(number)) = (spec.alias, number) {
                files.insert(
                    format!("{dir}/alias"),
                    alias.replace("{}", &number.to_string()),
                );
            }
            for (path, value) in &own {
                files.insert(format!("{dir}/{path}"), value.clone());
            }
        }
    }
    files.insert("SOURCE".to_string(), source_note.trim_end().to_string());
    Ok(files)
}

/// The kernel files the trees come from, extracted into a scratch directory (removed after).
fn extract() -> Result<(PathBuf, PathBuf), String> {
    let scratch = std::env::temp_dir().join(format!("counterhal-machines-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let mut sources: Vec<&str> = MACHINES
        .iter()
        .flat_map(|m| m.pmus.iter().map(|p| p.source))
        .collect();
    sources.sort_unstable();
    sources.dedup();
    let status = Command::new("tar")
        .arg("-xJf")
        .arg(TARBALL)
        .arg("-C")
        .arg(&scratch)
        .arg("--wildcards")
        .args(sources.iter().map(|s| format!("*/{s}")))
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    if !status.success() {
        return Err(format!("tar -xJf {TARBALL} failed: {status}"));
    }
    let top = std::fs::read_dir(&scratch)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("arch").is_dir())
        .ok_or("no arch/ in the tarball")?;
    Ok((top, scratch))
}

/// Every file under `dir`, relative to it, with its contents trimmed.
fn read_tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path.strip_prefix(base).unwrap().display().to_string();
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                out.insert(rel, text.trim_end().to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Oracle: the kernel's PMU definitions (Linux 6.12's arch/x86/events: rapl.c, msr.c,
/// intel/uncore_snbep.c, intel/uncore_snb.c, amd/uncore.c). Each committed tree holds exactly
/// the files its machine's PMUs get from them.
#[test]
fn the_machine_trees_are_the_kernels_definitions() {
    if !Path::new(TARBALL).exists() {
        counterhal_conformance::skip!(
            Need::Tools,
            "{TARBALL} is absent (Debian package linux-source-6.12)"
        );
    }
    let (kernel, scratch) = extract().unwrap();
    let write = std::env::var_os("COUNTERHAL_WRITE_MACHINES").is_some();
    let mut stale = Vec::new();
    for machine in MACHINES {
        let expected = tree(machine, &kernel).unwrap();
        let dir = root(machine.name);
        if write {
            let _ = std::fs::remove_dir_all(&dir);
            for (path, text) in &expected {
                let path = dir.join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, format!("{text}\n")).unwrap();
            }
        }
        let committed = read_tree(&dir);
        if committed != expected {
            let differ: Vec<&String> = expected
                .keys()
                .chain(committed.keys())
                .filter(|k| expected.get(*k) != committed.get(*k))
                .collect();
            stale.push(format!("{}: {differ:?}", machine.name));
        }
        let pmus = expected.keys().filter(|k| k.ends_with("/type")).count();
        let events = expected
            .keys()
            .filter(|k| k.contains("/events/") && !k.contains('.'))
            .count();
        println!("{}: {pmus} PMUs, {events} event aliases", machine.name);
    }
    std::fs::remove_dir_all(&scratch).unwrap();
    assert!(
        stale.is_empty(),
        "trees differ from the kernel's definitions (COUNTERHAL_WRITE_MACHINES=1 writes them): {stale:?}"
    );
}
