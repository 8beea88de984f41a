//! Event strings as users write them (`INST_RETIRED.ANY:u`, `skl::L2_RQSTS:c=3`, `cpu/event=0x3c/`,
//! PAPI preset names...) resolved against every shipped model: an answer or an error, never a
//! panic; and the same text read as a PMU's terms (`event=0x3c,umask=1`). The first byte picks
//! the model (or none: the generic names).
#![no_main]

use std::sync::OnceLock;

use counterhal_events::Database;
use counterhal_hal::{Accepts, Domain, Family};
use libfuzzer_sys::fuzz_target;

const ACCEPTS: [Accepts; 2] = [
    Accepts::new(&[Family::Evtsel], Domain::ALL, Domain::DEFAULT),
    Accepts::new(
        &[Family::Perf, Family::Evtsel],
        Domain::ALL,
        Domain::DEFAULT,
    ),
];

fn database() -> &'static (Database, Vec<String>) {
    static DATABASE: OnceLock<(Database, Vec<String>)> = OnceLock::new();
    DATABASE.get_or_init(|| {
        let database = Database::shipped().expect("the shipped database loads");
        let ids = database.models().map(|m| m.id.clone()).collect();
        (database, ids)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let (database, ids) = database();
    let pick = usize::from(first >> 1);
    let cpu = (pick < ids.len()).then(|| ids[pick].as_str());
    if let Ok(event) = database.resolve(cpu, text, &ACCEPTS[usize::from(first & 1)]) {
        assert!(!event.terms.is_empty(), "{text:?} resolved to no terms");
    }
    let _ = counterhal_events::parse_pmu_terms(text);
});
