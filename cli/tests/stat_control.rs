//! `stat --control fd:CTL,ACK` and `fifo:CTL,ACK` with `-D -1`, as benchmark harnesses drive
//! perf stat (php-src's benchmark, gungraun, mmtk-core): the oracles are perf 6.1 (Debian 12's
//! linux-perf, `/usr/bin/perf`) and perf 7.2.13 (Debian sid's, in the lab's sid root), run on
//! the same client here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// How far the window's page faults may differ between two tools: the 256 pages are faulted
/// in by the same instructions under both, so what may differ is a stack page or a lazily
/// bound symbol of the C library first touched inside the window under one tool alone.
const TOLERANCE: u64 = 4;

/// The harness client (`tests/data/control_client.c`), built into a fresh directory with two
/// fifos beside it; `None` without a C compiler.
fn client() -> Option<(tempdir::Dir, PathBuf)> {
    let dir = tempdir::Dir::new();
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/control_client.c"),
    )
    .expect("the client's source");
    let program = compile_c(dir.path(), "control_client", &source, &["-O1"])?;
    for fifo in ["ctl.fifo", "ack.fifo"] {
        let made = Command::new("mkfifo")
            .arg(dir.path().join(fifo))
            .status()
            .expect("mkfifo");
        assert!(made.success());
    }
    Some((dir, program))
}

/// A directory removed when dropped.
mod tempdir {
    use std::path::{Path, PathBuf};

    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new() -> Dir {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = counterhal_conformance::fixtures::temp_dir()
                .join(format!("counterhal-control-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&path).expect("temporary directory");
            Dir(path)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `stat` (`tool` before its arguments) counting page faults of the client under `--control`
/// in `form` (`fd`: pipes on descriptors 10 to 13; `nonblocking`: the same pipes with every
/// end `O_NONBLOCK`; `fifo`: the two fifos), with `-D -1`.
fn run_client(tool: &[PathBuf], form: &str, dir: &Path, program: &Path) -> Output {
    let mut command = Command::new(program);
    let (spec, ctl, ack) = match form {
        "fd" | "nonblocking" => {
            command.arg(if form == "fd" {
                "pipes"
            } else {
                "nonblocking-pipes"
            });
            ("fd:10,13".to_string(), "11".into(), "12".into())
        }
        _ => {
            let (ctl, ack) = (dir.join("ctl.fifo"), dir.join("ack.fifo"));
            (
                format!("fifo:{},{}", ctl.display(), ack.display()),
                ctl.display().to_string(),
                ack.display().to_string(),
            )
        }
    };
    if form == "fifo" {
        command = Command::new(&tool[0]);
        command.args(&tool[1..]);
    } else {
        command.args(tool);
    }
    command
        .args([
            "stat",
            "-e",
            "page-faults",
            "--control",
            &spec,
            "-D",
            "-1",
            "-x,",
        ])
        .arg("--")
        .arg(program)
        .args(["run", &ctl, &ack])
        .env("LC_ALL", "C")
        .output()
        .expect("run stat")
}

/// The page faults counted, and what was said on standard error before the results.
fn faults_and_words(out: &Output) -> (u64, Vec<String>) {
    let text = stderr(out);
    let faults = text
        .lines()
        .find(|l| l.contains(",page-faults,"))
        .and_then(|l| l.split(',').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no count:\n{text}"));
    let words = text
        .lines()
        .filter(|l| !l.contains(',') && !l.is_empty())
        .map(str::to_string)
        .collect();
    (faults, words)
}

/// Runs the client under counterhal and under `oracle` (`fd:`, on blocking and on
/// non-blocking pipes, and `fifo:`): the client got
/// every acknowledgement (it exits 0 only after reading perf's 5 bytes, "ack\n" and its NUL,
/// after each of `enable`, `disable` and `ping`), both counted the 256 pages of the window
/// and none of the 1,000 outside it, within [`TOLERANCE`] of each other, and both said the
/// same on standard error.
fn same_window_as(oracle: &[PathBuf], name: &str) {
    let Some((dir, program)) = client() else {
        skip!(
            Need::Tools,
            "no C compiler (cc) to build the harness client"
        );
    };
    let ours = [bin()];
    for form in ["fd", "nonblocking", "fifo"] {
        let theirs = run_client(oracle, form, dir.path(), &program);
        let mine = run_client(&ours, form, dir.path(), &program);
        for (who, out) in [(name, &theirs), ("counterhal", &mine)] {
            assert_eq!(out.status.code(), Some(0), "{who} {form}: {}", stderr(out));
        }
        let (their_faults, their_words) = faults_and_words(&theirs);
        let (my_faults, my_words) = faults_and_words(&mine);
        assert_eq!(
            my_words,
            ["Events disabled", "Events enabled", "Events disabled"],
            "{form}"
        );
        assert_eq!(my_words, their_words, "{form}: {name}");
        assert!(
            (256..256 + 2 * TOLERANCE).contains(&their_faults),
            "{name} {form}: {their_faults}"
        );
        assert!(
            my_faults.abs_diff(their_faults) <= TOLERANCE,
            "{form}: counterhal {my_faults}, {name} {their_faults}"
        );
    }
}

/// perf 6.1, Debian 12's `/usr/bin/perf`, its version checked.
fn perf_6_1() -> Option<Vec<PathBuf>> {
    let out = Command::new("perf").arg("--version").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .starts_with("perf version 6.1")
        .then(|| vec![PathBuf::from("perf")])
}

/// perf 7.2 of the lab's sid root, run by the root's own loader and libraries.
fn perf_7_2() -> Option<Vec<PathBuf>> {
    let lab = std::env::var_os("COUNTERHAL_CURRENT_LAB")
        .map_or_else(|| PathBuf::from("/var/cache/counterhal-lab"), PathBuf::from);
    let root = lab.join("sid");
    let command = vec![
        root.join("lib64/ld-linux-x86-64.so.2"),
        PathBuf::from("--library-path"),
        PathBuf::from(format!(
            "{0}/lib/x86_64-linux-gnu:{0}/usr/lib/x86_64-linux-gnu",
            root.display()
        )),
        root.join("usr/bin/perf"),
    ];
    let out = Command::new(&command[0])
        .args(&command[1..])
        .arg("--version")
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .starts_with("perf version 7.2")
        .then_some(command)
}

/// Oracle: perf 6.1 (Debian 12's linux-perf 6.1), `perf stat -e page-faults --control
/// fd:10,13 -D -1 -x, -- client` and the `fifo:` form.
#[test]
fn a_harness_window_counts_as_perf_6_1_counts_it() {
    linux_or_skip!();
    let Some(perf) = perf_6_1() else {
        skip!(Need::Tools, "no perf 6.1 (Debian 12's linux-perf)");
    };
    same_window_as(&perf, "perf 6.1");
}

/// Oracle: perf 7.2.13 (Debian sid's linux-perf, the lab's sid root), as above.
#[test]
fn a_harness_window_counts_as_perf_7_2_counts_it() {
    linux_or_skip!();
    let Some(perf) = perf_7_2() else {
        skip!(
            Need::Tools,
            "no perf 7.2 in the lab's sid root (scripts/current-lab makes it)"
        );
    };
    same_window_as(&perf, "perf 7.2");
}

/// Oracle: perf 6.1 (Debian 12's linux-perf): a shell client sends what perf ignores
/// (`bogus`: no acknowledgement), `snapshot` (none either), `enable page-faults`, `enable
/// nosuch`, a malformed `enablex`, `ping`, `stop` and `disable`: six acknowledgements of 5
/// bytes and no more, and the same words on standard error as perf's.
#[test]
fn every_command_is_acknowledged_and_said_as_perf_6_1_does() {
    linux_or_skip!();
    let Some(perf) = perf_6_1() else {
        skip!(Need::Tools, "no perf 6.1 (Debian 12's linux-perf)");
    };
    let dir = tempdir::Dir::new();
    for fifo in ["ctl.fifo", "ack.fifo"] {
        assert!(
            Command::new("mkfifo")
                .arg(dir.path().join(fifo))
                .status()
                .expect("mkfifo")
                .success()
        );
    }
    let script = r#"exec 3>"$1" 4<"$2"
ack() { dd bs=5 count=1 status=none <&4 | od -An -c | tr -s ' ' >> "$3"; }
for command in bogus snapshot 'enable page-faults' 'enable nosuch' enablex ping stop disable; do
    printf '%s\n' "$command" >&3
    case $command in bogus|snapshot) ;; *) ack "$@";; esac
done
timeout 0.3 dd bs=1 count=1 status=none <&4 >> "$3"
exit 0"#;
    let ctl = dir.path().join("ctl.fifo");
    let ack = dir.path().join("ack.fifo");
    let spec = format!("fifo:{},{}", ctl.display(), ack.display());
    let run = |tool: &[PathBuf], acks: &Path| {
        let out = Command::new(&tool[0])
            .args(&tool[1..])
            .args([
                "stat",
                "-e",
                "page-faults",
                "--control",
                &spec,
                "-D",
                "-1",
                "-x,",
            ])
            .args(["--", "sh", "-c", script, "sh"])
            .args([&ctl, &ack, acks])
            .env("LC_ALL", "C")
            .output()
            .expect("run stat");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let written = std::fs::read_to_string(acks).expect("the acknowledgements");
        (faults_and_words(&out).1, written)
    };
    let (their_words, their_acks) = run(&perf, &dir.path().join("perf.acks"));
    let (my_words, my_acks) = run(&[bin()], &dir.path().join("ours.acks"));
    assert_eq!(their_acks, " a c k \\n \\0\n".repeat(6), "perf 6.1");
    assert_eq!(my_acks, their_acks);
    assert_eq!(
        my_words,
        [
            "Events disabled",
            "Event page-faults enabled",
            "failed: can't find 'nosuch' event",
            "failed: wrong command",
            "Events disabled"
        ]
    );
    assert_eq!(my_words, their_words);
}

/// Bad specs are refused before the command runs (exit 2), naming what is wrong.
#[test]
fn a_control_spec_perf_would_not_read_is_refused() {
    linux_or_skip!();
    for (spec, says) in [
        ("pipe:3", "neither fd: nor fifo:"),
        ("fd:x", "`x` is no descriptor number"),
        ("fd:987654", "not an open descriptor"),
        ("fifo:/nonexistent/ctl", "cannot open `/nonexistent/ctl`"),
    ] {
        let out = ours(&["-e", "page-faults", "--control", spec, "--", "true"]);
        assert_eq!(out.status.code(), Some(2), "{spec}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{spec}: {}", stderr(&out));
    }
}
