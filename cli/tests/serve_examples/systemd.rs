//! The systemd unit, dist/counterhal-serve.service: serve unprivileged with CAP_PERFMON
//! alone, in a sandbox that allows every system call it makes.
//!
//! Oracles: systemd-analyze (verify, the offline security review, the system-call groups);
//! strace (the system calls serve makes); the built command (the unit's arguments are ones it
//! takes, counting what the rules file reads); GNU grep (the cgroup pattern).

use std::collections::BTreeSet;
use std::process::{Command, Stdio};

use super::{
    Scratch, after, pattern_matches, read, repository, rules_file, rules_of, runs, verdict,
};
use crate::common::*;
use crate::serve::{get, served_at};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The highest overall exposure `systemd-analyze security` may give the unit (it gave 1.6
/// with systemd 252; docs/serve.md records the figure).
const MOST_EXPOSURE: f64 = 2.0;

/// The unit's directives, each with its values in order.
fn directives(unit: &str) -> Vec<(String, String)> {
    unit.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The words of the unit's ExecStart as systemd passes them with no environment file (`$$`
/// is `$`; `$NAME` is the environment file's words, none).
fn exec_start(unit: &str) -> Vec<String> {
    let (_, line) = directives(unit)
        .into_iter()
        .find(|(k, _)| k == "ExecStart")
        .expect("ExecStart");
    line.split_whitespace()
        .filter(|w| !w.starts_with('$') || w.starts_with("$$"))
        .map(|w| w.replace("$$", "$"))
        .collect()
}

/// The system calls `systemd-analyze syscall-filter` lists in `group`, its groups expanded.
fn syscall_group(group: &str) -> BTreeSet<String> {
    let out = Command::new("systemd-analyze")
        .args(["syscall-filter", "--no-pager", group])
        .output()
        .expect("run systemd-analyze");
    assert!(out.status.success(), "{group}: {}", stderr(&out));
    let mut calls = BTreeSet::new();
    for word in stdout(&out).lines().skip(1).map(str::trim) {
        if word.starts_with('@') {
            calls.extend(syscall_group(word));
        } else if !word.is_empty() && !word.starts_with('#') {
            calls.insert(word.to_string());
        }
    }
    calls
}

/// The system calls the unit's SystemCallFilter= lines allow, in order as systemd.exec(5)
/// takes them when the first is an allow list: each allow line adds its calls, each deny line
/// (`~`) takes its calls away from what the lines before allowed.
fn allowed_syscalls(unit: &str) -> BTreeSet<String> {
    let mut allowed = BTreeSet::new();
    for (_, value) in directives(unit)
        .into_iter()
        .filter(|(k, _)| k == "SystemCallFilter")
    {
        let (deny, list) = match value.strip_prefix('~') {
            Some(list) => (true, list.to_string()),
            None => (false, value),
        };
        for word in list.split_whitespace() {
            let calls = if word.starts_with('@') {
                syscall_group(word)
            } else {
                [word.to_string()].into_iter().collect()
            };
            for call in calls {
                if deny {
                    allowed.remove(&call);
                } else {
                    allowed.insert(call);
                }
            }
        }
    }
    allowed
}

fn systemd_analyze_installed() -> bool {
    runs("systemd-analyze", &["--version"])
}

/// dist/counterhal-serve.service runs serve unprivileged with CAP_PERFMON and CAP_BPF and the
/// sandbox asked for; `systemd-analyze verify` passes on it (its ExecStart pointed at the
/// built command), `systemd-analyze security --offline=yes` rates its exposure at most
/// [`MOST_EXPOSURE`], and its ExecStart's arguments are ones the built command takes,
/// counting the events the rules file reads, following each service's cgroup.
#[test]
fn unit_passes_verify_and_the_security_review() {
    let text = read(&repository("dist/counterhal-serve.service"));
    let set = directives(&text);
    let value = |key: &str| {
        set.iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(
        value("DynamicUser") == "yes" || !value("User").is_empty(),
        "not root"
    );
    for (key, expected) in [
        ("AmbientCapabilities", "CAP_PERFMON CAP_BPF"),
        ("CapabilityBoundingSet", "CAP_PERFMON CAP_BPF"),
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("ProtectKernelTunables", "yes"),
        ("ProtectControlGroups", "yes"),
        ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"),
        ("MemoryDenyWriteExecute", "yes"),
        ("LockPersonality", "yes"),
    ] {
        assert_eq!(value(key), expected, "{key}=");
    }
    assert!(
        value("PrivateUsers").is_empty(),
        "CAP_PERFMON in a user namespace opens no CPU"
    );

    let args = exec_start(&text);
    assert_eq!(args[..2], ["/usr/bin/counterhal", "serve"], "{args:?}");
    assert_eq!(rules_of(&args[1..]), rules_file().1, "{args:?}");
    let pattern = after(&args, "--cgroups").expect("--cgroups");
    assert!(
        pattern_matches(pattern, "system.slice/nginx.service"),
        "{pattern}"
    );
    assert!(!pattern_matches(pattern, "system.slice/nginx.service/x"));
    assert!(!pattern_matches(
        pattern,
        "user.slice/user-1000.slice/user@1000.service"
    ));

    if !systemd_analyze_installed() {
        skip!(
            Need::Tools,
            "systemd-analyze (Debian's systemd) is not installed"
        );
    }
    assert!(
        allowed_syscalls(&text).contains("perf_event_open"),
        "SystemCallFilter= must allow perf_event_open: {}",
        value("SystemCallFilter")
    );
    let scratch = Scratch::new("unit");
    let unit = scratch.0.join("counterhal-serve.service");
    let built = std::fs::canonicalize(bin()).unwrap();
    std::fs::write(
        &unit,
        text.replace(
            "ExecStart=/usr/bin/counterhal",
            &format!("ExecStart={}", built.display()),
        ),
    )
    .unwrap();
    let (ok, said) = verdict(Command::new("systemd-analyze").arg("verify").arg(&unit));
    assert!(
        ok && said.trim().is_empty(),
        "systemd-analyze verify: {said}"
    );

    let (ok, said) = verdict(
        Command::new("systemd-analyze")
            .args(["security", "--offline=yes", "--no-pager"])
            .arg(&unit),
    );
    if !ok && said.contains("offline") {
        skip!(
            Need::Tools,
            "systemd-analyze security --offline (systemd 250 or later) is not here: {said}"
        );
    }
    assert!(ok, "systemd-analyze security: {said}");
    let exposure: f64 = said
        .lines()
        .find_map(|l| l.split_once("Overall exposure level for counterhal-serve.service: "))
        .and_then(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no overall exposure: {said}"));
    eprintln!("systemd-analyze security --offline=yes: overall exposure {exposure}");
    assert!(
        exposure <= MOST_EXPOSURE,
        "exposure {exposure} above {MOST_EXPOSURE}: {said}"
    );
}

/// Every system call serve makes, started as the unit starts it and scraped, is one the
/// unit's SystemCallFilter= allows (a call outside it would kill the service or fail with
/// EPERM). Oracle: strace, and systemd-analyze's groups.
#[test]
fn unit_allows_every_system_call_serve_makes() {
    linux_or_skip!();
    if !systemd_analyze_installed() || !runs("strace", &["-V"]) {
        skip!(
            Need::Tools,
            "systemd-analyze (Debian's systemd) or strace is not installed"
        );
    }
    if !may_count_cpus() {
        skip!(
            Need::Privilege,
            "serve counts every CPU: root or perf_event_paranoid <= 0"
        );
    }
    let text = read(&repository("dist/counterhal-serve.service"));
    let allowed = allowed_syscalls(&text);
    let mut args = exec_start(&text)[1..].to_vec();
    let listen = args.iter().position(|a| a == "--listen").unwrap() + 1;
    args[listen] = "127.0.0.1:0".to_string();
    let scratch = Scratch::new("strace");
    let trace = scratch.0.join("trace");
    let mut strace = Command::new("strace")
        .args(["-f", "-qq", "-o"])
        .arg(&trace)
        .arg(bin())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start strace");
    let address = served_at(&mut strace);
    let mut statuses = Vec::new();
    if let Ok(address) = address {
        for path in ["/metrics", "/", "/nowhere", "/metrics"] {
            statuses.push(get(address, path, None).0);
        }
    }
    // serve is strace's child: ended, strace writes the rest of the trace and exits.
    let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", strace.id()))
        .unwrap_or_default();
    for pid in children
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
    {
        // SAFETY: kill(2) on a process this test started (strace's child), by its id.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    strace.wait().unwrap();
    let address = address.unwrap_or_else(|said| panic!("serve under strace said: {said}"));
    assert_eq!(
        statuses,
        [Some(200), Some(200), Some(404), Some(200)],
        "answers of {address}"
    );

    let mut made = BTreeSet::new();
    for line in read(&trace).lines() {
        let mut words = line.split_whitespace().skip(1);
        let word = match words.next() {
            Some("<...") => words.next().unwrap_or_default(),
            Some(word) => word,
            None => continue,
        };
        let name: String = word
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            made.insert(name);
        }
    }
    assert!(made.contains("perf_event_open"), "{made:?}");
    let outside: Vec<&String> = made.difference(&allowed).collect();
    assert!(
        outside.is_empty(),
        "system calls serve made that the unit's SystemCallFilter= denies: {outside:?}"
    );
    eprintln!(
        "serve made {} distinct system calls, all within SystemCallFilter=",
        made.len()
    );
}
