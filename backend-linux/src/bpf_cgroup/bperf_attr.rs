//! The attribute a shared counter's leader is found by in perf's attr map
//! (`shared`): an event's `struct perf_event_attr` as perf 7.2 keys it, and the
//! event opened on one CPU for the leader.

use std::os::fd::OwnedFd;

use counterhal_hal::{Error, ErrorKind, EventRequest, Result};

use crate::attr::Placement;
use crate::group::ReadFormat;
use crate::sys::PerfEventAttr;

/// perf 7.2's `sizeof(struct perf_event_attr)` (`PERF_ATTR_SIZE_VER9`): the attr map's key.
pub const ATTR_KEY_BYTES: usize = 144;

/// The attr map's key for `request`: the attribute perf 7.2 keys it by, its event as opened
/// by this crate, with what perf sets only when it opens a counter left as perf leaves it at
/// that point (bperf__load runs before create_perf_stat_counter): no read format, not
/// disabled, not inherited, no enable at exec, no sample period; `size` perf's.
pub(super) fn attr_key(request: &EventRequest) -> Result<[u8; ATTR_KEY_BYTES]> {
    let mut attr = counting_attr(request, 0)?;
    attr.read_format = 0;
    attr.size = ATTR_KEY_BYTES as u32;
    Ok(attr_bytes(&attr))
}

/// `request`'s attribute counting on a CPU from its open: not disabled, not inherited.
pub(super) fn counting_attr(request: &EventRequest, cpu: u32) -> Result<PerfEventAttr> {
    let encoding = crate::backend::perf_encoding(request, None)?;
    let place = Placement {
        pid: -1,
        cpu: cpu as i32,
        inherit: false,
        enable_on_exec: false,
        pinned: false,
        exclusive: false,
        format: ReadFormat::Single,
        sample_period: 0,
    };
    Ok(crate::attr::build_attr(&encoding, false, &place))
}

/// `request` counting on `cpu` from now (bperf's leader opens it system-wide per CPU).
pub(super) fn open_on_cpu(request: &EventRequest, cpu: u32) -> Result<OwnedFd> {
    let mut attr = counting_attr(request, cpu)?;
    crate::sys::perf_event_open(&mut attr, -1, cpu as i32, None, 0).map_err(|failure| {
        let kind = match failure.errno {
            libc::EACCES | libc::EPERM => ErrorKind::PermissionDenied,
            _ => ErrorKind::Unsupported,
        };
        let detail = std::io::Error::from_raw_os_error(failure.errno);
        Error::new(
            kind,
            format!("opening {} on CPU {cpu}: {detail}", request.name),
        )
        .with_errno(failure.errno)
        .with_hint("a shared leader counts its event on every CPU, as perf's bperf opens it")
    })
}

/// `attr` laid out as the kernel's `struct perf_event_attr` of [`ATTR_KEY_BYTES`]
/// (include/uapi/linux/perf_event.h; `config4`, past this crate's struct, zero).
pub(super) fn attr_bytes(attr: &PerfEventAttr) -> [u8; ATTR_KEY_BYTES] {
    let mut out = [0u8; ATTR_KEY_BYTES];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        out[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    put(&attr.type_.to_ne_bytes());
    put(&attr.size.to_ne_bytes());
    for w in [
        attr.config,
        attr.sample_period,
        attr.sample_type,
        attr.read_format,
        attr.flags,
    ] {
        put(&w.to_ne_bytes());
    }
    put(&attr.wakeup_events.to_ne_bytes());
    put(&attr.bp_type.to_ne_bytes());
    for w in [
        attr.config1,
        attr.config2,
        attr.branch_sample_type,
        attr.sample_regs_user,
    ] {
        put(&w.to_ne_bytes());
    }
    put(&attr.sample_stack_user.to_ne_bytes());
    put(&attr.clockid.to_ne_bytes());
    put(&attr.sample_regs_intr.to_ne_bytes());
    put(&attr.aux_watermark.to_ne_bytes());
    put(&attr.sample_max_stack.to_ne_bytes());
    put(&attr.reserved_2.to_ne_bytes());
    put(&attr.aux_sample_size.to_ne_bytes());
    put(&attr.reserved_3.to_ne_bytes());
    put(&attr.sig_data.to_ne_bytes());
    put(&attr.config3.to_ne_bytes());
    out
}
