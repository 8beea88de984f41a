//! counterhal-events' integration tests, one module per file beside this one (and the helpers in
//! common/), built as one test binary, so the database links once for all of them.

mod amd_host_guest;
mod any_thread;
mod arm64;
mod common;
// The metrics' formulas and files: the `metrics` feature's.
#[cfg(feature = "metrics")]
mod deep_input;
mod descriptions;
mod detection;
mod disagreements;
mod duplicate_encodings;
mod env;
mod extra_msr;
mod fe_thres;
mod files;
mod golden;
mod intel;
mod intel_bits;
mod kernel;
mod libpfm;
mod libpfm_declared;
mod libpfm_extra_msr;
mod libpfm_fuzz;
mod libpfm_lazy;
mod libpfm_names;
mod libpfm_sweep;
mod libpfm_validate;
mod load_cost;
#[cfg(feature = "metrics")]
mod metrics;
mod model_aliases;
mod names;
mod papi_forms;
mod papi_presets;
mod perf72_models;
mod properties;
mod robustness;
mod schema;
mod second_register;
