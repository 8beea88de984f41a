//! The signature rule against every CPUID dump in `tests/data` (two recorded on real CPUs, the
//! others written from the vendors' documentation; each file's header says which): each decodes
//! to the family, model and stepping its header states, and prints back to text that parses to
//! the same leaves.

use std::path::Path;

use counterhal_events::Vendor;
use counterhal_x86::{CpuidDump, CpuidSource, TscSource, cpu_identity, identify};

const DUMPS: [(&str, Vendor, u32, u32, u32); 6] = [
    ("amd-zen2", Vendor::Amd, 0x17, 0x31, 0),
    ("amd-zen4", Vendor::Amd, 0x19, 0x11, 1),
    ("amd-zen5-firecracker", Vendor::Amd, 0x1a, 0x02, 1),
    ("intel-core2", Vendor::Intel, 6, 0x17, 10),
    ("intel-kabylake-pentium-g4600", Vendor::Intel, 6, 0x9e, 9),
    ("intel-skylake", Vendor::Intel, 6, 0x5e, 3),
];

fn dump(name: &str) -> CpuidDump {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/{name}.cpuid"));
    CpuidDump::from_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_dump_decodes_to_the_cpu_its_header_names() {
    for (name, vendor, family, model, stepping) in DUMPS {
        let dump = dump(name);
        let cpu = cpu_identity(&dump).unwrap();
        assert_eq!(
            (cpu.vendor, cpu.family, cpu.model, cpu.stepping),
            (vendor, family, model, stepping),
            "{name}"
        );
        let header = format!("family {family:#x} model {model:#04x} stepping {stepping}");
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/{name}.cpuid")),
        )
        .unwrap();
        let stated = text.lines().next().unwrap_or("").to_ascii_lowercase();
        let decimal_family = format!("family {family} model {model:#04x} stepping {stepping}");
        assert!(
            stated.contains(&header) || stated.contains(&decimal_family),
            "{name}: the header says `{stated}`, the decoder {header}"
        );
    }
}

#[test]
fn dumps_print_back_to_the_same_leaves() {
    for (name, ..) in DUMPS {
        let dump = dump(name);
        let again = CpuidDump::parse(name, &dump.to_text()).unwrap();
        assert_eq!(
            again.leaves().collect::<Vec<_>>(),
            dump.leaves().collect::<Vec<_>>(),
            "{name}"
        );
        assert!(dump.leaves().count() >= 5, "{name}");
    }
}

#[test]
fn intel_dumps_give_the_tsc_frequency_their_leaves_state() {
    let kaby = dump("intel-kabylake-pentium-g4600");
    let identified = identify(&kaby).unwrap();
    let tsc = counterhal_x86::TscFrequency::from_cpuid(&kaby, identified.max_basic_leaf)
        .unwrap()
        .expect("Kaby Lake has leaf 0x15 or 0x16");
    assert!(matches!(
        tsc.source,
        TscSource::Cpuid15 | TscSource::Cpuid16
    ));
    assert!((1_000_000_000..6_000_000_000).contains(&tsc.hz), "{tsc:?}");
    // AMD answers neither leaf with a frequency.
    let zen5 = dump("amd-zen5-firecracker");
    let max = zen5.cpuid(0, 0).unwrap().eax;
    assert_eq!(
        counterhal_x86::TscFrequency::from_cpuid(&zen5, max).unwrap(),
        None
    );
}
