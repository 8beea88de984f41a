//! counterhal-linux's integration tests, one module per file beside this one, built as one test
//! binary.

#[cfg(target_os = "linux")]
mod conformance;
#[cfg(target_os = "linux")]
mod extra_msr;
#[cfg(target_os = "linux")]
mod kernel;
#[cfg(target_os = "linux")]
mod perf_metrics;
#[cfg(target_os = "linux")]
mod restart;
#[cfg(target_os = "linux")]
mod sampling;
#[cfg(target_os = "linux")]
mod self_monitor;
