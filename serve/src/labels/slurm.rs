//! The Slurm job, step and task a cgroup belongs to, read from its path as slurmstepd's
//! cgroup plugins name them (v2's, and v1's below), for the `slurm_job_id` (or
//! `slurm_sluid`), `slurm_step` and `slurm_task` labels of its series.
//!
//! The plugin (Slurm 25.11, src/plugins/cgroup/v2/cgroup_v2.c) makes one scope for every
//! slurmstepd of the node, `<CgroupSlice>/slurmstepd.scope` below PID 1's cgroup (cgroup.conf's
//! `CgroupSlice`, `system.slice` by default; `<NodeName>_slurmstepd.scope` where Slurm is
//! built for several slurmd on a node), and below it a cgroup per job, per step,
//! `step_<id>` (`batch`, `extern`, `interactive`, or the step's number, with `+<n>` for a
//! heterogeneous step's component: src/common/log.c, `log_build_step_id_str`), and in each
//! step `user/task_<n>` (a task by its number, `task_special` for the processes it cannot
//! number) beside `slurm` (its slurmstepd). Anything below a task's cgroup is that task's.
//!
//! The job's cgroup is `job_<id>` up to Slurm 25.11, and from 26.05 on the job's SLUID
//! (`sEKNKTV3WPV500`: `s` and 13 digits of Crockford's base 32, src/common/sluid.c
//! `print_sluid`), which holds no job ID; cgroup.conf's `CgroupJobIdPaths=yes` (26.05.2 on)
//! brings `job_<id>` back. A job gets `slurm_job_id` or `slurm_sluid`, as its cgroup says.
//!
//! Jobs are recognized there only ([`Slurmstepd`]): a `slurmstepd.scope` anywhere else is a
//! cgroup that whoever may make cgroups there named so (a user's delegated subtree), not
//! slurmstepd's.
//!
//! The cgroup v1 plugin (src/plugins/cgroup/v1/xcgroup.c, `xcgroup_create_hierarchy`) makes,
//! in each v1 hierarchy it uses, `<prepend>/uid_<uid>/job_<id>/step_<step>` and in the step
//! `task_<n>` (`_handle_task_cgroup`), the prepend `slurm` at the top of the hierarchy
//! (`slurm_<NodeName>` where Slurm is built for several slurmd on a node: src/common/
//! cgroup.c). It uses freezer, cpuset, memory and devices, never perf_event: a job's tasks are
//! in a perf_event cgroup only where something else places them there in the same layout
//! (a SPANK plugin), which serve then labels as these.

/// The Slurm labels of a job's (or a step's, or a task's) cgroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The job's ID (`SLURM_JOB_ID`), where its cgroup is `job_<id>`; else empty.
    pub job_id: String,
    /// The job's SLUID (`sEKNKTV3WPV500`), where its cgroup is named by it (Slurm 26.05's
    /// default); else empty.
    pub sluid: String,
    /// The step: `batch`, `extern`, `interactive` or its number (`0`, `0+1`); empty for
    /// the job's own cgroup.
    pub step: String,
    /// The task's number (`SLURM_PROCID`), or `special`; empty above a task's cgroup.
    pub task: String,
}

/// The scope's name, and its suffix where slurmd is built for several on a node.
const SCOPE: &str = "slurmstepd.scope";
const NODE_SCOPE: &str = "_slurmstepd.scope";

/// The longest `--slurm-cgroup-slice` taken (a cgroup path; Linux's `PATH_MAX`).
const MAX_SLICE: usize = 4096;

/// Where slurmstepd makes the jobs' cgroups: its scope in cgroup.conf's `CgroupSlice`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slurmstepd {
    /// The slice's path's parts (`["system.slice"]`).
    slice: Vec<String>,
}

impl Default for Slurmstepd {
    /// Slurm's default `CgroupSlice`, `system.slice`.
    fn default() -> Slurmstepd {
        Slurmstepd::new("system.slice").expect("`system.slice` is a slice")
    }
}

impl Slurmstepd {
    /// The slurmstepd of cgroup.conf's `CgroupSlice=slice`: a path below the cgroup mount
    /// (`system.slice`, `/system.slice`, `slurm.slice`).
    ///
    /// # Errors
    /// `slice` is no such path (empty, with an empty, `.` or `..` part, or longer than 4096
    /// bytes), with what would be one.
    pub fn new(slice: &str) -> Result<Slurmstepd, String> {
        let bad = |why: &str| {
            format!(
                "`{slice}` is not a Slurm CgroupSlice ({why}): a cgroup below the mount, as \
                 cgroup.conf's CgroupSlice names it (`system.slice`, its default)"
            )
        };
        if slice.len() > MAX_SLICE {
            return Err(bad("longer than 4096 bytes"));
        }
        let trimmed = slice.trim_matches('/');
        if trimmed.is_empty() {
            return Err(bad("no cgroup named"));
        }
        let parts: Vec<String> = trimmed.split('/').map(str::to_string).collect();
        if parts.iter().any(|p| p.is_empty() || p == "." || p == "..") {
            return Err(bad("an empty, `.` or `..` part"));
        }
        Ok(Slurmstepd { slice: parts })
    }

    /// The job whose cgroup (or whose step's or task's) `path` is, a path below the cgroup
    /// mount as `/proc/PID/cgroup` shows it; `None` for a cgroup that is no job's (the
    /// scope and its `system` included, and any cgroup outside this slurmstepd's scope).
    pub fn job(&self, path: &str) -> Option<Job> {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        self.job_in_scope(&parts).or_else(|| job_of_v1(&parts))
    }

    /// The job of the cgroup path `parts` in the cgroup v2 plugin's layout.
    fn job_in_scope(&self, parts: &[&str]) -> Option<Job> {
        let starts = parts.len() > self.slice.len() + 1
            && parts.iter().zip(&self.slice).all(|(p, s)| p == s);
        if !starts {
            return None;
        }
        let below = &parts[self.slice.len()..];
        let scope = below[0];
        let of_node = scope
            .strip_suffix(NODE_SCOPE)
            .is_some_and(|n| !n.is_empty());
        if scope != SCOPE && !of_node {
            return None;
        }
        let (job_id, sluid) = match below[1].strip_prefix("job_") {
            Some(id) => (number(id)?, ""),
            None => ("", sluid(below[1])?),
        };
        let step = below
            .get(2)
            .and_then(|p| p.strip_prefix("step_"))
            .filter(|s| is_step(s));
        let task = match (step, below.get(3), below.get(4)) {
            (Some(_), Some(&"user"), Some(part)) => {
                part.strip_prefix("task_").and_then(|task| match task {
                    "special" => Some(task),
                    task => number(task),
                })
            }
            _ => None,
        };
        Some(Job {
            job_id: job_id.to_string(),
            sluid: sluid.to_string(),
            step: step.unwrap_or_default().to_string(),
            task: task.unwrap_or_default().to_string(),
        })
    }
}

/// The job of the cgroup path `parts` in the cgroup v1 plugin's layout
/// (`slurm[_<node>]/uid_<uid>/job_<id>/step_<step>/task_<n>`, at the top of a hierarchy);
/// `None` for any other cgroup (`slurm/system`, slurmd's own, included).
fn job_of_v1(parts: &[&str]) -> Option<Job> {
    let prepend = *parts.first()?;
    let node = prepend
        .strip_prefix("slurm_")
        .is_some_and(|n| !n.is_empty());
    if prepend != "slurm" && !node {
        return None;
    }
    number(parts.get(1)?.strip_prefix("uid_")?)?;
    let job_id = number(parts.get(2)?.strip_prefix("job_")?)?;
    let step = parts
        .get(3)
        .and_then(|p| p.strip_prefix("step_"))
        .filter(|s| is_step(s));
    let task = match (step, parts.get(4)) {
        (Some(_), Some(part)) => part.strip_prefix("task_").and_then(number),
        _ => None,
    };
    Some(Job {
        job_id: job_id.to_string(),
        sluid: String::new(),
        step: step.unwrap_or_default().to_string(),
        task: task.unwrap_or_default().to_string(),
    })
}

/// `text` where it is a decimal `u32`, as Slurm prints its IDs (`%u`).
fn number(text: &str) -> Option<&str> {
    let plain = !text.is_empty() && (text == "0" || !text.starts_with('0'));
    (plain && text.parse::<u32>().is_ok()).then_some(text)
}

/// `text` where it is a SLUID as `print_sluid` writes it (src/common/sluid.c, Slurm 26.05):
/// `s`, then a 64-bit value in 13 digits of Crockford's base 32, most significant first (the
/// first digit holds the top 4 bits, so it is at most `F`).
fn sluid(text: &str) -> Option<&str> {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let digits = text.strip_prefix('s')?.as_bytes();
    let top = *digits.first()?;
    let valid = digits.len() == 13
        && digits.iter().all(|d| DIGITS.contains(d))
        && DIGITS[..16].contains(&top);
    valid.then_some(text)
}

/// Whether `text` is a step as `log_build_step_id_str` writes it without its job.
fn is_step(text: &str) -> bool {
    let (step, component) = match text.split_once('+') {
        Some((step, component)) => (step, Some(component)),
        None => (text, None),
    };
    let named = matches!(step, "batch" | "extern" | "interactive") || number(step).is_some();
    named && component.is_none_or(|c| number(c).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The labels of `path` by the slurmstepd of `slice`.
    fn labels_in(slice: &str, path: &str) -> Option<(String, String, String)> {
        let job = Slurmstepd::new(slice).unwrap().job(path)?;
        Some((job.job_id, job.step, job.task))
    }

    fn labels(path: &str) -> Option<(String, String, String)> {
        labels_in("system.slice", path)
    }

    fn job(id: &str, step: &str, task: &str) -> Option<(String, String, String)> {
        Some((id.to_string(), step.to_string(), task.to_string()))
    }

    /// Every level slurmstepd makes: the job, its steps by each name, the user part and its
    /// tasks, the step's slurmstepd, and a task's own children.
    ///
    /// Oracle: Slurm 25.11.7's src/plugins/cgroup/v2/cgroup_v2.c (`_set_int_cg_ns`: the scope
    /// `<CgroupSlice>/slurmstepd.scope`, `<NodeName>_slurmstepd.scope` under
    /// `MULTIPLE_SLURMD`; `cgroup_p_step_create`: `/job_%u`, `%s/step_%s`, `%s/user`,
    /// `%s/slurm`; `cgroup_p_task_addto`: `%s/task_%u`, `%s/task_special`) and
    /// src/common/log.c (`log_build_step_id_str` with `STEP_ID_FLAG_NO_PREFIX |
    /// STEP_ID_FLAG_NO_JOB`: `batch`, `extern`, `interactive`, `%u`, `+%u`).
    #[test]
    fn jobs_steps_and_tasks_are_named_as_slurmstepd_names_them() {
        let scope = "/system.slice/slurmstepd.scope";
        assert_eq!(labels(&format!("{scope}/job_42")), job("42", "", ""));
        for step in ["batch", "extern", "interactive", "0", "17", "3+1"] {
            assert_eq!(
                labels(&format!("{scope}/job_42/step_{step}")),
                job("42", step, ""),
                "{step}"
            );
            assert_eq!(
                labels(&format!("{scope}/job_42/step_{step}/user")),
                job("42", step, ""),
                "{step}"
            );
            assert_eq!(
                labels(&format!("{scope}/job_42/step_{step}/slurm")),
                job("42", step, ""),
                "{step}"
            );
        }
        assert_eq!(
            labels(&format!("{scope}/job_42/step_0/user/task_7")),
            job("42", "0", "7")
        );
        assert_eq!(
            labels(&format!("{scope}/job_42/step_batch/user/task_special")),
            job("42", "batch", "special")
        );
        assert_eq!(
            labels(&format!(
                "{scope}/job_42/step_0/user/task_7/mine/job_9/step_1"
            )),
            job("42", "0", "7")
        );
        assert_eq!(
            labels("/system.slice/node-01_slurmstepd.scope/job_4294967294/step_extern"),
            job("4294967294", "extern", "")
        );
        assert_eq!(
            labels_in(
                "/slurm.slice/",
                "/slurm.slice/slurmstepd.scope/job_1/step_0/user/task_0"
            ),
            job("1", "0", "0")
        );
    }

    /// Slurm 26.05's job cgroups, named by the job's SLUID: the same steps and tasks below,
    /// `slurm_sluid` in place of `slurm_job_id`; what is not a SLUID as Slurm writes one is
    /// no job.
    ///
    /// Oracle: Slurm 26.05.0's src/plugins/cgroup/v2/cgroup_v2.c (`cgroup_p_step_create`:
    /// `print_sluid(step->step_id.sluid, ...)`, `/%s`, unless `CgroupJobIdPaths`) and
    /// src/common/sluid.c (`print_sluid`: `s`, 13 digits of `0123456789ABCDEFGHJKMNPQRSTVWXYZ`,
    /// the top one 4 bits); cgroup.conf(5)'s example `sEKNKTV3WPV500`.
    #[test]
    fn jobs_named_by_their_sluid_get_it_as_a_label() {
        let scope = "/system.slice/slurmstepd.scope";
        let of = |path: &str| {
            let job = Slurmstepd::default().job(path)?;
            Some((job.job_id, job.sluid, job.step, job.task))
        };
        let sluid = |sluid: &str, step: &str, task: &str| {
            Some((
                String::new(),
                sluid.to_string(),
                step.to_string(),
                task.to_string(),
            ))
        };
        assert_eq!(
            of(&format!("{scope}/sEKNKTV3WPV500")),
            sluid("sEKNKTV3WPV500", "", "")
        );
        assert_eq!(
            of(&format!("{scope}/s5K1KKYAYG5D00/step_batch/user/task_0")),
            sluid("s5K1KKYAYG5D00", "batch", "0")
        );
        assert_eq!(
            of(&format!("{scope}/sFZZZZZZZZZZZZ/step_0/slurm")),
            sluid("sFZZZZZZZZZZZZ", "0", "")
        );
        for path in [
            "sEKNKTV3WPV5000",
            "sEKNKTV3WPV50",
            "SEKNKTV3WPV500",
            "sekNKTV3WPV500",
            "sGKNKTV3WPV500",
            "sEKNKTV3WPV5O0",
            "sEKNKTV3WPVU00",
            "s",
            "system",
        ] {
            assert_eq!(of(&format!("{scope}/{path}")), None, "{path}");
        }
    }

    /// Cgroups that are no job's get no labels; a part below a job that slurmstepd would not
    /// name so gets the labels of the levels above it.
    ///
    /// Oracle: the same Slurm sources (the scope's `system` directory is the waiting area of
    /// new slurmstepds; IDs are `%u`).
    #[test]
    fn cgroups_that_are_no_jobs_get_no_labels() {
        for path in [
            "/",
            "",
            "/system.slice",
            "/system.slice/slurmstepd.scope",
            "/system.slice/slurmstepd.scope/system",
            "/system.slice/slurmd.service",
            "/system.slice/_slurmstepd.scope/job_1",
            "/system.slice/slurmstepd.scope/job_",
            "/system.slice/slurmstepd.scope/job_x1",
            "/system.slice/slurmstepd.scope/job_01",
            "/system.slice/slurmstepd.scope/job_4294967296",
            "/system.slice/slurmstepd.scope/job_-1",
        ] {
            assert_eq!(labels(path), None, "{path}");
        }
        let scope = "/system.slice/slurmstepd.scope/job_5";
        for (below, step) in [
            ("step_", ""),
            ("step_TDB", ""),
            ("step_1+", ""),
            ("step_+1", ""),
            ("step_batch+x", ""),
            ("task_0", ""),
            ("step_0/task_0", "0"),
            ("step_0/user/task_", "0"),
            ("step_0/user/task_x", "0"),
            ("step_0/slurm/task_1", "0"),
        ] {
            assert_eq!(
                labels(&format!("{scope}/{below}")),
                job("5", step, ""),
                "{below}"
            );
        }
    }

    /// A `slurmstepd.scope` slurmstepd did not make gets no labels: jobs are recognized in
    /// the configured slice at the top of the mount only, so a user's delegated subtree that
    /// copies the layout is not labelled as another user's job.
    ///
    /// Oracle: Slurm 25.11.7's src/plugins/cgroup/v2/cgroup_v2.c (`_get_init_cg_path`: the
    /// scope is made below PID 1's cgroup, the mount's root on a host) and cgroup.conf(5)
    /// (`CgroupSlice`, default `system.slice`).
    #[test]
    fn a_slurmstepd_scope_slurm_did_not_make_gets_no_labels() {
        for path in [
            "/user.slice/user-1000.slice/user@1000.service/system.slice/slurmstepd.scope/job_1",
            "/app/system.slice/slurmstepd.scope/job_1/step_0",
            "/slurmstepd.scope/job_1",
            "/system.slice/x/slurmstepd.scope/job_1",
            "/kubepods.slice/system.slice/node_slurmstepd.scope/job_1",
        ] {
            assert_eq!(labels(path), None, "{path}");
        }
        assert_eq!(
            labels_in("slurm.slice", "/system.slice/slurmstepd.scope/job_1"),
            None
        );
    }

    /// The cgroup v1 plugin's layout, in any hierarchy that holds it (the perf_event one
    /// where a SPANK plugin mirrors the freezer's): its jobs, steps and tasks, whatever the
    /// slice the v2 plugin is told; slurmd's own cgroup, other users' look-alikes deeper down
    /// and malformed levels get no labels, or those of the levels above them.
    ///
    /// Oracle: Slurm 23.02's src/plugins/cgroup/v1/xcgroup.c (`xcgroup_create_slurm_cg`:
    /// the prepend; `xcgroup_create_hierarchy`: `%s/uid_%u`, `%s/job_%u`, `%s/step_%s` with
    /// `log_build_step_id_str`), cgroup_v1.c (`_handle_task_cgroup`: `%s/task_%u`;
    /// `cgroup_p_system_create`: `%s/system`) and src/common/cgroup.c (`/slurm`,
    /// `/slurm_%n` under `MULTIPLE_SLURMD`).
    #[test]
    fn the_v1_plugins_layout_names_jobs_steps_and_tasks() {
        let of = |path: &str| {
            let job = Slurmstepd::new("slurm.slice").unwrap().job(path)?;
            Some((job.job_id, job.step, job.task))
        };
        assert_eq!(of("/slurm/uid_0/job_1"), job("1", "", ""));
        assert_eq!(
            of("/slurm/uid_1000/job_7/step_batch"),
            job("7", "batch", "")
        );
        assert_eq!(
            of("/slurm_node-1/uid_0/job_1/step_0/task_0"),
            job("1", "0", "0")
        );
        assert_eq!(
            of("/slurm/uid_0/job_4294967294/step_extern/task_3/inner"),
            job("4294967294", "extern", "3")
        );
        assert_eq!(of("/slurm/uid_0/job_1/step_2+1"), job("1", "2+1", ""));
        assert_eq!(of("/slurm/uid_0/job_1/step_x/task_0"), job("1", "", ""));
        assert_eq!(of("/slurm/uid_0/job_1/step_0/task_x"), job("1", "0", ""));
        for path in [
            "/slurm",
            "/slurm/system",
            "/slurm/uid_0",
            "/slurm/uid_x/job_1",
            "/slurm/uid_0/job_01",
            "/slurm_/uid_0/job_1",
            "/slurmd/uid_0/job_1",
            "/app/slurm/uid_0/job_1",
            "/slurm/job_1/step_0",
        ] {
            assert_eq!(of(path), None, "{path}");
        }
    }

    /// A slice that is no cgroup path is refused, naming what would be one.
    #[test]
    fn a_bad_slice_is_refused_with_what_would_be_one() {
        for slice in ["", "/", "a//b", "a/../b", "./a", &"a".repeat(5000)] {
            let error = Slurmstepd::new(slice).unwrap_err();
            assert!(
                error.contains("`system.slice`, its default"),
                "{slice}: {error}"
            );
        }
        assert_eq!(
            Slurmstepd::new("/system.slice/").unwrap(),
            Slurmstepd::default()
        );
    }
}
