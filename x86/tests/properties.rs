//! Properties of the counter arithmetic on generated values: the delta between two reads of a
//! counter of any width is the count modulo its range, an overflow adds one whole period, and
//! a real count is never taken for a step backwards.

use counterhal_conformance::prop::{self, Gen};
use counterhal_x86::counter::{counter_delta, is_backward_step, width_mask};

/// A width, a first read, and a count that fits the counter's range.
fn counter(g: &mut Gen) -> (u32, u64, u64) {
    let width = *g.pick(&[1, 8, 31, 32, 40, 44, 47, 48, 63, 64]);
    let mask = width_mask(width);
    (width, g.edgy_u64() & mask, g.edgy_u64() & mask)
}

#[test]
fn the_delta_of_two_reads_is_the_count_modulo_the_range() {
    prop::check(
        "counter_delta(prev, prev + n mod 2^w) == n",
        counter,
        prop::no_shrink,
        |&(width, previous, count)| {
            let current = previous.wrapping_add(count) & width_mask(width);
            let delta = counter_delta(previous, current, width, false);
            if delta != count {
                return Err(format!("delta {delta}, want {count}"));
            }
            // Bits above the width, which some counters read back as sign extension, change
            // nothing.
            let high = !width_mask(width);
            let extended = counter_delta(previous | high, current | high, width, false);
            if extended != count {
                return Err(format!("with high bits set: {extended}, want {count}"));
            }
            Ok(())
        },
    );
}

#[test]
fn an_overflow_without_a_visible_wrap_adds_one_period() {
    prop::check(
        "an overflow flag adds 2^w when the read did not wrap",
        counter,
        prop::no_shrink,
        |&(width, previous, count)| {
            let current = previous.wrapping_add(count) & width_mask(width);
            let delta = counter_delta(previous, current, width, true);
            let period = u128::from(width_mask(width)) + 1;
            let want = if current >= previous {
                u128::from(count) + period
            } else {
                u128::from(count)
            };
            let want = u64::try_from(want).unwrap_or(u64::MAX);
            (delta == want)
                .then_some(())
                .ok_or(format!("delta {delta}, want {want}"))
        },
    );
}

#[test]
fn a_count_the_time_allows_is_never_a_backward_step() {
    prop::check(
        "deltas within what the elapsed time allows are counts",
        counter,
        prop::no_shrink,
        |&(width, _, count)| match is_backward_step(count, width, count) {
            true => Err(format!("{count} taken for a step backwards")),
            false => Ok(()),
        },
    );
}
