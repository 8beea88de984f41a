#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod assign;
pub mod counter;
pub mod cpuid;
pub mod multiplex;
pub mod rotation;
pub mod signature;
pub mod timer;
pub mod tsc;

pub use assign::{CounterRef, Counters, Demand, Placement, assign};
pub use counter::{counter_delta, is_backward_step, width_mask};
pub use cpuid::{CpuidDump, CpuidInstruction, CpuidResult, CpuidSource};
pub use multiplex::{Multiplexed, Multiplexer, Stopped, schedule_for, turn_length};
pub use rotation::{Rotation, Schedule, schedule};
pub use signature::{
    Identified, cpu_identity, decode_signature, detect_model, hybrid_core, identify, named_model,
};
pub use timer::{ModelTimers, Tick, Timer};
pub use tsc::{TscFrequency, TscSource};
