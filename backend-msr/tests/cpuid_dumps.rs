//! CPUID decoding of recorded dumps (Intel and AMD), the models' own CPUID, and the real
//! CPUID paths of this machine.

mod common;

use counterhal_events::Vendor;
use counterhal_hal::{CounterSet, ErrorKind};
use counterhal_msr::regs::evtsel;
use counterhal_msr::{
    AllowList, CpuidDump, CpuidInstruction, CpuidSource, PmuArch, PmuInfo, PmuModelKind, TscSource,
};

fn decode(name: &str) -> PmuInfo {
    PmuInfo::from_cpuid(&CpuidDump::recorded(name).unwrap()).unwrap()
}

#[test]
fn intel_skylake() {
    let pmu = decode("intel-skylake");
    assert_eq!(pmu.identity.vendor, Vendor::Intel);
    assert_eq!(
        (
            pmu.identity.family,
            pmu.identity.model,
            pmu.identity.stepping
        ),
        (6, 0x5E, 3)
    );
    assert_eq!(pmu.arch, PmuArch::IntelArch);
    assert_eq!((pmu.version, pmu.gp_counters, pmu.gp_width), (4, 4, 48));
    assert_eq!((pmu.fixed, pmu.fixed_width), (CounterSet::first(3), 48));
    assert_eq!(pmu.arch_events_length, 7);
    assert_eq!(pmu.arch_events_unavailable, !0x7F, "all 7 events available");
    assert!(pmu.global_control && pmu.perf_capabilities && pmu.tsx && !pmu.hypervisor);
    let tsc = pmu.cpuid_tsc.unwrap();
    assert_eq!(
        (tsc.hz, tsc.source),
        (3_400_000_000, TscSource::Cpuid16),
        "0x15 lacks the crystal"
    );
    let allowed = pmu.evtsel_allowed_bits();
    assert_ne!(allowed & evtsel::ANY, 0);
    assert_ne!(allowed & evtsel::IN_TX, 0);
    assert_eq!(allowed & evtsel::INT, 0);
    assert_eq!(
        pmu.summary(),
        "intel arch perfmon v4: 4 x 48-bit + 3 fixed x 48-bit"
    );
}

#[test]
fn intel_core2() {
    let pmu = decode("intel-core2");
    assert_eq!(
        (
            pmu.identity.family,
            pmu.identity.model,
            pmu.identity.stepping
        ),
        (6, 0x17, 10)
    );
    assert_eq!((pmu.version, pmu.gp_counters, pmu.gp_width), (2, 2, 40));
    assert_eq!((pmu.fixed, pmu.fixed_width), (CounterSet::first(3), 40));
    assert_eq!(
        pmu.cpuid_tsc, None,
        "no leaf 0x15/0x16: the TSC is measured"
    );
    assert!(!pmu.tsx);
    assert_eq!(
        pmu.evtsel_allowed_bits() & evtsel::ANY,
        0,
        "AnyThread arrived with v3"
    );
}

#[test]
fn amd_zen2() {
    let pmu = decode("amd-zen2");
    assert_eq!(pmu.identity.vendor, Vendor::Amd);
    assert_eq!(
        (
            pmu.identity.family,
            pmu.identity.model,
            pmu.identity.stepping
        ),
        (0x17, 0x31, 0)
    );
    assert_eq!(pmu.arch, PmuArch::AmdCore);
    assert_eq!((pmu.version, pmu.gp_counters, pmu.gp_width), (1, 6, 48));
    assert!(pmu.fixed.is_empty());
    assert!(!pmu.global_control);
    assert_eq!(pmu.evtsel_msr(5), 0xC001_020A);
    assert_eq!(pmu.counter_msr(5), 0xC001_020B);
    assert_eq!(pmu.summary(), "amd core counters: 6 x 48-bit");
}

#[test]
fn amd_zen4() {
    let pmu = decode("amd-zen4");
    assert_eq!(
        (
            pmu.identity.family,
            pmu.identity.model,
            pmu.identity.stepping
        ),
        (0x19, 0x11, 1)
    );
    assert_eq!(pmu.arch, PmuArch::AmdCore);
    assert_eq!((pmu.version, pmu.gp_counters), (2, 6));
    assert!(pmu.global_control);
    assert_eq!(
        pmu.global_msrs(),
        Some((0xC000_0301, 0xC000_0300, 0xC000_0302))
    );
    assert_ne!(pmu.evtsel_allowed_bits() & evtsel::AMD_EVENT_HIGH, 0);
    let allow = AllowList::for_pmu(&pmu);
    assert!(
        allow
            .to_string()
            .contains("PerfCntrGlobalCtl 0xc0000301 (rw)"),
        "{allow}"
    );
}

#[test]
fn every_model_decodes_to_its_configuration() {
    for kind in PmuModelKind::ALL {
        let config = kind.config();
        let pmu = PmuInfo::from_cpuid(&config.cpuid()).unwrap();
        assert_eq!(pmu.is_amd(), config.amd, "{kind}");
        assert_eq!(pmu.version, config.version, "{kind}");
        assert_eq!(pmu.gp_counters, config.gp_counters, "{kind}");
        assert_eq!(pmu.gp_width, config.gp_width, "{kind}");
        assert_eq!(pmu.fixed.len(), config.fixed_counters, "{kind}");
        assert_eq!(
            (pmu.identity.family, pmu.identity.model),
            (config.family, config.model),
            "{kind}"
        );
        if !config.amd {
            let tsc = pmu.cpuid_tsc.unwrap();
            assert_eq!(
                (tsc.hz, tsc.source),
                (2_000_000_000, TscSource::Cpuid15),
                "{kind}"
            );
        }
        let (backend, _) = common::model(kind);
        assert_eq!(backend.tsc().source, TscSource::Model);
        assert_eq!(
            backend.pmu().full_width_writes,
            config.full_width_writes,
            "{kind}"
        );
    }
}

#[test]
fn dumps_round_trip_through_files() {
    let dump = CpuidDump::recorded("amd-zen4").unwrap();
    let path = std::env::temp_dir().join(format!("counterhal-zen4-{}.cpuid", std::process::id()));
    std::fs::write(&path, dump.to_text()).unwrap();
    let again = CpuidDump::from_file(&path).unwrap();
    assert_eq!(
        PmuInfo::from_cpuid(&again).unwrap(),
        PmuInfo::from_cpuid(&dump).unwrap()
    );
    std::fs::remove_file(&path).unwrap();
    let error = CpuidDump::from_file("/nonexistent/dump.cpuid").unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotFound);
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[test]
fn this_machine() {
    let recorded = CpuidDump::record("this machine", &CpuidInstruction).unwrap();
    let text = recorded.to_text();
    eprintln!("{text}");
    match PmuInfo::from_cpuid(&CpuidInstruction) {
        Ok(pmu) => eprintln!("this machine: {pmu}"),
        Err(error) => {
            // A VM without a virtual PMU: Intel says version 0; the error says why.
            assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
            eprintln!("this machine has no usable PMU: {error}");
        }
    }
    // The cpuid driver, where present, agrees with the instruction on leaf 0 (the same on
    // every CPU).
    match counterhal_msr::CpuidDevice::open(0) {
        Ok(device) => {
            assert_eq!(
                device.cpuid(0, 0).unwrap(),
                CpuidInstruction.cpuid(0, 0).unwrap()
            );
            assert_eq!(
                device.cpuid(0x8000_0000, 0).unwrap(),
                CpuidInstruction.cpuid(0x8000_0000, 0).unwrap()
            );
        }
        Err(error) => eprintln!("skipped /dev/cpu/0/cpuid: {error}"),
    }
}

#[test]
fn probe_without_the_msr_driver() {
    let has_driver = std::path::Path::new("/dev/cpu/0/msr").exists()
        || std::path::Path::new("/dev/cpu/0/msr_safe").exists();
    let result = counterhal_msr::probe(common::db(), None);
    if has_driver {
        eprintln!(
            "skipped: this machine has an MSR driver ({:?})",
            result.map(|b| b.pmu().summary())
        );
        return;
    }
    let error = result.unwrap_err();
    if cfg!(all(
        target_os = "linux",
        any(target_arch = "x86", target_arch = "x86_64")
    )) {
        assert_eq!(error.kind(), ErrorKind::DeviceMissing, "{error}");
        let hint = error.hint().unwrap();
        assert!(
            hint.contains("modprobe msr") && hint.contains("CAP_SYS_RAWIO"),
            "{hint}"
        );
    } else {
        assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
    }
}
