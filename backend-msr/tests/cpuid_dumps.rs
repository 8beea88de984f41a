//! CPUID decoding of the shipped dumps, the models' own CPUID, and the real CPUID paths of this
//! machine. `amd-zen5-firecracker` and `intel-kabylake-pentium-g4600` were recorded from CPUs;
//! the other Intel, Zen 2 and Zen 4 dumps were written from documentation (their headers say so), so decoding them checks the decoder
//! against the documentation, not against hardware.

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
use counterhal_conformance::skip::Need;
use counterhal_events::Vendor;
use counterhal_hal::Evtsel;
use counterhal_hal::{CounterSet, ErrorKind};
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
use counterhal_msr::CpuidInstruction;
use counterhal_msr::regs::evtsel;
use counterhal_msr::{
    AllowList, CpuidDump, CpuidSource, PmuArch, PmuInfo, PmuModelKind, TscSource,
};

use crate::common;

/// A CPUID dump from the shared fixtures (`x86/tests/data`, with the x86 crate that decodes
/// them); each file's header says whether it was recorded on a CPU or written from the
/// vendor's documentation.
fn recorded(name: &str) -> counterhal_hal::Result<CpuidDump> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../x86/tests/data")
        .join(format!("{name}.cpuid"));
    CpuidDump::from_file(path)
}

fn decode(name: &str) -> PmuInfo {
    PmuInfo::from_cpuid(&recorded(name).unwrap()).unwrap()
}

/// Recorded on a real Intel CPU: the raw bits first (checked by hand against the SDM's field
/// layout), then the decode.
#[test]
fn intel_kabylake_pentium_g4600_recorded() {
    let dump = recorded("intel-kabylake-pentium-g4600").unwrap();
    let raw = |leaf| dump.cpuid(leaf, 0).unwrap();
    let leaf_a = raw(0xA);
    assert_eq!(leaf_a.eax & 0xFF, 4, "version");
    assert_eq!((leaf_a.eax >> 8) & 0xFF, 4, "GP counters");
    assert_eq!((leaf_a.eax >> 16) & 0xFF, 48, "GP width");
    assert_eq!(
        (leaf_a.edx & 0x1F, (leaf_a.edx >> 5) & 0xFF),
        (3, 48),
        "fixed"
    );
    assert_eq!(raw(1).ecx >> 31, 0, "no hypervisor");
    let pmu = PmuInfo::from_cpuid(&dump).unwrap();
    assert_eq!(pmu.identity.vendor, Vendor::Intel);
    assert_eq!(
        (
            pmu.identity.family,
            pmu.identity.model,
            pmu.identity.stepping
        ),
        (6, 0x9E, 9)
    );
    assert_eq!(pmu.arch, PmuArch::IntelArch);
    assert_eq!((pmu.version, pmu.gp_counters, pmu.gp_width), (4, 4, 48));
    assert_eq!((pmu.fixed, pmu.fixed_width), (CounterSet::first(3), 48));
    assert_eq!(
        pmu.arch_events_unavailable & 0x7F,
        0,
        "all 7 architectural events"
    );
    assert!(pmu.global_control && pmu.perf_capabilities && !pmu.hypervisor);
    assert!(!pmu.tsx, "a Pentium has no TSX: IN_TX must not be allowed");
    assert_eq!(pmu.evtsel_allowed_bits() & evtsel::IN_TX, 0);
    let tsc = pmu.cpuid_tsc.unwrap();
    assert_eq!((tsc.hz, tsc.source), (3_600_000_000, TscSource::Cpuid16));
    assert_eq!(
        pmu.summary(),
        "intel arch perfmon v4: 4 x 48-bit + 3 fixed x 48-bit"
    );
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
    assert_ne!(allowed & Evtsel::ANY, 0);
    assert_ne!(allowed & evtsel::IN_TX, 0);
    assert_eq!(allowed & Evtsel::INT, 0);
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
        pmu.evtsel_allowed_bits() & Evtsel::ANY,
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
    assert_ne!(pmu.evtsel_allowed_bits() & Evtsel::EVENT_HIGH, 0);
    let allow = AllowList::for_pmu(&pmu);
    assert!(
        allow
            .to_string()
            .contains("PerfCntrGlobalCtl 0xc0000301 (rw)"),
        "{allow}"
    );
}

/// Recorded from this project's build machine (an EPYC family 0x1A guest of a Firecracker VM)
/// with `CpuidDump::record(.., &CpuidInstruction)`. The expected values were checked by hand
/// against the raw registers and /proc/cpuinfo at recording time: vendor words 0x68747541
/// 0x69746e65 0x444d4163 = "AuthenticAMD"; leaf 1 EAX 0x00b00f21 = base family 0xF + extended
/// 0x0B = 0x1A, model 0x02, stepping 1 (cpuinfo: family 26, model 2); leaf 1 ECX bit 31 set
/// (hypervisor); 0x80000001 ECX 0x004003f3 has bit 23 clear (no PerfCtrExtCore; cpuinfo has
/// no `perfctr_core`); maximum extended leaf 0x80000021 < 0x80000022 (no PerfMonV2; cpuinfo
/// has no `perfmon_v2`).
#[test]
fn amd_zen5_firecracker_recorded() {
    let dump = recorded("amd-zen5-firecracker").unwrap();
    let raw = |leaf| dump.cpuid(leaf, 0).unwrap();
    // The raw bits first, so a decoder bug cannot hide behind a matching expectation.
    assert_eq!(raw(0x8000_0001).ecx & (1 << 23), 0, "PerfCtrExtCore bit");
    assert_eq!(raw(0x8000_0000).eax, 0x8000_0021, "maximum extended leaf");
    assert_eq!(raw(1).eax, 0x00b0_0f21);
    let pmu = PmuInfo::from_cpuid(&dump).unwrap();
    assert_eq!(pmu.identity.vendor, Vendor::Amd);
    assert_eq!(
        (
            pmu.identity.family,
            pmu.identity.model,
            pmu.identity.stepping
        ),
        (0x1A, 0x02, 1)
    );
    assert!(pmu.hypervisor);
    assert_eq!(pmu.arch, PmuArch::AmdLegacy, "no PerfCtrExtCore");
    assert_eq!((pmu.version, pmu.gp_counters, pmu.gp_width), (1, 4, 48));
    assert!(!pmu.global_control, "no PerfMonV2");
    assert_eq!(pmu.global_msrs(), None);
    assert!(pmu.fixed.is_empty());
    assert_eq!(pmu.evtsel_msr(3), 0xC001_0003);
    assert_eq!(pmu.counter_msr(3), 0xC001_0007);
    assert_eq!(pmu.summary(), "amd legacy counters: 4 x 48-bit");
    let allow = AllowList::for_pmu(&pmu);
    assert!(!allow.permits(0xC001_0200, counterhal_msr::Access::Read));
    assert!(!allow.permits(0xC000_0301, counterhal_msr::Access::Write));
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
        assert_eq!(pmu.fixed.mask(), config.fixed_set(), "{kind}");
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
    let dump = recorded("amd-zen4").unwrap();
    let path = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-zen4-{}.cpuid", std::process::id()));
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
    // The dump reads back as what was recorded.
    let again = CpuidDump::parse("this machine", &text).unwrap();
    assert_eq!(
        again.leaves().collect::<Vec<_>>(),
        recorded.leaves().collect::<Vec<_>>()
    );
    let leaf0 = CpuidInstruction.cpuid(0, 0).unwrap();
    assert!(leaf0.eax >= 1, "maximum basic leaf {:#x}", leaf0.eax);
    let mut vendor = Vec::new();
    for word in [leaf0.ebx, leaf0.edx, leaf0.ecx] {
        vendor.extend_from_slice(&word.to_le_bytes());
    }
    let vendor = String::from_utf8_lossy(&vendor).to_string();
    let decoded = PmuInfo::from_cpuid(&CpuidInstruction);
    match &decoded {
        Ok(pmu) => eprintln!("this machine: {pmu}"),
        Err(error) => {
            // A VM without a virtual PMU: Intel says version 0; the error says why.
            assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
            eprintln!("this machine has no usable PMU: {error}");
        }
    }
    let mut missing = Vec::new();
    // What the kernel read from CPUID at boot agrees with the instruction now.
    match std::fs::read_to_string("/proc/cpuinfo") {
        Ok(cpuinfo) => {
            let field = |name: &str| {
                cpuinfo.lines().find_map(|line| {
                    let (key, value) = line.split_once(':')?;
                    (key.trim() == name).then(|| value.trim().to_string())
                })
            };
            assert_eq!(field("vendor_id").as_deref(), Some(vendor.as_str()));
            if let Ok(pmu) = &decoded {
                let number = |name| field(name).and_then(|v| v.parse::<u32>().ok());
                assert_eq!(number("cpu family"), Some(pmu.identity.family));
                assert_eq!(number("model"), Some(pmu.identity.model));
                let flags = field("flags").unwrap_or_default();
                let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
                assert_eq!(has("hypervisor"), pmu.hypervisor, "hypervisor flag");
                if pmu.is_amd() {
                    // The kernel reports these bits as CPUID has them.
                    let ext = CpuidInstruction.cpuid(0x8000_0001, 0).unwrap();
                    let core_ext = ext.ecx & (1 << 23) != 0;
                    assert_eq!(
                        has("perfctr_core"),
                        core_ext,
                        "perfctr_core vs 0x80000001 ECX bit 23"
                    );
                    if core_ext {
                        assert_eq!(pmu.arch, PmuArch::AmdCore);
                    }
                    if has("perfmon_v2") {
                        assert!(pmu.global_control, "perfmon_v2 vs 0x80000022");
                    }
                }
            }
        }
        Err(error) => missing.push(format!("the /proc/cpuinfo comparison: {error}")),
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
        Err(error) => missing.push(format!("/dev/cpu/0/cpuid: {error}")),
    }
    if !missing.is_empty() {
        counterhal_conformance::skip!(
            Need::System,
            "checked the instruction, but not {}",
            missing.join("; nor ")
        );
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
