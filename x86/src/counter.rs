//! A counter's value over time: width masks, deltas that wrap at the width, and the check that
//! tells a counter that wrapped from one that stepped backwards.

/// A mask of the low `width` bits (all ones for 64 and more).
pub const fn width_mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// The number of events a `width`-bit counter counted between two raw readings `previous` and
/// `current`; `overflowed` says an overflow status bit was set (the counter wrapped at least
/// once since `previous`).
///
/// Without the status bit the difference is taken modulo 2^width: exact when fewer than
/// 2^width events pass between reads. With it, a difference that looks non-negative is known
/// to hide a whole period (exact below 2 x 2^width events between reads).
pub fn counter_delta(previous: u64, current: u64, width: u32, overflowed: bool) -> u64 {
    let width = width.clamp(1, 64);
    let modulus = 1u128 << width;
    let mask = modulus - 1;
    let previous = u128::from(previous) & mask;
    let current = u128::from(current) & mask;
    let mut delta = (current + modulus - previous) & mask;
    if overflowed && current >= previous {
        delta += modulus;
    }
    u64::try_from(delta).unwrap_or(u64::MAX)
}

/// Whether `delta` (a [`counter_delta`] without overflow status) is more likely a step
/// backwards than a count: it is more than half the counter's range and more than the
/// `possible` events the elapsed time allows (cycles x events per cycle). A counter that
/// another program reset or reprogrammed reads such a delta; a real count that large, which a
/// long interval allows, is kept.
pub fn is_backward_step(delta: u64, width: u32, possible: u64) -> bool {
    let half = width_mask(width) / 2;
    delta > half && delta > possible
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(width_mask(40), 0xFF_FFFF_FFFF);
        assert_eq!(width_mask(48), 0xFFFF_FFFF_FFFF);
        assert_eq!(width_mask(64), u64::MAX);
        assert_eq!(width_mask(80), u64::MAX);
    }

    #[test]
    fn deltas_wrap_at_the_width() {
        assert_eq!(counter_delta(10, 15, 48, false), 5);
        assert_eq!(counter_delta(width_mask(48) - 1, 3, 48, false), 5);
        // Bits above the width are ignored.
        assert_eq!(counter_delta(1 << 48, (1 << 48) | 7, 48, false), 7);
        // A whole period hidden behind a small forward step.
        assert_eq!(counter_delta(10, 15, 40, true), 5 + (1 << 40));
        assert_eq!(counter_delta(10, 15, 48, true), (1 << 48) + 5);
        assert_eq!(counter_delta(7, 7, 40, true), 1 << 40);
        // A wrap the difference already shows is not counted twice.
        assert_eq!(counter_delta((1 << 48) - 10, 10, 48, true), 20);
        assert_eq!(counter_delta((1 << 40) - 1, 0, 40, false), 1);
        assert_eq!(counter_delta(u64::MAX - 1, 1, 64, false), 3);
        assert_eq!(counter_delta(u64::MAX, 0, 64, false), 1);
        // A whole 64-bit period saturates.
        assert_eq!(counter_delta(0, 0, 64, true), u64::MAX);
    }

    #[test]
    fn backward_steps_are_told_from_long_counts() {
        let width = 40;
        let back = counter_delta(1_000, 400, width, false);
        assert!(is_backward_step(back, width, 1_000_000));
        // The same delta after a long enough interval is a count.
        assert!(!is_backward_step(back, width, u64::MAX));
        assert!(!is_backward_step(600, width, 0));
    }
}
