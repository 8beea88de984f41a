//! The metric aliases (`events/data/generated/metric_aliases`) and perf's metric tables
//! (`events/data/generated/metrics`) are what `counterhal-gen metric-names` and `kernel-metrics`
//! write from perf 6.1's own tables and the perf JSON of Linux 6.12 and 7.2, and the
//! generator's formula evaluator computes what the event database's does.

use std::path::{Path, PathBuf};

use counterhal_conformance::fixtures;
use counterhal_conformance::skip::Need;
use counterhal_gen::formula::{Formulas, POINTS, event_key, value_of};
use counterhal_gen::metric_names::{self, MODELS, Sources};

const KERNEL_VERSION: &str = "linux-source-6.12 6.12.117-1~deb12u1 (Debian)";

/// The version of the current-releases lab's kernel tree, as the shipped files name it.
const KERNEL_7_2_VERSION: &str = "linux-source-7.2 7.2.13-1 (Debian)";

fn shipped_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/data/generated")
}

/// Linux 7.2's `tools/perf/pmu-events` (its JSON and perf's metric scripts), extracted once
/// per machine from the tarball of the current-releases lab's Debian sid root
/// (`scripts/current-lab`; `COUNTERHAL_CURRENT_LAB` names its folder, by default
/// /var/cache/counterhal-lab), into a folder of the temporary directory named for the
/// tarball's size and time, renamed into place when whole. `Err`: why there is none.
fn linux_7_2_pmu_events() -> Result<PathBuf, String> {
    let lab = std::env::var_os("COUNTERHAL_CURRENT_LAB")
        .map_or_else(|| PathBuf::from("/var/cache/counterhal-lab"), PathBuf::from);
    let tarball = lab.join("sid/usr/src/linux-source-7.2.tar.xz");
    let metadata = std::fs::metadata(&tarball).map_err(|e| {
        format!(
            "{}: {e} (the current-releases lab's sid root with linux-source-7.2, \
             scripts/current-lab)",
            tarball.display()
        )
    })?;
    let modified = metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let name = format!(
        "counterhal-linux-7.2-pmu-events-{}-{modified}",
        metadata.len()
    );
    let done = std::env::temp_dir().join(&name);
    let tree = done.join("linux-source-7.2/tools/perf/pmu-events");
    if tree.is_dir() {
        return Ok(tree);
    }
    let partial = std::env::temp_dir().join(format!("{name}.partial-{}", std::process::id()));
    std::fs::create_dir_all(&partial).map_err(|e| format!("{}: {e}", partial.display()))?;
    let status = std::process::Command::new("tar")
        .arg("-xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(&partial)
        .args(["--wildcards", "*/tools/perf/pmu-events/*"])
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    if !status.success() {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(format!("tar -xJf {} failed: {status}", tarball.display()));
    }
    // Another process may have finished first: its tree is as good.
    if std::fs::rename(&partial, &done).is_err() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    match tree.is_dir() {
        true => Ok(tree),
        false => Err(format!(
            "{} has no tools/perf/pmu-events",
            tarball.display()
        )),
    }
}

/// Oracle: perf 6.1's own metric tables (Debian's linux-perf, `PERF_CPUID=... perf list
/// --details metrics`) and the perf JSON of Linux 6.12 (Debian's linux-source-6.12) and Linux
/// 7.2 (Debian sid's linux-source-7.2, with perf's metric scripts run by python3 as perf's
/// build runs them). Regenerating gives the shipped files byte for byte: the aliases of every
/// model of [`MODELS`] whose file is shipped (the four models of the issue that asked for perf
/// 6.1's names, Ice Lake-SP, Skylake-SP, Broadwell-EP and Tiger Lake, among them), and the
/// metric tables made from perf's tables alone. Skips where perf, python3 or a tarball is
/// absent, or perf is not the release the files name.
#[test]
fn regenerating_from_perf_and_the_kernels_gives_the_shipped_metrics_and_aliases() {
    let top = match fixtures::kernel_source() {
        Ok(top) => top,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "{why}"),
    };
    let pmu_events = match linux_7_2_pmu_events() {
        Ok(tree) => tree,
        Err(why) => counterhal_conformance::skip!(Need::Tools, "{why}"),
    };
    let python = Path::new("python3");
    if std::process::Command::new(python)
        .arg("--version")
        .output()
        .is_err()
    {
        counterhal_conformance::skip!(Need::Tools, "no python3 to run perf's metric scripts");
    }
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
    let x86 = pmu_events.join("arch/x86");
    // perf's tables alone: every model without a perfmon table.
    let tables =
        counterhal_gen::perf_tables::kernel(&x86, KERNEL_7_2_VERSION, Some(python)).unwrap();
    assert!(tables.len() >= 20, "{} tables", tables.len());
    for table in &tables {
        let shipped = shipped_dir().join(format!("metrics/{}.toml", table.model));
        let on_disk = std::fs::read_to_string(&shipped)
            .unwrap_or_else(|e| panic!("{}: {e}", shipped.display()));
        assert!(
            counterhal_gen::metrics::metrics_toml(table) == on_disk,
            "{} differs from a regeneration",
            shipped.display()
        );
    }
    let kernels = [
        (x86, KERNEL_7_2_VERSION.to_string()),
        (
            top.join("tools/perf/pmu-events/arch/x86"),
            KERNEL_VERSION.to_string(),
        ),
    ];
    let sources = Sources {
        perf,
        kernels: &kernels,
        python: Some(python),
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
    // perf 6.1's names the issue typed, each an alias of Intel's name on each model; perf
    // 6.1's `IO_Read_BW` on Ice Lake-SP is what it computed, the ItoM writes
    // (docs/event-data-errata.md).
    for (model, alias, metric) in [
        ("icx", "DRAM_BW_Use", "Info_System_DRAM_BW_Use"),
        ("icx", "IO_Read_BW", "Info_System_IO_Write_BW"),
        ("skx", "IO_Write_BW", "Info_System_IO_Write_BW"),
        (
            "bdw_ep",
            "Kernel_Utilization",
            "Info_System_Kernel_Utilization",
        ),
        // perf 6.1's formula computes what two of ours do (perfmon's and perf 7.2's of the
        // same formula): the alias names the model's own table's, perfmon's, as Linux
        // 6.12's name of it does.
        ("tgl", "Turbo_Utilization", "Info_System_Turbo_Utilization"),
        (
            "tgl",
            "tma_info_system_turbo_utilization",
            "Info_System_Turbo_Utilization",
        ),
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
    let metric = table.metrics.iter().find(|m| m.name == name)?;
    // A formula reads a metric by its exact name, as the facade's `referenced` does (perf
    // 7.2's `insn_per_cycle` reads the event `instructions` on Elkhart Lake, whose table has a
    // metric `Instructions`).
    metric
        .formula()
        .evaluate(&|read| match table.metrics.iter().any(|m| m.name == read) {
            true if depth < 32 => evaluate(table, read, point, depth + 1),
            true => None,
            false => Some(value_of(&event_key(read), point)),
        })
}
