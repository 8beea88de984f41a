//! pctr's kernel ABI, as `machine/pctr.h` and `sys/ioccom.h` define it: both `struct pctrst`
//! layouts, the BSD ioctl request formula and the request numbers, and the argument each
//! request takes. Facts only: the system call is in `sys`.

use std::fmt;
use std::mem::{offset_of, size_of};

/// Which `struct pctrst` (and so which `PCIOCRD`) the kernel speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Abi {
    /// i386, 1996-2007 (`pctr.h` 1.3 on): two counters, an idle count; `PCIOCRD` =
    /// `0x40286301`.
    Legacy,
    /// i386 in the autumn of 2007 (the era of `pctr.c` 1.23): four counter slots and an idle
    /// count, `fn[4], tsc, hwc[4], idl`, 64 bytes; `PCIOCRD` = `0x40406301`.
    TransitionalI386,
    /// amd64 in the autumn of 2007 (`pctr.h` 1.1): `hwc[4], tsc, idl, fn[4]`, 64 bytes;
    /// `PCIOCRD` = `0x40406301`, the same number as the i386 one.
    TransitionalAmd64,
    /// amd64 and i386 since: four counter slots, no idle count; `PCIOCRD` = `0x40386301`.
    Current,
}

impl Abi {
    /// The number of counter slots in `struct pctrst` (`PCTR_NUM`).
    pub const fn slots(self) -> u32 {
        match self {
            Abi::Legacy => 2,
            Abi::TransitionalI386 | Abi::TransitionalAmd64 | Abi::Current => 4,
        }
    }

    /// The `PCIOCRD` request number of this ABI.
    pub const fn read_request(self) -> u64 {
        match self {
            Abi::Legacy => PCIOCRD_LEGACY,
            Abi::TransitionalI386 | Abi::TransitionalAmd64 => PCIOCRD_TRANSITIONAL,
            Abi::Current => PCIOCRD_CURRENT,
        }
    }

    /// Whether it is one of the 64-byte ABIs of 2007.
    pub const fn is_transitional(self) -> bool {
        matches!(self, Abi::TransitionalI386 | Abi::TransitionalAmd64)
    }

    /// `legacy`, `transitional-i386`, `transitional-amd64` or `current`.
    pub fn name(self) -> &'static str {
        match self {
            Abi::Legacy => "legacy",
            Abi::TransitionalI386 => "transitional-i386",
            Abi::TransitionalAmd64 => "transitional-amd64",
            Abi::Current => "current",
        }
    }
}

impl fmt::Display for Abi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The `PCIOCSn` request that sets counter `index`'s function, for indices 0-3.
pub(crate) const fn set_request(index: u32) -> Option<u64> {
    match index {
        0 => Some(PCIOCS0),
        1 => Some(PCIOCS1),
        2 => Some(PCIOCS2),
        3 => Some(PCIOCS3),
        _ => None,
    }
}

/// The argument of one pctr ioctl, typed by the request's shape.
#[derive(Debug)]
pub enum IoctlArg<'a> {
    /// `PCIOCRD` of the legacy ABI fills this.
    ReadLegacy(&'a mut PctrStLegacy),
    /// `PCIOCRD` of the current ABI fills this.
    ReadCurrent(&'a mut PctrStCurrent),
    /// `PCIOCRD` of the transitional i386 ABI fills this.
    ReadTransitionalI386(&'a mut PctrStTransitionalI386),
    /// `PCIOCRD` of the transitional amd64 ABI fills this.
    ReadTransitionalAmd64(&'a mut PctrStTransitionalAmd64),
    /// `PCIOCSn` takes this function word.
    Function(u32),
}

/// `IOCPARM_MASK`: the parameter length field (13 bits).
pub const IOCPARM_MASK: u64 = 0x1fff;
/// `IOC_VOID`: no parameters.
pub const IOC_VOID: u64 = 0x2000_0000;
/// `IOC_OUT`: the kernel copies parameters out (used by `_IOR`).
pub const IOC_OUT: u64 = 0x4000_0000;
/// `IOC_IN`: the kernel copies parameters in (used by `_IOW`).
pub const IOC_IN: u64 = 0x8000_0000;
/// `IOC_DIRMASK`: the direction bits.
pub const IOC_DIRMASK: u64 = 0xe000_0000;

/// BSD `_IOC(inout, group, num, len)` from `sys/sys/ioccom.h`. Not Linux's layout: the
/// direction sits in bits 29-31 and the length in bits 16-28.
pub const fn ioc(inout: u64, group: u8, num: u8, len: usize) -> u64 {
    inout | (((len as u64) & IOCPARM_MASK) << 16) | ((group as u64) << 8) | num as u64
}

/// BSD `_IOR(group, num, type)`: the kernel fills `len` bytes.
pub const fn ior(group: u8, num: u8, len: usize) -> u64 {
    ioc(IOC_OUT, group, num, len)
}

/// BSD `_IOW(group, num, type)`: the kernel reads `len` bytes.
pub const fn iow(group: u8, num: u8, len: usize) -> u64 {
    ioc(IOC_IN, group, num, len)
}

/// BSD `IOCPARM_LEN(request)`: the parameter length a request carries.
pub const fn iocparm_len(request: u64) -> usize {
    ((request >> 16) & IOCPARM_MASK) as usize
}

/// BSD `IOCGROUP(request)`: the request's group letter.
pub const fn ioc_group(request: u64) -> u8 {
    ((request >> 8) & 0xff) as u8
}

/// The request's number within its group.
pub const fn ioc_num(request: u64) -> u8 {
    (request & 0xff) as u8
}

/// The ioctl group of pctr: `'c'`.
pub const PCTR_GROUP: u8 = b'c';

/// `struct pctrst` of the legacy i386 ABI (1996-2007: i386 `pctr.h` 1.3 introduced it, the
/// seed pctr(4) documents it): two counters and an idle-loop count. 40 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PctrStLegacy {
    /// `pctr_fn[2]`: the functions as programmed.
    pub pctr_fn: [u32; 2],
    /// `pctr_tsc`: the time stamp counter at the read.
    pub pctr_tsc: u64,
    /// `pctr_hwc[2]`: the hardware counters.
    pub pctr_hwc: [u64; 2],
    /// `pctr_idl`: idle-loop iterations.
    pub pctr_idl: u64,
}

/// `struct pctrst` of the current ABI (amd64 and i386 since 2007): four counter slots. 56
/// bytes, `pctr_tsc` at offset 16, `pctr_hwc` at 24.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PctrStCurrent {
    /// `pctr_fn[4]`: the functions as programmed (slots the CPU lacks read 0).
    pub pctr_fn: [u32; 4],
    /// `pctr_tsc`: the time stamp counter at the read.
    pub pctr_tsc: u64,
    /// `pctr_hwc[4]`: the hardware counters.
    pub pctr_hwc: [u64; 4],
}

/// `struct pctrst` of the transitional i386 ABI (autumn 2007, the era of `pctr.c` 1.23):
/// four slots and the idle count, 64 bytes. Its `PCIOCRD` has the same number as the amd64
/// one ([`PCIOCRD_TRANSITIONAL`]): the kernel's architecture tells them apart.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PctrStTransitionalI386 {
    /// `pctr_fn[4]`: the functions as programmed.
    pub pctr_fn: [u32; 4],
    /// `pctr_tsc`: the time stamp counter at the read.
    pub pctr_tsc: u64,
    /// `pctr_hwc[4]`: the hardware counters.
    pub pctr_hwc: [u64; 4],
    /// `pctr_idl`: idle-loop iterations.
    pub pctr_idl: u64,
}

/// `struct pctrst` of the transitional amd64 ABI (amd64 `pctr.h` 1.1, September 2007): the
/// counters first, then the TSC, the idle count and the functions, 64 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PctrStTransitionalAmd64 {
    /// `pctr_hwc[4]`: the hardware counters.
    pub pctr_hwc: [u64; 4],
    /// `pctr_tsc`: the time stamp counter at the read.
    pub pctr_tsc: u64,
    /// `pctr_idl`: idle-loop iterations.
    pub pctr_idl: u64,
    /// `pctr_fn[4]`: the functions as programmed.
    pub pctr_fn: [u32; 4],
}

const _: () = assert!(size_of::<PctrStLegacy>() == 40);
const _: () = assert!(size_of::<PctrStTransitionalI386>() == 64);
const _: () = assert!(offset_of!(PctrStTransitionalI386, pctr_tsc) == 16);
const _: () = assert!(offset_of!(PctrStTransitionalI386, pctr_hwc) == 24);
const _: () = assert!(offset_of!(PctrStTransitionalI386, pctr_idl) == 56);
const _: () = assert!(size_of::<PctrStTransitionalAmd64>() == 64);
const _: () = assert!(offset_of!(PctrStTransitionalAmd64, pctr_tsc) == 32);
const _: () = assert!(offset_of!(PctrStTransitionalAmd64, pctr_idl) == 40);
const _: () = assert!(offset_of!(PctrStTransitionalAmd64, pctr_fn) == 48);
const _: () = assert!(offset_of!(PctrStLegacy, pctr_tsc) == 8);
const _: () = assert!(offset_of!(PctrStLegacy, pctr_hwc) == 16);
const _: () = assert!(offset_of!(PctrStLegacy, pctr_idl) == 32);
const _: () = assert!(size_of::<PctrStCurrent>() == 56);
const _: () = assert!(offset_of!(PctrStCurrent, pctr_tsc) == 16);
const _: () = assert!(offset_of!(PctrStCurrent, pctr_hwc) == 24);

/// `PCIOCRD` of the legacy ABI: `_IOR('c', 1, struct pctrst)` with the 40-byte struct.
pub const PCIOCRD_LEGACY: u64 = ior(PCTR_GROUP, 1, size_of::<PctrStLegacy>());
/// `PCIOCRD` of the current ABI: `_IOR('c', 1, struct pctrst)` with the 56-byte struct.
pub const PCIOCRD_CURRENT: u64 = ior(PCTR_GROUP, 1, size_of::<PctrStCurrent>());
/// `PCIOCRD` of the transitional 64-byte ABIs: `_IOR('c', 1, struct pctrst)` with 64 bytes.
pub const PCIOCRD_TRANSITIONAL: u64 = ior(PCTR_GROUP, 1, size_of::<PctrStTransitionalI386>());
/// `PCIOCS0`: `_IOW('c', 8, unsigned int)`, set counter 0's function.
pub const PCIOCS0: u64 = iow(PCTR_GROUP, 8, size_of::<u32>());
/// `PCIOCS1`: set counter 1's function.
pub const PCIOCS1: u64 = iow(PCTR_GROUP, 9, size_of::<u32>());
/// `PCIOCS2`: set counter 2's function (current ABI only).
pub const PCIOCS2: u64 = iow(PCTR_GROUP, 10, size_of::<u32>());
/// `PCIOCS3`: set counter 3's function (current ABI only).
pub const PCIOCS3: u64 = iow(PCTR_GROUP, 11, size_of::<u32>());

/// Whether `arg` has exactly the direction and size `request` encodes.
pub(crate) fn arg_matches(request: u64, arg: &IoctlArg<'_>) -> bool {
    let (direction, len) = match arg {
        IoctlArg::ReadLegacy(_) => (IOC_OUT, size_of::<PctrStLegacy>()),
        IoctlArg::ReadCurrent(_) => (IOC_OUT, size_of::<PctrStCurrent>()),
        IoctlArg::ReadTransitionalI386(_) => (IOC_OUT, size_of::<PctrStTransitionalI386>()),
        IoctlArg::ReadTransitionalAmd64(_) => (IOC_OUT, size_of::<PctrStTransitionalAmd64>()),
        IoctlArg::Function(_) => (IOC_IN, size_of::<u32>()),
    };
    request & IOC_DIRMASK == direction && iocparm_len(request) == len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_match_the_headers() {
        assert_eq!(PCIOCRD_LEGACY, 0x4028_6301);
        assert_eq!(PCIOCRD_CURRENT, 0x4038_6301);
        assert_eq!(PCIOCRD_TRANSITIONAL, 0x4040_6301);
        assert_eq!(PCIOCS0, 0x8004_6308);
        assert_eq!(PCIOCS1, 0x8004_6309);
        assert_eq!(PCIOCS2, 0x8004_630a);
        assert_eq!(PCIOCS3, 0x8004_630b);
    }

    #[test]
    fn request_fields_decode() {
        assert_eq!(iocparm_len(PCIOCRD_CURRENT), 56);
        assert_eq!(iocparm_len(PCIOCRD_LEGACY), 40);
        assert_eq!(iocparm_len(PCIOCRD_TRANSITIONAL), 64);
        assert_eq!(Abi::TransitionalI386.read_request(), 0x4040_6301);
        assert_eq!(Abi::TransitionalAmd64.read_request(), 0x4040_6301);
        assert_eq!(Abi::TransitionalAmd64.slots(), 4);
        assert_eq!(ioc_group(PCIOCS3), b'c');
        assert_eq!(ioc_num(PCIOCS3), 11);
        assert_eq!(ioc(IOC_VOID, b'c', 1, 0), 0x2000_6301);
        // The length field is 13 bits wide: larger sizes are masked, as the C macro does.
        assert_eq!(iocparm_len(ior(b'c', 1, 0x2001)), 1);
    }

    #[test]
    fn arguments_must_match_the_request_shape() {
        let mut current = PctrStCurrent::default();
        let mut legacy = PctrStLegacy::default();
        assert!(arg_matches(
            PCIOCRD_CURRENT,
            &IoctlArg::ReadCurrent(&mut current)
        ));
        assert!(!arg_matches(
            PCIOCRD_LEGACY,
            &IoctlArg::ReadCurrent(&mut current)
        ));
        assert!(arg_matches(
            PCIOCRD_LEGACY,
            &IoctlArg::ReadLegacy(&mut legacy)
        ));
        assert!(!arg_matches(PCIOCS0, &IoctlArg::ReadLegacy(&mut legacy)));
        assert!(arg_matches(PCIOCS2, &IoctlArg::Function(0)));
        assert!(!arg_matches(PCIOCRD_CURRENT, &IoctlArg::Function(0)));
    }

    #[test]
    fn set_requests_by_counter() {
        assert_eq!(set_request(3), Some(0x8004_630b));
        assert_eq!(set_request(4), None);
    }
}
