//! The C API's metric sets (`counterhal_metrics_*`) from C: each refusal a code and a message
//! (`tests/c/metrics.c`); the example that counts through them is `c::`'s.

use std::process::Command;

use crate::common::c_program;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// Every misuse of a metric set is a code with a message, never a crash, and a set never
/// enabled reads its metric as not computable (`COUNTERHAL_ENOCOUNT`). Oracle: perf 6.1's
/// `perf stat -M` (an unknown metric refused by name; IPC, where `cycles` does not open,
/// cannot be computed) and perf's IPC, `instructions / cycles` (tools/perf/util/stat-shadow.c,
/// "insn per cycle"), for the events IPC is planned to read.
#[test]
fn a_c_tool_meets_every_metric_refusal_as_a_code() {
    let out = Command::new(c_program("metrics")).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(3) {
        skip!(Need::System, "no counter backend here: {stdout}");
    }
    assert!(
        out.status.success() && stdout.contains("ok"),
        "tests/c/metrics.c ({}):\n{stdout}{stderr}",
        out.status
    );
}
