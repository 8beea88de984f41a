//! Placing a group's events on counters: general-purpose counters with per-event constraints
//! (the P6's counter-0-only and counter-1-only events), fixed counters (Intel), counters other
//! groups hold, and the P6's rule that counter 0's enable bit gates the others.

use std::fmt;

use counterhal_hal::{CounterSet, Error, ErrorKind, Result};

/// A counter: general purpose or fixed, by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterRef {
    /// General-purpose counter `i` (IA32_PMCi, PerfCtri, pctr's counter i).
    Gp(u32),
    /// Fixed counter `i` (IA32_FIXED_CTRi).
    Fixed(u32),
}

impl fmt::Display for CounterRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CounterRef::Gp(i) => write!(f, "counter {i}"),
            CounterRef::Fixed(i) => write!(f, "fixed counter {i}"),
        }
    }
}

/// What one event may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Demand<'a> {
    /// The event's name, for messages.
    pub name: &'a str,
    /// The general-purpose counters it may use ([`CounterSet::NONE`]: a fixed counter only).
    pub general: CounterSet,
    /// The fixed counter that counts exactly this event, when one does.
    pub fixed: Option<u32>,
}

impl<'a> Demand<'a> {
    /// An event that may use `general` and, when given, fixed counter `fixed`.
    pub const fn new(name: &'a str, general: CounterSet, fixed: Option<u32>) -> Self {
        Self {
            name,
            general,
            fixed,
        }
    }
}

/// The counters of one CPU as a group finds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counters<'a> {
    /// How many general-purpose counters exist (counters `0..general`).
    pub general: u32,
    /// The fixed counters that exist.
    pub fixed: CounterSet,
    /// General-purpose counters in use elsewhere (bit `i` = counter `i`).
    pub busy_general: u32,
    /// Fixed counters in use elsewhere.
    pub busy_fixed: u32,
    /// Who holds the busy counters, for messages ("other open groups of this backend").
    pub holders: &'a str,
    /// The P6 rule: a counter other than 0 counts only while counter 0 carries the enable bit,
    /// so using one needs counter 0 too (as a gate when no event sits there).
    pub gated: bool,
}

impl Counters<'_> {
    /// `general` general-purpose counters and no fixed ones, all free, not gated.
    pub const fn general(general: u32) -> Counters<'static> {
        Counters {
            general,
            fixed: CounterSet::NONE,
            busy_general: 0,
            busy_fixed: 0,
            holders: "other open groups",
            gated: false,
        }
    }

    fn existing_general(&self) -> u32 {
        CounterSet::first(self.general).mask()
    }

    fn free_general(&self) -> u32 {
        self.existing_general() & !self.busy_general
    }

    fn free_fixed(&self) -> u32 {
        self.fixed.mask() & !self.busy_fixed
    }
}

/// Where a group's events go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The counter of each event, in request order.
    pub counters: Vec<CounterRef>,
    /// Counter 0 held only to carry the enable bit that gates the others (P6).
    pub gate: Option<u32>,
}

impl Placement {
    /// The general-purpose counters the placement holds, the gate included.
    pub fn general_mask(&self) -> u32 {
        let mut mask = self.gate.map_or(0, |gate| 1 << gate);
        for counter in &self.counters {
            if let CounterRef::Gp(i) = counter {
                mask |= 1 << i;
            }
        }
        mask
    }

    /// The fixed counters the placement holds.
    pub fn fixed_mask(&self) -> u32 {
        self.counters.iter().fold(0, |mask, counter| match counter {
            CounterRef::Fixed(i) => mask | (1 << i),
            CounterRef::Gp(_) => mask,
        })
    }
}

/// Places each event on a distinct free counter: fixed counters first (events that can count
/// nowhere else before those that can), first come; then general-purpose counters, the most
/// constrained events first, lowest counters preferred, under the gate rule when it applies.
///
/// # Errors
/// [`ErrorKind::NoCounterAvailable`] naming the events that conflict and the counters they
/// could use (and who holds the busy ones).
pub fn assign(demands: &[Demand<'_>], counters: &Counters<'_>) -> Result<Placement> {
    let existing = counters.existing_general();
    for demand in demands {
        let fixed_exists = demand.fixed.is_some_and(|f| counters.fixed.contains(f));
        if demand.general.mask() & existing == 0 && !fixed_exists {
            return Err(no_counter(
                format!(
                    "`{}` may use only {}, and this CPU has {}",
                    demand.name,
                    describe(demand.general, demand.fixed),
                    describe(CounterSet::first(counters.general), None)
                        + &fixed_list(counters.fixed)
                ),
                counters,
            ));
        }
    }
    let mut placed: Vec<Option<CounterRef>> = vec![None; demands.len()];
    let mut fixed_taken = 0u32;
    let free_fixed = counters.free_fixed();
    let fixed_only_first = (0..demands.len())
        .filter(|&i| demands[i].general.is_empty())
        .chain((0..demands.len()).filter(|&i| !demands[i].general.is_empty()));
    for i in fixed_only_first {
        if let Some(f) = demands[i].fixed
            && f < 32
            && free_fixed & !fixed_taken & (1 << f) != 0
        {
            fixed_taken |= 1 << f;
            placed[i] = Some(CounterRef::Fixed(f));
        }
    }
    let free = counters.free_general();
    let waiting: Vec<usize> = (0..demands.len())
        .filter(|&i| placed[i].is_none())
        .collect();
    let allowed: Vec<u32> = waiting
        .iter()
        .map(|&i| demands[i].general.mask() & free)
        .collect();
    let mut order: Vec<usize> = (0..waiting.len()).collect();
    order.sort_by_key(|&w| allowed[w].count_ones());
    let mut chosen = vec![u32::MAX; waiting.len()];
    // More events than the counters they may use between them never fit: said at once, where
    // the search would try every order of the counters before giving up.
    let usable = allowed.iter().fold(0u32, |union, mask| union | mask);
    let too_many = waiting.len() > usable.count_ones() as usize;
    if too_many || !search(&order, &allowed, 0, 0, free, counters.gated, &mut chosen) {
        let waiting: Vec<&Demand<'_>> = waiting.iter().map(|&i| &demands[i]).collect();
        return Err(explain(&waiting, &allowed, counters, fixed_taken));
    }
    for (w, &i) in waiting.iter().enumerate() {
        placed[i] = Some(CounterRef::Gp(chosen[w]));
    }
    let uses_zero = chosen.contains(&0);
    let uses_other = chosen.iter().any(|&c| c != 0);
    let gate = (counters.gated && uses_other && !uses_zero).then_some(0);
    Ok(Placement {
        counters: placed.into_iter().flatten().collect(),
        gate,
    })
}

/// Depth-first search over `order`, lowest counter first; accepts a full assignment only if the
/// gate rule holds.
fn search(
    order: &[usize],
    allowed: &[u32],
    depth: usize,
    used: u32,
    free: u32,
    gated: bool,
    chosen: &mut [u32],
) -> bool {
    if depth == order.len() {
        let needs_gate = gated && used & !1 != 0 && used & 1 == 0;
        return !needs_gate || free & 1 != 0;
    }
    let event = order[depth];
    let mut candidates = allowed[event] & !used;
    while candidates != 0 {
        let counter = candidates.trailing_zeros();
        candidates &= candidates - 1;
        chosen[event] = counter;
        if search(
            order,
            allowed,
            depth + 1,
            used | (1 << counter),
            free,
            gated,
            chosen,
        ) {
            return true;
        }
    }
    false
}

/// `counter(s) 0,1` and, when given, ` or fixed counter 2`.
fn describe(general: CounterSet, fixed: Option<u32>) -> String {
    let general = if general.is_empty() {
        "no general-purpose counter".to_string()
    } else {
        format!("counter(s) {general}")
    };
    match fixed {
        Some(f) => format!("{general} or fixed counter {f}"),
        None => general,
    }
}

fn fixed_list(fixed: CounterSet) -> String {
    if fixed.is_empty() {
        String::new()
    } else {
        format!(" and fixed counter(s) {fixed}")
    }
}

fn no_counter(message: String, counters: &Counters<'_>) -> Error {
    let busy_general = counters.busy_general & counters.existing_general();
    let busy_fixed = counters.busy_fixed & counters.fixed.mask();
    let mut message = message;
    if busy_general != 0 || busy_fixed != 0 {
        let mut held = Vec::new();
        if busy_general != 0 {
            held.push(format!(
                "counter(s) {}",
                CounterSet::from_mask(busy_general)
            ));
        }
        if busy_fixed != 0 {
            held.push(format!(
                "fixed counter(s) {}",
                CounterSet::from_mask(busy_fixed)
            ));
        }
        message = format!(
            "{message} ({} are held by {})",
            held.join(" and "),
            counters.holders
        );
    }
    Error::new(ErrorKind::NoCounterAvailable, message)
        .with_hint("open the conflicting events in separate groups, one after another, or drop one")
}

/// Names what cannot fit: a fixed-only event whose counter is taken, too many events, the
/// smallest set of events with fewer counters than members (Hall's condition), or the gate.
fn explain(
    waiting: &[&Demand<'_>],
    allowed: &[u32],
    counters: &Counters<'_>,
    fixed_taken: u32,
) -> Error {
    if let Some(demand) = waiting.iter().find(|d| d.general.is_empty()) {
        let f = demand.fixed.unwrap_or(0);
        let holder = if fixed_taken & (1 << f) != 0 {
            "another event of this group"
        } else {
            counters.holders
        };
        return no_counter(
            format!(
                "`{}` counts only on fixed counter {f}, which {holder} holds",
                demand.name
            ),
            counters,
        );
    }
    let free = counters.free_general();
    let free_count = free.count_ones() as usize;
    if waiting.len() > free_count {
        let names: Vec<String> = waiting.iter().map(|d| format!("`{}`", d.name)).collect();
        return no_counter(
            format!(
                "{} events ({}) but only {free_count} free counter(s) of {}",
                waiting.len(),
                names.join(", "),
                counters.general
            ),
            counters,
        );
    }
    let n = waiting.len().min(16);
    let mut best: Option<u32> = None;
    for subset in 1u32..(1 << n) {
        let union = (0..n)
            .filter(|i| subset & (1 << i) != 0)
            .fold(0, |m, i| m | allowed[i]);
        if union.count_ones() < subset.count_ones()
            && best.is_none_or(|b| subset.count_ones() < b.count_ones())
        {
            best = Some(subset);
        }
    }
    if let Some(subset) = best {
        let members: Vec<usize> = (0..n).filter(|i| subset & (1 << i) != 0).collect();
        let union = members.iter().fold(0, |m, &i| m | allowed[i]);
        let described: Vec<String> = members
            .iter()
            .map(|&i| format!("`{}` (counters {})", waiting[i].name, waiting[i].general))
            .collect();
        let room = if union == 0 {
            "no free counter".to_string()
        } else {
            format!("only counter(s) {}", CounterSet::from_mask(union))
        };
        return no_counter(
            format!(
                "{} together can use {room}: fewer counters than events",
                described.join(" and ")
            ),
            counters,
        );
    }
    if counters.gated {
        return no_counter(
            "on the P6 family counters other than 0 count only while counter 0's function \
             has the EN bit, and counter 0 is not free for this group"
                .to_string(),
            counters,
        );
    }
    no_counter("the events do not fit the counters".to_string(), counters)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANY2: CounterSet = CounterSet::from_mask(0b11);
    const CTR0: CounterSet = CounterSet::from_mask(0b01);
    const CTR1: CounterSet = CounterSet::from_mask(0b10);

    fn general(events: &[(&'static str, CounterSet)]) -> Vec<Demand<'static>> {
        events
            .iter()
            .map(|&(name, set)| Demand::new(name, set, None))
            .collect()
    }

    fn gp(indices: &[u32]) -> Vec<CounterRef> {
        indices.iter().map(|&i| CounterRef::Gp(i)).collect()
    }

    fn p6(busy: u32) -> Counters<'static> {
        Counters {
            busy_general: busy,
            gated: true,
            ..Counters::general(2)
        }
    }

    #[test]
    fn constrained_events_go_where_they_must() {
        let two = Counters::general(2);
        let events = general(&[("INST_RETIRED", ANY2), ("FLOPS", CTR0)]);
        assert_eq!(assign(&events, &two).unwrap().counters, gp(&[1, 0]));
        let events = general(&[("MUL", CTR1), ("FP_COMP_OPS_EXE", CTR0)]);
        let placement = assign(&events, &p6(0)).unwrap();
        assert_eq!(placement.counters, gp(&[1, 0]));
        assert_eq!(placement.gate, None);
    }

    #[test]
    fn two_ctr0_only_events_conflict_by_name() {
        let events = general(&[("FLOPS", CTR0), ("CYCLES_DIV_BUSY", CTR0)]);
        let error = assign(&events, &Counters::general(2)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
        assert!(error.message().contains("`FLOPS`"), "{error}");
        assert!(error.message().contains("`CYCLES_DIV_BUSY`"), "{error}");
        assert!(error.message().contains("only counter(s) 0"), "{error}");
        assert!(error.hint().is_some());
    }

    #[test]
    fn too_many_events() {
        let events = general(&[("a", ANY2), ("b", ANY2), ("c", ANY2)]);
        let error = assign(&events, &Counters::general(2)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
        assert!(error.message().contains("3 events"), "{error}");
        let four = CounterSet::first(4);
        let events = general(&[("a", four), ("b", four), ("c", four), ("d", four)]);
        let placement = assign(&events, &Counters::general(4)).unwrap();
        assert_eq!(placement.counters, gp(&[0, 1, 2, 3]));
    }

    /// 17 events that may each use any of 16 counters: refused at once (searching every order
    /// of the 16 counters would take days).
    #[test]
    fn more_events_than_counters_fail_without_searching() {
        let names: Vec<String> = (0..17).map(|i| format!("e{i}")).collect();
        let demands: Vec<Demand<'_>> = names
            .iter()
            .map(|name| Demand::new(name, CounterSet::first(16), None))
            .collect();
        let error = assign(&demands, &Counters::general(16)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
        assert!(error.to_string().contains("e16"), "{error}");
    }

    #[test]
    fn counters_the_cpu_lacks() {
        let events = general(&[("x", CounterSet::from_mask(0b1100))]);
        let error = assign(&events, &Counters::general(2)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
        assert!(
            error.message().contains("this CPU has counter(s) 0,1"),
            "{error}"
        );
    }

    #[test]
    fn busy_counters_are_named() {
        let held = Counters {
            busy_general: 0b01,
            holders: "other open groups of this backend",
            ..Counters::general(2)
        };
        let error = assign(&general(&[("FLOPS", CTR0)]), &held).unwrap_err();
        assert!(
            error
                .message()
                .contains("counter(s) 0 are held by other open groups of this backend"),
            "{error}"
        );
        let placement = assign(&general(&[("INST_RETIRED", ANY2)]), &held).unwrap();
        assert_eq!(placement.counters, gp(&[1]));
    }

    #[test]
    fn p6_gate() {
        let placement = assign(&general(&[("MUL", CTR1)]), &p6(0)).unwrap();
        assert_eq!(placement.counters, gp(&[1]));
        assert_eq!(placement.gate, Some(0));
        assert_eq!(placement.general_mask(), 0b11);
        // Without the gate rule counter 0 stays free.
        let free = assign(&general(&[("MUL", CTR1)]), &Counters::general(2)).unwrap();
        assert_eq!(free.gate, None);
        // Counter 0 held elsewhere: counter 1 cannot count.
        let error = assign(&general(&[("MUL", CTR1)]), &p6(0b01)).unwrap_err();
        assert!(error.message().contains("EN bit"), "{error}");
        // An unconstrained event prefers counter 0 and needs no gate.
        let placement = assign(&general(&[("INST_RETIRED", ANY2)]), &p6(0)).unwrap();
        assert_eq!((placement.counters, placement.gate), (gp(&[0]), None));
    }

    #[test]
    fn fixed_counters_first() {
        let intel = Counters {
            fixed: CounterSet::first(3),
            ..Counters::general(4)
        };
        let any4 = CounterSet::first(4);
        // A second claimant of the same fixed counter goes to a general-purpose one.
        let events = [
            Demand::new("a", any4, Some(0)),
            Demand::new("b", any4, Some(0)),
        ];
        let placement = assign(&events, &intel).unwrap();
        assert_eq!(
            placement.counters,
            [CounterRef::Fixed(0), CounterRef::Gp(0)]
        );
        assert_eq!((placement.general_mask(), placement.fixed_mask()), (1, 1));
        // An event that counts only on the fixed counter gets it before one that need not.
        let events = [
            Demand::new("any", any4, Some(2)),
            Demand::new("ref-cycles", CounterSet::NONE, Some(2)),
        ];
        let placement = assign(&events, &intel).unwrap();
        assert_eq!(
            placement.counters,
            [CounterRef::Gp(0), CounterRef::Fixed(2)]
        );
        // Busy counters are avoided.
        let busy = Counters {
            busy_general: 0b0111,
            busy_fixed: 0b010,
            ..intel
        };
        let placement = assign(&[Demand::new("c", any4, Some(1))], &busy).unwrap();
        assert_eq!(placement.counters, [CounterRef::Gp(3)]);
        // A fixed-only event whose counter is taken is named.
        let events = [
            Demand::new("one", CounterSet::NONE, Some(2)),
            Demand::new("two", CounterSet::NONE, Some(2)),
        ];
        let error = assign(&events, &intel).unwrap_err();
        assert!(
            error
                .message()
                .contains("`two` counts only on fixed counter 2, which another event"),
            "{error}"
        );
    }

    #[test]
    fn empty_group() {
        let placement = assign(&[], &p6(0)).unwrap();
        assert!(placement.counters.is_empty());
        assert_eq!(placement.general_mask(), 0);
    }
}
