//! Cgroups counted from their first context switch: a parent's new children followed by the
//! BPF program itself, before user space has seen them (a runtime or slurmstepd makes a
//! cgroup and places its task there within microseconds, and the task runs at once), within
//! the capacity of its map. Only a parent that only root may make children in adopts them: a
//! user's delegated subtree never takes room from the cgroups followed (until a look sees it,
//! where a parent above adopts levels down). A parent below which cgroups several levels
//! down are wanted adopts them: each child the program adopts adopts its own children in
//! turn, one level fewer (slurmstepd makes `job_N/step_0/user/task_T` and places the task in
//! the deepest within microseconds).
//!
//! What the program adopted that no look at the tree has seen (a cgroup made and removed
//! between two looks) is let go by [`LinuxCgroupCounter::forget_unseen`]: one the program put
//! in a map and that two calls running find neither followed nor adopting is gone, since each
//! look follows, refuses or adopts every such cgroup alive.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use counterhal_hal::Result;

use super::{Adopting, Counting, LinuxCgroupCounter, cgroup_id};

impl LinuxCgroupCounter {
    /// In the BPF mode, has its program follow each new child of `parent` from its first
    /// context switch (`levels` more than 1: each such child adopts its own children in
    /// turn, one level fewer; `u8::MAX`: every level): `Ok(true)`. `Ok(false)` where it does not: in the perf-event mode
    /// (a cgroup is counted from its events' open), where `parent` is not a cgroup only root
    /// may make children in (its directory owned by another user, or writable by group or
    /// others: a delegated subtree), or where its children lie deeper than the mode counts.
    /// Call [`refuse`](LinuxCgroupCounter::refuse) for a child that is not to be followed.
    ///
    /// # Errors
    /// [`ErrorKind::NotFound`](counterhal_hal::ErrorKind::NotFound) where `parent` cannot be
    /// read; [`ErrorKind::LimitReached`](counterhal_hal::ErrorKind::LimitReached) where as
    /// many parents adopt as the counter's capacity.
    pub fn adopt_children(&mut self, parent: &Path, levels: u8) -> Result<bool> {
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
        let id = metadata.ino();
        if level + 1 > deepest || !root_only {
            // One the program adopted below a parent adopting its descendants: a user's
            // delegated subtree adopts nothing from the look that sees it.
            if let Counting::Bpf(bpf) = &mut self.counting {
                bpf.adopt(id, None).ok();
            }
            return Ok(false);
        }
        if self.adopting.iter().any(|a| a.id == id) {
            return Ok(true);
        }
        let levels = levels.max(1);
        if let Counting::Bpf(bpf) = &mut self.counting {
            bpf.adopt(id, Some(levels))?;
        }
        self.adopting.push(Adopting {
            path: parent.to_path_buf(),
            id,
            level,
            levels,
        });
        self.visit_levels();
        Ok(true)
    }

    /// Stops `parent` adopting its new children.
    pub fn leave_children(&mut self, parent: &Path) {
        let Some(at) = self.adopting.iter().position(|a| a.path == parent) else {
            return;
        };
        let gone = self.adopting.remove(at);
        if let Counting::Bpf(bpf) = &mut self.counting {
            bpf.adopt(gone.id, None).ok();
        }
        self.visit_levels();
    }

    /// Lets go `cgroup`, a child an adopting parent's program followed that is not to be
    /// followed, and keeps the program from following it again (until it is gone).
    pub fn refuse(&mut self, cgroup: &Path) {
        let Ok(id) = cgroup_id(self.backend.system(), cgroup) else {
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
        let system = self.backend.system().clone();
        let here = |path: &Path, id: u64| cgroup_id(&system, path).is_ok_and(|now| now == id);
        let Counting::Bpf(bpf) = &mut self.counting else {
            return;
        };
        self.adopting.retain(|a| {
            let keep = here(&a.path, a.id);
            if !keep {
                bpf.adopt(a.id, None).ok();
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

    /// After a look at the tree that followed, refused and adopted what it found: lets go
    /// what the BPF program adopted that neither this call nor the one before found
    /// followed or adopting (a cgroup gone before any look saw it), so that such cgroups do
    /// not fill the maps.
    pub fn forget_unseen(&mut self) {
        let Counting::Bpf(bpf) = &mut self.counting else {
            return;
        };
        let kept: HashSet<u64> = self.kept.iter().map(|c| c.id).collect();
        let adopting: HashSet<u64> = self.adopting.iter().map(|a| a.id).collect();
        let strangers = |now: HashSet<u64>, known: &HashSet<u64>| -> HashSet<u64> {
            now.into_iter().filter(|id| !known.contains(id)).collect()
        };
        let counted = strangers(bpf.ids(false), &kept);
        let adopted = strangers(bpf.ids(true), &adopting);
        for id in counted.intersection(&self.unseen.0) {
            bpf.remove(*id);
        }
        for id in adopted.intersection(&self.unseen.1) {
            bpf.adopt(*id, None).ok();
        }
        let before = std::mem::take(&mut self.unseen);
        self.unseen = (
            counted.difference(&before.0).copied().collect(),
            adopted.difference(&before.1).copied().collect(),
        );
    }
}
