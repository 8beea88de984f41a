//! The group the facade opens: the backend of this OS without dynamic dispatch where the
//! facade knows it (the Linux backend on Linux), any other boxed. Reading a counter is one
//! system call, and every extra call frame between it and the caller costs a mispredicted
//! return after it (the kernel's own calls overwrite the return predictor), so the read path
//! of the README's `open_default` + `open_named` is kept to one frame.

use counterhal_hal::{BoxedGroup, Group, Reading, Result};

use crate::attach::MultiSet;

/// A group of whichever backend [`open_default`](crate::open_default) chose, on one place or
/// summed over several.
// An explicit tag: which group a read takes is one compare of a byte, where the niche
// layout the variants would share costs several instructions to decode on every read.
#[repr(u8)]
#[non_exhaustive]
pub enum AnyGroup {
    /// The Linux backend's group, read without dynamic dispatch.
    #[cfg(all(feature = "linux", target_os = "linux"))]
    Linux(counterhal_linux::LinuxGroup),
    /// Any other backend's group.
    Boxed(BoxedGroup),
    /// The same counters on several threads or CPUs (a process's threads, every CPU), each
    /// read as its sum over them.
    Targets(Box<MultiSet<AnyGroup>>),
}

impl From<BoxedGroup> for AnyGroup {
    fn from(group: BoxedGroup) -> AnyGroup {
        AnyGroup::Boxed(group)
    }
}

#[cfg(all(feature = "linux", target_os = "linux"))]
impl From<counterhal_linux::LinuxGroup> for AnyGroup {
    fn from(group: counterhal_linux::LinuxGroup) -> AnyGroup {
        AnyGroup::Linux(group)
    }
}

impl std::fmt::Debug for AnyGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            #[cfg(all(feature = "linux", target_os = "linux"))]
            AnyGroup::Linux(_) => "Linux",
            AnyGroup::Boxed(_) => "Boxed",
            AnyGroup::Targets(_) => "Targets",
        };
        write!(f, "AnyGroup::{kind}({} events)", self.len())
    }
}

/// Marks the path that calls it as rarely taken (`std::hint::cold_path`, newer than the
/// Rust this crate supports): the read of a group not the Linux backend's, where the Linux
/// backend's is the one expected.
#[cfg(all(feature = "linux", target_os = "linux"))]
#[cold]
#[inline(always)]
fn not_linux() {}

/// Calls `$method` on whichever group `$group` holds.
macro_rules! each {
    ($group:expr, $g:ident => $call:expr) => {
        match $group {
            #[cfg(all(feature = "linux", target_os = "linux"))]
            AnyGroup::Linux($g) => $call,
            AnyGroup::Boxed($g) => $call,
            AnyGroup::Targets($g) => $call,
        }
    };
}

impl Group for AnyGroup {
    fn len(&self) -> usize {
        each!(self, g => g.len())
    }

    fn enable(&mut self) -> Result<()> {
        each!(self, g => g.enable())
    }

    fn disable(&mut self) -> Result<()> {
        each!(self, g => g.disable())
    }

    fn reset(&mut self) -> Result<()> {
        each!(self, g => g.reset())
    }

    #[inline(always)]
    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        // The Linux backend's group first, by itself: one branch before its read.
        #[cfg(all(feature = "linux", target_os = "linux"))]
        if let AnyGroup::Linux(group) = self {
            return group.read(readings);
        } else {
            not_linux();
        }
        each!(self, g => g.read(readings))
    }
}
