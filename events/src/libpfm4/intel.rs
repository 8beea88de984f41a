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
                    super::grammar::unit_mask_list(&event, |u| u.grpid() & 0xff == group)
                ),
            );
        }
        missing >>= 1;
        group += 1;
    }
    Ok(())
}

/// What the attributes of an event string set, gathered as `pfm_intel_x86_encode_gen` gathers
/// them (its variables' names kept), before the checks and defaults that need them all.
struct Gathered {
    /// The event-select register so far.
    reg: u64,
    /// The unit-mask bits above the first byte, and the second register's bits.
    umask2: u64,
    /// The modifiers required (by the event and its unit masks).
    modmsk_r: u32,
    /// The modifiers the unit masks hard-wire.
    modhw: u32,
    /// The privilege-level modifiers given.
    plmmsk: u32,
    /// The modifiers given.
    umodmsk: u32,
    /// The unit-mask groups named.
    ugrpmsk: u32,
    last_ucode: Option<u64>,
    max_grpid: u32,
    last_grpid: u32,
    max_req_grpid: Option<u32>,
    req_grps: [bool; NUM_GRP],
    grpcounts: [u32; NUM_GRP],
    ncombo: [bool; NUM_GRP],
    ldlat: u64,
    ldlat_um: bool,
    fe_thr: u64,
    fe_thr_um: bool,
    excl_grp_but_0: Option<u32>,
}

/// A refusal of a combination of unit masks or modifiers (`PFM_ERR_FEATCOMB`).
fn combine<T>(why: String) -> Result<T, PfmError> {
    fail(Pfm::FeatComb, why)
}

/// Encodes `desc` as libpfm4 does for `PFM_OS_NONE` with the default privilege levels
/// user and kernel.
pub(crate) fn encode(mut desc: Desc<'_>) -> Result<Encoded, PfmError> {
    let event = desc.event;
    let pmu = desc.pmu;
    let grpmsk = (1u32 << event.ngrp()) - 1;
    let umask1 = (event.code() >> 8) & 0xff;
    let mut g = Gathered {
        reg: event.code(),
        umask2: 0,
        modmsk_r: event.modmsk_req(),
        modhw: 0,
        plmmsk: 0,
        umodmsk: 0,
        ugrpmsk: 0,
        last_ucode: None,
        max_grpid: MAX_GRPID,
        last_grpid: MAX_GRPID,
        max_req_grpid: None,
        req_grps: [false; NUM_GRP],
        grpcounts: [0; NUM_GRP],
        ncombo: [false; NUM_GRP],
        ldlat: 0,
        ldlat_um: false,
        fe_thr: 0,
        fe_thr_um: false,
        excl_grp_but_0: None,
    };
    for attr in &desc.attrs {
        match attr.what {
            AttrRef::Umask(index) => g.umask(&desc, index)?,
            AttrRef::Raw(value) => g.raw(&desc, value, grpmsk)?,
            AttrRef::Modifier(m) => g.modifier(m, attr.value)?,
        }
    }
    g.check_required_groups(&desc)?;
    g.check_hardwired(umask1)?;
    if g.plmmsk & ((1 << K) | (1 << U)) == 0 {
        g.reg |= OS | USR;
    }
    if (g.ugrpmsk != grpmsk && !event.has(flag::GRP_EXCL)) || g.ugrpmsk == 0 {
        add_defaults(
            &mut desc,
            g.ugrpmsk ^ grpmsk,
            &mut g.umask2,
            g.max_grpid,
            g.excl_grp_but_0,
        )?;
    }
    g.check_exclusions(&desc)?;
    if g.modmsk_r != 0 && g.umodmsk ^ g.modmsk_r != 0 {
        return fail(
            Pfm::Attr,
            format!("`{}` needs its required modifiers", event.name()),
        );
    }
    let second = g.second_register(&desc)?;
    g.reg |= (umask1 | g.umask2) << 8;
    g.reg |= EN | INT;
    if pmu.ecmask && g.reg & EDGE != 0 && (g.reg >> CMASK_SHIFT) & 0xff == 0 {
        return fail(
            Pfm::Attr,
            format!("edge (e) needs a counter mask c>=1 on PMU `{}`", pmu.name()),
        );
    }
    let cntmsk = desc
        .attrs
        .iter()
        .filter_map(|a| match a.what {
            AttrRef::Umask(i) => Some(event.umask(i).cntmsk()).filter(|c| *c != 0),
            _ => None,
        })
        .fold(event.cntmsk(), |mask, c| mask & c);
    Ok(Encoded {
        register: g.reg,
        second,
        levels_given: g.plmmsk != 0,
        cntmsk,
    })
}

impl Gathered {
    /// Takes unit mask `index` of `desc`'s event: its group's rules (`GRP_EXCL`,
    /// `EXCL_GRP_GT`, `EXCL_GRP_BUT_0`, `GRP_REQ`, `NCOMBO`), its hard-wired and required
    /// modifiers, its bits and a `CODE_OVERRIDE`'s event code.
    fn umask(&mut self, desc: &Desc<'_>, index: usize) -> Result<(), PfmError> {
        let event = desc.event;
        let umask = event.umask(index);
        let grpid = umask.grpid() & 0xff;
        let req_grpid = (umask.grpid() >> 8) & 0xff;
        if self.last_grpid != MAX_GRPID && grpid != self.last_grpid && event.has(flag::GRP_EXCL) {
            return combine(format!(
                "`{}` takes unit masks of one group only (`{}` is of another)",
                event.name(),
                umask.name()
            ));
        }
        if umask.has(flag::EXCL_GRP_GT) {
            self.max_grpid = grpid;
        }
        if umask.has(flag::EXCL_GRP_BUT_0) {
            self.excl_grp_but_0 = Some(grpid);
        }
        let g = (grpid as usize).min(NUM_GRP - 1);
        self.grpcounts[g] += 1;
        if umask.has(flag::GRP_REQ) {
            self.max_req_grpid = Some(self.max_req_grpid.map_or(req_grpid, |m| m.max(req_grpid)));
            self.req_grps[(req_grpid as usize).min(NUM_GRP - 1)] = true;
        }
        if umask.has(flag::NCOMBO) {
            self.ncombo[g] = true;
        }
        self.ldlat_um |= umask.has(flag::LDLAT);
        self.fe_thr_um |= umask.has(flag::FETHR);
        if self.grpcounts[g] > 1 && self.ncombo[g] {
            return not_combined(desc, grpid, umask.name());
        }
        self.last_grpid = grpid;
        self.modhw |= umask.modhw();
        self.umask2 |= umask.code() >> 8;
        // libpfm4 shifts by the whole grpid, group-required bits too; x86 takes the count
        // modulo 32.
        self.ugrpmsk |= 1u32.wrapping_shl(umask.grpid());
        self.modmsk_r |= umask.modmsk_req();
        if umask.has(flag::CODE_OVERRIDE) {
            let code = umask.code() & 0xff;
            if self.last_ucode.is_some_and(|last| last != code) {
                return combine(format!(
                    "unit masks of `{}` that select two event codes",
                    event.name()
                ));
            }
            self.last_ucode = Some(code);
            self.reg = (self.reg & !0xff) | code;
        }
        Ok(())
    }

    /// Takes a raw unit mask `value`, which names every group.
    fn raw(&mut self, desc: &Desc<'_>, value: u64, grpmsk: u32) -> Result<(), PfmError> {
        let bits = if desc.event.has(flag::NHM_OFFCORE) {
            if desc.pmu.name() == "wsm" || desc.pmu.name() == "wsm_dp" {
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
        self.umask2 = value;
        self.ugrpmsk = grpmsk;
        Ok(())
    }

    /// Takes modifier `m` with value `v`, checking its range.
    fn modifier(&mut self, m: u8, v: u64) -> Result<(), PfmError> {
        let reg = &mut self.reg;
        match m {
            I => set(reg, INV, v != 0),
            E => set(reg, EDGE, v != 0),
            C => {
                if v > 255 {
                    return fail(
                        Pfm::AttrVal,
                        format!("counter mask c={v}: the range is 0..=255"),
                    );
                }
                *reg = (*reg & !(0xff << CMASK_SHIFT)) | v << CMASK_SHIFT;
            }
            U => set(reg, USR, v != 0),
            K => set(reg, OS, v != 0),
            T => set(reg, ANY, v != 0),
            LDLAT => {
                if !(1..=65535).contains(&v) {
                    return fail(Pfm::AttrVal, format!("ldlat={v}: the range is 1..=65535"));
                }
                self.ldlat = v;
            }
            INTX => set(reg, IN_TX, v != 0),
            INTXCP => set(reg, IN_TXCP, v != 0),
            FETHR => {
                if !(1..=4095).contains(&v) {
                    return fail(Pfm::AttrVal, format!("fe_thres={v}: the range is 1..=4095"));
                }
                self.fe_thr = v;
            }
            _ => {}
        }
        if m == U || m == K {
            self.plmmsk |= 1 << m;
        }
        if m != LDLAT {
            self.umodmsk |= 1 << m;
        }
        Ok(())
    }

    /// Refuses a unit mask that needs another group (`GRP_REQ`) none was named from.
    fn check_required_groups(&self, desc: &Desc<'_>) -> Result<(), PfmError> {
        if let Some(max) = self.max_req_grpid {
            for (x, required) in self.req_grps.iter().enumerate().take(max as usize + 1) {
                if *required && self.ugrpmsk & (1 << x) == 0 {
                    return combine(format!(
                        "`{}` needs a unit mask of group {x}",
                        desc.event.name()
                    ));
                }
            }
        }
        Ok(())
    }

    /// Modifiers a unit mask hard-wires may be repeated, not contradicted.
    fn check_hardwired(&self, umask1: u64) -> Result<(), PfmError> {
        let reg2 = (umask1 | self.umask2) << 8;
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
            if self.modhw & self.umodmsk & (1 << m) != 0 && reg2 & bits != self.reg & bits {
                return fail(
                    Pfm::AttrSet,
                    "a modifier contradicts the value its unit mask sets",
                );
            }
        }
        Ok(())
    }

    /// Refuses unit masks of groups an `EXCL_GRP_BUT_0` or `EXCL_GRP_GT` unit mask excludes,
    /// the defaults added included.
    fn check_exclusions(&self, desc: &Desc<'_>) -> Result<(), PfmError> {
        let event = desc.event;
        let names = |test: &dyn Fn(&super::table::Umask) -> bool| -> String {
            let named: Vec<&str> = desc
                .attrs
                .iter()
                .filter_map(|a| match a.what {
                    AttrRef::Umask(i) if test(&event.umask(i)) => Some(event.umask(i).name()),
                    _ => None,
                })
                .collect();
            named.join(", ")
        };
        if let Some(own) = self.excl_grp_but_0
            && (1..NUM_GRP).any(|k| self.grpcounts[k] != 0 && k as u32 != own)
        {
            return combine(format!(
                "`{}`: `{}` takes the request unit masks (group 0) and those of its own group only, not `{}`",
                event.name(),
                names(&|u| u.has(flag::EXCL_GRP_BUT_0)),
                names(&|u| u.grpid() & 0xff != own && u.grpid() != 0)
            ));
        }
        let max_grpid = self.max_grpid;
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
        Ok(())
    }

    /// The second register (offcore response, frontend with its threshold, load latency),
    /// whose bits leave `umask2`.
    fn second_register(&mut self, desc: &Desc<'_>) -> Result<Option<Second>, PfmError> {
        let event = desc.event;
        if event.has(flag::FRONTEND) && self.fe_thr_um {
            let from_umask = (self.umask2 >> 8) & 0xfff;
            if from_umask != 0 {
                if self.modhw & self.umodmsk & (1 << FETHR) != 0 {
                    if self.fe_thr != from_umask {
                        return fail(Pfm::AttrSet, "fe_thres contradicts its unit mask's");
                    }
                } else {
                    self.fe_thr = from_umask;
                }
            } else if self.fe_thr == 0 {
                self.fe_thr = 1;
            }
            self.umask2 = (self.umask2 & !(0xfff << 8)) | self.fe_thr << 8;
        }
        let mut second = None;
        if event.has(flag::NHM_OFFCORE) || event.has(flag::FRONTEND) {
            second = Some(if event.has(flag::NHM_OFFCORE) {
                Second::Offcore(self.umask2)
            } else {
                Second::Frontend(self.umask2)
            });
            self.umask2 = 0;
        }
        if self.ldlat != 0 && !self.ldlat_um {
            return fail(
                Pfm::Attr,
                format!(
                    "ldlat= applies to `{}`'s load-latency unit masks only",
                    event.name()
                ),
            );
        }
        if self.ldlat_um {
            second = Some(Second::LoadLatency(if self.ldlat == 0 {
                3
            } else {
                self.ldlat
            }));
        }
        Ok(second)
    }
}

/// Refuses a second unit mask of an `NCOMBO` group, naming the group's unit masks given.
fn not_combined(desc: &Desc<'_>, grpid: u32, this: &str) -> Result<(), PfmError> {
    let event = desc.event;
    let group: Vec<&str> = desc
        .attrs
        .iter()
        .filter_map(|a| match a.what {
            AttrRef::Umask(i) if event.umask(i).grpid() & 0xff == grpid => {
                Some(event.umask(i).name())
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
        .unwrap_or(this);
    combine(format!(
        "unit mask `{alone}` of `{}` is not combined with another of its group ({}); name one of them",
        event.name(),
        group.join(", ")
    ))
}
