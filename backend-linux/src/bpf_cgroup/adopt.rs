//! Cgroups counted from their first context switch: a parent's new children followed by the
//! BPF program itself, before user space has seen them (a runtime or slurmstepd makes a
//! cgroup and places its task there within microseconds, and the task runs at once), within
//! the capacity of its map. Only a parent that only root may make children in adopts them: a
//! user's delegated subtree never takes room from the cgroups followed.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use counterhal_hal::Result;

use super::{Counting, LinuxCgroupCounter, cgroup_id};

impl LinuxCgroupCounter {
    /// In the BPF mode, has its program follow each new child of `parent` from its first
    /// context switch: `Ok(true)`. `Ok(false)` where it does not: in the perf-event mode
    /// (a cgroup is counted from its events' open), where `parent` is not a cgroup only root
    /// may make children in (its directory owned by another user, or writable by group or
    /// others: a delegated subtree), or where its children lie deeper than the mode counts.
    /// Call [`refuse`](LinuxCgroupCounter::refuse) for a child that is not to be followed.
    ///
    /// # Errors
    /// [`ErrorKind::NotFound`](counterhal_hal::ErrorKind::NotFound) where `parent` cannot be
    /// read; [`ErrorKind::LimitReached`](counterhal_hal::ErrorKind::LimitReached) where as
    /// many parents adopt as the counter's capacity.
    pub fn adopt_children(&mut self, parent: &Path) -> Result<bool> {
        if !matches!(self.counting, Counting::Bpf(_)) {
            return Ok(false);
        }
        self.forget_gone();
        let Ok(level) = self.check_level(parent) else {
            return Ok(false);
        };
        let deepest = self.deepest_level().unwrap_or(0);
        let metadata = std::fs::metadata(parent).map_err(|e| {
            counterhal_hal::Error::new(
                counterhal_hal::ErrorKind::NotFound,
                format!("cannot read cgroup {}: {e}", parent.display()),
            )
        })?;
        let root_only = metadata.uid() == 0 && metadata.mode() & 0o022 == 0;
        if level + 1 > deepest || !root_only {
            return Ok(false);
        }
        let id = metadata.ino();
        if self.adopting.iter().any(|(_, known, _)| *known == id) {
            return Ok(true);
        }
        if let Counting::Bpf(bpf) = &mut self.counting {
            bpf.adopt(id, true)?;
        }
        self.adopting.push((parent.to_path_buf(), id, level));
        self.visit_levels();
        Ok(true)
    }

    /// Stops `parent` adopting its new children.
    pub fn leave_children(&mut self, parent: &Path) {
        let Some(at) = self.adopting.iter().position(|(p, _, _)| p == parent) else {
            return;
        };
        let (_, id, _) = self.adopting.remove(at);
        if let Counting::Bpf(bpf) = &mut self.counting {
            bpf.adopt(id, false).ok();
        }
        self.visit_levels();
    }

    /// Lets go `cgroup`, a child an adopting parent's program followed that is not to be
    /// followed, and keeps the program from following it again (until it is gone).
    pub fn refuse(&mut self, cgroup: &Path) {
        let Ok(id) = cgroup_id(cgroup) else {
            return;
        };
        let followed = self.kept.iter().any(|c| c.id == id);
        if followed || self.refused.iter().any(|(_, known)| *known == id) {
            return;
        }
        if let Counting::Bpf(bpf) = &mut self.counting {
            bpf.refuse(id);
            self.refused.push((cgroup.to_path_buf(), id));
        }
    }

    /// Forgets the adopting parents and refused children that are gone (their directory
    /// removed, or holding another cgroup): their ids are of no cgroup now.
    fn forget_gone(&mut self) {
        let here = |path: &Path, id: u64| cgroup_id(path).is_ok_and(|now| now == id);
        let Counting::Bpf(bpf) = &mut self.counting else {
            return;
        };
        self.adopting.retain(|(path, id, _)| {
            let keep = here(path, *id);
            if !keep {
                bpf.adopt(*id, false).ok();
            }
            keep
        });
        self.refused.retain(|(path, id)| {
            let keep = here(path, *id);
            if !keep {
                bpf.unrefuse(*id);
            }
            keep
        });
    }
}
