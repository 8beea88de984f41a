//! The machine's facts metric formulas read as `#` constants (perf's names): SMT, threads per
//! core, packages, cores per package, the TSC's frequency, the CPUs online, and what the PMUs
//! tell (the CHA boxes of a socket, from the PMU directory of the [`System`] passed: the
//! `--sysfs` tree's where the command names one). Each is read from the system's sysfs and
//! procfs or CPUID; a fact not found there has no value, and `-M` refuses the metrics that
//! need it with the reason.

use std::sync::{Arc, OnceLock};

use counterhal_system::{CpuSiblings, System};
use counterhal_x86::{CpuidInstruction, CpuidSource, TscFrequency, TscSource};

/// The `#` constants counterhal gives values to, and what each means (for errors and docs).
pub const KNOWN: [(&str, &str); 13] = [
    ("#num_cpus_online", "the CPUs online"),
    ("#smt_on", "1 when SMT is active"),
    ("#threads_per_core", "hardware threads per core"),
    ("#num_packages", "CPU packages (sockets)"),
    ("#num_dies", "CPU dies"),
    ("#num_cores", "cores"),
    ("#cores_per_socket", "cores per package"),
    (
        "#has_pmem",
        "1 when the firmware describes persistent memory (an ACPI NFIT table)",
    ),
    ("#system_tsc_freq", "the TSC's frequency in Hz"),
    (
        "#slots",
        "the core PMU's slots per cycle (Arm: its caps/slots, PMMIR_EL1.SLOTS)",
    ),
    (
        "#chas_per_socket",
        "the CHA boxes of a socket (the uncore_cha PMUs)",
    ),
    (
        "#target_cpu",
        "1 when CPUs are counted (stat -a, -C) rather than a command's or processes' threads",
    ),
    (
        "#core_wide",
        "1 when CPUs are counted with every thread of their cores (SMT off, or whole cores)",
    ),
];

/// What a metric's formula reads beside the counts: the machine's facts (a [`System`]'s) and
/// whether CPUs were counted rather than a command's or processes' threads, which perf's tool
/// events `#target_cpu` and `#core_wide` tell its formulas (tools/perf/util/tool_pmu.c). Each
/// measurement holds its own: nothing is set for the process.
#[derive(Clone, Debug)]
pub struct Machine {
    system: System,
    /// The CPUs counted, where CPUs are: `None` inside for all of them.
    counted_cpus: Option<Option<Vec<u32>>>,
    /// The system's facts, read when a formula first asks for one (shared by the clones: a
    /// measurement's intervals read them once).
    facts: Arc<OnceLock<Facts>>,
}

/// Two measurements' machines are the same where their systems and CPUs counted are (the
/// facts are what the system holds).
impl PartialEq for Machine {
    fn eq(&self, other: &Machine) -> bool {
        self.system == other.system && self.counted_cpus == other.counted_cpus
    }
}

impl Eq for Machine {}

impl Machine {
    /// `system`'s facts, a command's or processes' threads counted (`#target_cpu` and
    /// `#core_wide` 0, as perf gives them to `perf stat COMMAND`).
    pub fn new(system: System) -> Machine {
        Machine {
            system,
            counted_cpus: None,
            facts: Arc::default(),
        }
    }

    /// This machine's facts, threads counted.
    #[cfg(test)]
    pub(crate) fn host() -> Machine {
        Machine::new(System::host())
    }

    /// The same, CPUs counted (`stat -a`: all of them, `None`; `stat -C LIST`: those).
    #[must_use]
    pub fn counting_cpus(mut self, cpus: Option<&[u32]>) -> Machine {
        self.counted_cpus = Some(cpus.map(<[u32]>::to_vec));
        self
    }

    /// The system whose facts are read.
    pub fn system(&self) -> &System {
        &self.system
    }
}

impl From<System> for Machine {
    fn from(system: System) -> Machine {
        Machine::new(system)
    }
}

/// perf's `core_wide` (tools/perf/util/smt.c): CPUs are counted, and either SMT is off or
/// every CPU of each core counted is (all of them, or a list holding whole cores, which
/// `siblings` gives for each CPU: the CPUs of its core).
fn core_wide(
    counted: Option<&Option<Vec<u32>>>,
    smt_on: bool,
    siblings: &dyn Fn(u32) -> Option<Vec<u32>>,
) -> bool {
    match counted {
        None => false,
        Some(_) if !smt_on => true,
        Some(None) => true,
        Some(Some(cpus)) => cpus
            .iter()
            .all(|&cpu| siblings(cpu).is_some_and(|core| core.iter().all(|c| cpus.contains(c)))),
    }
}

/// The value of the constant `name` on `machine` (`None`: not a constant we know, or not
/// known there).
pub fn constant(machine: &Machine, name: &str) -> Option<f64> {
    let system = &machine.system;
    let facts = *machine.facts.get_or_init(|| Facts::read(system));
    match name {
        "#num_cpus_online" => Some(online_cpus(system).len() as f64),
        "#smt_on" => Some(f64::from(u8::from(facts.smt_on))),
        "#threads_per_core" => facts.threads_per_core.map(f64::from),
        "#num_packages" => facts.packages.map(f64::from),
        "#num_dies" => facts.dies.map(f64::from),
        "#num_cores" => facts.cores.map(f64::from),
        "#has_pmem" => Some(f64::from(u8::from(facts.has_pmem))),
        "#target_cpu" => Some(f64::from(u8::from(machine.counted_cpus.is_some()))),
        "#core_wide" => {
            let siblings = |cpu: u32| system.cpu_siblings(cpu).threads;
            let wide = core_wide(machine.counted_cpus.as_ref(), facts.smt_on, &siblings);
            Some(f64::from(u8::from(wide)))
        }
        "#cores_per_socket" => facts.cores_per_package.map(f64::from),
        "#system_tsc_freq" => facts.tsc_hz,
        "#slots" => core_pmu_slots(system),
        "#chas_per_socket" => chas_per_socket(system),
        _ => None,
    }
}

/// The CPUs online on `system` (as [`crate::online_cpus`] reads them).
fn online_cpus(system: &System) -> counterhal_hal::CpuList {
    crate::attach::online_cpus(system)
}

/// perfmon's `CHAS_PER_SOCKET`, which perf's tables read as `source_count(UNC_CHA_...)`
/// (perfmon's converter, its `metric_source_events`): how many CHA boxes an event of the
/// socket's caching agents adds up, one PMU each (`uncore_cha_0`, `uncore_cha_1`, ...: every
/// box perf opens such an event on). None where there is no CHA PMU (where perf cannot open
/// the event either).
fn chas_per_socket(system: &System) -> Option<f64> {
    let boxes = system
        .pmus()
        .names()
        .iter()
        .filter(|name| {
            name.strip_prefix("uncore_cha_")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .count();
    (boxes > 0).then_some(boxes as f64)
}

/// perf's `#slots` on Arm (tools/perf/arch/arm64/util/pmu.c): the first core PMU's
/// `caps/slots` (the arm_pmuv3 driver's PMMIR_EL1.SLOTS, in hex); none where it is 0 or absent.
/// The file is read by the system's rule (inside the `--sysfs` tree, a regular file, a page at
/// most).
fn core_pmu_slots(system: &System) -> Option<f64> {
    let pmus = system.pmus();
    let core = pmus
        .names()
        .iter()
        .filter_map(|name| pmus.device(name).ok().flatten())
        .find(|pmu| pmu.lists_core_cpus())?;
    // 0 perf takes as no value.
    let slots = core.slots().ok()??;
    (slots != 0).then_some(slots as f64)
}

/// What a `#` constant means, when counterhal knows it.
pub fn meaning(name: &str) -> Option<&'static str> {
    KNOWN.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
}

#[derive(Clone, Copy, Debug)]
struct Facts {
    smt_on: bool,
    threads_per_core: Option<u32>,
    packages: Option<u32>,
    /// perf's `#num_dies`: the online CPUs' distinct `die_cpus_list`s.
    dies: Option<u32>,
    /// perf's `#num_cores`: the online CPUs' distinct `core_cpus_list`s.
    cores: Option<u32>,
    cores_per_package: Option<u32>,
    /// perf's `#has_pmem`: sysfs has `firmware/acpi/tables/NFIT`.
    has_pmem: bool,
    tsc_hz: Option<f64>,
}

impl Facts {
    /// `system`'s facts, read now.
    fn read(system: &System) -> Facts {
        let cpus = online_cpus(system);
        let mut packages: Vec<u32> = Vec::new();
        let mut cores_of_first: Vec<u32> = Vec::new();
        for cpu in cpus.iter() {
            let topology = system.cpu_topology(cpu);
            if let Some(package) = topology.socket {
                if packages.first().is_none_or(|p| *p == package)
                    && let Some(core) = topology.core
                    && !cores_of_first.contains(&core)
                {
                    cores_of_first.push(core);
                }
                if !packages.contains(&package) {
                    packages.push(package);
                }
            }
        }
        // As perf's `online_topology` counts them (tools/perf/util/cputopo.c): each
        // distinct list of the CPUs sharing a die, a core (`core_cpus_list`, or the older
        // `thread_siblings_list`).
        let distinct = |list: &dyn Fn(CpuSiblings) -> Option<Vec<u32>>| {
            let mut lists: Vec<Vec<u32>> = Vec::new();
            for cpu in cpus.iter() {
                if let Some(list) = list(system.cpu_siblings(cpu))
                    && !lists.contains(&list)
                {
                    lists.push(list);
                }
            }
            u32::try_from(lists.len()).ok().filter(|&n| n > 0)
        };
        let first = cpus.first().unwrap_or(0);
        let threads = system.cpu_siblings(first).threads;
        let count = |n: usize| u32::try_from(n).ok().filter(|&n| n > 0);
        Facts {
            dies: distinct(&|s| s.die),
            cores: distinct(&|s| s.core.or(s.threads)),
            has_pmem: system.has_acpi_table("NFIT"),
            smt_on: system.smt_active() == Some(true),
            threads_per_core: threads.and_then(|t| count(t.len())),
            packages: count(packages.len()),
            cores_per_package: count(cores_of_first.len()),
            tsc_hz: tsc_hz(system.cpuinfo().as_ref().map(|c| c.text())).map(|t| t.hz as f64),
        }
    }
}

/// The TSC's frequency: as perf derives `#system_tsc_freq` (CPUID leaf 0x15, else the model
/// name's frequency: [`TscFrequency::as_perf_derives`]); where perf has none, CPUID leaf
/// 0x16's base frequency, else measured against the monotonic clock over 20 ms where the TSC
/// is invariant (counterhal's, so that the metrics run on AMD CPUs and VMs too).
fn tsc_hz(cpuinfo: Option<&str>) -> Option<TscFrequency> {
    let cpuid = CpuidInstruction;
    if let Ok(Some(perf)) = TscFrequency::as_perf_derives(&cpuid, cpuinfo) {
        return Some(perf);
    }
    let max_leaf = cpuid.cpuid(0, 0).ok()?.eax;
    if let Ok(Some(base)) = TscFrequency::from_cpuid(&cpuid, max_leaf) {
        return Some(base);
    }
    counterhal_time::measure_tsc_hz(std::time::Duration::from_millis(20))
        .filter(|&hz| hz > 0)
        .map(|hz| TscFrequency::new(hz, TscSource::Measured))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// perf's `core_wide` (tools/perf/util/smt.c, Linux 7.2): only where CPUs are counted;
    /// then with SMT off, for all CPUs, or for a list of whole cores.
    #[test]
    fn core_wide_is_perfs() {
        let pairs = |cpu: u32| Some(vec![cpu & !1, cpu | 1]);
        assert!(!core_wide(None, true, &pairs));
        assert!(!core_wide(None, false, &pairs));
        assert!(core_wide(Some(&None), true, &pairs));
        assert!(core_wide(Some(&Some(vec![2])), false, &pairs));
        assert!(!core_wide(Some(&Some(vec![2])), true, &pairs));
        assert!(core_wide(Some(&Some(vec![3, 2])), true, &pairs));
    }

    /// Oracle: perf 7.2's tool PMU (Debian sid's perf 7.2.13, in the current-releases lab's
    /// root that `scripts/current-lab` makes, run from this machine by the root's own loader):
    /// `perf stat -e tool/num_cores/,tool/num_dies/,tool/has_pmem/,tool/target_cpu/,
    /// tool/core_wide/ true` counts this machine's cores, dies and persistent memory, and a
    /// command's threads (not CPUs), as `#num_cores`, `#num_dies`, `#has_pmem`, `#target_cpu`
    /// and `#core_wide` read them, the facts perf 7.2's metric tables read (this test process
    /// counts threads).
    #[cfg(target_os = "linux")]
    #[test]
    fn cores_dies_and_pmem_are_what_perf_7_2_counts() {
        use counterhal_conformance::skip::Need;
        let lab = std::env::var_os("COUNTERHAL_CURRENT_LAB").map_or_else(
            || std::path::PathBuf::from("/var/cache/counterhal-lab"),
            std::path::PathBuf::from,
        );
        let root = lab.join("sid");
        let loader = root.join("lib64/ld-linux-x86-64.so.2");
        if !root.join("usr/bin/perf").is_file() || !loader.is_file() {
            counterhal_conformance::skip!(
                Need::Tools,
                "no perf 7.2 in {} (scripts/current-lab makes the root)",
                root.display()
            );
        }
        let libraries = format!(
            "{0}/lib/x86_64-linux-gnu:{0}/usr/lib/x86_64-linux-gnu",
            root.display()
        );
        let output = std::process::Command::new(&loader)
            .args(["--library-path", &libraries])
            .arg(root.join("usr/bin/perf"))
            .args(["stat", "-x", ",", "-e"])
            .arg("tool/num_cores/,tool/num_dies/,tool/has_pmem/,tool/target_cpu/,tool/core_wide/")
            .arg("true")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stderr);
        let mut compared = 0;
        for line in text.lines() {
            let fields: Vec<&str> = line.split(',').collect();
            let [value, _, event, ..] = fields.as_slice() else {
                continue;
            };
            let Some(fact) = event
                .strip_prefix("tool/")
                .and_then(|e| e.strip_suffix('/'))
            else {
                continue;
            };
            let perf: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
            assert_eq!(
                constant(&Machine::host(), &format!("#{fact}")),
                Some(perf),
                "{line}"
            );
            compared += 1;
        }
        assert_eq!(compared, 5, "perf 7.2 printed: {text}");
    }

    /// A `--sysfs` tree's `caps/slots` is read by the tree's rules: a FIFO there is not
    /// opened (it blocked `stat -M` for ever; here a writer waiting on it would feed it 7), a
    /// link out of the tree is not followed. Oracle: the kernel's sysfs (fs/sysfs/file.c: an
    /// attribute is a regular file) and the arm_pmuv3 driver's `0x%08x`.
    #[cfg(target_os = "linux")]
    #[test]
    fn slots_are_read_by_the_trees_rules() {
        use std::fs;
        let root = std::env::temp_dir().join(format!("counterhal-slots-{}", std::process::id()));
        let outside =
            std::env::temp_dir().join(format!("counterhal-slots-out-{}", std::process::id()));
        let devices = root.join("bus/event_source/devices");
        let caps = devices.join("armv8_pmuv3/caps");
        fs::create_dir_all(&caps).unwrap();
        fs::write(devices.join("armv8_pmuv3/cpus"), "0-3\n").unwrap();
        fs::write(devices.join("armv8_pmuv3/type"), "8\n").unwrap();
        fs::write(caps.join("slots"), "0x00000005\n").unwrap();
        let system = System::host().with_sysfs(&root);
        assert_eq!(core_pmu_slots(&system), Some(5.0));
        fs::write(&outside, "0x00000006\n").unwrap();
        fs::remove_file(caps.join("slots")).unwrap();
        std::os::unix::fs::symlink(&outside, caps.join("slots")).unwrap();
        assert_eq!(core_pmu_slots(&system), None, "a link out of the tree");
        fs::remove_file(caps.join("slots")).unwrap();
        let fifo = caps.join("slots");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                // Waits until a reader opens the FIFO, then feeds it.
                let mut file = fs::OpenOptions::new().write(true).open(fifo).unwrap();
                let _ = file.write_all(b"0x00000007\n");
            })
        };
        let read = core_pmu_slots(&system);
        // Lets the writer go, whoever opened the FIFO.
        let release = {
            use std::os::unix::fs::OpenOptionsExt;
            fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&fifo)
        };
        writer.join().unwrap();
        drop(release);
        fs::remove_dir_all(&root).unwrap();
        fs::remove_file(&outside).unwrap();
        assert_eq!(read, None, "a FIFO");
    }

    /// Oracle: perf's own reading, `perf stat -M` of a metric that prints
    /// `#system_tsc_freq`, is not available without a PMU; the kernel's `tsc_known_freq` is:
    /// where CPUID gives the frequency (leaf 0x15 or 0x16), it agrees with a measurement to 1%.
    #[test]
    fn the_tsc_frequency_is_known_here_and_agrees_with_a_measurement() {
        let cpuinfo = System::host().cpuinfo();
        let Some(tsc) = tsc_hz(cpuinfo.as_ref().map(|c| c.text())) else {
            counterhal_conformance::skip!(
                counterhal_conformance::skip::Need::Platform,
                "an x86 CPU with an invariant TSC"
            );
        };
        assert!(tsc.hz > 100_000_000, "{tsc:?}");
        if tsc.source != TscSource::Measured
            && let Some(measured) =
                counterhal_time::measure_tsc_hz(std::time::Duration::from_millis(100))
        {
            let ratio = measured as f64 / tsc.hz as f64;
            assert!((0.99..1.01).contains(&ratio), "{tsc:?} measured {measured}");
            assert_eq!(
                constant(&Machine::host(), "#system_tsc_freq"),
                Some(tsc.hz as f64)
            );
        }
    }

    /// Each measurement's facts say what it counts, side by side in one process (a global
    /// set once said it for every measurement after the first). Oracle: perf 7.2's tool PMU
    /// (tools/perf/util/tool_pmu.c: `target_cpu` where the target names CPUs; `core_wide`
    /// then, counting every CPU, true, smt.c).
    #[test]
    fn each_measurement_says_what_it_counts() {
        let threads = Machine::host();
        let every_cpu = Machine::host().counting_cpus(None);
        let cpu_0 = Machine::host().counting_cpus(Some(&[0]));
        assert_eq!(constant(&every_cpu, "#target_cpu"), Some(1.0));
        assert_eq!(constant(&cpu_0, "#target_cpu"), Some(1.0));
        assert_eq!(constant(&every_cpu, "#core_wide"), Some(1.0));
        assert_eq!(constant(&threads, "#target_cpu"), Some(0.0));
        assert_eq!(constant(&threads, "#core_wide"), Some(0.0));
        assert_eq!(Machine::from(System::host()), threads);
        assert_eq!(threads.system(), &System::host());
    }

    #[test]
    fn the_constants_read_here_are_plausible() {
        let host = Machine::host();
        let cpus = constant(&host, "#num_cpus_online").unwrap();
        assert!(cpus >= 1.0);
        let smt = constant(&host, "#smt_on").unwrap();
        assert!(smt == 0.0 || smt == 1.0);
        if let Some(packages) = constant(&host, "#num_packages") {
            assert!((1.0..=cpus).contains(&packages), "{packages} of {cpus}");
        }
        // No CHA PMU on the machines of this project; two on the Sapphire Rapids tree.
        if host.system().pmu("uncore_cha_0").is_none() {
            assert_eq!(constant(&host, "#chas_per_socket"), None);
        }
        assert!(meaning("#smt_on").is_some() && meaning("#nope").is_none());
    }

    /// The facts come from the sysfs tree of the system passed, not this machine's. Oracle:
    /// the Sapphire Rapids tree of backend-linux's tests (Linux 6.12's PMUs of a two-socket
    /// machine of 224 CPUs, its `SOURCE` says how it was made): its two CHA boxes, its CPUs
    /// online, and no topology files, so those facts are unknown rather than this machine's.
    #[test]
    fn a_test_root_names_the_tree_the_facts_come_from() {
        let spr = Machine::new(System::host().with_sysfs(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/backend-linux/tests/data/machines/spr-2s"
        )));
        assert_eq!(constant(&spr, "#chas_per_socket"), Some(2.0));
        assert_eq!(constant(&spr, "#num_packages"), None);
        assert_eq!(constant(&spr, "#num_cpus_online"), Some(224.0));
    }
}
