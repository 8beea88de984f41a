//! The shipped metrics tables (`data/generated/metrics/ID.toml`) as rows: each file read and
//! checked by the library's own reader (`src/metrics/file.rs`), each formula parsed by the
//! library's own parser (`src/expression.rs`), and written as rows (read by
//! `src/metrics/compiled.rs`):
//!
//! - strings (names, groups, units, the events' names) as `Str`s of the one pool (`pool.rs`);
//! - `NODES`: the formulas' nodes, each subexpression once however many formulas share it,
//!   their operands by index (`LINKS` holds each chain's operators and later operands), their
//!   numbers and the metrics' scales by index of `NUMBERS`;
//! - `METRICS`, `GROUPS`, `METRIC_EVENTS`: each table's metrics, their groups (each list of groups
//!   once), its events' names;
//! - `METRIC_ALIASES`: the names perf's releases give a table's metrics
//!   (`data/generated/metric_aliases/ID.toml`, counterhal-gen's `metric-names`): each alias,
//!   the metric it names (its index among the table's) and the release (of `RELEASES`), a
//!   table's sorted by alias; `UNITS`: the metrics' units, each once;
//! - `RETIRE_LATENCIES`: each table's events' mean retire latencies (the file's
//!   `[retire_latency]`), the latency by index of `NUMBERS`, a table's sorted by event;
//! - `METRICS_TABLES`: one per model, sorted by model id.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::{Lists, Rows, Tables, Values, short, toml_stems};
use crate::expression::{Expr, Op};
use crate::metrics::compiled::{Entry, MetricsTable, NO_THRESHOLD, Node};
use crate::metrics::file as metric_file;
use crate::table::Metrics;

/// A string of part `metrics`.
type Str = crate::table::Str<Metrics>;

/// The formulas' nodes, each written once, and their numbers.
struct Writer<'t> {
    tables: &'t mut Tables<Metrics>,
    nodes: Rows<Node>,
    chain_ids: HashMap<(u16, Vec<(Op, u16)>), u16>,
    links: Vec<(Op, u16)>,
    /// The numbers (formulas' and scales') by their bits, each once.
    numbers: Values<u64>,
}

impl Writer<'_> {
    fn string(&mut self, s: &str) -> Str {
        self.tables.string(s)
    }

    /// The index of `node`, added if no formula had it yet.
    fn node(&mut self, node: Node) -> u16 {
        short(self.nodes.add(&node), "the formulas' nodes")
    }

    /// A number's index in `NUMBERS`.
    fn number(&mut self, n: f64) -> u16 {
        short(self.numbers.add(n.to_bits()), "the formulas' numbers")
    }

    fn expr(&mut self, expr: &Expr) -> u16 {
        let node = match expr {
            Expr::Number(n) => Node::Number(self.number(*n)),
            Expr::Name(name) => Node::Name(self.string(name)),
            Expr::Negate(inner) => Node::Negate(self.expr(inner)),
            Expr::Chain { first, rest } => {
                let first = self.expr(first);
                let operands: Vec<(Op, u16)> =
                    rest.iter().map(|(op, e)| (*op, self.expr(e))).collect();
                // The same chain in another formula is the same node, its links written once.
                let key = (first, operands);
                if let Some(&id) = self.chain_ids.get(&key) {
                    return id;
                }
                let start = short(self.links.len(), "the formulas' links");
                self.links.extend(key.1.iter().copied());
                let length = short(rest.len(), "a chain's operands");
                let id = self.node(Node::Chain(first, start, length));
                self.chain_ids.insert(key, id);
                return id;
            }
            Expr::If {
                then,
                condition,
                otherwise,
            } => {
                let (a, b, c) = (self.expr(then), self.expr(condition), self.expr(otherwise));
                Node::If(a, b, c)
            }
            Expr::Call(function, a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                Node::Call(*function, a, b)
            }
            Expr::HasEvent(name) => Node::HasEvent(self.string(name)),
            Expr::SourceCount(name) => Node::SourceCount(self.string(name)),
        };
        self.node(node)
    }
}

/// A model's aliases file (`data/generated/metric_aliases/ID.toml`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AliasFile {
    model: String,
    /// The release's names no metric of ours was matched to (read, not written into the rows).
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
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
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

/// Writes the tables of `data/generated/metrics`; a table that does not read or check stops
/// the writer, naming the file and what is wrong.
pub(crate) fn write(data: &Path, tables: &mut Tables<Metrics>) {
    let dir = data.join("generated/metrics");
    let models = toml_stems(&dir);
    let mut w = Writer {
        tables,
        nodes: Rows::default(),
        chain_ids: HashMap::new(),
        links: Vec::new(),
        numbers: Values::default(),
    };
    let mut groups: Lists<Str> = Lists::default();
    let (mut metrics, mut events, mut table_rows) = (Vec::new(), Vec::new(), Vec::new());
    let (mut alias_rows, mut latency_rows) = (Vec::new(), Vec::new());
    let (mut units, mut releases): (Values<Str>, Values<Str>) = Default::default();
    for model in &models {
        let path = dir.join(format!("{model}.toml"));
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
            events.push((w.string(alias), w.string(event)));
        }
        for (metric, parsed) in file.metrics.iter().zip(&formulas) {
            let group_names = metric.groups.iter().map(|g| w.string(g)).collect();
            let groups = groups.add(group_names);
            metrics.push(Entry {
                name: w.string(&metric.name),
                unit: u8::try_from(units.add(w.string(&metric.unit))).expect("at most 256 units"),
                groups,
                formula: w.expr(&parsed.formula),
                scale: w.number(metric.scale),
                threshold: parsed.threshold.as_ref().map_or(NO_THRESHOLD, |threshold| {
                    let node = w.expr(threshold);
                    assert!(
                        node != NO_THRESHOLD,
                        "the formulas' nodes reach NO_THRESHOLD"
                    );
                    node
                }),
            });
        }
        let names: Vec<String> = file.metrics.iter().map(|m| m.name.clone()).collect();
        let first_alias = alias_rows.len();
        for (alias, metric, release) in aliases(data, model, &names) {
            let index = names
                .iter()
                .position(|n| *n == metric)
                .expect("a metric of the table");
            let release =
                u8::try_from(releases.add(w.string(&release))).expect("at most 256 releases");
            alias_rows.push((w.string(&alias), short(index, "a table's metrics"), release));
        }
        let first_latency = latency_rows.len();
        for (event, &latency) in &file.retire_latency {
            latency_rows.push((w.string(event), w.number(latency)));
        }
        table_rows.push(MetricsTable {
            model: w.string(model),
            events: (
                short(first_event, "the metrics' events"),
                short(events.len() - first_event, "a table's events"),
            ),
            metrics: (
                short(first_metric, "the metrics"),
                short(metrics.len() - first_metric, "a table's metrics"),
            ),
            aliases: (
                short(first_alias, "the metrics' aliases"),
                short(alias_rows.len() - first_alias, "a table's aliases"),
            ),
            latencies: (
                short(first_latency, "the retire latencies"),
                short(
                    latency_rows.len() - first_latency,
                    "a table's retire latencies",
                ),
            ),
        });
    }
    let Writer {
        tables,
        nodes,
        links,
        numbers,
        ..
    } = w;
    let numbers: Vec<f64> = numbers
        .values
        .iter()
        .map(|&bits| f64::from_bits(bits))
        .collect();
    tables.section("NUMBERS", &numbers);
    tables.rows("NODES", nodes);
    tables.section("LINKS", &links);
    tables.section("GROUPS", &groups.items);
    tables.section("METRIC_EVENTS", &events);
    tables.section("METRICS", &metrics);
    tables.section("UNITS", &units.values);
    tables.section("METRIC_ALIASES", &alias_rows);
    tables.section("RELEASES", &releases.values);
    tables.section("RETIRE_LATENCIES", &latency_rows);
    tables.section("METRICS_TABLES", &table_rows);
}
