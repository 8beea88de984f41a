//! The journal the records are appended to: `DIR/journal`, one JSON line a record, rotated
//! as logrotate rotates a log (`journal` renamed `journal.1`, `journal.1` to `journal.2`...,
//! the oldest past `--records-files` dropped) before a line would take it past
//! `--records-size`; so it holds at most `size × files` bytes (and a line). A thread of its
//! own writes it: the exporter hands it a record in a bounded queue and goes on, so that a
//! slow or full disk never holds a scrape. Each batch is flushed to the disk
//! (`fdatasync`) before the next is taken, and the directory after a rotation, so a record
//! written is one that a crash keeps. A write that fails (a full disk, a directory removed)
//! is counted (`counterhal_records_errors_total`), said once in the log until writes succeed
//! again, and the line's part written is cut off, so that the next line starts a line.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};

use counterhal::Reading;
use counterhal::metrics::{Machine, MetricDef, NamedReading};

use super::{JOURNAL, MetricRecord, Record};
use crate::text_format::{Family, Format, Kind, Number};

/// `--records-size` where not given: the most bytes a journal file holds.
pub const FILE_BYTES: u64 = 8 << 20;

/// `--records-files` where not given: the journal's files kept, the current one included.
pub const FILES: u32 = 4;

/// The records waiting for the writer: past it, a record is dropped and counted (a disk
/// that has not taken one in thousands of departures).
const QUEUE: usize = 4096;

/// How big the journal may grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// The most bytes a file holds (a record longer than that is a file of its own).
    pub file_bytes: u64,
    /// The files kept, the current one included (1: the journal alone, emptied when full).
    pub files: u32,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            file_bytes: FILE_BYTES,
            files: FILES,
        }
    }
}

/// What the journal's writer has done, counted for the scrape.
#[derive(Debug, Default)]
struct Counts {
    written: AtomicU64,
    errors: AtomicU64,
}

/// The journal: where departed cgroups' records are sent, and its writer's counts.
pub struct Journal {
    queue: SyncSender<Record>,
    counts: Arc<Counts>,
    /// Its directory.
    pub dir: PathBuf,
    /// The host's name, each record's `host`.
    pub host: String,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("dir", &self.dir).finish()
    }
}

impl Journal {
    /// A journal in `dir` (made where it is not there), bounded by `bounds`, whose records
    /// carry the values of `metrics` (with `machine`'s facts), written by a thread started
    /// now.
    ///
    /// # Errors
    /// `dir` cannot be made, or its journal cannot be opened for appending (no permission,
    /// a read-only file system): what, and where.
    pub fn open(
        dir: &Path,
        bounds: Bounds,
        metrics: Vec<&'static MetricDef>,
        machine: Machine,
    ) -> Result<Journal, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("--records {}: cannot make it: {e}", dir.display()))?;
        let mut writer = Writer {
            dir: dir.to_path_buf(),
            bounds,
            file: None,
            size: 0,
        };
        writer.open().map_err(|e| {
            format!(
                "--records {}: cannot append to its journal: {e}",
                dir.display()
            )
        })?;
        let host = machine.system().hostname().unwrap_or_default();
        let (queue, taken) = std::sync::mpsc::sync_channel(QUEUE);
        let counts = Arc::new(Counts::default());
        let counted = Arc::clone(&counts);
        std::thread::Builder::new()
            .name("records".into())
            .spawn(move || write_all(taken, writer, &metrics, &machine, &counted))
            .map_err(|e| format!("--records: cannot start its writer: {e}"))?;
        Ok(Journal {
            queue,
            counts,
            dir: dir.to_path_buf(),
            host,
        })
    }

    /// Hands `record` to the writer without waiting; where its queue is full, the record is
    /// dropped and counted as an error.
    pub fn send(&self, record: Record) {
        match self.queue.try_send(record) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                if self.counts.errors.fetch_add(1, Relaxed) == 0 {
                    crate::log::warn(
                        "a record was dropped: the journal's writer is behind",
                        &[("dir", &self.dir.display())],
                    );
                }
            }
        }
    }

    /// Records written so far.
    pub fn written(&self) -> u64 {
        self.counts.written.load(Relaxed)
    }

    /// Records not written so far (a write failed, or the queue was full).
    pub fn errors(&self) -> u64 {
        self.counts.errors.load(Relaxed)
    }

    /// Writes the journal's families in `format` into `out`: the records written and those
    /// that failed.
    pub fn write(&self, out: &mut Vec<u8>, format: Format, created: f64) {
        let families = [
            (
                Family::new(
                    "counterhal_records_written",
                    Kind::Counter,
                    "Records of departed cgroups appended to the --records journal.",
                ),
                self.written(),
            ),
            (
                Family::new(
                    "counterhal_records_errors",
                    Kind::Counter,
                    "Records of departed cgroups not written: a write that failed (a full \
                     disk), or a writer too far behind.",
                ),
                self.errors(),
            ),
        ];
        for (family, value) in families {
            family.single(out, format, Number::Int(value), created);
        }
    }
}

/// The writer's loop: each batch of records waiting, with their metrics, appended, then
/// flushed to the disk; until the exporter ends.
fn write_all(
    taken: Receiver<Record>,
    mut writer: Writer,
    metrics: &[&'static MetricDef],
    machine: &Machine,
    counts: &Counts,
) {
    let mut failing = false;
    while let Ok(first) = taken.recv() {
        let batch = std::iter::once(first).chain(taken.try_iter());
        let mut wrote = false;
        for mut record in batch {
            record.metrics = evaluate(metrics, machine, &record);
            let written = writer.append(&record.line());
            wrote |= written.is_ok();
            counted(written, counts, &mut failing, &writer.dir);
        }
        if wrote {
            let synced = writer.sync();
            if synced.is_err() {
                counts.errors.fetch_add(1, Relaxed);
            }
        }
    }
}

/// Counts a record's write, saying the first failure (and, after failures, the first
/// success) in the log.
fn counted(written: std::io::Result<()>, counts: &Counts, failing: &mut bool, dir: &Path) {
    match written {
        Ok(()) => {
            counts.written.fetch_add(1, Relaxed);
            if std::mem::take(failing) {
                crate::log::info("records are written again", &[("dir", &dir.display())]);
            }
        }
        Err(e) => {
            counts.errors.fetch_add(1, Relaxed);
            if !std::mem::replace(failing, true) {
                crate::log::warn(
                    "a record could not be written (counted in counterhal_records_errors_total)",
                    &[("dir", &dir.display()), ("error", &e)],
                );
            }
        }
    }
}

/// The metrics of `metrics` that have a value over `record`'s events and life.
fn evaluate(
    metrics: &[&'static MetricDef],
    machine: &Machine,
    record: &Record,
) -> Vec<MetricRecord> {
    let events: Vec<NamedReading> = record
        .events
        .iter()
        .map(|event| NamedReading {
            joules_per_count: (event.unit == "joules").then_some(event.scale),
            ..NamedReading::new(
                event.name.clone(),
                Some(Reading::new(
                    event.value,
                    event.enabled_ns,
                    event.running_ns,
                )),
            )
        })
        .collect();
    let length_ns = (record.seconds() * 1e9) as u64;
    metrics
        .iter()
        .filter_map(|metric| {
            let value = counterhal::metrics::evaluate(machine, metric, &events, length_ns)?;
            value.is_finite().then(|| MetricRecord {
                name: metric.name.to_string(),
                value,
                unit: metric.unit.to_string(),
            })
        })
        .collect()
}

/// The journal's current file, open for appending, and its size.
struct Writer {
    dir: PathBuf,
    bounds: Bounds,
    file: Option<std::fs::File>,
    size: u64,
}

impl Writer {
    /// The journal's path.
    fn path(&self, n: u32) -> PathBuf {
        match n {
            0 => self.dir.join(JOURNAL),
            n => self.dir.join(format!("{JOURNAL}.{n}")),
        }
    }

    /// Opens the current file for appending (made, readable by its owner and group, where
    /// it is not there).
    fn open(&mut self) -> std::io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o640)
            .open(self.path(0))?;
        self.size = file.metadata()?.len();
        self.file = Some(file);
        Ok(())
    }

    /// Appends `line`, rotating first where it would take the file past its bound; a write
    /// that fails is cut back off, so that the file ends with a whole line.
    fn append(&mut self, line: &str) -> std::io::Result<()> {
        if self.file.is_none() {
            self.open()?;
        }
        if self.size > 0 && self.size + line.len() as u64 > self.bounds.file_bytes {
            self.rotate()?;
        }
        let Some(file) = self.file.as_mut() else {
            return Err(std::io::Error::other("the journal is not open"));
        };
        match file.write_all(line.as_bytes()) {
            Ok(()) => {
                self.size += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                // What was written of it goes; where even that fails, the file is opened
                // again (and its size read) at the next record.
                if file.set_len(self.size).is_err() {
                    self.file = None;
                }
                Err(e)
            }
        }
    }

    /// `journal.N-1` to `journal.N` ... `journal` to `journal.1` (the oldest past the bound
    /// replaced), a new `journal` opened, and the directory flushed.
    fn rotate(&mut self) -> std::io::Result<()> {
        self.file = None;
        if self.bounds.files <= 1 {
            std::fs::remove_file(self.path(0))?;
        } else {
            for n in (1..self.bounds.files - 1).rev() {
                match std::fs::rename(self.path(n), self.path(n + 1)) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
            std::fs::rename(self.path(0), self.path(1))?;
        }
        self.open()?;
        std::fs::File::open(&self.dir)?.sync_all()
    }

    /// Flushes what was appended to the disk.
    fn sync(&mut self) -> std::io::Result<()> {
        match &self.file {
            Some(file) => file.sync_data(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{EventRecord, Selection, VERSION, read};

    fn record(job: u32) -> Record {
        Record {
            version: VERSION,
            host: "node1".into(),
            cgroup: format!("/job_{job}"),
            labels: [("slurm_job_id".to_string(), job.to_string())].into(),
            start: 10.0,
            end: 12.0,
            events: vec![
                EventRecord {
                    name: "task-clock".into(),
                    pmu: "software".into(),
                    unit: "seconds".into(),
                    scale: 1e-9,
                    value: 1_000_000_000,
                    enabled_ns: 1_000_000_000,
                    running_ns: 1_000_000_000,
                    complete: true,
                },
                EventRecord {
                    name: "page-faults".into(),
                    pmu: "software".into(),
                    unit: "count".into(),
                    scale: 1.0,
                    value: 500,
                    enabled_ns: 1_000_000_000,
                    running_ns: 1_000_000_000,
                    complete: true,
                },
            ],
            metrics: vec![],
        }
    }

    fn dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("counterhal-records-{name}-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        dir
    }

    /// Files of 1,000 bytes, 3 kept: 40 records of about 400 bytes leave 3 files, none past
    /// its bound, holding the newest records in order, and the oldest gone.
    #[test]
    fn the_journal_rotates_within_its_bounds() {
        let dir = dir("rotate");
        std::fs::create_dir_all(&dir).unwrap();
        let bounds = Bounds {
            file_bytes: 1000,
            files: 3,
        };
        let mut writer = Writer {
            dir: dir.clone(),
            bounds,
            file: None,
            size: 0,
        };
        let line = record(1).line();
        assert!(line.len() > 300 && line.len() < 500, "{}", line.len());
        for job in 0..40 {
            writer.append(&record(job).line()).unwrap();
        }
        writer.sync().unwrap();
        let files = crate::records::files(&dir);
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["journal.2", "journal.1", "journal"]);
        for file in &files {
            assert!(
                std::fs::metadata(file).unwrap().len() <= 1000,
                "{}",
                file.display()
            );
        }
        let found = read(&dir, &Selection::default()).unwrap();
        let jobs: Vec<u32> = found
            .records
            .iter()
            .map(|r| r.label("slurm_job_id").parse().unwrap())
            .collect();
        assert_eq!(found.unread, 0);
        assert_eq!(*jobs.last().unwrap(), 39);
        assert!(jobs.windows(2).all(|w| w[1] == w[0] + 1), "{jobs:?}");
        assert!(jobs[0] > 0, "the oldest were dropped: {jobs:?}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A full disk is an error counted, not a crash, and leaves no part of a line. Oracle:
    /// the kernel's /dev/full, whose every write fails with ENOSPC (drivers/char/mem.c,
    /// `write_full`), as the journal's file.
    #[test]
    fn a_full_disk_is_counted_and_cuts_no_line() {
        let dir = dir("full");
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink("/dev/full", dir.join(JOURNAL)).unwrap();
        let mut writer = Writer {
            dir: dir.clone(),
            bounds: Bounds::default(),
            file: None,
            size: 0,
        };
        let error = writer.append(&record(1).line()).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::ENOSPC), "{error}");
        let counts = Counts::default();
        let mut failing = false;
        counted(Err(error), &counts, &mut failing, &dir);
        counted(
            writer.append(&record(2).line()),
            &counts,
            &mut failing,
            &dir,
        );
        assert_eq!(
            (counts.errors.load(Relaxed), counts.written.load(Relaxed)),
            (2, 0)
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    /// The writer thread writes what is sent, with the portable metrics that have a value:
    /// `CPUs_utilized` is task-clock over the life (1 s of 2 s: 0.5), `page_faults_per_second`
    /// 500 over 2 s. Oracle: the portable metrics' formulas (src/metrics/portable.rs), as
    /// stat evaluates them.
    #[test]
    fn a_record_sent_is_written_with_its_metrics() {
        let dir = dir("thread");
        let metrics: Vec<&'static MetricDef> = counterhal::metrics::portable().iter().collect();
        let journal = Journal::open(
            &dir,
            Bounds::default(),
            metrics,
            Machine::new(counterhal_system::System::host()),
        )
        .unwrap();
        journal.send(record(7));
        let waited = std::time::Instant::now();
        while journal.written() == 0 && waited.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!((journal.written(), journal.errors()), (1, 0));
        let found = read(&dir, &Selection::default()).unwrap();
        let metrics: Vec<(&str, f64)> = found.records[0]
            .metrics
            .iter()
            .map(|m| (m.name.as_str(), m.value))
            .collect();
        assert!(metrics.contains(&("CPUs_utilized", 0.5)), "{metrics:?}");
        assert!(
            metrics.contains(&("page_faults_per_second", 250.0)),
            "{metrics:?}"
        );
        assert!(
            !metrics.iter().any(|(name, _)| *name == "IPC"),
            "{metrics:?}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
