//! The shipped metrics as `counterhal-gen tables` wrote them (`table_writer/metrics.rs`): rows
//! of the shipped tables ([`crate::table`]), formulas as nodes shared between formulas,
//! already parsed and checked. Nothing here parses.

use std::borrow::Cow;

use crate::expression::Expr;
use crate::expression::Function::{self, DRatio, Max, Min};
use crate::expression::Op::{
    self, Add, And, Divide, Greater, GreaterEqual, Less, LessEqual, Multiply, Or, Subtract, Xor,
};
use crate::table::{Field, Metrics, Reader, Table};

/// A string of this module's part of the shipped tables.
type Str = crate::table::Str<Metrics>;

/// A node of a formula, its operands by index into `NODES`, its number by index into
/// `NUMBERS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
// The shipped formulas have no negation, `has_event` or `source_count` today; the writer
// writes them when a table does.
#[allow(dead_code)]
pub(crate) enum Node {
    Number(u16),
    Name(Str),
    Negate(u16),
    /// The first operand, then `LINKS[start..start + length]`: each operator with the operand
    /// after it.
    Chain(u16, u16, u16),
    If(u16, u16, u16),
    Call(Function, u16, u16),
    HasEvent(Str),
    SourceCount(Str),
}
use Node::{Call, Chain, HasEvent, If, Name, Negate, Number, SourceCount};

/// The operators, by their index in a row.
const OPS: [Op; 11] = [
    Add,
    Subtract,
    Multiply,
    Divide,
    Less,
    Greater,
    LessEqual,
    GreaterEqual,
    And,
    Or,
    Xor,
];
/// The functions, by their index in a row.
const FUNCTIONS: [Function; 3] = [Min, Max, DRatio];

/// A node's row: its kind (its variant's index in [`Node`]), and three `u16`s: its operands,
/// or its number's index, or its string (the first two, as a `u32`), or its function's index
/// and operands.
impl Field for Node {
    const SIZE: usize = 7;
    fn read(reader: &mut Reader<'_>) -> Self {
        let kind = u8::read(reader);
        let (a, b, c) = <(u16, u16, u16)>::read(reader);
        let string = Str::new(u32::from(a) | u32::from(b) << 16);
        match kind {
            0 => Number(a),
            1 => Name(string),
            2 => Negate(a),
            3 => Chain(a, b, c),
            4 => If(a, b, c),
            5 => Call(*FUNCTIONS.get(usize::from(a)).unwrap_or(&Min), b, c),
            6 => HasEvent(string),
            _ => SourceCount(string),
        }
    }
    #[cfg(feature = "table-writer")]
    fn write(&self, out: &mut crate::table::Out) {
        let (kind, operands) = match *self {
            Number(a) => (0u8, [a, 0, 0]),
            Negate(a) => (2, [a, 0, 0]),
            Chain(a, b, c) => (3, [a, b, c]),
            If(a, b, c) => (4, [a, b, c]),
            Call(f, b, c) => {
                let f = FUNCTIONS.iter().position(|&g| g == f).unwrap_or_default();
                (5, [f as u16, b, c])
            }
            Name(s) | HasEvent(s) | SourceCount(s) => {
                let kind: u8 = match self {
                    Name(_) => 1,
                    HasEvent(_) => 6,
                    _ => 7,
                };
                kind.write(out);
                s.write(out);
                0u16.write(out);
                return;
            }
        };
        kind.write(out);
        for operand in operands {
            operand.write(out);
        }
    }
}

/// An operator: its index in [`OPS`].
impl Field for Op {
    const SIZE: usize = 1;
    fn read(reader: &mut Reader<'_>) -> Self {
        *OPS.get(usize::from(u8::read(reader))).unwrap_or(&Add)
    }
    #[cfg(feature = "table-writer")]
    fn write(&self, out: &mut crate::table::Out) {
        let index = OPS.iter().position(|op| op == self).unwrap_or_default();
        (index as u8).write(out);
    }
}

crate::table::row! {
    /// One metric: its name, unit (an index of `UNITS`), groups
    /// (`GROUPS[start..start + length]`), its formula's root node, its scale (an index of
    /// `NUMBERS`) and its threshold formula's root node ([`NO_THRESHOLD`] for none).
    struct Entry {
        name: Str,
        unit: u8,
        groups: (u16, u16),
        formula: u16,
        scale: u16,
        threshold: u16,
    }
}

crate::table::row! {
    /// One model's table: its id, its events' other names (`EVENTS[..]`), its metrics
    /// (`METRICS[..]`), the names perf's releases give them (`METRIC_ALIASES[..]`: alias,
    /// metric as its index among the table's, release as an index of `RELEASES`, sorted by
    /// alias), its events' mean retire latencies (`RETIRE_LATENCIES[..]`: event, latency as an
    /// index of `NUMBERS`).
    struct MetricsTable {
        model: Str,
        events: (u16, u16),
        metrics: (u16, u16),
        aliases: (u16, u16),
        latencies: (u16, u16),
    }
}

/// An [`Entry`]'s `threshold` when the metric has none.
pub(crate) const NO_THRESHOLD: u16 = u16::MAX;

/// The models with shipped metrics, sorted (those of every shipped model, held by this build
/// or not).
pub(crate) fn models() -> impl ExactSizeIterator<Item = &'static str> + Clone {
    tables().iter().map(|t| t.model.text())
}

fn tables() -> Table<MetricsTable> {
    crate::table::table!(Metrics, "METRICS_TABLES")
}

/// Model `model`'s index in [`models`], and its id as the table holds it.
pub(crate) fn position(model: &str) -> Option<(usize, &'static str)> {
    let tables = tables();
    let index = tables
        .binary_search_by_key(&model, |t| t.model.text())
        .ok()?;
    Some((index, tables.get(index)?.model.text()))
}

/// The table of model `model`.
fn find(model: &str) -> Option<MetricsTable> {
    tables().get(position(model)?.0)
}

/// Number `index` of `NUMBERS` (the build wrote every index the rows name).
fn number(index: u16) -> f64 {
    crate::table::table!(Metrics, f64, "NUMBERS")
        .get(usize::from(index))
        .unwrap_or(f64::NAN)
}

/// Model `model`'s table as its parts: the events' other names, and each metric's name,
/// groups, formula (a node, for [`formula`]), scale and unit.
pub(super) struct Shipped {
    pub(super) events: Vec<(Cow<'static, str>, Cow<'static, str>)>,
    pub(super) metrics: Vec<ShippedMetric>,
    pub(super) latencies: Vec<(Cow<'static, str>, f64)>,
}

/// One metric of a [`Shipped`] table.
pub(super) struct ShippedMetric {
    pub(super) name: &'static str,
    pub(super) groups: Vec<Cow<'static, str>>,
    pub(super) formula: u32,
    pub(super) scale: f64,
    pub(super) unit: &'static str,
    pub(super) threshold: Option<u32>,
}

/// The shipped table of model `model`, if it has one.
pub(super) fn table(model: &str) -> Option<Shipped> {
    let table = find(model)?;
    let groups = crate::table::table!(Metrics, Str, "GROUPS");
    let units = crate::table::table!(Metrics, Str, "UNITS");
    Some(Shipped {
        events: crate::table::table!(Metrics, (Str, Str), "METRIC_EVENTS")
            .range(table.events)
            .iter()
            .map(|(alias, event)| (Cow::Borrowed(alias.text()), Cow::Borrowed(event.text())))
            .collect(),
        metrics: crate::table::table!(Metrics, Entry, "METRICS")
            .range(table.metrics)
            .iter()
            .map(|entry| ShippedMetric {
                name: entry.name.text(),
                groups: groups
                    .range(entry.groups)
                    .iter()
                    .map(|g| Cow::Borrowed(g.text()))
                    .collect(),
                formula: u32::from(entry.formula),
                scale: number(entry.scale),
                unit: units.get(usize::from(entry.unit)).map_or("", Str::text),
                threshold: (entry.threshold != NO_THRESHOLD).then_some(u32::from(entry.threshold)),
            })
            .collect(),
        latencies: crate::table::table!(Metrics, (Str, u16), "RETIRE_LATENCIES")
            .range(table.latencies)
            .iter()
            .map(|(event, latency)| (Cow::Borrowed(event.text()), number(latency)))
            .collect(),
    })
}

/// The names perf's releases give model `model`'s metrics: (alias, metric, release), sorted
/// by alias; none for a model without a table.
pub(super) fn aliases(model: &str) -> Vec<(&'static str, &'static str, &'static str)> {
    let Some(table) = find(model) else {
        return Vec::new();
    };
    let metrics = crate::table::table!(Metrics, Entry, "METRICS").range(table.metrics);
    let releases = crate::table::table!(Metrics, Str, "RELEASES");
    let text = |s: Option<Str>| s.map_or("", Str::text);
    crate::table::table!(Metrics, (Str, u16, u8), "METRIC_ALIASES")
        .range(table.aliases)
        .iter()
        .map(|(alias, metric, release)| {
            let metric = metrics.get(usize::from(metric)).map(|m| m.name);
            (
                alias.text(),
                text(metric),
                text(releases.get(usize::from(release))),
            )
        })
        .collect()
}

/// The formula whose root is node `id`, as [`expression::parse`](crate::expression::parse)
/// gave it at build time. The nodes' nesting is the parsed formulas', which the parser bounds
/// ([`MAX_DEPTH`](crate::expression::MAX_DEPTH)), so this recursion is bounded too.
pub(super) fn formula(id: u32) -> Expr {
    let node = |id: u16| Box::new(formula(u32::from(id)));
    let Some(n) = crate::table::table!(Metrics, Node, "NODES").get(id as usize) else {
        // Node indices are the build's own; none is out of range (a test reads every formula).
        return Expr::Number(f64::NAN);
    };
    match n {
        Number(index) => Expr::Number(number(index)),
        Name(name) => Expr::Name(name.text().to_string()),
        Negate(inner) => Expr::Negate(node(inner)),
        Chain(first, start, length) => Expr::Chain {
            first: node(first),
            rest: crate::table::table!(Metrics, (Op, u16), "LINKS")
                .range((start, length))
                .iter()
                .map(|(op, operand)| (op, formula(u32::from(operand))))
                .collect(),
        },
        If(then, condition, otherwise) => Expr::If {
            then: node(then),
            condition: node(condition),
            otherwise: node(otherwise),
        },
        Call(function, a, b) => Expr::Call(function, node(a), node(b)),
        HasEvent(name) => Expr::HasEvent(name.text().to_string()),
        SourceCount(name) => Expr::SourceCount(name.text().to_string()),
    }
}

/// How many nodes the shipped formulas have (each shared subexpression once).
#[cfg(test)]
pub(super) fn node_count() -> usize {
    crate::table::table!(Metrics, Node, "NODES").len()
}
