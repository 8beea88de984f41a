//! serve's tests of its HTTP layers, through the crate's [`counterhal_serve::http`] face: the
//! layer (auth, HTTP errors, headers, gzip) around a handler of the test's, and the
//! transport (bounds, deadlines) serving one on a loopback port; the shipped alerting rules,
//! by promtool. One test binary (the project's rule: integration tests are modules of
//! `tests/main.rs`).
//!
//! The tests that need the `counterhal` command (the counters read and exported, the
//! signals, the oracles run beside it: Prometheus, promtool, node_exporter, curl) are the
//! command's, in `cli/tests/serve*.rs`.

mod alerts;
mod layer;
mod transport;
