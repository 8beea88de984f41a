//! `PAPI_profil` and `PAPI_sprofil` on the overflow machinery ([`crate::overflow`]): a
//! profiled event overflows every `threshold` events like `PAPI_overflow`'s, and each
//! overflow adds to the bucket of the interrupted address in the buffer whose offset is the
//! highest below it, as PAPI 7.0's `posix_profil` does: bucket `((pc - offset) * scale) >>
//! 17` (scale 65536 maps two bytes of text to a bucket), unless `offset` is 0 and `scale` 2
//! (every sample in bucket 0); 16-, 32- or 64-bit buckets (16 by default); `PAPI_PROFIL_RANDOM`
//! drops a quarter of the samples and `PAPI_PROFIL_COMPRESS` more as a bucket fills (PAPI's
//! generator), `PAPI_PROFIL_WEIGHTED` adds 1 (the excess PAPI weighs is not known here).
//!
//! Not as PAPI: PAPI 7.0 refuses profiling beyond the component's hardware counters
//! (`PAPI_ECNFLCT`, every time without a PMU); ours profiles what the backend can sample,
//! software events included.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::codes::EINVAL;

/// `PAPI_PROFIL_RANDOM`.
pub const RANDOM: i32 = 0x1;
/// `PAPI_PROFIL_WEIGHTED`.
pub const WEIGHTED: i32 = 0x2;
/// `PAPI_PROFIL_COMPRESS`.
pub const COMPRESS: i32 = 0x4;
/// `PAPI_PROFIL_BUCKET_16`.
pub const BUCKET_16: i32 = 0x8;
/// `PAPI_PROFIL_BUCKET_32`.
pub const BUCKET_32: i32 = 0x10;
/// `PAPI_PROFIL_BUCKET_64`.
pub const BUCKET_64: i32 = 0x20;
/// Every flag PAPI accepts (`FORCE_SW`, `DATA_EAR` and `INST_EAR` accepted and ignored).
const KNOWN: i32 =
    RANDOM | WEIGHTED | COMPRESS | BUCKET_16 | BUCKET_32 | BUCKET_64 | 0x40 | 0x80 | 0x100;

/// One `PAPI_sprofil_t`: the buffer's address and size in bytes, the text offset and scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// `pr_base`.
    pub base: usize,
    /// `pr_size`, in bytes.
    pub size: u32,
    /// `pr_off`.
    pub offset: usize,
    /// `pr_scale`.
    pub scale: u32,
}

/// A profiled event's buffers and flags (the bucket size settled).
#[derive(Clone, Debug)]
pub struct Profile {
    /// The buffers.
    pub buffers: Vec<Buffer>,
    /// The flags, with one bucket size.
    pub flags: i32,
}

/// Checks PAPI_sprofil's scale and flags; the profile with its bucket size settled.
pub fn settle(buffers: Vec<Buffer>, flags: i32) -> Result<Profile, i32> {
    // PAPI's scales: 131072, or 2 to 65536.
    if buffers
        .iter()
        .any(|b| !(b.scale == 131_072 || (2..=65_536).contains(&b.scale)))
    {
        return Err(EINVAL);
    }
    if flags & !KNOWN != 0 {
        return Err(EINVAL);
    }
    let flags = match flags & (BUCKET_16 | BUCKET_32 | BUCKET_64) {
        0 => flags | BUCKET_16,
        BUCKET_16 | BUCKET_32 | BUCKET_64 => flags,
        _ => return Err(EINVAL),
    };
    Ok(Profile { buffers, flags })
}

/// Where a sample at `pc` goes: the buffer (highest offset below `pc`, else the first), the
/// bucket's index and its width in bytes; `None` when it falls outside the buffer.
pub fn bucket(profile: &Profile, pc: usize) -> Option<(Buffer, usize, usize)> {
    let best = profile
        .buffers
        .iter()
        .enumerate()
        .filter(|(_, b)| b.offset < pc && b.offset > 0)
        .max_by_key(|(_, b)| b.offset)
        .map_or(0, |(i, _)| i);
    let buffer = *profile.buffers.get(best)?;
    if pc < buffer.offset {
        return None;
    }
    let index = if buffer.offset == 0 && buffer.scale == 2 {
        0
    } else {
        let scaled = ((pc - buffer.offset) as u128) * u128::from(buffer.scale);
        usize::try_from(scaled >> 17).ok()?
    };
    let width = if profile.flags & BUCKET_32 != 0 {
        4
    } else if profile.flags & BUCKET_64 != 0 {
        8
    } else {
        2
    };
    (index.checked_mul(width)? < buffer.size as usize).then_some((buffer, index, width))
}

/// PAPI's generator (`random_ushort`), which `PAPI_PROFIL_RANDOM` and `PAPI_PROFIL_COMPRESS`
/// draw from, in the process's one value beside the library's lock
/// (`unlocked::UNLOCKED`): drawn in the overflow signal's handler, for every sample.
pub struct Generator(AtomicU32);

impl Generator {
    /// PAPI's seed.
    pub(crate) const fn new() -> Self {
        Generator(AtomicU32::new(0xdead_beef))
    }

    /// The next draw (`random_ushort`).
    fn draw(&self) -> u16 {
        let next = self
            .0
            .load(Ordering::Relaxed)
            .wrapping_mul(1_664_525)
            .wrapping_add(1_013_904_223);
        self.0.store(next, Ordering::Relaxed);
        next as u16
    }

    /// How much a sample adds to a bucket now holding `value` (PAPI's `profil_increment`).
    pub fn increment(&self, flags: i32, value: u64) -> u64 {
        if flags & RANDOM != 0 && self.draw() <= u16::MAX / 4 {
            return 0;
        }
        if flags & COMPRESS != 0 && u64::from(self.draw()) < value {
            return 0;
        }
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(offset: usize, scale: u32, size: u32, flags: i32) -> Profile {
        settle(
            vec![Buffer {
                base: 0x1000,
                size,
                offset,
                scale,
            }],
            flags,
        )
        .unwrap()
    }

    /// PAPI 7.0's posix_profil arithmetic (extras.c): `((pc - off) * scale) >> 17`, the
    /// single-bucket case, the size check per bucket width.
    #[test]
    fn buckets_as_papi_computes_them() {
        let p = one(0x400000, 65_536, 1024, 0);
        assert_eq!(bucket(&p, 0x400000).map(|b| b.1), Some(0));
        assert_eq!(bucket(&p, 0x400003).map(|b| b.1), Some(1));
        assert_eq!(bucket(&p, 0x400000 + 1022).map(|b| b.1), Some(511));
        assert_eq!(bucket(&p, 0x400000 + 1024), None, "past 512 16-bit buckets");
        assert_eq!(bucket(&p, 0x3fffff), None, "below the offset");
        let p = one(0x400000, 131_072, 1024, BUCKET_32);
        assert_eq!(bucket(&p, 0x400005).map(|b| (b.1, b.2)), Some((5, 4)));
        let p = one(0, 2, 8, BUCKET_64);
        assert_eq!(bucket(&p, 0x7fff_0000).map(|b| b.1), Some(0));
    }

    /// PAPI_sprofil's checks: scales 2..=65536 or 131072, one bucket size, known flags.
    #[test]
    fn bad_scales_and_flags_are_refused() {
        let b = |scale| Buffer {
            base: 1,
            size: 2,
            offset: 0,
            scale,
        };
        assert_eq!(settle(vec![b(1)], 0).err(), Some(EINVAL));
        assert_eq!(settle(vec![b(65_537)], 0).err(), Some(EINVAL));
        assert_eq!(
            settle(vec![b(2)], BUCKET_16 | BUCKET_32).err(),
            Some(EINVAL)
        );
        assert_eq!(settle(vec![b(2)], 0x1000).err(), Some(EINVAL));
        assert_eq!(settle(vec![b(131_072)], 0).map(|p| p.flags), Ok(BUCKET_16));
    }
}
