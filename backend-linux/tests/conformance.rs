//! The shared conformance suite against the real kernel: execute breakpoints and the getpid
//! tracepoint give exact counts; hardware cases skip, with the reason, where there is no PMU.

use std::sync::Arc;

use counterhal_events::Database;
use counterhal_linux::conformance::LinuxSubject;

#[test]
fn conformance_on_the_real_kernel() {
    let db = Arc::new(Database::shipped().expect("the shipped database loads"));
    let backend = match counterhal_linux::probe(db, None, counterhal_system::System::host()) {
        Ok(backend) => backend,
        Err(e) => panic!("perf_event_open is not usable here: {e}"),
    };
    let report = counterhal_conformance::run(&LinuxSubject::new(backend));
    eprintln!("{report}");
    report.assert_passed();
    // This machine's deterministic events must really have been checked.
    let exact = report
        .cases
        .iter()
        .find(|c| c.case == "exact_counts")
        .unwrap();
    assert_eq!(
        exact.outcome,
        counterhal_conformance::Outcome::Pass,
        "{exact:?}"
    );
}
