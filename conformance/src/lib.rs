//! # counterhal-conformance: one set of checks for every backend, on every OS
//!
//! **For backend authors**: implement [`Subject`] for your backend (the backend plus a way
//! to make its counters count known amounts: an execute breakpoint and a system call on
//! Linux, fed events on a device model), then call [`run`] in a test and
//! [`Report::assert_passed`] on the result. Every case prints `PASS`, `SKIP` (with the reason)
//! or `FAIL` (with the detail), labelled with the backend and device kind.
//!
//! **For users**: `counterhal check` runs the suite on the machine at hand and writes a JSON
//! [`Report`] that can be sent back from any OS. Setting `COUNTERHAL_REQUIRE=hardware` turns
//! skips of the hardware cases (PAPI-style loops of known instruction and branch counts)
//! into failures, for runs on machines that have a PMU.
//!
//! The cases are generic functions in [`cases`]; each returns an [`Outcome`].
#![deny(unsafe_code)]

pub mod cases;
pub mod fixtures;
pub mod prop;
pub mod skip;
mod subject;
#[allow(unsafe_code)]
pub mod workload;

use counterhal_hal::BackendExt;
use std::fmt;

use counterhal_hal::{Backend, DeviceKind};
use serde::Serialize;

pub use subject::{CompanionEvent, ExactEvent, Subject};

/// The outcome of one case.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "result", content = "reason", rename_all = "lowercase")]
pub enum Outcome {
    /// The backend behaved as required.
    Pass,
    /// The case could not run here; the reason says why.
    Skip(String),
    /// The backend misbehaved; the detail says how.
    Fail(String),
}

impl Outcome {
    /// `PASS`, `SKIP` or `FAIL`.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Skip(_) => "SKIP",
            Outcome::Fail(_) => "FAIL",
        }
    }

    /// The reason or detail, empty for a pass.
    pub fn reason(&self) -> &str {
        match self {
            Outcome::Pass => "",
            Outcome::Skip(reason) | Outcome::Fail(reason) => reason,
        }
    }
}

/// One case's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CaseResult {
    /// The case's name.
    pub case: &'static str,
    /// Whether it is a hardware case.
    pub hardware: bool,
    /// What happened.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// The results of one run of the suite against one backend and device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The backend's name, as [`Backend::name`] gives it.
    pub backend: String,
    /// `real` or `model`.
    pub device: String,
    /// A few words on the device (`P6, legacy ABI`).
    pub description: String,
    /// Each case, in order.
    pub cases: Vec<CaseResult>,
}

impl Report {
    /// How many cases passed, were skipped and failed.
    pub fn counts(&self) -> (usize, usize, usize) {
        let count = |label| {
            self.cases
                .iter()
                .filter(|c| c.outcome.label() == label)
                .count()
        };
        (count("PASS"), count("SKIP"), count("FAIL"))
    }

    /// Whether no case failed and at least one passed.
    pub fn passed(&self) -> bool {
        let (pass, _, fail) = self.counts();
        fail == 0 && pass > 0
    }

    /// Panics with every failure listed when a case failed or none passed (for tests).
    pub fn assert_passed(&self) {
        let (pass, skip, fail) = self.counts();
        if pass == 0 {
            panic!(
                "{}: no case passed ({skip} skipped): a run that checks nothing fails",
                self.label()
            );
        }
        if fail > 0 {
            let failures: Vec<String> = self
                .cases
                .iter()
                .filter(|c| matches!(c.outcome, Outcome::Fail(_)))
                .map(|c| format!("{}: {}", c.case, c.outcome.reason()))
                .collect();
            panic!(
                "{}: {fail} case(s) failed:\n  {}",
                self.label(),
                failures.join("\n  ")
            );
        }
    }

    fn label(&self) -> String {
        format!("{}/{} ({})", self.backend, self.device, self.description)
    }
}

impl fmt::Display for Report {
    /// One line per case, then a summary line (`N passed, N failed, N skipped`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = self.label();
        for case in &self.cases {
            write!(f, "{} {label} {}", case.outcome.label(), case.case)?;
            match &case.outcome {
                Outcome::Pass => writeln!(f)?,
                other => writeln!(f, ": {}", other.reason())?,
            }
        }
        let (pass, skip, fail) = self.counts();
        write!(f, "{label}: {pass} passed, {fail} failed, {skip} skipped")
    }
}

/// Whether `COUNTERHAL_REQUIRE` names `hardware`: hardware cases may not be skipped (the
/// policy of [`mod@skip`], which every test's skips follow).
pub fn hardware_required() -> bool {
    skip::required(skip::Need::Hardware)
}

/// Runs every case against `subject` and returns the report, printing one line per case to
/// stderr as it goes (for test runs, where the output shows progress and every skip's reason).
///
/// Runs of the suite in one process take turns (a lock), because the hygiene case counts the
/// process's file descriptors and memory.
pub fn run<S: Subject>(subject: &S) -> Report {
    run_cases(subject, true)
}

/// [`run_quietly`] on each subject, in order: a backend's models, for `counterhal check`.
pub fn run_each_quietly<S: Subject>(subjects: &[S]) -> Vec<Report> {
    subjects.iter().map(run_quietly).collect()
}

/// As [`run`], printing nothing: for callers that present the [`Report`] themselves
/// (`counterhal check`).
pub fn run_quietly<S: Subject>(subject: &S) -> Report {
    run_cases(subject, false)
}

fn run_cases<S: Subject>(subject: &S, progress: bool) -> Report {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let backend = subject.backend();
    let require_hardware = hardware_required() && backend.device() == DeviceKind::Real;
    let label = format!("{}/{}", backend.name(), backend.device());
    let mut cases = Vec::new();
    for case in cases::all::<S>() {
        let started = std::time::Instant::now();
        let mut outcome = (case.run)(subject);
        let took = started.elapsed();
        if case.hardware
            && require_hardware
            && let Outcome::Skip(reason) = &outcome
        {
            outcome = Outcome::Fail(format!(
                "COUNTERHAL_REQUIRE=hardware, but skipped: {reason}"
            ));
        }
        if progress && let Outcome::Skip(reason) = &outcome {
            let need = if case.hardware {
                skip::Need::Hardware
            } else {
                skip::Need::System
            };
            skip::log(need, &format!("{label} {}", case.name), reason);
        }
        match &outcome {
            _ if !progress => {}
            Outcome::Pass => eprintln!("PASS {label} {} ({took:.1?})", case.name),
            other => eprintln!(
                "{} {label} {} ({took:.1?}): {}",
                other.label(),
                case.name,
                other.reason()
            ),
        }
        cases.push(CaseResult {
            case: case.name,
            hardware: case.hardware,
            outcome,
        });
    }
    Report {
        backend: backend.name().to_string(),
        device: backend.device().name().to_string(),
        description: subject.description(),
        cases,
    }
}
