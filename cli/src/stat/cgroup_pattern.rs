//! `--for-each-cgroup` with patterns, as perf 6.1 reads them: a list holding any of
//! `{}[]()|*+?^$` is a list of POSIX basic regular expressions, each matched (anywhere in the
//! name, as `regexec` matches) against every cgroup below the mount, whose names are their
//! paths below it (`app/web`; the root's name is empty); the cgroups matched are taken in the
//! order a pre-order walk of the mount meets them, and an empty item stands for the root.
//!
//! The basic regular expressions taken: characters, `.`, bracket expressions (`[a-z]`,
//! `[^0-9]`), `*`, `\{m,n\}`, `\(...\)`, `^` and `$`, and `\` before a character for that
//! character, read by glibc's rules ([`syntax`]: what regcomp refuses is refused, repeat counts
//! up to its RE_DUP_MAX). Back-references (`\1`), character classes (`[:alpha:]`, `[.a.]`,
//! `[=a=]`) and glibc's GNU operators (`\|`, `\+`, `\w`, `\<`: regcomp, which perf calls,
//! reads them so) are refused by name, as are groups nested over [`syntax::MAX_GROUP_DEPTH`]
//! and patterns whose repeats write out to over [`machine::MAX_STEPS`] steps. A pattern
//! matches in time linear in the name ([`machine`]: no backtracking).

mod machine;
mod syntax;

use std::path::Path;

use counterhal::Error;

use machine::Program;

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

/// A compiled basic regular expression.
#[derive(Debug)]
pub struct Pattern {
    program: Program,
}

impl Pattern {
    /// Compiles `text`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput) naming what is not
    /// taken or does not close, a repeat count over [`syntax::RE_DUP_MAX`], groups nested
    /// deeper than [`syntax::MAX_GROUP_DEPTH`], or repeats that multiply past
    /// [`machine::MAX_STEPS`].
    pub fn parse(text: &str) -> Result<Pattern, Error> {
        let program = Program::compile(text, syntax::parse(text)?)?;
        Ok(Pattern { program })
    }

    /// Whether the pattern matches somewhere in `name`, in time linear in the name.
    pub fn is_found_in(&self, name: &str) -> bool {
        let text: Vec<char> = name.chars().collect();
        self.program.is_found_in(&text)
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

    /// Runs `work` on a thread of a 256 KiB stack, failing if it takes over 20 seconds (a
    /// linear match takes milliseconds; the backtracking one took minutes).
    fn bounded<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .stack_size(256 * 1024)
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

    #[test]
    fn repeat_counts_over_re_dup_max_are_refused_as_regcomp_does() {
        bounded(|| {
            for bad in [
                "\\(\\)\\{50000\\}",
                "a\\{32768\\}",
                "a\\{1,40000\\}",
                "a\\{99999999999999999999\\}",
            ] {
                let error = Pattern::parse(bad).unwrap_err();
                assert!(
                    error.message().contains("over 32767 (RE_DUP_MAX)"),
                    "{bad}: {error}"
                );
            }
            let most = "a".repeat(32_767);
            assert!(found("^a\\{32767\\}$", &most));
            assert!(!found("^a\\{32767\\}$", &most[1..]));
            assert!(found("^\\(\\)\\{32767\\}$", ""));
            assert!(found("^[a-z]\\{0,32767\\}$", "abc"));
            assert!(!found("^[a-z]\\{0,32767\\}$", "ab/c"));
            // Repeats of repeats multiply: written out, they are refused past the limit.
            let error = Pattern::parse("\\(\\(a\\{100\\}\\)\\{100\\}\\)\\{100\\}").unwrap_err();
            assert!(error.message().contains("steps"), "{error}");
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

#[cfg(test)]
mod glibc_oracle;
