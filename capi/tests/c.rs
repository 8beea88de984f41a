//! The C API from C: a program built with the system compiler against libcounterhal counts
//! page faults over touched pages and an exact getpid tracepoint, then tries every misuse the
//! header names; built again under AddressSanitizer, and against the static library; and the
//! header compiles as strict C99 and as C++.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use counterhal_conformance::skip::Need;

use crate::common::{library_dir, manifest};
use counterhal_conformance::fixtures::ForAnyone;

/// Whether `tool --version` runs (valgrind, c++): a fresh machine has neither.
fn installed(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Skips the rest of the running test (through the suite's one door) where valgrind is not
/// installed: what ran before it stays run.
macro_rules! valgrind_or_skip {
    () => {
        if !installed("valgrind") {
            counterhal_conformance::skip!(
                Need::Tools,
                "valgrind is not installed (apt-get install valgrind)"
            );
        }
    };
}

/// Whether the getpid tracepoint can be counted here (root with tracefs).
fn tracepoint_countable() -> bool {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    });
    // The library mounts no tracefs unasked: the test mounts it, as perf would.
    root && counterhal_conformance::fixtures::tracefs_mounted().is_ok_and(|t| {
        Path::new(t)
            .join("events/syscalls/sys_enter_getpid/id")
            .exists()
    })
}

/// Compiles `counting.c` with `extra` flags into `output`; panics with the compiler's words.
fn compile(output: &Path, extra: &[&str]) {
    let out = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-g", "-I"])
        .arg(manifest().join("include"))
        .arg(manifest().join("tests/c/counting.c"))
        .arg("-o")
        .arg(output)
        .args(extra)
        .output()
        .expect("a C compiler (cc) is installed");
    assert!(
        out.status.success(),
        "cc {extra:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs the compiled program; asserts every check passed and the counts were printed.
fn run(program: &Path, env: &[(&str, &str)]) {
    let tracepoint = tracepoint_countable();
    if !tracepoint {
        eprintln!("the getpid tracepoint is not checked: it needs root and tracefs");
    }
    let report = counterhal_conformance::fixtures::temp_dir().join(format!(
        "counterhal-capi-{}-{}.txt",
        std::process::id(),
        program.file_name().unwrap().to_string_lossy()
    ));
    let out = Command::new(program)
        .args(tracepoint.then_some("tracepoint"))
        .env("COUNTERHAL_REGION_OUTPUT", &report)
        .env("COUNTERHAL_REGION_EVENTS", "task-clock,page-faults")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "{} failed ({}):\n{stdout}\n{stderr}",
        program.display(),
        out.status
    );
    let faults: u64 = stdout
        .lines()
        .find_map(|l| {
            l.strip_prefix("page-faults ")?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no page-fault count printed:\n{stdout}"));
    assert!(faults >= 512, "{faults} page faults over 512 touched pages");
    if tracepoint {
        assert!(
            stdout.contains("sys_enter_getpid 1000 for 1000 calls"),
            "{stdout}"
        );
    }
    // The region report was written at exit, with the loop region.
    let text = std::fs::read_to_string(&report).expect("the region report is written at exit");
    let _ = std::fs::remove_file(&report);
    assert!(text.lines().any(|l| l.starts_with("loop ")), "{text}");
}

fn scratch(name: &str) -> PathBuf {
    counterhal_conformance::fixtures::clean_up_at_exit();
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-capi-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn a_c_program_counts_and_every_misuse_is_an_error() {
    let lib = library_dir();
    let program = scratch("counting");
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    compile(
        &program,
        &[&format!("-L{}", lib.display()), "-lcounterhal", &rpath],
    );
    run(&program, &[]);
}

#[test]
fn the_same_program_is_clean_under_address_sanitizer() {
    let lib = library_dir();
    let program = scratch("counting-asan");
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    compile(
        &program,
        &[
            "-fsanitize=address",
            "-fno-omit-frame-pointer",
            &format!("-L{}", lib.display()),
            "-lcounterhal",
            &rpath,
        ],
    );
    run(
        &program,
        &[("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")],
    );
}

#[test]
fn the_same_program_is_clean_under_undefined_behaviour_sanitizer() {
    let lib = library_dir();
    let program = scratch("counting-ubsan");
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    compile(
        &program,
        &[
            "-fsanitize=undefined",
            "-fno-sanitize-recover=all",
            &format!("-L{}", lib.display()),
            "-lcounterhal",
            &rpath,
        ],
    );
    run(
        &program,
        &[("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")],
    );
}

#[test]
fn the_same_program_is_clean_under_valgrind() {
    valgrind_or_skip!();
    let lib = library_dir();
    let program = scratch("counting-valgrind");
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    compile(
        &program,
        &[&format!("-L{}", lib.display()), "-lcounterhal", &rpath],
    );
    let wrapper = scratch("counting-under-valgrind.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec valgrind --quiet --error-exitcode=99 --leak-check=full \
             --errors-for-leak-kinds=definite {} \"$@\"\n",
            program.display()
        ),
    )
    .unwrap();
    let made = Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()
        .unwrap();
    assert!(made.success());
    run(&wrapper, &[]);
}

#[test]
fn the_static_library_links_on_its_own() {
    let lib = library_dir();
    let program = scratch("counting-static");
    let archive = lib.join("libcounterhal.a");
    compile(
        &program,
        &[
            archive.to_str().unwrap(),
            "-lpthread",
            "-ldl",
            "-lm",
            "-lgcc_s",
            "-lrt",
        ],
    );
    run(&program, &[]);
}

/// The docs and the examples test every call's result as the header's one convention says
/// (`< 0` is a failure; a success may be an index or a count), never against
/// `COUNTERHAL_OK`: `counterhal_set_add` returns 1 for a set's second event, which such a
/// test read as a failure with no last error. Oracle: the header's own statement of the
/// convention, and face.c, where the second add returns 1.
#[test]
fn the_docs_and_examples_test_results_with_less_than_zero() {
    let root = manifest().parent().unwrap();
    let header = std::fs::read_to_string(manifest().join("include/counterhal.h")).unwrap();
    assert!(
        header.contains("test a result with < 0, never != COUNTERHAL_OK"),
        "the header states the convention"
    );
    let mut files: Vec<PathBuf> = ["README.md", "capi/README.md", "docs/papi.md"]
        .iter()
        .map(|f| root.join(f))
        .filter(|f| f.is_file())
        .collect();
    for entry in std::fs::read_dir(root.join("examples/c")).unwrap() {
        files.push(entry.unwrap().path());
    }
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let squeezed: String = line.split_whitespace().collect();
            if squeezed.contains("!=COUNTERHAL_OK") || squeezed.contains("==COUNTERHAL_OK") {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "results compared with COUNTERHAL_OK (test `< 0`):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_header_compiles_as_cpp() {
    if !installed("c++") {
        counterhal_conformance::skip!(
            Need::Tools,
            "no C++ compiler (c++) is installed (apt-get install g++)"
        );
    }
    let source = scratch("header.cpp");
    std::fs::write(
        &source,
        "#include <counterhal.h>\nint main() { counterhal_t *ch = nullptr; \
         return counterhal_open(&ch, nullptr) == COUNTERHAL_OK ? 0 : 1; }\n",
    )
    .unwrap();
    let out = Command::new("c++")
        .args([
            "-std=c++11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsyntax-only",
            "-I",
        ])
        .arg(manifest().join("include"))
        .arg(&source)
        .output()
        .expect("c++ runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `examples/c/NAME.c` built against the library (C99, warnings as errors, `flags` added;
/// linked with the maths library, which the harness's standard deviation takes), once per
/// run of this test binary: tests running at once share the program.
fn example(name: &str, flags: &[&str]) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut programs = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = programs.iter().find(|(n, _)| n == name) {
        return path.clone();
    }
    let lib = library_dir();
    let program = scratch(&format!("{name}-example"));
    let built = Command::new("cc")
        .args(flags)
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(manifest().join("include"))
        .arg(manifest().join(format!("../examples/c/{name}.c")))
        .arg("-o")
        .arg(&program)
        .args([
            &format!("-L{}", lib.display()),
            "-lcounterhal",
            &format!("-Wl,-rpath,{}", lib.display()),
            "-lm",
        ])
        .output()
        .expect("a C compiler (cc) is installed");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    programs.push((name.to_string(), program.clone()));
    program
}

/// One event's row of `examples/c/harness.c`: per run the mean, standard deviation, least
/// and most, then the sum of the runs and one set's count of them all.
#[derive(Debug)]
struct HarnessRow {
    mean: f64,
    stddev: f64,
    min: u64,
    max: u64,
    sum: u64,
    one_set: u64,
}

/// Runs the harness with `args`; the row of each event whose name starts with one of
/// `events` (the name as counted may end in `:u`).
fn harness(args: &[&str], events: &[&str]) -> Vec<HarnessRow> {
    let program = example("harness", &["-O1"]);
    let out = Command::new(&program)
        .args(args)
        .args(events)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    eprintln!("{stdout}");
    events
        .iter()
        .map(|event| {
            let line = stdout
                .lines()
                .find(|l| {
                    l.split_whitespace()
                        .next()
                        .is_some_and(|n| n.starts_with(event))
                })
                .unwrap_or_else(|| panic!("no row for {event}:\n{stdout}{stderr}"));
            let words: Vec<&str> = line.split_whitespace().collect();
            let number = |at: usize| -> f64 {
                words[at]
                    .parse()
                    .unwrap_or_else(|_| panic!("`{}` in {line}", words[at]))
            };
            HarnessRow {
                mean: number(1),
                stddev: number(2),
                min: number(3) as u64,
                max: number(4) as u64,
                sum: number(5) as u64,
                one_set: number(6) as u64,
            }
        })
        .collect()
}

/// `examples/c/harness.c` measures a function run by run, each run's counts its own (a start
/// zeroes them): 10 runs touching 256 fresh pages each fault 256 times each run, and the runs
/// sum to what one set counting all of them at once read. Oracles: the kernel faults a fresh
/// anonymous page once, on its first write (mmap(2); `perf stat -e page-faults` of the same
/// loop), and the second set over every run.
#[test]
fn the_c_harness_counts_each_run_alone_and_the_runs_sum_to_one_set() {
    let rows = harness(&["-r", "10", "-p", "256", "-c", "0"], &["page-faults"]);
    let faults = &rows[0];
    assert!(faults.min >= 256 && faults.max <= 256 + 8, "{faults:?}");
    assert!((faults.mean - 256.0).abs() <= 8.0, "{faults:?}");
    // The runs are each their own: had a run's count carried over, the tenth would be ten
    // times the first.
    assert!(faults.sum >= 2560 && faults.sum <= 2560 + 80, "{faults:?}");
    // One set over every run counts the runs and the harness's own calls between them.
    assert!(
        faults.one_set >= faults.sum && faults.one_set <= faults.sum + 32,
        "{faults:?}"
    );
}

/// The harness counts the `syscalls:sys_enter_getpid` tracepoint exactly: 1,000 `getpid()`
/// calls a run, 1,000 each of 10 runs with no spread, 10,000 in all, and one set over the
/// runs counts the same 10,000 (oracle: the tracepoint fires once per system call, and the
/// harness makes no other `getpid`).
#[test]
fn the_c_harness_counts_getpid_calls_exactly_per_run() {
    if !tracepoint_countable() {
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::Privilege,
            "the getpid tracepoint needs root and tracefs"
        );
    }
    let rows = harness(
        &["-r", "10", "-p", "16", "-c", "1000"],
        &["syscalls:sys_enter_getpid", "page-faults"],
    );
    let getpid = &rows[0];
    assert_eq!((getpid.min, getpid.max), (1000, 1000), "{getpid:?}");
    assert!(getpid.mean == 1000.0 && getpid.stddev == 0.0, "{getpid:?}");
    assert_eq!((getpid.sum, getpid.one_set), (10_000, 10_000), "{getpid:?}");
    assert!(rows[1].min >= 16, "{:?}", rows[1]);
}

#[test]
fn the_c_example_builds_and_counts() {
    let program = example("count", &[]);
    let out = Command::new(&program)
        .args(["page-faults", "no-such-event"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stderr.contains("no-such-event left out"), "{stderr}");
    let faults: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("page-faults")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no page-fault count:\n{stdout}"));
    // The example touches 16 MiB page by page.
    assert!(faults >= 4096, "{faults}\n{stdout}");
}

/// `examples/c/metrics.c` plans a model's IPC on any machine and counts a page-fault rate here:
/// on Sapphire Rapids the model's `Info_Thread_IPC` reads `INST_RETIRED.ANY` and
/// `CPU_CLK_UNHALTED.THREAD`, each with an encoding there; the portable IPC reads
/// `instructions` and `cycles`; the rate's faults cover the pages touched and its seconds lie
/// within the program's run. Oracle: Intel perfmon's SPR/metrics/sapphirerapids_metrics.json
/// (`Info_Thread_IPC`: `INST_RETIRED.ANY / ( CPU_CLK_UNHALTED.THREAD )`), perf's IPC
/// (`instructions / cycles`, tools/perf/util/stat-shadow.c) and the kernel's page-fault
/// accounting (a fault at least per fresh page touched).
#[test]
fn the_c_metrics_example_plans_a_models_ipc_and_counts_a_page_fault_rate() {
    let program = example("metrics", &[]);
    let run = |args: &[&str]| {
        let started = std::time::Instant::now();
        let out = Command::new(&program).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "metrics {args:?}: {text}");
        (text, started.elapsed().as_secs_f64())
    };
    let events = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix("  ")?.split(": ").next())
            .map(str::to_string)
            .collect()
    };
    let (text, _) = run(&["--cpu-model", "spr", "Info_Thread_IPC"]);
    assert!(text.starts_with("model: spr"), "{text}");
    assert_eq!(
        events(&text),
        ["INST_RETIRED.ANY", "CPU_CLK_UNHALTED.THREAD"],
        "{text}"
    );
    assert!(
        text.lines()
            .filter(|l| l.starts_with("  "))
            .all(|l| l.contains(": perf type=")),
        "each event has its encoding on the model:\n{text}"
    );
    let (text, seconds) = run(&[]);
    assert_eq!(events(&text), ["instructions", "cycles"], "{text}");
    let counted = text
        .lines()
        .find_map(|l| l.strip_prefix("counted: page_faults_per_second = "))
        .unwrap_or_else(|| panic!("no rate printed:\n{text}"));
    let words: Vec<&str> = counted.split_whitespace().collect();
    let rate: f64 = words[0].parse().unwrap();
    let faults: f64 = words[2].trim_start_matches('(').parse().unwrap();
    assert_eq!(words[1], "faults/sec", "{text}");
    assert!(faults >= 4096.0, "{faults} faults for 4096 pages: {text}");
    let counted_seconds = faults / rate;
    assert!(
        counted_seconds > 0.0 && counted_seconds <= seconds,
        "{faults} faults at {rate}/s is {counted_seconds} s, within a run of {seconds} s"
    );
}

/// `examples/c/run.c` counts a command from its exec: a shell running `true` twice makes 2
/// `execve` calls with its children counted and 0 alone (oracle: perf's counts of the same
/// command, `capi/tests/face.rs`); a name the machine lacks is named and left out; the
/// command's exit status is passed on.
#[test]
fn the_c_command_example_counts_a_command_and_passes_its_status() {
    let program = example("run", &["-D_POSIX_C_SOURCE=200809L"]);
    let run = |args: &[&str]| {
        let out = Command::new(&program).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let events = "syscalls:sys_enter_execve,task-clock,no-such-event";
    let (code, text) = run(&[events, "--", "sh", "-c", "/bin/true; /bin/true; exit 5"]);
    if text.contains("syscalls:sys_enter_execve: not counted") {
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::Privilege,
            "the execve tracepoint does not open here: {text}"
        );
    }
    assert_eq!(code, Some(5), "{text}");
    assert!(text.contains("no-such-event: not counted"), "{text}");
    let count = |text: &str| -> u64 {
        text.lines()
            .find(|l| l.trim_end().ends_with("syscalls:sys_enter_execve"))
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no execve count:\n{text}"))
    };
    assert_eq!(count(&text), 2, "{text}");
    assert!(text.contains("task-clock"), "{text}");
    let (code, text) = run(&["-i", events, "--", "sh", "-c", "/bin/true; /bin/true"]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(count(&text), 0, "{text}");
    let (code, text) = run(&["task-clock", "--", "/nonexistent/program"]);
    assert_eq!(code, Some(127), "{text}");
    assert!(text.contains("/nonexistent/program"), "{text}");
}

/// `examples/c/hot_addresses.c` samples its own loops: the one doing three times the work
/// gets more samples, and at least 80% land in the two loops.
#[test]
fn the_c_sampling_example_finds_the_heavier_loop() {
    let program = example("hot_addresses", &["-O1"]);
    let out = Command::new(&program).arg("400").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("cannot sample") {
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::System,
            "sampling is refused here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    assert!(out.status.success(), "{text}");
    let counts: Vec<u64> = text
        .lines()
        .find(|l| l.starts_with("light "))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let total: u64 = text
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let [light, heavy] = counts[..] else {
        panic!("no loop counts:\n{text}");
    };
    assert!(
        total >= 20 && heavy > light && (light + heavy) * 10 >= total * 8,
        "{text}"
    );
}

/// How `tests/c/hostile.c` is built and run: plainly, under AddressSanitizer, under
/// UndefinedBehaviorSanitizer, under valgrind's memcheck, or built plainly and run as the
/// unprivileged user nobody (`setpriv`; as the caller itself when that is not root).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Under {
    Plain,
    Address,
    Undefined,
    Valgrind,
    Nobody,
}

/// The hostile program built for `under` (once per run of this test binary).
fn hostile(under: Under) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<(Under, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(u, _)| *u == under) {
        return path.clone();
    }
    let lib = library_dir();
    let program = scratch(&format!("hostile-{under:?}"));
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    let mut flags = vec![
        "-std=c99".to_string(),
        "-Wall".into(),
        "-Wextra".into(),
        "-Werror".into(),
        "-g".into(),
        "-pthread".into(),
    ];
    match under {
        Under::Address => flags.extend([
            "-fsanitize=address".into(),
            "-fno-omit-frame-pointer".into(),
        ]),
        Under::Undefined => flags.extend([
            "-fsanitize=undefined".into(),
            "-fno-sanitize-recover=all".into(),
        ]),
        Under::Plain | Under::Valgrind | Under::Nobody => {}
    }
    let out = Command::new("cc")
        .args(&flags)
        .arg("-I")
        .arg(manifest().join("include"))
        .arg(manifest().join("tests/c/hostile.c"))
        .arg("-o")
        .arg(&program)
        .args([format!("-L{}", lib.display()), "-lcounterhal".into(), rpath])
        .output()
        .expect("a C compiler (cc) is installed");
    assert!(
        out.status.success(),
        "cc {under:?} hostile.c failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    built.push((under, program.clone()));
    program
}

/// libcounterhal under its SONAME where nobody can load it, whatever folder the workspace is
/// in (a clone in /root, which nobody cannot enter): the programs run as nobody find it first
/// through `LD_LIBRARY_PATH`. Kept for the test binary's run.
fn library_for_anyone() -> &'static ForAnyone {
    static MADE: std::sync::OnceLock<ForAnyone> = std::sync::OnceLock::new();
    MADE.get_or_init(|| {
        let library = library_dir().join("libcounterhal.so");
        ForAnyone::new("capi", &[(&library, crate::common::SONAME)])
            .expect("a folder for libcounterhal that nobody can read")
    })
}

/// What one run of a hostile case printed.
struct CaseRun {
    stdout: String,
    stderr: String,
}

/// Runs `case` of the hostile program under `under` with `env`; fails the test when it does
/// not pass within the time limit (a deadlock), prints a panic, or a checker complains.
fn hostile_case(case: &str, under: Under, env: &[(&str, &str)]) -> CaseRun {
    let program = hostile(under);
    let mut command = match under {
        Under::Valgrind => {
            let mut c = Command::new("valgrind");
            c.args([
                "--quiet",
                "--error-exitcode=99",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite",
            ])
            .arg(&program);
            c
        }
        Under::Nobody if running_as_root() => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&program)
                .env("LD_LIBRARY_PATH", &library_for_anyone().dir)
                .current_dir("/");
            c
        }
        _ => Command::new(&program),
    };
    command
        .arg(case)
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        .env("COUNTERHAL_REGION_EVENTS", "page-faults")
        .env(
            "COUNTERHAL_REGION_OUTPUT",
            scratch(&format!("{case}-{under:?}.report")),
        )
        .envs(env.iter().copied());
    // Output into files, not pipes: a straggling child of the program cannot hold the test;
    // the program gets a process group of its own, killed whole if it hangs.
    let output = |stream: &str| scratch(&format!("{case}-{under:?}.{stream}"));
    let file = |stream: &str| std::fs::File::create(output(stream)).unwrap();
    command
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .process_group(0);
    let mut child = command.spawn().expect("the hostile program runs");
    let kill_group = |pid: u32| {
        let _ = counterhal_conformance::fixtures::send_signal(-(pid as i32), "-KILL");
    };
    let limit = std::time::Duration::from_secs(match under {
        Under::Valgrind => 300,
        _ => 60,
    });
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > limit {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    if status.is_none() {
        // Still running, so its group is still its own.
        kill_group(child.id());
        let _ = child.wait();
    }
    let read = |stream: &str| {
        String::from_utf8_lossy(&std::fs::read(output(stream)).unwrap_or_default()).into_owned()
    };
    let run = CaseRun {
        stdout: read("stdout"),
        stderr: read("stderr"),
    };
    let Some(status) = status else {
        panic!(
            "hostile {case} under {under:?} hung for {limit:?} (a deadlock):\n{}\n{}",
            run.stdout, run.stderr
        );
    };
    assert!(
        status.success() && run.stdout.contains("case passed"),
        "hostile {case} under {under:?} failed ({status}):\n{}\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        !run.stderr.contains("panicked") && !run.stderr.contains("panic in"),
        "a panic message reached the C caller's standard error:\n{}",
        run.stderr
    );
    run
}

#[test]
fn cpu_lists_naming_cpus_that_do_not_exist_are_refused_at_create() {
    hostile_case("cpu-list", Under::Plain, &[]);
    hostile_case("cpu-list", Under::Address, &[]);
}

#[test]
fn a_thread_cancelled_inside_a_call_ends_without_aborting_the_process() {
    // Under valgrind rather than AddressSanitizer: GCC 12's reports a stack-buffer-underflow
    // inside its own teardown of the cancelled thread (sigaltstack in AsanThread::Destroy,
    // after the forced unwind of the case's instrumented frames), which valgrind, checking
    // the same memory, does not find.
    hostile_case("cancel", Under::Plain, &[]);
    valgrind_or_skip!();
    hostile_case("cancel", Under::Valgrind, &[]);
}

#[test]
fn calls_from_a_pthread_key_destructor_fail_cleanly() {
    for under in [Under::Plain, Under::Address] {
        hostile_case("key-destructor", under, &[]);
    }
    valgrind_or_skip!();
    hostile_case("key-destructor", Under::Valgrind, &[]);
}

#[test]
fn signals_during_region_calls_fail_cleanly_and_never_deadlock() {
    // Several runs: the first region call (the one that initialises) is interrupted in some.
    for _ in 0..5 {
        hostile_case("signals", Under::Plain, &[]);
    }
    hostile_case("signals", Under::Address, &[]);
}

/// perf record's and perf stat's fallback where the kernel may not be counted: an unprivileged
/// caller at `perf_event_paranoid` 2 counts and samples `task-clock` and `page-faults` (no
/// modifier) in user space, as `perf stat -e task-clock` counts `task-clock:u` and
/// `perf record -e page-faults` records `page-faults:u`, under the names given, the domain
/// user space alone; the C API refused both with COUNTERHAL_EPERM.
#[test]
fn events_without_modifiers_count_for_an_unprivileged_caller_as_perf_does() {
    let setpriv = Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if running_as_root() && !setpriv {
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::Tools,
            "setpriv (util-linux) runs the case as nobody"
        );
    }
    let level: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(2);
    if level >= 3 {
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::Privilege,
            "perf_event_paranoid is {level}: no unprivileged counting at all"
        );
    }
    let run = hostile_case("unprivileged", Under::Nobody, &[]);
    if running_as_root() && level >= 2 {
        assert!(
            run.stdout
                .contains("counted task-clock and page-faults in domain 1"),
            "{}",
            run.stdout
        );
    }
}

/// A sample period with bit 63 set and a frequency above `kernel.perf_event_max_sample_rate`
/// are refused naming the value and the limit (perf record `--strict-freq` names the
/// frequency limit); the kernel's bare EINVAL read as a bad event code before.
#[test]
fn sample_rates_the_kernel_refuses_are_named() {
    hostile_case("sample-rates", Under::Plain, &[]);
}

/// Whether this process runs as root (user id 0).
pub fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    })
}

/// The rows of a region table report by region name: the last column (the only event's
/// estimate).
fn report_rows(path: &Path) -> Vec<(String, u64)> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no region report at {}: {e}", path.display()));
    text.lines()
        .skip(1)
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next()?.to_string();
            Some((name, words.last()?.parse().ok()?))
        })
        .collect()
}

#[test]
fn a_child_after_fork_gets_nothing_from_its_parent() {
    for under in [Under::Plain, Under::Address] {
        let report = scratch(&format!("fork-{under:?}.table"));
        let _ = std::fs::remove_file(&report);
        let run = hostile_case(
            "fork",
            under,
            &[("COUNTERHAL_REGION_OUTPUT", report.to_str().unwrap())],
        );
        let child: u32 = run
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("child ")?.split(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("the child did not pass:\n{}", run.stdout));
        // The parent's report is the parent's alone.
        let parent = report_rows(&report);
        let names: Vec<&str> = parent.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["open-at-fork", "parent"], "{parent:?}");
        // The child wrote its own report beside it, counting its own thread's faults.
        let mine = report.with_extension(format!("table.{child}"));
        let rows = report_rows(&mine);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].0, "child");
        assert!(rows[0].1 >= 512, "the child's region counted {rows:?}");
        let _ = std::fs::remove_file(&mine);
    }
}

#[test]
fn sizes_no_buffer_can_hold_are_refused() {
    hostile_case("huge-n", Under::Plain, &[]);
    hostile_case("huge-n", Under::Undefined, &[]);
}

#[test]
fn the_last_error_survives_the_next_failure() {
    for under in [Under::Plain, Under::Address] {
        hostile_case("last-error", under, &[]);
    }
    valgrind_or_skip!();
    hostile_case("last-error", Under::Valgrind, &[]);
}

#[test]
fn threads_signals_and_fork_at_once_stay_clean() {
    hostile_case("threads", Under::Plain, &[]);
    hostile_case("threads", Under::Undefined, &[]);
    // AddressSanitizer's allocator may hold a lock another thread took at the fork: its
    // children of the threaded process leave counterhal alone (POSIX allows them only
    // async-signal-safe calls; glibc's allocator is what makes counterhal work there).
    hostile_case(
        "threads",
        Under::Address,
        &[("HOSTILE_FORK_CHILD_IDLE", "1")],
    );
}
