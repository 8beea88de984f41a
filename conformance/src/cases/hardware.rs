//! Real hardware counts: PAPI-style loops of known instruction and branch counts.

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
        let Some(got) = count_loop(&mut set, || workload::retire_instructions(iterations))? else {
            return Ok(no_workload());
        };
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
        let Some(got) = count_loop(&mut set, || workload::run_branches(ITERATIONS).is_some())?
        else {
            return Ok(no_workload());
        };
        let want = 2 * ITERATIONS;
        if within_one_percent(got, want) {
            Ok(Outcome::Pass)
        } else {
            Ok(Outcome::Fail(format!(
                "{got} branches, want {want} within 1%"
            )))
        }
    })
}
