//! counterhal-gen: the event database's generator. It reads snapshots of the upstream tables
//! (Intel perfmon's JSON, BSD-3-Clause; libpfm4's AMD tables, MIT) from a path and writes one deterministic TOML file per
//! CPU model, headed by the source, the source's commit and "generated: do not edit". Facts
//! carry over (names, codes, unit masks, counter constraints, flags); description sentences do
//! not, and the upstream files are never committed.
//!
//! Run it as `cargo run -p counterhal-gen -- perfmon --source DIR --commit SHA --out
//! events/data/generated`; PAPI's presets as `cargo run -p counterhal-gen -- papi --csv
//! /var/cache/counterhal-lab/sid/usr/share/papi/7.2/papi_events.csv --out
//! events/data/generated/presets`.
#![forbid(unsafe_code)]

pub mod aliases;
pub mod amd_json;
pub mod arm64;
pub mod arm64_metrics;
pub mod cexpr;
pub mod cparse;
pub mod dropped;
pub mod errata;
pub mod formula;
pub mod grammar;
pub mod grammar_errata;
pub mod intel_tables;
pub mod k8;
pub mod libpfm4;
pub mod metric_names;
pub mod metrics;
pub mod model;
pub mod offcore;
pub mod papi;
pub mod perf_metrics;
pub mod perf_tables;
pub mod perfmon;
pub mod revisions;
pub mod tables;
pub mod thresholds;
pub mod uncore;
pub mod uncore_perf;
pub mod write;

use std::fmt;
use std::path::Path;

/// Why the generator stopped.
#[derive(Debug)]
pub enum GenError {
    /// A file could not be read or written.
    Io(String),
    /// The upstream data is not what the generator understands.
    Data(String),
}

impl GenError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, error: &std::io::Error) -> GenError {
        GenError::Io(format!("{}: {error}", path.display()))
    }
}

impl fmt::Display for GenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenError::Io(text) | GenError::Data(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for GenError {}

/// Why an upstream event is left out of a generated model (counted in the file's header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Left {
    /// Marked deprecated upstream, repeating a current event (same name, or libpfm4's colon
    /// spelling).
    Deprecated,
    /// Needs an MSR other than offcore response, load latency and frontend.
    MsrValue,
    /// Sets AnyThread.
    AnyThread,
    /// Needs the second unit-mask byte.
    UmaskExt,
    /// Lists two event codes.
    TwoCodes,
    /// A name or field the schema cannot hold.
    Malformed,
    /// A name that is also the base of dotted names, or given twice.
    Ambiguous,
}

impl Left {
    /// The phrase in the generated file's header.
    pub const fn text(self) -> &'static str {
        match self {
            Left::Deprecated => {
                "deprecated events that repeat a current one (same name, or spelled `EVENT:request=...`)"
            }
            Left::MsrValue => {
                "events that need an MSR other than offcore response, load latency and frontend"
            }
            Left::AnyThread => "AnyThread events",
            Left::UmaskExt => {
                "events whose second unit-mask byte is wider than a byte or has no unit mask to carry it"
            }
            Left::TwoCodes => "events with two event codes",
            Left::Malformed => "events with names or fields the schema cannot hold",
            Left::Ambiguous => "events whose name is also the base of dotted names",
        }
    }
}

/// Writes every model of `models` to `out` as `ID.toml`; returns the paths written, in order.
///
/// # Errors
/// The directory or a file cannot be written.
pub fn write_models(models: &[model::GenModel], out: &Path) -> Result<Vec<String>, GenError> {
    std::fs::create_dir_all(out).map_err(|e| GenError::io(out, &e))?;
    let mut written = Vec::new();
    for model in models {
        let path = out.join(format!("{}.toml", model.id));
        std::fs::write(&path, write::model_toml(model)).map_err(|e| GenError::io(&path, &e))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}
