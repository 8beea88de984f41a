//! counterhal-pctr's integration tests, one module per file beside this one, built as one test
//! binary.

mod backend_model;
mod conformance;
mod database;
mod driver_model;
mod multiplexing;
mod revisions;
