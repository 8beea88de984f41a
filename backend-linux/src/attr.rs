//! One event's `perf_event_attr` as an open call places it, and which kernel group it may
//! join.

use counterhal_hal::{Error, PerfAttr, Result};

use crate::group::ReadFormat;
use crate::sys::{
    ATTR_SIZE_VER8, FORMAT_GROUP, FORMAT_ID, FORMAT_TOTAL_TIME_ENABLED, FORMAT_TOTAL_TIME_RUNNING,
    PerfEventAttr, TYPE_BREAKPOINT, TYPE_HARDWARE, TYPE_HW_CACHE, TYPE_RAW, TYPE_SOFTWARE,
    TYPE_TRACEPOINT, attr_bit,
};

/// How one open call sets up its events.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placement {
    /// `perf_event_open`'s `pid`: 0 this thread, a thread or process id, -1 every task.
    pub pid: i32,
    /// Its `cpu`: -1 any, else one CPU.
    pub cpu: i32,
    /// Children and new threads counted too.
    pub inherit: bool,
    /// The leader starts at the target's next exec.
    pub enable_on_exec: bool,
    /// The leader stays on the PMU or goes into error state.
    pub pinned: bool,
    /// The leader has the PMU to itself while it runs.
    pub exclusive: bool,
    /// How the kernel groups are read.
    pub format: ReadFormat,
    /// `sample_period` of every event (0: counting only).
    pub sample_period: u64,
}

/// Which kernel group an event may share: software-context events join any group; events of a
/// hardware PMU only groups of that PMU.
pub(crate) fn group_key(encoding: &PerfAttr) -> Option<String> {
    match encoding.type_ {
        TYPE_SOFTWARE | TYPE_TRACEPOINT | TYPE_BREAKPOINT => None,
        TYPE_HARDWARE | TYPE_HW_CACHE | TYPE_RAW => {
            Some(encoding.pmu.clone().unwrap_or_else(|| "cpu".to_string()))
        }
        other => Some(
            encoding
                .pmu
                .clone()
                .unwrap_or_else(|| format!("type {other}")),
        ),
    }
}

/// The attr for one event.
pub(crate) fn build_attr(encoding: &PerfAttr, leader: bool, place: &Placement) -> PerfEventAttr {
    let mut attr = PerfEventAttr {
        type_: encoding.type_,
        size: ATTR_SIZE_VER8,
        config: encoding.config,
        config1: encoding.config1,
        config2: encoding.config2,
        config3: encoding.config3,
        bp_type: encoding.bp_type,
        sample_period: place.sample_period,
        read_format: FORMAT_TOTAL_TIME_ENABLED
            | FORMAT_TOTAL_TIME_RUNNING
            | FORMAT_ID
            | if place.format == ReadFormat::Group {
                FORMAT_GROUP
            } else {
                0
            },
        ..Default::default()
    };
    // Members follow their leader; a leader starts disabled (or waits for the exec).
    attr.set_flag(attr_bit::DISABLED, leader);
    attr.set_flag(attr_bit::ENABLE_ON_EXEC, leader && place.enable_on_exec);
    attr.set_flag(attr_bit::INHERIT, place.inherit);
    attr.set_flag(attr_bit::PINNED, leader && place.pinned);
    attr.set_flag(attr_bit::EXCLUSIVE, leader && place.exclusive);
    let exclude = encoding.exclude_bits();
    attr.set_flag(attr_bit::EXCLUDE_USER, exclude.user);
    attr.set_flag(attr_bit::EXCLUDE_KERNEL, exclude.kernel);
    attr.set_flag(attr_bit::EXCLUDE_HV, exclude.hv);
    attr.set_flag(attr_bit::EXCLUDE_IDLE, exclude.idle);
    attr.set_flag(attr_bit::EXCLUDE_HOST, exclude.host);
    attr.set_flag(attr_bit::EXCLUDE_GUEST, exclude.guest);
    attr
}

/// The largest period the kernel takes: `perf_event_open` refuses one with bit 63 set
/// (EINVAL), which would otherwise reach the caller as a bad event code.
pub(crate) const MAX_PERIOD: u64 = i64::MAX as u64;

/// Refuses a sample period the kernel refuses (zero, or bit 63 set), naming it and the range.
///
/// # Errors
/// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) naming the period
/// and the range the kernel takes.
pub(crate) fn check_period(period: u64) -> Result<()> {
    if period == 0 || period > MAX_PERIOD {
        return Err(
            Error::invalid_input(format!("a sample period of {period}")).with_hint(format!(
                "a sampling event records every N events: N is 1 to {MAX_PERIOD} (2^63 - 1, \
                 the kernel's limit)"
            )),
        );
    }
    Ok(())
}
