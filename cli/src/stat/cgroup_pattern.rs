//! `--for-each-cgroup` with patterns, as perf 6.1 reads them: a list holding any of
//! `{}[]()|*+?^$` is a list of POSIX basic regular expressions, each matched (anywhere in the
//! name, as `regexec` matches) against every cgroup below the mount, whose names are their
//! paths below it (`app/web`; the root's name is empty); the cgroups matched are taken in the
//! order a pre-order walk of the mount meets them, and an empty item stands for the root.
//!
//! The basic regular expressions taken: characters, `.`, bracket expressions (`[a-z]`,
//! `[^0-9]`), `*`, `\{m,n\}`, `\(...\)`, `^` and `$`, and `\` before a character for that
//! character. Back-references (`\1`), character classes (`[:alpha:]`), glibc's GNU operators
//! (`\|`, `\+`, `\w`, `\<`: regcomp, which perf calls, reads them so) and backwards ranges
//! (`[z-a]`, regcomp's REG_ERANGE) are refused by name.

use std::path::Path;

use counterhal::Error;

/// Whether perf reads `list` as patterns (it holds one of `{}[]()|*+?^$`).
pub fn has_pattern(list: &str) -> bool {
    list.contains(['{', '}', '[', ']', '(', ')', '|', '*', '+', '?', '^', '$'])
}

/// The cgroups below `root` whose names match an item of `list` (comma-separated basic
/// regular expressions; an empty item: the root), in the order a walk of `root` meets them.
///
/// # Errors
/// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput): a pattern this reader
/// does not take, or none matched (perf's `no cgroup matched`).
pub fn matching(root: &Path, list: &str) -> Result<Vec<String>, Error> {
    let mut names = vec![String::new()];
    walk(root, "", &mut names);
    let mut used = vec![false; names.len()];
    for item in list.split(',') {
        if item.is_empty() {
            used[0] = true;
            continue;
        }
        let pattern = Pattern::parse(item)?;
        for (name, used) in names.iter().zip(&mut used) {
            *used |= pattern.is_found_in(name);
        }
    }
    let matched: Vec<String> = names
        .into_iter()
        .zip(used)
        .filter_map(|(name, used)| used.then_some(name))
        .collect();
    if matched.is_empty() {
        return Err(
            Error::invalid_input(format!("no cgroup matched: {list}")).with_hint(format!(
                "list the cgroups with `find {} -type d`",
                root.display()
            )),
        );
    }
    Ok(matched)
}

/// Every directory below `dir` (named `prefix`), depth first, each before what it holds.
fn walk(dir: &Path, prefix: &str, names: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let name = if prefix.is_empty() {
            file_name
        } else {
            format!("{prefix}/{file_name}")
        };
        names.push(name.clone());
        walk(&entry.path(), &name, names);
    }
}

/// One element of a pattern, and how many times it repeats.
#[derive(Debug)]
struct Piece {
    atom: Atom,
    min: usize,
    max: Option<usize>,
}

#[derive(Debug)]
enum Atom {
    Char(char),
    Any,
    /// A bracket expression: its characters and ranges, and whether it is negated.
    Class(Vec<(char, char)>, bool),
    Group(Vec<Piece>),
    Start,
    End,
}

/// A compiled basic regular expression.
#[derive(Debug)]
pub struct Pattern {
    pieces: Vec<Piece>,
}

impl Pattern {
    /// Compiles `text`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput) naming what is not
    /// taken or does not close.
    pub fn parse(text: &str) -> Result<Pattern, Error> {
        let chars: Vec<char> = text.chars().collect();
        let mut at = 0;
        let pieces = parse_sequence(&chars, &mut at, text, false)?;
        Ok(Pattern { pieces })
    }

    /// Whether the pattern matches somewhere in `name`.
    pub fn is_found_in(&self, name: &str) -> bool {
        let text: Vec<char> = name.chars().collect();
        (0..=text.len()).any(|start| matches(&self.pieces, &text, start, &mut |_| true))
    }
}

fn refused(text: &str, what: &str) -> Error {
    Error::invalid_input(format!("--for-each-cgroup pattern `{text}`: {what}")).with_hint(
        "basic regular expressions: characters, ., [a-z], [^a-z], *, \\{m,n\\}, \\(...\\), ^, $",
    )
}

/// A sequence up to its end (or, in a group, its `\)`).
fn parse_sequence(
    chars: &[char],
    at: &mut usize,
    text: &str,
    in_group: bool,
) -> Result<Vec<Piece>, Error> {
    let mut pieces: Vec<Piece> = Vec::new();
    while *at < chars.len() {
        let c = chars[*at];
        *at += 1;
        let first = pieces.is_empty();
        let atom = match c {
            '\\' => {
                let Some(&next) = chars.get(*at) else {
                    return Err(refused(text, "ends with a lone `\\`"));
                };
                *at += 1;
                match next {
                    '(' => Atom::Group(parse_sequence(chars, at, text, true)?),
                    ')' if in_group => return Ok(pieces),
                    ')' => return Err(refused(text, "`\\)` without `\\(`")),
                    '{' => {
                        let Some(last) = pieces.last_mut() else {
                            return Err(refused(text, "`\\{` repeats nothing"));
                        };
                        let (min, max) = parse_interval(chars, at, text)?;
                        last.min = min;
                        last.max = max;
                        continue;
                    }
                    '1'..='9' => return Err(refused(text, "back-references are not taken")),
                    // glibc's regcomp, which perf calls, reads these as GNU operators
                    // (alternation, repeats, word classes and anchors), not as the letter.
                    '|' | '+' | '?' | 'w' | 'W' | 's' | 'S' | 'b' | 'B' | '<' | '>' | '`'
                    | '\'' => {
                        return Err(refused(
                            text,
                            &format!(
                                "`\\{next}` is a GNU extension (perf's regcomp reads it as an operator), which is not taken"
                            ),
                        ));
                    }
                    other => Atom::Char(other),
                }
            }
            '*' if !first => {
                let last = pieces.last_mut().expect("not first");
                if !matches!(last.atom, Atom::Start) {
                    last.min = 0;
                    last.max = None;
                    continue;
                }
                Atom::Char('*')
            }
            '^' if first => Atom::Start,
            '$' if *at == chars.len() || (in_group && chars[*at..].starts_with(&['\\', ')'])) => {
                Atom::End
            }
            '.' => Atom::Any,
            '[' => parse_class(chars, at, text)?,
            other => Atom::Char(other),
        };
        pieces.push(Piece {
            atom,
            min: 1,
            max: Some(1),
        });
    }
    if in_group {
        return Err(refused(text, "`\\(` without `\\)`"));
    }
    Ok(pieces)
}

/// `\{m\}`, `\{m,\}` or `\{m,n\}`, after the `\{`.
fn parse_interval(
    chars: &[char],
    at: &mut usize,
    text: &str,
) -> Result<(usize, Option<usize>), Error> {
    let rest: String = chars[*at..].iter().collect();
    let Some(close) = rest.find("\\}") else {
        return Err(refused(text, "`\\{` without `\\}`"));
    };
    let body = &rest[..close];
    *at += body.chars().count() + 2;
    let number = |s: &str| s.trim().parse::<usize>().ok();
    let bad = || refused(text, &format!("`\\{{{body}\\}}` is no interval"));
    match body.split_once(',') {
        None => number(body).map(|n| (n, Some(n))).ok_or_else(bad),
        Some((min, "")) => number(min).map(|m| (m, None)).ok_or_else(bad),
        Some((min, max)) => match (number(min), number(max)) {
            (Some(m), Some(n)) if m <= n => Ok((m, Some(n))),
            _ => Err(bad()),
        },
    }
}

/// A bracket expression, after the `[`.
fn parse_class(chars: &[char], at: &mut usize, text: &str) -> Result<Atom, Error> {
    let negated = chars.get(*at) == Some(&'^');
    if negated {
        *at += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let Some(&c) = chars.get(*at) else {
            return Err(refused(text, "`[` without `]`"));
        };
        *at += 1;
        match c {
            ']' if !first => return Ok(Atom::Class(ranges, negated)),
            '[' if chars.get(*at) == Some(&':') => {
                return Err(refused(text, "character classes ([:alpha:]) are not taken"));
            }
            _ => {
                if chars.get(*at) == Some(&'-') && chars.get(*at + 1).is_some_and(|&e| e != ']') {
                    let end = chars[*at + 1];
                    *at += 2;
                    if end < c {
                        // regcomp's REG_ERANGE, which stops perf.
                        return Err(refused(
                            text,
                            &format!("the range `{c}-{end}` runs backwards"),
                        ));
                    }
                    ranges.push((c, end));
                } else {
                    ranges.push((c, c));
                }
            }
        }
        first = false;
    }
}

/// Whether `pieces` match `text` from `at`, with `then` accepting where the match ends.
fn matches(
    pieces: &[Piece],
    text: &[char],
    at: usize,
    then: &mut dyn FnMut(usize) -> bool,
) -> bool {
    let Some((piece, rest)) = pieces.split_first() else {
        return then(at);
    };
    repeat(piece, 0, rest, text, at, then)
}

/// `piece` matched `count` times so far, ending at `at`: try once more (greedy), else go on.
fn repeat(
    piece: &Piece,
    count: usize,
    rest: &[Piece],
    text: &[char],
    at: usize,
    then: &mut dyn FnMut(usize) -> bool,
) -> bool {
    let more = piece.max.is_none_or(|max| count < max);
    if more {
        let mut next = |end: usize| {
            // An empty match repeated would never end.
            (end != at || count < piece.min) && repeat(piece, count + 1, rest, text, end, then)
        };
        if once(&piece.atom, text, at, &mut next) {
            return true;
        }
    }
    count >= piece.min && matches(rest, text, at, then)
}

/// One match of `atom` at `at`, with `then` taking where it ends.
fn once(atom: &Atom, text: &[char], at: usize, then: &mut dyn FnMut(usize) -> bool) -> bool {
    match atom {
        Atom::Start => at == 0 && then(at),
        Atom::End => at == text.len() && then(at),
        Atom::Group(pieces) => matches(pieces, text, at, then),
        single => {
            let Some(&c) = text.get(at) else {
                return false;
            };
            let hit = match single {
                Atom::Char(want) => c == *want,
                Atom::Any => true,
                Atom::Class(ranges, negated) => {
                    ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c)) != *negated
                }
                _ => false,
            };
            hit && then(at + 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(pattern: &str, name: &str) -> bool {
        Pattern::parse(pattern).unwrap().is_found_in(name)
    }

    #[test]
    fn basic_regular_expressions_match_anywhere_as_regexec_does() {
        assert!(found("web", "app/web-1"));
        assert!(found("^app", "app/web"));
        assert!(!found("^web", "app/web"));
        assert!(found("web$", "app/web"));
        assert!(!found("web$", "app/web/x"));
        assert!(found("^$", ""));
        assert!(!found("^$", "a"));
        assert!(found("ch.*", "chtest"));
        assert!(found("w[a-f]b", "web"));
        assert!(!found("w[^a-f]b", "web"));
        assert!(found("docker-[0-9a-f]*\\.scope", "docker-12ab.scope"));
        assert!(!found("docker-[0-9a-f]*\\.scope", "docker-12abXscope"));
        assert!(found("s\\(u\\)b", "chb/sub"));
        assert!(found("^\\(ab\\)*$", "ababab"));
        assert!(!found("^\\(ab\\)*$", "abab_"));
        assert!(found("^a\\{2,3\\}$", "aaa"));
        assert!(!found("^a\\{2,3\\}$", "aaaa"));
        assert!(found("^a\\{2\\}$", "aa"));
        // In a basic expression + ? | ( ) { } are characters.
        assert!(found("a+b", "a+b"));
        assert!(!found("a+b", "aab"));
        assert!(found("(x|y)", "(x|y)"));
        // A leading * is a character.
        assert!(found("*x", "a*x"));
    }

    #[test]
    fn patterns_that_are_not_taken_say_so() {
        for bad in [
            "\\(a",
            "a\\)",
            "[ab",
            "a\\{2",
            "\\(a\\)\\1",
            "[[:alpha:]]",
            "x\\",
            "a\\|b",
            "a\\+",
            "\\w*",
            "\\<ch",
            "[z-a]",
        ] {
            let e = Pattern::parse(bad).unwrap_err();
            assert!(e.message().contains(bad), "{bad}: {e}");
        }
        assert!(has_pattern("ch.*") && has_pattern("a,^b") && !has_pattern("a.b,c/d"));
    }

    #[test]
    fn cgroups_match_in_walk_order_with_the_root_unnamed() {
        let root = std::env::temp_dir().join(format!("counterhal-pattern-{}", std::process::id()));
        for dir in ["cha", "chb/sub", "other"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        let mut walked = vec![String::new()];
        walk(&root, "", &mut walked);
        let position = |name: &str| walked.iter().position(|n| n == name).unwrap();
        assert!(position("chb") < position("chb/sub"), "{walked:?}");
        let matched = matching(&root, "ch[ab]").unwrap();
        let expected: Vec<&String> = walked
            .iter()
            .filter(|n| ["cha", "chb", "chb/sub"].contains(&n.as_str()))
            .collect();
        assert_eq!(matched.iter().collect::<Vec<_>>(), expected);
        assert_eq!(matching(&root, "^$").unwrap(), [""]);
        assert_eq!(matching(&root, ",sub$").unwrap(), ["", "chb/sub"]);
        let none = matching(&root, "zzz*").unwrap_err();
        assert_eq!(none.message(), "no cgroup matched: zzz*");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
