//! The allow-list: the only MSRs this crate will ever read or write.
//!
//! It is built from the decoded PMU ([`PmuInfo`]) alone: the PMU registers of the detected
//! vendor, layout and version, for the counters that exist, plus the TSC for reading. Event
//! encodings (and so events files) never extend it: an events file is input, not trust. Every
//! device access of the backend is checked here first.

use std::fmt;

use counterhal_hal::{Error, Result};

use crate::device::Access;
use crate::pmu::{PmuArch, PmuInfo};
use crate::regs;

/// One range of allowed registers: `count` MSRs from `first`, `stride` apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowedRange {
    /// The register name (`IA32_PERFEVTSEL`); numbered registers append their number.
    pub name: &'static str,
    /// The number of the first register (`Some(0)` for `IA32_PMC0`), `None` for a single
    /// unnumbered register (`IA32_PERF_GLOBAL_CTRL`).
    pub first_number: Option<u32>,
    /// The first address.
    pub first: u32,
    /// How many.
    pub count: u32,
    /// The distance between consecutive registers (1, or 2 for AMD's extended counters).
    pub stride: u32,
    /// Whether reads are allowed.
    pub read: bool,
    /// Whether writes are allowed.
    pub write: bool,
}

impl AllowedRange {
    fn contains(&self, msr: u32) -> Option<u32> {
        let offset = msr.checked_sub(self.first)?;
        (offset % self.stride == 0 && offset / self.stride < self.count)
            .then_some(offset / self.stride)
    }

    fn permits(&self, access: Access) -> bool {
        match access {
            Access::Read => self.read,
            Access::Write => self.write,
        }
    }
}

impl fmt::Display for AllowedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match (self.read, self.write) {
            (true, true) => "rw",
            (true, false) => "r",
            _ => "w",
        };
        match self.first_number {
            None => write!(f, "{} {:#x} ({mode})", self.name, self.first),
            Some(number) if self.count == 1 => {
                write!(f, "{}{number} {:#x} ({mode})", self.name, self.first)
            }
            Some(number) => {
                let last = self.first + self.stride * (self.count - 1);
                let last_number = number + self.count - 1;
                write!(
                    f,
                    "{}{number}-{last_number} {:#x}-{last:#x} ({mode})",
                    self.name, self.first
                )
            }
        }
    }
}

/// The set of MSRs the backend may touch on one PMU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowList {
    pmu: String,
    ranges: Vec<AllowedRange>,
}

fn numbered(name: &'static str, first: u32, count: u32, stride: u32) -> AllowedRange {
    AllowedRange {
        name,
        first_number: Some(0),
        first,
        count,
        stride,
        read: true,
        write: true,
    }
}

fn single(name: &'static str, msr: u32, read: bool, write: bool) -> AllowedRange {
    AllowedRange {
        name,
        first_number: None,
        first: msr,
        count: 1,
        stride: 1,
        read,
        write,
    }
}

impl AllowList {
    /// The PMU registers of `pmu`, and the TSC (read only).
    pub fn for_pmu(pmu: &PmuInfo) -> AllowList {
        let gp = pmu.gp_counters;
        let mut ranges = vec![single("IA32_TIME_STAMP_COUNTER", regs::TSC, true, false)];
        match pmu.arch {
            PmuArch::IntelArch => {
                ranges.push(numbered("IA32_PMC", regs::IA32_PMC0, gp, 1));
                ranges.push(numbered("IA32_PERFEVTSEL", regs::IA32_PERFEVTSEL0, gp, 1));
                if pmu.full_width_writes {
                    ranges.push(numbered("IA32_A_PMC", regs::IA32_A_PMC0, gp, 1));
                }
                if pmu.perf_capabilities {
                    let msr = regs::IA32_PERF_CAPABILITIES;
                    ranges.push(single("IA32_PERF_CAPABILITIES", msr, true, false));
                }
                for index in pmu.fixed.iter() {
                    ranges.push(AllowedRange {
                        first_number: Some(index),
                        ..numbered("IA32_FIXED_CTR", regs::IA32_FIXED_CTR0 + index, 1, 1)
                    });
                }
                if !pmu.fixed.is_empty() {
                    ranges.push(single(
                        "IA32_FIXED_CTR_CTRL",
                        regs::IA32_FIXED_CTR_CTRL,
                        true,
                        true,
                    ));
                }
                if pmu.version >= 2 {
                    for (msr, name, _) in regs::EXTRA_MSRS {
                        ranges.push(single(name, msr, true, true));
                    }
                }
                if pmu.global_control {
                    let status = regs::IA32_PERF_GLOBAL_STATUS;
                    ranges.push(single("IA32_PERF_GLOBAL_STATUS", status, true, false));
                    let ctrl = regs::IA32_PERF_GLOBAL_CTRL;
                    ranges.push(single("IA32_PERF_GLOBAL_CTRL", ctrl, true, true));
                    let ovf = regs::IA32_PERF_GLOBAL_OVF_CTRL;
                    ranges.push(single("IA32_PERF_GLOBAL_OVF_CTRL", ovf, false, true));
                }
            }
            PmuArch::AmdLegacy => {
                ranges.push(numbered("PerfEvtSel", regs::AMD_PERF_EVT_SEL0, gp, 1));
                ranges.push(numbered("PerfCtr", regs::AMD_PERF_CTR0, gp, 1));
            }
            PmuArch::AmdCore => {
                ranges.push(numbered("PerfEvtSel", regs::AMD_PERF_CTL_EXT0, gp, 2));
                ranges.push(numbered("PerfCtr", regs::AMD_PERF_CTR_EXT0, gp, 2));
                if pmu.global_control {
                    let status = regs::AMD_GLOBAL_STATUS;
                    ranges.push(single("PerfCntrGlobalStatus", status, true, false));
                    ranges.push(single(
                        "PerfCntrGlobalCtl",
                        regs::AMD_GLOBAL_CTL,
                        true,
                        true,
                    ));
                    let clear = regs::AMD_GLOBAL_STATUS_CLR;
                    ranges.push(single("PerfCntrGlobalStatusClr", clear, false, true));
                }
            }
        }
        ranges.retain(|r| r.count > 0);
        AllowList {
            pmu: pmu.summary(),
            ranges,
        }
    }

    /// The allowed ranges.
    pub fn ranges(&self) -> &[AllowedRange] {
        &self.ranges
    }

    /// Whether `access` to `msr` is allowed.
    pub fn permits(&self, msr: u32, access: Access) -> bool {
        self.ranges
            .iter()
            .any(|r| r.contains(msr).is_some() && r.permits(access))
    }

    /// The register's name (`IA32_PERFEVTSEL2`), when it is on the list.
    pub fn name(&self, msr: u32) -> Option<String> {
        self.ranges.iter().find_map(|r| {
            let index = r.contains(msr)?;
            Some(match r.first_number {
                Some(first) => format!("{}{}", r.name, first + index),
                None => r.name.to_string(),
            })
        })
    }

    /// Checks one access.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] naming the MSR, the access and the PMU, with
    /// the allowed registers in the hint.
    pub fn check(&self, msr: u32, access: Access) -> Result<()> {
        if self.permits(msr, access) {
            return Ok(());
        }
        let why = match self.name(msr) {
            Some(name) => format!(
                "{name} may not be {}",
                if access == Access::Read {
                    "read"
                } else {
                    "written"
                }
            ),
            None => "it is not a PMU register of this CPU".to_string(),
        };
        let allowed: Vec<String> = self.ranges.iter().map(|r| r.to_string()).collect();
        Err(Error::invalid_input(format!(
            "refused to {} MSR {msr:#x}: {why} ({}); the allow-list is not extended by event encodings",
            access.name(),
            self.pmu
        ))
        .with_hint(format!("allowed: {}", allowed.join(", "))))
    }
}

impl fmt::Display for AllowList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let allowed: Vec<String> = self.ranges.iter().map(|r| r.to_string()).collect();
        write!(f, "{}: {}", self.pmu, allowed.join(", "))
    }
}
