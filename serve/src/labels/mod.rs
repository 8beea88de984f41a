//! Where a followed cgroup's labels come from, one module each: its path ([`cgroup`], the
//! `cgroup` label every cgroup has), the kubelet's layouts ([`kubernetes`]: pod UID, QoS
//! class, container), the container runtimes' outside Kubernetes ([`containers`]: podman's,
//! Docker's) and slurmstepd's ([`slurm`]: job, step, task). A new source of labels is
//! a module here, asked by the counting's cgroups as these are.

pub(crate) mod cgroup;
pub(crate) mod containers;
pub(crate) mod kubernetes;
pub(crate) mod slurm;
