//! Small PAPI programs, each built once against Debian's papi.h and libpapi.so.7.0 and run
//! against Debian's PAPI 7.0 (the oracle) and against ours, line by line: tests/c/side_by_side.c
//! (event names and codes of all 108 presets, their short and long descriptions and
//! categories, the errors of misuse, calls on sets before initialisation, handle numbers, the
//! messages and the timers), running_sets.c (one running set per thread), attach_targets.c
//! (attaching to missing and dead processes and to thread 0), names.c (how names are read),
//! errors.c (the error PAPI_perror prints after each call), lookup.c (libpfm4's perf_raw
//! names) and set_rules.c (what
//! PAPI_cleanup_eventset leaves, one CPU per set, a forked child and its parent's sets).

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::Path;

#[test]
fn a_papi_program_reads_the_same_on_both() {
    system_papi_or_skip!();
    papi_perf_event_or_skip!();
    let program =
        crate::common::c_program("side_by_side", "theirs", Path::new("/usr/include"), true);
    let theirs = crate::common::run(&program, &[], false);
    let ours = crate::common::run(&program, &[], true);
    let theirs = String::from_utf8_lossy(&theirs.stdout).into_owned();
    let ours = String::from_utf8_lossy(&ours.stdout).into_owned();
    let (their_common, their_sets) = theirs
        .split_once("-- sets\n")
        .expect("PAPI 7.0 ran through");
    let (our_common, our_sets) = ours.split_once("-- sets\n").expect("ours ran through");
    assert!(their_common.lines().count() > 140, "{theirs}");
    for (t, o) in their_common.lines().zip(our_common.lines()) {
        assert_eq!(t, o, "PAPI 7.0 vs ours");
    }
    assert_eq!(their_common.lines().count(), our_common.lines().count());
    // The answers about event sets that depend on the CPU component: PAPI 7.0 asks its other
    // components too (sde, rocm_smi) and answers a name no component knows with their codes
    // (PAPI_ENOSUPP, PAPI_ECMP) where ours says PAPI_ENOEVNT; the rest must agree.
    let differs = ["name_to_code of nonsense", "add named nonsense"];
    for (t, o) in their_sets.lines().zip(our_sets.lines()) {
        if differs.iter().any(|d| t.starts_with(d)) {
            assert!(o.ends_with("= -7"), "{o}");
            continue;
        }
        assert_eq!(t, o, "PAPI 7.0 vs ours");
    }
}

/// Builds tests/c/`stem`.c against Debian's papi.h and libpapi and runs it with `args` on
/// Debian's PAPI 7.0 and on ours: the two standard outputs. `None` (after a loud skip) where
/// Debian's PAPI has its perf_event component disabled here (its answers are then about no
/// component; the program's first line says).
fn on_both(stem: &str, args: &[&str]) -> Option<(String, String)> {
    let program = crate::common::c_program(stem, "theirs", Path::new("/usr/include"), true);
    let theirs = crate::common::run(&program, args, false);
    let ours = crate::common::run(&program, args, true);
    assert!(theirs.status.success(), "{stem} on PAPI 7.0: {theirs:?}");
    assert!(ours.status.success(), "{stem} on ours: {ours:?}");
    let theirs = String::from_utf8_lossy(&theirs.stdout).into_owned();
    let ours = String::from_utf8_lossy(&ours.stdout).into_owned();
    if theirs.starts_with("cpu component enabled = 0") {
        return None;
    }
    Some((theirs, ours))
}

/// Compares two outputs line by line, each line by `same` (its PAPI 7.0 line, ours).
fn compare(theirs: &str, ours: &str, mut same: impl FnMut(&str, &str) -> bool) {
    for (t, o) in theirs.lines().zip(ours.lines()) {
        assert!(
            same(t, o),
            "PAPI 7.0 vs ours:\n{t}\n{o}\n\nPAPI 7.0:\n{theirs}\nours:\n{ours}"
        );
    }
    assert_eq!(
        theirs.lines().count(),
        ours.lines().count(),
        "{theirs}\n{ours}"
    );
}

/// One event set runs per thread and component, as PAPI 7.0 allows (a second set started on
/// a thread whose set runs is PAPI_EISRUN, from any thread; another thread's set starts):
/// tests/c/running_sets.c, with and without PAPI_thread_init, on both libraries.
#[test]
fn one_set_runs_per_thread_as_in_papi() {
    system_papi_or_skip!();
    for args in [&[][..], &["init"][..]] {
        let Some((theirs, ours)) = on_both("running_sets", args) else {
            skip!(
                Need::System,
                "Debian's PAPI disabled its perf_event component here"
            );
        };
        assert!(theirs.contains("start b while a runs = -10"), "{theirs}");
        compare(&theirs, &ours, |t, o| t == o);
    }
}

/// PAPI_attach as PAPI 7.0 answers it (tests/c/attach_targets.c on both libraries): a set
/// with no component is PAPI_ENOCMP, no such process PAPI_ESYS at the attach (the set then
/// counts its thread still), a zombie as a missing process; thread 0 (perf_event_open's pid 0,
/// the caller) is attached as given, and an attached set refuses PAPI_overflow with
/// PAPI_EINVAL. The lines marked `[pmu]` are compared where PAPI's attach reaches a live
/// child; PAPI 7.0 checks a target by opening the hardware event `instructions` on it, so on a
/// machine whose kernel has no core PMU it answers PAPI_ENOEVNT for every live target (a
/// child, a zombie, the caller) and attaches nothing: there each `[pmu]` line of ours must
/// read as PAPI's would where the check opens ([`without_pmu`]).
#[test]
fn attach_answers_as_papi() {
    system_papi_or_skip!();
    let Some((theirs, ours)) = on_both("attach_targets", &[]) else {
        skip!(
            Need::System,
            "Debian's PAPI disabled its perf_event component here"
        );
    };
    let pmu = !theirs.contains("[pmu] attach to a live child = -7");
    compare(&theirs, &ours, |t, o| {
        if pmu || !t.starts_with("[pmu]") {
            return t == o;
        }
        without_pmu(t).is_some_and(|expected| o == expected)
    });
}

/// Our line for PAPI 7.0's `[pmu]` line `theirs` of tests/c/attach_targets.c on a machine
/// without a core PMU, where PAPI's attach check fails (PAPI_ENOEVNT) and its set stays
/// unattached: ours attaches a live child and the caller (thread 0), refuses a zombie with
/// PAPI_ESYS as the kernel refuses counting one (ESRCH, which PAPI 7.0 maps to PAPI_ESYS),
/// refuses to overflow the attached set (PAPI_EINVAL, papi.c `PAPI_overflow`) and detaches
/// it. `None` for a line PAPI should not print there.
fn without_pmu(theirs: &str) -> Option<String> {
    let (label, answer) = theirs.rsplit_once(" = ")?;
    let ours = match (label, answer) {
        ("[pmu] attach to a live child", "-7") => "0",
        ("[pmu] attach to a zombie", "-7") => "-3",
        ("[pmu] attach to thread 0", "-7") => "0",
        ("[pmu] attached", "0") => "1",
        ("[pmu] overflow on the attached set", "0") => "-1",
        ("[pmu] detach", "-1") => "0",
        _ => return None,
    };
    Some(format!("{label} = {ours}"))
}

/// `PAPI_cleanup_eventset` leaves a set as new, as PAPI 7.0's (tests/c/set_rules.c
/// `cleanup` on both libraries): no component (`PAPI_start` is `PAPI_ENOCMP`), domain,
/// granularity or multiplexing, so that `PAPI_assign_eventset_component` and
/// `PAPI_set_multiplex` take it again, as papi_multiplex_cost does between its rounds. Where
/// PAPI 7.0 has no core PMU to check multiplexing with (its `[pmu]` lines `PAPI_ENOEVNT`),
/// ours must multiplex there ([`multiplexed_without_pmu`]).
/// Oracle: Debian's PAPI 7.0.
#[test]
fn cleanup_leaves_a_set_as_new() {
    system_papi_or_skip!();
    papi_perf_event_or_skip!();
    let Some((theirs, ours)) = on_both("set_rules", &["cleanup"]) else {
        skip!(
            Need::System,
            "Debian's PAPI disabled its perf_event component here"
        );
    };
    assert!(theirs.contains("start after cleanup = -17"), "{theirs}");
    let pmu = !theirs.contains("[pmu] multiplex = -7");
    compare(&theirs, &ours, |t, o| {
        if pmu || !t.starts_with("[pmu]") {
            return t == o;
        }
        multiplexed_without_pmu(t).is_some_and(|expected| o == expected)
    });
}

/// A set has one CPU binding, as PAPI 7.0's (tests/c/set_rules.c `cpu` on both libraries):
/// an event whose `cpu` qualifier differs from the set's events' (another CPU, or a
/// qualifier beside events of the thread wherever it runs, or none beside a CPU's) is
/// `PAPI_EINVAL`, as the kernel refuses a group member on another CPU than its leader's, and
/// the set counts its thread as before.
/// Oracle: Debian's PAPI 7.0.
#[test]
fn a_set_counts_on_one_cpu() {
    system_papi_or_skip!();
    papi_perf_event_or_skip!();
    let Some((theirs, ours)) = on_both("set_rules", &["cpu"]) else {
        skip!(
            Need::System,
            "Debian's PAPI disabled its perf_event component here"
        );
    };
    assert!(theirs.contains("add the thread's after = -1"), "{theirs}");
    compare(&theirs, &ours, |t, o| t == o);
}

/// A forked child's calls on a set its parent made answer `PAPI_EMISC` and change nothing,
/// and the child counts with a set of its own as PAPI 7.0's child does (tests/c/set_rules.c
/// `fork` on both libraries; the child calls `PAPI_library_init` as PAPI's own fork tests
/// do). PAPI 7.0 lets the child stop the parent's set, which stops the parent's counting
/// (the kernel shares the counter between the processes holding its file): there the
/// parent's count of its own work is about nothing. Ours must count it.
/// Oracles: Debian's PAPI 7.0 for the child's own set, the kernel's CPU clock of the parent
/// thread (`CLOCK_THREAD_CPUTIME_ID`) for the parent's count.
#[test]
fn a_forked_child_leaves_its_parents_sets_alone() {
    system_papi_or_skip!();
    papi_perf_event_or_skip!();
    let Some((theirs, ours)) = on_both("set_rules", &["fork"]) else {
        skip!(
            Need::System,
            "Debian's PAPI disabled its perf_event component here"
        );
    };
    assert!(theirs.contains("the child counted = 1"), "{theirs}");
    compare(&theirs, &ours, |t, o| {
        let label = t.rsplit_once(" = ").map_or(t, |(l, _)| l);
        if t.starts_with("[parent's set]") {
            o == format!("{label} = -14")
        } else if label == "the parent counted its work" {
            o == format!("{label} = 1")
        } else {
            t == o
        }
    });
}

/// libpfm4's `perf_raw` PMU as PAPI 7.0 takes it (tests/c/lookup.c on both libraries): perf's
/// raw syntax (`perf_raw::r00c0`, `rc0`, `r0x10`) looked up, named back as written, described
/// with its qualifiers' descriptions, and added (`PAPI_ENOEVNT` where the kernel has no core
/// PMU to count a raw config); the names libpfm4 4.13 does not match refused. And
/// `papi_native_avail` lists its pseudo-event `perf_raw::r0000` with PAPI's qualifiers.
/// Oracle: Debian's PAPI 7.0 (with the libpfm4 4.13 it is built on).
#[test]
fn perf_raw_names_answer_as_papi() {
    system_papi_or_skip!();
    papi_perf_event_or_skip!();
    // The names PAPI takes before those it refuses: once a look-up has failed, PAPI 7.0
    // refuses some names it took before (see names_answer_as_papi).
    let names = [
        "perf_raw::r00c0",
        "perf_raw::r0000",
        "perf_raw::rA",
        "perf_raw::r0X10",
        "perf_raw::rfffffffffffffff",
        "perf_raw::r01234567890123456",
        "perf_raw::r00c0:u=0",
        "perf_raw::r00c0:k=0:period=10",
        "perf_raw::r00c0:u=1:period=10:cpu=0",
        "perf_raw::r00c0:hw_smpl=1:u",
        "perf_raw::r00c0:h=1",
        "perf_raw::r00c0:k=1:k=1",
        "perf::TASK-CLOCK:u=1:period=10",
        "perf_raw::R00c0",
        "perf_raw::r",
        "perf_raw::r00c0zz",
        "perf_raw::r0x",
        "perf_raw::r00c0:bogus",
        "PERF_RAW::r00c0",
        "perf_raw::r123456789012345678",
        "perf_raw::rffffffffffffffff",
        "perf_raw::r1:u=1:u=0",
        "perf_raw::r-1",
        "perf_raw::r00c0:U=1",
    ];
    let Some((theirs, ours)) = on_both("lookup", &names) else {
        skip!(
            Need::System,
            "Debian's PAPI disabled its perf_event component here"
        );
    };
    assert!(
        theirs.contains("'perf_raw::r00c0' code 0 back 'perf_raw::r00c0'"),
        "{theirs}"
    );
    compare(&theirs, &ours, |t, o| t == o);
    let listed = |ours: bool| {
        let out = crate::common::run(
            Path::new("/usr/bin/papi_native_avail"),
            &["-e", "perf_raw::r0000"],
            ours,
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let start = text.find("Event name:").unwrap_or(text.len());
        text[start..].to_string()
    };
    let (theirs, ours) = (listed(false), listed(true));
    assert!(theirs.contains(":hw_smpl=0"), "{theirs}");
    assert_eq!(theirs, ours, "papi_native_avail -e perf_raw::r0000");
}

/// Our line for PAPI 7.0's `[pmu]` line `theirs` of tests/c/set_rules.c `cleanup` on a
/// machine without a core PMU, where PAPI's `PAPI_set_multiplex` fails its check
/// (`PAPI_ENOEVNT`) and the set stays unmultiplexed: ours multiplexes (and adds to the
/// multiplexed set) as PAPI does where the check opens. `None` for a line PAPI should not
/// print there.
fn multiplexed_without_pmu(theirs: &str) -> Option<String> {
    let (label, answer) = theirs.rsplit_once(" = ")?;
    let ours = match (label, answer) {
        ("[pmu] multiplex" | "[pmu] multiplex again", "-7") => "0",
        ("[pmu] multiplexed" | "[pmu] multiplexed again", "0") => "1",
        ("[pmu] add multiplexed", "0") => "0",
        _ => return None,
    };
    Some(format!("{label} = {ours}"))
}

/// The error PAPI_perror prints after each call, as PAPI 7.0 keeps it (tests/c/errors.c on
/// both libraries): set by an error a call answers (`papi_return`), left by a success and by
/// PAPI's plain `return`s of an error (PAPI_query_event of an empty preset slot, the end of
/// an enumeration); PAPI_query_event's other answers kept (a native code past the table is
/// PAPI_ENOCMP).
#[test]
fn perror_prints_the_error_papi_kept() {
    system_papi_or_skip!();
    let Some((theirs, ours)) = on_both("errors", &[]) else {
        skip!(
            Need::System,
            "Debian's PAPI disabled its perf_event component here"
        );
    };
    assert!(
        theirs.contains("query an empty preset slot = -7; perror: Invalid argument\n"),
        "{theirs}"
    );
    compare(&theirs, &ours, |t, o| t == o);
}

/// Event names as PAPI 7.0 reads them (tests/c/names.c on both libraries, PAPI's rocm_smi
/// and sysdetect components disabled so that a name no component knows is PAPI_ENOEVNT on
/// both): the `perf::` PMU as written, the event in any case, its qualifiers as libpfm4
/// spells them and at most 64, each spelling its own code and named back as written, no code
/// for a qualified preset or a name with blanks. Where PAPI 7.0 gives a code for a name its
/// add refuses (`perf::TASK-CLOCK:u=1:u=0`, `:cpu=-1`, 65 qualifiers once an add has failed),
/// ours refuses both with the add's answer.
#[test]
fn names_answer_as_papi() {
    system_papi_or_skip!();
    let Some((theirs, ours)) = on_both("names", &[]) else {
        skip!(
            Need::System,
            "Debian's PAPI disabled its perf_event component here"
        );
    };
    assert!(
        theirs.contains("'PERF::PAGE-FAULTS' add -7 code -7"),
        "{theirs}"
    );
    compare(&theirs, &ours, |t, o| {
        if t == o {
            return true;
        }
        let (Some((t_name, t_rest)), Some((o_name, o_rest))) =
            (t.split_once(" code "), o.split_once(" code "))
        else {
            return false;
        };
        let add = t_name.rsplit(" add ").next().unwrap_or("");
        t_name == o_name
            && add != "0"
            && t_rest.starts_with("0 ")
            && o_rest == format!("{add} back 99 ''")
    });
}

/// events/data/papi/presets.toml is papi/gen/presets.c's output on the PAPI installed here:
/// PAPI 7.0's presets (the oracle: Debian's libpapi.so.7.0) read through its own interface.
/// Fails when the table is stale or was edited by hand (regenerate as the generator's header
/// says).
#[test]
fn the_preset_table_is_papis() {
    system_papi_or_skip!();
    let version = std::process::Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", "libpapi7.0"])
        .output()
        .ok()
        .filter(|o| o.status.success() && !o.stdout.is_empty());
    let Some(version) = version else {
        skip!(Need::Tools, "dpkg-query does not name Debian's libpapi7.0");
    };
    let version = String::from_utf8_lossy(&version.stdout).into_owned();
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-presets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let generator = dir.join("presets");
    let built = std::process::Command::new("cc")
        .arg(crate::common::manifest().join("gen/presets.c"))
        .arg("-o")
        .arg(&generator)
        .arg("-lpapi")
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    let out = crate::common::run(&generator, &[&version], false);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{out:?}");
    let generated = String::from_utf8(out.stdout).unwrap();
    let shipped =
        std::fs::read_to_string(crate::common::manifest().join("../events/data/papi/presets.toml"))
            .unwrap();
    assert!(
        generated == shipped,
        "events/data/papi/presets.toml differs from PAPI {version}'s presets: regenerate it \
         (papi/gen/presets.c)"
    );
    assert_eq!(shipped.matches("{ name = \"PAPI_").count(), 108);
}
