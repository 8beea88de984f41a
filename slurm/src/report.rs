//! The node's counts printed by `counterhal stat report`, from perf's stat records the plugin
//! writes for it (a `perf.data` file, as `perf stat record` writes one): one printer, the
//! command's, for `counterhal stat` and the plugin.

use std::io::{Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use counterhal::Reading;
use counterhal_events::perf;
use counterhal_hal::{ResolvedEvent, SoftwareEvent};

use crate::recording::{Attr, RecordedEvent, Recording, write::encode_file};

/// How the counts are printed: as `counterhal stat` prints them, `-x SEP` or `-j`.
#[derive(Clone, Debug)]
pub enum Output {
    /// perf stat's table.
    Text,
    /// `-x SEP`: one line of fields per event.
    Separated(String),
    /// `-j`: one JSON object per event.
    Json,
}

/// The recording of the node's counts: `title` as its command line, each event's name, perf
/// attr, unit and reading (None: not counted).
pub fn recording(
    title: String,
    events: &[ResolvedEvent],
    sums: &[Option<Reading>],
    elapsed_ns: u64,
) -> Recording {
    let events = events
        .iter()
        .zip(sums)
        .map(|(event, reading)| {
            let base = event.name.split(':').next().unwrap_or_default();
            let clock =
                base.eq_ignore_ascii_case("task-clock") || base.eq_ignore_ascii_case("cpu-clock");
            let unit = match &event.unit {
                Some(unit) => Some((unit.name.clone(), unit.scale)),
                None if clock => Some(("msec".to_string(), 1e-6)),
                None => None,
            };
            RecordedEvent {
                name: event.name.clone(),
                attr: Attr::of(event).unwrap_or(Attr {
                    type_: perf::TYPE_SOFTWARE,
                    config: [perf::software_config(SoftwareEvent::Dummy), 0, 0],
                    flags: 0,
                }),
                unit,
                reading: *reading,
            }
        })
        .collect();
    Recording {
        command_line: vec![title],
        events,
        elapsed_ns,
    }
}

/// Prints `recording` on standard error (the job's, in slurmstepd) with `counterhal stat
/// report`, in `output`'s form, with `metrics` (`stat -M`'s names) computed from its counts;
/// or why not. The recording is perf's file (which keeps the command line the header names,
/// where a pipe stream has none), handed to the command as its standard input, a file of its
/// own removed at once.
pub fn print(
    counterhal: &str,
    output: &Output,
    recording: &Recording,
    metrics: &[String],
) -> Result<(), String> {
    let stderr = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("standard error: {e}"))?;
    let input = recorded(recording).map_err(|e| format!("the recording: {e}"))?;
    let mut command = Command::new(counterhal);
    command.arg("stat");
    match output {
        Output::Text => {}
        Output::Separated(separator) => {
            command.args(["-x", separator]);
        }
        Output::Json => {
            command.arg("-j");
        }
    }
    if !metrics.is_empty() {
        command.args(["-M", &metrics.join(",")]);
    }
    let status = command
        .args(["report", "-i", "/dev/stdin"])
        .stdin(Stdio::from(input))
        .stdout(Stdio::from(stderr))
        .status()
        .map_err(|e| format!("{counterhal}: {e} (plugstack.conf's counterhal=PATH names it)"))?;
    match status.success() {
        true => Ok(()),
        false => Err(format!("{counterhal} stat report: {status}")),
    }
}

/// `recording` as perf's file, in a file of the temporary directory made for it alone
/// (never one that was there) and removed at once: the open file, at its start.
fn recorded(recording: &Recording) -> std::io::Result<std::fs::File> {
    static MADE: AtomicU32 = AtomicU32::new(0);
    let path = std::env::temp_dir().join(format!(
        "counterhal-slurm-{}-{}.data",
        std::process::id(),
        MADE.fetch_add(1, Ordering::Relaxed)
    ));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    file.write_all(&encode_file(recording))?;
    file.seek(SeekFrom::Start(0))?;
    Ok(file)
}

/// Says `message` on standard error, which in slurmstepd is the job's (task 0's, where
/// slurmstepd pointed its own) and in srun the user's terminal.
pub fn say(message: &str) {
    let _ = writeln!(std::io::stderr(), "counterhal: {message}");
}

/// A step's name as Slurm prints it (src/common/log.c, `log_build_step_id_str`): its number,
/// or `batch`, `extern`, `interactive`.
pub fn step_name(step: u32) -> String {
    match step {
        0xffff_fffb => "batch".to_string(),
        0xffff_fffc => "extern".to_string(),
        0xffff_fffa => "interactive".to_string(),
        n => n.to_string(),
    }
}

/// This node's name, short, as slurmd takes it (`gethostname`).
pub fn node_name(system: &counterhal_system::System) -> String {
    let name = system.hostname().unwrap_or_default();
    name.split('.').next().unwrap_or_default().to_string()
}
