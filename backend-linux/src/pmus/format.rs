//! A PMU's `format/<field>` files: which bits of which attr word a field occupies
//! (`config:0-7,32-35`, `config1:0-9`), and how a value is placed in them.

use counterhal_hal::{Error, PerfAttr, Result};

/// Which attr word a format field lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigWord {
    /// `config`.
    Config,
    /// `config1`.
    Config1,
    /// `config2`.
    Config2,
    /// `config3` (`perf_event_attr` has it since Linux 6.3).
    Config3,
}

impl ConfigWord {
    /// The word a format file or a term names (`config`, `config1`, `config2`, `config3`).
    pub(crate) fn from_name(name: &str) -> Option<ConfigWord> {
        match name {
            "config" => Some(ConfigWord::Config),
            "config1" => Some(ConfigWord::Config1),
            "config2" => Some(ConfigWord::Config2),
            "config3" => Some(ConfigWord::Config3),
            _ => None,
        }
    }

    pub(crate) fn slot(self, encoding: &mut PerfAttr) -> &mut u64 {
        match self {
            ConfigWord::Config => &mut encoding.config,
            ConfigWord::Config1 => &mut encoding.config1,
            ConfigWord::Config2 => &mut encoding.config2,
            ConfigWord::Config3 => &mut encoding.config3,
        }
    }
}

/// One `format/<name>` file: which bits of which word a field occupies, lowest value bit first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatField {
    /// The attr word.
    pub word: ConfigWord,
    /// Inclusive bit ranges, in the order the value's bits fill them.
    pub ranges: Vec<(u32, u32)>,
}

impl FormatField {
    /// Parses `config:0-7,32-35` or `config1:21`.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] naming what is malformed (not the text,
    /// which may be any file's: the caller names the file).
    pub fn parse(text: &str) -> Result<FormatField> {
        let text = text.trim();
        let bad = |why: &str| {
            Error::invalid_input(format!("malformed PMU format: {why}"))
                .with_hint("expected e.g. `config:0-7,32-35`")
        };
        let (word, bits) = text.split_once(':').ok_or_else(|| bad("no `:`"))?;
        let word = ConfigWord::from_name(word).ok_or_else(|| bad("unknown word"))?;
        let mut ranges = Vec::new();
        for part in bits.split(',') {
            let (low, high) = match part.split_once('-') {
                Some((l, h)) => (l, h),
                None => (part, part),
            };
            let low: u32 = low.trim().parse().map_err(|_| bad("bad bit number"))?;
            let high: u32 = high.trim().parse().map_err(|_| bad("bad bit number"))?;
            if low > high || high > 63 {
                return Err(bad("bit range out of 0..=63"));
            }
            ranges.push((low, high));
        }
        Ok(FormatField { word, ranges })
    }

    /// How many value bits the field holds.
    pub fn width(&self) -> u32 {
        self.ranges.iter().map(|(l, h)| h - l + 1).sum()
    }

    /// The largest value the field holds.
    pub fn max_value(&self) -> u64 {
        match self.width() {
            width @ 0..64 => (1u64 << width) - 1,
            _ => u64::MAX,
        }
    }

    /// Places `value` into the field's bits of `encoding`, clearing what they held first.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidEvent`] when `value` needs more bits than the field
    /// (perf's "value too big for format, maximum is N").
    pub fn apply(&self, name: &str, value: u64, encoding: &mut PerfAttr) -> Result<()> {
        self.check(name, value)?;
        let slot = self.word.slot(encoding);
        for (mask, shift, bits) in self.pieces(value) {
            *slot = (*slot & !(mask << shift)) | (bits << shift);
        }
        Ok(())
    }

    /// Sets `value`'s one bits in the field's bits of `encoding`, leaving the others as they
    /// are: perf's way with a PMU's terms (`pmu_format_value` without `zero`), so a term given
    /// after an alias that sets the same field adds its bits to the alias's.
    ///
    /// # Errors
    /// As [`FormatField::apply`].
    pub fn merge(&self, name: &str, value: u64, encoding: &mut PerfAttr) -> Result<()> {
        self.check(name, value)?;
        let slot = self.word.slot(encoding);
        for (_, shift, bits) in self.pieces(value) {
            *slot |= bits << shift;
        }
        Ok(())
    }

    fn check(&self, name: &str, value: u64) -> Result<()> {
        let max = self.max_value();
        if value > max {
            return Err(Error::invalid_event(format!(
                "value {value:#x} does not fit field `{name}` ({} bits): value too big for \
                 format, maximum is {max}",
                self.width()
            ))
            .with_hint(format!("the largest value for `{name}` is {max:#x}")));
        }
        Ok(())
    }

    /// Each range's mask (in place at bit 0), its shift, and `value`'s bits for it.
    fn pieces(&self, value: u64) -> impl Iterator<Item = (u64, u32, u64)> + '_ {
        let mut rest = value;
        self.ranges.iter().map(move |&(low, high)| {
            let bits = high - low + 1;
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            let piece = rest & mask;
            rest = if bits == 64 { 0 } else { rest >> bits };
            (mask, low, piece)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_fields() {
        let f = FormatField::parse("config:0-7,32-35\n").unwrap();
        assert_eq!(f.word, ConfigWord::Config);
        assert_eq!(f.ranges, vec![(0, 7), (32, 35)]);
        assert_eq!((f.width(), f.max_value()), (12, 0xfff));
        let mut e = PerfAttr::new(4, 0);
        f.apply("event", 0x1c0, &mut e).unwrap();
        assert_eq!(e.config, 0xc0 | (0x1 << 32));
        let err = f.apply("event", 0x1000, &mut e).unwrap_err();
        assert!(err.to_string().contains("12 bits"), "{err}");
        assert!(err.to_string().contains("maximum is 4095"), "{err}");

        let single = FormatField::parse("config1:21").unwrap();
        let mut e = PerfAttr::new(4, 0);
        single.apply("edge", 1, &mut e).unwrap();
        assert_eq!(e.config1, 1 << 21);
        // The kernel's umask where the PMU has UMASK2: perf's `umask=0x320` is unit mask
        // 0x20 with second byte 0x03.
        let umask2 = FormatField::parse("config:8-15,40-47").unwrap();
        let mut e = PerfAttr::new(4, 0);
        umask2.apply("umask", 0x320, &mut e).unwrap();
        assert_eq!(e.config, 0x0300_0000_2000);
        let full = FormatField::parse("config:0-63").unwrap();
        assert_eq!(full.max_value(), u64::MAX);
        full.apply("event", u64::MAX, &mut e).unwrap();
        assert_eq!(e.config, u64::MAX);

        for bad in ["config", "conf:1", "config:9-3", "config:0-64", "config:x"] {
            assert!(FormatField::parse(bad).is_err(), "{bad}");
        }
    }

    /// `apply` replaces the field's bits; `merge` adds to them, as perf does with a term after
    /// an alias (`cas_count_read,umask=0x1` keeps the alias's umask 0xcf).
    #[test]
    fn merging_adds_bits() {
        let umask = FormatField::parse("config:8-15").unwrap();
        let mut e = PerfAttr::new(12, 0xcf05);
        umask.merge("umask", 0x10, &mut e).unwrap();
        assert_eq!(e.config, 0xdf05);
        umask.apply("umask", 0x10, &mut e).unwrap();
        assert_eq!(e.config, 0x1005);
        assert!(umask.merge("umask", 0x100, &mut e).is_err());
    }
}
