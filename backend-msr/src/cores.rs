//! The core types of a hybrid chip: each has a PMU of its own (Alder Lake's Core cores eight
//! general counters, its Atom cores six) and an event table of its own (the same name, another
//! encoding: `BR_INST_RETIRED.COND` is 0xc4/0x11 on Golden Cove and 0xc4/0x7e on Gracemont).
//! Each CPU's CPUID says which it is (leaf 0x1A); a group opened on a CPU uses that CPU's PMU,
//! and the names resolved with the backend's table are resolved again with the CPU's.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use counterhal_events::{Database, HybridCore};
use counterhal_hal::{Encoding, Error, EventRequest, Evtsel, Result};
use counterhal_x86::signature::hybrid_core;

use crate::allow::AllowList;
use crate::device::{Access, MsrDevice};
use crate::pmu::PmuInfo;
use crate::regs;

/// One CPU's PMU and the event database's model for its core.
#[derive(Debug)]
pub(crate) struct CoreView {
    /// The PMU as this CPU's CPUID describes it.
    pub(crate) pmu: Arc<PmuInfo>,
    /// The registers of that PMU: the only ones touched on this CPU.
    pub(crate) allow: AllowList,
    /// The CPU model whose table encodes its events.
    pub(crate) cpu_model: Option<String>,
    /// Its core on a hybrid chip.
    pub(crate) core: Option<HybridCore>,
}

impl CoreView {
    /// The view of a chip that is not hybrid: the backend's own PMU and table.
    pub(crate) fn single(pmu: Arc<PmuInfo>, cpu_model: Option<String>) -> CoreView {
        CoreView {
            allow: AllowList::for_pmu(&pmu),
            pmu,
            cpu_model,
            core: None,
        }
    }

    /// `an Atom core (0x20)`, for messages.
    fn describe(&self) -> String {
        match self.core {
            Some(core) if core.core_type == HybridCore::ATOM => "an Atom core".to_string(),
            Some(core) if core.core_type == HybridCore::CORE => "a Core core".to_string(),
            Some(core) => format!("a core of type {}", core.type_name()),
            None => "a core of no hybrid type".to_string(),
        }
    }
}

/// Sets the full-width-write bit of `pmu` from IA32_PERF_CAPABILITIES as `cpu` reads it (a CPU
/// that refuses the register has none).
///
/// # Errors
/// When the allow-list of `pmu` does not permit reading the register (it always does where
/// the PMU has it).
pub(crate) fn read_capabilities(device: &dyn MsrDevice, cpu: u32, pmu: &mut PmuInfo) -> Result<()> {
    if pmu.perf_capabilities && pmu.version >= 2 {
        AllowList::for_pmu(pmu).check(regs::IA32_PERF_CAPABILITIES, Access::Read)?;
        if let Ok(caps) = device.read(cpu, regs::IA32_PERF_CAPABILITIES) {
            pmu.full_width_writes = caps & regs::PERF_CAP_FW_WRITE != 0;
        }
    }
    Ok(())
}

/// The view of each CPU of a hybrid chip (index: the CPU), built from its own CPUID, one per
/// core; `None` for a CPU whose CPUID cannot be read (offline, or no cpuid driver), which
/// [`view_error`] explains at open. `named` is the model the caller chose, which then encodes
/// every core's events (the caller knows the table); else each core gets the database's
/// model for it.
pub(crate) fn hybrid_views(
    db: &Database,
    device: &dyn MsrDevice,
    named: Option<&str>,
) -> Vec<Option<Arc<CoreView>>> {
    let mut by_core: HashMap<Option<HybridCore>, Arc<CoreView>> = HashMap::new();
    (0..device.cpu_count())
        .map(|cpu| {
            let cpuid = device.cpuid_of(cpu).ok()?;
            let core = hybrid_core(cpuid.as_ref()).ok()?;
            if let Some(view) = by_core.get(&core) {
                return Some(Arc::clone(view));
            }
            let mut pmu = PmuInfo::from_cpuid(cpuid.as_ref()).ok()?;
            read_capabilities(device, cpu, &mut pmu).ok()?;
            let cpu_model = match named {
                Some(id) => Some(id.to_string()),
                None => db
                    .detect_core(&pmu.identity, core.as_ref())
                    .map(|model| model.id.clone()),
            };
            let view = Arc::new(CoreView {
                allow: AllowList::for_pmu(&pmu),
                pmu: Arc::new(pmu),
                cpu_model,
                core,
            });
            by_core.insert(core, Arc::clone(&view));
            Some(view)
        })
        .collect()
}

/// Whether two event selects select the same event: event code, unit masks, filters, TSX bits
/// and extra register (not the domain or the counters it may use).
fn same_event(a: &Evtsel, b: &Evtsel) -> bool {
    a.event_select() == b.event_select() && a.extra == b.extra
}

/// Why CPU `cpu` of a hybrid chip has no view: its CPUID, read again, fails.
pub(crate) fn view_error(device: &dyn MsrDevice, cpu: u32) -> Error {
    let reason = match device.cpuid_of(cpu) {
        Err(error) => error,
        Ok(cpuid) => match PmuInfo::from_cpuid(cpuid.as_ref()) {
            Err(error) => error,
            Ok(_) => Error::unsupported("its CPUID describes no PMU this backend programs"),
        },
    };
    reason.context(format_args!(
        "CPU {cpu} of this hybrid chip: its core type and PMU come from its own CPUID"
    ))
}

/// `request` as CPU `cpu` (`view`) counts it. Where the CPU's core has another table than the
/// backend's (`own_model`), a request whose event select selects the event `resolve_own` gives
/// its name is resolved again with the core's table (`resolve_core`), keeping the request's
/// domain; an event select the caller built for another event stays as it is.
///
/// # Errors
/// The core's table's error, naming the CPU and its core: the event may not exist there.
pub(crate) fn for_core<'r>(
    request: &'r EventRequest,
    view: &CoreView,
    own_model: Option<&str>,
    cpu: u32,
    resolve_own: impl Fn(&str) -> Option<counterhal_hal::ResolvedEvent>,
    resolve_core: impl Fn(&str) -> Result<counterhal_hal::ResolvedEvent>,
) -> Result<Cow<'r, EventRequest>> {
    if view.cpu_model.as_deref() == own_model {
        return Ok(Cow::Borrowed(request));
    }
    // The event the table gives the name, whatever the caller then changed of what is counted
    // and where (domain, counters, fixed counter): those carry over.
    let Encoding::Evtsel(asked) = &request.encoding else {
        return Ok(Cow::Borrowed(request));
    };
    let ours = resolve_own(&request.name).is_some_and(|resolved| {
        resolved
            .terms
            .iter()
            .any(|term| match &term.request.encoding {
                Encoding::Evtsel(own) => same_event(own, asked),
                _ => false,
            })
    });
    if !ours {
        return Ok(Cow::Borrowed(request));
    }
    let model = view.cpu_model.as_deref().unwrap_or("(none)");
    let context = || match &view.cpu_model {
        Some(model) => format!(
            "CPU {cpu} is {}, whose events CPU model {model} encodes",
            view.describe()
        ),
        None => format!(
            "CPU {cpu} is {}, for which the event database has no CPU model",
            view.describe()
        ),
    };
    let resolved = resolve_core(&request.name).map_err(|error| error.context(context()))?;
    match resolved.terms.as_slice() {
        [term] => {
            let mut encoding = term.request.encoding.clone();
            if let Encoding::Evtsel(core) = &mut encoding {
                core.domain = asked.domain;
            }
            Ok(Cow::Owned(EventRequest::new(
                request.name.clone(),
                encoding,
            )))
        }
        _ => Err(Error::unsupported(format!(
            "`{}` is a sum or difference of events on {model}; open its parts by name",
            request.name
        ))
        .context(context())),
    }
}
