#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod arm;
mod built;
mod compiled;
mod compose;
mod cpu;
mod database;
mod descriptions;
mod domain;
mod encode;
mod error;
// The metrics' formulas (their parser and evaluator) and the metrics themselves: the
// `metrics` feature's, and the shipped tables' writer's.
#[cfg(any(feature = "metrics", feature = "table-writer"))]
pub mod expression;
mod fast_map;
// libpfm4's grammar and tables, which are the x86 models' (`libpfm4/left_out.rs` answers for
// it without them).
#[cfg(any(feature = "x86-models", feature = "table-writer"))]
mod libpfm4;
#[cfg(not(any(feature = "x86-models", feature = "table-writer")))]
#[path = "libpfm4/left_out.rs"]
mod libpfm4;
pub mod limits;
pub mod listing;
#[cfg(feature = "events-file")]
mod loader;
#[cfg(any(feature = "metrics", feature = "table-writer"))]
mod metrics;
mod model;
pub mod model_aliases;
#[doc(hidden)]
pub mod papi;
mod parse;
pub mod perf;
mod resolve;
mod select;
mod suggest;
mod table;
#[cfg(feature = "table-writer")]
mod table_writer;
mod uncore;
pub use suggest::{MAX_SUGGESTED_NAME_LEN, nearest};

pub use cpu::{CpuIdentity, HybridCore, Vendor};
pub use database::{
    Database, EVENTS_ENV, MAX_EVENTS_FILE_BYTES, left_out_model, shipped_files,
    unknown_model_message,
};
pub use descriptions::{DESCRIPTIONS_ENV, DescriptionsRead};
pub use error::{EventError, EventErrorKind};
#[cfg(any(feature = "metrics", feature = "table-writer"))]
#[doc(hidden)]
pub use metrics::shipped_metrics_lookups_on_this_thread;
#[cfg(any(feature = "metrics", feature = "table-writer"))]
pub use metrics::{
    Metric, MetricAlias, MetricTable, Threshold, metric_alias, metric_aliases, parse_metrics,
    shipped_metric_models, shipped_metrics,
};
pub use model::{
    CombineRules, CpuModel, EncoderKind, EventFlags, Mapping, MatchRule, NativeEvent, NumberSet,
    PapiForm, PmuDescription, UnitMask, UnitMaskClass,
};
pub use parse::{
    EventSpec, Modifiers, ParsedEvent, PmuTerms, parse_event, parse_pmu_terms, parse_term_list,
};
pub use select::MESI_ALL;
#[doc(hidden)]
pub use table::shipped_tables;
#[cfg(feature = "table-writer")]
#[doc(hidden)]
pub use table_writer::write_shipped_tables;
pub use uncore::{UncoreEvent, shipped_uncore_models};
