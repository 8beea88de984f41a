//! PAPI's preset forms (`papi_events.csv`: `NOT_DERIVED`, `DERIVED_ADD`, `DERIVED_SUB`,
//! `DERIVED_POSTFIX`) as weighted sums of their native events.
//!
//! PAPI 7.0 computes a preset's value from its natives' counts (`handle_derived` in
//! `src/papi_internal.c`): `NOT_DERIVED` and `DERIVED_CMPD` give the first native's count (the
//! others are only opened), `DERIVED_ADD` the sum, `DERIVED_SUB` the first minus the rest, and
//! `DERIVED_POSTFIX` evaluates its formula (`_papi_hwi_postfix_calc`: `|`-separated tokens,
//! `Nk` the k-th native's count, decimal constants, `+ - * /` on the two topmost values, `#`
//! the clock rate). Every form the table uses on x86 folds into a sum of natives with whole
//! factors, which is what [`linear_form`] computes; `DERIVED_PS`, `DERIVED_ADD_PS` (per
//! second, by the clock rate), `#`, products of two counts and fractions are refused with the
//! reason.

/// PAPI's limit on the natives of one derived event (`PAPI_EVENTS_IN_DERIVED_EVENT`): the
/// csv reader takes no more, and the postfix calculator's stack holds no more.
pub(crate) const MAX_NATIVES: usize = 8;

/// A rational number, kept reduced, for folding a postfix formula exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ratio {
    numerator: i128,
    denominator: i128,
}

impl Ratio {
    const ZERO: Ratio = Ratio {
        numerator: 0,
        denominator: 1,
    };

    fn whole(value: i128) -> Ratio {
        Ratio {
            numerator: value,
            denominator: 1,
        }
    }

    fn reduced(numerator: i128, denominator: i128) -> Result<Ratio, String> {
        if denominator == 0 {
            return Err("divides by zero".to_string());
        }
        let (mut a, mut b) = (numerator.abs(), denominator.abs());
        while b != 0 {
            (a, b) = (b, a % b);
        }
        let gcd = a.max(1);
        let sign = if denominator < 0 { -1 } else { 1 };
        Ok(Ratio {
            numerator: sign * numerator / gcd,
            denominator: sign * denominator / gcd,
        })
    }

    fn add(self, other: Ratio, sign: i128) -> Result<Ratio, String> {
        let numerator = self
            .numerator
            .checked_mul(other.denominator)
            .zip(other.numerator.checked_mul(self.denominator))
            .and_then(|(a, b)| a.checked_add(sign * b));
        let denominator = self.denominator.checked_mul(other.denominator);
        match (numerator, denominator) {
            (Some(n), Some(d)) => Ratio::reduced(n, d),
            _ => Err("a constant too large".to_string()),
        }
    }

    fn times(self, other: Ratio) -> Result<Ratio, String> {
        match (
            self.numerator.checked_mul(other.numerator),
            self.denominator.checked_mul(other.denominator),
        ) {
            (Some(n), Some(d)) => Ratio::reduced(n, d),
            _ => Err("a constant too large".to_string()),
        }
    }
}

/// A value on the postfix calculator's stack: a constant plus a factor per native.
#[derive(Clone, Debug)]
struct Linear {
    factors: Vec<Ratio>,
    constant: Ratio,
}

impl Linear {
    fn constant_value(&self) -> Option<Ratio> {
        self.factors
            .iter()
            .all(|f| *f == Ratio::ZERO)
            .then_some(self.constant)
    }

    fn add(&self, other: &Linear, sign: i128) -> Result<Linear, String> {
        Ok(Linear {
            factors: self
                .factors
                .iter()
                .zip(&other.factors)
                .map(|(a, b)| a.add(*b, sign))
                .collect::<Result<_, _>>()?,
            constant: self.constant.add(other.constant, sign)?,
        })
    }

    fn scaled(&self, by: Ratio) -> Result<Linear, String> {
        Ok(Linear {
            factors: self
                .factors
                .iter()
                .map(|f| f.times(by))
                .collect::<Result<_, _>>()?,
            constant: self.constant.times(by)?,
        })
    }
}

/// The factor of each of `count` natives in a preset of PAPI's form `derived` (with its
/// `postfix` formula for `DERIVED_POSTFIX`): the preset's value is the sum of each native's
/// count times its factor. A factor of 0 is a native PAPI opens but does not count.
pub(crate) fn linear_form(
    derived: &str,
    postfix: Option<&str>,
    count: usize,
) -> Result<Vec<i64>, String> {
    if count == 0 {
        return Err("a PAPI preset names at least one native event".to_string());
    }
    if count > MAX_NATIVES {
        return Err(format!(
            "{count} native events: PAPI takes at most {MAX_NATIVES} (PAPI_EVENTS_IN_DERIVED_EVENT)"
        ));
    }
    if postfix.is_some() != (derived == "DERIVED_POSTFIX") {
        return Err(format!(
            "a postfix formula goes with DERIVED_POSTFIX and only with it (this is {derived})"
        ));
    }
    let first_only = || (0..count).map(|i| i64::from(i == 0)).collect();
    match derived {
        "NOT_DERIVED" | "DERIVED_CMPD" => Ok(first_only()),
        "DERIVED_ADD" => Ok(vec![1; count]),
        "DERIVED_SUB" => Ok((0..count).map(|i| if i == 0 { 1 } else { -1 }).collect()),
        "DERIVED_POSTFIX" => postfix_form(postfix.unwrap_or_default(), count),
        "DERIVED_PS" | "DERIVED_ADD_PS" => Err(format!(
            "{derived} is a rate (per second, by the clock rate PAPI reads from its hardware information), not a count"
        )),
        other => Err(format!(
            "unknown PAPI derived type `{other}`; one of NOT_DERIVED, DERIVED_ADD, DERIVED_SUB, DERIVED_POSTFIX, DERIVED_CMPD"
        )),
    }
}

/// Folds PAPI's postfix formula over `count` natives, read character by character as
/// `_papi_hwi_postfix_calc` reads it.
fn postfix_form(formula: &str, count: usize) -> Result<Vec<i64>, String> {
    let fail = |why: &str| Err(format!("postfix `{formula}`: {why}"));
    let mut stack: Vec<Linear> = Vec::new();
    let mut chars = formula.chars().peekable();
    while let Some(c) = chars.next() {
        let number = |first: Option<char>, chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
            let mut digits: String = first.into_iter().collect();
            while let Some(d) = chars.next_if(char::is_ascii_digit) {
                digits.push(d);
            }
            digits.parse::<usize>().ok()
        };
        match c {
            '|' => {}
            'N' => {
                let Some(index) = number(None, &mut chars) else {
                    return fail("`N` without a native's number");
                };
                if index >= count {
                    return fail(&format!("N{index} names no native (there are {count})"));
                }
                let mut factors = vec![Ratio::ZERO; count];
                factors[index] = Ratio::whole(1);
                stack.push(Linear {
                    factors,
                    constant: Ratio::ZERO,
                });
            }
            '0'..='9' => {
                let Some(value) = number(Some(c), &mut chars) else {
                    return fail("a constant too large");
                };
                stack.push(Linear {
                    factors: vec![Ratio::ZERO; count],
                    constant: Ratio::whole(value as i128),
                });
            }
            '+' | '-' | '*' | '/' => {
                let (Some(right), Some(left)) = (stack.pop(), stack.pop()) else {
                    return fail(&format!("`{c}` needs two values"));
                };
                let value = match c {
                    '+' => left.add(&right, 1),
                    '-' => left.add(&right, -1),
                    '*' => match (left.constant_value(), right.constant_value()) {
                        (_, Some(k)) => left.scaled(k),
                        (Some(k), _) => right.scaled(k),
                        _ => return fail("multiplies two counts (not a weighted sum)"),
                    },
                    _ => match right.constant_value() {
                        Some(k) if k != Ratio::ZERO => left.scaled(Ratio {
                            numerator: k.denominator,
                            denominator: k.numerator,
                        }),
                        Some(_) => return fail("divides by zero"),
                        None => return fail("divides by a count (a ratio, not a weighted sum)"),
                    },
                };
                match value {
                    Ok(value) => stack.push(value),
                    Err(why) => return fail(&why),
                }
            }
            '#' => return fail("uses the clock rate (#), which is no count"),
            other => return fail(&format!("`{other}` is no token of PAPI's postfix")),
        }
    }
    let [value] = stack.as_slice() else {
        return fail(&format!("leaves {} values, not one", stack.len()));
    };
    if value.constant != Ratio::ZERO {
        return fail("adds a constant to the counts");
    }
    value
        .factors
        .iter()
        .map(|f| match (f.denominator, i64::try_from(f.numerator)) {
            (1, Ok(whole)) => Ok(whole),
            _ => Err(format!(
                "postfix `{formula}`: a factor {}/{} that is not whole",
                f.numerator, f.denominator
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: PAPI 7.0's own arithmetic (`handle_derived_add`, `handle_derived_subtract`,
    /// `_papi_hwi_postfix_calc` in src/papi_internal.c) on the forms papi_events.csv uses.
    #[test]
    fn papi_forms_fold_into_weighted_sums() {
        assert_eq!(linear_form("NOT_DERIVED", None, 1), Ok(vec![1]));
        assert_eq!(linear_form("DERIVED_CMPD", None, 2), Ok(vec![1, 0]));
        assert_eq!(linear_form("DERIVED_ADD", None, 3), Ok(vec![1, 1, 1]));
        assert_eq!(linear_form("DERIVED_SUB", None, 3), Ok(vec![1, -1, -1]));
        // Skylake's PAPI_DP_OPS and Sandy Bridge's nested form.
        assert_eq!(
            linear_form("DERIVED_POSTFIX", Some("N0|N1|2|*|+|N2|4|*|+|N3|8|*|+|"), 4),
            Ok(vec![1, 2, 4, 8])
        );
        assert_eq!(
            linear_form("DERIVED_POSTFIX", Some("N0|N1|4|*|N2|8|*|+|+|"), 3),
            Ok(vec![1, 4, 8])
        );
        assert_eq!(
            linear_form("DERIVED_POSTFIX", Some("N0|N1|+|N2|-|N3|-"), 4),
            Ok(vec![1, 1, -1, -1])
        );
        assert_eq!(
            linear_form("DERIVED_POSTFIX", Some("N0|512|128|/|*|N1|+|"), 2),
            Ok(vec![4, 1])
        );
        assert_eq!(
            linear_form("DERIVED_POSTFIX", Some("N0|N1|+|2|*|"), 2),
            Ok(vec![2, 2])
        );
        assert_eq!(
            linear_form("DERIVED_POSTFIX", Some("N0|3|*|N1|N2|+|+|"), 3),
            Ok(vec![3, 1, 1])
        );
    }

    #[test]
    fn forms_that_are_no_weighted_sum_are_refused_with_why() {
        for (derived, postfix, count, why) in [
            (
                "DERIVED_POSTFIX",
                Some("N0|N1|*|"),
                2,
                "multiplies two counts",
            ),
            ("DERIVED_POSTFIX", Some("N0|N1|/|"), 2, "divides by a count"),
            ("DERIVED_POSTFIX", Some("N0|3|/|"), 1, "not whole"),
            ("DERIVED_POSTFIX", Some("N0|0|/|"), 1, "divides by zero"),
            ("DERIVED_POSTFIX", Some("N0|#|*|"), 1, "clock rate"),
            ("DERIVED_POSTFIX", Some("N0|N2|+|"), 2, "N2 names no native"),
            ("DERIVED_POSTFIX", Some("N0|+|"), 1, "needs two values"),
            ("DERIVED_POSTFIX", Some("N0|N1|"), 2, "leaves 2 values"),
            ("DERIVED_POSTFIX", Some("N0|1|+|"), 1, "adds a constant"),
            ("DERIVED_POSTFIX", Some("N0|x|"), 1, "no token"),
            ("DERIVED_POSTFIX", None, 1, "goes with DERIVED_POSTFIX"),
            ("DERIVED_ADD", Some("N0|"), 1, "goes with DERIVED_POSTFIX"),
            ("DERIVED_PS", None, 2, "a rate"),
            ("DERIVED_MUL", None, 2, "unknown PAPI derived type"),
            ("DERIVED_ADD", None, 9, "at most 8"),
            ("NOT_DERIVED", None, 0, "at least one"),
        ] {
            let error = linear_form(derived, postfix, count).unwrap_err();
            assert!(error.contains(why), "{derived} {postfix:?}: {error}");
        }
    }
}
