//! What a backend and its groups share: the device behind the allow-list, the decoded PMU, the
//! TSC frequency, and the table of counters open groups claim on each CPU.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use counterhal_events::Database;
use counterhal_hal::{Capabilities, Result};

use crate::allow::AllowList;
use crate::cores::CoreView;
use crate::device::{Access, MsrDevice};
use crate::pmu::{PmuInfo, TscFrequency};

/// Counters claimed by open groups, per CPU (bit `i` = counter `i`), and the extra MSRs they
/// programmed ([`regs::EXTRA_MSRS`](crate::regs::EXTRA_MSRS) order): the value and how many
/// groups use it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CpuClaims {
    pub(crate) gp: u32,
    pub(crate) fixed: u32,
    pub(crate) extra: [(u64, u32); 4],
}

/// Claims, and the lock that serialises read-modify-write of shared registers.
pub(crate) type Claims = Arc<Mutex<HashMap<u32, CpuClaims>>>;

/// One table for every real device in the process: two backends probed separately still see
/// each other's counters.
pub(crate) fn real_claims() -> Claims {
    static CLAIMS: OnceLock<Claims> = OnceLock::new();
    Arc::clone(CLAIMS.get_or_init(Claims::default))
}

/// What a backend and its groups share: the device, the decoded PMU, the allow-list, the
/// TSC, the event database and the claims.
pub(crate) struct Shared {
    pub(crate) capabilities: Capabilities,
    pub(crate) db: Arc<Database>,
    pub(crate) device: Arc<dyn MsrDevice>,
    pub(crate) cpuid: String,
    /// The PMU of the CPU that built the backend (on a hybrid chip, of its core).
    pub(crate) pmu: Arc<PmuInfo>,
    /// On a hybrid chip, each CPU's PMU and table (index: the CPU); empty elsewhere.
    pub(crate) cores: Vec<Option<Arc<CoreView>>>,
    pub(crate) allow: AllowList,
    pub(crate) tsc: TscFrequency,
    pub(crate) cpu_model: Option<String>,
    pub(crate) claims: Claims,
}

impl Shared {
    /// The registers that may be touched on `cpu`: its core's on a hybrid chip (a CPU whose
    /// CPUID could not be read gets the backend's own), else the backend's.
    pub(crate) fn allow_of(&self, cpu: u32) -> &AllowList {
        match self.cores.get(cpu as usize) {
            Some(Some(view)) => &view.allow,
            _ => &self.allow,
        }
    }

    pub(crate) fn read(&self, cpu: u32, msr: u32) -> Result<u64> {
        self.allow_of(cpu).check(msr, Access::Read)?;
        self.device.read(cpu, msr)
    }

    pub(crate) fn write(&self, cpu: u32, msr: u32, value: u64) -> Result<()> {
        self.allow_of(cpu).check(msr, Access::Write)?;
        self.device.write(cpu, msr, value)
    }

    /// The PMU and table of `cpu`: its core's on a hybrid chip, else the backend's.
    ///
    /// # Errors
    /// On a hybrid chip, when the CPU's CPUID cannot be read.
    pub(crate) fn view_of(&self, cpu: u32) -> Result<Arc<CoreView>> {
        if self.cores.is_empty() {
            return Ok(Arc::new(CoreView::single(
                Arc::clone(&self.pmu),
                self.cpu_model.clone(),
            )));
        }
        match self.cores.get(cpu as usize) {
            Some(Some(view)) => Ok(Arc::clone(view)),
            _ => Err(crate::cores::view_error(self.device.as_ref(), cpu)),
        }
    }

    pub(crate) fn lock_claims(&self) -> MutexGuard<'_, HashMap<u32, CpuClaims>> {
        self.claims
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
