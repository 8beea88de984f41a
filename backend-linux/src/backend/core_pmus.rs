//! Native and generic events on the core PMUs of a hybrid system: an Intel hybrid chip's
//! `cpu_core` and `cpu_atom`, each with its core's table ([`crate::intel_hybrid`]); a
//! big.LITTLE Arm system's PMU per kind of core ([`crate::arm`]); and a generic event on every
//! core PMU.

use std::borrow::Cow;

use counterhal_hal::{Encoding, ResolvedEvent, Result, Term};

use super::{LinuxBackend, perf_encoding};
use crate::sys::{TYPE_HARDWARE, TYPE_HW_CACHE};

impl LinuxBackend {
    /// `resolved`, the database's reading of `event` with its event selects made raw perf
    /// attrs, on the core PMUs of this system: on an Intel hybrid chip each core PMU whose
    /// core's table has the event ([`crate::intel_hybrid::place_on_core_pmus`]), on a
    /// big.LITTLE Arm system the PMU of its table's core, and a generic event on every core
    /// PMU of a hybrid system.
    ///
    /// # Errors
    /// As the raw-event PMU's format refuses the other core's encoding of the event.
    pub(super) fn on_core_pmus(
        &self,
        event: &str,
        resolved: ResolvedEvent,
    ) -> Result<ResolvedEvent> {
        let (pmus, model) = (&self.hybrid, self.cpu.as_deref());
        let mut resolved = crate::intel_hybrid::place_on_core_pmus(
            event,
            resolved,
            pmus,
            &self.db,
            model,
            self.capabilities.accepts(),
            |request| perf_encoding(request, self.raw_format.as_deref()).map(Cow::into_owned),
        )?;
        crate::arm::place_on_core_pmu(&mut resolved, pmus, &self.db, model, &self.system);
        Ok(self.expand_hybrid(resolved))
    }

    /// `event`, which the CPU model does not read, on the core PMUs of an Intel hybrid chip
    /// whose core's table reads it ([`crate::intel_hybrid::on_other_cores`]); `None` where
    /// none does.
    pub(super) fn on_other_cores(&self, event: &str) -> Option<Result<ResolvedEvent>> {
        crate::intel_hybrid::on_other_cores(
            event,
            &self.hybrid,
            &self.db,
            self.cpu.as_deref(),
            self.capabilities.accepts(),
            |request| perf_encoding(request, self.raw_format.as_deref()).map(Cow::into_owned),
        )
    }

    /// A generic hardware or cache term of `resolved` as one term per core PMU of a hybrid
    /// system, each with the PMU's type in its config's upper half and named `pmu/event/`.
    fn expand_hybrid(&self, resolved: ResolvedEvent) -> ResolvedEvent {
        let pmus = &self.hybrid;
        if pmus.is_empty() {
            return resolved;
        }
        let mut terms = Vec::new();
        for term in resolved.terms {
            let generic = match &term.request.encoding {
                Encoding::Perf(e) => {
                    matches!(e.type_, TYPE_HARDWARE | TYPE_HW_CACHE) && e.config >> 32 == 0
                }
                _ => false,
            };
            if !generic {
                terms.push(term);
                continue;
            }
            for pmu in pmus.iter() {
                let mut request = term.request.clone();
                if let Encoding::Perf(e) = &mut request.encoding {
                    e.config |= u64::from(pmu.type_) << 32;
                    e.pmu = Some(pmu.name.clone());
                }
                request.name = format!("{}/{}/", pmu.name, term.request.name);
                terms.push(Term {
                    sign: term.sign,
                    factor: term.factor,
                    request,
                });
            }
        }
        ResolvedEvent::new(resolved.name, terms, resolved.unit)
    }
}
