//! `pods`: a Kubernetes node of 300 best-effort pods (the kubelet's systemd cgroup names at
//! the top of the cgroup2 mount, `kubepods.slice/kubepods-besteffort.slice/
//! kubepods-besteffort-pod<UID>.slice`, 10 of them with a shell waking every second), the 8
//! software events on every online CPU, followed in the BPF mode: this build beside the
//! counterhal builds named in `COUNTERHAL_SERVE_OTHERS` (paths separated by `:`, the last one
//! the baseline the ratios are to: issue 69's HEAD 3089ba6, say), interleaved as `costs`
//! scrapes them, 10 rounds of 50 scrapes after 300. Skipped where a `kubepods.slice` exists
//! already (a real node's) or no cgroup can be made.
//!
//! `nodes`: the same node counted by this build on 1, 2, 4, ... of the online CPUs
//! (`--cpus 0`, `--cpus 0-1`, ..., every online CPU last), interleaved as above: each count's
//! CPU per scrape, resident memory and series a scrape, and the straight line through them
//! (least squares) taken to a node of 192 CPUs: the node-size model of docs/serve.md. The
//! BPF map of cgroups is per CPU of those *possible* (`/sys/devices/system/cpu/possible`),
//! whatever `--cpus` counts, so its copy at each read stays in the line's start here and
//! grows with the CPUs on a real node: the points of a machine with more CPUs check the line.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::{Accounting, EVENTS, Exporter, compare};

/// The pods, those with a shell waking every second, and the scrapes of each round.
const PODS: usize = 300;
const WITH_WORK: usize = 10;
const PER_ROUND: usize = 50;
/// The builds beside this one.
const OTHERS_ENV: &str = "COUNTERHAL_SERVE_OTHERS";

/// The node's cgroups and shells, removed when dropped.
struct Node {
    top: PathBuf,
    pods: Vec<PathBuf>,
    shells: Vec<Child>,
}

impl Node {
    /// The pods' cgroups below `mount`, `None` where `kubepods.slice` exists or one cannot be
    /// made.
    fn make(mount: &Path) -> Option<Node> {
        let top = mount.join("kubepods.slice");
        std::fs::create_dir(&top).ok()?;
        let qos = top.join("kubepods-besteffort.slice");
        let mut node = Node {
            top,
            pods: Vec::new(),
            shells: Vec::new(),
        };
        std::fs::create_dir(&qos).ok()?;
        node.pods.push(qos.clone());
        for i in 0..PODS {
            let uid = format!("{i:08x}_0000_4000_8000_{i:012x}");
            let pod = qos.join(format!("kubepods-besteffort-pod{uid}.slice"));
            std::fs::create_dir(&pod).ok()?;
            node.pods.push(pod.clone());
            if i < WITH_WORK {
                let shell = Command::new("sh")
                    .args(["-c", "while :; do sleep 1; done"])
                    .stdout(Stdio::null())
                    .spawn()
                    .ok()?;
                std::fs::write(pod.join("cgroup.procs"), shell.id().to_string()).ok();
                node.shells.push(shell);
            }
        }
        Some(node)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        for shell in &mut self.shells {
            shell.kill().ok();
            shell.wait().ok();
        }
        // A killed shell's `sleep` stays in its cgroup up to a second, which cannot be
        // removed until it leaves.
        let mut left: Vec<&PathBuf> = self.pods.iter().rev().collect();
        for _ in 0..50 {
            left.retain(|pod| std::fs::remove_dir(pod).is_err() && pod.exists());
            if left.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        std::fs::remove_dir(&self.top).ok();
    }
}

/// What serve is given to follow the node's pods.
const ARGS: [&str; 8] = [
    "-e",
    EVENTS,
    "--cgroups",
    "^kubepods[.]slice/.*-pod[^/]*[.]slice$",
    "--max-cgroups",
    "300",
    "--cgroup-mode",
    "bpf",
];

/// The node's cgroups below the cgroup2 mount, or why there are none (printed, as `section`'s
/// skip).
fn node(section: &str) -> Option<Node> {
    let Ok(mount) = counterhal::cgroups::unified_root(&counterhal::system::System::host()) else {
        println!("{section}: SKIPPED: no cgroup2 mount");
        return None;
    };
    let node = Node::make(&mount);
    if node.is_none() {
        println!(
            "{section}: SKIPPED: cannot make kubepods.slice below {} (a node's own, or no room)",
            mount.display()
        );
    }
    node
}

/// Runs the section; prints what it measured, or why it could not.
pub fn pods(accounting: &Accounting) {
    let Some(node) = node("pods") else {
        return;
    };
    let args = ARGS;
    let mut exporters = vec![
        Exporter::counterhal("this build", &args, accounting)
            .unwrap_or_else(|e| panic!("serve did not start: {e}")),
    ];
    let others = std::env::var(OTHERS_ENV).unwrap_or_default();
    for program in others.split(':').filter(|p| !p.is_empty()) {
        let name: &'static str = Box::leak(program.to_string().into_boxed_str());
        let other = Exporter::start(name, Path::new(program), &args, accounting)
            .unwrap_or_else(|e| panic!("{OTHERS_ENV}: {program}: {e}"));
        exporters.push(other);
    }
    println!(
        "pods: {PODS} best-effort pods below {} ({WITH_WORK} with a shell waking each second), \
         -e {EVENTS} on every CPU, BPF mode; ratios to the last exporter",
        node.top.display()
    );
    let all: Vec<&Exporter> = exporters.iter().collect();
    let ours = all.len().saturating_sub(1);
    // Issue 69: CPU per scrape and the 99th percentile at most half of 3089ba6's.
    compare(&all, ours, Some(0.5), PER_ROUND);
    drop(exporters);
    drop(node);
}

/// The CPUs of the node-size model: the node's size a real node has, where the line is taken.
const MODEL_CPUS: f64 = 192.0;

/// `nodes`: this build on 1, 2, 4, ... of the online CPUs, each a point of the node-size
/// model; prints each point and the line through them at [`MODEL_CPUS`].
pub fn nodes(accounting: &Accounting) {
    let online = counterhal::online_cpus(&counterhal::system::System::host());
    let cpus: Vec<u32> = online.iter().collect();
    let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |n| Some(n * 2))
        .take_while(|&n| n < cpus.len())
        .collect();
    counts.push(cpus.len());
    if counts.len() < 2 {
        println!("nodes: SKIPPED: one CPU online; the model needs two counts of CPUs");
        return;
    }
    let Some(node) = node("nodes") else {
        return;
    };
    let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .unwrap_or_default()
        .trim()
        .to_string();
    let mut exporters = Vec::new();
    for &n in &counts {
        let list = cpus[..n]
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let name: &'static str = Box::leak(format!("{n} CPUs (--cpus {list})").into_boxed_str());
        let mut args = ARGS.to_vec();
        args.extend(["--cpus", &list]);
        exporters.push(
            Exporter::counterhal(name, &args, accounting)
                .unwrap_or_else(|e| panic!("serve --cpus {list} did not start: {e}")),
        );
    }
    println!(
        "nodes: {PODS} best-effort pods below {} ({WITH_WORK} with a shell waking each second), \
         -e {EVENTS}, BPF mode, on {} of the CPUs online ({online}; possible {possible}); ratios \
         to every CPU's",
        node.top.display(),
        counts
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    );
    let series: Vec<f64> = exporters
        .iter()
        .map(|e| series_in(&super::Scraper::new(e.address).scrape()) as f64)
        .collect();
    let all: Vec<&Exporter> = exporters.iter().collect();
    let measured = compare(&all, all.len() - 1, None, PER_ROUND);
    let x: Vec<f64> = counts.iter().map(|&n| n as f64).collect();
    let cpu: Vec<f64> = measured.iter().map(|m| m.0).collect();
    let rss: Vec<f64> = measured.iter().map(|m| m.1 as f64).collect();
    for (at, n) in counts.iter().enumerate() {
        println!("  {n} CPUs: {} series a scrape", series[at]);
    }
    println!("  the line through the points, and at {MODEL_CPUS} CPUs:");
    let (a, b) = line(&x, &cpu);
    println!(
        "    CPU per scrape  {} + {} a CPU: {} at {MODEL_CPUS}",
        super::micros(a),
        super::micros(b),
        super::micros(a + b * MODEL_CPUS)
    );
    let (a, b) = line(&x, &rss);
    println!(
        "    resident memory {a:.0} KiB + {b:.1} KiB a CPU: {:.0} KiB at {MODEL_CPUS}",
        a + b * MODEL_CPUS
    );
    let (a, b) = line(&x, &series);
    println!(
        "    series          {a:.0} + {b:.1} a CPU: {:.0} at {MODEL_CPUS}",
        a + b * MODEL_CPUS
    );
    drop(exporters);
    drop(node);
}

/// The samples of a scrape in the text format: its lines but comments and blank ones.
fn series_in(body: &str) -> usize {
    body.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count()
}

/// The least-squares line `a + b x` through the points `(x, y)` (at least two distinct `x`).
fn line(x: &[f64], y: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = x.iter().map(|x| (x - mx) * (x - mx)).sum();
    let b = sxy / sxx;
    (my - b * mx, b)
}
