//! A run as perf's stat records and back: `stat record`'s recording of a run's summary (each
//! event with its perf attr, unit and summed count, [`recording`]), written where `-o` says
//! ([`Destination`]), which perf's `perf stat report` reads; and `stat report`'s reading of
//! such records (perf's or ours) as `stat` summarizes a run, printed as it prints one
//! ([`print()`]). The records themselves are [`recording`](crate::stat::recording)'s.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use counterhal::Error;
use counterhal::metrics::MetricDef;
use counterhal_events::perf;
use counterhal_hal::SoftwareEvent;

use super::Report;
use super::printing;
use super::summary::{EventSummary, PlaceSummary, Section, Summary};
use crate::error::CliError;
use crate::stat::arguments::StatArgs;
use crate::stat::plan::boxes::Scale;
use crate::stat::plan::planned::Planned;
use crate::stat::plan::tool::is_tool;
use crate::stat::recording::write::{encode_file, encode_pipe};
use crate::stat::recording::{Attr, DEFAULT_FILE, RecordedEvent, Recording};

/// `stat report`: `recording` printed as `stat` prints a run, in the layout the options
/// before `report` ask for (`-x`, `-j`, `--json`), headed by the command that recorded it,
/// with `metrics` (`-M`'s, before `report`) computed from its counts.
///
/// # Errors
/// The results cannot be written (exit 1).
pub fn print(
    args: StatArgs,
    recording: &Recording,
    metrics: &[&'static MetricDef],
) -> Result<ExitCode, CliError> {
    printing::write(None, &render(args, recording, metrics))?;
    Ok(ExitCode::SUCCESS)
}

/// `recording` as `stat` prints a run, in the layout `args` asks for (`-x`, `-j`, `--json`),
/// headed by the command that recorded it, with `metrics` computed from its counts: the text
/// [`print()`] writes, and `counterhal jobs` a departed cgroup's record.
pub fn render(mut args: StatArgs, recording: &Recording, metrics: &[&'static MetricDef]) -> String {
    let summary = summary_of(args.sysfs.system(), recording);
    args.command = match recording.command_line.is_empty() {
        true => vec![OsString::from("pipe")],
        false => recording.command_line.iter().map(OsString::from).collect(),
    };
    let report = Report::recording(&args, metrics);
    printing::render(&report, &summary)
}

/// A recording as `stat` summarizes a run: one event line each (a clock's and a tool event's
/// unit is the printer's own), the final round's time as the elapsed time.
fn summary_of(system: counterhal::system::System, recording: &Recording) -> Summary {
    let events: Vec<EventSummary> = recording
        .events
        .iter()
        .map(|event| {
            let mut summary = EventSummary {
                name: event.name.clone(),
                backend: "perf.data".to_string(),
                reading: event
                    .reading
                    .ok_or_else(|| "the recording has no count of it".to_string()),
                stddev_percent: None,
                cgroup: None,
                scale: None,
            };
            if let Some((unit, scale)) = &event.unit
                && !summary.is_clock()
                && !is_tool(&event.name)
                && (!unit.is_empty() || *scale != 1.0)
            {
                summary.scale = Some(Scale {
                    name: unit.clone(),
                    scale: *scale,
                });
            }
            summary
        })
        .collect();
    let elapsed_ns = recording.elapsed_ns;
    let section = Section {
        at_ns: None,
        length_ns: elapsed_ns,
        places: vec![PlaceSummary {
            place: None,
            events: events.clone(),
        }],
    };
    Summary::of_one(
        counterhal::metrics::Machine::new(system),
        events,
        section,
        "exited with status 0",
    )
}

/// What `stat record` writes to: a file, or standard output (`-o -`).
pub enum Destination {
    /// A file, created (or emptied) before the command runs.
    File(std::fs::File, PathBuf),
    /// Standard output as it was: the command's own standard output goes to standard error.
    Pipe(std::fs::File),
}

impl Destination {
    /// Opens `-o`'s destination (perf's `perf.data` by default); `-` is standard output, set
    /// aside so that the command's output goes to standard error (as perf does).
    ///
    /// # Errors
    /// A file that cannot be created, standard output that cannot be set aside (`system`
    /// says how it is open).
    pub fn open(
        output: Option<&Path>,
        system: &counterhal_system::System,
    ) -> Result<Destination, Error> {
        let path = output.unwrap_or(Path::new(DEFAULT_FILE));
        if path == Path::new("-") {
            return crate::sys::standard_output_aside(system)
                .map(Destination::Pipe)
                .map_err(|e| Error::invalid_input(format!("-o -: {e}")));
        }
        // Emptied only when the records are written: a command that cannot run leaves an
        // earlier file as it was.
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map(|file| Destination::File(file, path.to_path_buf()))
            .map_err(|e| {
                Error::invalid_input(format!("cannot create {}: {e}", path.display()))
                    .with_hint("give a file that can be written with -o FILE")
            })
    }

    /// Whether the records go to a pipe stream (`-o -`): then perf prints no table.
    pub fn is_pipe(&self) -> bool {
        matches!(self, Destination::Pipe(_))
    }

    /// Writes `recording`.
    ///
    /// # Errors
    /// A write that failed (a full disk, a closed pipe), naming where.
    pub fn write(self, recording: &Recording) -> Result<(), Error> {
        use std::io::Write;
        let (written, place) = match self {
            Destination::File(mut file, path) => (
                file.set_len(0)
                    .and_then(|()| file.write_all(&encode_file(recording))),
                path,
            ),
            Destination::Pipe(mut file) => {
                (file.write_all(&encode_pipe(recording)), PathBuf::from("-"))
            }
        };
        written.map_err(|e| {
            Error::new(
                counterhal::ErrorKind::Other,
                format!("cannot write the stat records to {}: {e}", place.display()),
            )
        })
    }
}

/// The recording of a run: each event's name, perf attr (from `planned`, where one event
/// stands for one perf attr), unit and summed count; `command_line` as it was given.
pub fn recording(
    command_line: &[OsString],
    planned: &[&Planned],
    events: &[EventSummary],
    elapsed_ns: u64,
) -> Recording {
    let events = events
        .iter()
        .enumerate()
        .map(|(i, event)| {
            // The planned event of this line: the same place when no boxes were merged,
            // else the one of the same name.
            let plan = match planned.len() == events.len() {
                true => planned.get(i).copied(),
                false => planned
                    .iter()
                    .copied()
                    .find(|p| p.ready().is_some_and(|r| r.name == event.name)),
            };
            let unit = match &event.scale {
                Some(scale) => Some((scale.name.clone(), scale.scale)),
                None if event.is_clock() => Some(("msec".to_string(), 1e-6)),
                None if is_tool(&event.name) => Some(("ns".to_string(), 1.0)),
                None => None,
            };
            RecordedEvent {
                name: event.name.clone(),
                // An event with no perf attr of its own (a tool event, a derived one): perf
                // 6.1's `duration_time`, the software event `dummy`.
                attr: plan
                    .and_then(Planned::ready)
                    .and_then(Attr::of)
                    .unwrap_or(Attr {
                        type_: perf::TYPE_SOFTWARE,
                        config: [perf::software_config(SoftwareEvent::Dummy), 0, 0],
                        flags: 0,
                    }),
                unit,
                reading: event.reading.as_ref().ok().copied(),
            }
        })
        .collect();
    Recording {
        command_line: command_line
            .iter()
            .map(|word| word.to_string_lossy().into_owned())
            .collect(),
        events,
        elapsed_ns,
    }
}
