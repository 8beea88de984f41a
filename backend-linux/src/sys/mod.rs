//! The kernel interface, by subsystem: the perf ABI ([`perf`]: `perf_event_attr`, ioctls,
//! reads; [`open`]: `perf_event_open` and its size protocol), the self-monitoring page ([`page`]: its mapping, `rdpmc`), and
//! process facts ([`process`]: limits, the user id, the CPU count), and `bpf(2)` ([`bpf`]: the
//! maps and programs of per-cgroup counting). Everything `unsafe` in this crate is in these
//! modules.
//!
//! # Safety
//!
//! The invariants every `unsafe` block here relies on:
//! - [`PerfEventAttr`] and [`PerfEventMmapPage`] are `#[repr(C)]` copies of the kernel's structs
//!   whose sizes and offsets are pinned by `const` assertions below and checked against the
//!   system header by a test; the kernel only reads `attr.size` bytes and writes back `size`.
//! - File descriptors are passed in as [`BorrowedFd`](std::os::fd::BorrowedFd) (open for the duration of the call) and
//!   returned as [`OwnedFd`](std::os::fd::OwnedFd) (owned by exactly one value, closed on drop); no raw fd escapes.
//! - The `bpf(2)` attributes are `#[repr(C)]` copies of the kernel's `union bpf_attr` members,
//!   pinned by `const` assertions and a test against the system header; every buffer whose
//!   address they carry is a live slice of the length the kernel is told, for the call.
//! - A [`UserPageMap`] owns its mapping from `mmap` to `munmap` and is only read through
//!   volatile loads, because the kernel updates the page concurrently.

#[cfg(feature = "cgroup-counter")]
pub mod bpf;
mod open;
mod os_error;
#[cfg(feature = "sampling")]
mod overflow;
mod page;
mod perf;
mod process;
#[cfg(feature = "sampling")]
mod ring;

pub use open::*;
#[cfg(feature = "sampling")]
pub use overflow::{
    OverflowCallback, eventfd, gettid, overflow_signal, register, unregister, wait_for, wake,
};
pub use page::*;
pub use perf::*;
pub use process::*;
#[cfg(feature = "sampling")]
pub use ring::Ring;

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;
    use std::mem::{offset_of, size_of};

    #[test]
    fn ioctl_numbers() {
        // This build's numbers: the architecture's own layout.
        let ours = [
            IOC_ENABLE,
            IOC_DISABLE,
            IOC_REFRESH,
            IOC_RESET,
            IOC_PERIOD,
            IOC_SET_OUTPUT,
            IOC_SET_FILTER,
            IOC_ID,
            IOC_SET_BPF,
            IOC_PAUSE_OUTPUT,
        ];
        assert_eq!(ours, perf_ioctls(IocLayout::THIS, size_of::<*const u8>()));
        // x86-64 and aarch64 (asm-generic), as their headers define them.
        let generic = [
            0x2400,
            0x2401,
            0x2402,
            0x2403,
            0x4008_2404,
            0x2405,
            0x4008_2406,
            0x8008_2407,
            0x4004_2408,
            0x4004_2409,
        ];
        assert_eq!(perf_ioctls(IocLayout::GENERIC, 8), generic);
        // ppc64le (and mips64, sparc64): _IOC_NONE is a bit of its own, write and read swap
        // places, the size has 13 bits.
        let ppc64 = [
            0x2000_2400,
            0x2000_2401,
            0x2000_2402,
            0x2000_2403,
            0x8008_2404,
            0x2000_2405,
            0x8008_2406,
            0x4008_2407,
            0x8004_2408,
            0x8004_2409,
        ];
        assert_eq!(perf_ioctls(IocLayout::OSF, 8), ppc64);
        // A 32-bit generic ABI (armv7, i686): pointer-sized arguments are 4 bytes.
        assert_eq!(perf_ioctls(IocLayout::GENERIC, 4)[7], 0x8004_2407);
        if cfg!(target_arch = "x86_64") || cfg!(target_arch = "aarch64") {
            assert_eq!(ours, generic);
        }
    }

    /// Compiles a C program against the system's `linux/perf_event.h` and compares its size,
    /// offsets, bit positions and ioctl numbers with ours.
    #[test]
    fn layout_matches_the_system_header() {
        if !std::path::Path::new("/usr/include/linux/perf_event.h").exists() {
            skip!(
                Need::Tools,
                "/usr/include/linux/perf_event.h is not installed (apt-get install linux-libc-dev)"
            );
        }
        let dir = std::env::temp_dir().join(format!("counterhal-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = String::from(
            "#include <stdio.h>\n#include <stddef.h>\n#include <string.h>\n#include <stdint.h>\n\
             #include <linux/perf_event.h>\n\
             static int bit(const void *p) { uint64_t w; memcpy(&w, p, 8); \
             for (int i = 0; i < 64; i++) if (w >> i & 1) return i; return -1; }\n\
             int main(void) { struct perf_event_attr a; struct perf_event_mmap_page m;\n\
             (void)m;\n\
             printf(\"attr_size %zu\\n\", sizeof a);\n\
             #ifdef PERF_ATTR_SIZE_VER8\nprintf(\"ver8 %d\\n\", PERF_ATTR_SIZE_VER8);\n\
             printf(\"attr.config3 %zu\\n\", offsetof(struct perf_event_attr, config3));\n#endif\n\
             printf(\"ver7 %d\\n\", PERF_ATTR_SIZE_VER7);\n\
             printf(\"page_size %zu\\n\", sizeof m);\n",
        );
        let attr_fields = [
            ("type", offset_of!(PerfEventAttr, type_)),
            ("size", offset_of!(PerfEventAttr, size)),
            ("config", offset_of!(PerfEventAttr, config)),
            ("sample_period", offset_of!(PerfEventAttr, sample_period)),
            ("sample_freq", offset_of!(PerfEventAttr, sample_period)),
            ("sample_type", offset_of!(PerfEventAttr, sample_type)),
            ("read_format", offset_of!(PerfEventAttr, read_format)),
            ("wakeup_events", offset_of!(PerfEventAttr, wakeup_events)),
            ("wakeup_watermark", offset_of!(PerfEventAttr, wakeup_events)),
            ("bp_type", offset_of!(PerfEventAttr, bp_type)),
            ("bp_addr", offset_of!(PerfEventAttr, config1)),
            ("config1", offset_of!(PerfEventAttr, config1)),
            ("bp_len", offset_of!(PerfEventAttr, config2)),
            ("config2", offset_of!(PerfEventAttr, config2)),
            (
                "branch_sample_type",
                offset_of!(PerfEventAttr, branch_sample_type),
            ),
            (
                "sample_regs_user",
                offset_of!(PerfEventAttr, sample_regs_user),
            ),
            (
                "sample_stack_user",
                offset_of!(PerfEventAttr, sample_stack_user),
            ),
            ("clockid", offset_of!(PerfEventAttr, clockid)),
            (
                "sample_regs_intr",
                offset_of!(PerfEventAttr, sample_regs_intr),
            ),
            ("aux_watermark", offset_of!(PerfEventAttr, aux_watermark)),
            (
                "sample_max_stack",
                offset_of!(PerfEventAttr, sample_max_stack),
            ),
            (
                "aux_sample_size",
                offset_of!(PerfEventAttr, aux_sample_size),
            ),
            ("sig_data", offset_of!(PerfEventAttr, sig_data)),
        ];
        let mut expected = std::collections::BTreeMap::new();
        for (name, offset) in attr_fields {
            c += &format!(
                "printf(\"attr.{name} %zu\\n\", offsetof(struct perf_event_attr, {name}));\n"
            );
            expected.insert(format!("attr.{name}"), offset as i64);
        }
        for (name, position) in attr_bit::ALL {
            c += &format!(
                "memset(&a, 0, sizeof a); a.{name} = 1; \
                 printf(\"bit.{name} %d\\n\", bit((char *)&a + 40));\n"
            );
            expected.insert(format!("bit.{name}"), i64::from(position));
        }
        let page_fields = [
            ("version", offset_of!(PerfEventMmapPage, version)),
            (
                "compat_version",
                offset_of!(PerfEventMmapPage, compat_version),
            ),
            ("lock", offset_of!(PerfEventMmapPage, lock)),
            ("index", offset_of!(PerfEventMmapPage, index)),
            ("offset", offset_of!(PerfEventMmapPage, offset)),
            ("time_enabled", offset_of!(PerfEventMmapPage, time_enabled)),
            ("time_running", offset_of!(PerfEventMmapPage, time_running)),
            ("capabilities", offset_of!(PerfEventMmapPage, capabilities)),
            ("pmc_width", offset_of!(PerfEventMmapPage, pmc_width)),
            ("time_shift", offset_of!(PerfEventMmapPage, time_shift)),
            ("time_mult", offset_of!(PerfEventMmapPage, time_mult)),
            ("time_offset", offset_of!(PerfEventMmapPage, time_offset)),
            ("time_zero", offset_of!(PerfEventMmapPage, time_zero)),
            ("size", offset_of!(PerfEventMmapPage, size)),
            ("time_cycles", offset_of!(PerfEventMmapPage, time_cycles)),
            ("time_mask", offset_of!(PerfEventMmapPage, time_mask)),
            ("data_head", offset_of!(PerfEventMmapPage, data_head)),
            ("data_tail", offset_of!(PerfEventMmapPage, data_tail)),
            ("data_offset", offset_of!(PerfEventMmapPage, data_offset)),
            ("data_size", offset_of!(PerfEventMmapPage, data_size)),
            ("aux_head", offset_of!(PerfEventMmapPage, aux_head)),
            ("aux_tail", offset_of!(PerfEventMmapPage, aux_tail)),
            ("aux_offset", offset_of!(PerfEventMmapPage, aux_offset)),
            ("aux_size", offset_of!(PerfEventMmapPage, aux_size)),
        ];
        for (name, offset) in page_fields {
            c += &format!(
                "printf(\"page.{name} %zu\\n\", offsetof(struct perf_event_mmap_page, {name}));\n"
            );
            expected.insert(format!("page.{name}"), offset as i64);
        }
        for (name, position) in [
            ("cap_bit0", cap_bit::BIT0),
            ("cap_bit0_is_deprecated", cap_bit::BIT0_IS_DEPRECATED),
            ("cap_user_rdpmc", cap_bit::USER_RDPMC),
            ("cap_user_time", cap_bit::USER_TIME),
            ("cap_user_time_zero", cap_bit::USER_TIME_ZERO),
            ("cap_user_time_short", cap_bit::USER_TIME_SHORT),
        ] {
            c += &format!(
                "memset(&m, 0, sizeof m); m.{name} = 1; \
                 printf(\"cap.{name} %d\\n\", bit(&m.capabilities));\n"
            );
            expected.insert(format!("cap.{name}"), i64::from(position));
        }
        for (name, value) in [
            ("PERF_EVENT_IOC_ENABLE", IOC_ENABLE),
            ("PERF_EVENT_IOC_DISABLE", IOC_DISABLE),
            ("PERF_EVENT_IOC_REFRESH", IOC_REFRESH),
            ("PERF_EVENT_IOC_RESET", IOC_RESET),
            ("PERF_EVENT_IOC_PERIOD", IOC_PERIOD),
            ("PERF_EVENT_IOC_SET_OUTPUT", IOC_SET_OUTPUT),
            ("PERF_EVENT_IOC_SET_FILTER", IOC_SET_FILTER),
            ("PERF_EVENT_IOC_ID", IOC_ID),
            ("PERF_EVENT_IOC_SET_BPF", IOC_SET_BPF),
            ("PERF_EVENT_IOC_PAUSE_OUTPUT", IOC_PAUSE_OUTPUT),
            ("PERF_IOC_FLAG_GROUP", IOC_FLAG_GROUP),
            ("PERF_FLAG_FD_CLOEXEC", FLAG_FD_CLOEXEC),
            ("PERF_FLAG_PID_CGROUP", FLAG_PID_CGROUP),
            ("PERF_FORMAT_TOTAL_TIME_ENABLED", FORMAT_TOTAL_TIME_ENABLED),
            ("PERF_FORMAT_TOTAL_TIME_RUNNING", FORMAT_TOTAL_TIME_RUNNING),
            ("PERF_FORMAT_ID", FORMAT_ID),
            ("PERF_FORMAT_GROUP", FORMAT_GROUP),
            ("PERF_FORMAT_LOST", FORMAT_LOST),
            ("PERF_TYPE_HARDWARE", u64::from(TYPE_HARDWARE)),
            ("PERF_TYPE_SOFTWARE", u64::from(TYPE_SOFTWARE)),
            ("PERF_TYPE_TRACEPOINT", u64::from(TYPE_TRACEPOINT)),
            ("PERF_TYPE_HW_CACHE", u64::from(TYPE_HW_CACHE)),
            ("PERF_TYPE_RAW", u64::from(TYPE_RAW)),
            ("PERF_TYPE_BREAKPOINT", u64::from(TYPE_BREAKPOINT)),
        ] {
            c += &format!("printf(\"const.{name} %lld\\n\", (long long)({name}));\n");
            expected.insert(format!("const.{name}"), value as i64);
        }
        c += "return 0; }\n";
        let source = dir.join("layout.c");
        let binary = dir.join("layout");
        std::fs::write(&source, c).unwrap();
        let compiled = std::process::Command::new("cc")
            .arg("-o")
            .arg(&binary)
            .arg(&source)
            .output();
        let compiled = match compiled {
            Ok(out) => out,
            Err(e) => {
                skip!(Need::Tools, "no C compiler (`cc`): {e}");
            }
        };
        assert!(
            compiled.status.success(),
            "{}",
            String::from_utf8_lossy(&compiled.stderr)
        );
        let output = std::process::Command::new(&binary).output().unwrap();
        let text = String::from_utf8(output.stdout).unwrap();
        let mut seen = std::collections::BTreeMap::new();
        for line in text.lines() {
            let (name, value) = line.split_once(' ').unwrap();
            seen.insert(name.to_string(), value.parse::<i64>().unwrap());
        }
        for (name, value) in &expected {
            assert_eq!(seen.get(name), Some(value), "{name}");
        }
        assert_eq!(seen["page_size"], size_of::<PerfEventMmapPage>() as i64);
        assert_eq!(seen["ver7"], i64::from(ATTR_SIZE_VER7));
        match seen.get("ver8") {
            // The header knows VER8: all of ours must match it.
            Some(ver8) => {
                assert_eq!(*ver8, i64::from(ATTR_SIZE_VER8));
                assert_eq!(
                    seen["attr.config3"],
                    offset_of!(PerfEventAttr, config3) as i64
                );
            }
            // An older header: ours is exactly its struct plus config3.
            None => {
                assert_eq!(seen["attr_size"], i64::from(ATTR_SIZE_VER7));
                assert_eq!(offset_of!(PerfEventAttr, config3) as i64, seen["attr_size"]);
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
