//! libpfm4's Intel encoder, as `pfm_intel_x86_encode_gen` and `pfm_intel_x86_add_defaults`
//! in `lib/pfmlib_intel_x86.c` (4.13) encode a parsed event for `PFM_OS_NONE`: unit masks by
//! their groups (`NCOMBO` refuses two of one group; `GRP_EXCL` one group only; `EXCL_GRP_GT`
//! refuses later groups; `EXCL_GRP_BUT_0` all but group 0 and its own; `GRP_REQ` needs
//! another group; each group no unit mask was named from gets its default unless it may stay
//! empty (`GRP_DFL_NONE`)), `CODE_OVERRIDE` unit masks replacing the event code, hard-wired
//! modifiers (`modhw`) that a modifier may repeat but not contradict, required modifiers,
//! the offcore-response, load-latency and frontend second registers, and "edge needs a counter
//! mask" where the PMU says so.

use super::grammar::{Attr, AttrRef, Desc, Pfm, PfmError, fail};
use super::table::flag;
use super::{Encoded, Second};

/// Modifier indices (`INTEL_X86_ATTR_*`).
const K: u8 = 0;
const U: u8 = 1;
const E: u8 = 2;
const I: u8 = 3;
const C: u8 = 4;
const T: u8 = 5;
const LDLAT: u8 = 6;
const INTX: u8 = 7;
const INTXCP: u8 = 8;
const FETHR: u8 = 9;

const MAX_GRPID: u32 = 0xffff;
const NUM_GRP: usize = 8;

/// Register bits.
const USR: u64 = 1 << 16;
const OS: u64 = 1 << 17;
const EDGE: u64 = 1 << 18;
const INT: u64 = 1 << 20;
const ANY: u64 = 1 << 21;
const EN: u64 = 1 << 22;
const INV: u64 = 1 << 23;
const CMASK_SHIFT: u32 = 24;
const IN_TX: u64 = 1 << 32;
const IN_TXCP: u64 = 1 << 33;

fn set(reg: &mut u64, bit: u64, on: bool) {
    if on {
        *reg |= bit;
    } else {
        *reg &= !bit;
    }
}

/// `pfm_intel_x86_add_defaults`: the defaults of the groups in `missing`, their codes ORed
/// into `umask2` and their attributes appended.
fn add_defaults(
    desc: &mut Desc<'_>,
    mut missing: u32,
    umask2: &mut u64,
    mut max_grpid: u32,
    excl_grp_but_0: Option<u32>,
) -> Result<(), PfmError> {
    let event = desc.event;
    let mut group = 0u32;
    while missing != 0 {
        if missing & 1 == 0 {
            missing >>= 1;
            group += 1;
            continue;
        }
        let (mut added, mut skip) = (0, false);
        for (index, umask) in event.umasks().iter().enumerate() {
            if umask.grpid() & 0xff != group {
                continue;
            }
            if max_grpid != MAX_GRPID && group > max_grpid {
                skip = true;
                continue;
            }
            if umask.has(flag::GRP_DFL_NONE) {
                skip = true;
                continue;
            }
            if excl_grp_but_0.is_some_and(|g| umask.grpid() != 0 && g != umask.grpid()) {
                skip = true;
                continue;
            }
            if umask.has(flag::DFL) {
                *umask2 |= umask.code() >> 8;
                desc.attrs.push(Attr {
                    what: AttrRef::Umask(index),
                    value: 0,
                });
                added += 1;
                if event.has(flag::GRP_EXCL) {
                    return Ok(());
                }
                if umask.has(flag::EXCL_GRP_GT) {
                    if max_grpid != MAX_GRPID {
                        return fail(Pfm::Umask, "two defaults exclude later groups");
                    }
                    max_grpid = umask.grpid();
                }
            }
        }
        if added == 0 && !skip {
            return fail(
                Pfm::Umask,
                format!(
                    "`{}` needs a unit mask of group {group}, which has no default: one of {}",
                    event.name(),
                    super::grammar::unit_mask_list(event, |u| u.grpid() & 0xff == group)
                ),
            );
        }
        missing >>= 1;
        group += 1;
    }
    Ok(())
}

/// Encodes `desc` as libpfm4 does for `PFM_OS_NONE` with the default privilege levels
/// user and kernel.
pub(crate) fn encode(mut desc: Desc<'_>) -> Result<Encoded, PfmError> {
    let event = desc.event;
    let pmu = desc.pmu;
    let mut reg = event.code();
    let grpmsk = (1u32 << event.ngrp()) - 1;
    let umask1 = (reg >> 8) & 0xff;
    let mut umask2 = 0u64;
    let mut modmsk_r = event.modmsk_req();
    let (mut modhw, mut plmmsk, mut umodmsk, mut ugrpmsk) = (0u32, 0u32, 0u32, 0u32);
    let mut last_ucode: Option<u64> = None;
    let (mut max_grpid, mut last_grpid) = (MAX_GRPID, MAX_GRPID);
    let mut max_req_grpid: Option<u32> = None;
    let mut req_grps = [false; NUM_GRP];
    let (mut grpcounts, mut ncombo) = ([0u32; NUM_GRP], [false; NUM_GRP]);
    let (mut ldlat, mut ldlat_um, mut fe_thr, mut fe_thr_um) = (0u64, false, 0u64, false);
    let mut excl_grp_but_0: Option<u32> = None;
    let combine = |why: String| fail::<Encoded>(Pfm::FeatComb, why);
    for attr in desc.attrs.clone() {
        match attr.what {
            AttrRef::Umask(index) => {
                let umask = &event.umasks()[index];
                let grpid = umask.grpid() & 0xff;
                let req_grpid = (umask.grpid() >> 8) & 0xff;
                if last_grpid != MAX_GRPID && grpid != last_grpid && event.has(flag::GRP_EXCL) {
                    return combine(format!(
                        "`{}` takes unit masks of one group only (`{}` is of another)",
                        event.name(),
                        umask.name()
                    ));
                }
                if umask.has(flag::EXCL_GRP_GT) {
                    max_grpid = grpid;
                }
                if umask.has(flag::EXCL_GRP_BUT_0) {
                    excl_grp_but_0 = Some(grpid);
                }
                let g = (grpid as usize).min(NUM_GRP - 1);
                grpcounts[g] += 1;
                if umask.has(flag::GRP_REQ) {
                    max_req_grpid = Some(max_req_grpid.map_or(req_grpid, |m| m.max(req_grpid)));
                    req_grps[(req_grpid as usize).min(NUM_GRP - 1)] = true;
                }
                if umask.has(flag::NCOMBO) {
                    ncombo[g] = true;
                }
                ldlat_um |= umask.has(flag::LDLAT);
                fe_thr_um |= umask.has(flag::FETHR);
                if grpcounts[g] > 1 && ncombo[g] {
                    let group: Vec<&str> = desc
                        .attrs
                        .iter()
                        .filter_map(|a| match a.what {
                            AttrRef::Umask(i) if event.umasks()[i].grpid() & 0xff == grpid => {
                                Some(event.umasks()[i].name())
                            }
                            _ => None,
                        })
                        .collect();
                    let alone = group
                        .iter()
                        .copied()
                        .find(|n| {
                            event
                                .umasks()
                                .iter()
                                .any(|u| u.name() == *n && u.has(flag::NCOMBO))
                        })
                        .unwrap_or(umask.name());
                    return combine(format!(
                        "unit mask `{alone}` of `{}` is not combined with another of its group ({}); name one of them",
                        event.name(),
                        group.join(", ")
                    ));
                }
                last_grpid = grpid;
                modhw |= umask.modhw();
                umask2 |= umask.code() >> 8;
                // libpfm4 shifts by the whole grpid, group-required bits too; x86 takes the count
                // modulo 32.
                ugrpmsk |= 1u32.wrapping_shl(umask.grpid());
                modmsk_r |= umask.modmsk_req();
                if umask.has(flag::CODE_OVERRIDE) {
                    let code = umask.code() & 0xff;
                    if last_ucode.is_some_and(|last| last != code) {
                        return combine(format!(
                            "unit masks of `{}` that select two event codes",
                            event.name()
                        ));
                    }
                    last_ucode = Some(code);
                    reg = (reg & !0xff) | code;
                }
            }
            AttrRef::Raw(value) => {
                let bits = if event.has(flag::NHM_OFFCORE) {
                    if pmu.name() == "wsm" || pmu.name() == "wsm_dp" {
                        16
                    } else {
                        38
                    }
                } else {
                    8
                };
                if value >> bits != 0 {
                    return fail(
                        Pfm::Attr,
                        format!("raw unit mask {value:#x} is wider than {bits} bits"),
                    );
                }
                umask2 = value;
                ugrpmsk = grpmsk;
            }
            AttrRef::Modifier(m) => {
                let v = attr.value;
                match m {
                    I => set(&mut reg, INV, v != 0),
                    E => set(&mut reg, EDGE, v != 0),
                    C => {
                        if v > 255 {
                            return fail(
                                Pfm::AttrVal,
                                format!("counter mask c={v}: the range is 0..=255"),
                            );
                        }
                        reg = (reg & !(0xff << CMASK_SHIFT)) | v << CMASK_SHIFT;
                    }
                    U => set(&mut reg, USR, v != 0),
                    K => set(&mut reg, OS, v != 0),
                    T => set(&mut reg, ANY, v != 0),
                    LDLAT => {
                        if !(1..=65535).contains(&v) {
                            return fail(
                                Pfm::AttrVal,
                                format!("ldlat={v}: the range is 1..=65535"),
                            );
                        }
                        ldlat = v;
                    }
                    INTX => set(&mut reg, IN_TX, v != 0),
                    INTXCP => set(&mut reg, IN_TXCP, v != 0),
                    FETHR => {
                        if !(1..=4095).contains(&v) {
                            return fail(
                                Pfm::AttrVal,
                                format!("fe_thres={v}: the range is 1..=4095"),
                            );
                        }
                        fe_thr = v;
                    }
                    _ => {}
                }
                if m == U || m == K {
                    plmmsk |= 1 << m;
                }
                if m != LDLAT {
                    umodmsk |= 1 << m;
                }
            }
        }
    }
    if let Some(max) = max_req_grpid {
        for (x, required) in req_grps.iter().enumerate().take(max as usize + 1) {
            if *required && ugrpmsk & (1 << x) == 0 {
                return combine(format!("`{}` needs a unit mask of group {x}", event.name()));
            }
        }
    }
    // Modifiers a unit mask hard-wires may be repeated, not contradicted.
    let reg2 = (umask1 | umask2) << 8;
    for (m, bits) in [
        (I, INV),
        (E, EDGE),
        (C, 0xff << CMASK_SHIFT),
        (U, USR),
        (K, OS),
        (T, ANY),
        (INTX, IN_TX),
        (INTXCP, IN_TXCP),
    ] {
        if modhw & umodmsk & (1 << m) != 0 && reg2 & bits != reg & bits {
            return fail(
                Pfm::AttrSet,
                "a modifier contradicts the value its unit mask sets",
            );
        }
    }
    if plmmsk & ((1 << K) | (1 << U)) == 0 {
        reg |= OS | USR;
    }
    if (ugrpmsk != grpmsk && !event.has(flag::GRP_EXCL)) || ugrpmsk == 0 {
        add_defaults(
            &mut desc,
            ugrpmsk ^ grpmsk,
            &mut umask2,
            max_grpid,
            excl_grp_but_0,
        )?;
    }
    let names = |test: &dyn Fn(&super::table::Umask) -> bool| -> String {
        let named: Vec<&str> = desc
            .attrs
            .iter()
            .filter_map(|a| match a.what {
                AttrRef::Umask(i) if test(&event.umasks()[i]) => Some(event.umasks()[i].name()),
                _ => None,
            })
            .collect();
        named.join(", ")
    };
    if let Some(own) = excl_grp_but_0
        && (1..NUM_GRP).any(|k| grpcounts[k] != 0 && k as u32 != own)
    {
        return combine(format!(
            "`{}`: `{}` takes the request unit masks (group 0) and those of its own group only, not `{}`",
            event.name(),
            names(&|u| u.has(flag::EXCL_GRP_BUT_0)),
            names(&|u| u.grpid() & 0xff != own && u.grpid() != 0)
        ));
    }
    if max_grpid != MAX_GRPID {
        let later = names(&|u| u.grpid() > max_grpid);
        if !later.is_empty() {
            return combine(format!(
                "`{}`: `{}` excludes the groups after its own, so not `{later}`; name one or the other",
                event.name(),
                names(&|u| u.has(flag::EXCL_GRP_GT) && u.grpid() <= max_grpid)
            ));
        }
    }
    if modmsk_r != 0 && umodmsk ^ modmsk_r != 0 {
        return fail(
            Pfm::Attr,
            format!("`{}` needs its required modifiers", event.name()),
        );
    }
    if event.has(flag::FRONTEND) && fe_thr_um {
        let from_umask = (umask2 >> 8) & 0xfff;
        if from_umask != 0 {
            if modhw & umodmsk & (1 << FETHR) != 0 {
                if fe_thr != from_umask {
                    return fail(Pfm::AttrSet, "fe_thres contradicts its unit mask's");
                }
            } else {
                fe_thr = from_umask;
            }
        } else if fe_thr == 0 {
            fe_thr = 1;
        }
        umask2 = (umask2 & !(0xfff << 8)) | fe_thr << 8;
    }
    let mut second = None;
    if event.has(flag::NHM_OFFCORE) || event.has(flag::FRONTEND) {
        second = Some(if event.has(flag::NHM_OFFCORE) {
            Second::Offcore(umask2)
        } else {
            Second::Frontend(umask2)
        });
        umask2 = 0;
    }
    if ldlat != 0 && !ldlat_um {
        return fail(
            Pfm::Attr,
            format!(
                "ldlat= applies to `{}`'s load-latency unit masks only",
                event.name()
            ),
        );
    }
    if ldlat_um {
        second = Some(Second::LoadLatency(if ldlat == 0 { 3 } else { ldlat }));
    }
    reg |= (umask1 | umask2) << 8;
    reg |= EN | INT;
    if pmu.ecmask && reg & EDGE != 0 && (reg >> CMASK_SHIFT) & 0xff == 0 {
        return fail(
            Pfm::Attr,
            format!("edge (e) needs a counter mask c>=1 on PMU `{}`", pmu.name()),
        );
    }
    let cntmsk = desc
        .attrs
        .iter()
        .filter_map(|a| match a.what {
            AttrRef::Umask(i) => Some(event.umasks()[i].cntmsk()).filter(|c| *c != 0),
            _ => None,
        })
        .fold(event.cntmsk(), |mask, c| mask & c);
    Ok(Encoded {
        register: reg,
        second,
        levels_given: plmmsk != 0,
        cntmsk,
    })
}
