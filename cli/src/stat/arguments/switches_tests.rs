//! perf's options that cannot work here, refused with what they would need, on command lines
//! read by the parser.

use crate::stat::arguments::parse;

#[test]
fn options_not_implemented_are_refused_saying_what_they_need() {
    for (words, expect) in [
        (&["--iostat", "--", "true"][..], "uncore"),
        (&["--smi-cost", "--", "true"], "msr/smi/"),
        (&["-T", "--", "true"], "TSX"),
    ] {
        let args = parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"));
        let error = args.more.check().expect_err("refused");
        let text = error.to_string();
        assert!(text.contains(expect), "{words:?}: {text}");
        // True on every machine: the reason is what counterhal lacks, not this machine.
        assert!(text.contains("does not implement"), "{words:?}: {text}");
        assert!(!text.contains("this machine"), "{words:?}: {text}");
    }
    assert!(
        parse(&["-B", "-x,", "--", "true"]).is_err(),
        "perf refuses it"
    );
    assert!(parse(&["--append", "--", "true"]).is_err(), "needs -o");
    assert!(parse(&["-n", "-e", "page-faults", "--", "true"]).is_err());
}
