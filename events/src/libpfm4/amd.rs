//! libpfm4's AMD encoder, as `pfm_amd64_get_encoding` and `amd64_add_defaults` in
//! `lib/pfmlib_amd64.c` (4.13) encode a parsed event for `PFM_OS_NONE`: unit masks ORed
//! unless one of a group is `NCOMBO`, each group none was named from gets its defaults (an
//! error unless every mask of the group may be omitted), a raw unit mask of 8 bits, and
//! the modifiers `k u e i c h g` (`h` host, `g` guest: EVTSEL bits 41 and 40).

use super::grammar::{Attr, AttrRef, Desc, Pfm, PfmError, fail};
use super::table::flag;
use super::{Encoded, Second};

const K: u8 = 0;
const U: u8 = 1;
const E: u8 = 2;
const I: u8 = 3;
const C: u8 = 4;
const H: u8 = 5;
const G: u8 = 6;

const MAX_GRP: usize = 4;

fn set(reg: &mut u64, bit: u64, on: bool) {
    if on {
        *reg |= bit;
    } else {
        *reg &= !bit;
    }
}

/// Encodes `desc` as libpfm4 does for `PFM_OS_NONE` with the default privilege levels
/// user and kernel.
pub(crate) fn encode(mut desc: Desc<'_>) -> Result<Encoded, PfmError> {
    let event = desc.event;
    let grpmsk = (1u32 << event.ngrp()) - 1;
    let mut reg = 0u64;
    if event.has(flag::IBSFE) || event.has(flag::IBSOP) {
        // IBS "events" enable IBS, not a counter: bit 48 of the IBS control.
        reg |= 1 << if event.has(flag::IBSFE) { 48 } else { 17 };
    } else {
        reg |= event.code() & 0xff | ((event.code() >> 8) & 0xf) << 32;
        reg |= (1 << 22) | (1 << 20);
    }
    let (mut umask, mut ugrpmsk, mut plmmsk) = (0u64, 0u32, 0u32);
    let (mut grpcounts, mut ncombo) = ([0u32; MAX_GRP], [false; MAX_GRP]);
    for attr in desc.attrs.clone() {
        match attr.what {
            AttrRef::Umask(index) => {
                let u = event.umask(index);
                let g = (u.grpid() as usize).min(MAX_GRP - 1);
                grpcounts[g] += 1;
                if u.has(flag::NCOMBO) {
                    ncombo[g] = true;
                }
                if grpcounts[g] > 1 && ncombo[g] {
                    return fail(
                        Pfm::FeatComb,
                        format!(
                            "unit mask `{}` of `{}` does not combine with another of its group",
                            u.name(),
                            event.name()
                        ),
                    );
                }
                umask |= u.code();
                ugrpmsk |= 1u32.wrapping_shl(u.grpid());
            }
            AttrRef::Raw(value) => {
                if value & !0xff != 0 {
                    return fail(
                        Pfm::Attr,
                        format!("raw unit mask {value:#x} is wider than 8 bits"),
                    );
                }
                umask = value;
                ugrpmsk = grpmsk;
            }
            AttrRef::Modifier(m) => {
                let v = attr.value;
                match m {
                    I => set(&mut reg, 1 << 23, v != 0),
                    E => set(&mut reg, 1 << 18, v != 0),
                    C => {
                        if v > 255 {
                            return fail(
                                Pfm::AttrVal,
                                format!("counter mask c={v}: the range is 0..=255"),
                            );
                        }
                        reg = (reg & !(0xff << 24)) | v << 24;
                    }
                    U => set(&mut reg, 1 << 16, v != 0),
                    K => set(&mut reg, 1 << 17, v != 0),
                    G => set(&mut reg, 1 << 40, v != 0),
                    H => set(&mut reg, 1 << 41, v != 0),
                    _ => {}
                }
                if matches!(m, U | K | G | H) {
                    plmmsk |= 1 << m;
                }
            }
        }
    }
    if plmmsk & ((1 << K) | (1 << U) | (1 << H)) == 0 {
        reg |= (1 << 17) | (1 << 16);
    }
    if ugrpmsk != grpmsk {
        let mut missing = ugrpmsk ^ grpmsk;
        let mut group = 0u32;
        while missing != 0 {
            if missing & 1 != 0 {
                let (mut added, mut omit, mut in_group) = (0, 0, 0);
                for (index, u) in event.umasks().iter().enumerate() {
                    if u.grpid() != group {
                        continue;
                    }
                    in_group += 1;
                    if u.has(flag::DFL) {
                        umask |= u.code();
                        desc.attrs.push(Attr {
                            what: AttrRef::Umask(index),
                            value: 0,
                        });
                        added += 1;
                    }
                    if u.has(flag::OMIT) {
                        omit += 1;
                    }
                }
                if added == 0 && omit != in_group {
                    return fail(
                        Pfm::Umask,
                        format!(
                            "`{}` needs a unit mask of group {group}: it has no default",
                            event.name()
                        ),
                    );
                }
            }
            missing >>= 1;
            group += 1;
        }
    }
    reg = (reg & !0xff00) | (umask & 0xff) << 8;
    Ok(Encoded {
        register: reg,
        second: None::<Second>,
        levels_given: plmmsk & ((1 << K) | (1 << U) | (1 << H)) != 0,
        cntmsk: 0,
    })
}
