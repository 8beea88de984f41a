//! PAPI 7.0's rate functions (`PAPI_flips_rate`, `PAPI_flops_rate`, `PAPI_ipc`, `PAPI_epc`,
//! `PAPI_rate_stop`) as its papi.c has them: each thread's first call makes a set of the
//! mode's events and starts it (answering zeros); each later call of the same mode and event
//! stops the set, answers the times, count and rate since the previous call, and starts it
//! again; a call of another mode or event starts over. The rate of `flips`/`flops` is events per
//! microsecond of process time (Mflip/s, Mflop/s), that of `ipc`/`epc` events per core cycle.
//! Where the events do not count (no core PMU here) each answers the error PAPI's does.

use std::cell::RefCell;

use crate::codes::{EINVAL, ENOEVNT, OK};
use crate::{hl, sets};

/// Which function is measuring.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// `PAPI_flops_rate`.
    Flop,
    /// `PAPI_flips_rate`.
    Flip,
    /// `PAPI_ipc`.
    Ipc,
    /// `PAPI_epc`.
    Epc,
}

/// What a call answers.
#[derive(Clone, Copy, Default, Debug)]
pub struct Rate {
    /// Real time since the previous call, in seconds.
    pub real: f32,
    /// Process (thread CPU) time since the previous call, in seconds.
    pub process: f32,
    /// The mode's first event since the previous call.
    pub count: i64,
    /// The rate (see the module's documentation).
    pub rate: f32,
    /// The set's counts (event, core cycles, reference cycles where measured).
    pub values: [i64; 3],
}

/// The real and process time now, in microseconds (`PAPI_get_real_usec`,
/// `PAPI_get_virt_usec`).
pub type Clock = fn() -> (i64, i64);

struct State {
    set: i32,
    mode: Mode,
    event: i32,
    last_real: i64,
    last_process: i64,
}

thread_local! {
    /// The calling thread's rate state, as PAPI 7.0 keeps one per thread. A thread-local, not
    /// an entry of the process's value: it dies with its thread (an entry keyed by thread id
    /// would pass to a later thread given the same kernel id), and the rate calls, made in a
    /// program's measuring loop, take no lock of the library's for it beside their set's.
    #[allow(clippy::missing_const_for_thread_local)]
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

/// PAPI_add_events' answer: the first error, or how many were added before one failed.
fn add_all(set: i32, events: &[i32]) -> i32 {
    for (i, &event) in events.iter().enumerate() {
        let status = sets::add_event(set, event);
        if status != OK {
            return if i == 0 { status } else { i as i32 };
        }
    }
    OK
}

fn start_new(events: &[i32], mode: Mode, clock: Clock) -> Result<State, i32> {
    let set = sets::create_eventset()?;
    let status = add_all(set, events);
    if status != OK {
        return Err(status);
    }
    let (last_real, last_process) = clock();
    let status = sets::start(set);
    if status != OK {
        return Err(status);
    }
    Ok(State {
        set,
        mode,
        event: events[0],
        last_real,
        last_process,
    })
}

/// One call of a rate function in `mode` on `events` (the mode's event first).
pub fn call(mode: Mode, events: [i32; 3], clock: Clock) -> Result<Rate, i32> {
    // As PAPI: a running high-level set is stopped first.
    if hl::running() {
        let status = hl::stop();
        if status != OK {
            return Err(status);
        }
    }
    if crate::unlocked::init_state() == 0 {
        return Err(crate::codes::ENOINIT);
    }
    let count = match mode {
        Mode::Flop | Mode::Flip => {
            check(crate::natives::query_event(events[0]))?;
            1
        }
        Mode::Ipc => 2,
        Mode::Epc => {
            check(crate::natives::query_event(events[0]))?;
            if crate::natives::query_event(events[2]) == OK {
                3
            } else {
                2
            }
        }
    };
    let events = &events[..count];
    STATE.with_borrow_mut(|state| {
        let Some(current) = state.as_mut() else {
            *state = Some(start_new(events, mode, clock)?);
            return Ok(Rate::default());
        };
        if current.mode != mode || current.event != events[0] {
            sets::stop(current.set)?;
            sets::cleanup_eventset(current.set);
            *state = None;
            *state = Some(start_new(events, mode, clock)?);
            return Ok(Rate::default());
        }
        let values = match sets::stop(current.set) {
            Ok(v) => v,
            Err(e) => {
                *state = None;
                return Err(e);
            }
        };
        let (real, process) = clock();
        let mut answer = Rate {
            real: (real - current.last_real) as f32 * 0.000_001,
            process: (process - current.last_process) as f32 * 0.000_001,
            count: values.first().copied().unwrap_or(0),
            ..Rate::default()
        };
        for (slot, v) in answer.values.iter_mut().zip(&values) {
            *slot = *v;
        }
        answer.rate = match mode {
            Mode::Flop | Mode::Flip if process > current.last_process => {
                answer.count as f32 / (process - current.last_process) as f32
            }
            Mode::Flop | Mode::Flip => 0.0,
            Mode::Ipc | Mode::Epc if answer.values[1] != 0 => {
                answer.count as f32 / answer.values[1] as f32
            }
            Mode::Ipc | Mode::Epc => 0.0,
        };
        current.last_real = real;
        current.last_process = process;
        let status = sets::start(current.set);
        if status != OK {
            *state = None;
            return Err(status);
        }
        Ok(answer)
    })
}

fn check(status: i32) -> Result<(), i32> {
    if status == OK { Ok(()) } else { Err(status) }
}

/// `PAPI_rate_stop`: stops this thread's rate set; `PAPI_ENOEVNT` when none runs.
pub fn stop() -> i32 {
    STATE.with_borrow_mut(|state| match state.take() {
        Some(current) => match sets::stop(current.set) {
            Ok(_) => {
                sets::cleanup_eventset(current.set);
                OK
            }
            Err(e) => e,
        },
        None => ENOEVNT,
    })
}

/// The events of `PAPI_flips_rate`, `PAPI_flops_rate` and `PAPI_epc`'s default, by preset
/// name: PAPI_FP_INS, PAPI_VEC_SP, PAPI_VEC_DP (flips), PAPI_FP_OPS, PAPI_SP_OPS, PAPI_DP_OPS
/// (flops), PAPI_TOT_INS, PAPI_TOT_CYC, PAPI_REF_CYC.
pub fn preset(name: &str) -> i32 {
    crate::names::preset_index(name).map_or(EINVAL, crate::names::preset_code)
}
