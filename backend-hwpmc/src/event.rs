//! What the backend asks hwpmc for: the classes it programs and one event's PMC request.

use counterhal_hal::CounterSet;

/// The PMC classes a backend programs: Intel's IAP and IAF, or AMD's K8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pmu {
    /// `PMC_CLASS_IAP` (programmable) and `PMC_CLASS_IAF` (fixed).
    Intel,
    /// `PMC_CLASS_K8` (core rows).
    Amd,
}

/// One event as hwpmc is asked to count it: the EVTSEL configuration
/// (`pm_iap_config`/`pm_amd_config`), the capabilities (`pm_caps`), and the counters it may
/// use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmcEvent {
    /// The event select value without the enable and interrupt bits, which the kernel sets.
    pub config: u64,
    /// `PMC_CAP_READ | PMC_CAP_WRITE`, and `PMC_CAP_USER`/`PMC_CAP_SYSTEM` for the domain.
    pub caps: u32,
    /// The general-purpose (IAP or K8 core) counters it may use.
    pub general: CounterSet,
    /// The fixed (IAF) counter that counts exactly it, when one does.
    pub fixed: Option<u32>,
}
