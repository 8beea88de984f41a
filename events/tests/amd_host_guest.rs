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
    let resolved = db
        .resolve(Some("amd64_fam15h_interlagos"), event, &AMD)
        .unwrap();
    match resolved.terms[0].request.encoding {
        Encoding::Evtsel(e) => e.register_value(),
        ref other => panic!("{event}: {other:?}"),
    }
}

/// libpfm4's `h` and `g` (its family 10h and later tables; K8's have neither) are host and
/// guest, with the levels as libpfm4 sets them: `h` alone names no level, so the event would
/// count at none (libpfm4 encodes USR and OS clear) and is refused; `g` alone keeps the
/// default levels. Oracle: libpfm4 4.13 (`libpfm_fuzz.rs` compares these strings with it).
#[test]
fn h_is_host_and_g_is_guest_on_amd_natives() {
    let db = Database::shipped().unwrap();
    let both = Evtsel::HOST_ONLY | Evtsel::GUEST_ONLY;
    let user = Evtsel::USR;
    let plain = value(&db, "RETIRED_INSTRUCTIONS");
    assert_eq!(plain & both, 0);
    assert_eq!(
        value(&db, "RETIRED_INSTRUCTIONS:h:u") & (both | user),
        Evtsel::HOST_ONLY | user
    );
    assert_eq!(
        value(&db, "RETIRED_INSTRUCTIONS:g") & both,
        Evtsel::GUEST_ONLY
    );
    // Both: count both (libpfm4 sets both bits, which count as neither).
    assert_eq!(value(&db, "RETIRED_INSTRUCTIONS:h:g:u") & both, 0);
    // libpfm4 compares attribute names without case: `H` is `h`.
    assert_eq!(
        value(&db, "RETIRED_INSTRUCTIONS:h:u"),
        value(&db, "RETIRED_INSTRUCTIONS:H:u")
    );
    let nothing = db
        .resolve_exact(
            Some("amd64_fam15h_interlagos"),
            "RETIRED_INSTRUCTIONS:h",
            &AMD,
        )
        .unwrap_err();
    assert_eq!(
        nothing.kind(),
        EventErrorKind::CombinationNotAllowed,
        "{nothing}"
    );
    let k8 = db
        .resolve_exact(Some("k8"), "RETIRED_INSTRUCTIONS:h", &AMD)
        .unwrap_err();
    assert_eq!(k8.kind(), EventErrorKind::UnknownModifier, "{k8}");
}

#[test]
fn h_keeps_its_perf_meaning_elsewhere() {
    let db = Database::shipped().unwrap();
    // On Intel's names and on generalized events `h` is still the hypervisor, which x86
    // counters cannot filter, and `g` is no modifier (libpfm4 knows none either).
    for (cpu, event, kind) in [
        ("skl", "INST_RETIRED.ANY_P:h", EventErrorKind::Unsupported),
        ("k8", "cycles:h", EventErrorKind::Unsupported),
        (
            "skl",
            "INST_RETIRED.ANY_P:g",
            EventErrorKind::UnknownModifier,
        ),
    ] {
        let error = db.resolve_exact(Some(cpu), event, &AMD).unwrap_err();
        assert_eq!(error.kind(), kind, "{cpu} {event}: {error}");
    }
}
