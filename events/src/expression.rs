//! Metric expressions as perf's metric tables write them: numbers (`1e9`), event names (with
//! perf's escapes: `branch\-misses`, `INST_RETIRED.ANY`, `cpu@event\=0x3c@`), `+ - * /`,
//! comparisons `< >`, perf's logic `& | ^` (of threshold formulas), parentheses, `A if COND else B`, `min(a, b)`, `max(a, b)`,
//! `d_ratio(a, b)` (a / b, 0 when b is 0), `has_event(e)`, `source_count(e)`, `<= >=`, and
//! names the caller gives values to
//! (`duration_time` in seconds, `#num_cpus_online`, other metrics by name).

use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

mod write;

/// How deep an expression may nest: the top level is level 1, and each parenthesis, function
/// argument and conditional (`a if c else b`: a branch of it, or the `else` of one before it)
/// is one level deeper. The shipped formulas nest 17 levels at most; perf's own parser has no
/// fixed limit below this one. Deeper input is a [`ParseError`] naming the limit, so that
/// parsing, evaluating and dropping an expression never needs more stack than this many levels
/// (a long flat sum, `a + b + ...`, or a run of signs, `- - a`, is one level).
pub const MAX_DEPTH: usize = 100;

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A number.
    Number(f64),
    /// An event, constant or metric, by name (escapes removed).
    Name(String),
    /// `-x`.
    Negate(Box<Expr>),
    /// `a OP b OP c ...`: operators of one precedence, applied left to right (`a - b - c` is
    /// `(a - b) - c`), kept flat so that a sum of a million terms is one level, not a million.
    Chain {
        /// The first operand.
        first: Box<Expr>,
        /// Each operator with the operand after it, in order (at least one).
        rest: Vec<(Op, Expr)>,
    },
    /// `then if condition else otherwise`.
    If {
        /// The value when the condition holds.
        then: Box<Expr>,
        /// Holds when not 0.
        condition: Box<Expr>,
        /// The value otherwise.
        otherwise: Box<Expr>,
    },
    /// `min`, `max` or `d_ratio` of two.
    Call(Function, Box<Expr>, Box<Expr>),
    /// perf's `has_event(EVENT)`: 1 when the event has a value, else 0.
    HasEvent(String),
    /// perf's `source_count(EVENT)`: how many counters the value adds up (1 here: each event
    /// is one counter of its place).
    SourceCount(String),
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `+`.
    Add,
    /// `-`.
    Subtract,
    /// `*`.
    Multiply,
    /// `/` (no value when dividing by 0).
    Divide,
    /// `<` (1 or 0).
    Less,
    /// `>` (1 or 0).
    Greater,
    /// `<=` (1 or 0).
    LessEqual,
    /// `>=` (1 or 0).
    GreaterEqual,
    /// perf's `&`: 1 when neither is 0, else 0; with one operand unknown, 0 when the other is
    /// 0, else unknown.
    And,
    /// perf's `|`: 0 when both are 0, else 1; with one operand unknown, 1 when the other is
    /// not 0, else unknown.
    Or,
    /// perf's `^`: 1 when exactly one is 0, else 0; unknown when either is.
    Xor,
}

/// A function of two arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Function {
    /// The smaller of two.
    Min,
    /// The larger of two.
    Max,
    /// `a / b`, or 0 when `b` is 0.
    DRatio,
}

/// Why an expression does not parse: what was wrong and where (a byte offset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// What was expected or found.
    pub message: String,
    /// Where, in bytes from the start.
    pub at: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.message, self.at)
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Number(f64),
    Name(String),
    Symbol(char),
    /// `<=` or `>=`, by its first character.
    OrEqual(char),
}

/// Splits `text` into tokens, each with its offset.
fn tokens(text: &str) -> Result<Vec<(Token, usize)>, ParseError> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(|n| n.1.is_ascii_digit()))
        {
            let start = i;
            while i < chars.len() {
                let c = chars[i].1;
                let exponent_sign =
                    (c == '-' || c == '+') && i > start && matches!(chars[i - 1].1, 'e' | 'E');
                if c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || exponent_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            let end = chars.get(i).map_or(text.len(), |c| c.0);
            let number = text[at..end].parse::<f64>().map_err(|_| ParseError {
                message: format!("`{}` is not a number", &text[at..end]),
                at,
            })?;
            out.push((Token::Number(number), at));
        } else if c.is_alphabetic() || c == '_' || c == '#' || c == '\\' {
            let mut name = String::new();
            while i < chars.len() {
                let c = chars[i].1;
                if c == '\\' {
                    match chars.get(i + 1) {
                        Some(&(_, escaped)) => name.push(escaped),
                        None => {
                            return Err(ParseError {
                                message: "an escape at the end".into(),
                                at: chars[i].0,
                            });
                        }
                    }
                    i += 2;
                } else if c.is_alphanumeric() || matches!(c, '_' | '.' | '#' | '@' | ':') {
                    name.push(c);
                    i += 1;
                } else if c == '[' {
                    // perfmon's instance index, `UNC_P_CLOCKTICKS[0]`: part of the name.
                    let digits = chars[i + 1..]
                        .iter()
                        .take_while(|(_, d)| d.is_ascii_digit())
                        .count();
                    if digits == 0 || chars.get(i + 1 + digits).map(|c| c.1) != Some(']') {
                        return Err(ParseError {
                            message: "`[` not followed by an index and `]`".into(),
                            at: chars[i].0,
                        });
                    }
                    for &(_, d) in &chars[i..i + digits + 2] {
                        name.push(d);
                    }
                    i += digits + 2;
                } else {
                    break;
                }
            }
            out.push((Token::Name(name), at));
        } else if (c == '<' || c == '>') && chars.get(i + 1).map(|c| c.1) == Some('=') {
            out.push((Token::OrEqual(c), at));
            i += 2;
        } else if "+-*/()<>,&|^".contains(c) {
            out.push((Token::Symbol(c), at));
            i += 1;
        } else {
            return Err(ParseError {
                message: format!("unexpected `{c}`"),
                at,
            });
        }
    }
    Ok(out)
}

thread_local! {
    /// How many times [`parse`] ran on this thread.
    // Const already: clippy's missing_const_for_thread_local misreads thread_local!'s expansion
    // on targets that keep thread locals in emulated TLS (OpenBSD), and the allow says so.
    #[allow(clippy::missing_const_for_thread_local)]
    static PARSES: Cell<u64> = const { Cell::new(0) };
}

/// How many formulas [`parse`] has parsed on the calling thread: a deterministic witness, for
/// tests, that a path which needs no metric parses none (the shipped formulas were parsed when
/// the crate was built; a portable or user formula is parsed when its metric is first
/// evaluated, never at start-up).
#[doc(hidden)]
pub fn parses_on_this_thread() -> u64 {
    PARSES.with(Cell::get)
}

/// Parses a metric expression.
///
/// # Errors
/// A [`ParseError`] naming what was expected and where.
pub fn parse(text: &str) -> Result<Expr, ParseError> {
    PARSES.with(|count| count.set(count.get() + 1));
    let mut parser = Parser {
        tokens: tokens(text)?,
        next: 0,
        end: text.len(),
        depth: 0,
    };
    let expr = parser.conditional()?;
    match parser.tokens.get(parser.next) {
        None => Ok(expr),
        Some((_, at)) => Err(ParseError {
            message: "an operator or the end".into(),
            at: *at,
        }),
    }
}

struct Parser {
    tokens: Vec<(Token, usize)>,
    next: usize,
    end: usize,
    /// The levels open (see [`MAX_DEPTH`]).
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next).map(|(t, _)| t)
    }

    fn at(&self) -> usize {
        self.tokens.get(self.next).map_or(self.end, |(_, at)| *at)
    }

    fn expect(&mut self, symbol: char) -> Result<(), ParseError> {
        if self.peek() == Some(&Token::Symbol(symbol)) {
            self.next += 1;
            Ok(())
        } else {
            Err(ParseError {
                message: format!("expected `{symbol}`"),
                at: self.at(),
            })
        }
    }

    fn keyword(&mut self, word: &str) -> bool {
        if matches!(self.peek(), Some(Token::Name(name)) if name == word) {
            self.next += 1;
            true
        } else {
            false
        }
    }

    /// One level deeper: `a if c else b` (lowest precedence, right-associative).
    fn conditional(&mut self) -> Result<Expr, ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(ParseError {
                message: format!(
                    "nested deeper than {MAX_DEPTH} levels (parentheses, function arguments \
                     and conditionals); write it flatter"
                ),
                at: self
                    .tokens
                    .get(self.next.saturating_sub(1))
                    .map_or(self.end, |t| t.1),
            });
        }
        self.depth += 1;
        let expr = self.conditional_at_this_level();
        self.depth -= 1;
        expr
    }

    fn conditional_at_this_level(&mut self) -> Result<Expr, ParseError> {
        let then = self.logic(0)?;
        if !self.keyword("if") {
            return Ok(then);
        }
        let condition = self.logic(0)?;
        if !self.keyword("else") {
            return Err(ParseError {
                message: "expected `else`".into(),
                at: self.at(),
            });
        }
        let otherwise = self.conditional()?;
        Ok(Expr::If {
            then: Box::new(then),
            condition: Box::new(condition),
            otherwise: Box::new(otherwise),
        })
    }

    /// perf's logic operators, loosest first (tools/perf/util/expr.y: `|`, then `^`, then
    /// `&`, each binding looser than the comparisons): level `level` of them.
    fn logic(&mut self, level: usize) -> Result<Expr, ParseError> {
        const LEVELS: [(char, Op); 3] = [('|', Op::Or), ('^', Op::Xor), ('&', Op::And)];
        let Some(&(symbol, op)) = LEVELS.get(level) else {
            return self.comparison();
        };
        let first = self.logic(level + 1)?;
        let mut rest = Vec::new();
        while self.peek() == Some(&Token::Symbol(symbol)) {
            self.next += 1;
            rest.push((op, self.logic(level + 1)?));
        }
        Ok(chain(first, rest))
    }

    fn comparison(&mut self) -> Result<Expr, ParseError> {
        let first = self.sum()?;
        let mut rest = Vec::new();
        while let Some(op) = match self.peek() {
            Some(Token::Symbol('<')) => Some(Op::Less),
            Some(Token::Symbol('>')) => Some(Op::Greater),
            Some(Token::OrEqual('<')) => Some(Op::LessEqual),
            Some(Token::OrEqual(_)) => Some(Op::GreaterEqual),
            _ => None,
        } {
            self.next += 1;
            rest.push((op, self.sum()?));
        }
        Ok(chain(first, rest))
    }

    fn sum(&mut self) -> Result<Expr, ParseError> {
        let first = self.product()?;
        let mut rest = Vec::new();
        while let Some(op) = match self.peek() {
            Some(Token::Symbol('+')) => Some(Op::Add),
            Some(Token::Symbol('-')) => Some(Op::Subtract),
            _ => None,
        } {
            self.next += 1;
            rest.push((op, self.product()?));
        }
        Ok(chain(first, rest))
    }

    fn product(&mut self) -> Result<Expr, ParseError> {
        let first = self.unary()?;
        let mut rest = Vec::new();
        while let Some(op) = match self.peek() {
            Some(Token::Symbol('*')) => Some(Op::Multiply),
            Some(Token::Symbol('/')) => Some(Op::Divide),
            _ => None,
        } {
            self.next += 1;
            rest.push((op, self.unary()?));
        }
        Ok(chain(first, rest))
    }

    /// A run of minus signs, counted (negating twice is exact), then a primary.
    fn unary(&mut self) -> Result<Expr, ParseError> {
        let mut signs = 0usize;
        while self.peek() == Some(&Token::Symbol('-')) {
            self.next += 1;
            signs += 1;
        }
        let primary = self.primary()?;
        Ok(if signs % 2 == 1 {
            Expr::Negate(Box::new(primary))
        } else {
            primary
        })
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        let at = self.at();
        let token = self.peek().cloned();
        self.next += 1;
        match token {
            Some(Token::Number(n)) => Ok(Expr::Number(n)),
            Some(Token::Symbol('(')) => {
                let inner = self.conditional()?;
                self.expect(')')?;
                Ok(inner)
            }
            Some(Token::Name(name)) => {
                let function = match name.as_str() {
                    "min" => Some(Function::Min),
                    "max" => Some(Function::Max),
                    "d_ratio" => Some(Function::DRatio),
                    _ => None,
                };
                if matches!(name.as_str(), "has_event" | "source_count")
                    && self.peek() == Some(&Token::Symbol('('))
                {
                    self.next += 1;
                    let at = self.at();
                    let Some(Token::Name(event)) = self.peek().cloned() else {
                        return Err(ParseError {
                            message: format!("`{name}` takes an event name"),
                            at,
                        });
                    };
                    self.next += 1;
                    self.expect(')')?;
                    return Ok(if name == "has_event" {
                        Expr::HasEvent(event)
                    } else {
                        Expr::SourceCount(event)
                    });
                }
                match function {
                    Some(function) if self.peek() == Some(&Token::Symbol('(')) => {
                        self.next += 1;
                        let a = self.conditional()?;
                        self.expect(',')?;
                        let b = self.conditional()?;
                        self.expect(')')?;
                        Ok(Expr::Call(function, Box::new(a), Box::new(b)))
                    }
                    _ => Ok(Expr::Name(name)),
                }
            }
            _ => Err(ParseError {
                message: "expected a number, a name or `(`".into(),
                at,
            }),
        }
    }
}

/// `first`, or a chain of it and `rest` when there is a rest.
fn chain(first: Expr, rest: Vec<(Op, Expr)>) -> Expr {
    if rest.is_empty() {
        first
    } else {
        Expr::Chain {
            first: Box::new(first),
            rest,
        }
    }
}

impl Op {
    /// `a OP b`, `None` standing for an unknown value (perf's NaN): unknown when either is,
    /// and for a division by 0, except where perf's `&` and `|` know the answer from one
    /// operand alone (tools/perf/util/expr.y).
    fn apply(self, a: Option<f64>, b: Option<f64>) -> Option<f64> {
        let truth = |holds: bool| Some(f64::from(u8::from(holds)));
        match (self, a, b) {
            (Op::And, Some(known), None) | (Op::And, None, Some(known)) if known == 0.0 => {
                truth(false)
            }
            (Op::Or, Some(known), None) | (Op::Or, None, Some(known)) if known != 0.0 => {
                truth(true)
            }
            (_, Some(a), Some(b)) => Some(match self {
                Op::Add => a + b,
                Op::Subtract => a - b,
                Op::Multiply => a * b,
                Op::Divide if b == 0.0 => return None,
                Op::Divide => a / b,
                Op::Less => f64::from(u8::from(a < b)),
                Op::Greater => f64::from(u8::from(a > b)),
                Op::LessEqual => f64::from(u8::from(a <= b)),
                Op::GreaterEqual => f64::from(u8::from(a >= b)),
                Op::Xor => f64::from(u8::from((a == 0.0) != (b == 0.0))),
                Op::And => f64::from(u8::from(a != 0.0 && b != 0.0)),
                Op::Or => f64::from(u8::from(a != 0.0 || b != 0.0)),
            }),
            _ => None,
        }
    }

    /// Whether `a OP b` may have a value when `a` has none (perf's `&` and `|`).
    fn knows_from_one(self) -> bool {
        matches!(self, Op::And | Op::Or)
    }
}

impl Expr {
    /// Its value, with `value_of` giving each name's (`None`: unknown, or not counted; the
    /// whole expression is then `None`). A division by 0 is `None` (perf prints no metric);
    /// `d_ratio` by 0 is 0.
    pub fn evaluate(&self, value_of: &dyn Fn(&str) -> Option<f64>) -> Option<f64> {
        Some(match self {
            Expr::Number(n) => *n,
            Expr::Name(name) => value_of(name)?,
            Expr::Negate(inner) => -inner.evaluate(value_of)?,
            Expr::Chain { first, rest } => {
                let mut value = first.evaluate(value_of);
                for (op, operand) in rest {
                    if value.is_none() && !op.knows_from_one() {
                        return None;
                    }
                    value = op.apply(value, operand.evaluate(value_of));
                }
                value?
            }
            // Only the branch taken needs its events.
            Expr::If {
                then,
                condition,
                otherwise,
            } => {
                if condition.evaluate(value_of)? != 0.0 {
                    then.evaluate(value_of)?
                } else {
                    otherwise.evaluate(value_of)?
                }
            }
            Expr::HasEvent(name) => f64::from(u8::from(value_of(name).is_some())),
            Expr::SourceCount(_) => 1.0,
            Expr::Call(function, a, b) => {
                let (a, b) = (a.evaluate(value_of)?, b.evaluate(value_of)?);
                match function {
                    Function::Min => a.min(b),
                    Function::Max => a.max(b),
                    Function::DRatio if b == 0.0 => 0.0,
                    Function::DRatio => a / b,
                }
            }
        })
    }

    /// Every name it reads, in order, each once.
    pub fn names(&self) -> Vec<String> {
        let mut names = Vec::new();
        self.collect_names(&mut names, &mut HashSet::new());
        names
    }

    /// Every name it reads, in order, each once, as perf's parser finds the events of a
    /// formula (`if_expr` of tools/perf/util/expr.y, computing ids): a conditional whose
    /// condition `constant` gives a value without any event (`#smt_on`, numbers) reads the
    /// branch taken alone (the `else` branch where the condition is 0), and one whose
    /// condition reads an event or a name `constant` does not know reads all three.
    pub fn names_read(&self, constant: &dyn Fn(&str) -> Option<f64>) -> Vec<String> {
        let mut names = Vec::new();
        self.collect_names_read(&mut names, &mut HashSet::new(), constant);
        names
    }

    fn collect_names_read<'e>(
        &'e self,
        names: &mut Vec<String>,
        seen: &mut HashSet<&'e str>,
        constant: &dyn Fn(&str) -> Option<f64>,
    ) {
        match self {
            Expr::If {
                then,
                condition,
                otherwise,
            } => match condition.evaluate(constant) {
                Some(0.0) => otherwise.collect_names_read(names, seen, constant),
                Some(_) => then.collect_names_read(names, seen, constant),
                None => {
                    then.collect_names_read(names, seen, constant);
                    condition.collect_names_read(names, seen, constant);
                    otherwise.collect_names_read(names, seen, constant);
                }
            },
            Expr::Negate(inner) => inner.collect_names_read(names, seen, constant),
            Expr::Chain { first, rest } => {
                first.collect_names_read(names, seen, constant);
                for (_, operand) in rest {
                    operand.collect_names_read(names, seen, constant);
                }
            }
            Expr::Call(_, a, b) => {
                a.collect_names_read(names, seen, constant);
                b.collect_names_read(names, seen, constant);
            }
            Expr::Number(_) | Expr::Name(_) | Expr::HasEvent(_) | Expr::SourceCount(_) => {
                self.collect_names(names, seen)
            }
        }
    }

    fn collect_names<'e>(&'e self, names: &mut Vec<String>, seen: &mut HashSet<&'e str>) {
        match self {
            Expr::Number(_) => {}
            // has_event and source_count read their event too: it is opened, and has a value
            // or not.
            Expr::Name(name) | Expr::HasEvent(name) | Expr::SourceCount(name) => {
                if seen.insert(name) {
                    names.push(name.clone());
                }
            }
            Expr::Negate(inner) => inner.collect_names(names, seen),
            Expr::Chain { first, rest } => {
                first.collect_names(names, seen);
                for (_, operand) in rest {
                    operand.collect_names(names, seen);
                }
            }
            Expr::Call(_, a, b) => {
                a.collect_names(names, seen);
                b.collect_names(names, seen);
            }
            Expr::If {
                then,
                condition,
                otherwise,
            } => {
                then.collect_names(names, seen);
                condition.collect_names(names, seen);
                otherwise.collect_names(names, seen);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(text: &str, values: &[(&str, f64)]) -> Option<f64> {
        let expr = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        expr.evaluate(&|name| values.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))
    }

    #[test]
    fn parses_are_counted_on_the_thread_that_parses() {
        std::thread::spawn(|| {
            assert_eq!(parses_on_this_thread(), 0);
            parse("a + b").unwrap();
            parse("1 +").unwrap_err();
            assert_eq!(parses_on_this_thread(), 2);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn arithmetic_keeps_precedence_and_associativity() {
        assert_eq!(eval("1 + 2 * 3", &[]), Some(7.0));
        assert_eq!(eval("(1 + 2) * 3", &[]), Some(9.0));
        assert_eq!(eval("8 / 4 / 2", &[]), Some(1.0));
        assert_eq!(eval("10 - 3 - 2", &[]), Some(5.0));
        assert_eq!(eval("-2 * -3", &[]), Some(6.0));
        assert_eq!(eval("1e9 * 2.5e-9", &[]), Some(2.5));
        assert_eq!(eval(".5 + 1", &[]), Some(1.5));
    }

    #[test]
    fn names_with_perfs_escapes_and_constants() {
        let values = [
            ("branch-misses", 25.0),
            ("branches", 1000.0),
            ("INST_RETIRED.ANY", 3.0),
            ("duration_time", 0.5),
            ("#num_cpus_online", 4.0),
        ];
        assert_eq!(eval("branch\\-misses / branches", &values), Some(0.025));
        assert_eq!(eval("INST_RETIRED.ANY / duration_time", &values), Some(6.0));
        assert_eq!(eval("#num_cpus_online * 2", &values), Some(8.0));
        assert_eq!(
            eval("unknown + 1", &values),
            None,
            "a missing value spreads"
        );
        assert_eq!(
            parse("a\\-b + c * a\\-b").unwrap().names(),
            ["a-b", "c"],
            "each name once"
        );
    }

    /// Oracle: perf's `if_expr` (tools/perf/util/expr.y, Linux 6.12) computing a formula's
    /// ids: a constant condition keeps the branch taken alone, an event in it keeps all.
    #[test]
    fn a_constant_condition_reads_the_branch_taken_alone() {
        let formula = parse("a / (b if #smt_on else c) + d").unwrap();
        let smt = |on: f64| move |name: &str| (name == "#smt_on").then_some(on);
        assert_eq!(formula.names_read(&smt(0.0)), ["a", "c", "d"]);
        assert_eq!(formula.names_read(&smt(1.0)), ["a", "b", "d"]);
        assert_eq!(
            formula.names_read(&|_| None),
            ["a", "b", "#smt_on", "c", "d"],
            "unknown: all"
        );
        let by_event = parse("b if e > 2 else c").unwrap();
        assert_eq!(by_event.names_read(&smt(1.0)), ["b", "e", "c"]);
        assert_eq!(parse("b if 1 else c").unwrap().names_read(&|_| None), ["b"]);
    }

    #[test]
    fn conditionals_functions_and_division_by_zero() {
        let values = [("smt_on", 1.0), ("a", 6.0), ("b", 0.0)];
        assert_eq!(eval("a if smt_on else 2 * a", &values), Some(6.0));
        assert_eq!(eval("a if b else 2 * a", &values), Some(12.0));
        assert_eq!(eval("1 if a > 5 else 0", &values), Some(1.0));
        assert_eq!(eval("1 if a >= 6 else 0", &values), Some(1.0));
        assert_eq!(eval("1 if a <= 5 else 0", &values), Some(0.0));
        assert_eq!(eval("X[0] / 2", &[("X[0]", 4.0)]), Some(2.0));
        assert_eq!(
            eval("1 if a < 5 else 2 if a > 5 else 3", &values),
            Some(2.0)
        );
        // The branch not taken may read what was not counted.
        assert_eq!(eval("a if smt_on else missing", &values), Some(6.0));
        assert_eq!(eval("min(a, 2) + max(a, 2)", &values), Some(8.0));
        assert_eq!(eval("d_ratio(a, b)", &values), Some(0.0));
        assert_eq!(eval("a / b", &values), None);
        assert_eq!(eval("d_ratio(a, 3)", &values), Some(2.0));
        // perf's has_event and source_count.
        assert_eq!(eval("has_event(a) + has_event(nope)", &values), Some(1.0));
        assert_eq!(eval("a / source_count(a)", &values), Some(6.0));
        assert_eq!(
            eval("(a if has_event(nope) else 2) * 3", &values),
            Some(6.0)
        );
    }

    #[test]
    fn bad_expressions_say_where() {
        for (text, message, at) in [
            ("1 +", "expected a number", 3),
            ("(1 + 2", "expected `)`", 6),
            ("1 2", "an operator or the end", 2),
            ("a if b", "expected `else`", 6),
            ("min(1)", "expected `,`", 5),
            ("1 $ 2", "unexpected `$`", 2),
            ("a\\", "an escape at the end", 1),
            ("A[x]", "`[` not followed", 1),
            ("has_event(1)", "takes an event name", 10),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.message.contains(message), "{text}: {error}");
            assert_eq!(error.at, at, "{text}: {error}");
        }
    }

    /// perf 7.2's `&`, `|` and `^` (tools/perf/util/expr.y of linux-source-7.2): looser than
    /// the comparisons, `&` tightest, `|` loosest; an unknown operand (perf's NaN: a division
    /// by 0) leaves `&` 0 where the other is 0 and `|` 1 where the other is not 0, and every
    /// other result unknown.
    #[test]
    fn logic_operators_bind_and_know_what_perf_7_2_does() {
        let values = [("a", 0.3), ("b", 0.05), ("zero", 0.0)];
        assert_eq!(eval("a > 0.2 & b > 0.1", &values), Some(0.0));
        assert_eq!(eval("a > 0.2 | b > 0.1", &values), Some(1.0));
        assert_eq!(eval("a > 0.2 ^ b > 0.01", &values), Some(0.0));
        assert_eq!(eval("a > 0.2 ^ b > 0.1", &values), Some(1.0));
        // `&` before `|`: 1 | (0 & 0).
        assert_eq!(eval("1 | 0 & 0", &values), Some(1.0));
        assert_eq!(eval("(1 | 0) & 0", &values), Some(0.0));
        // `^` between them: (1 ^ 1) | 0, and 0 ^ (1 & 1).
        assert_eq!(eval("1 ^ 1 | 0", &values), Some(0.0));
        assert_eq!(eval("0 ^ 1 & 1", &values), Some(1.0));
        let unknown = "(a / zero)";
        assert_eq!(eval(&format!("{unknown} & 0"), &values), Some(0.0));
        assert_eq!(eval(&format!("0 & {unknown}"), &values), Some(0.0));
        assert_eq!(eval(&format!("{unknown} & 1"), &values), None);
        assert_eq!(eval(&format!("{unknown} | 1"), &values), Some(1.0));
        assert_eq!(eval(&format!("0 | {unknown}"), &values), None);
        assert_eq!(eval(&format!("{unknown} ^ 0"), &values), None);
        assert_eq!(eval(&format!("{unknown} > 1"), &values), None);
        assert_eq!(eval("a > 0.2 & missing > 1", &values), None);
        for text in ["a > 0.2 & b > 0.1 | a ^ b", "(a | b) & a"] {
            let parsed = parse(text).unwrap();
            assert_eq!(parse(&parsed.to_string()).unwrap(), parsed, "{text}");
        }
    }
}
