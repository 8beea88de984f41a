//! counterhal-process's integration tests, one module per file beside this one, built as one
//! test binary. The tests that change what the whole process shares (signal dispositions, the
//! environment) take turns with the rest through [`process_state`].

mod child;
mod environment;
mod process_state;
mod signals;
