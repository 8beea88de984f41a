//! Lists of CPU numbers, written as the kernel and perf write them (`0-3,8,10-11`).

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A set of CPU numbers, kept as sorted, disjoint, inclusive ranges: the format of
/// `/sys/devices/system/cpu/online`, a PMU's `cpus` file and perf's `-C`.
///
/// Ranges are never expanded when parsed, so `0-4294967295` costs two numbers, not an
/// allocation per CPU; [`CpuList::iter`] yields the numbers one at a time.
///
/// ```
/// use counterhal_hal::CpuList;
///
/// let list: CpuList = "8,0-3, 2".parse()?;
/// assert_eq!(list.to_string(), "0-3,8");
/// assert_eq!(list.len(), 5);
/// assert!(list.contains(8) && !list.contains(4));
/// assert_eq!(list.iter().collect::<Vec<_>>(), [0, 1, 2, 3, 8]);
/// # Ok::<(), counterhal_hal::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpuList {
    ranges: Vec<(u32, u32)>,
}

impl CpuList {
    /// The CPUs `first..=last`; empty when `last < first`.
    pub fn range(first: u32, last: u32) -> CpuList {
        let ranges = if last < first {
            Vec::new()
        } else {
            vec![(first, last)]
        };
        CpuList { ranges }
    }

    /// The list of the given CPUs (any order, repeats allowed).
    pub fn from_cpus(cpus: impl IntoIterator<Item = u32>) -> CpuList {
        CpuList::from_ranges(cpus.into_iter().map(|cpu| (cpu, cpu)).collect())
    }

    fn from_ranges(ranges: Vec<(u32, u32)>) -> CpuList {
        // Sorted as one u64 each (first above last, the tuples' order): a sort of pairs
        // compiles to four times the code of a sort of integers.
        let mut sorted: Vec<u64> = (ranges.iter())
            .map(|&(first, last)| u64::from(first) << 32 | u64::from(last))
            .collect();
        sorted.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(sorted.len());
        for (first, last) in sorted.into_iter().map(|r| ((r >> 32) as u32, r as u32)) {
            match merged.last_mut() {
                Some(previous) if u64::from(first) <= u64::from(previous.1) + 1 => {
                    previous.1 = previous.1.max(last);
                }
                _ => merged.push((first, last)),
            }
        }
        CpuList { ranges: merged }
    }

    /// How many CPUs the list holds.
    pub fn len(&self) -> u64 {
        self.ranges
            .iter()
            .map(|(first, last)| u64::from(last - first) + 1)
            .sum()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether `cpu` is in the list.
    pub fn contains(&self, cpu: u32) -> bool {
        self.ranges
            .iter()
            .any(|&(first, last)| (first..=last).contains(&cpu))
    }

    /// The lowest CPU, if any.
    pub fn first(&self) -> Option<u32> {
        self.ranges.first().map(|&(first, _)| first)
    }

    /// The highest CPU, if any.
    pub fn last(&self) -> Option<u32> {
        self.ranges.last().map(|&(_, last)| last)
    }

    /// The inclusive ranges, lowest first.
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }

    /// The CPUs, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.ranges.iter().flat_map(|&(first, last)| first..=last)
    }

    /// The CPUs of `self` that are not in `other`.
    pub fn difference(&self, other: &CpuList) -> CpuList {
        let mut ranges = Vec::new();
        for &(first, last) in &self.ranges {
            let mut start = u64::from(first);
            let end = u64::from(last);
            for &(o_first, o_last) in &other.ranges {
                let (o_first, o_last) = (u64::from(o_first), u64::from(o_last));
                if o_last < start || o_first > end {
                    continue;
                }
                if o_first > start {
                    ranges.push((start, o_first - 1));
                }
                start = o_last + 1;
            }
            if start <= end {
                ranges.push((start, end));
            }
        }
        // Every bound comes from a u32 range and lies inside it.
        let ranges = ranges
            .into_iter()
            .filter_map(|(a, b)| Some((u32::try_from(a).ok()?, u32::try_from(b).ok()?)))
            .collect();
        CpuList { ranges }
    }
}

impl CpuList {
    /// Parses `text` as a list of CPUs that must all exist: at least one CPU, each in
    /// `existing` (the CPUs online here, say). The work and memory are bounded by the length
    /// of `text`, never by the numbers in it: `0-4294967295` is refused as quickly as `5`.
    ///
    /// ```
    /// use counterhal_hal::CpuList;
    ///
    /// let online: CpuList = "0-3".parse()?;
    /// assert_eq!(CpuList::parse_within("1,3", &online)?.to_string(), "1,3");
    /// let error = CpuList::parse_within("0-4294967295", &online).unwrap_err();
    /// assert!(error.message().contains("4-4294967295"));
    /// assert!(CpuList::parse_within("", &online).is_err());
    /// # Ok::<(), counterhal_hal::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::error::ErrorKind::InvalidInput): a text that does not
    /// parse (as [`FromStr`] says), an empty list, or one naming CPUs not in `existing`
    /// (the message names them and the CPUs that exist).
    pub fn parse_within(text: &str, existing: &CpuList) -> Result<CpuList> {
        let cpus: CpuList = text.parse()?;
        if cpus.is_empty() {
            return Err(Error::invalid_input(format!(
                "the CPU list `{}` is empty: it names no CPU",
                text.escape_debug()
            ))
            .with_hint(format!("name CPUs that exist here, e.g. `{existing}`")));
        }
        cpus.check_within(existing)?;
        Ok(cpus)
    }

    /// Refuses this list unless it names at least one CPU and every CPU it names is in
    /// `existing`: the check of [`parse_within`](CpuList::parse_within) for a list made
    /// otherwise. It costs the lists' ranges, never their numbers, so a caller checks before
    /// it expands the list into one thing per CPU.
    ///
    /// ```
    /// use counterhal_hal::CpuList;
    ///
    /// let online: CpuList = "0-3".parse()?;
    /// assert!(CpuList::range(1, 2).check_within(&online).is_ok());
    /// let error = CpuList::range(0, u32::MAX).check_within(&online).unwrap_err();
    /// assert!(error.message().contains("4-4294967295"));
    /// # Ok::<(), counterhal_hal::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::error::ErrorKind::InvalidInput) for an empty list, or one
    /// naming CPUs not in `existing` (the message names them and the CPUs that exist).
    pub fn check_within(&self, existing: &CpuList) -> Result<()> {
        if self.is_empty() {
            return Err(
                Error::invalid_input("the CPU list is empty: it names no CPU")
                    .with_hint(format!("name CPUs that exist here, e.g. `{existing}`")),
            );
        }
        let missing = self.difference(existing);
        if missing.is_empty() {
            return Ok(());
        }
        let (which, are) = match missing.len() {
            1 => ("CPU", "does"),
            _ => ("CPUs", "do"),
        };
        Err(Error::invalid_input(format!(
            "{which} {missing} of the CPU list `{self}` {are} not exist here (online: {existing})"
        ))
        .with_hint(format!("name CPUs among {existing}")))
    }
}

impl FromStr for CpuList {
    type Err = Error;

    /// Parses `N`, `N-M` and comma-separated lists of them; spaces around items and a final
    /// newline (as sysfs files end) are allowed; an empty text is the empty list.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::error::ErrorKind::InvalidInput) naming the item that is
    /// not a number or a range, or a range that runs backwards.
    fn from_str(text: &str) -> Result<CpuList> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(CpuList::default());
        }
        let number = |item: &str, part: &str| {
            part.trim().parse::<u32>().map_err(|_| {
                Error::invalid_input(format!(
                    "`{item}` in CPU list `{text}` is not a CPU number or a range"
                ))
                .with_hint("write CPUs as N, N-M or a comma-separated list such as 0-3,8")
            })
        };
        let mut ranges = Vec::new();
        for item in text.split(',') {
            let item = item.trim();
            let (first, last) = match item.split_once('-') {
                Some((first, last)) => (number(item, first)?, number(item, last)?),
                None => {
                    let cpu = number(item, item)?;
                    (cpu, cpu)
                }
            };
            if last < first {
                return Err(Error::invalid_input(format!(
                    "range `{item}` in CPU list `{text}` runs backwards"
                ))
                .with_hint(format!("write it as {last}-{first}")));
            }
            ranges.push((first, last));
        }
        Ok(CpuList::from_ranges(ranges))
    }
}

impl fmt::Display for CpuList {
    /// The kernel's format: `0-3,8`; empty for the empty list.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, &(first, last)) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if first == last {
                write!(f, "{first}")?;
            } else {
                write!(f, "{first}-{last}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn parse(text: &str) -> CpuList {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn sysfs_and_perf_forms() {
        assert_eq!(parse("0-1\n").iter().collect::<Vec<_>>(), [0, 1]);
        assert_eq!(parse("").len(), 0);
        assert_eq!(parse("3").to_string(), "3");
        assert_eq!(parse("0-3,4,6-7").to_string(), "0-4,6-7");
        assert_eq!(parse(" 5 , 1-2 ").to_string(), "1-2,5");
        assert_eq!(parse("2,2,1-3").len(), 3);
    }

    #[test]
    fn huge_ranges_are_not_expanded() {
        let list = parse("0-4294967295");
        assert_eq!(list.len(), 1 << 32);
        assert_eq!(list.last(), Some(u32::MAX));
        assert_eq!(list.iter().take(3).collect::<Vec<_>>(), [0, 1, 2]);
        let online = parse("0-1");
        assert_eq!(list.difference(&online).first(), Some(2));
        assert!(online.difference(&list).is_empty());
        assert_eq!(
            parse("0-9").difference(&parse("2-3,7")).to_string(),
            "0-1,4-6,8-9"
        );
    }

    #[test]
    fn bad_items_are_named() {
        for (text, names) in [("0-x", "`0-x`"), ("1,,2", "``"), ("-1", "`-1`")] {
            let error = text.parse::<CpuList>().unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidInput);
            assert!(error.message().contains(names), "{text}: {error}");
        }
        let backwards = "3-1".parse::<CpuList>().unwrap_err();
        assert!(backwards.to_string().contains("1-3"), "{backwards}");
        assert!("4294967296".parse::<CpuList>().is_err());
    }

    #[test]
    fn lists_naming_cpus_that_do_not_exist_are_refused_naming_them() {
        let online = parse("0-1");
        let started = std::time::Instant::now();
        for (text, named) in [
            (
                "0-4294967295",
                "CPUs 2-4294967295 of the CPU list `0-4294967295`",
            ),
            ("0-100000000", "CPUs 2-100000000"),
            ("1,7", "CPU 7 of"),
        ] {
            let error = CpuList::parse_within(text, &online).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidInput);
            assert!(error.message().contains(named), "{text}: {error}");
            assert!(error.message().contains("(online: 0-1)"), "{text}: {error}");
        }
        // A million ranges cost their text, never their numbers.
        let many: String = (0..1_000_000u32).map(|i| format!("{},", i * 4)).collect();
        let error = CpuList::parse_within(many.trim_end_matches(','), &online).unwrap_err();
        assert!(
            error.message().starts_with("CPUs 4,8,12,"),
            "{}",
            &error.message()[..40]
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        for empty in ["", "  ", "\n"] {
            let error = CpuList::parse_within(empty, &online).unwrap_err();
            assert!(error.message().contains("is empty"), "{error}");
            assert!(error.hint().unwrap().contains("0-1"), "{error:?}");
        }
        assert_eq!(CpuList::parse_within("1, 0", &online).unwrap(), online);
        assert!(CpuList::default().check_within(&online).is_err());
        assert!(CpuList::parse_within("x", &online).is_err());
    }

    #[test]
    fn from_cpus_merges() {
        assert_eq!(CpuList::from_cpus([3, 1, 2, 7]).to_string(), "1-3,7");
        assert_eq!(CpuList::range(2, 1), CpuList::default());
        assert_eq!(CpuList::range(u32::MAX - 1, u32::MAX).len(), 2);
    }
}
