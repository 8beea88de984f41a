//! `PAPI_get_opt`, `PAPI_set_opt` and the default domain and granularity.
//!
//! The option argument is PAPI's `PAPI_option_t` union; each option reads the member PAPI
//! documents for it, laid out as below (papi/tests/abi.rs checks the offsets).

use std::ffi::c_int;

use super::guard;
use super::put;
use crate::codes::{ECMP, EINVAL, ENOCMP, OK};
use crate::library::{self, DOM_ALL};
use crate::sets;

/// `PAPI_domain_option_t` and `PAPI_granularity_option_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Setting {
    def_cidx: c_int,
    eventset: c_int,
    value: c_int,
}

/// `PAPI_attach_option_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct AttachOption {
    eventset: c_int,
    tid: std::ffi::c_ulong,
}

/// `PAPI_cpu_option_t`, `PAPI_inherit_option_t` and the first two ints of
/// `PAPI_multiplex_option_t` and `PAPI_debug_option_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Pair {
    first: c_int,
    second: c_int,
}

/// `PAPI_itimer_option_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Itimer {
    itimer_num: c_int,
    itimer_sig: c_int,
    ns: c_int,
    flags: c_int,
}

const _: () = assert!(std::mem::size_of::<Itimer>() == 16);

/// `ITIMER_PROF` and `SIGPROF`: PAPI 7.0's multiplexing timer and its signal on Linux.
const ITIMER_PROF: c_int = 2;

/// The options of `PAPI_option_t` read and written here.
const DETACH: c_int = 1;
const DEBUG: c_int = 2;
const MULTIPLEX: c_int = 3;
const DEFDOM: c_int = 4;
const DOMAIN: c_int = 5;
const DEFGRN: c_int = 6;
const GRANUL: c_int = 7;
const DEF_MPX_NS: c_int = 8;
const MAX_MPX_CTRS: c_int = 11;
const CLOCKRATE: c_int = 14;
const MAX_HWCTRS: c_int = 15;
const HWINFO: c_int = 16;
const EXEINFO: c_int = 17;
const MAX_CPUS: c_int = 18;
const ATTACH: c_int = 19;
const SHLIBINFO: c_int = 20;
const LIB_VERSION: c_int = 21;
const COMPONENTINFO: c_int = 22;
const DEF_ITIMER: c_int = 25;
const DEF_ITIMER_NS: c_int = 26;
const CPU_ATTACH: c_int = 27;
const INHERIT: c_int = 28;

/// Reads a `T` at the start of the option union.
///
/// # Safety
/// `ptr` is NULL or points at a `PAPI_option_t` (264 bytes, larger than every `T` here).
unsafe fn member<T: Copy>(ptr: *mut u8) -> Option<T> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: the union is at least as large as `T` and suitably aligned (8 bytes).
    Some(unsafe { ptr.cast::<T>().read() })
}

fn defaults() -> Result<(c_int, c_int), c_int> {
    library::with(|l| Ok((l.default_domain, l.default_granularity)))
}

/// `PAPI_get_opt`.
///
/// # Safety
/// `ptr` is NULL or points at a `PAPI_option_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_opt(option: c_int, ptr: *mut u8) -> c_int {
    guard(|| {
        // SAFETY: as this function's.
        unsafe { get_opt(option, ptr, 0) }
    })
}

/// `PAPI_get_cmp_opt`, as PAPI 7.0's (papi.c): an index past the components is `PAPI_ECMP`;
/// a component answers its counters (`PAPI_MAX_HWCTRS`, `PAPI_MAX_MPX_CTRS`), its default
/// domain and granularity, the shared libraries and its description (these two need `ptr`:
/// `PAPI_EINVAL` without), and `PAPI_EINVAL` for any other option.
///
/// # Safety
/// `ptr` is NULL or points at a `PAPI_option_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_get_cmp_opt(option: c_int, ptr: *mut u8, cidx: c_int) -> c_int {
    guard(|| {
        if !(0..super::info::PAPI_num_components()).contains(&cidx) {
            return ECMP;
        }
        let initialised = crate::unlocked::init_state() != 0;
        match option {
            // Component 0's as they stand (the defaults change with PAPI_set_domain).
            MAX_HWCTRS | MAX_MPX_CTRS | DEFDOM | DEFGRN if cidx == 0 && initialised => {
                // SAFETY: a NULL `ptr` is not read for these options.
                unsafe { get_opt(option, std::ptr::null_mut(), 0) }
            }
            MAX_HWCTRS | MAX_MPX_CTRS | DEFDOM | DEFGRN => {
                let info = super::info::component_info(cidx);
                if info.is_null() {
                    return 0;
                }
                // SAFETY: a non-NULL description from component_info, valid while the
                // library stays initialised (or static before).
                let info = unsafe { &*info };
                match option {
                    MAX_HWCTRS => info.num_cntrs,
                    MAX_MPX_CTRS => info.num_mpx_cntrs,
                    DEFDOM => info.default_domain,
                    _ => info.default_granularity,
                }
            }
            SHLIBINFO | COMPONENTINFO => {
                let pointer: *const u8 = if option == SHLIBINFO {
                    super::info::PAPI_get_shared_lib_info().cast()
                } else {
                    super::info::PAPI_get_component_info(cidx).cast()
                };
                // SAFETY: NULL or the caller's union, whose first member is a pointer here.
                if unsafe { put(ptr.cast::<*const u8>(), pointer) } {
                    OK
                } else {
                    EINVAL
                }
            }
            _ => EINVAL,
        }
    })
}

/// # Safety
/// `ptr` is NULL or points at a `PAPI_option_t`.
unsafe fn get_opt(option: c_int, ptr: *mut u8, _cidx: c_int) -> c_int {
    let hardware = super::info::hardware();
    match option {
        LIB_VERSION => return super::release().version(),
        MAX_CPUS => return hardware.totalcpus,
        CLOCKRATE => return hardware.cpu_max_mhz,
        DEBUG => {
            let level = library::debug_level();
            // SAFETY: NULL or the caller's union.
            if let Some(mut pair) = unsafe { member::<Pair>(ptr) } {
                pair.first = level;
                // SAFETY: as above.
                unsafe { put(ptr.cast::<Pair>(), pair) };
            }
            return OK;
        }
        HWINFO | EXEINFO | SHLIBINFO | COMPONENTINFO => {
            let pointer: *const u8 = match option {
                HWINFO => super::info::PAPI_get_hardware_info().cast(),
                EXEINFO => super::info::PAPI_get_executable_info().cast(),
                SHLIBINFO => super::info::PAPI_get_shared_lib_info().cast(),
                _ => super::info::PAPI_get_component_info(0).cast(),
            };
            if pointer.is_null() {
                return crate::codes::ENOINIT;
            }
            // SAFETY: NULL or the caller's union, whose first member is a pointer here.
            return if unsafe { put(ptr.cast::<*const u8>(), pointer) } {
                OK
            } else {
                EINVAL
            };
        }
        _ => {}
    }
    let (domain, granularity) = match defaults() {
        Ok(d) => d,
        Err(e) => return e,
    };
    match option {
        DEFDOM => domain,
        DEFGRN => granularity,
        MAX_HWCTRS => sets::num_counters(0),
        MAX_MPX_CTRS => super::code(library::with(|l| Ok(l.component.num_mpx_cntrs))),
        DOMAIN | GRANUL => {
            // SAFETY: NULL or the caller's union.
            let Some(mut setting) = (unsafe { member::<Setting>(ptr) }) else {
                return library::fail(EINVAL);
            };
            let value = library::with_set(setting.eventset, |_, set| {
                Ok(if option == DOMAIN {
                    set.domain
                } else {
                    set.granularity
                })
            });
            // As PAPI 7.0: the value goes into the union and the call answers PAPI_OK (only
            // PAPI_DEFDOM and PAPI_DEFGRN answer with the value).
            match value {
                Ok(v) => {
                    setting.value = v;
                    // SAFETY: as above.
                    unsafe { put(ptr.cast::<Setting>(), setting) };
                    OK
                }
                Err(e) => e,
            }
        }
        MULTIPLEX => {
            // SAFETY: NULL or the caller's union.
            let Some(pair) = (unsafe { member::<Pair>(ptr) }) else {
                return library::fail(EINVAL);
            };
            crate::set_options::get_multiplex(pair.first)
        }
        ATTACH => {
            // SAFETY: NULL or the caller's union.
            let Some(mut attach) = (unsafe { member::<AttachOption>(ptr) }) else {
                return library::fail(EINVAL);
            };
            match library::with_set(attach.eventset, |_, set| Ok(set.attached)) {
                Ok(tid) => {
                    attach.tid = tid.map_or(0, |t| t as std::ffi::c_ulong);
                    // SAFETY: as above.
                    unsafe { put(ptr.cast::<AttachOption>(), attach) };
                    OK
                }
                Err(e) => e,
            }
        }
        CPU_ATTACH | INHERIT => {
            // SAFETY: NULL or the caller's union.
            let Some(mut pair) = (unsafe { member::<Pair>(ptr) }) else {
                return library::fail(EINVAL);
            };
            let value = library::with_set(pair.first, |_, set| {
                Ok(if option == INHERIT {
                    c_int::from(set.inherit)
                } else {
                    set.cpu.map_or(-1, |c| c as c_int)
                })
            });
            match value {
                Ok(v) => {
                    pair.second = v;
                    // SAFETY: as above.
                    unsafe { put(ptr.cast::<Pair>(), pair) };
                    if option == INHERIT { v } else { OK }
                }
                Err(e) => e,
            }
        }
        // SAFETY: the caller's union.
        DEF_MPX_NS | DEF_ITIMER_NS | DEF_ITIMER => unsafe { get_interval(option, ptr) },
        _ => library::fail(EINVAL),
    }
}

/// `PAPI_get_opt` of the multiplexing timer, as PAPI 7.0 fills it: `PAPI_DEF_MPX_NS` the
/// interval in `PAPI_multiplex_option_t`'s `ns` (its second int), `PAPI_DEF_ITIMER_NS` in
/// `PAPI_itimer_option_t`'s `ns`, `PAPI_DEF_ITIMER` the whole timer (`ITIMER_PROF`,
/// `SIGPROF`, the interval, no flags).
///
/// # Safety
/// `ptr` is NULL or points at a `PAPI_option_t`.
unsafe fn get_interval(option: c_int, ptr: *mut u8) -> c_int {
    let ns = library::initialised(|library| library.itimer_ns).unwrap_or(library::ITIMER_NS);
    let written = if option == DEF_MPX_NS {
        // SAFETY: the caller's union.
        unsafe { member::<Pair>(ptr) }.is_some_and(|mut pair| {
            pair.second = ns;
            // SAFETY: as above.
            unsafe { put(ptr.cast::<Pair>(), pair) }
        })
    } else {
        // SAFETY: the caller's union.
        unsafe { member::<Itimer>(ptr) }.is_some_and(|mut timer| {
            timer.ns = ns;
            if option == DEF_ITIMER {
                timer.itimer_num = ITIMER_PROF;
                timer.itimer_sig = libc::SIGPROF;
                timer.flags = 0;
            }
            // SAFETY: as above.
            unsafe { put(ptr.cast::<Itimer>(), timer) }
        })
    };
    if written { OK } else { library::fail(EINVAL) }
}

/// `PAPI_set_opt`.
///
/// # Safety
/// `ptr` is NULL or points at a `PAPI_option_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_set_opt(option: c_int, ptr: *mut u8) -> c_int {
    guard(|| {
        // As PAPI 7.0: every option but PAPI_DEBUG needs the library (before the union is read,
        // and before the event set an option names is looked up).
        if option != DEBUG && crate::unlocked::init_state() == 0 {
            return library::fail(crate::codes::ENOINIT);
        }
        if ptr.is_null() {
            return library::fail(EINVAL);
        }
        match option {
            DEBUG => {
                // SAFETY: the caller's union.
                let Some(pair) = (unsafe { member::<Pair>(ptr) }) else {
                    return library::fail(EINVAL);
                };
                return super::PAPI_set_debug(pair.first);
            }
            DEFDOM | DEFGRN | DOMAIN | GRANUL => {
                // SAFETY: the caller's union.
                let Some(setting) = (unsafe { member::<Setting>(ptr) }) else {
                    return library::fail(EINVAL);
                };
                return match option {
                    DEFDOM => set_default(Some(setting.value), None),
                    DEFGRN => set_default(None, Some(setting.value)),
                    DOMAIN => crate::set_options::set_domain_or_granularity(
                        setting.eventset,
                        Some(setting.value),
                        None,
                    ),
                    _ => crate::set_options::set_domain_or_granularity(
                        setting.eventset,
                        None,
                        Some(setting.value),
                    ),
                };
            }
            _ => {}
        }
        // SAFETY: the caller's union.
        let Some(pair) = (unsafe { member::<Pair>(ptr) }) else {
            return library::fail(EINVAL);
        };
        match option {
            // `ns` is the option's second int.
            MULTIPLEX => crate::set_options::set_multiplex(pair.first, Some(pair.second)),
            DETACH => crate::set_options::attach(pair.first, None),
            ATTACH => {
                // SAFETY: the caller's union.
                let Some(attach) = (unsafe { member::<AttachOption>(ptr) }) else {
                    return library::fail(EINVAL);
                };
                crate::set_options::attach(attach.eventset, Some(attach.tid))
            }
            // As PAPI 7.0: a CPU past the machine's is PAPI_EINVAL at once.
            CPU_ATTACH => crate::set_options::attach_cpu(
                pair.first,
                pair.second,
                crate::info::hardware(crate::unlocked::system()).totalcpus,
            ),
            INHERIT => crate::set_options::set_inherit(pair.first, pair.second != 0),
            // As PAPI 7.0: a negative interval is PAPI_EINVAL (`ns` is the option's second int).
            DEF_MPX_NS | DEF_ITIMER_NS if pair.second < 0 => library::fail(EINVAL),
            DEF_MPX_NS => super::code(library::with(|library| {
                library.itimer_ns = pair.second;
                Ok(OK)
            })),
            DEF_ITIMER_NS | DEF_ITIMER => super::code(library::with(|_| Ok(OK))),
            _ => library::fail(EINVAL),
        }
    })
}

fn set_default(domain: Option<c_int>, granularity: Option<c_int>) -> c_int {
    super::code(library::with(|l| {
        if let Some(d) = domain {
            if d <= 0 || d & !DOM_ALL != 0 {
                return Err(EINVAL);
            }
            // As PAPI 7.0: PAPI_DOM_ALL is the component's domains, others must be among them.
            let available = l.component.available_domains;
            let d = if d == DOM_ALL { available } else { d };
            if d & !available != 0 {
                return Err(crate::codes::ENOSUPP);
            }
            l.default_domain = d;
        }
        if let Some(g) = granularity {
            // As PAPI 7.0: one of the component's granularities (the thread or the CPU).
            if g != library::GRN_THR && g != library::GRN_SYS {
                return Err(EINVAL);
            }
            l.default_granularity = g;
        }
        Ok(OK)
    }))
}

/// `PAPI_set_domain`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_set_domain(domain: c_int) -> c_int {
    guard(|| set_default(Some(domain), None))
}

/// `PAPI_set_cmp_domain`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_set_cmp_domain(domain: c_int, cidx: c_int) -> c_int {
    guard(|| {
        if cidx != 0 {
            return ENOCMP;
        }
        set_default(Some(domain), None)
    })
}

/// `PAPI_set_granularity`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_set_granularity(granularity: c_int) -> c_int {
    guard(|| set_default(None, Some(granularity)))
}

/// `PAPI_set_cmp_granularity`.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_set_cmp_granularity(granularity: c_int, cidx: c_int) -> c_int {
    guard(|| {
        if cidx != 0 {
            return ENOCMP;
        }
        set_default(None, Some(granularity))
    })
}
