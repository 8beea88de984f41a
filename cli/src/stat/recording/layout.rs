//! perf.data's layout as perf 6.1 and 7.2 write and read it: the magic and header sizes, the
//! attr sizes, the record types and header features a stat recording has, and the bounds a
//! reader keeps to (tools/perf/util/header.h, tools/lib/perf/include/perf/event.h).

/// perf's magic, the first 8 bytes of a file and of a pipe stream.
pub(super) const MAGIC: &[u8; 8] = b"PERFILE2";
/// `sizeof(struct perf_file_header)` and `sizeof(struct perf_pipe_file_header)`.
pub(super) const FILE_HEADER_SIZE: u64 = 104;
pub(super) const PIPE_HEADER_SIZE: u64 = 16;
/// The attr size written: `PERF_ATTR_SIZE_VER7`, which perf 6.1 and 7.2 both read.
pub(super) const ATTR_SIZE: usize = 128;
/// `PERF_ATTR_SIZE_VER0`, the smallest attr perf reads.
pub(super) const ATTR_SIZE_VER0: usize = 64;

/// The record types (`enum perf_user_event_type`).
pub(super) const HEADER_ATTR: u32 = 64;
pub(super) const THREAD_MAP: u32 = 73;
pub(super) const CPU_MAP: u32 = 74;
pub(super) const STAT_CONFIG: u32 = 75;
pub(super) const STAT: u32 = 76;
pub(super) const STAT_ROUND: u32 = 77;
pub(super) const EVENT_UPDATE: u32 = 78;
/// `PERF_EVENT_UPDATE__UNIT`, `__SCALE` and `__NAME`.
pub(super) const UPDATE_UNIT: u64 = 0;
pub(super) const UPDATE_SCALE: u64 = 1;
pub(super) const UPDATE_NAME: u64 = 2;
/// `PERF_STAT_ROUND_TYPE__FINAL`.
pub(super) const ROUND_FINAL: u64 = 1;
/// `PERF_STAT_CONFIG_TERM__SCALE`: whether counts are scaled by enabled over running time.
pub(super) const CONFIG_SCALE: u64 = 2;
/// The header features written and read (`HEADER_NRCPUS`, `HEADER_CMDLINE`,
/// `HEADER_EVENT_DESC`, `HEADER_STAT`).
pub(super) const FEATURE_NRCPUS: usize = 7;
pub(super) const FEATURE_CMDLINE: usize = 11;
pub(super) const FEATURE_EVENT_DESC: usize = 12;
pub(super) const FEATURE_STAT: usize = 19;

/// The most events, ids, bytes of an attr, of a name or unit in a record and of one header
/// part read: far above any real recording, low enough that a corrupted file or stream
/// makes nothing large (at most 16 MiB of names, 16 MiB of attrs).
pub(super) const MOST_EVENTS: u64 = 1 << 14;
pub(super) const MOST_IDS: u64 = 1 << 20;
pub(super) const MOST_ATTR: u64 = 1024;
pub(super) const MOST_NAME: usize = 1024;
pub(super) const MOST_SECTION: u64 = 16 << 20;
/// The most CPUs or threads a map may name (perf's CPU numbers are 16 bits).
pub(super) const MOST_IN_MAP: u64 = 1 << 16;
