//! What `counterhal stat` counts, planned once from the arguments before anything runs: the
//! targets ([`targets`](mod@targets)), the backend ([`backend`]), the metrics (`-M`: which can run here,
//! [`runnable`]; `--topdown`'s, [`topdown`]; their events, through the library's
//! [`counterhal::metrics`]), the events asked for ([`events`]: `-e`'s, or perf's default set)
//! and what each is ([`tool`] for perf's tool events, [`resolve`] for the rest), each event's
//! cgroup ([`cgroups`], [`cgroup_pattern`]), filter ([`filters`]), PMU boxes and their CPUs
//! ([`boxes`]), kind of core ([`cputype`]), and the groups among them ([`topdown_group`] for
//! perf's forced one). The measurement and the report take the plan ([`planned`]) and
//! never plan again.

pub mod backend;
pub mod boxes;
pub mod cgroup_pattern;
pub mod cgroups;
pub mod cputype;
pub mod events;
pub mod filters;
#[cfg(all(test, target_os = "linux"))]
mod metric_sweep;
pub mod planned;
pub mod resolve;
pub mod runnable;
pub mod targets;
pub mod tool;
pub mod topdown;
pub mod topdown_group;

use counterhal::Context;
use counterhal::metrics as named_metrics;
use counterhal::metrics::{Machine, MetricDef};
use counterhal_hal::Backend;

use self::boxes::Boxes;
use self::planned::{EventPlan, Planned, PlannedEvent, PlannedGroup, RequestedEvent};
use self::resolve::{EVENT_USAGE, rename};
use self::targets::Targets;
use crate::error::CliError;
use crate::output::emit_to_stderr;
use crate::stat::arguments::{StatArgs, USAGE};

/// What is counted on (`-p`, `-t`, `-a`, `-C`, or the command, `-i` alone), checked; and
/// what perf's `#target_cpu` and `#core_wide` tell the metrics: the CPUs counted, or threads.
///
/// # Errors
/// A process, thread or CPU that does not exist, or a bad list (exit 2).
pub fn targets(args: &StatArgs) -> Result<Targets, CliError> {
    let system = args.sysfs.system();
    let targets = match &args.more.tid {
        Some(tids) => Targets::threads(&system, tids),
        None => Targets::from_options(
            &system,
            args.pid.as_deref(),
            args.all_cpus,
            args.cpu_list.as_deref(),
        ),
    }
    .and_then(|targets| {
        if args.more.no_inherit {
            targets.without_children(&system)
        } else {
            Ok(targets)
        }
    })
    .map_err(|e| CliError::usage(e, USAGE))?;
    Ok(targets)
}

/// The other kinds of core's metrics `--topdown` asks for on a hybrid chip: each model and
/// its `-M` names.
pub type Others = Vec<(String, Vec<String>)>;

/// The event database and CPU model `args` name, and the metrics `--topdown` adds: to
/// `args`'s `-M` (made `--metric-only`) for this model, in [`Others`] for another kind of
/// core's. With `--cputype` and metrics, that core's table of a hybrid chip, whose metrics
/// perf computes on that core's PMU (events alone are placed on the PMU without it).
///
/// # Errors
/// A bad events file or CPU model, a `--td-level` the model has not (exit 2); a table that
/// cannot be read (exit 1).
pub fn context(args: &mut StatArgs) -> Result<(Context, Others), CliError> {
    let mut context = args.database.context()?;
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
        let machine = Machine::new(args.sysfs.system());
        let each = topdown::each_core(&machine, &tables, level).map_err(|e| match e.kind() {
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
    Ok((context, others))
}

/// What `stat` counts, planned on a backend before anything runs.
pub struct Counting {
    /// The metrics asked for (`-M`) that count here.
    pub chosen: Vec<&'static MetricDef>,
    /// The events, each box of a PMU event its own, and their groups.
    pub plan: EventPlan,
    /// The PMU events' boxes, merged into one line per event after counting.
    pub boxes: Boxes,
    /// What is said under the results where the OS refused counting the kernel and events
    /// count in user space instead ([`resolve::fall_back_to_user_space`]).
    pub fell_back: Option<String>,
}

/// The metrics and events `args` asks for, planned on `backend`: the metrics' events added,
/// perf-metrics events grouped, filters and cgroups given to each event, PMU events spread
/// on their boxes, and each event the OS refuses counting in the kernel counted in user space
/// where it can. `model` is the database model whose metrics `-M` looks up; `others` adds
/// other models' metrics (a hybrid chip's other kind of core's model and its `-M` names, as
/// [`context`] gives them).
///
/// # Errors
/// A metric or event not known (exit 2), a metric that cannot count here or no event that
/// can (exit 1), a bad `--filter`, `-G` or `--cputype` (exit 2).
pub fn plan<B: Backend>(
    args: &StatArgs,
    backend: &B,
    model: Option<&str>,
    others: &[(String, Vec<String>)],
) -> Result<Counting, CliError> {
    // The metrics whose events and facts are known and countable here; a group's others are
    // named. A metric that cannot count here is refused (exit 1), one that is not known
    // (an event or fact unknown here) is bad input (exit 2).
    let resolve = |event: &str| runnable::uncountable_here(backend, event);
    let machine = Machine::new(args.sysfs.system());
    let (mut chosen, mut left_out) = runnable::plan(&machine, &args.metrics, model, &resolve)
        .map_err(|e| match e.kind() {
            counterhal::ErrorKind::Unsupported => CliError::failed(e),
            _ => CliError::usage(e, USAGE),
        })?;
    // Another kind of core's metrics that cannot run here (its PMU absent) are left out, as
    // perf reads only the tables of the PMUs it finds.
    for (other, names) in others {
        match runnable::plan(&machine, names, Some(other), &resolve) {
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
    let (mut names, groups) = events::requested(args);
    let mut weak_events = events::weak(args);
    if args.event_names.is_empty() && !chosen.is_empty() {
        // -M alone counts the metrics' events, not the default set (as perf does).
        names.clear();
    }
    // The events the metrics read, unless given already (with or without a modifier); each
    // raw event of a metric table is printed by the table's name for it.
    let table_names = named_metrics::table_names(&chosen);
    let mut shown_as = Vec::new();
    for needed in named_metrics::events_needed(&machine, &chosen) {
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
    let boxes = Boxes::of(&names, backend, !args.more.no_merge)
        .map_err(|e| CliError::usage(e, EVENT_USAGE))?;
    let (groups, requested) = (boxes.groups(&groups), boxes.spread(&requested));
    let groups = groups
        .into_iter()
        .map(|members| PlannedGroup {
            weak: members.first().is_some_and(|&first| requested[first].weak),
            members,
        })
        .collect();
    let cgroup_names: Vec<Option<String>> = requested.iter().map(|e| e.cgroup.clone()).collect();
    let cgroup_dirs = cgroups::directories(&args.sysfs.system(), &cgroup_names)
        .map_err(|e| CliError::usage(e, USAGE))?;
    let mut events = resolve::events(backend, boxes.to_plan())?;
    if let Some(cputype) = args.more.cputype() {
        let devices = match backend.capabilities().sysfs_pmus() {
            true => Some(args.sysfs.devices()?),
            false => None,
        };
        cputype::named_pmu(devices.as_ref(), cputype).map_err(|e| CliError::usage(e, USAGE))?;
        cputype::keep(&mut events, cputype).map_err(|e| CliError::usage(e, USAGE))?;
    }
    // perf 7.2 stops where no event can count (`__run_perf_stat`, tools/perf/builtin-stat.c).
    if let [Planned::Unsupported { name, error }, ..] = events.as_slice()
        && events
            .iter()
            .all(|e| matches!(e, Planned::Unsupported { .. }))
    {
        let why = error
            .clone()
            .context(format_args!("No supported events found: {name}"));
        return Err(CliError::failed(why));
    }
    rename(&mut events, &shown_as);
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
    let mut planned = EventPlan { events, groups };
    let fell_back = resolve::fall_back_to_user_space(backend, &mut planned.events);
    Ok(Counting {
        chosen,
        plan: planned,
        boxes,
        fell_back,
    })
}

/// This machine's facts, threads counted: what the tests' plans and summaries read (one for
/// the tests, whose facts are read once).
#[cfg(test)]
pub(crate) fn machine_here() -> Machine {
    static HERE: std::sync::OnceLock<Machine> = std::sync::OnceLock::new();
    HERE.get_or_init(|| Machine::new(counterhal::system::System::host()))
        .clone()
}
