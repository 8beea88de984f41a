//! PAPI's timers, system facts, components, messages, threads and the calls this library
//! answers with `PAPI_ENOSUPP`.

use std::borrow::Cow;
use std::ffi::{c_char, c_int, c_longlong, c_void};

use super::guard;
use super::{put, text};
use crate::codes::{self, EINVAL, ENOCMP, ENOEVNT, OK};
use crate::info::{self, ComponentInfo, ExeInfo, HwInfo, ShlibInfo};
use crate::release;
use crate::{library, rates, sets};
use counterhal_system::MemorySize;

// The device interface's functions, where the Fortran wrappers call them.
pub use super::devices::{PAPI_enum_dev_type, PAPI_get_dev_attr, PAPI_get_dev_type_attr};

/// The hardware facts of the process's system, kept for the process; gathered afresh (and not
/// kept) from a signal handler that interrupted a call holding the library's lock.
pub fn hardware() -> Cow<'static, HwInfo> {
    let system = crate::unlocked::system();
    match library::keep(|kept| kept.hardware(system)) {
        Some(kept) => Cow::Borrowed(kept),
        None => Cow::Owned(info::hardware(system)),
    }
}

/// `PAPI_get_real_nsec`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_real_nsec() -> c_longlong {
    guard(|| facade::time::real_ns() as c_longlong)
}

/// `PAPI_get_real_usec`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_real_usec() -> c_longlong {
    guard(|| (facade::time::real_ns() / 1000) as c_longlong)
}

fn mhz() -> u64 {
    (hardware().cpu_max_mhz.max(1)) as u64
}

/// `PAPI_get_real_cyc`: the time-stamp counter where it is a clock, else microseconds times
/// the clock rate in MHz.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_real_cyc() -> c_longlong {
    guard(|| match facade::time::cycles() {
        Some(cycles) => cycles as c_longlong,
        None => (facade::time::real_ns() / 1000 * mhz()) as c_longlong,
    })
}

/// `PAPI_get_virt_nsec`: the calling thread's CPU time.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_virt_nsec() -> c_longlong {
    guard(|| facade::time::thread_cpu_ns() as c_longlong)
}

/// `PAPI_get_virt_usec`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_virt_usec() -> c_longlong {
    guard(|| (facade::time::thread_cpu_ns() / 1000) as c_longlong)
}

/// `PAPI_get_virt_cyc`: CPU time in microseconds times the clock rate in MHz.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_virt_cyc() -> c_longlong {
    guard(|| (facade::time::thread_cpu_ns() / 1000 * mhz()) as c_longlong)
}

/// `PAPI_get_hardware_info`: NULL before initialisation, as PAPI's.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_hardware_info() -> *const HwInfo {
    guard(|| {
        if crate::unlocked::init_state() == 0 {
            return std::ptr::null();
        }
        match hardware() {
            Cow::Borrowed(kept) => kept,
            Cow::Owned(_) => std::ptr::null(),
        }
    })
}

/// `PAPI_get_executable_info`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_executable_info() -> *const ExeInfo {
    guard(|| {
        if crate::unlocked::init_state() == 0 {
            return std::ptr::null();
        }
        library::keep(|kept| kept.executable(crate::unlocked::system()) as *const ExeInfo)
            .unwrap_or(std::ptr::null())
    })
}

/// `PAPI_get_shared_lib_info`: the libraries mapped when first asked.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_shared_lib_info() -> *const ShlibInfo {
    guard(|| {
        if crate::unlocked::init_state() == 0 {
            return std::ptr::null();
        }
        library::keep(|kept| kept.shared_libraries(crate::unlocked::system()) as *const ShlibInfo)
            .unwrap_or(std::ptr::null())
    })
}

/// `PAPI_get_dmem_info`: this process's status's memory lines (`/proc/self/status`), in KiB,
/// as PAPI's.
///
/// # Safety
/// `dest` points at a `PAPI_dmem_info_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_dmem_info(dest: *mut [c_longlong; 12]) -> c_int {
    guard(|| {
        if dest.is_null() {
            return EINVAL;
        }
        let Some(status) = crate::unlocked::system().process_status("self") else {
            return codes::ESYS;
        };
        let field = |size: MemorySize| -> c_longlong {
            status
                .kib(size)
                .and_then(|kib| c_longlong::try_from(kib).ok())
                .unwrap_or(-1)
        };
        let values = [
            field(MemorySize::Peak),
            field(MemorySize::Virtual),
            field(MemorySize::Resident),
            field(MemorySize::ResidentPeak),
            field(MemorySize::ResidentShared),
            field(MemorySize::Text),
            field(MemorySize::Libraries),
            field(MemorySize::Data),
            field(MemorySize::Locked),
            field(MemorySize::Stack),
            // SAFETY: sysconf reads a system constant.
            unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as c_longlong,
            field(MemorySize::PageTables),
        ];
        // SAFETY: checked non-NULL; the caller's PAPI_dmem_info_t (twelve long longs).
        unsafe { put(dest, values) };
        OK
    })
}

/// `PAPI_num_components`: the backend's, `perf_event_uncore`, `sde`, `powercap` and
/// `sysdetect`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_num_components() -> c_int {
    guard(|| crate::devices::COMPONENTS)
}

/// `PAPI_get_component_info`: NULL for a component past the last, or before initialisation
/// (component 0's description answers before it); in the layout of the release the program
/// speaks.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_component_info(cidx: c_int) -> *const c_void {
    guard(|| {
        let info = component_info(cidx);
        if info.is_null() || !super::release().is_7_2() {
            return info.cast();
        }
        // SAFETY: non-NULL: a description that lives while the library is initialised (or for
        // the process), read while no call changes it.
        let fresh = release::component_info_7_2(unsafe { &*info });
        library::keep(|kept| kept.view(cidx, fresh))
            .unwrap_or(std::ptr::null())
            .cast()
    })
}

/// Component `cidx`'s description as the library keeps it (PAPI 7.0's layout), or NULL.
pub(crate) fn component_info(cidx: c_int) -> *const ComponentInfo {
    if cidx == crate::devices::CIDX {
        return crate::devices::component_info();
    }
    crate::components::fill_component_zero();
    component(cidx)
}

/// Component `cidx`'s description, or NULL past the last.
fn component(cidx: c_int) -> *const ComponentInfo {
    if cidx == crate::powercap::CIDX {
        return crate::powercap::info();
    }
    if cidx == crate::uncore::CIDX {
        return crate::uncore::info();
    }
    match library::component(cidx) {
        // Before initialisation: the sde component as PAPI lists its compiled-in ones.
        info if info.is_null() && cidx == crate::sde::CIDX => crate::sde::before_init(),
        info => info,
    }
}

/// `PAPI_get_component_index`.
///
/// # Safety
/// `name` is a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_component_index(name: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: the caller's C string or NULL.
        let Some(name) = (unsafe { text(name) }) else {
            return EINVAL;
        };
        if name == crate::devices::NAME {
            return crate::devices::CIDX;
        }
        for cidx in 0..crate::devices::CIDX {
            let component = component(cidx);
            if component.is_null() {
                continue;
            }
            // SAFETY: checked non-NULL: a description that lives while the library is
            // initialised (component 0's before initialisation for the whole process).
            let own = unsafe { &(*component).name };
            let len = own.iter().position(|&b| b == 0).unwrap_or(own.len());
            if &own[..len] == name.as_bytes() {
                return cidx;
            }
        }
        ENOCMP
    })
}

/// `PAPI_get_event_component`: the component of an event of `sde`, `powercap` or
/// `perf_event_uncore`, 0 for every other event.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_event_component(event: c_int) -> c_int {
    guard(|| match crate::names::decode(event) {
        Some(_) => crate::sde::event_component(event)
            .or_else(|| crate::powercap::event_component(event))
            .or_else(|| crate::uncore::event_component(event))
            .unwrap_or(0),
        None => ENOEVNT,
    })
}

/// `PAPI_get_eventset_component`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_eventset_component(event_set: c_int) -> c_int {
    guard(|| {
        super::code(library::with_set(event_set, |_, set| {
            if set.component < 0 {
                Err(ENOCMP)
            } else {
                Ok(set.component)
            }
        }))
    })
}

/// `PAPI_assign_eventset_component`: as PAPI 7.0, the set first (`PAPI_ENOEVST`), then the
/// component (`PAPI_ENOCMP` past ours).
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_assign_eventset_component(event_set: c_int, cidx: c_int) -> c_int {
    guard(|| {
        if cidx == 0 {
            return sets::assign_component(event_set);
        }
        if cidx == crate::uncore::CIDX {
            return crate::uncore::assign(event_set);
        }
        if let Some(own) = crate::own::Own::of_component(cidx) {
            return own.assign(event_set);
        }
        match sets::state(event_set) {
            Ok(_) => library::fail(ENOCMP),
            Err(e) => e,
        }
    })
}

/// `PAPI_disable_component`: before initialisation only (after it, `PAPI_ENOINIT`, as
/// PAPI 7.0 answers).
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_disable_component(cidx: c_int) -> c_int {
    guard(|| {
        if !(0..crate::devices::COMPONENTS).contains(&cidx) {
            return ENOCMP;
        }
        if crate::unlocked::init_state() != 0 {
            return codes::ENOINIT;
        }
        library::disable(cidx)
    })
}

/// `PAPI_disable_component_by_name`.
///
/// # Safety
/// `name` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_disable_component_by_name(name: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: as this function's.
        match unsafe { PAPI_get_component_index(name) } {
            cidx if cidx >= 0 => PAPI_disable_component(cidx),
            e => e,
        }
    })
}

/// `PAPI_num_cmp_hwctrs`: none for `sysdetect`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_num_cmp_hwctrs(cidx: c_int) -> c_int {
    guard(|| {
        if cidx == crate::devices::CIDX {
            return 0;
        }
        sets::num_counters(cidx)
    })
}

/// `PAPI_num_hwctrs`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_num_hwctrs() -> c_int {
    guard(|| sets::num_counters(0))
}

/// `PAPI_strerror`: NULL for a code the release the program speaks does not define (7.2
/// added `PAPI_PARTIAL`, -28).
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_strerror(code: c_int) -> *const c_char {
    guard(|| {
        let messages = &codes::MESSAGES;
        match code.checked_neg().and_then(|i| usize::try_from(i).ok()) {
            Some(i) if i < messages.len() => messages[i].as_ptr(),
            Some(i) if i == messages.len() && super::release().is_7_2() => {
                release::PARTIAL_MESSAGE.as_ptr()
            }
            _ => std::ptr::null(),
        }
    })
}

/// `PAPI_perror`: on stderr, `msg: ` (unless NULL or empty) then the message of the last error
/// a call answered ("No error" before any), as PAPI 7.0's.
///
/// # Safety
/// `msg` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_perror(msg: *const c_char) {
    guard(|| {
        let last = library::last_error();
        let Some(text_of_last) = codes::message(last) else {
            return;
        };
        // SAFETY: the caller's C string or NULL.
        match unsafe { text(msg) } {
            Some(msg) if !msg.is_empty() => eprintln!("{msg}: {text_of_last}"),
            _ => eprintln!("{text_of_last}"),
        }
    })
}

/// `PAPI_overflow`: the event samples every `threshold` events on the sampling face and
/// `handler` is called at each overflow, in the signal handler, with the set, the address
/// and the event's bit; a threshold of 0 turns it off. `PAPI_ENOSUPP` where the backend cannot
/// sample.
///
/// # Safety
/// `handler` is NULL or a `PAPI_overflow_handler_t`, callable from a signal handler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_overflow(
    event_set: c_int,
    event: c_int,
    threshold: c_int,
    _flags: c_int,
    handler: *const c_void,
) -> c_int {
    guard(|| {
        // A missing handler is PAPI_EINVAL, once the set and the event are known (set_overflow::overflow).
        crate::set_overflow::overflow(
            event_set,
            event,
            threshold,
            handler as usize,
            super::profile::dispatch,
        )
    })
}

/// `PAPI_get_overflow_event_index`: the indices in the set of the events in `vector`.
///
/// # Safety
/// `array` has room for `*number` ints; `number` points at an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_overflow_event_index(
    event_set: c_int,
    vector: c_longlong,
    array: *mut c_int,
    number: *mut c_int,
) -> c_int {
    guard(|| {
        if array.is_null() || number.is_null() {
            return EINVAL;
        }
        // SAFETY: checked non-NULL.
        let room = unsafe { *number };
        if room <= 0 {
            return EINVAL;
        }
        match crate::set_overflow::overflow_indices(event_set, vector) {
            Ok(indices) => {
                let n = indices.len().min(room as usize);
                // SAFETY: room for `room` >= `n` ints (the caller's promise).
                unsafe { super::put_all(array, &indices[..n]) };
                // SAFETY: checked non-NULL.
                unsafe { put(number, n as c_int) };
                OK
            }
            Err(e) => e,
        }
    })
}

/// As PAPI's rate functions on their first call: the library initialised, with threads
/// (the thread id the kernel's), unless it is already with threads.
fn rate_init() -> c_int {
    if crate::unlocked::init_state() & 5 == 5 {
        return OK;
    }
    let version = super::release().ver_current();
    if crate::unlocked::init_state() == 0 && super::PAPI_library_init(version) != version {
        return EINVAL;
    }
    match super::threads::PAPI_thread_init(Some(super::threads::own_id)) {
        OK => OK,
        _ => EINVAL,
    }
}

fn usec_clocks() -> (i64, i64) {
    (PAPI_get_real_usec(), PAPI_get_virt_usec())
}

/// `rate_init`, then a rate call.
fn rate_init_then(
    mode: rates::Mode,
    events: [c_int; 3],
    clock: rates::Clock,
) -> Result<rates::Rate, c_int> {
    match rate_init() {
        OK => rates::call(mode, events, clock),
        e => Err(e),
    }
}

/// Writes a rate call's answer.
///
/// # Safety
/// Each pointer is NULL (checked before) or valid for a write.
unsafe fn answer(
    result: Result<rates::Rate, c_int>,
    (rtime, ptime, count, rate): (*mut f32, *mut f32, *mut c_longlong, *mut f32),
) -> c_int {
    match result {
        Ok(r) => {
            // SAFETY: the caller's pointers, checked non-NULL.
            unsafe { put(rtime, r.real) };
            // SAFETY: as above.
            unsafe { put(ptime, r.process) };
            // SAFETY: as above.
            unsafe { put(count, r.count) };
            // SAFETY: as above.
            unsafe { put(rate, r.rate) };
            OK
        }
        Err(e) => e,
    }
}

/// `PAPI_flips_rate`: `event` one of PAPI_FP_INS, PAPI_VEC_SP, PAPI_VEC_DP ([`rates`]).
///
/// # Safety
/// Each pointer is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_flips_rate(
    event: c_int,
    rtime: *mut f32,
    ptime: *mut f32,
    count: *mut c_longlong,
    rate: *mut f32,
) -> c_int {
    guard(|| {
        if !["PAPI_FP_INS", "PAPI_VEC_DP", "PAPI_VEC_SP"]
            .map(rates::preset)
            .contains(&event)
        {
            return ENOEVNT;
        }
        if rtime.is_null() || ptime.is_null() || count.is_null() || rate.is_null() {
            return EINVAL;
        }
        let result = rate_init_then(rates::Mode::Flip, [event, 0, 0], usec_clocks);
        // SAFETY: checked non-NULL; the caller's variables.
        unsafe { answer(result, (rtime, ptime, count, rate)) }
    })
}

/// `PAPI_flops_rate`: `event` one of PAPI_FP_OPS, PAPI_SP_OPS, PAPI_DP_OPS ([`rates`]).
///
/// # Safety
/// Each pointer is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_flops_rate(
    event: c_int,
    rtime: *mut f32,
    ptime: *mut f32,
    count: *mut c_longlong,
    rate: *mut f32,
) -> c_int {
    guard(|| {
        if !["PAPI_FP_OPS", "PAPI_SP_OPS", "PAPI_DP_OPS"]
            .map(rates::preset)
            .contains(&event)
        {
            return ENOEVNT;
        }
        if rtime.is_null() || ptime.is_null() || count.is_null() || rate.is_null() {
            return EINVAL;
        }
        let result = rate_init_then(rates::Mode::Flop, [event, 0, 0], usec_clocks);
        // SAFETY: checked non-NULL; the caller's variables.
        unsafe { answer(result, (rtime, ptime, count, rate)) }
    })
}

/// `PAPI_ipc`: PAPI_TOT_INS per PAPI_TOT_CYC ([`rates`]).
///
/// # Safety
/// Each pointer is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_ipc(
    rtime: *mut f32,
    ptime: *mut f32,
    ins: *mut c_longlong,
    ipc: *mut f32,
) -> c_int {
    guard(|| {
        if rtime.is_null() || ptime.is_null() || ins.is_null() || ipc.is_null() {
            return EINVAL;
        }
        let events = [
            rates::preset("PAPI_TOT_INS"),
            rates::preset("PAPI_TOT_CYC"),
            0,
        ];
        let result = rate_init_then(rates::Mode::Ipc, events, usec_clocks);
        // SAFETY: checked non-NULL; the caller's variables.
        unsafe { answer(result, (rtime, ptime, ins, ipc)) }
    })
}

/// `PAPI_epc`: `event` (0: PAPI_TOT_INS) per PAPI_TOT_CYC, with PAPI_REF_CYC where it
/// counts ([`rates`]).
///
/// # Safety
/// Each pointer is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_epc(
    event: c_int,
    rtime: *mut f32,
    ptime: *mut f32,
    reference: *mut c_longlong,
    core: *mut c_longlong,
    evt: *mut c_longlong,
    epc: *mut f32,
) -> c_int {
    guard(|| {
        if [reference, core, evt].iter().any(|p| p.is_null())
            || rtime.is_null()
            || ptime.is_null()
            || epc.is_null()
        {
            return EINVAL;
        }
        let first = if event == 0 {
            rates::preset("PAPI_TOT_INS")
        } else {
            event
        };
        let events = [
            first,
            rates::preset("PAPI_TOT_CYC"),
            rates::preset("PAPI_REF_CYC"),
        ];
        let result = rate_init_then(rates::Mode::Epc, events, usec_clocks);
        let values = result.map(|r| r.values).unwrap_or_default();
        // SAFETY: checked non-NULL; the caller's variables.
        unsafe { put(reference, values[2]) };
        // SAFETY: as above.
        unsafe { put(core, values[1]) };
        // SAFETY: as above.
        unsafe { answer(result, (rtime, ptime, evt, epc)) }
    })
}

/// `PAPI_rate_stop`: `PAPI_ENOEVNT` when no rate function runs on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_rate_stop() -> c_int {
    guard(rates::stop)
}
