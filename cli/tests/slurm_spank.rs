//! The Slurm plugin (slurm/, `spank_counterhal.so`) in Debian's Slurm 22.05: `srun
//! --counters` counts each task from its exec and prints the node's counts at the step's end
//! on the job's standard error, as `counterhal stat` prints them; a bad event is said and the
//! job runs. On a node with a cgroup v1 perf_event hierarchy, where it places each task in
//! `slurm/uid_U/job_J/step_S/task_T`, it is tested by tests/cgroup_v1.rs.

use std::path::PathBuf;
use std::process::Output;

use crate::common::*;
use crate::slurm_cluster::{Cluster, spank_plugin};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// A one-node cluster whose srun and slurmstepd load the plugin (plugstack.conf's `required`
/// line, with the command under test to print), and the page-faulting work its jobs run.
fn cluster() -> Result<(Cluster, PathBuf), (Need, String)> {
    if !running_as_root() {
        return Err((Need::Privilege, "slurmd runs as root".into()));
    }
    let mount =
        counterhal::cgroups::unified_root(&counterhal::system::System::host()).map_err(|e| {
            (
                Need::System,
                format!("no cgroup2 file system is mounted: {e}"),
            )
        })?;
    let cluster = Cluster::start_with(&mount, Some(&plugstack()), "", false)?;
    Ok((cluster, work("work")))
}

/// plugstack.conf's line loading the plugin (`required`), with the command under test to
/// print.
fn plugstack() -> String {
    format!(
        "required {} counterhal={}\n",
        spank_plugin().display(),
        bin().display()
    )
}

/// The page-faulting work the jobs run (`tests/data/container_work.c`), built in a folder
/// `what` of the tests' scratch folder.
fn work(what: &str) -> PathBuf {
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-spank-work-{}", std::process::id()))
        .join(what);
    std::fs::create_dir_all(&dir).unwrap();
    compile_c(
        &dir,
        "work",
        include_str!("data/container_work.c"),
        &["-O2"],
    )
    .expect("the job's work builds")
}

/// The count of `event` in `counterhal stat -x,` lines.
fn separated_count(text: &str, event: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(',').collect();
        (fields.get(2) == Some(&event)).then(|| fields[0].parse().ok())?
    })
}

/// `srun` of `cluster` with `args`, its output.
fn srun(cluster: &Cluster, args: &[&str]) -> Output {
    cluster
        .command("srun")
        .args(args)
        .output()
        .expect("srun runs")
}

/// Done when: `srun --counters=page-faults WORK` prints the step's page faults at its end on
/// its standard error, in `counterhal stat`'s table, `-x,` and `-j` forms (and for the metric
/// `page_faults_per_second`, the events it reads), and they are what `counterhal stat -e
/// page-faults WORK` counts of the same program on this node (the oracle, itself held to
/// perf stat elsewhere: both count from the exec), within 1%; with `-n2` the two tasks' sum;
/// a bad event name is said, by name, and the job still runs and succeeds; the task runs in
/// the cgroup the cgroup/v2 plugin made for it (`job_J/step_0/user/task_0`), the one
/// `counterhal serve` follows.
///
/// Oracle: Slurm 22.05 (Debian 12's slurm-wlm: srun, slurmctld, slurmd and slurmstepd loading
/// the plugin through plugstack.conf) and `counterhal stat` on the same work.
#[test]
fn srun_counters_prints_the_steps_counts_as_stat_prints_them() {
    let (cluster, work) = match cluster() {
        Ok(made) => made,
        Err((need, why)) => skip!(need, "{why}"),
    };
    let work = work.to_str().unwrap();
    let alone = counterhal(&["stat", "-x,", "-e", "page-faults", work, "20000", "0", "0"]);
    let oracle = separated_count(&stderr(&alone), "page-faults")
        .unwrap_or_else(|| panic!("counterhal stat: {}", stderr(&alone)));

    let table = srun(
        &cluster,
        &["--counters=page-faults", work, "20000", "0", "0"],
    );
    assert!(table.status.success(), "srun: {}", stderr(&table));
    let text = stderr(&table);
    let header = format!("Performance counter stats for '{work} 20000 0 0 (job ");
    assert!(text.contains(&header), "{text}");
    assert!(
        text.contains("step 0 on ") && text.contains(", 1 task)':"),
        "{text}"
    );
    let counted: f64 = text
        .lines()
        .find(|l| l.trim_end().ends_with("page-faults"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no page-faults line: {text}"));
    eprintln!("one task: srun --counters {counted}, counterhal stat {oracle}");
    assert!(
        (counted - oracle).abs() <= oracle * 0.01,
        "{counted} vs {oracle}"
    );

    let csv = srun(
        &cluster,
        &[
            "-n2",
            "--counters=page-faults",
            "--counters-field-separator=,",
            work,
            "20000",
            "0",
            "0",
        ],
    );
    assert!(csv.status.success(), "srun: {}", stderr(&csv));
    let both = separated_count(&stderr(&csv), "page-faults")
        .unwrap_or_else(|| panic!("no -x, line: {}", stderr(&csv)));
    eprintln!(
        "two tasks: srun --counters -x, {both}, twice counterhal stat {}",
        2.0 * oracle
    );
    assert!(
        (both - 2.0 * oracle).abs() <= oracle * 0.02,
        "{both} vs 2 x {oracle}"
    );

    let json = srun(
        &cluster,
        &[
            "--counters=page-faults",
            "--counters-json",
            work,
            "20000",
            "0",
            "0",
        ],
    );
    let line = stderr(&json)
        .lines()
        .find(|l| l.contains("\"event\" : \"page-faults\""))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no -j line: {}", stderr(&json)));
    let value: serde_json::Value = serde_json::from_str(&line).expect("one JSON object a line");
    let counted: f64 = value["counter-value"].as_str().unwrap().parse().unwrap();
    assert!(
        (counted - oracle).abs() <= oracle * 0.01,
        "{line} vs {oracle}"
    );

    // A metric counts the events it reads (`page_faults_per_second`: page-faults), and its
    // value is printed beside them.
    let metric = srun(
        &cluster,
        &[
            "--counters=page_faults_per_second",
            "--counters-field-separator=,",
            work,
            "20000",
            "0",
            "0",
        ],
    );
    let counted = separated_count(&stderr(&metric), "page-faults")
        .unwrap_or_else(|| panic!("no page-faults for the metric: {}", stderr(&metric)));
    assert!(
        stderr(&metric).contains(",page_faults_per_second,"),
        "no metric line: {}",
        stderr(&metric)
    );
    assert!(
        (counted - oracle).abs() <= oracle * 0.01,
        "{counted} vs {oracle}"
    );

    let bad = srun(
        &cluster,
        &["--counters=no-such-event", "sh", "-c", "echo ran"],
    );
    assert!(bad.status.success(), "the job fails: {}", stderr(&bad));
    assert_eq!(stdout(&bad).trim(), "ran");
    assert!(
        stderr(&bad).contains("`no-such-event`") && stderr(&bad).contains("uncounted"),
        "{}",
        stderr(&bad)
    );

    let placed = srun(&cluster, &["--counters", "cat", "/proc/self/cgroup"]);
    let cgroup = stdout(&placed)
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_string))
        .unwrap_or_else(|| panic!("no cgroup2 line: {}", stdout(&placed)));
    assert!(
        cgroup.contains("_slurmstepd.scope/job_") && cgroup.ends_with("/step_0/user/task_0"),
        "the task's cgroup: {cgroup}"
    );
}

/// Each `-x,` line's page faults in `text`, in order.
fn separated_counts(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            (fields.get(2) == Some(&"page-faults")).then(|| fields[0].parse().ok())?
        })
        .collect()
}

/// Done when: a step of two nodes, `srun -N2 --counters`, prints each node's counts (from
/// that node's slurmstepd, on the job's standard error) and then, from srun at the step's
/// end, the step's: their sum, exactly, titled with the step's nodes and tasks (`2 nodes, 3
/// tasks` where one node runs two); each node's is what `counterhal stat` counts of the same
/// work (within 1%) times its tasks; and with `--export=NONE` as well (the plugin's variable
/// is a `SLURM_` one, which srun passes then); a metric's value printed for each node and
/// the step, beside the events it reads.
///
/// Oracle: Slurm 22.05 (Debian 12's slurm-wlm): srun, slurmctld and two slurmd (`-N n1`,
/// `-N n2`, each on its own port) launching the step on both nodes and running the plugin in
/// srun and in each slurmstepd; `counterhal stat` on the same work.
#[test]
fn srun_counters_sums_a_steps_counts_across_its_nodes() {
    if !running_as_root() {
        skip!(Need::Privilege, "slurmd runs as root");
    }
    let plugstack = plugstack();
    let cluster = match Cluster::start_two_nodes(&plugstack) {
        Ok(cluster) => cluster,
        Err((need, why)) => skip!(need, "{why}"),
    };
    let work = work("nodes");
    let dir = work.parent().unwrap().to_path_buf();
    let work = work.to_str().unwrap();
    let alone = counterhal(&["stat", "-x,", "-e", "page-faults", work, "20000", "0", "0"]);
    let oracle = separated_count(&stderr(&alone), "page-faults")
        .unwrap_or_else(|| panic!("counterhal stat: {}", stderr(&alone)));

    for (tasks, export) in [("2", None), ("3", None), ("2", Some("--export=NONE"))] {
        let mut args = vec!["-N2", "-n", tasks, "--counters=page-faults"];
        args.extend(export);
        args.extend(["--counters-field-separator=,", work, "20000", "0", "0"]);
        let out = srun(&cluster, &args);
        assert!(out.status.success(), "srun {args:?}: {}", stderr(&out));
        let counts = separated_counts(&stderr(&out));
        eprintln!("srun {args:?}: nodes and step {counts:?}, counterhal stat {oracle}");
        let [first, second, step] = counts[..] else {
            panic!("two nodes' lines and the step's: {}", stderr(&out));
        };
        assert_eq!(step, first + second, "{}", stderr(&out));
        let tasks: f64 = tasks.parse().unwrap();
        assert!(
            (step as f64 - tasks * oracle).abs() <= tasks * oracle * 0.01,
            "{step} vs {tasks} x {oracle}"
        );
    }

    // A metric: each node's and the step's value printed beside the page faults.
    let metric = srun(
        &cluster,
        &[
            "-N2",
            "-n2",
            "--counters=page_faults_per_second",
            "--counters-field-separator=,",
            work,
            "20000",
            "0",
            "0",
        ],
    );
    let text = stderr(&metric);
    let values = text
        .lines()
        .filter(|l| l.contains(",page_faults_per_second,"))
        .count();
    assert_eq!(values, 3, "{text}");
    assert_eq!(separated_counts(&text).len(), 3, "{text}");

    let table = srun(
        &cluster,
        &[
            "-N2",
            "-n3",
            "--counters=page-faults",
            work,
            "20000",
            "0",
            "0",
        ],
    );
    let text = stderr(&table);
    let header = format!("Performance counter stats for '{work} 20000 0 0 (job ");
    assert_eq!(text.matches(&header).count(), 3, "{text}");
    assert!(text.contains(", 2 nodes, 3 tasks)':"), "{text}");
    assert!(!text.contains("counterhal:"), "said something: {text}");

    // plugstack.conf's ports=LOW-HIGH: srun listens there (each task sees the port in the
    // variable); sum=no: the nodes' blocks alone, and no port. srun and slurmstepd read
    // plugstack.conf at each step.
    let plugstack_conf = cluster.configuration().with_file_name("plugstack.conf");
    let low = (30000..60000u16)
        .step_by(101)
        .find(|&low| (low..low + 10).all(|p| std::net::TcpListener::bind(("::", p)).is_ok()))
        .expect("ten free ports");
    let high = low + 9;
    std::fs::write(
        &plugstack_conf,
        format!("{} ports={low}-{high}\n", plugstack.trim()),
    )
    .unwrap();
    let seen = srun(
        &cluster,
        &[
            "-N2",
            "-n2",
            "--counters=page-faults",
            "sh",
            "-c",
            "echo $SLURM_SPANK_COUNTERHAL_COUNTS",
        ],
    );
    let ports: Vec<u16> = stdout(&seen)
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(ports.len(), 2, "{} {}", stdout(&seen), stderr(&seen));
    assert!(
        ports.iter().all(|p| (low..=high).contains(p)),
        "{ports:?} not in {low}-{high}"
    );
    assert_eq!(tables(&stderr(&seen)), 3, "{}", stderr(&seen));
    std::fs::write(&plugstack_conf, format!("{} sum=no\n", plugstack.trim())).unwrap();
    let alone = srun(
        &cluster,
        &[
            "-N2",
            "-n2",
            "--counters=page-faults",
            "--counters-field-separator=,",
            "sh",
            "-c",
            "echo [$SLURM_SPANK_COUNTERHAL_COUNTS]",
        ],
    );
    assert_eq!(stdout(&alone).trim(), "[]\n[]", "{}", stderr(&alone));
    assert_eq!(
        separated_counts(&stderr(&alone)).len(),
        2,
        "{}",
        stderr(&alone)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// How many blocks of stat's table `text` holds (each headed `Performance counter stats`).
fn tables(text: &str) -> usize {
    text.matches("Performance counter stats for").count()
}
