//! The group the facade opens: any backend's group, boxed, or the same counters on several
//! places summed. The facade names no backend: a backend's group is a trait object.

use counterhal_hal::{BoxedGroup, Group, Reading, Result, SharedRead};

use crate::attach::MultiSet;

/// A group of whichever backend [`open_default`](crate::open_default) chose, on one place or
/// summed over several.
// An explicit tag: which group a read takes is one compare of a byte, where the niche
// layout the variants would share costs several instructions to decode on every read.
#[repr(u8)]
#[non_exhaustive]
pub enum AnyGroup {
    /// One backend's group.
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

impl std::fmt::Debug for AnyGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            AnyGroup::Boxed(_) => "Boxed",
            AnyGroup::Targets(_) => "Targets",
        };
        write!(f, "AnyGroup::{kind}({} events)", self.len())
    }
}

/// Calls `$method` on whichever group `$group` holds.
macro_rules! each {
    ($group:expr, $g:ident => $call:expr) => {
        match $group {
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
        each!(self, g => g.read(readings))
    }

    fn shared_read(&self) -> Option<&dyn SharedRead> {
        match self {
            AnyGroup::Boxed(group) => group.shared_read(),
            // A sum over places is read through its own sets, one at a time.
            AnyGroup::Targets(_) => None,
        }
    }
}
