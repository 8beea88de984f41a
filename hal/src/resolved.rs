//! Named events that may stand for several native events, and how their terms' readings
//! combine into one.

use crate::domain::Domain;
use crate::encoding::{Encoding, EventRequest};
use crate::reading::Reading;

/// Whether a term is added or subtracted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sign {
    /// Added.
    Plus,
    /// Subtracted.
    Minus,
}

/// One native event inside a named event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Term {
    /// Added or subtracted.
    pub sign: Sign,
    /// What the term's estimate is multiplied by before it is added or subtracted: 1 for a
    /// plain sum, more for a weighted one (PAPI's `DERIVED_POSTFIX` presets such as
    /// `PAPI_DP_OPS`, which count a 256-bit packed double operation as 4).
    pub factor: u32,
    /// The event to open.
    pub request: EventRequest,
}

/// What a name resolves to: one native event, or (for derived presets, as in PAPI's
/// `DERIVED_ADD` and `DERIVED_SUB`) a sum or difference of several.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ResolvedEvent {
    /// The name as the user gave it.
    pub name: String,
    /// The native events, in order; the first is always added.
    pub terms: Vec<Term>,
    /// What its count is in, where its PMU says so (a Linux PMU alias's `.scale` and
    /// `.unit`: joules for `power/energy-pkg/`); `None`: a plain count.
    pub unit: Option<Unit>,
}

/// What a count is in, as the PMU that counts it gives it: the count times `scale` is so many
/// `name`. The kernel gives it in sysfs beside an event alias (`events/NAME.scale` and
/// `events/NAME.unit`, Documentation/ABI/testing/sysfs-bus-event_source-devices-events), and
/// perf prints the scaled count with the unit: `power/energy-pkg/` counts in units of
/// 2.3283064365386962890625e-10 joules, `uncore_imc/cas_count_read/` in 6.103515625e-5 MiB.
#[derive(Clone, Debug)]
pub struct Unit {
    /// The unit of the scaled count (`Joules`, `MiB`), as the PMU spells it; empty where only
    /// a scale is given.
    pub name: String,
    /// What one count is in that unit.
    pub scale: f64,
}

impl Unit {
    /// `count` in the unit: `count × scale`.
    pub fn apply(&self, count: u64) -> f64 {
        count as f64 * self.scale
    }
}

/// Two units are equal where their names and the scales' bits are.
impl PartialEq for Unit {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.scale.to_bits() == other.scale.to_bits()
    }
}

impl Eq for Unit {}

impl std::hash::Hash for Unit {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.scale.to_bits().hash(state);
    }
}

impl ResolvedEvent {
    /// `name`, standing for `terms` (the first always added), its count in `unit` where the
    /// PMU gives one.
    pub fn new(name: impl Into<String>, terms: Vec<Term>, unit: Option<Unit>) -> Self {
        Self {
            name: name.into(),
            terms,
            unit,
        }
    }

    /// A name that stands for exactly one event.
    pub fn single(request: EventRequest) -> Self {
        Self {
            name: request.name.clone(),
            terms: vec![Term {
                sign: Sign::Plus,
                factor: 1,
                request,
            }],
            unit: None,
        }
    }

    /// The same event counting user space only, under the same name (its
    /// [`domain`](Self::domain) says what it counts): where every term is a perf attr with
    /// no modifier, the fallback `perf stat` makes when `perf_event_paranoid` refuses counting
    /// the kernel. `None` when a term is of another family or already says what it counts.
    pub fn user_space_only(&self) -> Option<ResolvedEvent> {
        let terms = self
            .terms
            .iter()
            .map(|term| match &term.request.encoding {
                Encoding::Perf(attr) => Some(Term {
                    sign: term.sign,
                    factor: term.factor,
                    request: EventRequest::new(
                        term.request.name.clone(),
                        Encoding::Perf(attr.user_space_only()?),
                    ),
                }),
                _ => None,
            })
            .collect::<Option<Vec<Term>>>()?;
        Some(ResolvedEvent {
            name: self.name.clone(),
            terms,
            unit: self.unit.clone(),
        })
    }

    /// The name `perf stat` prints for the event counted in user space only by its fallback:
    /// `NAME:u` (`pmu/.../u` for a PMU string), as perf 6.1 prints `task-clock:u` for
    /// `-e task-clock` where the kernel may not be counted.
    pub fn user_space_name(&self) -> String {
        let separator = if self.name.ends_with('/') { "" } else { ":" };
        format!("{}{separator}u", self.name)
    }

    /// The domain the event counts, as its (first) term's encoding says: [`Domain::ALL`] for
    /// a name without a modifier, counting what its PMU counts; the levels a modifier, a
    /// set's domain or a fallback to user space chose otherwise.
    pub fn domain(&self) -> Domain {
        self.terms
            .first()
            .map_or(Domain::ALL, |term| term.request.encoding.domain())
    }

    /// Whether more than one native event stands behind the name.
    pub fn is_derived(&self) -> bool {
        self.terms.len() > 1
    }

    /// Combines the readings of the terms (in term order) into the name's reading.
    ///
    /// Each term is scaled on its own first (terms may have been time-shared differently), a
    /// term that never ran adds nothing, and the estimates, each times its factor, are added
    /// or subtracted (clamped to `0..=u64::MAX`). Terms on one PMU (or naming none) were
    /// counted over the same time: they give the longest enabled time and the smallest
    /// running share of those that ran. Terms on several PMUs (an event on each core kind
    /// of a hybrid CPU, an uncore event on each of its boxes) add their PMUs' enabled and
    /// running times, as `perf stat` merges the same event on several PMUs
    /// (tools/perf/util/stat.c, `evsel__merge_aggr_counters`). The value is set so that
    /// [`Reading::scaled`] gives the combined estimate: when every term ran all the time the
    /// value is the exact sum, and when none ran at all the result is "not counted"
    /// (`time_running` 0).
    pub fn combine(&self, readings: &[Reading]) -> Reading {
        // One added term (every event that is not derived) is its own reading, exactly.
        if let ([term], [reading]) = (self.terms.as_slice(), readings)
            && term.sign == Sign::Plus
            && term.factor == 1
        {
            return *reading;
        }
        let terms = &self.terms;
        signed_sum(
            terms
                .iter()
                .map(|t| (t.sign, t.factor))
                .zip(readings.iter()),
            |a, b| terms.get(a).map(pmu_of) == terms.get(b).map(pmu_of),
        )
    }
}

/// The sum of readings of the same event in several places (threads, CPUs) as one reading,
/// each scaled on its own first, as [`ResolvedEvent::combine`] adds terms: the estimate is
/// the sum of the estimates, and the enabled and running times are the sums of theirs, as
/// `perf stat` sums a counter's `ena` and `run` over CPUs and threads (tools/perf/util/stat.c,
/// `process_counter_values`), with the value set so that [`Reading::scaled`] gives the summed
/// estimate.
pub fn sum_readings(readings: &[Reading]) -> Reading {
    match readings {
        [one] => *one,
        _ => signed_sum(readings.iter().map(|r| ((Sign::Plus, 1), r)), |_, _| false),
    }
}

/// The PMU a term counts on, where its encoding names one (`cpu_core`, `uncore_imc_0`).
fn pmu_of(term: &Term) -> Option<&str> {
    match &term.request.encoding {
        Encoding::Perf(attr) => attr.pmu.as_deref(),
        _ => None,
    }
}

/// Adds and subtracts the readings' estimates, each times its factor (clamped to
/// `0..=u64::MAX`), into one reading with the times of the places they were counted in.
/// Readings in one place (`same_place` of their indices) ran over the same time: the place
/// has their longest enabled time and their smallest running share. Places add up, enabled
/// and running times alike, as perf adds an event's over CPUs and over the PMUs it merges.
fn signed_sum<'r>(
    readings: impl Iterator<Item = ((Sign, u32), &'r Reading)> + Clone,
    same_place: impl Fn(usize, usize) -> bool,
) -> Reading {
    let mut estimate: i128 = 0;
    for ((sign, factor), reading) in readings.clone() {
        let Some(scaled) = reading.scaled() else {
            continue;
        };
        let weighted = i128::from(scaled) * i128::from(factor);
        match sign {
            Sign::Plus => estimate += weighted,
            Sign::Minus => estimate -= weighted,
        }
    }
    let (mut time_enabled, mut time_running, mut ran) = (0u64, 0u64, false);
    for (first, _) in readings.clone().enumerate() {
        if (0..first).any(|earlier| same_place(earlier, first)) {
            continue;
        }
        let (enabled, share) = place_times(
            readings
                .clone()
                .enumerate()
                .skip(first)
                .filter(|(i, _)| *i == first || same_place(first, *i))
                .map(|(_, (_, reading))| reading),
        );
        time_enabled = time_enabled.saturating_add(enabled);
        let Some((running, of)) = share else {
            continue;
        };
        ran = true;
        let place_running = match running >= of {
            true => enabled,
            // Ran `running / of` of the place's enabled time.
            false => u64::try_from(u128::from(enabled) * u128::from(running) / u128::from(of))
                .unwrap_or(u64::MAX)
                .max(1),
        };
        time_running = time_running.saturating_add(place_running);
    }
    // Clamped to what a reading can hold, which also keeps the products below in u128.
    let estimate = u128::try_from(estimate.clamp(0, i128::from(u64::MAX))).unwrap_or(0);
    if !ran {
        return Reading {
            value: 0,
            time_enabled,
            time_running: 0,
        };
    }
    if time_running >= time_enabled {
        return Reading {
            value: u64::try_from(estimate).unwrap_or(u64::MAX),
            time_enabled,
            time_running: time_enabled,
        };
    }
    // Report the value the running share would have counted, so that scaling it back gives
    // the estimate; rounded to the nearest, so that a single term comes back as it was
    // counted.
    let enabled = u128::from(time_enabled.max(1));
    let value = (estimate * u128::from(time_running) + enabled / 2) / enabled;
    Reading {
        value: u64::try_from(value).unwrap_or(u64::MAX),
        time_enabled,
        time_running,
    }
}

/// One place's times from its readings: the longest enabled time, and the smallest running
/// share (running, enabled) among those that ran (`None` where none did).
fn place_times<'r>(readings: impl Iterator<Item = &'r Reading>) -> (u64, Option<(u64, u64)>) {
    let mut time_enabled = 0;
    let mut share: Option<(u64, u64)> = None;
    for reading in readings {
        time_enabled = time_enabled.max(reading.time_enabled);
        if reading.scaled().is_none() {
            continue;
        }
        let this = (
            reading.time_running.min(reading.time_enabled),
            reading.time_enabled,
        );
        share = Some(match share {
            Some(least)
                if u128::from(least.0) * u128::from(this.1.max(1))
                    <= u128::from(this.0) * u128::from(least.1.max(1)) =>
            {
                least
            }
            _ => this,
        });
    }
    (time_enabled, share)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Domain;
    use crate::encoding::PerfAttr;

    #[test]
    fn user_space_only_is_perfs_fallback_for_events_without_a_modifier() {
        let plain = ResolvedEvent {
            name: "cycles".into(),
            terms: vec![term(Sign::Plus, "cycles"), term(Sign::Minus, "x")],
            unit: None,
        };
        let user = plain.user_space_only().unwrap();
        assert_eq!(user.name, "cycles", "the name as given");
        assert_eq!(user.user_space_name(), "cycles:u");
        assert!(user.domain().contains(Domain::USER) && !user.domain().contains(Domain::KERNEL));
        for term in &user.terms {
            let Encoding::Perf(attr) = &term.request.encoding else {
                panic!("not perf")
            };
            let bits = attr.exclude_bits();
            assert!(bits.kernel && bits.hv && !bits.user && !bits.idle && !bits.guest);
        }
        assert_eq!(user.terms[1].sign, Sign::Minus);
        let pmu = ResolvedEvent::single(EventRequest::new(
            "cpu/event=0x3c/",
            Encoding::Perf(PerfAttr::new(4, 0x3c)),
        ));
        assert_eq!(pmu.user_space_only().unwrap().name, "cpu/event=0x3c/");
        assert_eq!(pmu.user_space_name(), "cpu/event=0x3c/u");
        // A modifier says what to count: no fallback.
        let kernel = ResolvedEvent::single(EventRequest::new(
            "cycles:k",
            Encoding::Perf(PerfAttr::new(0, 0).with_domain(Domain::KERNEL)),
        ));
        assert!(kernel.user_space_only().is_none());
    }

    fn term(sign: Sign, name: &str) -> Term {
        Term {
            sign,
            factor: 1,
            request: EventRequest::new(name, Encoding::Perf(PerfAttr::new(1, 0))),
        }
    }

    /// The same term on `pmu`.
    fn on(pmu: &str, name: &str) -> Term {
        let mut attr = PerfAttr::new(0, 0);
        attr.pmu = Some(pmu.into());
        Term {
            request: EventRequest::new(name, Encoding::Perf(attr)),
            ..term(Sign::Plus, name)
        }
    }

    /// A counter summed over places carries the sums of their enabled and running times, as
    /// perf sums a counter's `ena` and `run` over CPUs and threads (oracle: perf 7.2's
    /// tools/perf/util/stat.c, `process_counter_values`), and scales to the sum of the
    /// estimates.
    #[test]
    fn a_sum_over_places_carries_the_summed_times() {
        let sum = sum_readings(&[Reading::new(100, 10, 10), Reading::new(50, 20, 10)]);
        assert_eq!((sum.time_enabled, sum.time_running), (30, 20));
        assert_eq!(sum.scaled(), Some(200));
        let whole = sum_readings(&[Reading::new(7, 4, 4), Reading::new(5, 6, 6)]);
        assert_eq!(whole, Reading::new(12, 10, 10));
    }

    /// The same event on several PMUs (the core kinds of a hybrid CPU, an uncore PMU's
    /// boxes) adds the PMUs' enabled and running times, as perf 7.2 merges them
    /// (tools/perf/util/stat.c, `evsel__merge_aggr_counters`: `val`, `ena` and `run` each
    /// summed; `--hybrid-merge` on core PMUs, always on the others), while terms on one PMU
    /// keep the longest enabled time and the smallest running share.
    #[test]
    fn an_event_merged_over_pmus_sums_their_times_as_perf_does() {
        let hybrid = ResolvedEvent::new(
            "cycles",
            vec![
                on("cpu_core", "cpu_core/cycles/"),
                on("cpu_atom", "cpu_atom/cycles/"),
            ],
            None,
        );
        let both = [Reading::new(600, 1_000, 1_000), Reading::new(400, 800, 800)];
        assert_eq!(hybrid.combine(&both), Reading::new(1_000, 1_800, 1_800));
        // A PMU the task never ran on: enabled, never running (perf prints 50.00%).
        let one = [Reading::new(600, 1_000, 1_000), Reading::new(0, 1_000, 0)];
        let merged = hybrid.combine(&one);
        assert_eq!((merged.time_enabled, merged.time_running), (2_000, 1_000));
        assert_eq!(merged.scaled(), Some(600));
        let boxes = ResolvedEvent::new(
            "uncore_imc/cas_count_read/",
            (0..4)
                .map(|n| on(&format!("uncore_imc_{n}"), "cas_count_read"))
                .collect(),
            None,
        );
        let readings = [Reading::new(10, 100, 50); 4];
        let merged = boxes.combine(&readings);
        assert_eq!((merged.time_enabled, merged.time_running), (400, 200));
        assert_eq!(merged.scaled(), Some(80));
        // A derivation on each PMU: its terms share their PMU's time, the PMUs add up.
        let derived = ResolvedEvent::new(
            "a-b",
            vec![
                on("cpu_core", "a"),
                Term {
                    sign: Sign::Minus,
                    ..on("cpu_core", "b")
                },
                on("cpu_atom", "a"),
                Term {
                    sign: Sign::Minus,
                    ..on("cpu_atom", "b")
                },
            ],
            None,
        );
        let readings = [
            Reading::new(100, 10, 10),
            Reading::new(40, 10, 10),
            Reading::new(30, 6, 6),
            Reading::new(10, 6, 3),
        ];
        let merged = derived.combine(&readings);
        // 100 - 40 on the core, 30 - 2 x 10 on the atom (b ran half its time there).
        assert_eq!((merged.time_enabled, merged.time_running), (16, 13));
        assert_eq!(merged.scaled(), Some(70));
    }

    #[test]
    fn sums_and_differences() {
        let event = ResolvedEvent {
            name: "PAPI_BR_NTK".into(),
            terms: vec![
                term(Sign::Plus, "a"),
                term(Sign::Plus, "b"),
                term(Sign::Minus, "c"),
            ],
            unit: None,
        };
        let readings = [
            Reading::new(100, 10, 10),
            Reading::new(50, 12, 8),
            Reading::new(30, 11, 9),
        ];
        // Each term scaled on its own: 100 + 75 - 36.67 = 138.33; b and c ran 8/12 and 9/11.
        let combined = event.combine(&readings);
        assert_eq!((combined.time_enabled, combined.time_running), (12, 8));
        assert_eq!(combined.scaled(), Some(138));
        assert!(event.is_derived());
    }

    /// PAPI's `PAPI_DP_OPS` on Skylake (papi_events.csv: `N0|N1|2|*|+|N2|4|*|+|N3|8|*|+|`)
    /// weighs scalar, 128-, 256- and 512-bit packed double operations 1, 2, 4 and 8.
    #[test]
    fn weighted_terms_count_their_factor_times() {
        let weighted = |factor, name| Term {
            factor,
            ..term(Sign::Plus, name)
        };
        let event = ResolvedEvent {
            name: "PAPI_DP_OPS".into(),
            terms: vec![
                weighted(1, "scalar"),
                weighted(2, "128b"),
                weighted(4, "256b"),
                weighted(8, "512b"),
            ],
            unit: None,
        };
        let readings = [
            Reading::new(10, 4, 4),
            Reading::new(10, 4, 4),
            Reading::new(10, 4, 4),
            Reading::new(10, 4, 2),
        ];
        // 10 + 20 + 40 + 8 x 20 (the 512-bit term ran half the time).
        assert_eq!(event.combine(&readings).scaled(), Some(230));
        // One term with a factor is no plain reading: it is weighed too.
        let one = ResolvedEvent {
            name: "x".into(),
            terms: vec![weighted(3, "a")],
            unit: None,
        };
        assert_eq!(one.combine(&[Reading::new(7, 1, 1)]).value, 21);
        // A weighted difference: 3 x 10 - 2 x 20, clamped at zero.
        let minus = ResolvedEvent {
            name: "y".into(),
            terms: vec![
                weighted(3, "a"),
                Term {
                    factor: 2,
                    ..term(Sign::Minus, "b")
                },
            ],
            unit: None,
        };
        let pair = [Reading::new(10, 1, 1), Reading::new(20, 1, 1)];
        assert_eq!(minus.combine(&pair).value, 0);
    }

    #[test]
    fn terms_time_shared_differently_are_scaled_apart() {
        let event = ResolvedEvent {
            name: "a-b".into(),
            terms: vec![term(Sign::Plus, "a"), term(Sign::Minus, "b")],
            unit: None,
        };
        // a ran all the time, b half: 100 - 2 x 50 = 0, not 100 - 50 scaled by 2 = 100.
        let readings = [Reading::new(100, 10, 10), Reading::new(50, 10, 5)];
        assert_eq!(event.combine(&readings).scaled(), Some(0));
    }

    #[test]
    fn a_term_that_never_ran_adds_nothing() {
        let event = ResolvedEvent {
            name: "cycles".into(),
            terms: vec![term(Sign::Plus, "cpu_core"), term(Sign::Plus, "cpu_atom")],
            unit: None,
        };
        let readings = [
            Reading::new(1_000_000, 1_000, 1_000),
            Reading::new(0, 1_000, 0),
        ];
        assert_eq!(
            event.combine(&readings),
            Reading::new(1_000_000, 1_000, 1_000)
        );
        let never = [Reading::new(0, 1_000, 0), Reading::new(0, 1_000, 0)];
        assert_eq!(event.combine(&never).scaled(), None);
    }

    #[test]
    fn difference_never_goes_negative() {
        let event = ResolvedEvent {
            name: "x".into(),
            terms: vec![term(Sign::Plus, "a"), term(Sign::Minus, "b")],
            unit: None,
        };
        let readings = [Reading::new(5, 1, 1), Reading::new(9, 1, 1)];
        assert_eq!(event.combine(&readings).value, 0);
        let big = [Reading::new(u64::MAX, 1, 1), Reading::new(0, 1, 1)];
        assert_eq!(event.combine(&big).value, u64::MAX);
    }

    #[test]
    fn single_keeps_name() {
        let single = ResolvedEvent::single(term(Sign::Plus, "cycles").request);
        assert_eq!(single.name, "cycles");
        assert!(!single.is_derived());
        assert_eq!(
            single.combine(&[Reading::new(7, 3, 3)]),
            Reading::new(7, 3, 3)
        );
    }
}
