//! The parser against clap's description of stat (`--help`, the manual and the completions
//! are written from it) and against the rules it states; clap is the outside oracle for
//! what each option's names and value are.

use std::ffi::OsString;

use clap::ArgAction;

use crate::args::Parsed;
use crate::args::spec::Action;
use crate::error::CliError;
use crate::stat::arguments::StatArgs;
use crate::stat::arguments::options::{CONFLICTS, OPTIONS, REQUIRES};

/// stat's words read by the one parser.
fn parse(words: impl IntoIterator<Item = OsString>) -> Result<Parsed<StatArgs>, CliError> {
    crate::args::parse::<StatArgs>(words)
}

/// The option of this long name or alias in stat's table.
fn by_long(name: &str) -> Option<usize> {
    crate::args::parser::by_long::<StatArgs>(name)
}

fn read(words: &[&str]) -> Result<StatArgs, String> {
    match parse(words.iter().map(OsString::from)) {
        Ok(Parsed::Args(args)) => Ok(*args),
        Ok(Parsed::Help(flag)) => Err(format!("help {flag}")),
        Err(error) => {
            assert_eq!(error.exit_code, 2, "{words:?}");
            assert!(error.usage.is_some(), "{words:?}");
            Err(error.error.to_string())
        }
    }
}

fn refused(words: &[&str]) -> String {
    read(words).expect_err(&format!("{words:?} is refused"))
}

/// Every option in clap's description is in the table with the same names and value, and
/// nothing else is: what `--help` says is what the parser reads.
#[test]
fn the_table_is_clap_s_description_of_stat() {
    let mut stat = crate::args::described::describe::<StatArgs>(clap::Command::new("stat"));
    stat.build();
    let mut described = 0;
    for arg in stat.get_arguments() {
        let Some(long) = arg.get_long() else {
            assert!(arg.is_positional(), "{:?}", arg.get_id());
            continue;
        };
        if long == "help" {
            continue;
        }
        described += 1;
        let index = by_long(long).unwrap_or_else(|| panic!("--{long} is not in the table"));
        let option = &OPTIONS[index];
        assert_eq!(option.long, long);
        assert_eq!(option.short, arg.get_short(), "--{long}");
        let aliases = arg.get_visible_aliases().unwrap_or_default();
        assert_eq!(
            option.alias.into_iter().collect::<Vec<_>>(),
            aliases,
            "--{long}"
        );
        let value_name = arg
            .get_value_names()
            .map(|names| names.iter().map(ToString::to_string).collect::<String>())
            .unwrap_or_default();
        let takes = !matches!(
            arg.get_action(),
            ArgAction::SetTrue | ArgAction::Count | ArgAction::Help
        );
        match option.action {
            Action::Flag(_) | Action::Count(_) => assert!(!takes, "--{long} takes a value in clap"),
            _ => {
                assert!(takes, "--{long} takes none in clap");
                assert_eq!(option.value_name, value_name, "--{long}");
            }
        }
        let many = matches!(arg.get_action(), ArgAction::Append | ArgAction::Count);
        if !matches!(option.long, "scale" | "no-scale") {
            assert_eq!(option.repeats, many, "--{long}");
        }
    }
    assert_eq!(
        described,
        OPTIONS.len(),
        "options in the table but not in --help"
    );
    for (one, others) in CONFLICTS {
        for long in std::iter::once(one).chain(others.iter()) {
            assert!(by_long(long).is_some(), "{long} in CONFLICTS");
        }
    }
    for (option, needs, example) in REQUIRES {
        assert!(
            by_long(option).is_some() && by_long(needs).is_some(),
            "{option}"
        );
        let mut words: Vec<&str> = example.split(' ').collect();
        words.extend(["--", "true"]);
        assert!(read(&words).is_ok(), "{example}");
    }
}

/// Each option, written every way (`--long V`, `--long=V`, `-s V`, `-sV`, `-s=V`), with a
/// value it takes.
fn spellings() -> Vec<(usize, Vec<String>)> {
    let mut all = Vec::new();
    for (index, option) in OPTIONS.iter().enumerate() {
        let value = match option.long {
            "repeat" | "interval-count" | "td-level" | "log-fd" => "3",
            "interval-print" | "timeout" | "delay" => "100",
            "backend" => "linux",
            "per-cache" => "L2",
            _ => "x",
        };
        let long = format!("--{}", option.long);
        let mut spell = |words: Vec<String>| all.push((index, words));
        match option.action {
            Action::Flag(_) | Action::Count(_) => {
                spell(vec![long.clone()]);
                if let Some(short) = option.short {
                    spell(vec![format!("-{short}")]);
                }
            }
            Action::Optional(_, equals) => {
                spell(vec![long.clone()]);
                spell(vec![format!("{long}={value}")]);
                if !equals {
                    spell(vec![long.clone(), value.to_string()]);
                }
            }
            Action::Text(_) | Action::Path(_) | Action::Many(_) => {
                spell(vec![long.clone(), value.to_string()]);
                spell(vec![format!("{long}={value}")]);
                if let Some(short) = option.short {
                    spell(vec![format!("-{short}"), value.to_string()]);
                    spell(vec![format!("-{short}{value}")]);
                    spell(vec![format!("-{short}={value}")]);
                }
            }
        }
    }
    all
}

/// Whether the rules forbid giving these two options together (or the first twice).
fn forbidden(one: usize, other: usize) -> bool {
    let (a, b) = (OPTIONS[one].long, OPTIONS[other].long);
    (one == other && !OPTIONS[one].repeats)
        || CONFLICTS
            .iter()
            .any(|(x, ys)| (*x == a && ys.contains(&b)) || (*x == b && ys.contains(&a)))
}

/// Whether an option needs another (not given alone).
fn needs_another(index: usize) -> Option<&'static str> {
    REQUIRES
        .iter()
        .find(|(option, _, _)| *option == OPTIONS[index].long)
        .map(|(_, needs, _)| *needs)
}

/// Every option alone and every pair in every spelling: read unless a rule forbids it, and
/// then refused naming both options; every spelling of an option gives the same arguments.
#[test]
fn every_option_and_every_pair_is_read_or_refused_by_its_rule() {
    let spellings = spellings();
    let mut lines = 0;
    for (one, first) in &spellings {
        let mut alone: Vec<&str> = first.iter().map(String::as_str).collect();
        alone.extend(["--", "true"]);
        match needs_another(*one) {
            // `--per-cache` alone is the last level, with a value another.
            None if matches!(OPTIONS[*one].action, Action::Optional(..)) => {
                assert!(read(&alone).is_ok(), "{alone:?}");
            }
            None => {
                let args = read(&alone).unwrap_or_else(|e| panic!("{alone:?}: {e}"));
                let by_long = spellings.iter().find(|(i, _)| i == one).unwrap();
                let mut words: Vec<&str> = by_long.1.iter().map(String::as_str).collect();
                words.extend(["--", "true"]);
                assert_eq!(
                    format!("{args:?}"),
                    format!("{:?}", read(&words).unwrap()),
                    "{alone:?}"
                );
            }
            Some(needs) => {
                let message = refused(&alone);
                assert!(
                    message.contains(&format!("--{needs}")),
                    "{alone:?}: {message}"
                );
            }
        }
        for (other, second) in &spellings {
            let mut words: Vec<&str> = first.iter().chain(second).map(String::as_str).collect();
            words.push("true");
            let lacking = [*one, *other]
                .iter()
                .filter_map(|&i| needs_another(i))
                .any(|needs| by_long(needs) != Some(*one) && by_long(needs) != Some(*other));
            let result = read(&words);
            if forbidden(*one, *other) {
                let message = result.expect_err(&format!("{words:?}"));
                let said = ["cannot be used with", "given twice"];
                assert!(
                    said.iter().any(|s| message.contains(s)),
                    "{words:?}: {message}"
                );
            } else if !lacking {
                lines += 1;
                assert!(result.is_ok(), "{words:?}: {result:?}");
            }
        }
    }
    assert!(lines > 5000, "only {lines} pairs read");
}

#[test]
fn the_guard_s_lines_and_perf_s_habits_are_read() {
    let args = read(&["-e", "page-faults,context-switches", "--", "true"]).unwrap();
    assert_eq!(args.event_names, ["page-faults,context-switches"]);
    assert_eq!(args.command, ["true"]);
    assert_eq!(args.repeat, 1);
    // The first word that is no option starts the command, options after it are its own.
    let args = read(&["-e", "page-faults", "ls", "-l", "--", "x"]).unwrap();
    assert_eq!(args.command, ["ls", "-l", "--", "x"]);
    // Clusters: flags together, a count repeated, a value attached.
    let args = read(&["-ai", "-ddd", "-x,", "-D", "-1", "-r=2"]).unwrap();
    assert!(args.all_cpus && args.more.no_inherit);
    assert_eq!(args.more.detailed, 3);
    assert_eq!(args.separator.as_deref(), Some(","));
    assert_eq!(args.more.delay_ms, Some(-1));
    assert_eq!(args.repeat, 2);
    let args = read(&["-avx;", "-o", "-", "--", "true"]).unwrap();
    assert!(args.more.verbose && args.separator.as_deref() == Some(";"));
    assert_eq!(args.output.as_deref(), Some(std::path::Path::new("-")));
    // --scale and --no-scale: the last one counts.
    let args = read(&["--no-scale", "--scale", "--", "true"]).unwrap();
    assert!(args.more.scale && !args.more.no_scale);
    assert_eq!(
        read(&["--per-cache", "-a"])
            .unwrap()
            .more
            .per_cache
            .as_deref(),
        Some("")
    );
    // An option that is not text is refused, not taken for the command (clap refused it).
    use std::os::unix::ffi::OsStringExt;
    let line = [
        OsString::from_vec(b"-e\xff".to_vec()),
        OsString::from("true"),
    ];
    let error = parse(line).err().expect("refused");
    assert!(
        error.error.to_string().contains("not UTF-8"),
        "{}",
        error.error
    );
    let line = [OsString::from("ls"), OsString::from_vec(b"-\xff".to_vec())];
    assert!(matches!(parse(line), Ok(Parsed::Args(args)) if args.command.len() == 2));
    assert!(matches!(
        parse(["-e", "x", "--help"].map(OsString::from)),
        Ok(Parsed::Help("--help"))
    ));
}

/// `-G` and `--filter` apply to the events given before them (perf's rule).
#[test]
fn cgroups_and_filters_note_the_events_before_them() {
    let args = read(&[
        "-a", "-e", "a,{b,c}", "-G", "x", "-e", "d", "--filter", "f", "-G", "y",
    ])
    .unwrap();
    assert_eq!(args.more.events_before_cgroups, [Some(3), Some(4)]);
    assert_eq!(args.more.events_before_filters, [4]);
}

/// Each refusal names what was wrong and what would be right.
#[test]
fn bad_options_are_refused_with_what_would_be_right() {
    for (words, wrong, right) in [
        (&["--repet", "3", "--", "true"][..], "`--repet`", "--repeat"),
        (&["-E", "x", "--", "true"], "`-E`", "--help"),
        (&["-e"], "-e/--event needs a value", "-e EV[,EV...]"),
        (&["-e", "-a"], "-e/--event needs a value", "-e EV[,EV...]"),
        (
            &["-r", "0", "--", "true"],
            "`0` is not a value of -r/--repeat",
            "at least 1",
        ),
        (
            &["-I", "x", "--", "true"],
            "-I/--interval-print",
            "e.g. -I 100",
        ),
        (
            &["-r", "2", "-r", "3", "--", "true"],
            "-r/--repeat is given twice",
            "once",
        ),
        (&["-a", "-a"], "given twice", "once"),
        (&["--all-cpus=yes"], "takes no value", "--all-cpus"),
        (
            &["-p", "1", "-a"],
            "-p/--pid cannot be used with -a/--all-cpus",
            "one of them",
        ),
        (
            &["-x,", "-j", "--", "true"],
            "cannot be used with -j/--json-output",
            "one",
        ),
        (
            &["--interval-count", "2", "--", "true"],
            "needs -I/--interval-print",
            "-I 100",
        ),
        (
            &["--backend", "nosuch", "--", "true"],
            "`nosuch`",
            "counterhal info",
        ),
        (
            &["--model", "--", "true"],
            "--model needs --backend",
            "--backend pctr",
        ),
    ] {
        let message = refused(words);
        assert!(message.contains(wrong), "{words:?}: {message}");
        assert!(message.contains(right), "{words:?}: {message}");
    }
}
