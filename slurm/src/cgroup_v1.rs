//! Tasks placed in the cgroup v1 perf_event hierarchy, where one is mounted: Slurm's
//! cgroup/v1 plugin makes cgroups in the hierarchies of the controllers it uses (freezer,
//! cpuset, memory, devices), never perf_event's, so a task stays in the root of that
//! hierarchy, where `perf stat -G` and `counterhal serve` cannot tell one job from another.
//! The plugin makes the layout the cgroup/v1 plugin makes in its own hierarchies (Slurm
//! 22.05, src/plugins/cgroup/v1/xcgroup.c: CgroupPrepend `/slurm`, `uid_%u`, `job_%u`,
//! `step_%s` as log_build_step_id_str names a step, and cgroup_v1.c's `task_%u`):
//! `<perf_event mount>/slurm/uid_U/job_J/step_S/task_T`. On cgroup v2 the cgroup/v2 plugin's
//! own cgroups are the ones counted: nothing is made.

use std::path::{Path, PathBuf};

/// The mount point of the v1 hierarchy with the perf_event controller, or None.
fn perf_event_mount(system: &counterhal_system::System) -> Option<PathBuf> {
    let mounts = system.mounts()?;
    mounts
        .iter()
        .find(|m| m.is_cgroup_v1_with("perf_event"))
        .map(|m| m.mount_point.clone())
}

/// Places `task` (its local id and process) of `uid`'s job `job`, step `step` in its cgroup
/// below the perf_event mount (of `system`'s mounts)
/// (none mounted: nothing to do), adding each cgroup of its path to `made` (to remove at the
/// step's end); or why not.
pub fn place(
    system: &counterhal_system::System,
    uid: u32,
    job: u32,
    step: u32,
    task: (u32, u32),
    made: &mut Vec<PathBuf>,
) -> Result<(), String> {
    let Some(mount) = perf_event_mount(system) else {
        return Ok(());
    };
    let (id, pid) = task;
    let path = task_path(&mount, uid, job, step, id);
    let mut dir = mount.clone();
    for part in path.strip_prefix(&mount).unwrap_or(&path).components() {
        dir.push(part);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        }
        if dir != mount.join("slurm") && !made.contains(&dir) {
            made.push(dir.clone());
        }
    }
    let procs = path.join("cgroup.procs");
    std::fs::write(&procs, pid.to_string()).map_err(|e| format!("{}: {e}", procs.display()))
}

/// A task's cgroup below `mount`, as the cgroup/v1 plugin lays out its own.
pub fn task_path(mount: &Path, uid: u32, job: u32, step: u32, task: u32) -> PathBuf {
    mount
        .join("slurm")
        .join(format!("uid_{uid}"))
        .join(format!("job_{job}"))
        .join(format!("step_{}", crate::report::step_name(step)))
        .join(format!("task_{task}"))
}

/// Removes the cgroups of `made`, deepest first; one still in use (another step's job or
/// user cgroup) stays.
pub fn remove(made: &[PathBuf]) {
    let mut made = made.to_vec();
    made.sort_by_key(|dir| std::cmp::Reverse(dir.components().count()));
    for dir in made {
        std::fs::remove_dir(dir).ok();
    }
}
