//! Today's PAPI releases as the oracles: PAPI 7.2 (Debian sid) and 7.1 (Debian 13, trixie), in
//! the Debian roots `scripts/current-lab` makes and names in `COUNTERHAL_CURRENT_LAB` (the
//! folder holding `sid/` and `trixie/`). Programs are built in a root, by its compiler, against
//! its PAPI (papi.h and `libpapi.so.7.2` or `.7.1`), and run there on that PAPI and on ours,
//! installed by `scripts/install-papi` under the release's SONAME, as `suite.rs` does for
//! Debian 12's PAPI 7.0 on this machine. Without the variable, or without root (a root is
//! entered by chroot), each test skips through the door.

use crate::install;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The variable naming the folder of the lab's roots.
pub const LAB: &str = "COUNTERHAL_CURRENT_LAB";

/// A release of the lab: the root that holds it and its SONAME.
#[derive(Clone, Copy)]
pub struct Release {
    /// The root's folder under the lab (`sid`).
    pub root: &'static str,
    /// The release (`7.2`).
    pub version: &'static str,
}

/// PAPI 7.2, Debian sid's.
pub const PAPI_7_2: Release = Release {
    root: "sid",
    version: "7.2",
};
/// PAPI 7.1, Debian 13's.
pub const PAPI_7_1: Release = Release {
    root: "trixie",
    version: "7.1",
};

impl Release {
    /// `libpapi.so.7.2`.
    pub fn soname(self) -> String {
        format!("libpapi.so.{}", self.version)
    }

    /// The root's folder, when the lab has made it (its PAPI's papi.h there), or why not.
    pub fn root(self) -> Result<PathBuf, String> {
        let Some(lab) = std::env::var_os(LAB) else {
            return Err(format!(
                "PAPI {} runs in Debian {}'s root, which scripts/current-lab makes ({LAB} names \
                 the folder of the lab's roots)",
                self.version, self.root
            ));
        };
        let root = Path::new(&lab).join(self.root);
        if root.join("usr/include/papi.h").is_file() {
            Ok(root)
        } else {
            Err(format!(
                "{} has no Debian {} root with PAPI {} (scripts/current-lab makes it)",
                lab.to_string_lossy(),
                self.root,
                self.version
            ))
        }
    }

    /// The root's PAPI headers (papi.h and those it includes) copied to a folder of their
    /// own, which a program built here takes with `-I` (with this machine's C headers).
    pub fn headers(self, root: &Path) -> PathBuf {
        let dir = counterhal_conformance::fixtures::temp_dir().join(format!(
            "counterhal-papi-{}-headers-{}",
            self.root,
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(root.join("usr/include")).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("papi") && name.ends_with(".h") {
                std::fs::copy(entry.path(), dir.join(&name)).unwrap();
            }
        }
        dir
    }
}

/// The stage a root sees at [`STAGE_IN_ROOT`]: `lib/libpapi.so`, our library as
/// `scripts/install-papi` installs it for `release` (its SONAME the release's), and this
/// crate's `ctests/run` and `include/`, beside a `work/` folder.
fn stage(release: Release, tag: &str) -> PathBuf {
    let stage = counterhal_conformance::fixtures::temp_dir().join(format!(
        "counterhal-papi-lab-{}-{tag}-{}",
        release.root,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&stage);
    for dir in ["lib", "work", "papi/ctests", "papi/include/papi-7.2"] {
        std::fs::create_dir_all(stage.join(dir)).unwrap();
    }
    let installed = install::lib().join(format!("{}.0.0", release.soname()));
    std::fs::copy(&installed, stage.join("lib/libpapi.so")).unwrap();
    stage_papi_tests(&stage);
    let manifest = crate::common::manifest();
    for program in ["release.c", "mixed_release.c"] {
        std::fs::copy(
            manifest.join("tests/c").join(program),
            stage.join("work").join(program),
        )
        .unwrap();
    }
    stage
}

/// This crate's `ctests/run` and `include/` (our headers, which PAPI's tests are checked to
/// compile against) copied into `stage`'s `papi/`, as a root sees them.
pub fn stage_papi_tests(stage: &Path) {
    let manifest = crate::common::manifest();
    std::fs::create_dir_all(stage.join("papi/ctests")).unwrap();
    std::fs::create_dir_all(stage.join("papi/include/papi-7.2")).unwrap();
    std::fs::copy(manifest.join("ctests/run"), stage.join("papi/ctests/run")).unwrap();
    for header in [
        "papi.h",
        "papiStdEventDefs.h",
        "fpapi.h",
        "f77papi.h",
        "f90papi.h",
        "papi-7.2/papi.h",
    ] {
        std::fs::copy(
            manifest.join("include").join(header),
            stage.join("papi/include").join(header),
        )
        .unwrap();
    }
}

/// Where a root sees the stage.
pub const STAGE_IN_ROOT: &str = "/var/tmp/counterhal-lab";

/// Runs `script` with bash in `root`, by chroot in a mount namespace of its own (the host's
/// /proc, /sys and /dev bound in, `stage` at [`STAGE_IN_ROOT`]: nothing stays mounted after).
pub fn in_root(root: &Path, stage: &Path, script: &str) -> Output {
    in_root_over(root, None, stage, script)
}

/// [`in_root`], in an overlay of `root` where `overlay` names a folder for it (the root's
/// changes go to its `upper/`, and the root itself is never written).
pub fn in_root_over(root: &Path, overlay: Option<&Path>, stage: &Path, script: &str) -> Output {
    Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-ec"])
        .arg(
            r#"root=$1 overlay=$2 stage=$3 script=$4
if [ -n "$overlay" ]; then
    mkdir -p "$overlay/upper" "$overlay/work" "$overlay/merged"
    mount -t overlay overlay \
        -o "lowerdir=$root,upperdir=$overlay/upper,workdir=$overlay/work" "$overlay/merged"
    root=$overlay/merged
fi
for fs in proc sys dev; do mount --rbind "/$fs" "$root/$fs"; done
mkdir -p "$root/var/tmp/counterhal-lab"
mount --bind "$stage" "$root/var/tmp/counterhal-lab"
exec chroot "$root" /bin/bash -ec "$script""#,
        )
        .arg("sh")
        .arg(root)
        .arg(overlay.unwrap_or(Path::new("")))
        .arg(stage)
        .arg(script)
        .output()
        .expect("unshare runs")
}

/// The lab's root of `release` and a stage for it, or a skip through the door (no lab, or not
/// root).
macro_rules! lab_or_skip {
    ($release:expr, $tag:expr) => {{
        let root = match $release.root() {
            Ok(root) => root,
            Err(why) => skip!(Need::Platform, "{why}"),
        };
        if !crate::common::is_root() {
            skip!(
                Need::Privilege,
                "a Debian root of the lab is entered by chroot, as root"
            );
        }
        (root, stage($release, $tag))
    }};
}

/// tests/c/release.c built in the root against its PAPI and run on it and on ours: every line
/// alike (component 0's description at the release's offsets, a preset's description, the
/// walks of presets and unit masks with the release's modifiers, the messages).
fn a_program_reads_what_real_papi_gives(release: Release) {
    let (root, stage) = lab_or_skip!(release, "program");
    let script = format!(
        "cd {STAGE_IN_ROOT}/work
cc -std=gnu99 -Wall -Wextra -Werror release.c -o release -lpapi
./release > real.txt
ln -sf ../lib/libpapi.so ../lib/{soname}
LD_LIBRARY_PATH={STAGE_IN_ROOT}/lib ./release > ours.txt",
        soname = release.soname()
    );
    let out = in_root(&root, &stage, &script);
    assert!(out.status.success(), "{out:?}");
    let theirs = std::fs::read_to_string(stage.join("work/real.txt")).unwrap();
    let ours = std::fs::read_to_string(stage.join("work/ours.txt")).unwrap();
    assert!(theirs.lines().count() > 30, "{theirs}");
    for (t, o) in theirs.lines().zip(ours.lines()) {
        assert_eq!(t, o, "PAPI {} vs ours\n{theirs}\n{ours}", release.version);
    }
    assert_eq!(theirs.lines().count(), ours.lines().count(), "{ours}");
    let _ = std::fs::remove_dir_all(&stage);
}

/// Oracle: Debian sid's PAPI 7.2.0 (libpapi.so.7.2, its papi.h).
#[test]
fn a_program_built_against_papi_7_2_reads_what_papi_7_2_gives() {
    a_program_reads_what_real_papi_gives(PAPI_7_2);
}

/// Oracle: Debian 13's PAPI 7.1.0 (libpapi.so.7.1, its papi.h).
#[test]
fn a_program_built_against_papi_7_1_reads_what_papi_7_1_gives() {
    a_program_reads_what_real_papi_gives(PAPI_7_1);
}

/// Oracle: Debian sid's PAPI 7.2.0, whose `PAPI_library_init` answers PAPI 7.0's version
/// `PAPI_EINVAL`: a program built on 7.2 (the root's papi.h) with a library built on 7.0 (our
/// papi.h, 7.0's to the byte: abi.rs), both linked to `libpapi.so.7.2`, print the same inits
/// on real 7.2 and on ours when the 7.2 program calls first (`releases.rs` holds the rest).
#[test]
fn real_papi_7_2_refuses_a_7_0_library_as_ours_does() {
    let (root, stage) = lab_or_skip!(PAPI_7_2, "mixed");
    let script = format!(
        "cd {STAGE_IN_ROOT}/work
cc -std=gnu99 -Wall -Wextra -Werror -shared -fPIC -DAS_LIBRARY -I{STAGE_IN_ROOT}/papi/include \
    mixed_release.c -o libmixed.so -lpapi
cc -std=gnu99 -Wall -Wextra -Werror mixed_release.c -o mixed -L. -lmixed -Wl,-rpath,$PWD -lpapi
./mixed program-first > real.txt
ln -sf ../lib/libpapi.so ../lib/libpapi.so.7.2
LD_LIBRARY_PATH={STAGE_IN_ROOT}/lib ./mixed program-first > ours.txt"
    );
    let out = in_root(&root, &stage, &script);
    assert!(out.status.success(), "{out:?}");
    let inits = |file: &str| -> Vec<String> {
        std::fs::read_to_string(stage.join("work").join(file))
            .unwrap()
            .lines()
            .filter(|l| l.contains(" init: "))
            .map(str::to_string)
            .collect()
    };
    let real = inits("real.txt");
    assert_eq!(
        real,
        [
            "program (PAPI 7.2) init: ok (0)",
            "library (PAPI 7.0) init: refused (-1)"
        ],
        "real PAPI 7.2"
    );
    assert_eq!(inits("ours.txt"), real, "ours against real PAPI 7.2");
    let _ = std::fs::remove_dir_all(&stage);
}

/// PAPI's own tests of the release (the root's papi-examples: ctests, validation_tests and
/// ftests), built in the root against its PAPI by `ctests/run`, checked to compile against our
/// headers of the release, and run there on its PAPI and on ours, judged as `suite.rs` judges
/// PAPI 7.0's (against `ctests/expected-RELEASE.txt`).
fn papi_tests_do_as_well_as_real_papi(release: Release) {
    let (root, stage) = lab_or_skip!(release, "tests");
    let ours_include = if release.version == "7.2" {
        format!("{STAGE_IN_ROOT}/papi/include/papi-7.2")
    } else {
        format!("{STAGE_IN_ROOT}/papi/include")
    };
    let timeout = std::env::var("PAPI_TEST_TIMEOUT").unwrap_or_else(|_| "20".into());
    let script = format!(
        "PAPI_SONAME={soname} PAPI_OURS_INCLUDE={ours_include} PAPI_TEST_TIMEOUT={timeout} \
         PAPI_TESTS_WORK={STAGE_IN_ROOT}/work \
         {STAGE_IN_ROOT}/papi/ctests/run {STAGE_IN_ROOT}/lib",
        soname = release.soname()
    );
    let out = in_root(&root, &stage, &script);
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = std::fs::read_to_string(
        crate::common::manifest().join(format!("ctests/expected-{}.txt", release.version)),
    )
    .unwrap_or_default();
    let (ran, problems) = crate::suite::judge(&report, &expected);
    println!(
        "PAPI {}'s tests (TEST REAL OURS):\n{report}",
        release.version
    );
    // The builds and each run's log stay in the stage's work/ when a test fails.
    let logs = stage.join("work").display().to_string();
    assert!(
        ran > 100,
        "only {ran} tests ran (logs in {logs}):\n{report}"
    );
    assert!(
        problems.is_empty(),
        "{}\n\n{report}\n(logs in {logs})",
        problems.join("\n")
    );
    let _ = std::fs::remove_dir_all(&stage);
}

/// Oracle: Debian sid's PAPI 7.2.0 running its own tests (papi-examples 7.2.0) on this
/// machine.
#[test]
fn papi_7_2_tests_do_as_well_as_real_papi_7_2() {
    papi_tests_do_as_well_as_real_papi(PAPI_7_2);
}

/// Oracle: Debian 13's PAPI 7.1.0 running its own tests (papi-examples 7.1.0) on this
/// machine.
#[test]
fn papi_7_1_tests_do_as_well_as_real_papi_7_1() {
    papi_tests_do_as_well_as_real_papi(PAPI_7_1);
}
