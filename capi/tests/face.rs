//! The C API's newer pieces from C (`tests/c/face.c`): set options (grouped, pinned,
//! inherit), removing events, which thread or CPU each row counts, the version, unit masks in
//! the listing, restarts that start the times from zero, and the refusals it words. Oracles:
//! the kernel's page-fault count of a thread touching fresh pages (inherit), CLOCK_MONOTONIC
//! around each run (restart), `sysconf(_SC_NPROCESSORS_ONLN)` (rows), the package version
//! (the header's version macros), perf's count of a command's `execve` calls (a counted
//! command).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{c_program, run_mode};

use counterhal_conformance::fixtures::ForAnyone;
use counterhal_conformance::fixtures::TestCgroup;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// `tests/c/face.c`, built.
fn program() -> PathBuf {
    c_program("face")
}

/// Runs one mode of `face` (see [`run_mode`]).
fn run(mode: &str) -> Option<String> {
    run_mode(&program(), mode)
}

#[test]
fn the_version_is_the_package_s_in_header_and_library() {
    let header =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/counterhal.h"))
            .unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        header.contains(&format!("#define COUNTERHAL_VERSION_STRING \"{version}\"")),
        "the header's COUNTERHAL_VERSION_STRING is not the package's {version}"
    );
    let parts: Vec<&str> = version.split('.').collect();
    for (name, value) in ["MAJOR", "MINOR", "PATCH"].iter().zip(parts) {
        assert!(
            header.contains(&format!("#define COUNTERHAL_VERSION_{name} {value}\n")),
            "COUNTERHAL_VERSION_{name} is not {value}"
        );
    }
    let stdout = run("version").unwrap();
    assert!(stdout.contains(&format!("version {version}")), "{stdout}");
}

#[test]
fn events_are_removed_and_the_rest_still_count() {
    run("remove");
}

/// `perf::PAGE-FAULTS` and `perf::PERF_COUNT_SW_CONTEXT_SWITCHES`, libpfm4's spellings that
/// PAPI users type, are added and count through the C API (256 fresh pages touched: at least
/// 256 faults, the kernel's count of first writes).
#[test]
fn perf_names_are_taken_as_papi_users_type_them() {
    let stdout = run("perf-names").unwrap();
    assert!(stdout.contains("perf::PAGE-FAULTS "), "{stdout}");
}

#[test]
fn options_are_set_refused_while_running_and_checked() {
    run("options");
}

#[test]
fn inherit_counts_the_threads_a_thread_creates() {
    let stdout = run("inherit").unwrap();
    eprintln!("{stdout}");
}

#[test]
fn each_row_names_its_thread() {
    run("rows");
}

#[test]
fn each_row_of_an_all_cpus_set_names_its_cpu() {
    if run("cpus").is_none() {
        skip!(
            Need::Privilege,
            "counting CPUs is refused here (perf_event_paranoid)"
        );
    }
}

/// perf's count of `event` over `argv` (`perf stat -x,`, with `-i` when `alone`), or why not.
fn perf_count(event: &str, alone: bool, argv: &[&str]) -> Result<u64, String> {
    let mut perf = Command::new("perf");
    perf.args(["stat", "-x,", "-e", event]);
    if alone {
        perf.arg("-i");
    }
    let out = perf
        .arg("--")
        .args(argv)
        .output()
        .map_err(|e| format!("perf: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    stderr
        .lines()
        .find(|l| l.contains(event))
        .and_then(|l| l.split(',').next())
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("perf counted no {event}: {stderr}"))
}

/// A command counted from its `exec` by `counterhal_set_run`: the `execve` calls of a shell
/// running two programs, in the shell and what it creates and in the shell alone, as the C
/// program prints them. Oracle: `perf stat -e syscalls:sys_enter_execve [-i] -- sh -c ...`
/// on the same command (2 and 0: the shell's own `execve` happens before counting starts).
#[test]
fn a_command_is_counted_from_its_exec_as_perf_counts_it() {
    let Some(stdout) = run("command") else {
        skip!(Need::Privilege, "the execve tracepoint does not open here");
    };
    let ours = |what: &str| -> u64 {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(what))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{what}` in {stdout}"))
    };
    let argv = ["/bin/sh", "-c", "/bin/true; /bin/true"];
    let event = "syscalls:sys_enter_execve";
    let (children, alone) = match (
        perf_count(event, false, &argv),
        perf_count(event, true, &argv),
    ) {
        (Ok(children), Ok(alone)) => (children, alone),
        (Err(why), _) | (_, Err(why)) => skip!(Need::Tools, "perf cannot count it: {why}"),
    };
    assert_eq!(ours("execve children"), children, "{stdout}");
    assert_eq!(ours("execve alone"), alone, "{stdout}");
    assert_eq!((children, alone), (2, 0), "perf's own counts");
}

#[test]
fn a_restarted_set_counts_its_times_from_zero() {
    let stdout = run("restart").unwrap();
    eprintln!("{stdout}");
}

#[test]
fn refusals_say_what_was_wrong() {
    run("refusals");
}

#[test]
fn the_listing_holds_unit_masks_after_their_event() {
    if run("umasks").is_none() {
        skip!(Need::System, "no Intel CPU model is detected here");
    }
}

/// Runs `face MODE` with regions counting task-clock (reports on standard error) and `env`;
/// its standard output and error.
fn regions(mode: &str, env: &[(&str, &str)]) -> (String, String) {
    let out = Command::new(program())
        .arg(mode)
        .env("COUNTERHAL_REGION_EVENTS", "task-clock")
        .env_remove("COUNTERHAL_REGION_OUTPUT")
        .env_remove("COUNTERHAL_REGION_FORMAT")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "face {mode}: {stdout}{stderr}");
    (stdout, stderr)
}

/// The number of reports (their header lines) in `text`.
fn reports(text: &str) -> usize {
    text.lines().filter(|l| l.starts_with("region ")).count()
}

#[test]
fn a_report_written_on_request_is_not_written_again_at_exit() {
    let (_, stderr) = regions("report", &[]);
    assert_eq!(reports(&stderr), 1, "{stderr}");
    // A region ended after the report: the report at exit has it.
    let (_, stderr) = regions("report-more", &[]);
    assert_eq!(reports(&stderr), 2, "{stderr}");
    let last = stderr.rsplit("region ").next().unwrap();
    assert!(last.contains("second"), "{stderr}");
}

#[test]
fn an_unknown_report_format_is_an_error_and_the_table_is_still_written() {
    let (stdout, stderr) = regions("report", &[("COUNTERHAL_REGION_FORMAT", "xml")]);
    assert!(
        stdout.contains("report returned -1: COUNTERHAL_REGION_FORMAT is `xml`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("hint: set COUNTERHAL_REGION_FORMAT to table or json"),
        "{stdout}"
    );
    assert_eq!(reports(&stderr), 1, "{stderr}");
}

/// `counterhal_open_with` chooses the backend, the CPU model (by id and by perf's signature)
/// and an events file from C, and refuses unknown names naming the known ones and sizes no
/// `counterhal_options_t` has. Oracles: the SDM's Skylake table (INST_RETIRED.ANY_P is event
/// 0xc0); the events file the C program writes; perf's signature of Sapphire Rapids
/// (GenuineIntel-6-8F-8, the kernel's `mapfile.csv`).
#[test]
fn a_backend_cpu_model_and_events_file_are_chosen_from_c() {
    let stdout = run("open-with").unwrap();
    eprintln!("{stdout}");
    let unknown = stdout
        .lines()
        .find(|l| l.starts_with("unknown backend: "))
        .unwrap_or_else(|| panic!("no unknown backend's error in:\n{stdout}"));
    let known = facade::registry::names().join(", ");
    assert!(
        unknown.contains(&known),
        "{unknown}: does not name the registry's backends ({known})"
    );
}

/// A set's domain goes to its events without a modifier, and exclusive is taken. Oracle:
/// touching 256 fresh pages faults 256 times in user space (perf stat -e
/// page-faults:u,page-faults:k counts them as :u).
#[test]
fn a_set_s_domain_and_exclusive_are_set_from_c() {
    let stdout = run("domain").unwrap();
    eprintln!("{stdout}");
}

/// As the unprivileged user nobody at `perf_event_paranoid` 2, a C program counts task-clock,
/// page-faults and the getpid tracepoint (by the id the root parent reads from tracefs, which
/// nobody cannot read) in user space, under the names given, with `counterhal_set_note`
/// naming them in the face's words and `counterhal_set_event_domain` saying user space alone;
/// `COUNTERHAL_OPTION_DOMAIN` = kernel and `COUNTERHAL_OPTION_STRICT_DOMAIN` = 1 are
/// `COUNTERHAL_EPERM` with the hint. Oracles: perf_event_open(2)'s paranoid rules on Linux
/// 6.18; 100 `getpid()` calls counted by `syscalls:sys_enter_getpid`.
#[test]
fn as_nobody_events_count_user_space_with_a_note_and_the_kernel_is_refused() {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok());
    if paranoid != Some(2) {
        skip!(Need::System, "perf_event_paranoid is {paranoid:?}, not 2");
    }
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    });
    if !root {
        skip!(Need::Privilege, "becoming nobody needs root");
    }
    let root = match counterhal_conformance::fixtures::tracefs_mounted() {
        Ok(root) => root,
        Err((need, why)) => skip!(need, "{why}"),
    };
    let Ok(id) = std::fs::read_to_string(format!("{root}/events/syscalls/sys_enter_getpid/id"))
    else {
        skip!(Need::System, "no syscalls tracepoints in tracefs here");
    };
    // libcounterhal where nobody can load it, whatever folder the workspace is in.
    let library = crate::common::library_dir().join("libcounterhal.so");
    let anyone = ForAnyone::new("face", &[(&library, crate::common::SONAME)])
        .expect("a folder for libcounterhal that nobody can read");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(program())
        .args(["unprivileged", id.trim()])
        .env("LD_LIBRARY_PATH", &anyone.dir)
        .current_dir("/")
        .output();
    let Ok(out) = out else {
        skip!(
            Need::Tools,
            "setpriv (util-linux) runs the program as nobody"
        );
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("ok unprivileged"),
        "{}\n{stdout}{stderr}",
        out.status
    );
    eprintln!("{stdout}");
    assert!(stdout.contains("strict refused: "), "{stdout}");
    let note = stdout
        .lines()
        .find_map(|l| l.strip_prefix("note: "))
        .unwrap_or_else(|| panic!("no note:\n{stdout}"));
    // The one wording of the fallback, the face's (counterhal_hal::user_space_note).
    let tracepoint = format!("tracepoint/config={}/", id.trim());
    assert_eq!(
        note,
        format!(
            "counting the kernel is not permitted here (kernel.perf_event_paranoid is 2), so \
             task-clock, page-faults, {tracepoint} count user space only, as perf stat does"
        )
    );
}

/// `counterhal_set_create_cgroup` counts what runs in a control group on every CPU (or a
/// list), as `perf stat -G` does: a spinning shell's task-clock in its group, none in an idle
/// one; refusals name the group. Oracles: the kernel's cgroup membership (`cgroup.procs`)
/// and the wall clock (one spinning task runs at most the time counted).
#[test]
fn a_cgroup_set_counts_what_runs_in_the_group() {
    let root = facade::cgroups::root(&facade::system::System::host()).ok();
    let cgroup = |what: &str| TestCgroup::new(root.as_ref()?, &format!("capi-{what}"));
    let (Some(mut busy), Some(idle)) = (cgroup("busy"), cgroup("idle")) else {
        skip!(
            Need::Privilege,
            "cannot make a cgroup here (no cgroup mount, or not root)"
        );
    };
    busy.spin();
    let out = Command::new(program())
        .args(["cgroup", &busy.name, &idle.name])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.code() == Some(3) {
        skip!(Need::Privilege, "{}", stdout.trim());
    }
    assert!(
        out.status.success() && stdout.contains("ok cgroup"),
        "{}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{stdout}");
}
