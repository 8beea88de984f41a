//! The stat records of a recording as the reader tells them, one by one,
//! each body decoded as perf's `perf script` decodes it (tools/lib/perf/include/perf/event.h):
//! the thread and CPU maps, the configuration's scale term, one event's counts on one CPU and
//! thread, a round's time. A body is decoded only when asked, so that a record nobody reads
//! (a second map, which perf ignores) is never refused.

use super::layout::{
    CONFIG_SCALE, CPU_MAP, MOST_IN_MAP, STAT, STAT_CONFIG, STAT_ROUND, THREAD_MAP,
};

/// One of perf stat's records as read: its type (`PERF_RECORD_THREAD_MAP` to
/// `PERF_RECORD_STAT_ROUND`), the event a `PERF_RECORD_STAT` counts (its index in the
/// recording), and its body after the header.
#[derive(Clone, Copy)]
pub struct StatRecord<'a> {
    /// The record's type.
    pub(super) kind: u32,
    /// A `PERF_RECORD_STAT`'s event; 0 for the others.
    pub(super) event: usize,
    /// The bytes after the record's header.
    pub(super) body: &'a [u8],
}

/// What a stat record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `PERF_RECORD_THREAD_MAP`: the threads counted ([`StatRecord::thread_map`]).
    ThreadMap,
    /// `PERF_RECORD_CPU_MAP`: the CPUs counted ([`StatRecord::cpu_map`]).
    CpuMap,
    /// `PERF_RECORD_STAT_CONFIG`: how the counts were taken ([`StatRecord::scaled`]).
    Config,
    /// `PERF_RECORD_STAT`: one event's counts in one place ([`StatRecord::counts`]).
    Stat,
    /// `PERF_RECORD_STAT_ROUND`: a round's end ([`StatRecord::round_time`]).
    Round,
    /// Another record (an attr, an event's update).
    Other,
}

/// One event's counts in one place, from a `PERF_RECORD_STAT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaceCounts {
    /// The CPU's number (-1: any).
    pub cpu: i32,
    /// The thread's index in the thread map.
    pub thread: u32,
    /// Value, time enabled, time running.
    pub counts: [u64; 3],
}

impl StatRecord<'_> {
    /// What the record holds.
    pub fn kind(&self) -> Kind {
        match self.kind {
            THREAD_MAP => Kind::ThreadMap,
            CPU_MAP => Kind::CpuMap,
            STAT_CONFIG => Kind::Config,
            STAT => Kind::Stat,
            STAT_ROUND => Kind::Round,
            _ => Kind::Other,
        }
    }

    /// The event a `PERF_RECORD_STAT` counts: its index in the recording.
    pub fn event(&self) -> usize {
        self.event
    }

    /// A `PERF_RECORD_THREAD_MAP`'s pids (`nr`, then each pid and its 16-byte comm).
    ///
    /// # Errors
    /// A map cut short, or of more threads than a map holds, said in words.
    pub fn thread_map(&self) -> Result<Vec<i32>, String> {
        thread_map(self.body)
    }

    /// A `PERF_RECORD_CPU_MAP`'s CPUs (-1: any), in any of its three encodings.
    ///
    /// # Errors
    /// A map cut short, or of an encoding perf does not write, said in words.
    pub fn cpu_map(&self) -> Result<Vec<i32>, String> {
        cpu_map(self.body)
    }

    /// A `PERF_RECORD_STAT_CONFIG`'s scale term: whether counts are scaled by enabled over
    /// running time (the last such term), `None` where it has none.
    ///
    /// # Errors
    /// A configuration cut short.
    pub fn scaled(&self) -> Result<Option<bool>, String> {
        let short = || "a short STAT_CONFIG".to_string();
        let terms = u64_at(self.body, 0).ok_or_else(short)?;
        let mut scaled = None;
        for term in 0..terms.min(64) {
            let at = 8 + 16 * term as usize;
            if u64_at(self.body, at) == Some(CONFIG_SCALE) {
                scaled = Some(u64_at(self.body, at + 8).ok_or_else(short)? != 0);
            }
        }
        Ok(scaled)
    }

    /// A `PERF_RECORD_STAT`'s place and counts.
    ///
    /// # Errors
    /// A record cut short.
    pub fn counts(&self) -> Result<PlaceCounts, String> {
        let field = |at| u64_at(self.body, at).ok_or("a short STAT record");
        let (cpu_and_thread, value, enabled, running) =
            (field(8)?, field(16)?, field(24)?, field(32)?);
        Ok(PlaceCounts {
            cpu: cpu_and_thread as u32 as i32,
            thread: (cpu_and_thread >> 32) as u32,
            counts: [value, enabled, running],
        })
    }

    /// A `PERF_RECORD_STAT_ROUND`'s time.
    ///
    /// # Errors
    /// A record cut short.
    pub fn round_time(&self) -> Result<u64, String> {
        Ok(u64_at(self.body, 8).ok_or("a short STAT_ROUND")?)
    }
}

/// The little-endian `u64` at `at`, where the body holds one.
fn u64_at(body: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(body.get(at..at + 8)?.try_into().ok()?))
}

/// The little-endian `u16` at `at`, where the body holds one.
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
