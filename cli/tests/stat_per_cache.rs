//! `stat --per-cache[=LN]` and `--per-cluster` against perf 7.2.13 (Debian sid's, the
//! current-releases lab's root, run by the root's loader on this machine): the same labels,
//! numbers of CPUs and layouts in the table, `-x`, `-j` and `-I`'s heading, on this machine's
//! CPUs and on a CPU tree of other caches and clusters mounted over /sys/devices/system/cpu in a
//! private mount namespace (both read it there).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use serde_json::Value;

use crate::common::{bin, perf_7_2, running_as_root};

/// What each place line says: its label, the number of CPUs added up and the event, from the
/// table (the label and number as written, padding included), `-x` or `-j`.
fn places(format: &str, text: &str) -> Vec<String> {
    let lines = text.lines().filter(|l| l.contains("task-clock"));
    match format {
        "-x," => lines
            .map(|l| l.split(',').take(2).collect::<Vec<_>>().join(","))
            .collect(),
        "-j" => lines
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"));
                let key = ["cache", "cluster"]
                    .into_iter()
                    .find(|k| v.get(k).is_some())
                    .unwrap_or("none");
                format!("{key}={} counters={}", v[key], v["counters"])
            })
            .collect(),
        _ => lines
            .map(|l| {
                // The label, its padding and the right-aligned number of CPUs after it.
                let label = l.split_whitespace().next().unwrap_or_default();
                let ctrs = l.split_whitespace().nth(1).unwrap_or_default();
                let end = label.len() + l[label.len()..].find(ctrs).unwrap_or(0) + ctrs.len();
                l[..end].to_string()
            })
            .collect(),
    }
}

/// `-I`'s heading up to the CPUs' column (`#           time cache                  ctrs`).
fn heading(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.starts_with("#"))
        .unwrap_or_default();
    line[..line.find("ctrs").map_or(0, |at| at + 4)].to_string()
}

/// perf 7.2's and counterhal's output of `stat ARGS -a -e task-clock COMMAND` (`true` where
/// none is given), with the CPU tree `cpus` over /sys/devices/system/cpu where given.
fn both(args: &[&str], cpus: Option<&Path>, command: &[&str]) -> (String, String) {
    let command = if command.is_empty() {
        &["true"][..]
    } else {
        command
    };
    let perf = perf_7_2().unwrap();
    let run = |program: &Path, before: Vec<OsString>, command: &[&str]| {
        let mut line = before;
        line.push("stat".into());
        line.extend(args.iter().map(OsString::from));
        line.extend(["-a", "-e", "task-clock"].map(OsString::from));
        line.extend(command.iter().map(OsString::from));
        let output = match cpus {
            Some(tree) => Command::new("unshare")
                .args(["-m", "--propagation", "private", "sh", "-c"])
                .arg(r#"mount --bind "$1" /sys/devices/system/cpu || exit 97; shift; exec "$@""#)
                .arg("sh")
                .arg(tree)
                .arg(program)
                .args(&line)
                .env("LC_ALL", "C")
                .output(),
            None => Command::new(program)
                .args(&line)
                .env("LC_ALL", "C")
                .output(),
        }
        .unwrap();
        assert!(output.status.success(), "{program:?} {line:?}: {output:?}");
        // perf 7.2 writes the table to standard error, -j and -x too; so does counterhal.
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let before = perf.get_args().map(OsString::from).collect();
    let theirs = run(perf.get_program().as_ref(), before, command);
    let ours = run(&bin(), Vec::new(), &[&["--"][..], command].concat());
    (theirs, ours)
}

/// A CPU tree of this machine's two CPUs with other caches and clusters: L1 data and
/// instruction per CPU, L2 shared by both, L3 per CPU, an `index4` L4 (past the four indices
/// perf reads), clusters 4 and 5.
fn other_caches(root: &Path) -> PathBuf {
    let tree = root.join("cpu");
    let write = |path: &str, text: &str| {
        let path = tree.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{text}\n")).unwrap();
    };
    for file in ["online", "possible", "present", "offline", "kernel_max"] {
        let text = std::fs::read_to_string(Path::new("/sys/devices/system/cpu").join(file));
        write(file, text.unwrap_or_default().trim());
    }
    for cpu in 0..2 {
        let this = cpu.to_string();
        write(&format!("cpu{cpu}/topology/physical_package_id"), "0");
        write(&format!("cpu{cpu}/topology/die_id"), "0");
        write(&format!("cpu{cpu}/topology/core_id"), &this);
        write(
            &format!("cpu{cpu}/topology/cluster_id"),
            &(cpu + 4).to_string(),
        );
        let caches = [
            ("1", "Data", this.as_str()),
            ("1", "Instruction", &this),
            ("2", "Unified", "0-1"),
            ("3", "Unified", &this),
            ("4", "Unified", "0-1"),
        ];
        for (index, (level, kind, shared)) in caches.into_iter().enumerate() {
            let dir = format!("cpu{cpu}/cache/index{index}");
            write(&format!("{dir}/level"), level);
            write(&format!("{dir}/type"), kind);
            write(&format!("{dir}/shared_cpu_list"), shared);
            write(&format!("{dir}/size"), "32K");
            for file in [
                "coherency_line_size",
                "number_of_sets",
                "ways_of_associativity",
            ] {
                write(&format!("{dir}/{file}"), "64");
            }
        }
    }
    tree
}

/// Oracle: perf 7.2.13, `perf stat --per-cache[=LN] | --per-cluster -a -e task-clock true`
/// in the table, `-x,` and `-j`, and `-I 100 --interval-count 1`'s heading
/// (tools/perf/util/stat-display.c: `S%d-D%d-L%d-ID%d` and `S%d-D%d-CLS%d` padded to 22 and
/// 20, `"counters"`, `ctrs`; builtin-stat.c: the last level without a value, the cache id the
/// first CPU sharing it, -1 for a level the CPU lacks, only `index0`-`index3` read), on this
/// machine's CPUs and on a tree of other caches (L2 shared, L3 per CPU, an `index4`) and
/// clusters. Before, both options were unknown (exit 2).
#[test]
fn per_cache_and_per_cluster_print_what_perf_7_2_prints() {
    if let Err(why) = perf_7_2() {
        skip!(Need::Tools, "{why}");
    }
    if !running_as_root() {
        skip!(
            Need::Privilege,
            "mounting a CPU tree over /sys/devices/system/cpu needs root"
        );
    }
    let scratch = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-per-cache-{}", std::process::id()));
    let other = other_caches(&scratch);
    let modes = [
        "--per-cache",
        "--per-cache=L1",
        "--per-cache=l2",
        "--per-cache=L3",
        "--per-cache=L4",
        "--per-cluster",
    ];
    for cpus in [None, Some(other.as_path())] {
        for mode in modes {
            for format in ["table", "-x,", "-j"] {
                let mut args = vec![mode];
                if format != "table" {
                    args.push(format);
                }
                let (theirs, ours) = both(&args, cpus, &[]);
                let (theirs, ours) = (places(format, &theirs), places(format, &ours));
                assert!(
                    !theirs.is_empty(),
                    "{args:?} {cpus:?}: perf printed no place"
                );
                assert_eq!(ours, theirs, "{args:?} on {cpus:?}: ours, perf 7.2's");
            }
        }
    }
    for mode in ["--per-cache", "--per-cluster"] {
        let interval = [mode, "-I", "100", "--interval-count", "1"];
        // A command that outlasts the interval, which prints the heading.
        let (theirs, ours) = both(&interval, None, &["sleep", "0.5"]);
        assert!(theirs.contains("ctrs"), "{theirs}");
        assert_eq!(heading(&ours), heading(&theirs), "{mode} -I");
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// Oracle: perf 7.2.13's `parse_cache_level` (builtin-stat.c) refuses `--per-cache=L5`
/// ("perf only supports max cache level of 4") and `--per-cache=X2`, `=L0`, `=L12` ("Cache
/// level must be of form L[1-4], or l[1-4]"); counterhal refuses them with perf's words.
#[test]
fn per_cache_levels_are_refused_as_perf_7_2_refuses_them() {
    if let Err(why) = perf_7_2() {
        skip!(Need::Tools, "{why}");
    }
    let perf = perf_7_2().unwrap();
    for (level, words) in [
        ("L5", "supports max cache level of 4"),
        ("X2", "Cache level must be of form L[1-4], or l[1-4]"),
        ("L0", "Cache level must be of form"),
        ("L12", "Cache level must be of form"),
    ] {
        let option = format!("--per-cache={level}");
        let mut theirs = Command::new(perf.get_program());
        let theirs = theirs
            .args(perf.get_args())
            .args(["stat", &option, "-a", "true"])
            .output()
            .unwrap();
        let ours = Command::new(bin())
            .args(["stat", &option, "-a", "--", "true"])
            .output()
            .unwrap();
        for (who, output) in [("perf", &theirs), ("counterhal", &ours)] {
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                !output.status.success() && stderr.contains(words),
                "{who} {option}: {stderr}"
            );
        }
    }
}
