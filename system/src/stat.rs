//! A task's stat line (`/proc/PID/stat`, proc(5)).

/// The fields of a task's stat line that counterhal reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThreadStat {
    /// Field 10, `minflt`: the minor faults the task has made (what
    /// `getrusage(RUSAGE_THREAD)` reports as `ru_minflt` for a thread).
    pub minor_faults: u64,
    /// Field 39, `processor`: the CPU the task last ran on.
    pub processor: u32,
}

impl ThreadStat {
    /// The fields of `line`, counted after the command name (which may hold spaces and
    /// parentheses: the last `)` ends it); `None` where a field is missing or malformed.
    pub fn parse(line: &str) -> Option<ThreadStat> {
        let fields = StatFields::parse(line.as_bytes())?;
        Some(ThreadStat {
            minor_faults: fields.field(10)?,
            processor: u32::try_from(fields.field(39)?).ok()?,
        })
    }
}

/// A task's stat line, its fields by number, in a buffer of the caller's (nothing is
/// allocated: the exporter reads its own at each scrape).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatFields<'a> {
    /// The fields from the third (`state`) on, separated by spaces.
    after_name: &'a [u8],
}

impl<'a> StatFields<'a> {
    /// The fields of `line`: those after the last `)`, which ends the command name (a name
    /// may hold spaces and parentheses); `None` without one.
    pub fn parse(line: &'a [u8]) -> Option<StatFields<'a>> {
        let close = line.iter().rposition(|&b| b == b')')?;
        Some(StatFields {
            after_name: &line[close + 1..],
        })
    }

    /// Field `number` (counted from 1, as proc(5) counts them: 14 `utime`, 39 `processor`)
    /// as an unsigned number; `None` for the pid and the name, a missing field, or one that
    /// is no number.
    pub fn field(&self, number: usize) -> Option<u64> {
        // After the name come field 3 (state) onwards: field N is the (N - 3)th of them.
        let word = self
            .after_name
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
            .nth(number.checked_sub(3)?)?;
        std::str::from_utf8(word).ok()?.parse().ok()
    }
}

impl crate::roots::System {
    /// The calling thread's stat line (`thread-self/stat` under procfs), parsed; `None`
    /// where the system has none or it does not parse.
    pub fn thread_self_stat(&self) -> Option<ThreadStat> {
        ThreadStat::parse(&self.proc_text("thread-self/stat")?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: proc(5)'s `/proc/PID/stat` layout (field 39, `processor`), a command name with
    /// spaces and parentheses included; and this machine's own line, whose CPU must be one of
    /// sysfs's CPUs.
    #[test]
    fn the_cpu_a_thread_last_ran_on() {
        let fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        let line = format!("4242 (a) b (c)) {}\n", fields.join(" "));
        assert_eq!(ThreadStat::parse(&line).map(|s| s.processor), Some(39));
        assert_eq!(ThreadStat::parse(&line).map(|s| s.minor_faults), Some(10));
        assert_eq!(ThreadStat::parse("4242 (short) S 1 2"), None);
        assert_eq!(ThreadStat::parse("no name at all"), None);
        let fields = StatFields::parse(line.as_bytes()).unwrap();
        assert_eq!(fields.field(3), Some(3));
        assert_eq!(fields.field(52), Some(52));
        assert_eq!((fields.field(2), fields.field(53)), (None, None));
        let state = StatFields::parse(b"1 (x) S 1").unwrap();
        assert_eq!(
            (state.field(3), state.field(4)),
            (None, Some(1)),
            "`S` is no number"
        );
        let host = crate::roots::System::host();
        if std::path::Path::new("/proc/thread-self/stat").exists() {
            let cpu = host
                .thread_self_stat()
                .expect("a processor field")
                .processor;
            assert!(host.has_cpu(cpu), "{cpu}");
        }
    }

    /// Oracle: the kernel's accounting of minor faults (proc(5)'s field 10, `minflt`, what
    /// `getrusage(RUSAGE_THREAD)` reports): writing to 256 fresh pages of a new 32 MiB
    /// mapping (above glibc's mmap threshold) makes at least 256 more.
    #[cfg(target_os = "linux")]
    #[test]
    fn minor_faults_count_the_pages_this_thread_touches() {
        let host = crate::roots::System::host();
        let before = host.thread_self_stat().expect("Linux has thread-self/stat");
        let mut memory = vec![0u8; 32 << 20];
        for page in memory.chunks_mut(4096).take(256) {
            page[0] = 1;
        }
        std::hint::black_box(&memory);
        let after = host.thread_self_stat().expect("Linux has thread-self/stat");
        assert!(
            after.minor_faults >= before.minor_faults + 256,
            "{before:?} then {after:?}"
        );
    }

    /// Oracle: proc(5)'s `/proc/PID/stat` in a tree of the test's own, read into a buffer;
    /// a file longer than the buffer is not cut short but refused.
    #[test]
    fn a_stat_file_is_read_into_a_buffer() {
        let root = std::env::temp_dir().join(format!("counterhal-stat-{}", std::process::id()));
        std::fs::create_dir_all(root.join("self")).unwrap();
        std::fs::write(
            root.join("self/stat"),
            "42 (a) b) S 1 42 42 0 -1 4194560 100 0 0 0 7 3\n",
        )
        .unwrap();
        let system = crate::roots::System::host().with_procfs(&root);
        let file = system.stat_file("self").unwrap();
        let mut buffer = [0u8; 128];
        let fields = file.read(&mut buffer).unwrap();
        assert_eq!((fields.field(14), fields.field(15)), (Some(7), Some(3)));
        assert_eq!(file.read(&mut [0u8; 16]), None);
        assert_eq!(system.stat_file("none"), None);
        std::fs::remove_dir_all(&root).unwrap();
        // This process's own, found once and read twice: its pid is the first field.
        let own = crate::roots::System::host().stat_file("self");
        if let Some(own) = own {
            let mut line = [0u8; 2048];
            let read = own.read(&mut line).expect("this process's stat line");
            assert!(read.field(4).is_some());
            assert!(own.read(&mut line).is_some());
            let pid = std::str::from_utf8(&line)
                .unwrap()
                .split(' ')
                .next()
                .unwrap();
            assert_eq!(pid, std::process::id().to_string());
        }
    }
}
