//! The command's integration tests, one binary: each file a module (run one file's tests with
//! its module as the filter: `cargo test -p counterhal-cli --test main stat_options::`), the
//! helpers they share in `common`. The exporter's (`serve*`) run with the command's `serve`
//! feature (a default one).

#[macro_use]
mod common;

mod bpf_cgroups;
mod cgroups;
mod cli;
mod descriptions;
mod encodings_perf72;
mod list;
mod list_explore;
mod list_perf;
mod metrics;
mod metrics_perf;
mod metrics_perf72;
mod multiplex;
mod perf_habits;
mod perf_layouts;
mod reliability;
#[cfg(feature = "serve")]
mod serve;
#[cfg(feature = "serve")]
mod serve_bpf;
#[cfg(feature = "serve")]
mod serve_bpf_beside;
#[cfg(feature = "serve")]
mod serve_bpf_tree;
#[cfg(feature = "serve")]
mod serve_budget;
#[cfg(feature = "serve")]
mod serve_costs;
#[cfg(feature = "serve")]
mod serve_delivery;
#[cfg(feature = "serve")]
mod serve_examples;
#[cfg(feature = "serve")]
mod serve_follow;
#[cfg(feature = "serve")]
mod serve_hostile;
#[cfg(feature = "serve")]
mod serve_image;
#[cfg(feature = "serve")]
mod serve_kubernetes;
#[cfg(feature = "serve")]
mod serve_left_out;
#[cfg(feature = "serve")]
mod serve_logs;
#[cfg(feature = "serve")]
mod serve_ops;
#[cfg(feature = "serve")]
mod serve_podman;
#[cfg(feature = "serve")]
mod serve_prometheus;
#[cfg(feature = "serve")]
mod serve_promhttp;
#[cfg(feature = "serve")]
mod serve_records;
#[cfg(feature = "serve")]
mod serve_slurm;
#[cfg(feature = "serve")]
mod serve_sockets;
#[cfg(feature = "serve")]
mod serve_times;
#[cfg(feature = "serve")]
mod serve_topology;
#[cfg(feature = "serve")]
mod serve_web;
mod shell;
#[cfg(any(feature = "serve", target_os = "linux"))]
mod slurm_cluster;
#[cfg(target_os = "linux")]
mod slurm_spank;
mod software_events;
#[cfg(target_os = "linux")]
mod stat_bpf_shared;
mod stat_control;
mod stat_groups;
mod stat_hybrid;
mod stat_json_lint;
mod stat_layouts_perf72;
mod stat_opens;
mod stat_options;
mod stat_per_cache;
mod stat_record;
mod stat_scope;
mod stat_script;
mod stat_threshold;
mod stat_topdown;
mod sysfs_root;
#[cfg(target_os = "linux")]
mod tracefs_mount;
mod uncore_stat;
