//! libpfm4's x86 core tables (`data/generated/libpfm4/PMU.toml`) as rows: each file read and
//! checked by the library's own reader (`src/libpfm4/file.rs`) and written as rows (read by
//! `src/libpfm4/table.rs`, their names prefixed `LIBPFM4_`), in records of a few bytes, each
//! once however many PMUs have it:
//!
//! - strings as `Str`s of the one pool (`pool.rs`); the equivalences as indices of
//!   `EQUIVS`, where 0, the empty string, is none (the reader refuses an empty `equiv`);
//! - `VALUES`: the codes and counter masks; `EVENT_ATTRS` and `UMASK_ATTRS`: the counters,
//!   modifiers, groups and (events') flags, each combination once;
//! - `UMASKS`: the unit masks, each event's together, in libpfm4's order; events with the
//!   same unit masks (the same event on several PMUs) share one run of them;
//! - `EVENTS`: the events, each with its unit masks as `(start, length)` in `UMASKS`; a PMU's
//!   events are a range of `EVENT_LISTS` (indices of `EVENTS`), in libpfm4's order;
//! - `PMUS`: one per file, sorted by name.

use std::path::Path;

use super::{Lists, Rows, Tables, Values, short, toml_stems};
use crate::libpfm4::file::{self as libpfm4_file, EventEntry, UmaskEntry};
use crate::libpfm4::table::{Event, EventAttrs, Pmu, Umask, UmaskAttrs};
use crate::table::Models;

/// A string of part `models`.
type Str = crate::table::Str<Models>;

/// The tables as they are written.
#[derive(Default)]
struct Writer {
    values: Values<u64>,
    equivs: Rows<Str>,
    event_attrs: Rows<EventAttrs>,
    umask_attrs: Rows<UmaskAttrs>,
    umasks: Lists<UmaskKey>,
    events: Rows<Event>,
    event_lists: Lists<u16>,
}

/// A unit mask as a list of them holds it: [`Umask`]'s fields, comparable.
#[derive(Clone, PartialEq, Eq, Hash)]
struct UmaskKey(Str, u16, u16, u16, u16);

impl Writer {
    /// `value`'s index in `VALUES`, added if new.
    fn value(&mut self, value: u64) -> u16 {
        short(self.values.add(value), "the values of libpfm4's tables")
    }

    /// An equivalence's index in `EQUIVS` (0: none).
    fn equiv(&mut self, tables: &mut Tables<Models>, equiv: Option<&str>) -> u16 {
        if self.equivs.len() == 0 {
            self.equivs.add(&tables.string(""));
        }
        let row = tables.string(equiv.unwrap_or_default());
        short(
            self.equivs.add(&row),
            "the equivalences of libpfm4's tables",
        )
    }
}

/// A file's bits as a record's `u16` (flags, modifiers, groups).
fn bits(value: u32, what: &str) -> u16 {
    u16::try_from(value).unwrap_or_else(|_| panic!("{what} {value:#x}: past 16 bits"))
}

/// Writes the tables of `data/generated/libpfm4`; a table that does not read or check stops
/// the writer, naming the file and what is wrong.
pub(crate) fn write(data: &Path, tables: &mut Tables<Models>) {
    let dir = data.join("generated/libpfm4");
    let names = toml_stems(&dir);
    let mut w = Writer::default();
    let mut pmus = Vec::new();
    for name in &names {
        let path = dir.join(format!("{name}.toml"));
        let file_name = format!("events/data/generated/libpfm4/{name}.toml");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file_name}: {e}"));
        let pmu = libpfm4_file::read(&file_name, &text).unwrap_or_else(|why| panic!("{why}"));
        assert!(
            pmu.name == *name,
            "{file_name}: says PMU `{}`, its file name `{name}`",
            pmu.name
        );
        assert!(
            name.bytes().all(|b| !b.is_ascii_uppercase()),
            "{file_name}: a PMU's name is in lower case (the library looks names up lowered)"
        );
        assert!(
            !pmu.events.is_empty(),
            "{file_name}: a table has at least one event"
        );
        let mut events = Vec::with_capacity(pmu.events.len());
        for event in &pmu.events {
            let run = event
                .umasks
                .iter()
                .map(|umask| umask_record(tables, &mut w, umask))
                .collect();
            let umasks = w.umasks.add(run);
            let row = event_record(tables, &mut w, event, umasks);
            events.push(short(w.events.add(&row), "the events of libpfm4's tables"));
        }
        pmus.push(Pmu {
            name: tables.string(&pmu.name),
            intel: pmu.intel,
            raw_umask: pmu.raw_umask,
            ecmask: pmu.ecmask,
            events: w.event_lists.add(events),
        });
    }
    let umasks: Vec<Umask> = (w.umasks.items.into_iter())
        .map(|UmaskKey(name, code, attrs, flags, equiv)| Umask {
            name,
            code,
            attrs,
            flags,
            equiv,
        })
        .collect();
    tables.section("LIBPFM4_VALUES", &w.values.values);
    tables.rows("LIBPFM4_EQUIVS", w.equivs);
    tables.rows("LIBPFM4_EVENT_ATTRS", w.event_attrs);
    tables.rows("LIBPFM4_UMASK_ATTRS", w.umask_attrs);
    tables.section("LIBPFM4_UMASKS", &umasks);
    tables.rows("LIBPFM4_EVENTS", w.events);
    tables.section("LIBPFM4_EVENT_LISTS", &w.event_lists.items);
    tables.section("LIBPFM4_PMUS", &pmus);
}

/// One event's record, its unit masks `UMASKS[start..start + length]`.
fn event_record(
    tables: &mut Tables<Models>,
    w: &mut Writer,
    event: &EventEntry,
    umasks: (u16, u16),
) -> Event {
    let attrs = EventAttrs {
        cntmsk: w.value(event.cntmsk),
        modmsk: bits(event.modmsk, "modifiers"),
        modmsk_req: bits(event.modmsk_req, "modifiers"),
        flags: bits(event.flags, "flags"),
        ngrp: u8::try_from(event.ngrp).expect("the reader allows at most 31 groups"),
    };
    Event {
        name: tables.string(&event.name),
        code: w.value(event.code),
        attrs: short(w.event_attrs.add(&attrs), "the events' attributes"),
        equiv: w.equiv(tables, event.equiv.as_deref()),
        umasks,
    }
}

/// One unit mask's record.
fn umask_record(tables: &mut Tables<Models>, w: &mut Writer, umask: &UmaskEntry) -> UmaskKey {
    let attrs = UmaskAttrs {
        cntmsk: w.value(umask.cntmsk),
        grpid: bits(umask.grpid, "group"),
        modhw: bits(umask.modhw, "modifiers"),
        modmsk_req: bits(umask.modmsk_req, "modifiers"),
    };
    UmaskKey(
        tables.string(&umask.name),
        w.value(umask.code),
        short(w.umask_attrs.add(&attrs), "the unit masks' attributes"),
        bits(umask.flags, "flags"),
        w.equiv(tables, umask.equiv.as_deref()),
    )
}
