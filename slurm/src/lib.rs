//! counterhal's Slurm SPANK plugin, `spank_counterhal.so`: `srun --counters[=EVENTS]` (and
//! `sbatch`, `salloc`, whose steps it reaches) counts each task of a step from its exec, as
//! `perf stat -- cmd` counts a command, and prints the counts of each node's tasks, added up,
//! at their end on the job's standard error, as `counterhal stat` prints them; and, where a
//! cgroup v1 perf_event hierarchy is mounted, it places each task in a cgroup of its own there
//! (`slurm/uid_U/job_J/step_S/task_T`, the cgroup/v1 plugin's layout) so that `counterhal
//! serve` counts every job whole.
//!
//! Where each callback runs (Slurm 22.05, src/slurmd/slurmstepd/mgr.c): `slurm_spank_init`
//! everywhere (it registers the options); the options' callbacks in srun, sbatch or salloc and
//! again in slurmstepd, with the value srun passed on; `slurm_spank_task_post_fork` in
//! slurmstepd as root, once per task after the task was forked and placed in its cgroups and
//! before it may exec (`_fork_all_tasks`: the task waits on a pipe until every post-fork
//! callback returned), so counters opened there with `enable_on_exec` start at the user's
//! program; `slurm_spank_task_exit` in slurmstepd after the task was reaped and before srun is
//! told, while slurmstepd's standard error is still the job's (`_slurmd_job_log_init` made it
//! task 0's; `_wait_for_io` closes it later); `slurm_spank_exit` last, after every process of
//! the step was killed.
//!
//! A failure of the plugin never fails a job: every callback returns success, and what went
//! wrong is said on the job's standard error (in slurmstepd) or srun's, the job then running
//! uncounted.

use std::ffi::c_int;
use std::sync::Mutex;

mod cgroup_v1;
mod gather;
mod report;
mod step;
mod sys;

/// perf's stat records (`perf.data`), the source the command's `stat record` and `stat report`
/// use: the plugin writes one, and `counterhal stat report` reads it.
#[allow(dead_code, unused_imports)]
#[path = "../../cli/src/stat/recording/mod.rs"]
mod recording;

use report::Output;
use step::{Request, Step};
use sys::{Context, Handle, Item};

/// What the plugin holds in one process: the options given, the plugstack.conf arguments,
/// in slurmstepd the step counted, and in srun the port the nodes send their counts to and
/// what srun knows of its step.
struct Plugin {
    request: Option<Request>,
    output: Output,
    settings: Settings,
    step: Option<Step>,
    listening: Option<gather::Listening>,
    info: Option<gather::StepInfo>,
}

static PLUGIN: Mutex<Plugin> = Mutex::new(Plugin {
    request: None,
    output: Output::Text,
    settings: Settings {
        counterhal: String::new(),
        ports: None,
        sum: true,
    },
    step: None,
    listening: None,
    info: None,
});

/// Runs `f` on the plugin's state, a panic in it (a fault of the plugin's) caught and said,
/// never crossing into Slurm; returns success to Slurm whatever happened.
fn with_plugin(f: impl FnOnce(&mut Plugin)) -> c_int {
    counterhal_cboundary::catch(
        || {
            let mut plugin = PLUGIN.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut plugin);
        },
        || report::say("the plugin failed inside; the job runs uncounted"),
    );
    sys::SUCCESS
}

/// The default path of the command that prints the counts (plugstack.conf's
/// `counterhal=PATH` changes it).
const COUNTERHAL: &str = "/usr/bin/counterhal";

/// What plugstack.conf's arguments set: `counterhal=PATH` (the command that prints the
/// counts), `ports=LOW-HIGH` (where srun listens for the nodes' counts: a range the
/// firewall between the nodes and srun's host opens, as slurm.conf's `SrunPortRange` is for
/// srun's own; default any free port) and `sum=no` (srun prints no step's sum, and listens
/// on no port).
#[derive(Clone, Debug, PartialEq)]
struct Settings {
    counterhal: String,
    ports: Option<(u16, u16)>,
    sum: bool,
}

impl Settings {
    /// The settings of plugstack.conf's `arguments`, and what was wrong with any (each
    /// left at its default).
    fn read(arguments: &[String]) -> (Settings, Vec<String>) {
        let mut settings = Settings {
            counterhal: COUNTERHAL.to_string(),
            ports: None,
            sum: true,
        };
        let mut wrong = Vec::new();
        for argument in arguments {
            match argument.split_once('=') {
                Some(("counterhal", path)) if !path.is_empty() => {
                    settings.counterhal = path.to_string();
                }
                Some(("ports", range)) => match range
                    .split_once('-')
                    .and_then(|(low, high)| Some((low.parse().ok()?, high.parse().ok()?)))
                    .filter(|&(low, high): &(u16, u16)| 0 < low && low <= high)
                {
                    Some(range) => settings.ports = Some(range),
                    None => wrong.push(format!(
                        "plugstack.conf: ports=`{range}` is not a range of ports such as \
                         ports=60001-63000"
                    )),
                },
                Some(("sum", "yes")) => settings.sum = true,
                Some(("sum", "no")) => settings.sum = false,
                _ => wrong.push(format!(
                    "plugstack.conf: unknown argument `{argument}`; the arguments are \
                     counterhal=PATH (the command that prints the counts), ports=LOW-HIGH \
                     (where srun takes the nodes' counts) and sum=no (no step's sum)"
                )),
            }
        }
        (settings, wrong)
    }
}

/// `slurm_spank_init`: reads plugstack.conf's `arguments` and registers `--counters[=EVENTS]`,
/// `--counters-field-separator=SEP` and `--counters-json` in every context.
fn init(spank: Handle, arguments: &[String]) -> c_int {
    with_plugin(|plugin| {
        let (settings, wrong) = Settings::read(arguments);
        plugin.settings = settings;
        for why in wrong {
            report::say(&why);
        }
        let options: [(&str, Option<&str>, &str, sys::OptionCallback); 3] = [
            (
                "counters",
                Some("EVENTS"),
                "Count each task from its exec (counterhal; default: perf stat's events) and \
                 print the counts at its end on the job's standard error",
                sys::counters_option,
            ),
            (
                "counters-field-separator",
                Some("SEP"),
                "With --counters: print the counts as counterhal stat -x SEP does",
                sys::separator_option,
            ),
            (
                "counters-json",
                None,
                "With --counters: print the counts as counterhal stat -j does",
                sys::json_option,
            ),
        ];
        for (name, arginfo, usage, callback) in options {
            let rc = sys::register_option(spank, name, arginfo, usage, callback);
            if rc != sys::SUCCESS && sys::context() != Context::Other {
                report::say(&format!("could not register --{name} (SPANK error {rc})"));
            }
        }
    })
}

/// `--counters[=EVENTS]`, in srun, sbatch, salloc and slurmstepd.
fn counters_given(events: Option<String>) -> c_int {
    with_plugin(|plugin| plugin.request = Some(Request::new(events.as_deref())))
}

/// `--counters-field-separator=SEP`.
fn separator_given(separator: Option<String>) -> c_int {
    with_plugin(|plugin| plugin.output = Output::Separated(separator.unwrap_or_default()))
}

/// `--counters-json`.
fn json_given() -> c_int {
    with_plugin(|plugin| plugin.output = Output::Json)
}

/// `slurm_spank_init_post_opt`: in srun with `--counters`, the port the nodes send their
/// counts to opened, and named in the step's environment.
fn init_post_opt() -> c_int {
    with_plugin(|plugin| {
        if plugin.request.is_none() || !plugin.settings.sum || sys::context() != Context::Local {
            return;
        }
        let ports = plugin.settings.ports;
        let started = gather::Listening::start(ports).and_then(|(listening, value)| {
            sys::setenv_here(gather::VARIABLE, &value)?;
            Ok(listening)
        });
        match started {
            Ok(listening) => plugin.listening = Some(listening),
            Err(why) => report::say(&format!(
                "{why}; each node prints its own counts, and none prints their sum"
            )),
        }
    })
}

/// `slurm_spank_local_user_init`, in srun: the step's job, number, nodes and command line.
fn local_user_init(spank: Handle) -> c_int {
    with_plugin(|plugin| {
        if plugin.listening.is_some() {
            plugin.info = Some(gather::StepInfo {
                job: sys::number(spank, Item::JobId).unwrap_or(0),
                step: sys::number(spank, Item::JobStepId).unwrap_or(0),
                nodes: sys::number(spank, Item::JobNodes),
                command_line: sys::argv(spank),
            });
        }
    })
}

/// `slurm_spank_task_post_fork`, in slurmstepd as root: the task (held before its exec)
/// placed in its v1 perf_event cgroup where one is mounted, and counted from its exec where
/// `--counters` was given.
fn task_post_fork(spank: Handle) -> c_int {
    with_plugin(|plugin| {
        let Some(task) = step::Task::of(spank) else {
            return;
        };
        let step = plugin
            .step
            .get_or_insert_with(|| Step::new(spank, plugin.request.clone()));
        step.place(&task);
        step.count(&task);
    })
}

/// `slurm_spank_task_exit`, in slurmstepd: the task's counts read, and where it was the
/// node's last, the node's counts printed.
fn task_exit(spank: Handle) -> c_int {
    with_plugin(|plugin| {
        let (Some(step), Some(task)) = (plugin.step.as_mut(), sys::number(spank, Item::TaskId))
        else {
            return;
        };
        if step.task_ended(task) {
            step.report(&plugin.settings.counterhal, &plugin.output);
        }
    })
}

/// `slurm_spank_exit`: in slurmstepd, the v1 cgroups the plugin made removed; in srun, the
/// nodes' counts taken and their sum printed on srun's standard error.
fn exit() -> c_int {
    with_plugin(|plugin| {
        if let Some(step) = plugin.step.take() {
            step.remove_cgroups();
        }
        if let Some(listening) = plugin.listening.take() {
            // No step was made (its allocation or launch failed): no node will send.
            let info = plugin.info.take().unwrap_or(gather::StepInfo {
                nodes: Some(0),
                ..gather::StepInfo::default()
            });
            let reports = listening.finish(&info);
            let metrics = reports
                .first()
                .map(|r| r.metrics.clone())
                .unwrap_or_default();
            if let Some(summed) = gather::sum(&info, &reports)
                && let Err(why) = report::print(
                    &plugin.settings.counterhal,
                    &plugin.output,
                    &summed,
                    &metrics,
                )
            {
                report::say(&format!("the step's counts could not be printed: {why}"));
            }
        }
    })
}

/// The path its tests name the records' writer by (`crate::stat::recording`), as the command
/// names it.
#[cfg(test)]
mod stat {
    pub(crate) use crate::recording;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Done when: plugstack.conf's arguments set the command, the port range and the sum,
    /// and a wrong one is said, naming it and what is right, the others kept.
    #[test]
    fn plugstack_arguments_are_read_or_said() {
        let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let (read, wrong) = Settings::read(&words(&[
            "counterhal=/opt/bin/counterhal",
            "ports=60001-63000",
            "sum=no",
        ]));
        assert!(wrong.is_empty(), "{wrong:?}");
        assert_eq!(
            read,
            Settings {
                counterhal: "/opt/bin/counterhal".into(),
                ports: Some((60001, 63000)),
                sum: false,
            }
        );
        let (read, wrong) = Settings::read(&words(&["ports=9-1", "ports=0-5", "sum=maybe", "x"]));
        assert_eq!(wrong.len(), 4, "{wrong:?}");
        assert!(wrong[0].contains("ports=`9-1`") && wrong[0].contains("60001-63000"));
        assert!(wrong[3].contains("`x`") && wrong[3].contains("ports=LOW-HIGH"));
        assert_eq!(
            (read.counterhal.as_str(), read.ports, read.sum),
            (COUNTERHAL, None, true)
        );
    }
}
