//! PAPI's Fortran interface: the `papif_*` subroutines, each under the four names a Fortran
//! compiler may call it by (`papif_start`, `papif_start_`, `papif_start__`, `PAPIF_START`;
//! PAPI 7.0 spells three of the capital names in part lower case: `PAPIF_num_hwctrs`,
//! `PAPIF_num_cmp_hwctrs`, `PAPIF_unlock`).
//!
//! Fortran passes every argument by reference ([`By`]) and, after the last argument, the
//! length of each `CHARACTER` argument by value (`size_t` with gfortran 8 and later). Each
//! subroutine returns its status through its last `INTEGER` argument (`check`), as PAPI's;
//! strings coming in lose their trailing blanks and are cut at `PAPI_MAX_STR_LEN - 1` bytes,
//! strings going out are padded with blanks to their declared length. The constants are in
//! `include/fpapi.h` (for the C preprocessor), `include/f77papi.h` and `include/f90papi.h`
//! (for Fortran's `INCLUDE`, fixed and free form).
//!
//! # Safety
//! Every pointer is one a Fortran caller passes: valid for the `INTEGER`, `INTEGER*8`, `REAL`
//! or array PAPI's Fortran interface documents, each string valid for its hidden length. A
//! NULL reference (a C caller's mistake) reads as zero and is not written.

// Some subroutines (get_event_info, get_hardware_info, ...) take PAPI's long argument lists.
#![allow(clippy::too_many_arguments)]

use std::ffi::{CString, c_char, c_float, c_int, c_longlong, c_ulong};

use super::options::{self, PAPI_get_opt};
use super::{info as c_info, threads};
use crate::codes::{EINVAL, OK};
use crate::info::MAX_STR;

/// An argument Fortran passes by reference: the address of one `INTEGER`, `INTEGER*8` or
/// `REAL`. Only a caller of these subroutines makes one (its field is private), under their
/// contract; a NULL one reads as zero and is not written.
#[repr(transparent)]
pub struct By<T>(*mut T);

impl<T: Copy + Default> By<T> {
    /// The value, zero for NULL.
    fn get(&self) -> T {
        if self.0.is_null() {
            return T::default();
        }
        // SAFETY: a non-NULL `By` is a Fortran caller's valid reference (the contract).
        unsafe { self.0.read() }
    }

    /// Writes `value` (nothing for NULL).
    fn set(&self, value: T) {
        if !self.0.is_null() {
            // SAFETY: as in `get`.
            unsafe { self.0.write(value) };
        }
    }

    /// The address, for PAPI's C functions that read or write through it.
    fn ptr(&self) -> *mut T {
        self.0
    }
}

/// Defines each subroutine under its first name and the three others as calls of it.
macro_rules! fortran {
    ($(
        $(#[doc = $doc:literal])*
        [$name:ident, $under:ident, $double:ident, $caps:ident]
        ($($arg:ident: $ty:ty),* $(,)?) $body:block
    )*) => {$(
        $(#[doc = $doc])*
        ///
        /// # Safety
        /// The references and lengths a Fortran caller passes (see the module's documentation).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) {
            crate::abi::guard(|| $body)
        }
        fortran!(@alias $name, $under, ($($arg: $ty),*));
        fortran!(@alias $name, $double, ($($arg: $ty),*));
        fortran!(@alias $name, $caps, ($($arg: $ty),*));
    )*};
    (@alias $name:ident, $alias:ident, ($($arg:ident: $ty:ty),*)) => {
        #[doc = concat!("`", stringify!($name), "` as a Fortran compiler may spell it.")]
        ///
        /// # Safety
        #[doc = concat!("As `", stringify!($name), "`'s.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $alias($($arg: $ty),*) {
            // SAFETY: the same arguments, under the same contract.
            unsafe { $name($($arg),*) }
        }
    };
}

// After the macro, which they use.
mod devices;
mod settings;

/// A Fortran string as a C string: up to its length or a NUL, trailing blanks removed, cut
/// at `PAPI_MAX_STR_LEN - 1` bytes, as PAPI's wrappers do.
///
/// # Safety
/// `p` is NULL or valid for `len` bytes.
unsafe fn c_string(p: *const c_char, len: usize) -> CString {
    if p.is_null() {
        return CString::default();
    }
    // SAFETY: `p` holds `len` bytes (the caller's promise).
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) };
    let bytes = &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(len)];
    let bytes = &bytes[..bytes.len().min(MAX_STR - 1)];
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    CString::new(&bytes[..end]).unwrap_or_default()
}

/// Copies `text` (up to its first NUL) into a Fortran string of `len` bytes, blank-padded.
///
/// # Safety
/// `p` is NULL or valid for `len` bytes.
unsafe fn f_string(p: *mut c_char, len: usize, text: &[u8]) {
    if p.is_null() {
        return;
    }
    let text = &text[..text.iter().position(|&b| b == 0).unwrap_or(text.len())];
    // SAFETY: `p` holds `len` bytes (the caller's promise).
    let target = unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) };
    let n = text.len().min(len);
    target[..n].copy_from_slice(&text[..n]);
    target[n..].fill(b' ');
}

/// `PAPI_option_t` as ints (264 bytes, aligned as its pointers), for the options read and
/// set here.
#[repr(C, align(8))]
struct OptionUnion([c_int; 66]);

impl OptionUnion {
    /// A union whose first ints are `ints`.
    fn with(ints: &[c_int]) -> Self {
        let mut u = Self([0; 66]);
        u.0[..ints.len()].copy_from_slice(ints);
        u
    }

    fn as_ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr().cast()
    }
}

/// `PAPI_DEFDOM`, `PAPI_DOMAIN`, `PAPI_DEFGRN`, `PAPI_GRANUL`, `PAPI_CLOCKRATE`,
/// `PAPI_EXEINFO`, `PAPI_INHERIT`.
const DEFDOM: c_int = 4;
const DOMAIN: c_int = 5;
const DEFGRN: c_int = 6;
const GRANUL: c_int = 7;
const CLOCKRATE: c_int = 14;
const EXEINFO: c_int = 17;
const INHERIT: c_int = 28;

/// `papif_get_domain` and `papif_get_granularity`: the default (mode `PAPI_DEFDOM` /
/// `PAPI_DEFGRN`) or an event set's (mode `PAPI_DOMAIN` / `PAPI_GRANUL`), as PAPI's wrappers.
fn get_setting(
    event_set: &By<c_int>,
    value: &By<c_int>,
    mode: c_int,
    (default, of_set): (c_int, c_int),
) -> c_int {
    if mode == default {
        // SAFETY: the default options read no union.
        value.set(unsafe { PAPI_get_opt(mode, std::ptr::null_mut()) });
        OK
    } else if mode == of_set {
        // def_cidx, eventset, value: PAPI_domain_option_t / PAPI_granularity_option_t.
        let mut union = OptionUnion::with(&[0, event_set.get()]);
        // SAFETY: a whole PAPI_option_t.
        let status = unsafe { PAPI_get_opt(mode, union.as_ptr()) };
        if status < OK {
            return status;
        }
        value.set(union.0[2]);
        OK
    } else {
        EINVAL
    }
}

/// `PAPI_get_event_info`'s strings and count into Fortran's arguments, the status.
///
/// # Safety
/// Each string pointer is NULL or valid for its length.
unsafe fn event_info(
    event: c_int,
    [symbol, long_descr, short_descr, note]: [(*mut c_char, usize); 4],
    count: &By<c_int>,
) -> c_int {
    match crate::natives::event_info(event) {
        Ok(info) => {
            for ((p, len), text) in [symbol, long_descr, short_descr, note].into_iter().zip([
                &info.symbol[..],
                &info.long_descr[..],
                &info.short_descr[..],
                &info.note[..],
            ]) {
                // SAFETY: the caller's string of `len` bytes.
                unsafe { f_string(p, len, text) };
            }
            count.set(info.count as c_int);
            OK
        }
        Err(e) => e,
    }
}

fortran! {
    /// `PAPIF_accum(EventSet, values, check)`.
    [papif_accum, papif_accum_, papif_accum__, PAPIF_ACCUM]
    (event_set: By<c_int>, values: *mut c_longlong, check: By<c_int>) {
        // SAFETY: `values` is the caller's array of the set's length.
        check.set(unsafe { super::PAPI_accum(event_set.get(), values) });
    }
    /// `PAPIF_add_event(EventSet, EventCode, check)`.
    [papif_add_event, papif_add_event_, papif_add_event__, PAPIF_ADD_EVENT]
    (event_set: By<c_int>, event: By<c_int>, check: By<c_int>) {
        check.set(super::PAPI_add_event(event_set.get(), event.get()));
    }
    /// `PAPIF_add_named_event(EventSet, EventName, check)`.
    [papif_add_named_event, papif_add_named_event_, papif_add_named_event__, PAPIF_ADD_NAMED_EVENT]
    (event_set: By<c_int>, name: *const c_char, check: By<c_int>, name_len: usize) {
        // SAFETY: the caller's string of `name_len` bytes.
        let name = unsafe { c_string(name, name_len) };
        // SAFETY: a C string.
        check.set(unsafe { super::PAPI_add_named_event(event_set.get(), name.as_ptr()) });
    }
    /// `PAPIF_add_events(EventSet, EventCodes, number, check)`.
    [papif_add_events, papif_add_events_, papif_add_events__, PAPIF_ADD_EVENTS]
    (event_set: By<c_int>, events: *mut c_int, number: By<c_int>, check: By<c_int>) {
        // SAFETY: `events` is the caller's array of `number` codes.
        check.set(unsafe { super::PAPI_add_events(event_set.get(), events, number.get()) });
    }
    /// `PAPIF_cleanup_eventset(EventSet, check)`.
    [papif_cleanup_eventset, papif_cleanup_eventset_, papif_cleanup_eventset__, PAPIF_CLEANUP_EVENTSET]
    (event_set: By<c_int>, check: By<c_int>) {
        check.set(super::PAPI_cleanup_eventset(event_set.get()));
    }
    /// `PAPIF_create_eventset(EventSet, check)`: `EventSet` holds `PAPI_NULL` going in.
    [papif_create_eventset, papif_create_eventset_, papif_create_eventset__, PAPIF_CREATE_EVENTSET]
    (event_set: By<c_int>, check: By<c_int>) {
        // SAFETY: NULL or the caller's INTEGER.
        check.set(unsafe { super::PAPI_create_eventset(event_set.ptr()) });
    }
    /// `PAPIF_assign_eventset_component(EventSet, cidx, check)`.
    [papif_assign_eventset_component, papif_assign_eventset_component_, papif_assign_eventset_component__, PAPIF_ASSIGN_EVENTSET_COMPONENT]
    (event_set: By<c_int>, cidx: By<c_int>, check: By<c_int>) {
        check.set(c_info::PAPI_assign_eventset_component(event_set.get(), cidx.get()));
    }
    /// `PAPIF_destroy_eventset(EventSet, check)`.
    [papif_destroy_eventset, papif_destroy_eventset_, papif_destroy_eventset__, PAPIF_DESTROY_EVENTSET]
    (event_set: By<c_int>, check: By<c_int>) {
        // SAFETY: NULL or the caller's INTEGER.
        check.set(unsafe { super::PAPI_destroy_eventset(event_set.ptr()) });
    }
    /// `PAPIF_get_dmem_info(values, check)`: `values` an `INTEGER*8` array of
    /// `PAPIF_DMEM_MAXVAL`, indexed by the `PAPIF_DMEM_*` constants.
    [papif_get_dmem_info, papif_get_dmem_info_, papif_get_dmem_info__, PAPIF_GET_DMEM_INFO]
    (dest: *mut c_longlong, check: By<c_int>) {
        // SAFETY: the caller's array of PAPIF_DMEM_MAXVAL (12) INTEGER*8.
        check.set(unsafe { c_info::PAPI_get_dmem_info(dest.cast()) });
    }
    /// `PAPIF_get_exe_info(fullname, name, text_start, text_end, data_start, data_end,
    /// bss_start, bss_end, check)`.
    [papif_get_exe_info, papif_get_exe_info_, papif_get_exe_info__, PAPIF_GET_EXE_INFO]
    (fullname: *mut c_char, name: *mut c_char, text_start: By<c_longlong>,
     text_end: By<c_longlong>, data_start: By<c_longlong>, data_end: By<c_longlong>,
     bss_start: By<c_longlong>, bss_end: By<c_longlong>, check: By<c_int>,
     fullname_len: usize, name_len: usize) {
        let mut union = OptionUnion::with(&[]);
        // SAFETY: a whole PAPI_option_t.
        let status = unsafe { PAPI_get_opt(EXEINFO, union.as_ptr()) };
        check.set(status);
        // SAFETY: NULL or the library's own, which lives as long as the process.
        let Some(exe) = (unsafe { c_info::PAPI_get_executable_info().as_ref() }) else {
            return;
        };
        if status != OK {
            return;
        }
        // SAFETY: the caller's string of `fullname_len` bytes.
        unsafe { f_string(fullname, fullname_len, &exe.fullname) };
        // SAFETY: the caller's string of `name_len` bytes.
        unsafe { f_string(name, name_len, &exe.address_info.name) };
        for (p, v) in [text_start, text_end, data_start, data_end, bss_start, bss_end]
            .into_iter()
            .zip(exe.address_info.ranges)
        {
            p.set(v as c_longlong);
        }
    }
    /// `PAPIF_get_hardware_info(ncpu, nnodes, totalcpus, vendor, vendor_string, model,
    /// model_string, revision, mhz)`: zeros before `PAPIF_library_init`.
    [papif_get_hardware_info, papif_get_hardware_info_, papif_get_hardware_info__, PAPIF_GET_HARDWARE_INFO]
    (ncpu: By<c_int>, nnodes: By<c_int>, totalcpus: By<c_int>, vendor: By<c_int>,
     vendor_string: *mut c_char, model: By<c_int>, model_string: *mut c_char,
     revision: By<c_float>, mhz: By<c_float>, vendor_len: usize, model_len: usize) {
        // SAFETY: NULL or the library's own, which lives as long as the process.
        let Some(hw) = (unsafe { c_info::PAPI_get_hardware_info().as_ref() }) else {
            for p in [ncpu, nnodes, totalcpus, vendor, model] {
                p.set(0);
            }
            revision.set(0.0);
            mhz.set(0.0);
            return;
        };
        ncpu.set(hw.ncpu);
        nnodes.set(hw.nnodes);
        totalcpus.set(hw.totalcpus);
        vendor.set(hw.vendor);
        model.set(hw.model);
        revision.set(hw.revision);
        mhz.set(hw.cpu_max_mhz as c_float);
        // SAFETY: the caller's string of `vendor_len` bytes.
        unsafe { f_string(vendor_string, vendor_len, &hw.vendor_string) };
        // SAFETY: the caller's string of `model_len` bytes.
        unsafe { f_string(model_string, model_len, &hw.model_string) };
    }
    /// `PAPIF_num_hwctrs(num)`.
    [papif_num_hwctrs, papif_num_hwctrs_, papif_num_hwctrs__, PAPIF_num_hwctrs]
    (num: By<c_int>) {
        num.set(c_info::PAPI_num_hwctrs());
    }
    /// `PAPIF_num_cmp_hwctrs(cidx, num)`.
    [papif_num_cmp_hwctrs, papif_num_cmp_hwctrs_, papif_num_cmp_hwctrs__, PAPIF_num_cmp_hwctrs]
    (cidx: By<c_int>, num: By<c_int>) {
        num.set(c_info::PAPI_num_cmp_hwctrs(cidx.get()));
    }
    /// `PAPIF_get_real_cyc(cycles)`.
    [papif_get_real_cyc, papif_get_real_cyc_, papif_get_real_cyc__, PAPIF_GET_REAL_CYC]
    (cycles: By<c_longlong>) {
        cycles.set(c_info::PAPI_get_real_cyc());
    }
    /// `PAPIF_get_real_usec(time)`.
    [papif_get_real_usec, papif_get_real_usec_, papif_get_real_usec__, PAPIF_GET_REAL_USEC]
    (time: By<c_longlong>) {
        time.set(c_info::PAPI_get_real_usec());
    }
    /// `PAPIF_get_real_nsec(time)`.
    [papif_get_real_nsec, papif_get_real_nsec_, papif_get_real_nsec__, PAPIF_GET_REAL_NSEC]
    (time: By<c_longlong>) {
        time.set(c_info::PAPI_get_real_nsec());
    }
    /// `PAPIF_get_virt_cyc(cycles)`.
    [papif_get_virt_cyc, papif_get_virt_cyc_, papif_get_virt_cyc__, PAPIF_GET_VIRT_CYC]
    (cycles: By<c_longlong>) {
        cycles.set(c_info::PAPI_get_virt_cyc());
    }
    /// `PAPIF_get_virt_usec(time)`.
    [papif_get_virt_usec, papif_get_virt_usec_, papif_get_virt_usec__, PAPIF_GET_VIRT_USEC]
    (time: By<c_longlong>) {
        time.set(c_info::PAPI_get_virt_usec());
    }
    /// `PAPIF_is_initialized(level)`.
    [papif_is_initialized, papif_is_initialized_, papif_is_initialized__, PAPIF_IS_INITIALIZED]
    (level: By<c_int>) {
        level.set(super::PAPI_is_initialized());
    }
    /// `PAPIF_library_init(check)`: `check` holds `PAPI_VER_CURRENT` going in.
    [papif_library_init, papif_library_init_, papif_library_init__, PAPIF_LIBRARY_INIT]
    (check: By<c_int>) {
        check.set(super::PAPI_library_init(check.get()));
    }
    /// `PAPIF_thread_id(id)`.
    [papif_thread_id, papif_thread_id_, papif_thread_id__, PAPIF_THREAD_ID]
    (id: By<c_ulong>) {
        id.set(threads::PAPI_thread_id());
    }
    /// `PAPIF_register_thread(check)`.
    [papif_register_thread, papif_register_thread_, papif_register_thread__, PAPIF_REGISTER_THREAD]
    (check: By<c_int>) {
        check.set(threads::PAPI_register_thread());
    }
    /// `PAPIF_unregister_thread(check)`.
    [papif_unregister_thread, papif_unregister_thread_, papif_unregister_thread__, PAPIF_UNREGISTER_THREAD]
    (check: By<c_int>) {
        check.set(threads::PAPI_unregister_thread());
    }
    /// `PAPIF_unregster_thread(check)`: PAPI's long-standing misspelling, kept by PAPI.
    [papif_unregster_thread, papif_unregster_thread_, papif_unregster_thread__, PAPIF_UNREGSTER_THREAD]
    (check: By<c_int>) {
        check.set(threads::PAPI_unregister_thread());
    }
    /// `PAPIF_thread_init(handle, check)`: `handle` an `EXTERNAL` or `INTRINSIC` function
    /// (Fortran passes the function itself).
    [papif_thread_init, papif_thread_init_, papif_thread_init__, PAPIF_THREAD_INIT]
    (handle: Option<unsafe extern "C" fn() -> c_ulong>, check: By<c_int>) {
        check.set(threads::PAPI_thread_init(handle));
    }
    /// `PAPIF_list_events(EventSet, Events, number, check)`: `number` in and out.
    [papif_list_events, papif_list_events_, papif_list_events__, PAPIF_LIST_EVENTS]
    (event_set: By<c_int>, events: *mut c_int, number: By<c_int>, check: By<c_int>) {
        // SAFETY: `events` is the caller's array of `number` INTEGERs.
        check.set(unsafe { super::PAPI_list_events(event_set.get(), events, number.ptr()) });
    }
    /// `PAPIF_multiplex_init(check)`.
    [papif_multiplex_init, papif_multiplex_init_, papif_multiplex_init__, PAPIF_MULTIPLEX_INIT]
    (check: By<c_int>) {
        check.set(super::PAPI_multiplex_init());
    }
    /// `PAPIF_get_multiplex(EventSet, check)`.
    [papif_get_multiplex, papif_get_multiplex_, papif_get_multiplex__, PAPIF_GET_MULTIPLEX]
    (event_set: By<c_int>, check: By<c_int>) {
        check.set(super::PAPI_get_multiplex(event_set.get()));
    }
    /// `PAPIF_set_multiplex(EventSet, check)`.
    [papif_set_multiplex, papif_set_multiplex_, papif_set_multiplex__, PAPIF_SET_MULTIPLEX]
    (event_set: By<c_int>, check: By<c_int>) {
        check.set(super::PAPI_set_multiplex(event_set.get()));
    }
    /// `PAPIF_perror(message)`.
    [papif_perror, papif_perror_, papif_perror__, PAPIF_PERROR]
    (message: *const c_char, message_len: usize) {
        // SAFETY: the caller's string of `message_len` bytes.
        let message = unsafe { c_string(message, message_len) };
        // SAFETY: a C string.
        unsafe { c_info::PAPI_perror(message.as_ptr()) };
    }
    /// `PAPIF_query_event(EventCode, check)`.
    [papif_query_event, papif_query_event_, papif_query_event__, PAPIF_QUERY_EVENT]
    (event: By<c_int>, check: By<c_int>) {
        check.set(super::PAPI_query_event(event.get()));
    }
    /// `PAPIF_query_named_event(EventName, check)`.
    [papif_query_named_event, papif_query_named_event_, papif_query_named_event__, PAPIF_QUERY_NAMED_EVENT]
    (name: *const c_char, check: By<c_int>, name_len: usize) {
        // SAFETY: the caller's string of `name_len` bytes.
        let name = unsafe { c_string(name, name_len) };
        // SAFETY: a C string.
        check.set(unsafe { super::PAPI_query_named_event(name.as_ptr()) });
    }
    /// `PAPIF_get_event_info(EventCode, symbol, long_descr, short_descr, count, event_note,
    /// flags, check)`: `flags` is not written, as PAPI's.
    [papif_get_event_info, papif_get_event_info_, papif_get_event_info__, PAPIF_GET_EVENT_INFO]
    (event: By<c_int>, symbol: *mut c_char, long_descr: *mut c_char,
     short_descr: *mut c_char, count: By<c_int>, note: *mut c_char, _flags: By<c_int>,
     check: By<c_int>, symbol_len: usize, long_descr_len: usize, short_descr_len: usize,
     note_len: usize) {
        let strings = [
            (symbol, symbol_len),
            (long_descr, long_descr_len),
            (short_descr, short_descr_len),
            (note, note_len),
        ];
        // SAFETY: the caller's strings of their lengths.
        check.set(unsafe { event_info(event.get(), strings, &count) });
    }
    /// `PAPIF_event_code_to_name(EventCode, EventName, check)`.
    [papif_event_code_to_name, papif_event_code_to_name_, papif_event_code_to_name__, PAPIF_EVENT_CODE_TO_NAME]
    (event: By<c_int>, name: *mut c_char, check: By<c_int>, name_len: usize) {
        let mut buffer = [0 as c_char; MAX_STR];
        // SAFETY: a buffer of PAPI_MAX_STR_LEN bytes.
        check.set(unsafe { super::PAPI_event_code_to_name(event.get(), buffer.as_mut_ptr()) });
        // SAFETY: the caller's string of `name_len` bytes.
        unsafe { f_string(name, name_len, &buffer.map(|c| u8::from_ne_bytes(c.to_ne_bytes()))) };
    }
    /// `PAPIF_event_name_to_code(EventName, EventCode, check)`.
    [papif_event_name_to_code, papif_event_name_to_code_, papif_event_name_to_code__, PAPIF_EVENT_NAME_TO_CODE]
    (name: *const c_char, event: By<c_int>, check: By<c_int>, name_len: usize) {
        // SAFETY: the caller's string of `name_len` bytes.
        let name = unsafe { c_string(name, name_len) };
        // SAFETY: a C string, and NULL or the caller's INTEGER.
        check.set(unsafe { super::PAPI_event_name_to_code(name.as_ptr(), event.ptr()) });
    }
    /// `PAPIF_num_events(EventSet, count)`.
    [papif_num_events, papif_num_events_, papif_num_events__, PAPIF_NUM_EVENTS]
    (event_set: By<c_int>, count: By<c_int>) {
        count.set(super::PAPI_num_events(event_set.get()));
    }
    /// `PAPIF_enum_event(EventCode, modifier, check)`: `EventCode` in and out.
    [papif_enum_event, papif_enum_event_, papif_enum_event__, PAPIF_ENUM_EVENT]
    (event: By<c_int>, modifier: By<c_int>, check: By<c_int>) {
        // SAFETY: NULL or the caller's INTEGER.
        check.set(unsafe { super::PAPI_enum_event(event.ptr(), modifier.get()) });
    }
    /// `PAPIF_read(EventSet, values, check)`.
    [papif_read, papif_read_, papif_read__, PAPIF_READ]
    (event_set: By<c_int>, values: *mut c_longlong, check: By<c_int>) {
        // SAFETY: `values` is the caller's array of the set's length.
        check.set(unsafe { super::PAPI_read(event_set.get(), values) });
    }
    /// `PAPIF_read_ts(EventSet, values, cycles, check)`.
    [papif_read_ts, papif_read_ts_, papif_read_ts__, PAPIF_READ_TS]
    (event_set: By<c_int>, values: *mut c_longlong, cycles: By<c_longlong>, check: By<c_int>) {
        // SAFETY: `values` is the caller's array of the set's length.
        check.set(unsafe { super::PAPI_read_ts(event_set.get(), values, cycles.ptr()) });
    }
    /// `PAPIF_remove_event(EventSet, EventCode, check)`.
    [papif_remove_event, papif_remove_event_, papif_remove_event__, PAPIF_REMOVE_EVENT]
    (event_set: By<c_int>, event: By<c_int>, check: By<c_int>) {
        check.set(super::PAPI_remove_event(event_set.get(), event.get()));
    }
    /// `PAPIF_remove_named_event(EventSet, EventName, check)`.
    [papif_remove_named_event, papif_remove_named_event_, papif_remove_named_event__, PAPIF_REMOVE_NAMED_EVENT]
    (event_set: By<c_int>, name: *const c_char, check: By<c_int>, name_len: usize) {
        // SAFETY: the caller's string of `name_len` bytes.
        let name = unsafe { c_string(name, name_len) };
        // SAFETY: a C string.
        check.set(unsafe { super::PAPI_remove_named_event(event_set.get(), name.as_ptr()) });
    }
    /// `PAPIF_remove_events(EventSet, EventCodes, number, check)`.
    [papif_remove_events, papif_remove_events_, papif_remove_events__, PAPIF_REMOVE_EVENTS]
    (event_set: By<c_int>, events: *mut c_int, number: By<c_int>, check: By<c_int>) {
        // SAFETY: `events` is the caller's array of `number` codes.
        check.set(unsafe { super::PAPI_remove_events(event_set.get(), events, number.get()) });
    }
    /// `PAPIF_reset(EventSet, check)`.
    [papif_reset, papif_reset_, papif_reset__, PAPIF_RESET]
    (event_set: By<c_int>, check: By<c_int>) {
        check.set(super::PAPI_reset(event_set.get()));
    }
    /// `PAPIF_set_debug(level, check)`.
    [papif_set_debug, papif_set_debug_, papif_set_debug__, PAPIF_SET_DEBUG]
    (level: By<c_int>, check: By<c_int>) {
        check.set(super::PAPI_set_debug(level.get()));
    }
    /// `PAPIF_set_domain(domain, check)`: the default domain.
    [papif_set_domain, papif_set_domain_, papif_set_domain__, PAPIF_SET_DOMAIN]
    (domain: By<c_int>, check: By<c_int>) {
        check.set(options::PAPI_set_domain(domain.get()));
    }
    /// `PAPIF_set_cmp_domain(domain, cidx, check)`.
    [papif_set_cmp_domain, papif_set_cmp_domain_, papif_set_cmp_domain__, PAPIF_SET_CMP_DOMAIN]
    (domain: By<c_int>, cidx: By<c_int>, check: By<c_int>) {
        check.set(options::PAPI_set_cmp_domain(domain.get(), cidx.get()));
    }
    /// `PAPIF_set_granularity(granularity, check)`.
    [papif_set_granularity, papif_set_granularity_, papif_set_granularity__, PAPIF_SET_GRANULARITY]
    (granularity: By<c_int>, check: By<c_int>) {
        check.set(options::PAPI_set_granularity(granularity.get()));
    }
    /// `PAPIF_set_cmp_granularity(granularity, cidx, check)`.
    [papif_set_cmp_granularity, papif_set_cmp_granularity_, papif_set_cmp_granularity__, PAPIF_SET_CMP_GRANULARITY]
    (granularity: By<c_int>, cidx: By<c_int>, check: By<c_int>) {
        check.set(options::PAPI_set_cmp_granularity(granularity.get(), cidx.get()));
    }
    /// `PAPIF_shutdown()`.
    [papif_shutdown, papif_shutdown_, papif_shutdown__, PAPIF_SHUTDOWN]
    () {
        super::PAPI_shutdown();
    }
    /// `PAPIF_start(EventSet, check)`.
    [papif_start, papif_start_, papif_start__, PAPIF_START]
    (event_set: By<c_int>, check: By<c_int>) {
        check.set(super::PAPI_start(event_set.get()));
    }
    /// `PAPIF_state(EventSet, status, check)`.
    [papif_state, papif_state_, papif_state__, PAPIF_STATE]
    (event_set: By<c_int>, status: By<c_int>, check: By<c_int>) {
        // SAFETY: NULL or the caller's INTEGER.
        check.set(unsafe { super::PAPI_state(event_set.get(), status.ptr()) });
    }
    /// `PAPIF_stop(EventSet, values, check)`.
    [papif_stop, papif_stop_, papif_stop__, PAPIF_STOP]
    (event_set: By<c_int>, values: *mut c_longlong, check: By<c_int>) {
        // SAFETY: `values` is the caller's array of the set's length.
        check.set(unsafe { super::PAPI_stop(event_set.get(), values) });
    }
    /// `PAPIF_write(EventSet, values, check)`.
    [papif_write, papif_write_, papif_write__, PAPIF_WRITE]
    (event_set: By<c_int>, values: *mut c_longlong, check: By<c_int>) {
        // SAFETY: `values` is the caller's array of the set's length.
        check.set(unsafe { super::PAPI_write(event_set.get(), values) });
    }
}
