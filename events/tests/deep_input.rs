//! Deep and long input to the public parsers: nesting beyond [`expression::MAX_DEPTH`] is an
//! error naming the limit, long flat sums and runs of signs are no deeper than one term, and
//! metrics that read each other in a loop are refused naming the loop. Each runs on a thread of
//! a known, small stack, so a parser that recursed per term or per level would overflow it
//! (and abort the test binary) on every machine alike.

use counterhal_events::expression::{self, MAX_DEPTH};
use counterhal_events::parse_metrics;

/// The stack every case runs on: 1 MiB, half a Rust test thread's default (a debug build
/// needs between 512 and 768 KiB for [`MAX_DEPTH`] levels).
const STACK: usize = 1024 * 1024;

fn on_small_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(work)
        .expect("a test thread")
        .join()
        .expect("the case did not panic")
}

fn nested(levels: usize) -> String {
    format!("{}1{}", "(".repeat(levels), ")".repeat(levels))
}

#[test]
fn nesting_deeper_than_the_limit_is_refused_by_name() {
    on_small_stack(|| {
        let error = expression::parse(&nested(10_000)).unwrap_err();
        assert!(
            error
                .message
                .contains(&format!("deeper than {MAX_DEPTH} levels")),
            "{error}"
        );
        // The first `(` over the limit: the top level is level 1, each `(` one more.
        assert_eq!(error.at, MAX_DEPTH - 1, "{error}");
        // Function arguments and conditional branches are levels too.
        let calls = format!("{}1{}", "min(1, ".repeat(10_000), ")".repeat(10_000));
        assert!(expression::parse(&calls).is_err());
        let chain = format!("{}0", "1 if a else ".repeat(10_000));
        let error = expression::parse(&chain).unwrap_err();
        assert!(error.message.contains("deeper than"), "{error}");
    });
}

#[test]
fn nesting_up_to_the_limit_parses_evaluates_and_drops_on_a_small_stack() {
    on_small_stack(|| {
        let expr = expression::parse(&nested(MAX_DEPTH - 1)).unwrap();
        assert_eq!(expr.evaluate(&|_| None), Some(1.0));
        let copy = expr.clone();
        assert_eq!(copy, expr);
        assert!(format!("{expr:?}").contains("Number"));
        let text = format!(
            "{}a{}",
            "max(1, -(".repeat((MAX_DEPTH - 1) / 2),
            "))".repeat((MAX_DEPTH - 1) / 2)
        );
        let expr = expression::parse(&text).unwrap();
        assert_eq!(expr.names(), ["a"]);
        // max(1, -(max(1, -(... max(1, -(-5)) ...)))): 5 innermost, then 1 at every level.
        assert_eq!(expr.evaluate(&|_| Some(-5.0)), Some(1.0));
    });
}

#[test]
fn a_run_of_unary_minus_signs_is_one_level() {
    on_small_stack(|| {
        let even = format!("{}7", "-".repeat(50_000));
        assert_eq!(
            expression::parse(&even).unwrap().evaluate(&|_| None),
            Some(7.0)
        );
        let odd = format!("{}7", "- ".repeat(50_001));
        assert_eq!(
            expression::parse(&odd).unwrap().evaluate(&|_| None),
            Some(-7.0)
        );
    });
}

#[test]
fn a_sum_of_a_million_terms_parses_evaluates_and_drops_flat() {
    on_small_stack(|| {
        let mut text = "1".to_string();
        for i in 1..1_000_000 {
            text.push_str(if i % 2 == 0 { " + 1" } else { "+1*2/2" });
        }
        let expr = expression::parse(&text).unwrap();
        assert_eq!(expr.evaluate(&|_| None), Some(1_000_000.0));
        drop(expr);
        // Names, each once, in order: a set, not a search of the list per name.
        let names: Vec<String> = (0..200_000).map(|i| format!("e{i}")).collect();
        let sum = names.join(" - ");
        let expr = expression::parse(&sum).unwrap();
        assert_eq!(expr.names(), names);
        assert_eq!(expr.evaluate(&|_| Some(1.0)), Some(1.0 - 199_999.0));
        let comparisons = "a < ".repeat(100_000) + "a";
        let expr = expression::parse(&comparisons).unwrap();
        assert_eq!(expr.evaluate(&|_| Some(2.0)), Some(1.0), "(0 < 2) < 2 ...");
    });
}

fn metrics(pairs: &[(&str, &str)]) -> String {
    let mut text = "model = \"x\"\n".to_string();
    for (name, expression) in pairs {
        text.push_str(&format!(
            "[[metric]]\nname = \"{name}\"\nexpression = \"{expression}\"\n"
        ));
    }
    text
}

#[test]
fn parse_metrics_refuses_a_formula_nested_too_deep_naming_the_metric() {
    on_small_stack(|| {
        let text = metrics(&[("deep", &nested(10_000))]);
        let error = parse_metrics("t.toml", &text).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("t.toml: metric `deep`"), "{message}");
        assert!(message.contains("deeper than"), "{message}");
    });
}

#[test]
fn metrics_that_read_each_other_in_a_loop_are_refused_naming_the_loop() {
    on_small_stack(|| {
        let text = metrics(&[
            ("IPC", "INST / CYCLES"),
            ("a", "b + IPC"),
            ("b", "2 * c"),
            ("c", "IPC if a > 1 else 0"),
        ]);
        let error = parse_metrics("t.toml", &text).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("t.toml"), "{message}");
        assert!(message.contains("`a` -> `b` -> `c` -> `a`"), "{message}");
        let error = parse_metrics("t.toml", &metrics(&[("self", "1 + self")])).unwrap_err();
        assert!(error.to_string().contains("`self` -> `self`"), "{error}");
        // A long chain without a loop is taken, and checked without recursing per metric.
        let names: Vec<String> = (0..20_000).map(|i| format!("m{i}")).collect();
        let formulas: Vec<String> = (0..20_000)
            .map(|i| match names.get(i + 1) {
                Some(next) => format!("{next} + 1"),
                None => "1".to_string(),
            })
            .collect();
        let pairs: Vec<(&str, &str)> = names
            .iter()
            .zip(&formulas)
            .map(|(n, f)| (n.as_str(), f.as_str()))
            .collect();
        let table = parse_metrics("t.toml", &metrics(&pairs)).unwrap();
        assert_eq!(table.metrics.len(), 20_000);
        // ... and a loop at its end is found.
        let mut looped = pairs.clone();
        looped[19_999].1 = "m0";
        let error = parse_metrics("t.toml", &metrics(&looped)).unwrap_err();
        assert!(error.to_string().contains("`m19999` -> `m0`"), "{error}");
    });
}

#[test]
fn parse_metrics_refuses_deeply_nested_toml() {
    on_small_stack(|| {
        for open in ["[", "{a="] {
            let text = format!("model = \"x\"\nunit = {}", open.repeat(100_000));
            let error = parse_metrics("t.toml", &text).unwrap_err();
            assert!(error.to_string().contains("t.toml"), "{error}");
        }
    });
}
