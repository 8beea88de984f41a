//! `stat -b`/`--bpf-counters` alone: events counted through leaders shared between sessions,
//! as perf 7.2's bperf shares them (tools/perf/util/bpf_counter.c, bpf_skel/bperf_*.bpf.c,
//! libperf's bpf_perf.h): one entry per event attribute in the attr map pinned in a BPF file
//! system, one leader per entry while a session holds its link. Each test mounts a BPF file
//! system of its own on a fresh directory (the machine's /sys/fs/bpf is not touched) and names
//! the map there with `--bpf-attr-map`; without root they skip, and so do those that read the
//! map back where bpftool is missing.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

use crate::common::{bin, counterhal};

/// A bpftool to read the kernel's maps and links with, as a command line: this machine's
/// (Debian 12's `bpftool`, 7.1) or the current-releases lab's Debian 13 root's (7.5, run by
/// the root's own loader). Its answers are read from its JSON (`-j`), never from its exit
/// status: 7.1 exits 0 for a link it shows and 254 for one the kernel no longer has, 7.5 exits
/// 255 while it prints a live link.
struct Bpftool {
    command: Vec<OsString>,
    /// What `bpftool version` says first (`bpftool v7.5.0`).
    version: String,
}

impl Bpftool {
    /// This machine's bpftool, or why there is none.
    fn installed() -> Result<Bpftool, String> {
        Bpftool::from(vec!["bpftool".into()])
            .map_err(|e| format!("no bpftool here (apt-get install bpftool): {e}"))
    }

    /// The bpftool of the current-releases lab's Debian 13 root (`scripts/current-lab` makes
    /// it under `COUNTERHAL_CURRENT_LAB`, by default /var/cache/counterhal-lab), run by the
    /// root's loader and libraries, or why there is none.
    fn trixie() -> Result<Bpftool, String> {
        let lab = std::env::var_os("COUNTERHAL_CURRENT_LAB")
            .map_or_else(|| PathBuf::from("/var/cache/counterhal-lab"), PathBuf::from);
        let root = lab.join("trixie");
        let libraries = format!(
            "{0}/usr/lib/x86_64-linux-gnu:{0}/lib/x86_64-linux-gnu",
            root.display()
        );
        Bpftool::from(vec![
            root.join("lib64/ld-linux-x86-64.so.2").into(),
            "--library-path".into(),
            libraries.into(),
            root.join("usr/sbin/bpftool").into(),
        ])
        .map_err(|e| {
            format!(
                "no bpftool in the Debian 13 root {} (scripts/current-lab --roots-only \
                 installs it): {e}",
                root.display()
            )
        })
    }

    /// The bpftool `command` runs, if it runs.
    fn from(command: Vec<OsString>) -> Result<Bpftool, String> {
        let out = Command::new(&command[0])
            .args(&command[1..])
            .arg("version")
            .output()
            .map_err(|e| e.to_string())?;
        let said = String::from_utf8_lossy(&out.stdout);
        match said.lines().next() {
            Some(version) if out.status.success() && version.starts_with("bpftool v") => {
                Ok(Bpftool {
                    version: version.to_string(),
                    command,
                })
            }
            _ => Err(format!("`bpftool version` said {said:?}")),
        }
    }

    /// What bpftool answers to `args` in JSON (`-j`): its standard output, whatever its exit
    /// status.
    fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = Command::new(&self.command[0])
            .args(&self.command[1..])
            .arg("-j")
            .args(args)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(&said).unwrap_or_else(|e| {
            panic!(
                "{} {args:?} ({}): not JSON ({e}): {said} {}",
                self.version,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// The entries of the attr map pinned at `map`, as bpftool dumps them: each key (a
    /// `struct perf_event_attr`) with its link id and `diff_readings` id (libperf's `struct
    /// perf_event_attr_map_entry`: two native-endian 32-bit words).
    ///
    /// Oracle: bpftool's `map dump pinned`, its JSON bytes as `0x..`.
    fn attr_map_entries(&self, map: &Path) -> Vec<(Vec<u8>, u32, u32)> {
        let entries = self.json(&["map", "dump", "pinned", map.to_str().unwrap()]);
        let version = &self.version;
        let bytes = |words: &serde_json::Value| -> Vec<u8> {
            let words = words.as_array().expect("bytes");
            let byte = |w: &serde_json::Value| {
                let text = w.as_str().expect("a byte as text");
                u8::from_str_radix(text.trim_start_matches("0x"), 16).expect("a hex byte")
            };
            words.iter().map(byte).collect()
        };
        let word = |v: &[u8], at: usize| u32::from_ne_bytes(v[at..at + 4].try_into().unwrap());
        entries
            .as_array()
            .unwrap_or_else(|| panic!("{version}: no array of entries: {entries}"))
            .iter()
            .map(|entry| {
                let value = bytes(&entry["value"]);
                (bytes(&entry["key"]), word(&value, 0), word(&value, 4))
            })
            .collect()
    }

    /// Whether the BPF link `id` lives: bpftool's `link show id` shows it (an object with its
    /// id), or says the kernel has no such link (an object with an `error` naming ENOENT's
    /// "No such file or directory"); any other answer fails the test.
    ///
    /// Oracle: bpftool's `link show id`, which asks the kernel (BPF_LINK_GET_FD_BY_ID).
    fn link_lives(&self, id: u32) -> bool {
        let said = self.json(&["link", "show", "id", &id.to_string()]);
        if let Some(shown) = said.get("id") {
            assert_eq!(
                shown.as_u64(),
                Some(u64::from(id)),
                "{}: {said}",
                self.version
            );
            return true;
        }
        let error = said.get("error").and_then(|e| e.as_str()).unwrap_or("");
        assert!(
            error.contains("No such file or directory"),
            "{}: neither the link nor its absence: {said}",
            self.version
        );
        false
    }
}

/// A bpftool ([`Bpftool`]), or the skip naming what would install it.
macro_rules! bpftool {
    ($found:expr) => {
        match $found {
            Ok(bpftool) => bpftool,
            Err(why) => skip!(Need::Tools, "{why}"),
        }
    };
}

/// A BPF file system on a fresh directory, unmounted and removed when dropped.
struct Bpffs(PathBuf);

impl Bpffs {
    fn mount(name: &str) -> Result<Bpffs, String> {
        let dir = counterhal_conformance::fixtures::temp_dir()
            .join(format!("counterhal-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "bpf", "bpf"])
            .arg(&dir)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            std::fs::remove_dir(&dir).ok();
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(Bpffs(dir))
    }

    fn map(&self) -> PathBuf {
        self.0.join("perf_attr_map")
    }
}

impl Drop for Bpffs {
    fn drop(&mut self) {
        Command::new("umount").arg(&self.0).status().ok();
        std::fs::remove_dir(&self.0).ok();
    }
}

/// A BPF file system, or the skip: mounting one and loading programs take root.
macro_rules! bpffs {
    ($name:expr) => {
        match Bpffs::mount($name) {
            Ok(fs) => fs,
            Err(why) => skip!(
                Need::Privilege,
                "mounting a BPF file system takes root: {why}"
            ),
        }
    };
}

/// A program touching `pages` fresh pages (one page fault each), built with the system's C
/// compiler.
fn toucher() -> Result<PathBuf, String> {
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-toucher-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (source, binary) = (dir.join("touch.c"), dir.join("touch"));
    std::fs::write(
        &source,
        "#include <stdlib.h>\n#include <sys/mman.h>\nint main(int c, char **v) { long n = \
         atol(v[1]); char *p = mmap(0, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | \
         MAP_ANONYMOUS, -1, 0); for (long i = 0; i < n; i++) p[i * 4096] = 1; return 0; }\n",
    )
    .unwrap();
    match Command::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .output()
    {
        Ok(out) if out.status.success() => Ok(binary),
        Ok(out) => panic!("{}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => Err(format!("no C compiler (`cc`): {e}")),
    }
}

/// The counts of `-x,` output (on standard error, as perf writes it), by event name.
fn counts(stdout: &[u8]) -> Vec<(String, u64)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            Some((fields.get(2)?.to_string(), fields.first()?.parse().ok()?))
        })
        .collect()
}

/// `stat -x, -b --bpf-attr-map MAP ...`; where BPF cannot count here, the skip.
macro_rules! stat_b {
    ($map:expr, $rest:expr) => {{
        let map: PathBuf = $map;
        let mut args = vec!["stat", "-x,", "-b", "--bpf-attr-map", map.to_str().unwrap()];
        args.extend($rest);
        let out = counterhal(&args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() && stderr.contains("CAP_BPF") {
            skip!(Need::Privilege, "{stderr}");
        }
        out
    }};
}

/// A command touching 2,000 fresh pages gets the page faults with `-b` that it gets without,
/// and so does a shell that starts it twice (the processes a command starts count with it):
/// the kernel's own count of the command's faults (perf events enabled at its exec), give or
/// take the two the exec itself may take before it (the shared counter follows the command's
/// process from its release, as perf's bperf does, which has no enable at exec).
///
/// Oracle: the kernel counting the command's page faults (`stat` without `-b`), and the
/// program's 2,000 fresh pages, one fault each.
#[test]
fn counts_as_without_bpf() {
    let _alone = crate::common::bpf_alone();
    let fs = bpffs!("bperf-counts");
    let touch = match toucher() {
        Ok(touch) => touch,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let touch = touch.to_str().unwrap();
    let with = stat_b!(fs.map(), ["-e", "page-faults", "--", touch, "2000"]);
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    let without = counterhal(&["stat", "-x,", "-e", "page-faults", "--", touch, "2000"]);
    assert!(without.status.success());
    // A shell starting the program twice: the processes the command starts count with it.
    let script = format!("{touch} 1000; {touch} 1000");
    let shell_with = stat_b!(fs.map(), ["-e", "page-faults", "--", "sh", "-c", &script]);
    let shell_without = counterhal(&[
        "stat",
        "-x,",
        "-e",
        "page-faults",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    if let Some(dir) = Path::new(touch).parent() {
        std::fs::remove_dir_all(dir).ok();
    }
    let (with, without) = (counts(&with.stderr), counts(&without.stderr));
    let (with, without) = (with[0].1, without[0].1);
    assert!((2000..2100).contains(&without), "{without}");
    // Counting starts at the command's release, not its exec (perf's bperf): the exec's
    // own faults differ by a few, more on a loaded machine; 1% still finds a count lost or
    // doubled.
    assert!(
        with.abs_diff(without) <= without / 100,
        "-b {with}, without {without}"
    );
    let with = counts(&shell_with.stderr)[0].1;
    let without = counts(&shell_without.stderr)[0].1;
    assert!(without >= 2000, "{without}");
    assert!(
        with.abs_diff(without) <= without / 100,
        "-b {with}, without {without} (sh -c)"
    );
}

/// Two sessions counting one event share one leader: while the first runs, the attr map
/// holds one entry whose link lives; the second finds it and leaves it (the same link id),
/// so the map still holds one entry; when both have ended the leader is gone (its link no
/// longer lives) and the map stays pinned with its stale entry, as perf leaves it (the next
/// session starts a new leader and rewrites the entry).
///
/// Oracle: perf 7.2's protocol (bpf_counter.c's `bperf__load`, `bperf_reload_leader_program`;
/// bpf_perf.h: the map holds ids, no references), read back from the kernel's map and links
/// by this machine's bpftool (Debian 12's, 7.1).
#[test]
fn two_sessions_share_one_leader() {
    let _alone = crate::common::bpf_alone();
    share_one_leader(&bpftool!(Bpftool::installed()));
}

/// [`two_sessions_share_one_leader`], the map and links read by Debian 13's bpftool (7.5,
/// the current-releases lab's root), which exits 255 while it shows a live link.
///
/// Oracle: as [`two_sessions_share_one_leader`]'s, read by bpftool 7.5.
#[test]
fn two_sessions_share_one_leader_as_debian_13s_bpftool_reads_it() {
    let _alone = crate::common::bpf_alone();
    share_one_leader(&bpftool!(Bpftool::trixie()));
}

/// The body of [`two_sessions_share_one_leader`], the kernel's map and links read by `bpftool`.
fn share_one_leader(bpftool: &Bpftool) {
    eprintln!("reading the map and links with {}", bpftool.version);
    let fs = bpffs!("bperf-share");
    let map = fs.map();
    let map_arg = map.to_str().unwrap().to_string();
    // A probe that skips where BPF cannot count.
    let probe = stat_b!(map.clone(), ["-e", "task-clock", "true"]);
    assert!(
        probe.status.success(),
        "{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let long = |seconds: &str| {
        Command::new(bin())
            .args([
                "stat",
                "-x,",
                "-b",
                "--bpf-attr-map",
                &map_arg,
                "-e",
                "page-faults",
            ])
            .args(["sleep", seconds])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let entry = || {
        let entries = bpftool.attr_map_entries(&map);
        entries
            .iter()
            .find(|(key, _, _)| key[0..4] == 1u32.to_ne_bytes() && key[8..16] == 2u64.to_ne_bytes())
            .map(|&(_, link, diff)| (link, diff))
    };
    let first = long("2");
    let mut seen = None;
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        seen = entry().filter(|&(link, _)| bpftool.link_lives(link));
        if seen.is_some() {
            break;
        }
    }
    let (link, _) = seen.expect("the first session's leader in the attr map");
    let second = long("1");
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        entry().map(|(l, _)| l),
        Some(link),
        "the second session took the first's leader"
    );
    // task-clock's entry (the probe's, stale) and page-faults': one each.
    assert_eq!(bpftool.attr_map_entries(&map).len(), 2);
    for child in [second, first] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        !bpftool.link_lives(link),
        "the leader outlived its sessions"
    );
    assert!(map.exists(), "the attr map stays pinned");
    assert_eq!(entry().map(|(l, _)| l), Some(link), "the stale entry stays");
    // A later session starts a new leader in the stale entry's place.
    let again = long("0.2");
    let mut renewed = None;
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(10));
        renewed = entry().filter(|&(l, _)| l != link);
        if renewed.is_some() {
            break;
        }
    }
    assert!(again.wait_with_output().unwrap().status.success());
    assert!(
        renewed.is_some(),
        "no new leader in the stale entry's place"
    );
}

/// Where the attr map's directory is no BPF file system, `-b` says so and what would do,
/// as perf fails ("Failed to lock perf_event_attr map") where it cannot pin the map.
///
/// Oracle: the kernel refusing to pin outside a BPF file system (EPERM, kernel/bpf/inode.c).
#[test]
fn a_map_outside_a_bpf_file_system_is_refused() {
    let _alone = crate::common::bpf_alone();
    let _fs = bpffs!("bperf-refuse");
    let dir = counterhal_conformance::fixtures::temp_dir();
    let map = dir.join(format!("counterhal-not-bpffs-{}", std::process::id()));
    let out = counterhal(&[
        "stat",
        "-b",
        "--bpf-attr-map",
        map.to_str().unwrap(),
        "true",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("BPF file system"), "{stderr}");
    assert!(!map.exists());
}

/// The attr map's keys are the attributes perf 7.2 keys them by: for each event, the
/// `struct perf_event_attr` perf 7.2 opens it with (`perf stat -vv` prints it), less what
/// perf sets only when it opens a counter without bperf (create_perf_stat_counter:
/// `read_format`, `sample_type` IDENTIFIER, `disabled`, `inherit`, `enable_on_exec`), which
/// bperf__load runs before; `size` perf 7.2's 144.
///
/// Oracle: perf 7.2.13 (Debian sid's, run from the current-releases lab's root) printing its
/// attributes, and tools/perf/builtin-stat.c's order of bpf_counter__load and
/// create_perf_stat_counter.
#[test]
fn keys_are_perf_72s_attributes() {
    let _alone = crate::common::bpf_alone();
    let bpftool = bpftool!(Bpftool::installed());
    let perf = match counterhal_conformance::fixtures::perf_tree::perf_7_2() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let fs = bpffs!("bperf-keys");
    let events = ["page-faults", "page-faults:u", "cs:k", "task-clock"];
    let printed = Command::new(&perf[0])
        .args(&perf[1..])
        .args(["stat", "-vv", "-e", &events.join(","), "true"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&printed.stderr);
    // Each attribute perf printed, as the 144 bytes of the key.
    let mut expected: Vec<Vec<u8>> = Vec::new();
    for block in text.split("perf_event_attr:").skip(1) {
        let mut key = vec![0u8; 144];
        let mut flags = 0u64;
        for line in block.lines().skip(1) {
            let mut words = line.split_whitespace();
            let (Some(field), Some(value)) = (words.next(), words.next()) else {
                break;
            };
            let number = || {
                value.strip_prefix("0x").map_or_else(
                    || value.parse::<u64>().unwrap(),
                    |hex| u64::from_str_radix(hex, 16).unwrap(),
                )
            };
            let bit = match field {
                "type" => {
                    key[0..4].copy_from_slice(&(number() as u32).to_ne_bytes());
                    continue;
                }
                "size" => {
                    key[4..8].copy_from_slice(&(number() as u32).to_ne_bytes());
                    continue;
                }
                "config" => {
                    key[8..16].copy_from_slice(&number().to_ne_bytes());
                    continue;
                }
                "sample_type" | "read_format" | "disabled" | "inherit" | "enable_on_exec" => {
                    continue;
                }
                "exclude_user" => 4,
                "exclude_kernel" => 5,
                "exclude_hv" => 6,
                "exclude_idle" => 7,
                "exclude_host" => 19,
                "exclude_guest" => 20,
                other => panic!("perf 7.2 set {other}, which this test does not lay out"),
            };
            flags |= 1 << bit;
        }
        key[40..48].copy_from_slice(&flags.to_ne_bytes());
        expected.push(key);
    }
    assert_eq!(expected.len(), events.len(), "{text}");
    for event in events {
        let out = stat_b!(fs.map(), ["-e", event, "true"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut ours: Vec<Vec<u8>> = bpftool
        .attr_map_entries(&fs.map())
        .into_iter()
        .map(|(key, _, _)| key)
        .collect();
    ours.sort();
    expected.sort();
    assert_eq!(ours, expected);
}

/// Without `--bpf-attr-map` the map is perf's default, `perf_attr_map` in the BPF file
/// system at /sys/fs/bpf, and stays pinned there after the session. Run in a mount namespace
/// of its own, whose /sys/fs/bpf is a fresh BPF file system (the machine's is not touched).
///
/// Oracle: perf 7.2's default path (libperf's `BPF_PERF_DEFAULT_ATTR_MAP_PATH` under
/// `sysfs__mountpoint()`, bpf_counter.c's `bperf_lock_attr_map`).
#[test]
fn the_default_map_is_perfs() {
    let _alone = crate::common::bpf_alone();
    // Mounting one at all is the privilege this takes.
    let _fs = bpffs!("bperf-default");
    let script = format!(
        "mount -t bpf bpf /sys/fs/bpf && {} stat -x, -b -e page-faults true && ls /sys/fs/bpf",
        bin().display()
    );
    let out = match Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .output()
    {
        Ok(out) => out,
        Err(e) => skip!(Need::Tools, "no unshare: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("CAP_BPF") {
        skip!(Need::Privilege, "{stderr}");
    }
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.lines().any(|l| l == "perf_attr_map"),
        "{stdout} {stderr}"
    );
}
