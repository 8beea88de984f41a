//! The usual `stat` command lines read without clap: building clap's parser for stat's 70
//! options, filling their defaults and checking their rules took half of the instructions of
//! `counterhal stat -e page-faults,context-switches -- true`.
//!
//! [`parse`] reads a command line made only of the options in [`OPTIONS`], each written in a
//! form clap reads the same way, then the command; for anything else (another option, help,
//! a value clap would refuse or read otherwise, an option given twice that takes one value) it
//! answers `None` and clap parses the line, with its messages. No two options here have a rule
//! between them (a conflict or a requirement), so a line read here is one clap accepts. The
//! tests hold both against clap itself: every option alone and every pair, and random lines,
//! must give what clap gives.

use std::ffi::OsString;
use std::path::PathBuf;

use super::arguments::StatArgs;
use crate::options::parse_backend;

/// One option read here: its short and long names, whether it may be given more than once,
/// and what it does to the arguments.
struct LeanOption {
    short: Option<char>,
    long: &'static str,
    repeats: bool,
    action: Action,
}

/// What an option does: a flag sets its field, a value is parsed into its field (`None`: a
/// value clap would refuse, or read otherwise).
enum Action {
    Flag(fn(&mut StatArgs)),
    Value(fn(&mut StatArgs, &str) -> Option<()>),
}

/// A whole number written in decimal digits alone, as clap reads it (signs, spaces and what
/// does not fit are left to clap's message).
fn digits<T: std::str::FromStr>(value: &str) -> Option<T> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// The options read without clap.
const OPTIONS: [LeanOption; 15] = [
    LeanOption {
        short: Some('e'),
        long: "event",
        repeats: true,
        action: Action::Value(|args, v| {
            args.event_names.push(v.to_string());
            Some(())
        }),
    },
    LeanOption {
        short: Some('M'),
        long: "metrics",
        repeats: true,
        action: Action::Value(|args, v| {
            args.metrics.push(v.to_string());
            Some(())
        }),
    },
    LeanOption {
        short: Some('x'),
        long: "field-separator",
        repeats: false,
        action: Action::Value(|args, v| {
            args.separator = Some(v.to_string());
            Some(())
        }),
    },
    LeanOption {
        short: Some('o'),
        long: "output",
        repeats: false,
        action: Action::Value(|args, v| {
            args.output = Some(PathBuf::from(v));
            Some(())
        }),
    },
    LeanOption {
        short: Some('r'),
        long: "repeat",
        repeats: false,
        action: Action::Value(|args, v| {
            args.repeat = digits::<u32>(v).filter(|&n| n >= 1)?;
            Some(())
        }),
    },
    LeanOption {
        short: Some('I'),
        long: "interval-print",
        repeats: false,
        action: Action::Value(|args, v| {
            args.interval_ms = Some(digits(v)?);
            Some(())
        }),
    },
    LeanOption {
        short: None,
        long: "timeout",
        repeats: false,
        action: Action::Value(|args, v| {
            args.timeout_ms = Some(digits(v)?);
            Some(())
        }),
    },
    LeanOption {
        short: Some('D'),
        long: "delay",
        repeats: false,
        // A negative delay (`-D -1`) is clap's to read.
        action: Action::Value(|args, v| {
            args.more.delay_ms = Some(digits(v)?);
            Some(())
        }),
    },
    LeanOption {
        short: None,
        long: "control",
        repeats: false,
        action: Action::Value(|args, v| {
            args.more.control = Some(v.to_string());
            Some(())
        }),
    },
    LeanOption {
        short: Some('a'),
        long: "all-cpus",
        repeats: false,
        action: Action::Flag(|args| args.all_cpus = true),
    },
    LeanOption {
        short: Some('i'),
        long: "no-inherit",
        repeats: false,
        action: Action::Flag(|args| args.more.no_inherit = true),
    },
    LeanOption {
        short: Some('v'),
        long: "verbose",
        repeats: false,
        action: Action::Flag(|args| args.more.verbose = true),
    },
    LeanOption {
        short: None,
        long: "cpu-model",
        repeats: false,
        action: Action::Value(|args, v| {
            args.database.cpu = Some(v.to_string());
            Some(())
        }),
    },
    LeanOption {
        short: None,
        long: "events",
        repeats: false,
        action: Action::Value(|args, v| {
            args.database.events_file = Some(PathBuf::from(v));
            Some(())
        }),
    },
    LeanOption {
        short: None,
        long: "backend",
        repeats: false,
        action: Action::Value(|args, v| {
            args.backend = Some(parse_backend(v).ok()?);
            Some(())
        }),
    },
];

/// `argv` (the program's name first) read as `counterhal stat` with [`OPTIONS`] alone, or
/// `None` for clap to read it.
pub fn parse(argv: impl IntoIterator<Item = OsString>) -> Option<StatArgs> {
    let mut argv = argv.into_iter().skip(1);
    if argv.next()? != "stat" {
        return None;
    }
    // clap's default for -r; every other field's default is its type's.
    let mut args = StatArgs {
        repeat: 1,
        ..StatArgs::default()
    };
    let mut given = [false; OPTIONS.len()];
    while let Some(word) = argv.next() {
        let text = word.to_str()?;
        if text == "--" {
            break;
        }
        if !text.starts_with('-') {
            // The command's first word: it and every word after it are the command's.
            args.command.push(word);
            break;
        }
        // `--long`, `--long=VALUE`, `-s`, `-sVALUE`: the option and its value if attached.
        let (index, attached) = match text.strip_prefix("--") {
            Some(long) => {
                let (name, value) = match long.split_once('=') {
                    Some((name, value)) => (name, Some(value)),
                    None => (long, None),
                };
                (OPTIONS.iter().position(|o| o.long == name)?, value)
            }
            None => {
                let mut chars = text[1..].chars();
                let short = chars.next()?;
                let rest = chars.as_str();
                let index = OPTIONS.iter().position(|o| o.short == Some(short))?;
                // `-s=VALUE` (clap drops the `=`) and clustered flags are clap's to read.
                (index, (!rest.is_empty()).then_some(rest))
            }
        };
        let option = &OPTIONS[index];
        if given[index] && !option.repeats {
            return None;
        }
        given[index] = true;
        match (&option.action, attached) {
            (Action::Flag(set), None) => set(&mut args),
            (Action::Value(set), Some(value)) => {
                if value.is_empty() || value.starts_with(['-', '=']) {
                    return None;
                }
                set(&mut args, value)?;
            }
            (Action::Value(set), None) => {
                let value = argv.next()?;
                let value = value.to_str()?;
                if value.is_empty() || value.starts_with('-') {
                    return None;
                }
                set(&mut args, value)?;
            }
            (Action::Flag(_), Some(_)) => return None,
        }
    }
    args.command.extend(argv);
    Some(args)
}

#[cfg(test)]
mod tests {
    //! The oracle is clap: the parser the command uses for every line, which this project did
    //! not write. A line read here must give what clap gives, field for field.

    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    use super::{Action, OPTIONS, parse};

    /// What clap makes of `argv`, as the command's own path reads it (`None`: refused).
    fn by_clap(argv: &[OsString]) -> Option<String> {
        match crate::parse_by_clap(argv.to_vec()) {
            Ok(crate::Cli {
                command: crate::Command::Stat(stat),
            }) => Some(format!("{stat:?}")),
            _ => None,
        }
    }

    fn by_lean(argv: &[OsString]) -> Option<String> {
        parse(argv.to_vec()).map(|stat| format!("{stat:?}"))
    }

    fn line(words: &[&str]) -> Vec<OsString> {
        ["counterhal", "stat"]
            .iter()
            .chain(words)
            .map(OsString::from)
            .collect()
    }

    /// Each option (by its place in [`OPTIONS`]) written every way clap reads it, with a value
    /// clap accepts.
    fn spellings() -> Vec<(usize, Vec<String>)> {
        let mut all = Vec::new();
        for (index, option) in OPTIONS.iter().enumerate() {
            let value = match option.long {
                "repeat" => "3",
                "interval-print" | "timeout" | "delay" => "100",
                "control" => "fd:10,13",
                "backend" => "linux",
                _ => "page-faults",
            };
            let long = format!("--{}", option.long);
            match option.action {
                Action::Flag(_) => {
                    all.push((index, vec![long]));
                    if let Some(short) = option.short {
                        all.push((index, vec![format!("-{short}")]));
                    }
                }
                Action::Value(_) => {
                    all.push((index, vec![long.clone(), value.to_string()]));
                    all.push((index, vec![format!("{long}={value}")]));
                    if let Some(short) = option.short {
                        all.push((index, vec![format!("-{short}"), value.to_string()]));
                        all.push((index, vec![format!("-{short}{value}")]));
                    }
                }
            }
        }
        all
    }

    #[test]
    fn the_guard_s_lines_are_read_here_as_clap_reads_them() {
        for words in [
            &["-e", "page-faults,context-switches", "--", "true"][..],
            &["-M", "Frontend_Bound", "--cpu-model", "spr", "--", "true"],
            &["--", "ls"],
            &["ls", "-l", "--", "x"],
            // A harness's line (php-src's, gungraun's) but for its -D -1, clap's.
            &[
                "--control",
                "fd:10,13",
                "-x,",
                "-e",
                "page-faults",
                "--",
                "./bench",
            ],
            &[
                "-e",
                "task-clock",
                "-e",
                "page-faults",
                "-x,",
                "-r",
                "2",
                "sleep",
                "1",
            ],
            // perf's `stat record` and `stat report`: the word and what follows are the
            // command here and in clap alike, recognised after either (stat::record).
            &["record", "-o", "-", "-e", "page-faults", "--", "true"],
            &["-x,", "report", "-i", "perf.data"],
        ] {
            let argv = line(words);
            let lean = by_lean(&argv);
            assert!(lean.is_some(), "{words:?} is left to clap");
            assert_eq!(lean, by_clap(&argv), "{words:?}");
        }
    }

    /// Every option alone and every pair, in every spelling: clap accepts each line (no rule
    /// between two options read here), and this parser gives the same arguments.
    #[test]
    fn every_option_and_every_pair_as_clap_reads_them() {
        let spellings = spellings();
        let mut lines = 0;
        for (one, first) in &spellings {
            let mut alone: Vec<&str> = first.iter().map(String::as_str).collect();
            alone.extend(["--", "true"]);
            let argv = line(&alone);
            assert!(by_clap(&argv).is_some(), "clap refuses {alone:?}");
            assert_eq!(by_lean(&argv), by_clap(&argv), "{alone:?}");
            for (other, second) in &spellings {
                let mut words: Vec<&str> = first.iter().chain(second).map(String::as_str).collect();
                words.push("true");
                let argv = line(&words);
                let lean = by_lean(&argv);
                if lean.is_some() {
                    lines += 1;
                    assert_eq!(lean, by_clap(&argv), "{words:?}");
                } else {
                    // Left to clap only when an option that is given once is given twice.
                    assert!(
                        one == other && !OPTIONS[*one].repeats,
                        "{words:?} left to clap"
                    );
                }
            }
        }
        assert!(lines > 500, "only {lines} pairs read here");
    }

    /// Random lines of these options, others, odd values and commands: whatever this parser
    /// reads, clap reads the same (and clap refuses nothing this parser accepts).
    #[test]
    fn random_lines_read_here_are_read_the_same_by_clap() {
        let mut words: Vec<OsString> = spellings()
            .into_iter()
            .flat_map(|(_, words)| words)
            .map(OsString::from)
            .collect();
        for odd in [
            "",
            "-",
            "--",
            "-e",
            "-x",
            "-r",
            "0",
            "+5",
            "05",
            "4294967296",
            "-5",
            "-D",
            "-1",
            "--control",
            "fifo:a,b",
            "=v",
            "-e=v",
            "--event=",
            "--repeat=0",
            "-ai",
            "-av",
            "-j",
            "-p",
            "1",
            "-h",
            "--help",
            "--all",
            "--cpu",
            "--backend",
            "nosuch",
            "-A",
            "true",
            "ls",
            "-l",
            "a,b",
            "{a,b}:u",
        ] {
            words.push(OsString::from(odd));
        }
        words.push(OsString::from_vec(vec![b'-', b'e', 0xff]));
        words.push(OsString::from_vec(vec![0xfe, b'x']));
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut read, mut total) = (0, 0);
        for _ in 0..20_000 {
            let n = (next() % 7) as usize;
            let mut argv = line(&[]);
            argv.extend((0..n).map(|_| words[(next() % words.len() as u64) as usize].clone()));
            total += 1;
            if let Some(lean) = by_lean(&argv) {
                read += 1;
                assert_eq!(Some(lean), by_clap(&argv), "{argv:?}");
            }
        }
        // The lines this parser reads must be a good part of them, or the test proves little.
        assert!(read * 10 > total, "only {read} of {total} lines read here");
    }

    #[test]
    fn other_subcommands_and_help_are_clap_s() {
        for argv in [
            vec!["counterhal", "list"],
            vec!["counterhal", "stat", "--help"],
            vec!["counterhal", "stat", "-h"],
            vec!["counterhal", "--version"],
            vec!["counterhal"],
        ] {
            assert!(parse(argv.iter().map(OsString::from)).is_none(), "{argv:?}");
        }
    }
}
