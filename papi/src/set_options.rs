//! An event set's options: multiplexing, the thread or CPU it is attached to, inheritance,
//! its domain and its granularity (`PAPI_set_multiplex`, `PAPI_attach`, `PAPI_set_opt`).

use counterhal_hal::BackendTarget;
use facade::Chosen;

use crate::codes::{ECMP, EINVAL, EINVAL_DOM, EISRUN, EPERM, ESYS, OK, from_error};
use crate::library::{
    ATTACHED, CPU_ATTACHED, DOM_ALL, GRN_SYS, GRN_THR, Library, MULTIPLEXING, PapiSet, RUNNING,
    with, with_set,
};

/// `PAPI_set_multiplex`, and `PAPI_set_opt`'s `PAPI_MULTIPLEX` with its interval `ns`: the
/// backend's own multiplexing (the set's events opened ungrouped; the interval is the
/// kernel's, a negative one `PAPI_EINVAL` as PAPI 7.0 answers).
pub fn set_multiplex(handle: i32, ns: Option<i32>) -> i32 {
    with_set(handle, |chosen, set| {
        // PAPI 7.0's order: the set, its component (PAPI_ENOCMP before the first event or
        // PAPI_assign_eventset_component), whether it runs, whether it multiplexes already.
        set.assigned()?;
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        if set.state & MULTIPLEXING != 0 || ns.is_some_and(|ns| ns < 0) {
            return Err(EINVAL);
        }
        if !chosen.backend().dyn_capabilities().multiplexing() {
            return Err(crate::codes::ENOSUPP);
        }
        set.state |= MULTIPLEXING;
        set.forget_counters();
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// `PAPI_get_multiplex`.
pub fn get_multiplex(handle: i32) -> i32 {
    with_set(handle, |_, set| {
        Ok(i32::from(set.state & MULTIPLEXING != 0))
    })
    .unwrap_or_else(|e| e)
}

/// `PAPI_attach` (`Some(tid)`) and `PAPI_detach` (`None`), in PAPI 7.0's order (papi.c
/// `PAPI_set_opt`): the set, its component, whether the component attaches; then for an
/// attach whether the set runs, is attached already or counts a CPU, and whether the thread
/// can be counted (`probe`); for a detach whether the set counts a CPU, runs, is attached.
pub fn attach(handle: i32, tid: Option<std::ffi::c_ulong>) -> i32 {
    with(|library| {
        let Library {
            chosen,
            sets,
            thread_id,
            ..
        } = library;
        let set = crate::library::find_set(sets, handle)?;
        set.assigned()?;
        if !chosen.backend().dyn_capabilities().targets().attach {
            return Err(ECMP);
        }
        let Some(tid) = tid else {
            if set.state & CPU_ATTACHED != 0 {
                return Err(ECMP);
            }
            if set.state & RUNNING != 0 {
                return Err(EISRUN);
            }
            if set.state & ATTACHED == 0 {
                return Err(EINVAL);
            }
            set.attached = None;
            set.forget_counters();
            set.state &= !ATTACHED;
            return Ok(OK);
        };
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        if set.state & ATTACHED != 0 {
            return Err(EINVAL);
        }
        // A set that counts a CPU, or every process on one (PAPI_GRN_SYS), is not one
        // thread's: the pair is refused (see set_domain_or_granularity).
        if set.state & CPU_ATTACHED != 0 || set.system_cpu.is_some() || set.event_cpu().is_some() {
            return Err(ECMP);
        }
        // Thread 0 is perf_event_open's pid 0, the calling thread, which PAPI 7.0's perf_event
        // component passes on as given (its check and its events open there, the thread
        // that attaches): ours attaches to the caller. (Where the kernel has no core PMU,
        // PAPI's check refuses it as every live target, PAPI_ENOEVNT: tests/c/attach_targets.c.)
        let tid = match thread_number(tid)? {
            0 => thread_number(thread_id())?,
            tid => tid,
        };
        probe(chosen, set, tid)?;
        set.attached = Some(tid);
        // PAPI's set belongs to the thread it attaches to from now on (its `master`).
        set.master = std::ffi::c_ulong::from(tid);
        set.forget_counters();
        set.state |= ATTACHED;
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// A C `unsigned long` thread id as the kernel's; `PAPI_EINVAL` past 32 bits.
#[allow(
    clippy::useless_conversion,
    reason = "c_ulong is u64 on x86-64 Linux and u32 on i686 OpenBSD: a narrowing on one, the identity on the other"
)]
fn thread_number(id: std::ffi::c_ulong) -> Result<u32, i32> {
    u32::try_from(id).map_err(|_| EINVAL)
}

/// Opens the set's events (perf's task-clock for a set with none yet) on thread or process
/// `tid` once and closes them, as PAPI 7.0's perf_event component opens an event on it at
/// `PAPI_attach` (`check_permissions`): a thread or process that is not there (a zombie
/// included) is `PAPI_ESYS`, one this process may not count `PAPI_EPERM`, at the attach and not
/// at the next start, and the set stays on its thread. An empty set's trial event failing for
/// any other reason (a backend without task-clock) decides nothing.
fn probe(chosen: &Chosen, set: &PapiSet, tid: u32) -> Result<(), i32> {
    let own: Vec<&str> = set.events.iter().map(|(_, n, _)| n.as_str()).collect();
    let empty = own.is_empty();
    let names = set.in_domain(if empty { vec!["task-clock"] } else { own });
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let target = BackendTarget::Process {
        pid: tid,
        inherit: set.inherit,
    };
    match counterhal_hal::BackendExt::open_named(chosen, &names, &target, &set.options()) {
        Ok(_) => Ok(()),
        Err(e) if !empty || e.errno() == Some(libc::ESRCH) => Err(from_error(&e)),
        Err(e) if e.kind() == facade::ErrorKind::PermissionDenied => Err(EPERM),
        Err(_) => Ok(()),
    }
}

/// `PAPI_CPU_ATTACH`, in PAPI 7.0's order: the set, its component, whether the set is
/// attached to a thread, whether it runs, then the CPU (one past the machine's is
/// `PAPI_EINVAL`).
pub fn attach_cpu(handle: i32, cpu: i32, cpus: i32) -> i32 {
    with_set(handle, |_, set| {
        set.assigned()?;
        if set.state & ATTACHED != 0 {
            return Err(EINVAL);
        }
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        let cpu = u32::try_from(cpu)
            .ok()
            .filter(|&c| i64::from(c) < i64::from(cpus.max(1)))
            .ok_or(EINVAL)?;
        set.cpu = Some(cpu);
        set.forget_counters();
        set.state |= CPU_ATTACHED;
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// `PAPI_INHERIT`, in PAPI 7.0's order: the set, its component, whether it runs, whether it
/// counts a CPU.
pub fn set_inherit(handle: i32, inherit: bool) -> i32 {
    with_set(handle, |_, set| {
        set.assigned()?;
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        if set.state & CPU_ATTACHED != 0 || (inherit && set.event_cpu().is_some()) {
            return Err(ECMP);
        }
        set.inherit = inherit;
        set.forget_counters();
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// `PAPI_GRN_SYS_CPU`, the highest granularity PAPI 7.0 names.
const GRN_SYS_CPU: i32 = 0x10;

/// Sets an event set's domain (`PAPI_DOMAIN`) or granularity (`PAPI_GRANUL`).
pub fn set_domain_or_granularity(
    handle: i32,
    domain: Option<i32>,
    granularity: Option<i32>,
) -> i32 {
    with(|library| {
        // PAPI 7.0's order: the value's range before the set.
        if domain.is_some_and(|d| d <= 0 || d & !DOM_ALL != 0) {
            return Err(EINVAL_DOM);
        }
        if granularity.is_some_and(|g| !(GRN_THR..=GRN_SYS_CPU).contains(&g)) {
            return Err(EINVAL);
        }
        let set = crate::library::find_set(&mut library.sets, handle)?;
        // The set's component's domains and granularities: the uncore component's own.
        let uncore = set.component == crate::uncore::CIDX;
        let available = if uncore {
            crate::uncore::AVAILABLE_DOMAINS
        } else {
            library.component.available_domains
        };
        if let Some(d) = domain {
            // Then the set, its component, the component's domains (PAPI_DOM_ALL meaning all
            // of them), then whether it runs.
            set.assigned()?;
            let d = if d == DOM_ALL { available } else { d };
            if d & !available != 0 {
                return Err(EINVAL_DOM);
            }
            if set.state & RUNNING != 0 {
                return Err(EISRUN);
            }
            if set.domain != d {
                // Opened again, in the new domain, at the next start.
                set.forget_counters();
            }
            set.domain = d;
        }
        if let Some(g) = granularity {
            // Then the set, its component, the component's granularities (one of them, not
            // a mask): the thread, or every process on the CPU the caller is on now.
            // PAPI_GRN_PROC, PAPI_GRN_PROCG and PAPI_GRN_SYS_CPU are outside them:
            // PAPI_EINVAL, as PAPI's.
            set.assigned()?;
            // (The uncore component takes the whole CPU alone.)
            if g != GRN_SYS && (uncore || g != GRN_THR) {
                return Err(EINVAL);
            }
            if set.state & RUNNING != 0 {
                return Err(EISRUN);
            }
            // A set attached to a thread counts that thread: PAPI 7.0 would count it only
            // while it runs on this CPU, which no target here expresses, so the pair is refused
            // rather than counted as something else.
            if g == GRN_SYS && set.attached.is_some() {
                return Err(ECMP);
            }
            let cpu = match g {
                GRN_SYS => Some(crate::library::current_cpu(library.system).ok_or(ESYS)?),
                _ => None,
            };
            if (set.granularity, set.system_cpu) != (g, cpu) {
                // Opened again, on the new target, at the next start.
                set.forget_counters();
            }
            set.granularity = g;
            set.system_cpu = cpu;
        }
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}
