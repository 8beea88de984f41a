//! Resolution: from an event string to encodings of the families a backend takes.
//!
//! The resolver knows hardware families ([`Accepts`]), never which backend asked. A name is
//! tried in the order of the backend's families: a generalized event gets perf's generic
//! encoding where [`Family::Perf`] comes first, else the CPU model's mapping in the model's
//! family; a native event, a raw code or `cpu/.../` terms get the model's family (a raw code
//! or terms go verbatim into a perf attr where [`Family::Perf`] comes first).

use counterhal_hal::{
    Accepts, Encoding, Error, EventRequest, Family, GeneralizedEvent, PerfAttr, ResolvedEvent,
    Result, Sign, Term,
};

use crate::database::Database;
use crate::domain::check_domain;
use crate::encode::{encode_native, filter_bits, raw_choice, split_levels};
use crate::error::{EventError, EventErrorKind, err};
use crate::model::{CpuModel, EncoderKind};
use crate::parse::{EventSpec, Modifiers, ParsedEvent, parse_event};
use crate::perf;
use crate::select;
use crate::suggest;

type Resolved = std::result::Result<ResolvedEvent, EventError>;

impl Database {
    /// Resolves an event string on CPU model `cpu` (a model id; `None` when the CPU is
    /// unknown, which still allows perf's generic events) into encodings of the families
    /// `accepts` lists, most preferred first.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidEvent`] for a bad name, unit mask or modifier
    /// (the message says which and, for unknown names, lists up to three nearest);
    /// [`counterhal_hal::ErrorKind::Unsupported`] when the event has no encoding in a family
    /// the backend takes, or asks for a domain it cannot filter;
    /// [`counterhal_hal::ErrorKind::InvalidInput`] for an unknown `cpu`.
    /// [`Database::resolve_exact`] gives the exact [`EventErrorKind`].
    pub fn resolve(
        &self,
        cpu: Option<&str>,
        event: &str,
        accepts: &Accepts,
    ) -> Result<ResolvedEvent> {
        self.resolve_exact(cpu, event, accepts).map_err(Error::from)
    }

    /// As [`Database::resolve`], with the exact error kind.
    ///
    /// # Errors
    /// An [`EventError`] of the kind that applies (see [`EventErrorKind`]).
    pub fn resolve_exact(&self, cpu: Option<&str>, event: &str, accepts: &Accepts) -> Resolved {
        if let Some(id) = cpu
            && self.model_id(id).is_none()
        {
            return Err(err(
                EventErrorKind::UnknownCpu,
                crate::database::unknown_model_message(id),
            )
            .with_suggestions(suggest::nearest(id, self.ids(), 3))
            .with_hint("`counterhal list` shows the CPU models"));
        }
        // A name no native event or event alias can spell resolves alike with the model and
        // without it where perf's own encoding comes first and has one (`page-faults`,
        // `task-clock:u`): so the model's events are not parsed for it.
        if cpu.is_some()
            && accepts.families.first() == Some(&Family::Perf)
            && spells_no_native(event)
            && let ok @ Ok(_) = self.resolve_own(None, event, accepts)
        {
            return ok;
        }
        // A plain name (no PMU, no unit mask) that the model, not yet made whole, spells
        // neither as a native event nor as an alias resolves alike without it where perf's
        // own encoding comes first and has one (`cycles`, `instructions`): the model is then
        // not made for it (perf's default events on a host's model, `stat -- true`).
        if let Some(id) = cpu
            && accepts.families.first() == Some(&Family::Perf)
            && plain_name(event).is_some_and(|name| self.model_spells_not(id, name))
            && let ok @ Ok(_) = self.resolve_own(None, event, accepts)
        {
            return ok;
        }
        let model = if crate::built::MODELS_BUILT {
            cpu.and_then(|id| self.model(id))
        } else {
            None
        };
        if let Some(result) = crate::libpfm4::route(self, model, event, accepts) {
            return result;
        }
        let result = self.resolve_own(model, event, accepts);
        match result {
            Err(e) if e.kind() != EventErrorKind::NotFound => {
                Err(crate::libpfm4::not_found(model, event).unwrap_or(e))
            }
            other => other,
        }
    }

    /// As [`Database::resolve_exact`], reading `event` through the CPU model's own data only,
    /// libpfm4's grammar and tables aside: for tests that compare a model's data with libpfm4.
    ///
    /// # Errors
    /// As [`Database::resolve_exact`].
    #[doc(hidden)]
    pub fn resolve_model_data(&self, cpu: &str, event: &str, accepts: &Accepts) -> Resolved {
        let model = self.model(cpu).ok_or_else(|| {
            err(
                EventErrorKind::UnknownCpu,
                crate::database::unknown_model_message(cpu),
            )
        })?;
        self.resolve_own(Some(model), event, accepts)
    }

    /// Resolves `event` on `model` as the model's own source spells it, libpfm4's grammar
    /// aside.
    pub(crate) fn resolve_own(
        &self,
        model: Option<&CpuModel>,
        event: &str,
        accepts: &Accepts,
    ) -> Resolved {
        let resolver = Resolver {
            database: self,
            model,
            accepts,
            text: event,
        };
        match parse_event(event)? {
            ParsedEvent::Raw { config, modifiers } => resolver.raw(config, modifiers),
            ParsedEvent::PmuTerms {
                pmu,
                terms,
                modifiers,
            } => resolver.terms(&pmu, &terms, modifiers),
            ParsedEvent::Named(spec) => resolver.named(spec),
        }
    }
}

/// Whether `event` names something no model's native event or event alias can be: a plain
/// name (no PMU, not `EVENT.UNIT_MASK`, not `pmu/terms/`) with a character outside letters,
/// digits, `_`, `.` and `:`, which the loader allows in no native event name and no alias.
fn spells_no_native(event: &str) -> bool {
    match parse_event(event) {
        Ok(ParsedEvent::Named(spec)) => {
            spec.pmu.is_none()
                && !spec.dotted
                && spec
                    .name
                    .chars()
                    .any(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':')))
        }
        _ => false,
    }
}

/// The name of `event` where it is a plain name, as a model's native event or alias could be
/// spelled in full: no PMU, not `EVENT.UNIT_MASK`, no unit mask (modifiers allowed:
/// `cycles:u`).
fn plain_name(event: &str) -> Option<&str> {
    match parse_event(event) {
        Ok(ParsedEvent::Named(spec))
            if spec.pmu.is_none() && !spec.dotted && spec.unit_masks.is_empty() =>
        {
            let name = event.split(':').next()?;
            (name.eq_ignore_ascii_case(&spec.name)).then_some(name)
        }
        _ => None,
    }
}

/// perf's name for an event of libpfm4's `perf::` PMU named by its `PERF_COUNT_HW_*` or
/// `PERF_COUNT_SW_*` enum name (libpfm4's lib/events/perf_events.h, the kernel's
/// include/uapi/linux/perf_event.h): the name less its prefix, in lower case with `-` for `_`,
/// but for the three perf spells otherwise; a cache event (`PERF_COUNT_HW_CACHE_L1D` with the
/// unit masks `READ`, `WRITE` or `PREFETCH` and `ACCESS` or `MISS`) as perf's
/// `L1-dcache-load-misses`. `None` for other names (perf's own, such as `PAGE-FAULTS`).
fn libpfm4_perf_name(name: &str, unit_masks: &[String]) -> Option<String> {
    let upper = name.to_ascii_uppercase();
    if let Some(cache) = upper.strip_prefix("PERF_COUNT_HW_CACHE_") {
        let cache = match cache {
            "L1D" => "L1-dcache",
            "L1I" => "L1-icache",
            "LL" => "LLC",
            "DTLB" => "dTLB",
            "ITLB" => "iTLB",
            "BPU" => "branch",
            "NODE" => "node",
            _ => return None,
        };
        let mut op = "loads";
        let mut miss = "";
        for mask in unit_masks {
            match mask.to_ascii_uppercase().as_str() {
                "READ" => op = "loads",
                "WRITE" => op = "stores",
                "PREFETCH" => op = "prefetches",
                "ACCESS" => miss = "",
                "MISS" => miss = "-misses",
                _ => return None,
            }
        }
        let op = match (op, miss) {
            ("loads", "-misses") => "load",
            ("stores", "-misses") => "store",
            ("prefetches", "-misses") => "prefetch",
            (op, _) => op,
        };
        return Some(format!("{cache}-{op}{miss}"));
    }
    let generic = upper
        .strip_prefix("PERF_COUNT_HW_")
        .or_else(|| upper.strip_prefix("PERF_COUNT_SW_"))?;
    Some(match generic {
        "PAGE_FAULTS_MIN" => "minor-faults".to_owned(),
        "PAGE_FAULTS_MAJ" => "major-faults".to_owned(),
        "REF_CPU_CYCLES" => "ref-cycles".to_owned(),
        other => other.to_ascii_lowercase().replace('_', "-"),
    })
}

/// One resolution: the database, the CPU model, what the backend takes, the text as typed.
struct Resolver<'a> {
    database: &'a Database,
    model: Option<&'a CpuModel>,
    accepts: &'a Accepts,
    text: &'a str,
}

impl<'a> Resolver<'a> {
    fn single(&self, encoding: Encoding) -> ResolvedEvent {
        ResolvedEvent::single(EventRequest::new(self.text, encoding))
    }

    /// Whether perf's own encoding (generic events, raw configs) is the backend's first
    /// choice.
    fn perf_first(&self) -> bool {
        self.accepts.families.first() == Some(&Family::Perf)
    }

    fn no_family(&self, family: Family) -> EventError {
        err(
            EventErrorKind::Unsupported,
            format!(
                "`{}` is encoded as a {family}, which this backend does not program (it takes {})",
                self.text,
                self.accepts.families_text()
            ),
        )
    }

    fn needs_model(&self, what: &str) -> EventError {
        err(
            EventErrorKind::Unsupported,
            format!(
                "`{}`: {what} need a CPU model for a backend that takes {}",
                self.text,
                self.accepts.families_text()
            ),
        )
        .with_hint(crate::built::model_hint())
    }

    fn named(&self, mut spec: EventSpec) -> Resolved {
        // libpfm4's `perf::` PMU, as PAPI users type its events: the kernel's generic events
        // under their perf names or their `PERF_COUNT_*` enum names.
        if spec
            .pmu
            .as_deref()
            .is_some_and(|pmu| pmu.eq_ignore_ascii_case("perf"))
        {
            if let Some(name) = libpfm4_perf_name(&spec.name, &spec.unit_masks) {
                spec.name = name;
                spec.unit_masks.clear();
            }
            spec.pmu = None;
            return match GeneralizedEvent::from_name(&spec.name) {
                Some(generalized) if !spec.dotted => self.generalized(self.model, generalized, &spec),
                _ => Err(err(
                    EventErrorKind::NotFound,
                    format!("unknown event `{}` of libpfm4's perf PMU in `{}`", spec.name, self.text),
                )
                .with_hint("perf:: names the kernel's generic events: perf::PAGE-FAULTS, perf::PERF_COUNT_SW_CONTEXT_SWITCHES, perf::CYCLES, perf::L1-DCACHE-LOADS")),
            };
        }
        let model = match &spec.pmu {
            Some(pmu) => Some(self.database.model(pmu).ok_or_else(|| {
                err(
                    EventErrorKind::NotFound,
                    format!("unknown PMU `{pmu}` in `{}`", self.text),
                )
                .with_suggestions(suggest::nearest(pmu, self.database.ids(), 3))
            })?),
            None => self.model,
        };
        // A constant's branch, folded before the compiler decides what to compile: a build
        // that can hold no model compiles none of the selection and encoding of its native
        // events (`select`, `compose`, `encode_native`; `Option::filter` is folded only later).
        let model = if crate::built::MODELS_BUILT {
            model
        } else {
            None
        };
        // Another spelling of a native event (libpfm4's, perf's) stands for the model's own.
        if let Some(canonical) = model.and_then(|m| m.unalias(&spec)) {
            spec = canonical;
        }
        // A native event of the model wins over a generalized event of the same name
        // (`BRANCHES` on p5); otherwise a generalized name resolves on the model, also under
        // a `pmu::` prefix naming the model (`p6::cycles`).
        let native_named = model.is_some_and(|m| m.event(&spec.name).is_some());
        if !native_named
            && !spec.dotted
            && let Some(generalized) = GeneralizedEvent::from_name(&spec.name)
        {
            return self.generalized(model, generalized, &spec);
        }
        let Some(model) = model else {
            return Err(err(
                EventErrorKind::NotFound,
                format!("unknown event `{}`", spec.name),
            )
            .with_suggestions(nearest_event_names(self.database, None, &spec.name))
            .with_hint(format!(
                "native events need a CPU model: {}",
                crate::built::model_hint()
            )));
        };
        // An Arm PMUv3 event's chained 64-bit form (`CPU_CYCLES:long`).
        let (spec, long) = match model.encoder {
            EncoderKind::Armv8 => crate::arm::split_long(&spec),
            _ => (spec, false),
        };
        let Some((event, extra)) = model.lookup(&spec) else {
            return Err(err(
                EventErrorKind::NotFound,
                format!("unknown event `{}` on CPU model `{}`", spec.name, model.id),
            )
            .with_suggestions(nearest_event_names(
                self.database,
                Some(&model.id),
                &spec.name,
            ))
            .with_hint(format!(
                "`counterhal list --cpu-model {}` shows its events",
                model.id
            )));
        };
        let extra: Vec<&str> = extra.into_iter().collect();
        let choice = select::select(model, event, &spec, &extra)?;
        let encoding = encode_native(model, &choice, self.accepts, self.text)?;
        Ok(self.single(crate::arm::with_long(encoding, long)))
    }

    fn raw(&self, config: u64, modifiers: Modifiers) -> Resolved {
        if modifiers.ldlat.is_some() || modifiers.frontend.is_some() || modifiers.fe_thres.is_some()
        {
            return Err(err(
                EventErrorKind::CombinationNotAllowed,
                format!(
                    "`{}`: ldlat, frontend and fe_thres apply to named events that program those MSRs, not to raw codes",
                    self.text
                ),
            ));
        }
        let perf_raw = || -> Resolved {
            if modifiers.has_filters()
                || modifiers.any_thread == Some(true)
                || modifiers.in_tx == Some(true)
                || modifiers.in_tx_cp == Some(true)
            {
                return Err(err(
                    EventErrorKind::CombinationNotAllowed,
                    format!(
                        "`{}`: put edge/invert/counter-mask/AnyThread/IN_TX/IN_TXCP bits into the raw code itself",
                        self.text
                    ),
                ));
            }
            let domain = check_domain(&modifiers, self.accepts, self.text)?;
            let attr = PerfAttr::new(perf::TYPE_RAW, config).with_domain(domain);
            Ok(self.single(Encoding::Perf(attr)))
        };
        if self.perf_first() {
            return perf_raw();
        }
        // Folded before the compiler decides what to compile (`Option::filter` would be folded
        // only after): a build that can hold no model compiles no native event's encoding.
        let model = if crate::built::MODELS_BUILT {
            self.model
        } else {
            None
        };
        match model {
            Some(model) if self.accepts.takes(model.encoder.family()) => {
                let choice = raw_choice(model, self.text, config, modifiers)?;
                let encoding = encode_native(model, &choice, self.accepts, self.text)?;
                Ok(self.single(encoding))
            }
            _ if self.accepts.takes(Family::Perf) => perf_raw(),
            Some(model) => Err(self.no_family(model.encoder.family())),
            None => Err(self.needs_model("raw codes")),
        }
    }

    fn terms(&self, pmu: &str, terms: &[(String, Option<u64>)], modifiers: Modifiers) -> Resolved {
        if !pmu.eq_ignore_ascii_case("cpu") {
            return Err(err(
                EventErrorKind::Unsupported,
                format!(
                    "`{}`: PMU `{pmu}` is described by the kernel, not by the event database",
                    self.text
                ),
            )
            .with_hint(
                "a backend that knows the kernel's PMUs resolves `pmu/.../` strings from /sys/bus/event_source/devices/<pmu>/format",
            ));
        }
        let mut config = 0u64;
        let mut m = modifiers;
        for (term, value) in terms {
            let v = value.unwrap_or(1);
            let range = |max: u64| -> std::result::Result<u64, EventError> {
                if v > max {
                    Err(err(
                        EventErrorKind::ValueOutOfRange,
                        format!("term `{term}={v:#x}` is out of range 0..={max:#x}"),
                    ))
                } else {
                    Ok(v)
                }
            };
            match term.as_str() {
                "event" => {
                    let e = range(0xfff)?;
                    config |= (e & 0xff) | ((e >> 8) << 32);
                }
                "umask" => config |= range(0xff)? << 8,
                "cmask" => m.merge(&Modifiers {
                    cmask: Some(u8::try_from(range(0xff)?).unwrap_or(0)),
                    ..Modifiers::default()
                })?,
                "edge" => m.merge(&Modifiers {
                    edge: Some(range(1)? == 1),
                    ..Modifiers::default()
                })?,
                "inv" => m.merge(&Modifiers {
                    invert: Some(range(1)? == 1),
                    ..Modifiers::default()
                })?,
                other => {
                    return Err(err(
                        EventErrorKind::UnknownModifier,
                        format!(
                            "unknown term `{other}` for PMU `cpu`; terms are event, umask, cmask, edge, inv"
                        ),
                    ));
                }
            }
        }
        let (levels, filters) = split_levels(m);
        self.raw(config | filter_bits(&filters), levels)
    }

    fn generalized(
        &self,
        model: Option<&CpuModel>,
        generalized: GeneralizedEvent,
        spec: &EventSpec,
    ) -> Resolved {
        let model = if crate::built::MODELS_BUILT {
            model
        } else {
            None
        };
        let text = self.text;
        let mut modifiers = spec.modifiers;
        for part in &spec.unit_masks {
            if !modifiers.apply_group(part)? {
                let kind = match generalized {
                    GeneralizedEvent::Software(_) => "a software event",
                    GeneralizedEvent::Hardware(_) => "a generalized hardware event",
                    GeneralizedEvent::Cache(_) => "a generalized cache event",
                    GeneralizedEvent::Preset(_) => "a preset",
                };
                return Err(err(
                    EventErrorKind::UnitMaskInvalid,
                    format!(
                        "`{generalized}` is {kind} and takes no unit mask `{part}`; modifiers are u, k, h, H, G and p, pp, ppp, P"
                    ),
                ));
            }
        }
        // Checked here so that an error names the event as typed, not a native term of its
        // mapping.
        let domain = check_domain(&modifiers, self.accepts, text)?;
        if modifiers.edge.is_some()
            || modifiers.invert.is_some()
            || modifiers.cmask.is_some()
            || modifiers.any_thread.is_some()
            || modifiers.in_tx.is_some()
            || modifiers.in_tx_cp.is_some()
            || modifiers.ldlat.is_some()
            || modifiers.frontend.is_some()
            || modifiers.fe_thres.is_some()
        {
            return Err(err(
                EventErrorKind::CombinationNotAllowed,
                format!(
                    "`{text}`: e, i, c, t, intx, intxcp, ldlat, frontend and fe_thres apply to native events, not to the generalized event `{generalized}`"
                ),
            ));
        }
        // The first family of the backend's that has an encoding wins.
        let mut refusal = None;
        for &family in self.accepts.families {
            if family == Family::Perf {
                if let Some(attr) = perf::generic_encoding(generalized, domain) {
                    return Ok(self.single(Encoding::Perf(attr)));
                }
                // A model whose native events are perf attrs (Arm PMUv3) maps presets in
                // that family.
                if model.is_none_or(|m| m.encoder.family() != Family::Perf) {
                    continue;
                }
            }
            if let GeneralizedEvent::Software(_) = generalized {
                // Only the kernel counts software events; a perf attr is their only encoding.
                continue;
            }
            let Some(model) = model else {
                refusal.get_or_insert_with(|| {
                    self.needs_model("generalized hardware events and presets")
                });
                continue;
            };
            if model.encoder.family() != family {
                continue;
            }
            match model.mapping(generalized) {
                Some(mapping) => return self.mapped(model, generalized, mapping, &modifiers),
                None => {
                    refusal.get_or_insert_with(|| {
                        err(
                            EventErrorKind::Unsupported,
                            format!(
                                "`{generalized}` has no native event on CPU model `{}`",
                                model.id
                            ),
                        )
                        .with_hint(format!(
                            "`counterhal list --cpu-model {}` shows what it has",
                            model.id
                        ))
                    });
                }
            }
        }
        Err(refusal.unwrap_or_else(|| match (generalized, model) {
            (GeneralizedEvent::Software(_), _) | (_, None) => self.no_family(Family::Perf),
            (_, Some(model)) => self.no_family(model.encoder.family()),
        }))
    }

    /// The terms of a generalized event's mapping on `model`, each with the user's modifiers.
    fn mapped(
        &self,
        model: &CpuModel,
        generalized: GeneralizedEvent,
        mapping: &crate::model::Mapping,
        modifiers: &Modifiers,
    ) -> Resolved {
        let mut terms = Vec::with_capacity(mapping.terms.len());
        for (sign, factor, term_spec) in &mapping.terms {
            let mut term_spec = model
                .unalias(term_spec)
                .unwrap_or_else(|| term_spec.clone());
            term_spec.modifiers.merge(modifiers)?;
            let (event, extra) = model.lookup(&term_spec).ok_or_else(|| {
                err(
                    EventErrorKind::NotFound,
                    format!(
                        "mapping of `{generalized}` names unknown `{}`",
                        term_spec.name
                    ),
                )
            })?;
            let extra: Vec<&str> = extra.into_iter().collect();
            let name = crate::model::spec_text(&term_spec);
            let choice = select::select(model, event, &term_spec, &extra)?;
            let encoding = encode_native(model, &choice, self.accepts, &name)?;
            terms.push(Term {
                sign: *sign,
                factor: *factor,
                request: EventRequest::new(name, encoding),
            });
        }
        if let [only] = terms.as_slice()
            && only.sign == Sign::Plus
            && only.factor == 1
        {
            return Ok(self.single(only.request.encoding.clone()));
        }
        Ok(ResolvedEvent::new(self.text, terms, None))
    }
}

/// Up to three event names nearest to `name` (what an unknown event's "did you mean" offers):
/// native events of model `cpu` (when given and known), generalized events and presets; no
/// model ids (a CPU model is no event).
fn nearest_event_names(database: &Database, cpu: Option<&str>, name: &str) -> Vec<String> {
    let model = cpu.and_then(|id| database.model(id));
    let natives = model
        .into_iter()
        .flat_map(|m| m.events().iter().map(|e| e.name.clone()));
    let generalized = GeneralizedEvent::all().map(|g| g.name().into_owned());
    crate::suggest::nearest(name, natives.chain(generalized), 3)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cpu::{CpuIdentity, Vendor};
    use crate::domain::tests::{PERF, X86};
    use counterhal_hal::{CounterSet, Domain, Evtsel, Preset};

    #[test]
    fn loading_and_resolving_events_reads_no_metric() {
        // Counted on a thread of its own, from a database parsed afresh: what `stat -e`,
        // `encode` and `info` do reads no metric table and parses no formula.
        std::thread::spawn(|| {
            let db = Database::parse_shipped().unwrap();
            for name in ["INST_RETIRED.ANY_P:u", "cycles", "instructions"] {
                db.resolve(Some("skl"), name, &X86).unwrap();
            }
            db.resolve(Some("spr"), "cycles", &PERF).unwrap();
            #[cfg(any(feature = "metrics", feature = "table-writer"))]
            {
                assert_eq!(crate::expression::parses_on_this_thread(), 0);
                assert_eq!(crate::metrics::shipped_metrics_lookups_on_this_thread(), 0);
            }
        })
        .join()
        .unwrap();
    }

    /// A plain name resolves on a model not yet made whole (which then stays unmade: the
    /// shortcut of `resolve_exact`) exactly as it does once the model is made, for every
    /// shipped model, perf's default events and the other generalized names, with and
    /// without a modifier; and a name a model spells natively (`BRANCHES` on p5, an alias)
    /// still takes the model's. Oracle: the same database's resolution through the made model.
    #[test]
    fn a_plain_name_resolves_alike_before_its_model_is_made() {
        let names = crate::perf::STAT_DEFAULT_EVENTS.into_iter().chain([
            "cpu-cycles",
            "ref-cycles",
            "bus-cycles",
            "cache-misses",
            "cache-references",
            "stalled-cycles-frontend",
            "L1-dcache-load-misses",
            "LLC-loads",
            "cycles:u",
            "instructions:k",
            "branches",
            "BRANCHES",
            "page-faults:u",
        ]);
        let names: Vec<&str> = names.collect();
        let shortcut = Database::parse_shipped().unwrap();
        let made = Database::parse_shipped().unwrap();
        let ids: Vec<String> = made.ids().collect();
        assert!(ids.len() > 10, "{ids:?}");
        let mut taken = 0;
        for id in &ids {
            // Made whole first in `made`: the normal path.
            made.model(id).unwrap();
            for name in &names {
                let plain = plain_name(name).is_some_and(|n| shortcut.model_spells_not(id, n));
                taken += usize::from(plain);
                let ours = shortcut.resolve(Some(id), name, &PERF);
                let theirs = made.resolve(Some(id), name, &PERF);
                assert_eq!(
                    format!("{ours:?}"),
                    format!("{theirs:?}"),
                    "{id} {name} (shortcut {plain})"
                );
            }
        }
        assert!(taken > ids.len(), "the shortcut was taken {taken} times");
        // `BRANCHES` is p5's native event: the shortcut is not taken for it there.
        let fresh = Database::parse_shipped().unwrap();
        assert!(made.model("p5").unwrap().event("BRANCHES").is_some());
        assert!(!fresh.model_spells_not("p5", "BRANCHES"));
        assert!(!fresh.model_spells_not("p5", "branches"));
        assert!(fresh.model_spells_not("p5", "cycles"));
    }

    /// A unit mask on a generalized event names what kind of event it is: perf's own
    /// classes (oracle: perf's `perf list`, which lists task-clock under "Software event",
    /// cycles under "Hardware event" and L1-dcache-loads under "Hardware cache event").
    #[test]
    fn a_unit_mask_on_a_generalized_event_names_its_kind() {
        let db = Database::shipped().unwrap();
        for (name, kind) in [
            ("task-clock:foo", "is a software event"),
            ("cycles:foo", "is a generalized hardware event"),
            ("L1-dcache-loads:foo", "is a generalized cache event"),
        ] {
            let e = db.resolve(Some("skl"), name, &X86).unwrap_err();
            assert!(e.to_string().contains(kind), "{name}: {e}");
        }
    }

    #[test]
    fn required_presets_are_mapped_where_the_cpu_has_them() {
        let db = Database::shipped().unwrap();
        let mapped = |id: &str| -> Vec<&str> {
            let model = db.model(id).unwrap();
            Preset::CORE
                .iter()
                .filter(|&&preset| model.mapping(GeneralizedEvent::Preset(preset)).is_none())
                .map(|preset| preset.name())
                .collect()
        };
        assert!(mapped("skl").is_empty(), "skl lacks {:?}", mapped("skl"));
        assert_eq!(
            mapped("amd64_fam19h_zen3"),
            ["PAPI_REF_CYC", "PAPI_L3_TCM", "PAPI_L3_TCA"],
            "Zen 3 has every required preset but REF_CYC and the L3 pair"
        );
        assert_eq!(
            mapped("amd64_fam19h_zen4"),
            ["PAPI_L3_TCM", "PAPI_L3_TCA"],
            "Zen 4 has reference cycles (0x120) but no core L3 events"
        );
        for model in db.models() {
            for name in ["instructions", "branches"] {
                // The kernel's arm_pmuv3 driver maps no `branches` (armv8_pmuv3_perf_map).
                if model.encoder == crate::model::EncoderKind::Armv8 && name == "branches" {
                    continue;
                }
                assert!(
                    model
                        .mapping(GeneralizedEvent::from_name(name).unwrap())
                        .is_some(),
                    "{} {name}",
                    model.id
                );
            }
            // Every mapping resolves for a backend that takes the model's family.
            let accepts = match model.encoder.family() {
                Family::Perf => &PERF,
                _ => &X86,
            };
            for mapping in model.mappings() {
                let name = mapping.event.name();
                db.resolve(Some(&model.id), &name, accepts)
                    .unwrap_or_else(|e| panic!("{} {name}: {e}", model.id));
            }
        }
    }

    #[test]
    fn families_are_tried_in_the_backends_order() {
        let db = Database::shipped().unwrap();
        let family = |cpu: &str, text: &str, accepts: &Accepts| {
            db.resolve(Some(cpu), text, accepts)
                .map(|r| r.terms[0].request.encoding.family())
        };
        // perf first: the kernel's generic event, and a raw code verbatim.
        assert_eq!(family("skl", "cycles", &PERF).unwrap(), Family::Perf);
        assert_eq!(family("skl", "r00c0", &PERF).unwrap(), Family::Perf);
        // Natives are in the model's family whoever asks.
        assert_eq!(
            family("skl", "INST_RETIRED.ANY_P", &PERF).unwrap(),
            Family::Evtsel
        );
        assert_eq!(family("skl", "cycles", &X86).unwrap(), Family::Evtsel);
        assert_eq!(
            family("p5", "cycles:u", &X86).unwrap_err().kind(),
            crate::error::EventErrorKind::Unsupported.error_kind()
        );
        assert_eq!(family("p5", "DATA_READ", &X86).unwrap(), Family::P5Cesr);
        let p5_on_perf = db
            .resolve_exact(Some("p5"), "DATA_READ", &PERF)
            .unwrap_err();
        assert_eq!(p5_on_perf.kind(), EventErrorKind::Unsupported);
        assert!(
            p5_on_perf.message().contains("P5 CESR") && p5_on_perf.message().contains("perf attr"),
            "{p5_on_perf}"
        );
        let software = db
            .resolve_exact(Some("p6"), "page-faults", &X86)
            .unwrap_err();
        assert_eq!(software.kind(), EventErrorKind::Unsupported);
        assert!(software.message().contains("perf attr"), "{software}");
    }

    #[test]
    fn evtsel_encodings_carry_domain_counters_and_fixed_counter() {
        let db = Database::shipped().unwrap();
        let resolved = db
            .resolve(Some("skl"), "INST_RETIRED.ANY_P:u", &X86)
            .unwrap();
        let Encoding::Evtsel(evtsel) = resolved.terms[0].request.encoding else {
            panic!("{resolved:?}");
        };
        assert_eq!(evtsel.register_value(), 0x41_00c0);
        assert_eq!(evtsel.counters, CounterSet::first(4));
        assert_eq!(evtsel.domain, Domain::ALL.with_levels(Domain::USER));
        let any = db.resolve(Some("skl"), "INST_RETIRED.ANY_P", &X86).unwrap();
        let Encoding::Evtsel(fixed) = any.terms[0].request.encoding else {
            panic!("{any:?}");
        };
        assert_eq!(fixed.fixed, Some(0));
        assert!(
            Evtsel::from_event_select(fixed.register_value())
                .fixed
                .is_none()
        );
    }

    /// `h`, `H` and `G` on x86 counters are unsupported (not a typo), and the message names
    /// the event as typed, not the native term a generalized name maps to.
    #[test]
    fn hypervisor_and_host_guest_on_x86_counters_name_the_typed_event() {
        let db = Database::shipped().unwrap();
        for (cpu, text) in [
            ("p6", "cycles:h"),
            ("p6", "instructions:uH"),
            ("k8", "cycles:G"),
        ] {
            let error = db.resolve_exact(Some(cpu), text, &X86).unwrap_err();
            assert_eq!(error.kind(), EventErrorKind::Unsupported, "{text}: {error}");
            let message = error.message();
            assert!(message.contains(&format!("`{text}`")), "{text}: {message}");
            assert!(!message.contains("unit mask"), "{text}: {message}");
            let hal = Error::from(error);
            assert_eq!(hal.kind(), counterhal_hal::ErrorKind::Unsupported);
        }
        let error = db.resolve_exact(Some("p6"), "cycles:h", &X86).unwrap_err();
        assert!(error.message().contains("no such bit"), "{error}");
        // libpfm4's K8 table has no `h` (its family 10h and later tables have, for the host).
        let error = db
            .resolve_exact(Some("k8"), "RETIRED_INSTRUCTIONS:h", &X86)
            .unwrap_err();
        assert_eq!(error.kind(), EventErrorKind::UnknownModifier, "{error}");
    }

    #[test]
    fn unknown_names_suggest_nearest() {
        let db = Database::shipped().unwrap();
        let error = db
            .resolve_exact(Some("p6"), "INST_RETIRD", &X86)
            .unwrap_err();
        assert_eq!(error.kind(), EventErrorKind::NotFound);
        assert_eq!(
            error.suggestions().first().map(String::as_str),
            Some("INST_RETIRED")
        );
        assert!(
            error.message().contains("did you mean: INST_RETIRED"),
            "{error}"
        );
        assert!(
            db.nearest_names(Some("p6"), "L2_RQST")
                .contains(&"L2_RQSTS".to_string())
        );
        assert!(
            db.nearest_names(None, "cycels")
                .contains(&"cycles".to_string())
        );
        let cpu = db.resolve_exact(Some("p7"), "cycles", &X86).unwrap_err();
        assert_eq!(cpu.kind(), EventErrorKind::UnknownCpu);
    }

    /// The TOML block that follows `heading` in README.md.
    pub(crate) fn readme_block(heading: &str) -> &'static str {
        let readme = include_str!("../README.md");
        let after = &readme[readme.find(heading).expect("heading in README.md")..];
        let start = after.find("```toml\n").expect("a toml block") + "```toml\n".len();
        let text = &after[start..];
        &text[..text.find("```").expect("closed block")]
    }

    #[test]
    fn readme_complete_example_loads() {
        let text = readme_block("### A complete example");
        // Loads on its own and on top of the shipped data.
        let db = Database::from_toml_str("example.toml", text).unwrap();
        Database::shipped()
            .unwrap()
            .with_toml_str("example.toml", text)
            .unwrap();
        let event = db
            .resolve(Some("mycore"), "L2_REQUESTS:MISS_CYCLES:u", &X86)
            .unwrap();
        let Encoding::Evtsel(evtsel) = event.terms[0].request.encoding else {
            panic!("{event:?}");
        };
        assert_eq!(evtsel.register_value(), 0x0141_3f24);
        assert_eq!(evtsel.counters, CounterSet::first(4));
        assert_eq!(evtsel.fixed, None);
        let stepping = CpuIdentity {
            vendor: Vendor::Intel,
            family: 6,
            model: 0xf2,
            stepping: 3,
        };
        assert_eq!(db.detect(&stepping).map(|m| m.id.as_str()), Some("mycore"));
        let stepping = CpuIdentity {
            stepping: 5,
            ..stepping
        };
        assert!(db.detect(&stepping).is_none());
    }

    /// An unknown event's "did you mean" offers event names, never a model id (`sklx` is one
    /// edit from the id `skx`).
    #[test]
    fn suggestions_are_event_names_only() {
        let db = Database::shipped().unwrap();
        let error = db.resolve_exact(Some("skl"), "sklx", &X86).unwrap_err();
        assert!(
            error.suggestions().iter().all(|s| db.model(s).is_none()),
            "{error}"
        );
        let error = db.resolve_exact(None, "p7", &X86).unwrap_err();
        assert!(!error.suggestions().iter().any(|s| s == "p6"), "{error}");
        let error = db
            .resolve_exact(Some("skl"), "INST_RETIRD", &X86)
            .unwrap_err();
        assert_eq!(error.suggestions()[0], "INST_RETIRED");
    }
}
