//! Event sets as tools build and run them: adding events one at a time costs one open per
//! event (strace, counting the `perf_event_open` calls, is the witness), and a process whose
//! threads come and go is counted round after round without an error.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use counterhal::ErrorKind;
use counterhal::OpenOptions;
use counterhal::advanced::MultiSet;
use counterhal::prelude::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// Set in a copy of this test binary run under strace: the adds to count.
const CHILD_ADDS: &str = "COUNTERHAL_TEST_SET_ADDS";
/// Set in a copy of this test binary run under strace: the regions' events to count.
const CHILD_REGIONS: &str = "COUNTERHAL_TEST_SET_REGIONS";
/// Set in a copy of this test binary that only spawns and joins threads until killed.
const CHILD_THREADS: &str = "COUNTERHAL_TEST_SET_THREADS";

fn backend() -> Option<Chosen> {
    open_default()
        .ok()
        .filter(|chosen| chosen.resolve("task-clock").is_ok())
}

/// Up to `n` tracepoints that open cheaply (not `syscalls`, whose every open waits for the
/// kernel to patch the syscall path), as `subsystem:event`.
fn cheap_tracepoints(n: usize) -> Vec<String> {
    let events = Path::new("/sys/kernel/tracing/events");
    let mut found = Vec::new();
    for system in [
        "sched",
        "timer",
        "irq",
        "signal",
        "task",
        "workqueue",
        "kmem",
    ] {
        let Ok(entries) = std::fs::read_dir(events.join(system)) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("id").is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        found.extend(names.into_iter().map(|name| format!("{system}:{name}")));
    }
    found.truncate(n);
    found
}

/// The `perf_event_open` calls strace saw in `log` (one line per call, `-f`).
fn opens_in(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains("perf_event_open("))
        .count()
}

/// Adds `names` to one set of the calling thread (the child's part of the test below),
/// opens it and counts once; prints how many adds were taken.
fn add_each_then_count(names: &[String]) {
    let backend = backend().expect("the parent checked the backend");
    let mut builder = backend.builder(Target::ThisThread, OpenOptions::default());
    let added = names.iter().filter(|n| builder.add(n).is_ok()).count();
    let mut set = builder.open().expect("the added events open together");
    set.enable().unwrap();
    set.disable().unwrap();
    set.read_to_vec().unwrap();
    println!("added {added}");
}

/// Enters and leaves one region counting `names` (the child's part of the regions test):
/// prints how many events the regions count.
fn regions_count(names: &[String]) {
    let backend = backend().expect("the parent checked the backend");
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let regions = counterhal::region::Regions::new(backend.into_backend(), &names);
    regions.begin("r").unwrap();
    regions.end("r").unwrap();
    println!("added {}", regions.events().len());
}

/// Three software events and up to 60 tracepoints, or why this machine cannot give 40.
fn many_events() -> Result<Vec<String>, String> {
    // Tracepoints need tracefs, which the library does not mount unasked.
    let _ = counterhal_conformance::fixtures::tracefs_mounted();
    let mut names: Vec<String> = ["page-faults", "task-clock", "context-switches"]
        .map(String::from)
        .to_vec();
    names.extend(cheap_tracepoints(60));
    if names.len() < 40 {
        return Err(format!(
            "needs root and tracefs for 40 tracepoints, found {}",
            names.len()
        ));
    }
    Ok(names)
}

/// Runs this test binary's test `test` again under strace with `names` in `child_key`; checks
/// that every event was taken and that there were at most two `perf_event_open` calls per
/// event (and a few of the backend's own probe).
fn opens_at_most_twice_each(test: &str, child_key: &str, names: &[String]) {
    let log = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-{test}-{}.strace", std::process::id()));
    let run = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=perf_event_open", "-o"])
        .arg(&log)
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", &format!("sets::{test}"), "--nocapture"])
        .env(child_key, names.join(","))
        .output();
    let Ok(out) = run else {
        skip!(
            Need::Tools,
            "strace is not installed (apt-get install strace)"
        );
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let added: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("added ")?.parse().ok())
        .unwrap_or_else(|| panic!("no count of adds printed:\n{stdout}"));
    let opens = opens_in(&log);
    let _ = std::fs::remove_file(&log);
    eprintln!("{opens} perf_event_open calls for {} events", names.len());
    assert_eq!(added, names.len(), "every event is taken");
    // Each add opens its event once, the set opens each once more; the backend's probe opens
    // a few of its own.
    let bound = 2 * names.len() + 10;
    assert!(
        opens <= bound,
        "{opens} perf_event_open calls for {} events (at most {bound})",
        names.len()
    );
}

/// The body of the two tests below: in the child (`child_key` set), `child` over the names;
/// in the parent, this test again under strace with the names, counting the opens.
fn at_most_two_opens_each(test: &str, child_key: &str, child: fn(&[String])) {
    if let Ok(names) = std::env::var(child_key) {
        let names: Vec<String> = names.split(',').map(str::to_string).collect();
        return child(&names);
    }
    if backend().is_none() {
        skip!(Need::System, "no backend here counts software events");
    }
    let names = match many_events() {
        Ok(names) => names,
        Err(reason) => skip!(Need::Privilege, "{reason}"),
    };
    opens_at_most_twice_each(test, child_key, &names);
}

#[test]
fn adding_n_events_opens_each_at_most_twice() {
    at_most_two_opens_each(
        "adding_n_events_opens_each_at_most_twice",
        CHILD_ADDS,
        add_each_then_count,
    );
}

/// `Regions::new` checks each event beside the others as `EventSetBuilder::add` does, and the
/// first region of a thread opens them: two opens per event, not the whole set again at each
/// (`COUNTERHAL_REGION_EVENTS` with 40 tracepoints made the first region take 34 s).
#[test]
fn regions_of_n_events_open_each_at_most_twice() {
    at_most_two_opens_each(
        "regions_of_n_events_open_each_at_most_twice",
        CHILD_REGIONS,
        regions_count,
    );
}

/// A copy of this test binary that spawns and joins short-lived threads until killed.
fn spawn_thread_churner() -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sets::a_process_whose_threads_come_and_go_is_counted_without_an_error",
            "--nocapture",
        ])
        .env(CHILD_THREADS, "1")
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Spawns and joins threads, a few at a time, each touching a page, forever.
fn churn_threads() -> ! {
    loop {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    std::hint::black_box(vec![1u8; 8192]);
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    }
}

#[test]
fn a_process_whose_threads_come_and_go_is_counted_without_an_error() {
    if std::env::var_os(CHILD_THREADS).is_some() {
        churn_threads();
    }
    let Some(backend) = backend() else {
        skip!(Need::System, "no backend here counts software events");
    };
    let mut names = vec!["page-faults", "task-clock", "context-switches"];
    if backend.resolve("sched:sched_switch").is_ok() {
        names.push("sched:sched_switch");
    }
    let events: Vec<_> = names.iter().map(|n| backend.resolve(n).unwrap()).collect();
    let mut child = spawn_thread_churner();
    let attach = Target::Process(child.id());
    let mut errors = Vec::new();
    let mut readings = vec![Reading::default(); events.len()];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(8);
    let mut rounds = 0;
    while rounds < 2000 && std::time::Instant::now() < deadline {
        rounds += 1;
        let round = (|| -> counterhal::Result<()> {
            let mut set = MultiSet::open(
                &backend,
                &events,
                &attach,
                &OpenOptions::default(),
                &counterhal::system::System::host(),
            )?;
            set.enable()?;
            let mut last = vec![0u64; events.len()];
            for _ in 0..3 {
                set.read(&mut readings)?;
                for ((reading, last), name) in readings.iter().zip(&mut last).zip(&names) {
                    let total = reading.value;
                    assert!(
                        total >= *last,
                        "{name} went down from {last} to {total} while enabled"
                    );
                    *last = total;
                }
            }
            set.disable()?;
            set.read(&mut readings)?;
            set.read_each()?;
            Ok(())
        })();
        if let Err(e) = round {
            errors.push(e.to_string());
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        errors.is_empty(),
        "{} of {rounds} rounds failed; first: {:?}",
        errors.len(),
        errors.iter().take(5).collect::<Vec<_>>()
    );
}

/// A group holds at most what the kernel reads in one go (16 KiB: 1,022 events with their
/// ids and times): the add past that is refused by name, and the set keeps what it took and
/// opens. Adds of software events are tried alone, so before the backend's limit was known to
/// the adds, every add passed and the whole set then failed to open (with a misleading E2BIG
/// "attr size" message).
#[test]
fn an_add_past_the_kernel_s_group_limit_is_refused_and_the_set_still_opens() {
    let Some(backend) = backend() else {
        skip!(Need::System, "no backend here counts software events");
    };
    let Some(limit) = backend.capabilities().max_group_events() else {
        skip!(Need::Platform, "this backend has no group limit");
    };
    let mut builder = backend.builder(Target::ThisThread, OpenOptions::default());
    // Distinct software events: task-clock with config1 values the event ignores.
    for i in 0..limit {
        builder
            .add(&format!("software/config=1,config1={i}/"))
            .unwrap_or_else(|e| panic!("add {i}: {e}"));
    }
    let error = builder
        .add(&format!("software/config=1,config1={limit}/"))
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable, "{error}");
    assert!(
        error
            .to_string()
            .contains(&format!("at most {limit} events")),
        "{error}"
    );
    let mut set = builder.open().expect("the events added open together");
    set.enable().unwrap();
    set.disable().unwrap();
    let readings = set.read_to_vec().unwrap();
    assert_eq!(readings.len(), limit as usize);
}
