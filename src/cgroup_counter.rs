//! Events counted per cgroup by name, on the backend chosen: [`Chosen::cgroup_counter`], in
//! the mode the kernel and this process's privileges allow, through the backend's cgroup
//! capability ([`BackendExt::cgroups`](counterhal_hal::BackendExt::cgroups)): a BPF program
//! summing per cgroup at every context switch, or one perf event per event, CPU and cgroup.

use counterhal_hal::{
    BoxedCgroupCounter, CgroupCounterOptions, CgroupModeChoice, Error, ErrorKind, Result,
};

use crate::chosen::Chosen;

impl Chosen {
    /// Counts the events `names` on `cpus`, per cgroup, in the mode `mode` asks for
    /// ([`CgroupModeChoice::Auto`]: BPF where it works here, else perf events, the reason in
    /// [`CgroupCounter::mode`](counterhal_hal::CgroupCounter::mode)); the cgroups are those
    /// of the cgroup2 mount
    /// ([`cgroups::unified_root`](crate::cgroups::unified_root)), followed with
    /// [`CgroupCounter::follow`](counterhal_hal::CgroupCounter::follow).
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] where the backend chosen cannot count per cgroup (no
    /// [`BackendExt::cgroups`](counterhal_hal::BackendExt::cgroups));
    /// [`ErrorKind::InvalidEvent`] for a name this backend does not know, or one that counts
    /// as several events (a derived preset); otherwise as
    /// [`CgroupCapability::open_cgroup_counter`](counterhal_hal::CgroupCapability::open_cgroup_counter).
    pub fn cgroup_counter(
        &self,
        names: &[&str],
        cpus: &[u32],
        mode: CgroupModeChoice,
    ) -> Result<BoxedCgroupCounter> {
        let options = CgroupCounterOptions::new(
            mode,
            crate::cgroups::unified_root(self.context().system()).ok(),
        );
        self.cgroup_counter_with(names, cpus, options)
    }

    /// [`cgroup_counter`](Chosen::cgroup_counter) with every option given: the mode, the
    /// cgroup2 mount, the BPF mode's capacity.
    ///
    /// # Errors
    /// As [`cgroup_counter`](Chosen::cgroup_counter).
    pub fn cgroup_counter_with(
        &self,
        names: &[&str],
        cpus: &[u32],
        options: CgroupCounterOptions,
    ) -> Result<BoxedCgroupCounter> {
        let Some(cgroups) = counterhal_hal::BackendExt::cgroups(self.backend()) else {
            return Err(Error::unsupported(format!(
                "the {} backend cannot count per cgroup",
                self.label()
            ))
            .with_hint("counting per cgroup needs a backend that can (see `counterhal info`)"));
        };
        crate::open::refuse_duplicates(names)?;
        let mut requests = Vec::with_capacity(names.len());
        for name in names {
            let mut resolved = self.resolve(name)?;
            if resolved.terms.len() != 1 {
                return Err(Error::new(
                    ErrorKind::InvalidEvent,
                    format!(
                        "`{name}` counts as {} events combined; per-cgroup counting takes \
                         events that count alone",
                        resolved.terms.len()
                    ),
                )
                .with_hint("name the events it combines one by one"));
            }
            requests.push(resolved.terms.remove(0).request);
        }
        cgroups.open_cgroup_counter(&requests, cpus, options)
    }
}
