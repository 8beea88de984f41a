//! The listing keeps deprecated native events apart, after the current ones, and marks the
//! events that can be sampled precisely.

use std::sync::Arc;

use counterhal::{AnyBackend, Context, Section, list_events};
use counterhal_events::Database;

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
    let context = Context {
        database: Arc::new(Database::from_toml_str("marks.toml", FILE).unwrap()),
        cpu: None,
        model: Some("markcore".to_string()),
    };
    let listed = list_events::<AnyBackend>(&context, Err("no backend in this test"), "");
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
