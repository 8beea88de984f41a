//! libpfm4's meaning of `h` and `g` on AMD native events: host (HostOnly, EVTSEL bit 41) and
//! guest (GuestOnly, bit 40), where perf writes `H` and `G`.

use counterhal_events::{Database, EventErrorKind};
use counterhal_hal::{Accepts, Domain, Encoding, Evtsel, Family};

/// An x86 backend that filters user, kernel, host and guest (the msr backend on AMD).
const AMD: Accepts = Accepts::new(
    &[Family::Evtsel],
    Domain::from_bits_truncate(
        Domain::USER.bits() | Domain::KERNEL.bits() | Domain::HOST.bits() | Domain::GUEST.bits(),
    ),
    Domain::DEFAULT,
);

fn value(db: &Database, event: &str) -> u64 {
    let resolved = db.resolve(Some("k8"), event, &AMD).unwrap();
    match resolved.terms[0].request.encoding {
        Encoding::Evtsel(e) => e.register_value(),
        ref other => panic!("{event}: {other:?}"),
    }
}

#[test]
fn h_is_host_and_g_is_guest_on_amd_natives() {
    let db = Database::shipped().unwrap();
    let both = Evtsel::HOST_ONLY | Evtsel::GUEST_ONLY;
    let plain = value(&db, "RETIRED_INSTRUCTIONS");
    assert_eq!(plain & both, 0);
    assert_eq!(
        value(&db, "RETIRED_INSTRUCTIONS:h") & both,
        Evtsel::HOST_ONLY
    );
    assert_eq!(
        value(&db, "RETIRED_INSTRUCTIONS:g") & both,
        Evtsel::GUEST_ONLY
    );
    assert_eq!(
        value(&db, "RETIRED_INSTRUCTIONS:uh") & both,
        Evtsel::HOST_ONLY
    );
    // Both: count both, as perf's `HG`; the same as perf's spelling.
    assert_eq!(value(&db, "RETIRED_INSTRUCTIONS:h:g") & both, 0);
    assert_eq!(
        value(&db, "RETIRED_INSTRUCTIONS:h"),
        value(&db, "RETIRED_INSTRUCTIONS:H")
    );
    assert_eq!(
        value(&db, "RETIRED_INSTRUCTIONS:g:u"),
        value(&db, "RETIRED_INSTRUCTIONS:G:u")
    );
}

#[test]
fn h_keeps_its_perf_meaning_elsewhere() {
    let db = Database::shipped().unwrap();
    // On Intel natives and on generalized events `h` is still the hypervisor, which x86
    // counters cannot filter, and `g` is no modifier.
    for (cpu, event, kind) in [
        ("skl", "INST_RETIRED.ANY_P:h", EventErrorKind::Unsupported),
        ("k8", "cycles:h", EventErrorKind::Unsupported),
        (
            "skl",
            "INST_RETIRED.ANY_P:g",
            EventErrorKind::UnitMaskInvalid,
        ),
    ] {
        let error = db.resolve_exact(Some(cpu), event, &AMD).unwrap_err();
        assert_eq!(error.kind(), kind, "{cpu} {event}: {error}");
    }
}
