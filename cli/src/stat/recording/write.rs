//! A recording written as perf stat writes it: a file (`stat record -o FILE`, perf.data by
//! default) or a pipe stream (`-o -`).

use super::layout::*;
use super::{Attr, Recording};

/// Bytes in perf's little-endian layout.
#[derive(Default)]
struct Bytes(Vec<u8>);

impl Bytes {
    fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// `text` with its NUL, padded with zeros to a multiple of `align` bytes.
    fn string(&mut self, text: &str, align: usize) -> &mut Self {
        let padded = (text.len() + 1).div_ceil(align) * align;
        self.0.extend_from_slice(text.as_bytes());
        self.0.resize(self.0.len() + padded - text.len(), 0);
        self
    }
    /// One record: its header (type, no misc bits, size) and `body`.
    fn record(&mut self, kind: u32, body: &Bytes) -> &mut Self {
        // Every record written is far below 64 KiB (a name is cut to fit below).
        let size = u16::try_from(8 + body.0.len()).unwrap_or(u16::MAX);
        self.u32(kind).u16(0).u16(size);
        self.0.extend_from_slice(&body.0);
        self
    }
}

/// The attr of `event` as perf's `struct perf_event_attr` ([`ATTR_SIZE`] bytes), with read
/// format `TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` and, in a file (`identified`),
/// `PERF_SAMPLE_IDENTIFIER`, as perf stat writes it (its pipe's attrs have no sample type,
/// which `perf script` needs).
fn attr_bytes(attr: &Attr, identified: bool) -> Bytes {
    let mut out = Bytes::default();
    out.u32(attr.type_)
        .u32(ATTR_SIZE as u32)
        .u64(attr.config[0])
        .u64(0)
        .u64(u64::from(identified) << 16)
        .u64(3)
        .u64(attr.flags);
    out.0.resize(56, 0);
    out.u64(attr.config[1]).u64(attr.config[2]);
    out.0.resize(ATTR_SIZE, 0);
    out
}

/// The id of event `index` (perf's are the kernel's; any distinct numbers do).
fn id_of(index: usize) -> u64 {
    index as u64 + 1
}

/// The records after the attrs: names, units and scales, the maps, the configuration, the
/// counts and the final round.
fn records(recording: &Recording, pipe: bool) -> Bytes {
    let mut out = Bytes::default();
    // Updates of the counted events alone: perf gives an id no event has to the first one.
    let counted = recording.events.iter().enumerate();
    for (i, event) in counted.filter(|(_, event)| event.reading.is_some()) {
        let id = id_of(i);
        if pipe {
            // In a file the names are in HEADER_EVENT_DESC. A name longer than a record
            // holds is cut (perf's are far shorter).
            let name: String = event.name.chars().take(4000).collect();
            let mut body = Bytes::default();
            body.u64(UPDATE_NAME).u64(id).string(&name, 8);
            out.record(EVENT_UPDATE, &body);
        }
        if let Some((unit, scale)) = &event.unit {
            let mut body = Bytes::default();
            body.u64(UPDATE_UNIT).u64(id).string(unit, 8);
            out.record(EVENT_UPDATE, &body);
            let mut body = Bytes::default();
            body.u64(UPDATE_SCALE).u64(id).u64(scale.to_bits());
            out.record(EVENT_UPDATE, &body);
        }
    }
    // One thread (-1) and one CPU (-1): the counts are summed over both.
    let mut body = Bytes::default();
    body.u64(1).u64(u64::MAX).string("", 16);
    out.record(THREAD_MAP, &body);
    let mut body = Bytes::default();
    body.u16(0).u16(1).u16(u16::MAX).u16(0);
    out.record(CPU_MAP, &body);
    // Aggregation global (1), no interval, counts scaled.
    let mut body = Bytes::default();
    body.u64(3).u64(0).u64(1).u64(1).u64(0).u64(2).u64(1);
    out.record(STAT_CONFIG, &body);
    for (i, event) in recording.events.iter().enumerate() {
        if let Some(reading) = &event.reading {
            let mut body = Bytes::default();
            body.u64(id_of(i)).u32(u32::MAX).u32(0);
            body.u64(reading.value)
                .u64(reading.time_enabled)
                .u64(reading.time_running);
            out.record(STAT, &body);
        }
    }
    let mut body = Bytes::default();
    body.u64(ROUND_FINAL).u64(recording.elapsed_ns);
    out.record(STAT_ROUND, &body);
    out
}

/// A pipe stream: the pipe header, each event's `PERF_RECORD_HEADER_ATTR`, the records.
pub fn encode_pipe(recording: &Recording) -> Vec<u8> {
    let mut out = Bytes::default();
    out.0.extend_from_slice(MAGIC);
    out.u64(PIPE_HEADER_SIZE);
    for (i, event) in recording.events.iter().enumerate() {
        let mut body = attr_bytes(&event.attr, false);
        if event.reading.is_some() {
            body.u64(id_of(i));
        }
        out.record(HEADER_ATTR, &body);
    }
    out.0.extend_from_slice(&records(recording, true).0);
    out.0
}

/// A file: the header, the attrs (each with its ids' section), the ids, the records, and
/// the features `HEADER_NRCPUS`, `HEADER_CMDLINE`, `HEADER_EVENT_DESC` and `HEADER_STAT`.
pub fn encode_file(recording: &Recording) -> Vec<u8> {
    let events = &recording.events;
    let attrs_at = FILE_HEADER_SIZE;
    let attr_entry = ATTR_SIZE as u64 + 16;
    let ids_at = attrs_at + attr_entry * events.len() as u64;
    let mut attrs = Bytes::default();
    let mut ids = Bytes::default();
    for (i, event) in events.iter().enumerate() {
        attrs.0.extend_from_slice(&attr_bytes(&event.attr, true).0);
        let count = u64::from(event.reading.is_some());
        attrs.u64(ids_at + ids.0.len() as u64).u64(8 * count);
        if count == 1 {
            ids.u64(id_of(i));
        }
    }
    let data = records(recording, false);
    let data_at = ids_at + ids.0.len() as u64;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let mut nrcpus = Bytes::default();
    nrcpus.u32(cpus).u32(cpus);
    let mut cmdline = Bytes::default();
    cmdline.u32(recording.command_line.len() as u32);
    for word in &recording.command_line {
        let padded = (word.len() + 1).div_ceil(64) * 64;
        cmdline.u32(padded as u32).string(word, 64);
    }
    // Each event's attr, ids and name, as perf's write_event_desc writes them.
    let mut descriptions = Bytes::default();
    descriptions.u32(events.len() as u32).u32(ATTR_SIZE as u32);
    for (i, event) in events.iter().enumerate() {
        descriptions
            .0
            .extend_from_slice(&attr_bytes(&event.attr, true).0);
        descriptions.u32(u32::from(event.reading.is_some()));
        let padded = (event.name.len() + 1).div_ceil(64) * 64;
        descriptions.u32(padded as u32).string(&event.name, 64);
        if event.reading.is_some() {
            descriptions.u64(id_of(i));
        }
    }
    let features = [
        (FEATURE_NRCPUS, nrcpus),
        (FEATURE_CMDLINE, cmdline),
        (FEATURE_EVENT_DESC, descriptions),
        (FEATURE_STAT, Bytes::default()),
    ];
    let mut out = Bytes::default();
    out.0.extend_from_slice(MAGIC);
    out.u64(FILE_HEADER_SIZE)
        .u64(attr_entry)
        .u64(attrs_at)
        .u64(attrs.0.len() as u64)
        .u64(data_at)
        .u64(data.0.len() as u64)
        .u64(0)
        .u64(0);
    let mut bitmap = [0u8; 32];
    for (bit, _) in &features {
        bitmap[bit / 8] |= 1 << (bit % 8);
    }
    out.0.extend_from_slice(&bitmap);
    out.0.extend_from_slice(&attrs.0);
    out.0.extend_from_slice(&ids.0);
    out.0.extend_from_slice(&data.0);
    // The features' sections, in bit order, then their contents.
    let mut at = data_at + data.0.len() as u64 + 16 * features.len() as u64;
    for (_, content) in &features {
        out.u64(at).u64(content.0.len() as u64);
        at += content.0.len() as u64;
    }
    for (_, content) in &features {
        out.0.extend_from_slice(&content.0);
    }
    out.0
}
