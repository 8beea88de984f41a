//! `counterhal script`: a recording's stat records as perf's `perf script` prints them. The
//! oracle is perf 7.2.13 (Debian sid's, in the current-releases lab's root, run by the root's
//! loader): its `perf script` and ours read the same bytes, and print the same lines. The
//! recordings are perf 7.2's own pipes (its files it cannot read back: docs/command.md) and
//! counterhal's file and pipe; the events are software ones, which count exactly here.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

use crate::common::*;

/// `program ARGS` with `input` on its standard input.
fn fed(program: &Command, args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(program.get_program())
        .args(program.get_args())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run it");
    let mut stdin = child.stdin.take().expect("its standard input");
    stdin.write_all(input).expect("write its input");
    drop(stdin);
    child.wait_with_output().expect("its end")
}

/// Oracle: perf 7.2.13's `perf script -i -` on the same stream (tools/perf/builtin-script.c,
/// `process_stat_round_event`): the heading, one line per event, thread and CPU of each
/// round, the counts as differences from the round before (`-I`), the tool events' names
/// (`duration_time`, type 0xfffffffe). Before: `script` was no subcommand (exit 2), and perf
/// 7.2's stat.sh `test_stat_record_script` failed with counterhal in perf's place.
#[test]
fn script_prints_stat_records_as_perf_7_2_s_perf_script() {
    linux_or_skip!();
    let perf = match perf_7_2_defaults() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let ours = Command::new(bin());
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ours.data");
    let file = file.to_str().unwrap();
    let mut recordings: Vec<(String, Vec<u8>)> = Vec::new();
    let mut record = |who: &Command, args: &[&str]| {
        let out = fed(who, &[&["stat", "record"][..], args].concat(), b"");
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        recordings.push((format!("{:?} {args:?}", who.get_program()), out.stdout));
    };
    let events = "task-clock,page-faults";
    record(&perf, &["-e", events, "-o", "-", "true"]);
    record(&perf, &["-o", "-", "true"]);
    record(
        &perf,
        &["-I", "100", "-e", events, "-o", "-", "sleep", "0.25"],
    );
    record(&ours, &["-e", events, "-o", "-", "true"]);
    if may_count_cpus() {
        record(&perf, &["-a", "-e", events, "-o", "-", "sleep", "0.05"]);
    }
    let out = fed(
        &ours,
        &["stat", "record", "-e", events, "-o", file, "true"],
        b"",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let same = |what: &str, theirs: Output, ours: Output| {
        assert!(ours.status.success(), "{what}: {}", stderr(&ours));
        let text = stdout(&theirs);
        assert!(text.starts_with("CPU   THREAD"), "{what}: {text}");
        assert_eq!(stdout(&ours), text, "{what}");
    };
    let script = ["script", "-i", file];
    same(
        "our file",
        fed(&perf, &script, b""),
        fed(&ours, &script, b""),
    );
    std::fs::remove_dir_all(&dir).ok();
    for (what, bytes) in &recordings {
        let script = ["script", "-i", "-"];
        same(what, fed(&perf, &script, bytes), fed(&ours, &script, bytes));
    }
}

/// Bad input: another file's bytes, and a stream cut inside a record, each refused (exit 2)
/// with what was wrong, never a panic.
#[test]
fn script_refuses_what_is_no_recording() {
    linux_or_skip!();
    let ours = Command::new(bin());
    let out = fed(&ours, &["script", "-i", "-"], b"not a recording at all");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("PERFILE2"), "{}", stderr(&out));
    let piped = fed(
        &ours,
        &["stat", "record", "-o", "-", "-e", "task-clock", "true"],
        b"",
    );
    let cut = &piped.stdout[..piped.stdout.len() - 5];
    let out = fed(&ours, &["script", "-i", "-"], cut);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("truncated"), "{}", stderr(&out));
}

/// A pipe stream made here: two software events (`task-clock`, `page-faults`), a thread map
/// of `threads` threads, a CPU map of the range 0 to `last_cpu`, a count for the first place
/// of each event, and `rounds` rounds: what a crafted file may declare, in a few bytes.
fn crafted(threads: u64, last_cpu: u16, rounds: u64) -> Vec<u8> {
    fn record(stream: &mut Vec<u8>, kind: u32, body: &[u8]) {
        let size = u32::try_from(8 + body.len()).unwrap();
        assert!(size < 1 << 16, "a record of {size} bytes");
        stream.extend(kind.to_le_bytes());
        stream.extend((size << 16).to_le_bytes());
        stream.extend(body);
    }
    let mut stream = b"PERFILE2".to_vec();
    stream.extend(16u64.to_le_bytes());
    for (config, id) in [(1u64, 100u64), (2, 200)] {
        // A PERF_ATTR_SIZE_VER0 attr: type 1 (software), size 64, config; then its id.
        let mut body = vec![0u8; 64];
        body[0..4].copy_from_slice(&1u32.to_le_bytes());
        body[4..8].copy_from_slice(&64u32.to_le_bytes());
        body[8..16].copy_from_slice(&config.to_le_bytes());
        body.extend(id.to_le_bytes());
        record(&mut stream, 64, &body);
    }
    let mut map = threads.to_le_bytes().to_vec();
    for pid in 0..threads {
        map.extend((1000 + pid).to_le_bytes());
        map.extend(*b"crafted\0\0\0\0\0\0\0\0\0");
    }
    record(&mut stream, 73, &map);
    // The range encoding: type 2, any_cpu 0, a pad byte, the first and last CPU.
    let mut cpus = vec![2, 0, 0, 0];
    cpus.extend(0u16.to_le_bytes());
    cpus.extend(last_cpu.to_le_bytes());
    record(&mut stream, 74, &cpus);
    for round in 1..=rounds {
        for id in [100u64, 200] {
            let mut stat = id.to_le_bytes().to_vec();
            stat.extend(0u64.to_le_bytes()); // CPU 0, the map's first thread
            for value in [7 * round, 1000 * round, 1000 * round] {
                stat.extend(value.to_le_bytes());
            }
            record(&mut stream, 76, &stat);
        }
        let mut end = 0u64.to_le_bytes().to_vec();
        end.extend((round * 1_000_000).to_le_bytes());
        record(&mut stream, 77, &end);
    }
    stream
}

/// The peak of `counterhal script -i -`'s heap on `stream`, as valgrind's massif measures it
/// (the largest `mem_heap_B` of its snapshots), with what it printed counted and dropped.
fn script_heap_peak(stream: &[u8], tag: &str) -> (u64, usize) {
    let massif = counterhal_conformance::fixtures::temp_dir().join(format!(
        "counterhal-script-massif-{tag}-{}",
        std::process::id()
    ));
    let mut valgrind = Command::new("valgrind");
    valgrind.args([
        "--tool=massif",
        "--detailed-freq=1000",
        &format!("--massif-out-file={}", massif.display()),
    ]);
    valgrind.arg(bin());
    let out = fed(&valgrind, &["script", "-i", "-"], stream);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&massif).expect("massif's file");
    std::fs::remove_file(&massif).ok();
    let peak = text
        .lines()
        .filter_map(|l| l.strip_prefix("mem_heap_B="))
        .filter_map(|n| n.parse::<u64>().ok())
        .max()
        .expect("massif's snapshots");
    (peak, out.stdout.iter().filter(|&&b| b == b'\n').count())
}

/// Oracle: valgrind's massif, which counts the heap. `script` prints a round as it is read and
/// keeps only the counts a record gave, so its heap does not grow with what it prints: a
/// stream of 64 threads and 256 CPUs (65,536 lines from 4 KB) peaks within 256 KiB of one of a
/// thread and a CPU (8 lines). Before, it built the whole output and two maps of a count per
/// line first (a 1,472-byte recording took 240 MB).
#[test]
fn script_keeps_its_heap_flat_whatever_it_prints() {
    linux_or_skip!();
    if Command::new("valgrind").arg("--version").output().is_err() {
        skip!(
            Need::Tools,
            "valgrind is not installed (apt-get install valgrind)"
        );
    }
    let (small, small_lines) = script_heap_peak(&crafted(1, 0, 4), "small");
    let (large, large_lines) = script_heap_peak(&crafted(64, 255, 2), "large");
    eprintln!(
        "heap peak: {small} bytes for {small_lines} lines, {large} bytes for {large_lines} lines"
    );
    assert_eq!(small_lines, 1 + 4 * 2);
    assert_eq!(large_lines, 1 + 2 * 2 * 64 * 256);
    assert!(
        large <= small + 256 * 1024,
        "the heap grew with the output: {small} bytes for {small_lines} lines, {large} for \
         {large_lines}"
    );
}

/// A recording whose maps multiply past what script prints (2,700 threads and CPUs 0 to
/// 65,535: 176,947,200 places a round, from 65 KB) is refused, naming the bound, with
/// nothing printed (before, it ran out of memory).
#[test]
fn script_refuses_maps_past_its_bound_naming_it() {
    linux_or_skip!();
    let ours = Command::new(bin());
    let out = fed(&ours, &["script", "-i", "-"], &crafted(2700, 65535, 1));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains("2700 threads and 65536 CPUs") && text.contains("at most 1048576"),
        "{text}"
    );
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
}
