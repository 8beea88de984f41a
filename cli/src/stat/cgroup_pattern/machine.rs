//! Matching a parsed pattern in time linear in the name: the pattern compiled to the steps of
//! a nondeterministic automaton (Thompson's construction, repeat counts written out as regcomp
//! writes them out), run over the name with every live state at once (Pike's simulation), so
//! each character of the name costs at most one visit per step, never a backtrack.
//! `\(.*\)*x` against a long name is as quick as `x`.

use counterhal::Error;

use super::syntax::{Class, Node, Syntax, refused};

/// The most steps a compiled pattern may have. Its repeat counts written out multiply
/// (`\(a\{100\}\)\{1000\}` would be 100,000 steps and its end, one too many), and each
/// step costs time for every character of every cgroup name. `a\{32767\}` and
/// `^[a-z]\{0,32767\}$` (the largest count regcomp takes, written out) fit.
pub const MAX_STEPS: usize = 100_000;

/// One step of the automaton.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// The character, then the next step.
    Char(char),
    /// Any character.
    Any,
    /// A character of bracket expression `n`.
    Class(usize),
    /// Only at the start of the name (no character taken).
    Start,
    /// Only at the end of the name (no character taken).
    End,
    /// Both steps (no character taken).
    Split(usize, usize),
    /// Step `n` (no character taken).
    Jump(usize),
    /// The pattern matched.
    Match,
}

/// A compiled pattern.
#[derive(Debug)]
pub struct Program {
    steps: Vec<Step>,
    classes: Vec<Class>,
}

/// How many steps `node` compiles to (saturating: only compared with [`MAX_STEPS`]).
fn size(node: &Node) -> usize {
    match node {
        Node::Sequence(nodes) => nodes
            .iter()
            .fold(0usize, |n, node| n.saturating_add(size(node))),
        Node::Repeat { node, min, max } => {
            let one = size(node);
            let required = one.saturating_mul(*min as usize);
            let optional = match max {
                None => one.saturating_add(2),
                Some(max) => one.saturating_add(1).saturating_mul((max - min) as usize),
            };
            required.saturating_add(optional)
        }
        _ => 1,
    }
}

impl Program {
    /// Compiles `syntax` (of pattern `text`, for messages).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput) when the pattern
    /// would take more than [`MAX_STEPS`] steps.
    pub fn compile(text: &str, syntax: Syntax) -> Result<Program, Error> {
        let steps = size(&syntax.root).saturating_add(1);
        if steps > MAX_STEPS {
            return Err(refused(
                text,
                &format!(
                    "its repeat counts multiply to more than {MAX_STEPS} steps once written out \
                     (a repeat of a group with repeats inside); use smaller counts"
                ),
            ));
        }
        let mut program = Program {
            steps: Vec::with_capacity(steps),
            classes: syntax.classes,
        };
        program.emit(&syntax.root);
        program.steps.push(Step::Match);
        Ok(program)
    }

    fn emit(&mut self, node: &Node) {
        match node {
            Node::Char(c) => self.steps.push(Step::Char(*c)),
            Node::Any => self.steps.push(Step::Any),
            Node::Class(n) => self.steps.push(Step::Class(*n)),
            Node::Start => self.steps.push(Step::Start),
            Node::End => self.steps.push(Step::End),
            Node::Sequence(nodes) => {
                for node in nodes {
                    self.emit(node);
                }
            }
            Node::Repeat { node, min, max } => {
                for _ in 0..*min {
                    self.emit(node);
                }
                match max {
                    None => {
                        // loop: split(body, out); body; jump loop
                        let split = self.steps.len();
                        self.steps.push(Step::Split(split + 1, 0));
                        self.emit(node);
                        self.steps.push(Step::Jump(split));
                        let out = self.steps.len();
                        self.steps[split] = Step::Split(split + 1, out);
                    }
                    Some(max) => {
                        // Each optional copy: split(body, out of all of them); body.
                        let mut splits = Vec::new();
                        for _ in *min..*max {
                            splits.push(self.steps.len());
                            self.steps.push(Step::Split(0, 0));
                            self.emit(node);
                        }
                        let out = self.steps.len();
                        for split in splits {
                            self.steps[split] = Step::Split(split + 1, out);
                        }
                    }
                }
            }
        }
    }

    /// Whether the pattern matches somewhere in `text` (as `regexec` finds it).
    pub fn is_found_in(&self, text: &[char]) -> bool {
        let mut live = States::new(self.steps.len());
        let mut next = States::new(self.steps.len());
        let mut pending = Vec::new();
        for at in 0..=text.len() {
            // A match may start at every position.
            if self.add(&mut live, &mut pending, 0, at, text.len()) {
                return true;
            }
            let Some(&c) = text.get(at) else {
                break;
            };
            next.clear();
            for &step in &live.list {
                let taken = match self.steps[step] {
                    Step::Char(want) => c == want,
                    Step::Any => true,
                    Step::Class(n) => self.classes[n].contains(c),
                    _ => false,
                };
                if taken && self.add(&mut next, &mut pending, step + 1, at + 1, text.len()) {
                    return true;
                }
            }
            std::mem::swap(&mut live, &mut next);
        }
        false
    }

    /// Adds `from` and every step reached from it without taking a character, at position
    /// `at` of a name `len` long; whether the match step is among them.
    fn add(
        &self,
        states: &mut States,
        pending: &mut Vec<usize>,
        from: usize,
        at: usize,
        len: usize,
    ) -> bool {
        pending.push(from);
        while let Some(step) = pending.pop() {
            if !states.insert(step) {
                continue;
            }
            match self.steps[step] {
                Step::Match => {
                    pending.clear();
                    return true;
                }
                Step::Jump(to) => pending.push(to),
                Step::Split(first, second) => {
                    pending.push(second);
                    pending.push(first);
                }
                Step::Start if at == 0 => pending.push(step + 1),
                Step::End if at == len => pending.push(step + 1),
                _ => {}
            }
        }
        false
    }
}

/// A set of steps: its members in the order added, and a mark per step.
struct States {
    list: Vec<usize>,
    member: Vec<bool>,
}

impl States {
    fn new(steps: usize) -> States {
        States {
            list: Vec::new(),
            member: vec![false; steps],
        }
    }

    fn insert(&mut self, step: usize) -> bool {
        if self.member[step] {
            return false;
        }
        self.member[step] = true;
        self.list.push(step);
        true
    }

    fn clear(&mut self) {
        for &step in &self.list {
            self.member[step] = false;
        }
        self.list.clear();
    }
}
