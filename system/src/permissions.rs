//! What `perf_event_open` permits: the paranoid level and the capabilities, judged once.

/// CAP_SYS_ADMIN's bit in a capability set (include/uapi/linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;
/// CAP_PERFMON's bit (include/uapi/linux/capability.h, Linux 5.8 and later).
const CAP_PERFMON: u32 = 38;

/// What a process asks of `perf_event_open`, from the least to the most privileged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PerfAccess {
    /// Any use at all, user space of its own tasks (refused only above level 2, by the
    /// patch Debian, Ubuntu and Android kernels carry: `perf_paranoid_any`).
    Any,
    /// Counting the kernel too (`perf_allow_kernel`: level 1 or lower).
    Kernel,
    /// Counting a whole CPU (`perf_allow_cpu`: level 0 or lower).
    Cpu,
    /// Raw tracepoint samples and ftrace's function tracepoint (`perf_allow_tracepoint`:
    /// level -1).
    Tracepoint,
}

/// The paranoid level and the capabilities that `perf_event_open`'s checks read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfPermissions {
    paranoid: Option<i32>,
    capabilities: u64,
}

impl PerfPermissions {
    /// Permissions at level `paranoid` (`None`: not known) with the effective capability
    /// set `capabilities` (`CapEff`'s bits; 0 for an unprivileged process).
    pub fn new(paranoid: Option<i32>, capabilities: u64) -> PerfPermissions {
        PerfPermissions {
            paranoid,
            capabilities,
        }
    }

    /// `kernel.perf_event_paranoid`, where it was read.
    pub fn paranoid(&self) -> Option<i32> {
        self.paranoid
    }

    /// Whether the process holds CAP_PERFMON or CAP_SYS_ADMIN (the kernel's
    /// `perfmon_capable`), which lift every paranoid limit.
    pub fn perfmon_capable(&self) -> bool {
        self.capabilities & (1 << CAP_PERFMON | 1 << CAP_SYS_ADMIN) != 0
    }

    /// Whether `perf_event_open` permits `access`, as the kernel judges it
    /// (kernel/events/core.c and include/linux/perf_event.h): a capable process everything,
    /// others what the level allows. `None` where the level is not known and the process is
    /// not capable.
    pub fn allows(&self, access: PerfAccess) -> Option<bool> {
        let capable = match access {
            PerfAccess::Any => self.capabilities & (1 << CAP_SYS_ADMIN) != 0,
            _ => self.perfmon_capable(),
        };
        if capable {
            return Some(true);
        }
        let most = match access {
            PerfAccess::Any => 2,
            PerfAccess::Kernel => 1,
            PerfAccess::Cpu => 0,
            PerfAccess::Tracepoint => -1,
        };
        self.paranoid.map(|level| level <= most)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: Linux 7.2's checks (Debian's linux-source-7.2): `perf_allow_kernel` refuses
    /// above 1, `perf_allow_cpu` above 0, `perf_allow_tracepoint` above -1, each unless
    /// `perfmon_capable()` (CAP_PERFMON or CAP_SYS_ADMIN); `perf_paranoid_any` refuses every
    /// open above 2 unless CAP_SYS_ADMIN.
    #[test]
    fn levels_and_capabilities_permit_what_the_kernel_permits() {
        let at = |level| PerfPermissions::new(Some(level), 0);
        let accesses = [
            PerfAccess::Any,
            PerfAccess::Kernel,
            PerfAccess::Cpu,
            PerfAccess::Tracepoint,
        ];
        for (level, allowed) in [(3, 0), (2, 1), (1, 2), (0, 3), (-1, 4)] {
            for (n, access) in accesses.iter().enumerate() {
                assert_eq!(
                    at(level).allows(*access),
                    Some(n < allowed),
                    "{level} {access:?}"
                );
            }
        }
        let perfmon = PerfPermissions::new(Some(3), 1 << CAP_PERFMON);
        assert!(perfmon.perfmon_capable());
        assert_eq!(perfmon.allows(PerfAccess::Cpu), Some(true));
        assert_eq!(perfmon.allows(PerfAccess::Any), Some(false));
        let admin = PerfPermissions::new(None, 1 << CAP_SYS_ADMIN);
        assert!(accesses.iter().all(|a| admin.allows(*a) == Some(true)));
        assert_eq!(PerfPermissions::new(None, 0).allows(PerfAccess::Cpu), None);
    }
}
