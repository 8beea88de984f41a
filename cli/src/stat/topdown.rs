//! `--topdown` and `--td-level N`: the CPU model's metric group `TopdownLN` (level 1 unless
//! told), printed alone, as perf 7.2's `add_default_events` (tools/perf/builtin-stat.c) asks
//! for it: `metricgroups__topdown_max_level` (tools/perf/util/metricgroup.c) takes the deepest
//! level of the model's own table (the digit after the first `TopdownL` of a metric's groups);
//! no level there, or a level past the deepest, is refused with perf's words; level 0 is 1;
//! `--td-level` without `--topdown` changes nothing; the metrics print alone
//! (`--metric-only`).

use counterhal::Error;
use counterhal::metrics::{self as named_metrics, MetricDef};

/// The level a metric's groups place it at, as perf reads it: the digit after the first
/// `TopdownL` of its groups joined by `;` (perf's `strstr` of `MetricGroup`).
fn level_of(metric: &MetricDef) -> Option<u32> {
    let joined = metric.groups.join(";");
    let at = joined.find("TopdownL")? + "TopdownL".len();
    joined[at..].chars().next()?.to_digit(10)
}

/// The metric names `--topdown --td-level level` counts on the database model `model`: the
/// model's metrics of group `TopdownL<level>`. Where the group holds perf's `tma_` metrics,
/// those alone: perf's table for a model has no others there, and the others of the group
/// (perfmon's `Frontend_Bound`, ...) compute the same shares from other names of the same
/// events.
///
/// # Errors
/// The model has no `TopdownL` group (unsupported: perf's "Topdown requested but the
/// topdown metric groups aren't present."), or `level` is past its deepest (bad input: "The
/// max level is N."), or has no metric at `level` (unsupported); a malformed table.
pub fn metrics(model: Option<&str>, level: u32) -> Result<Vec<&'static str>, Error> {
    let own: &[MetricDef] = match model {
        Some(id) => named_metrics::of_model(id)?,
        None => &[],
    };
    let deepest = own.iter().filter_map(level_of).max().unwrap_or(0);
    if deepest == 0 {
        let model = model.map_or("no database model".to_string(), |m| {
            format!("CPU model `{m}`")
        });
        return Err(Error::unsupported(format!(
            "--topdown: Topdown requested but the topdown metric groups aren't present \
             ({model} has no metric group TopdownL1)"
        ))
        .with_hint("`counterhal list --metrics` lists the CPU model's metric groups"));
    }
    let level = level.max(1);
    if level > deepest {
        return Err(Error::invalid_input(format!(
            "--td-level {level}: Invalid top-down metrics level. The max level is {deepest}."
        ))
        .with_hint(format!("--td-level 1 to {deepest} (0: 1)")));
    }
    let group = format!("TopdownL{level}");
    let members: Vec<&MetricDef> = own
        .iter()
        .filter(|m| m.groups.iter().any(|g| *g == group))
        .collect();
    if members.is_empty() {
        // Perf's table has every level up to its deepest; the database's may lack one.
        return Err(Error::unsupported(format!(
            "--td-level {level}: the CPU model's metrics have no group {group} (its \
             deepest is TopdownL{deepest})"
        ))
        .with_hint("`counterhal list --metrics` lists the CPU model's metric groups"));
    }
    let perfs = members.iter().any(|m| m.name.starts_with("tma_"));
    Ok(members
        .into_iter()
        .filter(|m| !perfs || m.name.starts_with("tma_"))
        .map(|m| m.name)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: perf 7.2.13 (`PERF_CPUID=GenuineIntel-6-8F-8 perf stat --topdown -a true`
    /// under a Sapphire Rapids PMU tree) prints tma_frontend_bound, tma_bad_speculation,
    /// tma_retiring and tma_backend_bound; `--td-level 2` the eight of tma_L2_group; perf 7.2
    /// on Zen 4 (`AuthenticAMD-25-11-1`) refuses "Topdown requested but the topdown metric
    /// groups aren't present.".
    #[test]
    fn levels_take_the_models_topdown_groups_as_perf_does() {
        let mut one = metrics(Some("spr"), 1).unwrap();
        one.sort_unstable();
        assert_eq!(
            one,
            [
                "tma_backend_bound",
                "tma_bad_speculation",
                "tma_frontend_bound",
                "tma_retiring"
            ]
        );
        assert_eq!(metrics(Some("spr"), 0).unwrap().len(), 4, "0 is level 1");
        let mut two = metrics(Some("spr"), 2).unwrap();
        two.sort_unstable();
        assert_eq!(two.len(), 8);
        assert!(two.contains(&"tma_memory_bound") && two.contains(&"tma_fetch_latency"));
        let past = metrics(Some("spr"), 9).unwrap_err();
        assert!(past.to_string().contains("The max level is"), "{past}");
        assert_eq!(past.kind(), counterhal::ErrorKind::InvalidInput);
        for model in [Some("amd64_fam19h_zen4"), None] {
            let none = metrics(model, 1).unwrap_err();
            assert!(none.to_string().contains("aren't present"), "{none}");
            assert_eq!(none.kind(), counterhal::ErrorKind::Unsupported);
        }
    }
}
