//! Properties of the reading arithmetic on generated values: scaling a time-shared count and
//! combining derived events never overflow and agree with exact 128-bit arithmetic.

use counterhal_conformance::prop::{self, Gen};
use counterhal_hal::{Encoding, EventRequest, PerfAttr, Reading, ResolvedEvent, Sign, Term};

fn reading(g: &mut Gen) -> Reading {
    let enabled = g.edgy_u64();
    let running = match g.below(3) {
        0 => enabled,
        1 => 0,
        _ => g.below(enabled.saturating_add(1)),
    };
    Reading::new(g.edgy_u64(), enabled, running)
}

/// `value * enabled / running`, rounded to the nearest, in exact arithmetic.
fn exact_estimate(r: &Reading) -> u128 {
    let running = u128::from(r.time_running);
    (u128::from(r.value) * u128::from(r.time_enabled) + running / 2) / running
}

#[test]
fn scaling_agrees_with_exact_arithmetic_and_saturates() {
    prop::check(
        "scaled() is value * enabled / running, saturating",
        reading,
        prop::no_shrink,
        |r| {
            let scaled = r.scaled();
            let want = match (r.time_running, r.time_running >= r.time_enabled) {
                (0, _) => None,
                (_, true) => Some(r.value),
                (_, false) => Some(u64::try_from(exact_estimate(r)).unwrap_or(u64::MAX)),
            };
            if scaled != want {
                return Err(format!("scaled {scaled:?}, want {want:?}"));
            }
            // An estimate is never below what was counted.
            match scaled {
                Some(s) if s < r.value => Err(format!("estimate {s} below the count")),
                _ => Ok(()),
            }
        },
    );
}

fn term(sign: Sign) -> Term {
    Term {
        sign,
        factor: 1,
        request: EventRequest::new("t", Encoding::Perf(PerfAttr::new(1, 0))),
    }
}

#[test]
fn a_single_term_comes_back_as_it_was_counted() {
    prop::check(
        "combine() of one added term is that term's reading",
        reading,
        prop::no_shrink,
        |r| {
            let event = ResolvedEvent::new("one", vec![term(Sign::Plus)], None);
            let combined = event.combine(std::slice::from_ref(r));
            match (r.time_running, combined.scaled() == r.scaled()) {
                (0, _) | (_, true) => Ok(()),
                _ => Err(format!("combined {combined:?}")),
            }
        },
    );
}

#[test]
fn combined_readings_are_the_sum_of_the_scaled_terms_clamped() {
    prop::check(
        "combine() adds and subtracts each term's estimate, clamped",
        |g| {
            let terms = 1 + g.index(4);
            (0..terms)
                .map(|_| (*g.pick(&[Sign::Plus, Sign::Minus]), reading(g)))
                .collect::<Vec<_>>()
        },
        |terms| {
            (0..terms.len())
                .filter(|_| terms.len() > 1)
                .map(|skip| {
                    let mut fewer = terms.clone();
                    fewer.remove(skip);
                    fewer
                })
                .collect()
        },
        |terms| {
            let event = ResolvedEvent::new(
                "derived",
                terms.iter().map(|(sign, _)| term(*sign)).collect(),
                None,
            );
            let readings: Vec<Reading> = terms.iter().map(|(_, r)| *r).collect();
            let combined = event.combine(&readings);
            let ran: Vec<&(Sign, Reading)> =
                terms.iter().filter(|(_, r)| r.time_running > 0).collect();
            if ran.is_empty() {
                return match combined.time_running {
                    0 => Ok(()),
                    n => Err(format!("no term ran, yet running {n}")),
                };
            }
            let want: i128 = ran
                .iter()
                .map(|(sign, r)| {
                    let estimate = i128::from(r.scaled().unwrap());
                    if *sign == Sign::Minus {
                        -estimate
                    } else {
                        estimate
                    }
                })
                .sum();
            let want = u64::try_from(want.clamp(0, i128::from(u64::MAX))).unwrap();
            let got = combined.scaled().unwrap_or(0);
            // The combined reading carries a running share, so its scaled value lies on a
            // grid of step enabled / running: within half a step (and rounding) of the
            // estimate.
            let step = combined.time_enabled / combined.time_running.max(1);
            let slack = step / 2 + 2;
            if got.abs_diff(want) > slack {
                return Err(format!(
                    "combined estimate {got}, want {want} ({combined:?})"
                ));
            }
            Ok(())
        },
    );
}

#[test]
fn readings_of_one_event_in_many_places_sum_to_the_sum_of_their_estimates() {
    use counterhal_hal::sum_readings;
    prop::check(
        "sum_readings() is the sum of the estimates",
        |g| (0..1 + g.index(6)).map(|_| reading(g)).collect::<Vec<_>>(),
        prop::no_shrink,
        |readings| {
            let sum = sum_readings(readings);
            let want: u128 = readings
                .iter()
                .filter_map(Reading::scaled)
                .map(u128::from)
                .sum();
            let want = u64::try_from(want).unwrap_or(u64::MAX);
            if readings.iter().all(|r| r.scaled().is_none()) {
                return (sum.scaled().is_none())
                    .then_some(())
                    .ok_or(format!("{sum:?}"));
            }
            let got = sum.scaled().unwrap_or(0);
            let step = sum.time_enabled / sum.time_running.max(1);
            (got.abs_diff(want) <= step / 2 + 2)
                .then_some(())
                .ok_or(format!("summed estimate {got}, want {want} ({sum:?})"))
        },
    );
}
