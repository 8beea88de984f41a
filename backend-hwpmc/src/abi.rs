//! hwpmc(4)'s system-call ABI: operation numbers, modes, flags, classes, capabilities, the
//! version handshake's numbers, the PMC id layouts of V9 and V10, and the `#[repr(C)]`
//! argument structures of amd64, with their sizes and offsets pinned.
//!
//! Every fact names its file in FreeBSD's tree: V10 from `freebsd/freebsd-src` (main, read at
//! the mirrors `kenrap/freebsd-src` f30bcb15 and `fel1x-developer/freebsd-src` 2d614aa2, which
//! carry `PMC_VERSION_MAJOR 0x0A`), V9 from `opnsense/src` 228b099a (FreeBSD's tree as OPNsense
//! carries it: `PMC_VERSION_MAJOR 0x09`, `PMC_VERSION_MINOR 0x03`).

/// `PMC_MODULE_NAME` (`sys/sys/pmc.h`): the name `modfind(2)` takes. `hwpmc_mod.c` declares
/// the module with `moduledata_t pmc_mod = { PMC_MODULE_NAME, syscall_module_handler, .. }`,
/// and libpmc's `pmc_init` (`lib/libpmc/libpmc.c`) calls `modfind(PMC_MODULE_NAME)`.
pub const MODULE_NAME: &str = "hwpmc";

/// `enum pmc_ops` (`sys/sys/pmc.h`, `__PMC_OPS()`, numbered from 0): the operations this
/// backend issues, as the first argument of the system call.
pub mod op {
    /// `PMC_OP_GETCPUINFO`.
    pub const GETCPUINFO: u32 = 2;
    /// `PMC_OP_GETMODULEVERSION`.
    pub const GETMODULEVERSION: u32 = 4;
    /// `PMC_OP_PMCALLOCATE`.
    pub const PMCALLOCATE: u32 = 7;
    /// `PMC_OP_PMCATTACH`.
    pub const PMCATTACH: u32 = 8;
    /// `PMC_OP_PMCDETACH`.
    pub const PMCDETACH: u32 = 9;
    /// `PMC_OP_PMCRELEASE`.
    pub const PMCRELEASE: u32 = 11;
    /// `PMC_OP_PMCRW`.
    pub const PMCRW: u32 = 12;
    /// `PMC_OP_PMCSETCOUNT`.
    pub const PMCSETCOUNT: u32 = 13;
    /// `PMC_OP_PMCSTART`.
    pub const PMCSTART: u32 = 14;
    /// `PMC_OP_PMCSTOP`.
    pub const PMCSTOP: u32 = 15;

    /// Every operation of `__PMC_OPS()` in V9 and V10 in order (`sys/sys/pmc.h`), for the
    /// test that pins the numbers above to their places.
    pub const ALL: [&str; 19] = [
        "CONFIGURELOG",
        "FLUSHLOG",
        "GETCPUINFO",
        "GETDRIVERSTATS",
        "GETMODULEVERSION",
        "GETPMCINFO",
        "PMCADMIN",
        "PMCALLOCATE",
        "PMCATTACH",
        "PMCDETACH",
        "PMCGETMSR",
        "PMCRELEASE",
        "PMCRW",
        "PMCSETCOUNT",
        "PMCSTART",
        "PMCSTOP",
        "WRITELOG",
        "CLOSELOG",
        "GETDYNEVENTINFO",
    ];
}

/// `enum pmc_mode` (`sys/sys/pmc.h`, `__PMC_MODES()`).
pub mod mode {
    /// `PMC_MODE_SS`: system-wide sampling.
    pub const SS: u32 = 0;
    /// `PMC_MODE_SC`: system-wide counting, one CPU.
    pub const SC: u32 = 1;
    /// `PMC_MODE_TS`: process sampling.
    pub const TS: u32 = 2;
    /// `PMC_MODE_TC`: process counting.
    pub const TC: u32 = 3;

    /// `PMC_IS_SYSTEM_MODE`.
    pub const fn is_system(mode: u32) -> bool {
        mode == SS || mode == SC
    }

    /// `PMC_IS_VIRTUAL_MODE`.
    pub const fn is_virtual(mode: u32) -> bool {
        mode == TS || mode == TC
    }
}

/// `PMC_F_*` (`sys/sys/pmc.h`).
pub mod flag {
    /// `PMC_F_DESCENDANTS`: PMCALLOCATE, count the target's descendants too.
    pub const DESCENDANTS: u32 = 0x2;
    /// `PMC_F_LOG_PROCCSW`.
    pub const LOG_PROCCSW: u32 = 0x4;
    /// `PMC_F_LOG_PROCEXIT`.
    pub const LOG_PROCEXIT: u32 = 0x8;
    /// `PMC_F_NEWVALUE`: PMCRW, write a new value.
    pub const NEWVALUE: u32 = 0x10;
    /// `PMC_F_OLDVALUE`: PMCRW, return the value.
    pub const OLDVALUE: u32 = 0x20;
    /// `PMC_F_CALLCHAIN`.
    pub const CALLCHAIN: u32 = 0x80;
    /// `PMC_F_USERCALLCHAIN`.
    pub const USERCALLCHAIN: u32 = 0x100;
    /// `PMC_F_EV_PMU` (V10 only): the event is in the class-dependent fields, not `pm_ev`.
    pub const EV_PMU: u32 = 0x200;
}

/// `enum pmc_class` values (`sys/sys/pmc.h`, `__PMC_CLASSES()`; the same numbers in V9 and
/// V10 for these).
pub mod class {
    /// `PMC_CLASS_TSC`.
    pub const TSC: u32 = 0x00;
    /// `PMC_CLASS_K8`: AMD K8 and later core counters.
    pub const K8: u32 = 0x02;
    /// `PMC_CLASS_IAF`: Intel fixed-function counters.
    pub const IAF: u32 = 0x06;
    /// `PMC_CLASS_IAP`: Intel programmable counters.
    pub const IAP: u32 = 0x07;
    /// `PMC_CLASS_SOFT`: software events.
    pub const SOFT: u32 = 0x0F;

    /// The class's name as `__PMC_CLASSES()` spells it, for messages.
    pub const fn name(class: u32) -> &'static str {
        match class {
            TSC => "TSC",
            K8 => "K8",
            IAF => "IAF",
            IAP => "IAP",
            SOFT => "SOFT",
            _ => "another class",
        }
    }
}

/// `enum pmc_caps` (`sys/sys/pmc.h`, `__PMC_CAPS()`: `1 << VALUE`).
pub mod caps {
    /// `PMC_CAP_INTERRUPT`.
    pub const INTERRUPT: u32 = 1 << 0;
    /// `PMC_CAP_USER`.
    pub const USER: u32 = 1 << 1;
    /// `PMC_CAP_SYSTEM`.
    pub const SYSTEM: u32 = 1 << 2;
    /// `PMC_CAP_EDGE`.
    pub const EDGE: u32 = 1 << 3;
    /// `PMC_CAP_THRESHOLD`.
    pub const THRESHOLD: u32 = 1 << 4;
    /// `PMC_CAP_READ`.
    pub const READ: u32 = 1 << 5;
    /// `PMC_CAP_WRITE`.
    pub const WRITE: u32 = 1 << 6;
    /// `PMC_CAP_INVERT`.
    pub const INVERT: u32 = 1 << 7;
    /// `PMC_CAP_QUALIFIER`.
    pub const QUALIFIER: u32 = 1 << 8;
    /// `AMD_PMC_CAPS` (`sys/dev/hwpmc/hwpmc_amd.h`).
    pub const AMD: u32 =
        INTERRUPT | USER | SYSTEM | EDGE | THRESHOLD | READ | WRITE | INVERT | QUALIFIER;
}

/// `PMC_CPU_ANY` (`sys/sys/pmc.h`: `~0`): the CPU of a process-mode PMC.
pub const CPU_ANY: u32 = !0;

/// `PMC_CLASS_MAX` (`sys/sys/pmc.h`, 8 in V9 and V10): the classes GETCPUINFO returns.
pub const CLASS_MAX: usize = 8;

/// `AMD_CORE_NPMCS` (`sys/dev/hwpmc/hwpmc_amd.h`): the K8 class's core rows, 0-5; rows 6-11
/// are the L3 cache's and 12-15 the data fabric's (`amd_allocate_pmc` refuses a core event
/// there with EINVAL).
pub const AMD_CORE_ROWS: u32 = 6;

/// `PMC_AMD_SUB_CLASS_CORE` (`enum sub_class`, `sys/dev/hwpmc/hwpmc_amd.h`).
pub const AMD_SUB_CLASS_CORE: u32 = 0;

/// `IAP_EN` and `AMD_PMC_ENABLE` (bit 22) and `IAP_INT`/`AMD_PMC_INT` (bit 20): the kernel
/// sets the enable bit when it starts a PMC (`amd_start_pmc`: `config | AMD_PMC_ENABLE`), so
/// the configuration this backend passes carries neither.
pub const EVTSEL_KERNEL_OWNED: u64 = (1 << 22) | (1 << 20);

/// An API version, `MMmmpppp` (`sys/sys/pmc.h`: `PMC_VERSION_MAJOR << 24 | MINOR << 16 |
/// PATCH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u32);

impl Version {
    /// V10.0 (`PMC_VERSION_MAJOR 0x0A`, `MINOR 0x00`: FreeBSD's main).
    pub const V10: Version = Version(0x0A00_0000);
    /// V9.3 (`PMC_VERSION_MAJOR 0x09`, `MINOR 0x03`: the API before `PMC_F_EV_PMU`).
    pub const V9: Version = Version(0x0903_0000);

    /// The major number.
    pub const fn major(self) -> u32 {
        self.0 >> 24
    }

    /// The minor number.
    pub const fn minor(self) -> u32 {
        (self.0 >> 16) & 0xFF
    }

    /// Whether the kernel `self` serves a caller of `caller`: `hwpmc_mod.c`'s
    /// GETMODULEVERSION refuses (EPROGMISMATCH) a caller whose major.minor is newer.
    pub const fn serves(self, caller: Version) -> bool {
        (caller.0 & 0xFFFF_0000) <= (self.0 & 0xFFFF_0000)
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{} ({:#010x})", self.major(), self.minor(), self.0)
    }
}

/// A PMC id's fields (`PMC_ID_TO_*` of `sys/sys/pmc.h`), whose layout changed in V10.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PmcId {
    /// The CPU (system mode) or `0xFFF` (`PMC_CPU_ANY` cut to the field).
    pub cpu: u32,
    /// `enum pmc_mode`.
    pub mode: u32,
    /// `enum pmc_class`.
    pub class: u32,
    /// The row index.
    pub row: u32,
}

impl PmcId {
    /// `PMC_ID_MAKE_ID` of a kernel of major `major`: V10 `CPU[31:20] MODE[19:16]
    /// CLASS[15:8] ROW[7:0]`; V9 `CPU[31:20] MODE[19:12] CLASS[11:8] ROW[7:0]`.
    pub const fn make(self, major: u32) -> u32 {
        if major >= 10 {
            ((self.cpu & 0xFFF) << 20)
                | ((self.mode & 0xF) << 16)
                | ((self.class & 0xFF) << 8)
                | (self.row & 0xFF)
        } else {
            ((self.cpu & 0xFFF) << 20)
                | ((self.mode & 0xFF) << 12)
                | ((self.class & 0xF) << 8)
                | (self.row & 0xFF)
        }
    }

    /// The fields of `id` from a kernel of major `major` (`PMC_ID_TO_*`).
    pub const fn parse(id: u32, major: u32) -> PmcId {
        if major >= 10 {
            PmcId {
                cpu: (id & 0xFFF0_0000) >> 20,
                mode: (id & 0xF_0000) >> 16,
                class: (id & 0xFF00) >> 8,
                row: id & 0xFF,
            }
        } else {
            PmcId {
                cpu: (id & 0xFFF0_0000) >> 20,
                mode: (id & 0xF_F000) >> 12,
                class: (id & 0xF00) >> 8,
                row: id & 0xFF,
            }
        }
    }
}

/// `struct module_stat` (`sys/sys/module.h`): `version` (set to the size), `name[MAXMODNAME
/// = 32]`, `refs`, `id`, `modspecific_t data` (a union of int, u_int, long, u_long: a `long`
/// wide, 8 bytes and 8-aligned on amd64). libpmc reads the system call number from
/// `data.intval`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ModuleStat {
    /// `sizeof(struct module_stat)`, set by the caller.
    pub version: i32,
    /// The module's name.
    pub name: [u8; 32],
    /// Its reference count.
    pub refs: i32,
    /// Its id.
    pub id: i32,
    /// The union, as wide as a `long`; `data.intval` is its first four bytes (little-endian
    /// x86).
    pub data: usize,
}

impl Default for ModuleStat {
    fn default() -> Self {
        ModuleStat {
            version: std::mem::size_of::<ModuleStat>() as i32,
            name: [0; 32],
            refs: 0,
            id: 0,
            data: 0,
        }
    }
}

impl ModuleStat {
    /// `data.intval`: the dynamic system call's number.
    pub const fn intval(&self) -> i32 {
        self.data as u32 as i32
    }
}

// `struct module_stat` on LP64 (amd64): the union 8-aligned after 44 bytes.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<ModuleStat>() == 56);
    assert!(offset_of!(ModuleStat, data) == 48);
};

// On ILP32 (i386) the union is 4 bytes at 44.
#[cfg(target_pointer_width = "32")]
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<ModuleStat>() == 48);
    assert!(offset_of!(ModuleStat, data) == 44);
};

/// `struct pmc_classinfo` (`sys/sys/pmc.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmcClassInfo {
    /// `enum pmc_class`.
    pub class: u32,
    /// `PMC_CAP_*` of the class.
    pub caps: u32,
    /// Counter width in bits.
    pub width: u32,
    /// Rows of the class.
    pub num: u32,
}

/// `struct pmc_op_getcpuinfo` (`sys/sys/pmc.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmcOpGetCpuInfo {
    /// `enum pmc_cputype`.
    pub cputype: u32,
    /// `pmc_cpu_max()` (V10) / `mp_ncpus`: CPUs.
    pub ncpu: u32,
    /// Rows per CPU.
    pub npmc: u32,
    /// Classes in `classes`.
    pub nclass: u32,
    /// The classes, `PMC_CLASS_MAX` of them.
    pub classes: [PmcClassInfo; CLASS_MAX],
}

/// `struct pmc_op_pmcallocate` (`sys/sys/pmc.h`, V9.3 and V10) with the amd64 `union
/// pmc_md_op_pmcallocate` (`sys/amd64/include/pmc_mdep.h`: `uint64_t __pad[4]`) as 32 bytes:
/// `pmc_md_iap_op_pmcallocate { u64 pm_iap_config; u64 pm_iap_rsp; }`
/// (`hwpmc_core.h`) or `pmc_md_amd_op_pmcallocate { u64 pm_amd_config; u32
/// pm_amd_sub_class; }` (`hwpmc_amd.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmcOpPmcAllocate {
    /// `PMC_CAP_*` wanted.
    pub caps: u32,
    /// The CPU, or [`CPU_ANY`].
    pub cpu: u32,
    /// `enum pmc_class`.
    pub class: u32,
    /// `enum pmc_event` (unused with `PMC_F_EV_PMU`).
    pub ev: u32,
    /// `PMC_F_*`.
    pub flags: u32,
    /// `enum pmc_mode`.
    pub mode: u32,
    /// Returned: the PMC id.
    pub pmcid: u32,
    /// Padding before `pm_count`.
    pub pad: u32,
    /// `pm_count`: the initial count of a counting PMC.
    pub count: u64,
    /// The class-dependent union: `[config, rsp or sub_class, 0, 0]`.
    pub md: [u64; 4],
}

impl PmcOpPmcAllocate {
    /// `pm_md.pm_iap.pm_iap_config` / `pm_md.pm_amd.pm_amd_config`.
    pub const fn config(&self) -> u64 {
        self.md[0]
    }

    /// `pm_md.pm_amd.pm_amd_sub_class` (the low half of the second word).
    pub const fn amd_sub_class(&self) -> u32 {
        self.md[1] as u32
    }
}

/// `struct pmc_op_pmcattach` (`sys/sys/pmc.h`), for PMCATTACH and PMCDETACH.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmcOpPmcAttach {
    /// The PMC id.
    pub pmc: u32,
    /// The target process (0: the caller).
    pub pid: i32,
}

/// `struct pmc_op_simple` (`sys/sys/pmc.h`), for PMCSTART, PMCSTOP and PMCRELEASE.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmcOpSimple {
    /// The PMC id.
    pub pmcid: u32,
}

/// `struct pmc_op_pmcrw` (`sys/sys/pmc.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmcOpPmcRw {
    /// `PMC_F_OLDVALUE` and/or `PMC_F_NEWVALUE`.
    pub flags: u32,
    /// The PMC id.
    pub pmcid: u32,
    /// The new value in, the old value out.
    pub value: u64,
}

/// The argument of one operation: the structure its `PMC_OP_*` copies in and out.
#[derive(Debug)]
pub enum OpArg<'a> {
    /// GETMODULEVERSION: the caller's version in, the module's out.
    Version(&'a mut u32),
    /// GETCPUINFO.
    CpuInfo(&'a mut PmcOpGetCpuInfo),
    /// PMCALLOCATE.
    Allocate(&'a mut PmcOpPmcAllocate),
    /// PMCATTACH, PMCDETACH.
    Attach(&'a mut PmcOpPmcAttach),
    /// PMCSTART, PMCSTOP, PMCRELEASE.
    Simple(&'a mut PmcOpSimple),
    /// PMCRW.
    Rw(&'a mut PmcOpPmcRw),
}

// The sizes and offsets of amd64, from the headers' field types (u32 and enums of 4 bytes,
// pmc_value_t a u64 aligned to 8, the union 32 bytes).
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(offset_of!(ModuleStat, name) == 4);
    assert!(offset_of!(ModuleStat, refs) == 36);
    assert!(offset_of!(ModuleStat, id) == 40);
    assert!(size_of::<PmcClassInfo>() == 16);
    assert!(size_of::<PmcOpGetCpuInfo>() == 144);
    assert!(offset_of!(PmcOpGetCpuInfo, classes) == 16);
    assert!(size_of::<PmcOpPmcAllocate>() == 72);
    assert!(offset_of!(PmcOpPmcAllocate, cpu) == 4);
    assert!(offset_of!(PmcOpPmcAllocate, class) == 8);
    assert!(offset_of!(PmcOpPmcAllocate, ev) == 12);
    assert!(offset_of!(PmcOpPmcAllocate, flags) == 16);
    assert!(offset_of!(PmcOpPmcAllocate, mode) == 20);
    assert!(offset_of!(PmcOpPmcAllocate, pmcid) == 24);
    assert!(offset_of!(PmcOpPmcAllocate, count) == 32);
    assert!(offset_of!(PmcOpPmcAllocate, md) == 40);
    assert!(size_of::<PmcOpPmcAttach>() == 8);
    assert!(size_of::<PmcOpSimple>() == 4);
    assert!(size_of::<PmcOpPmcRw>() == 16);
    assert!(offset_of!(PmcOpPmcRw, value) == 8);
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: `__PMC_OPS()` in FreeBSD's `sys/sys/pmc.h` (V9.3 and V10), an enum numbered
    /// from 0: each constant is its name's place in that list.
    #[test]
    fn operation_numbers_are_their_places_in_pmc_ops() {
        let place = |name: &str| op::ALL.iter().position(|n| *n == name).unwrap() as u32;
        assert_eq!(op::GETCPUINFO, place("GETCPUINFO"));
        assert_eq!(op::GETMODULEVERSION, place("GETMODULEVERSION"));
        assert_eq!(op::PMCALLOCATE, place("PMCALLOCATE"));
        assert_eq!(op::PMCATTACH, place("PMCATTACH"));
        assert_eq!(op::PMCDETACH, place("PMCDETACH"));
        assert_eq!(op::PMCRELEASE, place("PMCRELEASE"));
        assert_eq!(op::PMCRW, place("PMCRW"));
        assert_eq!(op::PMCSETCOUNT, place("PMCSETCOUNT"));
        assert_eq!(op::PMCSTART, place("PMCSTART"));
        assert_eq!(op::PMCSTOP, place("PMCSTOP"));
    }

    /// Oracle: `PMC_ID_MAKE_ID`/`PMC_ID_TO_*` of V10 (`kenrap/freebsd-src` `sys/sys/pmc.h`) and
    /// V9 (`opnsense/src`): a TC PMC of class IAP at row 3 differs between the two.
    #[test]
    fn pmc_ids_round_trip_in_both_layouts() {
        let id = PmcId {
            cpu: 0xFFF,
            mode: mode::TC,
            class: class::IAP,
            row: 3,
        };
        assert_eq!(id.make(10), 0xFFF3_0703);
        assert_eq!(id.make(9), 0xFFF0_3703);
        assert_eq!(PmcId::parse(0xFFF3_0703, 10), id);
        assert_eq!(PmcId::parse(0xFFF0_3703, 9), id);
        let sc = PmcId {
            cpu: 5,
            mode: mode::SC,
            class: class::K8,
            row: 0,
        };
        assert_eq!(PmcId::parse(sc.make(10), 10), sc);
        assert_eq!(PmcId::parse(sc.make(9), 9), sc);
    }

    /// Oracle: GETMODULEVERSION in `hwpmc_mod.c` (`(cv & 0xFFFF0000) > (modv & 0xFFFF0000)`
    /// is EPROGMISMATCH).
    #[test]
    fn a_kernel_serves_callers_no_newer_than_itself() {
        assert!(Version::V10.serves(Version::V10));
        assert!(Version::V10.serves(Version::V9));
        assert!(!Version::V9.serves(Version::V10));
        assert!(Version::V9.serves(Version(0x0900_0000)));
        assert!(Version(0x0A01_0000).serves(Version(0x0A00_0005)));
        assert_eq!(Version::V9.to_string(), "9.3 (0x09030000)");
    }

    #[test]
    fn module_stat_carries_its_size_and_the_syscall_number() {
        let mut stat = ModuleStat::default();
        assert_eq!(stat.version as usize, std::mem::size_of::<ModuleStat>());
        stat.data = 210;
        assert_eq!(stat.intval(), 210);
    }
}
