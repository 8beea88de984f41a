//! The driver model against the rules of OpenBSD's pctr.c, one test per rule, through the
//! public device seam (`PctrDevice::ioctl`) exactly as the backend uses it.

use counterhal_hal::DeviceKind;
use counterhal_hal::ErrorKind;
use counterhal_pctr::abi::{
    PCIOCRD_CURRENT, PCIOCRD_LEGACY, PCIOCRD_TRANSITIONAL, PCIOCS0, PCIOCS1, PCIOCS2, PCIOCS3,
    PctrStCurrent, PctrStLegacy, PctrStTransitionalAmd64, PctrStTransitionalI386, ior, iow,
};
use counterhal_pctr::{
    Abi, Errno, IoctlArg, ModelConfig, ModelCpu, ModelHandle, PctrDevice, ResetPolicy, detect_abi,
    function, set_function,
};

/// One `PCIOCRD` of `abi` through the ABI's own structs, the unused slots zero.
#[derive(Debug)]
struct Read {
    functions: [u32; 4],
    tsc: u64,
    counters: [u64; 4],
    idle: u64,
}

fn read_snapshot(device: &mut dyn PctrDevice, abi: Abi) -> Result<Read, Errno> {
    match abi {
        Abi::Legacy => {
            let mut st = PctrStLegacy::default();
            device.ioctl(PCIOCRD_LEGACY, IoctlArg::ReadLegacy(&mut st))?;
            Ok(Read {
                functions: [st.pctr_fn[0], st.pctr_fn[1], 0, 0],
                tsc: st.pctr_tsc,
                counters: [st.pctr_hwc[0], st.pctr_hwc[1], 0, 0],
                idle: st.pctr_idl,
            })
        }
        Abi::TransitionalI386 => {
            let mut st = PctrStTransitionalI386::default();
            device.ioctl(
                PCIOCRD_TRANSITIONAL,
                IoctlArg::ReadTransitionalI386(&mut st),
            )?;
            Ok(Read {
                functions: st.pctr_fn,
                tsc: st.pctr_tsc,
                counters: st.pctr_hwc,
                idle: st.pctr_idl,
            })
        }
        Abi::TransitionalAmd64 => {
            let mut st = PctrStTransitionalAmd64::default();
            device.ioctl(
                PCIOCRD_TRANSITIONAL,
                IoctlArg::ReadTransitionalAmd64(&mut st),
            )?;
            Ok(Read {
                functions: st.pctr_fn,
                tsc: st.pctr_tsc,
                counters: st.pctr_hwc,
                idle: st.pctr_idl,
            })
        }
        Abi::Current => {
            let mut st = PctrStCurrent::default();
            device.ioctl(PCIOCRD_CURRENT, IoctlArg::ReadCurrent(&mut st))?;
            Ok(Read {
                functions: st.pctr_fn,
                tsc: st.pctr_tsc,
                counters: st.pctr_hwc,
                idle: 0,
            })
        }
    }
}

const U: u32 = function::U;
const K: u32 = function::K;
const EN: u32 = function::EN;

fn set(device: &mut dyn PctrDevice, counter: u32, word: u32) -> Result<(), Errno> {
    set_function(device, counter, word)
}

#[test]
fn counters_per_cpu_kind() {
    for (cpu, counters) in [
        (ModelCpu::P5, 2),
        (ModelCpu::P6, 2),
        (ModelCpu::IntelArch, 2),
        (ModelCpu::Amd, 4),
    ] {
        let model = ModelHandle::new(cpu);
        let mut device = model.open(true);
        for counter in 0..counters {
            assert_eq!(
                set(&mut device, counter, 0x16 | 0x80),
                Ok(()),
                "{cpu} counter {counter}"
            );
        }
        assert_eq!(
            set(&mut device, counters, 0),
            Err(Errno::EINVAL),
            "{cpu} counter {counters}"
        );
    }
}

#[test]
fn index_is_checked_before_write_access() {
    let model = ModelHandle::new(ModelCpu::IntelArch);
    let mut read_only = model.open(false);
    // Counter 2 does not exist on Intel: EINVAL even though the descriptor is read-only.
    assert_eq!(set(&mut read_only, 2, 0xc0 | U | EN), Err(Errno::EINVAL));
    // Counter 0 exists: now the mode is checked.
    assert_eq!(set(&mut read_only, 0, 0xc0 | U | EN), Err(Errno::EPERM));
    assert!(!read_only.writable());
    assert_eq!(
        model.function(0),
        0,
        "a refused set must not program anything"
    );
}

#[test]
fn write_access_is_checked_before_the_function() {
    let model = ModelHandle::new(ModelCpu::Amd);
    let mut read_only = model.open(false);
    assert_eq!(set(&mut read_only, 3, 0x10_0000), Err(Errno::EPERM));
    let mut writable = model.open(true);
    assert_eq!(set(&mut writable, 3, 0x10_0000), Err(Errno::EINVAL));
}

#[test]
fn bits_19_to_21_are_refused() {
    for cpu in [ModelCpu::P6, ModelCpu::IntelArch, ModelCpu::Amd] {
        let model = ModelHandle::new(cpu);
        let mut device = model.open(true);
        for bit in [19, 20, 21] {
            let word = 0xc0 | U | EN | (1 << bit);
            assert_eq!(
                set(&mut device, 0, word),
                Err(Errno::EINVAL),
                "{cpu} bit {bit}"
            );
        }
        // Every other bit is accepted verbatim, EN not forced.
        let word = 0xff00_0000 | function::I | function::E | 0x2f00 | 0xc0 | U | K;
        assert_eq!(set(&mut device, 1, word), Ok(()));
        assert_eq!(model.function(1), word);
        assert_eq!(model.function(1) & EN, 0, "the driver must not set EN");
    }
}

#[test]
fn p5_functions_from_0x200_are_refused() {
    let model = ModelHandle::new(ModelCpu::P5);
    let mut device = model.open(true);
    assert_eq!(set(&mut device, 0, 0x1ff), Ok(()));
    assert_eq!(set(&mut device, 0, 0x200), Err(Errno::EINVAL));
    assert_eq!(set(&mut device, 1, 0x8000_0000), Err(Errno::EINVAL));
    assert_eq!(model.function(0), 0x1ff);
}

#[test]
fn a_cpu_without_counters_answers_enodev() {
    let model = ModelHandle::new(ModelCpu::TscOnly);
    let mut device = model.open(true);
    assert_eq!(set(&mut device, 0, 0xc0 | U | EN), Err(Errno::ENODEV));
    // ENODEV comes first, even for a counter index no CPU has and a read-only descriptor.
    let mut read_only = model.open(false);
    assert_eq!(set(&mut read_only, 3, 0x38_0000), Err(Errno::ENODEV));
    // Reads work and give the TSC only.
    model.advance_tsc(5_000);
    let snapshot = read_snapshot(&mut device, Abi::Current).unwrap();
    assert!(snapshot.tsc > 5_000);
    assert_eq!(snapshot.counters, [0; 4]);
    assert_eq!(snapshot.functions, [0; 4]);
}

#[test]
fn unknown_requests_answer_einval() {
    let model = ModelHandle::new(ModelCpu::Amd);
    let mut device = model.open(true);
    // A set request past PCIOCS3, a void request, and the other ABI's PCIOCRD.
    assert_eq!(
        device.ioctl(iow(b'c', 12, 4), IoctlArg::Function(0)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        device.ioctl(0x2000_6301, IoctlArg::Function(0)),
        Err(Errno::EINVAL)
    );
    let mut legacy = PctrStLegacy::default();
    assert_eq!(
        device.ioctl(PCIOCRD_LEGACY, IoctlArg::ReadLegacy(&mut legacy)),
        Err(Errno::EINVAL)
    );
    // PCIOCRD with the wrong argument shape.
    assert_eq!(
        device.ioctl(PCIOCRD_CURRENT, IoctlArg::Function(0)),
        Err(Errno::EINVAL)
    );
    // The legacy driver knows only PCIOCS0 and PCIOCS1.
    let model = ModelHandle::new(ModelCpu::P6);
    let mut device = model.open(true);
    assert_eq!(
        device.ioctl(PCIOCS2, IoctlArg::Function(0)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        device.ioctl(PCIOCS3, IoctlArg::Function(0)),
        Err(Errno::EINVAL)
    );
    let mut current = PctrStCurrent::default();
    let result = device.ioctl(PCIOCRD_CURRENT, IoctlArg::ReadCurrent(&mut current));
    assert_eq!(result, Err(Errno::EINVAL));
    assert_eq!(
        device.ioctl(ior(b'c', 2, 40), IoctlArg::ReadLegacy(&mut legacy)),
        Err(Errno::EINVAL)
    );
}

#[test]
fn abi_detection_tries_current_then_legacy() {
    for (cpu, abi) in [
        (ModelCpu::P5, Abi::Legacy),
        (ModelCpu::P6, Abi::Legacy),
        (ModelCpu::IntelArch, Abi::Current),
        (ModelCpu::Amd, Abi::Current),
        (ModelCpu::TscOnly, Abi::Current),
    ] {
        let model = ModelHandle::new(cpu);
        assert_eq!(detect_abi(&mut model.open(false)), Ok(abi), "{cpu}");
    }
}

#[test]
fn minor_other_than_zero_is_enxio() {
    let model = ModelHandle::new(ModelCpu::P6);
    assert_eq!(model.open_minor(1, false).unwrap_err(), Errno::ENXIO);
    let device = model.open_minor(0, true).unwrap();
    assert_eq!(device.kind(), DeviceKind::Model);
}

#[test]
fn opens_share_state_and_counters_stay_programmed_after_close() {
    let model = ModelHandle::new(ModelCpu::Amd);
    {
        let mut first = model.open(true);
        set(&mut first, 2, 0xc0 | U | EN).unwrap();
    }
    model.retire_instructions(7, 0);
    let mut second = model.open(false);
    let snapshot = read_snapshot(&mut second, Abi::Current).unwrap();
    assert_eq!(snapshot.functions[2], 0xc0 | U | EN);
    assert_eq!(snapshot.counters[2], 7);
}

#[test]
fn current_driver_resets_only_when_the_function_changes() {
    let model = ModelHandle::new(ModelCpu::IntelArch);
    assert_eq!(model.reset_policy(), ResetPolicy::WhenFunctionChanges);
    let mut device = model.open(true);
    let word = 0xc0 | U | EN;
    set(&mut device, 0, word).unwrap();
    model.retire_instructions(100, 0);
    set(&mut device, 0, word).unwrap();
    assert_eq!(
        model.counter(0),
        100,
        "same function: the counter keeps its value"
    );
    set(&mut device, 0, 0).unwrap();
    set(&mut device, 0, word).unwrap();
    assert_eq!(
        model.counter(0),
        0,
        "0 then the function: the counter is zeroed"
    );
}

#[test]
fn legacy_driver_resets_on_every_set() {
    let model = ModelHandle::new(ModelCpu::P6);
    assert_eq!(model.reset_policy(), ResetPolicy::EverySet);
    let mut device = model.open(true);
    let word = 0xc0 | U | EN;
    set(&mut device, 0, word).unwrap();
    model.retire_instructions(100, 0);
    assert_eq!(model.counter(0), 100);
    set(&mut device, 0, word).unwrap();
    assert_eq!(model.counter(0), 0);
}

#[test]
fn p6_counter_zero_en_gates_both() {
    let model = ModelHandle::new(ModelCpu::P6);
    let mut device = model.open(true);
    set(&mut device, 1, 0xc0 | U | EN).unwrap();
    model.retire_instructions(10, 0);
    assert_eq!(
        model.counter(1),
        0,
        "counter 1 must not count while counter 0 lacks EN"
    );
    set(&mut device, 0, EN).unwrap(); // EN alone: counter 0 counts nothing itself
    model.retire_instructions(10, 0);
    assert_eq!(model.counter(1), 10);
    assert_eq!(model.counter(0), 0);
    // EN in counter 1 alone does nothing; counter 0's EN is what matters.
    set(&mut device, 0, 0xc0 | U).unwrap();
    model.retire_instructions(10, 0);
    assert_eq!((model.counter(0), model.counter(1)), (0, 10));
}

#[test]
fn intel_and_amd_counters_need_their_own_en() {
    for cpu in [ModelCpu::IntelArch, ModelCpu::Amd] {
        let model = ModelHandle::new(cpu);
        let mut device = model.open(true);
        set(&mut device, 0, 0xc0 | U | EN).unwrap();
        set(&mut device, 1, 0xc0 | U).unwrap();
        model.retire_instructions(10, 0);
        assert_eq!((model.counter(0), model.counter(1)), (10, 0), "{cpu}");
    }
}

#[test]
fn user_and_kernel_bits_filter() {
    let model = ModelHandle::new(ModelCpu::Amd);
    let mut device = model.open(true);
    set(&mut device, 0, 0xc0 | U | EN).unwrap();
    set(&mut device, 1, 0xc0 | K | EN).unwrap();
    set(&mut device, 2, 0xc0 | U | K | EN).unwrap();
    set(&mut device, 3, 0xc0 | EN).unwrap();
    model.retire_instructions(3, 40);
    let counts: Vec<u64> = (0..4).map(|i| model.counter(i)).collect();
    assert_eq!(counts, vec![3, 40, 43, 0]);

    let model = ModelHandle::new(ModelCpu::P5);
    let mut device = model.open(true);
    set(&mut device, 0, 0x16 | function::P5_U).unwrap();
    set(&mut device, 1, 0x16 | function::P5_K).unwrap();
    model.retire_instructions(3, 40);
    assert_eq!((model.counter(0), model.counter(1)), (3, 40));
}

#[test]
fn events_and_unit_masks_select() {
    let model = ModelHandle::new(ModelCpu::P6);
    let mut device = model.open(true);
    // L2_LD (0x29) with M and E states on counter 0, with all MESI on counter 1.
    set(
        &mut device,
        0,
        0x29 | function::UM_M | function::UM_E | U | EN,
    )
    .unwrap();
    set(&mut device, 1, 0x29 | function::UM_MESI | U | EN).unwrap();
    model.feed(0x29, Some(0x01), 5, 0); // invalid-state loads: only counter 1
    model.feed(0x29, Some(0x08), 7, 0); // modified-state loads: both
    model.feed(0x2a, None, 100, 0); // another event: neither
    assert_eq!((model.counter(0), model.counter(1)), (7, 12));
}

#[test]
fn counters_wrap_at_the_hardware_width() {
    for (cpu, bits) in [
        (ModelCpu::P6, 40),
        (ModelCpu::IntelArch, 48),
        (ModelCpu::Amd, 48),
    ] {
        let model = ModelHandle::new(cpu);
        let mut device = model.open(true);
        set(&mut device, 0, 0xc0 | U | EN).unwrap();
        model.set_counter(0, (1u64 << bits) - 3);
        model.retire_instructions(5, 0);
        assert_eq!(model.counter(0), 2, "{cpu}");
        let snapshot = read_snapshot(&mut device, cpu.abi()).unwrap();
        assert_eq!(snapshot.counters[0], 2, "{cpu}");
    }
}

#[test]
fn the_tsc_advances_with_every_ioctl() {
    let model = ModelHandle::new(ModelCpu::IntelArch);
    let mut device = model.open(true);
    let first = read_snapshot(&mut device, Abi::Current).unwrap().tsc;
    let second = read_snapshot(&mut device, Abi::Current).unwrap().tsc;
    assert!(second > first, "{second} <= {first}");
    model.set_ioctl_cycles(0);
    model.advance_tsc(123);
    let third = read_snapshot(&mut device, Abi::Current).unwrap().tsc;
    assert_eq!(third - second, 123);
}

#[test]
fn reads_fill_only_the_cpus_slots() {
    let model = ModelHandle::new(ModelCpu::IntelArch);
    let mut device = model.open(true);
    set(&mut device, 1, 0xc0 | U | EN).unwrap();
    model.retire_instructions(9, 0);
    let mut st = PctrStCurrent {
        pctr_fn: [7; 4],
        pctr_tsc: 0,
        pctr_hwc: [7; 4],
    };
    device
        .ioctl(PCIOCRD_CURRENT, IoctlArg::ReadCurrent(&mut st))
        .unwrap();
    assert_eq!(st.pctr_fn, [0, 0xc0 | U | EN, 0, 0]);
    assert_eq!(st.pctr_hwc, [0, 9, 0, 0]);

    let model = ModelHandle::new(ModelCpu::P5);
    let mut device = model.open(false);
    model.advance_idle(42);
    let snapshot = read_snapshot(&mut device, Abi::Legacy).unwrap();
    assert_eq!(snapshot.idle, 42);
}

#[test]
fn rdpmc_is_enabled_as_the_kernel_does() {
    assert!(
        ModelHandle::new(ModelCpu::P6).user_rdpmc_enabled(),
        "legacy P6: at attach"
    );
    assert!(!ModelHandle::new(ModelCpu::P5).user_rdpmc_enabled());
    let model = ModelHandle::new(ModelCpu::Amd);
    assert!(!model.user_rdpmc_enabled());
    set(&mut model.open(true), 0, 0xc0 | U | EN).unwrap();
    assert!(
        model.user_rdpmc_enabled(),
        "current: at the first nonzero function"
    );
}

#[test]
fn sets_are_recorded() {
    let model = ModelHandle::new(ModelCpu::Amd);
    let mut device = model.open(true);
    set(&mut device, 1, 5).unwrap();
    let _ = device.ioctl(PCIOCS0, IoctlArg::Function(0x38_0000));
    let sets = model.recent_sets();
    assert_eq!(sets.len(), 2);
    assert_eq!(
        (sets[0].request, sets[0].counter, sets[0].function),
        (PCIOCS1, 1, 5)
    );
    assert_eq!(sets[1].result, Err(Errno::EINVAL));
    for _ in 0..1_000 {
        set(&mut device, 0, 0).unwrap();
    }
    assert_eq!(model.recent_sets().len(), counterhal_pctr::MODEL_SET_LOG);
    model.clear_sets();
    assert!(model.recent_sets().is_empty());
}

fn p5_current() -> ModelHandle {
    let config = ModelConfig::new(ModelCpu::P5)
        .with_abi(Abi::Current)
        .expect("the current i386 driver drives the P5");
    ModelHandle::with_config(config)
}

#[test]
fn p5_under_the_current_abi() {
    let model = p5_current();
    assert!(!model.config().is_amd64(), "the P5 exists only on i386");
    let mut device = model.open(true);
    assert_eq!(detect_abi(&mut device), Ok(Abi::Current));
    let word = 0x16 | function::P5_U;
    // PCIOCS0 and PCIOCS1 reach the CESR path.
    assert_eq!(set(&mut device, 0, word), Ok(()));
    assert_eq!(set(&mut device, 1, 0x12 | function::P5_K), Ok(()));
    // PCIOCS2 and PCIOCS3 are known requests, refused by p5ctrsel's index check (EINVAL),
    // which comes before the write-access check.
    let mut read_only = model.open(false);
    for counter in [2, 3] {
        assert_eq!(set(&mut device, counter, word), Err(Errno::EINVAL));
        assert_eq!(set(&mut read_only, counter, word), Err(Errno::EINVAL));
    }
    assert_eq!(set(&mut read_only, 0, word), Err(Errno::EPERM));
    assert_eq!(set(&mut device, 0, 0x200 | 0x16), Err(Errno::EINVAL));
    assert_eq!(model.function(0), word, "refused sets change nothing");
    // PCIOCRD fills the two P5 slots; slots 2 and 3 read 0.
    model.retire_instructions(30, 4);
    model.retire_branches(2, 9);
    let snapshot = read_snapshot(&mut device, Abi::Current).unwrap();
    assert_eq!(snapshot.functions, [word, 0x12 | function::P5_K, 0, 0]);
    assert_eq!(snapshot.counters, [30, 9, 0, 0]);
    // p5ctrsel zeroes the counter on every set, whatever the ABI.
    assert_eq!(model.reset_policy(), ResetPolicy::EverySet);
    set(&mut device, 0, word).unwrap();
    assert_eq!(model.counter(0), 0);
    // The legacy ABI's PCIOCRD is unknown to this driver.
    let mut legacy = PctrStLegacy::default();
    assert_eq!(
        device.ioctl(PCIOCRD_LEGACY, IoctlArg::ReadLegacy(&mut legacy)),
        Err(Errno::EINVAL)
    );
    assert!(!model.user_rdpmc_enabled(), "no rdpmc on the P5");
}

#[test]
fn i386_kernel_masks_rdpmc_to_40_bits() {
    let word = 0xc0 | U | EN;
    let near = (1u64 << 40) - 10;
    for (config, read) in [
        (ModelConfig::new(ModelCpu::IntelArch).i386(), 10),
        (ModelConfig::new(ModelCpu::IntelArch), (1 << 40) + 10),
        (ModelConfig::new(ModelCpu::Amd).i386(), 10),
    ] {
        let model = ModelHandle::with_config(config);
        assert_eq!(config.hardware_width(), 48);
        let mut device = model.open(true);
        set(&mut device, 0, word).unwrap();
        model.set_counter(0, near);
        model.retire_instructions(20, 0);
        // The 48-bit hardware counter has not wrapped...
        assert_eq!(model.counter(0), (1 << 40) + 10, "{}", config.describe());
        // ...but the i386 kernel's rdpmc keeps only 40 bits of it.
        let snapshot = read_snapshot(&mut device, Abi::Current).unwrap();
        assert_eq!(snapshot.counters[0], read, "{}", config.describe());
    }
}

#[test]
fn i386_current_driver_resets_on_every_set() {
    let model = ModelHandle::with_config(ModelConfig::new(ModelCpu::IntelArch).i386());
    assert_eq!(model.reset_policy(), ResetPolicy::EverySet);
    // The i386 driver enables user rdpmc at attach, not at the first set.
    assert!(model.user_rdpmc_enabled());
    let mut device = model.open(true);
    let word = 0xc0 | U | EN;
    set(&mut device, 0, word).unwrap();
    model.retire_instructions(100, 0);
    set(&mut device, 0, word).unwrap();
    assert_eq!(model.counter(0), 0, "same function, still zeroed");
}

#[test]
fn legacy_tsc_only_cpu() {
    let config = ModelConfig::new(ModelCpu::TscOnly)
        .with_abi(Abi::Legacy)
        .expect("the legacy driver runs on CPUs without counters");
    let model = ModelHandle::with_config(config);
    let mut device = model.open(true);
    assert_eq!(detect_abi(&mut device), Ok(Abi::Legacy));
    // PCIOCRD: the struct with the TSC and the idle count set, the rest zero.
    model.advance_tsc(5_000);
    model.advance_idle(42);
    let before = model.tsc();
    let mut st = PctrStLegacy {
        pctr_fn: [7, 7],
        pctr_tsc: 7,
        pctr_hwc: [7, 7],
        pctr_idl: 7,
    };
    device
        .ioctl(PCIOCRD_LEGACY, IoctlArg::ReadLegacy(&mut st))
        .unwrap();
    assert!(st.pctr_tsc > before, "{} <= {before}", st.pctr_tsc);
    assert_eq!(st.pctr_idl, 42);
    assert_eq!(st.pctr_fn, [0, 0]);
    assert_eq!(st.pctr_hwc, [0, 0]);
    // PCIOCS0/1: ENODEV, on any descriptor, whatever the function.
    let mut read_only = model.open(false);
    for counter in [0, 1] {
        assert_eq!(set(&mut device, counter, 0x16), Err(Errno::ENODEV));
        assert_eq!(set(&mut read_only, counter, 0x38_0000), Err(Errno::ENODEV));
    }
    // PCIOCS2/3 are unknown to the legacy driver: EINVAL from its default case.
    for request in [PCIOCS2, PCIOCS3] {
        assert_eq!(
            device.ioctl(request, IoctlArg::Function(0x16)),
            Err(Errno::EINVAL)
        );
    }
    assert!(model.recent_sets().iter().all(|r| r.result.is_err()));
    assert!(!model.user_rdpmc_enabled());
}

#[test]
fn model_configs_refuse_what_no_driver_does() {
    for (cpu, abi) in [
        (ModelCpu::P6, Abi::Current),
        (ModelCpu::IntelArch, Abi::Legacy),
        (ModelCpu::Amd, Abi::Legacy),
    ] {
        let error = ModelConfig::new(cpu).with_abi(abi).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{cpu} {abi}");
        assert!(error.message().contains(cpu.name()), "{error}");
        assert!(error.hint().is_some());
    }
    let intel = ModelConfig::new(ModelCpu::IntelArch);
    assert_eq!(intel.with_hardware_width(40).unwrap().read_width(), 40);
    assert_eq!(
        intel.with_hardware_width(0).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert!(intel.with_hardware_width(65).is_err());
    assert!(
        ModelConfig::new(ModelCpu::TscOnly)
            .with_hardware_width(48)
            .is_err()
    );
    // Moving to the legacy ABI makes the kernel i386.
    let legacy_tsc = ModelConfig::new(ModelCpu::TscOnly)
        .with_abi(Abi::Legacy)
        .unwrap();
    assert!(!legacy_tsc.is_amd64());
}
