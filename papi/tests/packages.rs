//! The Debian packages of scripts/debs (counterhal, libcounterhal0.1, libcounterhal-dev,
//! counterhal-papi) installed as a user installs them, by dpkg, into the current-releases
//! lab's Debian 13 and sid roots, each seen through an overlay of its own (the cached root is
//! never written), where the command counts, a C program finds the C API with pkg-config,
//! PAPI's own tests of the root's release run on the drop-in as the lab runs them on the build
//! tree's library, and purging the packages leaves the root as it was; and lintian's verdict
//! on them, every tag it leaves a decision written in dist/debian/README.md. The counterhal
//! package's service, under a systemd that runs, is `service`'s.
//!
//! Oracles: dpkg of Debian 13 and sid; Debian 13's PAPI 7.1.0 and sid's 7.2.0 with their
//! papi-examples (their own ctests, judged against `ctests/expected-7.1.txt` and `-7.2.txt` as
//! `current.rs` judges the build tree's library); the roots' gcc and pkg-config (pkgconf);
//! lintian 2.116 (Debian 12's).

mod service;

use crate::current::{PAPI_7_1, PAPI_7_2, Release, in_root_over, stage_papi_tests};

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

/// The variable naming the folder of scripts/debs' packages and scripts/release-tarball's
/// tarball, where it is not `dist/` of the target folder this test binary was built in.
const DIST: &str = "COUNTERHAL_DIST";

/// The packages, in the order dpkg purges them (dependents first).
const PACKAGES: [&str; 4] = [
    "counterhal-papi",
    "libcounterhal-dev",
    "libcounterhal0.1",
    "counterhal",
];

/// Where scripts/debs and scripts/release-tarball wrote.
pub(crate) fn dist() -> PathBuf {
    if let Some(dir) = std::env::var_os(DIST) {
        return dir.into();
    }
    let exe = std::env::current_exe().unwrap();
    // target/debug/deps/main-HASH
    exe.ancestors().nth(3).unwrap().join("dist")
}

/// The four packages' files, or why they are not here.
fn debs() -> Result<Vec<PathBuf>, String> {
    let version = env!("CARGO_PKG_VERSION");
    let debs: Vec<PathBuf> = PACKAGES
        .iter()
        .map(|p| dist().join(format!("{p}_{version}-1_amd64.deb")))
        .collect();
    match debs.iter().find(|d| !d.is_file()) {
        Some(missing) => Err(format!(
            "no {} (scripts/debs makes the packages)",
            missing.display()
        )),
        None => Ok(debs),
    }
}

/// The packages, or a skip through the door.
macro_rules! debs_or_skip {
    () => {
        match debs() {
            Ok(debs) => debs,
            Err(why) => skip!(Need::Tools, "{why}"),
        }
    };
}

/// What a root holds, but the folders mounted over it and its temporary ones: one path a line.
const SNAPSHOT: &str = "find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /tmp \
    -o -path /var/tmp -o -path /run \\) -prune -o -print | LC_ALL=C sort";

/// The script run in the overlay: the packages installed, used and purged, each step's output
/// in a file of `work/`.
fn script(release: Release) -> String {
    let soname = release.soname();
    let ours_include = if release.version == "7.2" {
        "papi/include/papi-7.2"
    } else {
        "papi/include"
    };
    let timeout = std::env::var("PAPI_TEST_TIMEOUT").unwrap_or_else(|_| "20".into());
    format!(
        r#"stage=/var/tmp/counterhal-lab
cd $stage/work
{SNAPSHOT} > before.txt
dpkg -i $stage/debs/*.deb > install.log 2>&1
dpkg-query -W -f '${{Package}} ${{Status}}\n' {packages} > status.txt
counterhal stat -x, -e task-clock -- true 2> stat.txt
setpriv --reuid=65534 --regid=65534 --clear-groups counterhal stat -x, -e task-clock -- true \
    2> stat-nobody.txt
cc -o count $stage/count.c $(pkg-config --cflags --libs counterhal)
./count page-faults task-clock > count.txt
ldd ./count > count.ldd
cc -o count-static $stage/count.c $(pkg-config --cflags --libs counterhal-static)
./count-static page-faults > count-static.txt
bash -c '. /usr/share/bash-completion/completions/counterhal && complete -p counterhal' > completion.txt
zcat /usr/share/man/man1/counterhal-stat.1.gz | head -n 5 > man.txt
multiarch=$(gcc -print-multiarch)
papi=/usr/lib/$multiarch/counterhal-papi
mkdir -p lib
ln -sf $papi/{soname} lib/libpapi.so
export PAPI_SONAME={soname} PAPI_OURS_INCLUDE=$stage/{ours_include} PAPI_TEST_TIMEOUT={timeout} \
    PAPI_TESTS_WORK=$stage/work/papi
PAPI_TESTS_STEP=build $stage/papi/ctests/run $stage/work/lib > papi-build.txt 2>&1
PAPI_TESTS_STEP=run $stage/papi/ctests/run $papi > papi.txt 2> papi-run.log
counterhal-papi ldd papi/real/bin/ctests/zero > wrapper.ldd
ldd papi/real/bin/ctests/zero > plain.ldd
dpkg --purge {packages} > purge.log 2>&1
{SNAPSHOT} > after.txt
"#,
        packages = PACKAGES.join(" "),
    )
}

/// The packages installed, used and purged in an overlay of `release`'s root.
fn installed_used_and_purged(release: Release) {
    let root = match release.root() {
        Ok(root) => root,
        Err(why) => skip!(Need::Platform, "{why}"),
    };
    if !crate::common::is_root() {
        skip!(
            Need::Privilege,
            "a root of the lab is overlaid and entered by chroot, as root"
        );
    }
    let debs = debs_or_skip!();
    let scratch = std::env::temp_dir().join(format!(
        "counterhal-packages-{}-{}",
        release.root,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&scratch);
    let stage = scratch.join("stage");
    for dir in ["debs", "work"] {
        std::fs::create_dir_all(stage.join(dir)).unwrap();
    }
    for deb in &debs {
        std::fs::copy(deb, stage.join("debs").join(deb.file_name().unwrap())).unwrap();
    }
    stage_papi_tests(&stage);
    let count = crate::common::manifest().join("../examples/c/count.c");
    std::fs::copy(count, stage.join("count.c")).unwrap();
    let overlay = scratch.join("overlay");
    let out = in_root_over(&root, Some(&overlay), &stage, &script(release));
    let work = stage.join("work");
    let read = |name: &str| std::fs::read_to_string(work.join(name)).unwrap_or_default();
    assert!(
        out.status.success(),
        "in Debian {}'s root: {}{}\ninstall: {}\nlogs in {}",
        release.root,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        read("install.log"),
        work.display()
    );
    judge_the_uses(release, &read);
    let (before, after) = (read("before.txt"), read("after.txt"));
    let before: BTreeSet<&str> = before.lines().collect();
    let after: BTreeSet<&str> = after.lines().collect();
    // dpkg's own records (its status, its log, the backup of each) and the loader's cache
    // are the system's, rewritten by any package's installation and removal.
    let own = |path: &&&str| !path.starts_with("/var/lib/dpkg/") && **path != "/var/log/dpkg.log";
    let left: Vec<&&str> = after.difference(&before).filter(own).collect();
    let gone: Vec<&&str> = before.difference(&after).filter(own).collect();
    assert!(
        left.is_empty() && gone.is_empty(),
        "purged, the packages left {left:?} and took {gone:?}"
    );
    assert!(before.len() > 1000, "{} paths", before.len());
    let _ = std::fs::remove_dir_all(&scratch);
}

/// What each use in the root wrote (`read` gives a file of the work folder): installed
/// without a warning, the command counted (as root and as `nobody`), the C program found the shared and the static library by pkg-config and
/// counted, the completions and manual pages are there, PAPI's tests did on the drop-in what
/// they do on the build tree's library, and the wrapper chose the drop-in.
fn judge_the_uses(release: Release, read: &dyn Fn(&str) -> String) {
    let status = read("status.txt");
    assert_eq!(
        status.matches(" install ok installed").count(),
        PACKAGES.len(),
        "{status}"
    );
    let install = read("install.log");
    assert!(!install.to_lowercase().contains("warning"), "{install}");
    // As root, and as a user without privileges (user space, as perf counts it there).
    for file in ["stat.txt", "stat-nobody.txt"] {
        let stat = read(file);
        let task_clock: f64 = stat
            .lines()
            .find(|l| l.contains(",task-clock"))
            .and_then(|l| l.split(',').next()?.parse().ok())
            .unwrap_or_else(|| panic!("{file}: {stat}"));
        assert!(task_clock > 0.0, "{file}: {stat}");
    }
    let count = read("count.txt");
    let page_faults: u64 = count
        .lines()
        .find_map(|l| l.strip_prefix("page-faults"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{count}"));
    // The program touches 16 MiB, a page at a time.
    assert!(page_faults >= 4096, "{count}");
    // The loader's cache names the multiarch folder as /lib's or /usr/lib's (merged /usr).
    let ldd = read("count.ldd");
    assert!(
        ldd.contains("libcounterhal.so.0.1 => /") && ldd.contains("-linux-gnu/libcounterhal.so"),
        "{ldd}"
    );
    assert!(read("count-static.txt").contains("page-faults"));
    assert!(read("completion.txt").contains("counterhal"));
    assert!(
        read("man.txt").contains("counterhal"),
        "{}",
        read("man.txt")
    );

    let report = read("papi.txt");
    let expected = std::fs::read_to_string(
        crate::common::manifest().join(format!("ctests/expected-{}.txt", release.version)),
    )
    .unwrap_or_default();
    let (ran, problems) = crate::suite::judge(&report, &expected);
    println!(
        "PAPI {}'s tests on counterhal-papi (TEST REAL OURS):\n{report}",
        release.version
    );
    assert!(
        ran > 100,
        "only {ran} tests ran:\n{report}{}",
        read("papi-build.txt")
    );
    assert!(problems.is_empty(), "{}\n\n{report}", problems.join("\n"));
    let soname = release.soname();
    let wrapped = read("wrapper.ldd");
    assert!(
        wrapped.contains(&format!("{soname} => /usr/lib/"))
            && wrapped.contains("/counterhal-papi/"),
        "{wrapped}"
    );
    let plain = read("plain.ldd");
    assert!(
        !plain.contains("/counterhal-papi/"),
        "Debian's PAPI without the wrapper: {plain}"
    );
}

/// Oracle: Debian 13's dpkg, gcc, pkgconf and PAPI 7.1.0 with its papi-examples.
#[test]
fn the_packages_install_work_and_purge_in_debian_13() {
    installed_used_and_purged(PAPI_7_1);
}

/// Oracle: Debian sid's dpkg, gcc, pkgconf and PAPI 7.2.0 with its papi-examples.
#[test]
fn the_packages_install_work_and_purge_in_debian_sid() {
    installed_used_and_purged(PAPI_7_2);
}

/// Every tag lintian gives the packages is one dist/debian/README.md decides (its table of
/// tags: a row `| `TAG` | ...`), and every tag the table decides is one lintian gives: the
/// packaging's choices stay written down, and none is left unexplained.
///
/// Oracle: lintian 2.116 (Debian 12's), with its informational and overridden tags shown.
#[test]
fn every_lintian_tag_is_a_decision() {
    let debs = debs_or_skip!();
    if Command::new("lintian").arg("--version").output().is_err() {
        skip!(
            Need::Tools,
            "lintian is not installed (apt-get install lintian)"
        );
    }
    let out = Command::new("lintian")
        .args([
            "--display-info",
            "--show-overrides",
            "--tag-display-limit",
            "0",
        ])
        .args(&debs)
        .output()
        .expect("run lintian");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let given: BTreeSet<String> = said
        .lines()
        .filter(|l| {
            ["E: ", "W: ", "I: ", "O: "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    let readme =
        std::fs::read_to_string(crate::common::manifest().join("../dist/debian/README.md"))
            .unwrap();
    let (_, table) = readme
        .split_once("\n## What lintian says")
        .expect("dist/debian/README.md's section on lintian");
    let decided: BTreeSet<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    assert!(!said.lines().any(|l| l.starts_with("E: ")), "{said}");
    assert_eq!(given, decided, "lintian said:\n{said}");
}
