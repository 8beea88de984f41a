//! The memory hierarchy (`PAPI_hw_info_t.mem_hierarchy`: TLBs and caches per level) and the
//! hypervisor, found as PAPI 7.0 finds them: on x86 from CPUID (its `x86_cpuid_info.c`: AMD's
//! leaves 0x80000005 and 0x80000006, Intel's deterministic cache leaf 4), elsewhere from
//! sysfs (its `linux-memory.c`, `generic_get_memory_info`: /sys/devices/system/cpu/cpu0/cache).
//!
//! Decoding takes the CPUID answers as a function, so recorded answers test it; the
//! instruction itself is counterhal-x86's ([`instruction`]).

use counterhal_system::System;

/// `PAPI_mh_tlb_info_t` and `PAPI_mh_cache_info_t` of one level, and the hierarchy.
#[repr(C)]
#[derive(Clone)]
pub struct MemoryHierarchy {
    /// The number of levels.
    pub levels: i32,
    /// Per level: six TLB descriptions (4 ints) then six cache descriptions (5 ints).
    pub level: [[i32; 6 * 4 + 6 * 5]; 4],
}

/// `PAPI_MH_TYPE_INST`.
pub const INST: i32 = 0x1;
/// `PAPI_MH_TYPE_DATA`.
pub const DATA: i32 = 0x2;
/// `PAPI_MH_TYPE_UNIFIED`.
pub const UNIFIED: i32 = INST | DATA;
/// `PAPI_MH_TYPE_WB`.
const WRITE_BACK: i32 = 0x10;
/// `PAPI_MH_TYPE_PSEUDO_LRU`.
const PSEUDO_LRU: i32 = 0x200;
/// `PAPI_MH_TYPE_RD_ALLOC`, `PAPI_MH_TYPE_WR_ALLOC`, `PAPI_MH_TYPE_RW_ALLOC`.
const ALLOCATION: [(&str, i32); 3] = [
    ("ReadAllocate", 0x10000),
    ("WriteAllocate", 0x20000),
    ("ReadWriteAllocate", 0x40000),
];
/// PAPI's associativity for a fully associative cache or TLB (`SHRT_MAX`).
pub const FULL: i32 = i16::MAX as i32;

/// CPUID answers: the four registers of a leaf and subleaf.
pub type Cpuid<'a> = &'a dyn Fn(u32, u32) -> [u32; 4];

/// The four registers of CPUID `leaf` with `subleaf` in ECX on the CPU the calling thread runs
/// on, through counterhal-x86's instruction; `None` where the instruction does not exist.
pub fn instruction(leaf: u32, subleaf: u32) -> Option<[u32; 4]> {
    use counterhal_x86::CpuidSource;
    let r = counterhal_x86::CpuidInstruction.cpuid(leaf, subleaf).ok()?;
    Some([r.eax, r.ebx, r.ecx, r.edx])
}

/// One TLB description: type, entries, page size in bytes, associativity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tlb {
    /// `PAPI_MH_TYPE_*`.
    pub kind: i32,
    /// Entries.
    pub entries: i32,
    /// Page size in bytes.
    pub page_size: i32,
    /// Ways (`FULL` when fully associative).
    pub associativity: i32,
}

/// One cache description: type, size and line in bytes, lines, associativity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cache {
    /// `PAPI_MH_TYPE_*` with its policy bits.
    pub kind: i32,
    /// Size in bytes.
    pub size: i32,
    /// Line size in bytes.
    pub line_size: i32,
    /// Lines.
    pub lines: i32,
    /// Ways (`FULL` when fully associative).
    pub associativity: i32,
}

impl MemoryHierarchy {
    /// An empty hierarchy.
    pub fn empty() -> MemoryHierarchy {
        MemoryHierarchy {
            levels: 0,
            level: [[0; 54]; 4],
        }
    }

    /// TLB `slot` (0 to 5) of `level` (0 to 3).
    pub fn tlb(&self, level: usize, slot: usize) -> Tlb {
        let f = &self.level[level][slot * 4..slot * 4 + 4];
        Tlb {
            kind: f[0],
            entries: f[1],
            page_size: f[2],
            associativity: f[3],
        }
    }

    /// Cache `slot` (0 to 5) of `level` (0 to 3).
    pub fn cache(&self, level: usize, slot: usize) -> Cache {
        let f = &self.level[level][24 + slot * 5..24 + slot * 5 + 5];
        Cache {
            kind: f[0],
            size: f[1],
            line_size: f[2],
            lines: f[3],
            associativity: f[4],
        }
    }

    fn set_tlb(&mut self, level: usize, slot: usize, t: Tlb) {
        self.level[level][slot * 4..slot * 4 + 4].copy_from_slice(&[
            t.kind,
            t.entries,
            t.page_size,
            t.associativity,
        ]);
    }

    fn set_cache(&mut self, level: usize, slot: usize, c: Cache) {
        self.level[level][24 + slot * 5..24 + slot * 5 + 5].copy_from_slice(&[
            c.kind,
            c.size,
            c.line_size,
            c.lines,
            c.associativity,
        ]);
    }

    /// Puts `c` in the first empty cache slot of `level` (the last slot when all are taken,
    /// as PAPI's decoders do).
    fn push_cache(&mut self, level: usize, c: Cache) {
        let slot = (0..5)
            .find(|&s| self.cache(level, s).kind == 0)
            .unwrap_or(5);
        self.set_cache(level, slot, c);
    }

    /// The cache of `level` (1 to 4) whose type (less its policy bits) is `kind`.
    pub fn find_cache(&self, level: usize, kind: i32) -> Option<Cache> {
        (1..=4).contains(&level).then_some(())?;
        (0..6)
            .map(|s| self.cache(level - 1, s))
            .find(|c| c.kind != 0 && c.kind & 0xf == kind)
    }

    /// The number of levels holding a TLB or a cache.
    fn count_levels(&mut self) {
        self.levels = (0..4)
            .filter(|&l| (0..6).any(|s| self.tlb(l, s).kind != 0 || self.cache(l, s).kind != 0))
            .map(|l| l as i32 + 1)
            .max()
            .unwrap_or(0);
    }
}

/// The vendor CPUID leaf 0 names (`GenuineIntel`, `AuthenticAMD`).
pub fn vendor(cpuid: Cpuid<'_>) -> String {
    let [_, b, c, d] = cpuid(0, 0);
    let bytes: Vec<u8> = [b, d, c].iter().flat_map(|r| r.to_le_bytes()).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The hierarchy of an x86 CPU from CPUID, as PAPI 7.0's `_x86_cache_info`: AMD's leaves
/// 0x80000005 (L1 caches and TLBs) and 0x80000006 (L2 and L3 caches, L2 TLBs), Intel's leaf 4
/// (every cache; Intel's TLBs are in leaf 2's descriptor table, which is not decoded here);
/// another vendor has none.
pub fn from_cpuid(cpuid: Cpuid<'_>) -> MemoryHierarchy {
    let mut mh = MemoryHierarchy::empty();
    match vendor(cpuid).as_str() {
        "AuthenticAMD" => amd(cpuid, &mut mh),
        "GenuineIntel" => intel_leaf4(cpuid, &mut mh),
        _ => return mh,
    }
    mh.count_levels();
    mh
}

/// AMD's L2 and L3 associativity codes (its CPUID specification, #25481): -1 for a reserved
/// code, `FULL` for fully associative.
fn amd_associativity(code: u32) -> i32 {
    const WAYS: [i32; 16] = [0, 1, 2, -1, 4, -1, 8, -1, 16, -1, 32, 48, 64, 96, 128, FULL];
    WAYS[(code & 0xf) as usize]
}

/// 0xff (fully associative) as `FULL`.
fn amd_l1_associativity(byte: u32) -> i32 {
    if byte == 0xff { FULL } else { byte as i32 }
}

fn amd(cpuid: Cpuid<'_>, mh: &mut MemoryHierarchy) {
    let byte = |r: u32, i: u32| (r >> (8 * i)) & 0xff;
    let [eax, ebx, ecx, edx] = cpuid(0x8000_0005, 0);
    // L1 TLBs: 4 MB pages (half the 2 MB entries), 2 MB pages, 4 KB pages.
    let l1 = [
        (INST, byte(eax, 0) / 2, 4096, byte(eax, 1)),
        (DATA, byte(eax, 2) / 2, 4096, byte(eax, 3)),
        (INST, byte(eax, 0), 2048, byte(eax, 1)),
        (DATA, byte(eax, 2), 2048, byte(eax, 3)),
        (INST, byte(ebx, 0), 4, byte(ebx, 1)),
        (DATA, byte(ebx, 2), 4, byte(ebx, 3)),
    ];
    for (slot, (kind, entries, page_kib, ways)) in l1.into_iter().enumerate() {
        let tlb = Tlb {
            kind,
            entries: entries as i32,
            page_size: page_kib << 10,
            associativity: amd_l1_associativity(ways),
        };
        mh.set_tlb(0, slot, tlb);
    }
    let l1_cache = |kind: i32, r: u32| {
        let size = (byte(r, 3) << 10) as i32;
        let line_size = byte(r, 0) as i32;
        Cache {
            kind,
            size,
            line_size,
            lines: if line_size > 0 { size / line_size } else { 0 },
            associativity: amd_l1_associativity(byte(r, 2)),
        }
    };
    mh.set_cache(0, 0, l1_cache(DATA | WRITE_BACK | PSEUDO_LRU, ecx));
    mh.set_cache(0, 1, l1_cache(INST, edx));
    let [eax, ebx, ecx, edx] = cpuid(0x8000_0006, 0);
    // L2 TLBs: entries in 12 bits, associativity code above them; 4 MB pages hold half.
    let l2_tlb = |half: u32| -> (i32, i32) {
        let entries = (half & 0xfff) as i32;
        (entries, amd_associativity(half >> 12))
    };
    if eax & 0xffff != 0 {
        let (entries, ways) = l2_tlb(eax & 0xffff);
        mh.set_tlb(1, 0, tlb(INST, entries / 2, 4096, ways));
        mh.set_tlb(1, 2, tlb(INST, entries / 2 * 2, 2048, ways));
    }
    if eax >> 16 != 0 {
        let (entries, ways) = l2_tlb(eax >> 16);
        mh.set_tlb(1, 1, tlb(DATA, entries / 2, 4096, ways));
        mh.set_tlb(1, 3, tlb(DATA, entries / 2 * 2, 2048, ways));
    }
    if ebx & 0xffff != 0 {
        let (entries, ways) = l2_tlb(ebx & 0xffff);
        mh.set_tlb(1, 4, tlb(INST, entries, 4, ways));
    }
    if ebx >> 16 != 0 {
        let (entries, ways) = l2_tlb(ebx >> 16);
        mh.set_tlb(1, 5, tlb(DATA, entries, 4, ways));
    }
    let lines = |size: i32, line: i32| if line > 0 { size / line } else { 0 };
    if ecx != 0 {
        // Size in KB in the high half.
        let size = ((ecx & 0xffff_0000) >> 6) as i32;
        let line_size = byte(ecx, 0) as i32;
        let cache = Cache {
            kind: UNIFIED | PSEUDO_LRU,
            size,
            line_size,
            lines: lines(size, line_size),
            associativity: amd_associativity(byte(ecx, 1) >> 4),
        };
        mh.set_cache(1, 0, cache);
    }
    if edx != 0 {
        // Size in 512 KB blocks in bits 18 and up.
        let size = ((edx & 0xfffc_0000) << 1) as i32;
        let line_size = byte(edx, 0) as i32;
        let cache = Cache {
            kind: UNIFIED | PSEUDO_LRU,
            size,
            line_size,
            lines: lines(size, line_size),
            associativity: amd_associativity(byte(edx, 1) >> 4),
        };
        mh.set_cache(2, 0, cache);
    }
}

fn tlb(kind: i32, entries: i32, page_kib: i32, associativity: i32) -> Tlb {
    Tlb {
        kind,
        entries,
        page_size: page_kib << 10,
        associativity,
    }
}

/// Intel's deterministic cache parameters (leaf 4), one subleaf per cache until type 0.
fn intel_leaf4(cpuid: Cpuid<'_>, mh: &mut MemoryHierarchy) {
    if cpuid(0, 0)[0] < 4 {
        return;
    }
    for subleaf in 0..32 {
        let [eax, ebx, ecx, _] = cpuid(4, subleaf);
        let kind = match eax & 0x1f {
            0 => break,
            1 => DATA,
            2 => INST,
            3 => UNIFIED,
            _ => continue,
        };
        let level = ((eax >> 5) & 0x7) as usize;
        if !(1..=4).contains(&level) {
            continue;
        }
        let line_size = (ebx & 0xfff) as i32 + 1;
        let partitions = ((ebx >> 12) & 0x3ff) as i32 + 1;
        let ways = ((ebx >> 22) & 0x3ff) as i32 + 1;
        let sets = ecx as i32 + 1;
        let lines = ways * partitions * sets;
        let cache = Cache {
            kind,
            size: lines * line_size,
            line_size,
            lines,
            associativity: if eax & (1 << 9) != 0 { FULL } else { ways },
        };
        mh.push_cache(level - 1, cache);
    }
}

/// The hierarchy sysfs gives for CPU 0 of `system`, as PAPI 7.0's
/// `generic_get_memory_info` reads it: each `cache/indexN` at its `level`, its `type` with
/// its `write_policy` and `allocation_policy` bits, `size` in bytes, `coherency_line_size`,
/// `ways_of_associativity`, and `number_of_sets` as the number of lines (PAPI's reading).
pub fn from_sysfs(system: &System) -> MemoryHierarchy {
    let mut mh = MemoryHierarchy::empty();
    for cache in sysfs_caches(system, 0) {
        let mut kind = match cache.kind.as_str() {
            "Data" => DATA,
            "Instruction" => INST,
            "Unified" => UNIFIED,
            _ => 0,
        };
        if cache.write_policy == "WriteBack" {
            kind |= WRITE_BACK;
        }
        if let Some(&(_, bits)) = ALLOCATION.iter().find(|(n, _)| *n == cache.allocation) {
            kind |= bits;
        }
        if (1..=4).contains(&cache.level) {
            let entry = Cache {
                kind,
                size: cache.size_kib * 1024,
                line_size: cache.line_size,
                lines: cache.sets,
                associativity: cache.ways,
            };
            mh.push_cache(cache.level as usize - 1, entry);
            mh.levels = mh.levels.max(cache.level);
        }
    }
    mh
}

/// One cache of sysfs's `cpuN/cache/indexM`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysfsCache {
    /// `level`.
    pub level: i32,
    /// `type`: `Data`, `Instruction`, `Unified`.
    pub kind: String,
    /// `size` in KB.
    pub size_kib: i32,
    /// `coherency_line_size`.
    pub line_size: i32,
    /// `ways_of_associativity`.
    pub ways: i32,
    /// `number_of_sets`.
    pub sets: i32,
    /// `physical_line_partition`.
    pub partitions: i32,
    /// `write_policy`, where given.
    pub write_policy: String,
    /// `allocation_policy`, where given.
    pub allocation: String,
}

/// The caches sysfs lists for CPU `cpu` of `system` (its `cache/indexN`), in index order; a
/// file missing or unreadable reads as 0 or empty.
pub fn sysfs_caches(system: &System, cpu: u32) -> Vec<SysfsCache> {
    let number = |n: Option<u32>| n.and_then(|n| i32::try_from(n).ok()).unwrap_or(0);
    system
        .cpu_caches(cpu)
        .into_iter()
        .map(|cache| SysfsCache {
            level: number(cache.level),
            kind: cache.kind.unwrap_or_default(),
            size_kib: number(cache.size_kib),
            line_size: number(cache.line_size),
            ways: number(cache.ways),
            sets: number(cache.sets),
            partitions: number(cache.partitions),
            write_policy: cache.write_policy.unwrap_or_default(),
            allocation: cache.allocation_policy.unwrap_or_default(),
        })
        .collect()
}

/// The hypervisor CPUID names, as PAPI 7.0's `_x86_detect_hypervisor`: where leaf 1 sets
/// ECX bit 31 (running under a hypervisor), the vendor of leaf 0x40000000 (`KVMKVMKVM`);
/// `None` otherwise.
pub fn hypervisor(cpuid: Cpuid<'_>) -> Option<String> {
    if cpuid(1, 0)[2] & (1 << 31) == 0 {
        return None;
    }
    let [_, b, c, d] = cpuid(0x4000_0000, 0);
    let bytes: Vec<u8> = [b, c, d].iter().flat_map(|r| r.to_le_bytes()).collect();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPUID as an AMD EPYC (family 23, model 49) under KVM answers it: the leaves PAPI reads.
    fn epyc_under_kvm(leaf: u32, _subleaf: u32) -> [u32; 4] {
        match leaf {
            0 => [0x10, 0x6874_7541, 0x444d_4163, 0x6974_6e65],
            1 => [0x0083_0f10, 0x0102_0800, 0xfff8_3203, 0x178b_fbff],
            0x8000_0005 => [0xff40_ff40, 0xff40_ff40, 0x2008_0140, 0x2008_0140],
            0x8000_0006 => [0x4800_6400, 0x6800_6400, 0x0200_6140, 0x0800_9140],
            0x4000_0000 => [0x4000_0001, 0x4b4d_564b, 0x564b_4d56, 0x0000_004d],
            _ => [0; 4],
        }
    }

    /// Oracle: Debian's PAPI 7.0 `papi_mem_info` and `papi_component_avail` on the machine
    /// these answers were taken from: L1 TLBs of 32 (4 MB), 64 (2 MB) and 64 (4 KB) entries,
    /// fully associative; L2 TLBs of 512/1024 (instructions) and 1024/2048 (data) entries;
    /// L1 32 KB 8-way, L2 512 KB 8-way, L3 262144 KB with associativity -1 (a code AMD's old
    /// table reserves) and 4194304 lines; "VM Vendor: KVMKVMKVM".
    #[test]
    fn amd_cpuid_reads_as_papi_reads_it() {
        let mh = from_cpuid(&epyc_under_kvm);
        assert_eq!(mh.levels, 3);
        assert_eq!(mh.tlb(0, 0), tlb(INST, 32, 4096, FULL));
        assert_eq!(mh.tlb(0, 3), tlb(DATA, 64, 2048, FULL));
        assert_eq!(mh.tlb(0, 5), tlb(DATA, 64, 4, FULL));
        assert_eq!(mh.tlb(1, 0), tlb(INST, 512, 4096, 8));
        assert_eq!(mh.tlb(1, 3), tlb(DATA, 2048, 2048, 4));
        assert_eq!(mh.tlb(1, 5), tlb(DATA, 2048, 4, 8));
        let l1d = mh.find_cache(1, DATA).unwrap();
        assert_eq!(
            (l1d.size, l1d.line_size, l1d.lines, l1d.associativity),
            (32768, 64, 512, 8)
        );
        let l2 = mh.find_cache(2, UNIFIED).unwrap();
        assert_eq!((l2.size, l2.lines, l2.associativity), (524_288, 8192, 8));
        let l3 = mh.find_cache(3, UNIFIED).unwrap();
        assert_eq!(
            (l3.size >> 10, l3.lines, l3.associativity),
            (262_144, 4_194_304, -1)
        );
        assert_eq!(hypervisor(&epyc_under_kvm).as_deref(), Some("KVMKVMKVM"));
        assert_eq!(hypervisor(&|_, _| [0; 4]), None);
    }

    /// Oracle: Intel's SDM (CPUID leaf 4's fields) and PAPI 7.0's `init_intel_leaf4`: a 48 KB
    /// 12-way L1 data cache of 64 sets and 64-byte lines, and a fully associative one.
    #[test]
    fn intel_leaf4_reads_as_papi_reads_it() {
        let intel = |leaf: u32, subleaf: u32| match (leaf, subleaf) {
            (0, _) => [0x20, 0x756e_6547, 0x6c65_746e, 0x4965_6e69],
            (4, 0) => [0x121, (11 << 22) | 63, 63, 0],
            (4, 1) => [0x42 | (1 << 9), 63, 0, 0],
            _ => [0; 4],
        };
        let mh = from_cpuid(&intel);
        assert_eq!(mh.levels, 2);
        let l1d = mh.find_cache(1, DATA).unwrap();
        assert_eq!((l1d.size, l1d.lines, l1d.associativity), (49152, 768, 12));
        assert_eq!(mh.find_cache(2, INST).unwrap().associativity, FULL);
    }
}
