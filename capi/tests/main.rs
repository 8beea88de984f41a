//! The C API's integration tests, one binary: each file a module (run one file's tests with
//! its module as the filter: `cargo test -p counterhal-capi --test main face::`), the helpers
//! they share in `common`.

#[macro_use]
mod common;

mod c;
mod descriptions;
mod face;
mod install;
mod metrics;
mod sampling;
mod sets;
mod signal_reads;
mod units;
