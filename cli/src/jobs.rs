//! `counterhal jobs`: the records `serve --records` keeps of departed cgroups (a Slurm
//! job's, a pod's, a container's whole counts), selected by job, pod or container, each
//! printed as `stat` prints a run (the table, `-x`, `-j`), or as stored (`--raw`). It reads
//! the journal's directory, a file of records (what `/records` answered) or standard input.
//! The records' one reader is the exporter's (`counterhal_serve::records`): without the
//! `serve` feature there is none, and `jobs` says so.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::args::Table;
use crate::args::spec::{Spec, flag, number, text};
use crate::error::CliError;

/// Arguments of `counterhal jobs`.
#[derive(Debug, Default)]
pub struct JobsArgs {
    /// The journal's directory, a file of records, or `-`.
    pub input: Option<PathBuf>,
    /// `--slurm-job`.
    pub slurm_job: Option<String>,
    /// `--slurm-step`.
    pub slurm_step: Option<String>,
    /// `--pod`.
    pub pod: Option<String>,
    /// `--container`.
    pub container: Option<String>,
    /// `--last`.
    pub last: Option<usize>,
    /// `-x`.
    pub separator: Option<String>,
    /// `-j`.
    pub json_lines: bool,
    /// `--raw`.
    pub raw: bool,
}

/// Sets `slot` to `value` (an empty one refused).
fn set(slot: &mut Option<String>, value: &str, what: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("an empty {what} selects nothing"));
    }
    *slot = Some(value.to_string());
    Ok(())
}

impl Table for JobsArgs {
    const NAME: &'static str = "jobs";
    const USAGE: &'static str = "counterhal jobs [--slurm-job ID [--slurm-step STEP]] \
[--pod UID|NAME] [--container ID|NAME] [--last N] [-x SEP | -j | --raw] [DIR|FILE|-]";
    const OPTIONS: &'static [Spec<JobsArgs>] = &[
        text(None, "slurm-job", "ID", |a: &mut JobsArgs, v| {
            set(&mut a.slurm_job, v, "job")
        })
        .says("The Slurm job's record (its ID or SLUID): its own cgroup's, the whole job"),
        text(None, "slurm-step", "STEP", |a: &mut JobsArgs, v| {
            set(&mut a.slurm_step, v, "step")
        })
        .says("With --slurm-job, that step's record instead (batch, extern, 0...)"),
        text(None, "pod", "UID|NAME", |a: &mut JobsArgs, v| {
            set(&mut a.pod, v, "pod")
        })
        .says("The pod's record, by its UID or (with serve's --kubelet-logs) its name"),
        text(None, "container", "ID|NAME", |a: &mut JobsArgs, v| {
            set(&mut a.container, v, "container")
        })
        .says(
            "The container's record, by its ID (12 of its digits or more) or (with \
            serve's --kubelet-logs) its name",
        ),
        text(None, "last", "N", |a: &mut JobsArgs, v| {
            a.last = Some(number(v, "a count of records: --last 1")?);
            Ok(())
        })
        .says("The last N records of those selected (all of them where not given)"),
        text(
            Some('x'),
            "field-separator",
            "SEP",
            |a: &mut JobsArgs, v| set(&mut a.separator, v, "separator"),
        )
        .says("Print each record as stat -x SEP prints a run"),
        flag(Some('j'), "json-output", |a: &mut JobsArgs| {
            a.json_lines = true
        })
        .says("Print each record as stat -j prints a run"),
        flag(None, "raw", |a: &mut JobsArgs| a.raw = true)
            .says("Print the records as stored: one JSON line each (docs/serve.md has the schema)"),
    ];
    const CONFLICTS: &'static [(&'static str, &'static [&'static str])] = &[
        ("field-separator", &["json-output", "raw"]),
        ("json-output", &["raw"]),
    ];
    const REQUIRES: &'static [(&'static str, &'static str, &'static str)] =
        &[("slurm-step", "slurm-job", "--slurm-job 1234 --slurm-step 0")];
    const WORDS: crate::args::Words = crate::args::Words::One(
        "INPUT",
        "Where the records are: serve's --records directory (its journal files), a file of \
        records (what serve's /records path answers) or - for standard input \
        (default: /var/lib/counterhal/records)",
    );

    fn word(&mut self, word: OsString) -> Result<(), String> {
        self.input = Some(PathBuf::from(word));
        Ok(())
    }
}

#[cfg(feature = "serve")]
mod printed {
    use std::ffi::OsString;
    use std::io::BufRead;
    use std::path::Path;
    use std::process::ExitCode;

    use counterhal::{Error, Reading};
    use counterhal_serve::records::{self, Found, Record, Selection};

    use super::JobsArgs;
    use crate::error::CliError;
    use crate::stat::StatArgs;
    use crate::stat::recording::{Attr, RecordedEvent, Recording};

    /// Reads the records `args` selects and prints each.
    ///
    /// # Errors
    /// The input cannot be read (exit 2), none is selected (exit 1), or the output cannot be
    /// written (exit 1).
    pub fn run(args: JobsArgs) -> Result<ExitCode, CliError> {
        let selection = Selection {
            slurm_job: args.slurm_job.clone(),
            slurm_step: args.slurm_step.clone(),
            pod: args.pod.clone(),
            container: args.container.clone(),
            last: args.last,
        };
        let input = args
            .input
            .clone()
            .unwrap_or_else(|| records::DEFAULT_DIR.into());
        let found =
            read(&input, &selection).map_err(|e| CliError::input(Error::invalid_input(e)))?;
        if found.records.is_empty() {
            let unread = match found.unread {
                0 => String::new(),
                n => format!(" ({n} lines were no record)"),
            };
            return Err(CliError::failed(Error::new(
                counterhal::ErrorKind::NotFound,
                format!("no record in {} is selected{unread}", input.display()),
            )));
        }
        let mut text = String::new();
        for record in &found.records {
            match args.raw {
                true => text.push_str(&record.line()),
                false => text.push_str(&printed(&args, record)),
            }
        }
        crate::output::emit(&text)?;
        Ok(ExitCode::SUCCESS)
    }

    /// The records of `input` (a directory, a file, or `-`) that `selection` wants.
    fn read(input: &Path, selection: &Selection) -> Result<Found, String> {
        if input.is_dir() {
            return records::read(input, selection);
        }
        let mut found = Found::default();
        let lines: Box<dyn BufRead> = match input == Path::new("-") {
            true => Box::new(std::io::stdin().lock()),
            false => {
                let file = std::fs::File::open(input)
                    .map_err(|e| format!("cannot read the records in {}: {e}", input.display()))?;
                Box::new(std::io::BufReader::new(file))
            }
        };
        found.take(lines, selection);
        found.keep_last(selection.last);
        Ok(found)
    }

    /// `record` as `stat` prints a run, in the layout `args` asks for.
    fn printed(args: &JobsArgs, record: &Record) -> String {
        let stat = StatArgs {
            separator: args.separator.clone(),
            json_lines: args.json_lines,
            command: vec![OsString::from(what(record))],
            ..StatArgs::default()
        };
        let recording = Recording {
            command_line: vec![what(record)],
            events: record
                .events
                .iter()
                .map(|event| RecordedEvent {
                    name: event.name.clone(),
                    attr: Attr::default(),
                    unit: (event.unit == "joules").then(|| ("Joules".to_string(), event.scale)),
                    reading: Some(Reading::new(
                        event.value,
                        event.enabled_ns,
                        event.running_ns,
                    )),
                })
                .collect(),
            elapsed_ns: (record.seconds() * 1e9) as u64,
        };
        crate::stat::report::recorded::render(stat, &recording, &[])
    }

    /// What a record counted, for the heading: the job (and step), the pod (and container)
    /// or the cgroup, and the host.
    fn what(record: &Record) -> String {
        let job = match (record.label("slurm_job_id"), record.label("slurm_sluid")) {
            ("", "") => "",
            ("", sluid) => sluid,
            (id, _) => id,
        };
        let mut what = if !job.is_empty() {
            match record.label("slurm_step") {
                "" => format!("slurm job {job}"),
                step => format!("slurm job {job} step {step}"),
            }
        } else if !record.label("pod_uid").is_empty() {
            let pod = match record.label("pod") {
                "" => record.label("pod_uid"),
                name => name,
            };
            match (record.label("container"), record.label("container_id")) {
                ("", "") => format!("pod {pod}"),
                ("", id) => format!("pod {pod} container {}", &id[..id.len().min(12)]),
                (name, _) => format!("pod {pod} container {name}"),
            }
        } else if !record.label("container_id").is_empty() {
            let id = record.label("container_id");
            format!("container {}", &id[..id.len().min(12)])
        } else {
            format!("cgroup {}", record.cgroup)
        };
        if !record.host.is_empty() {
            what.push_str(" on ");
            what.push_str(&record.host);
        }
        what
    }
}

/// Reads the records `args` selects and prints each as `stat` prints a run.
///
/// # Errors
/// The input cannot be read (exit 2), none is selected, or the output cannot be written
/// (exit 1); without the `serve` feature, always (exit 1).
pub fn run(args: JobsArgs) -> Result<ExitCode, CliError> {
    #[cfg(feature = "serve")]
    return printed::run(args);
    #[cfg(not(feature = "serve"))]
    {
        let _ = args;
        Err(CliError::failed(
            counterhal::Error::unsupported(
                "this build of counterhal reads no records: it was built without `serve`",
            )
            .with_hint("build the command with its default features (`--features serve`)"),
        ))
    }
}
