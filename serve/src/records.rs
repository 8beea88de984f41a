//! The records of what finished: when a followed cgroup departs (a Slurm job, a pod, a
//! container ends), one [`Record`] of its whole counts (its labels, start and end, each
//! event's value with its times enabled and running, the `-M` metrics over its life) is
//! appended as one JSON line to a journal on disk ([`journal`]: bounded, rotated, written by
//! a thread of its own so that the scrape never waits on the disk), which `/records` serves
//! by label and `counterhal jobs` prints as `stat` prints a run.
//!
//! The schema is [`VERSION`] 1 (docs/serve.md, "Records"): a reader takes a line of a later
//! version whose fields it knows, and leaves the fields it does not know.

pub mod journal;

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The version of the records written: a new field is no new version; a field that changes
/// meaning or goes is.
pub const VERSION: u32 = 1;

/// The journal's file name in its directory; its older files are `journal.1`, `journal.2`...
pub const JOURNAL: &str = "journal";

/// The directory `counterhal jobs` reads where none is given, and the one the docs suggest
/// for `--records`.
pub const DEFAULT_DIR: &str = "/var/lib/counterhal/records";

/// One cgroup's whole counts, from when it was first counted to when it departed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The schema's version ([`VERSION`]).
    pub version: u32,
    /// The host that counted it (the kernel's hostname).
    pub host: String,
    /// The cgroup's path below the mount, as the series' `cgroup` label writes it.
    pub cgroup: String,
    /// Its series' labels besides `cgroup` (`slurm_job_id`, `slurm_step`, `pod_uid`,
    /// `container_id`, ...), those with a value only.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// When it began counting, in seconds since the epoch.
    pub start: f64,
    /// When it departed (its counters' last read), in seconds since the epoch.
    pub end: f64,
    /// Each event counted, in the order `-e` named them.
    pub events: Vec<EventRecord>,
    /// The metrics serve was given (`-M`; without it, the portable metrics) whose events
    /// were counted, over its life.
    #[serde(default)]
    pub metrics: Vec<MetricRecord>,
}

/// An event's whole count in a cgroup.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// The name as given (the series' `event` label).
    pub name: String,
    /// The PMU it counted on (the `pmu` label).
    #[serde(default)]
    pub pmu: String,
    /// The unit of its series: `count`, `seconds` or `joules`.
    pub unit: String,
    /// What one count is in that unit (1e-9 for a clock's nanoseconds).
    pub scale: f64,
    /// The count, summed over the CPUs, as the kernel gave it (not scaled for multiplexing).
    pub value: u64,
    /// The nanoseconds it was enabled, summed over the CPUs.
    pub enabled_ns: u64,
    /// The nanoseconds it was running (counting), summed over the CPUs.
    pub running_ns: u64,
    /// Whether it counted on every CPU and its last read succeeded; `false`: the value is a
    /// part of the whole (the scrape's series say the same).
    pub complete: bool,
}

/// A metric's value over a cgroup's life.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricRecord {
    /// Its name, as `-M` names it.
    pub name: String,
    /// Its value (scaled as stat prints it: a share in percent).
    pub value: f64,
    /// The unit stat prints after it.
    #[serde(default)]
    pub unit: String,
}

impl Record {
    /// The record as one line of JSON, with its newline: a name with newlines or quotes in
    /// it is escaped, so that a line is always one record.
    pub fn line(&self) -> String {
        // Serializing these plain types fails only where a float is not finite, which the
        // journal never writes: such a value is written as 0 (see `finite`).
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }

    /// A label's value (empty where it has none).
    pub fn label(&self, key: &str) -> &str {
        self.labels.get(key).map_or("", String::as_str)
    }

    /// Its length in seconds (0 where the clock went back).
    pub fn seconds(&self) -> f64 {
        (self.end - self.start).max(0.0)
    }
}

/// Which records are wanted: by label, each given value the label's (a job's own cgroup,
/// not its steps', unless a step is named; a pod's own, not its containers', unless a
/// container is named); then the last `last` of those.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// A Slurm job: its ID or SLUID.
    pub slurm_job: Option<String>,
    /// A step of it (`batch`, `0`): that step's own cgroup.
    pub slurm_step: Option<String>,
    /// A pod: its UID or its name.
    pub pod: Option<String>,
    /// A container: its ID (or a prefix of 12 or more of its digits) or its name.
    pub container: Option<String>,
    /// At most this many, the last written.
    pub last: Option<usize>,
}

impl Selection {
    /// Whether `record` is one of those wanted (before `last`).
    pub fn wants(&self, record: &Record) -> bool {
        if let Some(job) = &self.slurm_job {
            let of_job = record.label("slurm_job_id") == job || record.label("slurm_sluid") == job;
            let step = self.slurm_step.as_deref().unwrap_or("");
            if !of_job
                || record.label("slurm_step") != step
                || !record.label("slurm_task").is_empty()
            {
                return false;
            }
        }
        if let Some(pod) = &self.pod {
            let of_pod = record.label("pod_uid") == pod || record.label("pod") == pod;
            if !of_pod || (self.container.is_none() && !record.label("container_id").is_empty()) {
                return false;
            }
        }
        if let Some(container) = &self.container {
            let id = record.label("container_id");
            let by_id =
                container.len() >= 12 && !id.is_empty() && id.starts_with(container.as_str());
            if !by_id && record.label("container") != container {
                return false;
            }
        }
        true
    }

    /// The selection a query string asks for (`slurm_job=12&last=1`; `%XX` escapes and `+`
    /// read as a form's), or what is wrong with it.
    ///
    /// # Errors
    /// A key it does not know, a key given twice, or a `last` that is no number.
    pub fn of_query(query: &str) -> Result<Selection, String> {
        let mut selection = Selection::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = unescape(value);
            let slot = match key {
                "slurm_job" => &mut selection.slurm_job,
                "slurm_step" => &mut selection.slurm_step,
                "pod" => &mut selection.pod,
                "container" => &mut selection.container,
                "last" => {
                    let n = value.parse().map_err(|_| {
                        format!("last={value} is no number: the count of records wanted, last=1")
                    })?;
                    selection.last = Some(n);
                    continue;
                }
                other => {
                    return Err(format!(
                        "`{other}` selects nothing: slurm_job, slurm_step, pod, container or last"
                    ));
                }
            };
            if slot.replace(value).is_some() {
                return Err(format!("{key} is given twice"));
            }
        }
        Ok(selection)
    }

    /// The query string that asks for this selection (what [`Selection::of_query`] reads).
    pub fn query(&self) -> String {
        let pairs = [
            ("slurm_job", &self.slurm_job),
            ("slurm_step", &self.slurm_step),
            ("pod", &self.pod),
            ("container", &self.container),
        ];
        let mut query: Vec<String> = pairs
            .iter()
            .filter_map(|(key, value)| Some(format!("{key}={}", escape(value.as_deref()?))))
            .collect();
        if let Some(last) = self.last {
            query.push(format!("last={last}"));
        }
        query.join("&")
    }
}

/// `%XX` escapes and `+` (a space) undone; a bad escape is kept as written.
fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[at] {
            b'%' => {
                let digit = |at: usize| bytes.get(at).and_then(|&b| hex(b));
                match (digit(at + 1), digit(at + 2)) {
                    (Some(high), Some(low)) => {
                        // Two hex digits: at most 255.
                        out.push((high * 16 + low) as u8);
                        at += 3;
                        continue;
                    }
                    _ => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            byte => out.push(byte),
        }
        at += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` with every byte but letters, digits and `-._~` escaped as `%XX`.
fn escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// The journal's files in `dir`, oldest first (`journal.N` ... `journal.1`, `journal`),
/// those that exist.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut numbered: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let n = name
                .to_str()?
                .strip_prefix(JOURNAL)?
                .strip_prefix('.')?
                .parse()
                .ok()?;
            Some((n, entry.path()))
        })
        .collect();
    numbered.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    let mut files: Vec<PathBuf> = numbered.into_iter().map(|(_, path)| path).collect();
    let current = dir.join(JOURNAL);
    if current.is_file() {
        files.push(current);
    }
    files
}

/// What reading a journal found: the records wanted, and the lines that were no record
/// (a line cut by a crash, or not JSON), counted.
#[derive(Debug, Default)]
pub struct Found {
    /// The records, oldest first.
    pub records: Vec<Record>,
    /// Lines that were no record of this schema.
    pub unread: usize,
}

/// The records of `dir`'s journal that `selection` wants, oldest first.
///
/// # Errors
/// `dir` cannot be read (none there, or no permission), naming it.
pub fn read(dir: &Path, selection: &Selection) -> Result<Found, String> {
    std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read the records in {}: {e}", dir.display()))?;
    let mut found = Found::default();
    for path in files(dir) {
        // A file rotated away between the listing and its opening: its records are in the
        // next one's name.
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        found.take(std::io::BufReader::new(file), selection);
    }
    found.keep_last(selection.last);
    Ok(found)
}

impl Found {
    /// Takes the records of `lines` (JSON lines) that `selection` wants.
    pub fn take(&mut self, lines: impl BufRead, selection: &Selection) {
        for line in lines.split(b'\n').map_while(Result::ok) {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Record>(&line) {
                Ok(record) if selection.wants(&record) => self.records.push(record),
                Ok(_) => {}
                Err(_) => self.unread += 1,
            }
        }
    }

    /// Keeps the last `last` records (all where `None`).
    pub fn keep_last(&mut self, last: Option<usize>) {
        if let Some(last) = last
            && self.records.len() > last
        {
            self.records.drain(..self.records.len() - last);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(labels: &[(&str, &str)]) -> Record {
        Record {
            version: VERSION,
            host: "node1".into(),
            cgroup: "/a".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            start: 1.0,
            end: 2.5,
            events: vec![EventRecord {
                name: "page-faults".into(),
                pmu: "software".into(),
                unit: "count".into(),
                scale: 1.0,
                value: 20_078,
                enabled_ns: 10,
                running_ns: 10,
                complete: true,
            }],
            metrics: vec![],
        }
    }

    /// A cgroup whose name holds a newline, quotes, a backslash and a control character is
    /// still one line of JSON, read back the same. Oracle: RFC 8259's string escapes, as
    /// serde_json writes and reads them.
    #[test]
    fn a_hostile_cgroup_name_stays_one_line_of_json() {
        let mut hostile = record(&[]);
        hostile.cgroup = "/a\n{\"b\": \\\"c\u{1}\u{2028}".into();
        let line = hostile.line();
        assert_eq!(line.matches('\n').count(), 1, "{line}");
        assert!(line.ends_with('\n'));
        let back: Record = serde_json::from_str(line.trim_end()).unwrap();
        assert_eq!(back, hostile);
    }

    #[test]
    fn a_record_read_back_is_written_as_it_was() {
        // A time whose shortest form has 17 digits: serde_json's default parser read it a
        // unit in the last place away (1795916325.633279 written back), which /records then
        // answered in place of the journal's line.
        let mut written = record(&[]);
        written.end = 1795916325.6332793;
        written.start = 1795916325.5475893;
        let line = written.line();
        let back: Record = serde_json::from_str(line.trim_end()).unwrap();
        assert_eq!(back.line(), line);
    }

    #[test]
    fn a_job_is_selected_by_its_own_cgroup_and_a_step_when_named() {
        let job = record(&[("slurm_job_id", "12")]);
        let step = record(&[("slurm_job_id", "12"), ("slurm_step", "0")]);
        let task = record(&[
            ("slurm_job_id", "12"),
            ("slurm_step", "0"),
            ("slurm_task", "1"),
        ]);
        let other = record(&[("slurm_job_id", "120")]);
        let of_job = Selection::of_query("slurm_job=12").unwrap();
        let wanted: Vec<bool> = [&job, &step, &task, &other]
            .iter()
            .map(|r| of_job.wants(r))
            .collect();
        assert_eq!(wanted, [true, false, false, false]);
        let of_step = Selection::of_query("slurm_job=12&slurm_step=0").unwrap();
        assert!(of_step.wants(&step) && !of_step.wants(&job) && !of_step.wants(&task));
        let pod = record(&[("pod_uid", "u-1"), ("pod", "web")]);
        let container = record(&[
            ("pod_uid", "u-1"),
            ("container_id", "ab12cd34ef56aa"),
            ("container", "app"),
        ]);
        let of_pod = Selection::of_query("pod=web").unwrap();
        assert!(of_pod.wants(&pod) && !of_pod.wants(&container));
        let of_container = Selection::of_query("pod=u-1&container=app").unwrap();
        assert!(of_container.wants(&container) && !of_container.wants(&pod));
        let by_id = Selection::of_query("container=ab12cd34ef56").unwrap();
        assert!(by_id.wants(&container));
    }

    #[test]
    fn a_query_round_trips_and_bad_ones_say_what_is_right() {
        let selection = Selection {
            slurm_job: Some("12 &=%".into()),
            last: Some(3),
            ..Selection::default()
        };
        assert_eq!(Selection::of_query(&selection.query()).unwrap(), selection);
        let bad = Selection::of_query("job=1").unwrap_err();
        assert!(bad.contains("slurm_job"), "{bad}");
        let twice = Selection::of_query("pod=a&pod=b").unwrap_err();
        assert!(twice.contains("twice"), "{twice}");
        assert!(Selection::of_query("last=x").is_err());
        assert_eq!(unescape("%4"), "%4");
        assert_eq!(unescape("a%2"), "a%2");
        assert_eq!(unescape("%zz+"), "%zz ");
    }

    #[test]
    fn lines_that_are_no_record_are_counted_and_last_keeps_the_newest() {
        let mut text = String::new();
        for job in ["1", "2", "3"] {
            text.push_str(&record(&[("slurm_job_id", job)]).line());
        }
        text.push_str("{\"version\":1,\"host\"\n");
        let mut found = Found::default();
        found.take(text.as_bytes(), &Selection::default());
        assert_eq!((found.records.len(), found.unread), (3, 1));
        found.keep_last(Some(2));
        let jobs: Vec<&str> = found
            .records
            .iter()
            .map(|r| r.label("slurm_job_id"))
            .collect();
        assert_eq!(jobs, ["2", "3"]);
    }
}
