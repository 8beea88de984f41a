//! The metric aliases (`events/data/generated/metric_aliases`) are what `counterhal-gen
//! metric-names` writes from perf 6.1's own tables and Linux 6.12's perf JSON, and the
//! generator's formula evaluator computes what the event database's does.

use std::path::Path;

use counterhal_conformance::fixtures;
use counterhal_conformance::skip::Need;
use counterhal_gen::formula::{Formulas, POINTS, event_key, value_of};
use counterhal_gen::metric_names::{self, MODELS, Sources};

const KERNEL_VERSION: &str = "linux-source-6.12 6.12.117-1~deb12u1 (Debian)";

fn shipped_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/data/generated")
}

/// Oracle: perf 6.1's own metric tables (Debian's linux-perf, `PERF_CPUID=... perf list
/// --details metrics`) and Linux 6.12's perf JSON (Debian's linux-source-6.12). Regenerating
/// gives the shipped files byte for byte: the four models of the issue that asked for perf
/// 6.1's names (Ice Lake-SP, Skylake-SP, Broadwell-EP, Tiger Lake) and every other model of
/// [`MODELS`] whose file is shipped. Skips where perf or the tarball is absent, or perf is
/// not the release the files name.
#[test]
fn regenerating_from_perf_and_the_kernel_gives_the_shipped_aliases() {
    let top = match fixtures::kernel_source() {
        Ok(top) => top,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "{why}"),
    };
    let perf = Path::new("perf");
    let release = match metric_names::perf_release(perf) {
        Ok((_, version)) => version,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "perf: {why}"),
    };
    let icx = std::fs::read_to_string(shipped_dir().join("metric_aliases/icx.toml")).unwrap();
    if !icx.contains(&format!("({release})")) {
        counterhal_conformance::skip!(
            Need::Tools,
            "perf here is `{release}`, the shipped aliases name another perf"
        );
    }
    let sources = Sources {
        perf,
        kernel: &top.join("tools/perf/pmu-events/arch/x86"),
        kernel_version: KERNEL_VERSION,
        metrics: &shipped_dir().join("metrics"),
    };
    let mut compared = Vec::new();
    for &row in MODELS {
        let shipped = shipped_dir().join(format!("metric_aliases/{}.toml", row.0));
        let Some(text) = metric_names::table(&sources, row).unwrap() else {
            assert!(!shipped.exists(), "{} is shipped, not generated", row.0);
            continue;
        };
        let on_disk = std::fs::read_to_string(&shipped)
            .unwrap_or_else(|e| panic!("{}: {e}", shipped.display()));
        assert!(
            text == on_disk,
            "{} differs from a regeneration",
            shipped.display()
        );
        compared.push(row.0);
    }
    for model in ["icx", "skx", "bdw_ep", "tgl"] {
        assert!(
            compared.contains(&model),
            "{model} not regenerated: {compared:?}"
        );
    }
    // perf 6.1's names the issue typed, each an alias of Intel's name on each model.
    for (model, alias, metric) in [
        ("icx", "DRAM_BW_Use", "Info_System_DRAM_BW_Use"),
        ("icx", "IO_Read_BW", "Info_System_IO_Read_BW"),
        ("skx", "IO_Write_BW", "Info_System_IO_Write_BW"),
        (
            "bdw_ep",
            "Kernel_Utilization",
            "Info_System_Kernel_Utilization",
        ),
        ("tgl", "Turbo_Utilization", "Info_System_Turbo_Utilization"),
        (
            "icx",
            "tma_info_system_dram_bw_use",
            "Info_System_DRAM_BW_Use",
        ),
    ] {
        let text =
            std::fs::read_to_string(shipped_dir().join(format!("metric_aliases/{model}.toml")))
                .unwrap();
        let line = format!("\"{alias}\" = {{ metric = \"{metric}\"");
        assert!(text.contains(&line), "{model}: no `{line}`");
    }
}

/// Oracle: the event database's own evaluator (`counterhal_events::expression`). Every
/// shipped formula of every model, evaluated by the generator's evaluator and by the
/// database's with the same value for each event (the metrics it reads evaluated alike), has
/// the same value at each point, or neither has one.
#[test]
fn the_generators_formulas_compute_what_the_databases_do() {
    let mut compared = 0;
    for model in counterhal_events::shipped_metric_models() {
        let table = counterhal_events::shipped_metrics(model).unwrap().unwrap();
        let texts: Vec<(String, String)> = table
            .metrics
            .iter()
            .map(|m| (m.name.to_string(), m.expression().into_owned()))
            .collect();
        let ours = Formulas::new(texts.iter().map(|(n, f)| (n.as_str(), f.as_str())), false);
        for metric in &table.metrics {
            let theirs: Vec<Option<f64>> = (0..POINTS)
                .map(|point| evaluate(table, &metric.name, point, 0))
                .collect();
            let theirs: Option<Vec<f64>> = theirs
                .into_iter()
                .map(|v| v.filter(|v| v.is_finite()))
                .collect();
            let generated = ours.values(&metric.name);
            match (generated, theirs) {
                (Some(a), Some(b)) => {
                    for (x, y) in a.iter().zip(&b) {
                        assert!(
                            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
                            "{model} {}: the generator's {a:?}, the database's {b:?}",
                            metric.name
                        );
                    }
                    compared += 1;
                }
                (None, None) => {}
                (a, b) => panic!(
                    "{model} {}: the generator's {a:?}, the database's {b:?}: `{}`",
                    metric.name,
                    metric.expression()
                ),
            }
        }
    }
    assert!(compared > 3000, "only {compared} formulas compared");
}

/// Metric `name` of `table` at `point` by the database's evaluator: each name a metric of the
/// table reads evaluated so, every other the generator's value of its event.
fn evaluate(
    table: &counterhal_events::MetricTable,
    name: &str,
    point: usize,
    depth: usize,
) -> Option<f64> {
    let metric = table
        .metrics
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name))?;
    metric.formula().evaluate(&|read| match table
        .metrics
        .iter()
        .any(|m| m.name.eq_ignore_ascii_case(read))
    {
        true if depth < 32 => evaluate(table, read, point, depth + 1),
        true => None,
        false => Some(value_of(&event_key(read), point)),
    })
}
