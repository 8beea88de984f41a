//! The conformance suite's view of this backend: exact counts from an execute breakpoint on a
//! function and from the `getpid` system-call tracepoint.

use counterhal_conformance::{CompanionEvent, ExactEvent, Subject};
use counterhal_hal::BackendExt;
use counterhal_hal::{Backend, BackendTarget, ErrorKind, OpenOptions};

use crate::LinuxBackend;

/// Called twice per unit of work: an execute breakpoint on it counts exactly.
#[inline(never)]
fn marker(value: u64) -> u64 {
    std::hint::black_box(value).wrapping_add(1)
}

/// The Linux backend under the conformance suite.
pub struct LinuxSubject {
    backend: LinuxBackend,
    breakpoint: String,
}

impl LinuxSubject {
    /// A subject over `backend`, counting this thread. Where counting the kernel is not
    /// permitted (`perf_event_paranoid` 2 for an unprivileged user) the breakpoint counts user
    /// space only (`:u`), which for a user function is the same count. The backend may mount
    /// tracefs for the getpid tracepoint (as root, where it is absent, as perf does).
    pub fn new(mut backend: LinuxBackend) -> Self {
        backend.set_mount_tracefs(true);
        let address = marker as fn(u64) -> u64 as usize;
        let mut subject = Self {
            backend,
            breakpoint: format!("mem:{address:#x}:x"),
        };
        if !subject.permitted(&subject.breakpoint) {
            subject.breakpoint.push_str(":u");
        }
        subject
    }

    /// Whether `name` opens on this thread, or fails for another reason than a permission
    /// this process lacks (such failures are the suite's to report).
    fn permitted(&self, name: &str) -> bool {
        let opened =
            self.backend
                .open_named(&[name], &BackendTarget::ThisThread, &OpenOptions::default());
        !matches!(opened, Err(e) if e.kind() == ErrorKind::PermissionDenied)
    }

    /// How many execute breakpoints this thread can hold at once: opened one by one, each
    /// alone, until the kernel refuses one for want of a debug register (ENOSPC); `None` when
    /// one fails otherwise, or 64 open (no limit found).
    pub fn breakpoint_slots(&self) -> Option<u32> {
        let suffix = if self.breakpoint.ends_with(":u") {
            ":u"
        } else {
            ""
        };
        let mut held = Vec::new();
        for slot in 0..64u32 {
            let address = marker as fn(u64) -> u64 as usize + 4 * slot as usize;
            let name = format!("mem:{address:#x}:x{suffix}");
            match self.backend.open_named(
                &[name.as_str()],
                &BackendTarget::ThisThread,
                &OpenOptions::default(),
            ) {
                Ok(set) => held.push(set),
                Err(e) if e.kind() == ErrorKind::NoCounterAvailable => return Some(slot),
                Err(_) => return None,
            }
        }
        None
    }

    /// Whether `name` opens on this thread.
    fn opens(&self, name: &str) -> bool {
        self.backend
            .open_named(&[name], &BackendTarget::ThisThread, &OpenOptions::default())
            .is_ok()
    }
}

impl Subject for LinuxSubject {
    type Backend = LinuxBackend;

    fn backend(&self) -> &LinuxBackend {
        &self.backend
    }

    fn description(&self) -> String {
        "perf_event_open, this thread".to_string()
    }

    fn exact_events(&self) -> Vec<ExactEvent> {
        // The marker is user code: both calls count in user mode, none in kernel mode (which
        // the split by modifiers checks where counting the kernel is permitted).
        let breakpoint = ExactEvent::new(self.breakpoint.clone(), 2);
        let breakpoint = if self.breakpoint.ends_with(":u") {
            breakpoint
        } else {
            breakpoint.with_user_per_unit(2)
        };
        let candidates = [breakpoint, ExactEvent::new("syscalls:sys_enter_getpid", 1)];
        candidates
            .into_iter()
            .filter(|e| self.backend.resolve(&e.name).is_ok() && self.permitted(&e.name))
            .collect()
    }

    fn work(&self, units: u64) {
        let call: fn(u64) -> u64 = std::hint::black_box(marker);
        let mut sum = 0u64;
        for i in 0..units {
            sum = sum.wrapping_add(call(i));
            sum = sum.wrapping_add(call(sum));
            // std's process id is a real getpid(2) each time (glibc does not cache it).
            sum = sum.wrapping_add(u64::from(std::process::id()));
        }
        std::hint::black_box(sum);
    }

    fn target(&self) -> BackendTarget {
        BackendTarget::ThisThread
    }

    fn companion_events(&self) -> Vec<CompanionEvent> {
        // The software PMU (page faults: this work touches no new page), the task clock (a PMU
        // of its own) and, where there is a core PMU, its user-mode instructions and cycles:
        // with the tracepoint and the breakpoint, each leads a group once.
        let candidates = [
            CompanionEvent::present("page-faults"),
            CompanionEvent::growing("task-clock"),
            CompanionEvent::growing("instructions:u"),
            CompanionEvent::growing("cycles:u"),
        ];
        candidates
            .into_iter()
            .filter(|e| self.opens(&e.name))
            .collect()
    }

    fn counter_event(&self) -> Option<(String, u32)> {
        // Breakpoints take the CPU's debug registers: four on x86, from 2 to 16 on Arm64 (the
        // machine says how many by refusing the next one).
        Some((self.breakpoint.clone(), self.breakpoint_slots()?))
    }

    fn multiplexed_event(&self) -> Option<(String, u32)> {
        // The kernel time-shares hardware counters; 16 copies of instructions exceed every x86
        // core PMU's counters (up to 8 general-purpose and a fixed one per thread). Where no
        // hardware PMU exists the case skips.
        Some(("instructions".to_string(), 15))
    }

    fn counts_per_thread(&self) -> bool {
        true
    }

    // The sampler is the real backend's (the stub of other systems has none).
    #[cfg(target_os = "linux")]
    fn open_sampler(
        &self,
        names: &[&str],
        options: &counterhal_hal::SampleOptions,
    ) -> Option<Result<Box<dyn counterhal_hal::Sampler>, counterhal_hal::Error>> {
        let opened = names
            .iter()
            .map(|name| self.backend.resolve(name))
            .collect::<Result<Vec<_>, counterhal_hal::Error>>()
            .and_then(|events| {
                let requests: Vec<counterhal_hal::EventRequest> = events
                    .into_iter()
                    .flat_map(|event| event.terms)
                    .map(|term| term.request)
                    .collect();
                self.backend
                    .open_sampler(&requests, &self.target(), options)
            });
        Some(opened.map(|sampler| Box::new(sampler) as Box<dyn counterhal_hal::Sampler>))
    }
}

/// The suite on the real device, or why the backend cannot be used here (its probe's error).
///
/// # Errors
/// As the crate's `probe`.
pub fn check(
    given: &counterhal_hal::Given<'_, counterhal_events::Database>,
) -> counterhal_hal::Result<counterhal_conformance::Report> {
    crate::probe(
        std::sync::Arc::clone(given.database),
        given.cpu_model.map(str::to_owned),
        given.system.clone(),
    )
    .map(|backend| {
        counterhal_conformance::run_quietly(&crate::conformance::LinuxSubject::new(backend))
    })
}

/// The suite on every model of the device (none: the Linux backend has no model).
pub fn check_models(
    _db: std::sync::Arc<counterhal_events::Database>,
) -> Vec<counterhal_conformance::Report> {
    Vec::new()
}
