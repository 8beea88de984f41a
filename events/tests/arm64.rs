//! The Arm cores against the Linux kernel's perf JSON (tools/perf/pmu-events/arch/arm64/), read
//! from Debian's `linux-source-6.12` tarball under /usr/src: every core directory of its
//! `mapfile.csv` is a model here, holding exactly the events perf's `jevents.py` builds for it
//! (an `ArchStdEvent` takes the number of the standard event of that name) and the common
//! events of `common-and-microarch.json` those do not name, each resolving to a
//! raw perf attr of its number; every mapfile MIDR detects its core's model. Skips, saying why,
//! where the tarball is absent (.ci/run installs the package).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use counterhal_conformance::fixtures;
use counterhal_conformance::skip::Need;
#[cfg(feature = "metrics")]
use counterhal_events::expression::{self, Expr};
#[cfg(feature = "metrics")]
use counterhal_events::shipped_metrics;
use counterhal_events::{CpuIdentity, Database, EncoderKind};
use counterhal_hal::{Accepts, Domain, Encoding, Family};

/// What the Linux backend takes on aarch64: perf attrs alone, every domain.
const ARM: Accepts = Accepts::new(&[Family::Perf], Domain::ALL, Domain::ALL);

/// The kernel's arm64 perf JSON (`tools/perf/pmu-events/arch/arm64`, with the PMUv3 driver
/// five levels up), extracted once per machine.
fn extract() -> Result<PathBuf, String> {
    Ok(fixtures::kernel_source()?.join("tools/perf/pmu-events/arch/arm64"))
}

fn json(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn text<'a>(event: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    event.get(key).and_then(serde_json::Value::as_str)
}

fn number(text: &str) -> u64 {
    u64::from_str_radix(text.trim_start_matches("0x").trim_start_matches("0X"), 16)
        .unwrap_or_else(|e| panic!("`{text}`: {e}"))
}

/// The `.json` files directly in `dir`.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// The core events of each mapfile core directory, as jevents.py builds them: name -> number.
/// Also the mapfile's (MIDR, directory) lines.
type CoreEvents = BTreeMap<String, BTreeMap<String, u64>>;

fn kernel_tables(top: &Path) -> (CoreEvents, Vec<(u64, String)>) {
    let mut standard = BTreeMap::new();
    for file in json_files(top) {
        for event in json(&file) {
            if let (Some(name), Some(code)) = (text(&event, "EventName"), text(&event, "EventCode"))
            {
                standard.insert(name.to_ascii_lowercase(), (name.to_string(), number(code)));
            }
        }
    }
    let map = std::fs::read_to_string(top.join("mapfile.csv")).unwrap();
    let mut lines = Vec::new();
    for line in map
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.get(3) == Some(&"core") {
            lines.push((number(fields[0]), fields[2].to_string()));
        }
    }
    let driver = driver_events(top);
    let mut cores = CoreEvents::new();
    for (_, dir) in &lines {
        if cores.contains_key(dir) {
            continue;
        }
        let mut events = BTreeMap::new();
        for file in json_files(&top.join(dir)) {
            for event in json(&file) {
                // Metrics and uncore units are not core events.
                if event.get("MetricName").is_some() || event.get("Unit").is_some() {
                    continue;
                }
                let (name, code) = match text(&event, "ArchStdEvent") {
                    Some(std) => match standard.get(&std.to_ascii_lowercase()) {
                        Some((std_name, code)) => (
                            text(&event, "EventName").unwrap_or(std_name).to_string(),
                            *code,
                        ),
                        // A standard metric (sbsa.json's topdown), named from a metrics file.
                        None => continue,
                    },
                    None => (
                        text(&event, "EventName").unwrap().to_string(),
                        number(text(&event, "EventCode").unwrap()),
                    ),
                };
                events.insert(name, code);
            }
        }
        // The common events perf shows on every PMUv3 core (the driver's sysfs events, where
        // the core implements them) that the core's files do not list.
        for (name, code) in &driver {
            if !events.keys().any(|k| k.eq_ignore_ascii_case(name)) {
                events.insert(name.clone(), *code);
            }
        }
        cores.insert(dir.clone(), events);
    }
    (cores, lines)
}

/// The `arm_pmuv3` driver's sysfs events: `ARMV8_EVENT_ATTR(name, MACRO)` in
/// drivers/perf/arm_pmuv3.c, each MACRO's number from include/linux/perf/arm_pmuv3.h.
fn driver_events(arch: &Path) -> BTreeMap<String, u64> {
    let top = arch.ancestors().nth(5).unwrap();
    let header = std::fs::read_to_string(top.join("include/linux/perf/arm_pmuv3.h")).unwrap();
    let defines: BTreeMap<&str, u64> = header
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next()? == "#define").then_some(())?;
            let name = w.next()?;
            Some((
                name,
                u64::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?,
            ))
        })
        .collect();
    let driver = std::fs::read_to_string(top.join("drivers/perf/arm_pmuv3.c")).unwrap();
    let events: BTreeMap<String, u64> = driver
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("ARMV8_EVENT_ATTR(")?
                .strip_suffix("),")
        })
        .map(|args| {
            let (name, config) = args.split_once(',').unwrap();
            (name.trim().to_ascii_uppercase(), defines[config.trim()])
        })
        .collect();
    assert!(events.len() > 80, "{} driver events", events.len());
    events
}

fn model_id(dir: &str) -> &str {
    dir.rsplit('/').next().unwrap()
}

/// Oracle: the kernel's arm64 perf JSON in Debian's linux-source-6.12 (6.12.117). Every core of
/// the mapfile is a model whose events are exactly the kernel's (name and number), each
/// resolving on Linux to `PERF_TYPE_RAW` with `config` its number (the `arm_pmuv3` driver's
/// `event` = `config:0-15`).
#[test]
fn every_arm_core_has_the_kernels_events() {
    let top = match extract() {
        Ok(found) => found,
        Err(why) => {
            counterhal_conformance::skip!(Need::Tools, "arm64 kernel JSON check not run: {why}")
        }
    };
    let (cores, lines) = kernel_tables(&top);
    let database = Database::shipped().unwrap();
    let mut compared = 0;
    for (dir, events) in &cores {
        let id = model_id(dir);
        let model = database
            .model(id)
            .unwrap_or_else(|| panic!("kernel core `{dir}` is no model"));
        assert_eq!(model.encoder, EncoderKind::Armv8, "{id}");
        let ours: BTreeMap<String, u64> = model
            .events()
            .iter()
            .map(|e| (e.name.clone(), u64::from(e.code)))
            .collect();
        assert_eq!(&ours, events, "{id}: events differ from {dir}");
        for (name, &code) in events {
            let resolved = database
                .resolve(Some(id), &format!("{name}:u"), &ARM)
                .unwrap_or_else(|e| panic!("{id}: {name}: {e}"));
            let Encoding::Perf(attr) = &resolved.terms[0].request.encoding else {
                panic!("{id}: {name} is not a perf attr");
            };
            assert_eq!(
                (attr.type_, attr.config, attr.config1),
                (4, code, 0),
                "{id}: {name}"
            );
            // `:u` as perf programs it: exclude_kernel and exclude_hv.
            let bits = attr.exclude_bits();
            assert!(!bits.user && bits.kernel && bits.hv, "{id}: {name}");
            compared += 1;
        }
    }
    // libpfm4's other names (gen/tests/arm64.rs compares their numbers with libpfm4's
    // tables) resolve to the kernel event they stand for.
    let mut aliases = 0;
    for model in database
        .models()
        .filter(|m| m.encoder == EncoderKind::Armv8)
    {
        for (alias, target) in model.event_aliases() {
            let config = |name: &str| match database.resolve(Some(&model.id), name, &ARM) {
                Ok(r) => match &r.terms[0].request.encoding {
                    Encoding::Perf(attr) => attr.config,
                    other => panic!("{}: {name}: {other}", model.id),
                },
                Err(e) => panic!("{}: {name}: {e}", model.id),
            };
            assert_eq!(config(alias), config(&target), "{}: {alias}", model.id);
            aliases += 1;
        }
    }
    assert!(aliases > 100, "{aliases} aliases");
    // No Arm model here that the kernel lacks, but the cores Linux 7.2 added (generated from
    // its tree: tests/perf72_models.rs and gen/tests/arm64.rs hold them to it).
    let mut kernel_ids: BTreeSet<&str> = cores.keys().map(|d| model_id(d)).collect();
    kernel_ids.extend(["monaka", "neoverse-n3", "neoverse-v3", "t410"]);
    let ours: BTreeSet<String> = database
        .models()
        .filter(|m| m.encoder == EncoderKind::Armv8)
        .map(|m| m.id.clone())
        .collect();
    assert_eq!(
        ours,
        kernel_ids.iter().map(|s| s.to_string()).collect(),
        "Arm models"
    );
    // Each mapfile MIDR detects its core (any variant and revision), also as `--cpu-model`.
    for (midr, dir) in &lines {
        for variant_revision in [0, 0x0010_0000, 0x0040_0001, 0x00f0_000f] {
            let midr = midr | variant_revision;
            let cpu = CpuIdentity::from_midr(midr).unwrap();
            let detected = database.detect(&cpu).map(|m| m.id.as_str());
            assert_eq!(detected, Some(model_id(dir)), "MIDR {midr:#x}");
            let named = database.model(&format!("{midr:#x}")).map(|m| m.id.as_str());
            assert_eq!(named, Some(model_id(dir)), "--cpu-model {midr:#x}");
        }
    }
    // The metrics are compared in a build that compiles them.
    #[cfg(feature = "metrics")]
    let metrics = check_metrics(&top, &database);
    #[cfg(not(feature = "metrics"))]
    let metrics = 0;
    let generalized = check_generalized(&top, &database);
    eprintln!(
        "arm64: {metrics} metrics compared with the kernel's metrics.json files, {generalized} generalized mappings with the driver's map"
    );
    eprintln!(
        "arm64: {} models, {compared} events compared with the kernel's JSON, {} mapfile MIDRs detected",
        cores.len(),
        lines.len()
    );
    assert!(compared > 2000, "{compared} events compared");
}

/// Oracle: PAPI 7.0's papi_events.csv (Debian libpapi7.0) maps `PAPI_TOT_INS` to libpfm4's
/// `INST_RETIRED` and `PAPI_TOT_CYC` to `CPU_CYCLES` on each Arm PMU it lists; the kernel's
/// JSON numbers them 0x08 and 0x11. Every preset of those tables either resolves or is
/// refused with its reason.
#[test]
fn papi_presets_of_the_arm_cores() {
    if !Path::new("/usr/share/papi/7.0/papi_events.csv").exists() {
        counterhal_conformance::skip!(
            Need::Tools,
            "PAPI's table is absent (Debian package libpapi7.0)"
        )
    }
    let database = Database::shipped().unwrap();
    for id in ["cortex-a53", "cortex-a57-a72", "emag", "thunderx2", "a64fx"] {
        let model = database.model(id).unwrap();
        for (preset, code) in [("PAPI_TOT_INS", 0x08), ("PAPI_TOT_CYC", 0x11)] {
            let resolved = database
                .resolve(Some(id), preset, &ARM)
                .unwrap_or_else(|e| panic!("{id}: {preset}: {e}"));
            let Encoding::Perf(attr) = &resolved.terms[0].request.encoding else {
                panic!("{id}: {preset} is not a perf attr");
            };
            assert_eq!((attr.type_, attr.config), (4, code), "{id}: {preset}");
        }
        let mapped = model.mappings().iter().filter(|m| m.papi.is_some()).count();
        for (preset, why) in model.refused_presets() {
            assert!(!why.is_empty(), "{id}: {preset:?}");
        }
        eprintln!(
            "{id}: {mapped} of PAPI's presets map, {} refused",
            model.refused_presets().len()
        );
        assert!(mapped >= 2, "{id}");
    }
}

/// Each core's `metrics.json` (an `ArchStdEvent` taking the fields it lacks from `sbsa.json`, as
/// jevents.py does) is its model's shipped metric table, formula for formula, but for the
/// formulas that call `strcmp_cpuid_str`; every event a formula reads is one of the model's.
/// Returns how many metrics were compared.
#[cfg(feature = "metrics")]
fn check_metrics(top: &Path, database: &Database) -> usize {
    let mut standard = BTreeMap::new();
    for event in json(&top.join("sbsa.json")) {
        standard.insert(
            text(&event, "MetricName").unwrap().to_ascii_lowercase(),
            event,
        );
    }
    let mut compared = 0;
    let map = std::fs::read_to_string(top.join("mapfile.csv")).unwrap();
    let dirs: BTreeSet<&str> = map
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(',').nth(2))
        .collect();
    for dir in dirs {
        let path = top.join(dir).join("metrics.json");
        let id = model_id(dir);
        let table = shipped_metrics(id).unwrap();
        if !path.exists() {
            assert!(table.is_none(), "{id} has metrics the kernel lacks");
            continue;
        }
        let table = table.unwrap_or_else(|| panic!("{id}: no metrics"));
        let model = database.model(id).unwrap();
        let mut expected = BTreeMap::new();
        for entry in json(&path) {
            let std = text(&entry, "ArchStdEvent").map(|n| &standard[&n.to_ascii_lowercase()]);
            let get = |key: &str| text(&entry, key).or_else(|| std.and_then(|s| text(s, key)));
            let expression = get("MetricExpr").unwrap();
            if expression.contains("strcmp_cpuid_str") {
                continue;
            }
            let expression = expression.split_whitespace().collect::<Vec<_>>().join(" ");
            expected.insert(get("MetricName").unwrap().to_string(), expression);
        }
        // The formulas compared parsed: ours are shipped parsed.
        let ours: BTreeMap<String, Expr> = table
            .metrics
            .iter()
            .map(|m| (m.name.to_string(), m.formula()))
            .collect();
        let kernels: BTreeMap<String, Expr> = expected
            .iter()
            .map(|(name, text)| (name.clone(), expression::parse(text).unwrap()))
            .collect();
        assert_eq!(ours, kernels, "{id}: metrics");
        for expression in expected.values() {
            // perf's `PMU@terms@` events (`armv8_pmuv3_0@event\=0x2013@`) name the PMU's own
            // encoding, not a table's event.
            let expression = without_pmu_terms(expression);
            let words =
                expression.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '#'));
            for word in words {
                let is_name = word.starts_with(|c: char| c.is_ascii_alphabetic());
                if !is_name
                    || ["if", "else", "duration_time"].contains(&word)
                    || ours.contains_key(word)
                {
                    continue;
                }
                assert!(
                    model.event(word).is_some(),
                    "{id}: a formula reads `{word}`, no event of the model"
                );
            }
        }
        compared += expected.len();
    }
    assert!(compared > 150, "{compared} metrics");
    compared
}

/// `expression` without perf's `PMU@terms@` events (the PMU's name and its terms).
#[cfg(feature = "metrics")]
fn without_pmu_terms(expression: &str) -> String {
    let mut out = String::new();
    let mut rest = expression;
    while let Some(at) = rest.find('@') {
        let head = &rest[..at];
        let name_start = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        out.push_str(&head[..name_start]);
        out.push(' ');
        rest = &rest[at + 1..];
        rest = rest.find('@').map_or("", |end| &rest[end + 1..]);
    }
    out.push_str(rest);
    out
}

/// perf's generalized hardware events as the driver counts them on every PMUv3 core
/// (`armv8_pmuv3_perf_map` in drivers/perf/arm_pmuv3.c): each Arm model maps each to the event
/// of the driver's number. Returns how many mappings were compared.
fn check_generalized(arch: &Path, database: &Database) -> usize {
    let top = arch.ancestors().nth(5).unwrap();
    let driver = std::fs::read_to_string(top.join("drivers/perf/arm_pmuv3.c")).unwrap();
    let header = std::fs::read_to_string(top.join("include/linux/perf/arm_pmuv3.h")).unwrap();
    let define = |name: &str| -> u64 {
        let line = header
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap();
        number(line.split_whitespace().nth(2).unwrap())
    };
    let start = driver.find("armv8_pmuv3_perf_map[").unwrap();
    let body = &driver[start..];
    let body = &body[..body.find("};").unwrap()];
    let perf_names = [
        ("PERF_COUNT_HW_CPU_CYCLES", "cycles"),
        ("PERF_COUNT_HW_INSTRUCTIONS", "instructions"),
        ("PERF_COUNT_HW_CACHE_REFERENCES", "cache-references"),
        ("PERF_COUNT_HW_CACHE_MISSES", "cache-misses"),
        ("PERF_COUNT_HW_BRANCH_MISSES", "branch-misses"),
        ("PERF_COUNT_HW_BUS_CYCLES", "bus-cycles"),
        (
            "PERF_COUNT_HW_STALLED_CYCLES_FRONTEND",
            "stalled-cycles-frontend",
        ),
        (
            "PERF_COUNT_HW_STALLED_CYCLES_BACKEND",
            "stalled-cycles-backend",
        ),
    ];
    let mut compared = 0;
    for line in body.lines() {
        let Some((index, value)) = line.trim().split_once('=') else {
            continue;
        };
        let index = index.trim().trim_start_matches('[').trim_end_matches(']');
        let Some((_, name)) = perf_names.iter().find(|(m, _)| *m == index) else {
            continue;
        };
        let code = define(value.trim().trim_end_matches(','));
        for model in database
            .models()
            .filter(|m| m.encoder == EncoderKind::Armv8)
        {
            let event = counterhal_hal::GeneralizedEvent::from_name(name).unwrap();
            let mapping = model
                .mapping(event)
                .unwrap_or_else(|| panic!("{}: no `{name}`", model.id));
            let terms: Vec<_> = mapping.terms().collect();
            let [(_, 1, native)] = &terms[..] else {
                panic!("{}: `{name}` is {terms:?}", model.id);
            };
            assert_eq!(
                model.event(native).map(|e| u64::from(e.code)),
                Some(code),
                "{}: {name}",
                model.id
            );
            compared += 1;
        }
    }
    assert!(compared >= 8 * 24, "{compared}");
    compared
}
