//! The command under bad input, signals and faults: one test per defect found by trying it as
//! a user would (each named by what it keeps true), on every path where the defect could live.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The target options of `stat`, each a different way of counting: the command itself, every
/// CPU, a CPU list, and an existing process (`{pid}` is replaced by a sleeping process's id).
const PATHS: [&[&str]; 4] = [&[], &["-a"], &["-C", "0"], &["-p", "{pid}"]];

/// The paths of [`PATHS`] this user may count on: whole CPUs only with the privilege for them
/// (else `stat` stops before the command runs, as
/// `counting_what_this_user_may_not_count_stops_as_perf_does` holds).
fn paths() -> impl Iterator<Item = &'static [&'static str]> {
    PATHS
        .into_iter()
        .filter(|path| may_count_cpus() || !path.iter().any(|o| ["-a", "-C"].contains(o)))
}

/// A process to attach `-p` to, killed when dropped.
struct Sleeper(Child);

impl Sleeper {
    fn start() -> Sleeper {
        Sleeper(Command::new("sleep").arg("60").spawn().expect("sleep"))
    }

    /// `path` with `{pid}` replaced by this process's id.
    fn options(&self, path: &[&str]) -> Vec<String> {
        let pid = self.0.id().to_string();
        path.iter()
            .map(|o| {
                if *o == "{pid}" {
                    pid.clone()
                } else {
                    o.to_string()
                }
            })
            .collect()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// Waits for `child` at most `limit`; kills it and fails the test if it has not ended.
fn wait_at_most(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > limit {
            child.kill().ok();
            let out = child.wait_with_output().expect("wait");
            panic!("{what} still ran after {limit:?}; stderr: {}", stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("wait")
}

/// `stat -x, -e task-clock OPTIONS -- sh -c 'echo ready; exec sleep 30'` in a process group
/// of its own (as a terminal runs a job), returned once the command has started.
fn start_measured_sleeper(options: &[String]) -> Child {
    let mut child = signalled_counterhal()
        .args(["stat", "-x", ",", "-e", "task-clock"])
        .args(options)
        .args(["--", "sh", "-c", "echo ready; exec sleep 30"])
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("counterhal");
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut line).expect("read");
    assert_eq!(line, "ready\n", "the command did not start");
    child
}

fn send(signal: &str, to: &str) {
    let pid: i32 = to
        .parse()
        .unwrap_or_else(|_| panic!("kill {signal}: `{to}` is no process"));
    counterhal_conformance::fixtures::send_signal(pid, signal)
        .unwrap_or_else(|e| panic!("kill {signal} {to}: {e}"));
}

/// The task-clock count in `stat -x,` output, which must be there.
fn task_clock_line(out: &Output) -> String {
    let text = stderr(out);
    let field = format!(",{},", label("task-clock"));
    let line = text
        .lines()
        .find(|l| l.contains(&field))
        .unwrap_or_else(|| panic!("no task-clock line in: {text}"));
    line.to_string()
}

/// Defect 1: the command must start with SIGPIPE at its default and no signal blocked (Rust
/// ignores SIGPIPE, and an ignored signal survives exec), on every path.
#[test]
fn the_command_starts_with_sigpipe_at_its_default_and_no_signal_blocked() {
    linux_or_skip!();
    let sleeper = Sleeper::start();
    for path in paths() {
        let options = sleeper.options(path);
        let mut args = vec!["stat", "-e", "task-clock"];
        args.extend(options.iter().map(String::as_str));
        args.extend(["--", "grep", "-E", "^Sig(Ign|Blk):", "/proc/self/status"]);
        let out = counterhal(&args);
        assert!(out.status.success(), "{path:?}: {}", stderr(&out));
        let masks = stdout(&out);
        let mask = |name: &str| {
            let line = masks.lines().find(|l| l.starts_with(name)).expect(name);
            u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
        };
        let sigpipe = 1u64 << (13 - 1);
        assert_eq!(
            mask("SigIgn:") & sigpipe,
            0,
            "{path:?}: SIGPIPE ignored: {masks}"
        );
        assert_eq!(mask("SigBlk:"), 0, "{path:?}: signals blocked: {masks}");
    }
    // The pipeline the defect was found with: `yes`-like output into `head -1` must end.
    let mut child = Command::new(bin())
        .args(["stat", "-e", "page-faults", "--", "sh", "-c"])
        .arg("while :; do echo y; done")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("counterhal");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .expect("read");
    assert_eq!(first, "y\n");
    // The reader is gone: the writer must die of SIGPIPE (128 + 13), not loop on EPIPE.
    let out = wait_at_most(child, Duration::from_secs(20), "`stat -- yes | head -1`");
    assert_eq!(out.status.code(), Some(141), "{}", stderr(&out));
}

/// Defect 5 and the signal hardening: Ctrl-C (SIGINT to the whole group) and SIGTERM to
/// counterhal alone end the command, never counterhal, which prints the counts and passes the
/// command's status on (128 + the signal), on every path.
#[test]
fn interrupted_or_terminated_the_counts_are_still_printed_on_every_path() {
    linux_or_skip!();
    let sleeper = Sleeper::start();
    for path in paths() {
        let options = sleeper.options(path);
        for (signal, to_group, status) in [("-INT", true, 130), ("-TERM", false, 143)] {
            let child = start_measured_sleeper(&options);
            let pid = child.id();
            let to = if to_group {
                format!("-{pid}")
            } else {
                pid.to_string()
            };
            send(signal, &to);
            let what = format!("stat {path:?} after kill {signal} {to}");
            let out = wait_at_most(child, Duration::from_secs(20), &what);
            assert_eq!(out.status.code(), Some(status), "{what}: {}", stderr(&out));
            let line = task_clock_line(&out);
            let value = line.split(',').next().unwrap();
            assert!(
                // perf's CSV: the clock in milliseconds.
                value.parse::<f64>().is_ok() || value == "<not counted>",
                "{what}: {line}"
            );
        }
    }
    // No measured command is left behind.
    let left = Command::new("pgrep")
        .args(["-f", "exec sleep 30"])
        .output()
        .map(|o| stdout(&o));
    if let Ok(left) = left {
        assert!(left.trim().is_empty(), "commands left running: {left}");
    }
}

/// Defect 13: a command that cannot be run exits as a shell says (127 not found, 126 not
/// executable) on every path, as `--help` documents.
#[test]
fn a_command_that_cannot_run_exits_as_a_shell_says_on_every_path() {
    linux_or_skip!();
    let sleeper = Sleeper::start();
    let help = stdout(&counterhal(&["--help"]));
    assert!(
        help.contains("127 when it was not found, 126 when it could not be executed"),
        "{help}"
    );
    // A file without execute permission, and a directory: found, but not executable.
    let plain = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-plain-{}", std::process::id()));
    std::fs::write(&plain, "true\n").unwrap();
    let plain = plain.to_str().unwrap().to_string();
    for path in paths() {
        let options = sleeper.options(path);
        for (command, status) in [
            ("/nonexistent/program", 127),
            ("no-such-program-anywhere", 127),
            (plain.as_str(), 126),
            ("/", 126),
        ] {
            let mut args = vec!["stat", "-e", "task-clock"];
            args.extend(options.iter().map(String::as_str));
            args.extend(["--", command]);
            let out = counterhal(&args);
            assert_eq!(
                out.status.code(),
                Some(status),
                "stat {path:?} -- {command}: {}",
                stderr(&out)
            );
            assert!(stderr(&out).contains("hint:"), "{}", stderr(&out));
        }
    }
    std::fs::remove_file(&plain).ok();
}

/// Issue 55, item 13: a program given by a path that cannot be executed is named, with the
/// reason, where the error said only "exec of the command" (a name looked up in `$PATH` was
/// already named: "command not found").
/// Oracle: perf 6.1's `Workload failed: REASON` for the same command: our message holds its
/// reason, and the path.
#[test]
fn a_command_that_cannot_run_is_named_with_perfs_reason() {
    linux_or_skip!();
    perf_or_skip!();
    let plain = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-unrunnable-{}", std::process::id()));
    std::fs::write(&plain, "true\n").unwrap();
    for command in ["/nonexistent/program", plain.to_str().unwrap(), "/"] {
        let perf = perf(&["--", command]);
        let perf_text = stderr(&perf);
        let reason = perf_text
            .lines()
            .find_map(|l| l.strip_prefix("Workload failed: "))
            .unwrap_or_else(|| panic!("perf -- {command} gave no reason: {perf_text}"));
        let out = counterhal(&["stat", "--", command]);
        let text = stderr(&out);
        assert!(
            text.contains(&format!("exec of {command}: {reason}")),
            "stat -- {command}: ours: {text}perf: {perf_text}"
        );
    }
    std::fs::remove_file(&plain).ok();
}

/// A program whose extra threads come and go, for `-p`: `None` without a C compiler.
fn thread_churn_program(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    compile_c(
        dir,
        "churn",
        "#include <pthread.h>\n#include <unistd.h>\n\
         static void *brief(void *arg) { return arg; }\n\
         int main(void) { for (;;) { pthread_t t[8];\n\
           for (int i = 0; i < 8; i++) pthread_create(&t[i], 0, brief, 0);\n\
           for (int i = 0; i < 8; i++) pthread_join(t[i], 0); } }\n",
        &["-O1", "-pthread"],
    )
}

/// Defect 4: `-p` on a process whose threads come and go never fails because one exited while
/// its counters were being opened: such a thread is skipped.
#[test]
fn attaching_to_a_process_whose_threads_come_and_go_always_counts() {
    linux_or_skip!();
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-churn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let Some(program) = thread_churn_program(&dir) else {
        std::fs::remove_dir_all(&dir).ok();
        skip!(
            Need::Tools,
            "no C compiler (cc) to build the thread churner"
        );
    };
    let mut churn = Command::new(&program).spawn().expect("churn");
    std::thread::sleep(Duration::from_millis(50));
    let pid = churn.id().to_string();
    let mut failures = Vec::new();
    for _ in 0..30 {
        let out = counterhal(&[
            "stat",
            "-x",
            ",",
            "-p",
            &pid,
            "-e",
            "task-clock",
            "--",
            "true",
        ]);
        if !out.status.success() {
            failures.push(stderr(&out));
        }
    }
    churn.kill().ok();
    churn.wait().ok();
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        failures.is_empty(),
        "{} of 30 runs failed: {:?}",
        failures.len(),
        failures
    );
}

/// Runs `command` (from [`unprivileged`]) with `args`.
fn run_as(mut command: Command, args: &[&str]) -> Output {
    command
        .args(args)
        .env_remove("COUNTERHAL_EVENTS")
        .output()
        .expect("run counterhal unprivileged")
}

/// Defect 6: an unprivileged user at `perf_event_paranoid` 2 gets perf's fallback: the
/// software events count user space only, labelled `:u`, said once under the table.
#[test]
fn unprivileged_users_count_user_space_as_perf_does() {
    linux_or_skip!();
    let as_user = unprivileged_or_skip!();
    let level = paranoid().unwrap_or(2);
    if level >= 3 {
        skip!(
            Need::Privilege,
            "perf_event_paranoid is {level}: no unprivileged counting at all"
        );
    }
    let out = run_as(as_user, &["stat", "--", "true"]);
    let text = stderr(&out);
    assert!(out.status.success(), "{text}");
    let suffix = if level >= 2 { ":u" } else { "" };
    for event in [
        "task-clock",
        "context-switches",
        "cpu-migrations",
        "page-faults",
    ] {
        let label = format!("{event}{suffix}");
        let line = text
            .lines()
            // The value, perf's unit for a clock, the name, then the metric column.
            .find(|l| l.split_whitespace().any(|word| word == label))
            .unwrap_or_else(|| panic!("no `{label}` line in:\n{text}"));
        assert!(!line.contains("<not"), "{line}");
    }
    let notes = text.matches("user space only").count();
    assert_eq!(notes, usize::from(level >= 2), "{text}");
}

/// An event the fallback counts in user space only is named as perf names it, and so is one
/// the user gave a modifier: `-x,`'s name column is perf's, event for event (`task-clock:u`
/// for `-e task-clock` at `perf_event_paranoid` 2; the bare name where the kernel counts),
/// though the library keeps the name as given.
/// Oracle: perf 6.1 (linux-perf) run the same way, as the same unprivileged user.
#[test]
fn the_fallback_names_events_as_perf_does() {
    linux_or_skip!();
    perf_or_skip!();
    let as_user = unprivileged_or_skip!();
    let args = [
        "stat",
        "-x,",
        "-e",
        "task-clock,page-faults:u,context-switches",
        "--",
        "true",
    ];
    let perf = unprivileged_program("perf")
        .unwrap()
        .args(args)
        .output()
        .expect("perf");
    let ours = run_as(as_user, &args);
    let names = |out: &Output| -> Vec<String> {
        result_lines(out)
            .iter()
            .filter_map(|line| line.split(',').nth(2).map(str::to_string))
            .collect()
    };
    let seen = format!("ours:\n{}\nperf:\n{}", stderr(&ours), stderr(&perf));
    assert!(ours.status.success() && perf.status.success(), "{seen}");
    assert_eq!(names(&ours).len(), 3, "{seen}");
    assert_eq!(names(&ours), names(&perf), "{seen}");
}

/// Issue 55, item 8: what this user may not count (whole CPUs above perf_event_paranoid 0,
/// the kernel above 1) stops `stat` before the command runs: exit 1, naming the permission,
/// the setting and CAP_PERFMON, where it printed `<not supported>` for every event and
/// exited 0.
/// Oracle: perf 6.1 run the same way, as the same user: where it stops, so do we; where it
/// counts, so do we.
#[test]
fn counting_what_this_user_may_not_count_stops_as_perf_does() {
    linux_or_skip!();
    perf_or_skip!();
    unprivileged_or_skip!();
    let cases: [&[&str]; 3] = [
        &["-a"],
        &["-C", "0", "-e", "page-faults"],
        &["-e", "task-clock,page-faults:k"],
    ];
    for case in cases {
        let mut args = vec!["stat"];
        args.extend(case);
        args.extend(["--", "sh", "-c", "echo ran"]);
        let perf = unprivileged_program("perf")
            .unwrap()
            .args(&args)
            .output()
            .expect("perf");
        let ours = run_as(unprivileged().unwrap(), &args);
        let (text, perf_text) = (stderr(&ours), stderr(&perf));
        let seen = format!("{case:?}: ours:\n{text}\nperf:\n{perf_text}");
        if perf.status.success() {
            assert!(ours.status.success(), "{seen}");
            continue;
        }
        assert_eq!(ours.status.code(), Some(1), "{seen}");
        for needed in ["permission denied", "perf_event_paranoid", "CAP_PERFMON"] {
            assert!(text.contains(needed), "no `{needed}`: {seen}");
        }
        assert!(!text.contains("<not supported>"), "{seen}");
        assert_eq!(stdout(&ours), stdout(&perf), "the command ran: {seen}");
    }
}

/// Defect 7: a user without permission to count the kernel is told what is countable for it:
/// `info` claims no event it cannot open, `check` fails no case for lack of permission.
#[test]
fn permission_limits_are_never_claimed_or_failed() {
    linux_or_skip!();
    let as_user = unprivileged_or_skip!();
    let count = |out: &Output| -> usize {
        let text = stdout(out);
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("linux"))
            .unwrap_or_else(|| panic!("no linux line: {text}"));
        line.split("; ")
            .find_map(|part| part.strip_suffix(" generalized events")?.parse().ok())
            .unwrap_or_else(|| panic!("no count in: {line}"))
    };
    let claimed = count(&run_as(as_user, &["info"]));
    if running_as_root() {
        let root = count(&counterhal(&["info"]));
        assert!(
            claimed <= root,
            "unprivileged claims {claimed}, root {root}"
        );
    }
    // The suite opens breakpoints (exact counts, the slots a thread holds).
    let _slots = breakpoint_slots_alone();
    let out = run_as(unprivileged().unwrap(), &["check", "--backend", "linux"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(!text.contains(" FAIL "), "{text}");
}

/// Defect 9: `-p` names what is wrong in a command-line user's words: another user's process
/// is a permission error about that process (exit 1), a process that does not exist is bad
/// input (exit 2), and neither blames `perf_event_paranoid` or names a library type.
#[test]
fn attaching_to_a_process_says_what_is_wrong_with_it() {
    linux_or_skip!();
    for pid in ["4294967295", "2147483647"] {
        let out = counterhal(&["stat", "-p", pid, "-e", "task-clock", "--", "true"]);
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(
            text.contains(&format!("no process {pid} is running here")),
            "{text}"
        );
        assert!(!text.contains("Target::"), "{text}");
    }
    let as_user = unprivileged_or_skip!();
    let out = run_as(
        as_user,
        &["stat", "-p", "1", "-e", "task-clock", "--", "true"],
    );
    let text = stderr(&out);
    if out.status.success() {
        skip!(
            Need::System,
            "this user may attach to process 1 here (it runs as the same user)"
        );
    }
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("process 1 belongs to another user"), "{text}");
    assert!(!text.contains("perf_event_paranoid"), "{text}");
}

/// `stat -x, -e task-clock ARGS` with its output in files (a timer it leaves behind cannot
/// hold a pipe) and in a process group of its own, killed whole if it runs past 20 s; its
/// exit status and standard error.
fn stat_in_time(args: &[String]) -> (std::process::ExitStatus, String) {
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-ends-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let err = dir.join("stderr");
    let mut child = signalled_counterhal()
        .args(["stat", "-x", ",", "-e", "task-clock"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .process_group(0)
        .spawn()
        .expect("counterhal");
    let start = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = counterhal_conformance::fixtures::send_signal(-(child.id() as i32), "-KILL");
            child.wait().ok();
            panic!("stat {args:?} still ran after 20 s (the counted processes had ended)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().expect("wait");
    (status, std::fs::read_to_string(&err).unwrap_or_default())
}

/// `stat -p PID` (or `-t TID`) without a command ends when what it counts has ended, as perf
/// stat does (builtin-stat.c's is_target_alive, looked at each interval): alone, with -I,
/// for several processes of which one ends later, and for a thread; before, counterhal counted
/// on until Ctrl-C. A process that has ended but is not yet waited for (a zombie) has ended.
#[test]
fn attached_counting_ends_when_the_attached_processes_end_as_perf_s_does() {
    linux_or_skip!();
    let paths: [&[&str]; 4] = [
        &["-p", "{a}"],
        &["-I", "100", "-p", "{a}"],
        &["-p", "{a},{b}"],
        &["-t", "{a}"],
    ];
    for path in paths {
        // Long enough for the debug build to attach before it ends.
        let mut a = Command::new("sleep").arg("1").spawn().expect("sleep");
        let mut b = Command::new("sleep").arg("1.5").spawn().expect("sleep");
        let args: Vec<String> = path
            .iter()
            .map(|o| {
                o.replace("{a}", &a.id().to_string())
                    .replace("{b}", &b.id().to_string())
            })
            .collect();
        // Neither sleep is waited for until counterhal ends: each ends as a zombie.
        let (status, text) = stat_in_time(&args);
        a.wait().ok();
        b.wait().ok();
        assert!(status.success(), "{args:?}: {text}");
        assert!(text.contains(",task-clock"), "{args:?}: {text}");
    }
}

/// Defect 3: a comma inside a PMU event's `/.../` separates terms, not events.
#[test]
fn commas_inside_pmu_terms_do_not_split_the_event_list() {
    linux_or_skip!();
    if !std::path::Path::new("/sys/bus/event_source/devices/msr/format/event").exists() {
        skip!(Need::System, "no msr PMU with an `event` term here");
    }
    let pmu_event = "msr/event=0x0,config1=0/";
    let list = format!("{pmu_event},page-faults");
    let out = counterhal(&["stat", "-x", ",", "-e", &list, "--", "true"]);
    let text = stderr(&out);
    assert!(out.status.success(), "{text}");
    let names: Vec<&str> = text.lines().filter_map(|l| l.split(',').nth(2)).collect();
    // The CSV fields are value,unit,event,...: the event's own commas make more fields, so
    // look for the event's text on its line (counted or not: the msr PMU may refuse a user
    // without privileges, which is no matter here).
    assert!(text.lines().any(|l| l.contains(pmu_event)), "{text}");
    assert!(names.contains(&label("page-faults").as_str()), "{text}");
    assert_eq!(text.lines().count(), 2, "{text}");
}

/// Defect 8: as root, counterhal mounts tracefs where it is absent, as perf does, so listing
/// and counting tracepoints depend on no earlier test or tool having mounted it. Checked in a
/// private mount namespace, so no other test sees tracefs come and go.
#[test]
fn tracefs_is_mounted_when_absent() {
    linux_or_skip!();
    if !running_as_root() {
        skip!(Need::Privilege, "mounting tracefs needs root");
    }
    let script = format!(
        "umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; \
         if [ -d /sys/kernel/tracing/events ]; then echo still mounted; exit 3; fi; \
         {bin} list && {bin} stat -x, -e syscalls:sys_enter_getpid -- true",
        bin = bin().display()
    );
    let out = Command::new("unshare")
        .args(["--mount", "sh", "-c", &script])
        .output();
    let Ok(out) = out else {
        skip!(Need::Tools, "no unshare (Debian's util-linux)");
    };
    if out.status.code() == Some(3) || stderr(&out).contains("unshare failed") {
        skip!(
            Need::System,
            "tracefs could not be unmounted in a private namespace"
        );
    }
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("syscalls:sys_enter_getpid"),
        "no tracepoints listed"
    );
    assert!(
        stderr(&out).contains(",syscalls:sys_enter_getpid,"),
        "{}",
        stderr(&out)
    );
}

/// Runs counterhal with `args`, its standard output and error going to `/dev/full`.
fn with_full_streams(args: &[&str], stdout_full: bool, stderr_full: bool) -> Output {
    let full = || {
        std::fs::File::options()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let mut command = Command::new(bin());
    command.args(args);
    if stdout_full {
        command.stdout(full());
    }
    if stderr_full {
        command.stderr(full());
    }
    command.output().expect("counterhal")
}

/// Defect 10: a write that fails is a failure that loses nothing, never a panic or a success;
/// what can be checked before the work (`check --json`'s file) is checked first.
#[test]
fn output_that_cannot_be_written_is_a_failure_that_loses_nothing() {
    linux_or_skip!();
    if !std::path::Path::new("/dev/full").exists() {
        skip!(Need::System, "no /dev/full to fill");
    }
    // The -o file is full: the table still reaches standard error, and the status says so.
    let out = counterhal(&[
        "stat",
        "-o",
        "/dev/full",
        "-e",
        "task-clock",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("task-clock") && text.contains("exited with status 3"),
        "{text}"
    );
    assert!(text.contains("cannot write /dev/full"), "{text}");
    // Standard error is full: no panic (101), a failure.
    let out = with_full_streams(&["stat", "-e", "task-clock", "--", "true"], false, true);
    assert_eq!(out.status.code(), Some(1));
    let out = with_full_streams(&["stat", "-e", "no-such-event", "--", "true"], false, true);
    assert_eq!(out.status.code(), Some(2));
    // Standard output is full.
    for args in [
        &["list"][..],
        &["info"],
        &["encode", "page-faults"],
        &["--help"],
    ] {
        let out = with_full_streams(args, true, false);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
    }
    // A report file that cannot be written is refused before the suite runs.
    let start = Instant::now();
    let out = counterhal(&["check", "--json", "/nonexistent/dir/r.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("/nonexistent/dir/r.json"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty(), "the suite ran: {}", stdout(&out));
    eprintln!("check refused its report file in {:?}", start.elapsed());
}

/// Defect 11: `-o FILE` keeps what the file held until there are results to put in it.
#[test]
fn an_output_file_is_kept_until_there_are_results() {
    linux_or_skip!();
    let path = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-keep-{}", std::process::id()));
    let file = path.to_str().unwrap();
    std::fs::write(&path, "earlier results\n").unwrap();
    for (args, status) in [
        (&["-e", "no-such-event", "--", "true"][..], 2),
        (&["-e", "task-clock", "--", "/nonexistent/program"], 127),
        (&["-e", "task-clock", "-I", "5", "--", "true"], 2),
        (&["-e", "task-clock", "-C", "4096", "--", "true"], 2),
    ] {
        let mut all = vec!["stat", "-o", file];
        all.extend(args);
        let out = counterhal(&all);
        assert_eq!(
            out.status.code(),
            Some(status),
            "{args:?}: {}",
            stderr(&out)
        );
        let kept = std::fs::read_to_string(&path).unwrap();
        assert_eq!(kept, "earlier results\n", "{args:?} changed the file");
    }
    let out = counterhal(&[
        "stat",
        "-o",
        file,
        "-x",
        ",",
        "-e",
        "task-clock",
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    let field = format!(",{},", label("task-clock"));
    assert!(
        written.contains(&field) && !written.contains("earlier"),
        "{written}"
    );
}

/// Defect 14: out of file descriptors (one per event on Linux) stops the measurement naming
/// the limit and how to raise it, instead of showing events as not supported and exiting 0.
#[test]
fn running_out_of_file_descriptors_names_the_limit() {
    linux_or_skip!();
    let events = vec!["page-faults"; 200].join(",");
    // Whole CPUs only where this process may count them (else each open is refused first).
    let paths: &[&[&str]] = if may_count_cpus() {
        &[&[], &["-a"]]
    } else {
        &[&[]]
    };
    for path in paths {
        let script = format!(
            "ulimit -n 64 && exec {} stat -x, -e {events} {} -- true",
            bin().display(),
            path.join(" ")
        );
        let out = Command::new("sh").args(["-c", &script]).output().unwrap();
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{path:?}: {text}");
        assert!(text.contains("too many open files"), "{path:?}: {text}");
        assert!(
            text.contains("is 64") && text.contains("ulimit -n"),
            "{path:?}: {text}"
        );
        assert!(!text.contains("<not supported>"), "{path:?}: {text}");
    }
}

/// Defects 15 and 16: names that can never be events are unknown events (exit 2, naming
/// what is wrong), never sent to the kernel or shown as not supported.
#[test]
fn malformed_tracepoints_and_breakpoints_are_unknown_events() {
    linux_or_skip!();
    let overlong = format!("x:{}", "a".repeat(4100));
    for (event, why) in [
        (overlong.as_str(), "unknown event"),
        ("mem:0x0:", "nothing after `:`"),
        ("mem:0x1000::", "nothing after `:`"),
        ("mem:0x1000:x:", "nothing after the last `:`"),
    ] {
        let out = counterhal(&["stat", "-e", event, "--", "true"]);
        let text = stderr(&out);
        let shown = &event[..event.len().min(40)];
        assert_eq!(out.status.code(), Some(2), "{shown}: {text}");
        assert!(text.contains(why), "{shown}: {text}");
        assert!(!text.contains("not supported"), "{shown}: {text}");
    }
    // `mem:ADDR` alone is read-write, as perf reads it.
    let out = counterhal(&["encode", "--json", "mem:0x1000"]);
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(value[0]["bp_type"], 3, "{value}");
}

/// Reads `child`'s standard error line by line on a thread of its own: each line with how
/// long after `started` it arrived.
fn stderr_lines(
    child: &mut Child,
    started: Instant,
) -> std::sync::mpsc::Receiver<(Duration, String)> {
    let (sender, lines) = std::sync::mpsc::channel();
    let err = BufReader::new(child.stderr.take().expect("stderr piped"));
    std::thread::spawn(move || {
        for line in err.lines().map_while(Result::ok) {
            if sender.send((started.elapsed(), line)).is_err() {
                break;
            }
        }
    });
    lines
}

/// The first line holding `what` within `limit`, with when it came (`None`: none came).
fn first_line_with(
    lines: &std::sync::mpsc::Receiver<(Duration, String)>,
    what: &str,
    limit: Duration,
) -> Option<(Duration, String)> {
    let until = Instant::now() + limit;
    loop {
        let left = until.checked_duration_since(Instant::now())?;
        let (at, line) = lines.recv_timeout(left).ok()?;
        if line.contains(what) {
            return Some((at, line));
        }
    }
}

/// Issue 25, defect 3: `-I` prints each interval as it ends (perf's oracle: `perf stat -I 500
/// -- sleep 2` prints its first line at 0.5 s), in the table, `-x` and `-j`, on a command and
/// on a process attached to with `-p` (which has no end of its own until Ctrl-C): the first
/// interval of 200 ms arrives while the 30 s command still runs (so a SIGKILL later would not
/// lose it).
#[test]
fn each_interval_is_printed_as_it_ends_in_every_layout() {
    linux_or_skip!();
    let sleeper = Sleeper::start();
    let pid = sleeper.0.id().to_string();
    let clock = label("task-clock");
    for layout in [&[][..], &["-x", ","][..], &["-j"][..]] {
        for target in [&["--", "sleep", "30"][..], &["-p", pid.as_str()][..]] {
            let started = Instant::now();
            let mut child = Command::new(bin())
                .args(["stat", "-I", "200", "-e", "task-clock"])
                .args(layout)
                .args(target)
                .stderr(Stdio::piped())
                .spawn()
                .expect("counterhal");
            let lines = stderr_lines(&mut child, started);
            let first = first_line_with(&lines, &clock, Duration::from_secs(15));
            // Ended as `kill` ends it (SIGKILL would leave -p's timer behind).
            send("-TERM", &child.id().to_string());
            wait_at_most(child, Duration::from_secs(20), "stat -I after SIGTERM");
            let what = format!("stat -I 200 {layout:?} {target:?}");
            let (at, line) = first.unwrap_or_else(|| panic!("{what}: no interval within 15 s"));
            assert!(at < Duration::from_secs(15), "{what}: {at:?}: {line}");
            // The 200 ms interval's end time starts the line (`-j`: its `interval` key).
            assert!(
                line.trim_start().starts_with("0.") || line.contains("\"interval\" : 0."),
                "{what}: {line}"
            );
        }
    }
}

/// The peak resident memory (`VmHWM`, in kB) of process `pid`.
fn peak_memory_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Issue 25, defect 3: `-I` keeps what the end and `--plot` need in bounded memory, not every
/// interval: counting 30 events every 10 ms with `--plot`, the peak memory after the 600th
/// interval is that after the 50th (every interval kept grew it by kilobytes: megabytes here).
/// Measured by intervals printed, not by time.
#[test]
fn intervals_are_kept_in_bounded_memory() {
    linux_or_skip!();
    let events = [
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
        "minor-faults",
        "major-faults",
        "cpu-clock",
        "alignment-faults",
        "emulation-faults",
        "duration_time",
    ]
    .repeat(3)
    .join(",");
    let plot = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-bounded-{}.svg", std::process::id()));
    let started = Instant::now();
    // In a process group of its own, which is killed whole at the end: counterhal and the
    // command it measures (killing counterhal alone left `sleep 600` behind).
    let mut child = Command::new(bin())
        .args(["stat", "-x", ",", "-I", "10", "-e", &events, "--plot"])
        .arg(&plot)
        .args(["--", "sleep", "600"])
        .process_group(0)
        .stderr(Stdio::piped())
        .spawn()
        .expect("counterhal");
    let group = format!("-{}", child.id());
    let lines = stderr_lines(&mut child, started);
    let clock = format!(",{},", label("cpu-clock"));
    // Three lines of each interval hold cpu-clock: the 50th interval ends at the 150th.
    let mut peaks = Vec::new();
    for seen in 1..=1800 {
        if first_line_with(&lines, &clock, Duration::from_secs(20)).is_none() {
            send("-KILL", &group);
            child.wait().ok();
            panic!("interval line {seen} not printed within 20 s of the one before");
        }
        if seen == 150 || seen == 1800 {
            peaks.push(peak_memory_kb(child.id()));
        }
    }
    send("-KILL", &group);
    child.wait().ok();
    std::fs::remove_file(&plot).ok();
    let (early, late) = (peaks[0], peaks[1]);
    eprintln!("peak memory: {early} kB after 50 intervals, {late} kB after 600");
    assert!(
        late <= early + 2048,
        "peak memory grew from {early} kB after 50 intervals to {late} kB after 600"
    );
}

/// `stat -x, -e task-clock ARGS` in a process group of its own, returned once `marker` is
/// printed on standard output (by the command or a `--pre`/`--post` hook).
fn start_until(args: &[&str], marker: &str) -> Child {
    let mut child = signalled_counterhal()
        .args(["stat", "-x", ",", "-e", "task-clock"])
        .args(args)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("counterhal");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while line.trim_end() != marker {
        line.clear();
        if out.read_line(&mut line).expect("read") == 0 {
            let out = child.wait_with_output().expect("wait");
            panic!("{args:?}: `{marker}` never printed: {}", stderr(&out));
        }
    }
    // Whatever the hooks print later goes nowhere.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    child
}

/// Issue 25, defect 8: a signal ends the whole measurement at every phase of `-r` (a run, its
/// `--pre`, its `--post`, `-I`), not just the phase it lands in: counterhal ends promptly,
/// prints the runs counted so far, and exits as the README says, with the command's status
/// (128 + the signal) after a run, and 128 + the signal where no command was running. Ctrl-C
/// (SIGINT to the whole group) and SIGTERM, SIGHUP, SIGQUIT to counterhal alone.
#[test]
fn a_signal_ends_the_whole_measurement_at_every_phase() {
    linux_or_skip!();
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-phases-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let flag = dir.join("second");
    // The second run's --pre waits; the first only leaves a mark.
    let second_pre = format!(
        "if [ -e {0} ]; then echo waiting; exec sleep 30; fi; touch {0}",
        flag.display()
    );
    let waiting = "echo waiting; exec sleep 30";
    let run = ["--", "sh", "-c", "echo waiting; exec sleep 30"];
    let quick = ["--", "true"];
    let phases: [(&str, Vec<&str>); 4] = [
        ("run", [&["-r", "10"][..], &run[..]].concat()),
        ("-I", [&["-I", "100"][..], &run[..]].concat()),
        (
            "post",
            [&["-r", "10", "--post", waiting][..], &quick[..]].concat(),
        ),
        (
            "pre",
            [&["-r", "10", "--pre", &second_pre][..], &quick[..]].concat(),
        ),
    ];
    for (phase, args) in &phases {
        for (signal, number, to_group) in [
            ("-INT", 2, true),
            ("-TERM", 15, false),
            ("-HUP", 1, false),
            ("-QUIT", 3, false),
        ] {
            std::fs::remove_file(&flag).ok();
            let child = start_until(args, "waiting");
            let pid = child.id();
            let started = Instant::now();
            let to = if to_group {
                format!("-{pid}")
            } else {
                pid.to_string()
            };
            send(signal, &to);
            let what = format!("{phase}: kill {signal} {to} during stat {args:?}");
            let out = wait_at_most(child, Duration::from_secs(20), &what);
            let took = started.elapsed();
            // Nine more runs (or the 30 s sleep) would take far longer.
            assert!(took < Duration::from_secs(10), "{what}: took {took:?}");
            let status = 128 + number;
            assert_eq!(out.status.code(), Some(status), "{what}: {}", stderr(&out));
            // What was counted is printed: one run (the one interrupted, or the one before);
            // with -I the interval's time comes first.
            let line = task_clock_line(&out);
            let value = line.split(',').nth(usize::from(*phase == "-I")).unwrap();
            assert!(value.parse::<f64>().is_ok(), "{what}: {line}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue 25, defect 13: `--log-fd N` writes to descriptor N itself (perf's rule), not to a
/// reopened `/dev/fd/N`: a descriptor open for reading only is refused naming it (the file
/// the caller opened stays as it was), and a socket gets the results (reopening it fails).
#[test]
fn log_fd_writes_to_the_descriptor_itself_and_refuses_a_read_only_one() {
    linux_or_skip!();
    let path = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-logfd-{}", std::process::id()));
    std::fs::write(&path, "input\n").unwrap();
    let script = format!(
        "exec {} stat -x, -e task-clock --log-fd 3 -- true 3<{}",
        bin().display(),
        path.display()
    );
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(text, "input\n", "a read-only descriptor was written to");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("--log-fd 3") && said.contains("writing"),
        "{said}"
    );

    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let script = format!(
        "exec {} stat -x, -e task-clock --log-fd 3 -- true 3>&1",
        bin().display()
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    ours.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut results = String::new();
    std::io::Read::read_to_string(&mut &ours, &mut results).ok();
    assert!(results.contains(&label("task-clock")), "{results:?}");
}

/// Issue 25, defect 13: `--plot` that cannot be written is a failure, as `-o`'s is: a write
/// error (`/dev/full`) exits 1 naming the file, and a path that cannot be created is refused
/// before the command runs (exit 2).
#[test]
fn a_plot_that_cannot_be_written_is_a_failure() {
    linux_or_skip!();
    if std::path::Path::new("/dev/full").exists() {
        let out = ours(&[
            "-I",
            "100",
            "-e",
            "task-clock",
            "--plot",
            "/dev/full",
            "--",
            "sleep",
            "0.3",
        ]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains("/dev/full"), "{}", stderr(&out));
    }
    let out = ours(&[
        "-I",
        "100",
        "-e",
        "task-clock",
        "--plot",
        "/nonexistent/dir/p.svg",
        "--",
        "sh",
        "-c",
        "echo ran",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!stdout(&out).contains("ran"), "the command ran");
    assert!(
        stderr(&out).contains("/nonexistent/dir/p.svg"),
        "{}",
        stderr(&out)
    );
}
