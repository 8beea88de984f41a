//! Number formatting shared by the subcommands.

/// `1234567` grouped as the user's locale groups numbers (perf's `%'`): `1,234,567` in `en_US`, `1234567` in
/// the C locale.
pub fn thousands(value: u64) -> String {
    grouped(value, crate::sys::thousands_separator())
}

/// `value` with `separator` between groups of three digits ("" for none).
pub fn grouped(value: u64, separator: &str) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 * separator.len());
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push_str(separator);
        }
        out.push(c);
    }
    out
}

/// Nanoseconds as seconds with nine decimals.
pub fn seconds(nanoseconds: u64) -> String {
    format!(
        "{}.{:09}",
        nanoseconds / 1_000_000_000,
        nanoseconds % 1_000_000_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators() {
        assert_eq!(grouped(0, ","), "0");
        assert_eq!(grouped(999, ","), "999");
        assert_eq!(grouped(1_000, ","), "1,000");
        assert_eq!(grouped(1_234_567, ","), "1,234,567");
        assert_eq!(grouped(u64::MAX, ","), "18,446,744,073,709,551,615");
        assert_eq!(grouped(1_234_567, ""), "1234567");
        assert_eq!(grouped(1_234_567, "\u{202f}"), "1\u{202f}234\u{202f}567");
    }

    #[test]
    fn secs() {
        assert_eq!(seconds(1_500_000_000), "1.500000000");
        assert_eq!(seconds(42), "0.000000042");
    }
}
