//! What the tests of this binary share with each other: the process. Signal dispositions and
//! the environment are the whole process's, and a fork makes all of its memory copy-on-write;
//! so a test that changes the dispositions or the environment, or that counts its own page
//! faults, runs alone ([`alone`]), while every test that starts a command (which inherits the
//! dispositions and the environment, and may be forked) holds [`shared`]: such tests run
//! beside each other, never beside one that runs alone.

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

static PROCESS: RwLock<()> = RwLock::new(());

/// Held by a test that starts commands: no test that changes the process's signal
/// dispositions or environment runs meanwhile.
pub fn shared() -> RwLockReadGuard<'static, ()> {
    // A test that failed holding the lock left the process as a failed test leaves it: the
    // next test runs all the same, and says what it finds.
    PROCESS.read().unwrap_or_else(PoisonError::into_inner)
}

/// Held by a test that changes the process's signal dispositions or environment, or counts
/// its page faults: no other test of this binary runs meanwhile.
pub fn alone() -> RwLockWriteGuard<'static, ()> {
    PROCESS.write().unwrap_or_else(PoisonError::into_inner)
}
