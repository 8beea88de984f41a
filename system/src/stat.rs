//! A task's stat line (`/proc/PID/stat`, proc(5)).

/// The fields of a task's stat line that counterhal reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThreadStat {
    /// Field 39, `processor`: the CPU the task last ran on.
    pub processor: u32,
}

impl ThreadStat {
    /// The fields of `line`, counted after the command name (which may hold spaces and
    /// parentheses: the last `)` ends it); `None` where a field is missing or malformed.
    pub fn parse(line: &str) -> Option<ThreadStat> {
        let (_, rest) = line.rsplit_once(')')?;
        // After the name come field 3 (state) onwards: field N is the (N - 3)th of them.
        let field = |n: usize| rest.split_whitespace().nth(n - 3);
        Some(ThreadStat {
            processor: field(39)?.parse().ok()?,
        })
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
        assert_eq!(ThreadStat::parse("4242 (short) S 1 2"), None);
        assert_eq!(ThreadStat::parse("no name at all"), None);
        let host = crate::System::host();
        if host.proc_file("thread-self/stat").exists() {
            let cpu = host
                .thread_self_stat()
                .expect("a processor field")
                .processor;
            assert!(host.cpu(cpu).exists(), "{cpu}");
        }
    }
}
