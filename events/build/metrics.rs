//! The shipped metrics tables (`data/generated/metrics/ID.toml`) in their compiled-in form:
//! each file read and checked by the library's own reader (`src/metrics/file.rs`), each
//! formula parsed by the library's own parser (`src/expression.rs`), both included by build.rs,
//! and written as static Rust data (`OUT_DIR/metrics.rs`, read by `src/metrics/compiled.rs`):
//!
//! - `POOL`: every string once (names, groups, units, the events' names), each a `Str(offset,
//!   length)` into it;
//! - `NODES`: the formulas' nodes, each subexpression once however many formulas share it,
//!   their operands by index (`LINKS` holds each chain's operators and later operands);
//! - `METRICS`, `GROUPS`, `EVENTS`: each table's metrics, their groups, its events' names;
//! - `TABLES`: one per model, in `SHIPPED_METRIC_MODELS`'s order (sorted).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::expression::{Expr, Function, Op};
use crate::metric_file;

/// The pool of strings and the formulas' nodes, each written once.
#[derive(Default)]
struct Writer {
    pool: String,
    strings: HashMap<String, (u32, u32)>,
    nodes: Vec<String>,
    node_ids: HashMap<String, u32>,
    links: Vec<String>,
}

impl Writer {
    fn string(&mut self, s: &str) -> String {
        let (offset, length) = match self.strings.get(s) {
            Some(&at) => at,
            None => {
                let at = (offset(self.pool.len()), offset(s.len()));
                self.pool.push_str(s);
                self.strings.insert(s.to_string(), at);
                at
            }
        };
        format!("Str({offset}, {length})")
    }

    /// The index of `node` (its Rust form), added if no formula had it yet.
    fn node(&mut self, node: String) -> u32 {
        if let Some(&id) = self.node_ids.get(&node) {
            return id;
        }
        let id = offset(self.nodes.len());
        self.nodes.push(node.clone());
        self.node_ids.insert(node, id);
        id
    }

    fn expr(&mut self, expr: &Expr) -> u32 {
        let node = match expr {
            Expr::Number(n) => format!("Number(f64::from_bits({:#x}))", n.to_bits()),
            Expr::Name(name) => format!("Name({})", self.string(name)),
            Expr::Negate(inner) => format!("Negate({})", self.expr(inner)),
            Expr::Chain { first, rest } => {
                let first = self.expr(first);
                let operands: Vec<String> = rest
                    .iter()
                    .map(|(op, e)| format!("({}, {})", op_name(*op), self.expr(e)))
                    .collect();
                // The same chain in another formula is the same node, its links written once.
                let key = format!("Chain({first}, [{}])", operands.join(", "));
                if let Some(&id) = self.node_ids.get(&key) {
                    return id;
                }
                let start = offset(self.links.len());
                self.links.extend(operands);
                let id = self.node(format!("Chain({first}, {start}, {})", rest.len()));
                self.node_ids.insert(key, id);
                return id;
            }
            Expr::If {
                then,
                condition,
                otherwise,
            } => {
                let (a, b, c) = (self.expr(then), self.expr(condition), self.expr(otherwise));
                format!("If({a}, {b}, {c})")
            }
            Expr::Call(function, a, b) => {
                let function = match function {
                    Function::Min => "Min",
                    Function::Max => "Max",
                    Function::DRatio => "DRatio",
                };
                let (a, b) = (self.expr(a), self.expr(b));
                format!("Call({function}, {a}, {b})")
            }
            Expr::HasEvent(name) => format!("HasEvent({})", self.string(name)),
            Expr::SourceCount(name) => format!("SourceCount({})", self.string(name)),
        };
        self.node(node)
    }
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Add => "Add",
        Op::Subtract => "Subtract",
        Op::Multiply => "Multiply",
        Op::Divide => "Divide",
        Op::Less => "Less",
        Op::Greater => "Greater",
        Op::LessEqual => "LessEqual",
        Op::GreaterEqual => "GreaterEqual",
    }
}

fn offset(n: usize) -> u32 {
    u32::try_from(n).expect("the compiled-in metrics stay below 4 GiB")
}

/// Writes `OUT_DIR/metrics.rs` from the tables in `data/generated/metrics`; a table that does
/// not read or check fails the build, naming the file and what is wrong.
pub(crate) fn write(data: &Path, out_dir: &Path) {
    let dir = data.join("generated/metrics");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut models: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|file| file.strip_suffix(".toml").map(str::to_string))
        .collect();
    models.sort();
    let mut w = Writer::default();
    let (mut metrics, mut groups, mut events, mut tables) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for model in &models {
        let path = dir.join(format!("{model}.toml"));
        println!("cargo:rerun-if-changed={}", path.display());
        let name = format!("events/data/generated/metrics/{model}.toml");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (file, formulas) = metric_file::read(&name, &text)
            .unwrap_or_else(|e| panic!("{} ({:?})", e.message, e.hint));
        assert!(
            file.model == *model,
            "{name}: says model `{}`, its file name `{model}`",
            file.model
        );
        let (first_event, first_metric) = (events.len(), metrics.len());
        for (alias, event) in &file.events {
            events.push(format!("({}, {})", w.string(alias), w.string(event)));
        }
        for (metric, formula) in file.metrics.iter().zip(&formulas) {
            let first_group = groups.len();
            for group in &metric.groups {
                groups.push(w.string(group));
            }
            let name = w.string(&metric.name);
            let unit = w.string(&metric.unit);
            let formula = w.expr(formula);
            metrics.push(format!(
                "Entry {{ name: {name}, groups: ({first_group}, {}), formula: {formula}, scale: f64::from_bits({:#x}), unit: {unit} }}",
                metric.groups.len(),
                metric.scale.to_bits()
            ));
        }
        let model_name = w.string(model);
        tables.push(format!(
            "Table {{ model: {model_name}, events: ({first_event}, {}), metrics: ({first_metric}, {}) }}",
            events.len() - first_event,
            metrics.len() - first_metric
        ));
    }
    let mut out = String::from(
        "// Generated by events/build.rs (build/metrics.rs) from events/data/generated/metrics.\n\n",
    );
    writeln!(
        out,
        "/// The models with shipped metrics, sorted: the ids [`shipped_metrics`](crate::shipped_metrics) knows.\n\
         pub const SHIPPED_METRIC_MODELS: &[&str] = &{models:?};\n"
    )
    .unwrap();
    writeln!(out, "static POOL: &str = {:?};\n", w.pool).unwrap();
    let list = |out: &mut String, name: &str, kind: &str, items: &[String]| {
        writeln!(out, "static {name}: [{kind}; {}] = [", items.len()).unwrap();
        for item in items {
            writeln!(out, "    {item},").unwrap();
        }
        out.push_str("];\n\n");
    };
    list(&mut out, "NODES", "Node", &w.nodes);
    list(&mut out, "LINKS", "(Op, u32)", &w.links);
    list(&mut out, "GROUPS", "Str", &groups);
    list(&mut out, "EVENTS", "(Str, Str)", &events);
    list(&mut out, "METRICS", "Entry", &metrics);
    list(&mut out, "TABLES", "Table", &tables);
    let target = out_dir.join("metrics.rs");
    std::fs::write(&target, out).unwrap_or_else(|e| panic!("{}: {e}", target.display()));
}
