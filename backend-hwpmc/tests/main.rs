//! counterhal-hwpmc's integration tests, one module per file beside this one, built as one test
//! binary.

mod conformance;
mod model;
