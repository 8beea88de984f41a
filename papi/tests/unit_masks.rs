//! `PAPI_enum_cmp_event(.., PAPI_NTV_ENUM_UMASKS, ..)` on the CPU model's native events
//! (tests/c/unit_masks.c). Oracles: libpfm4 4.13's table for the model libpfm4 detects here
//! (tests/c/pfm_umasks.c, linked with -lpfm: each event's `PFM_ATTR_UMASK` attributes), and
//! Debian's `papi_native_avail -e EVENT` run on our library, which lists the qualifiers as it
//! lists libpfm4's through PAPI 7.0's perf_event component.
//!
//! Ours may hold unit masks libpfm4's table lacks where the model's own (Intel's) table is
//! newer; each such mask must be the model's.
//!
//! The descriptions are libpfm4's: ours reads them from the libpfm4 installed here
//! (`papi/src/sys/pfm.rs`), and the oracle prints them through libpfm4's own interface.
//!
//! Not as PAPI: PAPI's perf_event component also enumerates libpfm4's modifiers (`:u=0`,
//! `:k=0`, `:c=0`...) after the unit masks, and in libpfm4's table order; ours gives the unit
//! masks alone, in the event database's order (the sets are compared).

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Events with unit masks on the Intel models libpfm4 knows.
const EVENTS: [&str; 5] = [
    "BR_INST_RETIRED",
    "BR_MISP_RETIRED",
    "MEM_LOAD_RETIRED",
    "UOPS_ISSUED",
    "MACHINE_CLEARS",
];

/// libpfm4's unit masks of each event it knows here, by event: asked once for the tests of
/// this file (two tests building the helper at one path at once made one of them fail).
fn libpfm4() -> Option<&'static BTreeMap<String, BTreeSet<String>>> {
    ask_libpfm4().map(|(masks, _)| masks)
}

/// libpfm4's descriptions of the events it knows here: `EVENT` and `EVENT:MASK`, each as
/// PAPI 7.0 describes a native (the event's text, then `, masks:` and the unit mask's).
fn libpfm4_descriptions() -> Option<&'static BTreeMap<String, String>> {
    ask_libpfm4().map(|(_, descriptions)| descriptions)
}

type Libpfm4 = (BTreeMap<String, BTreeSet<String>>, BTreeMap<String, String>);

fn ask_libpfm4() -> Option<&'static Libpfm4> {
    static TABLE: std::sync::OnceLock<Option<Libpfm4>> = std::sync::OnceLock::new();
    TABLE.get_or_init(read_libpfm4).as_ref()
}

fn read_libpfm4() -> Option<Libpfm4> {
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-papi-pfm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("pfm_umasks");
    let built = Command::new("cc")
        .arg(crate::common::manifest().join("tests/c/pfm_umasks.c"))
        .arg("-o")
        .arg(&program)
        .arg("-lpfm")
        .output()
        .ok()?;
    if !built.status.success() {
        return None;
    }
    let out = Command::new(&program).args(EVENTS).output().ok()?;
    let mut table = BTreeMap::new();
    let mut descriptions = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (head, text) = line.split_once(" | ").unwrap_or((line, ""));
        if let Some(mask) = head.strip_prefix("  ") {
            if let Some((event, event_text)) = &current {
                table
                    .entry(event.clone())
                    .or_insert_with(BTreeSet::new)
                    .insert(mask.to_string());
                descriptions.insert(
                    format!("{event}:{mask}"),
                    format!("{event_text}, masks:{text}"),
                );
            }
        } else if let Some((_, event)) = head.split_once("::") {
            descriptions.insert(event.to_string(), text.to_string());
            current = Some((event.to_string(), text.to_string()));
        } else {
            current = None;
        }
    }
    Some((table, descriptions))
}

/// The unit masks of `event` in the model this machine detects, as the event database has
/// them.
fn model_unit_masks(event: &str) -> BTreeSet<String> {
    let context = facade::Context::new(None, None).expect("the shipped database loads");
    let Some(model) = context.model().and_then(|id| context.database().model(id)) else {
        return BTreeSet::new();
    };
    model
        .event(event)
        .map(|e| e.unit_masks().iter().map(|m| m.name.clone()).collect())
        .unwrap_or_default()
}

#[test]
fn unit_masks_are_libpfm4s() {
    system_papi_or_skip!();
    let Some(theirs) = libpfm4() else {
        skip!(
            Need::Tools,
            "libpfm4's headers are not installed (apt-get install libpfm4-dev)"
        );
    };
    if theirs.is_empty() {
        skip!(
            Need::Hardware,
            "libpfm4 knows none of {EVENTS:?} on this CPU"
        );
    }
    let program = crate::common::c_program(
        "unit_masks",
        "ours",
        &crate::common::manifest().join("include"),
        true,
    );
    let out = crate::common::run(&program, &EVENTS, true);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut compared = 0;
    for (event, masks) in theirs {
        let Some(at) = text.find(&format!("{event} -> 0 ")) else {
            continue;
        };
        let walked: Vec<(&str, &str)> = text[at..]
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with("  end"))
            .filter_map(|l| l.trim().split_once(" | "))
            .collect();
        let ours: BTreeSet<String> = walked
            .iter()
            .filter_map(|(name, _)| name.split_once(':'))
            .map(|(_, m)| m.to_string())
            .collect();
        // Each unit mask libpfm4 has is described as PAPI 7.0 describes it: libpfm4's text,
        // read from the libpfm4 installed here (the shipped data holds no prose).
        let described = libpfm4_descriptions().unwrap();
        for (name, description) in &walked {
            if let Some(theirs) = described.get(*name) {
                assert_eq!(description, theirs, "{name}");
            }
        }
        // Every unit mask libpfm4 has, ours has; where ours has more, they are the model's
        // own (Intel's table is newer than libpfm4's: BR_MISP_RETIRED.RET on Ice Lake and
        // Rocket Lake), each a unit mask of the event in the model the library detects.
        assert!(
            masks.is_subset(&ours),
            "{event}: libpfm4 has {:?} we do not\n{text}",
            masks.difference(&ours).collect::<Vec<_>>()
        );
        let own = model_unit_masks(event);
        for extra in ours.difference(masks) {
            assert!(
                own.contains(extra),
                "{event}: `{extra}` is neither libpfm4's nor the model's ({own:?})"
            );
        }
        assert!(
            text[at..].contains(&format!("  end {}", papi_walk_end())),
            "{event}: the walk ends as PAPI 7.0's does ({})\n{text}",
            papi_walk_end()
        );
        compared += 1;
    }
    if compared == 0 {
        skip!(Need::Hardware, "none of {EVENTS:?} resolves here:\n{text}");
    }
    // An event without unit masks walks its qualifiers alone, as on PAPI 7.0.
    let ours = walk("perf::TASK-CLOCK", true);
    assert_eq!(ours, walk("perf::TASK-CLOCK", false));
    assert!(ours.iter().any(|l| l.contains(":u=0")), "{ours:?}");
}

/// The unit-mask walk of `event` on ours or on Debian's PAPI 7.0, the event's code left out
/// (the two libraries number their events apart).
fn walk(event: &str, ours: bool) -> Vec<String> {
    let include = if ours {
        crate::common::manifest().join("include")
    } else {
        std::path::PathBuf::from("/usr/include")
    };
    let tag = if ours { "walk-ours" } else { "walk-papi" };
    let program = crate::common::c_program("unit_masks", tag, &include, true);
    let out = crate::common::run(&program, &[event], ours);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| match l.split_once(" -> ") {
            Some((name, rest)) => format!("{name} -> {}", rest.split(' ').next().unwrap_or("")),
            None => l.to_string(),
        })
        .collect()
}

/// The code PAPI 7.0 ends a `PAPI_NTV_ENUM_UMASKS` walk with: its perf_event component walks
/// the CPU model's events and libpfm4's `perf::` events alike, so its walk of
/// `perf::TASK-CLOCK` (which resolves on any Linux) gives it (`PAPI_EINVAL`).
fn papi_walk_end() -> &'static str {
    static END: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    END.get_or_init(|| {
        let lines = walk("perf::TASK-CLOCK", false);
        let end = lines
            .iter()
            .find_map(|l| l.strip_prefix("  end "))
            .unwrap_or_else(|| panic!("PAPI 7.0's walk has no end: {lines:?}"));
        end.to_string()
    })
}

/// Debian's papi_native_avail, on ours, lists an event's qualifiers.
#[test]
fn papi_native_avail_lists_the_qualifiers() {
    let Some(theirs) = libpfm4() else {
        skip!(
            Need::Tools,
            "libpfm4's headers are not installed (apt-get install libpfm4-dev)"
        );
    };
    let Some((event, masks)) = theirs.iter().next() else {
        skip!(
            Need::Hardware,
            "libpfm4 knows none of {EVENTS:?} on this CPU"
        );
    };
    let Ok(out) = Command::new("papi_native_avail")
        .args(["-e", event])
        .env("LD_LIBRARY_PATH", crate::common::library_dir())
        .output()
    else {
        skip!(
            Need::Tools,
            "papi_native_avail is not installed (apt-get install papi-tools)"
        );
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if text.contains("could not be found") {
        skip!(Need::Hardware, "{event} does not resolve here");
    }
    assert!(
        text.contains("Qualifiers:         Name -- Description"),
        "{text}"
    );
    let listed: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Info:"))
        .filter_map(|l| l.trim().strip_prefix(':'))
        .filter_map(|l| l.split(" --").next())
        .map(str::to_string)
        .collect();
    assert_eq!(&listed, masks, "{text}");
}

/// events/data/papi/perf_natives.toml is papi/gen/perf_natives.c's output on the libpfm4
/// installed here: libpfm4's perf_event PMU (the oracle) read through its own interface.
/// Fails when the table is stale or was edited by hand (regenerate as the generator's header
/// says).
#[test]
fn the_perf_table_is_libpfm4s() {
    let Ok(version) = Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", "libpfm4"])
        .output()
    else {
        skip!(
            Need::Tools,
            "dpkg-query is missing: the libpfm4 version cannot be named"
        );
    };
    let version = String::from_utf8_lossy(&version.stdout).into_owned();
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-perf-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let generator = dir.join("perf_natives");
    let built = Command::new("cc")
        .arg(crate::common::manifest().join("gen/perf_natives.c"))
        .arg("-o")
        .arg(&generator)
        .arg("-lpfm")
        .output();
    if version.is_empty() || !built.is_ok_and(|b| b.status.success()) {
        skip!(
            Need::Tools,
            "libpfm4's headers are not installed (apt-get install libpfm4-dev)"
        );
    }
    let out = Command::new(&generator).arg(&version).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let generated = String::from_utf8(out.stdout).unwrap();
    let shipped = std::fs::read_to_string(
        crate::common::manifest().join("../events/data/papi/perf_natives.toml"),
    )
    .unwrap();
    // libpfm4 gives its hardware events the `h` qualifier only where the core PMU it detects
    // filters the hypervisor level (AMD from family 10h on, or no core PMU); the table keeps
    // it and the library leaves it out where libpfm4 would (`perf_natives::qualifiers`). Its
    // perf_raw event takes `h` everywhere (the second).
    let h = "  [\"h\", \"monitor at hypervisor level\"],\n";
    assert_eq!(shipped.matches(h).count(), 2, "the table lists `h` twice");
    let shipped = if generated.matches(h).count() == 2 {
        shipped
    } else {
        shipped.replacen(h, "", 1)
    };
    assert!(
        generated == shipped,
        "events/data/papi/perf_natives.toml differs from libpfm4 {version}'s table: regenerate it \
         (papi/gen/perf_natives.c)"
    );
    // libpfm4's 82 `perf::` names and its one `perf_raw::` pseudo-event.
    assert_eq!(shipped.matches("{ name = ").count(), 83);
}

/// The names PAPI 7.0's perf_event component adds through libpfm4, with each qualifier it
/// takes (u, k, h, period, freq, precise, excl, mg, mh, cpu, pinned) and the ones it refuses.
/// `freq=N` is left out: Debian's PAPI takes it and is then killed by the sampling signal.
/// The cache events' unit masks are named operations and results (L1I has no WRITE), and an
/// alias is a whole encoding.
const QUALIFIED: [&str; 32] = [
    "perf::TASK-CLOCK",
    "perf::TASK-CLOCK:u=0",
    "perf::TASK-CLOCK:u=1",
    "perf::TASK-CLOCK:u",
    "perf::TASK-CLOCK:k=1",
    "perf::TASK-CLOCK:u=0:k=0",
    "perf::TASK-CLOCK:h=1",
    "perf::TASK-CLOCK:period=100000000",
    "perf::TASK-CLOCK:period=0",
    "perf::TASK-CLOCK:freq=0",
    "perf::TASK-CLOCK:precise=1",
    "perf::TASK-CLOCK:excl=1",
    "perf::TASK-CLOCK:mg=1",
    "perf::TASK-CLOCK:mh=1",
    "perf::TASK-CLOCK:mg=0:mh=0",
    "perf::TASK-CLOCK:cpu=0",
    "perf::TASK-CLOCK:cpu=1",
    "perf::TASK-CLOCK:cpu=99",
    "perf::TASK-CLOCK:pinned=1",
    "perf::TASK-CLOCK:hw_smpl=1",
    "perf::TASK-CLOCK:u=2",
    "perf::TASK-CLOCK:bogus=1",
    "perf::PERF_COUNT_SW_TASK_CLOCK:k=0",
    "perf::task-clock",
    "perf::CS:u=1",
    "perf::FAULTS",
    "perf::PERF_COUNT_SW_PAGE_FAULTS_MIN",
    "perf::PERF_COUNT_HW_CACHE_L1D:READ:ACCESS",
    "perf::PERF_COUNT_HW_CACHE_L1I:PREFETCH:MISS",
    "perf::PERF_COUNT_HW_CACHE_L1I:READ:ACCESS",
    "perf::PERF_COUNT_HW_CACHE_ITLB:WRITE:ACCESS",
    "perf::L1-DCACHE-LOADS",
];

/// Each of `QUALIFIED` in a set of its own (tests/c/perf_qualifiers.c, built against
/// Debian's papi.h, pinned to CPU 0), on Debian's PAPI 7.0 (the oracle) and on ours: the
/// same answers from add, start and stop, and the same count seen or not (`cpu=1` counts
/// the thread only while on CPU 1: nothing).
#[test]
fn perf_qualifiers_are_taken_as_papi_takes_them() {
    system_papi_or_skip!();
    papi_perf_event_or_skip!();
    let program = crate::common::c_program(
        "perf_qualifiers",
        "theirs",
        std::path::Path::new("/usr/include"),
        true,
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let names = QUALIFIED
        .into_iter()
        .filter(|name| !(name.ends_with("cpu=1") && cpus < 2));
    // Every name on both libraries at once: each process counts only itself (its task clock,
    // on CPU 0 or 1), and most of its time is the start of a process and of PAPI.
    let answers: Vec<(&str, String, String)> = std::thread::scope(|scope| {
        let program = &program;
        let answer = move |name: &'static str, ours: bool| {
            scope.spawn(move || {
                let out = crate::common::run(program, &[name], ours);
                String::from_utf8_lossy(&out.stdout).into_owned()
            })
        };
        let started: Vec<_> = names
            .map(|name| (name, answer(name, false), answer(name, true)))
            .collect();
        started
            .into_iter()
            .map(|(name, theirs, ours)| (name, theirs.join().unwrap(), ours.join().unwrap()))
            .collect()
    });
    for (name, theirs, ours) in answers {
        assert!(theirs.starts_with(name), "PAPI 7.0 on {name}: {theirs}");
        assert_eq!(theirs, ours, "PAPI 7.0 vs ours");
    }
}

/// Debian's papi_native_avail and papi_xml_event_info list libpfm4's `perf::` events, their
/// descriptions and qualifiers the same on Debian's PAPI 7.0 (the oracle) and on ours:
/// all 82, hardware ones too where the kernel has no PMU for them.
#[test]
fn perf_events_are_listed_as_papi_lists_them() {
    system_papi_or_skip!();
    papi_perf_event_or_skip!();
    let listing = |tool: &str, args: &[&str], ours: bool| -> Option<Vec<String>> {
        let mut command = Command::new(tool);
        command.args(args);
        if ours {
            command.env("LD_LIBRARY_PATH", crate::common::library_dir());
        }
        let out = command.output().ok()?;
        Some(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_owned)
                .collect(),
        )
    };
    let Some(theirs) = listing("papi_native_avail", &["-i", "perf::"], false) else {
        skip!(
            Need::Tools,
            "papi_native_avail is not installed (apt-get install papi-tools)"
        );
    };
    let ours = listing("papi_native_avail", &["-i", "perf::"], true).unwrap();
    // The event blocks, from the first perf:: event to the next heading (PAPI 7.0 then
    // names its other components, which ours has not) or the total.
    let events = |lines: &[String]| -> Vec<String> {
        let first = lines
            .iter()
            .position(|l| l.starts_with("| perf::"))
            .unwrap();
        let end = lines[first..]
            .iter()
            .position(|l| l.starts_with("=====") || l.is_empty() || l.starts_with("Total"))
            .map_or(lines.len(), |at| first + at);
        // papi_native_avail closes the last component that listed events with a separator:
        // PAPI 7.0's last is another, empty component; ours is this one.
        let mut events = lines[first..end].to_vec();
        while events.last().is_some_and(|l| l.starts_with("-----")) {
            events.pop();
        }
        events
    };
    let (their_events, our_events) = (events(&theirs), events(&ours));
    assert_eq!(
        their_events
            .iter()
            .filter(|l| l.starts_with("| perf::"))
            .count(),
        82
    );
    for (t, o) in their_events.iter().zip(&our_events) {
        assert_eq!(t, o, "papi_native_avail: PAPI 7.0 vs ours");
    }
    assert_eq!(their_events.len(), our_events.len());
    assert_eq!(theirs.last(), ours.last(), "the totals");

    let xml = |ours| -> Vec<String> {
        listing("papi_xml_event_info", &[], ours)
            .unwrap_or_default()
            .into_iter()
            .filter(|l| l.contains("\"perf::"))
            .collect()
    };
    let their_xml = xml(false);
    assert!(their_xml.len() > 82, "{their_xml:?}");
    assert_eq!(
        their_xml,
        xml(true),
        "papi_xml_event_info: PAPI 7.0 vs ours"
    );
}
