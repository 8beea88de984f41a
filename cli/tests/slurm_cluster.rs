//! A one-node Slurm cluster made for the tests by Debian's own daemons (slurm-wlm and munge):
//! munged, slurmctld and slurmd in a folder of the test's, slurmd on Slurm's cgroup/v2 plugin
//! (`CgroupMountpoint` the cgroup2 mount, `IgnoreSystemd=yes`, so that it makes
//! `system.slice/<node>_slurmstepd.scope` itself), run under `tests/data/cgroup_v2_only.c`
//! where the host is hybrid: the plugin refuses a host whose `/proc/self/cgroup` lists v1
//! hierarchies before `0::` ("Hybrid mode is not supported"), and the library shows slurmd and
//! its slurmstepds the `0::` line alone. Jobs then get the cgroups slurmstepd makes, by
//! `srun`, as on a cluster's node.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use counterhal_conformance::skip::Need;

use crate::common::{compile_c, stderr};

/// The ports the cluster's daemons listen on, away from Slurm's defaults (6817, 6818) so that
/// a node's own Slurm is left alone.
const CONTROLLER_PORT: u16 = 16817;
const NODE_PORT: u16 = 16818;
/// slurmdbd's and its MariaDB's, where the cluster keeps accounting (Slurm's default 6819 and
/// MariaDB's 3306 left alone).
const DBD_PORT: u16 = 16819;
const DB_PORT: u16 = 16820;

/// How the cluster's nodes run their jobs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// One node, slurmd on Slurm's cgroup/v2 plugin (under the shim where the host is
    /// hybrid).
    CgroupV2,
    /// One node, slurmd on Slurm's cgroup/v1 plugin.
    CgroupV1,
    /// Two nodes, `n1` and `n2`, each a slurmd of its own on this host (`slurmd -N`, its
    /// own port, spool and log), tracking processes without cgroups
    /// (`proctrack/linuxproc`, `task/none`), so that the two make nothing in one place.
    TwoNodes,
}

/// A running cluster: its daemons, stopped and their cgroups removed when dropped.
pub struct Cluster {
    dir: PathBuf,
    /// The cgroup2 mount, where slurmd made its scope; `/sys/fs/cgroup` on cgroup/v1.
    mount: PathBuf,
    /// How its nodes run their jobs.
    layout: Layout,
    daemons: Vec<Child>,
    /// `system.slice` where this fixture made it (no systemd made it).
    made_slice: bool,
    /// The one cluster of this test process (its ports are fixed), dropped last.
    _alone: std::sync::MutexGuard<'static, ()>,
}

impl Cluster {
    /// A cluster on this node, its cgroups below `mount`; or why there is none (Slurm or
    /// munge not installed, not root, a daemon that would not start).
    #[cfg_attr(not(feature = "serve"), allow(dead_code))] // the exporter's tests start it
    pub fn start(mount: &Path) -> Result<Cluster, (Need, String)> {
        Cluster::start_with(mount, None, "", false)
    }

    /// [`Cluster::start`], with SPANK plugins (`plugstack`: the plugstack.conf that
    /// slurm.conf's `PlugStackConfig` names, which srun and slurmstepd read), with `more`
    /// (lines of slurm.conf: `EpilogSlurmctld=...`) added to its slurm.conf, and with
    /// `accounting`, its jobs kept by a slurmdbd of its own (over a MariaDB of its own) as a
    /// cluster's accounting keeps them (`sacct`, `sacctmgr`).
    pub fn start_with(
        mount: &Path,
        plugstack: Option<&str>,
        more: &str,
        accounting: bool,
    ) -> Result<Cluster, (Need, String)> {
        Cluster::start_in(mount, Layout::CgroupV2, plugstack, (more, accounting))
    }

    /// A cluster of two nodes on this host, `n1` and `n2` (see [`Layout::TwoNodes`]), with
    /// the SPANK plugins of `plugstack`.
    #[allow(dead_code)] // tests/slurm_spank.rs starts it
    pub fn start_two_nodes(plugstack: &str) -> Result<Cluster, (Need, String)> {
        let mount = Path::new("/sys/fs/cgroup");
        Cluster::start_in(mount, Layout::TwoNodes, Some(plugstack), ("", false))
    }

    /// As [`Cluster::start_with`] with no more lines and no accounting, slurmd on Slurm's
    /// cgroup/v1 plugin, its hierarchies the ones mounted below `/sys/fs/cgroup`.
    #[allow(dead_code)] // tests/cgroup_v1.rs starts it
    pub fn start_on_v1(plugstack: Option<&str>) -> Result<Cluster, (Need, String)> {
        // cgroup.conf's `CgroupMountpoint`, its default.
        Cluster::start_in(
            Path::new("/sys/fs/cgroup"),
            Layout::CgroupV1,
            plugstack,
            ("", false),
        )
    }

    /// A cluster laid out as `layout` says, its cgroups below `mount`, with `more` lines of
    /// slurm.conf and, with `accounting`, a slurmdbd.
    fn start_in(
        mount: &Path,
        layout: Layout,
        plugstack: Option<&str>,
        (more, accounting): (&str, bool),
    ) -> Result<Cluster, (Need, String)> {
        for program in ["slurmctld", "slurmd", "srun", "munged"] {
            if Command::new("sh")
                .args(["-c", &format!("command -v {program}")])
                .output()
                .map_or(true, |o| !o.status.success())
            {
                return Err((
                    Need::Tools,
                    format!("{program} is not installed (apt-get install slurm-wlm munge)"),
                ));
            }
        }
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let alone = ONE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = counterhal_conformance::fixtures::temp_dir()
            .join(format!("counterhal-slurm-{}", std::process::id()));
        for sub in ["spool", "spool-n1", "spool-n2", "state", "log", "run"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| (Need::System, e.to_string()))?;
        }
        let preload = compile_c(
            &dir,
            "cgroup_v2_only.so",
            include_str!("data/cgroup_v2_only.c"),
            &["-shared", "-fPIC", "-O2", "-ldl"],
        )
        .ok_or((
            Need::Tools,
            "no C compiler (apt-get install gcc)".to_string(),
        ))?;
        let slice = mount.join("system.slice");
        let made_slice = layout == Layout::CgroupV2 && !slice.exists();
        if made_slice {
            std::fs::create_dir(&slice).map_err(|e| (Need::Privilege, e.to_string()))?;
        }
        let mut cluster = Cluster {
            dir,
            mount: mount.to_path_buf(),
            layout,
            daemons: Vec::new(),
            made_slice,
            _alone: alone,
        };
        let mut more = more.to_string();
        if accounting {
            more.push_str(&format!(
                "AccountingStorageType=accounting_storage/slurmdbd\n\
                 AccountingStorageHost=localhost\nAccountingStoragePort={DBD_PORT}\n"
            ));
        }
        cluster.write_configuration(plugstack, &more)?;
        cluster.start_munge()?;
        if accounting {
            cluster.start_accounting()?;
        }
        cluster.start_daemons(&preload)?;
        Ok(cluster)
    }

    /// slurm.conf (with `more` at its end) and cgroup.conf in the cluster's folder, and
    /// plugstack.conf where given.
    fn write_configuration(
        &self,
        plugstack: Option<&str>,
        more: &str,
    ) -> Result<(), (Need, String)> {
        let node = hostname();
        let dir = self.dir.display();
        let cpus = counterhal::online_cpus(&counterhal::system::System::host()).len();
        // Each node's own spool, log and pid file where there are two (`%n`: its name).
        let (tracking, nodes, own) = match self.layout {
            Layout::TwoNodes => (
                "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n".to_string(),
                (1..=2)
                    .map(|n| {
                        format!(
                            "NodeName=n{n} NodeHostname={node} NodeAddr=127.0.0.1 \
                             Port={} CPUs={cpus} State=UNKNOWN\n",
                            NODE_PORT + 10 + n
                        )
                    })
                    .collect::<String>()
                    + "PartitionName=test Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP\n",
                "-%n",
            ),
            _ => (
                "ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup\n".to_string(),
                format!(
                    "NodeName={node} CPUs={cpus} State=UNKNOWN\n\
                     PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP\n"
                ),
                "",
            ),
        };
        let mut slurm = format!(
            "ClusterName=counterhal\nSlurmctldHost={node}\nSlurmUser=root\nSlurmdUser=root\n\
             AuthType=auth/munge\n{tracking}\
             SlurmdSpoolDir={dir}/spool{own}\nStateSaveLocation={dir}/state\n\
             SlurmctldPidFile={dir}/run/slurmctld.pid\nSlurmdPidFile={dir}/run/slurmd{own}.pid\n\
             SlurmctldLogFile={dir}/log/slurmctld.log\nSlurmdLogFile={dir}/log/slurmd{own}.log\n\
             SlurmctldPort={CONTROLLER_PORT}\nSlurmdPort={NODE_PORT}\nReturnToService=2\n\
             SelectType=select/cons_tres\nSchedulerType=sched/builtin\nMpiDefault=none\n\
             {nodes}{more}"
        );
        if let Some(plugins) = plugstack {
            let path = self.dir.join("plugstack.conf");
            std::fs::write(&path, plugins).map_err(|e| (Need::System, e.to_string()))?;
            slurm.push_str(&format!("PlugStackConfig={}\n", path.display()));
        }
        let cgroup = match self.layout {
            Layout::CgroupV1 => format!(
                "CgroupPlugin=cgroup/v1\nCgroupMountpoint={}\n",
                self.mount.display()
            ),
            // No cgroup is tracked: slurmd's defaults (it picks the host's plugin itself).
            Layout::TwoNodes => String::new(),
            Layout::CgroupV2 => format!(
                "CgroupPlugin=cgroup/v2\nCgroupMountpoint={}\nIgnoreSystemd=yes\n\
                 ConstrainDevices=yes\n",
                self.mount.display()
            ),
        };
        std::fs::write(self.dir.join("slurm.conf"), slurm)
            .and_then(|()| std::fs::write(self.dir.join("cgroup.conf"), cgroup))
            .map_err(|e| (Need::System, e.to_string()))
    }

    /// munged, where none runs, in the foreground of a child of this process.
    fn start_munge(&mut self) -> Result<(), (Need, String)> {
        let munge_running = Command::new("pgrep")
            .args(["-x", "munged"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !munge_running {
            std::fs::create_dir_all("/run/munge").ok();
            Command::new("chown")
                .args(["munge:munge", "/run/munge"])
                .status()
                .ok();
            // setpriv execs munged itself (runuser would fork it): the child is munged, so
            // that the kill on drop ends it, with the descriptors it inherited (a caller's
            // flock of the Slurm tests' lock among them).
            let munged = Command::new("setpriv")
                .args(["--reuid=munge", "--regid=munge", "--init-groups", "--"])
                .args(["munged", "--foreground", "--force"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| (Need::System, format!("munged: {e}")))?;
            self.daemons.push(munged);
        }
        Ok(())
    }

    /// A MariaDB of the cluster's (its data in the cluster's folder, on 127.0.0.1 alone) and
    /// slurmdbd over it, with the cluster added (`sacctmgr add cluster`); or why not
    /// (Debian's mariadb-server or slurmdbd not installed, a daemon that would not start).
    fn start_accounting(&mut self) -> Result<(), (Need, String)> {
        for program in [
            "mariadbd",
            "mariadb-install-db",
            "mariadb",
            "slurmdbd",
            "sacctmgr",
        ] {
            if !Command::new("sh")
                .args([
                    "-c",
                    &format!("command -v {program} || test -x /usr/sbin/{program}"),
                ])
                .output()
                .is_ok_and(|o| o.status.success())
            {
                return Err((
                    Need::Tools,
                    format!("{program} is not installed (apt-get install slurmdbd mariadb-server)"),
                ));
            }
        }
        let failed = |what: &str, e: &dyn std::fmt::Display| (Need::System, format!("{what}: {e}"));
        let data = self.dir.join("db");
        let socket = self.dir.join("run/mariadb.sock");
        let installed = Command::new("mariadb-install-db")
            .args(["--no-defaults", "--user=root", "--skip-test-db"])
            .arg(format!("--datadir={}", data.display()))
            .output()
            .map_err(|e| failed("mariadb-install-db", &e))?;
        if !installed.status.success() {
            let said = String::from_utf8_lossy(&installed.stderr).into_owned();
            return Err(failed("mariadb-install-db", &said));
        }
        let database = Command::new("/usr/sbin/mariadbd")
            .args(["--no-defaults", "--user=root", "--bind-address=127.0.0.1"])
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--port={DB_PORT}"))
            .arg(format!(
                "--pid-file={}",
                self.dir.join("run/mariadb.pid").display()
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| failed("mariadbd", &e))?;
        self.daemons.push(database);
        // Root through the socket (unix_socket authentication), then slurmdbd's user.
        let grant = "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'counterhal'; \
                     GRANT ALL ON *.* TO 'slurm'@'127.0.0.1';";
        self.wait_for("MariaDB", || {
            Command::new("mariadb")
                .args(["--no-defaults", "-u", "root"])
                .arg(format!("--socket={}", socket.display()))
                .args(["-e", grant])
                .output()
                .is_ok_and(|o| o.status.success())
        })?;
        let node = hostname();
        let dir = self.dir.display();
        let dbd = self.dir.join("slurmdbd.conf");
        std::fs::write(
            &dbd,
            format!(
                "AuthType=auth/munge\nDbdHost={node}\nDbdPort={DBD_PORT}\nSlurmUser=root\n\
                 PidFile={dir}/run/slurmdbd.pid\nLogFile={dir}/log/slurmdbd.log\n\
                 StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\n\
                 StoragePort={DB_PORT}\nStorageUser=slurm\nStoragePass=counterhal\n\
                 StorageLoc=counterhal_acct\n"
            ),
        )
        .map_err(|e| failed("slurmdbd.conf", &e))?;
        // slurmdbd reads a configuration that only its user may read.
        std::fs::set_permissions(&dbd, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .map_err(|e| failed("slurmdbd.conf", &e))?;
        let slurmdbd = Command::new("slurmdbd")
            .arg("-D")
            .env("SLURM_CONF", self.dir.join("slurm.conf"))
            .env("SLURMDBD_CONF", &dbd)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| failed("slurmdbd", &e))?;
        self.daemons.push(slurmdbd);
        self.wait_for("slurmdbd", || {
            self.command("sacctmgr")
                .args(["-i", "add", "cluster", "counterhal"])
                .output()
                .is_ok_and(|o| o.status.success())
        })
    }

    /// Waits up to 30 s for `ready`, or says which daemon did not become so.
    fn wait_for(&self, what: &str, ready: impl Fn() -> bool) -> Result<(), (Need, String)> {
        let waited = Instant::now();
        while waited.elapsed() < Duration::from_secs(30) {
            if ready() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Err((
            Need::System,
            format!("{what} did not answer in 30 s: {}", self.log("slurmdbd")),
        ))
    }

    /// slurmctld and slurmd, each in the foreground of a child of this process; the node
    /// idle, or why not.
    fn start_daemons(&mut self, preload: &Path) -> Result<(), (Need, String)> {
        let configuration = self.dir.join("slurm.conf");
        let controller = Command::new("slurmctld")
            .args(["-D", "-c", "-f"])
            .arg(&configuration)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| (Need::System, format!("slurmctld: {e}")))?;
        self.daemons.push(controller);
        std::thread::sleep(Duration::from_millis(500));
        let names: &[&str] = match self.layout {
            Layout::TwoNodes => &["n1", "n2"],
            _ => &[""],
        };
        for name in names {
            let mut node = Command::new("slurmd");
            node.args(["-D", "-f"]).arg(&configuration);
            if !name.is_empty() {
                node.args(["-N", name]);
            }
            if self.layout == Layout::CgroupV2 {
                node.env("LD_PRELOAD", preload);
            }
            let node = node
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| (Need::System, format!("slurmd: {e}")))?;
            self.daemons.push(node);
        }
        let waited = Instant::now();
        while waited.elapsed() < Duration::from_secs(30) {
            let state = self.command("sinfo").args(["-h", "-o", "%T"]).output();
            if state.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle") {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let log = ["slurmd", "slurmd-n1", "slurmd-n2"]
            .map(|name| self.log(name))
            .concat();
        Err((
            Need::System,
            format!("the node did not become idle in 30 s: {log}"),
        ))
    }

    /// What the daemon `daemon` (`slurmctld`, `slurmd`) logged so far.
    pub fn log(&self, daemon: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("log/{daemon}.log"))).unwrap_or_default()
    }

    /// The cluster's slurm.conf.
    #[cfg_attr(not(feature = "serve"), allow(dead_code))] // the exporter's record test reads it
    pub fn configuration(&self) -> PathBuf {
        self.dir.join("slurm.conf")
    }

    /// A Slurm command (`srun`, `sinfo`) of this cluster.
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", self.dir.join("slurm.conf"));
        command
    }

    /// slurmstepd's scope, as slurmd made it.
    pub fn scope(&self) -> PathBuf {
        self.mount
            .join("system.slice")
            .join(format!("{}_slurmstepd.scope", hostname()))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for daemon in self.daemons.iter_mut().rev() {
            daemon.kill().ok();
            daemon.wait().ok();
        }
        if self.layout == Layout::TwoNodes {
            std::fs::remove_dir_all(&self.dir).ok();
            return;
        }
        if self.layout == Layout::CgroupV1 {
            // The cgroups the cgroup/v1 plugin left in its hierarchies, bottom up.
            for hierarchy in std::fs::read_dir(&self.mount)
                .into_iter()
                .flatten()
                .flatten()
            {
                remove_below(&hierarchy.path().join(format!("slurm_{}", hostname())));
                remove_below(&hierarchy.path().join("slurm"));
            }
            std::fs::remove_dir_all(&self.dir).ok();
            return;
        }
        // The cgroups slurmd left (its own and its system's), bottom up.
        let scope = self.scope();
        for left in ["slurmd", "system", ""] {
            std::fs::remove_dir(scope.join(left)).ok();
        }
        if self.made_slice {
            std::fs::remove_dir(self.mount.join("system.slice")).ok();
        }
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

/// Removes the cgroup `dir` and every one below it, the deepest first (one still in use
/// stays).
fn remove_below(dir: &Path) {
    let children = std::fs::read_dir(dir).into_iter().flatten().flatten();
    for child in children.filter(|c| c.file_type().is_ok_and(|t| t.is_dir())) {
        remove_below(&child.path());
    }
    std::fs::remove_dir(dir).ok();
}

/// spank_counterhal.so, built into the tests' own profile folder (Cargo builds no cdylib of
/// another package for these tests): once per run.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // Linux's tests load it
pub fn spank_plugin() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
            let release = dir.file_name().is_some_and(|n| n == "release");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let out = Command::new(cargo)
                .args(["build", "-p", "counterhal-slurm", "--target-dir"])
                .arg(dir.parent().unwrap())
                .args(["--profile", if release { "release" } else { "test" }])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .expect("cargo runs");
            assert!(
                out.status.success(),
                "building the plugin: {}",
                stderr(&out)
            );
            dir.join("libspank_counterhal.so")
        })
        .clone()
}

/// This node's name, as slurmd takes it (`gethostname`, short).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .split('.')
        .next()
        .unwrap_or_default()
        .to_string()
}
