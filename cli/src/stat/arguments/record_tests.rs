//! perf's rules (tools/perf/builtin-stat.c, `cmd_stat`): a subcommand is a first
//! non-option word of more than two letters that begins `record` or `report`, and
//! `record`'s options are stat's, read on both sides of the word. The command lines go
//! through the command's own parser.

use std::ffi::OsString;

use super::Subcommand;
use crate::args::Parsed;

fn stat_of(words: &[&str]) -> Box<StatArgs> {
    let argv: Vec<OsString> = words.iter().map(OsString::from).collect();
    match crate::stat::arguments::read(&argv).expect("a line that parses") {
        Parsed::Args(stat) => stat,
        Parsed::Help(_) => panic!("not stat"),
    }
}

use super::StatArgs;

#[test]
fn subcommands_are_recognised_as_perf_recognises_them() {
    for (word, expected) in [
        ("record", Some(Subcommand::Record)),
        ("rec", Some(Subcommand::Record)),
        ("repo", Some(Subcommand::Report)),
        ("report", Some(Subcommand::Report)),
        ("re", None),
        ("records", None),
        ("./report", None),
    ] {
        assert_eq!(Subcommand::of(word.as_ref()), expected, "{word}");
    }
}

#[test]
fn record_reads_stat_s_options_on_both_sides() {
    // The second line has a long flag before the word, the third `--` before the word.
    for line in [
        "counterhal stat -e page-faults record -o f -e task-clock true",
        "counterhal stat --no-merge -e page-faults record -o f -e task-clock -- true",
        "counterhal stat -e page-faults -- rec -o f -e task-clock true",
    ] {
        let words: Vec<&str> = line.split(' ').collect();
        let stat = stat_of(&words);
        assert_eq!(
            stat.given_events().0,
            ["page-faults", "task-clock"],
            "{words:?}"
        );
        assert_eq!(stat.output.as_deref(), Some(std::path::Path::new("f")));
        assert_eq!(stat.command, ["true"], "{words:?}");
        let line: Vec<OsString> = words.iter().map(OsString::from).collect();
        assert_eq!(stat.record.as_deref(), Some(&line[..]), "{words:?}");
    }
    // A command named so, after `./` or as a later word, is run.
    let stat = stat_of(&["counterhal", "stat", "--", "./record", "record"]);
    assert_eq!(stat.record, None);
    let stat = stat_of(&["counterhal", "stat", "record", "--", "record"]);
    assert_eq!(stat.command, ["record"]);
    assert!(stat.record.is_some());
    // `report` is left as it is, for stat::run.
    let stat = stat_of(&["counterhal", "stat", "-x,", "report", "-i", "f"]);
    assert_eq!(stat.command, ["report", "-i", "f"]);
    assert_eq!(stat.record, None);
}

#[test]
fn report_takes_its_input_in_perf_s_spellings_and_nothing_else() {
    let words = |line: &[&str]| line.iter().map(OsString::from).collect::<Vec<_>>();
    for line in [
        &["-i", "f"][..],
        &["--input", "f"],
        &["--input=f"],
        &["-if"],
    ] {
        assert_eq!(super::input_of(&words(line)).unwrap(), "f", "{line:?}");
    }
    for line in [&["-A"][..], &["-i"], &["-i", "f", "-i", "g"], &["f"]] {
        let error = super::input_of(&words(line)).unwrap_err();
        assert_eq!(error.exit_code, 2, "{line:?}");
    }
}
