//! Kernel revisions and CPUs beyond each CPU's usual driver: the i386 driver of late 2007
//! (`pctr.c` 1.23) and the amd64 one of September 2007 (1.1) with their 64-byte ABIs, the
//! i386 driver of 2023 on (1.31), the amd64 driver without the CPUID leaf 0xA guard (1.10),
//! and what real P5 and P6 hardware reads back.

use std::sync::Arc;

use counterhal_events::{CpuIdentity, Database, Vendor};
use counterhal_hal::{
    Backend, BackendTarget, CounterSet, Encoding, ErrorKind, EventRequest, Evtsel, Group,
    OpenOptions, P5Cesr,
};
use counterhal_pctr::abi::{PCIOCRD_CURRENT, PctrStCurrent, PctrStTransitionalI386};
use counterhal_pctr::{
    Abi, CpuFacts, CpuKind, Errno, IoctlArg, MODEL_TSC_HZ, ModelConfig, ModelCpu, ModelHandle,
    PctrBackend, PctrDevice, PctrGroup, Revision, TscFrequency, TscSource, backend_for_device,
    detect_abi, function, set_function,
};

const U: u32 = function::U;
const EN: u32 = function::EN;

fn db() -> Arc<Database> {
    Arc::new(Database::shipped().expect("the shipped database loads"))
}

fn model_tsc() -> TscFrequency {
    TscFrequency::new(MODEL_TSC_HZ, TscSource::Model)
}

fn facts(vendor: Vendor, family: u32, model: u32, version: u32) -> CpuFacts {
    CpuFacts {
        identity: CpuIdentity {
            vendor,
            family,
            model,
            stepping: 0,
        },
        arch_perfmon_version: version,
        arch_perfmon_width: if version > 0 { 40 } else { 0 },
    }
}

fn pentium3() -> CpuFacts {
    facts(Vendor::Intel, 6, 0x08, 0)
}

/// A Core 2 whose CPUID's highest leaf is below 0xA ("Limit CPUID Maxval").
fn limited_core2() -> CpuFacts {
    facts(Vendor::Intel, 6, 0x0f, 0)
}

fn evtsel(name: &str, word: u32, counters: u32) -> EventRequest {
    let mut evtsel = Evtsel::from_event_select(u64::from(word));
    evtsel.counters = CounterSet::from_mask(counters);
    EventRequest::new(name, Encoding::Evtsel(evtsel))
}

fn open(backend: &PctrBackend, requests: &[EventRequest]) -> counterhal_hal::Result<PctrGroup> {
    backend.open(
        requests,
        &BackendTarget::ThisThread,
        &OpenOptions::default(),
    )
}

fn values(group: &mut PctrGroup) -> Vec<u64> {
    group
        .read_to_vec()
        .unwrap()
        .iter()
        .map(|r| r.value)
        .collect()
}

fn probed(config: ModelConfig, facts: &CpuFacts) -> counterhal_hal::Result<PctrBackend> {
    probed_with(config, facts).map(|(backend, _)| backend)
}

/// A backend found over a fresh model as on a real machine, and the model's handle.
fn probed_with(
    config: ModelConfig,
    facts: &CpuFacts,
) -> counterhal_hal::Result<(PctrBackend, ModelHandle)> {
    let model = ModelHandle::with_config(config);
    let backend = backend_for_device(
        db(),
        None,
        Box::new(model.open(true)),
        facts,
        config.is_amd64(),
        model_tsc(),
    )?;
    Ok((backend, model))
}

fn read_current(device: &mut dyn PctrDevice) -> PctrStCurrent {
    let mut st = PctrStCurrent::default();
    device
        .ioctl(PCIOCRD_CURRENT, IoctlArg::ReadCurrent(&mut st))
        .expect("PCIOCRD");
    st
}

// Item: the read-back check compares only the bits each counter defines.

#[test]
fn p6_counter_one_reads_en_back_as_zero() {
    let model = ModelHandle::new(ModelCpu::P6);
    let mut device = model.open(true);
    set_function(&mut device, 1, 0x12 | U | EN).unwrap();
    set_function(&mut device, 0, 0xc0 | U | EN).unwrap();
    let mut st = counterhal_pctr::abi::PctrStLegacy::default();
    device
        .ioctl(Abi::Legacy.read_request(), IoctlArg::ReadLegacy(&mut st))
        .unwrap();
    assert_eq!(
        st.pctr_fn,
        [0xc0 | U | EN, 0x12 | U],
        "EN is reserved in PerfEvtSel1"
    );
    // The function itself is held as written.
    assert_eq!(model.function(1), 0x12 | U | EN);
}

#[test]
fn a_p6_group_on_both_counters_is_not_busy_on_healthy_hardware() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P6);
    let mut group = open(
        &backend,
        &[
            evtsel("INST_RETIRED", 0xc0 | U, 0b01),
            evtsel("MUL", 0x12 | U, 0b10),
        ],
    )
    .unwrap();
    group.enable().unwrap();
    assert_eq!(
        model.function(1) & EN,
        EN,
        "the backend sets EN on counter 1 too"
    );
    model.retire_instructions(10, 0);
    model.feed(0x12, None, 3, 0);
    assert_eq!(values(&mut group), vec![10, 3]);
    // A real change of counter 1's event is still seen.
    set_function(&mut model.open(true), 1, 0x13 | U | EN).unwrap();
    assert_eq!(group.read_to_vec().unwrap_err().kind(), ErrorKind::Busy);
}

#[test]
fn a_p5_with_cesr_bits_outside_the_function_is_not_busy() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P5);
    model.set_p5_reserved_bits(0x0200 | 0x7c00);
    let mut cesr = P5Cesr::new(0x16);
    cesr.domain = counterhal_hal::Domain::CONTEXTS | counterhal_hal::Domain::USER;
    cesr.counters = CounterSet::first(2);
    let request = EventRequest::new("INSTRUCTIONS_EXECUTED", Encoding::P5Cesr(cesr));
    let mut group = open(&backend, &[request]).unwrap();
    group.enable().unwrap();
    let mut st = counterhal_pctr::abi::PctrStLegacy::default();
    model
        .open(false)
        .ioctl(Abi::Legacy.read_request(), IoctlArg::ReadLegacy(&mut st))
        .unwrap();
    assert_eq!(
        st.pctr_fn[0] & 0xfe00,
        0x7e00,
        "the model reads the bits back"
    );
    model.retire_instructions(7, 0);
    assert_eq!(values(&mut group), vec![7]);
    // A different function within the nine bits is still seen.
    set_function(&mut model.open(true), 0, 0x12 | function::P5_U).unwrap();
    assert_eq!(group.read_to_vec().unwrap_err().kind(), ErrorKind::Busy);
}

// Item: the P6 under the i386 driver of late 2007, through its four-slot (64-byte) ABI.

fn read_transitional_i386(device: &mut dyn PctrDevice) -> PctrStTransitionalI386 {
    let mut st = PctrStTransitionalI386::default();
    device
        .ioctl(
            Abi::TransitionalI386.read_request(),
            IoctlArg::ReadTransitionalI386(&mut st),
        )
        .expect("PCIOCRD");
    st
}

#[test]
fn the_2007_i386_driver_drives_a_p6_through_four_slots() {
    let config = ModelConfig::new(ModelCpu::P6)
        .with_abi(Abi::TransitionalI386)
        .unwrap();
    assert!(!config.is_amd64());
    assert_eq!(
        config.describe(),
        "p6 model, transitional-i386 ABI (i386 pctr.c 1.23)"
    );
    let model = ModelHandle::with_config(config);
    let mut device = model.open(true);
    assert_eq!(detect_abi(&mut device), Ok(Abi::TransitionalI386));
    set_function(&mut device, 1, 0x12 | U | EN).unwrap();
    set_function(&mut device, 0, 0xc0 | U | EN).unwrap();
    assert_eq!(
        set_function(&mut device, 2, 0xc0 | U | EN),
        Err(Errno::EINVAL)
    );
    model.retire_instructions(5, 0);
    model.advance_idle(7);
    let st = read_transitional_i386(&mut device);
    assert_eq!(st.pctr_hwc, [5, 0, 0, 0]);
    assert_eq!(st.pctr_fn[2..], [0, 0]);
    assert_eq!(st.pctr_idl, 7);
    // The amd64 layout of the same request number is not this model's.
    let mut other = counterhal_pctr::abi::PctrStTransitionalAmd64::default();
    assert_eq!(
        device.ioctl(
            Abi::TransitionalAmd64.read_request(),
            IoctlArg::ReadTransitionalAmd64(&mut other)
        ),
        Err(Errno::EINVAL)
    );

    let (backend, model) = probed_with(config, &pentium3()).unwrap();
    assert_eq!(
        (backend.cpu_kind(), backend.abi(), backend.counters()),
        (CpuKind::P6, Abi::TransitionalI386, 2)
    );
    assert_eq!(backend.counter_width(), 40);
    assert_eq!(backend.cpu_id(), "piii");
    // Driven the P6 way, so it counts on counter 1 with counter 0 as the gate.
    let mut group = open(&backend, &[evtsel("MUL", 0x12 | U, 0b10)]).unwrap();
    group.enable().unwrap();
    model.feed(0x12, None, 4, 0);
    assert_eq!(values(&mut group), vec![4]);
}

#[test]
fn no_current_abi_driver_drives_a_p6() {
    assert!(
        ModelConfig::new(ModelCpu::P6)
            .with_abi(Abi::Current)
            .is_err()
    );
    // A current driver that refuses an Intel CPU without leaf 0xA: unsupported, said so.
    let error = probed(ModelConfig::new(ModelCpu::TscOnly), &pentium3()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
    assert!(error.message().contains("refuses counter 0"), "{error}");
}

// Item: the 2007 i386 driver takes PCIOCS0 and PCIOCS1 only, on AMD too.

#[test]
fn the_2007_i386_driver_takes_two_counters_on_amd() {
    let config = ModelConfig::new(ModelCpu::Amd)
        .with_abi(Abi::TransitionalI386)
        .unwrap();
    assert_eq!(config.counters(), 2);
    let model = ModelHandle::with_config(config);
    let mut device = model.open(true);
    for counter in [2, 3] {
        assert_eq!(
            set_function(&mut device, counter, 0xc0 | U | EN),
            Err(Errno::EINVAL)
        );
    }
    assert_eq!(set_function(&mut device, 1, 0xc0 | U | EN), Ok(()));

    let amd = facts(Vendor::Amd, 0x0f, 0x04, 0);
    let backend = probed(config, &amd).unwrap();
    assert_eq!(backend.counters(), 2);
    assert_eq!(backend.capabilities().general_counters(), Some(2));
    let three: Vec<EventRequest> = (0..3)
        .map(|i| evtsel(&format!("e{i}"), 0xc0 | U, 0b1111))
        .collect();
    let error = open(&backend, &three).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable, "{error}");
    let mut group = open(&backend, &three[..2]).unwrap();
    group.enable().unwrap();
    // An event for counter 2 or 3 only cannot be placed.
    let error = backend
        .program_word(&evtsel("high", 0xc0 | U, 0b1100))
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable, "{error}");

    // The same CPU under the usual i386 driver keeps four.
    let usual = ModelConfig::new(ModelCpu::Amd).i386();
    assert_eq!(probed(usual, &amd).unwrap().counters(), 4);
}

// Item: the 64-byte ABIs are recognised (amd64's here; i386's above).

#[test]
fn the_2007_amd64_driver_and_its_abi_are_recognised() {
    let config = ModelConfig::new(ModelCpu::IntelArch)
        .with_abi(Abi::TransitionalAmd64)
        .unwrap();
    assert!(config.is_amd64());
    let core2 = facts(Vendor::Intel, 6, 0x0f, 2);
    let (backend, model) = probed_with(config, &core2).unwrap();
    assert_eq!(
        (backend.cpu_kind(), backend.abi(), backend.counters()),
        (CpuKind::IntelArch, Abi::TransitionalAmd64, 2)
    );
    // Read with rdmsr: the counter's own 40 bits (CPUID's width), no kernel mask below them.
    assert_eq!(backend.counter_width(), 40);
    let mut group = open(&backend, &[evtsel("INST_RETIRED", 0xc0 | U, 0b11)]).unwrap();
    group.enable().unwrap();
    model.retire_instructions(21, 2);
    model.advance_idle(1);
    assert_eq!(values(&mut group), vec![21]);
    let mut st = counterhal_pctr::abi::PctrStTransitionalAmd64::default();
    model
        .open(false)
        .ioctl(
            Abi::TransitionalAmd64.read_request(),
            IoctlArg::ReadTransitionalAmd64(&mut st),
        )
        .unwrap();
    assert_eq!((st.pctr_hwc[0], st.pctr_idl), (21, 1));
    assert_eq!(st.pctr_fn[0] & 0xff, 0xc0);
}

// Item: amd64 pctr.c 1.10 reads leaf 0xA without checking the highest leaf.

#[test]
fn an_intel_cpu_with_cpuid_below_0xa_is_driven_when_the_driver_says_so() {
    let config = ModelConfig::new(ModelCpu::IntelArch)
        .with_hardware_width(40)
        .unwrap();
    let core2 = limited_core2();
    // CPUID alone refuses it...
    assert!(core2.kind_under(Abi::Current).is_err());
    // ...the driver's answer decides.
    let backend = probed(config, &core2).unwrap();
    assert_eq!(
        (
            backend.cpu_kind(),
            backend.counters(),
            backend.counter_width()
        ),
        (CpuKind::IntelArch, 2, 40)
    );
    // The shipped database has a Core 2 table (`core`), which this CPU (family 6 model 0x0f)
    // takes.
    assert_eq!(backend.cpu_id(), "core");
    // A NetBurst EM64T (family 15) likewise.
    let netburst = facts(Vendor::Intel, 0x0f, 0x04, 0);
    assert_eq!(
        probed(config, &netburst).unwrap().cpu_kind(),
        CpuKind::IntelArch
    );
    // A driver with the guard answers ENODEV: unsupported, with the firmware hint.
    let guarded = ModelConfig::new(ModelCpu::TscOnly);
    let error = probed(guarded, &core2).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
    assert!(
        error.hint().unwrap().contains("Limit CPUID Maxval"),
        "{error}"
    );
}

// Item: a P5 under the i386 driver of 2023 on answers ENODEV.

#[test]
fn a_p5_under_the_2023_i386_driver_is_not_driven() {
    let config = ModelConfig::new(ModelCpu::P5)
        .with_abi(Abi::Current)
        .unwrap()
        .with_revision(Revision::I386Since2023)
        .unwrap();
    assert_eq!(config.counters(), 0);
    assert_eq!(config.describe(), "p5 model, current ABI (i386 2023 on)");
    let model = ModelHandle::with_config(config);
    let mut device = model.open(true);
    assert_eq!(
        set_function(&mut device, 0, 0x16 | function::P5_U),
        Err(Errno::ENODEV)
    );
    model.advance_tsc(10);
    let st = read_current(&mut device);
    assert_ne!(st.pctr_tsc, 0);
    assert_eq!((st.pctr_fn, st.pctr_hwc), ([0; 4], [0; 4]));

    let (backend, _model) = PctrBackend::with_model_config(db(), config);
    let error = open(&backend, &[evtsel("x", 0x16, 0b11)]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
}

#[test]
fn a_p5_under_the_2023_driver_fails_on_enable_when_programmed_blind() {
    // A backend that believes it drives a P5 (built from CPUID alone) meets ENODEV at the
    // first set, reported as unsupported, and leaves nothing programmed.
    let config = ModelConfig::new(ModelCpu::P5)
        .with_abi(Abi::Current)
        .unwrap()
        .with_revision(Revision::I386Since2023)
        .unwrap();
    let model = ModelHandle::with_config(config);
    let p5 = facts(Vendor::Intel, 5, 2, 0);
    let backend = backend_for_device(
        db(),
        None,
        Box::new(model.open(true)),
        &p5,
        false,
        model_tsc(),
    )
    .unwrap();
    assert_eq!(backend.cpu_kind(), CpuKind::P5);
    let mut cesr = P5Cesr::new(0x16);
    cesr.counters = CounterSet::first(2);
    let mut group = open(
        &backend,
        &[EventRequest::new(
            "INSTRUCTIONS_EXECUTED",
            Encoding::P5Cesr(cesr),
        )],
    )
    .unwrap();
    let error = group.enable().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
    assert_eq!(error.errno(), Some(Errno::ENODEV.0));
    assert!(!group.is_enabled());
}

// Item: a Core 2 under the legacy driver is driven as a P6 with its own events.

#[test]
fn a_core2_under_the_legacy_driver_takes_its_own_events() {
    let legacy = ModelConfig::new(ModelCpu::P6);
    let core2 = facts(Vendor::Intel, 6, 0x0f, 2);
    let backend = probed(legacy, &core2).unwrap();
    assert_eq!(backend.cpu_kind(), CpuKind::P6);
    assert_eq!(backend.cpu_id(), "core", "the Core 2 table, not the P6 one");
    let cycles = backend.resolve("cycles").unwrap();
    let Encoding::Evtsel(evtsel) = &cycles.terms[0].request.encoding else {
        panic!("cycles is no event select: {cycles:?}");
    };
    assert_eq!(evtsel.code, 0x3c, "Core 2's cycles, not the P6's 0x79");
    // A Pentium III keeps a P6 table: libpfm4's Pentium III one, with pctr(1)'s names.
    let p3 = probed(legacy, &pentium3()).unwrap();
    assert_eq!(p3.cpu_id(), "piii");
    let Encoding::Evtsel(evtsel) = &p3.resolve("cycles").unwrap().terms[0].request.encoding else {
        panic!("cycles is no event select on the P6");
    };
    assert_eq!(evtsel.code, 0x79);
}

/// A test-only Core 2 table (issue 12 adds the real one): the selection must pick it over
/// both the P6 table and the architectural one.
const CORE2_TABLE: &str = r#"
[[cpu]]
id = "core2-test"
description = "Core 2, for a test"
encoder = "intel-arch"
match = [{ vendor = "intel", family = 6, model = "0x0f" }]
pmu = { general_counters = 2, counter_width = 40 }
event = [
  { name = "CPU_CLK_UNHALTED", code = 0x3c, desc = "Core cycles" },
  { name = "INST_RETIRED", code = 0xc0, desc = "Instructions retired" },
]
[cpu.generalized]
cycles = "CPU_CLK_UNHALTED"
instructions = "INST_RETIRED"
"#;

#[test]
fn a_core2_table_is_chosen_when_the_database_has_one() {
    let db = Database::shipped()
        .unwrap()
        .with_toml_str("core2-test.toml", CORE2_TABLE)
        .expect("the test table loads");
    let db = Arc::new(db);
    let model = ModelHandle::new(ModelCpu::P6);
    let core2 = facts(Vendor::Intel, 6, 0x0f, 2);
    let backend = backend_for_device(
        Arc::clone(&db),
        None,
        Box::new(model.open(true)),
        &core2,
        false,
        model_tsc(),
    )
    .unwrap();
    // The shipped Core 2 table (`core`) is found before an added file's.
    assert_eq!(backend.cpu_id(), "core");
    let cycles = backend.resolve("cycles:u").unwrap();
    let Encoding::Evtsel(evtsel) = &cycles.terms[0].request.encoding else {
        panic!("no event select: {cycles:?}");
    };
    assert_eq!(evtsel.code, 0x3c);
    // And it counts on the legacy driver's P6 path.
    let mut group = backend
        .open(
            &[cycles.terms[0].request.clone()],
            &BackendTarget::ThisThread,
            &OpenOptions::default(),
        )
        .unwrap();
    group.enable().unwrap();
    model.feed(0x3c, None, 9, 0);
    assert_eq!(values(&mut group), vec![9]);
}
