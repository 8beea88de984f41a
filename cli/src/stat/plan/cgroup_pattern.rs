//! `--for-each-cgroup` with patterns, as perf 6.1 reads them: a list holding any of
//! `{}[]()|*+?^$` is a list of POSIX basic regular expressions, each matched (anywhere in the
//! name, as `regexec` matches) against every cgroup below the mount, whose names are their
//! paths below it (`app/web`; the root's name is empty); the cgroups matched are taken in the
//! order a pre-order walk of the mount meets them, and an empty item stands for the root.
//!
//! The expressions are the C library's (`regcomp`, `regexec`: what perf calls, so what it
//! takes and refuses is taken and refused here, with its reason). Two kinds of pattern that
//! would take the C library down are refused first, by name: groups nested deeper than
//! [`MAX_GROUP_DEPTH`] (glibc's parser recurses per level and overflows the stack at about
//! 20,000), repeats that multiply past [`MAX_STEPS`] once written out (glibc writes each
//! repeat out: `\(a\{32767\}\)\{32767\}` takes gigabytes and minutes), and more than
//! [`MAX_OPTIONAL`] optional copies in one repeat (`[a-z]\{0,32767\}` crashes glibc).

use std::path::Path;

use counterhal::Error;

use crate::sys::BasicRegex;

/// The deepest nesting of groups taken.
pub const MAX_GROUP_DEPTH: usize = 100;
/// The most characters and groups a pattern may stand for once its repeats are written out
/// (no cgroup name is longer than PATH_MAX, 4096).
pub const MAX_STEPS: u64 = 10_000;
/// The most optional copies one `\{m,n\}` may write out (`n - m`): POSIX's least
/// RE_DUP_MAX. glibc nests them, and matching takes memory in their square (`\{0,5000\}`
/// took 850 MB).
pub const MAX_OPTIONAL: u64 = 255;

/// The cgroups below `root` (of `system`'s cgroup mount) whose names match an item of `list` (comma-separated basic
/// regular expressions; an empty item: the root), in the order a walk of `root` meets them.
///
/// # Errors
/// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput): a pattern this reader
/// does not take, or none matched (perf's `no cgroup matched`).
pub fn matching(
    system: &counterhal::system::System,
    root: &Path,
    list: &str,
) -> Result<Vec<String>, Error> {
    let names = counterhal::cgroups::names(system, root);
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

/// A compiled basic regular expression.
#[derive(Debug)]
pub struct Pattern {
    regex: BasicRegex,
}

impl Pattern {
    /// Compiles `text`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput) with the C library's
    /// reason, or for groups nested deeper than [`MAX_GROUP_DEPTH`] or repeats that multiply
    /// past [`MAX_STEPS`].
    pub fn parse(text: &str) -> Result<Pattern, Error> {
        let refused = |why: String| {
            Error::invalid_input(format!(
                "--for-each-cgroup pattern `{}`: {why}",
                shortened(text)
            ))
            .with_hint("a POSIX basic regular expression, as regcomp(3) reads it (e.g. `^app/`)")
        };
        written_out(text).map_err(refused)?;
        let regex = BasicRegex::compile(text).map_err(refused)?;
        Ok(Pattern { regex })
    }

    /// Whether the pattern matches somewhere in `name`.
    pub fn is_found_in(&self, name: &str) -> bool {
        self.regex.is_found_in(name)
    }
}

/// `text` as an error message quotes it: at most 60 characters, then its length.
fn shortened(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((end, _)) => format!("{}... ({} characters)", &text[..end], text.chars().count()),
        None => text.to_string(),
    }
}

/// How many characters and groups `text` stands for with its repeats written out, read as
/// regcomp reads a basic expression's structure (`\(` `\)` groups, `\{m,n\}` repeats of
/// the atom before, bracket expressions as one atom); what is malformed is left for regcomp
/// to name.
///
/// # Errors
/// Groups nested deeper than [`MAX_GROUP_DEPTH`]; a total past [`MAX_STEPS`].
fn written_out(text: &str) -> Result<u64, String> {
    // Per open group: the size so far and the size of its last atom.
    let mut frames: Vec<(u64, u64)> = vec![(0, 0)];
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    while at < chars.len() {
        let atom = |frames: &mut Vec<(u64, u64)>, size: u64| {
            if let Some((sum, last)) = frames.last_mut() {
                *sum = sum.saturating_add(size);
                *last = size;
            }
        };
        match (chars[at], chars.get(at + 1)) {
            ('\\', Some('(')) => {
                if frames.len() > MAX_GROUP_DEPTH {
                    return Err(format!(
                        "its groups nest deeper than {MAX_GROUP_DEPTH} levels"
                    ));
                }
                frames.push((0, 0));
                at += 2;
            }
            ('\\', Some(')')) if frames.len() > 1 => {
                let (inner, _) = frames.pop().unwrap_or((0, 0));
                atom(&mut frames, inner.max(1));
                at += 2;
            }
            ('\\', Some('{')) => {
                let close = (at + 2..chars.len().saturating_sub(1))
                    .find(|&i| chars[i] == '\\' && chars[i + 1] == '}');
                let Some(close) = close else {
                    break;
                };
                let counts: String = chars[at + 2..close].iter().collect();
                let mut bounds = counts.split(',').map(|n| n.parse::<u64>().ok());
                let least = bounds.next().flatten().unwrap_or(0);
                let most = bounds.next().flatten();
                if most.is_some_and(|most| most.saturating_sub(least) > MAX_OPTIONAL) {
                    return Err(format!(
                        "a repeat writes out more than {MAX_OPTIONAL} optional copies (POSIX's \
                         least RE_DUP_MAX)"
                    ));
                }
                let factor = most.unwrap_or(least).max(least).max(1);
                if let Some((sum, last)) = frames.last_mut() {
                    let grown = last.saturating_mul(factor);
                    *sum = sum.saturating_sub(*last).saturating_add(grown);
                    *last = grown;
                }
                at = close + 2;
            }
            ('\\', Some(_)) => {
                atom(&mut frames, 1);
                at += 2;
            }
            ('[', _) => {
                at = bracket_end(&chars, at);
                atom(&mut frames, 1);
            }
            _ => {
                atom(&mut frames, 1);
                at += 1;
            }
        }
        let total = frames
            .iter()
            .fold(0u64, |t, (sum, _)| t.saturating_add(*sum));
        if total > MAX_STEPS {
            return Err(format!(
                "its repeat counts multiply to more than {MAX_STEPS} steps once written out"
            ));
        }
    }
    Ok(frames
        .iter()
        .fold(0u64, |t, (sum, _)| t.saturating_add(*sum)))
}

/// Where the bracket expression opening at `open` ends (just past its `]`): a `^` and a `]`
/// right after the opening are members, as are `[:class:]`, `[.x.]` and `[=x=]`; an
/// unclosed one runs to the end (regcomp names it).
fn bracket_end(chars: &[char], open: usize) -> usize {
    let mut at = open + 1;
    if chars.get(at) == Some(&'^') {
        at += 1;
    }
    if chars.get(at) == Some(&']') {
        at += 1;
    }
    while at < chars.len() {
        match (chars[at], chars.get(at + 1)) {
            (']', _) => return at + 1,
            ('[', Some(&kind @ (':' | '.' | '='))) => {
                let close = (at + 2..chars.len().saturating_sub(1))
                    .find(|&i| chars[i] == kind && chars[i + 1] == ']');
                at = close.map_or(chars.len(), |c| c + 2);
            }
            _ => at += 1,
        }
    }
    chars.len()
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

    /// What regcomp refuses is refused with its reason; what it takes (glibc's GNU operators,
    /// character classes, back-references, as perf takes them) matches as regexec matches.
    #[test]
    fn patterns_are_read_as_regcomp_reads_them() {
        for (bad, reason) in [
            ("\\(a", "Unmatched ( or \\("),
            // glibc names the unmatched `(` for a `\)` alone too.
            ("a\\)", "Unmatched ( or \\("),
            ("[ab", "Unmatched ["),
            ("a\\{2", "Unmatched \\{"),
            ("x\\", "Trailing backslash"),
            ("[z-a]", "Invalid range end"),
        ] {
            let e = Pattern::parse(bad).unwrap_err();
            assert!(e.message().contains(bad), "{bad}: {e}");
            assert!(e.message().contains(reason), "{bad}: {e}");
        }
        assert!(found("a\\|b", "xb") && found("a\\+", "caab") && !found("a\\+", "b"));
        assert!(found("[[:digit:]]", "app2") && !found("[[:digit:]]", "app"));
        assert!(found("\\(ab\\)\\1", "xabab") && !found("\\(ab\\)\\1", "xab"));
        assert!(found("\\<ch", "a/ch") && !found("\\<ch", "ach"));
    }

    /// Runs `work` on a thread of a 2 MiB stack (a spawned thread's default; the C library
    /// recurses while it compiles), failing if it takes over 20 seconds (a
    /// linear match takes milliseconds; the backtracking one took minutes).
    fn bounded<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || send.send(work()))
            .unwrap();
        receive
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("done in 20 s, without a panic")
    }

    #[test]
    fn patterns_that_backtracked_exponentially_match_in_linear_time() {
        bounded(|| {
            let path = "system.slice/docker-0123456789abcdef.scope/app/worker-01/x".to_string();
            let long = "a/".repeat(35);
            for (pattern, name, expected) in [
                ("\\(.*\\)*x", long.as_str(), false),
                ("\\(.*\\)*x", path.as_str(), true),
                (
                    "\\(a*\\)*b",
                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                    false,
                ),
                (
                    "^\\(\\(a*\\)*\\)*$",
                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
                    false,
                ),
                ("\\(.\\{0,30\\}\\)*y", long.as_str(), false),
            ] {
                assert_eq!(found(pattern, name), expected, "{pattern} in {name}");
            }
            let huge = "a/".repeat(50_000);
            assert!(!found("\\(.*\\)*x", &huge));
            assert!(found("\\(.*\\)*a/$", &huge));
        });
    }

    /// Repeat counts past RE_DUP_MAX (32767) are regcomp's to refuse; repeats whose counts
    /// multiply past [`MAX_STEPS`] once written out are refused before regcomp sees them
    /// (glibc writes each out: `\\(a\\{32767\\}\\)\\{32767\\}` took gigabytes).
    #[test]
    fn repeat_counts_are_bounded_before_the_c_library_writes_them_out() {
        bounded(|| {
            for bad in [
                "a\\{32768\\}",
                "a\\{1,40000\\}",
                "a\\{99999999999999999999\\}",
            ] {
                let error = Pattern::parse(bad).unwrap_err();
                assert!(error.message().contains(bad), "{bad}: {error}");
            }
            let most = "a".repeat(4096);
            assert!(found("^a\\{4096\\}$", &most));
            assert!(!found("^a\\{4096\\}$", &most[1..]));
            assert!(found("^[a-z]\\{0,255\\}$", "abc"));
            assert!(!found("^[a-z]\\{0,255\\}$", "ab/c"));
            let error = Pattern::parse("^[a-z]\\{0,32767\\}$").unwrap_err();
            assert!(error.message().contains("optional copies"), "{error}");
            for blown_up in [
                "\\(\\(a\\{100\\}\\)\\{100\\}\\)\\{100\\}",
                "\\(a\\{32767\\}\\)\\{32767\\}",
                "\\(\\(\\(\\(\\(\\(\\(a\\{1,9\\}\\)\\{1,9\\}\\)\\{1,9\\}\\)\\{1,9\\}\\)\\{1,9\\}\\)\\{1,9\\}\\)\\{1,9\\}\\)",
                "[[:alpha:]]\\{6000\\}[]]\\{6000\\}",
                "\\(a\\{0,255\\}\\)\\{0,255\\}",
            ] {
                let error = Pattern::parse(blown_up).unwrap_err();
                assert!(error.message().contains("steps"), "{blown_up}: {error}");
            }
            assert!(found(
                "\\(\\(a\\{10\\}\\)\\{10\\}\\)\\{10\\}",
                &"a".repeat(1000)
            ));
        });
    }

    #[test]
    fn groups_nested_deeper_than_the_limit_are_refused_naming_it() {
        bounded(|| {
            let deep = "\\(".repeat(20_000);
            let error = Pattern::parse(&deep).unwrap_err();
            assert!(
                error.message().contains("nest deeper than 100 levels"),
                "{error}"
            );
            assert!(
                error.message().contains("... (40000 characters)"),
                "{error}"
            );
            assert!(error.message().len() < 400, "{error}");
            let closed = format!("{}a{}", "\\(".repeat(20_000), "\\)".repeat(20_000));
            assert!(Pattern::parse(&closed).is_err());
            let most = format!("{}a*{}", "\\(".repeat(100), "\\)*".repeat(100));
            assert!(found(&most, "xaax"));
        });
    }

    #[test]
    fn cgroups_match_in_walk_order_with_the_root_unnamed() {
        let root = std::env::temp_dir().join(format!("counterhal-pattern-{}", std::process::id()));
        for dir in ["cha", "chb/sub", "other"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        let walked = counterhal::cgroups::names(&counterhal::system::System::host(), &root);
        let position = |name: &str| walked.iter().position(|n| n == name).unwrap();
        assert!(position("chb") < position("chb/sub"), "{walked:?}");
        let matched = matching(&counterhal::system::System::host(), &root, "ch[ab]").unwrap();
        let expected: Vec<&String> = walked
            .iter()
            .filter(|n| ["cha", "chb", "chb/sub"].contains(&n.as_str()))
            .collect();
        assert_eq!(matched.iter().collect::<Vec<_>>(), expected);
        assert_eq!(
            matching(&counterhal::system::System::host(), &root, "^$").unwrap(),
            [""]
        );
        assert_eq!(
            matching(&counterhal::system::System::host(), &root, ",sub$").unwrap(),
            ["", "chb/sub"]
        );
        let none = matching(&counterhal::system::System::host(), &root, "zzz*").unwrap_err();
        assert_eq!(none.message(), "no cgroup matched: zzz*");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
