//! Events files as a user may name them: anything that is not a regular file of sane size is
//! refused at once, and a large file loads in time linear in its size.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use counterhal_events::{Database, MAX_EVENTS_FILE_BYTES};
use counterhal_hal::ErrorKind;
use counterhal_time::thread_cpu_ns;

fn scratch(name: &str) -> PathBuf {
    counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-files-{}-{name}", std::process::id()))
}

/// Loads `path` as a user file on a thread, failing the test if that takes over 20 s (a FIFO
/// read would wait forever, `/dev/zero` would fill memory).
fn load_within_limit(path: &Path) -> Result<Database, counterhal_hal::Error> {
    let (sender, receiver) = mpsc::channel();
    let owned = path.to_path_buf();
    std::thread::spawn(move || {
        let shipped = Database::shipped().unwrap();
        sender.send(shipped.with_user_file(&owned)).ok();
    });
    receiver
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("loading {} did not end", path.display()))
}

#[test]
fn only_regular_files_of_sane_size_are_read() {
    let fifo = scratch("fifo.toml");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let mut refused: Vec<(PathBuf, &str)> = vec![
        (
            counterhal_conformance::fixtures::temp_dir(),
            "is a directory",
        ),
        (
            PathBuf::from("/nonexistent/events.toml"),
            "cannot read events file",
        ),
    ];
    if made.is_ok_and(|s| s.success()) {
        refused.push((fifo.clone(), "not a regular file"));
    }
    if Path::new("/dev/zero").exists() {
        refused.push((PathBuf::from("/dev/zero"), "not a regular file"));
    }
    // A sparse file one byte over the limit: refused before a byte is read.
    let huge = scratch("huge.toml");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(MAX_EVENTS_FILE_BYTES + 1)
        .unwrap();
    let too_big = format!("larger than {} MiB", MAX_EVENTS_FILE_BYTES >> 20);
    refused.push((huge.clone(), &too_big));
    for (path, why) in &refused {
        let error = load_within_limit(path)
            .err()
            .unwrap_or_else(|| panic!("{path:?} loaded"));
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
        assert!(error.message().contains(why), "{path:?}: {error}");
        assert!(
            error.message().contains(&path.display().to_string()),
            "{error}"
        );
    }
    std::fs::remove_file(&fifo).ok();
    std::fs::remove_file(&huge).ok();
}

/// A user file with one model of `events` events.
fn many_events(events: usize) -> String {
    let mut text = String::from(
        "[[cpu]]\nid = \"many\"\nencoder = \"amd64\"\n\
         pmu = { general_counters = 6, counter_width = 48 }\n",
    );
    for i in 0..events {
        text.push_str(&format!("[[cpu.event]]\nname = \"EV{i}\"\ncode = 0x76\n"));
    }
    text
}

/// The CPU time this thread takes to load a user file of `events` events: its own time, which
/// the tests running beside it on other threads (and their commands) do not lengthen, as they
/// would the time on a clock.
fn load_time(events: usize) -> Duration {
    let text = many_events(events);
    let shipped = Database::shipped().unwrap();
    let start = thread_cpu_ns();
    let db = shipped.with_toml_str("many.toml", &text).unwrap();
    let took = Duration::from_nanos(thread_cpu_ns() - start);
    assert!(db.model("many").is_some());
    took
}

/// Four times the events take about four times as long (a quadratic loader took 16 times):
/// compared within one run, the best of three each, never against a fixed time.
#[test]
fn loading_is_linear_in_the_number_of_events() {
    let best = |events| (0..3).map(|_| load_time(events)).min().unwrap();
    let small = best(4_000);
    let large = best(16_000);
    let ratio = large.as_secs_f64() / small.as_secs_f64();
    eprintln!("4,000 events {small:?}, 16,000 events {large:?}: {ratio:.1}x");
    assert!(
        ratio < 9.0,
        "16,000 events took {ratio:.1}x the time of 4,000"
    );
}
