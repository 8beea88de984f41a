//! A hybrid chip: each CPU's own CPUID (leaf 0x1A) says whether it is a Core or an Atom core,
//! and a group on a CPU programs that core's encoding of a name. An Alder Lake model with CPUs
//! 0-1 Core (Golden Cove, `adl_glc`) and 2-3 Atom (Gracemont, `adl_grt`).

use std::sync::Arc;

use counterhal_events::Database;
use std::time::Duration;

use counterhal_hal::{
    Backend, BackendTarget, DeviceKind, Encoding, Error, ErrorKind, EventRequest, Evtsel, Group,
    OpenOptions, Result,
};
use counterhal_msr::regs::IA32_PERFEVTSEL0;
use counterhal_msr::{
    CpuidSource, ModelConfig, ModelDevice, MsrBackend, MsrDevice, PmuModelKind, Tick, Timer,
};

fn alder_lake() -> ModelConfig {
    let mut config = PmuModelKind::IntelV5.config();
    (config.family, config.model, config.stepping) = (6, 0x97, 2);
    config.cpus = 4;
    config.hybrid_core_cpus = Some(2);
    config
}

/// A backend on `device` (an Alder Lake model, CPUID as CPU 0 answers it), resolving with
/// the model `named` or the detected one.
fn on_device(device: impl MsrDevice + 'static, named: Option<&str>) -> MsrBackend {
    let db = Arc::new(Database::shipped().unwrap());
    let cpuid = alder_lake().cpuid_of(0);
    MsrBackend::with_device(db, Arc::new(device), &cpuid, named.map(str::to_string)).unwrap()
}

/// The event select programmed on `cpu` when `events` open there (event and unit mask).
fn programmed(backend: &MsrBackend, events: &[EventRequest], cpu: u32) -> u64 {
    let mut group = backend
        .open(events, &BackendTarget::Cpu(cpu), &OpenOptions::default())
        .unwrap_or_else(|e| panic!("CPU {cpu}: {e}"));
    group.enable().unwrap();
    let select = backend.read_msr(cpu, IA32_PERFEVTSEL0).unwrap();
    group.disable().unwrap();
    select & 0xFFFF
}

fn single(backend: &MsrBackend, name: &str) -> EventRequest {
    let resolved = backend.resolve(name).unwrap();
    assert_eq!(resolved.terms.len(), 1, "{name}");
    resolved.terms[0].request.clone()
}

#[test]
fn each_cpu_counts_with_its_cores_table() {
    let db = Arc::new(Database::shipped().unwrap());
    let (backend, _model) = MsrBackend::with_model_config(db, alder_lake()).unwrap();
    // Names resolve with the signature's table (the Core cores').
    assert_eq!(backend.cpu_model(), Some("adl_glc"));
    // Golden Cove counts conditional branches as 0xc4/0x11, Gracemont as 0xc4/0x7e.
    let cond = single(&backend, "BR_INST_RETIRED.COND");
    assert_eq!(programmed(&backend, std::slice::from_ref(&cond), 0), 0x11c4);
    assert_eq!(programmed(&backend, std::slice::from_ref(&cond), 1), 0x11c4);
    assert_eq!(programmed(&backend, std::slice::from_ref(&cond), 2), 0x7ec4);
    assert_eq!(programmed(&backend, std::slice::from_ref(&cond), 3), 0x7ec4);
    // BACLEARS.ANY has another event code on each: 0x60 and 0xe6.
    let baclears = single(&backend, "BACLEARS.ANY");
    assert_eq!(
        programmed(&backend, std::slice::from_ref(&baclears), 3),
        0x01e6
    );

    // An event only the Core cores have is refused on an Atom core, naming both.
    let divider = single(&backend, "ARITH.DIVIDER_ACTIVE");
    programmed(&backend, std::slice::from_ref(&divider), 0);
    let error = backend
        .open(&[divider], &BackendTarget::Cpu(2), &OpenOptions::default())
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("CPU 2 is an Atom core") && text.contains("adl_grt"),
        "{text}"
    );

    // A resolved event whose domain the caller changed is still the table's event: it is
    // translated, and keeps the domain (user mode only: USR, bit 16, without OS).
    let mut user = cond.clone();
    if let Encoding::Evtsel(e) = &mut user.encoding {
        e.domain = counterhal_hal::Domain::DEFAULT.with_levels(counterhal_hal::Domain::USER);
    }
    let mut group = backend
        .open(
            std::slice::from_ref(&user),
            &BackendTarget::Cpu(3),
            &OpenOptions::default(),
        )
        .unwrap();
    group.enable().unwrap();
    let select = backend.read_msr(3, IA32_PERFEVTSEL0).unwrap();
    group.disable().unwrap();
    assert_eq!(
        select & 0x3_ffff,
        0x1_7ec4,
        "user mode, Gracemont's code: {select:#x}"
    );
    // An encoding the caller built, under a name of its own, is theirs on every core.
    let raw = EventRequest::new("my-raw", Encoding::Evtsel(Evtsel::new(0xc4, 0x11)));
    assert_eq!(programmed(&backend, &[raw], 2), 0x11c4);
}

#[test]
fn a_named_model_encodes_every_cores_events() {
    let backend = on_device(ModelDevice::new(alder_lake()).0, Some("adl_grt"));
    let cond = single(&backend, "BR_INST_RETIRED.COND");
    assert_eq!(programmed(&backend, std::slice::from_ref(&cond), 0), 0x7ec4);
    assert_eq!(programmed(&backend, std::slice::from_ref(&cond), 3), 0x7ec4);
}

/// The model, except that CPU 3 has no cpuid device (as without `modprobe cpuid`).
#[derive(Debug)]
struct NoCpuidOn3(ModelDevice);

impl MsrDevice for NoCpuidOn3 {
    fn kind(&self) -> DeviceKind {
        self.0.kind()
    }
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn cpu_count(&self) -> u32 {
        self.0.cpu_count()
    }
    fn read(&self, cpu: u32, msr: u32) -> Result<u64> {
        self.0.read(cpu, msr)
    }
    fn write(&self, cpu: u32, msr: u32, value: u64) -> Result<()> {
        self.0.write(cpu, msr, value)
    }
    fn tsc_hz(&self) -> Option<u64> {
        self.0.tsc_hz()
    }
    fn cpuid_of(&self, cpu: u32) -> Result<Box<dyn CpuidSource>> {
        if cpu == 3 {
            return Err(Error::new(ErrorKind::DeviceMissing, "no /dev/cpu/3/cpuid"));
        }
        self.0.cpuid_of(cpu)
    }
    fn start_timer(&self, period: Duration, tick: Tick) -> Result<Timer> {
        self.0.start_timer(period, tick)
    }
}

#[test]
fn a_cpu_whose_cpuid_cannot_be_read_is_refused_with_the_reason() {
    let backend = on_device(NoCpuidOn3(ModelDevice::new(alder_lake()).0), None);
    let cond = single(&backend, "BR_INST_RETIRED.COND");
    assert_eq!(programmed(&backend, std::slice::from_ref(&cond), 2), 0x7ec4);
    let error = backend
        .open(&[cond], &BackendTarget::Cpu(3), &OpenOptions::default())
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::DeviceMissing, "{error}");
    let text = error.to_string();
    assert!(
        text.contains("CPU 3 of this hybrid chip") && text.contains("/dev/cpu/3/cpuid"),
        "{text}"
    );
}

/// Each core's own counters: Alder Lake's Core cores have eight general counters, its Atom
/// cores six. Eight events fit a Core CPU at once; on an Atom CPU they are refused as a group
/// and take turns when independent, and no register past the sixth is ever touched there.
#[test]
fn each_core_counts_on_its_own_counters() {
    let mut config = alder_lake();
    config.gp_counters = 8;
    config.hybrid_atom_counters = Some(6);
    let db = Arc::new(Database::shipped().unwrap());
    let (backend, model) = MsrBackend::with_model_config(db, config).unwrap();
    let events: Vec<EventRequest> = (0..8u8)
        .map(|i| {
            let mut e = Evtsel::new(0xc4, i);
            e.counters = counterhal_hal::CounterSet::first(8);
            EventRequest::new(format!("e{i}"), Encoding::Evtsel(e))
        })
        .collect();
    let grouped = OpenOptions::default();
    let core = backend
        .open(&events, &BackendTarget::Cpu(0), &grouped)
        .unwrap();
    drop(core);
    let error = backend
        .open(&events, &BackendTarget::Cpu(3), &grouped)
        .unwrap_err();
    assert!(error.to_string().contains("counter"), "{error}");
    let mut atom = backend
        .open(&events, &BackendTarget::Cpu(3), &OpenOptions::ungrouped())
        .unwrap();
    atom.enable().unwrap();
    atom.disable().unwrap();
    drop(atom);
    let past_six = |msr: u32| {
        (0x186 + 6..0x186 + 8).contains(&msr)
            || (0xc1 + 6..0xc1 + 8).contains(&msr)
            || (0x4c1 + 6..0x4c1 + 8).contains(&msr)
    };
    assert!(
        model
            .accesses()
            .iter()
            .all(|a| a.cpu != 3 || !past_six(a.msr)),
        "an Atom CPU's seventh or eighth counter was touched"
    );
    assert!(
        model
            .accesses()
            .iter()
            .any(|a| a.cpu == 0 && past_six(a.msr)),
        "the Core CPU's eight counters were used"
    );
}
