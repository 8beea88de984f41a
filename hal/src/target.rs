//! What is measured: a thread, a process, a CPU, a control group on a CPU, or a command
//! about to run.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// What a group of counters measures.
///
/// Build one with a variant or a constructor ([`BackendTarget::process`], [`BackendTarget::cpu`], ...);
/// match it with a wildcard arm: targets will be added.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BackendTarget {
    /// The calling thread, on whichever CPU it runs.
    ThisThread,
    /// The calling thread, counted only while it runs on one CPU (Linux: `perf_event_open`'s
    /// pid 0 on that CPU; libpfm4's and PAPI's `cpu=N` qualifier on a thread's event set).
    ThisThreadOnCpu(u32),
    /// An existing process (attach), optionally with the children it creates from now on.
    Process {
        /// The process id.
        pid: u32,
        /// Whether children created after the counters are opened are counted too.
        inherit: bool,
    },
    /// Everything that runs on one CPU (system-wide counting).
    Cpu(u32),
    /// A child process that has been created but has not yet executed its program: counting
    /// starts when it calls `exec` and includes all its descendants (`perf stat -- cmd`).
    Exec {
        /// The waiting child's process id.
        pid: u32,
    },
    /// As [`BackendTarget::Exec`], but the command's own process alone: counting starts when it
    /// calls `exec` and leaves out the processes and threads it creates (`perf stat -i -- cmd`).
    ExecAlone {
        /// The waiting child's process id.
        pid: u32,
    },
    /// What runs on one CPU while it runs a task of one control group (or of a group below
    /// it), as `perf stat -a -G NAME` counts: a CPU-wide count filtered by the group. The
    /// group is named by its directory in a cgroup file system (Linux: the `perf_event`
    /// controller's hierarchy, or the unified cgroup2 one), opened when the counters are.
    Cgroup {
        /// The control group's directory, e.g. `/sys/fs/cgroup/unified/build`.
        path: Arc<Path>,
        /// The CPU.
        cpu: u32,
    },
}

impl BackendTarget {
    /// The calling thread.
    pub const fn this_thread() -> BackendTarget {
        BackendTarget::ThisThread
    }

    /// An existing process, attached to, without the children it creates.
    pub const fn process(pid: u32) -> BackendTarget {
        BackendTarget::Process {
            pid,
            inherit: false,
        }
    }

    /// An existing process and the children it creates from now on.
    pub const fn process_and_children(pid: u32) -> BackendTarget {
        BackendTarget::Process { pid, inherit: true }
    }

    /// Everything that runs on CPU `cpu`.
    pub const fn cpu(cpu: u32) -> BackendTarget {
        BackendTarget::Cpu(cpu)
    }

    /// A created child that has not yet executed its program, counted from its `exec`.
    pub const fn exec(pid: u32) -> BackendTarget {
        BackendTarget::Exec { pid }
    }

    /// A created child that has not yet executed its program, counted from its `exec`
    /// without what it creates.
    pub const fn exec_alone(pid: u32) -> BackendTarget {
        BackendTarget::ExecAlone { pid }
    }

    /// What runs on CPU `cpu` while a task of the control group whose directory is `path`
    /// runs there.
    pub fn cgroup(path: impl AsRef<Path>, cpu: u32) -> BackendTarget {
        BackendTarget::Cgroup {
            path: Arc::from(path.as_ref()),
            cpu,
        }
    }

    /// The CPU a CPU-wide target counts on ([`BackendTarget::Cpu`], [`BackendTarget::Cgroup`]); `None` for
    /// the others, which follow their threads.
    pub fn cpu_counted(&self) -> Option<u32> {
        match self {
            BackendTarget::Cpu(cpu) | BackendTarget::Cgroup { cpu, .. } => Some(*cpu),
            _ => None,
        }
    }

    /// Whether the counts cover only the calling thread (so self-monitoring reads are valid).
    pub fn is_this_thread(&self) -> bool {
        matches!(self, BackendTarget::ThisThread)
    }
}

impl fmt::Display for BackendTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendTarget::ThisThread => f.write_str("this thread"),
            BackendTarget::ThisThreadOnCpu(cpu) => write!(f, "this thread on CPU {cpu}"),
            BackendTarget::Process {
                pid,
                inherit: false,
            } => write!(f, "process {pid}"),
            BackendTarget::Process { pid, inherit: true } => {
                write!(f, "process {pid} and its children")
            }
            BackendTarget::Cpu(cpu) => write!(f, "CPU {cpu}"),
            BackendTarget::Exec { pid } => write!(f, "command (process {pid}) from its exec"),
            BackendTarget::ExecAlone { pid } => write!(
                f,
                "command (process {pid}) from its exec, without its children"
            ),
            BackendTarget::Cgroup { path, cpu } => {
                write!(f, "control group {} on CPU {cpu}", path.display())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::{Capabilities, Scope, TargetSupport};
    use crate::domain::Domain;
    use crate::encoding::Accepts;

    #[test]
    fn cgroup_and_alone_targets_say_what_they_count() {
        let cgroup = BackendTarget::cgroup("/sys/fs/cgroup/web", 3);
        assert_eq!(
            cgroup.to_string(),
            "control group /sys/fs/cgroup/web on CPU 3"
        );
        assert_eq!(cgroup.cpu_counted(), Some(3));
        assert_eq!(BackendTarget::cpu(1).cpu_counted(), Some(1));
        assert_eq!(BackendTarget::exec(7).cpu_counted(), None);
        assert_eq!(
            BackendTarget::exec_alone(7).to_string(),
            "command (process 7) from its exec, without its children"
        );
        // A backend says which it takes; none is taken unless said.
        let mut capabilities = Capabilities::new(
            Accepts::new(&[], Domain::ALL, Domain::ALL),
            Scope::PerProcess,
        );
        assert!(!capabilities.supports(&cgroup));
        assert!(!capabilities.supports(&BackendTarget::exec_alone(7)));
        capabilities.set_targets(TargetSupport::ALL);
        assert!(capabilities.supports(&cgroup));
        assert!(capabilities.supports(&BackendTarget::exec_alone(7)));
    }
}
