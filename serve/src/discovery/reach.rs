//! Which directories the walk for `--cgroups` patterns looks in: only those below which a
//! cgroup could match, where every pattern is anchored at the start (`^`). A pattern matched
//! anywhere in the path may match below any directory, so the whole tree is walked for it.

use regex_automata::nfa::thompson::{self, NFA, State, WhichCaptures};
use regex_automata::util::look::Look;
use regex_automata::util::primitives::StateID;

/// The patterns' automaton (a Thompson NFA, as the `regex` crate builds it), where each is
/// anchored at the start; `None` where one is not (or it did not build).
#[derive(Debug, Default)]
pub(super) struct Reach(Option<NFA>);

impl Reach {
    /// For `patterns`, as `regex` reads them, their automaton bounded by `size_limit` bytes.
    pub(super) fn new(patterns: &[&str], size_limit: usize) -> Reach {
        let config = thompson::Config::new()
            .nfa_size_limit(Some(size_limit))
            .which_captures(WhichCaptures::None);
        let nfa = thompson::Compiler::new()
            .configure(config)
            .build_many(patterns)
            .ok()
            .filter(NFA::is_always_start_anchored);
        Reach(nfa)
    }

    /// Whether a cgroup below the directory `text` (its path below the mount as the patterns
    /// see it; empty: the mount) could match: whether a match can begin with `text/`.
    ///
    /// The automaton is run over `text/` from its start: where no thread is left, no path
    /// below matches; where one reached a match, every path below does. `^` holds only at the
    /// start and `$` nowhere (every path below goes on past `text/`); the other assertions
    /// (`\b`, `(?m)$`) are taken to hold, which walks more, never less.
    pub(super) fn leads_below(&self, text: &str) -> bool {
        let Some(nfa) = &self.0 else {
            return true;
        };
        if text.is_empty() {
            return true;
        }
        let mut seen = vec![false; nfa.states().len()];
        let mut now = Vec::new();
        if closure(nfa, nfa.start_anchored(), true, &mut now, &mut seen) {
            return true;
        }
        for &byte in text.as_bytes().iter().chain(b"/") {
            seen.fill(false);
            let mut next = Vec::new();
            for &id in &now {
                let Some(to) = step(nfa.state(id), byte) else {
                    continue;
                };
                if closure(nfa, to, false, &mut next, &mut seen) {
                    return true;
                }
            }
            if next.is_empty() {
                return false;
            }
            now = next;
        }
        true
    }
}

/// Where `state` goes on `byte`, if it takes it.
fn step(state: &State, byte: u8) -> Option<StateID> {
    match state {
        State::ByteRange { trans } => trans.matches_byte(byte).then_some(trans.next),
        State::Sparse(sparse) => sparse.matches_byte(byte),
        State::Dense(dense) => dense.matches_byte(byte),
        _ => None,
    }
}

/// Adds to `out` the states that take a byte reached from `from` without one (`at_start`:
/// nothing read yet); whether a match is reached.
fn closure(
    nfa: &NFA,
    from: StateID,
    at_start: bool,
    out: &mut Vec<StateID>,
    seen: &mut [bool],
) -> bool {
    let mut stack = vec![from];
    while let Some(id) = stack.pop() {
        if std::mem::replace(&mut seen[id.as_usize()], true) {
            continue;
        }
        match nfa.state(id) {
            State::ByteRange { .. } | State::Sparse(_) | State::Dense(_) => out.push(id),
            State::Look { look, next } => {
                let holds = match look {
                    Look::Start => at_start,
                    Look::End => false,
                    _ => true,
                };
                if holds {
                    stack.push(*next);
                }
            }
            State::Union { alternates } => stack.extend(alternates.iter().rev()),
            State::BinaryUnion { alt1, alt2 } => stack.extend([*alt2, *alt1]),
            State::Capture { next, .. } => stack.push(*next),
            State::Fail => {}
            State::Match { .. } => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paths of up to `length` of `components`.
    fn paths(components: &[&str], length: usize) -> Vec<String> {
        let mut paths = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..length {
            let longer: Vec<String> = last
                .iter()
                .flat_map(|p| {
                    components.iter().map(move |c| match p.is_empty() {
                        true => c.to_string(),
                        false => format!("{p}/{c}"),
                    })
                })
                .collect();
            paths.extend(longer.iter().cloned());
            last = longer;
        }
        paths
    }

    /// A directory is looked in wherever a path below it matches, and, for these patterns,
    /// nowhere else; a pattern not anchored, or anchored only after a newline, looks
    /// everywhere.
    ///
    /// Oracle: the `regex` crate's own matching (`Regex::is_match`, as `--cgroups` matches),
    /// over every path of up to three components made of what the patterns speak of, against
    /// every directory of up to two.
    #[test]
    fn a_directory_is_looked_in_exactly_where_a_path_below_it_matches() {
        let all = paths(&["s", ".", "x", "k", "\n", "s.s", "xk", "sx"], 3);
        let patterns = [
            "^s[.]s/[^/]*x$",
            "^[^/]+$",
            "^k(/|$)",
            "^(s|x)/k",
            "^s$",
            "^",
            "^x*k",
            "^s.s/",
            "^k/\\bs",
        ];
        for pattern in patterns {
            let reach = Reach::new(&[pattern], 1 << 20);
            let regex = regex::Regex::new(pattern).unwrap();
            for dir in all.iter().filter(|p| p.matches('/').count() < 2) {
                let below = format!("{dir}/");
                let matched_below = all
                    .iter()
                    .filter(|p| !p.is_empty())
                    .any(|p| regex.is_match(&format!("{below}{p}")));
                assert_eq!(
                    reach.leads_below(dir),
                    matched_below || dir.is_empty(),
                    "{pattern} below {dir:?}"
                );
            }
        }
        let shipped = Reach::new(&["^system.slice/[^/]*[.]service$", "^[^/]+$"], 1 << 20);
        assert!(shipped.leads_below("system.slice"));
        assert!(!shipped.leads_below("user.slice"));
        assert!(!shipped.leads_below("system.slice/a.service"));
        for everywhere in [&["^a", "b"][..], &["(?m)^a"], &["a$"]] {
            let reach = Reach::new(everywhere, 1 << 20);
            assert!(reach.leads_below("z/z/z"), "{everywhere:?}");
        }
    }
}
