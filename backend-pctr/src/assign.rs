//! Placing events on counters: constraints (ctr0-only, ctr1-only), the counter count, counters
//! held by other groups, and the P6's counter-0 enable gate.

use counterhal_hal::{CounterSet, Error, ErrorKind, Result};

/// Where a group's events go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The counter of each event, in request order.
    pub counters: Vec<u32>,
    /// Counter 0 held only to carry the EN bit that gates the other counters (P6).
    pub gate: Option<u32>,
}

impl Placement {
    /// Every counter the placement holds.
    pub fn owned(&self) -> u32 {
        let mut mask = self.counters.iter().fold(0, |mask, c| mask | (1 << c));
        if let Some(gate) = self.gate {
            mask |= 1 << gate;
        }
        mask
    }
}

/// Assigns each event (name, allowed counters) a distinct counter among `0..total` not in
/// `busy`. With `gated`, using any counter other than 0 needs counter 0 too (as a gate when no
/// event sits there). Prefers low counters.
///
/// # Errors
/// [`ErrorKind::NoCounterAvailable`] naming the events that conflict and the counters they
/// could use.
pub(crate) fn assign(
    events: &[(&str, CounterSet)],
    total: u32,
    busy: u32,
    gated: bool,
) -> Result<Placement> {
    let exists = CounterSet::first(total).mask();
    let free = exists & !busy;
    let allowed: Vec<u32> = events.iter().map(|(_, set)| set.mask() & free).collect();

    for (name, set) in events {
        if set.mask() & exists == 0 {
            return Err(no_counter(
                format!(
                    "`{name}` may use only counter(s) {set}, and this CPU has counter(s) {}",
                    CounterSet::first(total)
                ),
                busy,
            ));
        }
    }

    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| allowed[i].count_ones());
    let mut chosen = vec![u32::MAX; events.len()];
    if search(&order, &allowed, 0, 0, free, gated, &mut chosen) {
        let uses_zero = chosen.contains(&0);
        let uses_other = chosen.iter().any(|&c| c != 0);
        let gate = (gated && uses_other && !uses_zero).then_some(0);
        return Ok(Placement {
            counters: chosen,
            gate,
        });
    }
    Err(explain(events, &allowed, total, busy, free, gated))
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

fn no_counter(message: String, busy: u32) -> Error {
    let message = if busy != 0 {
        format!(
            "{message} (counter(s) {} are held by other open groups of this backend)",
            CounterSet::from_mask(busy)
        )
    } else {
        message
    };
    Error::new(ErrorKind::NoCounterAvailable, message)
        .with_hint("open the conflicting events in separate groups, one after another, or drop one")
}

/// Names the smallest set of events that cannot fit (Hall's condition), or the gate.
fn explain(
    events: &[(&str, CounterSet)],
    allowed: &[u32],
    total: u32,
    busy: u32,
    free: u32,
    gated: bool,
) -> Error {
    let free_count = free.count_ones() as usize;
    if events.len() > free_count {
        let names: Vec<String> = events.iter().map(|(name, _)| format!("`{name}`")).collect();
        return no_counter(
            format!(
                "{} events ({}) but only {free_count} free counter(s) of {total}",
                events.len(),
                names.join(", ")
            ),
            busy,
        );
    }
    let n = events.len().min(16);
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
            .map(|&i| format!("`{}` (counters {})", events[i].0, events[i].1))
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
            busy,
        );
    }
    if gated {
        return no_counter(
            "on the P6 family counters other than 0 count only while counter 0's function \
             has the EN bit, and counter 0 is not free for this group"
                .to_string(),
            busy,
        );
    }
    no_counter("the events do not fit the counters".to_string(), busy)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANY2: CounterSet = CounterSet::from_mask(0b11);
    const CTR0: CounterSet = CounterSet::from_mask(0b01);
    const CTR1: CounterSet = CounterSet::from_mask(0b10);

    #[test]
    fn constrained_events_go_where_they_must() {
        let placement = assign(&[("INST_RETIRED", ANY2), ("FLOPS", CTR0)], 2, 0, false).unwrap();
        assert_eq!(placement.counters, vec![1, 0]);
        let placement = assign(&[("MUL", CTR1), ("FP_COMP_OPS_EXE", CTR0)], 2, 0, true).unwrap();
        assert_eq!(placement.counters, vec![1, 0]);
        assert_eq!(placement.gate, None);
    }

    #[test]
    fn two_ctr0_only_events_conflict_by_name() {
        let error = assign(&[("FLOPS", CTR0), ("CYCLES_DIV_BUSY", CTR0)], 2, 0, false).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
        assert!(error.message().contains("`FLOPS`"), "{error}");
        assert!(error.message().contains("`CYCLES_DIV_BUSY`"), "{error}");
        assert!(error.message().contains("only counter(s) 0"), "{error}");
        assert!(error.hint().is_some());
    }

    #[test]
    fn too_many_events() {
        let events = [("a", ANY2), ("b", ANY2), ("c", ANY2)];
        let error = assign(&events, 2, 0, false).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
        assert!(error.message().contains("3 events"), "{error}");
        let four = CounterSet::first(4);
        let placement = assign(
            &[("a", four), ("b", four), ("c", four), ("d", four)],
            4,
            0,
            false,
        );
        assert_eq!(placement.unwrap().counters, vec![0, 1, 2, 3]);
    }

    #[test]
    fn counters_the_cpu_lacks() {
        let error = assign(&[("x", CounterSet::from_mask(0b1100))], 2, 0, false).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
        assert!(
            error.message().contains("this CPU has counter(s) 0,1"),
            "{error}"
        );
    }

    #[test]
    fn busy_counters_are_named() {
        let error = assign(&[("FLOPS", CTR0)], 2, 0b01, false).unwrap_err();
        assert!(
            error.message().contains("held by other open groups"),
            "{error}"
        );
        let placement = assign(&[("INST_RETIRED", ANY2)], 2, 0b01, false).unwrap();
        assert_eq!(placement.counters, vec![1]);
    }

    #[test]
    fn p6_gate() {
        let placement = assign(&[("MUL", CTR1)], 2, 0, true).unwrap();
        assert_eq!(placement.counters, vec![1]);
        assert_eq!(placement.gate, Some(0));
        assert_eq!(placement.owned(), 0b11);
        // Without the gate rule counter 0 stays free.
        assert_eq!(assign(&[("MUL", CTR1)], 2, 0, false).unwrap().gate, None);
        // Counter 0 held elsewhere: counter 1 cannot count.
        let error = assign(&[("MUL", CTR1)], 2, 0b01, true).unwrap_err();
        assert!(error.message().contains("EN bit"), "{error}");
        // An unconstrained event prefers counter 0 and needs no gate.
        let placement = assign(&[("INST_RETIRED", ANY2)], 2, 0, true).unwrap();
        assert_eq!((placement.counters, placement.gate), (vec![0], None));
    }

    #[test]
    fn empty_group() {
        let placement = assign(&[], 2, 0, true).unwrap();
        assert!(placement.counters.is_empty());
        assert_eq!(placement.owned(), 0);
    }
}
