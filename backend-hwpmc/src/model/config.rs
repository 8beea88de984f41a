//! How a modelled machine is set up, and the events it can be fed.

use crate::abi::Version;

/// The CPU vendor the model's PMCs belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelVendor {
    /// Intel (a Skylake to hwpmc): classes IAP (programmable, with Skylake's per-counter event
    /// rules) and IAF (3 fixed counters).
    Intel,
    /// AMD (family 17h): class K8, rows 0-5 the core counters, 6-15 L3 and data fabric.
    Amd,
}

/// An event the model can be fed, encoded as each vendor's CPU counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelEvent {
    /// Instructions retired: Intel 0xC0/0x00 and fixed counter 0; AMD 0xC0.
    Instructions,
    /// Core cycles: Intel 0x3C/0x00 and fixed counter 1; AMD 0x76.
    Cycles,
    /// Branches retired: Intel 0xC4/0x00; AMD 0xC2.
    Branches,
}

impl ModelEvent {
    /// The (event code, unit mask) of the event on `vendor`'s CPU.
    pub const fn code(self, vendor: ModelVendor) -> (u16, u8) {
        match (self, vendor) {
            (ModelEvent::Instructions, _) => (0xC0, 0),
            (ModelEvent::Cycles, ModelVendor::Intel) => (0x3C, 0),
            (ModelEvent::Cycles, ModelVendor::Amd) => (0x76, 0),
            (ModelEvent::Branches, ModelVendor::Intel) => (0xC4, 0),
            (ModelEvent::Branches, ModelVendor::Amd) => (0xC2, 0),
        }
    }

    /// The IAF row that counts it (Intel's fixed counters), if one does.
    pub const fn fixed_counter(self, vendor: ModelVendor) -> Option<u32> {
        match (self, vendor) {
            (ModelEvent::Instructions, ModelVendor::Intel) => Some(0),
            (ModelEvent::Cycles, ModelVendor::Intel) => Some(1),
            _ => None,
        }
    }
}

/// How the modelled machine is set up: the CPU, the module's version, the caller's
/// privileges and the `security.bsd.*` sysctls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelConfig {
    vendor: ModelVendor,
    version: Version,
    cpus: u32,
    programmable: u32,
    width: u32,
    uid: u32,
    unprivileged_syspmcs: bool,
    unprivileged_proc_debug: bool,
    jailed: bool,
    inactive_cpu: Option<u32>,
}

impl ModelConfig {
    /// An Intel machine of 4 CPUs with 4 programmable and 3 fixed 48-bit counters, hwpmc
    /// V10, an unprivileged caller, the sysctls at their defaults
    /// (`security.bsd.unprivileged_syspmcs=0`, `security.bsd.unprivileged_proc_debug=1`).
    pub const fn intel() -> ModelConfig {
        ModelConfig {
            vendor: ModelVendor::Intel,
            version: Version::V10,
            cpus: 4,
            programmable: 4,
            width: 48,
            uid: 1001,
            unprivileged_syspmcs: false,
            unprivileged_proc_debug: true,
            jailed: false,
            inactive_cpu: None,
        }
    }

    /// As [`intel`](Self::intel), an AMD machine: 16 K8 rows of 48 bits, 6 of them core
    /// counters.
    pub const fn amd() -> ModelConfig {
        ModelConfig {
            vendor: ModelVendor::Amd,
            programmable: 6,
            ..ModelConfig::intel()
        }
    }

    /// The same under module version `version` (V9's PMC ids and no `PMC_F_EV_PMU`).
    #[must_use]
    pub const fn with_version(mut self, version: Version) -> ModelConfig {
        self.version = version;
        self
    }

    /// The same with the caller root (uid 0, every privilege).
    #[must_use]
    pub const fn as_root(mut self) -> ModelConfig {
        self.uid = 0;
        self
    }

    /// The same with `security.bsd.unprivileged_syspmcs` set to `on`.
    #[must_use]
    pub const fn with_unprivileged_syspmcs(mut self, on: bool) -> ModelConfig {
        self.unprivileged_syspmcs = on;
        self
    }

    /// The same with `security.bsd.unprivileged_proc_debug` set to `on`.
    #[must_use]
    pub const fn with_unprivileged_proc_debug(mut self, on: bool) -> ModelConfig {
        self.unprivileged_proc_debug = on;
        self
    }

    /// The same with the caller in a jail.
    #[must_use]
    pub const fn in_jail(mut self) -> ModelConfig {
        self.jailed = true;
        self
    }

    /// The same with counters `width` bits wide (1-64).
    #[must_use]
    pub const fn with_width(mut self, width: u32) -> ModelConfig {
        self.width = if width == 0 || width > 64 { 48 } else { width };
        self
    }

    /// The same with CPU `cpu` inactive (offline).
    #[must_use]
    pub const fn with_inactive_cpu(mut self, cpu: u32) -> ModelConfig {
        self.inactive_cpu = Some(cpu);
        self
    }

    /// The vendor.
    pub const fn vendor(&self) -> ModelVendor {
        self.vendor
    }

    /// The module's version.
    pub const fn version(&self) -> Version {
        self.version
    }

    /// CPUs.
    pub const fn cpus(&self) -> u32 {
        self.cpus
    }

    /// Programmable counters (IAP rows; on AMD, the K8 core rows).
    pub const fn programmable(&self) -> u32 {
        self.programmable
    }

    /// Counter width in bits.
    pub const fn width(&self) -> u32 {
        self.width
    }

    /// The width's mask.
    pub const fn mask(&self) -> u64 {
        if self.width >= 64 {
            u64::MAX
        } else {
            (1 << self.width) - 1
        }
    }

    /// The caller's uid.
    pub const fn uid(&self) -> u32 {
        self.uid
    }

    /// Whether the caller is root.
    pub const fn root(&self) -> bool {
        self.uid == 0
    }

    /// `security.bsd.unprivileged_syspmcs`.
    pub const fn unprivileged_syspmcs(&self) -> bool {
        self.unprivileged_syspmcs
    }

    /// `security.bsd.unprivileged_proc_debug`.
    pub const fn unprivileged_proc_debug(&self) -> bool {
        self.unprivileged_proc_debug
    }

    /// Whether the caller is jailed.
    pub const fn jailed(&self) -> bool {
        self.jailed
    }

    /// The inactive CPU, if any.
    pub const fn inactive_cpu(&self) -> Option<u32> {
        self.inactive_cpu
    }

    /// The event database model the modelled CPU is: `skl` (Intel), `amd64_fam17h_zen2`.
    pub const fn default_model_id(&self) -> &'static str {
        match self.vendor {
            ModelVendor::Intel => "skl",
            ModelVendor::Amd => "amd64_fam17h_zen2",
        }
    }

    /// A few words for reports: `hwpmc V10.0 model, Intel (IAP x4, IAF x3, 48-bit)`.
    pub fn describe(&self) -> String {
        let counters = match self.vendor {
            ModelVendor::Intel => format!("Intel: IAP x{}, IAF x3", self.programmable),
            ModelVendor::Amd => "AMD: K8 x16, 6 core".to_string(),
        };
        format!(
            "hwpmc V{}.{} model, {counters}, {}-bit",
            self.version.major(),
            self.version.minor(),
            self.width
        )
    }
}
