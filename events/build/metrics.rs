//! The shipped metrics tables (`data/generated/metrics/ID.toml`) in their compiled-in form:
//! each file read and checked by the library's own reader (`src/metrics/file.rs`), each
//! formula parsed by the library's own parser (`src/expression.rs`), both included by build.rs,
//! and written as static Rust data (`OUT_DIR/metrics.rs`, read by `src/metrics/compiled.rs`):
//!
//! - strings (names, groups, units, the events' names) as `Str`s of the one pool
//!   (`build/pool.rs`);
//! - `NODES`: the formulas' nodes, each subexpression once however many formulas share it,
//!   their operands by index (`LINKS` holds each chain's operators and later operands), their
//!   numbers and the metrics' scales by index of `NUMBERS`;
//! - `METRICS`, `GROUPS`, `EVENTS`: each table's metrics, their groups (each list of groups
//!   once), its events' names;
//! - `ALIASES`: the names perf's releases give a table's metrics
//!   (`data/generated/metric_aliases/ID.toml`, counterhal-gen's `metric-names`): each alias,
//!   the metric it names and the release, a table's sorted by alias;
//! - `TABLES`: one per model, in `SHIPPED_METRIC_MODELS`'s order (sorted).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use crate::expression::{Expr, Function, Op};
use crate::metric_file;
use crate::pool::Pool;
use crate::rows::{Lists, Rows, Values, short};

/// The formulas' nodes, each written once, and their numbers.
#[derive(Default)]
struct Writer {
    pool: Pool,
    nodes: Rows,
    chain_ids: HashMap<String, u16>,
    links: Vec<String>,
    /// The numbers (formulas' and scales') by their bits, each once.
    numbers: Values<u64>,
}

impl Writer {
    fn string(&mut self, s: &str) -> String {
        self.pool.string(s)
    }

    /// The index of `node` (its Rust form), added if no formula had it yet.
    fn node(&mut self, node: String) -> u16 {
        short(self.nodes.add(node), "the formulas' nodes")
    }

    /// A number's index in `NUMBERS`.
    fn number(&mut self, n: f64) -> u16 {
        short(self.numbers.add(n.to_bits()), "the formulas' numbers")
    }

    fn expr(&mut self, expr: &Expr) -> u16 {
        let node = match expr {
            Expr::Number(n) => format!("Number({})", self.number(*n)),
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
                if let Some(&id) = self.chain_ids.get(&key) {
                    return id;
                }
                let start = short(self.links.len(), "the formulas' links");
                self.links.extend(operands);
                let length = short(rest.len(), "a chain's operands");
                let id = self.node(format!("Chain({first}, {start}, {length})"));
                self.chain_ids.insert(key, id);
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

/// A model's aliases file (`data/generated/metric_aliases/ID.toml`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AliasFile {
    model: String,
    /// The release's names no metric of ours was matched to (read, not compiled in).
    #[serde(default)]
    #[allow(dead_code)]
    not_matched: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    aliases: BTreeMap<String, AliasEntry>,
}

/// One alias: the metric it names, the release that named it so, and how it was matched.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AliasEntry {
    metric: String,
    release: String,
    #[allow(dead_code)]
    by: String,
}

/// The aliases of model `model`'s table (none without a file), each naming a metric of
/// `metrics` and none a metric's own name (any case); a file that breaks either fails the
/// build.
fn aliases(data: &Path, model: &str, metrics: &[String]) -> Vec<(String, String, String)> {
    let path = data.join(format!("generated/metric_aliases/{model}.toml"));
    // A file that is missing is never named to cargo, which would take it as changed on every
    // build and rebuild this crate and all that depend on it each time: the folder, watched in
    // `write`, says when one appears.
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    println!("cargo:rerun-if-changed={}", path.display());
    let name = format!("events/data/generated/metric_aliases/{model}.toml");
    let file: AliasFile = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(file.model == model, "{name}: says model `{}`", file.model);
    file.aliases
        .into_iter()
        .map(|(alias, entry)| {
            assert!(
                metrics.contains(&entry.metric),
                "{name}: `{alias}` names `{}`, no metric of the table",
                entry.metric
            );
            assert!(
                !metrics.iter().any(|m| m.eq_ignore_ascii_case(&alias)),
                "{name}: `{alias}` is a metric's own name"
            );
            (alias, entry.metric, entry.release)
        })
        .collect()
}

/// Writes `OUT_DIR/metrics.rs` from the tables in `data/generated/metrics`; a table that does
/// not read or check fails the build, naming the file and what is wrong.
pub(crate) fn write(data: &Path, pool: &mut Pool, wanted: impl Fn(&str) -> bool) -> String {
    let dir = data.join("generated/metrics");
    println!("cargo:rerun-if-changed={}", dir.display());
    println!(
        "cargo:rerun-if-changed={}",
        data.join("generated/metric_aliases").display()
    );
    let mut models: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|file| file.strip_suffix(".toml").map(str::to_string))
        .filter(|model| wanted(model))
        .collect();
    models.sort();
    let mut w = Writer {
        pool: std::mem::take(pool),
        ..Writer::default()
    };
    let mut groups: Lists<String> = Lists::default();
    let (mut metrics, mut events, mut tables) = (Vec::new(), Vec::new(), Vec::new());
    let mut alias_rows = Vec::new();
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
            let group_names = metric.groups.iter().map(|g| w.string(g)).collect();
            let (start, length) = groups.add(group_names);
            let name = w.string(&metric.name);
            let unit = w.string(&metric.unit);
            let formula = w.expr(formula);
            metrics.push(format!(
                "Entry {{ name: {name}, unit: {unit}, groups: ({start}, {length}), formula: {formula}, scale: {} }}",
                w.number(metric.scale),
            ));
        }
        let names: Vec<String> = file.metrics.iter().map(|m| m.name.clone()).collect();
        let first_alias = alias_rows.len();
        for (alias, metric, release) in aliases(data, model, &names) {
            let row = format!(
                "({}, {}, {})",
                w.string(&alias),
                w.string(&metric),
                w.string(&release)
            );
            alias_rows.push(row);
        }
        let model_name = w.string(model);
        tables.push(format!(
            "Table {{ model: {model_name}, events: ({}, {}), metrics: ({}, {}), aliases: ({}, {}) }}",
            short(first_event, "the metrics' events"),
            short(events.len() - first_event, "a table's events"),
            short(first_metric, "the metrics"),
            short(metrics.len() - first_metric, "a table's metrics"),
            short(first_alias, "the metrics' aliases"),
            short(alias_rows.len() - first_alias, "a table's aliases"),
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
    let list = |out: &mut String, name: &str, kind: &str, items: &[String]| {
        writeln!(out, "static {name}: [{kind}; {}] = [", items.len()).unwrap();
        for item in items {
            writeln!(out, "    {item},").unwrap();
        }
        out.push_str("];\n\n");
    };
    let numbers: Vec<String> = (w.numbers.values.iter())
        .map(|bits| format!("f64::from_bits({bits:#x})"))
        .collect();
    list(&mut out, "NUMBERS", "f64", &numbers);
    list(&mut out, "NODES", "Node", &w.nodes.rows);
    list(&mut out, "LINKS", "(Op, u16)", &w.links);
    list(&mut out, "GROUPS", "Str", &groups.items);
    list(&mut out, "EVENTS", "(Str, Str)", &events);
    list(&mut out, "METRICS", "Entry", &metrics);
    list(&mut out, "ALIASES", "(Str, Str, Str)", &alias_rows);
    list(&mut out, "TABLES", "Table", &tables);
    *pool = std::mem::take(&mut w.pool);
    out
}
