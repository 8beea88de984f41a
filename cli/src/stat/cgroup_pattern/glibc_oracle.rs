//! The differential test of `--for-each-cgroup` patterns: thousands of generated patterns, each
//! compiled and matched against generated cgroup names here and by glibc's `regcomp` and
//! `regexec` (the oracle: perf calls them), through `regex_oracle.c` built with gcc.

use std::io::Write;
use std::process::{Command, Stdio};

use counterhal_conformance::skip::Need;

use super::Pattern;

/// A small deterministic generator (xorshift64*), so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

/// What patterns are made of: characters, operators, and their tricky neighbours.
const PIECES: &[&str] = &[
    "a",
    "b",
    "x",
    "/",
    ".",
    "*",
    "^",
    "$",
    "-",
    ",",
    "0",
    "1",
    "2",
    "[",
    "]",
    "\\(",
    "\\)",
    "\\{",
    "\\}",
    "[ab]",
    "[^a]",
    "[a-c]",
    "[]a]",
    "[a-]",
    "[--/]",
    "[^]b]",
    "\\.",
    "\\*",
    "\\$",
    "\\^",
    "\\[",
    "\\{1\\}",
    "\\{0,1\\}",
    "\\{,2\\}",
    "\\{2,\\}",
    "\\{1,3\\}",
    "\\{0\\}",
    "\\{3,1\\}",
    "\\{ 1\\}",
    "\\{9\\}",
    "\\{1,\\}",
    "\\(a*\\)",
    "\\(.*\\)*",
    "[^/]*",
    "\\(^",
    "$\\)",
    "\\(\\)",
];

/// What names are made of.
const NAME_CHARS: &[char] = &[
    'a', 'b', 'x', '/', '.', '-', '*', '^', '$', '[', ']', '{', '}', ',', '1', '2',
];

/// Patterns glibc 2.36 refuses by a quirk, not by a rule of the syntax, and taken here:
/// `\(^^\)` is REG_BADBR, where `\(^^a\)` and `\(a^\)` are taken (`^` after the group's
/// anchor is a character).
fn glibc_quirk(pattern: &str) -> bool {
    pattern.contains("\\(^^\\)")
}

#[test]
fn cgroup_patterns_agree_with_glibc_regexec() {
    let source = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/stat/cgroup_pattern/regex_oracle.c"
    );
    let binary =
        std::env::temp_dir().join(format!("counterhal-regex-oracle-{}", std::process::id()));
    let built = Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&binary)
        .arg(source)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        counterhal_conformance::skip!(Need::Tools, "gcc to build the glibc regex oracle");
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut names = vec![String::new(), "a/b".to_string(), "x".to_string()];
    while names.len() < 48 {
        let len = rng.below(10);
        names.push(
            (0..len)
                .map(|_| NAME_CHARS[rng.below(NAME_CHARS.len())])
                .collect(),
        );
    }
    // The largest counts by themselves: glibc takes minutes over them in combinations, 33 s
    // and 16 GB for `^a\{0,32767\}$`, and overflows its stack on `\(\)\{32767\}`
    // followed by more.
    let mut patterns: Vec<String> = [
        "a\\{32767\\}",
        "a\\{32768\\}",
        "a\\{1,32768\\}",
        "\\(\\)\\{50000\\}",
    ]
    .map(String::from)
    .to_vec();
    patterns.extend((0..20_000).map(|_| {
        let len = 1 + rng.below(7);
        (0..len)
            .map(|_| PIECES[rng.below(PIECES.len())])
            .collect::<String>()
    }));
    let mut input = format!("{}\n", names.len());
    for line in names.iter().chain(&patterns) {
        input.push_str(line);
        input.push('\n');
    }
    let mut child = Command::new(&binary)
        .env("LC_ALL", "C")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    std::fs::remove_file(&binary).ok();
    let answers = String::from_utf8(output.stdout).unwrap();
    let answers: Vec<&str> = answers.lines().collect();
    assert_eq!(answers.len(), patterns.len());
    let (mut compared, mut not_taken) = (0, 0);
    let mut failures = Vec::new();
    for (pattern, answer) in patterns.iter().zip(answers) {
        let ours = Pattern::parse(pattern);
        match (answer.strip_prefix('E'), ours) {
            (Some(_), Err(_)) => compared += 1,
            (Some(code), Ok(_)) if !glibc_quirk(pattern) => {
                failures.push(format!(
                    "`{pattern}`: regcomp refuses it ({code}), taken here"
                ));
            }
            (Some(_), Ok(_)) => {}
            (None, Err(e)) if e.message().contains("not taken") => not_taken += 1,
            (None, Err(e)) => failures.push(format!("`{pattern}`: regcomp takes it; {e}")),
            (None, Ok(ours)) => {
                compared += 1;
                let mine: String = names
                    .iter()
                    .map(|name| if ours.is_found_in(name) { '1' } else { '0' })
                    .collect();
                if mine != answer {
                    let differ: Vec<&String> = names
                        .iter()
                        .zip(mine.chars().zip(answer.chars()))
                        .filter(|(_, (m, g))| m != g)
                        .map(|(name, _)| name)
                        .collect();
                    failures.push(format!("`{pattern}`: regexec differs on {differ:?}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} patterns differ from glibc:\n{}",
        failures.len(),
        patterns.len(),
        failures[..failures.len().min(40)].join("\n")
    );
    assert!(
        compared > 15_000,
        "only {compared} compared ({not_taken} not taken)"
    );
}
