//! The Fortran subroutines of locks, options, rates and high-level regions (see the parent
//! module for the conventions).

use std::ffi::{c_char, c_float, c_int, c_longlong};

use super::{
    By, CLOCKRATE, DEFDOM, DEFGRN, DOMAIN, GRANUL, INHERIT, OptionUnion, c_string, get_setting,
};
use crate::abi::options::{PAPI_get_opt, PAPI_set_opt};
use crate::abi::{hl, info as c_info, threads};
use crate::codes::EINVAL;

fortran! {
    /// `PAPIF_lock(lock, check)`.
    [papif_lock, papif_lock_, papif_lock__, PAPIF_LOCK]
    (lock: By<c_int>, check: By<c_int>) {
        check.set(threads::PAPI_lock(lock.get()));
    }
    /// `PAPIF_unlock(lock, check)`.
    [papif_unlock, papif_unlock_, papif_unlock__, PAPIF_unlock]
    (lock: By<c_int>, check: By<c_int>) {
        check.set(threads::PAPI_unlock(lock.get()));
    }
    /// `PAPIF_get_clockrate(mhz)`.
    [papif_get_clockrate, papif_get_clockrate_, papif_get_clockrate__, PAPIF_GET_CLOCKRATE]
    (mhz: By<c_int>) {
        // SAFETY: PAPI_CLOCKRATE reads no union.
        mhz.set(unsafe { PAPI_get_opt(CLOCKRATE, std::ptr::null_mut()) });
    }
    /// `PAPIF_get_preload(lib_preload_env, check)`: PAPI's preload option is not offered, so
    /// `PAPI_EINVAL`, as `PAPI_get_opt(PAPI_PRELOAD)` answers here.
    [papif_get_preload, papif_get_preload_, papif_get_preload__, PAPIF_GET_PRELOAD]
    (_preload: *mut c_char, check: By<c_int>, _preload_len: usize) {
        check.set(EINVAL);
    }
    /// `PAPIF_get_granularity(EventSet, granularity, mode, check)`.
    [papif_get_granularity, papif_get_granularity_, papif_get_granularity__, PAPIF_GET_GRANULARITY]
    (event_set: By<c_int>, granularity: By<c_int>, mode: By<c_int>, check: By<c_int>) {
        check.set(get_setting(&event_set, &granularity, mode.get(), (DEFGRN, GRANUL)));
    }
    /// `PAPIF_get_domain(EventSet, domain, mode, check)`.
    [papif_get_domain, papif_get_domain_, papif_get_domain__, PAPIF_GET_DOMAIN]
    (event_set: By<c_int>, domain: By<c_int>, mode: By<c_int>, check: By<c_int>) {
        check.set(get_setting(&event_set, &domain, mode.get(), (DEFDOM, DOMAIN)));
    }
    /// `PAPIF_set_event_domain(EventSet, domain, check)`.
    [papif_set_event_domain, papif_set_event_domain_, papif_set_event_domain__, PAPIF_SET_EVENT_DOMAIN]
    (event_set: By<c_int>, domain: By<c_int>, check: By<c_int>) {
        let mut union = OptionUnion::with(&[0, event_set.get(), domain.get()]);
        // SAFETY: a whole PAPI_option_t.
        check.set(unsafe { PAPI_set_opt(DOMAIN, union.as_ptr()) });
    }
    /// `PAPIF_set_inherit(inherit, check)`: PAPI's wrapper fills only the flag, so the event
    /// set is 0's.
    [papif_set_inherit, papif_set_inherit_, papif_set_inherit__, PAPIF_SET_INHERIT]
    (inherit: By<c_int>, check: By<c_int>) {
        let mut union = OptionUnion::with(&[0, inherit.get()]);
        // SAFETY: a whole PAPI_option_t.
        check.set(unsafe { PAPI_set_opt(INHERIT, union.as_ptr()) });
    }
    /// `PAPIF_ipc(rtime, ptime, ins, ipc, check)`.
    [papif_ipc, papif_ipc_, papif_ipc__, PAPIF_IPC]
    (rtime: By<c_float>, ptime: By<c_float>, ins: By<c_longlong>, ipc: By<c_float>, check: By<c_int>) {
        // SAFETY: NULL or the caller's variables.
        check.set(unsafe { c_info::PAPI_ipc(rtime.ptr(), ptime.ptr(), ins.ptr(), ipc.ptr()) });
    }
    /// `PAPIF_epc(event, rtime, ptime, ref, core, evt, epc, check)`: `event` by value, as
    /// PAPI's wrapper takes it.
    [papif_epc, papif_epc_, papif_epc__, PAPIF_EPC]
    (event: c_int, rtime: By<c_float>, ptime: By<c_float>, reference: By<c_longlong>,
     core: By<c_longlong>, evt: By<c_longlong>, epc: By<c_float>, check: By<c_int>) {
        // SAFETY: NULL or the caller's variables.
        check.set(unsafe {
            c_info::PAPI_epc(event, rtime.ptr(), ptime.ptr(), reference.ptr(), core.ptr(), evt.ptr(), epc.ptr())
        });
    }
    /// `PAPIF_flips_rate(event, rtime, ptime, flpins, mflips, check)`: `event` by value, as
    /// PAPI's wrapper takes it.
    [papif_flips_rate, papif_flips_rate_, papif_flips_rate__, PAPIF_FLIPS_RATE]
    (event: c_int, rtime: By<c_float>, ptime: By<c_float>, count: By<c_longlong>,
     rate: By<c_float>, check: By<c_int>) {
        // SAFETY: NULL or the caller's variables.
        check.set(unsafe {
            c_info::PAPI_flips_rate(event, rtime.ptr(), ptime.ptr(), count.ptr(), rate.ptr())
        });
    }
    /// `PAPIF_flops_rate(event, rtime, ptime, flpops, mflops, check)`: `event` by value, as
    /// PAPI's wrapper takes it.
    [papif_flops_rate, papif_flops_rate_, papif_flops_rate__, PAPIF_FLOPS_RATE]
    (event: c_int, rtime: By<c_float>, ptime: By<c_float>, count: By<c_longlong>,
     rate: By<c_float>, check: By<c_int>) {
        // SAFETY: NULL or the caller's variables.
        check.set(unsafe {
            c_info::PAPI_flops_rate(event, rtime.ptr(), ptime.ptr(), count.ptr(), rate.ptr())
        });
    }
    /// `PAPIF_rate_stop(check)`.
    [papif_rate_stop, papif_rate_stop_, papif_rate_stop__, PAPIF_RATE_STOP]
    (check: By<c_int>) {
        check.set(c_info::PAPI_rate_stop());
    }
    /// `PAPIF_hl_region_begin(name, check)`.
    [papif_hl_region_begin, papif_hl_region_begin_, papif_hl_region_begin__, PAPIF_HL_REGION_BEGIN]
    (name: *const c_char, check: By<c_int>, name_len: usize) {
        // SAFETY: the caller's string of `name_len` bytes.
        let name = unsafe { c_string(name, name_len) };
        // SAFETY: a C string.
        check.set(unsafe { hl::PAPI_hl_region_begin(name.as_ptr()) });
    }
    /// `PAPIF_hl_read(name, check)`.
    [papif_hl_read, papif_hl_read_, papif_hl_read__, PAPIF_HL_READ]
    (name: *const c_char, check: By<c_int>, name_len: usize) {
        // SAFETY: the caller's string of `name_len` bytes.
        let name = unsafe { c_string(name, name_len) };
        // SAFETY: a C string.
        check.set(unsafe { hl::PAPI_hl_read(name.as_ptr()) });
    }
    /// `PAPIF_hl_region_end(name, check)`.
    [papif_hl_region_end, papif_hl_region_end_, papif_hl_region_end__, PAPIF_HL_REGION_END]
    (name: *const c_char, check: By<c_int>, name_len: usize) {
        // SAFETY: the caller's string of `name_len` bytes.
        let name = unsafe { c_string(name, name_len) };
        // SAFETY: a C string.
        check.set(unsafe { hl::PAPI_hl_region_end(name.as_ptr()) });
    }
    /// `PAPIF_hl_stop(check)`.
    [papif_hl_stop, papif_hl_stop_, papif_hl_stop__, PAPIF_HL_STOP]
    (check: By<c_int>) {
        check.set(hl::PAPI_hl_stop());
    }
}
