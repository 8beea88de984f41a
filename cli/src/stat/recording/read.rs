//! A recording read back: a file (perf's or ours) or a pipe stream, each size checked against
//! the file and against bounds before anything is allocated.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};

use counterhal::Error;
use counterhal_events::perf;
use counterhal_hal::{HardwareEvent, Reading, SoftwareEvent};

use super::layout::*;
use super::records::StatRecord;
use super::{Attr, RecordedEvent, Recording};

/// A bad recording: what was wrong, in `source`.
fn bad(source: &str, what: impl std::fmt::Display) -> Error {
    Error::invalid_input(format!("{source}: {what}")).with_hint(
        "give a file written by `perf stat record` or `counterhal stat record` (-i FILE, or \
         -i - for a pipe stream)",
    )
}

/// Little-endian fields read from a byte slice, each read checked against its end.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Fields { bytes, at: 0 }
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let taken = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(taken)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn rest(&self) -> &'a [u8] {
        &self.bytes[self.at.min(self.bytes.len())..]
    }
    /// A string of `n` bytes, ended by its first NUL.
    fn string(&mut self, n: usize) -> Option<String> {
        let bytes = self.take(n)?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }
}

/// `n` bytes of `input`, or why not (`what` names them).
fn read_exact(input: &mut dyn Read, n: u64, source: &str, what: &str) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    input
        .take(n)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(source, format_args!("cannot read {what}: {e}")))?;
    match bytes.len() as u64 == n {
        true => Ok(bytes),
        false => Err(bad(
            source,
            format_args!("truncated: {what} needs {n} bytes, {} remain", bytes.len()),
        )),
    }
}

/// The name perf gives an attr it has no name for: a generalized hardware or software
/// event's (`cycles`, `page-faults`), else its type and config.
/// perf 7.x's tool PMU (tools/perf/util/pmu.h, `PERF_PMU_TYPE_TOOL`) and its events' names
/// by config (util/tool_pmu.c, `tool_pmu__event_names`), which its recordings' attrs carry.
const TOOL_PMU: u32 = 0xFFFF_FFFE;
const TOOL_EVENTS: [&str; 15] = [
    "",
    "duration_time",
    "user_time",
    "system_time",
    "has_pmem",
    "num_cores",
    "num_cpus",
    "num_cpus_online",
    "num_dies",
    "num_packages",
    "slots",
    "smt_on",
    "system_tsc_freq",
    "core_wide",
    "target_cpu",
];

fn attr_name(attr: &Attr) -> String {
    let config = attr.config[0];
    let known = match attr.type_ {
        TOOL_PMU => usize::try_from(config)
            .ok()
            .and_then(|c| TOOL_EVENTS.get(c).copied())
            .filter(|name| !name.is_empty()),
        perf::TYPE_HARDWARE => HardwareEvent::ALL
            .iter()
            .find(|&&event| perf::hardware_config(event) == config)
            .map(|event| event.name()),
        perf::TYPE_SOFTWARE => SoftwareEvent::ALL
            .iter()
            .find(|&&event| perf::software_config(event) == config)
            .map(|event| event.name()),
        _ => None,
    };
    known.map_or_else(
        || format!("{}/config={config:#x}/", attr.type_),
        str::to_string,
    )
}

/// What is told each stat record as it is read ([`read`]): the record, and the events as they
/// stand then (their names updated by the records before it).
pub type EachRecord<'s> = &'s mut dyn FnMut(StatRecord<'_>, &[RecordedEvent]) -> Result<(), Error>;

/// What the records say, gathered as they are read.
#[derive(Default)]
struct Gathered<'s> {
    recording: Recording,
    /// Each id's event.
    ids: HashMap<u64, usize>,
    /// Each event's counts in the round being read, and in the last round that ended.
    round: Vec<Option<Reading>>,
    last: Option<Vec<Option<Reading>>>,
    /// Where told ([`read`]), what is told each stat record as it is read.
    each: Option<EachRecord<'s>>,
}

impl Gathered<'_> {
    /// Adds an event with `attr` bytes and `ids`.
    fn event(&mut self, source: &str, attr: &[u8], ids: &[u64]) -> Result<(), Error> {
        if self.recording.events.len() as u64 >= MOST_EVENTS
            || (self.ids.len() + ids.len()) as u64 > MOST_IDS
        {
            return Err(bad(source, "more events or ids than a recording holds"));
        }
        let mut fields = Fields::new(attr);
        let (type_, _, config) = (fields.u32(), fields.u32(), fields.u64());
        let _ = fields.take(56 - 16);
        let (config1, config2) = (fields.u64(), fields.u64());
        let index = self.recording.events.len();
        let attr = Attr {
            type_: type_.unwrap_or(0),
            config: [
                config.unwrap_or(0),
                config1.unwrap_or(0),
                config2.unwrap_or(0),
            ],
            flags: Fields::new(attr.get(40..).unwrap_or(&[]))
                .u64()
                .unwrap_or(0),
        };
        for &id in ids {
            self.ids.insert(id, index);
        }
        self.recording.events.push(RecordedEvent {
            name: attr_name(&attr),
            attr,
            unit: None,
            reading: (!ids.is_empty()).then(Reading::default),
        });
        self.round.push(None);
        Ok(())
    }

    /// The event an id names: as perf's `evlist__id2evsel` finds it, the first event for
    /// an id no event has (stat's attrs have no `sample_id_all`; perf 7.2 writes id 0 for an
    /// event it could not open).
    fn event_of(&self, source: &str, id: u64) -> Result<usize, Error> {
        match (self.ids.get(&id), self.recording.events.is_empty()) {
            (Some(&index), _) => Ok(index),
            (None, false) => Ok(0),
            (None, true) => Err(bad(source, "a record comes before any event's attr")),
        }
    }

    /// Takes one record.
    fn record(&mut self, source: &str, kind: u32, body: &[u8]) -> Result<(), Error> {
        let short = || bad(source, format_args!("a record of type {kind} is too short"));
        let mut fields = Fields::new(body);
        match kind {
            HEADER_ATTR => {
                let size = Fields::new(body.get(4..).unwrap_or(&[]))
                    .u32()
                    .ok_or_else(short)? as usize;
                if size < ATTR_SIZE_VER0 || size > body.len() {
                    return Err(bad(source, format_args!("an attr of {size} bytes")));
                }
                let ids: Vec<u64> = body[size..]
                    .chunks_exact(8)
                    .map(|id| u64::from_le_bytes(id.try_into().unwrap_or_default()))
                    .collect();
                self.event(source, &body[..size], &ids)?;
            }
            EVENT_UPDATE => {
                let (kind, id) = (
                    fields.u64().ok_or_else(short)?,
                    fields.u64().ok_or_else(short)?,
                );
                let index = self.event_of(source, id)?;
                let event = &mut self.recording.events[index];
                match kind {
                    UPDATE_NAME => event.name = fields.clone_string(),
                    UPDATE_UNIT => {
                        let scale = event.unit.take().map_or(1.0, |u| u.1);
                        event.unit = Some((fields.clone_string(), scale));
                    }
                    UPDATE_SCALE => {
                        let scale = f64::from_bits(fields.u64().ok_or_else(short)?);
                        let unit = event.unit.take().map(|u| u.0).unwrap_or_default();
                        event.unit = Some((unit, scale));
                    }
                    _ => {}
                }
            }
            STAT => {
                let id = fields.u64().ok_or_else(short)?;
                let _cpu_and_thread = fields.u64().ok_or_else(short)?;
                let (value, enabled, running) = (
                    fields.u64().ok_or_else(short)?,
                    fields.u64().ok_or_else(short)?,
                    fields.u64().ok_or_else(short)?,
                );
                let index = self.event_of(source, id)?;
                self.tell(STAT, index, body)?;
                let sum = self.round[index].unwrap_or_default();
                self.round[index] = Some(Reading::new(
                    sum.value.saturating_add(value),
                    sum.time_enabled.saturating_add(enabled),
                    sum.time_running.saturating_add(running),
                ));
            }
            THREAD_MAP | CPU_MAP | STAT_CONFIG => self.tell(kind, 0, body)?,
            STAT_ROUND => {
                self.tell(STAT_ROUND, 0, body)?;
                let (_, time) = (
                    fields.u64().ok_or_else(short)?,
                    fields.u64().ok_or_else(short)?,
                );
                self.recording.elapsed_ns = time;
                let ended = vec![None; self.round.len()];
                self.last = Some(std::mem::replace(&mut self.round, ended));
            }
            _ => {}
        }
        Ok(())
    }

    /// Tells the record to whoever asked to be told each ([`read`]).
    fn tell(&mut self, kind: u32, event: usize, body: &[u8]) -> Result<(), Error> {
        match &mut self.each {
            Some(each) => each(StatRecord { kind, event, body }, &self.recording.events),
            None => Ok(()),
        }
    }

    /// The recording, each counted event with the counts of the last round that ended (or
    /// of the records after it, where no round ended them).
    fn finish(mut self) -> Recording {
        let counts = match self.round.iter().any(Option::is_some) {
            true => self.round,
            false => self.last.unwrap_or(self.round),
        };
        for (event, counts) in self.recording.events.iter_mut().zip(counts) {
            // An event with ids and no count counted nothing; one without ids may still have
            // been given counts (perf's id 0).
            event.reading = counts.or(event.reading);
        }
        self.recording
    }
}

impl Fields<'_> {
    /// The rest as a string ended by its first NUL, of at most [`MOST_NAME`] bytes.
    fn clone_string(&self) -> String {
        let rest = self.rest();
        let rest = &rest[..rest.len().min(MOST_NAME)];
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        String::from_utf8_lossy(&rest[..end]).into_owned()
    }
}

/// Reads records from `input` until its end (`limit`: at most so many bytes).
fn read_records(
    input: &mut dyn Read,
    limit: Option<u64>,
    source: &str,
    gathered: &mut Gathered<'_>,
) -> Result<(), Error> {
    let mut left = limit;
    loop {
        if left == Some(0) {
            return Ok(());
        }
        let mut header = Vec::new();
        input
            .take(8)
            .read_to_end(&mut header)
            .map_err(|e| bad(source, format_args!("cannot read a record: {e}")))?;
        if header.is_empty() && left.is_none() {
            return Ok(());
        }
        let mut fields = Fields::new(&header);
        let (Some(kind), Some(size)) = (fields.u32(), fields.u32().map(|v| u64::from(v >> 16)))
        else {
            return Err(bad(source, "truncated: a record's header is cut short"));
        };
        if size < 8 || left.is_some_and(|left| size > left) {
            return Err(bad(
                source,
                format_args!("a record of type {kind} says it has {size} bytes"),
            ));
        }
        let body = read_exact(input, size - 8, source, "a record")?;
        gathered.record(source, kind, &body)?;
        left = left.map(|left| left - size);
    }
}

/// Reads the recording `input` names, as perf's `-i` names one: `-` for standard input (a
/// pipe stream), else a file; telling `each`, where given, every stat record as it is read
/// (maps, configuration, counts and rounds, in order), so that nothing read need be kept but
/// the events and their last counts.
///
/// # Errors
/// A file that cannot be opened; bad input: another magic, a truncated or corrupted header,
/// section or record; the first error `each` answers, which ends the reading.
pub fn read(input: &str, each: Option<EachRecord<'_>>) -> Result<Recording, Error> {
    match input {
        "-" => read_from(&mut std::io::stdin(), "standard input", each),
        path => {
            let mut file = std::fs::File::open(path)
                .map_err(|e| Error::invalid_input(format!("cannot open {path}: {e}")))?;
            read_from(&mut file, path, each)
        }
    }
}

/// Reads the recording `bytes` hold, a file's or a pipe stream's (`source` names it in
/// errors), as [`read`] reads one.
///
/// # Errors
/// Bad input, as [`read`]'s.
#[cfg_attr(not(test), allow(dead_code))] // the Slurm plugin's (slurm/src/gather.rs)
pub fn read_bytes(bytes: &[u8], source: &str) -> Result<Recording, Error> {
    read_from(&mut std::io::Cursor::new(bytes), source, None)
}

/// Reads a recording from `input` (`source` names it in errors): a pipe stream, or (where
/// `input` can seek) a file, telling `each` every stat record, where given.
fn read_from(
    input: &mut dyn Input,
    source: &str,
    each: Option<EachRecord<'_>>,
) -> Result<Recording, Error> {
    let mut gathered = Gathered {
        each,
        ..Gathered::default()
    };
    read_into(input, source, &mut gathered)?;
    Ok(gathered.finish())
}

fn read_into(
    input: &mut dyn Input,
    source: &str,
    gathered: &mut Gathered<'_>,
) -> Result<(), Error> {
    let head = read_exact(input, 16, source, "perf's header")?;
    if &head[..8] != MAGIC {
        return Err(bad(
            source,
            "not a perf.data file or stream (it does not start with PERFILE2)",
        ));
    }
    let size = u64::from_le_bytes(head[8..16].try_into().unwrap_or_default());
    match size {
        PIPE_HEADER_SIZE => read_records(input, None, source, gathered)?,
        FILE_HEADER_SIZE => read_file(input, source, gathered)?,
        _ => {
            return Err(bad(
                source,
                format_args!("a header of {size} bytes (perf's are 16 in a pipe, 104 in a file)"),
            ));
        }
    }
    Ok(())
}

/// What a recording is read from: a file, or standard input (which cannot seek).
trait Input: Read {
    /// Goes to `at`, where the input can; `None` where it cannot.
    fn seek_to(&mut self, at: u64) -> Option<std::io::Result<()>>;
    /// The input's length, where it has one.
    fn length(&self) -> Option<u64>;
}

impl Input for std::fs::File {
    fn seek_to(&mut self, at: u64) -> Option<std::io::Result<()>> {
        Some(self.seek(SeekFrom::Start(at)).map(drop))
    }
    fn length(&self) -> Option<u64> {
        self.metadata().ok().map(|m| m.len())
    }
}

impl Input for std::io::Cursor<&[u8]> {
    fn seek_to(&mut self, at: u64) -> Option<std::io::Result<()>> {
        Some(self.seek(SeekFrom::Start(at)).map(drop))
    }
    fn length(&self) -> Option<u64> {
        Some(self.get_ref().len() as u64)
    }
}

impl Input for std::io::Stdin {
    fn seek_to(&mut self, _: u64) -> Option<std::io::Result<()>> {
        None
    }
    fn length(&self) -> Option<u64> {
        None
    }
}

/// A section of a file: where and how long, checked to lie inside the file and to be at most
/// `most` bytes.
fn section(
    fields: &mut Fields<'_>,
    length: u64,
    most: u64,
    source: &str,
    what: &str,
) -> Result<(u64, u64), Error> {
    let (Some(at), Some(size)) = (fields.u64(), fields.u64()) else {
        return Err(bad(
            source,
            format_args!("truncated: the place of the {what} section is cut short"),
        ));
    };
    match at.checked_add(size) {
        Some(end) if end <= length && size <= most => Ok((at, size)),
        _ => Err(bad(
            source,
            format_args!(
                "the {what} section says {size} bytes at {at}: past the file's {length} bytes, \
                 or more than {most}"
            ),
        )),
    }
}

/// `size` bytes of the file at `at`.
fn read_at(
    input: &mut dyn Input,
    (at, size): (u64, u64),
    source: &str,
    what: &str,
) -> Result<Vec<u8>, Error> {
    match input.seek_to(at) {
        Some(Ok(())) => read_exact(input, size, source, what),
        Some(Err(e)) => Err(bad(source, format_args!("cannot read {what}: {e}"))),
        None => Err(bad(
            source,
            "a perf.data file, not a pipe stream, on standard input: give it with -i FILE",
        )),
    }
}

/// The rest of a file after its first 16 bytes: the header, the attrs and their ids, the
/// records, the command line and the events' names.
fn read_file(
    input: &mut dyn Input,
    source: &str,
    gathered: &mut Gathered<'_>,
) -> Result<(), Error> {
    let rest = read_exact(input, FILE_HEADER_SIZE - 16, source, "perf's file header")?;
    let length = input.length().unwrap_or(u64::MAX);
    let mut fields = Fields::new(&rest);
    let attr_entry = fields.u64().unwrap_or(0);
    if !(ATTR_SIZE_VER0 as u64 + 16..=MOST_ATTR + 16).contains(&attr_entry) {
        return Err(bad(
            source,
            format_args!("an attr size of {attr_entry} bytes"),
        ));
    }
    let attrs = section(
        &mut fields,
        length,
        MOST_EVENTS * attr_entry,
        source,
        "attrs",
    )?;
    let data = section(&mut fields, length, u64::MAX, source, "records")?;
    let _event_types = fields.take(16);
    let bitmap = fields.take(32).unwrap_or(&[0; 32]).to_vec();
    if attrs.1 % attr_entry != 0 {
        return Err(bad(
            source,
            "the attrs' section is no whole number of attrs",
        ));
    }
    let attrs = read_at(input, attrs, source, "the attrs")?;
    for entry in attrs.chunks_exact(attr_entry as usize) {
        let (attr, place) = entry.split_at(entry.len() - 16);
        let ids = section(
            &mut Fields::new(place),
            length,
            8 * MOST_IDS,
            source,
            "ids of an attr",
        )?;
        let ids: Vec<u64> = read_at(input, ids, source, "an attr's ids")?
            .chunks_exact(8)
            .map(|id| u64::from_le_bytes(id.try_into().unwrap_or_default()))
            .collect();
        gathered.event(source, attr, &ids)?;
    }
    // The features' sections follow the records, one per feature bit set, in bit order.
    let features: Vec<usize> = (0..256)
        .filter(|&bit| bitmap[bit / 8] >> (bit % 8) & 1 == 1)
        .collect();
    let table_at = data.0.saturating_add(data.1);
    let table = read_at(
        input,
        (table_at, 16 * features.len() as u64),
        source,
        "the features' table",
    )?;
    let mut table = Fields::new(&table);
    for feature in features {
        let place = section(&mut table, length, MOST_SECTION, source, "feature")?;
        match feature {
            FEATURE_CMDLINE => {
                let bytes = read_at(input, place, source, "the command line")?;
                gathered.recording.command_line = strings(&mut Fields::new(&bytes), source)?;
            }
            FEATURE_EVENT_DESC => {
                let bytes = read_at(input, place, source, "the events' names")?;
                event_names(&bytes, source, &mut gathered.recording.events)?;
            }
            _ => {}
        }
    }
    match input.seek_to(data.0) {
        Some(Ok(())) => read_records(input, Some(data.1), source, gathered),
        _ => Err(bad(source, "cannot go to the records")),
    }
}

/// perf's list of strings: a count, then each as a length and that many bytes.
fn strings(fields: &mut Fields<'_>, source: &str) -> Result<Vec<String>, Error> {
    let count = fields
        .u32()
        .ok_or_else(|| bad(source, "truncated command line"))?;
    (0..count)
        .map(|_| {
            let len = fields
                .u32()
                .ok_or_else(|| bad(source, "truncated command line"))?;
            fields
                .string(len as usize)
                .ok_or_else(|| bad(source, "truncated command line"))
        })
        .collect()
}

/// The names of `HEADER_EVENT_DESC`, given to the events in order.
fn event_names(bytes: &[u8], source: &str, events: &mut [RecordedEvent]) -> Result<(), Error> {
    let truncated = || bad(source, "truncated event descriptions");
    let mut fields = Fields::new(bytes);
    let (count, attr_size) = (
        fields.u32().ok_or_else(truncated)?,
        fields.u32().ok_or_else(truncated)?,
    );
    for index in 0..count as usize {
        fields.take(attr_size as usize).ok_or_else(truncated)?;
        let ids = fields.u32().ok_or_else(truncated)?;
        let len = fields.u32().ok_or_else(truncated)?;
        let name = fields.string(len as usize).ok_or_else(truncated)?;
        fields.take(8 * ids as usize).ok_or_else(truncated)?;
        if let Some(event) = events.get_mut(index) {
            event.name = name;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The writer's output read back, and every cut and every corrupted byte of it refused
    //! without a panic. perf's own reading of the writer's output is the integration tests'
    //! (cli/tests/stat_record.rs, perf 6.1 and 7.2).

    use super::*;
    use crate::stat::recording::write::{encode_file, encode_pipe};

    fn sample() -> Recording {
        let event = |name: &str, config: u64, unit, reading| RecordedEvent {
            name: name.to_string(),
            attr: Attr {
                type_: match name {
                    "cycles" => perf::TYPE_HARDWARE,
                    _ => perf::TYPE_SOFTWARE,
                },
                config: [config, 0, 0],
                flags: 1,
            },
            unit,
            reading,
        };
        Recording {
            command_line: vec!["/bin/counterhal".into(), "stat".into(), "record".into()],
            events: vec![
                event("page-faults", 2, None, Some(Reading::new(49, 7, 7))),
                event(
                    "task-clock",
                    1,
                    Some(("msec".to_string(), 1e-6)),
                    Some(Reading::new(536_411, 536_411, 500_000)),
                ),
                event("cycles", 0, None, None),
            ],
            elapsed_ns: 1_234_567,
        }
    }

    fn read_test(bytes: &[u8]) -> Result<Recording, Error> {
        read_bytes(bytes, "test")
    }

    #[test]
    fn a_file_and_a_pipe_read_back_as_written() {
        let written = sample();
        assert_eq!(read_test(&encode_file(&written)).unwrap(), written);
        let piped = read_test(&encode_pipe(&written)).unwrap();
        assert_eq!(piped.events, written.events);
        assert_eq!(piped.elapsed_ns, written.elapsed_ns);
        assert!(piped.command_line.is_empty());
    }

    #[test]
    fn an_event_without_a_name_is_named_as_perf_names_its_attr() {
        let attr = |type_, config| Attr {
            type_,
            config: [config, 0, 0],
            flags: 0,
        };
        assert_eq!(attr_name(&attr(perf::TYPE_HARDWARE, 0)), "cycles");
        assert_eq!(attr_name(&attr(perf::TYPE_HARDWARE, 9)), "ref-cycles");
        assert_eq!(attr_name(&attr(perf::TYPE_SOFTWARE, 1)), "task-clock");
        assert_eq!(attr_name(&attr(perf::TYPE_SOFTWARE, 11)), "cgroup-switches");
        assert_eq!(attr_name(&attr(9, 3)), "9/config=0x3/");
    }

    /// Every prefix of a file and of a pipe stream is refused or read (a prefix that ends
    /// between records of a stream is one), and none panics.
    #[test]
    fn every_cut_is_refused_without_a_panic() {
        let written = sample();
        let file = encode_file(&written);
        for end in 0..file.len() {
            assert!(read_test(&file[..end]).is_err(), "the file cut at {end}");
        }
        let pipe = encode_pipe(&written);
        for end in 0..pipe.len() {
            let _ = read_test(&pipe[..end]);
        }
        assert!(read_test(&pipe[..pipe.len() - 1]).is_err());
    }

    /// Every byte of both forms set to 0xff, then to 0x7f: read or refused, never a panic.
    #[test]
    fn every_corrupted_byte_is_read_or_refused_without_a_panic() {
        let written = sample();
        for bytes in [encode_file(&written), encode_pipe(&written)] {
            for at in 0..bytes.len() {
                for value in [0xff, 0x7f] {
                    let mut bad = bytes.clone();
                    bad[at] = value;
                    let _ = read_test(&bad);
                }
            }
        }
    }
}
