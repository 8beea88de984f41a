//! The shipped metrics as the build compiled them in (`build/metrics.rs` writes the data this
//! module includes): strings in the one pool (`crate::pool`), formulas as nodes shared between formulas, already
//! parsed and checked. Nothing here parses.

use std::borrow::Cow;

use crate::expression::Expr;
use crate::expression::Function::{self, DRatio, Max, Min};
use crate::expression::Op::{
    self, Add, Divide, Greater, GreaterEqual, Less, LessEqual, Multiply, Subtract,
};
use crate::pool::Str;

/// A node of a formula, its operands by index into `NODES`, its number by index into
/// `NUMBERS`.
#[derive(Clone, Copy, Debug)]
// The shipped formulas have no negation, `has_event` or `source_count` today; the build
// writes them when a table does.
#[allow(dead_code)]
enum Node {
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

/// One metric: its name, unit, groups (`GROUPS[start..start + length]`), its formula's root
/// node and its scale (an index of `NUMBERS`).
struct Entry {
    name: Str,
    unit: Str,
    groups: (u16, u16),
    formula: u16,
    scale: u16,
}

/// One model's table: its id, its events' other names (`EVENTS[..]`), its metrics
/// (`METRICS[..]`), the names perf's releases give them (`ALIASES[..]`: alias, metric,
/// release, sorted by alias).
struct Table {
    model: Str,
    events: (u16, u16),
    metrics: (u16, u16),
    aliases: (u16, u16),
}

include!(concat!(env!("OUT_DIR"), "/metrics.rs"));

fn range<T>(items: &'static [T], (start, length): (u16, u16)) -> &'static [T] {
    let start = usize::from(start);
    items
        .get(start..start + usize::from(length))
        .unwrap_or_default()
}

/// Number `index` of `NUMBERS` (the build wrote every index the rows name).
fn number(index: u16) -> f64 {
    NUMBERS.get(usize::from(index)).copied().unwrap_or(f64::NAN)
}

/// Model `model`'s table as its parts: the events' other names, and each metric's name,
/// groups, formula (a node, for [`formula`]), scale and unit.
pub(super) struct Shipped {
    pub(super) events: Vec<(Cow<'static, str>, Cow<'static, str>)>,
    pub(super) metrics: Vec<ShippedMetric>,
}

/// One metric of a [`Shipped`] table.
pub(super) struct ShippedMetric {
    pub(super) name: &'static str,
    pub(super) groups: Vec<Cow<'static, str>>,
    pub(super) formula: u32,
    pub(super) scale: f64,
    pub(super) unit: &'static str,
}

/// The compiled-in table of model `model`, if it has one.
pub(super) fn table(model: &str) -> Option<Shipped> {
    let index = SHIPPED_METRIC_MODELS.binary_search(&model).ok()?;
    let table = TABLES.get(index)?;
    debug_assert_eq!(table.model.text(), model);
    Some(Shipped {
        events: range(&EVENTS, table.events)
            .iter()
            .map(|&(alias, event)| (Cow::Borrowed(alias.text()), Cow::Borrowed(event.text())))
            .collect(),
        metrics: range(&METRICS, table.metrics)
            .iter()
            .map(|entry| ShippedMetric {
                name: entry.name.text(),
                groups: range(&GROUPS, entry.groups)
                    .iter()
                    .map(|g| Cow::Borrowed(g.text()))
                    .collect(),
                formula: u32::from(entry.formula),
                scale: number(entry.scale),
                unit: entry.unit.text(),
            })
            .collect(),
    })
}

/// The names perf's releases give model `model`'s metrics: (alias, metric, release), sorted
/// by alias; none for a model without a table.
pub(super) fn aliases(model: &str) -> Vec<(&'static str, &'static str, &'static str)> {
    let Some(table) = SHIPPED_METRIC_MODELS
        .binary_search(&model)
        .ok()
        .and_then(|index| TABLES.get(index))
    else {
        return Vec::new();
    };
    range(&ALIASES, table.aliases)
        .iter()
        .map(|(alias, metric, release)| (alias.text(), metric.text(), release.text()))
        .collect()
}

/// The formula whose root is node `id`, as [`expression::parse`](crate::expression::parse)
/// gave it at build time. The nodes' nesting is the parsed formulas', which the parser bounds
/// ([`MAX_DEPTH`](crate::expression::MAX_DEPTH)), so this recursion is bounded too.
pub(super) fn formula(id: u32) -> Expr {
    let node = |id: u16| Box::new(formula(u32::from(id)));
    let Some(&n) = NODES.get(id as usize) else {
        // Node indices are the build's own; none is out of range (a test reads every formula).
        return Expr::Number(f64::NAN);
    };
    match n {
        Number(index) => Expr::Number(number(index)),
        Name(name) => Expr::Name(name.text().to_string()),
        Negate(inner) => Expr::Negate(node(inner)),
        Chain(first, start, length) => Expr::Chain {
            first: node(first),
            rest: range(&LINKS, (start, length))
                .iter()
                .map(|&(op, operand)| (op, formula(u32::from(operand))))
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

/// How many nodes the compiled-in formulas have (each shared subexpression once).
#[cfg(test)]
pub(super) fn node_count() -> usize {
    NODES.len()
}

// The generated data names every operator and function by its variant.
const _: [Op; 8] = [
    Add,
    Subtract,
    Multiply,
    Divide,
    Less,
    Greater,
    LessEqual,
    GreaterEqual,
];
const _: [Function; 3] = [Min, Max, DRatio];
