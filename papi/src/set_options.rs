//! An event set's options: multiplexing, the thread or CPU it is attached to, inheritance,
//! its domain and its granularity (`PAPI_set_multiplex`, `PAPI_attach`, `PAPI_set_opt`).

use crate::codes::{ECMP, EINVAL, EINVAL_DOM, EISRUN, ENOEVST, ESYS, OK};
use crate::library::{
    ATTACHED, CPU_ATTACHED, DOM_ALL, GRN_SYS, GRN_THR, MULTIPLEXING, RUNNING, with, with_set,
};

/// `PAPI_set_multiplex`: the backend's own multiplexing (the set's events opened ungrouped).
pub fn set_multiplex(handle: i32) -> i32 {
    with_set(handle, |chosen, set| {
        // PAPI 7.0's order: the set, its component (PAPI_ENOCMP before the first event or
        // PAPI_assign_eventset_component), whether it runs, whether it multiplexes already.
        set.assigned()?;
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        if set.state & MULTIPLEXING != 0 {
            return Err(EINVAL);
        }
        if !chosen.backend.dyn_capabilities().multiplexing {
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

/// `PAPI_attach` (`Some(tid)`) and `PAPI_detach` (`None`).
pub fn attach(handle: i32, tid: Option<u32>) -> i32 {
    with_set(handle, |_, set| {
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        if tid.is_none() && set.attached.is_none() {
            return Err(EINVAL);
        }
        // A set that counts every process on a CPU (PAPI_GRN_SYS) is not one thread's: the
        // pair is refused (see set_domain_or_granularity).
        if tid.is_some() && (set.system_cpu.is_some() || set.event_cpu().is_some()) {
            return Err(ECMP);
        }
        set.attached = tid;
        set.forget_counters();
        if tid.is_some() {
            set.state |= ATTACHED;
        } else {
            set.state &= !ATTACHED;
        }
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// `PAPI_CPU_ATTACH`.
pub fn attach_cpu(handle: i32, cpu: u32) -> i32 {
    with_set(handle, |_, set| {
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        set.cpu = Some(cpu);
        set.forget_counters();
        set.state |= CPU_ATTACHED;
        Ok(OK)
    })
    .unwrap_or_else(|e| e)
}

/// `PAPI_INHERIT`.
pub fn set_inherit(handle: i32, inherit: bool) -> i32 {
    with_set(handle, |_, set| {
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        if inherit && set.event_cpu().is_some() {
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
        let available = library.component.available_domains;
        let set = usize::try_from(handle)
            .ok()
            .and_then(|i| library.sets.get_mut(i))
            .and_then(Option::as_mut)
            .ok_or(ENOEVST)?;
        if let Some(d) = domain {
            // PAPI 7.0's order: the range, the set, its component, the component's domains
            // (PAPI_DOM_ALL meaning all of them), then whether it runs.
            if d <= 0 || d & !DOM_ALL != 0 {
                return Err(EINVAL_DOM);
            }
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
            // PAPI 7.0's order: the range, the set, its component, the component's
            // granularities (one of them, not a mask): the thread, or every process on the
            // CPU the caller is on now. PAPI_GRN_PROC, PAPI_GRN_PROCG and PAPI_GRN_SYS_CPU
            // are outside them: PAPI_EINVAL, as PAPI's.
            if !(GRN_THR..=GRN_SYS_CPU).contains(&g) {
                return Err(EINVAL);
            }
            set.assigned()?;
            if g != GRN_THR && g != GRN_SYS {
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
                GRN_SYS => Some(crate::library::current_cpu().ok_or(ESYS)?),
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
