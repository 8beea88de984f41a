//! The driver model against the rules of FreeBSD's hwpmc source (each test names the
//! function it follows), driven through the system-call seam as the backend drives it, and the
//! backend over it.

use counterhal_hal::BackendExt;
use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hal::{Backend, BackendTarget, ErrorKind, Group, OpenOptions};
use counterhal_hwpmc::abi::{
    CPU_ANY, PmcId, PmcOpPmcAllocate, PmcOpPmcAttach, PmcOpPmcRw, PmcOpSimple, Version, caps,
    class, flag, mode, op,
};
use counterhal_hwpmc::{
    Errno, HwpmcBackend, HwpmcDevice, ModelConfig, ModelEvent, ModelHandle, OpArg, cpu_info,
};

const INSTRUCTIONS_USER: u64 = 0xC0 | (1 << 16);
const BRANCHES_ANY: u64 = 0xC4 | (1 << 16) | (1 << 17);

fn db() -> Arc<Database> {
    Arc::new(Database::shipped().expect("the shipped database loads"))
}

fn request(class: u32, config: u64, pmc_mode: u32, cpu: u32) -> PmcOpPmcAllocate {
    PmcOpPmcAllocate {
        caps: caps::READ | caps::WRITE,
        cpu,
        class,
        flags: flag::EV_PMU,
        mode: pmc_mode,
        md: [config, 0, 0, 0],
        ..PmcOpPmcAllocate::default()
    }
}

fn allocate(device: &mut dyn HwpmcDevice, mut pa: PmcOpPmcAllocate) -> Result<u32, Errno> {
    device.call(op::PMCALLOCATE, OpArg::Allocate(&mut pa))?;
    Ok(pa.pmcid)
}

fn simple(device: &mut dyn HwpmcDevice, op_number: u32, pmcid: u32) -> Result<(), Errno> {
    device.call(op_number, OpArg::Simple(&mut PmcOpSimple { pmcid }))
}

fn rw(device: &mut dyn HwpmcDevice, pmcid: u32, new: Option<u64>) -> Result<u64, Errno> {
    let mut arg = PmcOpPmcRw {
        flags: flag::OLDVALUE | new.map_or(0, |_| flag::NEWVALUE),
        pmcid,
        value: new.unwrap_or(0),
    };
    device.call(op::PMCRW, OpArg::Rw(&mut arg))?;
    Ok(arg.value)
}

/// Oracle: `pmc_do_op_pmcallocate` and `pmc_can_allocate_rowindex` (`hwpmc_mod.c`): a
/// process may hold each row once, and when no row of the class takes the request the
/// answer is EINVAL; a released row is free again.
#[test]
fn rows_run_out_with_einval_and_come_back_on_release() {
    let model = ModelHandle::new(ModelConfig::intel());
    let mut device = model.device();
    let info = cpu_info(&mut device).unwrap();
    let iap = info.classes[..info.nclass as usize]
        .iter()
        .find(|c| c.class == class::IAP)
        .unwrap();
    assert_eq!((iap.num, iap.width), (4, 48));
    let ids: Vec<u32> = (0..4)
        .map(|_| {
            allocate(
                &mut device,
                request(class::IAP, BRANCHES_ANY, mode::TC, CPU_ANY),
            )
            .unwrap()
        })
        .collect();
    let rows: Vec<u32> = ids.iter().map(|&id| PmcId::parse(id, 10).row).collect();
    assert_eq!(rows, [1, 2, 3, 4], "rows after the TSC's");
    let full = allocate(
        &mut device,
        request(class::IAP, BRANCHES_ANY, mode::TC, CPU_ANY),
    );
    assert_eq!(full, Err(Errno::EINVAL));
    simple(&mut device, op::PMCRELEASE, ids[2]).unwrap();
    let again = allocate(
        &mut device,
        request(class::IAP, BRANCHES_ANY, mode::TC, CPU_ANY),
    )
    .unwrap();
    assert_eq!(PmcId::parse(again, 10).row, 3);
}

/// Oracle: `pmc_do_op_pmcallocate`'s checks in order (`hwpmc_mod.c`): a mode that does not
/// exist, a CPU for a process-mode PMC or none for a system-mode one are EINVAL; flags outside
/// the allowed ones EINVAL (`PMC_F_EV_PMU` is V10's); capabilities the class lacks
/// EOPNOTSUPP; a class the machine lacks EINVAL. `iaf_allocate_pmc` (`hwpmc_core.c`) puts
/// INST_RETIRED.ANY on fixed counter 0 only; `iap_event_sb_sbx_ib_ibx_ok_on_counter` keeps
/// event 0xC0 on IAP counter 1 only.
#[test]
fn allocation_checks_follow_the_kernel() {
    let model = ModelHandle::new(ModelConfig::intel());
    let mut device = model.device();
    let bad_mode = PmcOpPmcAllocate {
        mode: 7,
        ..request(class::IAP, BRANCHES_ANY, mode::TC, CPU_ANY)
    };
    assert_eq!(allocate(&mut device, bad_mode), Err(Errno::EINVAL));
    assert_eq!(
        allocate(&mut device, request(class::IAP, BRANCHES_ANY, mode::TC, 0)),
        Err(Errno::EINVAL)
    );
    let root = ModelHandle::new(ModelConfig::intel().as_root());
    assert_eq!(
        allocate(
            &mut root.device(),
            request(class::IAP, BRANCHES_ANY, mode::SC, CPU_ANY)
        ),
        Err(Errno::EINVAL)
    );
    let bad_flag = PmcOpPmcAllocate {
        flags: 0x1,
        ..request(class::IAP, BRANCHES_ANY, mode::TC, CPU_ANY)
    };
    assert_eq!(allocate(&mut device, bad_flag), Err(Errno::EINVAL));
    let iaf_edge = PmcOpPmcAllocate {
        caps: caps::EDGE,
        ..request(class::IAF, INSTRUCTIONS_USER, mode::TC, CPU_ANY)
    };
    assert_eq!(allocate(&mut device, iaf_edge), Err(Errno::EOPNOTSUPP));
    assert_eq!(
        allocate(
            &mut device,
            request(class::K8, BRANCHES_ANY, mode::TC, CPU_ANY)
        ),
        Err(Errno::EINVAL)
    );
    let fixed = allocate(
        &mut device,
        request(class::IAF, INSTRUCTIONS_USER, mode::TC, CPU_ANY),
    )
    .unwrap();
    assert_eq!(
        PmcId::parse(fixed, 10).row,
        5,
        "IAF row 0, after TSC and IAP x4"
    );
    let on_iap = allocate(
        &mut device,
        request(class::IAP, INSTRUCTIONS_USER, mode::TC, CPU_ANY),
    )
    .unwrap();
    assert_eq!(PmcId::parse(on_iap, 10).row, 2, "IAP counter 1 only");
    assert_eq!(
        allocate(
            &mut device,
            request(class::IAP, INSTRUCTIONS_USER, mode::TC, CPU_ANY)
        ),
        Err(Errno::EINVAL),
        "no other IAP counter takes 0xC0"
    );
    // V9 knows no PMC_F_EV_PMU.
    let v9 = ModelHandle::new(ModelConfig::intel().with_version(Version::V9));
    assert_eq!(
        allocate(
            &mut v9.device(),
            request(class::IAP, BRANCHES_ANY, mode::TC, CPU_ANY)
        ),
        Err(Errno::EINVAL)
    );
}

/// Oracle: `amd_allocate_pmc` (`hwpmc_amd.c`): V10 wants `PMC_F_EV_PMU`; rows 0-5 take only
/// the core sub-class, so a 16-row K8 class holds 6 core events.
#[test]
fn amd_core_events_fit_six_rows() {
    let model = ModelHandle::new(ModelConfig::amd());
    let mut device = model.device();
    let no_pmu = PmcOpPmcAllocate {
        flags: 0,
        ..request(class::K8, 0xC0 | (1 << 16), mode::TC, CPU_ANY)
    };
    assert_eq!(allocate(&mut device, no_pmu), Err(Errno::EINVAL));
    for _ in 0..6 {
        allocate(
            &mut device,
            request(class::K8, 0xC0 | (1 << 16), mode::TC, CPU_ANY),
        )
        .unwrap();
    }
    assert_eq!(
        allocate(
            &mut device,
            request(class::K8, 0xC0 | (1 << 16), mode::TC, CPU_ANY)
        ),
        Err(Errno::EINVAL)
    );
}

/// Oracle: `pmc_start`, `pmc_stop`, `pmc_do_op_pmcrw`, `pmc_do_op_pmcattach`
/// (`hwpmc_mod.c`): a stop of an allocated PMC is EINVAL, a second start or stop does
/// nothing, PMCRW without a flag is EINVAL and NEWVALUE while running EBUSY, an attach while
/// running EBUSY, an unknown id EINVAL, an attach to no process ESRCH.
#[test]
fn the_state_machine_answers_as_the_kernel_does() {
    let model = ModelHandle::new(ModelConfig::intel());
    let mut device = model.device();
    let id = allocate(
        &mut device,
        request(class::IAP, BRANCHES_ANY, mode::TC, CPU_ANY),
    )
    .unwrap();
    assert_eq!(simple(&mut device, op::PMCSTOP, id), Err(Errno::EINVAL));
    simple(&mut device, op::PMCSTART, id).unwrap();
    simple(&mut device, op::PMCSTART, id).unwrap();
    let mut no_flag = PmcOpPmcRw {
        flags: 0,
        pmcid: id,
        value: 0,
    };
    assert_eq!(
        device.call(op::PMCRW, OpArg::Rw(&mut no_flag)),
        Err(Errno::EINVAL)
    );
    assert_eq!(rw(&mut device, id, Some(5)), Err(Errno::EBUSY));
    let mut attach = PmcOpPmcAttach { pmc: id, pid: 0 };
    assert_eq!(
        device.call(op::PMCATTACH, OpArg::Attach(&mut attach)),
        Err(Errno::EBUSY)
    );
    simple(&mut device, op::PMCSTOP, id).unwrap();
    simple(&mut device, op::PMCSTOP, id).unwrap();
    assert_eq!(rw(&mut device, id, Some(5)), Ok(0));
    assert_eq!(rw(&mut device, id, None), Ok(5));
    assert_eq!(
        simple(&mut device, op::PMCSTART, id + 0x10),
        Err(Errno::EINVAL)
    );
    let other = allocate(
        &mut device,
        request(class::IAP, BRANCHES_ANY, mode::TC, CPU_ANY),
    )
    .unwrap();
    let mut nobody = PmcOpPmcAttach {
        pmc: other,
        pid: 999_999_999,
    };
    assert_eq!(
        device.call(op::PMCATTACH, OpArg::Attach(&mut nobody)),
        Err(Errno::ESRCH)
    );
    simple(&mut device, op::PMCRELEASE, id).unwrap();
    assert_eq!(simple(&mut device, op::PMCRELEASE, id), Err(Errno::EINVAL));
}

/// Oracle: `pmc_do_op_pmcallocate` (system modes need `PRIV_PMC_SYSTEM` unless
/// `security.bsd.unprivileged_syspmcs`, never in a jail; an inactive CPU is ENXIO) and
/// `pmc_do_op_pmcattach` (`p_candebug`: another user's process is EPERM).
#[test]
fn privileges_are_checked_as_the_kernel_does() {
    let user = ModelHandle::new(ModelConfig::intel());
    assert_eq!(
        allocate(
            &mut user.device(),
            request(class::IAP, BRANCHES_ANY, mode::SC, 0)
        ),
        Err(Errno::EPERM)
    );
    let allowed = ModelHandle::new(ModelConfig::intel().with_unprivileged_syspmcs(true));
    allocate(
        &mut allowed.device(),
        request(class::IAP, BRANCHES_ANY, mode::SC, 0),
    )
    .unwrap();
    let jailed = ModelHandle::new(ModelConfig::intel().as_root().in_jail());
    assert_eq!(
        allocate(
            &mut jailed.device(),
            request(class::IAP, BRANCHES_ANY, mode::SC, 0)
        ),
        Err(Errno::EPERM)
    );
    let offline = ModelHandle::new(ModelConfig::intel().as_root().with_inactive_cpu(2));
    assert_eq!(
        allocate(
            &mut offline.device(),
            request(class::IAP, BRANCHES_ANY, mode::SC, 2)
        ),
        Err(Errno::ENXIO)
    );
    let mut device = user.device();
    let id = allocate(
        &mut device,
        request(class::IAP, BRANCHES_ANY, mode::TC, CPU_ANY),
    )
    .unwrap();
    let stranger = user.spawn(4242);
    let mut attach = PmcOpPmcAttach {
        pmc: id,
        pid: stranger as i32,
    };
    assert_eq!(
        device.call(op::PMCATTACH, OpArg::Attach(&mut attach)),
        Err(Errno::EPERM)
    );
    let mine = user.spawn(user.config().uid());
    attach.pid = mine as i32;
    device
        .call(op::PMCATTACH, OpArg::Attach(&mut attach))
        .unwrap();
    assert_eq!(
        device.call(op::PMCATTACH, OpArg::Attach(&mut attach)),
        Err(Errno::EEXIST)
    );
}

/// Oracle: `iap_read_pmc` (`hwpmc_core.c`) masks reads to `core_iap_width`; the backend
/// folds reads at that width (`counter_delta`), so a count that wraps between reads is right.
#[test]
fn counts_wrap_at_the_width_and_the_backend_carries_them() {
    let (backend, model) = HwpmcBackend::with_model(db(), ModelConfig::intel()).unwrap();
    let me = BackendTarget::process(model.caller());
    let mut group = backend
        .open_named(&["branches:u"], &me, &OpenOptions::default())
        .unwrap();
    group.enable().unwrap();
    model.set_counts((1 << 48) - 10);
    // The new base is taken at enable; the set jump is the test's, so start from it.
    group.reset().unwrap();
    model.run(ModelEvent::Branches, 25, 0);
    let readings = group.read_to_vec().unwrap();
    assert_eq!(readings[0].value, 25, "wrapped past 2^48 and carried");
    let mut device = model.device();
    let id = group.group().pmc_ids()[0].unwrap();
    assert_eq!(rw(&mut device, id, None), Ok(15), "the PMC itself wrapped");
}

/// Oracle: `pmc_stop` (`hwpmc_mod.c`): "If the PMC is a virtual mode one, changing the state
/// to non-RUNNING is enough ... it will handled correctly at the time its target process is
/// context switched out": the count moves on after PMCSTOP until then. The backend reads
/// before the stop and keeps what it read.
#[test]
fn a_stop_lets_the_count_move_until_a_switch_out_and_the_backend_keeps_its_fold() {
    let (backend, model) = HwpmcBackend::with_model(db(), ModelConfig::amd()).unwrap();
    let me = BackendTarget::process(model.caller());
    let mut group = backend
        .open_named(&["branches"], &me, &OpenOptions::default())
        .unwrap();
    group.enable().unwrap();
    model.run(ModelEvent::Branches, 100, 0);
    group.disable().unwrap();
    model.run(ModelEvent::Branches, 7, 0); // still on the CPU: the PMC moves
    let id = group.group().pmc_ids()[0].unwrap();
    let mut device = model.device();
    // PMCSTART forced a switch-out at 0; the saved value lags until the next one.
    assert_eq!(rw(&mut device, id, None), Ok(0), "saved value, stale");
    model.switch_out(model.caller());
    assert_eq!(
        rw(&mut device, id, None),
        Ok(107),
        "saved at the switch-out"
    );
    assert_eq!(group.read_to_vec().unwrap()[0].value, 100);
    group.enable().unwrap();
    model.run(ModelEvent::Branches, 3, 0);
    assert_eq!(group.read_to_vec().unwrap()[0].value, 103);
}

/// Oracle: `pmc_process_fork` (`hwpmc_mod.c`): PMCs with `PMC_F_DESCENDANTS` on the parent
/// follow into the child; without the flag they do not.
#[test]
fn descendants_are_counted_only_when_asked() {
    let (backend, model) = HwpmcBackend::with_model(db(), ModelConfig::intel()).unwrap();
    let parent = model.spawn(model.config().uid());
    let mut inherit = backend
        .open_named(
            &["branches"],
            &BackendTarget::process_and_children(parent),
            &OpenOptions::default(),
        )
        .unwrap();
    let mut alone = backend
        .open_named(
            &["branches"],
            &BackendTarget::process(parent),
            &OpenOptions::default(),
        )
        .unwrap();
    inherit.enable().unwrap();
    alone.enable().unwrap();
    let child = model.fork(parent);
    model.run_on(parent, 1, ModelEvent::Branches, 10, 0);
    model.run_on(child, 2, ModelEvent::Branches, 5, 0);
    model.switch_out(parent);
    model.switch_out(child);
    assert_eq!(inherit.read_to_vec().unwrap()[0].value, 15);
    assert_eq!(alone.read_to_vec().unwrap()[0].value, 10);
    // `pmc_attach_process` with PMC_F_DESCENDANTS takes the children that exist already.
    let mut late = backend
        .open_named(
            &["branches"],
            &BackendTarget::process_and_children(parent),
            &OpenOptions::default(),
        )
        .unwrap();
    late.enable().unwrap();
    model.run_on(child, 2, ModelEvent::Branches, 6, 0);
    model.switch_out(child);
    assert_eq!(late.read_to_vec().unwrap()[0].value, 6);
    let thread = backend
        .open_named(
            &["cycles"],
            &BackendTarget::ThisThread,
            &OpenOptions::default(),
        )
        .unwrap_err();
    assert_eq!(thread.kind(), ErrorKind::Unsupported);
}

/// Oracle: `pmc_do_op_pmcallocate` and `pmc_start` for system modes (`hwpmc_mod.c`): an SC
/// PMC counts what runs on its CPU, whoever runs it.
#[test]
fn a_cpu_target_counts_everything_on_that_cpu() {
    let (backend, model) = HwpmcBackend::with_model(db(), ModelConfig::intel().as_root()).unwrap();
    let mut group = backend
        .open_named(
            &["branches"],
            &BackendTarget::cpu(3),
            &OpenOptions::default(),
        )
        .unwrap();
    group.enable().unwrap();
    let other = model.spawn(77);
    model.run_on(other, 3, ModelEvent::Branches, 4, 1);
    model.run_on(model.caller(), 3, ModelEvent::Branches, 2, 0);
    model.run_on(other, 1, ModelEvent::Branches, 100, 0);
    assert_eq!(group.read_to_vec().unwrap()[0].value, 7);
    let fields = group.group().pmc_fields()[0].unwrap();
    assert_eq!((fields.cpu, fields.mode), (3, mode::SC));
    let user = HwpmcBackend::with_model(db(), ModelConfig::intel())
        .unwrap()
        .0;
    let denied = user
        .open_named(
            &["branches"],
            &BackendTarget::cpu(0),
            &OpenOptions::default(),
        )
        .unwrap_err();
    assert_eq!(denied.kind(), ErrorKind::PermissionDenied);
    assert!(
        denied.hint().unwrap().contains("unprivileged_syspmcs"),
        "{denied}"
    );
    let nowhere = backend
        .open_named(
            &["branches"],
            &BackendTarget::cpu(64),
            &OpenOptions::default(),
        )
        .unwrap_err();
    assert_eq!(nowhere.kind(), ErrorKind::InvalidInput);
}

/// Oracle: the V9 PMC id layout (`opnsense/src` `sys/sys/pmc.h`: MODE[19:12] CLASS[11:8]);
/// the backend decodes each module's ids in its own layout.
#[test]
fn v9_ids_decode_in_v9_layout() {
    let (backend, model) =
        HwpmcBackend::with_model(db(), ModelConfig::intel().with_version(Version::V9)).unwrap();
    assert_eq!(backend.version(), Version::V9);
    let me = BackendTarget::process(model.caller());
    let group = backend
        .open_named(&["instructions", "branches"], &me, &OpenOptions::default())
        .unwrap();
    let fields: Vec<PmcId> = group.group().pmc_fields().into_iter().flatten().collect();
    assert_eq!(fields[0].class, class::IAF);
    assert_eq!(fields[1].class, class::IAP);
    assert!(fields.iter().all(|f| f.mode == mode::TC && f.cpu == 0xFFF));
    let raw = group.group().pmc_ids()[1].unwrap();
    assert_eq!((raw >> 12) & 0xFF, mode::TC);
}

/// Oracle: hwpmc has no multiplexing (EINVAL when rows run out), so an ungrouped set of more
/// events than rows takes turns in the backend: at each 4 ms switch the ending turn's PMCs
/// are released and the next turn's allocated, never more than the rows at once.
#[test]
fn ungrouped_sets_take_turns_within_the_rows() {
    let (backend, model) = HwpmcBackend::with_model(db(), ModelConfig::amd()).unwrap();
    let me = BackendTarget::process(model.caller());
    let names = ["branches"; 8];
    let grouped = backend
        .open_named(&names, &me, &OpenOptions::default())
        .unwrap_err();
    assert_eq!(grouped.kind(), ErrorKind::NoCounterAvailable);
    let mut set = backend
        .open_named(&names, &me, &OpenOptions::ungrouped())
        .unwrap();
    assert_eq!(set.group().turns(), 2);
    set.enable().unwrap();
    for _ in 0..400 {
        model.run(ModelEvent::Branches, 100, 0);
        model.advance_ns(100_000);
        assert!(model.allocated() <= 6);
    }
    set.disable().unwrap();
    let readings = set.read_to_vec().unwrap();
    assert!(set.group().switches() >= 9, "{}", set.group().switches());
    for reading in &readings {
        assert!(reading.time_running < reading.time_enabled, "{reading:?}");
        let scaled = reading.scaled().unwrap() as f64;
        assert!((scaled - 40_000.0).abs() / 40_000.0 < 0.05, "{reading:?}");
    }
    drop(set);
    assert_eq!(model.allocated(), 0);
    assert_eq!(model.timers(), 0);
}

/// Oracle: `AMD_PMC_TO_EVENTMASK(x) = (x & 0xFF) | ((x & 0xF00) << 24)`, `AMD_PMC_USR` (bit
/// 16) and `AMD_PMC_OS` (bit 17) of `hwpmc_amd.h`, with which libpmc's
/// `pmc_pmu_amd_pmcallocate` builds `pm_amd_config`; `IAP_EVSEL`, `IAP_UMASK`, `IAP_USR`,
/// `IAP_OS` of `hwpmc_core.h` for Intel. The backend's configuration is that formula on the
/// database's code and unit mask, without the enable bit the kernel sets at start.
#[test]
fn configurations_follow_hwpmcs_evtsel_macros() {
    let amd = counterhal_hwpmc::model_for(db(), "amd64_fam17h_zen2").unwrap();
    let name = "RETIRED_BRANCH_MISPREDICTED_DIRECTION_MISMATCH:u";
    let resolved = amd.resolve(name).unwrap();
    let pmc = amd.pmc_event(&resolved.terms[0].request).unwrap();
    let code: u64 = 0x1c7;
    assert_eq!(
        pmc.config,
        (code & 0xFF) | ((code & 0xF00) << 24) | (1 << 16)
    );
    assert_eq!(pmc.caps, caps::READ | caps::WRITE | caps::USER);
    let intel = counterhal_hwpmc::model_for(db(), "skl").unwrap();
    let resolved = intel.resolve("branches:k").unwrap();
    let pmc = intel.pmc_event(&resolved.terms[0].request).unwrap();
    assert_eq!(pmc.config, 0xC4 | (1 << 17));
    assert_eq!(pmc.caps, caps::READ | caps::WRITE | caps::SYSTEM);
    assert_eq!(pmc.fixed, None);
    let resolved = intel.resolve("instructions").unwrap();
    let pmc = intel.pmc_event(&resolved.terms[0].request).unwrap();
    assert_eq!(pmc.config, 0xC0 | (1 << 16) | (1 << 17));
    assert_eq!(pmc.fixed, Some(0));
    // The kernel counts what the configuration selects: user and kernel both by default.
    let (backend, model) = HwpmcBackend::with_model(db(), ModelConfig::intel()).unwrap();
    let me = BackendTarget::process(model.caller());
    let mut group = backend
        .open_named(
            &["instructions", "branches:k"],
            &me,
            &OpenOptions::default(),
        )
        .unwrap();
    assert_eq!(group.group().classes(), [class::IAF, class::IAP]);
    group.enable().unwrap();
    model.run(ModelEvent::Instructions, 30, 12);
    model.run(ModelEvent::Branches, 5, 2);
    let values: Vec<u64> = group
        .read_to_vec()
        .unwrap()
        .iter()
        .map(|r| r.value)
        .collect();
    assert_eq!(values, [42, 2]);
}

/// Oracle: `p_candebug` (`kern_prot.c`) checks `PRIV_DEBUG_UNPRIV` before "td->td_proc ==
/// p", so with `security.bsd.unprivileged_proc_debug=0` even a self-attach is EPERM; `pmc_start`
/// attaches a never-attached process-mode PMC to its owner without `p_candebug`, which is how
/// the backend counts its own process.
#[test]
fn the_own_process_is_counted_without_a_debug_right() {
    let config = ModelConfig::amd().with_unprivileged_proc_debug(false);
    let (backend, model) = HwpmcBackend::with_model(db(), config).unwrap();
    let mut device = model.device();
    let id = allocate(
        &mut device,
        request(class::K8, 0xC2 | (1 << 16), mode::TC, CPU_ANY),
    )
    .unwrap();
    let mut attach = PmcOpPmcAttach { pmc: id, pid: 0 };
    assert_eq!(
        device.call(op::PMCATTACH, OpArg::Attach(&mut attach)),
        Err(Errno::EPERM)
    );
    simple(&mut device, op::PMCRELEASE, id).unwrap();
    let mut group = backend
        .open_named(
            &["branches"],
            &BackendTarget::process(model.caller()),
            &OpenOptions::default(),
        )
        .unwrap();
    group.enable().unwrap();
    model.run(ModelEvent::Branches, 9, 0);
    assert_eq!(group.read_to_vec().unwrap()[0].value, 9);
    let other = model.spawn(model.config().uid());
    let refused = backend
        .open_named(
            &["branches"],
            &BackendTarget::process(other),
            &OpenOptions::default(),
        )
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::PermissionDenied);
    assert!(
        refused.hint().unwrap().contains("unprivileged_proc_debug"),
        "{refused}"
    );
}
