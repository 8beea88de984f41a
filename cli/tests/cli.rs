//! End-to-end tests of the `counterhal` command against the real backends of this machine.

use std::process::{Command, Output};

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// Where the kernel has no core PMU (rdpmc's line says so, read from sysfs as perf finds core
/// PMUs), `info` says so in the PMU line and in the line of the backend that counts through
/// `perf_event_open`, instead of "usable" beside the model's counters alone (before: "PMU: 6
/// general counters" and "linux usable (real device)" beside "no core PMU").
#[test]
fn info_says_where_the_kernel_has_no_core_pmu() {
    linux_or_skip!();
    let out = counterhal(&["info"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = |start: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_default()
            .to_string()
    };
    let no_core = line("rdpmc:").contains("no core PMU");
    let pmu = line("PMU:");
    if !pmu.is_empty() {
        assert_eq!(pmu.contains("none in the kernel here"), no_core, "{text}");
    }
    let linux = line("linux ");
    if linux.contains("usable (real device)") {
        assert_eq!(
            linux.contains("no core PMU") && linux.contains("hardware events are refused"),
            no_core,
            "{text}"
        );
    }
}

/// The top-level help's exit statuses name every subcommand its list of commands names
/// (before, `version` and `script` had none).
#[test]
fn the_help_gives_every_subcommand_s_exit_status() {
    let out = counterhal(&["--help"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let (commands, statuses) = text
        .split_once("Exit status:")
        .unwrap_or_else(|| panic!("no exit statuses in:\n{text}"));
    let listed: Vec<&str> = commands
        .split_once("Commands:")
        .map(|(_, list)| list)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert!(listed.len() >= 9, "{listed:?}");
    // A status line names its commands first, separated by commas (`list, info, check`).
    let mut named: Vec<&str> = Vec::new();
    for line in statuses
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
    {
        for word in line.split_whitespace() {
            named.push(word.trim_end_matches(','));
            if !word.ends_with(',') {
                break;
            }
        }
    }
    for command in listed {
        assert!(
            named.contains(&command),
            "no exit status for {command}:\n{statuses}"
        );
    }
}

#[test]
fn info_lists_every_backend_with_a_status() {
    let out = counterhal(&["info"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("counterhal {}", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    for registration in counterhal::REGISTRY {
        let backend = registration.name;
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(backend))
            .unwrap_or_else(|| panic!("no line for {backend} in:\n{text}"));
        let status = line.trim_start()[backend.len()..].trim_start();
        assert!(
            status.starts_with("usable (")
                || status.starts_with("unusable: ")
                || status.starts_with("runs on "),
            "{backend} has no status: {line}"
        );
        // Each says how it multiplexes, usable or not (from its model, where it has one: the
        // x86 models take turns in software in the shared rotation's slices); Linux's kernel
        // takes the turns.
        let multiplexing = if registration.model.is_some() {
            "multiplexing software, 4 ms slices"
        } else if backend == "linux" {
            "multiplexing kernel"
        } else {
            "multiplexing "
        };
        if registration.model.is_some() || status.starts_with("usable (") {
            assert!(line.contains(multiplexing), "{backend}: {line}");
        }
        if let Some(reason) = status.strip_prefix("unusable: ") {
            // An unusable backend says why, and what to do.
            assert!(reason.contains("hint:"), "no hint given: {line}");
        }
    }
    if cfg!(target_os = "linux") {
        assert!(text.contains("perf_event_paranoid:"), "{text}");
        let msr = text
            .lines()
            .find(|l| l.trim_start().starts_with("msr"))
            .unwrap();
        if !std::path::Path::new("/dev/cpu/0/msr").exists() {
            assert!(msr.contains("unusable") && msr.contains("msr"), "{msr}");
        }
    }
}

#[test]
fn encode_prints_perf_fields_as_json() {
    let out = counterhal(&["encode", "--json", "cycles:u", "page-faults"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let array = value.as_array().expect("array");
    assert_eq!(array.len(), 2);
    assert_eq!(array[0]["event"], "cycles:u");
    assert_eq!(array[0]["backend"], "linux");
    assert_eq!(array[0]["type"], 0);
    assert_eq!(array[0]["config"], 0);
    assert_eq!(array[0]["exclude_user"], false);
    assert_eq!(array[0]["exclude_kernel"], true);
    assert_eq!(array[1]["type"], 1);
    assert_eq!(array[1]["config"], 2);
    assert_eq!(array[1]["exclude_kernel"], false);
}

#[test]
fn encode_for_pctr_and_msr() {
    let out = counterhal(&[
        "encode",
        "--json",
        "--backend",
        "pctr",
        "--cpu-model",
        "p6",
        "INST_RETIRED:u",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    // event 0xc0 | USR 0x10000 | EN 0x400000: pctr's function word, on its two counters
    assert_eq!(value[0]["evtsel"], 0x4100c0);
    assert_eq!(value[0]["counters"], serde_json::json!([0, 1]));
    assert_eq!(value[0]["cpu_model"], "p6");
    assert_eq!(value[0]["cpu"], -1, "any CPU");
    assert_eq!(value[0]["family"], "x86 EVTSEL");

    let out = counterhal(&[
        "encode",
        "--json",
        "--backend",
        "msr",
        "--cpu-model",
        "skl",
        "INST_RETIRED:ANY_P",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    // libpfm4: core::INST_RETIRED:ANY_P -> 0x5300c0 with the interrupt bit 20 (0x100000).
    assert_eq!(value[0]["evtsel"], 0x4300c0);
}

#[test]
fn encode_errors_exit_2_with_a_message() {
    let out = counterhal(&["encode", "INST_RETIRD"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(err.contains("INST_RETIRD"), "{err}");

    let out = counterhal(&[
        "encode",
        "--backend",
        "pctr",
        "--cpu-model",
        "nosuchcpu",
        "cycles",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("p6"),
        "the known models are listed: {}",
        stderr(&out)
    );
}

#[test]
fn list_marks_software_events_usable() {
    linux_or_skip!();
    let out = counterhal(&["list", "page"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = text
        .lines()
        .find(|l| l.contains("page-faults"))
        .expect("page-faults listed");
    assert!(line.trim_start().starts_with('*'), "{line}");
}

#[test]
fn list_includes_the_tracepoints() {
    linux_or_skip!();
    tracepoints_or_skip!();
    let out = counterhal(&["list", "--json", "sys_enter_getpid"]);
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(
        value
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "syscalls:sys_enter_getpid"),
        "{value}"
    );
}

/// `list` shows one spelling per event; `--json` carries the others (perf's, libpfm4's) as
/// `aliases`, and a pattern matching an alias finds its event.
#[test]
fn list_shows_canonical_names_with_their_aliases() {
    let out = counterhal(&[
        "list",
        "--json",
        "--cpu-model",
        "amd64_fam19h_zen3",
        "ls_mab_alloc",
    ]);
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let natives: Vec<&serde_json::Value> = value
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["section"] == "native")
        .collect();
    assert_eq!(natives.len(), 1, "{value}");
    assert_eq!(natives[0]["name"], "MAB_ALLOCATION_BY_TYPE");
    let aliases = natives[0]["aliases"].as_array().unwrap();
    assert!(
        aliases.contains(&serde_json::json!("LS_MAB_ALLOC:LOAD_STORE_ALLOCATIONS")),
        "{value}"
    );
}

#[test]
fn stat_passes_the_exit_status_through() {
    linux_or_skip!();
    let out = counterhal(&["stat", "-e", "task-clock", "--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let out = counterhal(&["stat", "-e", "page-faults", "--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // As with perf, the table goes to standard error; the command keeps standard output.
    assert!(out.stdout.is_empty());
    let text = stderr(&out);
    assert!(text.contains("page-faults"), "{text}");
    assert!(text.contains("seconds time elapsed"), "{text}");
}

#[test]
fn stat_default_events_show_not_supported_with_a_reason() {
    linux_or_skip!();
    let out = counterhal(&["stat", "--", "true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stderr(&out);
    for event in [
        "task-clock",
        "context-switches",
        "cpu-migrations",
        "page-faults",
        "cycles",
    ] {
        assert!(text.contains(event), "{event} missing:\n{text}");
    }
    if !has_core_pmu() {
        let cycles = text.lines().find(|l| l.contains("cycles")).unwrap();
        assert!(cycles.contains("<not supported>"), "{cycles}");
        assert!(text.contains("Not supported here:"), "{text}");
    }
}

#[test]
fn stat_json_has_the_documented_fields() {
    linux_or_skip!();
    let out = counterhal(&["stat", "--json", "-e", "page-faults,cycles", "--", "true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_slice(&out.stderr).expect("JSON");
    assert_eq!(value["exit_status"], 0);
    assert!(value["elapsed_ns"].as_u64().unwrap() > 0);
    assert_eq!(value["command"][0], "true");
    let events = value["events"].as_array().unwrap();
    assert_eq!(events[0]["name"], label("page-faults"));
    assert_eq!(events[0]["supported"], true);
    assert!(events[0]["value"].as_u64().unwrap() > 0);
    for field in [
        "backend",
        "time_enabled",
        "time_running",
        "scaled",
        "reason",
    ] {
        assert!(events[0].get(field).is_some(), "{field} missing");
    }
}

/// `--filter` on the tracepoint before it: writes of more than 3 bytes (one of the three),
/// while its unfiltered twin counts all three, as perf counts them; a filter before any event,
/// after an event that is no tracepoint, or one the kernel refuses stops with exit 2.
#[test]
fn a_tracepoint_filter_counts_as_perfs_does() {
    linux_or_skip!();
    tracepoints_or_skip!();
    let args = [
        "-x,",
        "-e",
        "syscalls:sys_enter_write",
        "--filter",
        "count > 3",
        "-e",
        "syscalls:sys_enter_write",
        "--",
        "sh",
        "-c",
        "echo a; echo bbbb; echo c",
    ];
    let counts = |out: &std::process::Output| -> Vec<u64> {
        result_lines(out)
            .iter()
            .filter(|l| l.contains("sys_enter_write"))
            .filter_map(|l| l.split(',').next()?.parse().ok())
            .collect()
    };
    let out = ours(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(counts(&out), [1, 3], "{}", stderr(&out));
    if perf_available() {
        let theirs = perf(&args);
        if theirs.status.success() {
            assert_eq!(counts(&out), counts(&theirs), "perf: {}", stderr(&theirs));
        }
    }
    for (bad, want) in [
        (
            &[
                "--filter",
                "fd == 1",
                "-e",
                "syscalls:sys_enter_write",
                "--",
                "true",
            ][..],
            "comes before any event",
        ),
        (
            &["-e", "task-clock", "--filter", "fd == 1", "--", "true"],
            "`task-clock` is not a tracepoint",
        ),
        (
            &[
                "-e",
                "syscalls:sys_enter_write",
                "--filter",
                "nofield == 1",
                "--",
                "true",
            ],
            "refused the filter `nofield == 1`",
        ),
    ] {
        let out = ours(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{bad:?}: {}", stderr(&out));
    }
}

#[test]
fn stat_counts_a_tracepoint_exactly_as_perf_does() {
    linux_or_skip!();
    perf_or_skip!();
    tracepoints_or_skip!();
    let perf = Command::new("perf")
        .args([
            "stat",
            "-x,",
            "-e",
            "syscalls:sys_enter_execve",
            "--",
            "sh",
            "-c",
            "true; /bin/true; /bin/true",
        ])
        .output()
        .expect("run perf");
    let perf_err = String::from_utf8_lossy(&perf.stderr);
    let Some(perf_count) = perf_err
        .lines()
        .find(|l| l.contains("sys_enter_execve"))
        .and_then(|l| l.split(',').next())
        .and_then(|v| v.parse::<u64>().ok())
    else {
        skip!(
            Need::System,
            "perf could not count the tracepoint: {perf_err}"
        );
    };
    let out = counterhal(&[
        "stat",
        "-x,",
        "-e",
        "syscalls:sys_enter_execve",
        "--",
        "sh",
        "-c",
        "true; /bin/true; /bin/true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours: u64 = stderr(&out)
        .lines()
        .find(|l| l.contains("sys_enter_execve"))
        .and_then(|l| l.split(',').next())
        .and_then(|v| v.parse().ok())
        .expect("a count");
    assert_eq!(ours, perf_count, "counterhal {ours}, perf {perf_count}");
    assert!(ours >= 2, "the two execs of /bin/true are counted: {ours}");
}

#[test]
fn bad_arguments_print_the_usage_line() {
    let out = counterhal(&["stat", "-I", "5", "-e", "page-faults", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("usage:"), "{}", stderr(&out));
    let out = counterhal(&["stat", "-C", "3-1", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("0,2-3"), "{}", stderr(&out));
}

/// `--cpu` is perf's CPU list (as `-C`) and `--cpu-model` names the model, in every subcommand.
#[test]
fn cpu_is_the_cpu_list_and_cpu_model_the_model() {
    let out = counterhal(&["stat", "--cpu", "4096", "-e", "cpu-clock", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("of -C 4096"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("CPU model"), "{}", stderr(&out));
    for sub in [
        &["stat", "--cpu-model", "nosuchcpu", "--", "true"][..],
        &["list", "--cpu-model", "nosuchcpu"],
        &["encode", "--cpu-model", "nosuchcpu", "cycles"],
    ] {
        let out = counterhal(sub);
        assert_eq!(out.status.code(), Some(2), "{sub:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("nosuchcpu"),
            "{sub:?}: {}",
            stderr(&out)
        );
    }
}

/// A CPU list is checked against the online CPUs before one target is built: a list of four
/// billion CPUs is refused at once, naming the CPUs that are missing and the online ones.
#[test]
fn a_huge_cpu_list_fails_at_once_naming_the_missing_cpus() {
    use std::time::{Duration, Instant};

    let start = Instant::now();
    let mut child = Command::new(bin())
        .args([
            "stat",
            "-C",
            "0-4294967295",
            "-e",
            "cpu-clock",
            "--",
            "true",
        ])
        .env_remove("COUNTERHAL_EVENTS")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run counterhal");
    // A target per CPU would take minutes and gigabytes; the check takes milliseconds.
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            child.kill().ok();
            child.wait().ok();
            panic!("`stat -C 0-4294967295` still runs after 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(text.contains("usage:"), "{text}");
    // No machine has CPU 4294967295 online: the missing ones end the range.
    assert!(
        text.contains("-4294967295 of -C 0-4294967295 are not online here"),
        "{text}"
    );
    if let Ok(online) = std::fs::read_to_string("/sys/devices/system/cpu/online") {
        assert!(
            text.contains(&format!("(online: {})", online.trim())),
            "{text}"
        );
    }
}

#[test]
fn help_documents_exit_codes() {
    let out = counterhal(&["--help"]);
    let text = stdout(&out);
    assert!(text.contains("Exit status"), "{text}");
    for sub in ["stat", "list", "encode", "info", "check"] {
        assert!(text.contains(sub), "{sub} missing from --help");
        let out = counterhal(&[sub, "--help"]);
        assert!(out.status.success(), "{sub} --help failed");
    }
}

#[test]
fn check_writes_a_json_report() {
    // The suite opens breakpoints (exact counts, the slots a thread holds).
    let _slots = breakpoint_slots_alone();
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("report.json");
    let out = counterhal(&["check", "--models", "--json", path.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).expect("JSON report");
    assert_eq!(value["os"], std::env::consts::OS);
    // Oracle: coreutils' `uname -n`, the kernel's node name, which procfs shows too.
    let uname = Command::new("uname").arg("-n").output().unwrap();
    assert_eq!(value["machine"], stdout(&uname).trim());
    let reports = value["reports"].as_array().unwrap();
    // A report on the models of every backend that has them.
    for registration in counterhal::REGISTRY.iter().filter(|r| r.model.is_some()) {
        let backend = registration.name;
        assert!(
            reports
                .iter()
                .any(|r| r["backend"] == backend && r["device"] == "model"),
            "no {backend}/model report"
        );
    }
    for report in reports {
        for case in report["cases"].as_array().unwrap() {
            assert!(
                case["result"] == "pass" || case["result"] == "skip",
                "{case}"
            );
            if case["result"] == "skip" {
                assert!(
                    !case["reason"].as_str().unwrap().is_empty(),
                    "skip without reason: {case}"
                );
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Builds a small non-PIE program whose `marker` function is called as many times as its
/// argument says, and returns its path and `marker`'s address.
fn build_marker_program(dir: &std::path::Path) -> Option<(std::path::PathBuf, u64)> {
    let program = compile_c(
        dir,
        "marker",
        "#include <stdlib.h>\n\
         __attribute__((noinline)) void marker(volatile int *x) { *x += 1; }\n\
         int main(int argc, char **argv) {\n\
             volatile int x = 0; int n = argc > 1 ? atoi(argv[1]) : 0;\n\
             for (int i = 0; i < n; i++) marker(&x);\n\
             return 0;\n\
         }\n",
        &["-O1", "-no-pie", "-fno-pie"],
    )?;
    let symbols = Command::new("nm").arg(&program).output().ok()?;
    let address = String::from_utf8_lossy(&symbols.stdout)
        .lines()
        .find(|l| l.ends_with(" T marker"))
        .and_then(|l| u64::from_str_radix(l.split_whitespace().next()?, 16).ok())?;
    Some((program, address))
}

#[test]
fn stat_counts_an_execute_breakpoint_exactly_as_perf_does() {
    linux_or_skip!();
    let _slots = breakpoint_slots_alone();
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-bp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let Some((program, address)) = build_marker_program(&dir) else {
        std::fs::remove_dir_all(&dir).ok();
        skip!(
            Need::Tools,
            "no C compiler (cc) and nm to build the marker program"
        );
    };
    let event = format!("mem:{address:#x}:x");
    let program = program.to_str().unwrap();
    let count = |output: &Output| -> Option<u64> {
        String::from_utf8_lossy(&output.stderr)
            .lines()
            .find(|l| l.contains("mem:"))
            .and_then(|l| l.split(',').next())
            .and_then(|v| v.trim().parse().ok())
    };
    let calls = ["1", "1000", "25000"];
    let ours: Vec<u64> = calls
        .iter()
        .map(|&calls| {
            let out = counterhal(&["stat", "-x,", "-e", &event, "--", program, calls]);
            assert!(out.status.success(), "{}", stderr(&out));
            let ours = count(&out).unwrap_or_else(|| panic!("no count in {}", stderr(&out)));
            assert_eq!(ours, calls.parse::<u64>().unwrap(), "{}", stderr(&out));
            ours
        })
        .collect();
    // The exact counts are checked; with perf, they are compared with its counts too.
    let theirs: Option<Vec<u64>> = perf_available().then(|| {
        calls
            .iter()
            .map(|&calls| {
                let perf = Command::new("perf")
                    .args(["stat", "-x,", "-e", &event, "--", program, calls])
                    .output()
                    .expect("run perf");
                count(&perf).unwrap_or_else(|| {
                    panic!(
                        "perf gave no count: {}",
                        String::from_utf8_lossy(&perf.stderr)
                    )
                })
            })
            .collect()
    });
    std::fs::remove_dir_all(&dir).ok();
    perf_or_skip!();
    assert_eq!(
        theirs.as_ref(),
        Some(&ours),
        "perf's counts, then counterhal's"
    );
}

#[test]
fn unknown_events_suggest_the_nearest_names() {
    let out = counterhal(&["encode", "cycels"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("did you mean: cycles"),
        "{}",
        stderr(&out)
    );
    let out = counterhal(&[
        "encode",
        "--backend",
        "msr",
        "--cpu-model",
        "skl",
        "INST_RETIRD",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("INST_RETIRED"), "{}", stderr(&out));
}

/// `--cpu-model` takes perf's signature as detection reads it, and `list --models` lists every
/// model with its signatures.
#[test]
fn cpu_models_by_signature_and_the_model_list() {
    let out = counterhal(&[
        "encode",
        "--backend",
        "msr",
        "--cpu-model",
        "GenuineIntel-6-55-7",
        "INST_RETIRED.ANY_P:u",
        "inst_retired.any_p:u",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(text.matches("clx]: evtsel=0x4100c0").count(), 2, "{text}");
    // Family 0x13 (19): no AMD model exists.
    let out = counterhal(&["encode", "--cpu-model", "AuthenticAMD-19-1", "cycles"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("AuthenticAMD-19-1"),
        "{}",
        stderr(&out)
    );
    let out = counterhal(&["list", "--models", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let models: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let models = models.as_array().unwrap();
    assert!(models.len() >= 66, "{}", models.len());
    let zen5 = models
        .iter()
        .find(|m| m["id"] == "amd64_fam1ah_zen5")
        .unwrap();
    // perf 7.2's mapfile's Zen 5 rows (family 1Ah models 00-2F, 40-4F, 60-7F).
    assert_eq!(zen5["signatures"][0], "AuthenticAMD-26-0..2F|40..4F|60..7F");
    assert_eq!(zen5["counters"]["general"], 6);
}

#[test]
fn a_closed_pipe_is_not_a_crash() {
    for command in ["list", "encode cycles page-faults", "info"] {
        let script = format!(
            "set -o pipefail; {} {command} | head -c 1 >/dev/null",
            bin().to_str().unwrap()
        );
        let status = Command::new("bash")
            .args(["-c", &script])
            .status()
            .expect("bash");
        // head may close the pipe before or after counterhal writes: either way, no panic (101).
        assert_ne!(
            status.code(),
            Some(101),
            "`counterhal {command}` panicked on a closed pipe"
        );
    }
}

#[test]
fn stat_targets_and_options() {
    linux_or_skip!();
    // A process that does not exist, a CPU that does not exist: bad arguments.
    let out = counterhal(&["stat", "-p", "999999999", "-e", "task-clock", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("usage:"), "{}", stderr(&out));
    let out = counterhal(&["stat", "-C", "4096", "-e", "cpu-clock", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    // Attach to a live process while a command bounds the measurement.
    let mut sleeper = Command::new("sleep").arg("5").spawn().expect("sleep");
    let pid = sleeper.id().to_string();
    let out = stat_attached(&pid, "task-clock,context-switches", "0.05");
    sleeper.kill().ok();
    sleeper.wait().ok();
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_slice(&out.stderr).expect("JSON");
    assert_eq!(value["events"][0]["supported"], true, "{value}");

    // Repeats, CSV, an output file.
    let out = counterhal(&["stat", "-r", "3", "-e", "page-faults", "--", "true"]);
    assert!(stderr(&out).contains("(3 runs)"), "{}", stderr(&out));
    assert!(stderr(&out).contains("+-"), "{}", stderr(&out));
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-o-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("stat.csv");
    let out = counterhal(&[
        "stat",
        "-x",
        ";",
        "-o",
        file.to_str().unwrap(),
        "-e",
        "page-faults",
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("page-faults"),
        "the results went to the file"
    );
    let csv = std::fs::read_to_string(&file).unwrap();
    let fields: Vec<&str> = csv.trim().split(';').collect();
    assert_eq!(fields.len(), 7, "perf's seven fields: {csv}");
    assert!(fields[0].parse::<u64>().unwrap() > 0, "{csv}");
    assert_eq!(fields[2], label("page-faults"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn stat_json_reports_unsupported_events_with_a_reason() {
    linux_or_skip!();
    if has_core_pmu() {
        skip!(
            Need::System,
            "this machine has a core PMU, so cycles count here and are not unsupported"
        );
    }
    let out = counterhal(&["stat", "--json", "-e", "cycles", "--", "true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_slice(&out.stderr).expect("JSON");
    let cycles = &value["events"][0];
    assert_eq!(cycles["supported"], false);
    assert!(cycles["value"].is_null());
    assert!(
        cycles["reason"].as_str().unwrap().contains("hint:"),
        "{cycles}"
    );
}

#[test]
fn check_runs_one_backend_on_request() {
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-check1-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("report.json");
    let out = counterhal(&[
        "check",
        "--backend",
        "pctr",
        "--models",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stdout(&out));
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let reports = value["reports"].as_array().unwrap();
    assert!(!reports.is_empty());
    assert!(reports.iter().all(|r| r["backend"] == "pctr"), "{value}");
    if !cfg!(target_os = "openbsd") {
        // Not this OS's backend and no models asked for: one skipped case saying so, and a
        // failure because nothing was checked.
        let out = counterhal(&["check", "--backend", "pctr"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(stdout(&out).contains("runs on openbsd"), "{}", stdout(&out));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bad_tracepoint_modifier_is_named() {
    linux_or_skip!();
    tracepoints_or_skip!();
    if !std::path::Path::new("/sys/kernel/tracing/events/syscalls").exists() {
        skip!(
            Need::System,
            "tracefs with syscall tracepoints is not mounted"
        );
    }
    let out = counterhal(&["encode", "syscalls:sys_enter_getpid:zz"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`zz` is not a modifier"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn stat_a_counts_every_cpu() {
    linux_or_skip!();
    if !may_count_cpus() {
        skip!(
            Need::Privilege,
            "counting whole CPUs needs root or perf_event_paranoid 0"
        );
    }
    // System wide: every online CPU, so cpu-clock exceeds the wall time on a multi-CPU machine.
    let out = counterhal(&[
        "stat",
        "--json",
        "-a",
        "-e",
        "cpu-clock",
        "--",
        "sleep",
        "0.1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_slice(&out.stderr).expect("JSON");
    let cpu_clock = value["events"][0]["value"].as_u64().unwrap();
    let elapsed = value["elapsed_ns"].as_u64().unwrap();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim() != "0" {
        assert!(
            cpu_clock > elapsed,
            "cpu-clock {cpu_clock} ns over {elapsed} ns on CPUs {online}"
        );
    }
}

#[test]
fn stat_p_counts_every_thread_of_the_process() {
    linux_or_skip!();
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The main thread sleeps; a second thread does all the work.
    let program = compile_c(
        &dir,
        "spin",
        "#include <pthread.h>\n#include <unistd.h>\n\
         static void *spin(void *arg) { volatile unsigned long n = 0; for (;;) n++; return arg; }\n\
         int main(void) { pthread_t t; pthread_create(&t, 0, spin, 0); sleep(10); return 0; }\n",
        &["-O1", "-pthread"],
    );
    let Some(program) = program else {
        std::fs::remove_dir_all(&dir).ok();
        skip!(
            Need::Tools,
            "no C compiler (cc) to build the threaded program"
        );
    };
    let mut child = Command::new(&program).spawn().expect("spin");
    // Wait until the worker thread exists.
    let task = format!("/proc/{}/task", child.id());
    while std::fs::read_dir(&task).map_or(0, Iterator::count) < 2 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let pid = child.id().to_string();
    let before = process_cpu_ns(child.id());
    let out = stat_attached(&pid, "task-clock", "0.2");
    let after = process_cpu_ns(child.id());
    child.kill().ok();
    child.wait().ok();
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_slice(&out.stderr).expect("JSON");
    // Only the worker thread runs: counting the sleeping main thread alone reads "not
    // counted". What is counted is the worker's time, so it is some time, and no more than
    // the whole process ran meanwhile (its CPU time from /proc, read around the measurement,
    // which for a running thread lags by up to a scheduler tick or two: 20 ms of slack); no
    // threshold that a loaded machine could miss.
    let task_clock = value["events"][0]["value"].as_u64();
    let ran = after.saturating_sub(before) + 20_000_000;
    assert!(
        task_clock.is_some_and(|ns| ns > 0 && ns <= ran),
        "counted {task_clock:?} ns, the process ran {ran} ns: {value}"
    );
}

/// The CPU time process `pid` has used, in nanoseconds (`/proc/PID/schedstat` of each of its
/// threads: the first field is the time on CPU).
fn process_cpu_ns(pid: u32) -> u64 {
    let threads = std::fs::read_dir(format!("/proc/{pid}/task")).expect("task directory");
    threads
        .flatten()
        .filter_map(|thread| std::fs::read_to_string(thread.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// stat's part of `shell`'s completion script (`completions`' output): bash's case of the
/// subcommand, zsh's, fish's lines for it.
fn stat_completions(shell: &str, script: &str) -> String {
    let lines: Vec<&str> = script.lines().collect();
    let block = |start: usize| {
        let indent = lines[start].len() - lines[start].trim_start().len();
        let end = (start + 1..lines.len())
            .find(|&i| {
                let line = lines[i];
                let own = line.len() - line.trim_start().len();
                own == indent && !line.trim().is_empty()
            })
            .unwrap_or(lines.len());
        lines[start..end].join("\n")
    };
    match shell {
        "bash" => lines
            .iter()
            .position(|l| l.trim() == "counterhal__subcmd__stat)")
            .map(block),
        "zsh" => lines
            .iter()
            .position(|l| l.trim() == "(stat)")
            .map(|start| {
                let end = (start..lines.len())
                    .find(|&i| lines[i].trim() == ";;")
                    .unwrap_or(lines.len());
                lines[start..end].join("\n")
            }),
        _ => Some(
            lines
                .iter()
                .filter(|l| l.contains("__fish_counterhal_using_subcommand stat\""))
                .copied()
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    }
    .unwrap_or_default()
}

/// Done when (the one parser): `stat`'s `--help`, `-h` and completions (bash, zsh, fish) are
/// what they were when clap read the other subcommands and stat's table only described stat
/// (989c393d's, kept in `cli/tests/data/stat-face/`), now that one parser reads every
/// subcommand. (`docs/man/counterhal-stat.1`, the manual page, is held by the reference's own
/// test.) `COUNTERHAL_WRITE_STAT_FACE=1` writes the files from the command under test.
///
/// Oracle: clap's renderings (help, clap_complete) of 989c393d's description of stat.
#[test]
fn stats_help_and_completions_are_what_they_were() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stat-face");
    let write = std::env::var_os("COUNTERHAL_WRITE_STAT_FACE").is_some();
    let mut faces = vec![
        ("help.txt", stdout(&counterhal(&["stat", "--help"]))),
        ("h.txt", stdout(&counterhal(&["stat", "-h"]))),
    ];
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout(&counterhal(&["completions", shell]));
        let part = stat_completions(shell, &script);
        assert!(
            part.lines().count() > 5,
            "{shell}: no stat part in {script}"
        );
        faces.push((
            match shell {
                "bash" => "completions.bash",
                "zsh" => "completions.zsh",
                _ => "completions.fish",
            },
            part,
        ));
    }
    for (file, now) in faces {
        let path = dir.join(file);
        if write {
            std::fs::write(&path, &now).unwrap();
            continue;
        }
        let before = std::fs::read_to_string(&path).unwrap();
        assert_eq!(now, before, "stat's {file} changed");
    }
}
