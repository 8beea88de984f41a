//! The one door every skip goes through: conformance cases, unit tests and integration tests
//! alike.
//!
//! A test that cannot run here calls [`skip!`](crate::skip!) with what it needs and why it is
//! missing. The skip is printed (`SKIP <test>: <reason> [needs <what>]`), counted in the
//! process, and appended to the file named by `COUNTERHAL_SKIP_LOG` when that is set (`.ci/run`
//! sets it and prints every skip at the end). When `COUNTERHAL_REQUIRE` names what the test
//! needs (a comma-separated list of [`Need`] names, or `all`), the skip is a failure instead:
//! a machine that claims to have the thing must run the test.
//!
//! ```
//! use counterhal_conformance::skip::Need;
//!
//! fn probe_pmu() -> bool { false }
//!
//! fn counts_cycles() {
//!     if !probe_pmu() {
//!         counterhal_conformance::skip!(Need::Hardware, "no hardware PMU here");
//!     }
//!     // ... the test proper ...
//! }
//! ```

use std::fmt;
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable naming what may not be skipped (`hardware`, `tools`, ..., `all`).
pub const REQUIRE_ENV: &str = "COUNTERHAL_REQUIRE";

/// The environment variable naming a file every skip is appended to.
pub const LOG_ENV: &str = "COUNTERHAL_SKIP_LOG";

/// What a skipped test needed and this machine lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Need {
    /// Hardware counters: a PMU, a real device (`/dev/pctr`, the msr driver).
    Hardware,
    /// An operating-system facility: a backend usable here, tracefs, a kernel interface.
    System,
    /// A tool or library the test compares with or builds with (perf, libpfm4, a C compiler).
    Tools,
    /// Privileges the test runs under (root, or an unprivileged user).
    Privilege,
    /// Another operating system or architecture.
    Platform,
    /// A source tree no package installs, which the test reads when its variable names it
    /// (a libpfm4 snapshot at a pinned commit): CI has none, and says so in its skip list.
    Source,
}

impl Need {
    /// Every need.
    pub const ALL: [Need; 6] = [
        Need::Hardware,
        Need::System,
        Need::Tools,
        Need::Privilege,
        Need::Platform,
        Need::Source,
    ];

    /// The name `COUNTERHAL_REQUIRE` and the log use: `hardware`, `system`, `tools`,
    /// `privilege`, `platform`, `source`.
    pub const fn name(self) -> &'static str {
        match self {
            Need::Hardware => "hardware",
            Need::System => "system",
            Need::Tools => "tools",
            Need::Privilege => "privilege",
            Need::Platform => "platform",
            Need::Source => "source",
        }
    }
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

static SKIPPED: AtomicUsize = AtomicUsize::new(0);

/// Whether `COUNTERHAL_REQUIRE` forbids skipping for lack of `need`.
pub fn required(need: Need) -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|value| requires(&value, need))
}

/// Whether the `COUNTERHAL_REQUIRE` value `value` names `need` (or `all`).
pub fn requires(value: &str, need: Need) -> bool {
    value
        .split(',')
        .map(str::trim)
        .any(|part| part.eq_ignore_ascii_case(need.name()) || part.eq_ignore_ascii_case("all"))
}

/// How many skips this process has recorded.
pub fn count() -> usize {
    SKIPPED.load(Ordering::Relaxed)
}

/// The name of the running test (its thread's name), or `-`.
fn test_name() -> String {
    std::thread::current().name().unwrap_or("-").to_string()
}

/// Records a skip of the running test for lack of `need`: prints it, counts it and logs it.
///
/// # Panics
/// When `COUNTERHAL_REQUIRE` names `need`: the skip becomes the test's failure.
pub fn record(need: Need, reason: &str) {
    let test = test_name();
    if required(need) {
        panic!("{REQUIRE_ENV} requires {need}, but {test} would be skipped: {reason}");
    }
    eprintln!("SKIP {test}: {reason} [needs {need}]");
    log(need, &test, reason);
}

/// Counts and logs a skip without printing it or applying `COUNTERHAL_REQUIRE`: for the
/// conformance runner, which prints its own report and turns required skips into failed cases.
pub fn log(need: Need, test: &str, reason: &str) {
    SKIPPED.fetch_add(1, Ordering::Relaxed);
    if let Some(path) = std::env::var_os(LOG_ENV).filter(|p| !p.is_empty()) {
        let line = format!("{need}\t{test}\t{}\n", reason.replace(['\n', '\t'], " "));
        // A log that cannot be written loses only the log line; the skip was printed.
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// What a skipped test returns: `()`, or `Ok(())` for a test that returns a `Result`.
pub trait Skipped {
    /// The value that ends the test as passed-by-skipping.
    fn skipped() -> Self;
}

impl Skipped for () {
    fn skipped() -> Self {}
}

impl<E> Skipped for Result<(), E> {
    fn skipped() -> Self {
        Ok(())
    }
}

/// Skips the running test: `skip!(Need::Tools, "perf is not installed ({})", why)`. Records
/// the skip ([`record`]) and returns from the function (which returns `()` or `Result<(), _>`).
#[macro_export]
macro_rules! skip {
    ($need:expr, $($reason:tt)+) => {{
        $crate::skip::record($need, &::std::format!($($reason)+));
        return $crate::skip::Skipped::skipped();
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn require_names_needs_or_all() {
        assert!(requires("hardware", Need::Hardware));
        assert!(requires("tools, HARDWARE", Need::Hardware));
        assert!(requires("all", Need::Privilege));
        assert!(!requires("tools", Need::Hardware));
        assert!(!requires("", Need::Tools));
        let names: std::collections::HashSet<_> = Need::ALL.iter().map(|n| n.name()).collect();
        assert_eq!(names.len(), Need::ALL.len());
    }

    fn skipping() -> Result<(), String> {
        crate::skip!(Need::Platform, "a {} that is not this one", "platform");
    }

    #[test]
    fn a_skip_is_counted_and_returns() {
        if required(Need::Platform) {
            // This test's own skip would fail under that setting, which is the point of it.
            return;
        }
        let before = count();
        assert_eq!(skipping(), Ok(()));
        assert!(count() > before);
    }
}
