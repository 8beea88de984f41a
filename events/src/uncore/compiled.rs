//! The shipped uncore events as `counterhal-gen tables` wrote them (`table_writer/uncore.rs`):
//! rows of the shipped tables ([`crate::table`]), each model's events runs of shared rows,
//! sorted by name. Nothing here parses.

use crate::table::{Models, Table};

/// A string of this module's part of the shipped tables.
type Str = crate::table::Str<Models>;

crate::table::row! {
    /// One event: its name's parts before its first `.` and from it on (`UNCORE_BASES`,
    /// `UNCORE_SUFFIXES`), its event code ([`NO_CODE`]: none) and the rest of its terms
    /// (`UNCORE_TERMS`), its PMU (`UNCORE_PMUS`), its scale (`UNCORE_SCALES`, 0: none) with
    /// the [`DEPRECATED`] flag.
    struct Row {
        base: u16,
        suffix: u16,
        code: u16,
        rest: u16,
        pmu: u8,
        scale: u8,
    }
}

crate::table::row! {
    /// One model's table: its id and its events, a range of `UNCORE_RUNS` (each a range of
    /// `UNCORE_ROWS`).
    struct UncoreTable {
        model: Str,
        runs: (u16, u16),
    }
}

/// The flag of a row's scale byte that marks it deprecated.
pub(crate) const DEPRECATED: u8 = 0x80;

/// The code of a row whose terms do not start with `event=`.
pub(crate) const NO_CODE: u16 = u16::MAX;

/// The string at `index` of `table` (the writer wrote every index the rows name).
fn text(table: Table<Str>, index: u16) -> &'static str {
    table.get(usize::from(index)).map_or("", Str::text)
}

/// The models with shipped uncore events this build holds, sorted (none without the
/// `x86-models` feature: the uncore events are the x86 models').
pub fn shipped_uncore_models() -> Vec<&'static str> {
    tables().iter().map(|t| t.model.text()).collect()
}

fn tables() -> Table<UncoreTable> {
    if cfg!(feature = "x86-models") {
        crate::table::table!(Models, "UNCORE_TABLES")
    } else {
        Table::empty()
    }
}

/// One event of a table, as the rows give it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Event(Row);

impl Event {
    /// Its name's part before its first `.`, and the part from the `.` on (empty: no `.`).
    pub(super) fn name_parts(self) -> (&'static str, &'static str) {
        (
            text(crate::table::table!(Models, "UNCORE_BASES"), self.0.base),
            text(
                crate::table::table!(Models, "UNCORE_SUFFIXES"),
                self.0.suffix,
            ),
        )
    }

    /// Its name.
    pub(super) fn name(self) -> String {
        let (base, suffix) = self.name_parts();
        format!("{base}{suffix}")
    }

    /// Whether its name is `wanted`, ASCII case ignored.
    pub(super) fn is_named(self, wanted: &str) -> bool {
        let (base, suffix) = self.name_parts();
        wanted.len() == base.len() + suffix.len()
            && wanted
                .get(..base.len())
                .is_some_and(|b| b.eq_ignore_ascii_case(base))
            && wanted
                .get(base.len()..)
                .is_some_and(|s| s.eq_ignore_ascii_case(suffix))
    }

    /// perf's PMU for it.
    pub(super) fn pmu(self) -> &'static str {
        text(
            crate::table::table!(Models, "UNCORE_PMUS"),
            u16::from(self.0.pmu),
        )
    }

    /// Its terms, as perf's generator wrote them.
    pub(super) fn terms(self) -> String {
        let rest = text(crate::table::table!(Models, "UNCORE_TERMS"), self.0.rest);
        match (self.0.code, rest) {
            (NO_CODE, rest) => rest.to_string(),
            (code, "") => format!("event={}", llx(code)),
            (code, rest) => format!("event={},{rest}", llx(code)),
        }
    }

    /// The scale and unit of its count, where perf scales it.
    pub(super) fn scale(self) -> Option<(f64, &'static str)> {
        match self.0.scale & !DEPRECATED {
            0 => None,
            index => crate::table::table!(Models, (f64, Str), "UNCORE_SCALES")
                .get(usize::from(index))
                .map(|(scale, unit)| (scale, unit.text())),
        }
    }

    /// Whether perf's table marks it deprecated.
    pub(super) fn deprecated(self) -> bool {
        self.0.scale & DEPRECATED != 0
    }
}

/// `number` as `%#llx` prints it, below 10 in decimal.
fn llx(number: u16) -> String {
    if number < 10 {
        number.to_string()
    } else {
        format!("{number:#x}")
    }
}

/// The events of model `model` (an id), sorted by name, ASCII case ignored; none for a model
/// without a table.
pub(super) fn events(model: &str) -> impl Iterator<Item = Event> {
    let tables = tables();
    let runs = tables
        .binary_search_by_key(&model, |t| t.model.text())
        .ok()
        .and_then(|index| tables.get(index))
        .map_or(Table::empty(), |table| {
            crate::table::table!(Models, (u16, u16), "UNCORE_RUNS").range(table.runs)
        });
    let rows = crate::table::table!(Models, Row, "UNCORE_ROWS");
    runs.iter()
        .flat_map(move |run| rows.range(run).iter().map(Event))
}

/// How many rows the uncore tables have (each event once however many models share it),
/// and how many runs.
#[cfg(all(test, feature = "x86-models"))]
pub(super) fn row_and_run_counts() -> (usize, usize) {
    (
        crate::table::table!(Models, Row, "UNCORE_ROWS").len(),
        crate::table::table!(Models, (u16, u16), "UNCORE_RUNS").len(),
    )
}
