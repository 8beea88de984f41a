//! What loading a user's file costs, in heap bytes, which a counting allocator measures
//! exactly and alike on every machine (time is never asserted): a file past a bound of
//! `counterhal_events::limits` is refused before it is parsed, naming the bound, and a file
//! within them costs at most [`BYTES_A_TOKEN`] for each of its TOML tokens.
//!
//! The allocator counts only on a thread that asks ([`heap_peak`]), so the other tests of the
//! binary run beside it uncounted and unchanged.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use counterhal_events::Database;
use counterhal_events::limits::{
    MAX_EVENT_ALIASES, MAX_FILE_ENTRIES, MAX_FILE_MODELS, MAX_MAPPING_TERMS, MAX_TOML_TOKENS,
    MAX_UNIT_MASKS,
};
#[cfg(feature = "metrics")]
use counterhal_events::parse_metrics;
use counterhal_hal::ErrorKind;

struct CountingAllocator;

thread_local! {
    /// Whether this thread's heap is being measured, its bytes live since then, and their peak.
    // Const already: clippy's missing_const_for_thread_local misreads thread_local!'s expansion
    // on targets that keep thread locals in emulated TLS (OpenBSD), and the allow says so.
    #[allow(clippy::missing_const_for_thread_local)]
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    #[allow(clippy::missing_const_for_thread_local)]
    static LIVE: Cell<isize> = const { Cell::new(0) };
    #[allow(clippy::missing_const_for_thread_local)]
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// Adds `bytes` (less than 0 for a free) to this thread's live heap, where it is measured.
fn count(bytes: isize) {
    let _ = COUNTING.try_with(|counting| {
        if counting.get() {
            let live = LIVE.with(Cell::get) + bytes;
            LIVE.with(|l| l.set(live));
            PEAK.with(|p| p.set(p.get().max(live)));
        }
    });
}

// SAFETY: every method forwards to the system allocator unchanged; counting touches only
// const-initialised thread-locals without destructors (which never allocate).
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: the caller upholds GlobalAlloc::alloc's contract, passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: `ptr` came from System.alloc with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: the caller upholds GlobalAlloc::realloc's contract, passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// The most heap bytes a file may cost for each TOML token it holds: the TOML reader keeps
/// the whole document as tokens and tables (about 150 bytes a token), then the schema's and the
/// model's copies.
const BYTES_A_TOKEN: usize = 320;

/// `work`'s result and the most heap its thread held at once while it ran, above what it held
/// before.
fn heap_peak<T>(work: impl FnOnce() -> T) -> (T, usize) {
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    COUNTING.with(|c| c.set(true));
    let result = work();
    COUNTING.with(|c| c.set(false));
    (result, PEAK.with(Cell::get).max(0) as usize)
}

/// A new model's header, for the files below.
const HEADER: &str = "[[cpu]]\nid = \"made\"\nencoder = \"intel-arch\"\n\
                      pmu = { general_counters = 4, counter_width = 48 }\n";

/// `text` loaded over an empty database: the error it is refused with, and the heap that cost.
fn refused(text: &str) -> (counterhal_hal::Error, usize) {
    let (result, peak) = heap_peak(|| Database::default().with_toml_str("big.toml", text));
    let error = result.expect_err("the file is refused");
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
    (error, peak)
}

/// A file of one token more than [`MAX_TOML_TOKENS`] (here blank lines, which cost the TOML
/// reader a token each as a key does) is refused naming the limit, having kept nothing of it:
/// the tokens are counted before it is parsed. Parsed, it took 50 MiB of heap for its 512 KiB
/// (a 60 MiB file of them took 3 GB); refused, it takes less than the error's 64 KiB.
/// Oracle: TOML 1.0's grammar (toml.io), a newline a token; the heap as the allocator saw it.
#[test]
fn a_file_past_the_token_limit_is_refused_before_it_is_parsed() {
    let text = "\n".repeat(MAX_TOML_TOKENS + 1);
    let (error, peak) = refused(&text);
    let message = error.message();
    assert!(
        message.contains("more than 524288 TOML tokens"),
        "{message}"
    );
    assert!(message.contains("big.toml:524289:1"), "{message}");
    assert!(message.contains("split it"), "{message}");
    assert!(peak < 64 << 10, "{peak} bytes of heap to refuse it");
    // So is a metrics file (in a build that reads them).
    #[cfg(feature = "metrics")]
    {
        let metrics = format!("model = \"made\"\n{text}");
        let (result, peak) = heap_peak(|| parse_metrics("big-metrics.toml", &metrics));
        let error = result.expect_err("the metrics file is refused");
        assert!(
            error
                .message()
                .contains("big-metrics.toml:524286: more than 524288 TOML tokens"),
            "{error}"
        );
        assert!(peak < 64 << 10, "{peak} bytes of heap to refuse it");
    }
}

/// The TOML tokens of `text`, as the limit counts them: all but runs of spaces, a quoted
/// string or a bare word one token, each bracket, `=`, `,`, `.` and newline one.
fn tokens(text: &str) -> usize {
    let (mut count, mut in_string, mut in_word) = (0, false, false);
    for c in text.chars() {
        match c {
            '"' => {
                count += usize::from(!in_string);
                in_string = !in_string;
                in_word = false;
            }
            _ if in_string => {}
            ' ' => in_word = false,
            '[' | ']' | '{' | '}' | '=' | ',' | '.' | '\n' => {
                count += 1;
                in_word = false;
            }
            _ => {
                count += usize::from(!in_word);
                in_word = true;
            }
        }
    }
    count
}

/// Files within the limits, in the shapes that cost the reader most a byte (tiny events
/// with unit masks, inline tables, bare arrays, blank lines), cost at most [`BYTES_A_TOKEN`]
/// of heap a token: so a file at [`MAX_TOML_TOKENS`] costs at most 160 MiB (the most measured: 245 bytes a token, tables of one key).
/// Oracle: the heap as the allocator saw it, against the tokens counted here.
#[test]
fn a_file_within_the_limits_costs_a_bounded_heap_a_token() {
    let events: String = std::iter::once(HEADER.to_string())
        .chain((0..4_000).map(|i| {
            format!(
                "[[cpu.event]]\nname = \"E{i}\"\ncode = 0x{:x}\n\
                 umasks = [ {{ name = \"FIRST\", code = 0x01 }}, {{ name = \"SECOND_{i}\", code = 0x02 }} ]\n",
                i % 256
            )
        }))
        .collect();
    let masks = (0..2_000)
        .map(|i| format!("{{ name = \"U{i}\", code = 1 }}"))
        .collect::<Vec<_>>()
        .join(",");
    let inline = format!("{HEADER}[[cpu.event]]\nname = \"WIDE\"\ncode = 1\numasks = [{masks}]\n");
    let arrays = format!(
        "{HEADER}[[cpu.event]]\nname = \"A\"\ncode = 1\ncounters = [{}0]\n",
        "0,".repeat(60_000)
    );
    let blank = format!("{HEADER}{}", "\n".repeat(100_000));
    // Tables of one key each, which the schema refuses after the TOML reader has read them
    // all: the most it keeps a token.
    let one_key = format!("x = [{}]\n", "{a=1},".repeat(20_000));
    for (shape, text, loads) in [
        ("events", events, true),
        ("inline tables", inline, true),
        ("arrays", arrays, true),
        ("blank lines", blank, true),
        ("tables of one key", one_key, false),
    ] {
        let (result, peak) = heap_peak(|| Database::default().with_toml_str("f.toml", &text));
        assert_eq!(result.is_ok(), loads, "{shape}: {:?}", result.err());
        let tokens = tokens(&text);
        eprintln!("{shape}: {peak} bytes of heap for {tokens} tokens");
        assert!(
            peak <= tokens * BYTES_A_TOKEN,
            "{shape}: {peak} bytes of heap for {tokens} tokens ({} a token)",
            peak / tokens
        );
    }
}

/// `text` loaded over the shipped database is refused, its message holding `what`.
fn refused_naming(text: &str, what: &str) {
    let error = Database::shipped()
        .unwrap()
        .with_toml_str("big.toml", text)
        .err()
        .unwrap_or_else(|| panic!("the file is not refused for {what}"));
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
    assert!(error.message().contains(what), "{error}");
}

/// A file adding one model more than [`MAX_FILE_MODELS`] is refused naming the limit. Each
/// model's id was looked for among those before it: 11,039 tiny models (1 MiB) took 0.6 s
/// to load, 43,807 (4 MiB) 12 s.
/// Oracle: the 98 models the library ships, and the file built here one past the limit.
#[test]
fn a_file_of_one_model_past_the_limit_is_refused_by_name() {
    let models: String = (0..=MAX_FILE_MODELS)
        .map(|i| {
            format!(
                "[[cpu]]\nid = \"m{i}\"\nencoder = \"amd64\"\n\
                 pmu = {{ general_counters = 4, counter_width = 48 }}\n"
            )
        })
        .collect();
    refused_naming(&models, "model `m1024` is past the limit of 1024 models");
}

/// A table listing shipped models, which loads its events into each, is refused before any
/// is loaded where that passes [`MAX_FILE_ENTRIES`]: 60 ids over 1 MiB of events took
/// 360 MB.
/// Oracle: the shipped data's largest model (1,446 events and unit masks), and the file
/// built here one past the limit.
#[test]
fn a_table_for_several_models_past_the_entries_limit_is_refused_by_name() {
    let shipped = Database::shipped().unwrap();
    let ids: Vec<String> = shipped
        .models()
        .map(|m| format!("\"{}\"", m.id))
        .take(64)
        .collect();
    let per_model = MAX_FILE_ENTRIES / ids.len() + 1;
    let mut listed = format!("[[cpu]]\nid = [{}]\n", ids.join(", "));
    for i in 0..per_model {
        listed.push_str(&format!("[[cpu.event]]\nname = \"LISTED_{i}\"\ncode = 1\n"));
    }
    refused_naming(&listed, "limit of 262144 events and unit masks");
}

/// An event of one unit mask more than [`MAX_UNIT_MASKS`] is refused naming the limit (the
/// event aliases and mappings look names up among an event's unit masks).
/// Oracle: the shipped data's most, `clx`'s `OCR` (1,008), and the file built here.
#[test]
fn an_event_of_one_unit_mask_past_the_limit_is_refused_by_name() {
    let masks = (0..=MAX_UNIT_MASKS)
        .map(|i| format!("{{ name = \"U{i}\", code = 1 }}"))
        .collect::<Vec<_>>()
        .join(",");
    let wide = format!("{HEADER}[[cpu.event]]\nname = \"WIDE\"\ncode = 1\numasks = [{masks}]\n");
    refused_naming(&wide, "`WIDE` has 4097 unit masks, above the limit of 4096");
}

/// A table of one event alias more than [`MAX_EVENT_ALIASES`] is refused naming the limit:
/// each alias is checked among its event's unit masks, 40,897 aliases of an event of 4,000
/// took 2 s to load.
/// Oracle: the shipped data's most (`amd64_fam1ah_zen5`, 337), and the file built here.
#[test]
fn a_table_of_one_event_alias_past_the_limit_is_refused_by_name() {
    let mut aliases =
        format!("{HEADER}[[cpu.event]]\nname = \"E\"\ncode = 1\n[cpu.event_aliases]\n");
    for i in 0..=MAX_EVENT_ALIASES {
        aliases.push_str(&format!("\"A{i}\" = \"E\"\n"));
    }
    refused_naming(
        &aliases,
        "4097 event aliases for model `made`, above the limit of 4096",
    );
}

/// An expression of one term more than [`MAX_MAPPING_TERMS`] is refused naming the limit.
/// Oracle: PAPI 7.0's `PAPI_MAX_INFO_TERMS` (12, papi.h) and `PAPI_EVENTS_IN_DERIVED_EVENT`
/// (8), and the file built here.
#[test]
fn an_expression_of_one_term_past_the_limit_is_refused_by_name() {
    let terms = vec!["E"; MAX_MAPPING_TERMS + 1].join(" + ");
    let sum = format!(
        "{HEADER}[[cpu.event]]\nname = \"E\"\ncode = 1\n[cpu.generalized]\ncycles = \"{terms}\"\n"
    );
    refused_naming(&sum, "more than 64 terms");
}
