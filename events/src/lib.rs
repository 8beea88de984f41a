//! # counterhal-events: the event database
//!
//! Which native events each CPU has, how each named event (generalized, preset, native with
//! modifiers, raw) is encoded for each backend, and the parser for event strings.
//!
//! This crate is data and parsing only: no OS code, no `unsafe`.
#![forbid(unsafe_code)]

mod cpu;
mod database;
pub mod perf;

pub use cpu::{CpuIdentity, Vendor};
pub use database::{CpuModel, Database, EncoderKind, PmuDescription};
