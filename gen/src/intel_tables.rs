//! The libpfm4 tables of the Intel models whose generated data libpfm4 adds to (aliases,
//! dropped names, offcore events, threshold masks): which header and array each is, and one
//! walk over the models they cover.

use std::path::Path;

use crate::GenError;
use crate::model::{GenModel, Provenance};

/// The libpfm4 table whose spellings a generated model gets as aliases.
pub struct AliasTable {
    /// Our model id.
    pub id: &'static str,
    /// The header under lib/events.
    pub file: &'static str,
    /// Its entry array.
    pub array: &'static str,
    /// libpfm4's PMU constant for the model: unit masks restricted to another model
    /// (`.umodel`) are left out.
    pub pmu: &'static str,
}

impl AliasTable {
    /// Its entries and unit-mask arrays, read from the libpfm4 snapshot at `root`.
    ///
    /// # Errors
    /// A missing or malformed header.
    pub fn read(&self, root: &Path) -> Result<crate::cparse::Table, GenError> {
        crate::cparse::read_table(
            root,
            self.file,
            "intel_x86_entry_t",
            "intel_x86_umask_t",
            self.array,
        )
    }

    /// Where its facts came from: libpfm4 at `commit`, this header.
    pub fn provenance(&self, commit: &str) -> Provenance {
        Provenance {
            source: crate::libpfm4::SOURCE.to_string(),
            commit: commit.to_string(),
            file: format!("lib/events/{}", self.file),
        }
    }
}

/// Calls `add` with each model of `models` that [`INTEL_TABLES`] lists, its table and the
/// table's entries and unit-mask arrays, read once from the libpfm4 snapshot at `root`.
///
/// # Errors
/// A missing or malformed header; `add`'s errors.
pub fn for_each_intel_model(
    models: &mut [GenModel],
    root: &Path,
    mut add: impl FnMut(&mut GenModel, &AliasTable, &crate::cparse::Table) -> Result<(), GenError>,
) -> Result<(), GenError> {
    for t in INTEL_TABLES {
        if let Some(model) = models.iter_mut().find(|m| m.id == t.id) {
            add(model, t, &t.read(root)?)?;
        }
    }
    Ok(())
}

const fn alias(
    id: &'static str,
    file: &'static str,
    array: &'static str,
    pmu: &'static str,
) -> AliasTable {
    AliasTable {
        id,
        file,
        array,
        pmu,
    }
}

/// The generated Intel models libpfm4 also has, and its table for each (by libpfm4's PMU for
/// the CPU, which may cover several of our models).
pub const INTEL_TABLES: &[AliasTable] = &[
    alias(
        "nhm",
        "intel_nhm_events.h",
        "intel_nhm_pe",
        "PFM_PMU_INTEL_NHM",
    ),
    alias(
        "nhm_ex",
        "intel_nhm_events.h",
        "intel_nhm_pe",
        "PFM_PMU_INTEL_NHM_EX",
    ),
    alias(
        "wsm",
        "intel_wsm_events.h",
        "intel_wsm_pe",
        "PFM_PMU_INTEL_WSM",
    ),
    alias(
        "wsm_dp",
        "intel_wsm_events.h",
        "intel_wsm_pe",
        "PFM_PMU_INTEL_WSM_DP",
    ),
    alias(
        "snb",
        "intel_snb_events.h",
        "intel_snb_pe",
        "PFM_PMU_INTEL_SNB",
    ),
    alias(
        "snb_ep",
        "intel_snb_events.h",
        "intel_snb_pe",
        "PFM_PMU_INTEL_SNB_EP",
    ),
    alias(
        "ivb",
        "intel_ivb_events.h",
        "intel_ivb_pe",
        "PFM_PMU_INTEL_IVB",
    ),
    alias(
        "ivb_ep",
        "intel_ivb_events.h",
        "intel_ivb_pe",
        "PFM_PMU_INTEL_IVB_EP",
    ),
    alias(
        "hsw",
        "intel_hsw_events.h",
        "intel_hsw_pe",
        "PFM_PMU_INTEL_HSW",
    ),
    alias(
        "hsw_ep",
        "intel_hsw_events.h",
        "intel_hsw_pe",
        "PFM_PMU_INTEL_HSW_EP",
    ),
    alias(
        "bdw",
        "intel_bdw_events.h",
        "intel_bdw_pe",
        "PFM_PMU_INTEL_BDW",
    ),
    alias(
        "bdw_ep",
        "intel_bdw_events.h",
        "intel_bdw_pe",
        "PFM_PMU_INTEL_BDW_EP",
    ),
    alias(
        "skl",
        "intel_skl_events.h",
        "intel_skl_pe",
        "PFM_PMU_INTEL_SKL",
    ),
    alias(
        "skx",
        "intel_skl_events.h",
        "intel_skl_pe",
        "PFM_PMU_INTEL_SKX",
    ),
    alias(
        "clx",
        "intel_skl_events.h",
        "intel_skl_pe",
        "PFM_PMU_INTEL_CLX",
    ),
    alias(
        "icl",
        "intel_icl_events.h",
        "intel_icl_pe",
        "PFM_PMU_INTEL_ICL",
    ),
    alias(
        "icx",
        "intel_icl_events.h",
        "intel_icl_pe",
        "PFM_PMU_INTEL_ICX",
    ),
    alias(
        "spr",
        "intel_spr_events.h",
        "intel_spr_pe",
        "PFM_PMU_INTEL_SPR",
    ),
    // CPUs whose libpfm4 PMU has another name: libpfm4's `icl` covers Tiger Lake and Rocket
    // Lake, `bdw_ep` Broadwell-DE, `emr` uses Sapphire Rapids' table.
    alias(
        "tgl",
        "intel_icl_events.h",
        "intel_icl_pe",
        "PFM_PMU_INTEL_ICL",
    ),
    alias(
        "rkl",
        "intel_icl_events.h",
        "intel_icl_pe",
        "PFM_PMU_INTEL_ICL",
    ),
    alias(
        "bdw_de",
        "intel_bdw_events.h",
        "intel_bdw_pe",
        "PFM_PMU_INTEL_BDW_EP",
    ),
    alias(
        "emr",
        "intel_spr_events.h",
        "intel_spr_pe",
        "PFM_PMU_INTEL_EMR",
    ),
    alias(
        "gnr",
        "intel_gnr_events.h",
        "intel_gnr_pe",
        "PFM_PMU_INTEL_GNR",
    ),
    alias(
        "knl",
        "intel_knl_events.h",
        "intel_knl_pe",
        "PFM_PMU_INTEL_KNL",
    ),
    alias(
        "atom",
        "intel_atom_events.h",
        "intel_atom_pe",
        "PFM_PMU_INTEL_ATOM",
    ),
    alias(
        "slm",
        "intel_slm_events.h",
        "intel_slm_pe",
        "PFM_PMU_INTEL_SLM",
    ),
    alias(
        "glm",
        "intel_glm_events.h",
        "intel_glm_pe",
        "PFM_PMU_INTEL_GLM",
    ),
    alias(
        "tmt",
        "intel_tmt_events.h",
        "intel_tmt_pe",
        "PFM_PMU_INTEL_TMT",
    ),
    alias(
        "adl_glc",
        "intel_adl_glc_events.h",
        "intel_adl_glc_pe",
        "PFM_PMU_INTEL_ADL_GLC",
    ),
    alias(
        "adl_grt",
        "intel_adl_grt_events.h",
        "intel_adl_grt_pe",
        "PFM_PMU_INTEL_ADL_GRT",
    ),
];
