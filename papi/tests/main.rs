//! libpapi's integration tests, one binary: each file a module (run one file's tests with its
//! module as the filter: `cargo test -p counterhal-papi --test main side_by_side::`), the
//! helpers they share in `common`, the installed tree's helpers in `install`.

#[macro_use]
mod common;
#[path = "f/install.rs"]
mod install;

mod abi;
mod current;
mod devices;
mod domains;
mod fortran;
mod header;
mod high_level;
mod overflow;
mod packages;
mod powercap;
mod profile;
mod rates;
mod releases;
mod sde;
mod side_by_side;
mod signal_reads;
mod suite;
mod tarball;
mod tools;
mod tracepoints;
mod uncore;
mod unit_masks;
mod utilities;
