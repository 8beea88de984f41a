//! Signals passed on to the measured command while it runs, so that this process lives on to
//! read and print its counts, whatever ends the command.

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use crate::sys::{self, CHILDREN, RECEIVED};

/// The signals passed on: the ones that end a command from outside.
const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP];

/// The dispositions replaced while at least one guard lives, and how many guards live.
static INSTALLED: Mutex<(usize, Vec<sys::SavedAction>)> = Mutex::new((0, Vec::new()));

/// While alive, `SIGINT`, `SIGQUIT`, `SIGTERM` and `SIGHUP` do not end this process: sent by
/// another process to this one (`kill`, `timeout`), they are passed on to the command; sent by
/// the terminal to the whole foreground group (Ctrl-C, a hangup), they have reached the command
/// already. Either way the command ends as it chooses, and its counts can still be read.
///
/// `perf stat -- cmd` does the same for Ctrl-C. A signal this process ignores (`nohup`) stays
/// ignored. Handled signals are reset by `exec`, so a command started while a guard lives
/// still starts with default dispositions.
pub struct ForwardSignals {
    slot: Option<usize>,
}

impl ForwardSignals {
    /// Starts passing signals on to process `pid` (see the type's notes).
    pub fn to(pid: u32) -> ForwardSignals {
        let pid = i32::try_from(pid).unwrap_or(0);
        let slot = (pid > 0)
            .then(|| {
                CHILDREN.iter().position(|slot| {
                    slot.compare_exchange(0, pid, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                })
            })
            .flatten();
        let mut installed = lock();
        if installed.0 == 0 {
            installed.1 = FORWARDED
                .iter()
                .filter_map(|&signal| sys::install_forwarder(signal))
                .collect();
        }
        installed.0 += 1;
        ForwardSignals { slot }
    }
}

impl ForwardSignals {
    /// The last of those signals this process received while a guard lived (from a process
    /// or the terminal), if any: a measurement that must end when one arrives (`stat -r`, its
    /// `--pre` and `--post` commands) asks this between its steps. A guard made for pid 0 keeps
    /// this process alive and records, passing nothing on.
    pub fn received() -> Option<i32> {
        Some(RECEIVED.load(Ordering::Relaxed)).filter(|&signal| signal != 0)
    }
}

impl Drop for ForwardSignals {
    fn drop(&mut self) {
        {
            let mut installed = lock();
            installed.0 -= 1;
            if installed.0 == 0 {
                for saved in installed.1.drain(..) {
                    sys::restore(&saved);
                }
            }
        }
        if let Some(slot) = self.slot {
            CHILDREN[slot].store(0, Ordering::Relaxed);
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, (usize, Vec<sys::SavedAction>)> {
    INSTALLED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
