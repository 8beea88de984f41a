//! counterhal-time's integration tests, one module per file beside this one, built as one test
//! binary.

mod clocks;
