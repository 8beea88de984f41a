//! The follow's shortcut: what it skips and what it never skips.

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

use super::*;

/// A place left out for descriptors is opened at the next follow once there is room,
/// though no CPU and no cgroup came or went meanwhile: a follow skips the places only
/// where the last one left nothing to try again.
///
/// Oracle: the budget's arithmetic (room for no counter, then for one), and the kernel
/// opening CPU 0's page-fault counter.
#[test]
fn a_place_left_out_is_tried_again_though_nothing_changed() {
    let Ok(backend) = counterhal::open_default() else {
        skip!(Need::System, "no counter backend here");
    };
    let plan = crate::events::plan(
        &counterhal_system::System::host(),
        &backend,
        &["page-faults".to_string()],
    )
    .unwrap();
    let mut budget = Budget::new(&counterhal_system::System::host(), 65_536, 4);
    budget.limit = budget.reserved() + budget.baseline;
    let watch = Watch::new(&counterhal_system::System::host(), &[], None, 0).unwrap();
    let mut exporter = Exporter::new(
        counterhal_system::System::host(),
        backend,
        plan,
        watch,
        budget,
        None,
    );
    let health = Health::new("linux", &counterhal_system::System::host());
    let cpu_0: CpuList = "0".parse().unwrap();
    exporter.follow_on(&cpu_0, &health);
    assert!(exporter.places.is_empty());
    assert_eq!(exporter.unopened, 1);
    exporter.budget.limit += 1;
    exporter.follow_on(&cpu_0, &health);
    if health.open_errors() > 0 {
        skip!(
            Need::Privilege,
            "page-faults on CPU 0 does not open here (perf_event_paranoid)"
        );
    }
    assert_eq!(exporter.places.len(), 1);
    assert_eq!(exporter.unopened, 0);
}
