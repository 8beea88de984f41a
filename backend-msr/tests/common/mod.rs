//! Shared helpers for the integration tests: hand-built encodings, so the tests do not depend
//! on the event database.

use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hal::{CounterSet, Encoding, EventRequest, Evtsel};
use counterhal_msr::{ModelHandle, MsrBackend, PmuModelKind};

/// An empty database: every test here builds its encodings by hand.
pub fn db() -> Arc<Database> {
    Arc::new(Database::default())
}

/// A backend over a fresh model, its access log cleared of the backend's start-up reads
/// (IA32_PERF_CAPABILITIES).
pub fn model(kind: PmuModelKind) -> (MsrBackend, ModelHandle) {
    let (backend, model) = MsrBackend::with_model(db(), kind);
    model.clear_log();
    (backend, model)
}

/// The event select with register value `value` (which must set EN and only bits an
/// [`Evtsel`] carries), on `counters` and `fixed`.
pub fn encoding(value: u64, counters: CounterSet, fixed: Option<u32>) -> Evtsel {
    let mut encoding = Evtsel::from_event_select(value);
    assert_eq!(
        encoding.register_value(),
        value,
        "{value:#x} is not an event select an encoding carries"
    );
    encoding.counters = counters;
    encoding.fixed = fixed;
    encoding
}

/// An event request from its parts.
pub fn request(name: &str, evtsel: u64, counters: CounterSet, fixed: Option<u32>) -> EventRequest {
    EventRequest::new(name, Encoding::Evtsel(encoding(evtsel, counters, fixed)))
}

/// The event select of `code`/`umask` counting user and kernel mode, on any vendor.
pub fn select(code: u16, umask: u8, user: bool, kernel: bool) -> u64 {
    let mut value = u64::from(code & 0xFF) | (u64::from(code >> 8) << 32) | (u64::from(umask) << 8);
    value |= Evtsel::EN;
    if user {
        value |= Evtsel::USR;
    }
    if kernel {
        value |= Evtsel::OS;
    }
    value
}

/// Instructions retired in both modes: any GP counter, or fixed counter 0 on Intel.
pub fn instructions(backend: &MsrBackend, model: &ModelHandle) -> EventRequest {
    let (code, umask) = model.instructions_event();
    let fixed = (!backend.pmu().is_amd()).then_some(0);
    request(
        "instructions",
        select(code, umask, true, true),
        CounterSet::first(32),
        fixed,
    )
}

/// Core cycles in both modes, only on GP counters.
pub fn cycles_gp(model: &ModelHandle) -> EventRequest {
    let (code, umask) = model.cycles_event();
    request(
        "cycles",
        select(code, umask, true, true),
        CounterSet::first(32),
        None,
    )
}
