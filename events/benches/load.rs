//! Prints what loading costs as the data grows: the start-up header scan of every shipped
//! model, the full parse of the largest model as a ratio to `skl`'s, a resolve on the largest
//! model, a user file of 20,000 events against one of 5,000 (linear: about 4x), and files at
//! the bounds of `counterhal_events::limits` in the shapes that once cost quadratic time (512
//! models against 1,024, 2,048 event aliases of an event of 4,096 unit masks against 4,096:
//! linear, about 2x each). Targets: header scan < 5 ms, largest model < 15 ms, resolve < 2 us,
//! a file at the bounds < 0.5 s. Printed, not asserted.

use std::hint::black_box;
use std::time::{Duration, Instant};

use counterhal_events::limits::{MAX_EVENT_ALIASES, MAX_FILE_MODELS, MAX_UNIT_MASKS};
use counterhal_events::{Database, shipped_files};
use counterhal_hal::{Accepts, Domain, Family};

/// A backend that programs x86 counters itself.
const X86: Accepts = Accepts::new(
    &[Family::Evtsel, Family::P5Cesr],
    Domain::from_bits_truncate(Domain::USER.bits() | Domain::KERNEL.bits()),
    Domain::DEFAULT,
);

/// The best time of `rounds` rounds of `iterations` calls, per call (the best round is the one
/// least disturbed by other work on the machine).
fn per_iteration(rounds: u32, iterations: u32, mut work: impl FnMut()) -> Duration {
    work();
    (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                work();
            }
            start.elapsed() / iterations
        })
        .min()
        .unwrap_or_default()
}

/// A synthetic user file: one new model of `events` events, every fourth with two unit masks,
/// and a few generalized events over them (what a large vendor table looks like).
fn user_file(events: usize) -> String {
    let mut text = String::from(
        "[[cpu]]\nid = \"synthetic\"\nencoder = \"intel-arch\"\n\
         pmu = { general_counters = 4, counter_width = 48 }\n",
    );
    for i in 0..events {
        let code = i % 0x100;
        text.push_str(&format!(
            "[[cpu.event]]\nname = \"SYNTHETIC_EVENT_{i}\"\ncode = {code:#x}\n"
        ));
        if i % 4 == 0 {
            text.push_str(&format!(
                "umasks = [ {{ name = \"FIRST\", code = 0x01 }}, {{ name = \"SECOND_{i}\", code = 0x02 }} ]\n"
            ));
        }
    }
    text.push_str(
        "[cpu.generalized]\n\"cycles\" = \"SYNTHETIC_EVENT_61\"\n\
         \"instructions\" = \"SYNTHETIC_EVENT_192:FIRST\"\n",
    );
    text
}

/// A file of `models` new models, each its header alone.
fn models_file(models: usize) -> String {
    (0..models)
        .map(|i| {
            format!(
                "[[cpu]]\nid = \"m{i}\"\nencoder = \"amd64\"\n\
                 pmu = {{ general_counters = 4, counter_width = 48 }}\n"
            )
        })
        .collect()
}

/// A file of one event of [`MAX_UNIT_MASKS`] unit masks and `aliases` event aliases, each of
/// its last unit mask (each checked among all of them).
fn aliases_file(aliases: usize) -> String {
    let masks: Vec<String> = (0..MAX_UNIT_MASKS)
        .map(|j| format!("{{ name = \"U{j}\", code = 1 }}"))
        .collect();
    let mut text = format!(
        "[[cpu]]\nid = \"wide\"\nencoder = \"intel-arch\"\n\
         pmu = {{ general_counters = 4, counter_width = 48 }}\n\
         [[cpu.event]]\nname = \"WIDE\"\ncode = 1\numasks = [{}]\n[cpu.event_aliases]\n",
        masks.join(",")
    );
    for i in 0..aliases {
        text.push_str(&format!("\"A{i}\" = \"WIDE:U{}\"\n", MAX_UNIT_MASKS - 1));
    }
    text
}

/// Prints the time to load each pair of files, and their ratio (linear: about 2).
fn at_the_bounds(database: &Database) {
    let load = |text: &str| {
        per_iteration(3, 1, || {
            let loaded = database
                .clone()
                .with_toml_str("bounds.toml", black_box(text))
                .expect("a file within the bounds loads");
            black_box(loaded);
        })
    };
    for (what, half, whole) in [
        (
            "models",
            models_file(MAX_FILE_MODELS / 2),
            models_file(MAX_FILE_MODELS),
        ),
        (
            "event aliases of 4,096 unit masks",
            aliases_file(MAX_EVENT_ALIASES / 2),
            aliases_file(MAX_EVENT_ALIASES),
        ),
    ] {
        let (half_time, whole_time) = (load(&half), load(&whole));
        println!(
            "{what}: half the bound {half_time:?}, the bound {whole_time:?}; ratio {:.2} (linear: about 2; target < 0.5 s)",
            whole_time.as_secs_f64() / half_time.as_secs_f64().max(1e-9)
        );
    }
}

fn main() {
    let headers = per_iteration(5, 20, || {
        black_box(Database::parse_shipped().expect("shipped database loads"));
    });
    let database = Database::shipped().expect("shipped database loads");
    let models = database.models().count();
    println!("header scan of all {models} shipped models (start-up): {headers:?} (target < 5 ms)");

    // The largest model's full parse, as a ratio to skl's (each from a fresh database, so the
    // header scan is paid too and subtracted).
    // The largest model: the most text to parse (its generated table and its overlay).
    let text_bytes = |id: &str| -> usize {
        shipped_files()
            .iter()
            .filter(|name| {
                let file = name.rsplit('/').next().unwrap_or(name);
                file.strip_suffix(".toml") == Some(id)
            })
            .map(|name| {
                let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("..")
                    .join(name);
                std::fs::metadata(path).map_or(0, |m| m.len() as usize)
            })
            .sum()
    };
    let (largest, bytes) = database
        .models()
        .map(|m| (m.id.clone(), text_bytes(&m.id)))
        .max_by_key(|(_, n)| *n)
        .expect("models");
    let size = database
        .model(&largest)
        .expect("model exists")
        .unit_mask_count();
    let parse = |id: &str| {
        per_iteration(3, 10, || {
            let cold = Database::parse_shipped().expect("shipped database loads");
            black_box(cold.model(id).expect("model exists").events().len());
        })
        .saturating_sub(headers)
    };
    let largest_parse = parse(&largest);
    // The same measurement when skl is the largest (a second one would differ by noise alone).
    let skl_parse = if largest == "skl" {
        largest_parse
    } else {
        parse("skl")
    };
    println!(
        "full parse of the largest model ({largest}, {bytes} bytes, {size} events and unit masks): {largest_parse:?}, {:.1}x skl's {skl_parse:?} (target < 15 ms)",
        largest_parse.as_secs_f64() / skl_parse.as_secs_f64().max(1e-9)
    );

    let model = database.model(&largest).expect("model exists");
    let event = model
        .events()
        .iter()
        .find(|e| !e.unit_masks().is_empty())
        .map(|e| format!("{}.{}:u", e.name, e.unit_masks()[0].name))
        .expect("an event with unit masks");
    let resolve = per_iteration(3, 20_000, || {
        black_box(
            database
                .resolve(Some(&largest), black_box(&event), &X86)
                .expect("resolves"),
        );
    });
    println!(
        "resolve `{event}` on the largest model ({largest}): {resolve:?} per call (target < 2 us)"
    );

    let load = |events: usize| {
        let text = user_file(events);
        let took = per_iteration(3, 1, || {
            let loaded = database
                .clone()
                .with_toml_str("synthetic.toml", black_box(&text))
                .expect("the synthetic file loads");
            black_box(loaded);
        });
        (took, text.len())
    };
    let ((small, small_bytes), (large, large_bytes)) = (load(5_000), load(20_000));
    println!(
        "user file of 5,000 events ({small_bytes} bytes): {small:?}; of 20,000 ({large_bytes} bytes): {large:?}; ratio {:.2} (linear: about 4)",
        large.as_secs_f64() / small.as_secs_f64().max(1e-9)
    );
    at_the_bounds(&database);
}
