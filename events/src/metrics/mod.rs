//! Metrics per CPU model: the generated tables `data/generated/metrics/ID.toml` (one model's
//! metrics, each a name, its groups, a formula in perf's syntax, a scale and a unit), compiled
//! in when the crate is built, their formulas parsed by [`expression`](crate::expression) then.
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
//! of AMD events) and the event strings to open for them (`ls_not_halted_cyc = "r76"`). A
//! metric may have a `threshold` (perf's `MetricThreshold`, `threshold = "insn_per_cycle <
//! 1"`): a formula that is 0 where its value is good ([`Threshold`]).

pub(crate) mod compiled;
#[cfg(feature = "events-file")]
pub(crate) mod file;

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use counterhal_hal::{Error, Result};

use crate::expression::Expr;

/// The models with shipped metrics that this build holds, sorted: the ids [`shipped_metrics`]
/// knows (none in a build without the `metrics` feature).
pub fn shipped_metric_models() -> Vec<&'static str> {
    if !crate::built::METRICS_BUILT {
        return Vec::new();
    }
    compiled::models()
        .filter(|model| crate::database::left_out_model(model).is_none())
        .collect()
}

/// One metric of a model.
#[derive(Clone, Debug)]
pub struct Metric {
    /// The name `-M` takes.
    pub name: Cow<'static, str>,
    /// The groups `-M` also takes (each names all its metrics).
    pub groups: Vec<Cow<'static, str>>,
    /// What the value is multiplied by to print (100 for perf's `100%`).
    pub scale: f64,
    /// The unit printed after the value (may be empty).
    pub unit: Cow<'static, str>,
    formula: Formula,
    /// perf's `MetricThreshold`: a formula over the same values (the metric itself by its
    /// name, unscaled) that is 0 where the value is good.
    threshold: Option<Formula>,
}

/// A metric's formula: parsed from a user's file (with its text), or a shipped one's node.
#[derive(Clone, Debug)]
enum Formula {
    // Made by the metrics file's reader alone (the `events-file` feature).
    #[cfg_attr(not(feature = "events-file"), allow(dead_code))]
    Written {
        text: String,
        parsed: Expr,
    },
    Shipped(u32),
}

impl Metric {
    /// The formula, parsed ([`expression`](crate::expression)): a shipped one was parsed when
    /// the crate was built, a user's when its file was read.
    pub fn formula(&self) -> Expr {
        match &self.formula {
            Formula::Written { parsed, .. } => parsed.clone(),
            Formula::Shipped(node) => compiled::formula(*node),
        }
    }

    /// The threshold formula, parsed, if the metric has one (perf's `MetricThreshold`): it
    /// reads the metric by its name (its value before [`scale`](Metric::scale)) and other
    /// metrics and events, and is 0 where the value is good, any other number where it is
    /// bad ([`Threshold`]).
    pub fn threshold(&self) -> Option<Expr> {
        Some(match self.threshold.as_ref()? {
            Formula::Written { parsed, .. } => parsed.clone(),
            Formula::Shipped(node) => compiled::formula(*node),
        })
    }

    /// The threshold formula in perf's metric syntax, if the metric has one (as
    /// [`expression`](Metric::expression) writes the formula).
    pub fn threshold_expression(&self) -> Option<Cow<'_, str>> {
        Some(match self.threshold.as_ref()? {
            Formula::Written { text, .. } => Cow::Borrowed(text),
            Formula::Shipped(node) => Cow::Owned(compiled::formula(*node).to_string()),
        })
    }

    /// The formula in perf's metric syntax: a user's as written, a shipped one as its parsed
    /// form writes it (the same formula: [`expression::parse`](crate::expression::parse) reads
    /// it back to [`Metric::formula`]).
    pub fn expression(&self) -> Cow<'_, str> {
        match &self.formula {
            Formula::Written { text, .. } => Cow::Borrowed(text),
            Formula::Shipped(node) => Cow::Owned(compiled::formula(*node).to_string()),
        }
    }
}

/// Two metrics are equal when their names, groups, scales, units and parsed formulas are.
impl PartialEq for Metric {
    fn eq(&self, other: &Metric) -> bool {
        self.name == other.name
            && self.groups == other.groups
            && self.scale == other.scale
            && self.unit == other.unit
            && self.formula() == other.formula()
            && self.threshold() == other.threshold()
    }
}

/// How a metric's value stands against its threshold, as perf 7.2 classifies it
/// (tools/perf/util/stat-shadow.c: a threshold formula of 0 is good, any other value bad; one
/// without a value classifies nothing). perf's enum also has `nearly bad` and `less good`,
/// which no perf 7.2 code path gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Threshold {
    /// The threshold formula is 0.
    Good,
    /// The threshold formula is a number other than 0.
    Bad,
}

impl Threshold {
    /// The class of a threshold formula's value (`None`: it had none, so no class).
    pub fn of(value: Option<f64>) -> Option<Threshold> {
        match value? {
            v if v.is_nan() => None,
            0.0 => Some(Threshold::Good),
            _ => Some(Threshold::Bad),
        }
    }

    /// perf's word for it (`"good"`, `"bad"`: its `-j` `metric-threshold`).
    pub fn name(self) -> &'static str {
        match self {
            Threshold::Good => "good",
            Threshold::Bad => "bad",
        }
    }
}

/// One model's metrics.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricTable {
    /// The model id they belong to.
    pub model: Cow<'static, str>,
    /// Events the formulas read by a name the model's events may not have (perf's kernel
    /// names), each with the event string to open instead (`r76`).
    pub events: BTreeMap<Cow<'static, str>, Cow<'static, str>>,
    /// The metrics, in the file's order.
    pub metrics: Vec<Metric>,
    /// Each event's mean retire latency in cycles, perf's JSON `RetirementLatencyMean`: what
    /// perf 7.2's `perf stat` reads for a formula's `EVENT:R` without `--record-tpebs`
    /// (`evsel__tpebs_read`, tools/perf/util/intel-tpebs.c); an event without one reads 0.
    pub retire_latency: BTreeMap<Cow<'static, str>, f64>,
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
            .flat_map(|m| m.groups.iter().map(|g| &**g))
            .collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }
}

/// Parses a metrics file called `name`: every metric has a name, given once, a formula that
/// parses (nested at most [`MAX_DEPTH`](crate::expression::MAX_DEPTH) levels) and a finite
/// scale, and no metric reads itself through the metrics its formula names. The shipped tables
/// were read by this same reader when `counterhal-gen tables` wrote them.
///
/// # Errors
/// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput): a text past
/// [`MAX_TOML_TOKENS`](crate::limits::MAX_TOML_TOKENS) tokens or with a value longer than
/// [`MAX_TOML_STRING_BYTES`](crate::limits::MAX_TOML_STRING_BYTES) (refused before it is
/// parsed, naming the line), malformed TOML, an unknown key, a metric named twice, a formula that does not parse or nests too deep, a scale
/// that is not a finite number, or metrics that read each other in a loop (named in order,
/// `` `a` -> `b` -> `a` ``); the error names the file and the metric.
/// [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported) in a build without the
/// `events-file` feature, which holds no TOML reader, naming the feature.
pub fn parse_metrics(name: &str, text: &str) -> Result<MetricTable> {
    #[cfg(not(feature = "events-file"))]
    {
        let _ = text;
        Err(Error::unsupported(format!(
            "{name}: reading a metrics file needs the `events-file` feature (of counterhal, or \
             of counterhal-events), which this build leaves out"
        )))
    }
    #[cfg(feature = "events-file")]
    read_metrics(name, text)
}

/// [`parse_metrics`], with the TOML reader.
#[cfg(feature = "events-file")]
fn read_metrics(name: &str, text: &str) -> Result<MetricTable> {
    let (table, formulas) = file::read(name, text).map_err(|invalid| {
        let error = Error::invalid_input(invalid.message);
        match invalid.hint {
            Some(hint) => error.with_hint(hint),
            None => error,
        }
    })?;
    Ok(MetricTable {
        model: Cow::Owned(table.model),
        events: table
            .events
            .into_iter()
            .map(|(alias, event)| (Cow::Owned(alias), Cow::Owned(event)))
            .collect(),
        metrics: table
            .metrics
            .into_iter()
            .zip(formulas)
            .map(|(entry, parsed)| Metric {
                name: Cow::Owned(entry.name),
                groups: entry.groups.into_iter().map(Cow::Owned).collect(),
                scale: entry.scale,
                unit: Cow::Owned(entry.unit),
                formula: Formula::Written {
                    text: entry.expression,
                    parsed: parsed.formula,
                },
                threshold: entry
                    .threshold
                    .zip(parsed.threshold)
                    .map(|(text, parsed)| Formula::Written { text, parsed }),
            })
            .collect(),
        retire_latency: table
            .retire_latency
            .into_iter()
            .map(|(event, latency)| (Cow::Owned(event), latency))
            .collect(),
    })
}

/// Another name of a shipped metric: what a release of perf called it (perf 6.1's
/// `DRAM_BW_Use`, Linux 6.12's `tma_info_system_dram_bw_use`, for Intel's
/// `Info_System_DRAM_BW_Use`), matched from the releases' own tables by counterhal-gen's
/// `metric-names` (the same formula, or the same description as a later release's metric of
/// that formula; `data/generated/metric_aliases/ID.toml` lists what it could not match).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricAlias {
    /// The other name, as the release spells it.
    pub alias: &'static str,
    /// The name of the model's metric it stands for.
    pub metric: &'static str,
    /// The release that gave the name (`perf 6.1`).
    pub release: &'static str,
}

/// The metric of model `id` that a release of perf called `name` (the same spelling first,
/// then any case), where `name` is not a metric's own name; `None` for a model without
/// shipped metrics, in a build without them, or a name no release gave.
pub fn metric_alias(id: &str, name: &str) -> Option<MetricAlias> {
    if !crate::built::METRICS_BUILT {
        return None;
    }
    let aliases = compiled::aliases(id);
    let found = aliases
        .iter()
        .find(|(alias, _, _)| *alias == name)
        .or_else(|| {
            aliases
                .iter()
                .find(|(alias, _, _)| alias.eq_ignore_ascii_case(name))
        })?;
    let &(alias, metric, release) = found;
    Some(MetricAlias {
        alias,
        metric,
        release,
    })
}

/// Every alias of model `id`'s metrics ([`metric_alias`]), sorted by alias.
pub fn metric_aliases(id: &str) -> Vec<MetricAlias> {
    if !crate::built::METRICS_BUILT {
        return Vec::new();
    }
    compiled::aliases(id)
        .into_iter()
        .map(|(alias, metric, release)| MetricAlias {
            alias,
            metric,
            release,
        })
        .collect()
}

/// How many times [`shipped_metrics`] has been asked for a model's table on the calling thread
/// (cached or not): a deterministic witness, for tests, that a path which needs no metric
/// reads no metric table.
#[doc(hidden)]
pub fn shipped_metrics_lookups_on_this_thread() -> u64 {
    LOOKUPS.with(Cell::get)
}

/// The shipped metrics of the model `id` (`None`: the model has none), from the shipped
/// tables: `counterhal-gen tables` read and checked every table and parsed every formula, so
/// this reads nothing but the tables' rows, once per model.
///
/// # Errors
/// [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported) in a build without the
/// `metrics` feature, or for a model this build leaves out, naming the feature.
pub fn shipped_metrics(id: &str) -> Result<Option<&'static MetricTable>> {
    LOOKUPS.with(|count| count.set(count.get() + 1));
    if crate::database::left_out_model(id).is_some() {
        return Err(counterhal_hal::Error::unsupported(
            crate::database::unknown_model_message(id),
        ));
    }
    if !crate::built::METRICS_BUILT {
        return Err(counterhal_hal::Error::unsupported(format!(
            "model `{id}`'s metrics are left out of this build: they need the `metrics` \
             feature (of counterhal, or of counterhal-events)"
        )));
    }
    static TABLES: OnceLock<Vec<OnceLock<Option<MetricTable>>>> = OnceLock::new();
    let tables = TABLES.get_or_init(|| {
        (0..compiled::models().len())
            .map(|_| OnceLock::new())
            .collect()
    });
    let Some((index, model)) = compiled::position(id) else {
        return Ok(None);
    };
    let Some(cell) = tables.get(index) else {
        return Ok(None);
    };
    let table = cell.get_or_init(|| {
        let shipped = compiled::table(model)?;
        Some(MetricTable {
            model: Cow::Borrowed(model),
            events: shipped.events.into_iter().collect(),
            metrics: shipped
                .metrics
                .into_iter()
                .map(|m| Metric {
                    name: Cow::Borrowed(m.name),
                    groups: m.groups,
                    scale: m.scale,
                    unit: Cow::Borrowed(m.unit),
                    formula: Formula::Shipped(m.formula),
                    threshold: m.threshold.map(Formula::Shipped),
                })
                .collect(),
            retire_latency: shipped.latencies.into_iter().collect(),
        })
    });
    Ok(table.as_ref())
}

thread_local! {
    /// How many times [`shipped_metrics`] was asked for a table on this thread.
    // Const already: clippy's missing_const_for_thread_local misreads thread_local!'s expansion
    // on targets that keep thread locals in emulated TLS (OpenBSD), and the allow says so.
    #[allow(clippy::missing_const_for_thread_local)]
    static LOOKUPS: Cell<u64> = const { Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: the `toml` crate's parser, through the library's one reader, and the
    /// expression parser. Every shipped table on disk reads and checks, and is what the
    /// shipped rows give: the same metrics, the same parsed formulas; each formula as the
    /// rows write it parses back to itself.
    #[test]
    fn every_compiled_in_table_is_its_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/generated/metrics");
        let mut on_disk = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let model = path.file_stem().unwrap().to_str().unwrap().to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.display().to_string();
            let from_file = parse_metrics(&name, &text).unwrap_or_else(|e| panic!("{e}"));
            let shipped = shipped_metrics(&model).unwrap().unwrap();
            assert_eq!(shipped, &from_file, "{name}");
            for metric in &shipped.metrics {
                let written = metric.expression();
                let again = crate::expression::parse(&written)
                    .unwrap_or_else(|e| panic!("{name}: {}: `{written}`: {e}", metric.name));
                assert_eq!(again, metric.formula(), "{name}: {}", metric.name);
            }
            on_disk += 1;
        }
        assert_eq!(on_disk, shipped_metric_models().len());
        // Formulas share subexpressions: fewer nodes than the metrics' formulas have.
        assert!(compiled::node_count() > 0);
    }

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
