#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

#[allow(unsafe_code)] // the C interface, on top: C pointers in and out (its `# Safety` note)
pub mod abi;
pub mod codes;
pub mod components;
pub mod description;
pub mod device_types;
pub mod devices;
pub mod hl;
pub mod hl_record;
pub mod info;
pub mod kept;
pub mod libpfm4;
pub mod library;
pub mod memory;
pub mod names;
pub mod natives;
pub mod overflow;
pub mod own;
pub mod perf_natives;
pub mod powercap;
pub mod powercap_zones;
pub mod presets;
pub mod profile;
pub mod rates;
pub mod release;
pub mod sde;
pub mod sde_watch;
pub mod set_options;
pub mod set_overflow;
pub mod sets;
pub mod shared_reads;
#[allow(unsafe_code)] // the operating system, at the bottom: signals, dlopen (its `# Safety` note)
mod sys;
pub mod topology;
pub mod uncore;
pub mod unlocked;
