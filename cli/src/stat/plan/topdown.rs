//! `--topdown` and `--td-level N`: the CPU model's metric group `TopdownLN` (level 1 unless
//! told), printed alone, as perf 7.2's `add_default_events` (tools/perf/builtin-stat.c) asks
//! for it: `metricgroups__topdown_max_level` (tools/perf/util/metricgroup.c) takes the deepest
//! level of the model's own table (the digit after the first `TopdownL` of a metric's groups);
//! no level there, or a level past the deepest, is refused with perf's words; level 0 is 1;
//! `--td-level` without `--topdown` changes nothing; the metrics print alone
//! (`--metric-only`).

use counterhal::Error;
use counterhal::metrics::Machine;
use counterhal::metrics::{self as named_metrics, MetricDef};

/// The level a metric's groups place it at, as perf reads it: the digit after the first
/// `TopdownL` of its groups joined by `;` (perf's `strstr` of `MetricGroup`).
fn level_of(metric: &MetricDef) -> Option<u32> {
    let joined = metric.groups.join(";");
    let at = joined.find("TopdownL")? + "TopdownL".len();
    joined[at..].chars().next()?.to_digit(10)
}

/// A table `--topdown` reads.
pub struct Table<'m> {
    /// The database model.
    pub model: Option<&'m str>,
    /// The core PMU of its kind of core, where it is one kind of a hybrid chip's (`cpu_core`
    /// for `adl_glc`).
    pub pmu: Option<&'m str>,
    /// Whether its metrics are counted (`false`: it only tells its chip's other tables'
    /// metrics from copies of its own, `--cputype` having chosen another kind).
    pub counted: bool,
}

/// A table's database model and the metric names `--topdown` counts on it.
pub type Names<'m> = (Option<&'m str>, Vec<&'static str>);

/// Whether `metric` reads an event of a hybrid chip's core PMU other than `own` (perf's
/// alderlake table holds the Atom cores' metrics beside the Core cores', each reading its
/// PMU's events: `cpu_atom@TOPDOWN_FE_BOUND.FRONTEND_BANDWIDTH@`).
fn another_cores(machine: &Machine, metric: &MetricDef, own: &str) -> bool {
    named_metrics::events_needed(machine, &[metric])
        .iter()
        .filter_map(|event| event.split_once('/').map(|(pmu, _)| pmu))
        .any(|pmu| pmu.starts_with("cpu_") && pmu != own)
}

/// Whether `metric`, of the Core cores' table, is the Atom cores' metric `atoms` holds, by
/// name, groups and formula: perf's alderlake and meteorlake tables hold both kinds' metrics,
/// and the Atom cores' that read only other metrics (`tma_resource_bound`: `tma_backend_bound
/// - tma_core_bound`) read no PMU that tells them apart.
fn the_atoms(metric: &MetricDef, atoms: &[MetricDef]) -> bool {
    atoms.iter().any(|theirs| {
        theirs.name == metric.name
            && theirs.groups == metric.groups
            && theirs.expression() == metric.expression()
    })
}

/// The metric names `--topdown --td-level level` counts on each of `tables` (a hybrid chip's
/// kinds of core, as perf 7.2's `metricgroup__parse_groups` takes every core PMU's metrics;
/// else one model): each table's metrics of group `TopdownL<level>` that read no other core
/// PMU's events, and the tables with none there left out. Where the group holds perf's
/// `tma_` metrics, those alone: perf's table for a model has no others there, and the others
/// of the group (perfmon's `Frontend_Bound`, ...) compute the same shares from other names of
/// the same events. The deepest level is the deepest of any table's (perf's
/// `metricgroups__topdown_max_level`).
///
/// # Errors
/// No table has a `TopdownL` group (unsupported: perf's "Topdown requested but the topdown
/// metric groups aren't present."), or `level` is past the deepest (bad input: "The max
/// level is N."), or no table has a metric at `level` (unsupported); a malformed table.
pub fn each_core<'m>(
    machine: &Machine,
    tables: &[Table<'m>],
    level: u32,
) -> Result<Vec<Names<'m>>, Error> {
    let mut read = Vec::with_capacity(tables.len());
    for table in tables {
        let own: &[MetricDef] = match table.model {
            Some(id) => named_metrics::of_model(id)?,
            None => &[],
        };
        read.push((table, own));
    }
    let atoms: &[MetricDef] = read
        .iter()
        .find(|(table, _)| table.pmu == Some("cpu_atom"))
        .map_or(&[], |(_, own)| own);
    read.retain(|(table, _)| table.counted);
    let deepest = read
        .iter()
        .flat_map(|(_, own)| own.iter())
        .filter_map(level_of)
        .max()
        .unwrap_or(0);
    let first = read.first().and_then(|(table, _)| table.model);
    if deepest == 0 {
        let model = first.map_or("no database model".to_string(), |m| {
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
    let each: Vec<Names<'m>> = read
        .into_iter()
        .map(|(table, own)| {
            let members: Vec<&'static MetricDef> = own
                .iter()
                .filter(|m| m.groups.iter().any(|g| *g == group))
                .filter(|m| table.pmu.is_none_or(|pmu| !another_cores(machine, m, pmu)))
                .filter(|m| table.pmu != Some("cpu_core") || !the_atoms(m, atoms))
                .collect();
            let perfs = members.iter().any(|m| m.name.starts_with("tma_"));
            let names = members
                .into_iter()
                .filter(|m| !perfs || m.name.starts_with("tma_"))
                .map(|m| m.name)
                .collect();
            (table.model, names)
        })
        .filter(|(_, names): &(_, Vec<_>)| !names.is_empty())
        .collect();
    if each.is_empty() {
        // Perf's table has every level up to its deepest; the database's may lack one.
        return Err(Error::unsupported(format!(
            "--td-level {level}: the CPU model's metrics have no group {group} (its \
             deepest is TopdownL{deepest})"
        ))
        .with_hint("`counterhal list --metrics` lists the CPU model's metric groups"));
    }
    Ok(each)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--topdown --td-level level`'s metrics on the one model `model`.
    fn metrics(model: Option<&str>, level: u32) -> Result<Vec<&'static str>, Error> {
        let table = Table {
            model,
            pmu: None,
            counted: true,
        };
        let mut each = each_core(&crate::stat::plan::machine_here(), &[table], level)?;
        Ok(each.pop().map(|(_, names)| names).unwrap_or_default())
    }

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

    /// Oracle: perf 7.2.13, `PERF_CPUID=GenuineIntel-6-97-2 perf stat --cputype core|atom
    /// --topdown --td-level 2 -a -x, true` under the Alder Lake tree: the Core cores' eight
    /// (tma_memory_bound, tma_core_bound, tma_light_operations, tma_heavy_operations,
    /// tma_fetch_latency, tma_fetch_bandwidth, tma_machine_clears, tma_branch_mispredicts) and
    /// the Atom cores' six.
    /// Before, the Core cores' table gave eleven (perf's alderlake table holds the Atom cores'
    /// metrics: tma_ifetch_bandwidth, tma_ifetch_latency, which read cpu_atom events, and
    /// tma_resource_bound, which reads only other metrics).
    #[test]
    fn a_hybrid_chips_levels_are_each_cores_own() {
        let table = |model, pmu| Table {
            model: Some(model),
            pmu: Some(pmu),
            counted: true,
        };
        let tables = [table("adl_glc", "cpu_core"), table("adl_grt", "cpu_atom")];
        let each = each_core(&crate::stat::plan::machine_here(), &tables, 2).unwrap();
        let mut core = each[0].1.clone();
        core.sort_unstable();
        let perfs = [
            "tma_branch_mispredicts",
            "tma_core_bound",
            "tma_fetch_bandwidth",
            "tma_fetch_latency",
            "tma_heavy_operations",
            "tma_light_operations",
            "tma_machine_clears",
            "tma_memory_bound",
        ];
        assert_eq!(core, perfs);
        let mut atom = each[1].1.clone();
        atom.sort_unstable();
        assert_eq!(
            atom,
            [
                "tma_branch_mispredicts",
                "tma_core_bound",
                "tma_ifetch_bandwidth",
                "tma_ifetch_latency",
                "tma_machine_clears",
                "tma_resource_bound",
            ]
        );
        assert_eq!(
            each_core(&crate::stat::plan::machine_here(), &tables, 1)
                .unwrap()
                .len(),
            2
        );
        // --cputype core: the Atom cores' table only tells their metrics apart.
        let atom = Table {
            counted: false,
            ..table("adl_grt", "cpu_atom")
        };
        let core_alone = [table("adl_glc", "cpu_core"), atom];
        let each = each_core(&crate::stat::plan::machine_here(), &core_alone, 2).unwrap();
        assert_eq!(each.len(), 1);
        let mut alone = each[0].1.clone();
        alone.sort_unstable();
        assert_eq!(alone, perfs);
    }

    /// Oracle: perf 7.2.13, `PERF_CPUID=GenuineIntel-6-97-2 perf stat --cputype core
    /// --topdown --td-level 3 -a true` under the Alder Lake tree: these 28 columns. Before,
    /// the Core cores' table lacked tma_few_uops_instructions, tma_l1_bound and
    /// tma_other_light_ops (perf's names were aliases of perfmon's metrics, in no
    /// `TopdownL3` group).
    #[test]
    fn alder_lakes_level_3_is_perf_7_2_s() {
        let table = |model, pmu| Table {
            model: Some(model),
            pmu: Some(pmu),
            counted: pmu == "cpu_core",
        };
        let tables = [table("adl_glc", "cpu_core"), table("adl_grt", "cpu_atom")];
        let each = each_core(&crate::stat::plan::machine_here(), &tables, 3).unwrap();
        let mut core = each[0].1.clone();
        core.sort_unstable();
        let perfs = "tma_branch_resteers tma_divider tma_dram_bound tma_dsb tma_dsb_switches \
            tma_few_uops_instructions tma_fp_arith tma_fused_instructions tma_icache_misses \
            tma_int_operations tma_itlb_misses tma_l1_bound tma_l2_bound tma_l3_bound tma_lcp \
            tma_lsd tma_memory_operations tma_microcode_sequencer tma_mite tma_ms \
            tma_ms_switches tma_non_fused_branches tma_other_light_ops tma_other_mispredicts \
            tma_other_nukes tma_ports_utilization tma_serializing_operation tma_store_bound";
        assert_eq!(core, perfs.split_whitespace().collect::<Vec<_>>());
    }
}
