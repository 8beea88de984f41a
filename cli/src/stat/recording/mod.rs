//! perf's `perf.data` stat records, read and written: what `perf stat record` writes and
//! `perf stat report` and `perf script` read (tools/perf/util/header.c,
//! util/synthetic-events.c, builtin-stat.c, tools/lib/perf/include/perf/event.h), in perf's
//! little-endian layout. It knows perf's format alone, nothing of how `stat` counts or prints,
//! as perf-event2 keeps the kernel's ABI apart from its counters.
//!
//! A file is perf's file header (`PERFILE2`, 104 bytes), the events' attrs with their ids,
//! the records, then the feature sections; a pipe stream (`-o -`) is the 16-byte pipe header
//! and the records alone, each event's attr in a `PERF_RECORD_HEADER_ATTR`. The records are
//! those perf stat writes: each counted event's unit and scale (and in a pipe its name,
//! `PERF_RECORD_EVENT_UPDATE`), the thread and CPU maps, the configuration, one
//! `PERF_RECORD_STAT` per counted event (its count summed over CPUs and threads) and the
//! final `PERF_RECORD_STAT_ROUND` with the elapsed time.
//!
//! Its rooms: [`layout`] (perf's numbers), the model here ([`Recording`]), [`write`](mod@write) (a
//! recording as a file or a pipe stream), [`read`] (either read back, each size checked
//! before anything is allocated) and [`records`] (the body of each stat record, decoded as
//! `perf script` reads it).

use counterhal_hal::Reading;

pub mod layout;
pub mod read;
pub mod records;
pub mod write;

/// A run as stat records hold it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recording {
    /// The command line that recorded it (perf's `HEADER_CMDLINE`, its program first); empty
    /// in a pipe stream.
    pub command_line: Vec<String>,
    /// The events, in order.
    pub events: Vec<RecordedEvent>,
    /// The final round's time: the elapsed nanoseconds.
    pub elapsed_ns: u64,
}

/// One event of a recording.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedEvent {
    /// Its name.
    pub name: String,
    /// Its perf attr's type, config, config1 and config2, and its exclude bits.
    pub attr: Attr,
    /// Its unit and scale (`msec` and 1e-6 for a clock), where it has one.
    pub unit: Option<(String, f64)>,
    /// Its count summed over CPUs and threads; `None`: not counted (perf: not supported).
    pub reading: Option<Reading>,
}

/// The fields of a `perf_event_attr` a recording keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attr {
    /// `type`.
    pub type_: u32,
    /// `config`, `config1`, `config2`.
    pub config: [u64; 3],
    /// The flag bits (`disabled`, `inherit`, `exclude_*`...).
    pub flags: u64,
}

impl Attr {
    /// The attr `perf stat` gives `event` where it is one perf event: its type and configs,
    /// and perf stat's flags (disabled, inherit, enable_on_exec) with its exclude bits
    /// (4-7, 19, 20); `None` for another encoding or several terms.
    pub fn of(event: &counterhal_hal::ResolvedEvent) -> Option<Attr> {
        let [term] = event.terms.as_slice() else {
            return None;
        };
        let counterhal_hal::Encoding::Perf(attr) = &term.request.encoding else {
            return None;
        };
        let bits = attr.exclude_bits();
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
}

/// Where a recording is read from without `-i`, as perf's tools look for one: standard input
/// (`-`) where it is a pipe, else `perf.data`.
pub fn default_input() -> String {
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
        false => DEFAULT_FILE.to_string(),
    }
}

/// The file perf's tools write and read by default.
pub const DEFAULT_FILE: &str = "perf.data";
