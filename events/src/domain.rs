//! From modifiers (`u`, `k`, `h`, `H`, `G`) to the domain an event counts, for a backend that
//! takes what [`Accepts`] says.

use counterhal_hal::{Accepts, Domain};

use crate::error::{EventError, EventErrorKind, err};
use crate::parse::Modifiers;

/// The privilege-level modifiers and the domain each names.
const LEVELS: [(&str, Domain, &str); 3] = [
    ("u", Domain::USER, "user mode"),
    ("k", Domain::KERNEL, "kernel mode"),
    ("h", Domain::HYPERVISOR, "the hypervisor"),
];

fn level_value(modifiers: &Modifiers, level: Domain) -> Option<bool> {
    if level == Domain::USER {
        modifiers.user
    } else if level == Domain::KERNEL {
        modifiers.kernel
    } else {
        modifiers.hypervisor
    }
}

/// The domain `modifiers` ask for on a backend that takes `accepts`.
///
/// Without any level or context modifier: the backend's default ([`Accepts::default_domain`]:
/// on perf [`Domain::ALL`], the event counts whatever its PMU counts; on x86 counters user and
/// kernel). With modifiers: the levels named, or the default's levels minus those set to `=0`,
/// in every context but the one `H` (host only) or `G` (guest only) leaves out. So on perf
/// `:uk` is user and kernel ([`Domain::DEFAULT`], the hypervisor excluded) and `:h=0` everything
/// but the hypervisor.
pub(crate) fn domain_of(modifiers: &Modifiers, accepts: &Accepts) -> Domain {
    let m = modifiers;
    if !m.has_levels() && m.host_only.is_none() && m.guest_only.is_none() {
        return accepts.default_domain;
    }
    let mut levels = Domain::NONE;
    for (_, level, _) in LEVELS {
        if level_value(m, level) == Some(true) {
            levels |= level;
        }
    }
    if levels.is_empty() {
        levels = accepts.default_domain.intersection(Domain::LEVELS);
    }
    for (_, level, _) in LEVELS {
        if level_value(m, level) == Some(false) {
            levels = levels.difference(level);
        }
    }
    let mut domain = Domain::ALL.with_levels(levels);
    let host_only = m.host_only == Some(true);
    let guest_only = m.guest_only == Some(true);
    // perf: `H` and `G` together count both.
    if host_only && !guest_only {
        domain = domain.difference(Domain::GUEST);
    }
    if guest_only && !host_only {
        domain = domain.difference(Domain::HOST);
    }
    domain
}

/// The domain `modifiers` ask for, refusing what a backend that takes `accepts` cannot filter;
/// `name` is the event as the user typed it.
///
/// # Errors
/// [`EventErrorKind::Unsupported`] for a level (`u`, `k`, `h`) or context (`H`, `G`) the
/// backend cannot filter; [`EventErrorKind::CombinationNotAllowed`] when no privilege level is
/// left.
pub(crate) fn check_domain(
    modifiers: &Modifiers,
    accepts: &Accepts,
    name: &str,
) -> Result<Domain, EventError> {
    let filterable = accepts.domains;
    let filtered_levels: Vec<&str> = LEVELS
        .iter()
        .filter(|(_, level, _)| filterable.contains(*level))
        .map(|(letter, _, _)| *letter)
        .collect();
    for (letter, level, what) in LEVELS {
        if level_value(modifiers, level) == Some(true) && !filterable.contains(level) {
            return Err(err(
                EventErrorKind::Unsupported,
                format!(
                    "`{name}`: this backend cannot filter {what} (`{letter}`): its counters have no such bit"
                ),
            )
            .with_hint(format!(
                "drop `{letter}`; the levels it filters are {}",
                filtered_levels.join(", ")
            )));
        }
    }
    for (asked, letter, needs, what) in [
        (modifiers.host_only, "H", Domain::GUEST, "host only"),
        (modifiers.guest_only, "G", Domain::HOST, "guest only"),
    ] {
        if asked == Some(true) && !filterable.contains(needs) {
            return Err(err(
                EventErrorKind::Unsupported,
                format!(
                    "`{name}`: this backend cannot count {what} (`{letter}`): it programs no such bit"
                ),
            )
            .with_hint(format!("drop `{letter}`")));
        }
    }
    let domain = domain_of(modifiers, accepts);
    if !domain.intersects(Domain::LEVELS) {
        let names: Vec<&str> = LEVELS
            .iter()
            .filter(|(_, level, _)| {
                filterable.contains(*level) || accepts.default_domain.contains(*level)
            })
            .map(|(_, _, what)| *what)
            .collect();
        return Err(err(
            EventErrorKind::CombinationNotAllowed,
            format!(
                "`{name}` would count nothing: none of {} is selected",
                names.join(", ")
            ),
        ));
    }
    Ok(domain)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use counterhal_hal::Family;

    /// perf's rules: every domain filterable, no modifier counts the PMU's default.
    pub(crate) const PERF: Accepts =
        Accepts::new(&[Family::Perf, Family::Evtsel], Domain::ALL, Domain::ALL);
    /// x86 counters: user and kernel bits only.
    pub(crate) const X86: Accepts = Accepts::new(
        &[Family::Evtsel, Family::P5Cesr],
        Domain::from_bits_truncate(Domain::USER.bits() | Domain::KERNEL.bits()),
        Domain::DEFAULT,
    );
    /// AMD counters with HostOnly and GuestOnly.
    const AMD: Accepts = Accepts::new(
        &[Family::Evtsel],
        Domain::from_bits_truncate(0b110_011),
        Domain::DEFAULT,
    );

    pub(crate) fn mods(text: &str) -> Modifiers {
        let mut m = Modifiers::default();
        for part in text.split(':').filter(|p| !p.is_empty()) {
            let (key, value) = match part.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (part, None),
            };
            assert!(
                m.apply(key, value).unwrap() || m.apply_group(key).unwrap(),
                "{part}"
            );
        }
        m
    }

    #[test]
    fn perf_default_is_all_and_explicit_levels_are_not() {
        let perf = |t: &str| domain_of(&mods(t), &PERF);
        assert_eq!(perf(""), Domain::ALL);
        assert_eq!(perf("pp"), Domain::ALL);
        assert_eq!(perf("uk"), Domain::DEFAULT);
        assert_eq!(perf("h=0"), Domain::DEFAULT);
        assert_eq!(perf("u"), Domain::ALL.with_levels(Domain::USER));
        assert_eq!(
            perf("k=0"),
            Domain::ALL.with_levels(Domain::USER | Domain::HYPERVISOR)
        );
        assert_eq!(perf("H"), Domain::ALL.difference(Domain::GUEST));
        assert_eq!(perf("G"), Domain::ALL.difference(Domain::HOST));
        assert_eq!(perf("GH"), Domain::ALL);
        assert_eq!(
            perf("uH"),
            Domain::DEFAULT
                .with_levels(Domain::USER)
                .difference(Domain::GUEST)
        );
    }

    #[test]
    fn x86_counters_default_to_user_and_kernel() {
        let d = |t: &str| check_domain(&mods(t), &X86, "x").map(|d| d.intersection(Domain::LEVELS));
        assert_eq!(d("").unwrap(), Domain::USER | Domain::KERNEL);
        assert_eq!(d("ppp").unwrap(), Domain::USER | Domain::KERNEL);
        assert_eq!(d("h=0").unwrap(), Domain::USER | Domain::KERNEL);
        assert_eq!(d("k=0").unwrap(), Domain::USER);
        for refused in ["h", "uh", "H", "G"] {
            assert_eq!(
                d(refused).unwrap_err().kind(),
                EventErrorKind::Unsupported,
                "{refused}"
            );
        }
        let nothing = d("u=0:k=0").unwrap_err();
        assert_eq!(nothing.kind(), EventErrorKind::CombinationNotAllowed);
        assert!(
            nothing.message().contains("none of user mode, kernel mode"),
            "{nothing}"
        );
    }

    #[test]
    fn host_and_guest_where_the_counters_filter_them() {
        let host = check_domain(&mods("H"), &AMD, "x").unwrap();
        assert!(host.contains(Domain::HOST) && !host.contains(Domain::GUEST));
        let guest = check_domain(&mods("uG"), &AMD, "x").unwrap();
        assert_eq!(guest, Domain::USER | Domain::IDLE | Domain::GUEST);
        assert_eq!(
            check_domain(&mods("h"), &AMD, "x").unwrap_err().kind(),
            EventErrorKind::Unsupported
        );
    }
}
