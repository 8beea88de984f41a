//! The cgroup hierarchy the cgroups are followed in, and what cannot be seen from it. The
//! perf-event mode counts where `perf stat -G` does: in the cgroup v1 hierarchy the
//! `perf_event` controller is bound to, where one is mounted (a cgroup v1 node, or a hybrid
//! one with perf_event among its v1 controllers), else in the cgroup2 one. The BPF mode
//! counts cgroup v2's cgroups only (its program reads each task's cgroup2 cgroup). So where
//! the perf_event controller is on a v1 hierarchy, `--cgroup-mode auto` takes the perf-event
//! mode: that is where the kubelet (in every controller mounted) and a SPANK plugin (in the
//! layout of Slurm's cgroup/v1 plugin) put the workload.
//!
//! What neither sees is said once at start and by `counterhal info`: the cgroup2 cgroups
//! while perf_event is bound to v1 (the kernel counts no perf event in them), the v1
//! hierarchy in the BPF mode, and Slurm's cgroup/v1 jobs where the hierarchy followed holds
//! no cgroup of theirs (the plugin makes them in freezer, cpuset, memory and devices only).

use std::path::{Path, PathBuf};

use counterhal_system::System;

/// The cgroup hierarchies this node mounts, as the cgroups' counting sees them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hierarchies {
    /// The mount of the cgroup v1 hierarchy with the `perf_event` controller.
    pub perf_event_v1: Option<PathBuf>,
    /// The cgroup2 mount.
    pub unified: Option<PathBuf>,
    /// The v1 hierarchies holding Slurm's cgroup/v1 jobs (`slurm` or `slurm_<node>` at
    /// their top), each with that directory's name.
    slurm_v1: Vec<(PathBuf, String)>,
}

impl Hierarchies {
    /// The hierarchies `system` mounts.
    pub fn of(system: &System) -> Hierarchies {
        let mounts = system.mounts().unwrap_or_default();
        let mut slurm_v1: Vec<(PathBuf, String)> = Vec::new();
        for mount in mounts.iter().filter(|m| m.fs_type == "cgroup") {
            if mount.is_cgroup_v1_with("perf_event") {
                continue;
            }
            for name in system.cgroup_children(&mount.mount_point) {
                let name = name.to_string_lossy();
                let slurm =
                    name == "slurm" || name.strip_prefix("slurm_").is_some_and(|n| !n.is_empty());
                if slurm && !slurm_v1.iter().any(|(_, n)| *n == name) {
                    slurm_v1.push((mount.mount_point.clone(), name.into_owned()));
                }
            }
        }
        Hierarchies {
            perf_event_v1: system.cgroup_v1_mount("perf_event"),
            unified: system.cgroup2_mount(),
            slurm_v1,
        }
    }

    /// Why the perf-event mode is taken over BPF in `--cgroup-mode auto`: the perf_event
    /// controller is bound to a v1 hierarchy, where the workload is; `None` elsewhere.
    pub fn perf_events_first(&self) -> Option<String> {
        let v1 = self.perf_event_v1.as_ref()?;
        Some(format!(
            "the perf_event controller is on the cgroup v1 hierarchy at {}, which the \
             perf-event mode follows (the BPF mode counts cgroup v2's cgroups only)",
            v1.display()
        ))
    }

    /// The mount the mode follows: the cgroup2 one in the BPF mode (`bpf`), else the
    /// perf_event v1 hierarchy where one is mounted, else the cgroup2 one.
    pub fn followed(&self, bpf: bool) -> Option<&Path> {
        match bpf {
            true => self.unified.as_deref(),
            false => self.perf_event_v1.as_deref().or(self.unified.as_deref()),
        }
    }

    /// What the mode (`bpf`, else perf events) cannot see here, one sentence each; none
    /// where it sees every hierarchy that could hold a workload.
    pub fn unseen(&self, system: &System, bpf: bool) -> Vec<String> {
        let mut unseen = Vec::new();
        match (&self.perf_event_v1, &self.unified, bpf) {
            (Some(v1), Some(unified), false) => unseen.push(format!(
                "cgroup v2's cgroups (below {}) are not counted: the kernel counts perf \
                 events only in the cgroups of the perf_event controller's v1 hierarchy \
                 ({}), which is followed",
                unified.display(),
                v1.display()
            )),
            (Some(v1), _, true) => unseen.push(format!(
                "the perf_event controller's cgroup v1 hierarchy ({}) is not followed: the \
                 BPF mode counts each task in its cgroup v2 cgroup (--cgroup-mode \
                 perf-events follows the v1 one)",
                v1.display()
            )),
            _ => {}
        }
        let Some(followed) = self.followed(bpf) else {
            return unseen;
        };
        let here = system.cgroup_children(followed);
        for (mount, name) in &self.slurm_v1 {
            if here
                .iter()
                .any(|child| child.to_string_lossy() == name.as_str())
            {
                continue;
            }
            unseen.push(format!(
                "Slurm's cgroup/v1 jobs ({}/{name}) are counted in no job's series: the \
                 cgroup/v1 plugin makes no perf_event cgroup, and {}/{name} does not exist \
                 (a SPANK plugin placing each task in perf_event:/{name}/uid_U/job_J/step_S/\
                 task_T makes them counted and labelled)",
                mount.display(),
                followed.display()
            ));
        }
        unseen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A system whose procfs (`self/mountinfo`) mounts `lines`, and whose freezer hierarchy
    /// (a directory of the test's tree) holds `slurm`; and that tree.
    fn hybrid(name: &str, lines: &[&str]) -> (System, PathBuf) {
        let root = std::env::temp_dir().join(format!(
            "counterhal-hierarchies-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        for dir in [
            "proc/self",
            "freezer/slurm/uid_0/job_1",
            "unified/system.slice",
        ] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::create_dir_all(root.join("perf_event")).unwrap();
        let at = |dir: &str| root.join(dir).display().to_string();
        let mut text = String::new();
        for line in lines {
            text += &line
                .replace("FREEZER", &at("freezer"))
                .replace("PERF", &at("perf_event"))
                .replace("UNIFIED", &at("unified"));
            text.push('\n');
        }
        std::fs::write(root.join("proc/self/mountinfo"), text).unwrap();
        (System::host().with_procfs(root.join("proc")), root)
    }

    const FREEZER: &str = "37 31 0:34 / FREEZER rw,relatime - cgroup cgroup rw,freezer";
    const PERF: &str = "43 31 0:38 / PERF rw,relatime - cgroup cgroup rw,perf_event";
    const UNIFIED: &str = "41 31 0:38 / UNIFIED rw,relatime - cgroup2 cgroup2 rw";

    /// A hybrid node with perf_event on v1: the perf-event mode follows it, is taken first,
    /// and says the cgroup2 cgroups are not counted; the BPF mode follows cgroup2 and says
    /// the v1 hierarchy is not; both say Slurm's v1 jobs have no perf_event cgroup until one
    /// is made in the hierarchy followed. Without perf_event on v1, nothing is taken first
    /// and cgroup2 is followed.
    ///
    /// Oracle: proc_pid_mountinfo(5)'s lines of Debian 11's hybrid systemd layout, and the
    /// layout of Slurm's cgroup/v1 plugin (`<mount>/slurm/uid_U/job_J`, xcgroup.c).
    #[test]
    fn each_mode_follows_its_hierarchy_and_says_what_it_cannot_see() {
        let (system, root) = hybrid("v1", &[FREEZER, PERF, UNIFIED]);
        let found = Hierarchies::of(&system);
        assert_eq!(found.perf_event_v1, Some(root.join("perf_event")));
        assert_eq!(
            found.followed(false),
            Some(root.join("perf_event").as_path())
        );
        assert_eq!(found.followed(true), Some(root.join("unified").as_path()));
        assert!(found.perf_events_first().is_some());
        let perf = found.unseen(&system, false);
        assert_eq!(perf.len(), 2, "{perf:?}");
        assert!(perf[0].starts_with("cgroup v2's cgroups"), "{perf:?}");
        assert!(
            perf[1].contains("freezer/slurm) are counted in no job's"),
            "{perf:?}"
        );
        let bpf = found.unseen(&system, true);
        assert!(bpf[0].contains("is not followed"), "{bpf:?}");
        assert!(bpf[1].contains("unified/slurm does not exist"), "{bpf:?}");
        // A SPANK plugin's mirror in the perf_event hierarchy: the jobs are seen there.
        std::fs::create_dir_all(root.join("perf_event/slurm")).unwrap();
        assert_eq!(found.unseen(&system, false).len(), 1);
        let (system, other) = hybrid("v2", &[FREEZER, UNIFIED]);
        let found = Hierarchies::of(&system);
        assert_eq!(found.perf_events_first(), None);
        assert_eq!(found.followed(false), Some(other.join("unified").as_path()));
        let unseen = found.unseen(&system, false);
        assert_eq!(unseen.len(), 1, "{unseen:?}");
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::remove_dir_all(&other).unwrap();
    }
}
