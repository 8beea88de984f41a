//! The checks of `StatArgs` and the event lists' syntax, on command lines read by the parser.

use super::*;
use crate::stat::arguments::parse;

fn args(words: &[&str]) -> StatArgs {
    parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

fn check_error(words: &[&str]) -> String {
    let error = args(words).check().expect_err("a bad argument");
    assert_eq!(error.exit_code, 2, "{words:?}");
    assert_eq!(error.usage, Some(USAGE), "{words:?}");
    error.error.to_string()
}

#[test]
fn a_command_is_required_unless_attached() {
    assert!(check_error(&["-e", "page-faults"]).contains("no command to measure"));
    let mut system_wide = args(&["-e", "page-faults", "-A"]);
    system_wide.default_to_system_wide();
    assert!(system_wide.all_cpus && system_wide.check().is_ok());
    let mut with_command = args(&["-e", "page-faults", "--", "true"]);
    with_command.default_to_system_wide();
    assert!(!with_command.all_cpus);
    assert!(args(&["--", "true"]).check().is_ok());
    for attached in [&["-a"][..], &["-C", "0"], &["-p", "1"], &["--cpu", "0"]] {
        assert!(args(attached).check().is_ok(), "{attached:?}");
    }
}

#[test]
fn splits_intervals_and_timeouts_are_checked() {
    assert!(check_error(&["-I", "5", "--", "true"]).contains("at least 10"));
    assert!(check_error(&["-a", "--timeout", "0"]).contains("--timeout takes"));
    assert!(check_error(&["-A", "--", "true"]).contains("-a or -C"));
    assert!(check_error(&["--per-thread", "-a"]).contains("-p PID"));
    assert!(check_error(&["-r", "2", "-I", "100", "--", "true"]).contains("-r cannot"));
    assert!(check_error(&["-r", "2", "-a", "-A", "--", "true"]).contains("-r cannot"));
    assert!(
        parse(&["--interval-count", "2", "--", "true"]).is_err(),
        "needs -I"
    );
    assert!(parse(&["-I", "100", "--interval-count", "0", "--", "true"]).is_err());
    assert!(parse(&["-I", "-1", "--", "true"]).is_err());
    let ok = args(&["-a", "--no-aggregate", "-I", "100", "--interval-count", "3"]);
    assert!(ok.check().is_ok());
    assert!(ok.per_place());
    assert_eq!(ok.interval(), Some(std::time::Duration::from_millis(100)));
    assert_eq!(ok.interval_count, Some(3));
    assert!(
        args(&["-p", "1", "--per-thread", "--timeout", "10"])
            .check()
            .is_ok()
    );
}

#[test]
fn empty_separators_and_event_names_are_refused() {
    assert!(check_error(&["-x", "", "--", "true"]).contains("field separator"));
    for events in [",page-faults", "page-faults,", " "] {
        let message = check_error(&["-e", events, "--", "true"]);
        assert!(message.contains("empty event name"), "{events}: {message}");
    }
}

#[test]
fn commas_inside_pmu_terms_and_groups_separate_nothing() {
    let given = args(&[
        "-e",
        "cpu/event=0x3c,umask=0x1/u,page-faults",
        "-e",
        "{cycles,instructions}:u,msr/tsc/",
        "--",
        "true",
    ]);
    assert_eq!(
        given.given_events().0,
        [
            "cpu/event=0x3c,umask=0x1/u",
            "page-faults",
            "cycles:u",
            "instructions:u",
            "msr/tsc/"
        ]
    );
    assert_eq!(split_event_list("a,,b"), ["a", "", "b"]);
    let (names, groups) = given.given_events();
    assert_eq!(names[2..4], ["cycles:u", "instructions:u"]);
    assert_eq!(groups, [vec![2, 3]]);
    assert_eq!(split_event_list("cpu/a=1,b=2"), ["cpu/a=1,b=2"]);
}

#[test]
fn groups_give_their_members_the_group_s_modifiers() {
    assert_eq!(group_members("page-faults"), None);
    assert_eq!(
        group_members("{a, b:k,cpu/event=1/}:u").unwrap(),
        ["a:u", "b:k:u", "cpu/event=1/u"]
    );
    assert_eq!(group_members("{a,b}").unwrap(), ["a", "b"]);
    assert_eq!(group_members("{a,b}:W").unwrap(), ["a", "b"]);
    assert_eq!(
        group_members("{a,cpu/event=1/}:uW").unwrap(),
        ["a:u", "cpu/event=1/u"]
    );
    assert!(is_weak_group("{a,b}:W") && is_weak_group("{a}:Wu"));
    assert!(!is_weak_group("{a,b}:u") && !is_weak_group("cpu/event=1/"));
    let weak = args(&["-e", "x,{a,b}:W,{c,d}", "--", "true"]).weak_given();
    assert_eq!(weak, [false, true, true, false, false]);
    assert_eq!(group_members("{}").unwrap(), [""]);
    assert!(check_error(&["-e", "{}", "--", "true"]).contains("empty event name"));
    assert!(check_error(&["-e", "{,a}:u", "--", "true"]).contains("empty event name"));
    let (names, groups) = args(&["-e", "x,{a,b},{c}", "--", "true"]).given_events();
    assert_eq!(names, ["x", "a", "b", "c"]);
    assert_eq!(groups, [vec![1, 2], vec![3]]);
}

#[test]
fn the_format_follows_the_options() {
    assert_eq!(args(&["--", "true"]).format(), Format::Table);
    assert_eq!(
        args(&["-x", ";", "--", "true"]).format(),
        Format::Csv {
            separator: ";".into()
        }
    );
    assert_eq!(args(&["--json", "--", "true"]).format(), Format::Json);
    assert_eq!(args(&["-j", "--", "true"]).format(), Format::JsonLines);
    assert!(parse(&["--json", "-x,", "--", "true"]).is_err());
    assert!(parse(&["-j", "-x,", "--", "true"]).is_err());
    assert!(parse(&["-j", "--json", "--", "true"]).is_err());
}

#[test]
fn the_parser_refuses_what_cannot_go_together() {
    assert!(parse(&["-r", "0", "--", "true"]).is_err());
    assert!(parse(&["-p", "1", "-a", "--", "true"]).is_err());
    // perf takes -a with -C (its CPUs are counted).
    assert!(parse(&["-a", "-C", "0", "--", "true"]).is_ok());
    assert!(parse(&["--backend", "nosuch", "--", "true"]).is_err());
    let ok = args(&["-r", "3", "-C", "0,2-3", "--", "sh", "-c", "exit 3"]);
    assert_eq!(ok.repeat, 3);
    assert_eq!(ok.cpu_list.as_deref(), Some("0,2-3"));
    // perf's --cpu is the CPU list; the model is --cpu-model.
    let perfs = args(&["--cpu", "1", "--cpu-model", "skl", "--", "true"]);
    assert_eq!(perfs.cpu_list.as_deref(), Some("1"));
    assert!(parse(&["--cpu", "0", "-a", "--", "true"]).is_ok());
    assert_eq!(ok.command_words(), ["sh", "-c", "exit 3"]);
}
