//! PAPI's timers, system facts, components, messages, threads and the calls this library
//! answers with `PAPI_ENOSUPP`.

use std::ffi::{CString, c_char, c_int, c_longlong, c_uint, c_void};
use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use super::{put, text};
use crate::codes::{self, EINVAL, ENOCMP, ENOEVNT, ENOSUPP, OK};
use crate::info::{self, ComponentInfo, ExeInfo, HwInfo, ShlibInfo};
use crate::{library, sets};

/// The hardware facts, gathered once.
pub fn hardware() -> &'static HwInfo {
    static HW: OnceLock<HwInfo> = OnceLock::new();
    HW.get_or_init(info::hardware)
}

fn executable() -> &'static ExeInfo {
    static EXE: OnceLock<ExeInfo> = OnceLock::new();
    EXE.get_or_init(info::executable)
}

fn shared_libraries() -> &'static ShlibInfo {
    static SHLIB: OnceLock<ShlibInfo> = OnceLock::new();
    SHLIB.get_or_init(info::shared_libraries)
}

/// `PAPI_get_real_nsec`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_real_nsec() -> c_longlong {
    facade::time::real_ns() as c_longlong
}

/// `PAPI_get_real_usec`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_real_usec() -> c_longlong {
    (facade::time::real_ns() / 1000) as c_longlong
}

fn mhz() -> u64 {
    (hardware().cpu_max_mhz.max(1)) as u64
}

/// `PAPI_get_real_cyc`: the time-stamp counter where it is a clock, else microseconds times
/// the clock rate in MHz.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_real_cyc() -> c_longlong {
    match facade::time::cycles() {
        Some(cycles) => cycles as c_longlong,
        None => (facade::time::real_ns() / 1000 * mhz()) as c_longlong,
    }
}

/// `PAPI_get_virt_nsec`: the calling thread's CPU time.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_virt_nsec() -> c_longlong {
    facade::time::thread_cpu_ns() as c_longlong
}

/// `PAPI_get_virt_usec`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_virt_usec() -> c_longlong {
    (facade::time::thread_cpu_ns() / 1000) as c_longlong
}

/// `PAPI_get_virt_cyc`: CPU time in microseconds times the clock rate in MHz.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_virt_cyc() -> c_longlong {
    (facade::time::thread_cpu_ns() / 1000 * mhz()) as c_longlong
}

/// `PAPI_get_hardware_info`: NULL before initialisation, as PAPI's.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_hardware_info() -> *const HwInfo {
    if library::INIT_STATE.load(Ordering::SeqCst) == 0 {
        return std::ptr::null();
    }
    hardware()
}

/// `PAPI_get_executable_info`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_executable_info() -> *const ExeInfo {
    if library::INIT_STATE.load(Ordering::SeqCst) == 0 {
        return std::ptr::null();
    }
    executable()
}

/// `PAPI_get_shared_lib_info`: the libraries mapped when first asked.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_shared_lib_info() -> *const ShlibInfo {
    if library::INIT_STATE.load(Ordering::SeqCst) == 0 {
        return std::ptr::null();
    }
    shared_libraries()
}

/// `PAPI_get_dmem_info`: /proc/self/status's memory lines, in KiB, as PAPI's.
///
/// # Safety
/// `dest` points at a `PAPI_dmem_info_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_dmem_info(dest: *mut [c_longlong; 12]) -> c_int {
    if dest.is_null() {
        return EINVAL;
    }
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return codes::ESYS;
    };
    let field = |key: &str| -> c_longlong {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(-1)
    };
    let values = [
        field("VmPeak:"),
        field("VmSize:"),
        field("VmRSS:"),
        field("VmHWM:"),
        field("RssShmem:"),
        field("VmExe:"),
        field("VmLib:"),
        field("VmData:"),
        field("VmLck:"),
        field("VmStk:"),
        // SAFETY: sysconf reads a system constant.
        unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as c_longlong,
        field("VmPTE:"),
    ];
    // SAFETY: checked non-NULL; the caller's PAPI_dmem_info_t (twelve long longs).
    unsafe { put(dest, values) };
    OK
}

/// `PAPI_num_components`: one, the backend.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_num_components() -> c_int {
    1
}

/// `PAPI_get_component_info`: NULL for any component but 0, or before initialisation.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_component_info(cidx: c_int) -> *const ComponentInfo {
    library::component(cidx)
}

/// `PAPI_get_component_index`.
///
/// # Safety
/// `name` is a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_component_index(name: *const c_char) -> c_int {
    // SAFETY: the caller's C string or NULL.
    let Some(name) = (unsafe { text(name) }) else {
        return EINVAL;
    };
    let component = library::component(0);
    // SAFETY: never NULL for component 0: the description lives while the library is
    // initialised, and the one before initialisation for the whole process.
    let own = unsafe { &(*component).name };
    let len = own.iter().position(|&b| b == 0).unwrap_or(own.len());
    if &own[..len] == name.as_bytes() {
        0
    } else {
        ENOCMP
    }
}

/// `PAPI_get_event_component`: 0 for every event.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_event_component(event: c_int) -> c_int {
    match crate::names::decode(event) {
        Some(_) => 0,
        None => ENOEVNT,
    }
}

/// `PAPI_get_eventset_component`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_get_eventset_component(event_set: c_int) -> c_int {
    super::code(library::with_set(event_set, |_, set| {
        if set.component < 0 {
            Err(ENOCMP)
        } else {
            Ok(set.component)
        }
    }))
}

/// `PAPI_assign_eventset_component`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_assign_eventset_component(event_set: c_int, cidx: c_int) -> c_int {
    if cidx != 0 {
        return ENOCMP;
    }
    sets::assign_component(event_set)
}

/// `PAPI_disable_component`: before initialisation only (after it, `PAPI_ENOINIT`, as
/// PAPI 7.0 answers).
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_disable_component(cidx: c_int) -> c_int {
    if cidx != 0 {
        return ENOCMP;
    }
    if library::INIT_STATE.load(Ordering::SeqCst) != 0 {
        return codes::ENOINIT;
    }
    library::DISABLED.store(true, Ordering::SeqCst);
    OK
}

/// `PAPI_disable_component_by_name`.
///
/// # Safety
/// `name` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_disable_component_by_name(name: *const c_char) -> c_int {
    // SAFETY: as this function's.
    match unsafe { PAPI_get_component_index(name) } {
        0 => PAPI_disable_component(0),
        e => e,
    }
}

/// `PAPI_num_cmp_hwctrs`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_num_cmp_hwctrs(cidx: c_int) -> c_int {
    sets::num_counters(cidx)
}

/// `PAPI_num_hwctrs`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_num_hwctrs() -> c_int {
    sets::num_counters(0)
}

fn messages() -> &'static [CString] {
    static TEXTS: OnceLock<Vec<CString>> = OnceLock::new();
    TEXTS.get_or_init(|| {
        codes::MESSAGES
            .iter()
            .map(|m| CString::new(*m).unwrap_or_default())
            .collect()
    })
}

/// `PAPI_strerror`: NULL for a code PAPI does not define.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_strerror(code: c_int) -> *const c_char {
    match code.checked_neg().and_then(|i| usize::try_from(i).ok()) {
        Some(i) if i < messages().len() => messages()[i].as_ptr(),
        _ => std::ptr::null(),
    }
}

/// `PAPI_perror`: on stderr, `msg: ` (unless NULL or empty) then the message of the last error
/// a call answered ("No error" before any), as PAPI 7.0's.
///
/// # Safety
/// `msg` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_perror(msg: *const c_char) {
    let last = library::LAST_ERROR.load(Ordering::SeqCst);
    let Some(text_of_last) = codes::message(last) else {
        return;
    };
    // SAFETY: the caller's C string or NULL.
    match unsafe { text(msg) } {
        Some(msg) if !msg.is_empty() => eprintln!("{msg}: {text_of_last}"),
        _ => eprintln!("{text_of_last}"),
    }
}

/// What overflow and profiling answer: `PAPI_ENOEVST` for no such set, `PAPI_ENOEVNT` for an
/// event not in it, else `PAPI_ENOSUPP` (not yet wired to the sampling face).
fn not_sampled(event_set: c_int, event: c_int) -> c_int {
    super::code(library::with_set(event_set, |_, set| {
        if set.events.iter().any(|(c, _)| *c == event) {
            Ok(ENOSUPP)
        } else {
            Ok(ENOEVNT)
        }
    }))
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
    // A threshold with no handler is invalid (PAPI 7.0: PAPI_EINVAL).
    if threshold > 0 && handler.is_null() {
        return EINVAL;
    }
    sets::overflow(event_set, event, threshold, handler as usize, dispatch)
}

/// `PAPI_overflow_handler_t`.
type Handler = unsafe extern "C" fn(c_int, *mut c_void, c_longlong, *mut c_void);

/// The sampler's overflow callback: calls the slot's C handler. Async-signal-safe: it reads
/// atomics and calls.
fn dispatch(overflow: &facade::Overflow) {
    let Some(slot) = crate::overflow::TABLE.get(overflow.token) else {
        return;
    };
    let handler = slot.handler.load(Ordering::Acquire);
    if handler == 0 {
        return;
    }
    // SAFETY: a nonzero slot holds the address of the `PAPI_overflow_handler_t` given to
    // PAPI_overflow (checked non-NULL there).
    let handler: Handler = unsafe { std::mem::transmute::<usize, Handler>(handler) };
    let set = slot.set.load(Ordering::Acquire);
    let vector = slot.vector.load(Ordering::Acquire);
    // SAFETY: the caller of PAPI_overflow promised a handler callable here.
    unsafe {
        handler(
            set,
            overflow.address as usize as *mut c_void,
            vector,
            std::ptr::null_mut(),
        )
    };
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
    if array.is_null() || number.is_null() {
        return EINVAL;
    }
    // SAFETY: checked non-NULL.
    let room = unsafe { *number };
    if room <= 0 {
        return EINVAL;
    }
    match sets::overflow_indices(event_set, vector) {
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
}

/// `PAPI_profil`.
///
/// # Safety
/// Reads nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_profil(
    _buf: *mut c_void,
    _bufsiz: c_uint,
    _offset: *mut c_void,
    _scale: c_uint,
    event_set: c_int,
    event: c_int,
    _threshold: c_int,
    _flags: c_int,
) -> c_int {
    not_sampled(event_set, event)
}

/// `PAPI_sprofil`.
///
/// # Safety
/// Reads nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_sprofil(
    _prof: *mut c_void,
    _count: c_int,
    event_set: c_int,
    event: c_int,
    _threshold: c_int,
    _flags: c_int,
) -> c_int {
    not_sampled(event_set, event)
}

/// PAPI's code for a region call's result: `PAPI_EINVAL` for a region not begun or begun
/// twice, `PAPI_EMISC` for a call from inside another (a signal handler), else the error's.
fn region_code(result: facade::Result<()>) -> c_int {
    match result {
        Ok(()) => OK,
        Err(e) => match e.kind() {
            facade::ErrorKind::InvalidInput => EINVAL,
            facade::ErrorKind::Busy => codes::EMISC,
            _ => codes::from_error(&e),
        },
    }
}

/// `PAPI_hl_region_begin`: the facade's process-wide regions (`counterhal::region`), whose
/// events come from `COUNTERHAL_REGION_EVENTS` and whose report is written at exit as
/// `COUNTERHAL_REGION_OUTPUT` and `COUNTERHAL_REGION_FORMAT` say (not PAPI's
/// `papi_hl_output` files; `PAPI_EVENTS` is not read yet).
///
/// # Safety
/// `region` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_hl_region_begin(region: *const c_char) -> c_int {
    // The high-level interface initialises the library, as PAPI's does, so that low-level
    // calls may follow it.
    if library::INIT_STATE.load(Ordering::SeqCst) == 0
        && super::PAPI_library_init(library::VER_CURRENT) != library::VER_CURRENT
    {
        return codes::ENOINIT;
    }
    library::INIT_STATE.fetch_or(2, Ordering::SeqCst);
    // SAFETY: as this function's.
    match unsafe { text(region) } {
        Some(name) => region_code(facade::region::begin(name)),
        None => EINVAL,
    }
}

/// `PAPI_hl_read`: reading a region without ending it is not offered yet.
///
/// # Safety
/// Reads nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_hl_read(_region: *const c_char) -> c_int {
    ENOSUPP
}

/// `PAPI_hl_region_end`.
///
/// # Safety
/// `region` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_hl_region_end(region: *const c_char) -> c_int {
    // SAFETY: as this function's.
    match unsafe { text(region) } {
        Some(name) => region_code(facade::region::end(name)),
        None => EINVAL,
    }
}

/// `PAPI_hl_stop`: the regions' counters stop with the process (the report is written at
/// exit), so there is nothing to stop early.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_hl_stop() -> c_int {
    OK
}

/// `PAPI_flips_rate`: the rate functions are not offered yet.
///
/// # Safety
/// Reads nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_flips_rate(
    _event: c_int,
    _rtime: *mut f32,
    _ptime: *mut f32,
    _count: *mut c_longlong,
    _rate: *mut f32,
) -> c_int {
    ENOSUPP
}

/// `PAPI_flops_rate`.
///
/// # Safety
/// Reads nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_flops_rate(
    _event: c_int,
    _rtime: *mut f32,
    _ptime: *mut f32,
    _count: *mut c_longlong,
    _rate: *mut f32,
) -> c_int {
    ENOSUPP
}

/// `PAPI_ipc`.
///
/// # Safety
/// Reads nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_ipc(
    _rtime: *mut f32,
    _ptime: *mut f32,
    _ins: *mut c_longlong,
    _ipc: *mut f32,
) -> c_int {
    ENOSUPP
}

/// `PAPI_epc`.
///
/// # Safety
/// Reads nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_epc(
    _event: c_int,
    _rtime: *mut f32,
    _ptime: *mut f32,
    _reference: *mut c_longlong,
    _core: *mut c_longlong,
    _evt: *mut c_longlong,
    _epc: *mut f32,
) -> c_int {
    ENOSUPP
}

/// `PAPI_rate_stop`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_rate_stop() -> c_int {
    ENOSUPP
}

/// `PAPI_enum_dev_type`: the device interface is not offered yet.
///
/// # Safety
/// Reads nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_enum_dev_type(_modifier: c_int, _handle: *mut *mut c_void) -> c_int {
    ENOSUPP
}

/// `PAPI_get_dev_type_attr`.
///
/// # Safety
/// Reads nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_dev_type_attr(
    _handle: *mut c_void,
    _attr: c_int,
    _value: *mut c_void,
) -> c_int {
    ENOSUPP
}

/// `PAPI_get_dev_attr`.
///
/// # Safety
/// Reads nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_dev_attr(
    _handle: *mut c_void,
    _id: c_int,
    _attr: c_int,
    _value: *mut c_void,
) -> c_int {
    ENOSUPP
}
