//! Properties of the event-string parser and the TOML loader, checked on generated inputs
//! (`COUNTERHAL_PROP_CASES` and `COUNTERHAL_PROP_SEED` make them a fuzzer: `scripts/fuzz`).

use counterhal_conformance::prop::{self, Gen};
use counterhal_events::{Database, ParsedEvent, parse_event};
use counterhal_hal::Encoding;

use crate::common;

const NAME_PIECES: &[&str] = &["INST", "_", "RETIRED", "L2", "ANY", "P", "X", "0", "9"];

/// A name as the database spells them: a letter, then letters, digits and `_`.
fn name(g: &mut Gen) -> String {
    format!("E{}", g.string_of(NAME_PIECES, 4))
}

/// Any string made of the pieces event strings are made of, and some they are not.
const STRING_PIECES: &[&str] = &[
    "INST_RETIRED",
    ":",
    "::",
    "/",
    ",",
    "=",
    "{",
    "}",
    "u",
    "k",
    "h",
    "c=",
    "cmask=",
    "e",
    "i",
    "0x",
    "ff",
    "9999999999999999999999",
    "r",
    "c0",
    "cpu",
    "event",
    "umask",
    " ",
    "\u{e9}",
    "\0",
    ".",
    "-",
    "mem",
    "x",
];

#[test]
fn the_parser_never_panics_and_errors_are_words() {
    prop::check(
        "parse_event never panics",
        |g| g.string_of(STRING_PIECES, 12),
        prop::shrink_string,
        |text| match parse_event(text) {
            Ok(_) => Ok(()),
            Err(e) if e.to_string().trim().is_empty() => Err("an empty error message".into()),
            Err(_) => Ok(()),
        },
    );
}

/// `NAME[:UMASK]...[:MODIFIER]`, with what it was made of.
#[derive(Debug)]
struct Spelled {
    text: String,
    name: String,
    unit_masks: Vec<String>,
}

#[test]
fn named_events_parse_into_what_they_were_made_of() {
    prop::check(
        "named events round-trip through the parser",
        |g| {
            let name = name(g);
            let unit_masks: Vec<String> = (0..g.below(3))
                .map(|_| format!("M{}", g.string_of(NAME_PIECES, 3)))
                .collect();
            let mut text = name.clone();
            for mask in &unit_masks {
                text.push(':');
                text.push_str(mask);
            }
            let modifier = *g.pick(&["", ":u", ":k", ":uk", ":c=2", ":e:i", ":u:c=0x10"]);
            text.push_str(modifier);
            // A group of several letters (`uk`) could be a unit mask's name: the parser keeps
            // it with the unit masks and the resolver decides.
            let mut unit_masks = unit_masks;
            if modifier == ":uk" {
                unit_masks.push("uk".into());
            }
            Spelled {
                text,
                name,
                unit_masks,
            }
        },
        prop::no_shrink,
        |spelled| match parse_event(&spelled.text) {
            Ok(ParsedEvent::Named(spec))
                if spec.name == spelled.name && spec.unit_masks == spelled.unit_masks =>
            {
                Ok(())
            }
            other => Err(format!("parsed as {other:?}")),
        },
    );
}

/// A model of generated events: (name, code, unit masks as (name, code)).
type Model = Vec<(String, u16, Vec<(String, u8)>)>;

fn model(g: &mut Gen) -> Model {
    let count = 1 + g.index(12);
    (0..count)
        .map(|i| {
            let umasks = (0..g.below(3))
                .map(|j| (format!("U{j}"), (1 + g.below(255)) as u8))
                .collect();
            (format!("{}_{i}", name(g)), g.below(0x1000) as u16, umasks)
        })
        .collect()
}

fn model_toml(model: &Model) -> String {
    let mut text = String::from(
        "[[cpu]]\nid = \"gen\"\nencoder = \"amd64\"\n\
         pmu = { general_counters = 6, counter_width = 48 }\n",
    );
    for (name, code, umasks) in model {
        text.push_str(&format!(
            "[[cpu.event]]\nname = \"{name}\"\ncode = {code:#x}\n"
        ));
        if !umasks.is_empty() {
            let list: Vec<String> = umasks
                .iter()
                .map(|(u, c)| format!("{{ name = \"{u}\", code = {c:#x} }}"))
                .collect();
            text.push_str(&format!("umasks = [{}]\n", list.join(", ")));
        }
    }
    text
}

fn shrink_model(model: &Model) -> Vec<Model> {
    (0..model.len())
        .filter(|_| model.len() > 1)
        .map(|skip| {
            let mut smaller = model.clone();
            smaller.remove(skip);
            smaller
        })
        .collect()
}

#[test]
fn every_loaded_event_resolves_to_the_code_it_was_given() {
    let shipped = Database::shipped().unwrap();
    prop::check(
        "loaded events resolve to their codes",
        model,
        shrink_model,
        |model| {
            let db = shipped
                .clone()
                .with_toml_str("gen.toml", &model_toml(model))
                .map_err(|e| format!("load: {e}"))?;
            for (name, code, umasks) in model {
                let spelled = match umasks.first() {
                    Some((umask, _)) => format!("{name}:{umask}"),
                    None => name.clone(),
                };
                let resolved = db
                    .resolve(Some("gen"), &spelled, &common::X86)
                    .map_err(|e| format!("{spelled}: {e}"))?;
                let Encoding::Evtsel(evtsel) = &resolved.terms[0].request.encoding else {
                    return Err(format!("{spelled}: not an event select"));
                };
                let umask = umasks.first().map_or(0, |(_, c)| *c);
                if (evtsel.code, evtsel.umask) != (*code, umask) {
                    return Err(format!(
                        "{spelled}: code {:#x} umask {:#x}, want {code:#x} {umask:#x}",
                        evtsel.code, evtsel.umask
                    ));
                }
            }
            Ok(())
        },
    );
}

#[test]
fn mutated_files_never_panic_and_errors_point_inside_the_file() {
    let shipped = Database::shipped().unwrap();
    prop::check(
        "mutated events files load or point at a line of theirs",
        |g| {
            let mut text = model_toml(&model(g));
            for _ in 0..1 + g.below(4) {
                let at = g.index(text.len() + 1);
                let at = (0..=at)
                    .rev()
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                match g.below(3) {
                    0 => {
                        const PIECES: [&str; 7] = ["=", "[", "\"", "0x", "]]", "\n", "-1"];
                        let piece: &&str = g.pick(&PIECES);
                        text.insert_str(at, piece);
                    }
                    1 => text.truncate(at),
                    _ => {
                        let end = (at + 1 + g.index(8)).min(text.len());
                        let end = (end..=text.len()).find(|&i| text.is_char_boundary(i));
                        text.replace_range(at..end.unwrap_or(text.len()), "");
                    }
                }
            }
            text
        },
        prop::shrink_string,
        |text| match shipped.clone().with_toml_str("m.toml", text) {
            Ok(_) => Ok(()),
            Err(e) => {
                let message = e.message();
                let lines = text.lines().count() + 1;
                let line: Option<usize> = message
                    .strip_prefix("m.toml:")
                    .and_then(|rest| rest.split(':').next())
                    .and_then(|n| n.parse().ok());
                match line {
                    Some(line) if (1..=lines).contains(&line) => Ok(()),
                    _ => Err(format!("error names no line of the file: {message}")),
                }
            }
        },
    );
}
