//! `stat` on uncore and energy PMUs, held to perf 6.1 counting the same PMUs. The PMUs are
//! fakes that count for real: a sysfs tree (written here, in a scratch directory) whose
//! `uncore_imc_0`, `uncore_imc_1` and `power` have this kernel's software PMU's `type`, so
//! that their aliases (`event=0x0`, cpu-clock; `event=0x1`, task-clock) open and count on any
//! machine, with a `cpumask` of CPU 0 and the `.scale` and `.unit` of the kernel's
//! `uncore_imc/data_reads/` (MiB) and `power/energy-pkg/` (Joules); and `uncore_msr_0`, with
//! the `msr` PMU's type, which refuses an exclusion as an uncore PMU does. perf reads the tree
//! in a private mount namespace, bind-mounted over /sys/bus/event_source/devices; counterhal
//! reads it with `--sysfs`. Both count system-wide, and print the same lines (event, box
//! names, units, places and their CPU counts, `<not supported>`); counts differ run to run, so
//! each value is checked against its own run time (a clock counts its nanoseconds) times the
//! scale.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

use crate::common::{counterhal, linux_usable, perf_available, running_as_root, stderr};

/// The kernel's scale of the IMC's data reads (64 bytes in MiB) and of RAPL's energy (2^-32 J).
const MIB: f64 = 6.103515625e-5;
const JOULES: f64 = 1.0 / 4_294_967_296.0;

/// The events compared: a wildcard over two boxes, an energy alias, a core event and an
/// uncore event with `:u` (refused by the kernel, printed `<not supported>`).
const EVENTS: &str = "uncore_imc/data_reads/,power/energy-pkg/,cpu-clock,uncore_msr_0/tsc/u";

/// A scratch sysfs root holding the fake PMUs, removed when dropped.
struct Tree(PathBuf);

impl Tree {
    fn devices(&self) -> PathBuf {
        self.0.join("bus/event_source/devices")
    }

    /// Writes the tree for test `test` (each test its own: they run at once); `None` where
    /// this kernel has no software PMU to lend its type.
    fn write(test: &str) -> Option<Tree> {
        let real = Path::new("/sys/bus/event_source/devices");
        let type_of = |pmu: &str| std::fs::read_to_string(real.join(pmu).join("type")).ok();
        let software = type_of("software")?;
        let root = counterhal_conformance::fixtures::temp_dir()
            .join(format!("counterhal-uncore-{}-{test}", std::process::id()));
        let tree = Tree(root);
        let devices = tree.devices();
        let pmu = |name: &str, type_: &str, aliases: &[(&str, &str, f64, &str)]| {
            let dir = devices.join(name);
            std::fs::create_dir_all(dir.join("format")).unwrap();
            std::fs::create_dir_all(dir.join("events")).unwrap();
            std::fs::write(dir.join("type"), type_).unwrap();
            std::fs::write(dir.join("cpumask"), "0\n").unwrap();
            std::fs::write(dir.join("format/event"), "config:0-63\n").unwrap();
            for (alias, terms, scale, unit) in aliases {
                let events = dir.join("events");
                std::fs::write(events.join(alias), format!("{terms}\n")).unwrap();
                if !unit.is_empty() {
                    std::fs::write(
                        events.join(format!("{alias}.scale")),
                        format!("{scale:e}\n"),
                    )
                    .unwrap();
                    std::fs::write(events.join(format!("{alias}.unit")), format!("{unit}\n"))
                        .unwrap();
                }
            }
        };
        let data_reads = [("data_reads", "event=0x0", MIB, "MiB")];
        pmu("uncore_imc_0", &software, &data_reads);
        pmu("uncore_imc_1", &software, &data_reads);
        pmu(
            "power",
            &software,
            &[("energy-pkg", "event=0x1", JOULES, "Joules")],
        );
        let msr = type_of("msr").unwrap_or(software.clone());
        pmu("uncore_msr_0", &msr, &[("tsc", "event=0x0", 1.0, "")]);
        // This machine's other PMUs, as they are.
        for other in ["software", "tracepoint", "breakpoint", "msr"] {
            if let Some(type_) = type_of(other) {
                std::fs::create_dir_all(devices.join(other)).unwrap();
                std::fs::write(devices.join(other).join("type"), type_).unwrap();
            }
        }
        Some(tree)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `perf stat -a -x, ARGS -e EVENTS -- sleep 0.2` with the tree over the PMU directory.
fn perf(tree: &Tree, args: &[&str]) -> Output {
    let script = r#"mount --bind "$1" /sys/bus/event_source/devices || exit 97
        shift
        exec perf stat "$@""#;
    Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(tree.devices())
        .args(["-a", "-e", EVENTS])
        .args(args)
        .args(["--", "sleep", "0.2"])
        .env("LC_ALL", "C")
        .output()
        .expect("run unshare")
}

/// `counterhal stat -a --sysfs ROOT ARGS -e EVENTS -- sleep 0.2`.
fn ours(tree: &Tree, args: &[&str]) -> Output {
    let root = tree.0.to_str().unwrap();
    let mut words = vec!["stat", "-a", "--sysfs", root, "-e", EVENTS];
    words.extend(args);
    words.extend(["--", "sleep", "0.2"]);
    counterhal(&words)
}

/// One line of `-x,` (`lead` fields are the place and its CPU count, as the layout has them).
#[derive(Debug)]
struct Line {
    /// The place (`CPU0`, `S0`, `S0-D0`) and the number of CPUs added up, where printed.
    lead: Vec<String>,
    value: String,
    unit: String,
    event: String,
    runtime: u64,
    percent: String,
}

impl Line {
    /// What must be the same in perf's line and ours.
    fn key(&self) -> (Vec<String>, String, String, String, Option<usize>) {
        let decimals = self.value.split_once('.').map(|(_, d)| d.len());
        let (unit, event) = (self.unit.clone(), self.event.clone());
        (
            self.lead.clone(),
            event,
            unit,
            self.percent.clone(),
            decimals,
        )
    }

    /// The value against what a clock counting for its run time gives, times the scale:
    /// about 1 where the scale was applied (`None` for `<not supported>`).
    fn against_runtime(&self) -> Option<f64> {
        let value: f64 = self.value.parse().ok()?;
        let scale = match self.unit.as_str() {
            "MiB" => MIB,
            "Joules" => JOULES,
            "msec" => 1e-6,
            other => panic!("unit {other:?}"),
        };
        Some(value / (self.runtime as f64 * scale))
    }
}

/// The `-x,` lines of `out`, `lead` fields before the value, sorted (perf lists a wildcard's
/// boxes in its directory's order).
fn lines(out: &Output, lead: usize) -> Vec<Line> {
    let mut lines: Vec<Line> = stderr(out)
        .lines()
        .filter(|l| l.contains(',') && !l.starts_with('#'))
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            let at = |i: usize| fields[lead + i].to_string();
            Line {
                lead: fields[..lead].iter().map(|f| f.to_string()).collect(),
                value: at(0),
                unit: at(1),
                event: at(2),
                runtime: at(3).parse().unwrap_or_else(|_| panic!("{l}")),
                percent: at(4),
            }
        })
        .collect();
    lines.sort_by(|a, b| (&a.lead, &a.event).cmp(&(&b.lead, &b.event)));
    lines
}

/// Oracle: perf 6.1 counting the same fake PMUs (see the module's note). In each layout (`-x,`
/// merged, `--no-merge`, `--per-socket`, `--per-die`, `-A`, and `-j`), perf's lines and ours
/// are the same lines: events and box names, units, places and CPU counts, decimals,
/// `<not supported>`; each value is its run time times the scale (within 10%, Joules within
/// 20% at two decimals), the merged line's the sum of the boxes', in perf's output as in ours.
#[test]
fn uncore_and_energy_lines_are_perfs() {
    if !running_as_root() {
        skip!(
            Need::Privilege,
            "bind-mounting a PMU tree for perf in a private mount namespace needs root"
        );
    }
    perf_or_skip!();
    linux_or_skip!();
    let Some(tree) = Tree::write("lines") else {
        skip!(
            Need::System,
            "this kernel lists no software PMU to lend its type"
        );
    };
    let layouts: [(&str, &[&str], usize); 5] = [
        ("merged", &[], 0),
        ("--no-merge", &["--no-merge"], 0),
        ("--per-socket", &["--per-socket"], 2),
        ("--per-die --no-merge", &["--per-die", "--no-merge"], 2),
        ("-A", &["-A"], 1),
    ];
    let mut figures: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, args, lead) in layouts {
        let mut with = vec!["-x,"];
        with.extend(args);
        let theirs = perf(&tree, &with);
        if theirs.status.code() == Some(97) {
            skip!(Need::Privilege, "mount --bind refused: {}", stderr(&theirs));
        }
        assert!(theirs.status.success(), "perf {name}: {}", stderr(&theirs));
        let mine = ours(&tree, &with);
        assert!(mine.status.success(), "ours {name}: {}", stderr(&mine));
        let (theirs, mine) = (lines(&theirs, lead), lines(&mine, lead));
        let keys = |lines: &[Line]| lines.iter().map(Line::key).collect::<Vec<_>>();
        assert_eq!(keys(&mine), keys(&theirs), "{name}: {mine:#?} {theirs:#?}");
        for line in theirs.iter().chain(&mine) {
            let Some(ratio) = line.against_runtime() else {
                assert_eq!(line.value, "<not supported>", "{name}: {line:?}");
                continue;
            };
            let tolerance = if line.unit == "Joules" { 0.2 } else { 0.1 };
            assert!((ratio - 1.0).abs() < tolerance, "{name}: {line:?}: {ratio}");
        }
        *figures.entry(name).or_default() += mine.len();
    }
    // -j: the same objects, Joules with six decimals.
    let json = |out: &Output| -> Vec<serde_json::Value> {
        stderr(out)
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (theirs, mine) = (json(&perf(&tree, &["-j"])), json(&ours(&tree, &["-j"])));
    let shape = |objects: &[serde_json::Value]| -> Vec<(String, String)> {
        objects
            .iter()
            .map(|o| (o["event"].to_string(), o["unit"].to_string()))
            .collect()
    };
    assert_eq!(shape(&mine), shape(&theirs));
    for object in theirs.iter().chain(&mine) {
        if object["unit"] == "Joules" {
            let joules: f64 = object["counter-value"].as_str().unwrap().parse().unwrap();
            let runtime = object["event-runtime"].as_f64().unwrap();
            let ratio = joules / (runtime * JOULES);
            assert!((ratio - 1.0).abs() < 0.05, "{object}: {ratio}");
        }
    }
    println!(
        "perf's lines and ours alike: {figures:?}, -j {} objects",
        mine.len()
    );
}

/// Oracle: perf 6.1's table under the same tree: the unit column as wide as the widest unit
/// (`Joules`), the names where perf puts them.
#[test]
fn the_table_puts_units_and_names_in_perfs_columns() {
    if !running_as_root() {
        skip!(
            Need::Privilege,
            "bind-mounting a PMU tree for perf needs root"
        );
    }
    perf_or_skip!();
    linux_or_skip!();
    let Some(tree) = Tree::write("table") else {
        skip!(
            Need::System,
            "this kernel lists no software PMU to lend its type"
        );
    };
    // Each event's line (between the heading and the elapsed time): where the value ends,
    // and each word before the metric's `#` (unit, name) with where it starts.
    let columns = |out: &Output| -> Vec<(usize, Vec<(usize, String)>)> {
        let text = stderr(out).replace("<not supported>", "<not_supported>");
        text.lines()
            .skip_while(|l| !l.contains("Performance counter stats"))
            .skip(2)
            .take_while(|l| !l.is_empty())
            .map(|l| {
                let before = l.split('#').next().unwrap();
                let mut words = before
                    .split(' ')
                    .scan(0, |at, word| {
                        let start = *at;
                        *at += word.len() + 1;
                        Some((start, word.to_string()))
                    })
                    .filter(|(_, w)| !w.is_empty());
                let (start, value) = words.next().unwrap();
                (start + value.len(), words.collect())
            })
            .collect()
    };
    let theirs = perf(&tree, &[]);
    if theirs.status.code() == Some(97) {
        skip!(Need::Privilege, "mount --bind refused: {}", stderr(&theirs));
    }
    let mine = ours(&tree, &[]);
    assert_eq!(columns(&mine), columns(&theirs), "{}", stderr(&mine));
    assert!(stderr(&mine).contains(" Joules power/energy-pkg/"));
}

/// Oracle: perf 6.1 refuses what the PMUs lack (`perf stat -a -e 'uncore_imc/bogus=1/'`
/// under this tree: "unknown term 'bogus' for pmu 'uncore_imc_0'", and a parser error for an
/// unknown modifier, exit 129 after its usage); counterhal refuses the same as bad input (exit
/// 2) naming the term, never a panic. One refusal is counterhal's alone: `period=` (perf stat
/// takes and ignores a sampling period; counterhal refuses it by name as perf's sampling
/// period, as docs/command.md says).
#[test]
fn what_the_boxes_lack_is_refused_with_perfs_words() {
    linux_or_skip!();
    let Some(tree) = Tree::write("refusals") else {
        skip!(
            Need::System,
            "this kernel lists no software PMU to lend its type"
        );
    };
    let root = tree.0.to_str().unwrap();
    for (event, says) in [
        (
            "uncore_imc/bogus=1/",
            "unknown term `bogus` for PMU `uncore_imc_0`",
        ),
        (
            "uncore_imc/data_reads,period=1000/",
            "`period` is perf's sampling period",
        ),
        ("imc/nosuch/", "unknown term `nosuch`"),
        ("power/energy-pkg/q", "unknown modifier `q`"),
    ] {
        let out = counterhal(&["stat", "-a", "--sysfs", root, "-e", event, "true"]);
        assert_eq!(out.status.code(), Some(2), "{event}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{event}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{event}");
    }
    let out = counterhal(&["stat", "-a", "-e", "uncore_nosuch/event=1/", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no PMU `uncore_nosuch`"),
        "{}",
        stderr(&out)
    );
}

/// A Broadwell-EP tree (in a scratch directory, removed when dropped): two C-boxes, two QPI
/// ports and two home agents, each with the kernel's format of its box (Linux 6.12's
/// arch/x86/events/intel/uncore_snbep.c: `hswep_uncore_cbox_formats_attr`, where `filter_opc` is
/// `config1:52-60` and `filter_tid` `config1:0-5`; `snbep_uncore_qpi_formats_attr`, where
/// `event` is `config:0-7,21`; `snbep_uncore_formats_attr` for the home agent) and a cpumask
/// of one CPU per socket.
fn broadwell_ep_tree(test: &str) -> Tree {
    const COMMON: &[(&str, &str)] = &[
        ("umask", "config:8-15"),
        ("edge", "config:18"),
        ("inv", "config:23"),
        ("thresh", "config:24-31"),
    ];
    const CBOX: &[(&str, &str)] = &[
        ("event", "config:0-7"),
        ("tid_en", "config:19"),
        ("filter_tid", "config1:0-5"),
        ("filter_link", "config1:6-8"),
        ("filter_state", "config1:17-22"),
        ("filter_nid", "config1:32-47"),
        ("filter_opc", "config1:52-60"),
        ("filter_c6", "config1:61"),
        ("filter_nc", "config1:62"),
        ("filter_isoc", "config1:63"),
    ];
    const QPI: &[(&str, &str)] = &[("event", "config:0-7,21")];
    const HA: &[(&str, &str)] = &[("event", "config:0-7")];
    let root = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-uncore-{}-{test}", std::process::id()));
    let tree = Tree(root);
    for (kind, first_type, formats) in [("cbox", 20, CBOX), ("qpi", 30, QPI), ("ha", 40, HA)] {
        for number in 0..2 {
            let dir = tree.devices().join(format!("uncore_{kind}_{number}"));
            std::fs::create_dir_all(dir.join("format")).unwrap();
            std::fs::write(dir.join("type"), format!("{}", first_type + number)).unwrap();
            std::fs::write(dir.join("cpumask"), "0,18\n").unwrap();
            for (field, bits) in COMMON.iter().chain(formats) {
                std::fs::write(dir.join("format").join(field), format!("{bits}\n")).unwrap();
            }
        }
    }
    tree
}

/// A Broadwell-EP tree named for `test`, and perf 6.1's output on it for `items` (perf's own
/// words where it could not run, for the caller's skip).
fn perf_on_broadwell_ep(
    test: &str,
    asked: counterhal_conformance::fixtures::perf_tree::Asked,
    items: &[String],
) -> (Tree, Result<String, String>) {
    use counterhal_conformance::fixtures::perf_tree::{build_shim, run_perf};
    let tree = broadwell_ep_tree(test);
    let shim = build_shim(test).unwrap();
    let output = run_perf(
        &tree.devices(),
        &shim,
        asked,
        items,
        Some("GenuineIntel-6-4F-1"),
    );
    std::fs::remove_dir_all(shim.parent().unwrap()).unwrap();
    (tree, output)
}

/// The attrs (type, config, config1) and CPUs of `encode --json -M METRIC` on `tree`.
fn encoded_opens(tree: &Tree, model: &str, metric: &str) -> BTreeSet<(u64, u64, u64, i64)> {
    let root = tree.0.to_str().unwrap();
    let out = counterhal(&[
        "encode",
        "--json",
        "--sysfs",
        root,
        "--cpu-model",
        model,
        "-M",
        metric,
    ]);
    let array: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{metric}: {e}: {}", stderr(&out)));
    array
        .iter()
        .map(|o| {
            let number = |key: &str| o[key].as_u64().unwrap_or_else(|| panic!("{metric}: {o}"));
            let cpu = o["cpu"].as_i64().unwrap_or_else(|| panic!("{metric}: {o}"));
            (number("type"), number("config"), number("config1"), cpu)
        })
        .collect()
}

/// Oracle: perf 6.1 (Debian's linux-perf) with Broadwell-EP's metric table (`PERF_CPUID`
/// GenuineIntel-6-4F-1) under the same tree, `perf stat -vv -a -M` (`fixtures::perf_tree`).
/// perfmon's formulas give the C-box's filters as modifiers (`:opc=0x182`, `:tid=0x3e`), which
/// perf's table writes as the box's terms (`cbox@UNC_C_TOR_INSERTS.MISS_LOCAL_OPCODE\,
/// filter_opc\=0x182@`): each metric below opens the same attrs, config1 holding the filters,
/// on the same CPUs in both (perf 6.1 names the two IO metrics otherwise). Before, each
/// failed ("unknown modifier `o`").
#[test]
fn box_filters_of_metric_events_open_as_perf_6_1_opens_them() {
    use counterhal_conformance::fixtures::perf_tree::{Asked, parse_perf, unready};
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    const METRICS: &[(&str, &str)] = &[
        (
            "numa_reads_addressed_to_local_dram",
            "numa_reads_addressed_to_local_dram",
        ),
        (
            "numa_reads_addressed_to_remote_dram",
            "numa_reads_addressed_to_remote_dram",
        ),
        // perf 6.1's table gives these two each other's formula (and description): the
        // reads' opcode 0x19e (PCIRdCur) is its `..._writes`.
        ("io_bandwidth_read", "io_bandwidth_disk_or_network_writes"),
        ("io_bandwidth_write", "io_bandwidth_disk_or_network_reads"),
    ];
    let asked: Vec<String> = METRICS.iter().map(|(_, p)| p.to_string()).collect();
    let (tree, output) = perf_on_broadwell_ep("box-filters", Asked::Metrics, &asked);
    let output = match output {
        Ok(output) => output,
        Err(why) => skip!(Need::Privilege, "{why}"),
    };
    let perf = parse_perf(&output);
    for (ours, theirs) in METRICS {
        let perf_opens: BTreeSet<(u64, u64, u64, i64)> = perf[*theirs]
            .opens
            .iter()
            // duration_time: the software event `dummy`, once.
            .filter(|o| (o.0, o.1) != (1, 9))
            .map(|o| (u64::from(o.0), o.1, o.2, i64::from(o.4)))
            .collect();
        let our_opens = encoded_opens(&tree, "bdw_ep", ours);
        assert!(
            perf_opens.iter().any(|o| o.2 != 0),
            "{theirs}: perf 6.1 set no filter: {perf_opens:x?}"
        );
        assert_eq!(
            our_opens, perf_opens,
            "{ours} (perf 6.1's {theirs}): ours, then perf's"
        );
    }
}

/// Oracle: perf 6.1 (Debian's linux-perf) with Broadwell-EP's tables (`PERF_CPUID`
/// GenuineIntel-6-4F-1) under the same tree, `perf stat -vv -a -e NAME` (`fixtures::perf_tree`).
/// Every event of the model's uncore table with an extended event select (perf's `event`
/// above 0xff, which the QPI format puts at config bit 21: `UNC_Q_RxL_OCCUPANCY_SNP.VN1` opens
/// 0x200219), and the home agent's `UNC_H_ADDR_OPC_MATCH.*` events Linux 6.12's JSON removed,
/// open the same attrs on the same CPUs in both. Before, Linux 6.12's JSON had no `ExtSel`
/// (0x219 opened) and no `UNC_H_ADDR_OPC_MATCH.FILT`.
#[test]
fn extended_selects_and_removed_events_open_as_perf_6_1_opens_them() {
    use counterhal_conformance::fixtures::perf_tree::{Asked, parse_perf, unready};
    if let Some((need, why)) = unready() {
        skip!(need, "{why}");
    }
    let db = counterhal_events::Database::shipped().unwrap();
    let events: Vec<String> = db
        .uncore_table("bdw_ep")
        .into_iter()
        .filter(|e| {
            let event = e.terms.split(',').find_map(|t| t.strip_prefix("event=0x"));
            event.is_some_and(|hex| u64::from_str_radix(hex, 16).is_ok_and(|v| v > 0xff))
                || e.name.starts_with("UNC_H_ADDR_OPC_MATCH.")
        })
        .map(|e| e.name)
        .collect();
    assert!(
        events.iter().any(|e| e == "UNC_Q_RxL_OCCUPANCY_SNP.VN1")
            && events.iter().any(|e| e == "UNC_H_ADDR_OPC_MATCH.FILT"),
        "{events:?}"
    );
    let (tree, output) = perf_on_broadwell_ep("extended-selects", Asked::Events, &events);
    let output = match output {
        Ok(output) => output,
        Err(why) => skip!(Need::Privilege, "{why}"),
    };
    let perf = parse_perf(&output);
    let root = tree.0.to_str().unwrap();
    let mut words = vec!["encode", "--json", "--sysfs", root, "--cpu-model", "bdw_ep"];
    words.extend(events.iter().map(String::as_str));
    let out = counterhal(&words);
    let array: Vec<serde_json::Value> =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    let mut differ = Vec::new();
    for event in &events {
        let ours: BTreeSet<(u64, u64, u64, i64)> = array
            .iter()
            .filter(|o| o["event"].as_str() == Some(event))
            .map(|o| {
                let number = |key: &str| o[key].as_u64().unwrap_or_else(|| panic!("{o}"));
                let cpu = o["cpu"].as_i64().unwrap_or_else(|| panic!("{o}"));
                (number("type"), number("config"), number("config1"), cpu)
            })
            .collect();
        let theirs: BTreeSet<(u64, u64, u64, i64)> = perf[event.as_str()]
            .opens
            .iter()
            .map(|o| (u64::from(o.0), o.1, o.2, i64::from(o.4)))
            .collect();
        if ours != theirs || ours.is_empty() {
            differ.push(format!("{event}: ours {ours:x?}, perf 6.1's {theirs:x?}"));
        }
    }
    println!("{} events compared", events.len());
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}
