//! counterhal-linux's integration tests, one module per file beside this one, built as one test
//! binary.

#[cfg(target_os = "linux")]
mod cgroup_adoption;
#[cfg(target_os = "linux")]
mod conformance;
#[cfg(target_os = "linux")]
mod extra_msr;
#[cfg(target_os = "linux")]
mod hostile_sysfs;
#[cfg(target_os = "linux")]
mod kernel;
#[cfg(target_os = "linux")]
mod machines;
// Intel's perf-metrics events are x86 encodings, which the backend programs on x86 alone.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "x86")))]
mod perf_metrics;
#[cfg(target_os = "linux")]
mod perf_pmus;
#[cfg(target_os = "linux")]
mod perf_uncore;
#[cfg(target_os = "linux")]
mod perf_uncore72;
#[cfg(target_os = "linux")]
mod restart;
#[cfg(target_os = "linux")]
mod sampling;
#[cfg(target_os = "linux")]
mod self_monitor;
#[cfg(target_os = "linux")]
mod tracefs_mount;
