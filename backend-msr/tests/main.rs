//! counterhal-msr's integration tests, one module per file beside this one (and the helpers in
//! common/), built as one test binary.

mod allow_list;
mod common;
mod conformance;
mod cpuid_dumps;
mod database;
mod extra_msr;
mod hybrid;
mod intel_versions;
mod models;
mod multiplexing;
mod sequences;
mod umask2;
mod wraparound;
