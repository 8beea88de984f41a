//! A user's events file (`--events`, `COUNTERHAL_EVENTS`): any text is loaded into a database
//! or refused with an error naming the file, line and key; never a panic. Loaded alone and on
//! top of the shipped database (where its models meet the shipped ones).
#![no_main]

use counterhal_events::Database;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(error) = Database::from_toml_str("user.toml", text) {
        assert!(!error.to_string().is_empty());
    }
    let _ = Database::shipped().and_then(|d| d.with_toml_str("user.toml", text));
});
