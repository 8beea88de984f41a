//! PAPI 7.0's information structures as `#[repr(C)]` types, with their sizes pinned (x86-64
//! and other LP64 targets), and the facts this machine fills them with (7.2's, where they
//! differ, are in the `release` module).
//!
//! papi/tests/abi.rs compares every size and offset with an installed PAPI 7.0 papi.h.

/// `PAPI_MIN_STR_LEN`.
pub const MIN_STR: usize = 64;
/// `PAPI_MAX_STR_LEN`.
pub const MAX_STR: usize = 128;
/// `PAPI_2MAX_STR_LEN`.
pub const MAX2_STR: usize = 256;
/// `PAPI_HUGE_STR_LEN`.
pub const HUGE_STR: usize = 1024;
/// `PAPI_MAX_INFO_TERMS`.
pub const INFO_TERMS: usize = 12;

/// `PAPI_event_info_t`.
#[repr(C)]
pub struct EventInfo {
    /// The event's code.
    pub event_code: u32,
    /// Its name.
    pub symbol: [u8; HUGE_STR],
    /// A short description.
    pub short_descr: [u8; MIN_STR],
    /// The long description.
    pub long_descr: [u8; HUGE_STR],
    /// Its component.
    pub component_index: i32,
    /// Its units.
    pub units: [u8; MIN_STR],
    /// `PAPI_LOCATION_*`.
    pub location: i32,
    /// `PAPI_DATATYPE_*`.
    pub data_type: i32,
    /// `PAPI_VALUETYPE_*`.
    pub value_type: i32,
    /// `PAPI_TIMESCOPE_*`.
    pub timescope: i32,
    /// `PAPI_UPDATETYPE_*`.
    pub update_type: i32,
    /// Update frequency.
    pub update_freq: i32,
    /// The number of native terms (presets).
    pub count: u32,
    /// The preset's category bits.
    pub event_type: u32,
    /// `NOT_DERIVED`, `DERIVED_ADD`, `DERIVED_SUB`, `DERIVED_POSTFIX`.
    pub derived: [u8; MIN_STR],
    /// The postfix formula.
    pub postfix: [u8; MAX2_STR],
    /// The terms' native codes.
    pub code: [u32; INFO_TERMS],
    /// The terms' names.
    pub name: [[u8; MAX2_STR]; INFO_TERMS],
    /// A note.
    pub note: [u8; HUGE_STR],
}
const _: () = assert!(std::mem::size_of::<EventInfo>() == 6680);

/// `PAPI_component_info_t` as a release lays it out: `P`, after `disabled`, is what PAPI 7.2
/// inserted there (the `release` module's `PartialDisable`), nothing (`()`, no bytes) in 7.0's.
#[repr(C)]
#[derive(Clone, Copy, PartialEq)]
pub struct ComponentInfoOf<P> {
    /// The component's name.
    pub name: [u8; MAX_STR],
    /// Its short name.
    pub short_name: [u8; MIN_STR],
    /// Its description.
    pub description: [u8; MAX_STR],
    /// Its version.
    pub version: [u8; MIN_STR],
    /// Its support library's version.
    pub support_version: [u8; MIN_STR],
    /// The kernel's version.
    pub kernel_version: [u8; MIN_STR],
    /// Why it is disabled.
    pub disabled_reason: [u8; HUGE_STR],
    /// 0 when enabled, else a PAPI code.
    pub disabled: i32,
    /// What the release has here (7.2: the partial-disable reason and flag).
    pub partial: P,
    /// Ready to use.
    pub initialized: i32,
    /// Its index.
    pub cmp_idx: i32,
    /// Counters.
    pub num_cntrs: i32,
    /// Counters when multiplexing.
    pub num_mpx_cntrs: i32,
    /// Presets.
    pub num_preset_events: i32,
    /// Native events.
    pub num_native_events: i32,
    /// The default domain.
    pub default_domain: i32,
    /// The domains it can count.
    pub available_domains: i32,
    /// The default granularity.
    pub default_granularity: i32,
    /// The granularities it has.
    pub available_granularities: i32,
    /// The overflow signal.
    pub hardware_intr_sig: i32,
    /// The component's type.
    pub component_type: i32,
    /// PMU names (C string pointers; none here).
    pub pmu_names: [usize; 80],
    /// Reserved.
    pub reserved: [i32; 8],
    /// The bit fields (`hardware_intr` is bit 0 ... `inherit` bit 12).
    pub flags: u32,
}
/// `PAPI_component_info_t` of PAPI 7.0 and 7.1, the one the library keeps.
pub type ComponentInfo = ComponentInfoOf<()>;
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<ComponentInfo>() == 2272);

impl ComponentInfo {
    /// The same description with `partial` where a release has more after `disabled`.
    pub fn with_partial<P>(&self, partial: P) -> ComponentInfoOf<P> {
        ComponentInfoOf {
            name: self.name,
            short_name: self.short_name,
            description: self.description,
            version: self.version,
            support_version: self.support_version,
            kernel_version: self.kernel_version,
            disabled_reason: self.disabled_reason,
            disabled: self.disabled,
            partial,
            initialized: self.initialized,
            cmp_idx: self.cmp_idx,
            num_cntrs: self.num_cntrs,
            num_mpx_cntrs: self.num_mpx_cntrs,
            num_preset_events: self.num_preset_events,
            num_native_events: self.num_native_events,
            default_domain: self.default_domain,
            available_domains: self.available_domains,
            default_granularity: self.default_granularity,
            available_granularities: self.available_granularities,
            hardware_intr_sig: self.hardware_intr_sig,
            component_type: self.component_type,
            pmu_names: self.pmu_names,
            reserved: self.reserved,
            flags: self.flags,
        }
    }
}

pub use crate::memory::MemoryHierarchy;

/// `PAPI_hw_info_t`.
#[repr(C)]
#[derive(Clone)]
pub struct HwInfo {
    /// CPUs per NUMA node.
    pub ncpu: i32,
    /// Threads per core.
    pub threads: i32,
    /// Cores per socket.
    pub cores: i32,
    /// Sockets.
    pub sockets: i32,
    /// NUMA nodes.
    pub nnodes: i32,
    /// CPUs in all.
    pub totalcpus: i32,
    /// `PAPI_VENDOR_*`.
    pub vendor: i32,
    /// The vendor.
    pub vendor_string: [u8; MAX_STR],
    /// The model number.
    pub model: i32,
    /// The model.
    pub model_string: [u8; MAX_STR],
    /// The revision.
    pub revision: f32,
    /// CPUID family.
    pub cpuid_family: i32,
    /// CPUID model.
    pub cpuid_model: i32,
    /// CPUID stepping.
    pub cpuid_stepping: i32,
    /// Maximum MHz.
    pub cpu_max_mhz: i32,
    /// Minimum MHz.
    pub cpu_min_mhz: i32,
    /// The memory hierarchy.
    pub mem_hierarchy: MemoryHierarchy,
    /// Running in a virtual machine.
    pub virtualized: i32,
    /// The hypervisor's vendor.
    pub virtual_vendor_string: [u8; MAX_STR],
    /// The hypervisor's version.
    pub virtual_vendor_version: [u8; MAX_STR],
    /// MHz (deprecated).
    pub mhz: f32,
    /// MHz (deprecated).
    pub clock_mhz: i32,
    /// Reserved.
    pub reserved: [i32; 8],
}
const _: () = assert!(std::mem::size_of::<HwInfo>() == 1480);

/// `PAPI_address_map_t`.
#[repr(C)]
pub struct AddressMap {
    /// The object's name.
    pub name: [u8; HUGE_STR],
    /// Text, data and bss start and end.
    pub ranges: [usize; 6],
}

/// `PAPI_exe_info_t`.
#[repr(C)]
pub struct ExeInfo {
    /// The executable's path.
    pub fullname: [u8; HUGE_STR],
    /// Its address space.
    pub address_info: AddressMap,
}

/// `PAPI_shlib_info_t`.
#[repr(C)]
pub struct ShlibInfo {
    /// The maps (a pointer; none here).
    pub map: usize,
    /// How many.
    pub count: i32,
}

/// Copies `text` into a C string field, cut to fit with its terminating zero.
pub fn set_str(field: &mut [u8], text: &str) {
    let n = text.len().min(field.len().saturating_sub(1));
    field[..n].copy_from_slice(&text.as_bytes()[..n]);
    field[n..].fill(0);
}

/// The value of `key` in the first processor of a /proc/cpuinfo text.
fn cpuinfo_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// PAPI 7.0's vendor code and name of an Arm `CPU implementer` (its `linux-common.c`): the
/// `PAPI_VENDOR_ARM_*` codes are the implementer codes; another implementer is
/// `ARM_UNKNOWN`, `PAPI_VENDOR_UNKNOWN`.
fn arm_vendor(implementer: u32) -> (i32, &'static str) {
    match implementer {
        0x41 => (0x41, "ARM_ARM"),
        0x42 => (0x42, "ARM_BROADCOM"),
        0x43 => (0x43, "ARM_CAVIUM"),
        0x46 => (0x46, "ARM_FUJITSU"),
        0x48 => (0x48, "ARM_HISILICON"),
        0x50 => (0x50, "ARM_APM"),
        0x51 => (0x51, "ARM_QUALCOMM"),
        _ => (0, "ARM_UNKNOWN"),
    }
}

/// The hardware facts of `system` (this machine's): its cpuinfo, its sysfs's topology
/// ([`crate::topology`]), the memory hierarchy and the hypervisor ([`crate::memory`]), as
/// PAPI 7.0 gathers them.
pub fn hardware(system: &counterhal_system::System) -> HwInfo {
    let topology = crate::topology::read(system);
    let cpus = match topology.cpus {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get() as i32),
        n => n,
    };
    let cpuinfo = system.cpuinfo();
    let mut info = hardware_from(cpuinfo.as_ref().map_or("", |c| c.text()), cpus);
    if topology.cpus > 0 {
        apply_topology(&mut info, &topology);
    }
    match crate::memory::instruction(0, 0) {
        Some(_) => {
            let cpuid =
                |leaf, subleaf| crate::memory::instruction(leaf, subleaf).unwrap_or_default();
            info.mem_hierarchy = crate::memory::from_cpuid(&cpuid);
            let hypervisor = crate::memory::hypervisor(&cpuid);
            info.virtualized = i32::from(hypervisor.is_some());
            set_str(
                &mut info.virtual_vendor_string,
                hypervisor.as_deref().unwrap_or("none"),
            );
        }
        None => {
            info.mem_hierarchy = crate::memory::from_sysfs(system);
        }
    }
    // Arm's /proc/cpuinfo has no `model name`: PAPI's perf_event component then names the
    // model as libpfm4 names its PMU; ours names the CPU model counterhal detects.
    if info.model_string[0] == 0
        && let Some(model) = facade::Context::new(None, None)
            .ok()
            .and_then(|c| c.model().map(str::to_owned))
    {
        set_str(&mut info.model_string, &model);
    }
    info
}

/// The hardware facts of a /proc/cpuinfo text and a number of CPUs, read as PAPI 7.0 reads
/// them (`_linux_get_cpu_info`): x86's `vendor_id`, `model name`, `cpu family`, `model`,
/// `stepping`, `cpu MHz`; Arm's `CPU implementer` (the vendor), `CPU revision`, `CPU
/// architecture`, `CPU part`, `CPU variant`, and, where no `cpu MHz` or `clock` line gives
/// the clock, `BogoMIPS` over the CPUs.
fn hardware_from(text: &str, cpus: i32) -> HwInfo {
    let cpuinfo = |key: &str| cpuinfo_value(text, key);
    let mut info = HwInfo {
        ncpu: 0,
        threads: 1,
        cores: 0,
        sockets: 1,
        nnodes: 1,
        totalcpus: 0,
        vendor: 0,
        vendor_string: [0; MAX_STR],
        model: 0,
        model_string: [0; MAX_STR],
        revision: 0.0,
        cpuid_family: 0,
        cpuid_model: 0,
        cpuid_stepping: 0,
        cpu_max_mhz: 0,
        cpu_min_mhz: 0,
        mem_hierarchy: MemoryHierarchy::empty(),
        virtualized: 0,
        virtual_vendor_string: [0; MAX_STR],
        virtual_vendor_version: [0; MAX_STR],
        mhz: 0.0,
        clock_mhz: 0,
        reserved: [0; 8],
    };
    info.ncpu = cpus;
    info.cores = cpus;
    info.totalcpus = cpus;
    let vendor = cpuinfo("vendor_id").unwrap_or_default();
    info.vendor = match vendor.as_str() {
        "GenuineIntel" => 1,
        "AuthenticAMD" | "HygonGenuine" => 2,
        _ => 0,
    };
    set_str(&mut info.vendor_string, &vendor);
    set_str(
        &mut info.model_string,
        &cpuinfo("model name").unwrap_or_default(),
    );
    let number = |key: &str| {
        cpuinfo(key)
            .and_then(|v| v.parse::<i32>().ok())
            .unwrap_or(0)
    };
    info.cpuid_family = number("cpu family");
    info.cpuid_model = number("model");
    info.model = info.cpuid_model;
    info.cpuid_stepping = number("stepping");
    info.revision = info.cpuid_stepping as f32;
    let hex = |key: &str| {
        cpuinfo(key).and_then(|v| u32::from_str_radix(v.trim_start_matches("0x"), 16).ok())
    };
    if vendor.is_empty()
        && let Some(implementer) = hex("CPU implementer")
    {
        let (code, name) = arm_vendor(implementer);
        info.vendor = code;
        set_str(&mut info.vendor_string, name);
    }
    // PAPI decodes the rest for the implementers it knows.
    if info.vendor >= 0x41 {
        info.revision = number("CPU revision") as f32;
        info.model = number("CPU revision");
        let architecture = cpuinfo("CPU architecture").unwrap_or_default();
        info.cpuid_family = if architecture.contains("AArch64") {
            8
        } else {
            number("CPU architecture")
        };
        info.cpuid_model = hex("CPU part").unwrap_or(0) as i32;
        info.cpuid_stepping = hex("CPU variant").unwrap_or(0) as i32;
    }
    let clock = |key: &str| cpuinfo(key).and_then(|v| v.parse::<f32>().ok());
    let mhz = match clock("cpu MHz").or_else(|| clock("clock")) {
        Some(mhz) => mhz,
        // Missing on Arm: PAPI takes BogoMIPS over the CPUs.
        None => clock("BogoMIPS").map_or(0.0, |b| b / cpus.max(1) as f32),
    };
    info.cpu_max_mhz = mhz as i32;
    info.cpu_min_mhz = mhz as i32;
    info.mhz = mhz;
    info.clock_mhz = mhz as i32;
    info
}

/// Sets the CPU counts of `info` from sysfs's topology as PAPI 7.0's `_linux_get_system_info`
/// does: threads per core, cores per socket, NUMA nodes, CPUs per node (all CPUs where there
/// is one node), sockets.
fn apply_topology(info: &mut HwInfo, topology: &crate::topology::Topology) {
    info.totalcpus = topology.cpus;
    info.threads = topology.threads;
    info.cores = topology.cores;
    info.nnodes = topology.nodes;
    info.ncpu = if topology.nodes > 1 {
        topology.cpus / topology.nodes
    } else {
        topology.cpus
    };
    if topology.threads > 0 && topology.cores > 0 {
        info.sockets = topology.sockets;
    }
}

/// The executable's facts: its path (from /proc/self/exe) and name, its ranges from
/// `system`'s maps of this process.
pub fn executable(system: &counterhal_system::System) -> ExeInfo {
    let mut info = ExeInfo {
        fullname: [0; HUGE_STR],
        address_info: AddressMap {
            name: [0; HUGE_STR],
            ranges: [0; 6],
        },
    };
    let path = std::env::current_exe().unwrap_or_default();
    set_str(&mut info.fullname, &path.to_string_lossy());
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    set_str(&mut info.address_info.name, &name.unwrap_or_default());
    info.address_info.ranges = segments(system, &path.to_string_lossy());
    info
}

/// The executable's text, data and bss ranges from `system`'s /proc/self/maps: its executable
/// mapping, its writable mapping, and the anonymous writable mapping right after that (the
/// bss), as PAPI's Linux component reads them.
fn segments(system: &counterhal_system::System, exe: &str) -> [usize; 6] {
    let mut ranges = [0usize; 6];
    let mut after_data = false;
    for mapping in system.own_mappings() {
        let (start, end, perms) = (mapping.start, mapping.end, mapping.permissions.as_str());
        let path = mapping.path.as_str();
        if path == exe && perms.contains('x') && ranges[0] == 0 {
            ranges[0] = start;
            ranges[1] = end;
        } else if path == exe && perms.starts_with("rw") {
            ranges[2] = start;
            ranges[3] = end;
            after_data = true;
            continue;
        } else if after_data && path.is_empty() && perms.starts_with("rw") {
            ranges[4] = start;
            ranges[5] = end;
        }
        after_data = false;
    }
    ranges
}

/// The shared libraries mapped now (from `system`'s /proc/self/maps): each object's name, its first
/// executable mapping as text and its first writable one as data. The maps live as long as
/// the process (they are asked once).
pub fn shared_libraries(system: &counterhal_system::System) -> ShlibInfo {
    let exe = std::env::current_exe().unwrap_or_default();
    let exe = exe.to_string_lossy();
    let mut objects: Vec<AddressMap> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for mapping in system.own_mappings() {
        let (start, end, perms) = (mapping.start, mapping.end, mapping.permissions.as_str());
        let path = mapping.path.as_str();
        if !path.starts_with('/') || *path == *exe || !path.contains(".so") {
            continue;
        }
        let at = match names.iter().position(|n| n == path) {
            Some(at) => at,
            None => {
                let mut map = AddressMap {
                    name: [0; HUGE_STR],
                    ranges: [0; 6],
                };
                set_str(&mut map.name, path);
                objects.push(map);
                names.push(path.to_string());
                objects.len() - 1
            }
        };
        let ranges = &mut objects[at].ranges;
        if perms.contains('x') && ranges[0] == 0 {
            ranges[0] = start;
            ranges[1] = end;
        } else if perms.starts_with("rw") && ranges[2] == 0 {
            ranges[2] = start;
            ranges[3] = end;
        }
    }
    objects.retain(|o| o.ranges[0] != 0);
    let count = objects.len() as i32;
    let maps: &'static [AddressMap] = Box::leak(objects.into_boxed_slice());
    ShlibInfo {
        map: maps.as_ptr() as usize,
        count,
    }
}

/// An empty event description for `code`.
pub fn empty_event(code: u32) -> EventInfo {
    EventInfo {
        event_code: code,
        symbol: [0; HUGE_STR],
        short_descr: [0; MIN_STR],
        long_descr: [0; HUGE_STR],
        component_index: 0,
        units: [0; MIN_STR],
        location: 0,
        data_type: 0,
        value_type: 0,
        timescope: 0,
        update_type: 0,
        update_freq: 0,
        count: 0,
        event_type: 0,
        derived: [0; MIN_STR],
        postfix: [0; MAX2_STR],
        code: [0; INFO_TERMS],
        name: [[0; MAX2_STR]; INFO_TERMS],
        note: [0; HUGE_STR],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(field: &[u8]) -> &str {
        let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
        std::str::from_utf8(&field[..end]).unwrap()
    }

    /// Oracle: PAPI 7.0's `_linux_get_cpu_info` and `decode_cpuinfo_arm` (linux-common.c at
    /// tag papi-7-0-0-t) on the /proc/cpuinfo of the aarch64 lab's guest (QEMU's Neoverse N1,
    /// MIDR 0x414fd0c1), where Debian's PAPI passes ctests/hwinfo: vendor `ARM_ARM` (0x41),
    /// family 8 (`CPU architecture`), model 0xd0c (`CPU part`), stepping 4 (`CPU variant`),
    /// revision 1, and BogoMIPS over the CPUs for the clock, which this cpuinfo lacks.
    #[test]
    fn arm_cpuinfo_is_read_as_papi_reads_it() {
        let cpuinfo = "processor\t: 0\nBogoMIPS\t: 125.00\nFeatures\t: fp asimd evtstrm\n\
            CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\n\
            CPU part\t: 0xd0c\nCPU revision\t: 1\n";
        let info = hardware_from(cpuinfo, 1);
        assert_eq!(text(&info.vendor_string), "ARM_ARM");
        assert_eq!(info.vendor, 0x41);
        assert_eq!(
            (info.cpuid_family, info.cpuid_model, info.cpuid_stepping),
            (8, 0xd0c, 4)
        );
        assert_eq!((info.revision, info.model), (1.0, 1));
        assert_eq!((info.cpu_max_mhz, info.mhz), (125, 125.0));
        assert_eq!(hardware_from(cpuinfo, 2).cpu_max_mhz, 62);
        assert_eq!(
            text(&hardware_from("CPU implementer : 0x61\n", 1).vendor_string),
            "ARM_UNKNOWN"
        );
    }

    /// Oracle: the same PAPI code on an x86 /proc/cpuinfo: `vendor_id`, `cpu family`, `model`,
    /// `stepping` and `cpu MHz` as given.
    #[test]
    fn x86_cpuinfo_is_read_as_before() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n\
            model name\t: Intel(R) Xeon(R)\nstepping\t: 7\ncpu MHz\t\t: 2100.000\n";
        let info = hardware_from(cpuinfo, 4);
        assert_eq!(
            (info.vendor, text(&info.vendor_string)),
            (1, "GenuineIntel")
        );
        assert_eq!(text(&info.model_string), "Intel(R) Xeon(R)");
        assert_eq!(
            (info.cpuid_family, info.cpuid_model, info.cpuid_stepping),
            (6, 85, 7)
        );
        assert_eq!(info.cpu_max_mhz, 2100);
    }
}
