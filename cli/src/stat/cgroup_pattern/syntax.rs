//! Reading a POSIX basic regular expression as glibc's `regcomp` reads it with perf's flags
//! (`REG_NOSUB`, no `REG_EXTENDED`: `RE_SYNTAX_POSIX_BASIC`), into a tree.
//!
//! glibc's rules kept: `*` first in the expression, first in a group or after the `^` anchor is
//! a character; `^` is an anchor first in the expression or in a group, `$` last in either;
//! `\{` with nothing before it, after an anchor, or after another repeat (`a**`, `a*\{2\}`) is
//! an error (REG_BADRPT), as is a count over [`RE_DUP_MAX`] (REG_ESIZE, "Regular expression
//! too big"); `\{,n\}` is `\{0,n\}`; in a bracket expression a first `]` is a character, `\` is
//! a character, and `-` is a character first or last, else a range (backwards: REG_ERANGE).

use counterhal::Error;

/// The largest repeat count glibc's `regcomp` takes (`RE_DUP_MAX`, 0x7fff): above it,
/// REG_ESIZE.
pub const RE_DUP_MAX: u32 = 0x7fff;

/// How deep groups (`\(...\)`) may nest here (glibc's `regcomp` recurses without a limit).
pub const MAX_GROUP_DEPTH: usize = 100;

/// One part of a pattern.
#[derive(Debug)]
pub enum Node {
    /// A character.
    Char(char),
    /// `.`: any character.
    Any,
    /// A bracket expression, by its index in [`Syntax::classes`].
    Class(usize),
    /// `^` as an anchor: the start of the name.
    Start,
    /// `$` as an anchor: the end of the name.
    End,
    /// Parts one after another (a group, or the whole pattern).
    Sequence(Vec<Node>),
    /// `*` or `\{min,max\}` (`max` `None`: no upper bound).
    Repeat {
        /// What repeats.
        node: Box<Node>,
        /// The fewest times.
        min: u32,
        /// The most times.
        max: Option<u32>,
    },
}

/// A bracket expression: its ranges (a character is a range of one) and whether it is `[^...]`.
#[derive(Debug)]
pub struct Class {
    ranges: Vec<(char, char)>,
    negated: bool,
}

impl Class {
    /// Whether `c` is in it.
    pub fn contains(&self, c: char) -> bool {
        self.ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c)) != self.negated
    }
}

/// A parsed pattern: its tree and its bracket expressions.
#[derive(Debug)]
pub struct Syntax {
    /// The whole pattern.
    pub root: Node,
    /// The bracket expressions [`Node::Class`] names.
    pub classes: Vec<Class>,
}

/// An error for pattern `text`: `what` is wrong with it.
pub fn refused(text: &str, what: &str) -> Error {
    // A pattern of thousands of characters is named by its start and length.
    let shown = match text.char_indices().nth(60) {
        Some((end, _)) => format!("{}... ({} characters)", &text[..end], text.chars().count()),
        None => text.to_string(),
    };
    Error::invalid_input(format!("--for-each-cgroup pattern `{shown}`: {what}")).with_hint(
        "basic regular expressions: characters, ., [a-z], [^a-z], *, \\{m,n\\}, \\(...\\), ^, $",
    )
}

/// Parses `text`.
///
/// # Errors
/// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput) naming what `regcomp`
/// refuses, or what is not taken here, or groups nested deeper than [`MAX_GROUP_DEPTH`].
pub fn parse(text: &str) -> Result<Syntax, Error> {
    let mut reader = Reader {
        chars: text.chars().collect(),
        at: 0,
        text,
        classes: Vec::new(),
    };
    let root = reader.sequence()?;
    Ok(Syntax {
        root,
        classes: reader.classes,
    })
}

struct Reader<'t> {
    chars: Vec<char>,
    at: usize,
    text: &'t str,
    classes: Vec<Class>,
}

impl Reader<'_> {
    fn refused(&self, what: &str) -> Error {
        refused(self.text, what)
    }

    /// Whether the characters from the current position start with `prefix`.
    fn next_is(&self, prefix: &[char]) -> bool {
        self.chars[self.at..].starts_with(prefix)
    }

    /// The whole pattern: groups read with a stack of their own, not by recursion.
    fn sequence(&mut self) -> Result<Node, Error> {
        // The sequences of the groups open around the current one, outermost first.
        let mut open: Vec<Vec<Node>> = Vec::new();
        let mut nodes: Vec<Node> = Vec::new();
        while let Some(&c) = self.chars.get(self.at) {
            self.at += 1;
            // Where `*` is a character and `^` an anchor: first, or right after the `^` anchor
            // (for `*` only).
            let first = nodes.is_empty();
            let after_anchor = matches!(nodes.last(), Some(Node::Start));
            let node = match c {
                '\\' => {
                    let Some(&next) = self.chars.get(self.at) else {
                        return Err(self.refused("ends with a lone `\\`"));
                    };
                    self.at += 1;
                    match next {
                        '(' => {
                            if open.len() >= MAX_GROUP_DEPTH {
                                return Err(self.refused(&format!(
                                    "groups `\\(` nest deeper than {MAX_GROUP_DEPTH} levels, \
                                     the most taken"
                                )));
                            }
                            open.push(std::mem::take(&mut nodes));
                            continue;
                        }
                        ')' => {
                            let Some(outer) = open.pop() else {
                                return Err(self.refused("`\\)` without `\\(`"));
                            };
                            let group = Node::Sequence(std::mem::replace(&mut nodes, outer));
                            nodes.push(group);
                            continue;
                        }
                        '{' => {
                            let (min, max) = self.interval()?;
                            self.repeat(&mut nodes, first || after_anchor, "\\{", min, max)?;
                            continue;
                        }
                        '1'..='9' => {
                            return Err(self.refused("back-references (`\\1`) are not taken"));
                        }
                        // glibc's regcomp, which perf calls, reads these as GNU operators
                        // (alternation, repeats, word classes and anchors), not as the letter.
                        '|' | '+' | '?' | 'w' | 'W' | 's' | 'S' | 'b' | 'B' | '<' | '>' | '`'
                        | '\'' => {
                            return Err(self.refused(&format!(
                                "`\\{next}` is a GNU extension (perf's regcomp reads it as an \
                                 operator), which is not taken"
                            )));
                        }
                        other => Node::Char(other),
                    }
                }
                '*' if !first && !after_anchor => {
                    self.repeat(&mut nodes, false, "*", 0, None)?;
                    continue;
                }
                '^' if first => Node::Start,
                '$' if self.at == self.chars.len() || self.next_is(&['\\', ')']) => Node::End,
                '.' => Node::Any,
                '[' => self.class()?,
                other => Node::Char(other),
            };
            nodes.push(node);
        }
        if !open.is_empty() {
            return Err(self.refused("`\\(` without `\\)`"));
        }
        Ok(Node::Sequence(nodes))
    }

    /// Makes the last of `nodes` repeat (`operator` is `*` or `\{`).
    fn repeat(
        &self,
        nodes: &mut Vec<Node>,
        nothing_before: bool,
        operator: &str,
        min: u32,
        max: Option<u32>,
    ) -> Result<(), Error> {
        let last = nodes.pop();
        match last {
            Some(Node::Repeat { .. }) => Err(self.refused(&format!(
                "`{operator}` repeats a repeat (as in `a**` or `a*\\{{2\\}}`), which regcomp \
                 refuses; write one repeat"
            ))),
            Some(node) if !nothing_before => {
                nodes.push(Node::Repeat {
                    node: Box::new(node),
                    min,
                    max,
                });
                Ok(())
            }
            _ => Err(self.refused(&format!("`{operator}` repeats nothing"))),
        }
    }

    /// `\{m\}`, `\{m,\}`, `\{m,n\}` or `\{,n\}`, after the `\{`.
    fn interval(&mut self) -> Result<(u32, Option<u32>), Error> {
        let rest = &self.chars[self.at..];
        let Some(close) = rest.windows(2).position(|w| w == ['\\', '}']) else {
            return Err(self.refused("`\\{` without `\\}`"));
        };
        let body: String = rest[..close].iter().collect();
        self.at += close + 2;
        let bad = || {
            self.refused(&format!(
                "`\\{{{body}\\}}` is no interval (`\\{{m\\}}`, `\\{{m,\\}}`, `\\{{m,n\\}}` or \
                 `\\{{,n\\}}`, with m <= n)"
            ))
        };
        // Digits only (no sign, no space), as regcomp reads them; none is "no number".
        let number = |s: &str| -> Result<Option<u32>, Error> {
            if s.is_empty() {
                return Ok(None);
            }
            if !s.chars().all(|c| c.is_ascii_digit()) {
                return Err(bad());
            }
            match s.parse::<u32>() {
                Ok(n) if n <= RE_DUP_MAX => Ok(Some(n)),
                _ => Err(self.refused(&format!(
                    "the repeat count {s} is over {RE_DUP_MAX} (RE_DUP_MAX), the most regcomp \
                     takes"
                ))),
            }
        };
        match body.split_once(',') {
            None => number(&body)?.map(|n| (n, Some(n))).ok_or_else(bad),
            Some((min, max)) => {
                let min = number(min)?.unwrap_or(0);
                match number(max)? {
                    None if max.is_empty() => Ok((min, None)),
                    Some(max) if min <= max => Ok((min, Some(max))),
                    _ => Err(bad()),
                }
            }
        }
    }

    /// A bracket expression, after the `[`.
    fn class(&mut self) -> Result<Node, Error> {
        let negated = self.chars.get(self.at) == Some(&'^');
        if negated {
            self.at += 1;
        }
        let unclosed = |reader: &Self| reader.refused("`[` without `]`");
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let Some(&c) = self.chars.get(self.at) else {
                return Err(unclosed(self));
            };
            self.at += 1;
            match c {
                ']' if !first => break,
                '[' if matches!(self.chars.get(self.at), Some(':' | '.' | '=')) => {
                    return Err(self.refused(
                        "character classes, collating symbols and equivalence classes \
                         ([:alpha:], [.a.], [=a=]) are not taken",
                    ));
                }
                '-' if !first && self.chars.get(self.at) != Some(&']') => {
                    // regcomp's REG_ERANGE: `-` only first, last, or between a range's ends.
                    return Err(self.refused(
                        "a `-` in a bracket expression that is neither first, last nor a range",
                    ));
                }
                _ => {
                    let range_end = match (self.chars.get(self.at), self.chars.get(self.at + 1)) {
                        (Some('-'), Some(&end)) if end != ']' => Some(end),
                        (Some('-'), None) => return Err(unclosed(self)),
                        _ => None,
                    };
                    if let Some(end) = range_end {
                        self.at += 2;
                        if end == '[' && matches!(self.chars.get(self.at), Some(':' | '.' | '=')) {
                            return Err(self.refused(
                                "collating symbols and equivalence classes ([.a.], [=a=]) are \
                                 not taken",
                            ));
                        }
                        if end < c {
                            // regcomp's REG_ERANGE, which stops perf.
                            return Err(
                                self.refused(&format!("the range `{c}-{end}` runs backwards"))
                            );
                        }
                        ranges.push((c, end));
                    } else {
                        ranges.push((c, c));
                    }
                }
            }
            first = false;
        }
        self.classes.push(Class { ranges, negated });
        Ok(Node::Class(self.classes.len() - 1))
    }
}
