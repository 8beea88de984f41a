//! `counterhal script`: a recording's stat records as perf's `perf script` prints them
//! (tools/perf/builtin-script.c, `process_stat_round_event` and `__process_stat`): at each
//! `PERF_RECORD_STAT_ROUND`, for each event in order, one line per thread and CPU of the
//! recording's thread and CPU maps, with the counts as util/stat.c's `process_counter_values`
//! leaves them: the difference from the previous round's, then scaled by enabled over
//! running time where the recording's configuration asks it (a count that never ran: 0).

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

use crate::args::Table;
use crate::args::spec::{Spec, text};
use counterhal::Error;

use crate::error::CliError;
use crate::stat::recording::RecordedEvent;
use crate::stat::recording::read::read;
use crate::stat::recording::records::{Kind, PlaceCounts, StatRecord};

/// Arguments of `counterhal script`.
#[derive(Debug, Default)]
pub struct ScriptArgs {
    /// `-i`: the recording, a file or `-`.
    pub input: Option<String>,
}

impl Table for ScriptArgs {
    const NAME: &'static str = "script";
    const USAGE: &'static str = "counterhal script [-i FILE]";
    const OPTIONS: &'static [Spec<ScriptArgs>] =
        &[text(Some('i'), "input", "FILE", |a: &mut ScriptArgs, v| {
            a.input = Some(v.to_string());
            Ok(())
        })
        .says(
            "The recording (`stat record`'s, or perf's): a file, or `-` for standard input; \
        without it, standard input where it is a pipe, else `perf.data`",
        )];
}

/// The most places (a thread of the thread map on a CPU of the CPU map) a round prints per
/// event. perf's stat record writes a map of threads (`--per-thread`) or of CPUs (`-a`), the
/// other a single `-1`, so a recording of a real machine has at most 65,536 places; a file
/// whose two maps multiply past this bound is refused, naming it, before its rounds print.
const MOST_PLACES: u64 = 1 << 20;

/// Reads the recording and prints its stat records as perf's `perf script` does, each round
/// as it is read: what is kept does not grow with what is printed.
///
/// # Errors
/// A recording that cannot be read or is not one (exit 2), or output that cannot be written
/// (exit 1; a reader that went away, `| head`, is no failure).
pub fn run(args: ScriptArgs) -> Result<ExitCode, CliError> {
    let input = args
        .input
        .unwrap_or_else(crate::stat::recording::default_input);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut script = Script::new(&mut out);
    let mut written = Ok(());
    let mut each =
        |record: StatRecord<'_>, events: &[RecordedEvent]| match script.take(record, events) {
            Ok(()) => Ok(()),
            Err(Stop::Bad(what)) => Err(bad(&input, what)),
            Err(Stop::Output(e)) => {
                written = Err(e);
                Err(Error::invalid_input("the output was closed"))
            }
        };
    let read = read(&input, Some(&mut each));
    let written = written.and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        Err(e) => {
            return Err(CliError::failed(Error::invalid_input(format!(
                "cannot write the standard output: {e}"
            ))));
        }
        Ok(()) => {}
    }
    read.map_err(CliError::input)?;
    Ok(ExitCode::SUCCESS)
}

fn bad(source: &str, what: String) -> Error {
    Error::invalid_input(format!("{source}: {what}"))
}

/// Why printing stopped: a bad record, or output that could not be written.
enum Stop {
    Bad(String),
    Output(std::io::Error),
}

impl From<&str> for Stop {
    fn from(what: &str) -> Self {
        Stop::Bad(what.to_string())
    }
}

impl From<String> for Stop {
    fn from(what: String) -> Self {
        Stop::Bad(what)
    }
}

/// Counts: value, time enabled, time running.
type Counts = [u64; 3];

/// `perf script` over a recording's stat records, taken one at a time: the maps and the
/// configuration as read, and the counts of the places a `PERF_RECORD_STAT` named (only
/// those: a place no record named prints zeros), each round printed to `out` as it ends.
struct Script<W> {
    out: W,
    cpus: Option<Vec<i32>>,
    threads: Option<Vec<i32>>,
    scale: bool,
    /// Each named place's counts as perf keeps them (after the last round, its differences),
    /// and its raw counts at the last round.
    counts: HashMap<(usize, i32, u32), Counts>,
    previous: HashMap<(usize, i32, u32), Counts>,
    heading: bool,
}

impl<W: Write> Script<W> {
    fn new(out: W) -> Self {
        Script {
            out,
            cpus: None,
            threads: None,
            scale: true,
            counts: HashMap::new(),
            previous: HashMap::new(),
            heading: false,
        }
    }

    /// Takes one record; a round's end prints the round.
    fn take(&mut self, record: StatRecord<'_>, events: &[RecordedEvent]) -> Result<(), Stop> {
        match record.kind() {
            // perf keeps the first map of each kind ("Extra thread map event, ignoring").
            Kind::ThreadMap if self.threads.is_none() => self.threads = Some(record.thread_map()?),
            Kind::CpuMap if self.cpus.is_none() => self.cpus = Some(record.cpu_map()?),
            Kind::Config => {
                if let Some(scale) = record.scaled()? {
                    self.scale = scale;
                }
            }
            Kind::Stat => {
                let PlaceCounts {
                    cpu,
                    thread,
                    counts,
                } = record.counts()?;
                self.counts.insert((record.event(), cpu, thread), counts);
            }
            Kind::Round => self.round(record.round_time()?, events)?,
            _ => {}
        }
        Ok(())
    }

    /// Prints a round: for each event, thread and CPU, the counts as util/stat.c's
    /// `process_counter_values` leaves them.
    fn round(&mut self, time: u64, events: &[RecordedEvent]) -> Result<(), Stop> {
        let cpus = self.cpus.as_deref().unwrap_or(&[-1]);
        let threads = self.threads.as_deref().unwrap_or(&[-1]);
        let places = cpus.len() as u64 * threads.len() as u64;
        if places > MOST_PLACES {
            return Err(Stop::Bad(format!(
                "its maps name {} threads and {} CPUs, {places} places a round; script prints \
                 at most {MOST_PLACES} (perf's stat record maps threads or CPUs, not both)",
                threads.len(),
                cpus.len()
            )));
        }
        if !self.heading {
            self.heading = true;
            writeln!(
                self.out,
                "{:>3} {:>8} {:>15} {:>15} {:>15} {:>15} EVENT",
                "CPU", "THREAD", "VAL", "ENA", "RUN", "TIME"
            )
            .map_err(Stop::Output)?;
        }
        for (event, recorded) in events.iter().enumerate() {
            let name = &recorded.name;
            for (thread, pid) in threads.iter().enumerate() {
                for number in cpus {
                    let place = (event, *number, thread as u32);
                    let [value, enabled, running] = match self.counts.get_mut(&place) {
                        // evsel__compute_deltas, then perf_counts_values__scale, in place.
                        Some(count) => {
                            let before = self.previous.insert(place, *count).unwrap_or_default();
                            for (now, then) in count.iter_mut().zip(before) {
                                *now = now.wrapping_sub(then);
                            }
                            let [value, enabled, running] = count;
                            if self.scale && *running == 0 {
                                *value = 0;
                            } else if self.scale && *running < *enabled {
                                *value = (*value as f64 * *enabled as f64 / *running as f64) as u64;
                            }
                            *count
                        }
                        None => [0; 3],
                    };
                    writeln!(
                        self.out,
                        "{number:>3} {pid:>8} {value:>15} {enabled:>15} {running:>15} {time:>15} {name}"
                    )
                    .map_err(Stop::Output)?;
                }
            }
        }
        Ok(())
    }
}
