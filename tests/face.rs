//! The library's face as a tool author meets it: a glob import that just works, groups that
//! move between threads, event sets built one event at a time, and questions about one name.

use counterhal::advanced::{AnyBackend, BackendTarget};
use counterhal::prelude::*;
use counterhal::{Section, list_events};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The first backend that works here, counting this thread's software events.
fn backend() -> Option<Chosen> {
    open_default(None)
        .ok()
        .filter(|chosen| chosen.resolve("page-faults").is_ok())
}

macro_rules! backend_or_skip {
    () => {
        match backend() {
            Some(backend) => backend,
            None => skip!(Need::System, "no backend here counts software events"),
        }
    };
}

#[test]
fn a_glob_import_gives_every_method_without_ambiguity() {
    let backend = backend_or_skip!();
    // Backend's methods on what open_default returns, with DynBackend in scope too.
    let event = backend.resolve("page-faults").unwrap();
    assert_eq!(event.name, "page-faults");
    assert!(!backend.label().is_empty());
    assert!(!backend.name().is_empty());
    assert!(backend.capabilities().supports(&BackendTarget::ThisThread));
    // The database and CPU model it resolves against are reachable.
    assert!(backend.context.database.models().count() > 0);
    let touched: Vec<u8> = vec![1; 1 << 20];
    let mut set = backend
        .open_named(
            &["page-faults"],
            &Target::ThisThread,
            &OpenOptions::default(),
        )
        .unwrap();
    set.enable().unwrap();
    std::hint::black_box(vec![2u8; 4 << 20]);
    set.disable().unwrap();
    assert!(set.read_to_vec().unwrap()[0].value > 0);
    drop(touched);
}

#[test]
fn boxed_groups_move_to_another_thread() {
    fn is_send<T: Send>(_: &T) {}
    let backend = backend_or_skip!();
    let mut group = backend
        .open(
            &[backend.resolve("task-clock").unwrap().terms[0]
                .request
                .clone()],
            &BackendTarget::ThisThread,
            &OpenOptions::default(),
        )
        .unwrap();
    is_send(&group);
    group.enable().unwrap();
    let spin = std::time::Instant::now();
    while spin.elapsed() < std::time::Duration::from_millis(5) {
        std::hint::black_box(0);
    }
    // Read on another thread: a sampling thread may read the counted thread's group.
    let value = std::thread::spawn(move || {
        group.disable().unwrap();
        group.read_to_vec().unwrap()[0].value
    })
    .join()
    .unwrap();
    assert!(value > 0, "task-clock read {value} on the other thread");
}

#[test]
fn event_sets_take_events_one_at_a_time_with_a_result_each() {
    let backend = backend_or_skip!();
    let mut builder = backend.builder(Target::this_thread(), OpenOptions::default());
    assert_eq!(builder.add("page-faults").unwrap(), 0);
    let unknown = builder.add("page-faultz").unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::InvalidEvent);
    assert!(unknown.message().contains("page-faults"), "{unknown}");
    assert_eq!(builder.add("task-clock").unwrap(), 1);
    let twice = builder.add("page-faults").unwrap_err();
    assert_eq!(twice.kind(), ErrorKind::InvalidInput);
    let results = builder.add_all(&["context-switches", "nothing-here", "cpu-migrations"]);
    assert_eq!(results[0].as_ref().ok(), Some(&2));
    assert!(results[1].is_err());
    assert_eq!(results[2].as_ref().ok(), Some(&3));
    builder.remove("task-clock").unwrap();
    assert!(builder.remove("task-clock").is_err());
    let names: Vec<&str> = builder.events().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["page-faults", "context-switches", "cpu-migrations"]);
    let mut set = builder.open().unwrap();
    set.enable().unwrap();
    std::hint::black_box(vec![3u8; 4 << 20]);
    set.disable().unwrap();
    let readings = set.read_to_vec().unwrap();
    assert_eq!(readings.len(), 3);
    assert!(readings[0].value > 0);
    let empty = backend.builder(Target::this_thread(), OpenOptions::default());
    assert_eq!(
        empty.open().err().map(|e| e.kind()),
        Some(ErrorKind::InvalidInput)
    );
}

/// Every way a program holds the chosen backend builds a set: the `Chosen` itself, its box,
/// and the boxed backend's trait object (`&*chosen.backend`, once refused with E0277); each
/// set counts what it should (the oracle: the kernel faults once on each of 1,024 fresh 4 KiB
/// pages first written, fresh because glibc maps an allocation over 32 MiB anew).
#[test]
fn every_handle_on_the_backend_builds_a_set() {
    let backend = backend_or_skip!();
    let faults = |mut set: EventSet<AnyGroup>| {
        set.enable().unwrap();
        let mut fresh = vec![0u8; 33 << 20];
        // One fault a page: no transparent huge page (a 2 MiB fault for 512 pages where the
        // kernel's policy is `always`, as Debian's arm64 kernel in the lab has it).
        #[cfg(target_os = "linux")]
        {
            let start = (fresh.as_ptr() as usize).next_multiple_of(4096);
            let end = (fresh.as_ptr() as usize + fresh.len()) & !4095;
            // SAFETY: advice on whole pages inside the vector, which keeps them mapped.
            let advised = unsafe {
                libc::madvise(
                    start as *mut libc::c_void,
                    end - start,
                    libc::MADV_NOHUGEPAGE,
                )
            };
            assert_eq!(advised, 0, "madvise: {}", std::io::Error::last_os_error());
        }
        for page in 0..1024 {
            fresh[page * 4096] = 1;
        }
        std::hint::black_box(&fresh);
        set.disable().unwrap();
        set.read_to_vec().unwrap()[0].value
    };
    let this = Target::this_thread();
    let options = OpenOptions::default();
    let builders = [
        faults({
            let mut b = EventSetBuilder::new(&backend, this.clone(), options);
            b.add("page-faults").unwrap();
            b.open().unwrap()
        }),
        faults({
            let mut b = EventSetBuilder::new(&backend.backend, this.clone(), options);
            b.add("page-faults").unwrap();
            b.open().unwrap()
        }),
        faults({
            let mut b = EventSetBuilder::new(&*backend.backend, this.clone(), options);
            b.add("page-faults").unwrap();
            b.open().unwrap()
        }),
    ];
    for counted in builders {
        assert!(counted >= 1024, "{counted} page faults");
    }
}

/// The face's sets over the Linux backend read its own group, without dynamic dispatch (the
/// read path `scripts/instruction-guard` counts); a process's threads read as their sum.
#[cfg(target_os = "linux")]
#[test]
fn the_linux_backend_is_read_without_a_box() {
    let backend = backend_or_skip!();
    if backend.name() != "linux" {
        skip!(Need::System, "the Linux backend is not the one chosen here");
    }
    let set = backend
        .open_named(
            &["page-faults"],
            &Target::this_thread(),
            &OpenOptions::default(),
        )
        .unwrap();
    assert!(
        matches!(set.group(), AnyGroup::Linux(_)),
        "{:?}",
        set.group()
    );
    let process = Target::process(std::process::id());
    let set = backend
        .open_named(&["page-faults"], &process, &OpenOptions::default())
        .unwrap();
    assert!(
        matches!(set.group(), AnyGroup::Targets(_)),
        "{:?}",
        set.group()
    );
}

#[test]
fn a_query_says_whether_a_name_exists_and_counts_here() {
    let backend = backend_or_skip!();
    let known = query(&*backend, "page-faults");
    assert!(known.exists() && known.usable(), "{known:?}");
    let unknown = query(&*backend, "page-faultz");
    assert!(!unknown.exists() && !unknown.usable());
    // A hardware event on a machine without a PMU exists but is not usable, with the reason.
    let cycles = query(&*backend, "cycles");
    assert!(cycles.exists());
    if let Err(why) = &cycles.countable {
        assert!(!why.message().is_empty());
    }
}

#[test]
fn the_listing_says_section_encoding_and_whether_each_event_counts_here() {
    let backend = backend_or_skip!();
    let listed = list_events(&backend.context, Ok(&backend.backend), "");
    let faults = listed.iter().find(|l| l.name == "page-faults").unwrap();
    assert_eq!(faults.section, Section::Software);
    assert!(faults.usable, "{faults:?}");
    assert!(faults.encoding.as_deref().is_some_and(|e| !e.is_empty()));
    // Sections come in order, and every unusable event says why.
    assert!(listed.windows(2).all(|w| w[0].section <= w[1].section));
    for entry in listed.iter().filter(|l| !l.usable) {
        assert!(entry.reason.is_some(), "{entry:?}");
    }
    // A derived preset shows its terms joined by their signs.
    if let Some(derived) = listed.iter().find(|l| {
        l.section == Section::Preset
            && l.encoding
                .as_deref()
                .is_some_and(|e| e.contains(" + ") || e.contains(" - "))
    }) {
        assert!(backend.resolve(&derived.name).unwrap().is_derived());
    }
    let filtered = list_events(&backend.context, Ok(&backend.backend), "PAGE-FAULT");
    assert!(!filtered.is_empty());
    assert!(
        filtered
            .iter()
            .all(|l| l.name.to_ascii_lowercase().contains("page-fault")
                || l.description.to_ascii_lowercase().contains("page-fault"))
    );
    let none = list_events::<AnyBackend>(&backend.context, Err("no backend works here"), "");
    assert!(
        none.iter()
            .all(|l| !l.usable && l.reason.as_deref() == Some("no backend works here"))
    );
}

/// A command by name, from its `exec`: `true` faults in its pages (the oracle: perf stat
/// -e page-faults counts dozens for `/bin/true`) and ends with status 0; an unknown name is
/// refused before the command starts.
#[cfg(unix)]
#[test]
fn a_command_is_counted_by_name() {
    let backend = backend_or_skip!();
    let count = backend
        .count_command(
            &["page-faults", "task-clock"],
            std::process::Command::new("true"),
            &OpenOptions::ungrouped(),
        )
        .unwrap();
    assert!(count.exit.status.success(), "{:?}", count.exit);
    let faults = count.readings[0].as_ref().unwrap().value;
    assert!(faults >= 10, "{faults} page faults for true");
    let unknown = backend
        .count_command(
            &["page-faultz"],
            std::process::Command::new("true"),
            &OpenOptions::ungrouped(),
        )
        .unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::InvalidEvent);
}

/// When a group of a command's events cannot open, each event's error names that event, and
/// the others say which event took them down: seventeen breakpoints in one group are more
/// than any CPU has debug registers for (x86 has 4, Arm64 from 2 to 16; the kernel answers
/// ENOSPC, as `perf stat -e '{mem:...}'` shows).
#[cfg(unix)]
#[test]
fn a_failed_group_names_each_event_and_the_one_that_failed() {
    let backend = backend_or_skip!();
    let breakpoints: Vec<String> = (0..17)
        .map(|i| format!("mem:{:#x}", 0x1000 + 8 * i))
        .collect();
    if backend.resolve(&breakpoints[0]).is_err() {
        skip!(Need::System, "this backend has no breakpoints");
    }
    let mut names = vec!["page-faults"];
    names.extend(breakpoints.iter().map(String::as_str));
    let count = backend
        .count_command(
            &names,
            std::process::Command::new("true"),
            &OpenOptions::grouped(),
        )
        .unwrap();
    let first = count.readings[0].as_ref().unwrap_err().to_string();
    assert!(first.starts_with("page-faults: not counted"), "{first}");
    let failed: Vec<String> = count.readings[1..]
        .iter()
        .map(|r| r.as_ref().unwrap_err().to_string())
        .collect();
    let culprits: Vec<&String> = failed
        .iter()
        .filter(|e| !e.contains("not counted"))
        .collect();
    assert_eq!(culprits.len(), 1, "{failed:#?}");
    let culprit = culprits[0].split(':').take(2).collect::<Vec<_>>().join(":");
    assert!(first.contains(&culprit), "{first} / {culprit}");
    for (name, error) in names[1..].iter().zip(&failed) {
        assert!(error.starts_with(&format!("{name}:")), "{name}: {error}");
    }
}

/// A name given twice is refused by `open_named` and `count_command` as the builder refuses
/// it, before anything opens.
#[test]
fn a_name_given_twice_is_refused_everywhere() {
    let backend = backend_or_skip!();
    let twice = ["page-faults", "task-clock", "page-faults"];
    let e = backend
        .open_named(&twice, &Target::this_thread(), &OpenOptions::grouped())
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(
        e.to_string()
            .contains("`page-faults` is in the set already"),
        "{e}"
    );
    #[cfg(unix)]
    {
        let e = backend
            .count_command(
                &twice,
                std::process::Command::new("true"),
                &OpenOptions::grouped(),
            )
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    }
    let mut builder = backend.builder(Target::this_thread(), OpenOptions::grouped());
    builder.add("page-faults").unwrap();
    let e = builder.add("page-faults").unwrap_err();
    assert_eq!(
        e.to_string(),
        backend
            .open_named(&twice, &Target::this_thread(), &OpenOptions::grouped())
            .err()
            .unwrap()
            .to_string()
    );
}
