//! `--sysfs DIR` (and `COUNTERHAL_SYSFS`): another machine's PMUs, from its sysfs tree, in
//! `encode` and `list`; in `stat`, this machine's tree read from elsewhere. The trees are backend-linux's (tests/data/machines, written from the
//! kernel's PMU definitions), where tests/perf_pmus.rs holds `counterhal_linux::pmu_events` to
//! perf 6.1's opens under each tree; here the command prints what that call gives.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

use crate::common::{
    counterhal, linux_usable, ours, perf, perf_available, result_lines, stderr, stdout,
};

/// The machine trees.
pub(crate) fn machines() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../backend-linux/tests/data/machines")
}

/// Every `pmu/alias/` of a tree's PMUs.
fn aliases(root: &Path) -> Vec<String> {
    let devices = root.join("bus/event_source/devices");
    let mut events = Vec::new();
    for pmu in std::fs::read_dir(&devices).unwrap().flatten() {
        let name = pmu.file_name().to_string_lossy().into_owned();
        for alias in std::fs::read_dir(pmu.path().join("events"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let alias = alias.file_name().to_string_lossy().into_owned();
            if !alias.contains('.') {
                events.push(format!("{name}/{alias}/"));
            }
        }
    }
    events.sort();
    events
}

/// One open as the JSON says it: pmu, type, config, config1, config2, cpu, scale, unit.
type Open = (
    String,
    u64,
    u64,
    u64,
    u64,
    i64,
    Option<String>,
    Option<String>,
);

fn open_of(object: &Value) -> Open {
    let number = |key: &str| {
        object[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key}: {object}"))
    };
    (
        object["pmu"].as_str().unwrap().to_string(),
        number("type"),
        number("config"),
        number("config1"),
        number("config2"),
        object["cpu"].as_i64().unwrap(),
        object.get("scale").map(|s| s.to_string()),
        object.get("unit").map(|u| u.as_str().unwrap().to_string()),
    )
}

/// Oracle: perf 6.1, through `counterhal_linux::pmu_events`, which backend-linux's
/// tests/perf_pmus.rs holds to perf's opens under these trees. `encode --sysfs ROOT --json`
/// prints, for every alias of every PMU of the Sapphire Rapids, Skylake client, Zen 4 and
/// Alder Lake trees, one object per PMU and CPU of its cpumask (a hybrid core PMU's `cpus`),
/// with the attr, `scale` and `unit`, as that call gives them; `COUNTERHAL_SYSFS` does what
/// `--sysfs` does.
#[test]
fn encode_prints_every_open_of_another_machines_pmus() {
    let mut compared = 0;
    for machine in ["spr-2s", "skl-client", "zen4", "adl"] {
        let root = machines().join(machine);
        let events = aliases(&root);
        let mut args = vec!["encode", "--json", "--sysfs", root.to_str().unwrap()];
        args.extend(events.iter().map(String::as_str));
        let out = counterhal(&args);
        assert!(out.status.success(), "{machine}: {}", stderr(&out));
        let array: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
        let mut printed: BTreeMap<String, Vec<Open>> = BTreeMap::new();
        for object in &array {
            let event = object["event"].as_str().unwrap().to_string();
            printed.entry(event).or_default().push(open_of(object));
        }
        // perf's PMU syntax alone: the backend over the tree for no CPU model, whose opens
        // are those of the PMUs' own aliases (no model's uncore or core table names them).
        let database = std::sync::Arc::new(counterhal_events::Database::shipped().unwrap());
        let context = counterhal::Context::from_parts(
            counterhal::system::System::host(),
            database,
            None,
            None,
        );
        let over_tree = counterhal::REGISTRY
            .iter()
            .find_map(|r| r.sysfs)
            .expect("a backend that reads a sysfs tree")(&context, &root);
        let topology = over_tree
            .dyn_extensions()
            .topology
            .expect("its PMUs' topology");
        for event in &events {
            let ours = topology.opens(event).unwrap().unwrap();
            let expected: Vec<Open> = ours
                .iter()
                .flat_map(|e| {
                    e.open_cpus().into_iter().map(|cpu| {
                        (
                            e.pmu.clone(),
                            u64::from(e.attr.type_),
                            e.attr.config,
                            e.attr.config1,
                            e.attr.config2,
                            i64::from(cpu),
                            e.scale.map(|s| serde_json::json!(s).to_string()),
                            e.unit.clone(),
                        )
                    })
                })
                .collect();
            assert_eq!(printed.get(event), Some(&expected), "{machine} {event}");
            compared += 1;
        }
        // The environment names the root as the option does.
        let out = Command::new(crate::common::bin())
            .args(["encode", "--json", "power/energy-pkg/"])
            .env("COUNTERHAL_SYSFS", &root)
            .output()
            .unwrap();
        let by_env: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
        let by_option: Vec<&Value> = array
            .iter()
            .filter(|o| o["event"] == "power/energy-pkg/")
            .collect();
        assert_eq!(by_env.iter().collect::<Vec<_>>(), by_option, "{machine}");
    }
    println!("{compared} aliases of 3 machines printed as pmu_events gives them");
    assert!(compared > 40);
}

/// Oracle: the kernel's definitions in the Sapphire Rapids tree (rapl.c, uncore_snbep.c) and
/// perf 6.1's opens under it (by hand; tests/perf_pmus.rs in backend-linux): what each shape
/// of PMU event prints, text and JSON, and a refusal.
#[test]
fn encode_shapes_on_a_two_socket_tree() {
    let root = machines().join("spr-2s");
    let root = root.to_str().unwrap();
    let out = counterhal(&[
        "encode",
        "--json",
        "--sysfs",
        root,
        "power/energy-pkg/",
        "imc/cas_count_read/",
        "uncore_cha_0/event=0x1,umask=0x123456789,filter_tid=3/",
        "uncore_imc_0/bogus=1/",
        "msr/tsc/",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("uncore_imc_0/bogus=1/: unknown term `bogus` for PMU"),
        "{}",
        stderr(&out)
    );
    let array: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    let of =
        |event: &str| -> Vec<&Value> { array.iter().filter(|o| o["event"] == event).collect() };
    let energy = of("power/energy-pkg/");
    assert_eq!(energy.len(), 2);
    assert_eq!(
        (energy[0]["cpu"].as_i64(), energy[1]["cpu"].as_i64()),
        (Some(0), Some(56))
    );
    assert_eq!(energy[0]["type"], 11);
    assert_eq!(energy[0]["config"], 2);
    assert_eq!(energy[0]["unit"], "Joules");
    assert_eq!(energy[0]["scale"].as_f64(), Some(2f64.powi(-32)));
    let imc = of("imc/cas_count_read/");
    assert_eq!(imc.len(), 8, "4 boxes on 2 CPUs");
    assert!(
        imc.iter()
            .all(|o| o["config"] == 0xcf05 && o["unit"] == "MiB")
    );
    let cha = of("uncore_cha_0/event=0x1,umask=0x123456789,filter_tid=3/");
    assert_eq!(cha[0]["config"].as_u64(), Some(0x0123_4567_0000_8901));
    assert_eq!(cha[0]["config1"], 3);
    assert!(cha[0].get("scale").is_none() && cha[0].get("config3").is_none());
    let refused = of("uncore_imc_0/bogus=1/");
    assert!(
        refused[0]["error"]
            .as_str()
            .unwrap()
            .contains("unknown term")
    );
    let tsc = of("msr/tsc/");
    assert_eq!(tsc.len(), 1);
    assert_eq!(tsc[0]["cpu"], -1, "no cpumask: any CPU");

    let text = stdout(&counterhal(&[
        "encode",
        "--sysfs",
        root,
        "uncore_imc/cas_count_write/",
        "power/energy-ram/",
    ]));
    assert!(
        text.contains("on 4 PMUs (uncore_imc_0, uncore_imc_1, uncore_imc_2, uncore_imc_3)"),
        "{text}"
    );
    assert!(text.contains("  CPUs: 0,56"), "{text}");
    assert!(text.contains("  scale: 6.103515625e-5 MiB"), "{text}");
    assert!(text.contains("power/energy-ram/ [linux, "), "{text}");

    // A core event opens on any CPU (`cpu` -1, as issue 47 asks of every attr); `cpu_model`
    // is the model.
    let out = counterhal(&[
        "encode",
        "--json",
        "--sysfs",
        root,
        "--cpu-model",
        "spr",
        "cycles",
    ]);
    let array: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(array[0]["cpu"], -1);
    assert_eq!(array[0]["cpu_model"], "spr");

    let out = counterhal(&["encode", "--sysfs", "/nonexistent", "cycles"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("holds no bus/event_source/devices"));
    let out = counterhal(&["encode", "--backend", "msr", "--sysfs", root, "cycles"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Oracle: the kernel's definitions in the Zen 4 tree (rapl.c, msr.c): `list --sysfs` shows
/// the tree's PMU aliases with their units and scales, not this machine's.
#[test]
fn list_shows_another_machines_pmus() {
    let root = machines().join("zen4");
    let text = stdout(&counterhal(&[
        "list",
        "--sysfs",
        root.to_str().unwrap(),
        "energy",
    ]));
    assert!(
        text.contains("power/energy-pkg/")
            && text
                .contains("power PMU: event=0x02, in Joules, scale 2.3283064365386962890625e-10"),
        "{text}"
    );
    let text = stdout(&counterhal(&[
        "list",
        "--sysfs",
        root.to_str().unwrap(),
        "msr/",
    ]));
    assert!(text.contains("msr/irperf/"), "{text}");
    assert!(
        !text.contains("msr/smi/"),
        "Zen 4 has no SMI counter: {text}"
    );
}

/// Oracle: the kernel, through this machine's own PMU directory: `stat --sysfs ROOT` resolves
/// PMU events against ROOT's tree and opens them here. A root whose tree is this machine's
/// (a link to `/sys`) counts `software/config=2/` (page faults) as `/sys` does; a root whose
/// `bus/event_source/devices` links out of it is refused, naming the link; a tree without a
/// `software` PMU (the Sapphire Rapids tree) has no such event.
#[test]
fn stat_reads_pmus_from_the_root_and_opens_them_here() {
    linux_or_skip!();
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-sysfs-root-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("out/bus/event_source")).unwrap();
    let root = dir.join("sys");
    std::os::unix::fs::symlink("/sys", &root).unwrap();
    let out = dir.join("out");
    std::os::unix::fs::symlink(
        "/sys/bus/event_source/devices",
        out.join("bus/event_source/devices"),
    )
    .unwrap();
    let linked_out = counterhal(&["list", "--sysfs", out.to_str().unwrap(), "software"]);
    assert_eq!(linked_out.status.code(), Some(2), "{}", stderr(&linked_out));
    assert!(
        stderr(&linked_out).contains("bus/event_source/devices leads out of the sysfs tree"),
        "{}",
        stderr(&linked_out)
    );
    let count = |args: &[&str]| -> Option<u64> {
        let mut all = vec!["stat", "-x,"];
        all.extend(args);
        all.extend(["-e", "software/config=2/", "--", "true"]);
        let out = counterhal(&all);
        let text = stderr(&out);
        let line = text.lines().find(|l| l.contains("software/config=2/"))?;
        line.split(',').next()?.parse().ok()
    };
    let here = count(&[]);
    let through_root = count(&["--sysfs", root.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(here.is_some_and(|n| n > 0), "{here:?}");
    assert!(through_root.is_some_and(|n| n > 0), "{through_root:?}");
    let spr = machines().join("spr-2s");
    let out = counterhal(&[
        "stat",
        "--sysfs",
        spr.to_str().unwrap(),
        "-e",
        "software/config=2/",
        "true",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no PMU `software`"),
        "{}",
        stderr(&out)
    );
}

/// `encode -M`: every event a metric reads (through the metrics it names, constants such as
/// `duration_time` aside), each encoded as `encode EVENT` encodes it, each JSON object naming
/// its metric. Oracle: the per-event encoding, which backend-linux's tests/perf_uncore.rs
/// holds to perf 6.1's opens of the same names under this tree; the events are those of the
/// metric's formula in the kernel's perf JSON (`(64 * (UNC_M_CAS_COUNT.RD +
/// UNC_M_CAS_COUNT.WR) / 1e9) / duration_time` on Sapphire Rapids). An unknown metric is bad
/// input, named.
#[test]
fn encode_m_encodes_every_event_a_metric_reads() {
    let root = machines().join("spr-2s");
    let root = root.to_str().unwrap();
    let encode = |args: &[&str]| {
        let mut all = vec!["encode", "--json", "--sysfs", root, "--cpu-model", "spr"];
        all.extend_from_slice(args);
        let out = counterhal(&all);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        serde_json::from_slice::<Vec<Value>>(&out.stdout).expect("JSON")
    };
    let metric = "Info_System_DRAM_BW_Use";
    let by_metric = encode(&["-M", metric]);
    let events = ["UNC_M_CAS_COUNT.RD", "UNC_M_CAS_COUNT.WR"];
    let mut expected = Vec::new();
    for event in events {
        for mut object in encode(&[event]) {
            object["metric"] = Value::from(metric);
            expected.push(object);
        }
    }
    // Four memory controllers on each of two sockets' cpumask CPUs, per event.
    assert_eq!(expected.len(), 16, "{expected:#?}");
    assert_eq!(by_metric, expected);
    let text = counterhal(&[
        "encode",
        "--sysfs",
        root,
        "--cpu-model",
        "spr",
        "-M",
        metric,
    ]);
    assert!(
        stdout(&text).starts_with(&format!("{metric} = ")),
        "{}",
        stdout(&text)
    );
    let unknown = counterhal(&["encode", "--cpu-model", "spr", "-M", "NoSuchMetric"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("unknown metric or group `NoSuchMetric`"),
        "{}",
        stderr(&unknown)
    );
}

/// A generic hardware or cache event on a hybrid machine opens on each core PMU's own CPUs,
/// the PMU's type in its config's upper half. Oracle: perf 6.1 under the Alder Lake tree
/// (`perf stat -vv -a -e EVENT true`, `fixtures::perf_tree`): `cycles` is type 0, config
/// 0x400000000 on cpu_core's CPUs 0-15 and 0xa00000000 on cpu_atom's 16-23. (Before this, its
/// CPUs were every CPU of the host.)
#[test]
fn generic_events_open_on_each_hybrid_core_pmus_cpus_as_perf_opens_them() {
    use counterhal_conformance::fixtures::perf_tree::{
        Asked, build_shim, parse_perf, run_perf, unready,
    };
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    let root = machines().join("adl");
    let events = ["cycles", "instructions", "LLC-load-misses"].map(String::from);
    let shim = build_shim("generic-hybrid").unwrap();
    let output = run_perf(
        &root.join("bus/event_source/devices"),
        &shim,
        Asked::Events,
        &events,
        None,
    )
    .unwrap();
    let perf = parse_perf(&output);
    for event in &events {
        let out = counterhal(&[
            "encode",
            "--json",
            "--sysfs",
            root.to_str().unwrap(),
            "--cpu-model",
            "adl_glc",
            event,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let array: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
        let mut ours: Vec<(u64, u64, i64)> = array
            .iter()
            .map(|o| {
                let cpu = o["cpu"].as_i64().unwrap_or_else(|| panic!("no CPU in {o}"));
                (
                    o["type"].as_u64().unwrap(),
                    o["config"].as_u64().unwrap(),
                    cpu,
                )
            })
            .collect();
        let mut theirs: Vec<(u64, u64, i64)> = perf[event.as_str()]
            .opens
            .iter()
            .map(|o| (u64::from(o.0), o.1, i64::from(o.4)))
            .collect();
        // perf probes a hybrid cache event once with CPU -1 (`is_event_supported`) before it
        // opens it on each CPU: the probe counts nothing.
        let probed: Vec<(u64, u64)> = theirs.iter().map(|o| (o.0, o.1)).collect();
        theirs.retain(|o| o.2 >= 0 || probed.iter().filter(|p| **p == (o.0, o.1)).count() == 1);
        ours.sort_unstable();
        theirs.sort_unstable();
        assert!(
            ours.len() == 24,
            "{event}: one open per CPU of the tree: {ours:?}"
        );
        assert_eq!(ours, theirs, "{event}: ours, then perf 6.1's");
    }
}

/// A hostile tree: `--sysfs DIR` (and `COUNTERHAL_SYSFS`) reads DIR as sysfs is, so a link out
/// of it (`events/leak -> SECRET`, which `list` showed and `encode` echoed, lowercased, in its
/// error), a file longer than a page and a scale that is not finite and positive are refused
/// by their path, never shown, while the links inside the tree that the real /sys has
/// (`bus/event_source/devices/msr -> ../../../devices/msr`) are followed. Oracle: the kernel's
/// sysfs (fs/sysfs/file.c: an attribute is a regular file of at most a page; the PMU links
/// stay inside /sys) and its drivers' aliases (msr.c's `tsc` is `event=0x00`; rapl.c's scales
/// are finite and positive).
#[test]
fn a_hostile_tree_is_refused_by_path_and_never_shown() {
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-hostile-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let secret = dir.join("secret");
    let root = dir.join("sys");
    let msr = root.join("devices/msr");
    let events = msr.join("events");
    std::fs::create_dir_all(&events).unwrap();
    std::fs::create_dir_all(root.join("bus/event_source/devices")).unwrap();
    std::os::unix::fs::symlink(
        "../../../devices/msr",
        root.join("bus/event_source/devices/msr"),
    )
    .unwrap();
    std::fs::write(&secret, "Root:Secret-Shadow-Line:19000:0:99999:7:::\n").unwrap();
    for (file, text) in [
        ("type", "10\n".to_string()),
        ("format/event", "config:0-63\n".to_string()),
        ("events/tsc", "event=0x00\n".to_string()),
        ("events/huge", "event=0x1,".repeat(1000)),
        ("events/nan", "event=0x1\n".to_string()),
        ("events/nan.scale", "nan\n".to_string()),
        ("events/negative", "event=0x1\n".to_string()),
        ("events/negative.scale", "-1\n".to_string()),
        ("events/vast", "event=0x1\n".to_string()),
        ("events/vast.scale", "1e308\n".to_string()),
    ] {
        std::fs::create_dir_all(msr.join(file).parent().unwrap()).unwrap();
        std::fs::write(msr.join(file), text).unwrap();
    }
    std::os::unix::fs::symlink(&secret, events.join("leak")).unwrap();
    let root_text = root.to_str().unwrap();
    let never_shown = |out: &std::process::Output| {
        let all = format!("{}{}", stdout(out), stderr(out)).to_lowercase();
        assert!(!all.contains("secret-shadow"), "the secret shown: {all}");
    };

    let list = counterhal(&["list", "--sysfs", root_text, "msr/"]);
    never_shown(&list);
    let listed = stdout(&list);
    assert!(
        listed.contains("msr/tsc/") && listed.contains("event=0x00"),
        "{listed}"
    );
    for refused in ["leak", "huge", "nan", "negative", "vast"] {
        assert!(!listed.contains(&format!("msr/{refused}/")), "{listed}");
    }

    let encode = |event: &str| {
        let out = Command::new(crate::common::bin())
            .args(["encode", event])
            .env("COUNTERHAL_SYSFS", &root)
            .output()
            .unwrap();
        never_shown(&out);
        out
    };
    assert!(encode("msr/tsc/").status.success());
    let events_dir = root.join("bus/event_source/devices/msr/events");
    for (event, file, why) in [
        ("msr/leak/", "leak", "leads out of the sysfs tree"),
        ("msr/huge/", "huge", "holds more than 4096 bytes"),
        ("msr/nan/", "nan.scale", "is not finite"),
        ("msr/negative/", "negative.scale", "is not positive"),
        (
            "msr/vast/",
            "vast.scale",
            "is so large that a count times it overflows",
        ),
    ] {
        let out = encode(event);
        assert_eq!(out.status.code(), Some(2), "{event}: {}", stderr(&out));
        let expected = format!("{} {why}", events_dir.join(file).display());
        assert!(
            stderr(&out).contains(&expected),
            "{event}: {}",
            stderr(&out)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// perf's own terms in PMU syntax that set no config bits, side by side with perf 6.1 (`perf
/// stat -x,`, its parse-events.l terms) on this machine's /sys (through `--sysfs /sys`, whose
/// PMU links stay inside it): `name=` names the event's line as perf names it (`foo`,
/// `a.b-c:d`); `freq=` is refused by both (perf: "'freq' is not usable in 'perf stat'");
/// `period=`, which perf stat takes and counts as without it, counterhal refuses naming it
/// perf's sampling period; a name perf's lexer refuses (`1x`) both refuse.
#[test]
fn perfs_name_period_and_freq_terms() {
    perf_or_skip!();
    linux_or_skip!();
    if !Path::new("/sys/bus/event_source/devices/msr/events/tsc").exists() {
        skip!(Need::System, "no msr PMU with its tsc event here");
    }
    let names = |out: &std::process::Output| -> Vec<String> {
        result_lines(out)
            .iter()
            .filter_map(|line| line.split(',').nth(2).map(str::to_string))
            .collect()
    };
    let events = ["-e", "msr/tsc,name=foo/", "-e", "msr/tsc,name=a.b-c:d/"];
    let mut args = vec!["-x,"];
    args.extend(events);
    args.push("true");
    let theirs = perf(&args);
    assert!(theirs.status.success(), "perf: {}", stderr(&theirs));
    let mut with_root = vec!["--sysfs", "/sys"];
    with_root.extend(&args);
    let mine = ours(&with_root);
    assert!(mine.status.success(), "{}", stderr(&mine));
    assert_eq!(names(&mine), names(&theirs), "ours: {}", stderr(&mine));
    assert_eq!(names(&mine), ["foo", "a.b-c:d"]);

    for (event, perf_takes, ours_says) in [
        (
            "msr/tsc,freq=1000/",
            false,
            "`freq` is perf's sampling frequency",
        ),
        (
            "msr/tsc,period=1000/",
            true,
            "`period` is perf's sampling period",
        ),
        (
            "msr/tsc,name=1x/",
            false,
            "`name` takes perf's name of the event",
        ),
    ] {
        let theirs = perf(&["-x,", "-e", event, "true"]);
        assert_eq!(
            theirs.status.success(),
            perf_takes,
            "perf {event}: {}",
            stderr(&theirs)
        );
        let mine = ours(&["-x,", "-e", event, "true"]);
        assert_eq!(mine.status.code(), Some(2), "{event}: {}", stderr(&mine));
        assert!(
            stderr(&mine).contains(ours_says),
            "{event}: {}",
            stderr(&mine)
        );
    }
    let freq = perf(&["-x,", "-e", "msr/tsc,freq=1000/", "true"]);
    assert!(
        stderr(&freq).contains("'freq' is not usable in 'perf stat'"),
        "{}",
        stderr(&freq)
    );
}
