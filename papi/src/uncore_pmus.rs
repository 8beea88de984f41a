//! libpfm4's Intel uncore PMUs, by CPU model: the facts PAPI 7.0's perf_event_uncore component
//! names its events by (`skx_unc_imc0::UNC_M_CAS_COUNT:RD`). Each row is one of libpfm4's
//! PMU families, read from libpfm4 4.13's sources (the file named on each model): its name
//! (`.name`, with the box number where there are several), how many boxes it defines (its
//! `DEFINE_*` lines, as Debian's libpfm4 4.13 lists them), the kernel PMU it opens (`.perf_name`)
//! and which of the event database's uncore PMUs (the kernel's perf JSON `Unit`s) has its
//! events. Only models where both libpfm4 and the database have the uncore are listed.
//!
//! The kernel PMU is libpfm4's word, as PAPI opens it, including where it differs from what
//! Linux 6.12 names (`skx_unc_irp` opens `uncore_irp`, where Linux's SKX has six IRP boxes
//! `uncore_irp_0`..; `knl_unc_imc_uclk0` opens `uncore_mc_uclk_0`, where Linux names the box
//! `uncore_imc_uclk_0`): there, as with PAPI, the event is not found on such a machine.

/// One of libpfm4's uncore PMU families on a CPU model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UncoreFamily {
    /// libpfm4's PMU name without the box number (`skx_unc_imc`; `skx_unc_pcu`, one PMU).
    pub libpfm4: &'static str,
    /// How many boxes libpfm4 defines (`skx_unc_imc0` to `skx_unc_imc5`: 6); 0 for one PMU
    /// without a number.
    pub boxes: u8,
    /// The kernel PMU libpfm4 opens (`perf_name`), without the box number: box N of a family
    /// with boxes is `{kernel}_N` (`uncore_imc_0`); a single PMU is `kernel` itself.
    pub kernel: &'static str,
    /// The event database's uncore PMU whose events it counts (`uncore_imc`).
    pub database: &'static str,
}

const fn family(
    libpfm4: &'static str,
    boxes: u8,
    kernel: &'static str,
    database: &'static str,
) -> UncoreFamily {
    UncoreFamily {
        libpfm4,
        boxes,
        kernel,
        database,
    }
}

/// Sandy Bridge-EP: lib/pfmlib_intel_snbep_unc_{cbo,ha,imc,pcu,qpi,r2pcie,r3qpi,ubo}.c.
const SNBEP: &[UncoreFamily] = &[
    family("snbep_unc_cbo", 8, "uncore_cbox", "uncore_cbox"),
    family("snbep_unc_ha", 0, "uncore_ha", "uncore_ha"),
    family("snbep_unc_imc", 4, "uncore_imc", "uncore_imc"),
    family("snbep_unc_pcu", 0, "uncore_pcu", "uncore_pcu"),
    family("snbep_unc_qpi", 2, "uncore_qpi", "uncore_qpi"),
    family("snbep_unc_r2pcie", 0, "uncore_r2pcie", "uncore_r2pcie"),
    family("snbep_unc_r3qpi", 2, "uncore_r3qpi", "uncore_r3qpi"),
    family("snbep_unc_ubo", 0, "uncore_ubox", "uncore_ubox"),
];

/// Ivy Bridge-EP: lib/pfmlib_intel_ivbep_unc_{cbo,ha,imc,irp,pcu,qpi,r2pcie,r3qpi,ubo}.c.
const IVBEP: &[UncoreFamily] = &[
    family("ivbep_unc_cbo", 15, "uncore_cbox", "uncore_cbox"),
    family("ivbep_unc_ha", 2, "uncore_ha", "uncore_ha"),
    family("ivbep_unc_imc", 8, "uncore_imc", "uncore_imc"),
    family("ivbep_unc_irp", 0, "uncore_irp", "uncore_irp"),
    family("ivbep_unc_pcu", 0, "uncore_pcu", "uncore_pcu"),
    family("ivbep_unc_qpi", 3, "uncore_qpi", "uncore_qpi"),
    family("ivbep_unc_r2pcie", 0, "uncore_r2pcie", "uncore_r2pcie"),
    family("ivbep_unc_r3qpi", 3, "uncore_r3qpi", "uncore_r3qpi"),
    family("ivbep_unc_ubo", 0, "uncore_ubox", "uncore_ubox"),
];

/// Haswell-EP: lib/pfmlib_intel_hswep_unc_{cbo,ha,imc,irp,pcu,qpi,r2pcie,r3qpi,sbo,ubo}.c.
const HSWEP: &[UncoreFamily] = &[
    family("hswep_unc_cbo", 18, "uncore_cbox", "uncore_cbox"),
    family("hswep_unc_ha", 2, "uncore_ha", "uncore_ha"),
    family("hswep_unc_imc", 8, "uncore_imc", "uncore_imc"),
    family("hswep_unc_irp", 0, "uncore_irp", "uncore_irp"),
    family("hswep_unc_pcu", 0, "uncore_pcu", "uncore_pcu"),
    family("hswep_unc_qpi", 2, "uncore_qpi", "uncore_qpi"),
    family("hswep_unc_r2pcie", 0, "uncore_r2pcie", "uncore_r2pcie"),
    family("hswep_unc_r3qpi", 3, "uncore_r3qpi", "uncore_r3qpi"),
    family("hswep_unc_sbo", 4, "uncore_sbox", "uncore_sbox"),
    family("hswep_unc_ubo", 0, "uncore_ubox", "uncore_ubox"),
];

/// Broadwell-EP: lib/pfmlib_intel_bdx_unc_{cbo,ha,imc,irp,pcu,qpi,r2pcie,r3qpi,sbo,ubo}.c.
const BDX: &[UncoreFamily] = &[
    family("bdx_unc_cbo", 24, "uncore_cbox", "uncore_cbox"),
    family("bdx_unc_ha", 2, "uncore_ha", "uncore_ha"),
    family("bdx_unc_imc", 8, "uncore_imc", "uncore_imc"),
    family("bdx_unc_irp", 0, "uncore_irp", "uncore_irp"),
    family("bdx_unc_pcu", 0, "uncore_pcu", "uncore_pcu"),
    family("bdx_unc_qpi", 3, "uncore_qpi", "uncore_qpi"),
    family("bdx_unc_r2pcie", 0, "uncore_r2pcie", "uncore_r2pcie"),
    family("bdx_unc_r3qpi", 3, "uncore_r3qpi", "uncore_r3qpi"),
    family("bdx_unc_sbo", 4, "uncore_sbox", "uncore_sbox"),
    family("bdx_unc_ubo", 0, "uncore_ubox", "uncore_ubox"),
];

/// Skylake-X (and Cascade Lake-X, the same CPUID model, which libpfm4's `skx_unc` PMUs
/// detect too): lib/pfmlib_intel_skx_unc_{cha,iio,imc,irp,m2m,m3upi,pcu,ubo,upi}.c.
const SKX: &[UncoreFamily] = &[
    family("skx_unc_cha", 28, "uncore_cha", "uncore_cha"),
    family("skx_unc_iio", 6, "uncore_iio", "uncore_iio"),
    family("skx_unc_imc", 6, "uncore_imc", "uncore_imc"),
    family("skx_unc_irp", 0, "uncore_irp", "uncore_irp"),
    family("skx_unc_m2m", 2, "uncore_m2m", "uncore_m2m"),
    family("skx_unc_m3upi", 3, "uncore_m3upi", "uncore_m3upi"),
    family("skx_unc_pcu", 0, "uncore_pcu", "uncore_pcu"),
    family("skx_unc_ubo", 0, "uncore_ubox", "uncore_ubox"),
    family("skx_unc_upi", 3, "uncore_upi", "uncore_upi"),
];

/// Knights Landing: lib/pfmlib_intel_knl_unc_{cha,edc,imc,m2pcie}.c (the database's
/// `uncore_imc_dclk` is the kernel's `imc`, whose boxes libpfm4's `knl_unc_imc` opens).
const KNL: &[UncoreFamily] = &[
    family("knl_unc_cha", 38, "uncore_cha", "uncore_cha"),
    family("knl_unc_edc_uclk", 8, "uncore_edc_uclk", "uncore_edc_uclk"),
    family("knl_unc_edc_eclk", 8, "uncore_edc_eclk", "uncore_edc_eclk"),
    family("knl_unc_imc", 6, "uncore_imc", "uncore_imc_dclk"),
    family("knl_unc_imc_uclk", 2, "uncore_mc_uclk", "uncore_imc_uclk"),
    family("knl_unc_m2pcie", 0, "uncore_m2pcie", "uncore_m2pcie"),
];

/// Sandy Bridge (client): lib/pfmlib_intel_snb_unc.c.
const SNB: &[UncoreFamily] = &[family("snb_unc_cbo", 4, "uncore_cbox", "uncore_cbox")];

/// Ivy Bridge (client): lib/pfmlib_intel_ivb_unc.c.
const IVB: &[UncoreFamily] = &[family("ivb_unc_cbo", 4, "uncore_cbox", "uncore_cbox")];

/// libpfm4's uncore PMU families of each CPU model (the event database's ids).
pub const MODELS: &[(&str, &[UncoreFamily])] = &[
    ("snb_ep", SNBEP),
    ("ivb_ep", IVBEP),
    ("hsw_ep", HSWEP),
    ("bdw_ep", BDX),
    ("skx", SKX),
    ("clx", SKX),
    ("knl", KNL),
    ("snb", SNB),
    ("ivb", IVB),
];

/// libpfm4's uncore PMU families of CPU model `model` (empty for a model without them).
pub fn families(model: &str) -> &'static [UncoreFamily] {
    MODELS
        .iter()
        .find(|(id, _)| *id == model)
        .map_or(&[], |(_, families)| families)
}

/// One of libpfm4's uncore PMUs: a box of a family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UncoreBox {
    /// Its family.
    pub family: &'static UncoreFamily,
    /// Its box number (`None` for a family of one PMU).
    pub number: Option<u8>,
}

impl UncoreBox {
    /// libpfm4's name of the PMU (`skx_unc_imc0`, `skx_unc_pcu`).
    pub fn libpfm4_name(&self) -> String {
        match self.number {
            Some(n) => format!("{}{n}", self.family.libpfm4),
            None => self.family.libpfm4.to_string(),
        }
    }

    /// The kernel PMU it opens (`uncore_imc_0`, `uncore_pcu`).
    pub fn kernel_name(&self) -> String {
        match self.number {
            Some(n) => format!("{}_{n}", self.family.kernel),
            None => self.family.kernel.to_string(),
        }
    }
}

/// Every box of `families`, in order.
pub fn boxes(families: &'static [UncoreFamily]) -> impl Iterator<Item = UncoreBox> {
    families.iter().flat_map(|family| {
        let numbers: Vec<Option<u8>> = match family.boxes {
            0 => vec![None],
            n => (0..n).map(Some).collect(),
        };
        numbers
            .into_iter()
            .map(move |number| UncoreBox { family, number })
    })
}

/// The box libpfm4 names `pmu` (`skx_unc_imc0`, in any case, as libpfm4 matches PMU names)
/// among `families`.
pub fn find_box(families: &'static [UncoreFamily], pmu: &str) -> Option<UncoreBox> {
    let of_family = |f: &UncoreFamily| {
        pmu.get(..f.libpfm4.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(f.libpfm4))
    };
    // Only the families whose name starts `pmu` are spelled out, box by box.
    families
        .iter()
        .enumerate()
        .filter(|(_, f)| of_family(f))
        .flat_map(|(i, _)| boxes(&families[i..=i]))
        .find(|b| b.libpfm4_name().eq_ignore_ascii_case(pmu))
}

/// Whether `pmu` is one of libpfm4's uncore PMUs listed here, on any model.
pub fn is_libpfm4_uncore(pmu: &str) -> bool {
    MODELS
        .iter()
        .any(|(_, families)| find_box(families, pmu).is_some())
}
