//! What the tests resolve for: the two kinds of backend the event database serves, described
//! as data the way backends describe themselves.

use counterhal_hal::{Accepts, Domain, Family};

/// A backend that programs perf attrs first (the kernel's generic events, raw configs
/// verbatim) and x86 event selects, filters every domain and counts the PMU's default when no
/// modifier is given.
pub const PERF: Accepts = Accepts::new(&[Family::Perf, Family::Evtsel], Domain::ALL, Domain::ALL);

/// A backend that programs x86 counters (event selects and the P5's CESR field) with only
/// user and kernel bits, counting both by default.
pub const X86: Accepts = Accepts::new(
    &[Family::Evtsel, Family::P5Cesr],
    Domain::from_bits_truncate(Domain::USER.bits() | Domain::KERNEL.bits()),
    Domain::DEFAULT,
);

/// The profile a golden row or a test names: `perf` or `x86`.
pub fn accepts(name: &str) -> &'static Accepts {
    match name {
        "perf" => &PERF,
        "x86" => &X86,
        other => panic!("unknown profile `{other}`: use perf or x86"),
    }
}

pub mod child;
pub mod libpfm;
