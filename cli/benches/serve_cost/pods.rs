//! `pods`: a Kubernetes node of 300 best-effort pods (the kubelet's systemd cgroup names at
//! the top of the cgroup2 mount, `kubepods.slice/kubepods-besteffort.slice/
//! kubepods-besteffort-pod<UID>.slice`, 10 of them with a shell waking every second), the 8
//! software events on every online CPU, followed in the BPF mode: this build beside the
//! counterhal builds named in `COUNTERHAL_SERVE_OTHERS` (paths separated by `:`, the last one
//! the baseline the ratios are to: issue 69's HEAD 3089ba6, say), interleaved as `costs`
//! scrapes them, 10 rounds of 50 scrapes after 300. Skipped where a `kubepods.slice` exists
//! already (a real node's) or no cgroup can be made.

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

/// Runs the section; prints what it measured, or why it could not.
pub fn pods(accounting: &Accounting) {
    let Ok(mount) = counterhal::cgroups::unified_root() else {
        println!("pods: SKIPPED: no cgroup2 mount");
        return;
    };
    let Some(node) = Node::make(&mount) else {
        println!(
            "pods: SKIPPED: cannot make kubepods.slice below {} (a node's own, or no room)",
            mount.display()
        );
        return;
    };
    let args = [
        "-e",
        EVENTS,
        "--cgroups",
        "^kubepods[.]slice/.*-pod[^/]*[.]slice$",
        "--max-cgroups",
        "300",
        "--cgroup-mode",
        "bpf",
    ];
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
