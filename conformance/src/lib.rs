//! # counterhal-conformance: the shared suite
//!
//! (Skeleton: the cases arrive with the conformance work.)
#![forbid(unsafe_code)]

/// The outcome of one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The backend behaved as required.
    Pass,
    /// The case could not run here; the reason says why.
    Skip(String),
    /// The backend misbehaved; the detail says how.
    Fail(String),
}
