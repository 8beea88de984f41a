//! `counterhal stat record` and `stat report`: the counts of a run written as perf's
//! `perf.data` stat records ([`super::perf_data`]), which perf's `perf stat report` reads, and
//! such records (perf's or ours, [`super::perf_data_reader`]) printed as `stat` prints a run.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use counterhal::{Encoding, Error};
use counterhal_events::perf;
use counterhal_hal::SoftwareEvent;

use super::arguments::StatArgs;
use super::perf_data::{Attr, RecordedEvent, Recording, encode_file, encode_pipe};
use super::perf_data_reader::read;
use super::results::{Planned, Scale};
use super::summary::{EventSummary, PlaceSummary, Section, Summary};
use crate::error::CliError;

/// The usage line of `stat record`.
pub const RECORD_USAGE: &str =
    "counterhal stat record [-o FILE | -o -] [STAT OPTIONS] [--] CMD [ARGS]";
/// The usage line of `stat report`.
pub const REPORT_USAGE: &str = "counterhal stat [-x SEP | -j | --json] report [-i FILE | -i -]";

/// perf's `stat` subcommands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subcommand {
    /// `stat record`: count, and write the counts as stat records.
    Record,
    /// `stat report`: print stat records.
    Report,
}

impl Subcommand {
    /// The subcommand `word` names, as perf recognises it in the command's first word: more
    /// than two letters that begin `record` or `report` (`rec`, `repo`). A program of such a
    /// name is run as `./report`.
    pub fn of(word: &OsStr) -> Option<Subcommand> {
        let word = word.to_str().filter(|w| w.len() > 2)?;
        if "record".starts_with(word) {
            Some(Subcommand::Record)
        } else if "report".starts_with(word) {
            Some(Subcommand::Report)
        } else {
            None
        }
    }
}

impl StatArgs {
    /// For `stat record`, the command line read again: `argv` without the word `record` (and
    /// a `--` just before it), as perf reads stat's options on both sides of it; `None` for
    /// any other line.
    pub fn record_line(&self, argv: &[OsString]) -> Option<Vec<OsString>> {
        let word = self.command.first()?;
        let at = argv.len().checked_sub(self.command.len())?;
        if Subcommand::of(word) != Some(Subcommand::Record)
            || self.record.is_some()
            || argv.get(at) != Some(word)
        {
            return None;
        }
        let from = match at > 0 && argv[at - 1] == "--" {
            true => at - 1,
            false => at,
        };
        Some(
            argv[..from]
                .iter()
                .chain(&argv[at + 1..])
                .cloned()
                .collect(),
        )
    }

    /// Makes these arguments `stat record`'s, `argv` its command line as given.
    pub fn set_record(&mut self, argv: Vec<OsString>) {
        self.record = Some(argv);
    }
}

/// Refuses what `stat record` does not keep: `-r`'s runs (perf refuses them too), `-I`'s
/// intervals and counts per CPU or thread (the records hold the run's counts summed).
///
/// # Errors
/// Bad input (exit 2) naming the option.
pub fn check(args: &StatArgs) -> Result<(), CliError> {
    let refused = if args.repeat > 1 {
        Some("-r: stat record records one run (perf refuses -r too)")
    } else if args.interval().is_some() {
        Some("-I: stat record keeps the run's counts, not its intervals")
    } else if args.per_place() {
        Some(
            "-A, --per-thread and --per-core: stat record keeps the counts summed over CPUs and threads",
        )
    } else {
        None
    };
    match refused {
        Some(message) => Err(CliError::usage(
            Error::invalid_input(message)
                .with_hint("record without it; docs/command.md says what stat record keeps"),
            RECORD_USAGE,
        )),
        None => Ok(()),
    }
}

/// `stat report`: reads the recording `-i` names after the word `report` (perf's
/// `perf.data` by default, standard input when it is a pipe) and prints it as `stat` prints
/// a run, in the layout the options before `report` ask for (`-x`, `-j`, `--json`).
///
/// # Errors
/// A bad option (exit 2), a recording that cannot be read or is not one (exit 2).
pub fn report(mut args: StatArgs) -> Result<ExitCode, CliError> {
    let input = input_of(&args.command[1..])?;
    let recording = match input.as_str() {
        "-" => read(&mut std::io::stdin(), "standard input"),
        path => std::fs::File::open(path)
            .map_err(|e| Error::invalid_input(format!("cannot open {path}: {e}")))
            .and_then(|mut file| read(&mut file, path)),
    }
    .map_err(CliError::input)?;
    let summary = summary_of(&recording);
    args.command = match recording.command_line.is_empty() {
        true => vec![OsString::from("pipe")],
        false => recording.command_line.iter().map(OsString::from).collect(),
    };
    let report = super::report::Report::recording(&args);
    let text = super::printing::render(&report, &summary);
    super::printing::write(None, &text)?;
    Ok(ExitCode::SUCCESS)
}

/// The input `stat report`'s words name: `-i FILE`, `--input FILE`, `--input=FILE`, `-iFILE`;
/// without one, standard input where it is a pipe, else `perf.data` (perf's rule).
fn input_of(words: &[OsString]) -> Result<String, CliError> {
    let refuse = |word: &str| {
        CliError::usage(
            Error::invalid_input(format!("stat report takes -i FILE alone, not `{word}`"))
                .with_hint("e.g. counterhal stat report -i perf.data; put -x, -j or --json before `report`"),
            REPORT_USAGE,
        )
    };
    let mut input = None;
    let mut words = words.iter().map(|w| w.to_string_lossy().into_owned());
    while let Some(word) = words.next() {
        let value = match word.as_str() {
            "-i" | "--input" => words.next(),
            _ => word
                .strip_prefix("--input=")
                .or_else(|| word.strip_prefix("-i"))
                .filter(|v| !v.is_empty())
                .map(str::to_string),
        };
        match value {
            Some(value) if input.is_none() => input = Some(value),
            _ => return Err(refuse(&word)),
        }
    }
    Ok(input.unwrap_or_else(default_input))
}

/// perf's input without `-i`: standard input where it is a pipe, else `perf.data`.
pub(super) fn default_input() -> String {
    {
        use std::os::fd::AsFd;
        use std::os::unix::fs::FileTypeExt;
        let piped = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map(std::fs::File::from)
            .and_then(|stdin| stdin.metadata())
            .is_ok_and(|m| m.file_type().is_fifo());
        match piped {
            true => "-".to_string(),
            false => "perf.data".to_string(),
        }
    }
}

/// A recording as `stat` summarizes a run: one event line each (a clock's and a tool event's
/// unit is the printer's own), the final round's time as the elapsed time.
fn summary_of(recording: &Recording) -> Summary {
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
                && !super::tool::is_tool(&event.name)
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
    Summary::of_one(events, section, "exited with status 0")
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
        let path = output.unwrap_or(Path::new("perf.data"));
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
                None if super::tool::is_tool(&event.name) => Some(("ns".to_string(), 1.0)),
                None => None,
            };
            RecordedEvent {
                name: event.name.clone(),
                // An event with no perf attr of its own (a tool event, a derived one): perf
                // 6.1's `duration_time`, the software event `dummy`.
                attr: plan.and_then(attr_of).unwrap_or(Attr {
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

/// The perf attr of a planned event that is one perf event.
fn attr_of(planned: &Planned) -> Option<Attr> {
    let [term] = planned.ready()?.terms.as_slice() else {
        return None;
    };
    let Encoding::Perf(attr) = &term.request.encoding else {
        return None;
    };
    let bits = attr.exclude_bits();
    // perf stat's: disabled, inherit, enable_on_exec, and the exclude bits (5-7, 19, 20).
    let mut flags = 1 | 1 << 1 | 1 << 12;
    for (set, bit) in [
        (bits.user, 4),
        (bits.kernel, 5),
        (bits.hv, 6),
        (bits.idle, 7),
        (bits.host, 19),
        (bits.guest, 20),
    ] {
        flags |= u64::from(set) << bit;
    }
    Some(Attr {
        type_: attr.type_,
        config: [attr.config, attr.config1, attr.config2],
        flags,
    })
}

#[cfg(test)]
mod tests {
    //! perf's rules (tools/perf/builtin-stat.c, `cmd_stat`): a subcommand is a first
    //! non-option word of more than two letters that begins `record` or `report`, and
    //! `record`'s options are stat's, read on both sides of the word. The command lines go
    //! through the command's own parser.

    use std::ffi::OsString;

    use super::Subcommand;
    use crate::Command;

    fn stat_of(words: &[&str]) -> Box<StatArgs> {
        let argv = words.iter().map(OsString::from).collect();
        match crate::parse(argv).expect("a line that parses").command {
            Command::Stat(stat) => stat,
            _ => panic!("not stat"),
        }
    }

    use super::StatArgs;

    #[test]
    fn subcommands_are_recognised_as_perf_recognises_them() {
        for (word, expected) in [
            ("record", Some(Subcommand::Record)),
            ("rec", Some(Subcommand::Record)),
            ("repo", Some(Subcommand::Report)),
            ("report", Some(Subcommand::Report)),
            ("re", None),
            ("records", None),
            ("./report", None),
        ] {
            assert_eq!(Subcommand::of(word.as_ref()), expected, "{word}");
        }
    }

    #[test]
    fn record_reads_stat_s_options_on_both_sides() {
        // The second line has a long flag before the word, the third `--` before the word.
        for line in [
            "counterhal stat -e page-faults record -o f -e task-clock true",
            "counterhal stat --no-merge -e page-faults record -o f -e task-clock -- true",
            "counterhal stat -e page-faults -- rec -o f -e task-clock true",
        ] {
            let words: Vec<&str> = line.split(' ').collect();
            let stat = stat_of(&words);
            assert_eq!(
                stat.event_names(),
                ["page-faults", "task-clock"],
                "{words:?}"
            );
            assert_eq!(stat.output.as_deref(), Some(std::path::Path::new("f")));
            assert_eq!(stat.command, ["true"], "{words:?}");
            let line: Vec<OsString> = words.iter().map(OsString::from).collect();
            assert_eq!(stat.record.as_deref(), Some(&line[..]), "{words:?}");
        }
        // A command named so, after `./` or as a later word, is run.
        let stat = stat_of(&["counterhal", "stat", "--", "./record", "record"]);
        assert_eq!(stat.record, None);
        let stat = stat_of(&["counterhal", "stat", "record", "--", "record"]);
        assert_eq!(stat.command, ["record"]);
        assert!(stat.record.is_some());
        // `report` is left as it is, for stat::run.
        let stat = stat_of(&["counterhal", "stat", "-x,", "report", "-i", "f"]);
        assert_eq!(stat.command, ["report", "-i", "f"]);
        assert_eq!(stat.record, None);
    }

    #[test]
    fn report_takes_its_input_in_perf_s_spellings_and_nothing_else() {
        let words = |line: &[&str]| line.iter().map(OsString::from).collect::<Vec<_>>();
        for line in [
            &["-i", "f"][..],
            &["--input", "f"],
            &["--input=f"],
            &["-if"],
        ] {
            assert_eq!(super::input_of(&words(line)).unwrap(), "f", "{line:?}");
        }
        for line in [&["-A"][..], &["-i"], &["-i", "f", "-i", "g"], &["f"]] {
            let error = super::input_of(&words(line)).unwrap_err();
            assert_eq!(error.exit_code, 2, "{line:?}");
        }
    }
}
