//! The facade's integration tests, one binary: each file a module (run one file's tests with
//! its module as the filter: `cargo test -p counterhal --test main face::`). `alloc.rs` is a
//! binary of its own: its global allocator counts every allocation of its process.

mod architecture;
mod capabilities;
#[cfg(target_os = "linux")]
mod cgroup_counter;
mod cgroups;
#[cfg(target_os = "linux")]
mod domains;
mod examples;
mod face;
mod listing_marks;
mod process;
mod regions;
mod registry;
mod restart;
mod sets;
mod setup;
mod targets;
#[cfg(target_os = "linux")]
mod tracefs_mount;
