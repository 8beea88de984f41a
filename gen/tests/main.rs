//! counterhal-gen's integration tests, one module per file beside this one, built as one test
//! binary.

mod aliases;
mod arm64;
mod determinism;
mod dropped;
mod k8;
mod metric_names;
mod metrics;
mod papi;
mod tables;
mod uncore_perf;
