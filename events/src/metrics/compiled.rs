//! The shipped metrics as the build compiled them in (`build/metrics.rs` writes the data this
//! module includes): strings in one pool, formulas as nodes shared between formulas, already
//! parsed and checked. Nothing here parses.

use std::borrow::Cow;

use crate::expression::Expr;
use crate::expression::Function::{self, DRatio, Max, Min};
use crate::expression::Op::{
    self, Add, Divide, Greater, GreaterEqual, Less, LessEqual, Multiply, Subtract,
};

/// A string of the pool: its offset and length in bytes.
#[derive(Clone, Copy, Debug)]
struct Str(u32, u32);

/// A node of a formula, its operands by index into `NODES`.
#[derive(Clone, Copy, Debug)]
// The shipped formulas have no negation, `has_event` or `source_count` today; the build
// writes them when a table does.
#[allow(dead_code)]
enum Node {
    Number(f64),
    Name(Str),
    Negate(u32),
    /// The first operand, then `LINKS[start..start + length]`: each operator with the operand
    /// after it.
    Chain(u32, u32, u32),
    If(u32, u32, u32),
    Call(Function, u32, u32),
    HasEvent(Str),
    SourceCount(Str),
}
use Node::{Call, Chain, HasEvent, If, Name, Negate, Number, SourceCount};

/// One metric: its name, its groups (`GROUPS[start..start + length]`), its formula's root node,
/// scale and unit.
struct Entry {
    name: Str,
    groups: (u32, u32),
    formula: u32,
    scale: f64,
    unit: Str,
}

/// One model's table: its id, its events' other names (`EVENTS[..]`), its metrics
/// (`METRICS[..]`).
struct Table {
    model: Str,
    events: (u32, u32),
    metrics: (u32, u32),
}

include!(concat!(env!("OUT_DIR"), "/metrics.rs"));

fn text(s: Str) -> &'static str {
    POOL.get(s.0 as usize..(s.0 as usize + s.1 as usize))
        .unwrap_or_default()
}

fn range<T>(items: &'static [T], (start, length): (u32, u32)) -> &'static [T] {
    items
        .get(start as usize..start as usize + length as usize)
        .unwrap_or_default()
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
    debug_assert_eq!(text(table.model), model);
    Some(Shipped {
        events: range(&EVENTS, table.events)
            .iter()
            .map(|&(alias, event)| (Cow::Borrowed(text(alias)), Cow::Borrowed(text(event))))
            .collect(),
        metrics: range(&METRICS, table.metrics)
            .iter()
            .map(|entry| ShippedMetric {
                name: text(entry.name),
                groups: range(&GROUPS, entry.groups)
                    .iter()
                    .map(|&g| Cow::Borrowed(text(g)))
                    .collect(),
                formula: entry.formula,
                scale: entry.scale,
                unit: text(entry.unit),
            })
            .collect(),
    })
}

/// The formula whose root is node `id`, as [`expression::parse`](crate::expression::parse)
/// gave it at build time. The nodes' nesting is the parsed formulas', which the parser bounds
/// ([`MAX_DEPTH`](crate::expression::MAX_DEPTH)), so this recursion is bounded too.
pub(super) fn formula(id: u32) -> Expr {
    let node = |id: u32| Box::new(formula(id));
    let Some(&n) = NODES.get(id as usize) else {
        // Node indices are the build's own; none is out of range (a test reads every formula).
        return Expr::Number(f64::NAN);
    };
    match n {
        Number(value) => Expr::Number(value),
        Name(name) => Expr::Name(text(name).to_string()),
        Negate(inner) => Expr::Negate(node(inner)),
        Chain(first, start, length) => Expr::Chain {
            first: node(first),
            rest: range(&LINKS, (start, length))
                .iter()
                .map(|&(op, operand)| (op, formula(operand)))
                .collect(),
        },
        If(then, condition, otherwise) => Expr::If {
            then: node(then),
            condition: node(condition),
            otherwise: node(otherwise),
        },
        Call(function, a, b) => Expr::Call(function, node(a), node(b)),
        HasEvent(name) => Expr::HasEvent(text(name).to_string()),
        SourceCount(name) => Expr::SourceCount(text(name).to_string()),
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
