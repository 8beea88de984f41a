//! The [`Context`] names resolve in: the event database, the CPU model and the system whose
//! facts are read, made once where a program starts and handed down to what it opens.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use counterhal_events::{CpuIdentity, Database};
use counterhal_hal::{Error, Result};
use counterhal_system::System;

/// The event database and the CPU model to resolve names against, the system whose facts are
/// read (this machine's, made where the context is), and whether resolving may change the
/// system to find a name (mount tracefs: off unless asked for).
#[derive(Clone, Debug)]
pub struct Context {
    database: Arc<Database>,
    system: System,
    /// Detected when first asked for (a build with no CPU model never asks on its own).
    cpu: OnceLock<Option<CpuIdentity>>,
    model: Option<String>,
    mount_tracefs: bool,
}

impl Context {
    /// A context of its parts: the system its facts are read from, a database already loaded,
    /// the CPU (`None`: not detected) and the database's model names resolve against (`None`:
    /// none matched).
    pub fn from_parts(
        system: System,
        database: Arc<Database>,
        cpu: Option<CpuIdentity>,
        model: Option<String>,
    ) -> Context {
        Context {
            database,
            system,
            cpu: OnceLock::from(cpu),
            model,
            mount_tracefs: false,
        }
    }

    /// The database: shipped, plus `COUNTERHAL_EVENTS` and any user file.
    pub fn database(&self) -> &Arc<Database> {
        &self.database
    }

    /// This machine's CPU, when detected (on the first call, where matching a model did not
    /// already detect it).
    pub fn cpu(&self) -> Option<&CpuIdentity> {
        self.cpu.get_or_init(|| detect_cpu(&self.system)).as_ref()
    }

    /// The system whose facts this context reads (the CPUs, the PMUs, /proc): the one made
    /// where the program started, handed down to what it opens.
    pub fn system(&self) -> &System {
        &self.system
    }

    /// Reads `system`'s facts from now on (another tree's PMUs, a test's procfs).
    pub fn set_system(&mut self, system: System) {
        self.system = system;
    }

    /// The database model in use: named with `--cpu-model`, else the one that matched the CPU.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// Resolves in `database` from now on (the same database with more in it: a user's
    /// descriptions, say).
    pub fn set_database(&mut self, database: Arc<Database>) {
        self.database = database;
    }

    /// Lets the backends probed in this context mount tracefs to resolve a tracepoint, or not
    /// (the default). See [`Setup::mount_tracefs`](crate::Setup::mount_tracefs).
    pub fn set_mount_tracefs(&mut self, mount: bool) {
        self.mount_tracefs = mount;
    }

    /// Whether the backends probed in this context may mount tracefs
    /// ([`Context::set_mount_tracefs`]).
    pub fn mounts_tracefs(&self) -> bool {
        self.mount_tracefs
    }

    /// Loads the database (with `user_file` if given) and picks the CPU model: `cpu_model` if
    /// given, else the one matching this machine's CPU. Its system is this machine's: a
    /// program on the library makes it here, where it starts.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) for a malformed events file (file:line:column and the key);
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) for a `cpu_model` the database lacks (the message lists the
    /// known ids).
    pub fn new(user_file: Option<&Path>, cpu_model: Option<&str>) -> Result<Context> {
        let database = Database::load(user_file)?;
        let system = System::host();
        let cpu = OnceLock::new();
        let model = match cpu_model {
            Some(id) => match database.model_id(id) {
                Some(model) => Some(model.to_owned()),
                None => {
                    let known: Vec<String> = database.ids().collect();
                    return Err(
                        Error::invalid_input(counterhal_events::unknown_model_message(id))
                            .with_hint(format!("use one of: {}", known.join(", "))),
                    );
                }
            },
            // On a hybrid chip, the table of the core this thread runs on (CPUID leaf 0x1A).
            // A build that can hold no model detects no CPU to match one (and a program that
            // never asks for the CPU builds no detection).
            None if Database::may_hold_models() => cpu
                .get_or_init(|| detect_cpu(&system))
                .as_ref()
                .and_then(|c| database.detect_core_id(c, detect_hybrid_core().as_ref()))
                .map(str::to_owned),
            None => None,
        };
        Ok(Context {
            database: Arc::new(database),
            system,
            cpu,
            model,
            mount_tracefs: false,
        })
    }
}

/// This machine's CPU: on Linux on Arm64 from the MIDR in sysfs, on other Linux machines from
/// `/proc/cpuinfo` (the kernel's decoding of the signature, which folds the extended model in
/// for every family from 6, where the SDM's rule for CPUID stops at 6 and 0xF: Zhaoxin's family
/// 7 differs), else from the CPUID instruction (x86, any OS); `None` elsewhere. The MIDR files
/// are looked for only on Arm.
fn detect_cpu(system: &System) -> Option<CpuIdentity> {
    let arm = if cfg!(any(target_arch = "aarch64", target_arch = "arm")) {
        arm_cpu(system)
    } else {
        None
    };
    arm.or_else(|| CpuIdentity::from_proc_cpuinfo(system.cpuinfo()?.text()))
        .or_else(|| counterhal_x86::cpu_identity(&counterhal_x86::CpuidInstruction).ok())
}

/// An Arm CPU, from the MIDR Linux shows for the CPU this thread last ran on (only arm64
/// kernels have the file), else for CPU 0: on a big.LITTLE system each kind of core has its
/// own MIDR and its own table, as a hybrid x86 chip's cores have.
fn arm_cpu(system: &System) -> Option<CpuIdentity> {
    let midr = |cpu: u32| CpuIdentity::from_midr(system.midr(cpu)?);
    system
        .thread_self_stat()
        .and_then(|stat| midr(stat.processor))
        .or_else(|| midr(0))
}

/// On a hybrid x86 chip, the core the calling thread runs on (CPUID leaf 0x1A); `None`
/// elsewhere.
fn detect_hybrid_core() -> Option<counterhal_events::HybridCore> {
    counterhal_x86::hybrid_core(&counterhal_x86::CpuidInstruction)
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_conformance::skip::Need;

    /// Oracle: the kernel's `/proc/cpuinfo` (vendor, family, model and stepping, which the
    /// kernel decodes from CPUID leaf 1): the CPUID instruction names the same CPU here, and
    /// detection returns it.
    #[test]
    fn cpuid_and_the_os_agree_on_the_cpu() {
        let system = System::host();
        let (Some(from_os), Ok(from_cpuid)) = (
            system
                .cpuinfo()
                .and_then(|info| CpuIdentity::from_proc_cpuinfo(info.text())),
            counterhal_x86::cpu_identity(&counterhal_x86::CpuidInstruction),
        ) else {
            counterhal_conformance::skip!(
                Need::Platform,
                "needs /proc/cpuinfo and an x86 CPU to compare"
            );
        };
        assert_eq!(from_os, from_cpuid);
        assert_eq!(detect_cpu(&system), Some(from_os));
    }
}
