//! Events that program an extra MSR (offcore response, load latency, frontend) become raw
//! perf events with the MSR's value in `config1`, as the kernel's `cpu` PMU format says
//! (`offcore_rsp=config1:0-63`, `ldlat=config1:0-15`, `frontend=config1:0-23`).

use counterhal_events::Database;
use counterhal_hal::{Accepts, Domain, Encoding, Evtsel, ExtraMsr, Family};
use counterhal_linux::raw_attr;

const X86: Accepts = Accepts::new(&[Family::Evtsel], Domain::ALL, Domain::DEFAULT);

fn evtsel(cpu: &str, event: &str) -> Evtsel {
    let db = Database::shipped().unwrap();
    let resolved = db.resolve(Some(cpu), event, &X86).unwrap();
    match resolved.terms[0].request.encoding {
        Encoding::Evtsel(evtsel) => evtsel,
        ref other => panic!("{event}: {other:?}"),
    }
}

#[test]
fn offcore_load_latency_and_frontend_values_go_to_config1() {
    let offcore = evtsel("icx", "OCR.DEMAND_DATA_RD.ANY_RESPONSE");
    assert_eq!(offcore.extra.map(|e| e.msr), Some(ExtraMsr::OFFCORE_RSP_0));
    let attr = raw_attr("ocr", &offcore).unwrap();
    assert_eq!((attr.type_, attr.config), (4, 0x01b7));
    assert_eq!(attr.config1, offcore.extra.unwrap().value);
    assert_ne!(attr.config1, 0);
    assert_eq!(attr.config2, 0);

    let ldlat = evtsel("skl", "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4:ldlat=48");
    let attr = raw_attr("ldlat", &ldlat).unwrap();
    assert_eq!((attr.config, attr.config1, attr.config2), (0x01cd, 48, 0));

    let frontend = evtsel("skl", "FRONTEND_RETIRED.DSB_MISS");
    let attr = raw_attr("fe", &frontend).unwrap();
    assert_eq!((attr.config, attr.config1, attr.config2), (0x01c6, 0x11, 0));
}

#[test]
fn values_wider_than_perfs_fields_are_refused() {
    let mut wide = Evtsel::new(0xcd, 0x01);
    wide.extra = Some(ExtraMsr::new(ExtraMsr::LOAD_LATENCY, 0x1_0000));
    let error = raw_attr("wide", &wide).unwrap_err();
    assert!(error.to_string().contains("ldlat"), "{error}");
    wide.extra = Some(ExtraMsr::new(ExtraMsr::FRONTEND, 0x100_0000));
    let error = raw_attr("wide", &wide).unwrap_err();
    assert!(error.to_string().contains("frontend"), "{error}");
    wide.extra = Some(ExtraMsr::new(0x3e0, 1));
    assert!(raw_attr("snoop", &wide).is_err());
}

/// Intel's bits above 31 go to `config` where the `cpu` PMU's format puts them: the second
/// unit-mask byte at 40-47 (`umask=config:8-15,40-47` where the kernel announces UMASK2),
/// `in_tx=config:32` and `in_tx_cp=config:33`.
#[test]
fn the_second_unit_mask_byte_and_tsx_filters_go_to_config() {
    let stlb_hit = evtsel("lnl_lnc", "DTLB_LOAD_MISSES.STLB_HIT");
    let attr = raw_attr("stlb", &stlb_hit).unwrap();
    assert_eq!(attr.config, 0x0300_0000_2012);
    let in_tx = evtsel("skl", "INST_RETIRED.ANY_P:intx:intxcp");
    let attr = raw_attr("tx", &in_tx).unwrap();
    assert_eq!(attr.config, 0x3_0000_00c0);
}
