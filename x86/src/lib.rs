#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod cpuid;
pub mod signature;
pub mod tsc;

pub use cpuid::{CpuidDump, CpuidInstruction, CpuidResult, CpuidSource};
pub use signature::{
    Identified, cpu_identity, decode_signature, detect_model, hybrid_core, identify, named_model,
};
pub use tsc::{TscFrequency, TscSource};

// The counting half: only with the `counting` feature (the backends that program counters).
#[cfg(feature = "counting")]
pub mod assign;
#[cfg(feature = "counting")]
pub mod counter;
#[cfg(feature = "counting")]
pub mod multiplex;
#[cfg(feature = "counting")]
pub mod rotation;
#[cfg(feature = "counting")]
pub mod timer;

#[cfg(feature = "counting")]
pub use assign::{CounterRef, Counters, Demand, Placement, assign};
#[cfg(feature = "counting")]
pub use counter::{counter_delta, is_backward_step, width_mask};
#[cfg(feature = "counting")]
pub use multiplex::{Multiplexed, Multiplexer, Stopped, schedule_for, turn_length};
#[cfg(feature = "counting")]
pub use rotation::{Rotation, Schedule, schedule};
#[cfg(feature = "counting")]
pub use timer::{ModelTimers, Tick, Timer};
