//! Self-monitoring reads: the value and times of the calling thread's own event computed from
//! its mmap page and the `rdpmc` instruction, without a system call.
//!
//! The computation ([`self_monitored_read`]) is a pure function of a page (anything that
//! implements [`UserPage`]) and two closures standing for `rdpmc` and the time-stamp counter,
//! so it is tested against page images built in memory.

use counterhal_system::PmuDevices;
use std::borrow::Cow;

use counterhal_hal::{PerfAttr, Reading};

use crate::pmus::{self, FormatField};
use crate::sys::{TYPE_HARDWARE, TYPE_HW_CACHE, TYPE_RAW};

pub use crate::sys::{PageSnapshot, UserPage};

/// Whether an event of perf type `type_` counts on a core PMU (whose dynamic types are
/// `core_types`): perf's generic hardware and cache events, raw codes, or a core PMU's own
/// type. Only those have a hardware counter that user space could read; a software event's
/// page may still claim `cap_user_rdpmc` (Arm64's kernel reads that bit from hardware-event
/// state a software event does not have), so such events are never mapped for it.
pub fn on_core_pmu(type_: u32, core_types: &[u32]) -> bool {
    matches!(type_, TYPE_HARDWARE | TYPE_HW_CACHE | TYPE_RAW) || core_types.contains(&type_)
}

/// Arm64's user-space counter access, granted event by event: the core PMU's `rdpmc` format
/// (`config1:1`) names the bit an event sets to ask for it (the kernel also needs
/// `kernel.perf_user_access` 1). On x86 every event of a PMU whose `rdpmc` file allows it may
/// be read so, and the core PMU has no such format.
#[derive(Clone, Debug)]
pub struct UserAccess {
    /// The dynamic types of the core PMUs.
    core_types: Vec<u32>,
    /// Where the request bit goes.
    field: FormatField,
}

impl UserAccess {
    /// The core PMUs' `rdpmc` format under `devices`, if they have one.
    pub fn read(devices: &PmuDevices) -> Option<UserAccess> {
        Self::of(&pmus::core_pmus(devices))
    }

    /// The `rdpmc` format of `cores` (the core PMUs, as `pmus::core_pmus` lists them).
    pub fn of(cores: &[pmus::Pmu]) -> Option<UserAccess> {
        let field = cores
            .iter()
            .find_map(|pmu| pmu.format("rdpmc").ok().flatten())?;
        Some(UserAccess {
            core_types: cores.iter().map(|pmu| pmu.type_).collect(),
            field,
        })
    }

    /// `encoding` asking for user-space reads when it counts on a core PMU
    /// ([`on_core_pmu`]); unchanged otherwise.
    pub fn request<'a>(&self, encoding: Cow<'a, PerfAttr>) -> Cow<'a, PerfAttr> {
        if !on_core_pmu(encoding.type_, &self.core_types) {
            return encoding;
        }
        let mut asked = encoding.into_owned();
        // A value of 1 fits every field (a field has at least one bit), so this cannot fail.
        let _ = self.field.apply("rdpmc", 1, &mut asked);
        Cow::Owned(asked)
    }
}

/// Whether this architecture's kernel keeps a counter's page right across a reset.
///
/// On aarch64, Linux (6.1, the aarch64 lab's kernel) does not for a 32-bit event counter
/// reset while it counts: `PERF_EVENT_IOC_RESET` updates the event first, which stores the
/// counter's 32-bit value zero-extended as its base, and the page's offset is then taken from
/// that base, where user space sign-extends the counter as `perf_event.h` says to; every
/// user-space read after it is 2^32 short until the kernel next starts the counter (PAPI's
/// `ctests/first` on the lab read -4,194,966,436 instructions for 100,001,016). So there a
/// group checks its pages against the kernel's `read()` after each reset and enable, and reads
/// through the kernel while they disagree. x86 keeps its pages right.
pub const PAGES_KEPT_ACROSS_RESETS: bool = !cfg!(target_arch = "aarch64");

/// Whether user-space readings `user`, taken after the kernel's `kernel` of the same events,
/// agree with them: each at or a little past the kernel's (less than 2^31 apart, where a page
/// gone wrong is 2^32 off).
pub fn pages_agree(kernel: &[Reading], user: &[Reading]) -> bool {
    kernel
        .iter()
        .zip(user)
        .all(|(k, u)| u.value.wrapping_sub(k.value) < 1 << 31)
}

/// How many times the seqlock loop retries before giving up (and falling back to `read()`).
pub const MAX_RETRIES: u32 = 64;

/// Why a self-monitoring read could not give a value (the caller then uses `read()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// `cap_user_rdpmc` is off (no PMU, or rdpmc disabled in sysfs).
    NoRdpmc,
    /// `index` is 0: the event is not on a counter now (disabled, or multiplexed out).
    NotOnCounter,
    /// `cap_user_time` is off, so the times in the page may be stale.
    NoUserTime,
    /// The instruction is not available on this architecture.
    NoInstruction,
    /// The page kept changing for [`MAX_RETRIES`] tries.
    Contended,
    /// The page reports a counter width outside 1..=64.
    BadWidth,
}

/// `value` of `width` bits sign-extended to 64 bits (a width outside 1..=64 is taken as 64).
pub fn sign_extend(value: u64, width: u16) -> i64 {
    if width == 0 || width >= 64 {
        return value as i64;
    }
    let shift = 64 - u32::from(width);
    ((value << shift) as i64) >> shift
}

/// The nanoseconds elapsed since the page's last update, from a TSC value, as the header's
/// comment on `time_shift`/`time_mult`/`time_offset` (and `cap_user_time_short`) says.
pub fn time_delta(page: &PageSnapshot, tsc: u64) -> u64 {
    let cycles = if page.user_time_short() {
        page.time_cycles
            .wrapping_add(tsc.wrapping_sub(page.time_cycles) & page.time_mask)
    } else {
        tsc
    };
    let shift = u32::from(page.time_shift).min(63);
    let mult = u64::from(page.time_mult);
    let quotient = cycles >> shift;
    let remainder = cycles & ((1u64 << shift) - 1);
    page.time_offset
        .wrapping_add(quotient.wrapping_mul(mult))
        .wrapping_add(remainder.wrapping_mul(mult) >> shift)
}

/// Computes the event's reading from its page, reading the counter with `rdpmc(index - 1)` and
/// the time-stamp counter with `tsc`, inside the seqlock loop; or says why it cannot.
pub fn self_monitored_read<P, R, T>(page: &P, mut rdpmc: R, mut tsc: T) -> Result<Reading, Fallback>
where
    P: UserPage + ?Sized,
    R: FnMut(u32) -> Option<u64>,
    T: FnMut() -> Option<u64>,
{
    for _ in 0..MAX_RETRIES {
        let sequence = page.lock();
        let snapshot = page.snapshot();
        if !snapshot.user_rdpmc() {
            return Err(Fallback::NoRdpmc);
        }
        if snapshot.index == 0 {
            return Err(Fallback::NotOnCounter);
        }
        if !snapshot.user_time() {
            return Err(Fallback::NoUserTime);
        }
        if snapshot.pmc_width == 0 || snapshot.pmc_width > 64 {
            return Err(Fallback::BadWidth);
        }
        let Some(raw) = rdpmc(snapshot.index - 1) else {
            return Err(Fallback::NoInstruction);
        };
        let Some(now) = tsc() else {
            return Err(Fallback::NoInstruction);
        };
        if page.lock() != sequence || sequence % 2 == 1 {
            continue;
        }
        let value = snapshot
            .offset
            .wrapping_add(sign_extend(raw, snapshot.pmc_width)) as u64;
        let delta = time_delta(&snapshot, now);
        return Ok(Reading {
            value,
            time_enabled: snapshot.time_enabled.wrapping_add(delta),
            time_running: snapshot.time_running.wrapping_add(delta),
        });
    }
    Err(Fallback::Contended)
}

#[cfg(test)]
mod tests {
    #[test]
    fn arm64_events_on_the_core_pmu_ask_for_user_access() {
        use super::*;
        use crate::sys::TYPE_SOFTWARE;
        let fixture = |name: &str| {
            PmuDevices::at(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name))
        };
        let devices = fixture("tests/data/sysfs-arm");
        let access = UserAccess::read(&devices).expect("armv8_pmuv3 has format/rdpmc");
        let asked = |type_: u32| {
            access
                .request(Cow::Owned(PerfAttr::new(type_, 0x08)))
                .config1
        };
        // config1 bit 1, as the format file says, for hardware, cache, raw and the PMU's own
        // type; nothing for a software event.
        assert_eq!(asked(TYPE_HARDWARE), 0b10);
        assert_eq!(asked(TYPE_HW_CACHE), 0b10);
        assert_eq!(asked(TYPE_RAW), 0b10);
        assert_eq!(asked(8), 0b10);
        assert_eq!(asked(TYPE_SOFTWARE), 0);
        // Only events on a core PMU have a counter to read: a software event or a tracepoint
        // never does, whatever its page claims.
        assert!(on_core_pmu(TYPE_HARDWARE, &[]) && on_core_pmu(8, &[8]));
        assert!(!on_core_pmu(TYPE_SOFTWARE, &[8]) && !on_core_pmu(2, &[8]));
        // x86's core PMU (the hybrid fixture) has no such format: nothing to ask for.
        let x86 = fixture("tests/data/sysfs-hybrid");
        assert!(UserAccess::read(&x86).is_none());
    }

    use std::cell::{Cell, RefCell};

    use super::*;
    use crate::sys::{PerfEventMmapPage, cap_bit};

    /// A page image in memory; `tear` makes the lock change between the first `n` pairs of
    /// lock reads, and `updates` rewrites the image when it tears (a concurrent update).
    struct ImagePage {
        image: RefCell<PerfEventMmapPage>,
        lock_reads: Cell<u32>,
        tears: Cell<u32>,
        update: Option<fn(&mut PerfEventMmapPage)>,
    }

    impl ImagePage {
        fn new(image: PerfEventMmapPage) -> Self {
            Self {
                image: RefCell::new(image),
                lock_reads: Cell::new(0),
                tears: Cell::new(0),
                update: None,
            }
        }
    }

    impl UserPage for ImagePage {
        fn lock(&self) -> u32 {
            let reads = self.lock_reads.get() + 1;
            self.lock_reads.set(reads);
            // The second read of each pair sees a new lock while tears remain.
            if reads.is_multiple_of(2) && self.tears.get() > 0 {
                self.tears.set(self.tears.get() - 1);
                let mut image = self.image.borrow_mut();
                image.lock += 2;
                if let Some(update) = self.update {
                    update(&mut image);
                }
                return image.lock;
            }
            self.image.borrow().lock
        }
        fn snapshot(&self) -> PageSnapshot {
            self.image.borrow().snapshot()
        }
    }

    const RDPMC_AND_TIME: u64 = (1 << cap_bit::USER_RDPMC) | (1 << cap_bit::USER_TIME);

    fn page(width: u16, index: u32, offset: i64) -> PerfEventMmapPage {
        PerfEventMmapPage {
            lock: 4,
            index,
            offset,
            time_enabled: 1_000,
            time_running: 800,
            capabilities: RDPMC_AND_TIME | (1 << cap_bit::BIT0_IS_DEPRECATED),
            pmc_width: width,
            // 1 ns per cycle: mult = 1 << shift.
            time_shift: 10,
            time_mult: 1 << 10,
            time_offset: 0,
            ..Default::default()
        }
    }

    #[test]
    fn sign_extension_at_40_and_48_bits() {
        assert_eq!(sign_extend(0x7f_ffff_ffff, 40), 0x7f_ffff_ffff);
        assert_eq!(sign_extend(0xff_ffff_ffff, 40), -1);
        assert_eq!(sign_extend(0x80_0000_0000, 40), -(1 << 39));
        assert_eq!(sign_extend(0xffff_ffff_fff0, 48), -16);
        assert_eq!(sign_extend(0x7fff_ffff_ffff, 48), (1 << 47) - 1);
        // Bits above the width are ignored.
        assert_eq!(sign_extend(0xdead_0000_0000_0005, 48), 5);
        assert_eq!(sign_extend(u64::MAX, 64), -1);
    }

    #[test]
    fn value_is_offset_plus_counter_and_times_extrapolate() {
        let image = ImagePage::new(page(48, 3, 1_000_000));
        let mut asked = None;
        let reading = self_monitored_read(
            &image,
            |counter| {
                asked = Some(counter);
                Some(250)
            },
            || Some(5_000),
        )
        .unwrap();
        assert_eq!(asked, Some(2), "rdpmc reads counter index - 1");
        assert_eq!(reading.value, 1_000_250);
        assert_eq!(reading.time_enabled, 1_000 + 5_000);
        assert_eq!(reading.time_running, 800 + 5_000);
    }

    #[test]
    fn negative_counter_value_with_width_40() {
        // The kernel starts counters at -period; offset compensates.
        let image = ImagePage::new(page(40, 1, 10_000 + (1 << 39)));
        let raw = (1u64 << 40) - (1 << 39) + 7; // -(2^39) + 7 in 40 bits
        let reading = self_monitored_read(&image, |_| Some(raw), || Some(0)).unwrap();
        assert_eq!(reading.value, 10_007);
    }

    #[test]
    fn offsets_crossing_2_pow_48() {
        // offset just below 2^48, counter positive: the sum crosses 2^48.
        let image = ImagePage::new(page(48, 1, (1 << 48) - 10));
        let reading = self_monitored_read(&image, |_| Some(25), || Some(0)).unwrap();
        assert_eq!(reading.value, (1 << 48) + 15);
        // offset above 2^48, counter negative in 48 bits.
        let image = ImagePage::new(page(48, 1, (1 << 48) + 100));
        let reading = self_monitored_read(&image, |_| Some(0xffff_ffff_fff0), || Some(0)).unwrap();
        assert_eq!(reading.value, (1 << 48) + 84);
        // The raw register's bits above 48 are ignored.
        let reading =
            self_monitored_read(&image, |_| Some(0xffff_0000_0000_0001), || Some(0)).unwrap();
        assert_eq!(reading.value, (1 << 48) + 101);
    }

    #[test]
    fn index_zero_falls_back() {
        let image = ImagePage::new(page(48, 0, 5));
        let result = self_monitored_read(&image, |_| panic!("must not rdpmc"), || Some(0));
        assert_eq!(result, Err(Fallback::NotOnCounter));
    }

    #[test]
    fn rdpmc_capability_off_falls_back() {
        let mut p = page(48, 2, 5);
        p.capabilities = 1 << cap_bit::USER_TIME;
        let result = self_monitored_read(&ImagePage::new(p), |_| Some(1), || Some(0));
        assert_eq!(result, Err(Fallback::NoRdpmc));
        let mut p = page(48, 2, 5);
        p.capabilities = 1 << cap_bit::USER_RDPMC;
        let result = self_monitored_read(&ImagePage::new(p), |_| Some(1), || Some(0));
        assert_eq!(result, Err(Fallback::NoUserTime));
        let result = self_monitored_read(&ImagePage::new(page(0, 2, 5)), |_| Some(1), || Some(0));
        assert_eq!(result, Err(Fallback::BadWidth));
        let result = self_monitored_read(&ImagePage::new(page(48, 2, 5)), |_| None, || Some(0));
        assert_eq!(result, Err(Fallback::NoInstruction));
    }

    #[test]
    fn torn_update_is_retried_and_uses_the_new_values() {
        let mut image = ImagePage::new(page(48, 1, 100));
        image.tears.set(2);
        image.update = Some(|p| {
            p.offset += 1_000;
            p.time_enabled += 10;
        });
        let mut rdpmc_calls = 0;
        let reading = self_monitored_read(
            &image,
            |_| {
                rdpmc_calls += 1;
                Some(1)
            },
            || Some(0),
        )
        .unwrap();
        assert_eq!(rdpmc_calls, 3, "two torn tries and one good one");
        assert_eq!(reading.value, 100 + 2_000 + 1);
        assert_eq!(reading.time_enabled, 1_000 + 20);
        assert_eq!(image.image.borrow().lock, 8);
    }

    #[test]
    fn endless_tearing_gives_up() {
        let image = ImagePage::new(page(48, 1, 100));
        image.tears.set(u32::MAX);
        assert_eq!(
            self_monitored_read(&image, |_| Some(1), || Some(0)),
            Err(Fallback::Contended)
        );
        // An odd (in-progress) lock that never changes is also not trusted.
        let mut odd = page(48, 1, 100);
        odd.lock = 5;
        assert_eq!(
            self_monitored_read(&ImagePage::new(odd), |_| Some(1), || Some(0)),
            Err(Fallback::Contended)
        );
    }

    #[test]
    fn time_conversion_with_mult_shift_and_short_counter() {
        // 3 GHz TSC: ns = cycles * (1/3), as mult/2^shift.
        let mut p = page(48, 1, 0).snapshot();
        p.time_shift = 31;
        p.time_mult = ((1u64 << 31) / 3) as u32;
        p.time_offset = 100;
        let delta = time_delta(&p, 3_000_000_000);
        assert!((delta as i64 - (100 + 1_000_000_000)).abs() < 2, "{delta}");
        // With cap_user_time_short the counter is 32 bits wide and wrapped past time_cycles.
        p.capabilities |= 1 << cap_bit::USER_TIME_SHORT;
        p.time_shift = 0;
        p.time_mult = 1;
        p.time_offset = 0;
        p.time_cycles = 0xffff_fff0;
        p.time_mask = 0xffff_ffff;
        // The short counter wrapped: raw 0x10 means 0x20 cycles after time_cycles.
        assert_eq!(time_delta(&p, 0x10), 0xffff_fff0 + 0x20);
        // A large shift does not overflow.
        p.time_shift = 63;
        let _ = time_delta(&p, u64::MAX);
    }

    #[test]
    fn pages_agree_unless_a_reading_is_2_pow_32_off() {
        let at = |value| Reading {
            value,
            time_enabled: 1,
            time_running: 1,
        };
        assert!(super::pages_agree(&[at(100), at(7)], &[at(100), at(9)]));
        // The lab's case: 2^32 short after a reset.
        let short = 100_001_016u64.wrapping_sub(1 << 32);
        assert!(!super::pages_agree(&[at(100_000_000)], &[at(short)]));
        // Behind the kernel's earlier read: wrong too.
        assert!(!super::pages_agree(&[at(100)], &[at(99)]));
        // Long counts agree as short ones do.
        assert!(super::pages_agree(&[at(5 << 32)], &[at((5 << 32) + 3)]));
    }
}
