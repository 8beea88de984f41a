//! Whether two metric formulas compute the same value, whatever the release that wrote them:
//! each formula is parsed (perf's metric syntax: numbers, names with perf's escapes, `+ - * /`,
//! `< > <= >=`, parentheses, `A if C else B`, `min`, `max`, `d_ratio`, `source_count`,
//! `has_event`), the metrics it reads are put in place of their names, and it is evaluated at a
//! few points where every event has a value of its own, drawn from the event's name as
//! [`event_key`] spells it. Two formulas that agree at every point are the same formula
//! (`64 * X / 1e9 / duration_time` and `( 64 * X / ( 1000000000 ) ) / ( ( (duration_time *
//! 1000) / 1000 ) )`); a formula whose value is not a finite number at some point matches
//! none.
//!
//! The event database evaluates formulas with its own parser (`events/src/expression.rs`);
//! the generator depends on no crate of the workspace, so this one is its own, and its test
//! (`gen/tests/metric_names.rs`) holds the two to the same value on every shipped formula.

use std::cell::RefCell;
use std::collections::HashMap;

/// How many points a formula is evaluated at.
pub const POINTS: usize = 3;

/// How deep metrics may read metrics (a loop stops there, and matches nothing).
const MAX_REFERENCES: usize = 32;

/// A parsed formula.
#[derive(Clone, Debug, PartialEq)]
enum Node {
    Number(f64),
    Name(String),
    Negate(Box<Node>),
    Binary(u8, Box<Node>, Box<Node>),
    If(Box<Node>, Box<Node>, Box<Node>),
    Call(String, Vec<Node>),
    /// A name resolved to another metric (its index).
    Metric(usize),
    /// A name resolved to an event: its value at each point.
    Event([f64; POINTS]),
}

/// One token: a number, a name (escapes removed), or an operator.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    Number(f64),
    Name(String),
    Op(&'static str),
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    const OPS: [&str; 11] = ["<=", ">=", "+", "-", "*", "/", "(", ")", ",", "<", ">"];
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || chars[i] == '.'
                    || (matches!(chars[i], '+' | '-') && matches!(chars[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            let number: String = chars[start..i].iter().collect();
            let value = match number.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).map(|v| v as f64).ok(),
                None => number.parse().ok(),
            };
            out.push(Token::Number(
                value.ok_or_else(|| format!("`{number}` is not a number"))?,
            ));
        } else if c.is_alphanumeric() || matches!(c, '_' | '#' | '\\' | '@') {
            let mut name = String::new();
            while i < chars.len() {
                match chars[i] {
                    '\\' if i + 1 < chars.len() => {
                        name.push(chars[i + 1]);
                        i += 2;
                    }
                    c if c.is_alphanumeric() || matches!(c, '_' | '.' | '#' | '@' | ':' | '=') => {
                        name.push(c);
                        i += 1;
                    }
                    _ => break,
                }
            }
            out.push(Token::Name(name));
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let op = OPS
                .iter()
                .find(|op| rest.starts_with(**op))
                .ok_or_else(|| format!("unexpected `{c}`"))?;
            out.push(Token::Op(op));
            i += op.len();
        }
    }
    Ok(out)
}

/// A recursive-descent parser over the tokens, perf's precedence: `if else` lowest, then
/// comparisons, `+ -`, `* /`, signs.
struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, op: &str) -> bool {
        let found = matches!(self.peek(), Some(Token::Op(o)) if *o == op);
        self.at += usize::from(found);
        found
    }

    fn word(&mut self, word: &str) -> bool {
        let found = matches!(self.peek(), Some(Token::Name(n)) if n == word);
        self.at += usize::from(found);
        found
    }

    fn conditional(&mut self, depth: usize) -> Result<Node, String> {
        if depth > 200 {
            return Err("nested too deep".to_string());
        }
        let then = self.binary(0, depth)?;
        if !self.word("if") {
            return Ok(then);
        }
        let condition = self.binary(0, depth)?;
        if !self.word("else") {
            return Err("`if` without `else`".to_string());
        }
        let otherwise = self.conditional(depth + 1)?;
        Ok(Node::If(
            Box::new(then),
            Box::new(condition),
            Box::new(otherwise),
        ))
    }

    fn binary(&mut self, level: usize, depth: usize) -> Result<Node, String> {
        const LEVELS: [&[&str]; 3] = [&["<=", ">=", "<", ">"], &["+", "-"], &["*", "/"]];
        let Some(ops) = LEVELS.get(level) else {
            return self.unary(depth);
        };
        let mut left = self.binary(level + 1, depth)?;
        while let Some(op) = ops.iter().find(|op| self.eat(op)) {
            let right = self.binary(level + 1, depth)?;
            let code = match *op {
                "<=" => b'l',
                ">=" => b'g',
                other => other.as_bytes()[0],
            };
            left = Node::Binary(code, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self, depth: usize) -> Result<Node, String> {
        if self.eat("-") {
            return Ok(Node::Negate(Box::new(self.unary(depth + 1)?)));
        }
        if self.eat("+") {
            return self.unary(depth + 1);
        }
        match self.tokens.get(self.at).cloned() {
            Some(Token::Number(n)) => {
                self.at += 1;
                Ok(Node::Number(n))
            }
            Some(Token::Op("(")) => {
                self.at += 1;
                let inner = self.conditional(depth + 1)?;
                self.close()?;
                Ok(inner)
            }
            Some(Token::Name(name)) => {
                self.at += 1;
                if !self.eat("(") {
                    return Ok(Node::Name(name));
                }
                let mut args = vec![self.conditional(depth + 1)?];
                while self.eat(",") {
                    args.push(self.conditional(depth + 1)?);
                }
                self.close()?;
                Ok(Node::Call(name, args))
            }
            other => Err(format!("expected a value, found {other:?}")),
        }
    }

    fn close(&mut self) -> Result<(), String> {
        match self.eat(")") {
            true => Ok(()),
            false => Err("a `(` without its `)`".to_string()),
        }
    }
}

fn parse(text: &str) -> Result<Node, String> {
    let mut parser = Parser {
        tokens: tokens(text)?,
        at: 0,
    };
    let node = parser.conditional(0)?;
    match parser.peek() {
        None => Ok(node),
        Some(token) => Err(format!("unexpected {token:?} after the formula")),
    }
}

/// An event's name as both releases' formulas may spell it, so that two spellings of one
/// event are one key: ASCII upper case, perf's `@` as `/`; a core event in the core PMU's
/// terms (`cpu@X\,cmask\=4@`) and one with perfmon's modifiers (`X:c4`, `X:c=4`) as the
/// name and its terms (`X,CMASK=4`: `c` is `cmask`, `e` `edge`, `i` `inv`, numbers in
/// decimal, sorted); perfmon's markers of an event read by the core's top-down group
/// (`:perf_metrics`, `:percore`) dropped.
pub fn event_key(name: &str) -> String {
    let name = name.replace('@', "/").to_ascii_uppercase();
    let term = |field: &str, value: &str| {
        let field = match field {
            "C" => "CMASK",
            "E" => "EDGE",
            "I" => "INV",
            other => other,
        };
        let number = match value.strip_prefix("0X") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => value.parse().ok(),
        };
        match number {
            Some(n) => format!("{field}={n}"),
            None => format!("{field}={value}"),
        }
    };
    let (event, mut terms): (&str, Vec<String>) =
        match name.strip_prefix("CPU/").and_then(|r| r.strip_suffix('/')) {
            Some(inner) => {
                let mut parts = inner.split(',');
                let event = parts.next().unwrap_or_default();
                let terms = parts
                    .map(|t| {
                        let (field, value) = t.split_once('=').unwrap_or((t, "1"));
                        term(field, value)
                    })
                    .collect();
                (event, terms)
            }
            None if !name.contains('/') => {
                let mut parts = name.split(':');
                let event = parts.next().unwrap_or_default();
                let terms = parts
                    .filter(|m| !matches!(*m, "PERF_METRICS" | "PERCORE"))
                    .map(|m| match m.split_once('=') {
                        Some((field, value)) => term(field, value),
                        None if m.len() > 1
                            && matches!(&m[..1], "C" | "E" | "I")
                            && m[1..].bytes().all(|b| b.is_ascii_digit()) =>
                        {
                            term(&m[..1], &m[1..])
                        }
                        None => m.to_string(),
                    })
                    .collect();
                (event, terms)
            }
            None => return name,
        };
    terms.sort();
    std::iter::once(event.to_string())
        .chain(terms)
        .collect::<Vec<_>>()
        .join(",")
}

/// The value of the event whose [`event_key`] is `key` at point `point`: FNV-1a of the key and the point,
/// scaled into 1..1001.
pub fn value_of(key: &str, point: usize) -> f64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key.bytes().chain(std::iter::once(point as u8)) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    1.0 + (hash >> 11) as f64 / (1u64 << 53) as f64 * 1000.0
}

/// A release's metrics, whose formulas read one another by name.
pub struct Formulas {
    /// Each metric's index in `nodes`, by name (in lower case where `any_case`).
    index: HashMap<String, usize>,
    /// Each metric's formula, its names resolved: another metric by index, an event by its
    /// values at the points.
    nodes: Vec<Node>,
    /// Whether a formula names another metric in any case (perf's JSON since 6.3 writes
    /// every name in lower case).
    any_case: bool,
    /// Each metric's value at each point, once evaluated (the top-down trees read their
    /// nodes many times over).
    known: RefCell<Vec<[Option<Option<f64>>; POINTS]>>,
}

impl Formulas {
    /// The formulas `(name, formula)`; a formula that does not parse is left out (it matches
    /// nothing), and so are names given twice after the first.
    pub fn new<'a>(
        metrics: impl IntoIterator<Item = (&'a str, &'a str)>,
        any_case: bool,
    ) -> Formulas {
        let key = |name: &str| match any_case {
            true => name.to_ascii_lowercase(),
            false => name.to_string(),
        };
        let mut index = HashMap::new();
        let mut parsed = Vec::new();
        for (name, formula) in metrics {
            if let Ok(node) = parse(formula)
                && !index.contains_key(&key(name))
            {
                index.insert(key(name), parsed.len());
                parsed.push(node);
            }
        }
        let nodes: Vec<Node> = parsed
            .into_iter()
            .map(|node| resolved(node, &|name| index.get(&key(name)).copied()))
            .collect();
        Formulas {
            known: RefCell::new(vec![[None; POINTS]; nodes.len()]),
            index,
            nodes,
            any_case,
        }
    }

    /// The values of metric `name` at each point, or `None` where it is not a metric here, or
    /// its value is not a finite number at some point.
    pub fn values(&self, name: &str) -> Option<[f64; POINTS]> {
        let key = match self.any_case {
            true => name.to_ascii_lowercase(),
            false => name.to_string(),
        };
        let metric = *self.index.get(&key)?;
        let mut out = [0.0; POINTS];
        for (point, slot) in out.iter_mut().enumerate() {
            let value = self.metric(metric, point, 0)?;
            if !value.is_finite() {
                return None;
            }
            *slot = value;
        }
        Some(out)
    }

    /// Metric `metric`'s value at `point`, read `depth` metrics deep.
    fn metric(&self, metric: usize, point: usize, depth: usize) -> Option<f64> {
        if let Some(value) = self.known.borrow()[metric][point] {
            return value;
        }
        if depth >= MAX_REFERENCES {
            return None;
        }
        let value = self.evaluate(&self.nodes[metric], point, depth + 1);
        // A value found below the limit is the metric's wherever it is read.
        self.known.borrow_mut()[metric][point] = Some(value);
        value
    }

    fn evaluate(&self, node: &Node, point: usize, depth: usize) -> Option<f64> {
        let eval = |n: &Node| self.evaluate(n, point, depth);
        Some(match node {
            Node::Number(n) => *n,
            Node::Event(values) => values[point],
            Node::Metric(metric) => self.metric(*metric, point, depth)?,
            // Every name was resolved.
            Node::Name(_) => return None,
            Node::Negate(inner) => -eval(inner)?,
            Node::Binary(op, a, b) => {
                let (a, b) = (eval(a)?, eval(b)?);
                let truth = |t: bool| f64::from(u8::from(t));
                match op {
                    b'+' => a + b,
                    b'-' => a - b,
                    b'*' => a * b,
                    b'/' => a / b,
                    b'<' => truth(a < b),
                    b'>' => truth(a > b),
                    b'l' => truth(a <= b),
                    _ => truth(a >= b),
                }
            }
            Node::If(then, condition, otherwise) => match eval(condition)? != 0.0 {
                true => eval(then)?,
                false => eval(otherwise)?,
            },
            Node::Call(function, args) => match (function.as_str(), args.as_slice()) {
                ("min", [a, b]) => eval(a)?.min(eval(b)?),
                ("max", [a, b]) => eval(a)?.max(eval(b)?),
                ("d_ratio", [a, b]) => match eval(b)? {
                    0.0 => 0.0,
                    b => eval(a)? / b,
                },
                _ => return None,
            },
        })
    }
}

/// The values of the event whose key is `key` at every point.
fn event(key: &str) -> Node {
    let mut values = [0.0; POINTS];
    for (point, value) in values.iter_mut().enumerate() {
        *value = value_of(key, point);
    }
    Node::Event(values)
}

/// `node` with each name resolved: a metric (`metric_of` gives its index) or an event (its
/// values); `has_event(E)` is 1 and `source_count(E)` a value of its own.
fn resolved(node: Node, metric_of: &dyn Fn(&str) -> Option<usize>) -> Node {
    let boxed = |n: Box<Node>| Box::new(resolved(*n, metric_of));
    match node {
        Node::Name(name) => match metric_of(&name) {
            Some(metric) => Node::Metric(metric),
            None => event(&event_key(&name)),
        },
        Node::Negate(inner) => Node::Negate(boxed(inner)),
        Node::Binary(op, a, b) => Node::Binary(op, boxed(a), boxed(b)),
        Node::If(a, b, c) => Node::If(boxed(a), boxed(b), boxed(c)),
        Node::Call(function, args) => match (function.as_str(), args.as_slice()) {
            ("has_event", [_]) => Node::Number(1.0),
            ("source_count", [Node::Name(name)]) => {
                event(&format!("source_count({})", event_key(name)))
            }
            _ => Node::Call(
                function,
                args.into_iter().map(|a| resolved(a, metric_of)).collect(),
            ),
        },
        other => other,
    }
}

/// Whether two metrics' values agree at every point (relative difference under 1e-9).
pub fn same_values(a: &[f64; POINTS], b: &[f64; POINTS]) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()))
}

/// The metric of `ours` (each a name and its printed values) whose values are `values`, for a
/// metric called `name`: the one that has them, or among several, the one whose name and `name`
/// share the longest ending where one name ends with the other, if exactly one.
pub fn by_formula(
    name: &str,
    values: Option<[f64; POINTS]>,
    ours: &[(String, Option<[f64; POINTS]>)],
) -> Option<String> {
    let values = values?;
    let same: Vec<&String> = ours
        .iter()
        .filter(|(_, v)| v.as_ref().is_some_and(|v| same_values(v, &values)))
        .map(|(n, _)| n)
        .collect();
    if let [one] = same.as_slice() {
        return Some((*one).clone());
    }
    // Among several, the one whose name and `name` share the longest ending, where one
    // name ends with the other (`tma_info_thread_cpi` is `Info_Thread_CPI`, not `cpi`).
    let lower = name.to_ascii_lowercase();
    let shared = |n: &String| {
        let n = n.to_ascii_lowercase();
        (n.ends_with(&lower) || lower.ends_with(&n)).then(|| n.len().min(lower.len()))
    };
    let longest = same.iter().filter_map(|n| shared(n)).max()?;
    let ending: Vec<&&String> = same.iter().filter(|n| shared(n) == Some(longest)).collect();
    match ending.as_slice() {
        [one] => Some((**one).clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_spellings_of_one_formula_agree() {
        let ours = Formulas::new(
            [(
                "A",
                "( 64 * ( X.RD + X.WR ) / ( 1000000000 ) ) / ( ( (duration_time * 1000) / 1000 ) )",
            )],
            false,
        );
        let theirs = Formulas::new(
            [
                ("b", "64 * (x.rd + X.WR) / 1e9 / duration_time"),
                ("c", "b * 2"),
            ],
            true,
        );
        let a = ours.values("A").unwrap();
        assert!(same_values(&a, &theirs.values("B").unwrap()));
        assert!(!same_values(&a, &theirs.values("c").unwrap()));
    }

    #[test]
    fn event_keys_spell_one_event_once() {
        assert_eq!(
            event_key("cpu@X.Y\\,cmask\\=0x4@".replace('\\', "").as_str()),
            "X.Y,CMASK=4"
        );
        assert_eq!(event_key("X.Y:c4"), "X.Y,CMASK=4");
        assert_eq!(event_key("x.y:c=4"), "X.Y,CMASK=4");
        assert_eq!(event_key("TOPDOWN.SLOTS:perf_metrics"), "TOPDOWN.SLOTS");
    }

    #[test]
    fn bad_formulas_and_loops_match_nothing() {
        let table = Formulas::new(
            [("a", "b + 1"), ("b", "a"), ("c", "1 +"), ("d", "1 / 0")],
            false,
        );
        assert_eq!(table.values("a"), None);
        assert_eq!(table.values("c"), None);
        assert_eq!(table.values("d"), None);
        assert_eq!(table.values("none"), None);
        let conditional = Formulas::new([("e", "(2 if #smt_on > 0 else 3) + min(1, 2)")], false);
        assert!(conditional.values("e").is_some());
    }
}
