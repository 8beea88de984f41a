//! `counterhal stat`: run a command (or attach) and count events, like `perf stat`.
//!
//! A measurement passes through these rooms, which import each other without a cycle (the
//! architecture test checks it): [`arguments`] (the command line and its checks) and
//! [`switches`] (perf's other switches), [`targets`] (what to count: the command, a process's
//! threads, threads, CPUs), [`cgroups`] (`-G`, `--for-each-cgroup`: the cgroup of each event) and
//! [`cgroup_pattern`] (`--for-each-cgroup`'s regular expressions), [`pacing`] (intervals, timeouts, `-D`, the timer that stands for
//! a command), [`control`] (`--control`'s commands), [`windows`] (when each event counts: `-D`, `--control`), [`tool`] (perf's tool events), [`plan`] (the events planned: each asked for, then
//! resolved), [`boxes`] (a PMU event on each PMU it names and its
//! cpumask's CPUs, merged into one line), [`results`] (what a run yields), [`counted`] and
//! [`attached`] (the two ways of counting), [`measurement`] (the backend, the events, the
//! path, repeats, the tool events' values), [`summary`] (means, spreads, times, intervals and
//! places), [`topology`] (`--per-core` and its kind), [`metrics`] (perf's metric column),
//! [`named_metrics`] (`-M`: the library's [`counterhal::metrics`], over the event
//! database's metrics and their machine facts), [`separated`] (perf's `-x` and `-j` lines),
//! [`metric_only`] (`--metric-only`), [`default_metrics`] (perf 7.2's metric words and
//! digits), [`document`] (the `--json` document) and [`printing`] (the table, and where the
//! results go), each taking one [`report`] made from the arguments (none reads them),
//! [`intervals`] (`-I`'s intervals, printed as they
//! end), [`verbose`] (`-v`, `--no-scale`), [`plot`]
//! (`--plot`), [`model`] (`--model`: a device model fed steady work) and [`record`] (`stat
//! record` and `stat report`) with [`perf_data`] and [`perf_data_reader`] (perf's stat
//! records, written and read). This module only joins them.

pub(crate) mod arguments;
mod attached;
mod boxes;
#[cfg(target_os = "linux")]
mod bperf;
#[cfg(target_os = "linux")]
mod bpf_cgroups;
#[cfg(not(target_os = "linux"))]
mod bpf_cgroups {
    //! `--bpf-counters` outside Linux: refused (BPF and cgroups are Linux's).

    use std::ffi::OsString;

    use counterhal::Error;
    use counterhal::Target as Attach;
    use counterhal_hal::{Backend, BackendExt};

    use super::plan::EventPlan;
    use super::results::{OnInterval, Plan, Run};
    use crate::error::CliError;

    /// Refuses: counting per cgroup with BPF is Linux's.
    pub fn run<B: Backend + 'static>(
        backend: &B,
        _: &EventPlan,
        _: &Attach,
        _: &[OsString],
        _: Plan,
        _: OnInterval<'_>,
    ) -> Result<Run, CliError> {
        Err(CliError::failed(Error::unsupported(format!(
            "--bpf-counters: counting per cgroup with BPF takes Linux, not {}",
            backend.label()
        ))))
    }
}
pub(crate) mod cgroup_pattern;
mod cgroups;
mod control;
mod counted;
mod cputype;
mod default_metrics;
mod document;
mod filters;
mod intervals;
mod measurement;
mod metric_only;
#[cfg(all(test, target_os = "linux"))]
mod metric_sweep;
mod metrics;
mod model;
mod pacing;
pub(crate) mod parser;
mod perf_data;
mod perf_data_reader;
mod plan;
mod plot;
mod printing;
pub(crate) mod record;
mod report;
mod results;
pub(crate) mod runnable;
pub(crate) mod script;
mod separated;
mod summary;
mod switches;
mod targets;
mod thresholds;
mod tool;
mod topdown;
mod topdown_group;
mod topology;
mod verbose;
mod windows;

use counterhal_hal::BackendExt;
use std::process::ExitCode;

use counterhal::metrics as named_metrics;
use counterhal_hal::Backend;
use counterhal_process::ForwardSignals;

use self::arguments::USAGE;
pub use self::arguments::{HELP, StatArgs};
use self::intervals::Intervals;
use self::named_metrics::MetricDef;
use self::plan::{EventPlan, PlannedEvent, PlannedGroup, RequestedEvent};
use self::summary::{EventSummary, Summary};
use self::targets::Targets;
use crate::error::CliError;
use crate::output::{OutputFile, emit_to_stderr};

/// Runs `counterhal stat`.
///
/// # Errors
/// Bad arguments (exit 2, with the usage line), a command that is not found (127) or cannot
/// be executed (126), a measurement that fails (1). Otherwise the command's own exit status
/// is returned.
pub fn run(mut args: StatArgs) -> Result<ExitCode, CliError> {
    let first = args
        .command
        .first()
        .and_then(|word| record::Subcommand::of(word));
    if args.record.is_none() && first == Some(record::Subcommand::Report) {
        return record::report(args);
    }
    args.default_to_system_wide();
    args.check()?;
    if args.record.is_some() {
        record::check(&args)?;
    }
    let targets = match &args.more.tid {
        Some(tids) => Targets::threads(tids),
        None => Targets::from_options(args.pid.as_deref(), args.all_cpus, args.cpu_list.as_deref()),
    }
    .and_then(|targets| {
        if args.more.no_inherit {
            targets.without_children()
        } else {
            Ok(targets)
        }
    })
    .map_err(|e| CliError::usage(e, USAGE))?;
    let mut context = args.database.context()?;
    // --cputype atom with metrics: that core's table of a hybrid chip, whose metrics perf
    // computes on that core's PMU (events alone are placed on the PMU without it).
    let metrics = !args.metrics.is_empty() || args.more.topdown_level().is_some();
    if let Some(cputype) = args.more.cputype().filter(|_| metrics) {
        context = cputype::with_model(context, cputype);
    }
    // --topdown: the model's TopdownLN metrics, printed alone; on a hybrid chip without
    // --cputype, each kind of core's (the other's in `others`).
    let mut others = Vec::new();
    if let Some(level) = args.more.topdown_level() {
        // With --cputype, the other kind's table only tells its metrics apart.
        let models = cputype::every_core(&context);
        let counted = |m: &str| args.more.cputype().is_none() || context.model() == Some(m);
        let tables: Vec<topdown::Table<'_>> = match models.is_empty() {
            true => vec![topdown::Table {
                model: None,
                pmu: None,
                counted: true,
            }],
            false => models
                .iter()
                .map(|(m, pmu)| topdown::Table {
                    model: Some(m.as_str()),
                    pmu: *pmu,
                    counted: counted(m),
                })
                .collect(),
        };
        let system = args.sysfs.system();
        let each = topdown::each_core(&system, &tables, level).map_err(|e| match e.kind() {
            counterhal::ErrorKind::InvalidInput => CliError::usage(e, USAGE),
            _ => CliError::failed(e),
        })?;
        for (model, names) in each {
            match model.filter(|m| Some(*m) != context.model()) {
                Some(other) => others.push((other.to_string(), vec![names.join(",")])),
                None => args.metrics.push(names.join(",")),
            }
        }
        args.more.metric_only = true;
    }
    if args.model
        && let Some(registration) = args.backend
    {
        return model::run(&args, registration, &context);
    }
    // `--sysfs DIR`: the backend that reads sysfs PMUs reads that tree's (this machine's,
    // mounted elsewhere) and opens them here.
    let sysfs = args.sysfs.root();
    if sysfs.is_some() {
        args.sysfs.devices()?;
        if let Some(registration) = args.backend.filter(|r| r.sysfs.is_none()) {
            let error = counterhal::Error::invalid_input(format!(
                "--sysfs names a sysfs tree, which the {} backend reads no PMUs from",
                registration.name
            ))
            .with_hint("leave out --backend: the first backend that reads one is used");
            return Err(CliError::usage(error, USAGE));
        }
    }
    // Over a sysfs tree, the backend that reads one (the one named, else the first);
    // otherwise the first backend of this OS that works (or the one named).
    let backend = match &sysfs {
        Some(root) => {
            let mut setup = counterhal::Setup::new()
                .context(context.clone())
                .sysfs(root);
            if let Some(registration) = args.backend {
                setup = setup.backend(registration.name);
            }
            setup.open().map_err(CliError::failed)?.into_backend()
        }
        None => measurement::choose_backend(args.backend, &context)?,
    };
    stat_with(&args, &targets, &backend, context.model(), &others, None)
}

/// The backend over `perf_event_open`, resolving in `db` for CPU model `model`: what the
/// tests of `stat`'s planning plan on, where it works.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn the_backend_over_perf_event_open(
    db: std::sync::Arc<counterhal_events::Database>,
    model: &str,
) -> counterhal::Result<counterhal::advanced::AnyBackend> {
    let context = counterhal::Context::from_parts(db, None, Some(model.to_owned()));
    counterhal::probe(counterhal::registration("linux")?, &context)
}

/// What `stat` counts, planned on a backend before anything runs.
struct Counting {
    /// The metrics asked for (`-M`) that count here.
    chosen: Vec<&'static MetricDef>,
    /// The events, each box of a PMU event its own, and their groups.
    plan: EventPlan,
    /// The PMU events' boxes, merged into one line per event after counting.
    boxes: boxes::Boxes,
}

/// Plans the events on `backend`, measures, and writes the summary, with `note` (what was
/// counted, when it is not what the command line says) under it; `-M` looks up the metrics
/// of the database model `model` and the portable ones, and those of `others` (a hybrid
/// chip's other kind of core's model and its `-M` names: `--topdown`'s).
fn stat_with<B: Backend + 'static>(
    args: &StatArgs,
    targets: &Targets,
    backend: &B,
    model: Option<&str>,
    others: &[(String, Vec<String>)],
    note: Option<String>,
) -> Result<ExitCode, CliError> {
    let mut counting = plan_counting(args, backend, model, others)?;
    // `stat record`: -o names where the records go, opened before the command runs.
    let record = args
        .record
        .as_ref()
        .map(|_| record::Destination::open(args.output.as_deref(), &args.sysfs.system()))
        .transpose()
        .map_err(|e| CliError::usage(e, record::RECORD_USAGE))?;
    let results_to = args.output.as_ref().filter(|_| record.is_none());
    // Checked before the command runs, but emptied only once the results are ready: a bad
    // event or a command that cannot run leaves an earlier file as it was.
    let output = match (results_to, args.more.log_fd()) {
        (Some(path), _) if args.more.append => Some(OutputFile::append(path)),
        (Some(path), _) => Some(OutputFile::open(path)),
        (None, Some(fd)) => Some(OutputFile::descriptor(
            &args.sysfs.system(),
            fd,
            &format!("--log-fd {fd}"),
        )),
        (None, None) => None,
    }
    .transpose()
    .map_err(|e| CliError::usage(e.error, USAGE))?;
    let plot_file = args
        .plot
        .as_deref()
        .map(OutputFile::open)
        .transpose()
        .map_err(|e| CliError::usage(e.error, USAGE))?;
    let fallback = measurement::fall_back_to_user_space(backend, &mut counting.plan.events);
    if args.more.verbose {
        emit_to_stderr(&verbose::planned(counting.plan.what(), &backend.label()));
    }
    // -I's intervals are printed as they end, each event as planned.
    let planned = planned_summaries(args, &counting, &backend.label());
    let report = report::Report::of(args, &counting.chosen);
    let mut intervals = Intervals::new(args, &report, planned, output, args.plot.is_some());
    // Until the results are out, a signal that ends a command (Ctrl-C, `kill`, `timeout`)
    // ends the whole measurement, whatever runs: the measured command or a hook is passed it,
    // and what was counted is printed.
    let _watching = ForwardSignals::to(0);
    let (mut runs, signalled) = measure_runs(args, targets, backend, &counting, &mut intervals)?;
    let taken = intervals.end();
    let exit_for_signal = |signal: i32| ExitCode::from(u8::try_from(128 + signal).unwrap_or(1));
    if runs.is_empty() {
        // Stopped before anything was counted.
        return Ok(signalled.map_or(ExitCode::SUCCESS, exit_for_signal));
    }
    gather_runs(args, &counting, &mut runs, [fallback, note]);
    let mut summary = Summary::of(&runs);
    summary.system = self::targets::metrics_facts(args);
    let mut text = if args.interval().is_some() {
        printing::render_after_intervals(&report, &summary, taken.objects)
    } else {
        printing::render(&report, &summary)
    };
    if args.more.summary {
        // The whole run, as without -I.
        text.push_str(&printing::render_summary(&report, &summary));
    }
    let piped = record.as_ref().is_some_and(record::Destination::is_pipe);
    if let (Some(destination), Some(line)) = (record, &args.record) {
        let recording = record::recording(
            line,
            &counting.plan.what().collect::<Vec<_>>(),
            &summary.events,
            summary.end.elapsed_ns,
        );
        destination.write(&recording).map_err(CliError::failed)?;
    }
    let written = match taken.failed {
        // The intervals' output failed: the rest goes where they went, to standard error.
        Some(failed) => {
            emit_to_stderr(&text);
            Err(failed)
        }
        // A pipe of records gets no table (perf prints none either).
        None if args.more.quiet || piped => Ok(()),
        None => printing::write(taken.output, &text),
    };
    if let (Some(plot), Some(file)) = (&taken.plot, plot_file) {
        plot::draw(plot, &summary.events, file)?;
    }
    written?;
    Ok(signalled.map_or(ExitCode::from(summary.end.exit_code), exit_for_signal))
}

/// The metrics and events `args` asks for, planned on `backend`: the metrics' events added,
/// perf-metrics events grouped, filters and cgroups given to each event, PMU events spread
/// on their boxes. `model` is the database model whose metrics `-M` looks up; `others` adds
/// other models' metrics (see [`stat_with`]).
fn plan_counting<B: Backend>(
    args: &StatArgs,
    backend: &B,
    model: Option<&str>,
    others: &[(String, Vec<String>)],
) -> Result<Counting, CliError> {
    // The metrics whose events and facts are known and countable here; a group's others are
    // named. A metric that cannot count here is refused (exit 1), one that is not known
    // (an event or fact unknown here) is bad input (exit 2).
    let resolve = |event: &str| runnable::uncountable_here(backend, event);
    let system = args.sysfs.system();
    let (mut chosen, mut left_out) = runnable::plan(&system, &args.metrics, model, &resolve)
        .map_err(|e| match e.kind() {
            counterhal::ErrorKind::Unsupported => CliError::failed(e),
            _ => CliError::usage(e, USAGE),
        })?;
    // Another kind of core's metrics that cannot run here (its PMU absent) are left out, as
    // perf reads only the tables of the PMUs it finds.
    for (other, names) in others {
        match runnable::plan(&system, names, Some(other), &resolve) {
            Ok((theirs, notes)) => {
                chosen.extend(theirs);
                left_out.extend(notes);
            }
            Err(e) => left_out.push(format!("the metrics of `{other}` left out: {e}")),
        }
    }
    for note in left_out {
        emit_to_stderr(&format!("counterhal: {note}\n"));
    }
    let (mut names, groups) = args.event_groups();
    let mut weak_events = args.weak_events();
    if args.event_names.is_empty() && !chosen.is_empty() {
        // -M alone counts the metrics' events, not the default set (as perf does).
        names.clear();
    }
    // The events the metrics read, unless given already (with or without a modifier); each
    // raw event of a metric table is printed by the table's name for it.
    let table_names = named_metrics::table_names(&chosen);
    let mut shown_as = Vec::new();
    for needed in named_metrics::events_needed(&system, &chosen) {
        if !names
            .iter()
            .any(|n| n == &needed || n.split(':').next() == Some(&needed))
        {
            if let Some(name) = table_names.get(&needed) {
                shown_as.push((needed.clone(), name.clone()));
            }
            names.push(needed);
        }
    }
    // Perf-metrics events and slots go in one group led by slots, as perf forces them.
    let mut groups = groups;
    topdown_group::force(backend, &names, &mut groups);
    weak_events.resize(names.len(), false);
    // --filter's filter of each event, before --for-each-cgroup copies them.
    let filters = filters::of_events(args, names.len()).map_err(|e| CliError::usage(e, USAGE))?;
    // -G's cgroup of each event, or --for-each-cgroup's copies of every event (each copy with
    // its original's filter and weak group).
    let (names, groups, cgroup_names) =
        cgroups::of_events(args, names, groups).map_err(|e| CliError::usage(e, USAGE))?;
    let requested: Vec<RequestedEvent> = names
        .into_iter()
        .zip(cgroup_names)
        .enumerate()
        .map(|(i, (name, cgroup))| RequestedEvent {
            name,
            filter: filters.get(i % filters.len().max(1)).cloned().flatten(),
            weak: weak_events.get(i % weak_events.len().max(1)) == Some(&true),
            cgroup,
        })
        .collect();
    // Each PMU event on the boxes it names, each box on its PMU's CPUs, merged into one line
    // per event after counting (unless --no-merge).
    let names: Vec<String> = requested.iter().map(|event| event.name.clone()).collect();
    let boxes = boxes::Boxes::of(&names, backend, !args.more.no_merge)
        .map_err(|e| CliError::usage(e, measurement::EVENT_USAGE))?;
    let (groups, requested) = (boxes.groups(&groups), boxes.spread(&requested));
    let groups = groups
        .into_iter()
        .map(|members| PlannedGroup {
            weak: members.first().is_some_and(|&first| requested[first].weak),
            members,
        })
        .collect();
    let cgroup_names: Vec<Option<String>> = requested.iter().map(|e| e.cgroup.clone()).collect();
    let cgroup_dirs = cgroups::directories(&cgroup_names).map_err(|e| CliError::usage(e, USAGE))?;
    let mut events = measurement::plan(backend, boxes.to_plan())?;
    if let Some(cputype) = args.more.cputype() {
        let devices = match backend.capabilities().sysfs_pmus() {
            true => Some(args.sysfs.devices()?),
            false => None,
        };
        cputype::named_pmu(devices.as_deref(), cputype).map_err(|e| CliError::usage(e, USAGE))?;
        cputype::keep(&mut events, cputype).map_err(|e| CliError::usage(e, USAGE))?;
    }
    // perf 7.2 stops where no event can count (`__run_perf_stat`, tools/perf/builtin-stat.c).
    if let [results::Planned::Unsupported { name, error }, ..] = events.as_slice()
        && events
            .iter()
            .all(|e| matches!(e, results::Planned::Unsupported { .. }))
    {
        let why = error
            .clone()
            .context(format_args!("No supported events found: {name}"));
        return Err(CliError::failed(why));
    }
    measurement::rename(&mut events, &shown_as);
    let filters: Vec<Option<String>> = requested.iter().map(|e| e.filter.clone()).collect();
    filters::apply(&mut events, &filters).map_err(|e| CliError::usage(e, USAGE))?;
    filters::check(backend, &events, &filters).map_err(|e| CliError::usage(e, USAGE))?;
    let events = events
        .into_iter()
        .zip(requested.into_iter().zip(cgroup_dirs))
        .zip(boxes.cpus().iter().cloned().chain(std::iter::repeat(None)))
        .map(|((what, (asked, dir)), cpus)| PlannedEvent {
            what,
            cgroup: asked.cgroup.zip(dir),
            cpus,
        })
        .collect();
    Ok(Counting {
        chosen,
        plan: EventPlan { events, groups },
        boxes,
    })
}

/// Each event's line as planned (`label` the backend's), its boxes merged, for `-I`'s
/// intervals.
fn planned_summaries(args: &StatArgs, counting: &Counting, label: &str) -> Vec<EventSummary> {
    let planned: Vec<_> = counting
        .plan
        .events
        .iter()
        .map(|event| {
            let mut result = event.what.result(label);
            if cgroups::in_use(args) {
                result.cgroup = Some(event.cgroup_name().to_string());
            }
            result
        })
        .collect();
    counting
        .boxes
        .merge_results(planned)
        .iter()
        .map(EventSummary::planned)
        .collect()
}

/// Counts `-r`'s runs, each between its `--pre` and `--post` commands, the intervals taken
/// by `intervals`; the runs counted and the signal that ended the measurement, if one did.
fn measure_runs<B: Backend + 'static>(
    args: &StatArgs,
    targets: &Targets,
    backend: &B,
    counting: &Counting,
    intervals: &mut Intervals<'_>,
) -> Result<(Vec<results::Run>, Option<i32>), CliError> {
    let timer = args.command.is_empty();
    let command = if timer {
        pacing::timer(args.timeout())
    } else {
        args.command.clone()
    };
    let control = args
        .more
        .control()
        .map(|spec| control::Listener::open(spec, &args.sysfs.system()))
        .transpose()
        .map_err(|e| CliError::usage(e, USAGE))?;
    let plan = results::Plan {
        per_place: args.per_place(),
        pace: pacing::Pace {
            interval: args.interval(),
            count: args.interval_count,
            timeout: args.timeout(),
            delay: args.more.delay(),
            disabled: args.more.starts_disabled(),
            control,
        },
        timer,
        bpf_cgroups: args.more.bpf_counters(),
        // Kept for the command's life: a plan is copied into every run.
        shared: args
            .more
            .shared_counters()
            .map(|path| path.map(|p| &*Box::leak(p.to_path_buf().into_boxed_path()))),
    };
    // Each run between its --pre and --post commands (and after -S's sync).
    let mut runs = Vec::new();
    for _ in 0..args.repeat {
        if let Some(signal) = hook(args, true)? {
            return Ok((runs, Some(signal)));
        }
        runs.push(measurement::measure_once(
            backend,
            &counting.plan,
            targets,
            &command,
            plan,
            &mut |mut snapshot| {
                counting.boxes.merge_counts(&mut snapshot.counts);
                intervals.take(snapshot);
            },
        )?);
        if ForwardSignals::received().is_some() {
            // The run it ended is the last, and its command's status is passed on.
            break;
        }
        if let Some(signal) = hook(args, false)? {
            return Ok((runs, Some(signal)));
        }
    }
    Ok((runs, None))
}

/// Makes the runs' lines what the summary prints: the cgroup column, the boxes merged,
/// aggregated by `--per-*`, unscaled with `--no-scale`, and `notes` under them.
fn gather_runs(
    args: &StatArgs,
    counting: &Counting,
    runs: &mut [results::Run],
    notes: [Option<String>; 2],
) {
    if cgroups::in_use(args) {
        // perf's cgroup column, empty for an event without one.
        for run in runs.iter_mut() {
            for (event, planned) in run.events.iter_mut().zip(&counting.plan.events) {
                event.cgroup = Some(planned.cgroup_name().to_string());
            }
        }
    }
    for run in runs.iter_mut() {
        counting.boxes.merge_run(run);
    }
    if let Some(by) = args.more.aggregation() {
        let system = args.sysfs.system();
        let place_of = |cpu| topology::cpu_place(&system, cpu, by);
        for run in runs.iter_mut() {
            topology::aggregate(run, by, &place_of);
        }
    }
    if args.more.no_scale {
        verbose::unscaled(runs);
    }
    for said in notes.into_iter().flatten() {
        for run in runs.iter_mut() {
            run.end.note = Some(match run.end.note.take() {
                Some(note) => format!("{said}; {note}"),
                None => said.clone(),
            });
        }
    }
}

/// Runs the `--pre` (`before`) or `--post` command of a run, unless a signal has ended the
/// measurement; the signal, if one has (before or while it ran).
///
/// # Errors
/// A hook that could not run or failed (exit 1), when no signal ended it.
fn hook(args: &StatArgs, before: bool) -> Result<Option<i32>, CliError> {
    if let Some(signal) = ForwardSignals::received() {
        return Ok(Some(signal));
    }
    let ran = args.more.run_hook(before);
    match ForwardSignals::received() {
        Some(signal) => Ok(Some(signal)),
        None => ran.map(|()| None),
    }
}
