//! The sysfs trees of machines this one is not, written from the kernel's own definitions of
//! their PMUs: each `tests/data/machines/<name>/` holds `bus/event_source/devices` (the PMUs'
//! `type`, `cpumask`, `alias`, `format/*` and `events/*`, with `.scale`, `.unit` and
//! `.snapshot`) and `devices/system/cpu/online`, and a `SOURCE` file naming the kernel files
//! and symbols each PMU comes from. What the source does not fix (the dynamic `type` numbers,
//! the topology behind a `cpumask`, how many boxes) is chosen below, realistically, and said in
//! `SOURCE`.
//!
//! The trees are generated, never edited: [`the_machine_trees_are_the_kernels_definitions`]
//! reads the definitions from Debian's linux-source-6.12 tarball and fails when a committed
//! tree differs from what they give;
//! `COUNTERHAL_WRITE_MACHINES=1 cargo test -p counterhal-linux --test main machines::`
//! writes them again.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use counterhal_conformance::skip::Need;

const TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";
const KERNEL: &str = "Linux 6.12 (Debian's linux-source-6.12 tarball)";

/// The folder holding the trees.
pub fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/machines")
}

/// The sysfs root of machine `name` (`spr-2s`, `skl-client`, `zen4`, `adl`).
pub fn root(name: &str) -> PathBuf {
    folder().join(name)
}

/// The PMU directory of machine `name`'s tree.
pub fn devices(name: &str) -> PathBuf {
    root(name).join("bus/event_source/devices")
}

/// Where a PMU's format fields come from.
enum Formats {
    /// Every `&format_attr_X.attr` of the attribute array of that name.
    List(&'static str),
    /// These format variables (`DEFINE_UNCORE_FORMAT_ATTR(var, ...)`, `PMU_FORMAT_ATTR(var,
    /// ...)`), where the driver assembles the list in code.
    Vars(&'static [&'static str]),
    /// A hybrid core PMU's: every `&format_attr_X.attr` of array `base`, and every
    /// `FORMAT_HYBRID_PTR(X)` of macro `extra` whose `FORMAT_ATTR_HYBRID(X, mask)` takes in
    /// this PMU's kind `hybrid` (`hybrid_big`, `hybrid_small`).
    Hybrid {
        base: &'static str,
        extra: &'static str,
        hybrid: Kind,
    },
    /// A core PMU's that is not hybrid: every `&format_attr_X.attr` of these arrays (the
    /// `format_attrs` of its `x86_pmu`, and the `format` groups its model's case of
    /// intel_pmu_init fills: group_format_extra's `extra_attr`, group_format_extra_skl's
    /// `extra_skl_attr`).
    Lists(&'static [&'static str]),
}

/// The kind of a hybrid core PMU: its `enum hybrid_pmu_type` bit (arch/x86/events/perf_event.h:
/// `hybrid_small` is bit 0, `hybrid_big` bit 1; X86_HYBRID_PMU_ATOM_IDX is 0 and
/// X86_HYBRID_PMU_CORE_IDX 1, the order of a `;`-separated event string).
#[derive(Clone, Copy)]
enum Kind {
    Small,
    Big,
}

impl Kind {
    /// Whether an attribute of hybrid mask `mask` shows on this kind, and which of its
    /// `;`-separated strings it shows (events_hybrid_sysfs_show: the strings follow the set
    /// bits of the mask).
    fn part(self, mask: &str) -> Option<usize> {
        match (mask, self) {
            ("hybrid_small", Kind::Small) | ("hybrid_big", Kind::Big) => Some(0),
            ("hybrid_big_small", Kind::Small) => Some(0),
            ("hybrid_big_small", Kind::Big) => Some(1),
            _ => None,
        }
    }
}

/// Where a PMU's events come from.
enum Events {
    /// None (the kernel gives this PMU no `events/`).
    None,
    /// Every `INTEL_UNCORE_EVENT_DESC(name, "value")` of the `uncore_event_desc` array of that
    /// name.
    Descs(&'static str),
    /// The calls of macro `.0` (`RAPL_EVENT_ATTR_STR`, `PMU_EVENT_ATTR_STRING`) naming these
    /// events or their `.scale`, `.unit` and `.snapshot` files (the ones the model shows).
    Named(&'static str, &'static [&'static str]),
    /// The calls of macro `.0` (`PMU_EVENT_ATTR_STRING(name, var, value)`) of these variables,
    /// where one source gives two PMUs events of the same name (cstate.c).
    Vars(&'static str, &'static [&'static str]),
    /// A hybrid core PMU's: each `EVENT_ATTR_STR_HYBRID(name, var, value, mask)` of the
    /// `EVENT_PTR(var)`s of arrays `lists` that shows on kind `hybrid` (its part of the value),
    /// and the generic events of `generic` (arch/x86/events/core.c's `EVENT_ATTR(name, ID)`),
    /// each as `intel_perfmon_event_map` encodes `PERF_COUNT_HW_ID` and x86_event_sysfs_show
    /// writes it, hidden where the map has none.
    Hybrid {
        lists: &'static [&'static str],
        hybrid: Kind,
        generic: &'static str,
    },
    /// A core PMU's that is not hybrid: each `EVENT_ATTR_STR(name, var, value)` and
    /// `EVENT_ATTR_STR_HT(name, var, noht, ht)` of the `EVENT_PTR(var)`s of arrays `lists`
    /// (the `td_attr`, `mem_attr` and `tsx_attr` its model's case of intel_pmu_init chooses),
    /// an `_HT` one with its `ht` string (events_ht_sysfs_show: the machines have two threads a
    /// core) or, for a variable of `quirks`, the string the model's case assigns to
    /// `event_attr_VAR.event_str_ht`; and the generic events of `generic` as the source's map
    /// `map` encodes them.
    Core {
        lists: &'static [&'static str],
        quirks: &'static [&'static str],
        generic: &'static str,
        map: &'static str,
    },
}

/// One PMU of a machine, or one kind of box (`uncore_imc_0`..`uncore_imc_3`).
struct PmuSpec {
    /// The name, with `{}` for the box number where `boxes` is not zero.
    name: &'static str,
    /// How many boxes (0: one PMU named `name`).
    boxes: u32,
    /// The `type` of the first box; the next boxes count up.
    first_type: u32,
    /// The `cpumask` file (None: the PMU has none and counts on any CPU).
    cpumask: Option<&'static str>,
    /// The `alias` file, with `{}` for the box number.
    alias: Option<&'static str>,
    /// Files the source does not give as text (a hybrid PMU's `cpus`, its `caps/pmu_name`),
    /// relative to the PMU's directory: a `cpus` is chosen, any other file's value is checked
    /// to be a string of the source.
    files: &'static [(&'static str, &'static str)],
    /// The kernel file that defines it.
    source: &'static str,
    formats: Formats,
    events: Events,
    /// Why it looks as it does, where the source alone does not say.
    why: &'static str,
}

/// A machine: its tree's name, what it is, its online CPUs and its PMUs.
struct Machine {
    name: &'static str,
    describes: &'static str,
    online: &'static str,
    pmus: &'static [PmuSpec],
}

/// The `msr` PMU with the events of `events` (msr.c shows each where its test passes).
const fn msr(events: &'static [&'static str], why: &'static str) -> PmuSpec {
    PmuSpec {
        name: "msr",
        boxes: 0,
        first_type: 10,
        cpumask: None,
        alias: None,
        files: &[],
        source: "arch/x86/events/msr.c",
        formats: Formats::Vars(&["event"]),
        events: Events::Named("PMU_EVENT_ATTR_STRING", events),
        why,
    }
}

/// The `power` PMU of rapl.c's `model_skl` (Skylake's and Alder Lake's): PP0, PKG, RAM, PP1
/// and PSYS, on CPU 0, with the dynamic type `first_type`.
const fn rapl_skl(first_type: u32, why: &'static str) -> PmuSpec {
    PmuSpec {
        name: "power",
        boxes: 0,
        first_type,
        cpumask: Some("0"),
        alias: None,
        files: &[],
        source: "arch/x86/events/rapl.c",
        formats: Formats::Vars(&["event"]),
        events: Events::Named(
            "RAPL_EVENT_ATTR_STR",
            &[
                "energy-cores",
                "energy-pkg",
                "energy-ram",
                "energy-gpu",
                "energy-psys",
            ],
        ),
        why,
    }
}

/// Sapphire Rapids, two sockets of 56 cores with two threads each: CPUs 0-55 and 112-167 on
/// socket 0, 56-111 and 168-223 on socket 1, so a package PMU's cpumask is `0,56`.
const SPR_2S: Machine = Machine {
    name: "spr-2s",
    describes: "Intel Sapphire Rapids (GenuineIntel-6-8F), two sockets of 56 cores, 224 CPUs",
    online: "0-223",
    pmus: &[
        PmuSpec {
            name: "cpu",
            boxes: 0,
            first_type: 4,
            cpumask: None,
            alias: None,
            files: &[("caps/pmu_name", "sapphire_rapids")],
            source: "arch/x86/events/intel/core.c",
            formats: Formats::Lists(&[
                "intel_arch_formats_attr",
                "nhm_format_attr",
                "skl_format_attr",
            ]),
            events: Events::Core {
                lists: &["glc_td_events_attrs", "glc_events_attrs"],
                quirks: &[],
                generic: "arch/x86/events/core.c",
                map: "intel_perfmon_event_map",
            },
            why: "intel_pmu_init's INTEL_SAPPHIRERAPIDS_X case (glc_common); \
                  init_hw_perf_events registers it as PERF_TYPE_RAW (4), with no cpumask nor \
                  cpus (one PMU for every CPU); intel_arch_formats_attr, as arch perfmon v5 \
                  with AnyThread deprecated gives it (no `any`); extra_attr nhm_format_attr \
                  (no RTM: arch/x86/Kconfig's default X86_INTEL_TSX_MODE_OFF turns it \
                  off, so no in_tx, in_tx_cp nor glc_tsx_events_attrs) and extra_skl_attr skl_format_attr; \
                  group_format_evtsel_ext's umask shows config:8-15 (no umask2) and no eq \
                  (perfmon v6); td_attr glc_td_events_attrs (perf metrics) and mem_attr \
                  glc_events_attrs (PEBS, PMU_FL_MEM_LOADS_AUX); the generic events of \
                  intel_perfmon_event_map; pmu_name sapphire_rapids",
        },
        msr(
            &["tsc", "aperf", "mperf", "smi", "cpu_thermal_margin"],
            "tsc always; aperf and mperf with APERFMPERF; smi where test_intel() lists \
             SAPPHIRERAPIDS_X; cpu_thermal_margin (with .snapshot and .unit) with DTHERM",
        ),
        PmuSpec {
            name: "power",
            boxes: 0,
            first_type: 11,
            cpumask: Some("0,56"),
            alias: None,
            files: &[],
            source: "arch/x86/events/rapl.c",
            formats: Formats::Vars(&["event"]),
            events: Events::Named(
                "RAPL_EVENT_ATTR_STR",
                &["energy-cores", "energy-pkg", "energy-ram", "energy-psys"],
            ),
            why: "model_spr: PP0, PKG, RAM and PSYS; one CPU per package",
        },
        PmuSpec {
            name: "uncore_imc_{}",
            boxes: 4,
            first_type: 12,
            cpumask: Some("0,56"),
            alias: Some("uncore_type_6_{}"),
            files: &[],
            source: "arch/x86/events/intel/uncore_snbep.c",
            formats: Formats::List("spr_uncore_raw_formats_attr"),
            events: Events::Descs("spr_uncore_imc_events"),
            why: "spr_uncore_imc (UNCORE_SPR_IMC is discovery type 6; the alias file is \
                  uncore_alias_groups' uncore_type_<type>_<box>); 4 of a socket's 8 boxes",
        },
        PmuSpec {
            name: "uncore_imc_free_running_{}",
            boxes: 2,
            first_type: 16,
            cpumask: Some("0,56"),
            alias: None,
            files: &[],
            source: "arch/x86/events/intel/uncore_snbep.c",
            formats: Formats::List("skx_uncore_iio_freerunning_formats_attr"),
            events: Events::Descs("spr_uncore_imc_freerunning_events"),
            why: "spr_uncore_imc_free_running (format group \
                  skx_uncore_iio_freerunning_format_group)",
        },
        PmuSpec {
            name: "uncore_cha_{}",
            boxes: 2,
            first_type: 18,
            cpumask: Some("0,56"),
            alias: Some("uncore_type_0_{}"),
            files: &[],
            source: "arch/x86/events/intel/uncore_snbep.c",
            formats: Formats::List("spr_uncore_cha_formats_attr"),
            events: Events::None,
            why: "spr_uncore_chabox (UNCORE_SPR_CHA is discovery type 0); 2 of a socket's \
                  56 boxes",
        },
    ],
};

/// A Skylake client: one socket of 4 cores with two threads each.
const SKL_CLIENT: Machine = Machine {
    name: "skl-client",
    describes: "Intel Skylake client (GenuineIntel-6-5E), one socket of 4 cores, 8 CPUs",
    online: "0-7",
    pmus: &[
        PmuSpec {
            name: "cpu",
            boxes: 0,
            first_type: 4,
            cpumask: None,
            alias: None,
            files: &[("caps/pmu_name", "skylake")],
            source: "arch/x86/events/intel/core.c",
            formats: Formats::Lists(&[
                "intel_arch3_formats_attr",
                "nhm_format_attr",
                "skl_format_attr",
            ]),
            events: Events::Core {
                lists: &["hsw_events_attrs", "hsw_mem_events_attrs"],
                quirks: &["td_recovery_bubbles"],
                generic: "arch/x86/events/core.c",
                map: "intel_perfmon_event_map",
            },
            why: "intel_pmu_init's INTEL_SKYLAKE case; init_hw_perf_events registers it as \
                  PERF_TYPE_RAW (4), with no cpumask nor cpus; intel_pmu's \
                  intel_arch3_formats_attr (perfmon v4: `any` kept); extra_attr \
                  nhm_format_attr (no RTM: microcode makes TSX always abort on Skylake \
                  clients, so no in_tx, in_tx_cp nor hsw_tsx_events_attrs) and extra_skl_attr \
                  skl_format_attr; td_attr hsw_events_attrs with two threads a core (the \
                  _HT strings, and the case's INT_MISC.RECOVERY_CYCLES umask 1) and mem_attr \
                  hsw_mem_events_attrs; the generic events of intel_perfmon_event_map; \
                  pmu_name skylake",
        },
        msr(
            &[
                "tsc",
                "aperf",
                "mperf",
                "pperf",
                "smi",
                "cpu_thermal_margin",
            ],
            "tsc always; aperf and mperf with APERFMPERF; smi and pperf where test_intel() \
             lists SKYLAKE; cpu_thermal_margin (with .snapshot and .unit) with DTHERM",
        ),
        rapl_skl(11, "model_skl: PP0, PKG, RAM, PP1 and PSYS"),
        PmuSpec {
            name: "uncore_imc",
            boxes: 0,
            first_type: 12,
            cpumask: Some("0"),
            alias: None,
            files: &[],
            source: "arch/x86/events/intel/uncore_snb.c",
            formats: Formats::List("snb_uncore_imc_formats_attr"),
            events: Events::Descs("snb_uncore_imc_events"),
            why: "snb_uncore_imc, the client IMC's free-running counters (one box: the name \
                  has no number)",
        },
        PmuSpec {
            name: "uncore_cbox_{}",
            boxes: 4,
            first_type: 13,
            cpumask: Some("0"),
            alias: None,
            files: &[],
            source: "arch/x86/events/intel/uncore_snb.c",
            formats: Formats::List("snb_uncore_formats_attr"),
            events: Events::Descs("snb_uncore_events"),
            why: "skl_uncore_cbox, one box per core",
        },
        PmuSpec {
            name: "uncore_arb",
            boxes: 0,
            first_type: 17,
            cpumask: Some("0"),
            alias: None,
            files: &[],
            source: "arch/x86/events/intel/uncore_snb.c",
            formats: Formats::List("snb_uncore_formats_attr"),
            events: Events::None,
            why: "snb_uncore_arb",
        },
    ],
};

/// Zen 4 (Raphael), one socket of 16 cores in two CCDs with two threads each: CPUs 0-7 and
/// 16-23 share one L3, 8-15 and 24-31 the other.
const ZEN4: Machine = Machine {
    name: "zen4",
    describes: "AMD Zen 4 (AuthenticAMD-25-61), one socket of 16 cores in 2 CCDs, 32 CPUs",
    online: "0-31",
    pmus: &[
        PmuSpec {
            name: "cpu",
            boxes: 0,
            first_type: 4,
            cpumask: None,
            alias: None,
            files: &[],
            source: "arch/x86/events/amd/core.c",
            formats: Formats::List("amd_format_attr"),
            events: Events::Core {
                lists: &[],
                quirks: &[],
                generic: "arch/x86/events/core.c",
                map: "amd_zen4_perfmon_event_map",
            },
            why: "amd_pmu; init_hw_perf_events registers it as PERF_TYPE_RAW (4), with no \
                  cpumask nor cpus; amd_format_attr; the generic events as \
                  amd_pmu_event_map gives a Zen 4 (amd_zen4_perfmon_event_map) and \
                  amd_event_sysfs_show writes them; no caps/pmu_name (amd_attr_update has \
                  caps/branches alone, a number) and no branch-brs (BRS is Zen 3's)",
        },
        msr(
            &["tsc", "aperf", "mperf", "irperf"],
            "tsc always; aperf and mperf with APERFMPERF; irperf with IRPERF (family 17h on)",
        ),
        PmuSpec {
            name: "power",
            boxes: 0,
            first_type: 11,
            cpumask: Some("0"),
            alias: None,
            files: &[],
            source: "arch/x86/events/rapl.c",
            formats: Formats::Vars(&["event"]),
            events: Events::Named("RAPL_EVENT_ATTR_STR", &["energy-pkg"]),
            why: "model_amd_hygon: PKG alone (arch/x86/events/amd/power.c's own `power` PMU \
                  is Family 15h's, with ACC_POWER; Zen has RAPL)",
        },
        PmuSpec {
            name: "amd_df",
            boxes: 0,
            first_type: 12,
            cpumask: Some("0"),
            alias: None,
            files: &[],
            source: "arch/x86/events/amd/uncore.c",
            formats: Formats::Vars(&["event14v2", "umask12"]),
            events: Events::None,
            why: "amd_uncore_df_ctx_init: PerfMonV2 (Zen 4) gives event14v2 and umask12; one \
                  CPU per node",
        },
        PmuSpec {
            name: "amd_l3",
            boxes: 0,
            first_type: 13,
            cpumask: Some("0,8"),
            alias: None,
            files: &[],
            source: "arch/x86/events/amd/uncore.c",
            formats: Formats::Vars(&[
                "event8",
                "umask8",
                "threadmask2",
                "coreid",
                "enallslices",
                "enallcores",
                "sliceid",
            ]),
            events: Events::None,
            why: "amd_uncore_l3_ctx_init for family 19h (event8, umask8, threadmask2) and \
                  amd_f19h_uncore_l3_format_attr; one CPU per L3 (CCX)",
        },
        PmuSpec {
            name: "amd_umc_{}",
            boxes: 2,
            first_type: 14,
            cpumask: Some("0"),
            alias: None,
            files: &[],
            source: "arch/x86/events/amd/uncore.c",
            formats: Formats::List("amd_uncore_umc_format_attr"),
            events: Events::None,
            why: "amd_uncore_umc_ctx_init: one PMU per memory controller of the node \
                  (two channels), each with the node's CPU",
        },
    ],
};

/// The core PMU of one kind of an Alder Lake's cores (cpu_core: Golden Cove, cpu_atom:
/// Gracemont), as intel_pmu_init gives an INTEL_ALDERLAKE its hybrid PMUs.
const fn adl_core(
    name: &'static str,
    first_type: u32,
    hybrid: Kind,
    files: &'static [(&'static str, &'static str)],
    why: &'static str,
) -> PmuSpec {
    PmuSpec {
        name,
        boxes: 0,
        first_type,
        cpumask: None,
        alias: None,
        files,
        source: "arch/x86/events/intel/core.c",
        formats: Formats::Hybrid {
            base: "intel_arch_formats_attr",
            extra: "ADL_HYBRID_FORMAT_ATTR",
            hybrid,
        },
        events: Events::Hybrid {
            lists: &["adl_hybrid_events_attrs", "adl_hybrid_mem_attrs"],
            hybrid,
            generic: "arch/x86/events/core.c",
        },
        why,
    }
}

/// An Alder Lake desktop (i9-12900K): 8 Golden Cove cores with two threads each (CPUs 0-15,
/// siblings 0-1, 2-3, ...) and 8 Gracemont cores (CPUs 16-23), one socket.
const ADL: Machine = Machine {
    name: "adl",
    describes: "Intel Alder Lake (GenuineIntel-6-97), hybrid: 8 P-cores with two threads \
                (CPUs 0-15) and 8 E-cores (CPUs 16-23), one socket, 24 CPUs",
    online: "0-23",
    pmus: &[
        adl_core(
            "cpu_core",
            4,
            Kind::Big,
            &[("cpus", "0-15"), ("caps/pmu_name", "alderlake_hybrid")],
            "hybrid_big; init_hw_perf_events registers it as PERF_TYPE_RAW (4); \
             intel_arch_formats_attr, as arch perfmon v5 with AnyThread deprecated gives it \
             (no `any`), and hybrid_group_format_extra's adl_hybrid_extra_attr (no RTM: \
             Alder Lake's TSX is off, so no in_tx, in_tx_cp nor tsx events); \
             adl_hybrid_events_attrs (with perf metrics) and adl_hybrid_mem_attrs; \
             the generic events of intel_perfmon_event_map; pmu_name alderlake_hybrid",
        ),
        adl_core(
            "cpu_atom",
            10,
            Kind::Small,
            &[("cpus", "16-23"), ("caps/pmu_name", "alderlake_hybrid")],
            "hybrid_small; a dynamic type after software's cpu_clock, task_clock, kprobe \
             and uprobe (perf on an Alder Lake shows cpu_atom's events with extended type \
             0xa); the attributes of hybrid_small and hybrid_big_small",
        ),
        PmuSpec {
            first_type: 11,
            ..msr(
                &[
                    "tsc",
                    "aperf",
                    "mperf",
                    "pperf",
                    "smi",
                    "cpu_thermal_margin",
                ],
                "tsc always; aperf and mperf with APERFMPERF; smi and pperf where \
                 test_intel() lists ALDERLAKE; cpu_thermal_margin (with .snapshot and .unit) \
                 with DTHERM",
            )
        },
        rapl_skl(
            12,
            "rapl_model_match gives INTEL_ALDERLAKE model_skl: PP0, PKG, RAM, PP1 and PSYS",
        ),
        PmuSpec {
            name: "cstate_core",
            boxes: 0,
            first_type: 13,
            cpumask: Some("0,2,4,6,8,10,12,14,16-23"),
            alias: None,
            files: &[],
            source: "arch/x86/events/intel/cstate.c",
            formats: Formats::List("cstate_format_attrs"),
            events: Events::Vars(
                "PMU_EVENT_ATTR_STRING",
                &[
                    "attr_cstate_core_c1",
                    "attr_cstate_core_c6",
                    "attr_cstate_core_c7",
                ],
            ),
            why: "adl_cstates' core_events: C1, C6 and C7 residency; one CPU per core",
        },
        PmuSpec {
            name: "cstate_pkg",
            boxes: 0,
            first_type: 14,
            cpumask: Some("0"),
            alias: None,
            files: &[],
            source: "arch/x86/events/intel/cstate.c",
            formats: Formats::List("cstate_format_attrs"),
            events: Events::Vars(
                "PMU_EVENT_ATTR_STRING",
                &[
                    "attr_cstate_pkg_c2",
                    "attr_cstate_pkg_c3",
                    "attr_cstate_pkg_c6",
                    "attr_cstate_pkg_c8",
                    "attr_cstate_pkg_c10",
                ],
            ),
            why: "adl_cstates' pkg_events: C2, C3, C6, C8 and C10 residency",
        },
        PmuSpec {
            name: "uncore_imc_free_running_{}",
            boxes: 2,
            first_type: 15,
            cpumask: Some("0"),
            alias: None,
            files: &[],
            source: "arch/x86/events/intel/uncore_snb.c",
            formats: Formats::List("tgl_uncore_imc_formats_attr"),
            events: Events::Descs("tgl_uncore_imc_events"),
            why: "adl_uncore_imc_free_running (tgl_uncore_imc_format_group, \
                  tgl_uncore_imc_events), two boxes",
        },
        PmuSpec {
            name: "uncore_imc_{}",
            boxes: 2,
            first_type: 17,
            cpumask: Some("0"),
            alias: None,
            files: &[],
            source: "arch/x86/events/intel/uncore_snb.c",
            formats: Formats::List("adl_uncore_imc_formats_attr"),
            events: Events::None,
            why: "adl_uncore_imc, two boxes",
        },
        PmuSpec {
            name: "uncore_cbox_{}",
            boxes: 10,
            first_type: 19,
            cpumask: Some("0"),
            alias: None,
            files: &[],
            source: "arch/x86/events/intel/uncore_snb.c",
            formats: Formats::List("adl_uncore_formats_attr"),
            events: Events::None,
            why: "adl_uncore_cbox; icl_get_cbox_num reads the count from ICL_UNC_CBO_CONFIG: \
                  10, the i9-12900K's 10 L3 slices (8 P-cores, 2 E-core modules)",
        },
        PmuSpec {
            name: "uncore_arb_{}",
            boxes: 2,
            first_type: 29,
            cpumask: Some("0"),
            alias: None,
            files: &[],
            source: "arch/x86/events/intel/uncore_snb.c",
            formats: Formats::List("snb_uncore_formats_attr"),
            events: Events::None,
            why: "adl_uncore_arb, two boxes (snb_uncore_format_group)",
        },
        PmuSpec {
            name: "uncore_clock",
            boxes: 0,
            first_type: 31,
            cpumask: Some("0"),
            alias: None,
            files: &[],
            source: "arch/x86/events/intel/uncore_snb.c",
            formats: Formats::List("icl_uncore_clock_formats_attr"),
            events: Events::Descs("icl_uncore_events"),
            why: "adl_uncore_clockbox, one box (icl_uncore_clock_format_group, \
                  icl_uncore_events)",
        },
    ],
};

/// Every machine with a tree.
const MACHINES: &[&Machine] = &[&SPR_2S, &SKL_CLIENT, &ZEN4, &ADL];

/// The names of the machines with trees.
pub fn names() -> Vec<&'static str> {
    MACHINES.iter().map(|m| m.name).collect()
}

/// The arguments of every call of `name(...)` in `source`, string literals unquoted.
fn macro_calls(source: &str, name: &str) -> Vec<Vec<String>> {
    let mut calls = Vec::new();
    let pattern = format!("{name}(");
    let mut rest = source;
    while let Some(at) = rest.find(&pattern) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + pattern.len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let mut args = vec![String::new()];
        let mut quoted = false;
        let mut depth = 0;
        let mut comment = false;
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            // A C comment between the arguments (`/* cpu_clk_unhalted.thread */`) is none.
            if comment {
                comment = !(c == '*' && chars.next_if_eq(&'/').is_some());
                continue;
            }
            if !quoted && c == '/' && chars.next_if_eq(&'*').is_some() {
                comment = true;
                continue;
            }
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted && depth == 0 => args.push(String::new()),
                '(' if !quoted => depth += 1,
                ')' if !quoted && depth == 0 => break,
                ')' if !quoted => depth -= 1,
                c if quoted || !c.is_whitespace() => args.last_mut().unwrap().push(c),
                _ => {}
            }
        }
        calls.push(args);
    }
    calls
}

/// The body of the array `name[] = { ... };` in `source`.
fn array<'a>(source: &'a str, name: &str) -> Result<&'a str, String> {
    let pattern = format!("{name}[] = {{");
    let start = source
        .match_indices(&pattern)
        .map(|(at, _)| at)
        .find(|&at| {
            !source[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .ok_or_else(|| format!("no array {name}"))?;
    let body = &source[start..];
    let end = body
        .find("};")
        .ok_or_else(|| format!("{name} has no end"))?;
    Ok(&body[..end])
}

/// The format variables of `source`: variable to (field name, bits).
fn format_vars(source: &str) -> BTreeMap<String, (String, String)> {
    let mut vars = BTreeMap::new();
    for args in macro_calls(source, "DEFINE_UNCORE_FORMAT_ATTR") {
        if let [var, name, bits] = args.as_slice() {
            vars.insert(var.clone(), (name.clone(), bits.clone()));
        }
    }
    for args in macro_calls(source, "DEFINE_CSTATE_FORMAT_ATTR") {
        if let [var, name, bits] = args.as_slice() {
            vars.insert(var.clone(), (name.clone(), bits.clone()));
        }
    }
    for args in macro_calls(source, "PMU_FORMAT_ATTR") {
        if let [name, bits] = args.as_slice() {
            vars.insert(name.clone(), (name.clone(), bits.clone()));
        }
    }
    vars
}

/// The string literal assigned to `lvalue` in `source` (`lvalue =` and `"..."`, the literal
/// on the next line or the same).
fn assigned(source: &str, lvalue: &str) -> Result<String, String> {
    let at = source
        .find(&format!("{lvalue} ="))
        .ok_or_else(|| format!("no assignment to {lvalue}"))?;
    let rest = &source[at + lvalue.len()..];
    let statement = &rest[..rest.find(';').ok_or_else(|| format!("{lvalue}: no `;`"))?];
    let (_, literal) = statement
        .split_once('"')
        .ok_or_else(|| format!("{lvalue}: not a string"))?;
    let (literal, _) = literal
        .split_once('"')
        .ok_or_else(|| format!("{lvalue}: no closing quote"))?;
    Ok(literal.to_string())
}

/// The body of `#define name` in `source`, its continued lines joined.
fn define<'a>(source: &'a str, name: &str) -> Result<&'a str, String> {
    let start = source
        .find(&format!("#define {name}"))
        .ok_or_else(|| format!("no #define {name}"))?;
    let body = &source[start..];
    let mut end = 0;
    for line in body.split_inclusive('\n') {
        end += line.len();
        if !line.trim_end().ends_with('\\') {
            break;
        }
    }
    Ok(&body[..end])
}

/// The `&format_attr_X.attr` names of array `list`.
fn format_list(source: &str, list: &str) -> Result<Vec<String>, String> {
    Ok(array(source, list)?
        .split("&format_attr_")
        .skip(1)
        .map(|s| s.split('.').next().unwrap_or_default().to_string())
        .collect())
}

/// The generic events of arch/x86/events/core.c (`generic`), each as the map `map` of
/// `source` (intel/core.c's `intel_perfmon_event_map`, amd/core.c's
/// `amd_zen4_perfmon_event_map`) encodes it and x86_event_sysfs_show writes it (the event
/// select's bits 32-35 above its low byte where the map is AMD's, as amd_event_sysfs_show
/// passes it); an event the map gives no code is not shown (`is_visible`).
fn generic_events(source: &str, map: &str, generic: &str) -> Result<Vec<(String, String)>, String> {
    let start = source
        .find(&format!("{map}["))
        .ok_or_else(|| format!("no {map}"))?;
    let body = &source[start..];
    let body = &body[body.find('{').ok_or("no map body")?..body.find("};").ok_or("no end")?];
    let amd = map.starts_with("amd_");
    let mut codes = BTreeMap::new();
    for line in body.lines() {
        let line = line.split("/*").next().unwrap_or_default();
        let line: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        if let Some((id, code)) = line
            .strip_prefix('[')
            .and_then(|l| l.split_once("]="))
            .map(|(id, code)| (id.to_string(), code.trim_end_matches(',').to_string()))
        {
            let code = u64::from_str_radix(code.trim_start_matches("0x"), 16)
                .map_err(|e| format!("{id}: {code}: {e}"))?;
            codes.insert(id, code);
        }
    }
    let mut events = Vec::new();
    for args in macro_calls(generic, "EVENT_ATTR") {
        let [name, id] = args.as_slice() else {
            continue;
        };
        let Some(&config) = codes
            .get(&format!("PERF_COUNT_HW_{id}"))
            .filter(|c| **c != 0)
        else {
            continue;
        };
        let event = match amd {
            true => (config & 0xff) | ((config >> 24) & 0xf00),
            false => config & 0xff,
        };
        let mut text = format!("event=0x{event:02x}");
        let umask = (config >> 8) & 0xff;
        if umask != 0 {
            let _ = write!(text, ",umask=0x{umask:02x}");
        }
        for (bit, word) in [(18, "edge"), (19, "pc"), (21, "any"), (23, "inv")] {
            if config & (1 << bit) != 0 {
                let _ = write!(text, ",{word}");
            }
        }
        let cmask = (config >> 24) & 0xff;
        if cmask != 0 {
            let _ = write!(text, ",cmask=0x{cmask:02x}");
        }
        events.push((name.clone(), text));
    }
    if events.is_empty() {
        return Err("no generic events".into());
    }
    Ok(events)
}

/// One PMU's files, relative to its directory, with their contents (`kernel`: the sources'
/// root, for a second file).
fn pmu_files(
    spec: &PmuSpec,
    source: &str,
    kernel: &Path,
) -> Result<BTreeMap<String, String>, String> {
    let vars = format_vars(source);
    let names: Vec<String> = match spec.formats {
        Formats::List(list) => format_list(source, list)?,
        Formats::Vars(list) => list.iter().map(|s| s.to_string()).collect(),
        Formats::Hybrid {
            base,
            extra,
            hybrid,
        } => {
            let masks: BTreeMap<String, String> = macro_calls(source, "FORMAT_ATTR_HYBRID")
                .into_iter()
                .filter_map(|args| match args.as_slice() {
                    [var, mask] => Some((var.clone(), mask.clone())),
                    _ => None,
                })
                .collect();
            let mut names = format_list(source, base)?;
            for args in macro_calls(define(source, extra)?, "FORMAT_HYBRID_PTR") {
                let var = &args[0];
                let mask = masks
                    .get(var)
                    .ok_or_else(|| format!("no FORMAT_ATTR_HYBRID({var}, ...)"))?;
                if hybrid.part(mask).is_some() {
                    names.push(var.clone());
                }
            }
            names
        }
        Formats::Lists(lists) => {
            let mut names = Vec::new();
            for list in lists {
                names.extend(format_list(source, list)?);
            }
            names
        }
    };
    let mut files = BTreeMap::new();
    for var in names {
        let (name, bits) = vars
            .get(&var)
            .ok_or_else(|| format!("{}: no format variable {var}", spec.source))?;
        files.insert(format!("format/{name}"), bits.clone());
    }
    let events: Vec<(String, String)> = match spec.events {
        Events::None => Vec::new(),
        Events::Descs(list) => macro_calls(array(source, list)?, "INTEL_UNCORE_EVENT_DESC")
            .into_iter()
            .filter_map(|args| match args.as_slice() {
                [name, value] => Some((name.clone(), value.clone())),
                _ => None,
            })
            .collect(),
        Events::Named(macro_name, wanted) => {
            let found: Vec<(String, String)> = macro_calls(source, macro_name)
                .into_iter()
                .filter_map(|args| match args.as_slice() {
                    [name, _, value] => Some((name.clone(), value.clone())),
                    _ => None,
                })
                .filter(|(name, _)| wanted.contains(&name.split('.').next().unwrap_or_default()))
                .collect();
            for want in wanted {
                if !found.iter().any(|(name, _)| name == want) {
                    return Err(format!("{}: no event {want}", spec.source));
                }
            }
            found
        }
        Events::Vars(macro_name, wanted) => {
            let found: Vec<(String, String)> = macro_calls(source, macro_name)
                .into_iter()
                .filter_map(|args| match args.as_slice() {
                    [name, var, value] if wanted.contains(&var.as_str()) => {
                        Some((name.clone(), value.clone()))
                    }
                    _ => None,
                })
                .collect();
            if found.len() != wanted.len() {
                return Err(format!("{}: not every one of {wanted:?}", spec.source));
            }
            found
        }
        Events::Hybrid {
            lists,
            hybrid,
            generic,
        } => {
            let attrs: BTreeMap<String, (String, String, String)> =
                macro_calls(source, "EVENT_ATTR_STR_HYBRID")
                    .into_iter()
                    .filter_map(|args| match args.as_slice() {
                        [name, var, value, mask] => {
                            Some((var.clone(), (name.clone(), value.clone(), mask.clone())))
                        }
                        _ => None,
                    })
                    .collect();
            let mut found = Vec::new();
            for list in lists {
                for args in macro_calls(array(source, list)?, "EVENT_PTR") {
                    let (name, value, mask) = attrs
                        .get(&args[0])
                        .ok_or_else(|| format!("no EVENT_ATTR_STR_HYBRID of {}", args[0]))?;
                    if let Some(part) = hybrid.part(mask) {
                        let value = value
                            .split(';')
                            .nth(part)
                            .ok_or_else(|| format!("{name}: no part {part} in {value}"))?;
                        found.push((name.clone(), value.to_string()));
                    }
                }
            }
            let text = std::fs::read_to_string(kernel.join(generic))
                .map_err(|e| format!("{generic}: {e}"))?;
            found.extend(generic_events(source, "intel_perfmon_event_map", &text)?);
            found
        }
        Events::Core {
            lists,
            quirks,
            generic,
            map,
        } => {
            let mut attrs: BTreeMap<String, (String, String)> = BTreeMap::new();
            for args in macro_calls(source, "EVENT_ATTR_STR") {
                if let [name, var, value] = args.as_slice() {
                    attrs.insert(var.clone(), (name.clone(), value.clone()));
                }
            }
            for args in macro_calls(source, "EVENT_ATTR_STR_HT") {
                if let [name, var, _noht, ht] = args.as_slice() {
                    attrs.insert(var.clone(), (name.clone(), ht.clone()));
                }
            }
            for var in quirks {
                let ht = assigned(source, &format!("event_attr_{var}.event_str_ht"))?;
                attrs
                    .get_mut(*var)
                    .ok_or_else(|| format!("no EVENT_ATTR_STR_HT of {var}"))?
                    .1 = ht;
            }
            let mut found = Vec::new();
            for list in lists {
                for args in macro_calls(array(source, list)?, "EVENT_PTR") {
                    let (name, value) = attrs
                        .get(&args[0])
                        .ok_or_else(|| format!("no EVENT_ATTR_STR of {}", args[0]))?;
                    found.push((name.clone(), value.clone()));
                }
            }
            let text = std::fs::read_to_string(kernel.join(generic))
                .map_err(|e| format!("{generic}: {e}"))?;
            found.extend(generic_events(source, map, &text)?);
            found
        }
    };
    for (name, value) in events {
        files.insert(format!("events/{name}"), value);
    }
    Ok(files)
}

/// Every file of `machine`'s tree, relative to its root, with its contents (each written with
/// a newline after it, as the kernel's show functions write them).
fn tree(machine: &Machine, kernel: &Path) -> Result<BTreeMap<String, String>, String> {
    let mut files = BTreeMap::new();
    let mut source_note = format!(
        "{}\n\nA fake sysfs root for tests: the PMUs under bus/event_source/devices as {KERNEL}\n\
         defines them. Generated by backend-linux/tests/machines.rs; do not edit (write it again\n\
         with COUNTERHAL_WRITE_MACHINES=1 cargo test -p counterhal-linux --test main machines::).\n\n",
        machine.describes
    );
    files.insert(
        "devices/system/cpu/online".to_string(),
        machine.online.into(),
    );
    for spec in machine.pmus {
        let text = std::fs::read_to_string(kernel.join(spec.source))
            .map_err(|e| format!("{}: {e}", spec.source))?;
        let own = pmu_files(spec, &text, kernel)?;
        for (path, value) in spec.files {
            if *path != "cpus" && !text.contains(&format!("\"{value}\"")) {
                return Err(format!("{}: no string \"{value}\" for {path}", spec.source));
            }
        }
        let boxes: Vec<Option<u32>> = match spec.boxes {
            0 => vec![None],
            n => (0..n).map(Some).collect(),
        };
        let names: Vec<String> = boxes
            .iter()
            .map(|b| spec.name.replace("{}", &b.unwrap_or(0).to_string()))
            .collect();
        let _ = writeln!(
            source_note,
            "{} (type {}{}): {} ({}).",
            names.join(", "),
            spec.first_type,
            if names.len() > 1 { " up" } else { "" },
            spec.source,
            spec.why.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        for (index, (name, number)) in names.iter().zip(&boxes).enumerate() {
            let dir = format!("bus/event_source/devices/{name}");
            files.insert(
                format!("{dir}/type"),
                (spec.first_type + index as u32).to_string(),
            );
            if let Some(mask) = spec.cpumask {
                files.insert(format!("{dir}/cpumask"), mask.to_string());
            }
            if let (Some(alias), Some(number)) = (spec.alias, number) {
                files.insert(
                    format!("{dir}/alias"),
                    alias.replace("{}", &number.to_string()),
                );
            }
            for (path, value) in &own {
                files.insert(format!("{dir}/{path}"), value.clone());
            }
            for (path, value) in spec.files {
                files.insert(format!("{dir}/{path}"), value.to_string());
            }
        }
    }
    files.insert("SOURCE".to_string(), source_note.trim_end().to_string());
    Ok(files)
}

/// The kernel files the trees come from, extracted into a scratch directory (removed after).
fn extract() -> Result<(PathBuf, PathBuf), String> {
    let scratch = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-machines-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let mut sources: Vec<&str> = MACHINES
        .iter()
        .flat_map(|m| m.pmus.iter())
        .flat_map(|p| match p.events {
            Events::Hybrid { generic, .. } | Events::Core { generic, .. } => {
                vec![p.source, generic]
            }
            _ => vec![p.source],
        })
        .collect();
    sources.sort_unstable();
    sources.dedup();
    let status = Command::new("tar")
        .arg("-xJf")
        .arg(TARBALL)
        .arg("-C")
        .arg(&scratch)
        .arg("--wildcards")
        .args(sources.iter().map(|s| format!("*/{s}")))
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    if !status.success() {
        return Err(format!("tar -xJf {TARBALL} failed: {status}"));
    }
    let top = std::fs::read_dir(&scratch)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("arch").is_dir())
        .ok_or("no arch/ in the tarball")?;
    Ok((top, scratch))
}

/// Every file under `dir`, relative to it, with its contents trimmed.
fn read_tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path.strip_prefix(base).unwrap().display().to_string();
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                out.insert(rel, text.trim_end().to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Oracle: the kernel's PMU definitions (Linux 6.12's arch/x86/events: rapl.c, msr.c,
/// intel/uncore_snbep.c, intel/uncore_snb.c, amd/uncore.c). Each committed tree holds exactly
/// the files its machine's PMUs get from them.
#[test]
fn the_machine_trees_are_the_kernels_definitions() {
    if !Path::new(TARBALL).exists() {
        counterhal_conformance::skip!(
            Need::Tools,
            "{TARBALL} is absent (Debian package linux-source-6.12)"
        );
    }
    let (kernel, scratch) = extract().unwrap();
    let write = std::env::var_os("COUNTERHAL_WRITE_MACHINES").is_some();
    let mut stale = Vec::new();
    for machine in MACHINES {
        let expected = tree(machine, &kernel).unwrap();
        let dir = root(machine.name);
        if write {
            let _ = std::fs::remove_dir_all(&dir);
            for (path, text) in &expected {
                let path = dir.join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, format!("{text}\n")).unwrap();
            }
        }
        let committed = read_tree(&dir);
        if committed != expected {
            let differ: Vec<&String> = expected
                .keys()
                .chain(committed.keys())
                .filter(|k| expected.get(*k) != committed.get(*k))
                .collect();
            stale.push(format!("{}: {differ:?}", machine.name));
        }
        let pmus = expected.keys().filter(|k| k.ends_with("/type")).count();
        let events = expected
            .keys()
            .filter(|k| k.contains("/events/") && !k.contains('.'))
            .count();
        println!("{}: {pmus} PMUs, {events} event aliases", machine.name);
    }
    std::fs::remove_dir_all(&scratch).unwrap();
    assert!(
        stale.is_empty(),
        "trees differ from the kernel's definitions (COUNTERHAL_WRITE_MACHINES=1 writes them): {stale:?}"
    );
}
