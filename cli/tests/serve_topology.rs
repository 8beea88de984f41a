//! `counterhal serve`'s per-CPU series labelled with their CPU's socket and die, and
//! `--cpus` counting only the CPUs it lists.

use std::process::Command;

use crate::common::*;
use crate::serve::{Exporter, get};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The labels `keys` of each system-wide `task-clock` series in the scrape `text`.
fn system_wide<const N: usize>(text: &str, keys: [&str; N]) -> Vec<[String; N]> {
    text.lines()
        .filter(|l| l.starts_with("counterhal_event_seconds_total{") && !l.contains("cgroup="))
        .map(|line| {
            let labels = line.split_once('{').unwrap().1.rsplit_once("} ").unwrap().0;
            keys.map(|key| {
                labels
                    .split(',')
                    .find_map(|pair| pair.strip_prefix(&format!("{key}=\"")))
                    .map(|v| v.trim_end_matches('"').to_string())
                    .unwrap_or_default()
            })
        })
        .collect()
}

/// Each CPU's socket as util-linux's `lscpu -p=CPU,SOCKET` gives it.
fn lscpu_sockets() -> Option<Vec<(String, String)>> {
    let out = Command::new("lscpu").arg("-p=CPU,SOCKET").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let sockets = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(','))
        .map(|(cpu, socket)| (cpu.to_string(), socket.to_string()))
        .collect();
    out.status.success().then_some(sockets)
}

/// CPU `cpu`'s socket and die as perf's `--per-die` names its aggregate (`S0-D0`).
fn perf_die(cpu: &str) -> Option<(String, String)> {
    let out = Command::new("perf")
        .args([
            "stat",
            "-a",
            "--per-die",
            "-x,",
            "-e",
            "task-clock",
            "-C",
            cpu,
        ])
        .args(["--", "true"])
        .output()
        .ok()?;
    let said = String::from_utf8_lossy(&out.stderr);
    let id = said
        .lines()
        .find_map(|l| l.split(',').next()?.strip_prefix('S'))?;
    let (socket, die) = id.split_once("-D")?;
    Some((socket.to_string(), die.to_string()))
}

/// Every online CPU's system-wide series carries its socket (as lscpu has it) and die (as
/// perf's `--per-die` has it); with `--cpus` only the CPU listed is counted, and a list of
/// no CPU online is refused at start, naming the CPUs online.
///
/// Oracle: util-linux 2.38's `lscpu -p=CPU,SOCKET` and perf's `stat --per-die -C N` (S<socket>-D<die>),
/// which read the CPU's topology each their own way.
#[test]
fn per_cpu_series_carry_socket_and_die_and_cpus_counts_those_listed() {
    serve_or_skip!();
    if !running_as_root() {
        skip!(Need::Privilege, "counting every CPU takes root here");
    }
    let Some(sockets) = lscpu_sockets() else {
        skip!(
            Need::Tools,
            "lscpu is not installed (apt-get install util-linux)"
        );
    };
    let online: Vec<String> = counterhal::online_cpus(&counterhal::system::System::host())
        .iter()
        .map(|c| c.to_string())
        .collect();
    let every = Exporter::start(&["-e", "task-clock"]);
    let (_, text) = get(every.address, "/metrics", None);
    let series = system_wide(&text, ["cpu", "socket", "die"]);
    assert_eq!(series.len(), online.len(), "one per CPU: {text}");
    for [cpu, socket, die] in &series {
        let expected = sockets.iter().find(|(c, _)| c == cpu).map(|(_, s)| s);
        assert_eq!(Some(socket), expected, "CPU {cpu}: lscpu says {sockets:?}");
        if perf_available() {
            let (perf_socket, perf_die) = perf_die(cpu).expect("perf stat --per-die");
            assert_eq!((socket, die), (&perf_socket, &perf_die), "CPU {cpu}");
        }
    }

    let last = online.last().unwrap().clone();
    let only = Exporter::start(&["-e", "task-clock", "--cpus", &last]);
    let (_, text) = get(only.address, "/metrics", None);
    let series = system_wide(&text, ["cpu"]);
    assert_eq!(series, [[last.clone()]], "{text}");

    let refused = Command::new(bin())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "-e",
            "task-clock",
            "--cpus",
            "4000",
        ])
        .output()
        .expect("run counterhal serve");
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--cpus 4000 names no CPU online here (online: "),
        "{}",
        stderr(&refused)
    );
}
