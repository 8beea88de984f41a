//! The listing keeps deprecated native events apart, after the current ones, marks the
//! events that can be sampled precisely, and carries each native event's unit masks and fields.

use std::sync::Arc;

use counterhal::Context;
use counterhal::advanced::AnyBackend;
use counterhal::advanced::{CounterSet, Encoding, Evtsel, ExtraMsr, P5Cesr};
use counterhal_events::Database;
use counterhal_events::listing::fields::fields_text;
use counterhal_events::listing::{Section, list_events};

const FILE: &str = r#"
[[cpu]]
id = "markcore"
encoder = "intel-arch"
match = [{ vendor = "intel", family = 6, model = 0xfb }]
pmu = { general_counters = 4, counter_width = 48 }

[[cpu.event]]
name = "OLD_EVENT"
code = 0x10
flags = ["deprecated"]

[[cpu.event]]
name = "LOADS"
code = 0xcd
umasks = [{ name = "LATENCY_GT_4", code = 0x01, extra_reg = 0x3f6, extra_value = 4, precise = true }]

[[cpu.event]]
name = "PLAIN"
code = 0xc0
"#;

#[test]
fn deprecated_events_are_listed_apart_and_precise_ones_marked() {
    let context = Context::from_parts(
        counterhal::system::System::host(),
        Arc::new(Database::from_toml_str("marks.toml", FILE).unwrap()),
        None,
        Some("markcore".to_string()),
    );
    let listed = list_events::<AnyBackend>(
        context.database(),
        context.model(),
        Err("no backend in this test"),
        "",
    );
    let native: Vec<(&str, Section, bool)> = listed
        .iter()
        .filter(|l| matches!(l.section, Section::Native | Section::Deprecated))
        .map(|l| (l.name.as_str(), l.section, l.precise))
        .collect();
    assert_eq!(
        native,
        [
            ("LOADS", Section::Native, true),
            ("PLAIN", Section::Native, false),
            ("OLD_EVENT", Section::Deprecated, false),
        ]
    );
    assert_eq!(Section::Deprecated.name(), "deprecated");
    assert!(listed.windows(2).all(|w| w[0].section <= w[1].section));
}

/// Each native event carries its fields and its unit masks, each with its own; without a
/// backend nothing resolves, and the event's reason says why.
#[test]
fn native_events_carry_their_unit_masks_and_fields() {
    let file = FILE.to_string()
        + r#"
[[cpu.event]]
name = "CYCLES_STALLED"
code = 0xa3
umasks = [
  { name = "ANY", code = 0x01, default = true },
  { name = "EDGES", code = 0x01, cmask = 1, edge = true, deprecated = true },
]
"#;
    let context = Context::from_parts(
        counterhal::system::System::host(),
        Arc::new(Database::from_toml_str("marks.toml", &file).unwrap()),
        None,
        Some("markcore".to_string()),
    );
    let listed = list_events::<AnyBackend>(
        context.database(),
        context.model(),
        Err("no backend in this test"),
        "",
    );
    let find = |name: &str| listed.iter().find(|l| l.name == name).unwrap();
    let plain = find("PLAIN");
    assert_eq!(plain.fields.as_deref(), Some("event=0xc0 umask=0x00"));
    assert!(plain.unit_masks.is_empty());
    let loads = find("LOADS");
    assert_eq!(loads.fields.as_deref(), Some("event=0xcd"));
    let mask = &loads.unit_masks[0];
    assert_eq!(mask.name, "LOADS.LATENCY_GT_4");
    assert_eq!(mask.fields, "event=0xcd umask=0x01 msr 0x3f6=0x4");
    assert!(mask.precise && !mask.default && !mask.deprecated);
    assert_eq!(
        (mask.encoding.as_deref(), mask.reason.as_deref()),
        (None, None)
    );
    assert_eq!(loads.reason.as_deref(), Some("no backend in this test"));
    let stalled = find("CYCLES_STALLED");
    assert_eq!(stalled.fields.as_deref(), Some("event=0xa3 umask=0x01"));
    let names: Vec<(&str, &str, bool, bool)> = stalled
        .unit_masks
        .iter()
        .map(|u| (u.name.as_str(), u.fields.as_str(), u.default, u.deprecated))
        .collect();
    assert_eq!(
        names,
        [
            ("CYCLES_STALLED.ANY", "event=0xa3 umask=0x01", true, false),
            (
                "CYCLES_STALLED.EDGES",
                "event=0xa3 umask=0x01 cmask=1 edge=1",
                false,
                true
            ),
        ]
    );
    // Other sections carry neither.
    assert!(
        listed
            .iter()
            .filter(|l| !matches!(l.section, Section::Native | Section::Deprecated))
            .all(|l| l.fields.is_none() && l.unit_masks.is_empty())
    );
    // A pattern on a unit mask's name lists that mask alone, under its event.
    let edges = list_events::<AnyBackend>(
        context.database(),
        context.model(),
        Err("none"),
        "stalled.edge",
    );
    assert_eq!(edges.len(), 1);
    assert_eq!(edges[0].name, "CYCLES_STALLED");
    assert_eq!(edges[0].unit_masks.len(), 1);
    assert_eq!(edges[0].unit_masks[0].name, "CYCLES_STALLED.EDGES");
}

/// The fields `list` prints for an encoding name what is set: an extra MSR as the hal writes
/// one (`msr 0x1a6=0x10001`), a fixed counter with `only` where no general one takes it.
#[test]
fn fields_name_what_is_set() {
    let mut evtsel = Evtsel::new(0x5c, 0x01);
    evtsel.counters = CounterSet::first(4);
    assert_eq!(
        fields_text(&Encoding::Evtsel(evtsel), 4),
        "event=0x5c umask=0x01"
    );
    evtsel.cmask = 1;
    evtsel.edge = true;
    evtsel.counters = CounterSet::only(2);
    evtsel.extra = Some(ExtraMsr::new(ExtraMsr::OFFCORE_RSP_0, 0x10001));
    assert_eq!(
        fields_text(&Encoding::Evtsel(evtsel), 4),
        "event=0x5c umask=0x01 cmask=1 edge=1 counters=2 msr 0x1a6=0x10001"
    );
    let mut fixed = Evtsel::new(0xc0, 0x00);
    fixed.counters = CounterSet::NONE;
    fixed.fixed = Some(0);
    assert_eq!(
        fields_text(&Encoding::Evtsel(fixed), 4),
        "event=0xc0 umask=0x00 fixed=0 only"
    );
    let mut amd = Evtsel::new(0x1c0, 0x0f);
    amd.counters = CounterSet::first(6);
    assert_eq!(
        fields_text(&Encoding::Evtsel(amd), 6),
        "event=0x1c0 umask=0x0f"
    );
    let mut cesr = P5Cesr::new(0x16);
    cesr.count_cycles = true;
    cesr.counters = CounterSet::only(0);
    assert_eq!(
        fields_text(&Encoding::P5Cesr(cesr), 2),
        "event=0x16 cmask=1 counters=0"
    );
}
