//! The library's face as a tool author meets it: a glob import that just works, groups that
//! move between threads, event sets built one event at a time, and questions about one name.

use counterhal::ErrorKind;
use counterhal::OpenOptions;
use counterhal::Place;
use counterhal::advanced::AnyBackend;
use counterhal::advanced::BackendTarget;
use counterhal::advanced::Encoding;
use counterhal::prelude::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use counterhal_events::listing::{Section, list_events};

/// The first backend that works here, counting this thread's software events.
fn backend() -> Option<Chosen> {
    open_default()
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
    assert!(backend.context().database().models().count() > 0);
    let touched: Vec<u8> = vec![1; 1 << 20];
    let mut set = backend
        .open_named(
            &["page-faults"],
            &Target::ThisThread,
            &OpenOptions::default(),
        )
        .unwrap();
    set.enable().unwrap();
    touch_fresh_pages(1024);
    set.disable().unwrap();
    assert!(set.read_to_vec().unwrap()[0].value > 0);
    drop(touched);
}

#[test]
fn boxed_groups_move_to_another_thread() {
    fn is_send<T: Send>(_: &T) {}
    let backend = backend_or_skip!();
    let mut group = counterhal_hal::Backend::open(
        &backend,
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
    touch_fresh_pages(1024);
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

/// Writes one byte to each of `pages` fresh 4 KiB pages: the kernel's page-fault handler
/// counts at least one fault for each (`perf stat -e page-faults` reads the same count).
/// Fresh because glibc maps an allocation over 32 MiB anew; one fault a page because the pages
/// are advised away from transparent huge pages (one 2 MiB fault for 512 pages where the
/// kernel's policy is `always`, as Debian's arm64 kernel in the lab has it).
fn touch_fresh_pages(pages: usize) {
    let mut fresh = vec![0u8; (33 << 20).max(pages * 4096 + 4096)];
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
    for page in 0..pages {
        fresh[page * 4096] = 1;
    }
    std::hint::black_box(&fresh);
}

/// Every way a program opens a set on the chosen backend counts what it should: the builder,
/// names, and events already resolved (the oracle: [`touch_fresh_pages`]).
#[test]
fn every_way_to_open_a_set_counts() {
    let backend = backend_or_skip!();
    let faults = |mut set: EventSet<AnyGroup>| {
        set.enable().unwrap();
        touch_fresh_pages(1024);
        set.disable().unwrap();
        set.read_to_vec().unwrap()[0].value
    };
    let this = Target::this_thread();
    let options = OpenOptions::default();
    let builders = [
        faults({
            let mut b = backend.builder(this.clone(), options);
            b.add("page-faults").unwrap();
            b.open().unwrap()
        }),
        faults(
            backend
                .open_named(&["page-faults"], &this, &options)
                .unwrap(),
        ),
        faults({
            let events = vec![backend.resolve("page-faults").unwrap()];
            backend.open_events(events, &this, &options).unwrap()
        }),
    ];
    for counted in builders {
        assert!(counted >= 1024, "{counted} page faults");
    }
}

/// The face's set on one place reads the backend's own group (boxed: the face names no
/// backend), which the Linux backend lets be read through a shared reference (the reads of
/// `SharedReads`); a process's threads read as their sum.
#[cfg(target_os = "linux")]
#[test]
fn one_place_reads_the_backends_group_and_a_process_its_sum() {
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
        matches!(set.group(), AnyGroup::Boxed(_)),
        "{:?}",
        set.group()
    );
    assert!(counterhal::Group::shared_read(set.group()).is_some());
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
    let known = query(&backend, "page-faults");
    assert!(known.exists() && known.usable(), "{known:?}");
    let unknown = query(&backend, "page-faultz");
    assert!(!unknown.exists() && !unknown.usable());
    // A hardware event on a machine without a PMU exists but is not usable, with the reason.
    let cycles = query(&backend, "cycles");
    assert!(cycles.exists());
    if let Err(why) = &cycles.countable {
        assert!(!why.message().is_empty());
    }
}

#[test]
fn the_listing_says_section_encoding_and_whether_each_event_counts_here() {
    let backend = backend_or_skip!();
    let listed = list_events(
        backend.context().database(),
        backend.context().model(),
        Ok(backend.backend()),
        "",
    );
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
    let filtered = list_events(
        backend.context().database(),
        backend.context().model(),
        Ok(backend.backend()),
        "PAGE-FAULT",
    );
    assert!(!filtered.is_empty());
    assert!(
        filtered
            .iter()
            .all(|l| l.name.to_ascii_lowercase().contains("page-fault")
                || l.description.to_ascii_lowercase().contains("page-fault"))
    );
    let none = list_events::<AnyBackend>(
        backend.context().database(),
        backend.context().model(),
        Err("no backend works here"),
        "",
    );
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

/// The face is small: at most 150 items reachable through `counterhal` in its rustdoc (its
/// own and those it re-exports, each once), and no crate re-exported whole into it. The
/// oracle is rustdoc's own list of the crate's items (`all.html`). History: 638 items when
/// the vocabulary crates were re-exported into it; 266 at public paths (scripts/public-api's
/// walk) when `counterhal-hal` and `counterhal-events` were its modules `counterhal::hal` and
/// `counterhal::events`; now the backend's vocabulary and the event database are their own
/// crates' documentation (for backend authors), and the facade re-exports of them only what a
/// program that counts needs.
#[test]
fn the_face_has_at_most_150_items() {
    if !std::path::Path::new(env!("CARGO")).exists() {
        // The aarch64 lab runs this binary in a guest that has no Rust toolchain.
        skip!(
            Need::Tools,
            "cargo ({}) is not on this machine",
            env!("CARGO")
        );
    }
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("face-doc");
    let doc = std::process::Command::new(env!("CARGO"))
        .args([
            "doc",
            "-p",
            "counterhal",
            "--no-deps",
            "--quiet",
            "--target-dir",
        ])
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("RUSTDOCFLAGS")
        .status()
        .expect("cargo runs");
    assert!(doc.success(), "cargo doc failed");
    let all = std::fs::read_to_string(out.join("doc/counterhal/all.html")).unwrap();
    let mut items: Vec<&str> = all
        .split("<li><a href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter(|href| href.ends_with(".html"))
        .map(|href| href.rsplit('/').next().unwrap_or(href))
        .collect();
    items.sort_unstable();
    items.dedup();
    println!("{} items through counterhal", items.len());
    assert!(items.len() > 30, "the list was not read: {items:?}");
    assert!(items.len() <= 150, "{} items: {items:?}", items.len());
    let index = std::fs::read_to_string(out.join("doc/counterhal/index.html")).unwrap();
    let crates = ["hal", "events", "system", "process", "x86", "time"];
    for krate in crates.into_iter().chain(counterhal::registry::names()) {
        for whole in [" as ", "::*", ";"] {
            assert!(
                !index.contains(&format!("<code>pub use counterhal_{krate}{whole}")),
                "counterhal_{krate} is re-exported whole"
            );
        }
    }
}

/// What a program that counts depends on is the facade's list of what it promises
/// (`api/counterhal.txt`, which `scripts/public-api --check` holds to rustdoc's JSON of the
/// sources): every item at the facade's paths in full, wherever it is defined, at most 1,842
/// lines (the facade's list when it last re-exported the vocabulary's types one by one; the
/// facade's and its whole re-exported crates' lists were 2,414 together). The backend's
/// vocabulary, the database and the system's facts keep their own lists, for backend
/// authors. The oracle is that list and the three beside it.
#[test]
fn the_facades_list_is_at_most_1842_lines() {
    let api = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("api");
    let facade = std::fs::read_to_string(api.join("counterhal.txt")).unwrap();
    let lines = facade.lines().count();
    assert!(lines <= 1842, "api/counterhal.txt has {lines} lines");
    // Nothing is listed as a pointer into another crate's list: the facade's is whole.
    let pointers: Vec<&str> = facade
        .lines()
        .filter(|l| l.starts_with("pub use ") && l.contains("= counterhal_"))
        .collect();
    assert!(pointers.is_empty(), "listed elsewhere: {pointers:?}");
    // Re-exported items are there in full: the hal's `EventSet` with its methods.
    assert!(facade.contains("pub fn counterhal::EventSet::events(&self)"));
    for list in [
        "counterhal-hal.txt",
        "counterhal-events.txt",
        "counterhal-system.txt",
    ] {
        let own = std::fs::read_to_string(api.join(list)).unwrap();
        assert!(own.lines().count() > 100, "api/{list} was not written");
    }
}

/// A CPU model is chosen by id or by perf's signature, as `--cpu-model` takes it, and names
/// resolve against it (the oracle for Skylake's INST_RETIRED.ANY_P, event 0xc0, is the SDM's
/// table and libpfm4's `skl` encoding, 0x4300c0 with USR and OS; on Arm, the Neoverse N1's
/// INST_RETIRED is the architectural event 0x08 of the Arm ARM's PMUv3 table).
#[test]
fn a_cpu_model_is_chosen_by_id_or_signature() {
    // A model of the host's architecture: the backend programs its own architecture's codes.
    let (model, event) = if cfg!(target_arch = "aarch64") {
        ("neoverse-n1", "INST_RETIRED")
    } else {
        ("skl", "INST_RETIRED.ANY_P")
    };
    let chosen = match Setup::new().cpu_model(model).open() {
        Ok(chosen) => chosen,
        Err(e) => skip!(Need::System, "no backend here: {e}"),
    };
    assert_eq!(chosen.cpu_model(), Some(model));
    assert!(chosen.resolve(event).is_ok(), "{event} on {model}");
    let spr = Setup::new()
        .cpu_model("GenuineIntel-6-8F-8")
        .open()
        .unwrap();
    assert_eq!(spr.cpu_model(), Some("spr"));
    let unknown = Setup::new().cpu_model("pentium9000").open().err().unwrap();
    assert_eq!(unknown.kind(), ErrorKind::InvalidInput);
    assert!(unknown.hint().unwrap().contains("skl"), "{unknown}");
    let backend = Setup::new().backend("windows").open().err().unwrap();
    assert_eq!(backend.kind(), ErrorKind::InvalidInput, "{backend}");
    let models = Setup::new().backend("msr").cpu_model("skl").open();
    // The msr backend's device is /dev/cpu/N/msr: where it is missing it says so.
    if let Err(e) = models {
        assert!(!e.message().is_empty());
    }
}

/// A set's domain goes to its events without one of their own (perf's `:u`): the attr's
/// exclude bits say so, and an event that names its own keeps it.
#[test]
fn a_set_s_domain_goes_to_events_without_one() {
    let backend = backend_or_skip!();
    let options = OpenOptions::default().in_domain(Domain::USER);
    let set = backend
        .open_named(
            &["task-clock", "page-faults:k"],
            &Target::this_thread(),
            &options,
        )
        .or_else(|e| match e.kind() {
            // As an ordinary user the kernel is refused: the user-space event alone then.
            ErrorKind::PermissionDenied => {
                backend.open_named(&["task-clock"], &Target::this_thread(), &options)
            }
            _ => Err(e),
        })
        .unwrap();
    let excludes = |i: usize| match &set.events()[i].terms[0].request.encoding {
        Encoding::Perf(attr) => attr.exclude_bits(),
        other => panic!("{other:?}"),
    };
    assert!(excludes(0).kernel && excludes(0).hv && !excludes(0).user);
    if set.events().len() == 2 {
        assert!(
            excludes(1).user && !excludes(1).kernel,
            "page-faults:k keeps its own"
        );
    }
    assert_eq!(set.note(), None, "asked for, so no fallback to note");
    let none = OpenOptions::default().in_domain(Domain::IDLE);
    let e = backend
        .open_named(&["task-clock"], &Target::this_thread(), &none)
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
}

/// With inherit, a thread's counters count the threads it creates from then on (perf's
/// `inherit`): a spawned thread's 30 ms of CPU time is in this thread's task-clock with it,
/// not without it (the oracle: the kernel's task-clock is the CPU time of the tasks counted).
#[test]
fn inherit_counts_the_threads_a_thread_creates() {
    let backend = backend_or_skip!();
    let count = |inherit: bool| {
        let options = OpenOptions::ungrouped().inheriting(inherit);
        let mut set = backend
            .open_named(&["task-clock"], &Target::this_thread(), &options)
            .unwrap();
        set.enable().unwrap();
        std::thread::spawn(|| {
            // 30 ms of this thread's own CPU time, however busy the machine is.
            let start = counterhal::time::thread_cpu_ns();
            while counterhal::time::thread_cpu_ns() - start < 30_000_000 {
                std::hint::black_box(0);
            }
        })
        .join()
        .unwrap();
        set.disable().unwrap();
        set.read_to_vec().unwrap()[0].value
    };
    let alone = count(false);
    let inherited = count(true);
    assert!(inherited >= 25_000_000, "with inherit: {inherited} ns");
    assert!(alone < 25_000_000, "without: {alone} ns");
}

/// A reset starts a new window in Rust as in C: the counts and the times enabled and running
/// read from zero after it, so `scaled()` estimates the window alone (perf's own reset
/// zeroes the counts only).
#[test]
fn a_reset_zeroes_the_counts_and_their_times() {
    let backend = backend_or_skip!();
    let mut set = backend
        .open_named(
            &["task-clock"],
            &Target::this_thread(),
            &OpenOptions::default(),
        )
        .unwrap();
    set.enable().unwrap();
    // Spins until the thread has run 20 ms (its own clock, not the wall's: on a loaded
    // machine the wall runs ahead of it).
    let before = loop {
        let reading = set.read_to_vec().unwrap()[0];
        if reading.time_enabled >= 20_000_000 {
            break reading;
        }
        std::hint::black_box(0);
    };
    set.reset().unwrap();
    let after = set.read_to_vec().unwrap()[0];
    assert!(
        after.time_enabled < before.time_enabled / 2,
        "{after:?} after {before:?}"
    );
    assert!(after.value < before.value / 2, "{after:?} after {before:?}");
    assert_eq!(after.scaled(), Some(after.value));
}

/// A process read per place is labelled by its threads, each a `Place::Thread` of an id in
/// `/proc/self/task` (the kernel's list of the process's threads), never as a process.
#[test]
fn a_process_is_read_per_thread_and_labelled_so() {
    let backend = backend_or_skip!();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let helper = std::thread::spawn(move || rx.recv().ok());
    let event = backend.resolve("task-clock").unwrap();
    let mut set = counterhal::advanced::MultiSet::open(
        &backend,
        &[event],
        &Target::process(std::process::id()),
        &OpenOptions::default(),
        &counterhal::system::System::host(),
    )
    .unwrap();
    let threads: Vec<u32> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let places: Vec<Place> = set
        .read_each()
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert!(places.len() >= 2, "{places:?}");
    for place in &places {
        let Place::Thread(tid) = place else {
            panic!("{place:?} is not a thread");
        };
        assert!(threads.contains(tid), "{tid} not in {threads:?}");
        assert_eq!(place.to_string(), format!("thread {tid}"));
    }
    tx.send(()).unwrap();
    helper.join().unwrap();
}

/// As an ordinary user at `perf_event_paranoid` 2 (the test drops to `nobody` in a child),
/// `task-clock`, `page-faults` and a tracepoint count through the face, user space only, under
/// the names given (their domain says user space), with the note saying so as perf stat says
/// it; the kernel asked for explicitly is a permission
/// error with its hint. The oracles: the kernel's paranoid rules (perf_event_open(2)), and
/// 100 `getpid` calls counted by the `syscalls:sys_enter_getpid` tracepoint.
#[test]
fn unprivileged_counting_falls_back_to_user_space_with_a_note() {
    use std::os::unix::process::CommandExt;
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok());
    if paranoid != Some(2) {
        skip!(Need::System, "perf_event_paranoid is {paranoid:?}, not 2");
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        skip!(Need::Privilege, "becoming nobody needs root");
    }
    // The library mounts no tracefs unasked: the test mounts it, as perf would.
    let tracefs = match counterhal_conformance::fixtures::tracefs_mounted() {
        Ok(root) => root,
        Err((need, why)) => skip!(need, "{why}"),
    };
    let Ok(id) = std::fs::read_to_string(format!("{tracefs}/events/syscalls/sys_enter_getpid/id"))
    else {
        skip!(Need::System, "no syscalls tracepoints in tracefs here");
    };
    // This test binary where nobody can run it, whatever folder the workspace is in.
    let anyone = counterhal_conformance::fixtures::ForAnyone::new(
        "face",
        &[(&std::env::current_exe().unwrap(), "face")],
    )
    .unwrap();
    let output = std::process::Command::new(anyone.path("face"))
        .args([
            "--ignored",
            "--exact",
            "face::as_nobody",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("COUNTERHAL_FACE_TRACEPOINT", id.trim())
        .current_dir("/")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("as nobody: counted"), "{text}");
}

/// The child of [`unprivileged_counting_falls_back_to_user_space_with_a_note`], as `nobody`.
#[test]
#[ignore = "run as nobody by unprivileged_counting_falls_back_to_user_space_with_a_note"]
fn as_nobody() {
    let id = std::env::var("COUNTERHAL_FACE_TRACEPOINT").expect("the tracepoint's id");
    let tracepoint = format!("tracepoint/config={id}/");
    let backend = open_default().unwrap();
    let names = ["task-clock", "page-faults", tracepoint.as_str()];
    assert!(
        query(&backend, "task-clock").usable(),
        "usable says what opening does"
    );
    let mut set = backend
        .open_named(&names, &Target::this_thread(), &OpenOptions::default())
        .unwrap();
    let note = set.note().expect("a note on the fallback").to_owned();
    assert!(note.contains("kernel.perf_event_paranoid is 2"), "{note}");
    assert!(
        note.contains(&format!(
            "task-clock, page-faults, {tracepoint} count user space only"
        )),
        "{note}"
    );
    // The names as given, whatever the privilege; the domain says what was counted.
    let named: Vec<&str> = set.events().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(named, names);
    for (index, event) in set.events().iter().enumerate() {
        let counted = set.counted_domain(index).unwrap();
        assert_eq!(counted, event.domain(), "{}", event.name);
        assert!(
            counted.contains(Domain::USER) && !counted.contains(Domain::KERNEL),
            "{}: {counted:?}",
            event.name
        );
    }
    set.enable().unwrap();
    for _ in 0..100 {
        // SAFETY: getpid has no preconditions (and glibc does not cache it).
        std::hint::black_box(unsafe { libc::getpid() });
    }
    touch_fresh_pages(1024);
    set.disable().unwrap();
    let readings = set.read_to_vec().unwrap();
    assert!(
        readings[0].value > 0 && readings[1].value > 0,
        "{readings:?}"
    );
    assert_eq!(readings[2].value, 100, "getpid calls: {readings:?}");
    let kernel = OpenOptions::default().in_domain(Domain::KERNEL);
    let e = backend
        .open_named(&["task-clock"], &Target::this_thread(), &kernel)
        .expect_err("the kernel asked for is refused");
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    assert!(
        e.hint().unwrap_or("").contains("perf_event_paranoid"),
        "{e}"
    );
    // A command counted by name falls back as a set does, and says so.
    let counted = backend
        .count_command(
            &["task-clock", "page-faults"],
            std::process::Command::new("true"),
            &OpenOptions::default(),
        )
        .unwrap();
    assert!(counted.readings.iter().all(|r| r.is_ok()), "{counted:?}");
    let command_note = counted.note.as_deref().expect("a note for the command");
    assert!(
        command_note.contains("task-clock, page-faults count user space only"),
        "{command_note}"
    );
    let refused = backend
        .count_command(&["task-clock"], std::process::Command::new("true"), &kernel)
        .unwrap();
    assert!(
        refused.readings[0]
            .as_ref()
            .is_err_and(|e| e.kind() == ErrorKind::PermissionDenied),
        "{refused:?}"
    );
    println!("as nobody: counted {readings:?}; {note}");
}

/// A fresh directory under the target's scratch space, readable by every user.
fn tempdir(name: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    counterhal_conformance::fixtures::clean_up_at_exit();
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Whether `cc` finds the C header `header` (`#include <header>` preprocesses): false where
/// there is no C compiler or the header is not installed.
fn c_header_found(header: &str) -> bool {
    use std::io::Write as _;
    let Ok(mut cc) = std::process::Command::new("cc")
        .args(["-E", "-x", "c", "-o", "/dev/null", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    else {
        return false;
    };
    let include = format!("#include <{header}>\n");
    let written = cc
        .stdin
        .take()
        .is_some_and(|mut input| input.write_all(include.as_bytes()).is_ok());
    cc.wait().is_ok_and(|status| status.success()) && written
}

/// libpfm4's `perf::` names, as PAPI users type them (`perf::PAGE-FAULTS`,
/// `perf::PERF_COUNT_SW_CONTEXT_SWITCHES`, `perf::PERF_COUNT_HW_CACHE_L1D:READ:MISS`), resolve
/// through the face to the perf type and config libpfm4 encodes for each (the oracle:
/// libpfm4's own encoder, tests/c/perf_pmu.c, over every event of its perf_event PMU).
#[test]
fn libpfm4_s_perf_names_resolve_as_libpfm4_encodes_them() {
    if !cfg!(target_os = "linux") {
        skip!(Need::Platform, "perf:: names are Linux perf events");
    }
    let Ok(backend) = Setup::new().backend("linux").open() else {
        skip!(Need::System, "the Linux backend does not open here");
    };
    if !c_header_found("perfmon/pfmlib.h") {
        skip!(
            Need::Tools,
            "a C compiler with libpfm4's header perfmon/pfmlib.h builds tests/c/perf_pmu.c \
             (apt-get install gcc libpfm4-dev)"
        );
    }
    let program = tempdir("perf-pmu").join("perf_pmu");
    let built = std::process::Command::new("cc")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/perf_pmu.c"))
        .arg("-o")
        .arg(&program)
        .arg("-lpfm")
        .output()
        .expect("cc runs");
    assert!(
        built.status.success(),
        "building tests/c/perf_pmu.c: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = std::process::Command::new(&program).output().unwrap();
    assert!(out.status.success());
    let listed = String::from_utf8(out.stdout).unwrap();
    let mut checked = 0;
    for line in listed.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [name, type_, config] = fields[..] else {
            panic!("{line}");
        };
        let event = backend
            .resolve(name)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let Encoding::Perf(attr) = &event.terms[0].request.encoding else {
            panic!("{name}: {event:?}");
        };
        assert_eq!(
            (attr.type_.to_string(), attr.config.to_string()),
            (type_.to_owned(), config.to_owned()),
            "{name}"
        );
        checked += 1;
    }
    assert!(checked >= 100, "{checked} names:\n{listed}");
    // Counted by that name, and refused with perf's words where libpfm4 has no such event.
    let mut set = backend
        .open_named(
            &["perf::PAGE-FAULTS"],
            &Target::this_thread(),
            &OpenOptions::default(),
        )
        .unwrap();
    set.enable().unwrap();
    touch_fresh_pages(1024);
    set.disable().unwrap();
    assert!(set.read_to_vec().unwrap()[0].value > 0);
    let e = backend.resolve("perf::NO-SUCH-EVENT").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidEvent, "{e}");
    assert!(e.to_string().contains("perf::PAGE-FAULTS"), "{e}");
}

/// The prelude beside `std::io::*`: `Result`, `Error` and `ErrorKind` are io's, not
/// ambiguous, and the prelude's names are the library's. The module is compiled with warnings
/// denied, so a name the prelude shared with `std::io` fails the build of this test binary.
#[deny(warnings)]
mod beside_std_io {
    use counterhal::OpenOptions;
    use counterhal::prelude::*;
    use std::io::*;

    /// Writes a target and its options, with io's `Result`, `Error` and `ErrorKind`.
    pub fn describe(out: &mut impl Write) -> Result<()> {
        let target = Target::this_thread();
        let options = OpenOptions::default().in_domain(Domain::USER);
        writeln!(out, "{target:?} {options:?}")?;
        out.flush().map_err(|e| match e.kind() {
            ErrorKind::Interrupted => Error::other("flushing was interrupted"),
            _ => e,
        })
    }
}

/// The prelude beside `std::fmt::*`: `Result` and `Error` are fmt's.
#[deny(warnings)]
mod beside_std_fmt {
    use counterhal::prelude::*;
    use std::fmt::*;

    /// A target shown through fmt's `Display`, `Formatter`, `Result` and `Error`.
    pub struct Shown(pub Target);

    impl Display for Shown {
        fn fmt(&self, f: &mut Formatter<'_>) -> Result {
            write!(f, "{:?}", self.0).map_err(|_: Error| Error)
        }
    }
}

/// The prelude beside `std::fs::*`: `OpenOptions` and `File` are fs's (the library's options
/// are `counterhal::OpenOptions`, named by their path or imported by name).
#[deny(warnings)]
mod beside_std_fs {
    use counterhal::prelude::*;
    use std::fs::*;

    /// Whether `path` opens for reading with fs's `OpenOptions`, beside the prelude's target.
    pub fn opens(path: &str) -> bool {
        let _ = Target::this_thread();
        OpenOptions::new().read(true).open(path).is_ok()
    }
}

/// The prelude beside io, fmt and fs: every name it gives is usable.
#[deny(warnings)]
mod beside_both {
    use counterhal::prelude::*;
    #[allow(unused_imports)] // Glob imports whose names the prelude's must not clash with.
    use std::fmt::*;
    #[allow(unused_imports)]
    use std::fs::*;
    #[allow(unused_imports)]
    use std::io::*;

    /// Every type of the prelude, named.
    pub type Face = (
        Option<(AnyGroup, AnySampler, Chosen, Domain, EventSet<AnyGroup>)>,
        Option<(Place, Reading, SampleFields, SampleOptions, Setup, Target)>,
        Option<CommandCount>,
    );

    /// Every function of the prelude, named, with the CPUs online.
    pub fn functions() -> u64 {
        let _ = (open_default, query::<Chosen>);
        let _ = std::mem::size_of::<Option<EventSetBuilder<'static>>>();
        let _ = std::mem::size_of::<Option<Record<'static>>>();
        online_cpus(&counterhal::system::System::host()).len()
    }
}

/// `use counterhal::prelude::*;` beside `use std::io::*;`, `use std::fmt::*;` or
/// `use std::fs::*;` (or all), with warnings denied: the prelude names nothing the standard
/// library's io, fmt and fs modules export (`Result`, `Error`, `ErrorKind`, `OpenOptions`), so
/// their names stay the standard library's.
/// Oracle: rustc's name resolution, which refuses a name two glob imports give (E0659, the
/// `ambiguous_glob_imports` lint of rust-lang/rust#114095): the modules above are the
/// compile test, and this test runs what they compiled.
#[test]
fn the_prelude_beside_std_io_fmt_and_fs_globs_is_unambiguous() {
    let mut out = Vec::new();
    beside_std_io::describe(&mut out).unwrap();
    let written = String::from_utf8(out).unwrap();
    assert!(written.contains("ThisThread"), "{written}");
    let shown = beside_std_fmt::Shown(Target::this_thread()).to_string();
    assert!(shown.contains("ThisThread"), "{shown}");
    assert!(beside_std_fs::opens("/proc/self/status"));
    let _: beside_both::Face = (None, None, None);
    assert!(beside_both::functions() > 0);
}

/// A metric counted through the library: page faults per second over the seconds counted.
/// Oracle: the kernel's page-fault accounting ([`touch_fresh_pages`]) and perf 6.1's
/// `page_faults_per_second` (its count over `duration_time`, the seconds counted).
#[test]
fn a_page_fault_rate_is_the_pages_touched_over_the_time_counted() {
    use counterhal::metrics::Counted;
    let backend = backend_or_skip!();
    let this_thread = Target::this_thread();
    let options = OpenOptions::default();
    let mut set = backend
        .open_metrics(&["page_faults_per_second"], &this_thread, &options)
        .unwrap();
    assert_eq!(set.events(), ["page-faults"]);
    let pages = 1024;
    let before = std::time::Instant::now();
    set.enable().unwrap();
    touch_fresh_pages(pages);
    set.disable().unwrap();
    let outer = before.elapsed();
    let values = set.read().unwrap();
    let faults = set.readings()[0].estimate().unwrap();
    assert!(faults >= pages as u64, "{faults} faults for {pages} pages");
    let rate = values[0].value.unwrap();
    assert_eq!(
        (values[0].name, values[0].unit),
        ("page_faults_per_second", "faults/sec")
    );
    // The seconds the rate divides by lie within the time around enable and disable.
    let seconds = faults as f64 / rate;
    assert!(
        seconds > 0.0 && seconds <= outer.as_secs_f64(),
        "{faults} faults at {rate}/s: {seconds} s, within {outer:?}"
    );
}
