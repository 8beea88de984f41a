//! The driver's rules, from `sys/dev/hwpmc/hwpmc_mod.c` (`pmc_do_op_pmcallocate`,
//! `pmc_can_allocate_row`, `pmc_can_allocate_rowindex`, `pmc_do_op_pmcattach`, `pmc_start`,
//! `pmc_stop`, `pmc_do_op_pmcrw`, `pmc_do_op_pmcrelease`, the GETMODULEVERSION and
//! GETCPUINFO cases of `pmc_syscall_handler`), `hwpmc_core.c` (`iaf_allocate_pmc`,
//! `iap_allocate_pmc`) and `hwpmc_amd.c` (`amd_allocate_pmc`).

use std::collections::BTreeMap;

use crate::abi::{
    AMD_CORE_ROWS, AMD_SUB_CLASS_CORE, CPU_ANY, PmcClassInfo, PmcId, PmcOpGetCpuInfo,
    PmcOpPmcAllocate, PmcOpPmcRw, Version, caps, class, flag, mode,
};
use crate::errno::Errno;
use crate::model::config::{ModelConfig, ModelEvent, ModelVendor};

/// One class of the model's `pmc_mdep` (`struct pmc_classdep`): its rows are
/// `first_row..first_row + num`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClassDep {
    pub(crate) info: PmcClassInfo,
    pub(crate) first_row: u32,
}

/// `enum pmc_state`'s software states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Allocated,
    Stopped,
    Running,
}

/// An allocated PMC (`struct pmc`).
#[derive(Clone, Debug)]
pub(crate) struct Pmc {
    pub(crate) owner: u32,
    pub(crate) mode: u32,
    pub(crate) class: u32,
    pub(crate) row: u32,
    pub(crate) cpu: u32,
    pub(crate) state: State,
    pub(crate) config: u64,
    pub(crate) flags: u32,
    /// IAF's `pm_iaf_ctrl` domain: (user, kernel).
    pub(crate) iaf_domain: (bool, bool),
    /// BackendTarget processes (`pm_targets`).
    pub(crate) targets: Vec<u32>,
    /// `PMC_F_ATTACH_DONE`.
    pub(crate) attach_done: bool,
    /// The count as the hardware holds it, at the class width.
    pub(crate) live: u64,
    /// `pm_savedvalue`: the count when the targets were last switched out.
    pub(crate) saved: u64,
    /// Stopped, but still on the CPU until its target is switched out (`pmc_stop` of a
    /// virtual PMC only changes the state).
    pub(crate) lingering: bool,
}

/// A process the model knows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Process {
    pub(crate) uid: u32,
    /// The process that forked it, when the model forked it.
    pub(crate) parent: Option<u32>,
    /// On a CPU since it last ran work, until switched out.
    pub(crate) switched_in: bool,
}

/// The driver's state.
#[derive(Debug)]
pub(crate) struct Kernel {
    pub(crate) config: ModelConfig,
    pub(crate) classes: Vec<ClassDep>,
    pub(crate) npmc: u32,
    /// Row disposition (`pmc_pmcdisp`): > 0 process-mode PMCs, < 0 system-mode ones.
    pub(crate) disposition: Vec<i32>,
    pub(crate) pmcs: BTreeMap<u32, Pmc>,
    pub(crate) processes: BTreeMap<u32, Process>,
    pub(crate) caller: u32,
}

/// `IAP_PMC_CAPS` / `IAF_PMC_CAPS` are not in the headers read; the model gives the Intel
/// classes the capabilities a counting client asks for (interrupt, user, system, edge,
/// threshold, read, write, invert, qualifier for IAP; interrupt, user, system, read, write for
/// IAF).
const IAP_CAPS: u32 = caps::AMD;
const IAF_CAPS: u32 = caps::INTERRUPT | caps::USER | caps::SYSTEM | caps::READ | caps::WRITE;

impl Kernel {
    pub(crate) fn new(config: ModelConfig, caller: u32) -> Kernel {
        let width = config.width();
        let mut classes = vec![ClassDep {
            info: PmcClassInfo {
                class: class::TSC,
                caps: caps::READ,
                width: 64,
                num: 1,
            },
            first_row: 0,
        }];
        let mut next = 1;
        let mut add = |class: u32, caps: u32, num: u32| {
            classes.push(ClassDep {
                info: PmcClassInfo {
                    class,
                    caps,
                    width,
                    num,
                },
                first_row: next,
            });
            next += num;
        };
        match config.vendor() {
            ModelVendor::Intel => {
                add(class::IAP, IAP_CAPS, config.programmable());
                add(class::IAF, IAF_CAPS, 3);
            }
            // `AMD_NPMCS`: 6 core rows, 6 L3 rows, 4 data-fabric rows.
            ModelVendor::Amd => add(class::K8, caps::AMD, 16),
        }
        let mut processes = BTreeMap::new();
        processes.insert(
            caller,
            Process {
                uid: config.uid(),
                parent: None,
                switched_in: false,
            },
        );
        Kernel {
            config,
            classes,
            npmc: next,
            disposition: vec![0; next as usize],
            pmcs: BTreeMap::new(),
            processes,
            caller,
        }
    }

    fn major(&self) -> u32 {
        self.config.version().major()
    }

    /// GETMODULEVERSION: the caller's version in, the module's out.
    pub(crate) fn module_version(&self, caller: u32) -> Result<u32, Errno> {
        let module = self.config.version();
        if module.serves(Version(caller)) {
            Ok(module.0)
        } else {
            Err(Errno::EPROGMISMATCH)
        }
    }

    /// GETCPUINFO.
    pub(crate) fn cpu_info(&self) -> PmcOpGetCpuInfo {
        let mut info = PmcOpGetCpuInfo {
            cputype: match self.config.vendor() {
                // PMC_CPU_INTEL_SKYLAKE, PMC_CPU_AMD_K8 (`__PMC_CPUS()`).
                ModelVendor::Intel => 0x98,
                ModelVendor::Amd => 0x01,
            },
            ncpu: self.config.cpus(),
            npmc: self.npmc,
            nclass: self.classes.len() as u32,
            ..PmcOpGetCpuInfo::default()
        };
        for (slot, class) in info.classes.iter_mut().zip(&self.classes) {
            *slot = class.info;
        }
        info
    }

    fn class_of_row(&self, row: u32) -> Option<&ClassDep> {
        self.classes
            .iter()
            .find(|c| (c.first_row..c.first_row + c.info.num).contains(&row))
    }

    fn owned(&self, pmcid: u32) -> Result<(u32, &Pmc), Errno> {
        // `pmc_find_pmc`: a row index past the rows is EINVAL, an id the caller does not own
        // EINVAL.
        if PmcId::parse(pmcid, self.major()).row >= self.npmc {
            return Err(Errno::EINVAL);
        }
        match self.pmcs.get(&pmcid) {
            Some(pmc) if pmc.owner == self.caller => Ok((pmcid, pmc)),
            _ => Err(Errno::EINVAL),
        }
    }

    /// PMCALLOCATE (`pmc_do_op_pmcallocate`).
    pub(crate) fn allocate(&mut self, pa: &mut PmcOpPmcAllocate) -> Result<(), Errno> {
        let (m, cpu) = (pa.mode, pa.cpu);
        if m > mode::TC {
            return Err(Errno::EINVAL);
        }
        if cpu != CPU_ANY && cpu >= self.config.cpus() {
            return Err(Errno::EINVAL);
        }
        if (mode::is_virtual(m) && cpu != CPU_ANY) || (mode::is_system(m) && cpu == CPU_ANY) {
            return Err(Errno::EINVAL);
        }
        if mode::is_system(m) && self.config.inactive_cpu() == Some(cpu) {
            return Err(Errno::ENXIO);
        }
        if mode::is_system(m) {
            if self.config.jailed() {
                return Err(Errno::EPERM);
            }
            if !self.config.unprivileged_syspmcs() && !self.config.root() {
                return Err(Errno::EPERM);
            }
        }
        let mut allowed = flag::DESCENDANTS
            | flag::LOG_PROCCSW
            | flag::LOG_PROCEXIT
            | flag::CALLCHAIN
            | flag::USERCALLCHAIN;
        if self.major() >= 10 {
            allowed |= flag::EV_PMU;
        }
        if pa.flags & !allowed != 0 {
            return Err(Errno::EINVAL);
        }
        if mode::is_system(m) && pa.flags & (flag::LOG_PROCCSW | flag::LOG_PROCEXIT) != 0 {
            return Err(Errno::EINVAL);
        }
        if m != mode::SC && m != mode::TC {
            // Sampling modes need a log file and interrupts: the model counts only.
            return Err(Errno::EOPNOTSUPP);
        }
        let Some(dep) = self
            .classes
            .iter()
            .find(|c| c.info.class == pa.class)
            .copied()
        else {
            return Err(Errno::EINVAL);
        };
        if dep.info.caps & pa.caps != pa.caps {
            return Err(Errno::EOPNOTSUPP);
        }
        let virtual_mode = mode::is_virtual(m);
        // Rows from the class's first to the last of all classes, each offered to the class
        // that owns it (whose allocator refuses a request of another class).
        let mut found = None;
        for row in dep.first_row..self.npmc {
            let disposition = self.disposition[row as usize];
            if (virtual_mode && disposition < 0) || (!virtual_mode && disposition > 0) {
                continue;
            }
            if !self.can_allocate_rowindex(row, if virtual_mode { CPU_ANY } else { cpu }) {
                continue;
            }
            if !virtual_mode && self.row_taken_on_cpu(row, cpu) {
                continue;
            }
            let Some(owner) = self.class_of_row(row).copied() else {
                continue;
            };
            if let Some(iaf_domain) = self.class_allocate(&owner, row - owner.first_row, pa) {
                found = Some((row, iaf_domain));
                break;
            }
        }
        let Some((row, iaf_domain)) = found else {
            return Err(Errno::EINVAL);
        };
        let id = PmcId {
            cpu,
            mode: m,
            class: pa.class,
            row,
        }
        .make(self.major());
        self.disposition[row as usize] += if virtual_mode { 1 } else { -1 };
        self.pmcs.insert(
            id,
            Pmc {
                owner: self.caller,
                mode: m,
                class: pa.class,
                row,
                cpu,
                state: State::Allocated,
                config: pa.config(),
                flags: pa.flags,
                iaf_domain,
                targets: Vec::new(),
                attach_done: false,
                live: pa.count & self.config.mask(),
                saved: pa.count & self.config.mask(),
                lingering: false,
            },
        );
        pa.pmcid = id;
        Ok(())
    }

    /// `pmc_can_allocate_rowindex`: the caller holds no process-mode PMC on the row, no
    /// system-mode one on the row and CPU, and is no target of a PMC on the row.
    fn can_allocate_rowindex(&self, row: u32, cpu: u32) -> bool {
        let caller = self.caller;
        !self.pmcs.values().any(|pmc| {
            pmc.row == row
                && ((pmc.owner == caller && (mode::is_virtual(pmc.mode) || pmc.cpu == cpu))
                    || pmc.targets.contains(&caller))
        })
    }

    /// A system-mode row in use on `cpu` by anyone (`PMC_IS_UNALLOCATED`).
    fn row_taken_on_cpu(&self, row: u32, cpu: u32) -> bool {
        self.pmcs
            .values()
            .any(|pmc| pmc.row == row && mode::is_system(pmc.mode) && pmc.cpu == cpu)
    }

    /// The class's `pcd_allocate_pmc` for its row `ri`: `None` when it refuses; for IAF, the
    /// (user, kernel) of `pm_iaf_ctrl`.
    fn class_allocate(
        &self,
        dep: &ClassDep,
        ri: u32,
        pa: &PmcOpPmcAllocate,
    ) -> Option<(bool, bool)> {
        let config = pa.config();
        let (event, umask) = (config & 0xFF, (config >> 8) & 0xFF);
        let user = config & (1 << 16) != 0;
        let kernel = config & (1 << 17) != 0;
        match dep.info.class {
            class::IAF => {
                if pa.class != class::IAF {
                    return None;
                }
                // INST_RETIRED.ANY on 0, CPU_CLK_UNHALTED.THREAD on 1, .REF on 2.
                let wrong = (event == 0xC0 && ri != 0)
                    || (event == 0x3C && ri != 1)
                    || (event == 0x00 && umask == 0x03 && ri != 2);
                if wrong {
                    return None;
                }
                let (mut u, mut k) = (user, kernel);
                u |= pa.caps & caps::USER != 0;
                k |= pa.caps & caps::SYSTEM != 0;
                if pa.caps & (caps::USER | caps::SYSTEM) == 0 && !u && !k {
                    (u, k) = (true, true);
                }
                Some((u, k))
            }
            class::IAP => {
                if pa.class != class::IAP {
                    return None;
                }
                // `iap_event_sb_sbx_ib_ibx_ok_on_counter` (Skylake's cputype).
                let allowed: u32 = match event {
                    0xB7 => 0x1,
                    0xC0 => 0x2,
                    0x48 | 0xA2 | 0xA3 => 0x4,
                    0xBB | 0xCD => 0x8,
                    _ => !0,
                };
                (allowed & (1 << ri) != 0).then_some((user, kernel))
            }
            class::K8 => {
                if pa.class != class::K8 {
                    return None;
                }
                if self.major() >= 10 && pa.flags & flag::EV_PMU == 0 {
                    return None;
                }
                let core = ri < AMD_CORE_ROWS;
                if core != (pa.amd_sub_class() == AMD_SUB_CLASS_CORE) {
                    return None;
                }
                Some((user, kernel))
            }
            _ => None,
        }
    }

    /// PMCATTACH (`pmc_do_op_pmcattach`, `p_candebug`).
    pub(crate) fn attach(&mut self, pmcid: u32, pid: i32) -> Result<(), Errno> {
        let pid = match pid {
            p if p < 0 => return Err(Errno::EINVAL),
            0 => self.caller,
            p => p as u32,
        };
        let (id, pmc) = self.owned(pmcid)?;
        if mode::is_system(pmc.mode) {
            return Err(Errno::EINVAL);
        }
        match pmc.state {
            State::Running => return Err(Errno::EBUSY),
            State::Allocated | State::Stopped => {}
        }
        let Some(target) = self.processes.get(&pid).copied() else {
            return Err(Errno::ESRCH);
        };
        // p_candebug (`kern_prot.c`): priv_check(PRIV_DEBUG_UNPRIV) first, which fails for a
        // non-root caller under security.bsd.unprivileged_proc_debug=0, self-attach included;
        // then the credential checks, reduced here to "the same user".
        if !self.config.root()
            && (target.uid != self.config.uid() || !self.config.unprivileged_proc_debug())
        {
            return Err(Errno::EPERM);
        }
        self.attach_process(id, pid)
    }

    /// `pmc_attach_process`: with `PMC_F_DESCENDANTS`, the process and every descendant it
    /// has, each by `pmc_attach_one_process` (EEXIST when this PMC is on the process's row
    /// already, EBUSY when another is), all undone on an error.
    fn attach_process(&mut self, id: u32, pid: u32) -> Result<(), Errno> {
        let (row, descendants) = {
            let pmc = &self.pmcs[&id];
            (pmc.row, pmc.flags & flag::DESCENDANTS != 0)
        };
        let mut family = vec![pid];
        if descendants {
            let mut next = 0;
            while next < family.len() {
                let parent = family[next];
                family.extend(
                    self.processes
                        .iter()
                        .filter(|(_, p)| p.parent == Some(parent))
                        .map(|(child, _)| *child),
                );
                next += 1;
            }
        }
        for member in &family {
            let holder = self
                .pmcs
                .iter()
                .find(|(_, pmc)| pmc.row == row && pmc.targets.contains(member));
            match holder {
                Some((holder, _)) if *holder == id => return Err(Errno::EEXIST),
                Some(_) => return Err(Errno::EBUSY),
                None => {}
            }
        }
        let pmc = self.pmcs.get_mut(&id).expect("looked up above");
        pmc.targets.extend(family);
        pmc.attach_done = true;
        Ok(())
    }

    /// PMCSTART (`pmc_start`): a process-mode PMC never attached is attached to its owner.
    pub(crate) fn start(&mut self, pmcid: u32) -> Result<(), Errno> {
        let (id, pmc) = self.owned(pmcid)?;
        if pmc.state == State::Running {
            return Ok(());
        }
        if mode::is_virtual(pmc.mode) {
            if pmc.targets.is_empty() {
                if pmc.attach_done {
                    return Err(Errno::ESRCH);
                }
                let owner = pmc.owner;
                self.attach_process(id, owner)?;
            }
        } else if self.config.inactive_cpu() == Some(pmc.cpu) {
            return Err(Errno::ENXIO);
        }
        let pmc = self.pmcs.get_mut(&id).expect("looked up above");
        pmc.state = State::Running;
        pmc.lingering = false;
        // "If the PMC is attached to its owner, then force a context switch to ensure that
        // the MD state gets set correctly" (`pmc_force_context_switch`): the owner is switched
        // out, saving what its PMCs counted, and in again.
        if mode::is_virtual(pmc.mode) && pmc.targets.contains(&pmc.owner) {
            let owner = pmc.owner;
            self.switch_out(owner);
        }
        Ok(())
    }

    /// PMCSTOP (`pmc_stop`): a process-mode PMC only changes state; its hardware stops when
    /// its target is switched out.
    pub(crate) fn stop(&mut self, pmcid: u32) -> Result<(), Errno> {
        let (id, pmc) = self.owned(pmcid)?;
        match pmc.state {
            State::Stopped => return Ok(()),
            State::Allocated => return Err(Errno::EINVAL),
            State::Running => {}
        }
        let lingering = mode::is_virtual(pmc.mode)
            && pmc
                .targets
                .iter()
                .any(|pid| self.processes.get(pid).is_some_and(|p| p.switched_in));
        let pmc = self.pmcs.get_mut(&id).expect("looked up above");
        pmc.state = State::Stopped;
        pmc.lingering = lingering;
        if mode::is_system(pmc.mode) {
            pmc.saved = pmc.live;
        }
        Ok(())
    }

    /// PMCRW (`pmc_do_op_pmcrw`).
    pub(crate) fn rw(&mut self, rw: &mut PmcOpPmcRw) -> Result<(), Errno> {
        if rw.flags & (flag::OLDVALUE | flag::NEWVALUE) == 0 {
            return Err(Errno::EINVAL);
        }
        let (id, pmc) = self.owned(rw.pmcid)?;
        if pmc.state == State::Running && rw.flags & flag::NEWVALUE != 0 {
            return Err(Errno::EBUSY);
        }
        let attached_to_owner = pmc.targets.contains(&pmc.owner);
        let old = if mode::is_system(pmc.mode) || (attached_to_owner && pmc.state == State::Running)
        {
            pmc.live
        } else {
            pmc.saved
        };
        let mask = self.config.mask();
        if rw.flags & flag::NEWVALUE != 0 {
            let pmc = self.pmcs.get_mut(&id).expect("looked up above");
            pmc.saved = rw.value & mask;
            pmc.live = rw.value & mask;
        }
        if rw.flags & flag::OLDVALUE != 0 {
            rw.value = old;
        }
        Ok(())
    }

    /// PMCRELEASE (`pmc_do_op_pmcrelease`).
    pub(crate) fn release(&mut self, pmcid: u32) -> Result<(), Errno> {
        let (id, pmc) = self.owned(pmcid)?;
        let step = if mode::is_virtual(pmc.mode) { 1 } else { -1 };
        let row = pmc.row as usize;
        self.disposition[row] -= step;
        self.pmcs.remove(&id);
        Ok(())
    }

    /// `count` events of `event` in user and kernel mode by process `pid` on `cpu`.
    pub(crate) fn count(&mut self, pid: u32, cpu: u32, event: ModelEvent, user: u64, kernel: u64) {
        let vendor = self.config.vendor();
        let mask = self.config.mask();
        if let Some(process) = self.processes.get_mut(&pid) {
            process.switched_in = true;
        }
        for pmc in self.pmcs.values_mut() {
            let on = pmc.state == State::Running || pmc.lingering;
            let reaches = if mode::is_virtual(pmc.mode) {
                pmc.targets.contains(&pid)
            } else {
                pmc.cpu == cpu
            };
            if !on || !reaches {
                continue;
            }
            let (counts_user, counts_kernel) = if pmc.class == class::IAF {
                let iaf_row = pmc.row - (1 + self.config.programmable());
                if event.fixed_counter(vendor) != Some(iaf_row) {
                    continue;
                }
                pmc.iaf_domain
            } else {
                let code = (pmc.config & 0xFF) | ((pmc.config >> 24) & 0xF00);
                let umask = (pmc.config >> 8) & 0xFF;
                if event.code(vendor) != (code as u16, umask as u8) {
                    continue;
                }
                (pmc.config & (1 << 16) != 0, pmc.config & (1 << 17) != 0)
            };
            let mut add = 0u64;
            if counts_user {
                add = add.wrapping_add(user);
            }
            if counts_kernel {
                add = add.wrapping_add(kernel);
            }
            pmc.live = pmc.live.wrapping_add(add) & mask;
        }
    }

    /// Process `pid` leaves its CPU: its PMCs' counts are saved, and a stopped one stops.
    pub(crate) fn switch_out(&mut self, pid: u32) {
        if let Some(process) = self.processes.get_mut(&pid) {
            process.switched_in = false;
        }
        for pmc in self.pmcs.values_mut() {
            if mode::is_virtual(pmc.mode) && pmc.targets.contains(&pid) {
                pmc.saved = pmc.live;
                pmc.lingering = false;
            }
        }
    }

    /// `pmc_process_fork`: PMCs with `PMC_F_DESCENDANTS` on `parent` follow into `child`.
    pub(crate) fn fork(&mut self, parent: u32, child: u32) {
        let uid = self
            .processes
            .get(&parent)
            .map_or(self.config.uid(), |p| p.uid);
        self.processes.insert(
            child,
            Process {
                uid,
                parent: Some(parent),
                switched_in: false,
            },
        );
        for pmc in self.pmcs.values_mut() {
            if pmc.flags & flag::DESCENDANTS != 0 && pmc.targets.contains(&parent) {
                pmc.targets.push(child);
            }
        }
    }
}
