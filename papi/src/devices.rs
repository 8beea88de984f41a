//! PAPI 7.0's `sysdetect` component and its device interface (`PAPI_enum_dev_type`,
//! `PAPI_get_dev_type_attr`, `PAPI_get_dev_attr`): three device types in PAPI's order (CPU,
//! CUDA, ROCm), each with its vendor, its number of devices and a status line. The CPU type
//! has one device, described as PAPI 7.0's sysdetect describes it: name, CPUID family, model
//! and stepping, sockets, NUMA nodes, cores per socket, hardware threads, the L1 instruction
//! and data caches, the L2 and L3 unified caches, each NUMA node's memory and each hardware
//! thread's node. Neither GPU type is configured (PAPI's statuses say so), as in Debian's
//! build of PAPI 7.0.
//!
//! Where this differs from PAPI 7.0, on purpose: the L3 cache's line count is its size over
//! its line (PAPI 7.0's AMD decoder copies the L2's); `PAPI_DEV_ATTR__CPU_UINT_NUMA_MEM_SIZE`
//! answers the node's memory in MB, as PAPI 7.1 does (PAPI 7.0's query has no case for it and
//! leaves the caller's variable unwritten); an unknown handle, or a device a type does not
//! have, is `PAPI_EINVAL` (PAPI 7.0 reads past its arrays).

use std::ffi::CString;
use std::sync::OnceLock;

use crate::codes::{EINVAL, ENOSUPP};
use crate::info::{self, ComponentInfo, HwInfo, set_str};
use crate::memory::{self, DATA, INST, UNIFIED};
use crate::topology::Topology;

/// The component's name.
pub const NAME: &str = "sysdetect";

/// The component's index: the last, after the `sde` and `powercap` components, as PAPI 7.0
/// numbers it.
pub const CIDX: i32 = crate::powercap::COMPONENTS;

/// How many components the library has: `PAPI_num_components`.
pub const COMPONENTS: i32 = CIDX + 1;

/// `PAPI_DEV_TYPE_ENUM__FIRST`.
const ENUM_FIRST: i32 = 0;

/// The component's description (PAPI 7.0's words, which `papi_component_avail` prints).
/// Kept for the process, disabled where `PAPI_disable_component` disabled it; NULL from a
/// signal handler that interrupted a call holding the library's lock.
pub fn component_info() -> *const ComponentInfo {
    let mut info = crate::library::component_info();
    set_str(&mut info.name, NAME);
    set_str(&mut info.short_name, NAME);
    set_str(&mut info.description, "System info detection component");
    set_str(&mut info.version, "1.0");
    set_str(&mut info.support_version, "n/a");
    set_str(&mut info.kernel_version, "n/a");
    info.cmp_idx = CIDX;
    info.initialized = 1;
    if crate::library::disabled(CIDX) {
        info.disabled = 1;
        set_str(&mut info.disabled_reason, crate::library::DISABLED_BY_CALL);
    }
    crate::library::kept_description(info)
}

/// One cache as the device interface gives it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheAttrs {
    /// Size in bytes.
    pub size: u32,
    /// Line size in bytes.
    pub line_size: u32,
    /// Lines.
    pub lines: u32,
    /// Ways (PAPI's associativity, `-1` read as unsigned where the CPU does not say).
    pub associativity: u32,
}

/// The CPU device.
#[derive(Debug)]
pub struct CpuDevice {
    /// Its name (CPUID's brand string on x86, else /proc/cpuinfo's model).
    pub name: CString,
    /// CPUID family, model, stepping.
    pub version: [u32; 3],
    /// Sockets.
    pub sockets: u32,
    /// NUMA nodes.
    pub numas: u32,
    /// Cores per socket.
    pub cores: u32,
    /// Hardware threads per core.
    pub threads: u32,
    /// L1 instruction, L1 data, L2 unified, L3 unified.
    pub caches: [CacheAttrs; 4],
    /// Each node's memory in MB.
    pub numa_memory_mb: Vec<u32>,
    /// Each hardware thread's node.
    pub affinity: Vec<u32>,
}

/// One device type.
#[derive(Debug)]
pub struct DevType {
    /// `PAPI_DEV_TYPE_ID__*`.
    pub id: i32,
    /// The vendor's code (`PAPI_VENDOR_*` for CPUs, 0 for GPUs).
    pub vendor_id: i32,
    /// The vendor's name.
    pub vendor: CString,
    /// Devices of this type.
    pub count: i32,
    /// Its status line.
    pub status: CString,
    /// The CPU, for the CPU type.
    pub cpu: Option<CpuDevice>,
}

/// An attribute's value, in the type its name says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    /// `INT`: written as `int`.
    Int(i32),
    /// `UINT`: written as `unsigned int`.
    Uint(u32),
    /// `ULONG`: written as `unsigned long`.
    Ulong(u64),
    /// `CHAR`: written as `const char *`.
    Text(&'static std::ffi::CStr),
}

fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "")).unwrap_or_default()
}

fn text_of(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// The device types of a machine with hardware facts `hw`, topology `topology`, the CPU's
/// name `cpu_name` and its caches.
pub fn device_types(
    hw: &HwInfo,
    topology: &Topology,
    cpu_name: &str,
    caches: [CacheAttrs; 4],
) -> [DevType; 3] {
    let per_node = |kib: &u64| (kib >> 10) as u32;
    let cpu = CpuDevice {
        name: c_string(cpu_name),
        version: [hw.cpuid_family, hw.cpuid_model, hw.cpuid_stepping].map(|v| v as u32),
        sockets: topology.sockets as u32,
        numas: topology.nodes as u32,
        cores: topology.cores as u32,
        threads: topology.threads as u32,
        caches,
        numa_memory_mb: topology.node_memory_kib.iter().map(per_node).collect(),
        affinity: topology.cpu_node.iter().map(|&n| n as u32).collect(),
    };
    let gpu = |id: i32, vendor: &str, status: &str| DevType {
        id,
        vendor_id: 0,
        vendor: c_string(vendor),
        count: 0,
        status: c_string(status),
        cpu: None,
    };
    [
        DevType {
            id: 0,
            vendor_id: hw.vendor,
            vendor: c_string(&text_of(&hw.vendor_string)),
            count: 1,
            status: c_string("Device Initialized"),
            cpu: Some(cpu),
        },
        gpu(1, "NVIDIA", "CUDA not configured, no CUDA device available"),
        gpu(
            2,
            "AMD/ATI",
            "ROCm not configured, no ROCm device available",
        ),
    ]
}

/// The caches the device interface gives from a memory hierarchy.
pub fn caches_of(mh: &info::MemoryHierarchy) -> [CacheAttrs; 4] {
    [(1, INST), (1, DATA), (2, UNIFIED), (3, UNIFIED)].map(|(level, kind)| {
        mh.find_cache(level, kind)
            .map_or(CacheAttrs::default(), |c| CacheAttrs {
                size: c.size as u32,
                line_size: c.line_size as u32,
                lines: c.lines as u32,
                associativity: c.associativity as u32,
            })
    })
}

/// The caches as PAPI 7.0's sysdetect reads them from sysfs where there is no CPUID (its
/// `linux_cpu_utils.c`): lines are sets times ways times partitions.
fn sysfs_caches() -> [CacheAttrs; 4] {
    let all = memory::sysfs_caches(&counterhal_system::System::host(), 0);
    [
        (1, "Instruction"),
        (1, "Data"),
        (2, "Unified"),
        (3, "Unified"),
    ]
    .map(|(level, kind)| {
        all.iter()
            .find(|c| c.level == level && c.kind == kind)
            .map_or(CacheAttrs::default(), |c| CacheAttrs {
                size: (c.size_kib * 1024) as u32,
                line_size: c.line_size as u32,
                lines: (c.sets * c.ways * c.partitions.max(1)) as u32,
                associativity: c.ways as u32,
            })
    })
}

/// This machine's device types, gathered once.
pub fn this_machine() -> &'static [DevType; 3] {
    // Static, not in the process's kept store: `DevType` is this room's, and the library's
    // room below it cannot name it; the facts are the machine's, the same for any init.
    static TYPES: OnceLock<[DevType; 3]> = OnceLock::new();
    TYPES.get_or_init(|| {
        let hw = info::hardware();
        let topology = crate::topology::this_machine();
        let (name, caches) = match crate::memory::instruction(0x8000_0000, 0) {
            Some([highest, ..]) => {
                let cpuid = |l, s| crate::memory::instruction(l, s).unwrap_or_default();
                (brand(&cpuid, highest), caches_of(&hw.mem_hierarchy))
            }
            None => (text_of(&hw.model_string), sysfs_caches()),
        };
        device_types(&hw, &topology, &name, caches)
    })
}

/// CPUID's brand string (leaves 0x80000002 to 0x80000004), as PAPI copies it; `highest` is
/// the highest extended leaf.
fn brand(cpuid: memory::Cpuid<'_>, highest: u32) -> String {
    if highest < 0x8000_0004 {
        return text_of(&info::hardware().model_string);
    }
    let bytes: Vec<u8> = (0x8000_0002..=0x8000_0004)
        .flat_map(|leaf| cpuid(leaf, 0))
        .flat_map(u32::to_le_bytes)
        .collect();
    text_of(&bytes)
}

/// `PAPI_enum_dev_type`: with `PAPI_DEV_TYPE_ENUM__FIRST`, the first type (the walk starts
/// over); else the next type whose bit `modifier` has, or `PAPI_EINVAL` at the end (the walk
/// starts over). The walk is the process's, as PAPI's ([`crate::library::with_dev_type_cursor`]);
/// `PAPI_EMISC` from a signal handler that interrupted a call holding the library's lock.
pub fn enumerate(modifier: i32) -> Result<usize, i32> {
    let types = this_machine();
    crate::library::with_dev_type_cursor(|cursor| {
        if modifier == ENUM_FIRST {
            *cursor = 0;
            return Ok(0);
        }
        while *cursor < types.len() {
            let found = modifier & (1 << types[*cursor].id) != 0;
            *cursor += 1;
            if found {
                return Ok(*cursor - 1);
            }
        }
        *cursor = 0;
        Err(EINVAL)
    })
    .unwrap_or(Err(crate::codes::EMISC))
}

/// `PAPI_get_dev_type_attr` of type `index`.
pub fn type_attr(index: usize, attr: i32) -> Result<Value, i32> {
    let t = this_machine().get(index).ok_or(EINVAL)?;
    Ok(match attr {
        0 => Value::Int(t.id),
        1 => Value::Int(t.vendor_id),
        2 => Value::Text(t.vendor.as_c_str()),
        3 => Value::Int(t.count),
        4 => Value::Text(t.status.as_c_str()),
        _ => return Err(ENOSUPP),
    })
}

/// `PAPI_get_dev_attr` of device `id` of type `index`: the CPU's attributes (0 to 26; 25 and
/// 26 take a hardware thread or a node as `id`) or `PAPI_EINVAL` for a type without devices;
/// `PAPI_ENOSUPP` for an attribute PAPI does not define.
pub fn dev_attr(index: usize, id: i32, attr: i32) -> Result<Value, i32> {
    let t = this_machine().get(index).ok_or(EINVAL)?;
    if !(0..=63).contains(&attr) {
        return Err(ENOSUPP);
    }
    let cpu = t
        .cpu
        .as_ref()
        .filter(|_| (0..=26).contains(&attr))
        .ok_or(EINVAL)?;
    let slot = usize::try_from(id).map_err(|_| EINVAL)?;
    let cache = |i: usize, field: usize| {
        let c = cpu.caches[i];
        Value::Uint([c.size, c.line_size, c.lines, c.associativity][field])
    };
    Ok(match attr {
        0 => Value::Text(cpu.name.as_c_str()),
        // Sizes, line sizes, line counts and associativities, each for L1I, L1D, L2, L3.
        1..=16 => cache(((attr - 1) % 4) as usize, ((attr - 1) / 4) as usize),
        17 => Value::Uint(cpu.sockets),
        18 => Value::Uint(cpu.numas),
        19 => Value::Uint(cpu.cores),
        20 => Value::Uint(cpu.threads * cpu.cores * cpu.sockets),
        21..=23 => Value::Uint(cpu.version[(attr - 21) as usize]),
        24 => Value::Uint(*cpu.numa_memory_mb.get(slot).ok_or(EINVAL)?),
        25 => Value::Uint(*cpu.affinity.get(slot).ok_or(EINVAL)?),
        _ => {
            let node = u32::try_from(slot).map_err(|_| EINVAL)?;
            Value::Uint(cpu.affinity.iter().filter(|&&n| n == node).count() as u32)
        }
    })
}
