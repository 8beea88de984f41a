//! Metrics per CPU model: the generated tables `data/generated/metrics/ID.toml` (one model's
//! metrics, each a name, its groups, a formula in perf's syntax, a scale and a unit), parsed on
//! first use. The formulas are read by [`expression`](crate::expression).
//!
//! ```toml
//! model = "skl"
//!
//! [[metric]]
//! name = "Retiring"
//! groups = ["TmaL1", "TopdownL1"]
//! expression = "100 * ( UOPS_RETIRED.RETIRE_SLOTS / ( 4 * CPU_CLK_UNHALTED.THREAD ) )"
//! unit = "percent"
//! ```
//!
//! A table may add `[events]` before its metrics: names its formulas read (perf's kernel names
//! of AMD events) and the event strings to open for them (`ls_not_halted_cyc = "r76"`).

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use counterhal_hal::{Error, Result};
use serde::Deserialize;

use crate::expression;

/// A shipped metrics file: its name as errors print it, the model it belongs to, its text.
macro_rules! shipped {
    ($model:literal) => {
        (
            concat!("events/data/generated/metrics/", $model, ".toml"),
            $model,
            include_str!(concat!("../data/generated/metrics/", $model, ".toml")),
        )
    };
}

/// The shipped metrics files: name, model id and text.
pub const SHIPPED_METRIC_FILES: &[(&str, &str, &str)] = &[
    shipped!("adl_glc"),
    shipped!("amd64_fam17h_zen1"),
    shipped!("amd64_fam17h_zen2"),
    shipped!("amd64_fam19h_zen3"),
    shipped!("amd64_fam19h_zen4"),
    shipped!("amd64_fam1ah_zen5"),
    shipped!("arl_lnc"),
    shipped!("bdw"),
    shipped!("bdw_ep"),
    shipped!("clx"),
    shipped!("cwf"),
    shipped!("emr"),
    shipped!("gnr"),
    shipped!("grr"),
    shipped!("hsw"),
    shipped!("hsw_ep"),
    shipped!("icl"),
    shipped!("icx"),
    shipped!("lnl_lnc"),
    shipped!("mtl_rwc"),
    shipped!("rkl"),
    shipped!("skl"),
    shipped!("skx"),
    shipped!("spr"),
    shipped!("srf"),
    shipped!("tgl"),
];

/// One metric of a model.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    /// The name `-M` takes.
    pub name: String,
    /// The groups `-M` also takes (each names all its metrics).
    #[serde(default)]
    pub groups: Vec<String>,
    /// The formula, in perf's metric syntax.
    pub expression: String,
    /// What the value is multiplied by to print (100 for perf's `100%`).
    #[serde(default = "one")]
    pub scale: f64,
    /// The unit printed after the value (may be empty).
    #[serde(default)]
    pub unit: String,
}

fn one() -> f64 {
    1.0
}

/// One model's metrics.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricTable {
    /// The model id they belong to.
    pub model: String,
    /// Events the formulas read by a name the model's events may not have (perf's kernel
    /// names), each with the event string to open instead (`r76`).
    #[serde(default)]
    pub events: BTreeMap<String, String>,
    /// The metrics, in the file's order.
    #[serde(default, rename = "metric")]
    pub metrics: Vec<Metric>,
}

impl MetricTable {
    /// The metric called `name` (any case).
    pub fn get(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name).or_else(|| {
            self.metrics
                .iter()
                .find(|m| m.name.eq_ignore_ascii_case(name))
        })
    }

    /// Every group its metrics name, sorted, each once.
    pub fn groups(&self) -> Vec<&str> {
        let mut groups: Vec<&str> = self
            .metrics
            .iter()
            .flat_map(|m| m.groups.iter().map(String::as_str))
            .collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }
}

/// Parses a metrics file called `name`: every metric has a name, given once, a formula that
/// parses (nested at most [`MAX_DEPTH`](crate::expression::MAX_DEPTH) levels) and a finite
/// scale, and no metric reads itself through the metrics its formula names.
///
/// # Errors
/// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput): malformed TOML, an
/// unknown key, a metric named twice, a formula that does not parse or nests too deep, a scale
/// that is not a finite number, or metrics that read each other in a loop (named in order,
/// `` `a` -> `b` -> `a` ``); the error names the file and the metric.
pub fn parse_metrics(name: &str, text: &str) -> Result<MetricTable> {
    let table = read_metrics(name, text)?;
    check_metrics(name, &table)?;
    Ok(table)
}

/// A metrics file's table as TOML gives it, its formulas not parsed.
fn read_metrics(name: &str, text: &str) -> Result<MetricTable> {
    toml::from_str(text).map_err(|e| Error::invalid_input(format!("{name}: {}", e.message())))
}

/// What [`parse_metrics`] checks beyond the TOML: names, formulas, scales, loops.
fn check_metrics(name: &str, table: &MetricTable) -> Result<()> {
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(table.metrics.len());
    let mut formulas = Vec::with_capacity(table.metrics.len());
    for (i, metric) in table.metrics.iter().enumerate() {
        let at = || format!("{name}: metric `{}`", metric.name);
        if metric.name.trim().is_empty() {
            return Err(Error::invalid_input(format!(
                "{name}: metric {} has an empty name",
                i + 1
            )));
        }
        if index.insert(&metric.name, i).is_some() {
            return Err(Error::invalid_input(format!("{}: given twice", at())));
        }
        match expression::parse(&metric.expression) {
            Ok(formula) => formulas.push(formula),
            Err(e) => {
                return Err(Error::invalid_input(format!("{}: {e}", at()))
                    .with_hint("formulas are perf's metric syntax"));
            }
        }
        if !metric.scale.is_finite() || metric.scale == 0.0 {
            return Err(Error::invalid_input(format!(
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
            .map(|&i| format!("`{}`", table.metrics[i].name))
            .collect();
        return Err(Error::invalid_input(format!(
            "{name}: metrics read each other in a loop: {}",
            path.join(" -> ")
        ))
        .with_hint("a metric may read other metrics, never itself through them"));
    }
    Ok(())
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

thread_local! {
    /// How many times [`shipped_metrics`] was asked for a table on this thread.
    // Const already: clippy's missing_const_for_thread_local misreads thread_local!'s expansion
    // on targets that keep thread locals in emulated TLS (OpenBSD), and the allow says so.
    #[allow(clippy::missing_const_for_thread_local)]
    static LOOKUPS: Cell<u64> = const { Cell::new(0) };
}

/// How many times [`shipped_metrics`] has been asked for a model's table on the calling thread
/// (cached or not): a deterministic witness, for tests, that a path which needs no metric
/// reads no metric table.
#[doc(hidden)]
pub fn shipped_metrics_lookups_on_this_thread() -> u64 {
    LOOKUPS.with(Cell::get)
}

/// The shipped metrics of the model `id`, read once, when first asked for (`None`: the model
/// has none). Only the TOML is read: a formula is parsed when a metric is used, so `-M` with
/// one metric parses that metric's formula and the ones it reads, not the table's hundreds.
/// What [`parse_metrics`] checks beyond that (formulas parse, names once, no metric reading
/// itself) the crate's tests check for every shipped table, which is fixed at build time.
///
/// # Errors
/// The model's shipped file is malformed (the crate's tests rule that out).
pub fn shipped_metrics(id: &str) -> Result<Option<&'static MetricTable>> {
    LOOKUPS.with(|count| count.set(count.get() + 1));
    static PARSED: OnceLock<Vec<OnceLock<Result<MetricTable>>>> = OnceLock::new();
    let parsed = PARSED.get_or_init(|| {
        SHIPPED_METRIC_FILES
            .iter()
            .map(|_| OnceLock::new())
            .collect()
    });
    let Some(index) = SHIPPED_METRIC_FILES
        .iter()
        .position(|(_, model, _)| *model == id)
    else {
        return Ok(None);
    };
    let (name, model, text) = SHIPPED_METRIC_FILES[index];
    let table = parsed[index].get_or_init(|| {
        let table = read_metrics(name, text)?;
        if table.model == model {
            Ok(table)
        } else {
            Err(Error::invalid_input(format!(
                "{name}: says model `{}`, its file name `{model}`",
                table.model
            )))
        }
    });
    table.as_ref().map(Some).map_err(Clone::clone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_parses_and_bad_ones_say_what_is_wrong() {
        let table = parse_metrics(
            "t.toml",
            "model = \"x\"\n[events]\n\"a.b\" = \"r76\"\n[[metric]]\nname = \"IPC\"\ngroups = [\"B\", \"A\"]\n\
             expression = \"INST_RETIRED.ANY / CPU_CLK_UNHALTED.THREAD\"\n\
             [[metric]]\nname = \"r\"\ngroups = [\"A\"]\nexpression = \"d_ratio(a, b)\"\n\
             scale = 100.0\nunit = \"%\"\n",
        )
        .unwrap();
        assert_eq!(table.metrics.len(), 2);
        assert_eq!(table.get("ipc").unwrap().scale, 1.0);
        assert_eq!(table.get("r").unwrap().unit, "%");
        assert_eq!(table.groups(), ["A", "B"]);
        assert_eq!(table.events["a.b"], "r76");
        for (text, needle) in [
            (
                "model = \"x\"\n[[metric]]\nname = \"a\"\nexpression = \"1 +\"\n",
                "metric `a`",
            ),
            (
                "model = \"x\"\n[[metric]]\nname = \"a\"\nexpression = \"1\"\n\
                 [[metric]]\nname = \"a\"\nexpression = \"2\"\n",
                "given twice",
            ),
            (
                "model = \"x\"\n[[metric]]\nname = \"a\"\nformula = \"1\"\n",
                "formula",
            ),
            (
                "model = \"x\"\n[[metric]]\nname = \"a\"\nexpression = \"1\"\nscale = 0.0\n",
                "scale",
            ),
        ] {
            let e = parse_metrics("t.toml", text).unwrap_err();
            assert!(e.message().contains("t.toml"), "{e}");
            assert!(e.to_string().contains(needle), "{needle}: {e}");
        }
    }
}
