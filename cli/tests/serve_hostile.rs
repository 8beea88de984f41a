//! `counterhal serve` against a cgroup subtree delegated to a user without privileges
//! (`nobody`), who makes it 700 levels deep, 300 wide, and names cgroups with bytes that are
//! not UTF-8, quotes and backslashes: every scrape is answered and the exporter
//! never aborts, its walk holds no watch where its patterns cannot match, and each cgroup it
//! matches is followed and counted under a label of its own.

use std::net::SocketAddr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::*;
use crate::serve::{get, served_at};
use counterhal_conformance::fixtures::TestCgroup;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// What `nobody` makes in its subtree (`$1`): `deep`, 700 levels of `d` below it; `wide`, 300
/// cgroups side by side; `odd`, nine cgroups with odd names (two with a byte that is not UTF-8
/// which differ in it alone, one with a backslash before such a byte, one spelling that escape
/// out, systemd's own escape; not a newline, which the kernel refuses in a cgroup's name:
/// `cgroup_mkdir` in kernel/cgroup/cgroup.c).
const MAKE: &str = r#"
cd -P "$1" || exit 1
p=$(printf 'd/%.0s' $(seq 350))
mkdir -p "deep/$p" && (cd -P "deep/$p" && mkdir -p "$p") || exit 1
mkdir wide && (cd wide && mkdir $(seq 300)) || exit 1
mkdir odd && cd odd || exit 1
mkdir "$(printf 'a\377')" "$(printf 'a\376')" 'q"uote' 'back\slash' \
  '\XFF' "$(printf '\\\377')" 'sp ace' 'fsck@dev-disk-by\x2duuid.service' "$(printf 'caf\303\251')"
"#;

/// A subtree of the cgroup mount handed to `nobody`, removed deepest first when dropped (when
/// a test fails too), with the tasks put in it ended first.
struct Subtree {
    top: TestCgroup,
    tasks: Vec<Child>,
}

impl Subtree {
    /// A new cgroup owned by `nobody`, in which `nobody` (or root, without setpriv) made
    /// [`MAKE`]'s tree.
    fn make(root: &Path, what: &str) -> Subtree {
        let subtree = Subtree::empty(root, what);
        let mut sh = unprivileged_program("sh").unwrap_or_else(|| Command::new("sh"));
        let made = sh
            .args(["-c", MAKE, "sh"])
            .arg(&subtree.top.path)
            .status()
            .expect("sh");
        assert!(made.success(), "making the subtree: {made}");
        subtree
    }

    /// A new cgroup owned by `nobody`, empty.
    fn empty(root: &Path, what: &str) -> Subtree {
        let top = TestCgroup::new(root, what).expect("a cgroup below the mount");
        std::os::unix::fs::chown(&top.path, Some(NOBODY), Some(NOBODY)).expect("chown");
        Subtree {
            top,
            tasks: Vec::new(),
        }
    }

    /// The directories below the subtree's top as find(1) lists them (its oracle), at most
    /// `levels` below it.
    fn found(&self, below: &str, levels: usize) -> Vec<PathBuf> {
        let find = Command::new("find")
            .arg(self.top.path.join(below))
            .args(["-mindepth", "1", "-maxdepth", &levels.to_string()])
            .args(["-type", "d", "-print0"])
            .output()
            .expect("find(1)");
        assert!(find.status.success(), "find: {}", find.status);
        find.stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
            .collect()
    }

    /// Starts a busy shell in the cgroup `dir` (a task `nobody` could put there).
    fn spin(&mut self, dir: &Path) {
        let task = Command::new("sh")
            .args([
                "-c",
                "echo $$ > \"$1/cgroup.procs\" && exec sh -c 'while :; do :; done'",
                "sh",
            ])
            .arg(dir)
            .spawn()
            .expect("a busy shell");
        self.tasks.push(task);
        let procs = dir.join("cgroup.procs");
        for _ in 0..100 {
            if !std::fs::read_to_string(&procs)
                .unwrap_or_default()
                .trim()
                .is_empty()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the busy shell never joined {}", dir.display());
    }
}

impl Drop for Subtree {
    fn drop(&mut self) {
        for task in &mut self.tasks {
            task.kill().ok();
            task.wait().ok();
        }
        // find -depth lists each directory after what it holds.
        let listed = Command::new("find")
            .arg(&self.top.path)
            .args(["-mindepth", "1", "-depth", "-type", "d", "-print0"])
            .output();
        let listed = listed.map(|o| o.stdout).unwrap_or_default();
        for dir in listed.split(|&b| b == 0).filter(|p| !p.is_empty()) {
            let dir = Path::new(std::ffi::OsStr::from_bytes(dir));
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                // A cgroup whose last task just ended is let go a moment later.
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// A `counterhal serve`, killed when dropped.
struct Served {
    child: Child,
    address: SocketAddr,
}

impl Served {
    /// `counterhal serve --listen 127.0.0.1:0 -e task-clock ARGS`.
    fn start(args: &[&str]) -> Served {
        Served::try_start(args)
            .unwrap_or_else(|said| panic!("counterhal serve did not start: {said}"))
    }

    /// [`Served::start`], or what the exporter said where it did not start.
    fn try_start(args: &[&str]) -> Result<Served, String> {
        let mut child = Command::new(bin())
            .args(["serve", "--listen", "127.0.0.1:0", "-e", "task-clock"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start counterhal serve");
        match served_at(&mut child) {
            Ok(address) => Ok(Served { child, address }),
            Err(said) => {
                child.kill().ok();
                child.wait().ok();
                Err(said)
            }
        }
    }

    /// The descriptors it holds: the entries of `/proc/PID/fd`.
    fn descriptors(&self) -> usize {
        let fd = format!("/proc/{}/fd", self.child.id());
        std::fs::read_dir(fd).expect("its fd folder").count()
    }

    /// A scrape, which must be answered while the exporter runs on.
    fn scrape(&mut self) -> String {
        let (status, body) = get(self.address, "/metrics", None);
        let ended = self.child.try_wait().ok().flatten();
        assert_eq!(ended, None, "the exporter ended: {body}");
        assert_eq!(status, Some(200), "{body}");
        body
    }

    /// The directories its inotify instances watch: one `inotify wd:` line each in
    /// `/proc/PID/fdinfo` (fs/notify/fdinfo.c).
    fn watches(&self) -> usize {
        let fdinfo = format!("/proc/{}/fdinfo", self.child.id());
        let entries = std::fs::read_dir(fdinfo).expect("its fdinfo");
        let infos = entries.flatten().map(|e| std::fs::read_to_string(e.path()));
        let infos = infos.flatten();
        infos
            .map(|info| {
                info.lines()
                    .filter(|l| l.starts_with("inotify wd:"))
                    .count()
            })
            .sum()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// The value of the sample `name` (no labels) in `body`.
fn value(body: &str, name: &str) -> Option<f64> {
    let prefix = format!("{name} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// Each `cgroup` label in `body` with its `task-clock` value, the label read back from the
/// text format's escapes (`\\`, `\"`, `\n`).
fn cgroups(body: &str) -> Vec<(String, f64)> {
    let family = "counterhal_event_seconds_total{event=\"task-clock\"";
    let mut found = Vec::new();
    for line in body.lines().filter(|l| l.starts_with(family)) {
        let Some((_, rest)) = line.split_once("cgroup=\"") else {
            continue;
        };
        let (mut label, mut chars) = (String::new(), rest.chars());
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => label.push('\n'),
                    Some(other) => label.push(other),
                    None => break,
                },
                c => label.push(c),
            }
        }
        let value = line.rsplit(' ').next().and_then(|v| v.parse().ok());
        found.push((label, value.unwrap_or(f64::NAN)));
    }
    found
}

/// The cgroup v2 mount where this test may make cgroups and count whole CPUs; else the test
/// is skipped.
macro_rules! unified_or_skip {
    () => {{
        serve_or_skip!();
        if !running_as_root() {
            skip!(Need::Privilege, "making cgroups takes root here");
        }
        match counterhal::cgroups::unified_root(&counterhal::system::System::host()) {
            Ok(root) => root,
            Err(e) => skip!(Need::System, "no cgroup2 file system is mounted: {e}"),
        }
    }};
}

/// Exporters started before `nobody` makes a tree 700 levels deep answer the scrapes that
/// walk it (on their connection threads): the default walk matches the cgroups 64 levels down,
/// `--cgroup-depth 1000` all 701 levels, and the shipped unit's patterns watch at most the
/// mount and `system.slice`. Before, the 600 levels overflowed the connection thread's
/// stack (exit 134) and the shipped unit's patterns watched every directory.
///
/// Oracle: find(1), the cgroups it lists within the same levels; the kernel's list of
/// inotify watches (`/proc/PID/fdinfo`, fs/notify/fdinfo.c).
#[test]
fn a_users_700_levels_never_abort_the_exporter_and_cost_it_no_watch() {
    let root = unified_or_skip!();
    let pattern = format!("^counterhal-test-{}-deep/", std::process::id());
    let common = ["--cgroup-mode", "perf-events", "--max-cgroups", "8"];
    let by_default = ["--cgroups", pattern.as_str()];
    let mut by_default = Served::start(&[&common[..], &by_default].concat());
    let deeper = ["--cgroups", pattern.as_str(), "--cgroup-depth", "1000"];
    let mut deeper = Served::start(&[&common[..], &deeper].concat());
    let shipped = [r"^system.slice/[^/]*[.]service$", r"^[^/]+$"];
    let mut shipped = Served::start(&[&common[..], &["--cgroups"], &shipped].concat());
    for served in [&mut by_default, &mut deeper, &mut shipped] {
        served.scrape();
    }
    let subtree = Subtree::make(&root, "deep");
    let everything = subtree.found("", 1000);
    assert!(everything.len() > 1000, "{}", everything.len());
    // The top is 1 level below the mount: 63 levels below it are 64 below the mount.
    let within_64 = subtree.found("", 63).len();
    for (served, matched) in [
        (&mut by_default, within_64),
        (&mut deeper, everything.len()),
    ] {
        let body = served.scrape();
        let said = value(&body, "counterhal_cgroups_matched");
        assert_eq!(said, Some(matched as f64), "matched");
        assert_eq!(value(&body, "counterhal_cgroups_followed"), Some(8.0));
    }
    shipped.scrape();
    assert!(shipped.watches() <= 2, "{} watches", shipped.watches());
}

/// Each cgroup of odd name is followed and counted under a label of its own: a UTF-8 name's
/// label is its path as `/proc/PID/cgroup` shows it (systemd's `\x2d` kept), and the two names
/// that differ only in a byte that is not UTF-8 keep two labels, each counting its own tasks.
/// Before, both were labelled with U+FFFD, followed as one, and never opened (their directory
/// looked for under that label).
///
/// Oracle: find(1), which lists the same cgroups with their bytes; the kernel's task-clock of
/// a busy task put in one of them.
#[test]
fn each_odd_name_is_followed_and_counted_under_a_label_of_its_own() {
    let root = unified_or_skip!();
    let mut subtree = Subtree::make(&root, "odd");
    let odd = subtree.top.path.join("odd");
    subtree.spin(&odd.join(std::ffi::OsStr::from_bytes(b"a\xff")));
    let pattern = format!("^counterhal-test-{}-odd/odd/", std::process::id());
    let args = [
        "--cgroup-mode",
        "perf-events",
        "--cgroups",
        pattern.as_str(),
    ];
    let mut served = Served::start(&args);
    served.scrape();
    // A second of the busy task's CPU (on a busy machine it gets less of each second: up to
    // 10 s of waiting for a tenth of a second).
    let busy_label = format!("/counterhal-test-{}-odd/odd/a\\XFF", std::process::id());
    let waited = std::time::Instant::now();
    let body = loop {
        std::thread::sleep(Duration::from_millis(500));
        let body = served.scrape();
        let busy = cgroups(&body)
            .into_iter()
            .find(|(l, _)| *l == busy_label)
            .map(|(_, v)| v);
        if busy.is_some_and(|v| v > 0.1) || waited.elapsed() > Duration::from_secs(10) {
            break body;
        }
    };
    let found = subtree.found("odd", 1);
    assert_eq!(found.len(), 9);
    let labels = cgroups(&body);
    let mut distinct: Vec<&str> = labels.iter().map(|(l, _)| l.as_str()).collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), found.len(), "{distinct:?}");
    assert_eq!(value(&body, "counterhal_cgroups_followed"), Some(9.0));
    assert_eq!(value(&body, "counterhal_open_errors_total"), Some(0.0));
    let below_mount = |dir: &Path| dir.strip_prefix(&root).map(Path::to_path_buf);
    // A UTF-8 name with no `\X` to escape is labelled with its path.
    for dir in &found {
        let name = below_mount(dir)
            .ok()
            .and_then(|p| p.to_str().map(str::to_string));
        let Some(name) = name.filter(|name| !name.contains("\\X")) else {
            continue;
        };
        let label = format!("/{name}");
        assert!(
            distinct.contains(&label.as_str()),
            "{label:?} in {distinct:?}"
        );
    }
    let busy = format!("/counterhal-test-{}-odd/odd/a\\XFF", std::process::id());
    let idle = format!("/counterhal-test-{}-odd/odd/a\\XFE", std::process::id());
    let of = |label: &str| labels.iter().find(|(l, _)| l == label).map(|(_, v)| *v);
    assert!(
        of(&busy).is_some_and(|v| v > 0.1),
        "{busy}: {:?}",
        of(&busy)
    );
    assert!(
        of(&idle).is_some_and(|v| v < 0.05),
        "{idle}: {:?}",
        of(&idle)
    );
}

/// What `nobody` runs in its subtree (`$1`) for `$2` seconds: a cgroup of a fresh name made,
/// left 20 ms, and removed, again and again (a user's churn); it prints how many it made.
const CHURN: &str = r#"
cd -P "$1" || exit 1
i=0
end=$(( $(date +%s) + $2 ))
cap=$(( end + 30 ))
# $2 seconds, and at least 48 cgroups where the machine is busy (30 s more at most).
while [ "$(date +%s)" -lt "$end" ] || { [ "$i" -lt 48 ] && [ "$(date +%s)" -lt "$cap" ]; }; do
  i=$((i + 1))
  mkdir "c$i" && sleep 0.02 && rmdir "c$i" || exit 1
done
echo "$i"
"#;

/// A user churning cgroups of fresh names in a delegated subtree, with no scrape, holds none
/// of the exporter's descriptors or BPF map slots, and a cgroup root makes meanwhile is
/// counted: each removed cgroup is read once and its counters closed at once, its last counts
/// kept as data (at most `--departed-max` of them, the oldest let go and counted). Before, a
/// removed cgroup kept its counters until a scrape and a minute after it: with
/// `--max-cgroups 16`, the perf-event mode held 2 descriptors per removed cgroup on 2 CPUs
/// (hundreds after a few seconds), and in the BPF mode the removed held the map's 16 slots,
/// so the live cgroup was never counted (no series) and nothing said so.
///
/// Oracle: the kernel's accounts of the process (`/proc/PID/fd`) and of the live cgroup's
/// busy task (its task-clock, over a second of spinning).
#[test]
fn a_users_churn_holds_no_descriptor_and_starves_no_live_cgroup() {
    let root = unified_or_skip!();
    for mode in ["perf-events", "bpf"] {
        let _alone = (mode == "bpf").then(crate::common::bpf_alone);
        churn_beside_a_live_cgroup(&root, mode);
    }
}

/// The body of the test above in the cgroup mode `mode`.
fn churn_beside_a_live_cgroup(root: &Path, mode: &str) {
    let mut subtree = Subtree::empty(root, &format!("churn-{mode}"));
    let pattern = format!("^{}/", subtree.top.name);
    let args = [
        "--cgroup-mode",
        mode,
        "--max-cgroups",
        "16",
        "--departed-max",
        "16",
        "--cgroups",
        pattern.as_str(),
    ];
    let mut served = match Served::try_start(&args) {
        Ok(served) => served,
        Err(said) if mode == "bpf" => {
            skip!(Need::System, "the BPF mode cannot count here: {said}")
        }
        Err(said) => panic!("counterhal serve did not start: {said}"),
    };
    served.scrape();
    let before = served.descriptors();
    let mut sh = unprivileged_program("sh").unwrap_or_else(|| Command::new("sh"));
    let churn = sh
        .args(["-c", CHURN, "sh"])
        .arg(&subtree.top.path)
        .arg("4")
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh");
    std::thread::sleep(Duration::from_millis(1500));
    let live = subtree.top.path.join("live");
    std::fs::create_dir(&live).expect("the live cgroup");
    subtree.spin(&live);
    let churned = churn.wait_with_output().expect("the churn");
    assert!(churned.status.success(), "the churn: {}", churned.status);
    let made: usize = String::from_utf8_lossy(&churned.stdout)
        .trim()
        .parse()
        .expect("the churn's count");
    let cpus = counterhal::online_cpus(&counterhal::system::System::host()).len() as usize;
    // The live cgroup's counters: one event on each CPU, in the perf-event mode.
    let live_costs = if mode == "perf-events" { cpus } else { 0 };
    // The follower's last look after the last removal (on a busy machine it may come late:
    // 5 s at most).
    let waited = std::time::Instant::now();
    let after = loop {
        std::thread::sleep(Duration::from_millis(200));
        let after = served.descriptors();
        if after <= before + live_costs || waited.elapsed() > Duration::from_secs(5) {
            break after;
        }
    };
    eprintln!(
        "{mode}: {made} cgroups made and removed; descriptors {before} before, {after} after"
    );
    assert!(made > 40, "{mode}: the churn made {made} cgroups");
    assert!(
        after <= before + live_costs,
        "{mode}: {before} descriptors before the churn, {after} after ({made} removed)"
    );
    let body = served.scrape();
    let labels = cgroups(&body);
    let live_label = format!("/{}/live", subtree.top.name);
    let counted = labels
        .iter()
        .find(|(l, _)| *l == live_label)
        .map(|(_, v)| *v);
    assert!(
        counted.is_some_and(|seconds| seconds > 0.1),
        "{mode}: the live cgroup {live_label}: {counted:?}"
    );
    let removed = labels.iter().filter(|(l, _)| *l != live_label).count();
    assert!(removed <= 16, "{mode}: {removed} removed cgroups exported");
    let evicted = value(&body, "counterhal_cgroups_departed_evicted_total").unwrap_or(0.0);
    assert!(
        evicted > 0.0,
        "{mode}: {made} removed with no scrape, none let go unread"
    );
    assert_eq!(
        value(&body, "counterhal_open_errors_total"),
        Some(0.0),
        "{mode}"
    );
}
