//! `counterhal-gen arm64` on the kernel trees it was run on (Debian's linux-source-6.12 tarball
//! under /usr/src; for the cores Linux 7.2 added, Debian sid's linux-source-7.2 in the
//! current-releases lab's root): regenerating gives the shipped files' bytes, twice the same; and libpfm4's
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
const PACKAGE_7_2: &str = "Debian linux-source-7.2 7.2.13-1";

/// Where libpfm4 and the kernel number one name differently, and why: (libpfm4 PMU, name, why).
const KNOWN: &[(&str, &str, &str)] = &[(
    "arm_thunderx2",
    "OP_RETIRED",
    "ThunderX2's own kernel files do not list it, so it is the architecture's common event 0x3a (common-and-microarch.json); libpfm4's ThunderX2 table gives the name to its implementation-defined 0xe8",
)];

fn generate(top: &Path, package: &str, libpfm4: Option<&Path>) -> BTreeMap<String, String> {
    let makefile = std::fs::read_to_string(top.join("Makefile")).unwrap();
    let version = arm64::kernel_version(&makefile).unwrap();
    let arch = top.join("tools/perf/pmu-events/arch/arm64");
    let common = arm64::driver_events(top).unwrap();
    let mut models = arm64::models(&arch, &common, &format!("{version} ({package})")).unwrap();
    if let Some(root) = libpfm4 {
        arm64::add_libpfm4_aliases(&mut models, root, LIBPFM4_COMMIT).unwrap();
    }
    let generalized = arm64::driver_generalized(top).unwrap();
    models
        .iter()
        .map(|m| (format!("{}.toml", m.id), arm64::model_file(m, &generalized)))
        .collect()
}

/// The shipped tables generated from `package`'s tree (their `# commit:` line names it).
fn shipped(package: &str) -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/data/generated/arm64");
    let from = format!("({package})");
    std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .filter(|(_, text)| {
            text.lines()
                .any(|l| l.starts_with("# commit: ") && l.ends_with(&from))
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
    let first = generate(top, PACKAGE, None);
    assert_eq!(generate(top, PACKAGE, None), first, "deterministic");
    let shipped = shipped(PACKAGE);
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
    assert_eq!(
        generate(top, PACKAGE, Some(&root)),
        shipped(PACKAGE),
        "shipped bytes"
    );
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

/// The members of Debian sid's linux-source-7.2 (in the lab's sid root) that match `members`
/// (tar's wildcards, under `linux-source-7.2/`), extracted into `dir`: the tree's top, or why
/// not.
pub(crate) fn tree_7_2(dir: &Path, members: &[&str]) -> Result<PathBuf, String> {
    let lab = std::env::var_os("COUNTERHAL_CURRENT_LAB")
        .map_or_else(|| PathBuf::from("/var/cache/counterhal-lab"), PathBuf::from);
    let tarball = lab.join("sid/usr/src/linux-source-7.2.tar.xz");
    if !tarball.is_file() {
        return Err(format!(
            "{} is absent (scripts/current-lab installs linux-source-7.2 in the sid root)",
            tarball.display()
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let status = std::process::Command::new("tar")
        .arg("-xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .arg("--wildcards")
        .args(members.iter().map(|m| format!("linux-source-7.2/{m}")))
        .status()
        .map_err(|e| format!("tar cannot run: {e}"))?;
    if !status.success() {
        return Err(format!("tar -xJf {}: {status}", tarball.display()));
    }
    Ok(dir.join("linux-source-7.2"))
}

/// Oracle: the kernel's arm64 JSON in Debian sid's linux-source-7.2. The cores it added
/// (`counterhal-gen arm64 --core`) regenerate as shipped, every core of its mapfile is shipped,
/// and each shipped table is one release's.
#[test]
fn the_cores_linux_7_2_added_regenerate_from_its_tree() {
    let dir = std::env::temp_dir().join(format!("counterhal-gen-arm64-72-{}", std::process::id()));
    let members = [
        "Makefile",
        "drivers/perf/arm_pmuv3.c",
        "include/linux/perf/arm_pmuv3.h",
        "tools/perf/pmu-events/arch/arm64/*",
    ];
    let top = match tree_7_2(&dir, &members) {
        Ok(top) => top,
        Err(why) => {
            _ = std::fs::remove_dir_all(&dir);
            counterhal_conformance::skip!(Need::Tools, "Linux 7.2 regeneration not run: {why}")
        }
    };
    let generated = generate(&top, PACKAGE_7_2, None);
    _ = std::fs::remove_dir_all(&dir);
    let older = shipped(PACKAGE).len();
    let shipped = shipped(PACKAGE_7_2);
    assert_eq!(shipped.len(), 4, "{:?}", shipped.keys());
    assert_eq!(
        shipped.len() + older,
        generated.len(),
        "every core of Linux 7.2's mapfile is shipped, from one release"
    );
    for (name, text) in &shipped {
        assert_eq!(
            without_libpfm4(&generated[name]),
            without_libpfm4(text),
            "{name} differs from a regeneration"
        );
    }
}
