//! The generator's command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Generates counterhal's event data from upstream snapshots.
#[derive(Parser)]
#[command(name = "counterhal-gen", version)]
struct Args {
    #[command(subcommand)]
    source: Source,
}

#[derive(Subcommand)]
enum Source {
    /// The shipped tables (`events/data/tables/`), from what the other subcommands wrote
    /// under `events/data` and the hand-written files beside it: every file read and checked
    /// by the library's own readers, written in the one table format the library reads in
    /// place (`events/src/table.rs`).
    Tables {
        /// The events crate's data directory (holding shipped.list).
        #[arg(long, default_value = "events/data")]
        data: PathBuf,
        /// The directory to write the tables into, two files per part (rows and strings).
        #[arg(long, default_value = "events/data/tables")]
        out: PathBuf,
    },
    /// Intel perfmon (github.com/intel/perfmon): mapfile.csv and the *_core.json files.
    Perfmon {
        /// The snapshot's top directory (holding mapfile.csv).
        #[arg(long)]
        source: PathBuf,
        /// The snapshot's commit, written into every file's header.
        #[arg(long)]
        commit: String,
        /// Where to write one TOML file per model.
        #[arg(long)]
        out: PathBuf,
        /// A libpfm4 snapshot (holding lib/events): its spellings of each model's events
        /// become aliases.
        #[arg(long, requires = "libpfm4_commit")]
        libpfm4: Option<PathBuf>,
        /// The libpfm4 snapshot's commit.
        #[arg(long)]
        libpfm4_commit: Option<String>,
        /// The kernel's perf JSON for x86 (tools/perf/pmu-events/arch/x86): perf's names of
        /// offcore-response events a model lacks by name become aliases.
        #[arg(long, requires = "kernel_version")]
        perf_json: Option<PathBuf>,
        /// The kernel version the perf JSON comes from.
        #[arg(long)]
        kernel_version: Option<String>,
    },
    /// libpfm4 (github.com/wcohen/libpfm4): the AMD core tables under lib/events.
    Libpfm4 {
        /// The snapshot's top directory (holding lib/events).
        #[arg(long)]
        source: PathBuf,
        /// The snapshot's commit, written into every file's header.
        #[arg(long)]
        commit: String,
        /// Where to write one TOML file per model.
        #[arg(long)]
        out: PathBuf,
        /// The kernel's perf JSON for x86 (tools/perf/pmu-events/arch/x86), older release
        /// first (one per release, each with its `--kernel-version`): its AMD names become
        /// aliases, and the AMD cores libpfm4 lacks (Zen 6) are its tables, from the last tree
        /// that has them.
        #[arg(long, requires = "kernel_version")]
        perf_json: Vec<PathBuf>,
        /// The kernel version each perf JSON comes from, in `--perf-json`'s order.
        #[arg(long)]
        kernel_version: Vec<String>,
    },
    /// libpfm4's x86 core tables in libpfm4's own structure (events, codes, unit masks with
    /// their groups and flags, modifiers), one file per PMU, for the resolver of libpfm4's
    /// grammar.
    Libpfm4Grammar {
        /// The snapshot's top directory (holding lib/ and include/).
        #[arg(long)]
        source: PathBuf,
        /// The snapshot's commit, written into every file's header.
        #[arg(long)]
        commit: String,
        /// Where to write one TOML file per PMU (events/data/generated/libpfm4).
        #[arg(long)]
        out: PathBuf,
        /// An older snapshot (repeatable, with its `--keep-commit`): the events, unit masks
        /// and defaults it has and `--source` lacks are kept, so its names keep working.
        #[arg(long, requires = "keep_commit")]
        keep: Vec<PathBuf>,
        /// The commit of each `--keep` snapshot, in order.
        #[arg(long)]
        keep_commit: Vec<String>,
    },
    /// Intel perfmon's per-model metric files (`*/metrics/*_metrics*.json`), with perf's
    /// metrics that compute what none of perfmon's does.
    PerfmonMetrics {
        /// The snapshot's top directory.
        #[arg(long)]
        source: PathBuf,
        /// The snapshot's commit, written into every file's header.
        #[arg(long)]
        commit: String,
        /// Where to write one TOML file per model.
        #[arg(long)]
        out: PathBuf,
        /// A kernel tree's `tools/perf/pmu-events/arch/x86`: each model's perf metrics that
        /// compute what none of perfmon's does join its table.
        #[arg(long, requires = "kernel_version")]
        perf_json: Option<PathBuf>,
        /// The kernel tree's version, written into every file's header.
        #[arg(long)]
        kernel_version: Option<String>,
        /// The Python that runs perf's metric scripts (`intel_metrics.py`), as perf's build
        /// does.
        #[arg(long, default_value = "python3")]
        python: PathBuf,
    },
    /// PAPI's preset table (`papi_events.csv`): each model's presets in PAPI's form.
    Papi {
        /// The table (Debian's libpapi7.2 installs it as /usr/share/papi/7.2/papi_events.csv; the
        /// current-releases lab's sid root holds it).
        #[arg(long)]
        csv: PathBuf,
        /// What the table is (PAPI's version, the package), written into every file's header;
        /// by default Debian's libpapi7.2 7.2.0-2+b2.
        #[arg(long, default_value = counterhal_gen::papi::DEBIAN_SOURCE)]
        source: String,
        /// Where to write one TOML file per model.
        #[arg(long)]
        out: PathBuf,
    },
    /// The Linux kernel's Arm cores (`tools/perf/pmu-events/arch/arm64`): one table per core
    /// directory of `mapfile.csv`, with libpfm4's Arm names as aliases.
    Arm64 {
        /// The kernel tree's top directory (holding `Makefile` and `tools/perf/pmu-events`).
        #[arg(long)]
        source: PathBuf,
        /// What the tree is (the package), after the kernel version its Makefile gives.
        #[arg(long, default_value = "Debian linux-source-6.12 6.12.117-1~deb12u1")]
        package: String,
        /// Where to write one TOML file per core (events/data/generated/arm64).
        #[arg(long)]
        out: PathBuf,
        /// A libpfm4 snapshot (holding lib/events): its Arm names become aliases.
        #[arg(long, requires = "libpfm4_commit")]
        libpfm4: Option<PathBuf>,
        /// The libpfm4 snapshot's commit.
        #[arg(long)]
        libpfm4_commit: Option<String>,
        /// Where to write the cores' metric tables (events/data/generated/metrics).
        #[arg(long)]
        metrics_out: Option<PathBuf>,
        /// Write only this core directory's table (`arm/neoverse-v3`; repeatable): the cores a
        /// newer tree adds, beside those an older tree's tables keep. Default: every core.
        #[arg(long)]
        core: Vec<String>,
    },
    /// The uncore events of the kernel's x86 perf JSON (`tools/perf/pmu-events/arch/x86/*/`,
    /// the entries with a `Unit`): one table per directory, each event's PMU and terms as
    /// perf's jevents.py writes them.
    Uncore {
        /// The kernel's `tools/perf/pmu-events/arch/x86` directory.
        #[arg(long)]
        source: PathBuf,
        /// The kernel's version or commit, written into every file's header.
        #[arg(long)]
        commit: String,
        /// Where to write one TOML file per directory (events/data/generated/uncore).
        #[arg(long)]
        out: PathBuf,
        /// An older release's `tools/perf/pmu-events/arch/x86` directory: each event of its
        /// tables that the newer JSON no longer has is kept, as it gives it (a name its perf
        /// knew keeps resolving).
        #[arg(long, requires = "older_commit")]
        older: Option<PathBuf>,
        /// The older release's version, written into the header line of what it kept.
        #[arg(long, requires = "older")]
        older_commit: Option<String>,
        /// perf 6.1, whose own tables give back what the kernel's JSON lost since (extended
        /// event selects, removed events): run as root, under a tree of each table's PMUs.
        #[arg(long)]
        perf: Option<PathBuf>,
    },
    /// The names perf's releases give our metrics (perf's own tables, read by running it, and
    /// kernel trees' perf JSON), matched by formula, name and description: one alias table per
    /// model.
    MetricNames {
        /// The perf whose own tables are read (`perf list --details metrics`).
        #[arg(long, default_value = "perf")]
        perf: PathBuf,
        /// A kernel tree's `tools/perf/pmu-events/arch/x86` directory (one per release, each
        /// with its `--commit`).
        #[arg(long, required = true)]
        source: Vec<PathBuf>,
        /// Each tree's version, in `--source`'s order, written into every file's header.
        #[arg(long, required = true)]
        commit: Vec<String>,
        /// The Python that runs perf's metric scripts.
        #[arg(long, default_value = "python3")]
        python: PathBuf,
        /// Our metric tables (events/data/generated/metrics).
        #[arg(long)]
        metrics: PathBuf,
        /// Where to write one TOML file per model (events/data/generated/metric_aliases).
        #[arg(long)]
        out: PathBuf,
    },
    /// perf's metric tables of the x86 models without an Intel perfmon metric table
    /// (`tools/perf/pmu-events/arch/x86/DIR`, perf's scripts' and the common metrics).
    KernelMetrics {
        /// The kernel's `tools/perf/pmu-events/arch/x86` directory.
        #[arg(long)]
        source: PathBuf,
        /// The kernel's version or commit, written into every file's header.
        #[arg(long)]
        commit: String,
        /// Where to write one TOML file per model.
        #[arg(long)]
        out: PathBuf,
        /// The Python that runs perf's metric scripts (`intel_metrics.py`, `amd_metrics.py`),
        /// as perf's build does.
        #[arg(long, default_value = "python3")]
        python: PathBuf,
    },
}

/// Adds perf's AMD names as aliases from each x86 perf JSON tree `roots` (of `versions`, in
/// order), and the AMD cores only perf's JSON describes, from the last tree that has each.
fn perf_json_models(
    models: &mut Vec<counterhal_gen::model::GenModel>,
    roots: &[PathBuf],
    versions: &[String],
) -> Result<(), counterhal_gen::GenError> {
    if roots.len() != versions.len() {
        return Err(counterhal_gen::GenError::Data(format!(
            "{} --perf-json and {} --kernel-version: give each tree its version",
            roots.len(),
            versions.len()
        )));
    }
    let mut json_models = Vec::new();
    for (root, version) in roots.iter().zip(versions) {
        counterhal_gen::aliases::add_perf_aliases(models, root, version)?;
        counterhal_gen::amd_json::add_perf_unit_masks(models, root, version)?;
        counterhal_gen::amd_json::add_perf_events(models, root, version)?;
        for model in counterhal_gen::amd_json::models(root, version)? {
            json_models.retain(|m: &counterhal_gen::model::GenModel| m.id != model.id);
            json_models.push(model);
        }
    }
    models.extend(json_models);
    Ok(())
}

/// The Arm core models of the kernel tree `source`, with libpfm4's aliases when given.
fn arm64(
    source: &std::path::Path,
    package: &str,
    libpfm4: Option<(&std::path::Path, &str)>,
) -> Result<Vec<counterhal_gen::model::GenModel>, counterhal_gen::GenError> {
    let makefile = source.join("Makefile");
    let text = std::fs::read_to_string(&makefile)
        .map_err(|e| counterhal_gen::GenError::io(&makefile, &e))?;
    let version = counterhal_gen::arm64::kernel_version(&text).ok_or_else(|| {
        counterhal_gen::GenError::Data(format!(
            "{}: no VERSION, PATCHLEVEL and SUBLEVEL",
            makefile.display()
        ))
    })?;
    let arch = source.join("tools/perf/pmu-events/arch/arm64");
    let common = counterhal_gen::arm64::driver_events(source)?;
    let mut models =
        counterhal_gen::arm64::models(&arch, &common, &format!("{version} ({package})"))?;
    if let Some((root, commit)) = libpfm4 {
        counterhal_gen::arm64::add_libpfm4_aliases(&mut models, root, commit)?;
    }
    Ok(models)
}

/// Writes the Arm cores' tables of the kernel tree `source` (those of `cores`, where given)
/// to `out`, and their metric tables to `metrics_out`.
fn arm64_files(
    source: &std::path::Path,
    package: &str,
    libpfm4: Option<(&std::path::Path, &str)>,
    out: &std::path::Path,
    metrics_out: Option<&std::path::Path>,
    cores: &[String],
) -> Result<Vec<String>, counterhal_gen::GenError> {
    let mut models = arm64(source, package, libpfm4)?;
    let known: Vec<String> = models.iter().map(|m| m.id.clone()).collect();
    let wanted = chosen_cores(cores, &known)?;
    models.retain(|m| wanted(&m.id));
    let generalized = counterhal_gen::arm64::driver_generalized(source)?;
    let mut written = counterhal_gen::arm64::write_models(&models, &generalized, out)?;
    if let Some(dir) = metrics_out {
        written.extend(arm64_metrics(source, package, dir, cores)?);
    }
    Ok(written)
}

/// Whether a core's model id is among `cores` (core directories; all when empty): an error
/// names a directory that is none of `known` (the tree's cores).
fn chosen_cores(
    cores: &[String],
    known: &[String],
) -> Result<impl Fn(&str) -> bool + use<>, counterhal_gen::GenError> {
    let chosen: Vec<String> = cores
        .iter()
        .map(|dir| counterhal_gen::arm64::model_id(dir).to_string())
        .collect();
    if let Some(missing) = chosen.iter().find(|id| !known.contains(id)) {
        return Err(counterhal_gen::GenError::Data(format!(
            "--core: no core directory `{missing}` in the tree's mapfile.csv"
        )));
    }
    Ok(move |id: &str| chosen.is_empty() || chosen.iter().any(|c| c == id))
}

/// The Arm cores' metric tables of the kernel tree `source` (of `cores` alone, where given),
/// written to `out`.
fn arm64_metrics(
    source: &std::path::Path,
    package: &str,
    out: &std::path::Path,
    cores: &[String],
) -> Result<Vec<String>, counterhal_gen::GenError> {
    let makefile = source.join("Makefile");
    let text = std::fs::read_to_string(&makefile)
        .map_err(|e| counterhal_gen::GenError::io(&makefile, &e))?;
    let version = counterhal_gen::arm64::kernel_version(&text).ok_or_else(|| {
        counterhal_gen::GenError::Data(format!("{}: no kernel version", makefile.display()))
    })?;
    let arch = source.join("tools/perf/pmu-events/arch/arm64");
    let mut tables =
        counterhal_gen::arm64_metrics::tables(&arch, &format!("{version} ({package})"))?;
    let map_path = arch.join("mapfile.csv");
    let map = std::fs::read_to_string(&map_path)
        .map_err(|e| counterhal_gen::GenError::io(&map_path, &e))?;
    let known: Vec<String> = counterhal_gen::arm64::mapfile(&map)?
        .iter()
        .map(|e| counterhal_gen::arm64::model_id(&e.dir).to_string())
        .collect();
    let wanted = chosen_cores(cores, &known)?;
    tables.retain(|t| wanted(&t.model));
    counterhal_gen::metrics::write_metrics(&tables, out)
}

/// Every model's metric aliases from perf `perf` and the kernel trees `sources` (with their
/// versions `commits`, in order).
fn metric_names(
    perf: &std::path::Path,
    sources: &[PathBuf],
    commits: &[String],
    python: &std::path::Path,
    metrics: &std::path::Path,
) -> Result<Vec<(String, String)>, counterhal_gen::GenError> {
    if sources.len() != commits.len() {
        return Err(counterhal_gen::GenError::Data(format!(
            "{} --source and {} --commit: give each tree its version",
            sources.len(),
            commits.len()
        )));
    }
    let kernels: Vec<(PathBuf, String)> = sources
        .iter()
        .cloned()
        .zip(commits.iter().cloned())
        .collect();
    counterhal_gen::metric_names::tables(&counterhal_gen::metric_names::Sources {
        perf,
        kernels: &kernels,
        python: Some(python),
        metrics,
    })
}

/// The names the Intel perfmon models get beside Intel's: libpfm4's (its snapshot and commit)
/// and perf's offcore-response names (its x86 JSON and kernel version).
fn perfmon_names(
    models: &mut [counterhal_gen::model::GenModel],
    libpfm4: Option<(&std::path::Path, &str)>,
    perf: Option<(&std::path::Path, &str)>,
) -> Result<(), counterhal_gen::GenError> {
    if let Some((root, commit)) = libpfm4 {
        counterhal_gen::aliases::add_libpfm4_aliases(models, root, commit)?;
        counterhal_gen::offcore::add_libpfm4_offcore(models, root, commit)?;
        counterhal_gen::thresholds::add_libpfm4_threshold_masks(models, root, commit)?;
        counterhal_gen::dropped::add_libpfm4_dropped(models, root, commit)?;
    }
    if let Some((root, version)) = perf {
        counterhal_gen::aliases::add_perf_offcore_aliases(models, root, version)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match &args.source {
        Source::Tables { data, out } => counterhal_gen::tables::write(data, out),
        Source::Perfmon {
            source,
            commit,
            out,
            libpfm4,
            libpfm4_commit,
            perf_json,
            kernel_version,
        } => counterhal_gen::perfmon::models(source, commit)
            .and_then(|mut models| {
                let libpfm4 = libpfm4.as_deref().zip(libpfm4_commit.as_deref());
                let perf = perf_json.as_deref().zip(kernel_version.as_deref());
                perfmon_names(&mut models, libpfm4, perf)?;
                Ok(models)
            })
            .and_then(|models| counterhal_gen::write_models(&models, out)),
        Source::Libpfm4 {
            source,
            commit,
            out,
            perf_json,
            kernel_version,
        } => counterhal_gen::libpfm4::models(source, commit)
            .and_then(|mut models| {
                models.extend(counterhal_gen::libpfm4::zen_models(source, commit)?);
                models.push(counterhal_gen::libpfm4::k7_model(source, commit)?);
                models.extend(counterhal_gen::k8::k8_models(source, commit)?);
                models.extend(counterhal_gen::libpfm4::p6_family_models(source, commit)?);
                for table in counterhal_gen::libpfm4::INTEL_MODELS {
                    models.push(counterhal_gen::libpfm4::intel_model(source, commit, table)?);
                }
                perf_json_models(&mut models, perf_json, kernel_version)?;
                Ok(models)
            })
            .and_then(|models| counterhal_gen::write_models(&models, out)),
        Source::Libpfm4Grammar {
            source,
            commit,
            out,
            keep,
            keep_commit,
        } if keep.len() == keep_commit.len() => counterhal_gen::grammar::write_pmus(
            source,
            commit,
            out,
            &counterhal_gen::grammar_errata::default_dir(),
            &keep
                .iter()
                .cloned()
                .zip(keep_commit.iter().cloned())
                .collect::<Vec<_>>(),
        ),
        Source::Libpfm4Grammar { .. } => Err(counterhal_gen::GenError::Data(
            "give each --keep snapshot its --keep-commit".to_string(),
        )),
        Source::PerfmonMetrics {
            source,
            commit,
            out,
            perf_json,
            kernel_version,
            python,
        } => counterhal_gen::metrics::perfmon(source, commit)
            .and_then(|mut tables| {
                if let (Some(x86), Some(version)) = (perf_json, kernel_version) {
                    counterhal_gen::perf_tables::merge_all(
                        &mut tables,
                        x86,
                        version,
                        Some(python),
                    )?;
                }
                Ok(tables)
            })
            .and_then(|tables| counterhal_gen::metrics::write_metrics(&tables, out)),
        Source::Papi { csv, source, out } => counterhal_gen::papi::generate(csv, source, out),
        Source::Arm64 {
            source,
            package,
            out,
            libpfm4,
            libpfm4_commit,
            metrics_out,
            core,
        } => arm64_files(
            source,
            package,
            libpfm4.as_deref().zip(libpfm4_commit.as_deref()),
            out,
            metrics_out.as_deref(),
            core,
        ),
        Source::KernelMetrics {
            source,
            commit,
            out,
            python,
        } => counterhal_gen::perf_tables::kernel(source, commit, Some(python))
            .and_then(|tables| counterhal_gen::metrics::write_metrics(&tables, out)),
        Source::MetricNames {
            perf,
            source,
            commit,
            python,
            metrics,
            out,
        } => metric_names(perf, source, commit, python, metrics)
            .and_then(|tables| counterhal_gen::metric_names::write_tables(&tables, out)),
        Source::Uncore {
            source,
            commit,
            out,
            older,
            older_commit,
            perf,
        } => counterhal_gen::uncore::tables(source, commit)
            .and_then(|mut tables| {
                if let (Some(older), Some(older_commit)) = (older, older_commit) {
                    let kept = counterhal_gen::uncore::tables(older, older_commit)?;
                    counterhal_gen::uncore::keep_older(&mut tables, &kept, older_commit);
                }
                if let Some(perf) = perf {
                    counterhal_gen::uncore_perf::amend_tables(
                        &mut tables,
                        perf,
                        &source.join("mapfile.csv"),
                    )?;
                }
                Ok(tables)
            })
            .and_then(|tables| counterhal_gen::uncore::write_tables(&tables, out)),
    };
    match result {
        Ok(paths) => {
            for path in paths {
                println!("{path}");
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("counterhal-gen: {error}");
            ExitCode::FAILURE
        }
    }
}
