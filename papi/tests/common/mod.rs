//! What the PAPI library's tests share: libpapi.so built where they find it, under its
//! SONAME, and C programs built against a papi.h.
#![allow(dead_code)] // each test binary uses its part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The folder holding our libpapi.so and the link `libpapi.so.7.0` to it. Cargo does not build
/// a cdylib for the package's own tests, so it is built here first (once per test binary).
pub fn library_dir() -> PathBuf {
    // What the tests leave in the temporary directory goes when this process exits.
    counterhal_conformance::fixtures::clean_up_at_exit();
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
            let target = dir.parent().unwrap();
            let release = dir.file_name().is_some_and(|n| n == "release");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let out = Command::new(cargo)
                .args(["build", "-p", "counterhal-papi", "--target-dir"])
                .arg(target)
                // The tests' own profile (`test`, whose folder is `debug`): the libraries share
                // what the tests built, and no second profile's artifacts fill the folder.
                .args(["--profile", if release { "release" } else { "test" }])
                .current_dir(manifest())
                .output()
                .expect("cargo runs");
            assert!(
                out.status.success(),
                "building libpapi failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let soname = dir.join("papi-soname");
            std::fs::create_dir_all(&soname).unwrap();
            let link = soname.join("libpapi.so.7.0");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(dir.join("libpapi.so"), &link).unwrap();
            soname
        })
        .clone()
}

/// This crate's folder.
pub fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Debian's PAPI 7.0 header, the oracle of the layout tests.
pub const SYSTEM_HEADER: &str = "/usr/include/papi.h";

/// Whether Debian's PAPI 7.0 (papi.h and libpapi.so.7.0) is installed.
pub fn system_papi() -> bool {
    Path::new(SYSTEM_HEADER).is_file()
        && [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib",
        ]
        .iter()
        .any(|d| Path::new(d).join("libpapi.so.7.0").exists())
}

/// Why Debian's PAPI 7.0 runs without its `perf_event` component on this machine, as its own
/// `papi_component_avail` says (`Error libpfm4 no default PMU found` on a CPU whose model
/// libpfm4 does not know, as a VM may show one); `None` where the component is active.
pub fn papi_perf_event_disabled() -> Option<String> {
    static WHY: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    WHY.get_or_init(|| {
        let output = Command::new("papi_component_avail").output().ok()?;
        let text = String::from_utf8_lossy(&output.stdout);
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let mut words = line.split_whitespace();
            if words.next() == Some("Name:") && words.next() == Some("perf_event") {
                return lines
                    .next()
                    .and_then(|next| next.trim().strip_prefix("\\-> Disabled:"))
                    .map(|why| why.trim().to_string());
            }
        }
        None
    })
    .clone()
}

/// Skips the running test (through the suite's skip door, with the reason) where Debian's
/// PAPI 7.0 runs without its `perf_event` component here: it then answers every event with
/// `PAPI_ECMP_DISABLED` or `PAPI_ENOEVNT`, and leaves nothing to compare ours with.
#[macro_export]
macro_rules! papi_perf_event_or_skip {
    () => {
        if let Some(why) = $crate::common::papi_perf_event_disabled() {
            skip!(
                Need::System,
                "Debian's PAPI 7.0 has its perf_event component disabled here ({why}): the \
                 oracle answers no event to compare with"
            );
        }
    };
}

/// Skips the running test (through the suite's skip door, with the reason) unless Debian's
/// PAPI 7.0 is installed: its papi.h and libpapi.so.7.0 are the tests' oracle and what their
/// C programs are built against.
#[macro_export]
macro_rules! system_papi_or_skip {
    () => {
        if !$crate::common::system_papi() {
            skip!(
                Need::Tools,
                "PAPI 7.0 (papi.h and libpapi.so.7.0) is not installed (apt-get install libpapi-dev)"
            );
        }
    };
}

/// Builds `tests/c/STEM.c` with the papi.h in `include` (linked with `-lpapi` when `link`),
/// into a fresh temporary folder; the program's path.
pub fn c_program(stem: &str, tag: &str, include: &Path, link: bool) -> PathBuf {
    counterhal_conformance::fixtures::clean_up_at_exit();
    let dir = counterhal_conformance::fixtures::temp_dir().join(format!(
        "counterhal-papi-{stem}-{tag}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join(stem);
    let mut cc = Command::new("cc");
    cc.args(["-std=gnu99", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(include)
        .arg(manifest().join(format!("tests/c/{stem}.c")))
        .arg("-o")
        .arg(&program);
    if link {
        cc.arg("-lpapi");
    }
    let out = cc.output().expect("cc runs");
    assert!(
        out.status.success(),
        "building {stem} against {} failed:\n{}",
        include.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    program
}

/// Runs `program` with `args`, with our library first on the loader's path when `ours`.
pub fn run(program: &Path, args: &[&str], ours: bool) -> Output {
    let mut command = Command::new(program);
    command.args(args);
    if ours {
        command.env("LD_LIBRARY_PATH", library_dir());
    }
    command.output().expect("the program runs")
}

/// Whether this process runs as root (its real user id in /proc/self/status): mounting a PMU
/// tree and dropping to another user need it.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1))
            == Some("0")
    })
}

/// Runs `command` to its end with its standard output captured, killing it once `limit` has
/// passed: its output, or `Err` with what it printed when it had to be killed (a program that
/// deadlocked ends the test with what it saw instead of hanging it).
pub fn run_within(command: &mut Command, limit: std::time::Duration) -> Result<Output, String> {
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the program runs");
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().expect("waits").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("its output");
            return Err(format!(
                "still running after {limit:?}, killed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(child.wait_with_output().expect("its output"))
}

/// Skips the running test (through the suite's skip door, with the reason) where valgrind is
/// not installed: its memcheck is the test's checker.
#[macro_export]
macro_rules! valgrind_or_skip {
    () => {
        if std::process::Command::new("valgrind")
            .arg("--version")
            .output()
            .is_err()
        {
            skip!(
                Need::Tools,
                "valgrind is not installed (apt-get install valgrind)"
            );
        }
    };
}
