//! `counterhal script`: a recording's stat records as perf's `perf script` prints them
//! (tools/perf/builtin-script.c, `process_stat_round_event` and `__process_stat`): at each
//! `PERF_RECORD_STAT_ROUND`, for each event in order, one line per thread and CPU of the
//! recording's thread and CPU maps, with the counts as util/stat.c's `process_counter_values`
//! leaves them: the difference from the previous round's, then scaled by enabled over
//! running time where the recording's configuration asks it (a count that never ran: 0).

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use counterhal::Error;

use super::perf_data::{CPU_MAP, RecordedEvent, STAT, STAT_CONFIG, STAT_ROUND, THREAD_MAP};
use super::perf_data_reader::{StatRecord, read_each};
use crate::error::CliError;

/// Arguments of `counterhal script`.
#[derive(Args, Debug, Default)]
pub struct ScriptArgs {
    /// The recording (`stat record`'s, or perf's): a file, or `-` for standard input;
    /// without it, standard input where it is a pipe, else `perf.data`.
    #[arg(short = 'i', long = "input", value_name = "FILE")]
    pub input: Option<String>,
}

/// perf's `PERF_STAT_CONFIG_TERM__SCALE`.
const SCALE_TERM: u64 = 2;
/// The most CPUs or threads a map may name (perf's CPU numbers are 16 bits).
const MOST_IN_MAP: u64 = 1 << 16;
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
    let input = args.input.unwrap_or_else(super::record::default_input);
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
    let read = match input.as_str() {
        "-" => read_each(&mut std::io::stdin(), "standard input", &mut each),
        path => std::fs::File::open(path)
            .map_err(|e| Error::invalid_input(format!("cannot open {path}: {e}")))
            .and_then(|mut file| read_each(&mut file, path, &mut each)),
    };
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
        let body = record.body;
        match record.kind {
            // perf keeps the first map of each kind ("Extra thread map event, ignoring").
            THREAD_MAP if self.threads.is_none() => self.threads = Some(thread_map(body)?),
            CPU_MAP if self.cpus.is_none() => self.cpus = Some(cpu_map(body)?),
            STAT_CONFIG => {
                let terms = u64_at(body, 0).ok_or("a short STAT_CONFIG")?;
                for term in 0..terms.min(64) {
                    let at = 8 + 16 * term as usize;
                    if u64_at(body, at) == Some(SCALE_TERM) {
                        self.scale = u64_at(body, at + 8).ok_or("a short STAT_CONFIG")? != 0;
                    }
                }
            }
            STAT => {
                let field = |at| u64_at(body, at).ok_or("a short STAT record");
                let (cpu_and_thread, value, enabled, running) =
                    (field(8)?, field(16)?, field(24)?, field(32)?);
                // The CPU's number (-1: any), the thread's index in the map.
                let (cpu, thread) = (cpu_and_thread as u32 as i32, (cpu_and_thread >> 32) as u32);
                self.counts
                    .insert((record.event, cpu, thread), [value, enabled, running]);
            }
            STAT_ROUND => {
                let time = u64_at(body, 8).ok_or("a short STAT_ROUND")?;
                self.round(time, events)?;
            }
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

fn u64_at(body: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(body.get(at..at + 8)?.try_into().ok()?))
}

fn u16_at(body: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(body.get(at..at + 2)?.try_into().ok()?))
}

/// A `PERF_RECORD_THREAD_MAP`'s pids (`nr`, then each pid and its 16-byte comm).
fn thread_map(body: &[u8]) -> Result<Vec<i32>, String> {
    let count = u64_at(body, 0).ok_or("a short THREAD_MAP")?;
    if count > MOST_IN_MAP || 8 + 24 * count as usize > body.len() {
        return Err(format!(
            "a THREAD_MAP of {count} threads in {} bytes",
            body.len()
        ));
    }
    Ok((0..count as usize)
        .map(|i| u64_at(body, 8 + 24 * i).unwrap_or_default() as i32)
        .collect())
}

/// A `PERF_RECORD_CPU_MAP`'s CPUs, in its three encodings (tools/lib/perf/include/perf/
/// event.h, `perf_record_cpu_map_data`, packed): a list of 16-bit CPUs (`(u16)-1` is -1), a
/// bitmap of 32- or 64-bit words, or a range with -1 first where `any_cpu` is set.
fn cpu_map(body: &[u8]) -> Result<Vec<i32>, String> {
    let short = || "a short CPU_MAP".to_string();
    let cpu = |raw: u16| if raw == u16::MAX { -1 } else { i32::from(raw) };
    match u16_at(body, 0).ok_or_else(short)? {
        0 => {
            let count = u16_at(body, 2).ok_or_else(short)? as usize;
            (0..count)
                .map(|i| u16_at(body, 4 + 2 * i).map(cpu).ok_or_else(short))
                .collect()
        }
        1 => {
            let words = u16_at(body, 2).ok_or_else(short)? as usize;
            let (size, start) = match u16_at(body, 4).ok_or_else(short)? {
                4 => (4, 6),
                8 => (8, 10),
                other => return Err(format!("a CPU_MAP mask of {other}-byte words")),
            };
            let mut cpus = Vec::new();
            for word in 0..words {
                let at = start + size * word;
                let bits = body.get(at..at + size).ok_or_else(short)?;
                for (byte, bits) in bits.iter().enumerate() {
                    for bit in (0..8).filter(|b| bits & (1 << b) != 0) {
                        cpus.push((8 * (size * word + byte) + bit) as i32);
                    }
                }
            }
            Ok(cpus)
        }
        2 => {
            let any = *body.get(2).ok_or_else(short)? != 0;
            let (first, last) = (
                u16_at(body, 4).ok_or_else(short)?,
                u16_at(body, 6).ok_or_else(short)?,
            );
            let any = any.then_some(-1);
            Ok(any
                .into_iter()
                .chain((first..=last).map(i32::from))
                .collect())
        }
        other => Err(format!("a CPU_MAP of type {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tools/lib/perf/include/perf/event.h's three encodings of CPUs 0 to 2.
    #[test]
    fn the_three_cpu_map_encodings_read_alike() {
        let list = [0, 0, 3, 0, 0, 0, 1, 0, 2, 0];
        let mask32 = [1, 0, 1, 0, 4, 0, 7, 0, 0, 0];
        let mask64 = [1, 0, 1, 0, 8, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0];
        let range = [2, 0, 0, 0, 0, 0, 2, 0];
        for body in [&list[..], &mask32, &mask64, &range] {
            assert_eq!(cpu_map(body), Ok(vec![0, 1, 2]), "{body:?}");
        }
        assert_eq!(cpu_map(&[0, 0, 1, 0, 255, 255]), Ok(vec![-1]));
        assert!(cpu_map(&[0, 0, 200, 0]).is_err());
        assert!(thread_map(&u64::MAX.to_le_bytes()).is_err());
    }
}
