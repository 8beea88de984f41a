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

impl Reach {
    /// Whether a child of the directory `text` (one more component, no `/`) could match: the
    /// directories whose new children the BPF mode counts from their first switch. Where the
    /// patterns are not all anchored, none is taken to (a pattern matched anywhere would make
    /// every directory adopt its children, and fill the map with cgroups let go at once).
    pub(super) fn child_may_match(&self, text: &str) -> bool {
        let Some(nfa) = &self.0 else {
            return false;
        };
        let mut seen = vec![false; nfa.states().len()];
        let mut now = Vec::new();
        if closure(nfa, nfa.start_anchored(), true, &mut now, &mut seen) {
            return true;
        }
        let prefix: &[u8] = if text.is_empty() {
            b""
        } else {
            text.as_bytes()
        };
        let slash: &[u8] = if text.is_empty() { b"" } else { b"/" };
        for &byte in prefix.iter().chain(slash) {
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
        // Then any name: bytes but `/`, at least one, to a match where the path ends. Each
        // state taking a byte is looked at once.
        let mut processed = vec![false; nfa.states().len()];
        let mut frontier = now;
        while let Some(id) = frontier.pop() {
            if std::mem::replace(&mut processed[id.as_usize()], true) {
                continue;
            }
            for to in name_steps(nfa.state(id)) {
                if matches_at_end(nfa, to) {
                    return true;
                }
                seen.fill(false);
                closure(nfa, to, false, &mut frontier, &mut seen);
            }
        }
        false
    }
}

/// [`Reach::levels_below`] where any path below could match, however deep.
pub(super) const EVERY_LEVEL: u8 = u8::MAX;

impl Reach {
    /// How many levels below the directory `text` a cgroup could match ([`EVERY_LEVEL`]:
    /// any number; 0: none): the BPF mode's adopted children of such a directory adopt their
    /// own, one level fewer each. The automaton is run over `text/`, then over any name and
    /// a `/`, level by level: names stand for every name (the program cannot read them), so
    /// this is an upper bound, and what it adopts that matches no pattern is let go. A match
    /// reached within a path (`$` not needed) means every path going on past it matches.
    pub(super) fn levels_below(&self, text: &str) -> u8 {
        let Some(nfa) = &self.0 else {
            return 0;
        };
        let states = nfa.states().len();
        let mut seen = vec![false; states];
        let mut now = Vec::new();
        if closure(nfa, nfa.start_anchored(), true, &mut now, &mut seen) {
            return EVERY_LEVEL;
        }
        let slash: &[u8] = if text.is_empty() { b"" } else { b"/" };
        for &byte in text.as_bytes().iter().chain(slash) {
            seen.fill(false);
            let mut next = Vec::new();
            for &id in &now {
                let Some(to) = step(nfa.state(id), byte) else {
                    continue;
                };
                if closure(nfa, to, false, &mut next, &mut seen) {
                    return EVERY_LEVEL;
                }
            }
            if next.is_empty() {
                return 0;
            }
            now = next;
        }
        // Each level: the states any name leads to (whether one ends at a match), then `/`.
        let mut levels: Vec<(Vec<StateID>, bool)> = Vec::new();
        let mut deepest = 0;
        for level in 1..=u8::try_from(counterhal::cgroups::LEVELS).unwrap_or(u8::MAX - 1) {
            let mut named = Vec::new();
            let mut matched = false;
            let mut processed = vec![false; states];
            let mut frontier = now.clone();
            while let Some(id) = frontier.pop() {
                if std::mem::replace(&mut processed[id.as_usize()], true) {
                    continue;
                }
                for to in name_steps(nfa.state(id)) {
                    matched |= matches_at_end(nfa, to);
                    seen.fill(false);
                    let mut out = Vec::new();
                    if closure(nfa, to, false, &mut out, &mut seen) {
                        return EVERY_LEVEL;
                    }
                    named.extend(&out);
                    frontier.extend(out);
                }
            }
            if matched {
                deepest = level;
            }
            named.sort_unstable();
            named.dedup();
            seen.fill(false);
            let mut next = Vec::new();
            for &id in &named {
                if let Some(to) = step(nfa.state(id), b'/')
                    && closure(nfa, to, false, &mut next, &mut seen)
                {
                    return EVERY_LEVEL;
                }
            }
            next.sort_unstable();
            next.dedup();
            // The same states as at a level above: the levels from there repeat for ever.
            if let Some(again) = levels.iter().position(|(states, _)| *states == now) {
                let repeats_a_match = levels[again..].iter().any(|(_, m)| *m) || matched;
                return if repeats_a_match {
                    EVERY_LEVEL
                } else {
                    deepest
                };
            }
            levels.push((std::mem::replace(&mut now, next), matched));
            if now.is_empty() {
                break;
            }
        }
        deepest
    }
}

/// Where `state` goes on some byte of a name (any but `/`).
fn name_steps(state: &State) -> Vec<StateID> {
    let takes = |start: u8, end: u8| start <= end && !(start == b'/' && end == b'/');
    let mut to = match state {
        State::ByteRange { trans } => {
            if takes(trans.start, trans.end) {
                vec![trans.next]
            } else {
                Vec::new()
            }
        }
        State::Sparse(sparse) => sparse
            .transitions
            .iter()
            .filter(|t| takes(t.start, t.end))
            .map(|t| t.next)
            .collect(),
        State::Dense(dense) => (0..=u8::MAX)
            .filter(|&b| b != b'/')
            .map(|b| dense.transitions[usize::from(b)])
            .filter(|next| *next != StateID::ZERO)
            .collect(),
        _ => Vec::new(),
    };
    to.sort_unstable();
    to.dedup();
    to
}

/// Whether a match is reached from `from` without a byte, where the path ends there (`$`
/// holds, `^` does not).
fn matches_at_end(nfa: &NFA, from: StateID) -> bool {
    let mut seen = vec![false; nfa.states().len()];
    let mut stack = vec![from];
    while let Some(id) = stack.pop() {
        if std::mem::replace(&mut seen[id.as_usize()], true) {
            continue;
        }
        match nfa.state(id) {
            State::Look { look, next } if !matches!(look, Look::Start) => stack.push(*next),
            State::Union { alternates } => stack.extend(alternates.iter().rev()),
            State::BinaryUnion { alt1, alt2 } => stack.extend([*alt2, *alt1]),
            State::Capture { next, .. } => stack.push(*next),
            State::Match { .. } => return true,
            _ => {}
        }
    }
    false
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

    /// A directory's adopted children adopt their own as many levels down as a path below
    /// could match: never fewer than the deepest matching path of up to three components
    /// below it, and for these patterns the levels they name.
    ///
    /// Oracle: the `regex` crate's own matching (`Regex::is_match`, as `--cgroups` matches).
    #[test]
    fn descendants_are_adopted_as_deep_as_a_path_below_could_match() {
        let all = paths(&["s", ".", "x", "k", "s.s", "xk", "sx"], 3);
        let patterns = [
            "^s[.]s/[^/]*x$",
            "^[^/]+$",
            "^k(/|$)",
            "^(s|x)/k",
            "^s$",
            "^",
            "^x*k",
            "^s.s/",
            "^k/[^/]+/[^/]+$",
            r"^system\.slice/[^/]*slurmstepd\.scope/job_",
        ];
        for pattern in patterns {
            let reach = Reach::new(&[pattern], 1 << 20);
            let regex = regex::Regex::new(pattern).unwrap();
            for dir in all.iter().filter(|p| p.matches('/').count() < 2) {
                let deepest = all
                    .iter()
                    .filter(|p| !p.is_empty())
                    .filter(|p| match dir.is_empty() {
                        true => regex.is_match(p),
                        false => regex.is_match(&format!("{dir}/{p}")),
                    })
                    .map(|p| p.matches('/').count() + 1)
                    .max()
                    .unwrap_or(0);
                let levels = reach.levels_below(dir);
                assert!(
                    usize::from(levels) >= deepest,
                    "{pattern} below {dir:?}: {levels} levels, a path {deepest} down matches"
                );
            }
        }
        let levels = |pattern: &str, dir: &str| Reach::new(&[pattern], 1 << 20).levels_below(dir);
        let slurm = r"^system\.slice/[^/]*slurmstepd\.scope/job_";
        assert_eq!(
            levels(slurm, "system.slice/vm_slurmstepd.scope"),
            EVERY_LEVEL
        );
        assert_eq!(
            levels(slurm, "system.slice/vm_slurmstepd.scope/job_1"),
            EVERY_LEVEL
        );
        assert_eq!(levels(slurm, "user.slice"), 0);
        assert_eq!(levels("^k/[^/]+/[^/]+$", "k"), 2);
        assert_eq!(levels("^k/[^/]+/[^/]+$", "k/a"), 1);
        assert_eq!(levels("^top/followed$", "top"), 1);
        assert_eq!(levels("^s/([^/]+/)*x$", "s"), EVERY_LEVEL);
        assert_eq!(levels("job_", ""), 0);
    }

    /// A directory adopts its new children where a child could match, checked against every
    /// child name of a small alphabet (oracle: the `regex` crate matching the paths); a
    /// pattern matched anywhere adopts nowhere.
    #[test]
    fn a_directory_adopts_where_a_child_could_match() {
        let cases: [(&str, &[(&str, bool)]); 4] = [
            (
                "^kubepods.slice/.*-pod[^/]*[.]slice$",
                &[
                    ("", false),
                    ("kubepods.slice", true),
                    ("kubepods.slice/kubepods-burstable.slice", true),
                    ("system.slice", false),
                ],
            ),
            (
                r"^system\.slice/[^/]*slurmstepd\.scope/job_",
                &[
                    ("system.slice", false),
                    ("system.slice/vm_slurmstepd.scope", true),
                    ("system.slice/vm_slurmstepd.scope/job_1", true),
                    ("user.slice", false),
                ],
            ),
            (
                "^top/followed$",
                &[
                    ("", false),
                    ("top", true),
                    ("top/followed", false),
                    ("top/filler", false),
                ],
            ),
            ("pod", &[("", false), ("kubepods.slice", false)]),
        ];
        for (pattern, directories) in cases {
            let reach = Reach::new(&[pattern], 1 << 20);
            let regex = regex::Regex::new(pattern).unwrap();
            for &(directory, adopts) in directories {
                assert_eq!(
                    reach.child_may_match(directory),
                    adopts,
                    "{pattern} below {directory:?}"
                );
                // Where it adopts, the oracle finds a child that matches (among these names).
                if adopts {
                    let names = ["kubepods-pod1.slice", "job_1", "followed", "step_0"];
                    let found = names.iter().any(|name| {
                        let path = match directory {
                            "" => name.to_string(),
                            d => format!("{d}/{name}"),
                        };
                        regex.is_match(&path)
                    });
                    assert!(found, "{pattern} below {directory:?}: no child matches");
                }
            }
        }
    }
}
