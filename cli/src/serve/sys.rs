//! The exporter's system calls: its descriptor limit (`getrlimit`, `setrlimit` of
//! `RLIMIT_NOFILE`), raised to the hard limit at start as Go's runtime raises it for every Go
//! exporter.
//!
//! # Safety
//!
//! Each call is given structures owned by this module (an `rlimit`), by pointers valid for
//! the call alone; none keeps a pointer after it returns.

/// The soft limit on open descriptors (`RLIMIT_NOFILE`), after raising it to the hard one
/// where it was lower (where the kernel refuses, past `fs.nr_open`, it is left as it was).
/// `None` where the limit cannot be read.
pub fn raise_open_files() -> Option<libc::rlim_t> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is an `rlimit` owned here, written by the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: `raised` is an `rlimit` owned here, read by the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit.rlim_cur = limit.rlim_max;
        }
    }
    Some(limit.rlim_cur)
}
