//! Where the library counts: a whole process (every thread it has and creates), every CPU,
//! and a command counted from its exec with the caller's environment and streams.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};

use counterhal::OpenOptions;
use counterhal::advanced::MultiSet;
use counterhal::advanced::{CountedCommand, Follow};
use counterhal::prelude::*;
use counterhal::time::thread_cpu_ns;
use counterhal::{Context, ErrorKind};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

fn backend() -> Option<Chosen> {
    open_default()
        .ok()
        .filter(|chosen| chosen.resolve("task-clock").is_ok())
}

macro_rules! backend_or_skip {
    () => {
        match backend() {
            Some(backend) => backend,
            None => skip!(Need::System, "no backend here counts software events"),
        }
    };
}

/// `registration`'s device model on `context`'s CPU; `None` where it has none, or in a build
/// without the device models, whose error names the feature that brings them (the facade's
/// defaults leave them out; `cargo test --workspace` builds them for the command).
fn modeled(
    registration: &counterhal::Registration,
    context: &Context,
) -> Option<counterhal::advanced::AnyBackend> {
    match (registration.model?)(context) {
        Ok(backend) => Some(backend),
        Err(e) if !cfg!(feature = "device-models") => {
            assert!(e.message().contains("`device-models` feature"), "{e}");
            None
        }
        Err(e) => panic!("{}'s device model: {e}", registration.name),
    }
}

/// Spins until this thread has used `ms` of CPU time; returns the CPU time used.
fn spin_cpu(ms: u64) -> u64 {
    let start = thread_cpu_ns();
    while thread_cpu_ns() - start < ms * 1_000_000 {
        std::hint::black_box(0u64);
    }
    thread_cpu_ns() - start
}

#[test]
fn a_process_is_every_thread_it_has_and_creates() {
    let backend = backend_or_skip!();
    let task_clock = counterhal_hal::DynBackend::dyn_resolve(&backend, "task-clock").unwrap();
    // One worker exists before the counters open, one is created after.
    let gate = Arc::new(Barrier::new(2));
    let early = {
        let gate = gate.clone();
        std::thread::spawn(move || {
            gate.wait();
            spin_cpu(60)
        })
    };
    let attach = Target::Process(std::process::id());
    let mut set = match MultiSet::open(
        backend.backend(),
        &[task_clock],
        &attach,
        &OpenOptions::ungrouped(),
        &counterhal::system::System::host(),
    ) {
        Ok(set) => set,
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            gate.wait();
            early.join().unwrap();
            skip!(Need::Privilege, "attaching to this process's threads: {e}");
        }
        Err(e) => panic!("{e}"),
    };
    assert!(
        set.places().count() >= 2,
        "this test process has several threads"
    );
    set.enable().unwrap();
    gate.wait();
    let late = std::thread::spawn(|| spin_cpu(60));
    let worked = early.join().unwrap() + late.join().unwrap();
    set.disable().unwrap();
    let total = set.read_to_vec().unwrap()[0].value;
    // Both workers' CPU time is in the sum (task-clock counts ns of CPU); one alone is not.
    assert!(
        total >= worked * 95 / 100,
        "task-clock over the process {total} ns, the two workers used {worked} ns"
    );
    let each = set.read_each().unwrap();
    assert_eq!(each.len(), set.places().count());
    let summed: u64 = each.iter().map(|(_, r)| r[0].value).sum();
    assert_eq!(summed, total, "the per-thread readings add up to the total");
}

#[test]
fn a_process_that_does_not_exist_is_not_found() {
    let backend = backend_or_skip!();
    let task_clock = counterhal_hal::DynBackend::dyn_resolve(&backend, "task-clock").unwrap();
    // No process has id u32::MAX (pid_max is at most 2^22).
    let Err(error) = MultiSet::open(
        backend.backend(),
        &[task_clock],
        &Target::Process(u32::MAX),
        &OpenOptions::ungrouped(),
        &counterhal::system::System::host(),
    ) else {
        panic!("opened on a process that does not exist");
    };
    assert!(
        matches!(error.kind(), ErrorKind::NotFound | ErrorKind::InvalidInput),
        "{error}"
    );
}

/// A list of CPUs past those online is refused before it is expanded, on every target that
/// takes one: `0-4294967295` would be four billion targets (96 GiB asked of the allocator,
/// and the process aborted, before this check). Oracle: the CPUs online
/// (`/sys/devices/system/cpu/online`), and the clock: refused as quickly as one CPU past them.
#[test]
fn a_cpu_list_past_the_online_cpus_is_refused_before_it_is_expanded() {
    let backend = backend_or_skip!();
    let online = counterhal::online_cpus(&counterhal::system::System::host());
    let past = online.last().unwrap() + 1;
    let started = std::time::Instant::now();
    for cpus in [
        counterhal::CpuList::range(0, u32::MAX),
        counterhal::CpuList::range(0, 99_999_999),
        counterhal::CpuList::range(past, past),
        counterhal::CpuList::default(),
    ] {
        for target in [
            Target::Cpus(cpus.clone()),
            Target::cgroup("/sys/fs/cgroup", Some(cpus.clone())),
        ] {
            let error = backend
                .open_named(&["task-clock"], &target, &OpenOptions::default())
                .map(|_| ())
                .unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidInput, "{target:?}: {error}");
            assert!(error.to_string().contains(&online.to_string()), "{error}");
        }
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
}

/// `open_named_counting` counts what counts here and leaves out the rest with why, as perf
/// stat prints `<not supported>`: on a machine without a hardware PMU, `cycles`. Oracle:
/// `open_named` of each event alone (the same backend's own verdict on it), and the work
/// (a thread's task clock runs while it spins).
#[test]
fn open_named_counting_leaves_out_what_does_not_count_here() {
    let backend = backend_or_skip!();
    let names = ["task-clock", "cycles", "page-faults"];
    let alone: Vec<Result<(), counterhal::Error>> = names
        .iter()
        .map(|name| {
            backend
                .open_named(&[name], &Target::ThisThread, &OpenOptions::default())
                .map(|_| ())
        })
        .collect();
    let partial = backend
        .open_named_counting(&names, &Target::ThisThread, &OpenOptions::default())
        .unwrap();
    let expected: Vec<(usize, ErrorKind)> = alone
        .iter()
        .enumerate()
        .filter_map(|(at, result)| result.as_ref().err().map(|e| (at, e.kind())))
        .collect();
    let left_out: Vec<(usize, ErrorKind)> = partial
        .left_out
        .iter()
        .map(|(at, e)| (*at, e.kind()))
        .collect();
    assert_eq!(left_out, expected);
    let mut set = partial.set.expect("task-clock counts everywhere");
    set.enable().unwrap();
    spin_cpu(5);
    set.disable().unwrap();
    let readings = set.read_to_vec().unwrap();
    assert_eq!(readings.len(), names.len() - expected.len());
    assert!(readings[0].value > 0, "{readings:?}");
    let typo = backend.open_named_counting(
        &["task-clock", "no-such-event"],
        &Target::ThisThread,
        &OpenOptions::default(),
    );
    assert_eq!(
        typo.map(|_| ()).unwrap_err().kind(),
        ErrorKind::InvalidEvent
    );
}

#[test]
fn all_cpus_read_per_cpu_and_summed() {
    let backend = backend_or_skip!();
    let cpu_clock = counterhal_hal::DynBackend::dyn_resolve(&backend, "cpu-clock").unwrap();
    let mut set = match MultiSet::open(
        backend.backend(),
        &[cpu_clock],
        &Target::AllCpus,
        &OpenOptions::ungrouped(),
        &counterhal::system::System::host(),
    ) {
        Ok(set) => set,
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            skip!(Need::Privilege, "counting every CPU: {e}")
        }
        Err(e) => panic!("{e}"),
    };
    let online = online_cpus(&counterhal::system::System::host());
    assert_eq!(set.places().count() as u64, online.len());
    set.enable().unwrap();
    spin_cpu(20);
    set.disable().unwrap();
    let each = set.read_each().unwrap();
    let cpus: Vec<Place> = each.iter().map(|(place, _)| place.clone()).collect();
    let expected: Vec<Place> = online.iter().map(Place::Cpu).collect();
    assert_eq!(cpus, expected);
    let total = set.read_to_vec().unwrap()[0].value;
    let summed: u64 = each.iter().map(|(_, r)| r[0].value).sum();
    assert_eq!(total, summed);
    // cpu-clock per CPU counts wall time on that CPU: every CPU ran at least our 20 ms spin
    // on one of them.
    assert!(total >= 20_000_000, "cpu-clock over every CPU: {total} ns");
}

#[test]
fn a_command_is_counted_from_its_exec_with_the_callers_environment_and_streams() {
    let backend = backend_or_skip!();
    let events = [
        counterhal_hal::DynBackend::dyn_resolve(&backend, "task-clock").unwrap(),
        counterhal_hal::DynBackend::dyn_resolve(&backend, "page-faults").unwrap(),
    ];
    let mut command = Command::new("/bin/sh");
    command
        .args(["-c", "echo \"$GREETING from $(pwd)\"; exit 3"])
        .env("GREETING", "hello")
        .current_dir("/")
        .stdout(Stdio::piped());
    let mut counted = CountedCommand::launch(
        backend.backend(),
        &events,
        command,
        &OpenOptions::ungrouped(),
        &[],
        Follow::Children,
    )
    .unwrap();
    assert!(counted.child().is_none(), "no handle before the start");
    counted.start().unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(counted.child().unwrap().stdout.as_mut().unwrap(), &mut out)
        .unwrap();
    let count = counted.wait().unwrap();
    assert_eq!(out, "hello from /\n");
    assert_eq!(count.exit.status.code(), Some(3));
    assert_eq!(count.readings.len(), 2);
    assert!(count.readings[0].as_ref().unwrap().value > 0);
    assert!(count.readings[1].as_ref().unwrap().value > 0);
}

#[test]
fn a_command_reports_per_event_and_how_it_ended() {
    let backend = backend_or_skip!();
    let mut events = vec![counterhal_hal::DynBackend::dyn_resolve(&backend, "task-clock").unwrap()];
    let cycles = counterhal_hal::DynBackend::dyn_resolve(&backend, "cycles");
    if let Ok(cycles) = &cycles {
        events.push(cycles.clone());
    }
    let mut kill = Command::new("/bin/sh");
    kill.args(["-c", "kill -9 $$"]);
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    let count = backend
        .count_command(&names, kill, &OpenOptions::ungrouped())
        .unwrap();
    assert_eq!(count.exit.status.signal(), Some(9));
    assert!(count.readings[0].is_ok());
    // On a machine without a PMU cycles is that event's error alone.
    if events.len() == 2
        && let Err(e) = &count.readings[1]
    {
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    }
    let missing = Command::new("/nonexistent/program");
    let error = backend
        .count_command(&names, missing, &OpenOptions::ungrouped())
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotFound, "{error}");
}

#[test]
fn a_per_cpu_backend_says_it_cannot_follow_a_command_and_what_to_count_instead() {
    for (name, cpu, instead) in [
        ("pctr", "p6", "Target::ThisThread"),
        ("msr", "skl", "Target::AllCpus"),
    ] {
        let context = Context::new(None, Some(cpu)).unwrap();
        let Some(backend) = modeled(counterhal::registration(name).unwrap(), &context) else {
            continue;
        };
        let event = counterhal_hal::DynBackend::dyn_resolve(&backend, "cycles").unwrap();
        let error = CountedCommand::launch(
            &backend,
            &[event],
            Command::new("/bin/true"),
            &OpenOptions::default(),
            &[],
            Follow::Children,
        )
        .err()
        .unwrap();
        assert_eq!(error.kind(), ErrorKind::Unsupported, "{name}: {error}");
        assert!(error.hint().unwrap().contains(instead), "{name}: {error}");
        // Nor the command alone.
        let event = counterhal_hal::DynBackend::dyn_resolve(&backend, "cycles").unwrap();
        let alone = CountedCommand::launch(
            &backend,
            &[event],
            Command::new("/bin/true"),
            &OpenOptions::default(),
            &[],
            Follow::CommandOnly,
        );
        assert_eq!(
            alone.err().map(|e| e.kind()),
            Some(ErrorKind::Unsupported),
            "{name}"
        );
    }
}

/// Every backend with a device model (the registry's), on Skylake, takes each target or says
/// it is unsupported, or for CPUs that its driver refuses an unprivileged caller.
#[test]
fn every_backend_takes_each_place_or_says_unsupported() {
    let context = Context::new(None, Some("skl")).unwrap();
    // Every backend with a device model, counted on the model.
    for registration in counterhal::REGISTRY {
        let name = registration.name;
        let Some(backend) = modeled(registration, &context) else {
            continue;
        };
        let event =
            counterhal_hal::DynBackend::dyn_resolve(&backend, "INST_RETIRED.ANY_P").unwrap();
        for attach in [
            Target::ThisThread,
            Target::Thread(std::process::id()),
            Target::Process(std::process::id()),
            Target::AllCpus,
            Target::Cpus("0".parse().unwrap()),
            Target::cgroup(counterhal_conformance::fixtures::temp_dir(), None),
        ] {
            match MultiSet::open(
                &backend,
                std::slice::from_ref(&event),
                &attach,
                &OpenOptions::default(),
                &counterhal::system::System::host(),
            ) {
                Ok(mut set) => {
                    set.enable().unwrap();
                    set.disable().unwrap();
                    assert_eq!(set.read_to_vec().unwrap().len(), 1);
                }
                // A driver model whose caller is unprivileged (hwpmc's, with FreeBSD's
                // defaults) refuses to count CPUs as the driver does: no permission.
                Err(e) if matches!(attach, Target::AllCpus | Target::Cpus(_)) => {
                    assert!(
                        matches!(
                            e.kind(),
                            ErrorKind::Unsupported | ErrorKind::PermissionDenied
                        ),
                        "{name} {attach:?}: {e}"
                    );
                }
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Unsupported, "{name} {attach:?}: {e}");
                }
            }
        }
    }
}

#[test]
fn a_command_counts_groups_and_lone_events_as_asked() {
    let backend = backend_or_skip!();
    let events = [
        counterhal_hal::DynBackend::dyn_resolve(&backend, "task-clock").unwrap(),
        counterhal_hal::DynBackend::dyn_resolve(&backend, "page-faults").unwrap(),
        counterhal_hal::DynBackend::dyn_resolve(&backend, "context-switches").unwrap(),
    ];
    let mut command = Command::new("/bin/sh");
    command.args(["-c", "exit 0"]);
    let options = OpenOptions::ungrouped();
    let counted = CountedCommand::launch(
        backend.backend(),
        &events,
        command,
        &options,
        &[vec![0, 2]],
        Follow::Children,
    );
    let mut counted = counted.unwrap();
    counted.start().unwrap();
    let count = counted.wait().unwrap();
    assert_eq!(count.readings.len(), 3);
    // The group's members ran for the same time; the lone event was counted too.
    let clock = count.readings[0].as_ref().unwrap();
    let switches = count.readings[2].as_ref().unwrap();
    assert!(clock.value > 0);
    assert_eq!(
        clock.time_enabled, switches.time_enabled,
        "{clock:?} {switches:?}"
    );
    assert!(count.readings[1].as_ref().unwrap().value > 0);

    // A group is counted all together or not at all: with an event this machine lacks
    // (cycles without a PMU), the group's other member fails with it; alone, it is counted.
    if let Err(lacking) =
        counterhal_hal::DynBackend::dyn_resolve(&backend, "cycles").and_then(|cycles| {
            let mut command = Command::new("/bin/sh");
            command.args(["-c", "exit 0"]);
            let both = [events[0].clone(), cycles];
            let mut counted = CountedCommand::launch(
                backend.backend(),
                &both,
                command,
                &options,
                &[vec![0, 1]],
                Follow::Children,
            )?;
            counted.start()?;
            let count = counted.wait()?;
            match &count.readings[1] {
                Ok(_) => Ok(()),
                Err(e) => {
                    assert!(
                        count.readings[0].is_err(),
                        "a group is counted whole or not at all"
                    );
                    Err(e.clone())
                }
            }
        })
    {
        println!("cycles not counted here: {lacking}");
    }

    for (groups, says) in [
        (vec![vec![]], "empty group"),
        (vec![vec![0, 3]], "index 3 is past the 3 events"),
        (vec![vec![0], vec![1, 0]], "in two groups"),
    ] {
        let mut command = Command::new("/bin/sh");
        command.args(["-c", "exit 0"]);
        let error = CountedCommand::launch(
            backend.backend(),
            &events,
            command,
            &options,
            &groups,
            Follow::Children,
        )
        .err()
        .unwrap();
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
        assert!(error.to_string().contains(says), "{error}");
    }
}

#[test]
fn a_counted_command_can_be_polled_and_stopped_with_sigterm() {
    let backend = backend_or_skip!();
    let events = [counterhal_hal::DynBackend::dyn_resolve(&backend, "task-clock").unwrap()];
    let mut command = Command::new("/bin/sh");
    // The command spins until SIGTERM, then exits with a status of its own choosing.
    command.args(["-c", "trap 'exit 4' TERM; while :; do :; done"]);
    let mut counted = CountedCommand::launch(
        backend.backend(),
        &events,
        command,
        &OpenOptions::ungrouped(),
        &[],
        Follow::Children,
    )
    .unwrap();
    assert_eq!(
        counted.try_wait().unwrap_err().kind(),
        ErrorKind::InvalidInput,
        "not started"
    );
    counted.start().unwrap();
    assert_eq!(counted.try_wait().unwrap(), None, "it spins");
    std::thread::sleep(std::time::Duration::from_millis(30));
    let exit = counted.stop(std::time::Duration::from_secs(30)).unwrap();
    assert_eq!(exit.status.code(), Some(4), "SIGTERM came first");
    assert_eq!(counted.try_wait().unwrap(), Some(exit));
    let count = counted.wait().unwrap();
    assert_eq!(count.exit, exit);
    let spun = count.readings[0].as_ref().unwrap().value;
    assert!(spun > 0, "the spin was counted");
    assert!(
        count.exit.user_time + count.exit.system_time > std::time::Duration::ZERO,
        "the rusage came with the end"
    );
}

/// Over every CPU, an event of a PMU with a `cpumask` (an uncore or energy PMU: the kernel
/// counts its box once per package whichever CPU of it the event is opened on) opens on the
/// cpumask's CPUs alone, as `perf stat -a` opens it (perf 6.1 under such a tree is the oracle
/// of cli/tests/uncore_stat.rs and backend-linux/tests/perf_pmus.rs: its opens name the
/// cpumask's CPUs only); the other events open on every CPU; CPUs the caller names take
/// every event, as `perf stat -C` does. The tree's `power` PMU has this kernel's msr PMU's
/// type and its `tsc` event, so it opens and counts here; its cpumask is CPU 0. The alias's
/// `.unit` and `.scale` reach the caller as the event's [`counterhal::Unit`].
#[cfg(target_os = "linux")]
#[test]
fn over_every_cpu_a_pmu_with_a_cpumask_opens_on_its_cpus_alone() {
    let real = std::path::Path::new("/sys/bus/event_source/devices");
    let Ok(msr) = std::fs::read_to_string(real.join("msr/type")) else {
        skip!(Need::System, "no msr PMU in sysfs to lend its type");
    };
    let cpus = counterhal::online_cpus(&counterhal::system::System::host());
    if cpus.len() < 2 {
        skip!(Need::System, "one CPU online: every CPU is the cpumask's");
    }
    let root = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-cpumask-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let devices = root.join("bus/event_source/devices");
    std::fs::create_dir_all(&devices).unwrap();
    for pmu in std::fs::read_dir(real).unwrap().flatten() {
        // This machine's PMUs as they are, beside the fake one (which takes the place of a
        // real `power` PMU, on a machine whose kernel has RAPL's).
        if pmu.file_name() != "power" {
            std::os::unix::fs::symlink(pmu.path(), devices.join(pmu.file_name())).unwrap();
        }
    }
    let power = devices.join("power");
    std::fs::create_dir_all(power.join("format")).unwrap();
    std::fs::create_dir_all(power.join("events")).unwrap();
    std::fs::write(power.join("type"), &msr).unwrap();
    std::fs::write(power.join("cpumask"), "0\n").unwrap();
    std::fs::write(power.join("format/event"), "config:0-63\n").unwrap();
    // The msr PMU's tsc is its event 0.
    std::fs::write(power.join("events/energy-pkg"), "event=0x0\n").unwrap();
    // RAPL's unit and scale (arch/x86/events/rapl.c: 2^-32 J), as the kernel gives them
    // beside the alias (Documentation/ABI/testing/sysfs-bus-event_source-devices-events).
    std::fs::write(power.join("events/energy-pkg.unit"), "Joules\n").unwrap();
    std::fs::write(
        power.join("events/energy-pkg.scale"),
        "2.3283064365386962890625e-10\n",
    )
    .unwrap();
    let context = Context::new(None, None).unwrap();
    let backend = match counterhal_linux::probe(
        context.database().clone(),
        context.model().map(str::to_owned),
        counterhal::system::System::host().with_sysfs(&root),
    ) {
        Ok(backend) => backend,
        Err(e) => skip!(Need::System, "the Linux backend does not open here: {e}"),
    };
    let events = ["power/energy-pkg/", "task-clock"]
        .map(|e| counterhal_hal::Backend::resolve(&backend, e).unwrap());
    // What each count is in, as the face gives it to a tool: joules for the alias.
    let joules = counterhal::Unit {
        name: "Joules".to_string(),
        scale: 2f64.powi(-32),
    };
    assert_eq!(events[0].unit.as_ref(), Some(&joules));
    assert_eq!(events[1].unit, None);
    assert_eq!(joules.apply(1 << 32), 1.0);
    let opened = |target: &Target| {
        let mut set = match MultiSet::open(
            &backend,
            &events,
            target,
            &OpenOptions::ungrouped(),
            &counterhal::system::System::host(),
        ) {
            Ok(set) => set,
            Err(e) if e.kind() == ErrorKind::PermissionDenied => return None,
            Err(e) => panic!("{target:?}: {e}"),
        };
        set.enable().unwrap();
        spin_cpu(20);
        set.disable().unwrap();
        Some(set.read_each().unwrap())
    };
    let Some(every) = opened(&Target::AllCpus) else {
        let _ = std::fs::remove_dir_all(&root);
        skip!(
            Need::Privilege,
            "counting every CPU needs perf_event_paranoid 0 or CAP_PERFMON"
        );
    };
    assert_eq!(every.len() as u64, cpus.len(), "{every:?}");
    for (place, row) in &every {
        let on_mask = matches!(place, counterhal::Place::Cpu(0));
        assert_eq!(
            row[0].time_enabled > 0,
            on_mask,
            "power/energy-pkg/ on {place}: {row:?}"
        );
        assert!(row[1].time_enabled > 0, "task-clock on {place}: {row:?}");
    }
    let named = counterhal::CpuList::from_cpus(cpus.iter().take(2));
    let both = opened(&Target::Cpus(named)).unwrap();
    assert!(
        both.iter().all(|(_, row)| row[0].time_enabled > 0),
        "{both:?}"
    );
    let _ = std::fs::remove_dir_all(&root);
}
