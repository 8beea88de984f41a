//! The allow-list, and hostile encodings (as a hostile events file would produce): nothing
//! outside the PMU registers of the detected PMU is ever read or written.

use std::collections::BTreeSet;

use counterhal_hal::{
    Backend, BackendTarget, CounterSet, Domain, Encoding, ErrorKind, EventRequest, Evtsel, Group,
    OpenOptions,
};
use counterhal_msr::regs::*;
use counterhal_msr::{Access, MsrBackend, PmuArch, PmuInfo, PmuModelKind};

use crate::common::{cycles_gp, encoding, instructions, model, request, select};

/// The registers each PMU may touch, written out independently of the allow-list code.
fn expected(pmu: &PmuInfo) -> (BTreeSet<u32>, BTreeSet<u32>) {
    let mut read = BTreeSet::from([TSC]);
    let mut write = BTreeSet::new();
    let mut rw = |msr: u32| {
        read.insert(msr);
        write.insert(msr);
    };
    for i in 0..pmu.gp_counters {
        match pmu.arch {
            PmuArch::IntelArch => {
                rw(0xC1 + i);
                rw(0x186 + i);
                if pmu.full_width_writes {
                    rw(0x4C1 + i);
                }
            }
            PmuArch::AmdLegacy => {
                rw(0xC001_0000 + i);
                rw(0xC001_0004 + i);
            }
            PmuArch::AmdCore => {
                rw(0xC001_0200 + 2 * i);
                rw(0xC001_0201 + 2 * i);
            }
        }
    }
    for f in pmu.fixed.iter() {
        rw(0x309 + f);
    }
    if !pmu.fixed.is_empty() {
        rw(0x38D);
    }
    if pmu.global_control {
        let (ctrl, status, clear) = match pmu.arch {
            PmuArch::IntelArch => (0x38F, 0x38E, 0x390),
            _ => (0xC000_0301, 0xC000_0300, 0xC000_0302),
        };
        rw(ctrl);
        read.insert(status);
        write.insert(clear);
    }
    if pmu.perf_capabilities {
        read.insert(0x345);
    }
    // Intel v2 and later: offcore response 0 and 1, load latency, frontend.
    if pmu.arch == PmuArch::IntelArch && pmu.version >= 2 {
        for msr in [0x1A6, 0x1A7, 0x3F6, 0x3F7] {
            read.insert(msr);
            write.insert(msr);
        }
    }
    (read, write)
}

#[test]
fn the_list_is_exactly_the_pmu_registers() {
    for kind in PmuModelKind::ALL {
        let (backend, _) = model(kind);
        let allow = backend.allow_list();
        let (read, write) = expected(backend.pmu());
        let candidates = (0..0x1000u32)
            .chain(0xC000_0000..0xC000_0400)
            .chain(0xC001_0000..0xC001_0400)
            .chain([0xFFFF_FFFF, 0x4000_0000]);
        for msr in candidates {
            assert_eq!(
                allow.permits(msr, Access::Read),
                read.contains(&msr),
                "{kind} read {msr:#x}"
            );
            assert_eq!(
                allow.permits(msr, Access::Write),
                write.contains(&msr),
                "{kind} write {msr:#x}"
            );
        }
    }
}

#[test]
fn direct_access_outside_the_list_never_reaches_the_device() {
    let cases: [(PmuModelKind, u32, Access); 10] = [
        (PmuModelKind::IntelV4, IA32_PERF_CTL, Access::Write),
        (PmuModelKind::IntelV4, IA32_MISC_ENABLE, Access::Write),
        (PmuModelKind::IntelV4, IA32_MISC_ENABLE, Access::Read),
        (PmuModelKind::IntelV4, TSC, Access::Write),
        (
            PmuModelKind::IntelV4,
            IA32_PERF_GLOBAL_STATUS,
            Access::Write,
        ),
        (PmuModelKind::IntelV4, IA32_PERF_CAPABILITIES, Access::Write),
        (PmuModelKind::IntelV2, IA32_A_PMC0, Access::Write),
        (PmuModelKind::AmdZen, AMD_HWCR, Access::Write),
        // The model implements the legacy aliases, but this PMU is driven through the
        // extended registers only.
        (PmuModelKind::AmdZen, AMD_PERF_EVT_SEL0, Access::Write),
        (PmuModelKind::AmdLegacy, AMD_PERF_CTL_EXT0, Access::Read),
    ];
    for (kind, msr, access) in cases {
        let (backend, model) = model(kind);
        let before = model.peek(0, msr);
        let error = match access {
            Access::Read => backend.read_msr(0, msr).unwrap_err(),
            Access::Write => backend.write_msr(0, msr, 0xDEAD).unwrap_err(),
        };
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{kind} {msr:#x}");
        assert!(error.message().contains(&format!("{msr:#x}")), "{error}");
        assert!(error.hint().unwrap().starts_with("allowed: "), "{error}");
        assert!(
            model.accesses().is_empty(),
            "{kind} {msr:#x} reached the device"
        );
        assert_eq!(model.peek(0, msr), before);
    }
    // Allowed accesses do reach it.
    let (backend, model) = model(PmuModelKind::IntelV4);
    backend
        .write_msr(0, IA32_PERFEVTSEL0 + 3, 0x43_003C)
        .unwrap();
    assert_eq!(
        backend.read_msr(0, IA32_PERFEVTSEL0 + 3).unwrap(),
        0x43_003C
    );
    assert_eq!(model.accesses().len(), 2);
}

/// Encodings as a hostile events file could write them: each is refused before any register
/// is touched. (Bits an encoding cannot carry at all, such as INT or bit 50, no longer reach
/// the backend: [`Evtsel`] has no field for them.)
#[test]
fn hostile_encodings_are_refused_before_any_access() {
    let intel: &[(&str, u64, CounterSet, Option<u32>, ErrorKind)] = &[
        // Counter 19's select would be 0x186 + 19 = 0x199, IA32_PERF_CTL.
        (
            "counter 19",
            select(0x3C, 0, true, true),
            CounterSet::only(19),
            None,
            ErrorKind::InvalidEvent,
        ),
        (
            "counters 4-31",
            select(0x3C, 0, true, true),
            CounterSet::from_mask(!0xF),
            None,
            ErrorKind::InvalidEvent,
        ),
        // Fixed 0x84 would be 0x309 + 0x84 = 0x38D, the fixed control itself.
        (
            "fixed 0x84",
            select(0xC0, 0, true, true),
            CounterSet::NONE,
            Some(0x84),
            ErrorKind::InvalidEvent,
        ),
        (
            "fixed 3",
            select(0xC0, 0, true, true),
            CounterSet::NONE,
            Some(3),
            ErrorKind::InvalidEvent,
        ),
        (
            "fixed 31",
            select(0xC0, 0, true, true),
            CounterSet::NONE,
            Some(31),
            ErrorKind::InvalidEvent,
        ),
        (
            "AMD event bits",
            select(0x1C1, 0, true, true),
            CounterSet::first(4),
            None,
            ErrorKind::InvalidEvent,
        ),
        // On Intel bit 40 is the second unit-mask byte: a guest-only domain is refused as a
        // filter the backend does not have.
        (
            "GuestOnly",
            select(0x3C, 0, true, true) | Evtsel::GUEST_ONLY,
            CounterSet::first(4),
            None,
            ErrorKind::Unsupported,
        ),
        (
            "no privilege level",
            select(0x3C, 0, false, false),
            CounterSet::first(4),
            None,
            ErrorKind::InvalidEvent,
        ),
    ];
    let amd: &[(&str, u64, CounterSet, Option<u32>, ErrorKind)] = &[
        // Legacy counter 6's select would be 0xC0010006: PerfCtr2, not a select; extended
        // counter 6's would be 0xC001020C, past the six counters.
        (
            "counter 6",
            select(0x76, 0, true, true),
            CounterSet::only(6),
            None,
            ErrorKind::InvalidEvent,
        ),
        (
            "fixed only",
            select(0xC0, 0, true, true),
            CounterSet::NONE,
            Some(0),
            ErrorKind::InvalidEvent,
        ),
        (
            "AnyThread",
            select(0x76, 0, true, true) | Evtsel::ANY,
            CounterSet::first(4),
            None,
            ErrorKind::InvalidEvent,
        ),
    ];
    let v2_any = select(0x3C, 0, true, true) | Evtsel::ANY;
    let cases = intel
        .iter()
        .map(|c| (PmuModelKind::IntelV4, *c))
        .chain(amd.iter().map(|c| (PmuModelKind::AmdLegacy, *c)))
        .chain(amd.iter().map(|c| (PmuModelKind::AmdZen, *c)))
        .chain([(
            PmuModelKind::IntelV2,
            (
                "AnyThread on v2",
                v2_any,
                CounterSet::first(2),
                None,
                ErrorKind::InvalidEvent,
            ),
        )]);
    // Fields at their limits: a 16-bit event code no PMU has, every counter and fixed
    // counter; and a 13-bit event code, one more than AMD's 12 bits.
    let mut all_ones = Evtsel::new(u16::MAX, u8::MAX);
    (
        all_ones.edge,
        all_ones.invert,
        all_ones.any_thread,
        all_ones.cmask,
    ) = (true, true, true, 255);
    all_ones.counters = CounterSet::ALL;
    all_ones.fixed = Some(u32::MAX);
    let mut wide_amd = Evtsel::new(0x10C1, 0);
    wide_amd.counters = CounterSet::first(4);
    let fields = [
        (PmuModelKind::IntelV4, "all ones", all_ones),
        (PmuModelKind::AmdZen, "all ones", all_ones),
        (PmuModelKind::AmdZen, "event 0x10c1", wide_amd),
    ];
    let cases = cases
        .map(|(kind, (what, value, counters, fixed, error_kind))| {
            (kind, what, encoding(value, counters, fixed), error_kind)
        })
        .chain(
            fields
                .into_iter()
                .map(|(kind, what, evtsel)| (kind, what, evtsel, ErrorKind::InvalidEvent)),
        );
    for (kind, what, evtsel, error_kind) in cases {
        let (backend, model) = model(kind);
        let hostile = EventRequest::new(what, Encoding::Evtsel(evtsel));
        // Alone, and behind a valid event: neither touches a register.
        for events in [vec![hostile.clone()], vec![cycles_gp(&model), hostile]] {
            let error = backend
                .open(&events, &BackendTarget::Cpu(0), &OpenOptions::default())
                .unwrap_err();
            assert_eq!(error.kind(), error_kind, "{kind} {what}: {error}");
            assert!(error.message().starts_with(what), "{kind}: {error}");
            assert!(
                model.accesses().is_empty(),
                "{kind} {what}: {:?}",
                model.accesses()
            );
        }
    }
}

/// Mixed encodings that name real counters among bogus ones are placed on real counters only;
/// every access of a whole session stays on the list.
#[test]
fn a_whole_session_stays_on_the_list() {
    for kind in PmuModelKind::ALL {
        let (backend, model) = model(kind);
        let (code, umask) = model.cycles_event();
        let wide = request(
            "wide",
            select(code, umask, true, true),
            CounterSet::from_mask(u32::MAX),
            Some(7),
        );
        let mut events = vec![wide, instructions(&backend, &model), cycles_gp(&model)];
        // The v1 model has only two counters in all.
        let pmu = backend.pmu();
        events.truncate((pmu.gp_counters + pmu.fixed_counters()) as usize);
        let mut group = backend
            .open(&events, &BackendTarget::Cpu(1), &OpenOptions::default())
            .unwrap();
        group.enable().unwrap();
        group.set_counter(0, 1).unwrap();
        model.feed_on(1, code, umask, 5, 5).unwrap();
        group.read_to_vec().unwrap();
        group.reset().unwrap();
        group.disable().unwrap();
        drop(group);
        let allow = backend.allow_list();
        let accesses = model.accesses();
        assert!(accesses.len() > 10);
        for access in accesses {
            assert!(
                allow.permits(access.msr, access.access),
                "{kind}: {access:?}"
            );
            assert!(access.accepted, "{kind}: the CPU refused {access:?}");
            assert_eq!(access.cpu, 1);
        }
    }
}

#[test]
fn names_and_display() {
    let (backend, _) = model(PmuModelKind::IntelV4);
    let allow = backend.allow_list();
    assert_eq!(allow.name(0x188).as_deref(), Some("IA32_PERFEVTSEL2"));
    assert_eq!(allow.name(0x30A).as_deref(), Some("IA32_FIXED_CTR1"));
    assert_eq!(allow.name(0x38F).as_deref(), Some("IA32_PERF_GLOBAL_CTRL"));
    assert_eq!(allow.name(0x199), None);
    let text = allow.to_string();
    assert!(
        text.starts_with("intel arch perfmon v4: 4 x 48-bit + 3 fixed x 48-bit: "),
        "{text}"
    );
    assert!(text.contains("IA32_PMC0-3 0xc1-0xc4 (rw)"), "{text}");
    assert!(
        text.contains("IA32_PERF_GLOBAL_OVF_CTRL 0x390 (w)"),
        "{text}"
    );
    let error = backend
        .allow_list()
        .check(0x38E, Access::Write)
        .unwrap_err();
    assert!(
        error
            .message()
            .contains("IA32_PERF_GLOBAL_STATUS may not be written"),
        "{error}"
    );
    let (backend, _) = model(PmuModelKind::AmdZen);
    assert_eq!(
        backend.allow_list().name(0xC001_0205).as_deref(),
        Some("PerfCtr2")
    );
    let _: &MsrBackend = &backend;
}

/// AMD's HostOnly and GuestOnly bits exist from family 10h on, but for 11h: on K8 (and 11h) a
/// host-only event select is refused before any register is touched.
#[test]
fn host_and_guest_filters_only_where_amd_has_the_bits() {
    let db = std::sync::Arc::new(counterhal_events::Database::shipped().unwrap());
    for (family, filters) in [(0x0f, false), (0x10, true), (0x11, false), (0x19, true)] {
        let mut config = PmuModelKind::AmdLegacy.config();
        config.family = family;
        let (backend, model) =
            MsrBackend::with_model_config(std::sync::Arc::clone(&db), config).unwrap();
        let domains = backend.capabilities().accepts().domains;
        assert_eq!(
            domains.contains(Domain::HOST),
            filters,
            "family {family:#x}"
        );
        let mut host_only = Evtsel::new(0x76, 0);
        host_only.counters = CounterSet::first(4);
        host_only.domain = Domain::DEFAULT.difference(Domain::GUEST);
        let request = EventRequest::new("cycles:H", Encoding::Evtsel(host_only));
        let opened = backend.open(&[request], &BackendTarget::Cpu(0), &OpenOptions::default());
        assert_eq!(opened.is_ok(), filters, "family {family:#x}");
        if !filters {
            assert_eq!(opened.unwrap_err().kind(), ErrorKind::Unsupported);
            assert!(model.accesses().is_empty(), "family {family:#x}");
        }
    }
}
