//! The exporter's own process, as every Prometheus client library exports it: the
//! `process_*` families of client_golang's process collector on Linux (which node_exporter's
//! `/metrics` carries), from the same sources, read through the exporter's `System`. CPU
//! time (user and system) and memory from `/proc/self/stat`, the descriptors open counted in
//! `/proc/self/fd`, the limits on descriptors and address space as `/proc/self/limits` shows
//! them (`getrlimit`, which that file prints), and the start time from the boot time in
//! `/proc/stat`. Read at each scrape into buffers on the stack (the paths made at start):
//! nothing is allocated.

use counterhal_system::{DescriptorDirectory, StatFile, System};

use super::sys;
use crate::text_format::{Family, Format, Kind, Number};

/// What stays the same while the exporter runs: the clock tick and page sizes, the start,
/// and where the figures are read.
#[derive(Debug)]
pub struct Constants {
    /// `sysconf(_SC_CLK_TCK)`: the unit of the CPU times and start time in `/proc/PID/stat`.
    ticks_per_second: f64,
    /// `sysconf(_SC_PAGESIZE)`: the unit of the resident set in `/proc/PID/stat`.
    page_size: u64,
    /// The start time, in seconds since the epoch: the boot time (`btime` in `/proc/stat`)
    /// and the process's start after boot (`starttime`, in clock ticks); `None` where either
    /// cannot be read.
    start_time_seconds: Option<f64>,
    /// This process's stat file (`/proc/self/stat`), where procfs has it.
    stat: Option<StatFile>,
    /// This process's directory of descriptors (`/proc/self/fd`), where procfs has it.
    descriptors: Option<DescriptorDirectory>,
}

impl Constants {
    /// This process's constants, read once at start from `system`.
    pub fn read(system: &System) -> Constants {
        let (ticks_per_second, page_size) = sys::clock_ticks_and_page_size();
        let ticks_per_second = ticks_per_second as f64;
        let boot = system.boot_time();
        let stat = system.stat_file("self");
        let mut buffer = [0u8; STAT_BUFFER];
        let started = stat
            .as_ref()
            .and_then(|stat| stat.read(&mut buffer)?.field(STARTTIME));
        let start_time_seconds = match (boot, started) {
            (Some(boot), Some(ticks)) => Some(boot as f64 + ticks as f64 / ticks_per_second),
            _ => None,
        };
        Constants {
            ticks_per_second,
            page_size,
            start_time_seconds,
            stat,
            descriptors: system.descriptor_directory(),
        }
    }
}

/// The process's figures at one scrape, each `None` where its source could not be read (left
/// out of the scrape, as client_golang leaves it out).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Process {
    /// User and system CPU time, in seconds (`utime + stime` of `/proc/self/stat`).
    pub cpu_seconds: Option<f64>,
    /// Descriptors open, the one listing them included (entries of `/proc/self/fd`).
    pub open_fds: Option<u64>,
    /// The soft limit on open descriptors (`RLIMIT_NOFILE`).
    pub max_fds: Option<u64>,
    /// The size of the address space, in bytes (`vsize`).
    pub virtual_memory_bytes: Option<u64>,
    /// The soft limit on the address space, in bytes (`RLIMIT_AS`; unlimited is 2^64 - 1).
    pub virtual_memory_max_bytes: Option<u64>,
    /// The resident set, in bytes (`rss`, in pages, times the page size).
    pub resident_memory_bytes: Option<u64>,
    /// The start time, in seconds since the epoch.
    pub start_time_seconds: Option<f64>,
}

/// The room for `/proc/self/stat` (52 fields of at most 20 digits, and a name of at most 64
/// bytes, escaped or not: under 1,200 bytes).
const STAT_BUFFER: usize = 2048;
/// Fields of `/proc/PID/stat` (proc(5), counted from 1), by their number.
const UTIME: usize = 14;
const STIME: usize = 15;
const STARTTIME: usize = 22;
const VSIZE: usize = 23;
const RSS: usize = 24;

impl Process {
    /// The figures now.
    pub fn now(constants: &Constants) -> Process {
        let mut buffer = [0u8; STAT_BUFFER];
        let stat = constants
            .stat
            .as_ref()
            .and_then(|stat| stat.read(&mut buffer));
        let field = |number| stat.as_ref().and_then(|s| s.field(number));
        let cpu_ticks = field(UTIME).zip(field(STIME)).map(|(u, s)| u + s);
        Process {
            cpu_seconds: cpu_ticks.map(|ticks| ticks as f64 / constants.ticks_per_second),
            open_fds: (constants.descriptors.as_ref())
                .and_then(|dir| dir.open().ok())
                .and_then(|dir| sys::directory_entries(&dir)),
            max_fds: sys::soft_limit(sys::Limit::OpenFiles),
            virtual_memory_bytes: field(VSIZE),
            virtual_memory_max_bytes: sys::soft_limit(sys::Limit::AddressSpace),
            resident_memory_bytes: field(RSS).map(|pages| pages * constants.page_size),
            start_time_seconds: constants.start_time_seconds,
        }
    }
}

impl Process {
    /// The exporter's process, as client_golang's process collector writes it (node_exporter's
    /// `/metrics` carries it): its names, help and types, no `# UNIT` in OpenMetrics (its
    /// families have none), in the order of its gathering (by name); a figure that could not be
    /// read is left out.
    pub fn write(&self, out: &mut Vec<u8>, format: Format) {
        let process = self;
        let families = [
            (
                Family::new(
                    "process_cpu_seconds",
                    Kind::Counter,
                    "Total user and system CPU time spent in seconds.",
                ),
                process.cpu_seconds.map(Number::Float),
            ),
            (
                Family::new(
                    "process_max_fds",
                    Kind::Gauge,
                    "Maximum number of open file descriptors.",
                ),
                process.max_fds.map(Number::Int),
            ),
            (
                Family::new(
                    "process_open_fds",
                    Kind::Gauge,
                    "Number of open file descriptors.",
                ),
                process.open_fds.map(Number::Int),
            ),
            (
                Family::new(
                    "process_resident_memory_bytes",
                    Kind::Gauge,
                    "Resident memory size in bytes.",
                ),
                process.resident_memory_bytes.map(Number::Int),
            ),
            (
                Family::new(
                    "process_start_time_seconds",
                    Kind::Gauge,
                    "Start time of the process since unix epoch in seconds.",
                ),
                process.start_time_seconds.map(Number::Float),
            ),
            (
                Family::new(
                    "process_virtual_memory_bytes",
                    Kind::Gauge,
                    "Virtual memory size in bytes.",
                ),
                process.virtual_memory_bytes.map(Number::Int),
            ),
            (
                Family::new(
                    "process_virtual_memory_max_bytes",
                    Kind::Gauge,
                    "Maximum amount of virtual memory available in bytes.",
                ),
                process.virtual_memory_max_bytes.map(Number::Int),
            ),
        ];
        for (family, value) in families {
            if let Some(value) = value {
                family.header(out, format);
                family.sample(out, &[], value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: proc(5)'s layout of `/proc/PID/stat`, and this process's own `/proc/self/status`
    /// (`VmSize` is `vsize` in KiB).
    #[test]
    fn the_fields_are_read_after_the_last_parenthesis() {
        let mut buffer = [0u8; STAT_BUFFER];
        let line = b"42 (a) b) (c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 \
                     555 8192 3 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        buffer[..line.len()].copy_from_slice(line);
        let stat = counterhal_system::StatFields::parse(&buffer[..line.len()]).unwrap();
        assert_eq!(stat.field(3), None, "`S` is no number");
        assert_eq!(stat.field(4), Some(1));
        assert_eq!(stat.field(UTIME), Some(7));
        assert_eq!(stat.field(STIME), Some(3));
        assert_eq!(stat.field(STARTTIME), Some(555));
        assert_eq!(stat.field(VSIZE), Some(8192));
        assert_eq!(stat.field(RSS), Some(3));
        let process = Process::now(&Constants::read(&System::host()));
        let status = System::host().process_status("self").unwrap();
        let vm_size_kib = status.kib(counterhal_system::MemorySize::Virtual).unwrap();
        let ours = process.virtual_memory_bytes.unwrap() / 1024;
        // Other tests' threads map and unmap stacks meanwhile.
        assert!(
            ours.abs_diff(vm_size_kib) < 64 * 1024,
            "{ours} KiB, VmSize {vm_size_kib} KiB"
        );
    }
}
