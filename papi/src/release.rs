//! The PAPI release a program speaks, 7.0, 7.1 or 7.2, and what differs between them: the
//! version numbers, the layouts of `PAPI_component_info_t` and `PAPI_event_info_t`, the
//! numbers of the enumeration modifiers and the error codes.
//!
//! A program passes its papi.h's `PAPI_VER_CURRENT` to `PAPI_library_init`; the first call
//! that succeeds chooses the release for the rest of the process, and a later call with
//! another release's version is refused (`PAPI_EINVAL`), as a real libpapi refuses every
//! version but its own: a program and a library built on two releases in one process never see
//! their structs written in the other's layout. 7.1's interface is 7.0's under another version; 7.2 inserted
//! a partial-disable reason in `PAPI_component_info_t` (3,296 bytes where 7.0's has 2,272),
//! appended qualifiers to `PAPI_event_info_t` (23,068 bytes where 6,680), added three
//! enumeration modifiers, which moved the ones after them, and added `PAPI_PARTIAL`.
//! papi/tests/abi.rs checks every figure against each release's papi.h.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::info::{ComponentInfo, ComponentInfoOf, EventInfo, HUGE_STR};

/// A PAPI release whose interface libpapi speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// PAPI 7.0 (Debian 12).
    V7_0,
    /// PAPI 7.1 (Debian 13): 7.0's interface.
    V7_1,
    /// PAPI 7.2 (Debian sid).
    V7_2,
}

impl Release {
    /// Every release, oldest first.
    pub const ALL: [Release; 3] = [Release::V7_0, Release::V7_1, Release::V7_2];

    /// The release whose `PAPI_VER_CURRENT` is `version`.
    pub fn of_version(version: i32) -> Option<Release> {
        Self::ALL.into_iter().find(|r| r.ver_current() == version)
    }

    /// The release whose library file is named `file` (`libpapi.so.7.2`, or
    /// `libpapi.so.7.2.0.0`, under any folder), or `None` for another name.
    pub fn of_file_name(file: &str) -> Option<Release> {
        let name = file.rsplit('/').next().unwrap_or(file);
        Self::ALL.into_iter().find(|r| {
            name.strip_prefix(r.soname())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        })
    }

    /// `PAPI_VER_CURRENT`: `PAPI_VERSION` with its revision and increment cleared.
    pub fn ver_current(self) -> i32 {
        match self {
            Release::V7_0 => 0x0700_0000,
            Release::V7_1 => 0x0701_0000,
            Release::V7_2 => 0x0702_0000,
        }
    }

    /// `PAPI_VERSION` (7.x.0.0), what `PAPI_get_opt(PAPI_LIB_VERSION)` answers.
    pub fn version(self) -> i32 {
        self.ver_current()
    }

    /// The version as PAPI prints it (`7.2.0.0`).
    pub fn name(self) -> &'static str {
        match self {
            Release::V7_0 => "7.0.0.0",
            Release::V7_1 => "7.1.0.0",
            Release::V7_2 => "7.2.0.0",
        }
    }

    /// The library's SONAME in this release (`libpapi.so.7.2`).
    pub fn soname(self) -> &'static str {
        match self {
            Release::V7_0 => "libpapi.so.7.0",
            Release::V7_1 => "libpapi.so.7.1",
            Release::V7_2 => "libpapi.so.7.2",
        }
    }

    /// Whether the release has 7.2's layouts, modifiers and codes.
    pub fn is_7_2(self) -> bool {
        self == Release::V7_2
    }

    /// `PAPI_NUM_ERRORS`: the codes 0 to `1 - PAPI_NUM_ERRORS` have a message.
    pub fn errors(self) -> i32 {
        if self.is_7_2() { 29 } else { 28 }
    }

    /// The enumeration modifier `modifier` of this release's papi.h.
    pub fn modifier(self, modifier: i32) -> Modifier {
        if !self.is_7_2() {
            return Modifier::Classic(modifier);
        }
        // 7.2's enum: EVENTS 0, FIRST 1, PRESET_ENUM_FIRST_COMP 2, PRESET_ENUM_AVAIL 3,
        // MSC 4 ... FP 15, PRESET_ENUM_CPU 16, PRESET_ENUM_CPU_AVAIL 17, NTV_ENUM_UMASKS 18
        // ... NTV_ENUM_GROUPS 25; 7.0's: EVENTS 0, FIRST 1, AVAIL 2, MSC 3 ... FP 14,
        // NTV_ENUM_UMASKS 15 ... NTV_ENUM_GROUPS 22.
        match modifier {
            2 => Modifier::FirstComponentPreset,
            3..=15 => Modifier::Classic(modifier - 1),
            16 => Modifier::CpuPresets { available: false },
            17 => Modifier::CpuPresets { available: true },
            18..=25 => Modifier::Classic(modifier - 3),
            _ => Modifier::Classic(modifier),
        }
    }
}

/// An enumeration modifier as libpapi reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modifier {
    /// One 7.0 has, by 7.0's number (`PAPI_PRESET_ENUM_AVAIL` 2, `PAPI_NTV_ENUM_UMASKS` 15).
    Classic(i32),
    /// 7.2's `PAPI_PRESET_ENUM_FIRST_COMP`: the first preset of a component other than the
    /// CPU's.
    FirstComponentPreset,
    /// 7.2's `PAPI_PRESET_ENUM_CPU` and `PAPI_PRESET_ENUM_CPU_AVAIL`: the CPU's presets, all
    /// or those that count here.
    CpuPresets {
        /// Only those that count here.
        available: bool,
    },
}

/// A release set once for the process and read without a lock: 0 before any, else its
/// index in [`Release::ALL`] plus one. The process's one value beside the library's lock
/// (`unlocked::UNLOCKED`) holds two: the release the first successful
/// `PAPI_library_init` chose (which `PAPI_shutdown` keeps), and the one the library was
/// loaded as.
pub struct ReleaseOnce(AtomicU8);

impl ReleaseOnce {
    /// None yet.
    pub(crate) const fn new() -> Self {
        ReleaseOnce(AtomicU8::new(0))
    }

    /// The release set, if any is.
    pub fn get(&self) -> Option<Release> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            n => Release::ALL.get(usize::from(n) - 1).copied(),
        }
    }

    /// Sets `release` for the rest of the process, where none is set yet or it is the one
    /// set; `Err` with the one set where another release was set first.
    pub fn set(&self, release: Release) -> Result<(), Release> {
        let index = Release::ALL.iter().position(|r| *r == release).unwrap_or(0);
        let wanted = index as u8 + 1;
        match self
            .0
            .compare_exchange(0, wanted, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => Ok(()),
            Err(n) if n == wanted => Ok(()),
            Err(_) => Err(self.get().unwrap_or(release)),
        }
    }
}

/// What 7.2 inserted in `PAPI_component_info_t` after `disabled`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PartialDisable {
    /// Why the component is partially disabled.
    pub partially_disabled_reason: [u8; HUGE_STR],
    /// 1 when it is, else 0.
    pub partially_disabled: i32,
}

/// `PAPI_component_info_t` of PAPI 7.2.
pub type ComponentInfo72 = ComponentInfoOf<PartialDisable>;
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<ComponentInfo72>() == 3296);
const _: () = assert!(std::mem::offset_of!(ComponentInfo72, initialized) == 2568);

/// A component's description in 7.2's layout: no component of this library is partially
/// disabled.
pub fn component_info_7_2(info: &ComponentInfo) -> ComponentInfo72 {
    info.with_partial(PartialDisable {
        partially_disabled_reason: [0; HUGE_STR],
        partially_disabled: 0,
    })
}

/// `PAPI_MAX_COMP_QUALS`.
pub const MAX_COMP_QUALS: usize = 8;

/// `PAPI_event_info_t` of PAPI 7.2: 7.0's, then an event's qualifiers.
#[repr(C)]
pub struct EventInfo72 {
    /// The fields 7.0 has, where 7.0 has them.
    pub base: EventInfo,
    /// How many qualifiers follow (a component preset's, in PAPI; none here).
    pub num_quals: i32,
    /// The qualifiers.
    pub quals: [[u8; HUGE_STR]; MAX_COMP_QUALS],
    /// Their descriptions.
    pub quals_descrs: [[u8; HUGE_STR]; MAX_COMP_QUALS],
}
const _: () = assert!(std::mem::size_of::<EventInfo72>() == 23068);

/// An event's description in 7.2's layout, without qualifiers, as 7.2 describes the CPU's
/// presets and native events; a preset's categories (`event_type`) are 7.2's bits, each one
/// higher than 7.0's (`PAPI_PRESET_BIT_X` is `1 << PAPI_PRESET_ENUM_X`, and 7.2's
/// `PAPI_PRESET_ENUM_MSC` to `_FP` are 7.0's plus one).
pub fn event_info_7_2(mut base: EventInfo) -> Box<EventInfo72> {
    base.event_type <<= 1;
    Box::new(EventInfo72 {
        base,
        num_quals: 0,
        quals: [[0; HUGE_STR]; MAX_COMP_QUALS],
        quals_descrs: [[0; HUGE_STR]; MAX_COMP_QUALS],
    })
}

/// The message of `PAPI_PARTIAL` (-28), which 7.2 added.
pub const PARTIAL_MESSAGE: &std::ffi::CStr =
    c"Component in use is partially disabled, see utils/papi_component_avail for more information.";

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: PAPI 7.0's and 7.2's papi.h (Debian's libpapi-dev 7.0.0 and sid's 7.2.0): the
    /// enum of `PAPI_enum_event`'s modifiers, each 7.2 name mapped to 7.0's of the same name.
    #[test]
    fn each_7_2_modifier_is_the_7_0_one_of_its_name() {
        let v72 = Release::V7_2;
        // PAPI_ENUM_EVENTS, PAPI_ENUM_FIRST, PAPI_PRESET_ENUM_AVAIL, PAPI_PRESET_ENUM_MSC,
        // PAPI_PRESET_ENUM_FP, PAPI_NTV_ENUM_UMASKS, PAPI_NTV_ENUM_GROUPS.
        for (seven_two, seven_zero) in
            [(0, 0), (1, 1), (3, 2), (4, 3), (15, 14), (18, 15), (25, 22)]
        {
            assert_eq!(v72.modifier(seven_two), Modifier::Classic(seven_zero));
        }
        assert_eq!(v72.modifier(2), Modifier::FirstComponentPreset);
        assert_eq!(v72.modifier(17), Modifier::CpuPresets { available: true });
        assert_eq!(Release::V7_1.modifier(15), Modifier::Classic(15));
    }

    /// Oracle: the three papi.h: `PAPI_VERSION_NUMBER(7,x,0,0)` and its `PAPI_VER_CURRENT`.
    #[test]
    fn a_version_chooses_its_release() {
        assert_eq!(Release::of_version(0x0701_0000), Some(Release::V7_1));
        assert_eq!(Release::of_version(0x0702_0000), Some(Release::V7_2));
        assert_eq!(Release::of_version(0x0703_0000), None);
        assert_eq!(Release::of_version(0x0700_0001), None);
        assert_eq!(
            Release::of_file_name("/opt/papi/lib/libpapi.so.7.2"),
            Some(Release::V7_2)
        );
        assert_eq!(
            Release::of_file_name("libpapi.so.7.1.0.0"),
            Some(Release::V7_1)
        );
        assert_eq!(Release::of_file_name("libpapi.so"), None);
        assert_eq!(Release::of_file_name("libpapi.so.7.20"), None);
    }
}
