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

use crate::codes::{EINVAL, EMISC, ENOSUPP};
use crate::device_types::DevType;
use crate::info::{ComponentInfo, set_str};

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

/// This machine's device types ([`crate::device_types`]), kept for the process (C holds
/// pointers to them); `PAPI_EMISC` from a signal handler that interrupted a call holding the
/// library's lock.
pub fn this_machine() -> Result<&'static [DevType; 3], i32> {
    let system = crate::unlocked::system();
    crate::library::keep(|kept| kept.device_types(system)).ok_or(EMISC)
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

/// `PAPI_enum_dev_type`: with `PAPI_DEV_TYPE_ENUM__FIRST`, the first type (the walk starts
/// over); else the next type whose bit `modifier` has, or `PAPI_EINVAL` at the end (the walk
/// starts over). The walk is the process's, as PAPI's ([`crate::library::with_dev_type_cursor`]);
/// `PAPI_EMISC` from a signal handler that interrupted a call holding the library's lock.
pub fn enumerate(modifier: i32) -> Result<usize, i32> {
    let types = this_machine()?;
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
    .unwrap_or(Err(EMISC))
}

/// `PAPI_get_dev_type_attr` of type `index`.
pub fn type_attr(index: usize, attr: i32) -> Result<Value, i32> {
    let t = this_machine()?.get(index).ok_or(EINVAL)?;
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
    let t = this_machine()?.get(index).ok_or(EINVAL)?;
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
