//! One counter's value with the times that qualify it.

/// What one counter said at one read: its value, how long it was enabled and how long it was
/// actually counting (both in nanoseconds).
///
/// When a backend multiplexes more events than it has counters, an event may count for only part
/// of the time it is enabled. [`Reading::scaled`] extrapolates the value to the whole enabled
/// time; it is an estimate, and it is `None` when the event never ran. The raw fields are never
/// altered: readings never lie.
///
/// Its layout is C's `struct { uint64_t value, time_enabled, time_running; }` (the C API's
/// `counterhal_reading_t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Reading {
    /// The counter's value (events counted while running).
    pub value: u64,
    /// Nanoseconds the event was enabled.
    pub time_enabled: u64,
    /// Nanoseconds the event was actually on a counter.
    pub time_running: u64,
}

impl Reading {
    /// A reading from its three parts.
    pub const fn new(value: u64, time_enabled: u64, time_running: u64) -> Self {
        Self {
            value,
            time_enabled,
            time_running,
        }
    }

    /// The value extrapolated to the whole enabled time: `value * time_enabled / time_running`,
    /// rounded to the nearest integer.
    ///
    /// Returns `None` when `time_running` is 0 (the event never ran: "not counted"). When the
    /// event ran all the time it was enabled (or the backend reports `time_running >
    /// time_enabled`, which a buggy kernel can) the value is returned unscaled. The arithmetic
    /// is done in 128 bits and saturates at `u64::MAX`, so it never overflows or panics.
    pub fn scaled(&self) -> Option<u64> {
        if self.time_running == 0 {
            return None;
        }
        if self.time_running >= self.time_enabled {
            return Some(self.value);
        }
        let running = u128::from(self.time_running);
        let product = u128::from(self.value) * u128::from(self.time_enabled);
        let estimate = (product + running / 2) / running;
        Some(u64::try_from(estimate).unwrap_or(u64::MAX))
    }

    /// The share of the enabled time the event was counting, in `0.0..=1.0`.
    ///
    /// Returns `None` when the event was never enabled (`time_enabled` is 0). A reported
    /// `time_running` above `time_enabled` is clamped to 1.0.
    pub fn fraction_running(&self) -> Option<f64> {
        if self.time_enabled == 0 {
            return None;
        }
        let fraction = self.time_running as f64 / self.time_enabled as f64;
        Some(fraction.min(1.0))
    }

    /// Whether the event counted for only part of its enabled time (and so its
    /// [`scaled`](Self::scaled) value is an estimate).
    pub fn is_multiplexed(&self) -> bool {
        self.time_running != 0 && self.time_running < self.time_enabled
    }

    /// The difference `self - earlier` field by field, wrapping, as PAPI's accumulate needs
    /// when a counter is read twice without a reset.
    pub fn since(&self, earlier: &Reading) -> Reading {
        Reading {
            value: self.value.wrapping_sub(earlier.value),
            time_enabled: self.time_enabled.wrapping_sub(earlier.time_enabled),
            time_running: self.time_running.wrapping_sub(earlier.time_running),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Reading;

    #[test]
    fn never_ran_is_not_counted() {
        assert_eq!(Reading::new(123, 1_000, 0).scaled(), None);
        assert_eq!(Reading::new(0, 0, 0).scaled(), None);
    }

    #[test]
    fn full_time_is_unscaled() {
        assert_eq!(Reading::new(42, 1_000, 1_000).scaled(), Some(42));
    }

    #[test]
    fn running_longer_than_enabled_does_not_panic_or_shrink() {
        assert_eq!(Reading::new(500, 1_000, 2_000).scaled(), Some(500));
        assert_eq!(Reading::new(500, 0, 7).scaled(), Some(500));
        assert_eq!(
            Reading::new(500, 1_000, 2_000).fraction_running(),
            Some(1.0)
        );
    }

    #[test]
    fn exact_integer_results() {
        assert_eq!(Reading::new(1_000, 3, 2).scaled(), Some(1_500));
        assert_eq!(Reading::new(7, 10, 5).scaled(), Some(14));
        assert_eq!(Reading::new(1, 3, 2).scaled(), Some(2)); // 1.5 rounds half up
        assert_eq!(Reading::new(1, 4, 3).scaled(), Some(1)); // 1.33 rounds down
        assert_eq!(
            Reading::new(10, 1_000_000_007, 1_000_000_000).scaled(),
            Some(10)
        );
    }

    #[test]
    fn values_near_u64_max() {
        let max = u64::MAX;
        // value * enabled overflows 64 bits; the 128-bit product does not.
        // (2^63 - 1) * (2^64 - 1) / (2^64 - 2) is exactly (2^63 - 1) + 0.5: rounds up.
        assert_eq!(
            Reading::new(max / 2, max, max - 1).scaled(),
            Some(max / 2 + 1)
        );
        assert_eq!(Reading::new(max, max, max / 2).scaled(), Some(max)); // saturates
        assert_eq!(Reading::new(max - 1, 2, 1).scaled(), Some(max));
        assert_eq!(Reading::new(1 << 62, 4, 2).scaled(), Some(1 << 63));
    }

    #[test]
    fn fraction() {
        assert_eq!(Reading::new(1, 0, 0).fraction_running(), None);
        assert_eq!(Reading::new(1, 400, 100).fraction_running(), Some(0.25));
        assert!(Reading::new(1, 400, 100).is_multiplexed());
        assert!(!Reading::new(1, 400, 400).is_multiplexed());
        assert!(!Reading::new(1, 400, 0).is_multiplexed());
    }

    #[test]
    fn since_wraps() {
        let a = Reading::new(10, 100, 100);
        let b = Reading::new(4, 150, 120);
        assert_eq!(b.since(&a), Reading::new(u64::MAX - 5, 50, 20));
    }
}
