//! The one rule that turns a [`PerfEncoding`]'s domain into `perf_event_attr` exclude bits.

use counterhal_hal::{Domain, PerfEncoding};

/// The six `exclude_*` bits of `perf_event_attr`, as [`exclude_bits`] sets them. `true` means
/// the bit is set, i.e. that domain is *not* counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExcludeBits {
    /// `exclude_user`.
    pub user: bool,
    /// `exclude_kernel`.
    pub kernel: bool,
    /// `exclude_hv`.
    pub hv: bool,
    /// `exclude_idle`.
    pub idle: bool,
    /// `exclude_host`.
    pub host: bool,
    /// `exclude_guest`.
    pub guest: bool,
}

impl ExcludeBits {
    /// Whether any bit is set.
    pub fn any(&self) -> bool {
        self.names().next().is_some()
    }

    /// The header names of the bits that are set (`exclude_kernel`, ...), in header order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        [
            (self.user, "exclude_user"),
            (self.kernel, "exclude_kernel"),
            (self.hv, "exclude_hv"),
            (self.idle, "exclude_idle"),
            (self.host, "exclude_host"),
            (self.guest, "exclude_guest"),
        ]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
    }
}

/// The exclude bits the backend programs for `encoding`. This is the only place the rule
/// lives: the backend's attr builder uses it, and anything that shows an encoding should too.
///
/// The rule:
/// - [`Domain::ALL`] (what an event without modifiers gets) sets **no** bit: the event counts
///   whatever its PMU counts by default, as `perf stat` programs an event without modifiers
///   (and PMUs such as `msr` refuse any exclude bit);
/// - any other domain sets `exclude_X` exactly for each domain X it does not contain (so `:u`
///   sets `exclude_kernel` and `exclude_hv`, `:uk` sets `exclude_hv`, and `:H` sets
///   `exclude_guest`).
pub fn exclude_bits(encoding: &PerfEncoding) -> ExcludeBits {
    let domain = encoding.domain;
    if domain == Domain::ALL {
        return ExcludeBits::default();
    }
    ExcludeBits {
        user: !domain.contains(Domain::USER),
        kernel: !domain.contains(Domain::KERNEL),
        hv: !domain.contains(Domain::HYPERVISOR),
        idle: !domain.contains(Domain::IDLE),
        host: !domain.contains(Domain::HOST),
        guest: !domain.contains(Domain::GUEST),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(domain: Domain) -> PerfEncoding {
        let mut e = PerfEncoding::new(1, 0);
        e.domain = domain;
        e
    }

    #[test]
    fn all_excludes_nothing_and_explicit_user_kernel_excludes_the_hypervisor() {
        assert_eq!(exclude_bits(&with(Domain::ALL)), ExcludeBits::default());
        assert!(!exclude_bits(&PerfEncoding::new(1, 0)).any(), "no modifier");
        let user_kernel = exclude_bits(&with(Domain::DEFAULT));
        assert_eq!(user_kernel.names().collect::<Vec<_>>(), ["exclude_hv"]);
    }

    #[test]
    fn user_only_excludes_kernel_and_hv() {
        let bits = exclude_bits(&with(Domain::DEFAULT.with_levels(Domain::USER)));
        assert_eq!(
            bits,
            ExcludeBits {
                kernel: true,
                hv: true,
                ..ExcludeBits::default()
            }
        );
        assert_eq!(
            bits.names().collect::<Vec<_>>(),
            ["exclude_kernel", "exclude_hv"]
        );
        let guest = exclude_bits(&with(Domain::USER | Domain::KERNEL | Domain::GUEST));
        assert!(guest.host && guest.idle && !guest.guest && !guest.user);
    }
}
