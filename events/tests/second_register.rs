//! libpfm4's spellings of events with a second register value in the shipped models: offcore
//! response with one request, supplier or snoop bit per unit mask
//! (`OFFCORE_RESPONSE_0:DMND_DATA_RD:L3_MISS_LOCAL`), ORed into the offcore register with the
//! defaults of the groups not named, as libpfm4 composes them; Intel's `OCR.*` and
//! `OFFCORE_RESPONSE.*` events beside them resolve as before; bad combinations and unit masks
//! are refused with what would be right; libpfm4's load-latency and frontend unit masks take
//! libpfm4's default thresholds and the `ldlat=` and `fe_thres=` modifiers. The values are
//! libpfm4 4.13's; the libpfm4 sweep (`libpfm_sweep.rs`) checks every single unit mask against
//! libpfm4 itself.

use counterhal_events::{Database, EventErrorKind};
use counterhal_hal::{Encoding, ExtraMsr};

use crate::common::X86;

/// Event code, unit mask and extra register (address, value) of `event` on `model`.
fn encode(db: &Database, model: &str, event: &str) -> (u16, u8, Option<(u32, u64)>) {
    let resolved = db
        .resolve(Some(model), event, &X86)
        .unwrap_or_else(|e| panic!("{model}::{event}: {e}"));
    let Encoding::Evtsel(evtsel) = &resolved.terms[0].request.encoding else {
        panic!("{model}::{event}: not an EVTSEL");
    };
    (
        evtsel.code,
        evtsel.umask,
        evtsel.extra.map(|e| (e.address(), e.value)),
    )
}

const RSP_0: u32 = ExtraMsr::OFFCORE_RSP_0;
const RSP_1: u32 = ExtraMsr::OFFCORE_RSP_1;

#[test]
fn unit_masks_compose_the_offcore_register_as_libpfm4_does() {
    let db = Database::shipped().unwrap();
    for (model, event, expected) in [
        // A request alone: the supplier group's default ANY_RESPONSE, which keeps the snoop
        // group's default out.
        (
            "snb",
            "OFFCORE_RESPONSE_0:DMND_DATA_RD",
            (0xb7, 0x01, Some((RSP_0, 0x1_0001))),
        ),
        // A supplier: the snoop group's default SNP_ANY joins it.
        (
            "snb",
            "OFFCORE_RESPONSE_0:DMND_DATA_RD:LLC_MISS_LOCAL",
            (0xb7, 0x01, Some((RSP_0, 0x3f_8040_0001))),
        ),
        (
            "hsw",
            "OFFCORE_RESPONSE_0:DMND_DATA_RD:L3_MISS_LOCAL",
            (0xb7, 0x01, Some((RSP_0, 0x3f_8040_0001))),
        ),
        // Several requests are ORed; the second offcore event programs the second register.
        (
            "snb",
            "offcore_response_1:dmnd_data_rd:dmnd_rfo:snp_miss:llc_hitm",
            (0xbb, 0x01, Some((RSP_1, 0x2_0004_0003))),
        ),
        // Nothing named: every group's default, up to ANY_RESPONSE.
        (
            "snb",
            "OFFCORE_RESPONSE_0",
            (0xb7, 0x01, Some((RSP_0, 0x1_8fff))),
        ),
        // A unit mask libpfm4 defines as others (`uequiv`) stands for them.
        (
            "snb_ep",
            "OFFCORE_RESPONSE_0:DMND_DATA_RD:L3_MISS",
            (0xb7, 0x01, Some((RSP_0, 0x3f_ffc0_0001))),
        ),
        // ANY_REQUEST, named, stands for every request bit, which DMND_DATA_RD repeats.
        (
            "snb",
            "OFFCORE_RESPONSE_0:ANY_REQUEST:DMND_DATA_RD",
            (0xb7, 0x01, Some((RSP_0, 0x1_8fff))),
        ),
        // Knights Landing's OUTSTANDING combines with requests only, and needs no supplier.
        (
            "knl",
            "OFFCORE_RESPONSE_0:DMND_DATA_RD:OUTSTANDING",
            (0xb7, 0x01, Some((RSP_0, 0x40_0000_0001))),
        ),
        // Intel's spellings beside them, unchanged.
        (
            "snb",
            "OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY_RESPONSE",
            (0xb7, 0x01, Some((RSP_0, 0x1_0001))),
        ),
        (
            "nhm",
            "OFFCORE_RESPONSE_0.ANY_DATA.ANY_CACHE_DRAM",
            (0xb7, 0x01, Some((RSP_0, 0x7f11))),
        ),
        (
            "nhm",
            "OFFCORE_RESPONSE_0:DMND_DATA_RD:ANY_CACHE_DRAM",
            (0xb7, 0x01, Some((RSP_0, 0x7f01))),
        ),
        // Ice Lake's libpfm4 unit masks are whole register values, beside Intel's OCR names.
        (
            "icl",
            "OCR:DEMAND_DATA_RD_ANY_RESPONSE",
            (0xb7, 0x01, Some((RSP_0, 0x1_0001))),
        ),
        (
            "icl",
            "OCR.DEMAND_DATA_RD.ANY_RESPONSE",
            (0xb7, 0x01, Some((RSP_0, 0x1_0001))),
        ),
        (
            "icl",
            "OFFCORE_RESPONSE_1:DEMAND_DATA_RD_ANY_RESPONSE",
            (0xbb, 0x01, Some((RSP_1, 0x1_0001))),
        ),
        // Atom cores select the second register with unit mask 0x02.
        (
            "slm",
            "OFFCORE_RESPONSE_1:DMND_DATA_RD",
            (0xb7, 0x02, Some((RSP_1, 0x1_0001))),
        ),
    ] {
        assert_eq!(encode(&db, model, event), expected, "{model}::{event}");
    }
}

#[test]
fn bad_combinations_say_what_is_wrong_and_what_is_right() {
    let db = Database::shipped().unwrap();
    for (model, event, kind, needles) in [
        (
            "snb",
            "OFFCORE_RESPONSE_0:DMND_DATA_RD:ANY_RESPONSE:SNP_MISS",
            EventErrorKind::CombinationNotAllowed,
            &["`ANY_RESPONSE`", "`SNP_MISS`", "excludes the groups after"][..],
        ),
        (
            "snb",
            "OFFCORE_RESPONSE_0:DMND_DATA_RD:ANY_RESPONSE:NO_SUPP",
            EventErrorKind::CombinationNotAllowed,
            &[
                "`ANY_RESPONSE`",
                "ANY_RESPONSE, NO_SUPP",
                "name one of them",
            ][..],
        ),
        (
            "knl",
            "OFFCORE_RESPONSE_0:OUTSTANDING:DDR_NEAR",
            EventErrorKind::CombinationNotAllowed,
            &["`OUTSTANDING`", "`DDR_NEAR`", "request unit masks"][..],
        ),
        (
            "snb",
            "OFFCORE_RESPONSE_0:DMND_DATA_READ",
            EventErrorKind::UnitMaskInvalid,
            &["`DMND_DATA_READ`", "DMND_DATA_RD"][..],
        ),
        (
            "snb",
            "OFFCORE_RESPONSE_0:0x10001:DMND_DATA_RD",
            EventErrorKind::UnknownModifier,
            &["raw unit mask"][..],
        ),
        (
            "icl",
            "OCR",
            EventErrorKind::UnitMaskRequired,
            &["needs a unit mask", "OTHER_LOCAL_DRAM"][..],
        ),
        (
            "icl",
            "OCR:DEMAND_DATA_RD_ANY_RESPONSE:DEMAND_RFO_ANY_RESPONSE",
            EventErrorKind::CombinationNotAllowed,
            &["not combined with another"][..],
        ),
    ] {
        let error = db.resolve_exact(Some(model), event, &X86).unwrap_err();
        assert_eq!(error.kind(), kind, "{model}::{event}: {error}");
        for needle in needles {
            assert!(
                error.message().contains(needle),
                "{model}::{event}: `{needle}` not in: {error}"
            );
        }
    }
}

#[test]
fn load_latency_and_frontend_unit_masks_take_libpfm4s_default_thresholds() {
    let db = Database::shipped().unwrap();
    for (model, event, expected) in [
        (
            "skl",
            "MEM_TRANS_RETIRED:LOAD_LATENCY",
            (0xcd, 0x01, Some((ExtraMsr::LOAD_LATENCY, 3))),
        ),
        (
            "skl",
            "MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=64",
            (0xcd, 0x01, Some((ExtraMsr::LOAD_LATENCY, 64))),
        ),
        (
            "nhm",
            "MEM_INST_RETIRED:LATENCY_ABOVE_THRESHOLD:ldlat=100",
            (0x0b, 0x10, Some((ExtraMsr::LOAD_LATENCY, 100))),
        ),
        (
            "skl",
            "FRONTEND_RETIRED:IDQ_2_BUBBLES",
            (0xc6, 0x01, Some((ExtraMsr::FRONTEND, 0x20_0106))),
        ),
        (
            "skl",
            "FRONTEND_RETIRED:IDQ_2_BUBBLES:fe_thres=32",
            (0xc6, 0x01, Some((ExtraMsr::FRONTEND, 0x20_2006))),
        ),
    ] {
        assert_eq!(encode(&db, model, event), expected, "{model}::{event}");
    }
}
