//! `counterhal script`: a recording's stat records as perf's `perf script` prints them
//! (tools/perf/builtin-script.c, `process_stat_round_event` and `__process_stat`): at each
//! `PERF_RECORD_STAT_ROUND`, for each event in order, one line per thread and CPU of the
//! recording's thread and CPU maps, with the counts as util/stat.c's `process_counter_values`
//! leaves them: the difference from the previous round's, then scaled by enabled over
//! running time where the recording's configuration asks it (a count that never ran: 0).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Args;
use counterhal::Error;

use super::perf_data::{CPU_MAP, STAT, STAT_CONFIG, STAT_ROUND, THREAD_MAP};
use super::perf_data_reader::{StatRecord, read_with_records};
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

/// Reads the recording and prints its stat records as perf's `perf script` does.
///
/// # Errors
/// A recording that cannot be read or is not one (exit 2).
pub fn run(args: ScriptArgs) -> Result<ExitCode, CliError> {
    let input = args.input.unwrap_or_else(super::record::default_input);
    let (recording, records) = match input.as_str() {
        "-" => read_with_records(&mut std::io::stdin(), "standard input"),
        path => std::fs::File::open(path)
            .map_err(|e| Error::invalid_input(format!("cannot open {path}: {e}")))
            .and_then(|mut file| read_with_records(&mut file, path)),
    }
    .map_err(CliError::input)?;
    let names: Vec<&str> = recording.events.iter().map(|e| e.name.as_str()).collect();
    let text = lines(&names, &records).map_err(|e| CliError::input(bad(&input, e)))?;
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    // A reader that went away (`| head`) is no failure.
    _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    Ok(ExitCode::SUCCESS)
}

fn bad(source: &str, what: String) -> Error {
    Error::invalid_input(format!("{source}: {what}"))
}

/// Counts: value, time enabled, time running.
type Counts = [u64; 3];

/// The lines perf's `perf script` prints for `records` of the events `names`.
fn lines(names: &[&str], records: &[StatRecord]) -> Result<String, String> {
    let (mut cpus, mut threads) = (None, None);
    let mut scale = true;
    let mut counts: HashMap<(usize, i32, u32), Counts> = HashMap::new();
    let mut previous: HashMap<(usize, i32, u32), Counts> = HashMap::new();
    let mut out = String::new();
    for record in records {
        let body = &record.body;
        match record.kind {
            // perf keeps the first map of each kind ("Extra thread map event, ignoring").
            THREAD_MAP if threads.is_none() => threads = Some(thread_map(body)?),
            CPU_MAP if cpus.is_none() => cpus = Some(cpu_map(body)?),
            STAT_CONFIG => {
                let terms = u64_at(body, 0).ok_or("a short STAT_CONFIG")?;
                for term in 0..terms.min(64) {
                    let at = 8 + 16 * term as usize;
                    if u64_at(body, at) == Some(SCALE_TERM) {
                        scale = u64_at(body, at + 8).ok_or("a short STAT_CONFIG")? != 0;
                    }
                }
            }
            STAT => {
                let field = |at| u64_at(body, at).ok_or("a short STAT record");
                let (cpu_and_thread, value, enabled, running) =
                    (field(8)?, field(16)?, field(24)?, field(32)?);
                // The CPU's number (-1: any), the thread's index in the map.
                let (cpu, thread) = (cpu_and_thread as u32 as i32, (cpu_and_thread >> 32) as u32);
                counts.insert((record.event, cpu, thread), [value, enabled, running]);
            }
            STAT_ROUND => {
                let time = u64_at(body, 8).ok_or("a short STAT_ROUND")?;
                let cpus = cpus.as_deref().unwrap_or(&[-1]);
                let threads = threads.as_deref().unwrap_or(&[-1]);
                for (event, name) in names.iter().enumerate() {
                    for (thread, pid) in threads.iter().enumerate() {
                        for number in cpus {
                            let place = (event, *number, thread as u32);
                            let count = counts.entry(place).or_default();
                            // evsel__compute_deltas, then perf_counts_values__scale, in place.
                            let before = previous.insert(place, *count).unwrap_or_default();
                            for (now, then) in count.iter_mut().zip(before) {
                                *now = now.wrapping_sub(then);
                            }
                            let [value, enabled, running] = count;
                            if scale && *running == 0 {
                                *value = 0;
                            } else if scale && *running < *enabled {
                                *value = (*value as f64 * *enabled as f64 / *running as f64) as u64;
                            }
                            if out.is_empty() {
                                _ = writeln!(
                                    out,
                                    "{:>3} {:>8} {:>15} {:>15} {:>15} {:>15} EVENT",
                                    "CPU", "THREAD", "VAL", "ENA", "RUN", "TIME"
                                );
                            }
                            _ = writeln!(
                                out,
                                "{number:>3} {pid:>8} {value:>15} {enabled:>15} {running:>15} {time:>15} {name}"
                            );
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
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
