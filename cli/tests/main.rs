//! The command's integration tests, one binary: each file a module (run one file's tests with
//! its module as the filter: `cargo test -p counterhal-cli --test main stat_options::`), the
//! helpers they share in `common`.

#[macro_use]
mod common;

mod cgroups;
mod cli;
mod descriptions;
mod list;
mod list_explore;
mod metrics;
mod metrics_perf;
mod multiplex;
mod perf_habits;
mod perf_layouts;
mod reliability;
mod serve;
mod serve_costs;
mod serve_examples;
mod serve_ops;
mod serve_prometheus;
mod serve_promhttp;
mod serve_web;
mod shell;
mod software_events;
mod stat_opens;
mod stat_options;
mod stat_scope;
mod sysfs_root;
mod uncore_stat;
