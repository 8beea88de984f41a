//! What a counter counts: privilege levels and contexts.

use std::fmt;
use std::ops::{BitOr, BitOrAssign};

/// A set of domains a counter counts in: the privilege levels `USER`, `KERNEL` and
/// `HYPERVISOR`, and the contexts `IDLE`, `HOST` and `GUEST`. A bit set means "counted".
///
/// The default ([`Domain::DEFAULT`]) counts user and kernel mode in every context and not the
/// hypervisor, as libpfm4 and PAPI do. A modifier such as `:u` replaces the privilege levels
/// and keeps the contexts ([`Domain::with_levels`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Domain(u8);

impl Domain {
    /// Nothing.
    pub const NONE: Domain = Domain(0);
    /// User mode (ring 3).
    pub const USER: Domain = Domain(1 << 0);
    /// Kernel mode (ring 0).
    pub const KERNEL: Domain = Domain(1 << 1);
    /// The hypervisor.
    pub const HYPERVISOR: Domain = Domain(1 << 2);
    /// While the CPU is idle.
    pub const IDLE: Domain = Domain(1 << 3);
    /// While running the host (when virtualisation is in use).
    pub const HOST: Domain = Domain(1 << 4);
    /// While running a guest.
    pub const GUEST: Domain = Domain(1 << 5);
    /// The three privilege levels.
    pub const LEVELS: Domain = Domain(0b000_111);
    /// The three contexts.
    pub const CONTEXTS: Domain = Domain(0b111_000);
    /// Everything.
    pub const ALL: Domain = Domain(0b111_111);
    /// User and kernel mode, in every context.
    pub const DEFAULT: Domain = Domain(Self::USER.0 | Self::KERNEL.0 | Self::CONTEXTS.0);

    const NAMES: [(Domain, &'static str); 6] = [
        (Domain::USER, "user"),
        (Domain::KERNEL, "kernel"),
        (Domain::HYPERVISOR, "hypervisor"),
        (Domain::IDLE, "idle"),
        (Domain::HOST, "host"),
        (Domain::GUEST, "guest"),
    ];

    /// The raw bits (stable: user 0, kernel 1, hypervisor 2, idle 3, host 4, guest 5).
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// A domain from raw bits; bits above 5 are dropped.
    pub const fn from_bits_truncate(bits: u8) -> Domain {
        Domain(bits & Self::ALL.0)
    }

    /// Whether every domain in `other` is in `self`.
    pub const fn contains(self, other: Domain) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether `self` and `other` share a domain.
    pub const fn intersects(self, other: Domain) -> bool {
        self.0 & other.0 != 0
    }

    /// Whether nothing is counted.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The domains in both.
    pub const fn intersection(self, other: Domain) -> Domain {
        Domain(self.0 & other.0)
    }

    /// The domains in `self` and not in `other`.
    pub const fn difference(self, other: Domain) -> Domain {
        Domain(self.0 & !other.0)
    }

    /// `self` with its privilege levels replaced by those in `levels` (contexts kept).
    pub const fn with_levels(self, levels: Domain) -> Domain {
        Domain((self.0 & Self::CONTEXTS.0) | (levels.0 & Self::LEVELS.0))
    }

    /// The name of each domain in the set, in bit order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Self::NAMES
            .into_iter()
            .filter(move |(d, _)| self.contains(*d))
            .map(|(_, n)| n)
    }

    /// The domain with this name (`user`, `kernel`, `hypervisor`, `idle`, `host`, `guest`).
    pub fn from_name(name: &str) -> Option<Domain> {
        Self::NAMES
            .into_iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name))
            .map(|(d, _)| d)
    }
}

impl Default for Domain {
    fn default() -> Self {
        Domain::DEFAULT
    }
}

impl BitOr for Domain {
    type Output = Domain;
    fn bitor(self, rhs: Domain) -> Domain {
        Domain(self.0 | rhs.0)
    }
}

impl BitOrAssign for Domain {
    fn bitor_assign(&mut self, rhs: Domain) {
        self.0 |= rhs.0;
    }
}

impl fmt::Debug for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Domain({self})")
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        let names: Vec<_> = self.names().collect();
        f.write_str(&names.join("|"))
    }
}

#[cfg(test)]
mod tests {
    use super::Domain;

    #[test]
    fn default_is_user_and_kernel_in_every_context() {
        let d = Domain::default();
        assert!(d.contains(Domain::USER | Domain::KERNEL));
        assert!(!d.contains(Domain::HYPERVISOR));
        assert!(d.contains(Domain::CONTEXTS));
    }

    #[test]
    fn with_levels_keeps_contexts() {
        let d = Domain::DEFAULT
            .difference(Domain::GUEST)
            .with_levels(Domain::USER);
        assert_eq!(d, Domain::USER | Domain::IDLE | Domain::HOST);
        assert_eq!(d.to_string(), "user|idle|host");
    }

    #[test]
    fn names_round_trip() {
        for name in ["user", "kernel", "hypervisor", "idle", "host", "guest"] {
            let d = Domain::from_name(name).unwrap();
            assert_eq!(d.names().collect::<Vec<_>>(), vec![name]);
        }
        assert_eq!(Domain::from_name("ring0"), None);
        assert_eq!(Domain::NONE.to_string(), "none");
    }
}
