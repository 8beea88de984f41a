//! The host's facts that metric formulas read as `#` constants (`#smt_on`: fact `smt_on`),
//! those known here, as one collector writes them (`counterhal_machine_fact`): the recording
//! rules read them ([`mod@crate::rules`]).

use counterhal::metrics::Machine;

use crate::text_format::{Family, Format, Kind, Label, Number};

/// Writes `machine`'s facts in `format` into `out`.
pub fn write(out: &mut Vec<u8>, format: Format, machine: &Machine) {
    let facts = Family::new(
        "counterhal_machine_fact",
        Kind::Gauge,
        "A fact of this host that metric formulas read as a # constant (perf's names).",
    );
    facts.header(out, format);
    for (name, _) in counterhal::metrics::machine::KNOWN {
        if let Some(value) = counterhal::metrics::machine::constant(machine, name) {
            let fact = name.trim_start_matches('#');
            facts.sample(out, &[("fact", Label::Text(fact))], Number::Float(value));
        }
    }
}
