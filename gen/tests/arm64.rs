//! `counterhal-gen arm64` on the kernel tree it was run on (Debian's linux-source-6.12 tarball
//! under /usr/src): regenerating gives the shipped files' bytes, twice the same; and libpfm4's
//! Arm tables (a libpfm4 snapshot named by `COUNTERHAL_LIBPFM4_SNAPSHOT`, a directory holding
//! `lib/events`, the commit the shipped headers name) agree with the kernel's numbers for every
//! name both have. Debian's x86 build of libpfm4 4.13 has no Arm PMU (`pfm_get_pmu_info`
//! lists none), so its snapshot's source is libpfm4's side here. Each test skips, saying
//! why, where its source is absent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use counterhal_conformance::fixtures;
use counterhal_conformance::skip::Need;
use counterhal_gen::arm64;

const SNAPSHOT_ENV: &str = "COUNTERHAL_LIBPFM4_SNAPSHOT";
const LIBPFM4_COMMIT: &str = "91970fe6eb4e80b63f77fb54a9592e28a207050c";
const PACKAGE: &str = "Debian linux-source-6.12 6.12.117-1~deb12u1";

/// Where libpfm4 and the kernel number one name differently, and why: (libpfm4 PMU, name, why).
const KNOWN: &[(&str, &str, &str)] = &[(
    "arm_thunderx2",
    "OP_RETIRED",
    "ThunderX2's own kernel files do not list it, so it is the architecture's common event 0x3a (common-and-microarch.json); libpfm4's ThunderX2 table gives the name to its implementation-defined 0xe8",
)];

fn generate(top: &Path, libpfm4: Option<&Path>) -> BTreeMap<String, String> {
    let makefile = std::fs::read_to_string(top.join("Makefile")).unwrap();
    let version = arm64::kernel_version(&makefile).unwrap();
    let arch = top.join("tools/perf/pmu-events/arch/arm64");
    let common = arm64::driver_events(top).unwrap();
    let mut models = arm64::models(&arch, &common, &format!("{version} ({PACKAGE})")).unwrap();
    if let Some(root) = libpfm4 {
        arm64::add_libpfm4_aliases(&mut models, root, LIBPFM4_COMMIT).unwrap();
    }
    let generalized = arm64::driver_generalized(top).unwrap();
    models
        .iter()
        .map(|m| (format!("{}.toml", m.id), arm64::model_file(m, &generalized)))
        .collect()
}

fn shipped() -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/data/generated/arm64");
    std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect()
}

/// A generated file without what libpfm4 adds (model aliases, the event-alias table up to the
/// blank line that ends it, and the aliases' source line).
fn without_libpfm4(text: &str) -> String {
    let mut out = Vec::new();
    let mut in_aliases = false;
    for line in text.lines() {
        if line == "[cpu.event_aliases]" {
            in_aliases = true;
        } else if in_aliases && line.is_empty() {
            // The blank line before the table stays; the one after it goes with it.
            in_aliases = false;
            continue;
        }
        if !in_aliases && !line.starts_with("# aliases: ") && !line.starts_with("aliases = ") {
            out.push(line);
        }
    }
    out.join("\n").trim_end().to_string()
}

/// Oracle: the kernel's arm64 JSON in Debian's linux-source-6.12. The generator gives the same
/// bytes twice, and the shipped tables' events and match rules exactly.
#[test]
fn regenerating_from_the_kernel_gives_the_shipped_tables() {
    let top = match fixtures::kernel_source() {
        Ok(found) => found,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "arm64 regeneration not run: {why}"),
    };
    let first = generate(top, None);
    assert_eq!(generate(top, None), first, "deterministic");
    let shipped = shipped();
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        shipped.keys().collect::<Vec<_>>(),
        "one shipped file per kernel core"
    );
    for (name, text) in &first {
        assert_eq!(
            without_libpfm4(text),
            without_libpfm4(&shipped[name]),
            "{name} differs from a regeneration"
        );
        // Facts only: no description of the kernel's JSON is copied.
        assert!(!text.contains("architecturally executed"), "{name}");
    }
}

/// Oracle: libpfm4's Arm tables (the snapshot's `lib/events/arm_*_events.h`) and the kernel's
/// JSON. With the snapshot, regeneration gives the shipped bytes exactly; every libpfm4 event
/// whose name the kernel's table has carries the kernel's number; every alias stands for an
/// event of libpfm4's number.
#[test]
fn libpfm4_names_agree_with_the_kernels_numbers() {
    let Some(root) = std::env::var_os(SNAPSHOT_ENV).map(PathBuf::from) else {
        counterhal_conformance::skip!(
            Need::Source,
            "libpfm4 comparison not run: set {SNAPSHOT_ENV} to a libpfm4 snapshot at {LIBPFM4_COMMIT} (holding lib/events)"
        )
    };
    let top = match fixtures::kernel_source() {
        Ok(found) => found,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "libpfm4 comparison not run: {why}"),
    };
    assert_eq!(generate(top, Some(&root)), shipped(), "shipped bytes");
    let makefile = std::fs::read_to_string(top.join("Makefile")).unwrap();
    let version = arm64::kernel_version(&makefile).unwrap();
    let arch = top.join("tools/perf/pmu-events/arch/arm64");
    let common = arm64::driver_events(top).unwrap();
    let models = arm64::models(&arch, &common, &version).unwrap();
    let (mut same, mut aliased, mut only_libpfm4, mut known) = (0, 0, 0, 0);
    let mut differ = Vec::new();
    for (dir, tables) in arm64::LIBPFM4_TABLES {
        let model = models
            .iter()
            .find(|m| m.id == arm64::model_id(dir))
            .unwrap_or_else(|| panic!("{dir}: no model"));
        let kernel: BTreeMap<String, u16> = model
            .events
            .iter()
            .map(|e| (e.name.to_ascii_uppercase(), e.code))
            .collect();
        for (pmu, file, array) in *tables {
            for (name, code) in arm64::libpfm4_table(&root, file, array).unwrap() {
                match kernel.get(&name.to_ascii_uppercase()) {
                    Some(&k) if k == code => same += 1,
                    Some(_) if KNOWN.iter().any(|(p, n, _)| p == pmu && *n == name) => {
                        known += 1;
                    }
                    Some(&k) => {
                        differ.push(format!("{pmu} {name}: libpfm4 {code:#x}, kernel {k:#x}"))
                    }
                    None if kernel.values().any(|&k| k == code) => aliased += 1,
                    None => only_libpfm4 += 1,
                }
            }
        }
    }
    eprintln!(
        "libpfm4 vs kernel: {same} names with the same number, {aliased} other names of a kernel number, {only_libpfm4} numbers the kernel's table lacks, {known} known differences, {} differing",
        differ.len()
    );
    assert_eq!(known, KNOWN.len(), "every known difference is still there");
    assert!(differ.is_empty(), "{differ:#?}");
    assert!(same > 500, "{same} compared");
}
