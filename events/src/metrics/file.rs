//! A metrics file as TOML gives it, and what makes it a valid table: the one reader of metrics
//! files. `counterhal-gen tables` reads the shipped tables through it into their rows
//! (`table_writer/metrics.rs`), [`parse_metrics`](super::parse_metrics) a user's file.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use crate::expression::{self, Expr};

/// A metrics file: the model it belongs to, the events its formulas read by other names, and
/// its metrics in order.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MetricFile {
    pub(crate) model: String,
    #[serde(default)]
    pub(crate) events: BTreeMap<String, String>,
    #[serde(default, rename = "metric")]
    pub(crate) metrics: Vec<MetricEntry>,
    /// Each event's mean retire latency in cycles (perf's JSON `RetirementLatencyMean`), which
    /// a formula's `EVENT:R` reads.
    #[serde(default)]
    pub(crate) retire_latency: BTreeMap<String, f64>,
}

/// One `[[metric]]` of a file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MetricEntry {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) groups: Vec<String>,
    pub(crate) expression: String,
    #[serde(default = "one")]
    pub(crate) scale: f64,
    #[serde(default)]
    pub(crate) unit: String,
    /// perf's `MetricThreshold`: 0 where the value is good.
    #[serde(default)]
    pub(crate) threshold: Option<String>,
}

/// One metric's formulas, parsed.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub(crate) formula: Expr,
    pub(crate) threshold: Option<Expr>,
}

fn one() -> f64 {
    1.0
}

/// Why a file is not a valid table: what was wrong (naming the file and the metric), and what
/// would be right where there is more to say.
#[derive(Debug)]
pub(crate) struct Invalid {
    pub(crate) message: String,
    pub(crate) hint: Option<&'static str>,
}

fn invalid(message: String) -> Invalid {
    Invalid {
        message,
        hint: None,
    }
}

/// Reads file `name` (its `text`, at most [`MAX_TOML_TOKENS`](crate::limits::MAX_TOML_TOKENS)
/// tokens, counted before it is parsed) and checks it: every metric has a name, given once, a formula
/// that parses (nested at most [`expression::MAX_DEPTH`] levels) and a finite scale other than
/// 0, and no metric reads itself through the metrics its formula names. Gives the table with
/// each metric's parsed formula and threshold (which must parse too).
pub(crate) fn read(name: &str, text: &str) -> Result<(MetricFile, Vec<Parsed>), Invalid> {
    crate::limits::check_tokens(text).map_err(|too| {
        let line = text
            .get(..too.offset)
            .map_or(0, |t| t.matches('\n').count())
            + 1;
        invalid(format!("{name}:{line}: {}", too.message))
    })?;
    let file: MetricFile =
        toml::from_str(text).map_err(|e| invalid(format!("{name}: {}", e.message())))?;
    let formulas = check(name, &file)?;
    let mut parsed = Vec::with_capacity(formulas.len());
    for (metric, formula) in file.metrics.iter().zip(formulas) {
        let threshold = match &metric.threshold {
            None => None,
            Some(text) => Some(expression::parse(text).map_err(|e| Invalid {
                message: format!("{name}: metric `{}`: threshold: {e}", metric.name),
                hint: Some("thresholds are perf's metric syntax"),
            })?),
        };
        parsed.push(Parsed { formula, threshold });
    }
    Ok((file, parsed))
}

fn check(name: &str, file: &MetricFile) -> Result<Vec<Expr>, Invalid> {
    if let Some((event, latency)) = file.retire_latency.iter().find(|(_, l)| !l.is_finite()) {
        return Err(invalid(format!(
            "{name}: retire_latency `{event}`: {latency} is not a finite number of cycles"
        )));
    }
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(file.metrics.len());
    let mut formulas = Vec::with_capacity(file.metrics.len());
    for (i, metric) in file.metrics.iter().enumerate() {
        let at = || format!("{name}: metric `{}`", metric.name);
        if metric.name.trim().is_empty() {
            return Err(invalid(format!(
                "{name}: metric {} has an empty name",
                i + 1
            )));
        }
        if index.insert(&metric.name, i).is_some() {
            return Err(invalid(format!("{}: given twice", at())));
        }
        match expression::parse(&metric.expression) {
            Ok(formula) => formulas.push(formula),
            Err(e) => {
                return Err(Invalid {
                    message: format!("{}: {e}", at()),
                    hint: Some("formulas are perf's metric syntax"),
                });
            }
        }
        if !metric.scale.is_finite() || metric.scale == 0.0 {
            return Err(invalid(format!(
                "{}: scale {} is not a finite number other than 0",
                at(),
                metric.scale
            )));
        }
    }
    // The metrics each formula reads (a name of another metric of the table).
    let reads: Vec<Vec<usize>> = formulas
        .iter()
        .map(|formula| {
            formula
                .names()
                .iter()
                .filter_map(|read| index.get(read.as_str()).copied())
                .collect()
        })
        .collect();
    if let Some(cycle) = find_loop(&reads) {
        let path: Vec<String> = cycle
            .iter()
            .map(|&i| format!("`{}`", file.metrics[i].name))
            .collect();
        return Err(Invalid {
            message: format!(
                "{name}: metrics read each other in a loop: {}",
                path.join(" -> ")
            ),
            hint: Some("a metric may read other metrics, never itself through them"),
        });
    }
    Ok(formulas)
}

/// A loop in the graph whose node `i` leads to each of `edges[i]`, as its nodes from the first
/// met back to it (`[a, b, a]`), found by a depth-first walk with its own stack (a chain of
/// any length takes no call stack).
fn find_loop(edges: &[Vec<usize>]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let mut mark = vec![Mark::New; edges.len()];
    for start in 0..edges.len() {
        if mark[start] != Mark::New {
            continue;
        }
        // The path walked: each node with the index of its next edge to follow.
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        mark[start] = Mark::OnPath;
        while let Some((node, next)) = path.last_mut() {
            let node = *node;
            let Some(&to) = edges[node].get(*next) else {
                mark[node] = Mark::Done;
                path.pop();
                continue;
            };
            *next += 1;
            match mark[to] {
                Mark::New => {
                    mark[to] = Mark::OnPath;
                    path.push((to, 0));
                }
                Mark::OnPath => {
                    let from = path.iter().position(|&(n, _)| n == to).unwrap_or(0);
                    let mut cycle: Vec<usize> = path[from..].iter().map(|&(n, _)| n).collect();
                    cycle.push(to);
                    return Some(cycle);
                }
                Mark::Done => {}
            }
        }
    }
    None
}
