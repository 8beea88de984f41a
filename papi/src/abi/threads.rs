//! Threads: the thread-id function, the threads PAPI knows (the initialising thread and those
//! registered), their thread-specific data, and the two user locks.

use std::ffi::{c_int, c_ulong, c_void};
use std::sync::atomic::Ordering;

use super::guard;
use super::put;
use crate::codes::{self, EINVAL, EMISC, OK};
use crate::library::with_threads;
use crate::unlocked::UNLOCKED;

/// `PAPI_TLS_ALL_THREADS`.
const ALL_THREADS: c_int = 0x10;

/// Makes the calling thread known (at initialisation and `PAPI_register_thread`).
pub fn know_this_thread() {
    let id = PAPI_thread_id();
    with_threads(|all| {
        if !all.iter().any(|(t, _)| *t == id) {
            all.push((id, [0; 3]));
        }
    });
}

/// Forgets every thread (`PAPI_shutdown`).
pub fn forget_threads() {
    with_threads(Vec::clear);
}

/// `PAPI_thread_init`: remembers the thread-id function.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_thread_init(id_fn: Option<unsafe extern "C" fn() -> c_ulong>) -> c_int {
    guard(|| {
        let Some(f) = id_fn else {
            return EINVAL;
        };
        if crate::unlocked::init_state() == 0 {
            return codes::ENOINIT;
        }
        // The calling thread, known under its old id, is known under the new one from now on.
        let old = PAPI_thread_id();
        UNLOCKED.thread_id_fn.store(f as usize, Ordering::SeqCst);
        let new = PAPI_thread_id();
        with_threads(|all| {
            if all.iter().any(|(t, _)| *t == new) {
                all.retain(|(t, _)| *t != old);
            } else if let Some(entry) = all.iter_mut().find(|(t, _)| *t == old) {
                entry.0 = new;
            }
        });
        crate::unlocked::UNLOCKED
            .init_state
            .fetch_or(4, Ordering::SeqCst);
        OK
    })
}

/// `PAPI_thread_id`: the thread-id function's answer, else the thread's kernel id.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_thread_id() -> c_ulong {
    guard(|| {
        let f = UNLOCKED.thread_id_fn.load(Ordering::SeqCst);
        if f != 0 {
            // SAFETY: a nonzero value was stored from a valid `extern "C" fn() -> c_ulong`.
            let id_fn: unsafe extern "C" fn() -> c_ulong = unsafe { std::mem::transmute(f) };
            // SAFETY: the caller registered a thread-id function callable from any thread.
            return unsafe { id_fn() };
        }
        own_thread_id()
    })
}

/// The calling thread's own id, as a thread-id function (PAPI's `_papi_gettid`, which its rate
/// functions register).
pub extern "C" fn own_id() -> c_ulong {
    own_thread_id()
}

/// The calling thread's kernel id (Linux's `gettid`).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn own_thread_id() -> c_ulong {
    // The system call, not glibc's wrapper (added in glibc 2.30), so that libpapi loads on
    // glibc 2.28 (docs/install.md).
    // SAFETY: gettid takes no arguments and cannot fail.
    (unsafe { libc::syscall(libc::SYS_gettid) }) as c_ulong
}

/// The calling thread's `pthread_self` (systems without `gettid`).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn own_thread_id() -> c_ulong {
    // SAFETY: pthread_self takes no arguments and cannot fail.
    (unsafe { libc::pthread_self() }) as usize as c_ulong
}

/// `PAPI_register_thread`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_register_thread() -> c_int {
    guard(|| {
        if crate::unlocked::init_state() == 0 {
            return codes::ENOINIT;
        }
        know_this_thread();
        OK
    })
}

/// `PAPI_unregister_thread`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_unregister_thread() -> c_int {
    guard(|| {
        if crate::unlocked::init_state() == 0 {
            return codes::ENOINIT;
        }
        let id = PAPI_thread_id();
        with_threads(|all| all.retain(|(t, _)| *t != id)).map_or(EMISC, |()| OK)
    })
}

/// `PAPI_list_threads`: up to `*number` ids (all when `tids` is NULL); `*number` becomes how
/// many threads are known.
///
/// # Safety
/// `tids` is NULL or has room for `*number` ids; `number` points at an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_list_threads(tids: *mut c_ulong, number: *mut c_int) -> c_int {
    guard(|| {
        if number.is_null() {
            return EINVAL;
        }
        // SAFETY: checked non-NULL.
        let room = unsafe { *number };
        let Some(all) = with_threads(|all| all.clone()) else {
            return EMISC;
        };
        if !tids.is_null() {
            let ids: Vec<c_ulong> = all
                .iter()
                .map(|(t, _)| *t)
                .take(room.max(0) as usize)
                .collect();
            // SAFETY: room for `room` >= `ids.len()` ids (the caller's promise).
            unsafe { super::put_all(tids, &ids) };
        }
        // SAFETY: checked non-NULL.
        unsafe { put(number, all.len() as c_int) };
        OK
    })
}

fn slot(tag: c_int) -> Option<usize> {
    usize::try_from(tag & !ALL_THREADS).ok().filter(|&i| i < 3)
}

/// `PAPI_set_thr_specific`.
///
/// # Safety
/// `ptr` is stored, not read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_set_thr_specific(tag: c_int, ptr: *mut c_void) -> c_int {
    guard(|| {
        let Some(i) = slot(tag).filter(|_| tag & ALL_THREADS == 0) else {
            return EINVAL;
        };
        let id = PAPI_thread_id();
        with_threads(|all| match all.iter_mut().find(|(t, _)| *t == id) {
            Some((_, slots)) => slots[i] = ptr as usize,
            None => {
                let mut slots = [0; 3];
                slots[i] = ptr as usize;
                all.push((id, slots));
            }
        })
        .map_or(EMISC, |()| OK)
    })
}

/// `PAPI_all_thr_spec_t`.
#[repr(C)]
struct AllThreads {
    num: c_int,
    id: *mut c_ulong,
    data: *mut *mut c_void,
}

/// `PAPI_get_thr_specific`: the calling thread's slot, or with `PAPI_TLS_ALL_THREADS` every
/// known thread's (into a `PAPI_all_thr_spec_t`, up to its `num`, which becomes the count).
///
/// # Safety
/// `ptr` points at a `void *`, or at a `PAPI_all_thr_spec_t` with `PAPI_TLS_ALL_THREADS`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_thr_specific(tag: c_int, ptr: *mut *mut c_void) -> c_int {
    guard(|| {
        let Some(i) = slot(tag) else {
            return EINVAL;
        };
        if ptr.is_null() {
            return EINVAL;
        }
        let id = PAPI_thread_id();
        let Some(all) = with_threads(|all| all.clone()) else {
            return EMISC;
        };
        if tag & ALL_THREADS != 0 {
            let spec = ptr.cast::<AllThreads>();
            // SAFETY: the caller's PAPI_all_thr_spec_t (checked non-NULL).
            let spec = unsafe { &mut *spec };
            let (room, id_out, data_out) = (spec.num, spec.id, spec.data);
            let room = room.max(0) as usize;
            let n = room.min(all.len());
            let ids: Vec<c_ulong> = all.iter().take(n).map(|(t, _)| *t).collect();
            let data: Vec<*mut c_void> = all
                .iter()
                .take(n)
                .map(|(_, s)| s[i] as *mut c_void)
                .collect();
            // SAFETY: the caller's arrays hold `num` >= `n` entries (or are NULL).
            unsafe { super::put_all(id_out, &ids) };
            // SAFETY: as above.
            unsafe { super::put_all(data_out, &data) };
            spec.num = all.len() as c_int;
            return OK;
        }
        let value = all.iter().find(|(t, _)| *t == id).map_or(0, |(_, s)| s[i]);
        // SAFETY: checked non-NULL; the caller's `void *`.
        unsafe { put(ptr, value as *mut c_void) };
        OK
    })
}

/// `PAPI_lock`: user lock 0 or 1.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_lock(lock: c_int) -> c_int {
    guard(|| {
        let Some(l) = usize::try_from(lock)
            .ok()
            .and_then(|i| UNLOCKED.user_locks.get(i))
        else {
            return EINVAL;
        };
        while l
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::thread::yield_now();
        }
        OK
    })
}

/// `PAPI_unlock`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_unlock(lock: c_int) -> c_int {
    guard(|| {
        let Some(l) = usize::try_from(lock)
            .ok()
            .and_then(|i| UNLOCKED.user_locks.get(i))
        else {
            return EINVAL;
        };
        l.store(false, Ordering::Release);
        OK
    })
}
