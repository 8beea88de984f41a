//! The device types of a machine as PAPI 7.0's `sysdetect` component gathers them: three
//! types in PAPI's order (CPU, CUDA, ROCm), each with its vendor, its number of devices and a
//! status line; the CPU type's one device with its name, CPUID family, model and stepping,
//! sockets, NUMA nodes, cores, hardware threads, caches, each node's memory and each hardware
//! thread's node (the `devices` room answers the device interface from them).

use std::ffi::CString;

use crate::info::{self, HwInfo};
use crate::memory::{self, DATA, INST, UNIFIED};
use crate::topology::Topology;
use counterhal_system::System;

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
fn sysfs_caches(system: &System) -> [CacheAttrs; 4] {
    let all = memory::sysfs_caches(system, 0);
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

/// The device types of `system` (this machine's), gathered now (the process's store of what C
/// holds keeps them once).
pub fn this_machine(system: &System) -> [DevType; 3] {
    let hw = info::hardware(system);
    let topology = crate::topology::read(system);
    let (name, caches) = match crate::memory::instruction(0x8000_0000, 0) {
        Some([highest, ..]) => {
            let cpuid = |l, s| crate::memory::instruction(l, s).unwrap_or_default();
            (brand(&cpuid, highest, &hw), caches_of(&hw.mem_hierarchy))
        }
        None => (text_of(&hw.model_string), sysfs_caches(system)),
    };
    device_types(&hw, &topology, &name, caches)
}

/// CPUID's brand string (leaves 0x80000002 to 0x80000004), as PAPI copies it; `highest` is
/// the highest extended leaf; `hw`'s model string where CPUID has none.
fn brand(cpuid: memory::Cpuid<'_>, highest: u32, hw: &HwInfo) -> String {
    if highest < 0x8000_0004 {
        return text_of(&hw.model_string);
    }
    let bytes: Vec<u8> = (0x8000_0002..=0x8000_0004)
        .flat_map(|leaf| cpuid(leaf, 0))
        .flat_map(u32::to_le_bytes)
        .collect();
    text_of(&bytes)
}
