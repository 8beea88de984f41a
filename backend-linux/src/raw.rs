//! x86 event selects as perf raw events: the attr of an event select ([`raw_attr`]), and what
//! the kernel's raw-event PMU passes on of its bits above the first unit-mask byte
//! ([`RawFormat`]).

use counterhal_system::PmuDevices;

use counterhal_hal::{Error, Evtsel, ExtraMsr, PerfAttr, Result};

use crate::pmus;
use counterhal_events::perf::TYPE_RAW;

/// The perf attr of an x86 event select: a raw event whose config is the event-select bits,
/// with the extra MSR's value in the config word perf's x86 PMU reads it from: `config1` for
/// all three, as the `cpu` PMU's format says (`offcore_rsp=config1:0-63`,
/// `ldlat=config1:0-15`, `frontend=config1:0-23`). A value wider than its field is refused.
///
/// # Errors
/// [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported) for an extra MSR perf has no config word for.
pub fn raw_attr(name: &str, evtsel: &Evtsel) -> Result<PerfAttr> {
    let mut attr = PerfAttr::new(TYPE_RAW, kernel_select(evtsel)).with_domain(evtsel.domain);
    if let Some(extra) = evtsel.extra {
        match extra.msr {
            ExtraMsr::OFFCORE_RSP_0 | ExtraMsr::OFFCORE_RSP_1 => attr.config1 = extra.value,
            msr @ (ExtraMsr::LOAD_LATENCY | ExtraMsr::FRONTEND) => {
                let (field, bits) = if msr == ExtraMsr::LOAD_LATENCY {
                    ("ldlat", 16)
                } else {
                    ("frontend", 24)
                };
                if extra.value >> bits != 0 {
                    return Err(Error::invalid_input(format!(
                        "`{name}`: {field} value {:#x} does not fit perf's {bits}-bit `{field}` field (config1:0-{})",
                        extra.value,
                        bits - 1
                    )));
                }
                attr.config1 = extra.value;
            }
            other => {
                return Err(Error::unsupported(format!(
                    "`{name}` needs MSR {other:#x}, which perf's raw events cannot program"
                )));
            }
        }
    }
    Ok(attr)
}

/// The config the Linux kernel knows `evtsel` by: its event select, but for an event that
/// counts on a fixed counter only, whose perfmon pseudo-code (event 0x00, unit mask N + 1 for
/// fixed counter N) the kernel does not take for fixed counters 0 and 1. Its constraint
/// tables (arch/x86/events/intel/core.c's `FIXED_EVENT_CONSTRAINT`s) know fixed counter 0 as
/// 0x00c0 (INST_RETIRED.ANY) and fixed counter 1 as 0x003c (CPU_CLK_UNHALTED.CORE) on every
/// Intel core, and the others by the pseudo-code (0x0300, 0x0400, ...); 0x0100 only from Ice
/// Lake on (as INST_RETIRED.PREC_DIST, fixed counter 0 too), 0x0200 never: elsewhere the
/// pseudo-code lands on a general-purpose counter as event 0x00, which counts nothing. perf's
/// jevents.py makes the same change, by name (INST_RETIRED.ANY to `event=0xc0`,
/// CPU_CLK_UNHALTED.THREAD, .CORE and .THREAD_ANY to `event=0x3c`, .REF to `event=0x0,
/// umask=0x3`). The other fields (the AnyThread bit of .THREAD_ANY) stay. Intel's older
/// tables spell the pseudo-codes otherwise: Nehalem's and Westmere's give all three fixed
/// counters' events unit mask 0x00, Bonnell's event code 0x0a, so those are known by their
/// fixed counter (0x0300 for fixed counter 2, as the kernel's constraint tables give it).
fn kernel_select(evtsel: &Evtsel) -> u64 {
    let select = evtsel.event_select();
    if !matches!(evtsel.code, 0x00 | 0x0a) || !evtsel.counters.is_empty() {
        return select;
    }
    let code = match (evtsel.umask, evtsel.fixed) {
        (0x01, _) | (0x00, Some(0)) => 0xc0,
        (0x02, _) | (0x00, Some(1)) => 0x3c,
        (0x00, Some(2)) => 0x0300,
        _ => return select,
    };
    (select & !0xffff) | code
}

/// What the core PMU that takes raw events (`type` 4: `cpu`, or `cpu_core` on a hybrid chip)
/// passes on of an event select's bits above the first unit-mask byte. The kernel drops
/// without a word the bits its PMU does not announce: IN_TX and IN_TXCP where the CPU has no
/// RTM (it then shows no `in_tx` and `in_tx_cp` formats), and the second unit-mask byte (bits
/// 47:40) where the PMU lacks UMASK2 (its `umask` format then reads `config:8-15`, not
/// `config:8-15,40-47`). Counting without them would count something else, so such an event
/// is refused instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawFormat {
    /// The PMU's name.
    pub pmu: String,
    /// Whether it has the `in_tx` format (config:32).
    pub in_tx: bool,
    /// Whether it has the `in_tx_cp` format (config:33).
    pub in_tx_cp: bool,
    /// Whether its `umask` format covers bits 40-47.
    pub umask2: bool,
    /// Whether it has the `any` format (config:21): AnyThread, which perfmon v5 deprecates
    /// (the kernel then drops the format) and v1 and v2 lack.
    pub any_thread: bool,
    /// Whether its `event` format reaches above bit 31 (AMD: `config:0-7,32-35`), where bits
    /// 35:32 of a raw code are the event's, not IN_TX and IN_TXCP.
    pub event_high: bool,
}

impl RawFormat {
    /// The formats of the core PMU whose type is `PERF_TYPE_RAW`; `None` where there is none
    /// (no hardware PMU: raw events then fail to open anyway).
    pub fn read(devices: &PmuDevices) -> Option<RawFormat> {
        Self::of(&pmus::core_pmus(devices))
    }

    /// [`RawFormat::read`] of `cores` (the core PMUs, as `pmus::core_pmus` lists them).
    pub fn of(cores: &[pmus::Pmu]) -> Option<RawFormat> {
        let pmu = cores.iter().find(|pmu| pmu.type_ == TYPE_RAW)?;
        let has = |field: &str| matches!(pmu.format(field), Ok(Some(_)));
        let umask2 =
            matches!(pmu.format("umask"), Ok(Some(f)) if f.ranges.iter().any(|&(_, hi)| hi >= 47));
        Some(RawFormat {
            in_tx: has("in_tx"),
            in_tx_cp: has("in_tx_cp"),
            umask2,
            any_thread: has("any"),
            event_high: matches!(pmu.format("event"), Ok(Some(f)) if f.ranges.iter().any(|&(_, hi)| hi >= 32)),
            pmu: pmu.name.clone(),
        })
    }

    /// Refuses a raw code (`r10000003c`, a `PERF_TYPE_RAW` config) that sets a bit this PMU
    /// would drop, as [`RawFormat::check`] refuses an event select: AnyThread (bit 21), and
    /// where bits 35:32 are not the event's, IN_TX (32), IN_TXCP (33) and the second unit-mask
    /// byte (47:40).
    ///
    /// # Errors
    /// As [`RawFormat::check`].
    pub fn check_config(&self, name: &str, config: u64) -> Result<()> {
        let mut evtsel = Evtsel::new((config & 0xff) as u16, (config >> 8 & 0xff) as u8);
        evtsel.any_thread = config & Evtsel::ANY != 0;
        if !self.event_high {
            evtsel.in_tx = config & Evtsel::IN_TX != 0;
            evtsel.in_tx_cp = config & Evtsel::IN_TX_CP != 0;
            evtsel.umask2 = ((config & Evtsel::UMASK2) >> 40) as u8;
        }
        self.check(name, &evtsel)
    }

    /// Refuses `evtsel` (the event `name`) when it sets a bit this PMU would drop.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported) naming the bit and the missing format.
    pub fn check(&self, name: &str, evtsel: &Evtsel) -> Result<()> {
        let pmu = &self.pmu;
        let tsx = [
            (evtsel.in_tx, self.in_tx, "intx", "in_tx"),
            (evtsel.in_tx_cp, self.in_tx_cp, "intxcp", "in_tx_cp"),
        ];
        for (asked, offered, modifier, format) in tsx {
            if asked && !offered {
                return Err(Error::unsupported(format!(
                    "`{name}`: `{modifier}` filters TSX transactions, and the kernel's `{pmu}` PMU has no `{format}` format (this CPU has no RTM, or TSX is off): perf would drop the bit and count outside transactions too"
                ))
                .with_hint(format!("drop `{modifier}`; `ls /sys/bus/event_source/devices/{pmu}/format` lists what this PMU takes")));
            }
        }
        if evtsel.any_thread && !self.any_thread {
            return Err(Error::unsupported(format!(
                "`{name}`: AnyThread (`t`) counts both hyper-threads of a core, and the kernel's `{pmu}` PMU has no `any` format (architectural perfmon v1 or v2, or v5 and later, which deprecate it)"
            ))
            .with_hint("drop `t`; count each thread and add the counts"));
        }
        if evtsel.umask2 != 0 && !self.umask2 {
            return Err(Error::unsupported(format!(
                "`{name}`: its second unit-mask byte {:#04x} (bits 47:40) needs UMASK2, and the kernel's `{pmu}` PMU takes `umask` as bits 8-15 only (its format would read config:8-15,40-47): perf would drop the byte and count another event",
                evtsel.umask2
            ))
            .with_hint("the event comes from a newer core than this CPU; check --cpu-model"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use counterhal_hal::CounterSet;

    use super::*;

    fn fixed_only(umask: u8, fixed: u32) -> Evtsel {
        let mut evtsel = Evtsel::new(0, umask);
        evtsel.counters = CounterSet::NONE;
        evtsel.fixed = Some(fixed);
        evtsel
    }

    /// Oracle: perf 6.1 under the Sapphire Rapids and Skylake client trees (cli's
    /// tests/metrics_perf.rs), which opens INST_RETIRED.ANY as config 0xc0,
    /// CPU_CLK_UNHALTED.THREAD as 0x3c, .THREAD_ANY as 0x20003c, and REF_TSC and TOPDOWN.SLOTS
    /// by their pseudo-codes 0x300 and 0x400; Linux 6.12's FIXED_EVENT_CONSTRAINT tables.
    #[test]
    fn fixed_counter_pseudo_codes_become_the_kernels() {
        let config = |evtsel: &Evtsel| raw_attr("e", evtsel).unwrap().config;
        assert_eq!(config(&fixed_only(0x01, 0)), 0xc0);
        assert_eq!(config(&fixed_only(0x02, 1)), 0x3c);
        let mut thread_any = fixed_only(0x02, 1);
        thread_any.any_thread = true;
        assert_eq!(config(&thread_any), 0x20003c);
        assert_eq!(config(&fixed_only(0x03, 2)), 0x300);
        assert_eq!(config(&fixed_only(0x04, 3)), 0x400);
        // An event a general-purpose counter takes keeps its code, fixed counter or not.
        let mut any_p = Evtsel::new(0xc0, 0);
        any_p.fixed = Some(0);
        assert_eq!(config(&any_p), 0xc0);
        let mut programmable = Evtsel::new(0, 0x01);
        programmable.fixed = Some(0);
        assert_eq!(config(&programmable), 0x100);
    }

    /// Oracle: perf 7.2 (Debian sid's) under a `cpu` tree with the Nehalem, Westmere and
    /// Bonnell `PERF_CPUID`s (cli's tests/encodings_perf72.rs), which opens INST_RETIRED.ANY
    /// as 0xc0, CPU_CLK_UNHALTED.THREAD (Bonnell's .CORE) as 0x3c and .REF as 0x300; Linux
    /// 7.2's intel_nehalem_event_constraints and intel_gen_event_constraints. Before, they
    /// opened config 0 (Nehalem, Westmere) and 0x0a (Bonnell): event 0x00 or 0x0a on a
    /// general-purpose counter. Sandy Bridge-EP's table gives .THREAD_ANY (unit mask 0x02)
    /// fixed counter 2: the unit mask decides, 0x20003c as perf opens it.
    #[test]
    fn older_tables_fixed_counter_pseudo_codes_become_the_kernels() {
        let config = |evtsel: &Evtsel| raw_attr("e", evtsel).unwrap().config;
        for (event, fixed, kernel) in [
            (0x00, 0, 0xc0),
            (0x00, 1, 0x3c),
            (0x00, 2, 0x300),
            (0x0a, 0, 0xc0),
            (0x0a, 1, 0x3c),
            (0x0a, 2, 0x300),
        ] {
            let mut evtsel = fixed_only(0x00, fixed);
            evtsel.code = event;
            assert_eq!(config(&evtsel), kernel, "event {event:#x}, fixed {fixed}");
        }
        let mut thread_any = fixed_only(0x02, 2);
        thread_any.any_thread = true;
        assert_eq!(config(&thread_any), 0x20003c);
    }
}
