//! The metric column of `counterhal stat`, as perf prints it beside the events it knows:
//! CPUs utilized beside a clock, a rate per second beside any other event when a clock was
//! counted, GHz beside cycles, instructions per cycle (or stalled cycles per instruction),
//! the share of branches, cache references and cache accesses missed, stalled cycles as a
//! share of all cycles, and the top-down level 1 shares (frontend bound, bad speculation,
//! retiring, backend bound) from perf's `topdown-*` events.
//!
//! Each metric is computed among the events of one place and one interval (the whole run, a
//! CPU with `-A`, a thread with `--per-thread`, an interval with `-I`), from their scaled
//! estimates.

use counterhal_hal::{GeneralizedEvent, HardwareEvent, Preset};

use super::summary::EventSummary;

/// A derived number printed beside an event.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    /// The number (a percentage for [`Style::Percent`]).
    pub value: f64,
    /// What it is, in perf's words (`CPUs utilized`, `K/sec`, `insn per cycle`).
    pub unit: String,
    /// How perf writes it.
    pub style: Style,
}

/// How a metric's number is written, as perf writes each kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Three decimals (`0.440 CPUs utilized`, `81.237 K/sec`, `2.100 GHz`).
    Rate,
    /// Two decimals (`1.25  insn per cycle`).
    Ratio,
    /// Two decimals and a percent sign in the table (`2.50% of all branches`).
    Percent,
}

impl Metric {
    fn new(value: f64, unit: impl Into<String>, style: Style) -> Self {
        Metric {
            value,
            unit: unit.into(),
            style,
        }
    }

    /// The number as perf's `-x` writes it: the table's digits, without the percent sign.
    pub fn digits(&self) -> String {
        match self.style {
            Style::Rate => format!("{:.3}", self.value),
            Style::Ratio | Style::Percent => format!("{:.2}", self.value),
        }
    }
}

/// What an event measures, for the metrics: perf's names, their aliases and modifiers, and
/// the PAPI presets that mean the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Measures {
    Clock,
    Instructions,
    Cycles,
    Branches,
    BranchMisses,
    CacheReferences,
    CacheMisses,
    StalledFrontend,
    StalledBackend,
    /// Accesses to one of perf's caches (`L1-dcache-loads`), by the cache's name.
    CacheLoads(&'static str),
    /// Misses in one of perf's caches (`L1-dcache-load-misses`), by the cache's name.
    CacheLoadMisses(&'static str),
    TopdownTotalSlots,
    TopdownSlotsIssued,
    TopdownSlotsRetired,
    TopdownFetchBubbles,
    TopdownRecoveryBubbles,
}

/// perf's caches with a miss ratio: the name's prefix, and the words perf prints.
const CACHES: [(&str, &str); 5] = [
    ("L1-dcache", "L1-dcache accesses"),
    ("L1-icache", "L1-icache accesses"),
    ("LLC", "LL-cache accesses"),
    ("dTLB", "dTLB cache accesses"),
    ("iTLB", "iTLB cache accesses"),
];

/// An event's name without its modifiers (`cycles:u` -> `cycles`, `cpu/cycles/u` -> `cycles`).
fn base_name(name: &str) -> &str {
    let name = name.split(':').next().unwrap_or(name);
    match name.strip_prefix("cpu/") {
        Some(inner) => inner.split('/').next().unwrap_or(inner),
        None => name,
    }
}

fn measures(name: &str) -> Option<Measures> {
    let base = base_name(name);
    for (prefix, _) in CACHES {
        if let Some(rest) = base.strip_prefix(prefix) {
            match rest {
                "-loads" => return Some(Measures::CacheLoads(prefix)),
                "-load-misses" => return Some(Measures::CacheLoadMisses(prefix)),
                _ => {}
            }
        }
    }
    let lower = base.to_ascii_lowercase();
    match lower.as_str() {
        "task-clock" | "cpu-clock" => return Some(Measures::Clock),
        "topdown-total-slots" => return Some(Measures::TopdownTotalSlots),
        "topdown-slots-issued" => return Some(Measures::TopdownSlotsIssued),
        "topdown-slots-retired" => return Some(Measures::TopdownSlotsRetired),
        "topdown-fetch-bubbles" => return Some(Measures::TopdownFetchBubbles),
        "topdown-recovery-bubbles" => return Some(Measures::TopdownRecoveryBubbles),
        _ => {}
    }
    match GeneralizedEvent::from_name(base)? {
        GeneralizedEvent::Hardware(HardwareEvent::Instructions)
        | GeneralizedEvent::Preset(Preset::TotIns) => Some(Measures::Instructions),
        GeneralizedEvent::Hardware(HardwareEvent::Cycles)
        | GeneralizedEvent::Preset(Preset::TotCyc) => Some(Measures::Cycles),
        GeneralizedEvent::Hardware(HardwareEvent::Branches)
        | GeneralizedEvent::Preset(Preset::BrIns) => Some(Measures::Branches),
        GeneralizedEvent::Hardware(HardwareEvent::BranchMisses)
        | GeneralizedEvent::Preset(Preset::BrMsp) => Some(Measures::BranchMisses),
        GeneralizedEvent::Hardware(HardwareEvent::CacheReferences) => {
            Some(Measures::CacheReferences)
        }
        GeneralizedEvent::Hardware(HardwareEvent::CacheMisses) => Some(Measures::CacheMisses),
        GeneralizedEvent::Hardware(HardwareEvent::StalledCyclesFrontend) => {
            Some(Measures::StalledFrontend)
        }
        GeneralizedEvent::Hardware(HardwareEvent::StalledCyclesBackend) => {
            Some(Measures::StalledBackend)
        }
        _ => None,
    }
}

/// The events of one place and interval, each classified once by what it measures, with the
/// first counted estimate of each kind (per cgroup): a metric looks its base up among a few
/// kinds, not among every event, so a table of N events costs O(N), not O(N^2).
pub struct Beside<'a> {
    events: &'a [EventSummary],
    /// What each event measures.
    kinds: Vec<Option<Measures>>,
    /// The first counted estimate of each kind, per cgroup, in event order.
    firsts: Vec<(Measures, Option<&'a str>, f64)>,
}

impl<'a> Beside<'a> {
    /// `events` (one place, one interval), classified.
    pub fn new(events: &'a [EventSummary]) -> Self {
        let kinds: Vec<Option<Measures>> = events.iter().map(|e| measures(&e.name)).collect();
        let mut firsts: Vec<(Measures, Option<&'a str>, f64)> = Vec::new();
        for (event, kind) in events.iter().zip(&kinds) {
            let (Some(kind), Some(estimate)) = (kind, event.estimate()) else {
                continue;
            };
            let cgroup = event.cgroup.as_deref();
            if !firsts.iter().any(|(k, c, _)| k == kind && *c == cgroup) {
                firsts.push((*kind, cgroup, estimate as f64));
            }
        }
        Beside {
            events,
            kinds,
            firsts,
        }
    }

    /// The metric perf prints beside `events[index]`, where there is one.
    pub fn metric(&self, index: usize, elapsed_ns: u64) -> Option<Metric> {
        metric_of(self, index, elapsed_ns)
    }
}

/// The events of one place and interval as one event's metric sees them: those of its cgroup.
struct Among<'a> {
    beside: &'a Beside<'a>,
    /// The cgroup of the event whose metric this is.
    cgroup: Option<&'a str>,
}

impl Among<'_> {
    /// The estimate of the first event that measures `what` and counted.
    fn first(&self, what: Measures) -> Option<f64> {
        self.beside
            .firsts
            .iter()
            .find(|(kind, cgroup, _)| *kind == what && *cgroup == self.cgroup)
            .map(|(_, _, estimate)| *estimate)
    }

    /// `value` over the first `base` event's estimate, where it is above 0.
    fn over(&self, value: f64, base: Measures) -> Option<f64> {
        self.first(base).filter(|&b| b > 0.0).map(|b| value / b)
    }

    /// The top-down level 1 shares, each in percent: frontend bound, bad speculation,
    /// retiring, backend bound (perf's formulas over its `topdown-*` events).
    fn topdown(&self) -> Option<[f64; 4]> {
        let slots = self
            .first(Measures::TopdownTotalSlots)
            .filter(|&s| s > 0.0)?;
        let issued = self.first(Measures::TopdownSlotsIssued)?;
        let retired = self.first(Measures::TopdownSlotsRetired)?;
        let fetch = self.first(Measures::TopdownFetchBubbles)?;
        let recovery = self.first(Measures::TopdownRecoveryBubbles)?;
        let clamp = |share: f64| share.clamp(0.0, 1.0);
        let frontend = clamp(fetch / slots);
        let bad = clamp((issued - retired + recovery) / slots);
        let retiring = clamp(retired / slots);
        let backend = clamp(1.0 - frontend - bad - retiring);
        Some([frontend, bad, retiring, backend].map(|share| 100.0 * share))
    }
}

/// The metric perf prints beside `events[index]`, among `events` (one place, one interval of
/// `elapsed_ns`), where there is one. For every event of a table, classify the events once
/// with [`Beside::new`].
#[cfg(test)]
pub fn metric(events: &[EventSummary], index: usize, elapsed_ns: u64) -> Option<Metric> {
    Beside::new(events).metric(index, elapsed_ns)
}

fn metric_of(beside: &Beside<'_>, index: usize, elapsed_ns: u64) -> Option<Metric> {
    let entry = beside.events.get(index)?;
    // perf's shadow metrics read the count as shown: times its alias's scale (MiB, Joules).
    let factor = entry.scale.as_ref().map_or(1.0, |scale| scale.scale);
    let value = entry.estimate()? as f64 * factor;
    // Only events of the same cgroup (`-G`) stand beside each other, as perf pairs them.
    let among = Among {
        beside,
        cgroup: entry.cgroup.as_deref(),
    };
    let percent_of = |base, what: &str| {
        among
            .over(value, base)
            .map(|share| Metric::new(100.0 * share, what, Style::Percent))
    };
    match beside.kinds[index] {
        Some(Measures::Clock) => (elapsed_ns > 0)
            .then(|| Metric::new(value / elapsed_ns as f64, "CPUs utilized", Style::Rate)),
        Some(Measures::Instructions) => among
            .over(value, Measures::Cycles)
            .map(|ipc| Metric::new(ipc, "insn per cycle", Style::Ratio))
            .or_else(|| {
                let front = among.first(Measures::StalledFrontend);
                let back = among.first(Measures::StalledBackend);
                let stalled = front.into_iter().chain(back).reduce(f64::max)?;
                (value > 0.0)
                    .then(|| Metric::new(stalled / value, "stalled cycles per insn", Style::Ratio))
            }),
        Some(Measures::Cycles) => among
            .first(Measures::Clock)
            .filter(|&ns| ns > 0.0)
            .map(|ns| Metric::new(value / ns, "GHz", Style::Rate)),
        Some(Measures::BranchMisses) => percent_of(Measures::Branches, "of all branches"),
        Some(Measures::CacheMisses) => percent_of(Measures::CacheReferences, "of all cache refs"),
        Some(Measures::StalledFrontend) => percent_of(Measures::Cycles, "frontend cycles idle"),
        Some(Measures::StalledBackend) => percent_of(Measures::Cycles, "backend cycles idle"),
        Some(Measures::CacheLoadMisses(cache)) => {
            let words = CACHES.iter().find(|(c, _)| *c == cache).map(|(_, w)| *w)?;
            percent_of(Measures::CacheLoads(cache), &format!("of all {words}"))
        }
        Some(Measures::TopdownFetchBubbles) => topdown(&among, 0, "frontend bound"),
        Some(Measures::TopdownRecoveryBubbles) => topdown(&among, 1, "bad speculation"),
        Some(Measures::TopdownSlotsRetired) => topdown(&among, 2, "retiring"),
        Some(Measures::TopdownSlotsIssued) => topdown(&among, 3, "backend bound"),
        Some(Measures::TopdownTotalSlots) => None,
        // Every other event: a rate per second of the clock counted beside it, if any.
        Some(Measures::Branches | Measures::CacheReferences | Measures::CacheLoads(_)) | None => {
            let clock_ns = among.first(Measures::Clock)?;
            let per_second = if clock_ns > 0.0 {
                1e9 * value / clock_ns
            } else {
                0.0
            };
            let (scaled, prefix) = thousands_prefix(per_second);
            Some(Metric::new(scaled, format!("{prefix}/sec"), Style::Rate))
        }
    }
}

fn topdown(among: &Among<'_>, which: usize, what: &str) -> Option<Metric> {
    among
        .topdown()
        .map(|shares| Metric::new(shares[which], what, Style::Percent))
}

/// A rate with perf's prefix: G above 10^9, M above 10^6, K above 10^3.
fn thousands_prefix(rate: f64) -> (f64, &'static str) {
    if rate > 1e9 {
        (rate / 1e9, "G")
    } else if rate > 1e6 {
        (rate / 1e6, "M")
    } else if rate > 1e3 {
        (rate / 1e3, "K")
    } else {
        (rate, "")
    }
}

#[cfg(test)]
mod tests {
    use counterhal_hal::Reading;

    use super::*;

    /// Events reading these values (all running all the time; `None`: not supported).
    fn events(values: &[(&str, Option<u64>)]) -> Vec<EventSummary> {
        values
            .iter()
            .map(|&(name, value)| EventSummary {
                name: name.to_string(),
                backend: "test".to_string(),
                reading: value
                    .map(|v| Reading::new(v, 1000, 1000))
                    .ok_or_else(|| format!("{name}: no PMU here")),
                stddev_percent: None,
                cgroup: None,
                scale: None,
            })
            .collect()
    }

    fn all(values: &[(&str, Option<u64>)], elapsed_ns: u64) -> Vec<Option<(String, String)>> {
        let events = events(values);
        (0..events.len())
            .map(|i| metric(&events, i, elapsed_ns).map(|m| (m.digits(), m.unit)))
            .collect()
    }

    fn some(digits: &str, unit: &str) -> Option<(String, String)> {
        Some((digits.to_string(), unit.to_string()))
    }

    #[test]
    fn clocks_give_cpus_utilized_and_other_events_a_rate() {
        // perf: 0.83 msec task-clock # 0.465 CPUs utilized; 50 page-faults # 60.557 K/sec.
        let metrics = all(
            &[
                ("task-clock", Some(825_667)),
                ("page-faults", Some(50)),
                ("context-switches:u", Some(0)),
                ("branches", Some(2_000_000)),
                ("major-faults", None),
            ],
            1_775_628,
        );
        assert_eq!(metrics[0], some("0.465", "CPUs utilized"));
        assert_eq!(metrics[1], some("60.557", "K/sec"));
        assert_eq!(metrics[2], some("0.000", "/sec"));
        assert_eq!(metrics[3], some("2.422", "G/sec"));
        assert_eq!(metrics[4], None, "not counted: no metric");
        // Without a clock, a rate has nothing to stand on.
        assert_eq!(all(&[("page-faults", Some(50))], 1_000), [None]);
        // A clock over no time at all says nothing.
        assert_eq!(all(&[("cpu-clock", Some(5))], 0), [None]);
    }

    #[test]
    fn instructions_per_cycle_and_ghz() {
        let metrics = all(
            &[
                ("cycles:u", Some(2_000_000)),
                ("PAPI_TOT_INS", Some(2_500_000)),
                ("cpu-clock", Some(1_000_000)),
            ],
            1_000_000,
        );
        assert_eq!(metrics[0], some("2.000", "GHz"));
        assert_eq!(metrics[1], some("1.25", "insn per cycle"));
        // No cycles counted: instructions have no ratio (and no rate: they are known).
        assert_eq!(
            all(&[("instructions", Some(9)), ("cycles", None)], 1),
            [None, None]
        );
        assert_eq!(
            all(&[("instructions", Some(9)), ("cycles", Some(0))], 1)[0],
            None
        );
    }

    #[test]
    fn stalled_cycles_per_instruction_and_idle_shares() {
        let metrics = all(
            &[
                ("instructions", Some(1_000)),
                ("stalled-cycles-frontend", Some(300)),
                ("stalled-cycles-backend", Some(500)),
            ],
            1,
        );
        assert_eq!(metrics[0], some("0.50", "stalled cycles per insn"));
        assert_eq!(metrics[1], None, "no cycles: no share");
        let metrics = all(
            &[
                ("cycles", Some(2_000)),
                ("stalled-cycles-frontend", Some(300)),
                ("stalled-cycles-backend", Some(500)),
            ],
            1,
        );
        assert_eq!(metrics[1], some("15.00", "frontend cycles idle"));
        assert_eq!(metrics[2], some("25.00", "backend cycles idle"));
    }

    #[test]
    fn miss_shares_of_branches_and_caches() {
        let events = events(&[
            ("branches", Some(400)),
            ("branch-misses", Some(10)),
            ("cache-references", Some(1_000)),
            ("cache-misses:u", Some(33)),
            ("L1-dcache-loads", Some(2_000)),
            ("L1-dcache-load-misses", Some(50)),
            ("LLC-load-misses", Some(7)),
        ]);
        let metric = |i| metric(&events, i, 1);
        assert_eq!(
            metric(1),
            Some(Metric::new(2.5, "of all branches", Style::Percent))
        );
        assert_eq!(metric(3).unwrap().digits(), "3.30");
        assert_eq!(metric(3).unwrap().unit, "of all cache refs");
        assert_eq!(metric(5).unwrap().unit, "of all L1-dcache accesses");
        assert_eq!(metric(5).unwrap().digits(), "2.50");
        assert_eq!(metric(6), None, "no LLC-loads counted");
        assert_eq!(metric(0), None, "no clock: branches have no rate");
    }

    #[test]
    fn top_down_level_one() {
        // 4 slots per cycle over 1000 cycles: 4000 slots; 3000 issued, 2000 retired,
        // 800 fetch bubbles, 200 recovery bubbles.
        let metrics = all(
            &[
                ("topdown-total-slots", Some(4_000)),
                ("topdown-slots-issued", Some(3_000)),
                ("topdown-slots-retired", Some(2_000)),
                ("topdown-fetch-bubbles", Some(800)),
                ("topdown-recovery-bubbles", Some(200)),
            ],
            1,
        );
        assert_eq!(metrics[0], None);
        // frontend 20%, bad speculation (3000 - 2000 + 200) / 4000 = 30%, retiring 50%,
        // backend the rest: 0%.
        assert_eq!(metrics[1], some("0.00", "backend bound"));
        assert_eq!(metrics[2], some("50.00", "retiring"));
        assert_eq!(metrics[3], some("20.00", "frontend bound"));
        assert_eq!(metrics[4], some("30.00", "bad speculation"));
        // One of the five missing: no share.
        assert_eq!(
            all(
                &[
                    ("topdown-total-slots", Some(4_000)),
                    ("topdown-fetch-bubbles", Some(800))
                ],
                1
            )[1],
            None
        );
    }

    #[test]
    fn names_lose_their_modifiers() {
        assert_eq!(base_name("cycles:u"), "cycles");
        assert_eq!(base_name("cpu/cycles/u"), "cycles");
        assert_eq!(measures("TASK-CLOCK"), Some(Measures::Clock));
        assert_eq!(measures("syscalls:sys_enter_getpid"), None);
        assert_eq!(thousands_prefix(999.0), (999.0, ""));
        assert_eq!(thousands_prefix(2e6), (2.0, "M"));
    }
}
