//! The counterhal package's service under a running systemd: an overlay of the lab's Debian 13
//! and sid roots booted by systemd-nspawn, where the package is installed by dpkg,
//! counterhal-serve.service enabled and started by its operator (`systemctl enable --now`) and
//! scraped, then the package upgraded (the service restarted on the new binary, still
//! enabled), removed (the service stopped, its enablement links kept) and purged (the links,
//! deb-systemd-helper's state and the defaults file gone), as dh_installsystemd's scripts do
//! for a unit it does not enable (dist/debian/README.md).
//!
//! Oracles: Debian 13's systemd 257 and sid's 262 as PID 1, their dpkg and init-system-helpers
//! (deb-systemd-helper, deb-systemd-invoke).

use super::dist;
use crate::current::{PAPI_7_1, PAPI_7_2, Release, STAGE_IN_ROOT};

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The unit the root boots into its multi-user target to run the script, powering off when it
/// ends (as `systemd-update-utmp-runlevel.service` orders itself after that target).
const TEST_UNIT: &str = "[Unit]
Description=counterhal's package test
DefaultDependencies=no
Requires=basic.target
After=basic.target multi-user.target
SuccessAction=poweroff
FailureAction=poweroff

[Service]
Type=oneshot
ExecStart=/bin/bash /var/tmp/counterhal-lab/service.sh
StandardOutput=append:/var/tmp/counterhal-lab/work/script.log
StandardError=inherit
";

/// The script the test unit runs: the second package made from the first (its version
/// 0.1.0-2, its files the same, unpacked by dpkg as new inodes), then each step with its
/// dpkg output in `STEP.log` and the service's state after it in `STEP.txt`.
const SCRIPT: &str = r#"set -u
cd /var/tmp/counterhal-lab/work
unit=counterhal-serve.service
# The first line of the answer to a scrape of the unit's port, or nothing.
scrape() {
    timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/19110 &&
        printf "GET /metrics HTTP/1.0\r\n\r\n" >&3 && head -n 1 <&3' 2>/dev/null | tr -d '\r'
}
serving() { for _ in $(seq 50); do [ -n "$(scrape)" ] && return; sleep 0.2; done; }
state() {
    pid=$(systemctl show -P MainPID $unit)
    echo "active=$(systemctl is-active $unit)"
    echo "enabled=$(systemctl is-enabled $unit 2>&1)"
    echo "pid=$pid"
    if [ "${pid:-0}" != 0 ]; then
        echo "exe=$(readlink /proc/$pid/exe)"
        echo "exe_inode=$(stat -L -c %i /proc/$pid/exe)"
    fi
    echo "binary_inode=$(stat -c %i /usr/bin/counterhal 2>/dev/null)"
    echo "processes=$(for p in /proc/[0-9]*; do readlink $p/exe; done 2>/dev/null |
        grep -c '^/usr/bin/counterhal')"
    echo "port=$(scrape)"
    echo "unit_file=$(ls /usr/lib/systemd/system/$unit 2>/dev/null)"
    echo "links=$(find /etc/systemd/system -lname "*/$unit" | sort | xargs)"
    echo "helper_state=$(find /var/lib/systemd/deb-systemd-helper-enabled -name "$unit*" | sort | xargs)"
    echo "defaults=$(ls /etc/default/counterhal-serve 2>/dev/null)"
    echo "package=$(dpkg-query -W -f '${Version} ${Status}' counterhal 2>/dev/null)"
}
dpkg-query -W -f '${Package} ${Version} ${Essential}\n' systemd init-system-helpers > versions.txt
deb=$(ls ../debs/counterhal_*.deb)
dpkg-deb -R "$deb" second
sed -i 's/^Version: \(.*\)-1$/Version: \1-2/' second/DEBIAN/control
dpkg-deb -b second counterhal-second.deb > /dev/null
dpkg -i "$deb" > install.log 2>&1
systemctl enable --now $unit >> install.log 2>&1
serving
state > installed.txt
dpkg -i counterhal-second.deb > upgrade.log 2>&1
serving
state > upgraded.txt
dpkg -r counterhal > remove.log 2>&1
state > removed.txt
dpkg -P counterhal > purge.log 2>&1
state > purged.txt
"#;

/// Boots `root` in an overlay under `scratch` with systemd-nspawn, `stage` at
/// [`STAGE_IN_ROOT`], until the test unit powers it off (or 300 s pass).
///
/// The container holds CAP_PERFMON and CAP_BPF and may call `perf_event_open` and `bpf`, which
/// nspawn's defaults withhold and the unit's sandbox grants the service; the unit runs as
/// shipped. It gets the unified cgroup hierarchy (`SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1`), the
/// only one systemd 258 and later runs on, where the host's is hybrid; and a cgroup of its own
/// (nspawn puts the container below the cgroup it is started in, without a systemd on the host
/// to ask for a scope), removed after; and a network of its own, where nothing else holds
/// the service's port.
fn booted_over(root: &Path, scratch: &Path, stage: &Path) -> Output {
    Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-ec"])
        .arg(
            r#"root=$1 scratch=$2 stage=$3 unit=$4 in_root=$5
mkdir -p "$scratch/upper" "$scratch/work" "$scratch/merged"
mount -t overlay overlay -o "lowerdir=$root,upperdir=$scratch/upper,workdir=$scratch/work" \
    "$scratch/merged"
root=$scratch/merged
printf '%s' "$unit" > "$root/etc/systemd/system/counterhal-lab.service"
mkdir -p "$root/etc/systemd/system/multi-user.target.wants" "$root$in_root"
ln -s ../counterhal-lab.service "$root/etc/systemd/system/multi-user.target.wants/"
cgroup=$(sed -n 's/^[0-9]*:name=systemd://p; s/^0:://p' /proc/self/cgroup | head -n 1)
hierarchies="$(findmnt -rn -o TARGET -t cgroup2) $(findmnt -rn -o TARGET -t cgroup -O name=systemd)"
for h in $hierarchies; do
    mkdir "$h$cgroup/counterhal-lab-$$"
    echo $$ > "$h$cgroup/counterhal-lab-$$/cgroup.procs"
done
rc=0
SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 timeout -k 30 300 systemd-nspawn --quiet --register=no \
    --keep-unit --private-network --directory="$root" --bind="$stage:$in_root" \
    --capability=CAP_PERFMON,CAP_BPF --system-call-filter='perf_event_open bpf' --boot \
    > "$stage/work/boot.log" 2>&1 < /dev/null || rc=$?
for h in $hierarchies; do
    echo $$ > "$h$cgroup/cgroup.procs"
    find "$h$cgroup/counterhal-lab-$$" -depth -type d -exec rmdir {} +
done
exit $rc"#,
        )
        .arg("sh")
        .args([root, scratch, stage])
        .args([TEST_UNIT, STAGE_IN_ROOT])
        .output()
        .expect("unshare runs")
}

/// A step's state: the `key=value` lines the script wrote after it.
type State = BTreeMap<String, String>;

/// A state file's lines.
fn parse(text: &str) -> State {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

/// A key's value, empty where the state has none.
fn get<'a>(state: &'a State, key: &str) -> &'a str {
    state.get(key).map_or("", String::as_str)
}

/// The service active and enabled.
fn active_and_enabled(state: &State) -> bool {
    get(state, "active") == "active" && get(state, "enabled") == "enabled"
}

/// The main process runs the file at /usr/bin/counterhal (its inode), not a deleted one.
fn runs_the_binary(state: &State) -> bool {
    !get(state, "exe_inode").is_empty()
        && get(state, "exe_inode") == get(state, "binary_inode")
        && !get(state, "exe").ends_with("(deleted)")
}

/// A scrape of port 19110 answered 200.
fn serves(state: &State) -> bool {
    get(state, "port").contains(" 200 ")
}

/// A check of a step's state (the second state is the installed one's).
type Check = (&'static str, &'static str, fn(&State, &State) -> bool);

/// What each step leaves, as debhelper's scripts leave a unit its operator enabled and started.
const CHECKS: [Check; 17] = [
    ("installed", "active and enabled", |s, _| {
        active_and_enabled(s)
    }),
    ("installed", "running /usr/bin/counterhal", |s, _| {
        runs_the_binary(s)
    }),
    ("installed", "serving on port 19110", |s, _| serves(s)),
    ("upgraded", "the package 0.1.0-2", |s, _| {
        get(s, "package") == "0.1.0-2 install ok installed"
    }),
    ("upgraded", "active and still enabled", |s, _| {
        active_and_enabled(s)
    }),
    (
        "upgraded",
        "restarted (another main process)",
        |s, installed| get(s, "pid") != get(installed, "pid"),
    ),
    (
        "upgraded",
        "running the new binary (its inode, not a deleted one)",
        |s, _| runs_the_binary(s),
    ),
    ("upgraded", "serving on port 19110", |s, _| serves(s)),
    ("removed", "no counterhal process left", |s, _| {
        get(s, "processes") == "0"
    }),
    ("removed", "the port closed", |s, _| !serves(s)),
    ("removed", "the unit file gone", |s, _| {
        get(s, "unit_file").is_empty()
    }),
    (
        "removed",
        "the enablement links kept until the purge",
        |s, installed| !get(s, "links").is_empty() && get(s, "links") == get(installed, "links"),
    ),
    ("purged", "the package gone", |s, _| {
        get(s, "package").is_empty()
    }),
    ("purged", "no counterhal process left", |s, _| {
        get(s, "processes") == "0"
    }),
    (
        "purged",
        "no enablement link under /etc/systemd/system",
        |s, _| get(s, "links").is_empty(),
    ),
    (
        "purged",
        "no state in /var/lib/systemd/deb-systemd-helper-enabled",
        |s, _| get(s, "helper_state").is_empty(),
    ),
    ("purged", "/etc/default/counterhal-serve gone", |s, _| {
        get(s, "defaults").is_empty()
    }),
];

/// The counterhal package installed, its service enabled and started, then the package
/// upgraded, removed and purged in a booted overlay of `release`'s root.
fn the_service_follows_the_package(release: Release) {
    let root = match release.root() {
        Ok(root) => root,
        Err(why) => skip!(Need::Platform, "{why}"),
    };
    if !crate::common::is_root() {
        skip!(
            Need::Privilege,
            "a root of the lab is overlaid and booted by systemd-nspawn, as root"
        );
    }
    if !root.join("usr/lib/systemd/systemd").is_file() {
        skip!(
            Need::Platform,
            "Debian {}'s root at {} has no systemd (scripts/current-lab --roots-only installs it)",
            release.root,
            root.display()
        );
    }
    if Command::new("systemd-nspawn")
        .arg("--version")
        .output()
        .is_err()
    {
        skip!(
            Need::Tools,
            "systemd-nspawn boots the root (apt-get install systemd-container)"
        );
    }
    let deb = dist().join(format!(
        "counterhal_{}-1_amd64.deb",
        env!("CARGO_PKG_VERSION")
    ));
    if !deb.is_file() {
        skip!(
            Need::Tools,
            "no {} (scripts/debs makes the packages)",
            deb.display()
        );
    }
    let scratch: PathBuf = std::env::temp_dir().join(format!(
        "counterhal-service-{}-{}",
        release.root,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&scratch);
    let stage = scratch.join("stage");
    for dir in ["debs", "work"] {
        std::fs::create_dir_all(stage.join(dir)).unwrap();
    }
    std::fs::copy(&deb, stage.join("debs").join(deb.file_name().unwrap())).unwrap();
    std::fs::write(stage.join("service.sh"), SCRIPT).unwrap();
    let out = booted_over(&root, &scratch.join("overlay"), &stage);
    let work = stage.join("work");
    let read = |name: &str| std::fs::read_to_string(work.join(name)).unwrap_or_default();
    assert!(
        out.status.success() && !read("purged.txt").is_empty(),
        "Debian {}'s root booted: {}{}\nthe boot: {}\nthe script: {}\nlogs in {}",
        release.root,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        read("boot.log"),
        read("script.log"),
        work.display()
    );
    println!("Debian {}:\n{}", release.root, read("versions.txt"));
    for step in ["install", "upgrade", "remove", "purge"] {
        println!("-- dpkg ({step}):\n{}", read(&format!("{step}.log")));
    }
    for step in ["installed", "upgraded", "removed", "purged"] {
        println!("-- {step}:\n{}", read(&format!("{step}.txt")));
    }
    // Why the package needs no Depends for deb-systemd-helper and deb-systemd-invoke.
    let versions = read("versions.txt");
    assert!(
        versions
            .lines()
            .any(|l| l.starts_with("init-system-helpers ") && l.ends_with(" yes")),
        "init-system-helpers is not essential: {versions}"
    );
    let state = |step: &str| parse(&read(&format!("{step}.txt")));
    let installed = state("installed");
    let problems: Vec<String> = CHECKS
        .iter()
        .filter(|(step, _, holds)| !holds(&state(step), &installed))
        .map(|(step, what, _)| format!("{step}: {what}"))
        .collect();
    assert!(
        problems.is_empty(),
        "in Debian {}'s booted root:\n{}\nlogs in {}",
        release.root,
        problems.join("\n"),
        work.display()
    );
    let _ = std::fs::remove_dir_all(&scratch);
}

/// Oracle: Debian 13's systemd 257, dpkg and init-system-helpers.
#[test]
fn the_service_follows_upgrade_removal_and_purge_in_debian_13() {
    the_service_follows_the_package(PAPI_7_1);
}

/// Oracle: Debian sid's systemd 262, dpkg and init-system-helpers.
#[test]
fn the_service_follows_upgrade_removal_and_purge_in_debian_sid() {
    the_service_follows_the_package(PAPI_7_2);
}
