//! counterhal-x86's integration tests, one module per file beside this one, built as one test
//! binary.

mod dumps;
mod properties;
