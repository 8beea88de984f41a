//! Real hardware counts: PAPI-style loops of known instruction and branch counts.

use counterhal_hal::Group;

use super::measure::*;
use crate::workload;
use crate::{Outcome, Subject};

fn within_one_percent(got: u64, want: u64) -> bool {
    let tolerance = want / 100;
    got.abs_diff(want) <= tolerance
}

/// PAPI-style: a loop of exactly 1,000,000 retired instructions counts 1,000,000 within 1%.
pub fn instructions_loop<S: Subject>(subject: &S) -> Outcome {
    const INSTRUCTIONS: u64 = 1_000_000;
    let mut set = match hardware_set(subject, &["instructions:u"]) {
        Ok(set) => set,
        Err(outcome) => return outcome,
    };
    check(|| {
        let iterations = INSTRUCTIONS / workload::INSTRUCTIONS_PER_ITERATION;
        step("reset", set.reset())?;
        step("enable", set.enable())?;
        let ran = workload::retire_instructions(iterations);
        step("disable", set.disable())?;
        if !ran {
            return Ok(Outcome::Skip(
                "no assembly workload for this architecture".into(),
            ));
        }
        let got = read(&mut set)?[0].value;
        if within_one_percent(got, INSTRUCTIONS) {
            Ok(Outcome::Pass)
        } else {
            Ok(Outcome::Fail(format!(
                "{got} instructions, want {INSTRUCTIONS} within 1%"
            )))
        }
    })
}

/// PAPI-style: a loop with a known number of conditional branches counts them within 1%.
pub fn branch_loop<S: Subject>(subject: &S) -> Outcome {
    const ITERATIONS: u64 = 500_000;
    let mut set = match hardware_set(subject, &["branches:u"]) {
        Ok(set) => set,
        Err(outcome) => return outcome,
    };
    check(|| {
        step("reset", set.reset())?;
        step("enable", set.enable())?;
        let ran = workload::run_branches(ITERATIONS);
        step("disable", set.disable())?;
        if ran.is_none() {
            return Ok(Outcome::Skip(
                "no assembly workload for this architecture".into(),
            ));
        }
        let want = 2 * ITERATIONS;
        let got = read(&mut set)?[0].value;
        if within_one_percent(got, want) {
            Ok(Outcome::Pass)
        } else {
            Ok(Outcome::Fail(format!(
                "{got} branches, want {want} within 1%"
            )))
        }
    })
}
