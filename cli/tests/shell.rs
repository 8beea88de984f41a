//! The command as a shell user meets it: its completions, its help at the terminal's width,
//! and `list` through a pager on a terminal.

use std::process::Command;

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The names `counterhal --help` lists under `Commands:`.
fn subcommands() -> Vec<String> {
    let help = stdout(&counterhal(&["--help"]));
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A name stands two columns in; a wrapped description further.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The long options `counterhal stat --help` lists (`--event`, ...).
fn stat_options() -> Vec<String> {
    let help = stdout(&counterhal(&["stat", "--help"]));
    help.lines()
        // An option's line starts with its spelling (`-e, --event <EV>`); its help follows.
        .filter(|l| l.trim_start().starts_with('-'))
        .filter_map(|l| {
            let spelled = l
                .trim_start()
                .split(|c: char| c.is_whitespace() || c == '=' || c == '[');
            spelled
                .flat_map(|w| w.split(','))
                .find(|w| w.starts_with("--") && w.len() > 2)
                // `--detailed...`: given more than once.
                .map(|w| w.trim_end_matches("...").to_string())
        })
        .collect()
}

/// Issue 55, item 18: `counterhal completions bash` writes a script bash loads, whose function
/// completes every subcommand from its first letters and every long option of `stat`.
/// Oracle: bash itself (its `complete` and the completion function's `COMPREPLY`).
#[test]
fn bash_completes_every_subcommand_and_stat_option() {
    let script = counterhal(&["completions", "bash"]);
    assert!(script.status.success(), "{}", stderr(&script));
    let dir = std::env::temp_dir().join(format!("counterhal-completions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("counterhal.bash");
    std::fs::write(&file, &script.stdout).unwrap();
    let (subcommands, options) = (subcommands(), stat_options());
    assert!(
        subcommands.len() >= 6 && options.len() > 40,
        "{subcommands:?} {options:?}"
    );
    // One bash: each word completed, its answers on one line.
    let mut program = format!("source {}\ncomplete -p counterhal\n", file.display());
    let mut asked = Vec::new();
    for name in &subcommands {
        let start = &name[..2];
        program.push_str(&format!(
            "COMP_WORDS=(counterhal {start}); COMP_CWORD=1; _counterhal counterhal {start} \
             counterhal; echo \"${{COMPREPLY[*]}}\"\n"
        ));
        asked.push(name.clone());
    }
    for option in &options {
        program.push_str(&format!(
            "COMP_WORDS=(counterhal stat {option}); COMP_CWORD=2; _counterhal counterhal \
             {option} stat; echo \"${{COMPREPLY[*]}}\"\n"
        ));
        asked.push(option.clone());
    }
    let out = Command::new("bash")
        .args(["--norc", "-c", &program])
        .output()
        .expect("bash");
    std::fs::remove_dir_all(&dir).ok();
    let text = stdout(&out);
    let mut lines = text.lines();
    let registered = lines.next().unwrap_or_default();
    assert!(
        registered.contains("_counterhal") && registered.ends_with(" counterhal"),
        "bash did not register the completion: {registered}\n{}",
        stderr(&out)
    );
    for (wanted, answers) in asked.iter().zip(lines) {
        assert!(
            answers.split_whitespace().any(|a| a == wanted),
            "`{wanted}` not offered: {answers}"
        );
    }
    assert_eq!(
        text.lines().count(),
        asked.len() + 1,
        "{text}{}",
        stderr(&out)
    );
}

/// Issue 55, item 18: help is wrapped at the terminal's width, at most 100 columns, where
/// `stat --help` had lines of 550 characters.
/// Oracle: POSIX's `COLUMNS` (the user's preferred width of the terminal, which clap's
/// terminal_size reads after the terminal itself) and the 100 columns asked for without one.
#[test]
fn help_is_wrapped_at_the_terminals_width_or_100_columns() {
    for (columns, width) in [(None, 100), (Some("72"), 72)] {
        for args in [&["--help"][..], &["stat", "--help"], &["serve", "--help"]] {
            let mut command = Command::new(bin());
            command.args(args).env_remove("COLUMNS");
            if let Some(columns) = columns {
                command.env("COLUMNS", columns);
            }
            let out = command.output().expect("counterhal");
            let text = stdout(&out);
            let longest = text.lines().max_by_key(|l| l.chars().count()).unwrap_or("");
            assert!(
                longest.chars().count() <= width,
                "{args:?} with COLUMNS={columns:?}: a line of {} columns: {longest}",
                longest.chars().count()
            );
        }
    }
}

/// `script -qec COMMAND /dev/null`: COMMAND on a terminal of its own (util-linux's script),
/// its output; `None` where script is missing.
fn on_a_terminal(command: &str) -> Option<String> {
    let out = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .env_remove("LESS")
        .output()
        .ok()?;
    out.status.success().then(|| stdout(&out))
}

/// Issue 55, item 18: on a terminal, `list` goes through `$PAGER` as perf's `list` does, and
/// ends with how to search; through a pipe it is written as it is.
/// Oracle: perf 6.1's `list` run the same way (a terminal of script(1), the same `PAGER`): both
/// page every line, or neither.
#[test]
fn list_pages_on_a_terminal_as_perfs_does() {
    perf_or_skip!();
    let pager = "PAGER='sed s/^/paged:/'";
    let ours = format!("env {pager} {} list sw", bin().display());
    let (Some(ours), Some(perf)) = (
        on_a_terminal(&ours),
        on_a_terminal(&format!("env {pager} perf list sw")),
    ) else {
        skip!(Need::Tools, "no script(1) (Debian's util-linux)");
    };
    let paged = |text: &str| {
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        !lines.is_empty() && lines.iter().all(|l| l.starts_with("paged:"))
    };
    assert!(paged(&perf), "perf did not page: {perf}");
    assert!(paged(&ours), "ours did not page: {ours}");
    let piped = counterhal(&["list"]);
    let text = stdout(&piped);
    assert!(!text.contains("paged:"), "{text}");
    let last = text.lines().last().unwrap_or_default();
    assert!(last.contains("`counterhal list PATTERN`"), "{last}");
}
