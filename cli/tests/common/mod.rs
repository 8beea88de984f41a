//! What the command's test files share: running counterhal, its output as text, the skips
//! for a missing perf or linux backend, small C programs built for a test, a serve
//! asked over HTTP ([`served`]) and a podman container's image ([`podman`]).
#![allow(dead_code)] // each test file uses a different part

pub mod podman;
pub mod served;

use std::path::PathBuf;
use std::process::{Command, Output};

/// The command under test: the one Cargo built, or `COUNTERHAL_BIN` (CI's unprivileged leg
/// runs these tests from a copy another user can read).
pub fn bin() -> PathBuf {
    // What the tests leave in the temporary directory goes when this process exits.
    counterhal_conformance::fixtures::clean_up_at_exit();
    std::env::var_os("COUNTERHAL_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_counterhal")))
}

/// The command under test, to be signalled: started as a terminal starts a job, with the
/// signals that end a command (INT, QUIT, TERM, HUP) at their defaults, whatever these tests
/// were started with (`nohup` ignores HUP; a shell without job control starts a background
/// job with INT and QUIT ignored). counterhal leaves an ignored signal ignored, as it says, so
/// a test that signals it would otherwise wait for nothing.
pub fn signalled_counterhal() -> Command {
    signalled(bin())
}

/// `program`, to be signalled, started as [`signalled_counterhal`] starts counterhal (a tool
/// that runs counterhal, such as valgrind, passes the signals on).
pub fn signalled(program: impl AsRef<std::ffi::OsStr>) -> Command {
    use std::os::unix::process::CommandExt;
    let defaults = || {
        for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: signal(2) with a plain disposition, async-signal-safe.
            unsafe { libc::signal(signal, libc::SIG_DFL) };
        }
        Ok(())
    };
    let mut command = Command::new(program);
    // SAFETY: the hook runs in the forked child before exec and only calls signal(2).
    unsafe { command.pre_exec(defaults) };
    command
}

pub fn counterhal(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env_remove("COUNTERHAL_EVENTS")
        .output()
        .expect("run counterhal")
}

/// The user the unprivileged runs are made as: `nobody`.
pub const NOBODY: u32 = 65534;

/// Whether this test process runs as root.
pub fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            == Some("0")
    })
}

/// `kernel.perf_event_paranoid`, where Linux tells.
pub fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Whether this process may count the kernel (root, or `perf_event_paranoid` at most 1):
/// where it may not, counterhal counts events without a modifier in user space, as `NAME:u`.
pub fn may_count_kernel() -> bool {
    running_as_root() || paranoid().is_some_and(|level| level <= 1)
}

/// Whether this process may count whole CPUs (root, or `perf_event_paranoid` at most 0).
pub fn may_count_cpus() -> bool {
    running_as_root() || paranoid().is_some_and(|level| level <= 0)
}

/// How counterhal labels `event` (given without a modifier) for this process: `event`, or
/// `event:u` where counting the kernel is not permitted.
pub fn label(event: &str) -> String {
    if may_count_kernel() {
        event.to_string()
    } else {
        format!("{event}:u")
    }
}

/// A command running counterhal as an unprivileged user: directly when this process is not
/// root, else through `setpriv` as `nobody`, from a copy of the binary that user can read and
/// run (the build directory may not be). `None` when neither is possible (no setpriv).
pub fn unprivileged() -> Option<Command> {
    if !running_as_root() {
        return Some(Command::new(bin()));
    }
    static COPY: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let copy = COPY.get_or_init(readable_copy).clone()?;
    as_nobody(copy)
}

/// `program` run as counterhal is run by [`unprivileged`] (an oracle such as perf, the same
/// way): directly when this process is not root, else through `setpriv` as `nobody`, from `/`.
/// `None` when neither is possible (no setpriv).
pub fn unprivileged_program(program: impl AsRef<std::ffi::OsStr>) -> Option<Command> {
    if !running_as_root() {
        return Some(Command::new(program));
    }
    as_nobody(program)
}

/// `program` through `setpriv` as `nobody`, from `/`; `None` without a working setpriv.
fn as_nobody(program: impl AsRef<std::ffi::OsStr>) -> Option<Command> {
    let works = Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !works {
        return None;
    }
    let mut command = Command::new("setpriv");
    command
        .arg(format!("--reuid={NOBODY}"))
        .arg(format!("--regid={NOBODY}"))
        .arg("--clear-groups")
        .arg(program)
        .current_dir("/");
    Some(command)
}

/// A copy of the binary every user can read and run: one per build, reused by every test and
/// run; older builds' copies are removed when a new one is made.
fn readable_copy() -> Option<PathBuf> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = counterhal_conformance::fixtures::temp_dir().join("counterhal-nobody");
    let built = std::fs::metadata(bin()).ok()?;
    let copy = dir.join(format!("counterhal-{}-{}", built.len(), built.mtime()));
    if copy.exists() {
        return Some(copy);
    }
    std::fs::create_dir_all(&dir).ok()?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).ok()?;
    for old in std::fs::read_dir(&dir).ok()?.flatten() {
        std::fs::remove_file(old.path()).ok();
    }
    // Copied under another name first, so that no one ever runs half a file.
    let partial = dir.join(format!("partial-{}", std::process::id()));
    std::fs::copy(bin(), &partial).ok()?;
    std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o755)).ok()?;
    std::fs::rename(&partial, &copy).ok()?;
    Some(copy)
}

/// Skips the running test where tracefs is readable by root only and this is not root (as
/// root counterhal mounts it where it is absent).
#[macro_export]
macro_rules! tracepoints_or_skip {
    () => {
        if !running_as_root() && std::fs::read_dir("/sys/kernel/tracing/events").is_err() {
            skip!(
                Need::Privilege,
                "tracefs is readable by root only here (perf reads no tracepoints either)"
            );
        }
    };
}

/// Skips the running test unless counterhal can be run as an unprivileged user here.
#[macro_export]
macro_rules! unprivileged_or_skip {
    () => {
        match unprivileged() {
            Some(command) => command,
            None => skip!(
                Need::Tools,
                "cannot run as an unprivileged user: no setpriv (Debian's util-linux)"
            ),
        }
    };
}

/// `perf stat ARGS`, the installed perf as the oracle.
pub fn perf(args: &[&str]) -> Output {
    Command::new("perf")
        .arg("stat")
        .args(args)
        .output()
        .expect("run perf")
}

/// `counterhal stat ARGS`.
pub fn ours(args: &[&str]) -> Output {
    let mut words = vec!["stat"];
    words.extend_from_slice(args);
    counterhal(&words)
}

/// The result lines of a `-x,` or `-j` run (perf may add blank lines and notes).
pub fn result_lines(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| l.contains(',') && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Whether `perf` runs here.
pub fn perf_available() -> bool {
    Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Skips the running test unless `perf` runs here: a missing tool, which
/// `COUNTERHAL_REQUIRE=tools` (set where the tools are installed, as in CI) makes a failure.
#[macro_export]
macro_rules! perf_or_skip {
    () => {
        if !perf_available() {
            skip!(
                Need::Tools,
                "perf is not installed (apt-get install linux-perf)"
            );
        }
    };
}

/// Skips the running test unless the linux backend is usable here.
#[macro_export]
macro_rules! linux_or_skip {
    () => {
        if !linux_usable() {
            skip!(Need::System, "the linux backend is not usable here");
        }
    };
}

/// Skips the running test unless this process may count whole CPUs (`counterhal serve`'s job).
#[macro_export]
macro_rules! serve_or_skip {
    () => {
        linux_or_skip!();
        if !may_count_cpus() {
            skip!(
                Need::Privilege,
                "counting every CPU takes root or perf_event_paranoid <= 0"
            );
        }
    };
}

/// `counterhal stat --json -p PID -e EVENTS -- sleep SECONDS`: count a live process for a while.
pub fn stat_attached(pid: &str, events: &str, seconds: &str) -> Output {
    counterhal(&[
        "stat", "--json", "-p", pid, "-e", events, "--", "sleep", seconds,
    ])
}

pub fn linux_usable() -> bool {
    let out = counterhal(&["info"]);
    stdout(&out)
        .lines()
        .any(|l| l.trim_start().starts_with("linux") && l.contains(" usable"))
}

/// Compiles `source` (C) into `dir/name` with `flags`; `None` when there is no working `cc`.
pub fn compile_c(
    dir: &std::path::Path,
    name: &str,
    source: &str,
    flags: &[&str],
) -> Option<std::path::PathBuf> {
    let source_path = dir.join(format!("{name}.c"));
    let program = dir.join(name);
    std::fs::write(&source_path, source).ok()?;
    let built = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&program)
        .arg(&source_path)
        .status()
        .ok()?;
    built.success().then_some(program)
}

/// Whether this machine has a core PMU, found as perf finds one: `cpu`, or any PMU with a `cpus`
/// file (`cpu_core` and `cpu_atom` on hybrid Intel chips, `armv8_pmuv3` on Arm).
pub fn has_core_pmu() -> bool {
    let devices = std::path::Path::new("/sys/bus/event_source/devices");
    std::fs::read_dir(devices).is_ok_and(|entries| {
        entries
            .filter_map(|e| e.ok())
            .any(|e| e.file_name() == "cpu" || e.path().join("cpus").is_file())
    })
}

/// The prefix that runs a workload on CPU 0 alone (`taskset -c 0`, util-linux), for the tests
/// that compare the BPF mode's per-cgroup counts exactly with perf's.
///
/// Why: the BPF mode (as perf's `--bpf-counters`) counts from one context switch to the next
/// on each CPU, and needs every switch. On this project's VMs (Firecracker, Linux
/// 6.18.44-fc) a switch away from a secondary CPU's idle task reaches neither perf events
/// nor tracepoints: with ftrace's `sched_switch` on, CPU 1 shows 25 switches to `swapper/1`
/// a second and none from it, where CPU 0 shows both. There, the time and events before a
/// cgroup's task runs on CPU 1 (idle time, other cgroups' work) go to that cgroup: a task
/// sleeping three times on CPU 1 was given 0.6 s and 43 context switches where perf counted
/// 3 ms and 10, and the same task on CPU 0 was counted as perf counts it. The per-cgroup
/// perf events (perf's `-G`) are switched at the same place and were exact there
/// (docs/serve.md, "The BPF mode needs every context switch").
pub const ON_CPU_0: [&str; 3] = ["taskset", "-c", "0"];

/// Held by each test that compares per-cgroup counts of work it runs on CPU 0 across the BPF
/// mode: one at a time, so that no other such test's work (or its 1,100 running cgroups)
/// shares CPU 0 with the work measured, where a cgroup switch the program misses would give
/// one test's counts to the other's cgroup. A test that failed while holding it does not
/// fail the next ones.
pub fn cpu_0_alone() -> std::sync::MutexGuard<'static, ()> {
    static CPU_0: std::sync::Mutex<()> = std::sync::Mutex::new(());
    CPU_0
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Held by each test that opens hardware breakpoints (each takes one of a CPU's few debug
/// registers, 4 on x86, `kernel/events/hw_breakpoint.c`): one at a time in this binary, so
/// that a test that fills a CPU's registers on purpose does not refuse another's.
pub fn breakpoint_slots_alone() -> std::sync::MutexGuard<'static, ()> {
    static SLOTS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SLOTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// perf 7.2.13 of the current-releases lab's Debian sid root (`COUNTERHAL_CURRENT_LAB`, else
/// /var/cache/counterhal-lab), run by the root's own loader and libraries on this machine's
/// /sys and /proc: a `Command` to give perf's arguments, or why there is none.
pub fn perf_7_2() -> Result<Command, String> {
    let lab = std::env::var_os("COUNTERHAL_CURRENT_LAB")
        .map_or_else(|| PathBuf::from("/var/cache/counterhal-lab"), PathBuf::from);
    let root = lab.join("sid");
    let loader = root.join("lib64/ld-linux-x86-64.so.2");
    let perf = root.join("usr/bin/perf");
    let mut command = Command::new(&loader);
    command
        .arg("--library-path")
        .arg(format!(
            "{0}/lib/x86_64-linux-gnu:{0}/usr/lib/x86_64-linux-gnu",
            root.display()
        ))
        .arg(&perf);
    let runs = Command::new(&loader)
        .args(command.get_args())
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).starts_with("perf version 7.2"));
    match runs {
        true => Ok(command),
        false => Err(format!(
            "no perf 7.2 in {} (scripts/current-lab makes the Debian sid root)",
            root.display()
        )),
    }
}

/// The exit status of a command of [`perf_7_2_under`] where the tree could not be mounted.
pub const UNMOUNTED: i32 = 97;

/// [`perf_7_2`] for a test of its default events: where perf 7.2.13 cannot count its default
/// set here (on an Intel CPU without a core PMU, a VM's, its Default metrics name the core
/// PMU's `topdown-*` events, which do not parse: "No supported events found.", exit 1), it runs
/// as on an AMD Zen 3 (`PERF_CPUID=AuthenticAMD-25-1-1`, perf's own way to name the CPU),
/// whose Default metrics are those of the software events and the cycles that do not count
/// here: the words beside the software events, which those tests compare, are the same.
///
/// # Errors
/// As [`perf_7_2`].
pub fn perf_7_2_defaults() -> Result<Command, String> {
    let perf = perf_7_2()?;
    let counts = Command::new(perf.get_program())
        .args(perf.get_args())
        .args(["stat", "true"])
        .output()
        .is_ok_and(|out| out.status.success());
    if counts {
        return Ok(perf);
    }
    let mut as_zen3 = Command::new("env");
    as_zen3
        .arg("PERF_CPUID=AuthenticAMD-25-1-1")
        .arg(perf.get_program())
        .args(perf.get_args());
    Ok(as_zen3)
}

/// perf 7.2 ([`perf_7_2`]) seeing the PMU directory `devices` (a tree's
/// `bus/event_source/devices`) at /sys/bus/event_source/devices, in a private mount namespace
/// (root), with `PERF_CPUID` `cpuid`, `LC_ALL=C` and, where given, `shim` preloaded into perf:
/// a `Command` to give perf's arguments, which exits [`UNMOUNTED`] where the tree could not be
/// mounted ([`output_under`] says so), or why there is no perf 7.2.
pub fn perf_7_2_under(
    devices: &std::path::Path,
    cpuid: &str,
    shim: Option<&std::path::Path>,
) -> Result<Command, String> {
    let perf = perf_7_2()?;
    let script = r#"
        mount --bind "$1" /sys/bus/event_source/devices || exit 97
        shift
        if [ -n "$COUNTERHAL_SHIM" ]; then export LD_PRELOAD="$COUNTERHAL_SHIM"; fi
        exec "$@""#;
    let mut command = Command::new("unshare");
    command
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(devices)
        .arg(perf.get_program())
        .args(perf.get_args())
        .env("PERF_CPUID", cpuid)
        .env("LC_ALL", "C")
        .env(
            "COUNTERHAL_SHIM",
            shim.map(std::path::Path::as_os_str).unwrap_or_default(),
        );
    Ok(command)
}

/// `command` (of [`perf_7_2_under`]) run to its end: its output; a tree that did not mount
/// fails the test.
pub fn output_under(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{:?}: {e}", command.get_program()));
    assert_ne!(
        output.status.code(),
        Some(UNMOUNTED),
        "mount --bind failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `command` run on CPU 0 alone ([`ON_CPU_0`] before it), its environment kept.
pub fn on_cpu_0(command: &Command) -> Command {
    let mut pinned = Command::new(ON_CPU_0[0]);
    pinned
        .args(&ON_CPU_0[1..])
        .arg(command.get_program())
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => pinned.env(key, value),
            None => pinned.env_remove(key),
        };
    }
    pinned
}

/// The installed perf when it is perf 6.1 (Debian 12's linux-perf): `perf`, or why not.
pub fn perf_6_1() -> Result<Command, String> {
    let out = Command::new("perf").arg("--version").output();
    match out {
        Ok(o) if String::from_utf8_lossy(&o.stdout).starts_with("perf version 6.1") => {
            Ok(Command::new("perf"))
        }
        _ => Err("no perf 6.1 (Debian 12's linux-perf)".to_string()),
    }
}

/// Held by each test that counts through BPF programs (serve's BPF mode, `stat
/// --bpf-counters`): one at a time in this binary. The kernel skips a perf event's BPF
/// program on a CPU where another BPF program or a map call from user space holds
/// `bpf_prog_active` (kernel/events/core.c `bpf_overflow_handler`), so two such tests side by
/// side lose each other's switches and counts.
pub fn bpf_alone() -> std::sync::MutexGuard<'static, ()> {
    static BPF: std::sync::Mutex<()> = std::sync::Mutex::new(());
    BPF.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
