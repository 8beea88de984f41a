//! libpfm4's K8 revisions (AMD family 0x0f) as models of their own: one table per revision
//! PMU libpfm4 defines (`amd64_k8_revb`..`revg` in `lib/pfmlib_amd64_k8.c`), each with the
//! events and unit masks its revision flags keep ([`crate::revisions`]); revisions with the
//! same table share one model, named after the latest of them, the others its aliases.

use std::path::Path;

use crate::GenError;
use crate::libpfm4::{Table, model_on};
use crate::model::{GenModel, Signature};
use crate::revisions::Revisions;

/// libpfm4's K8 table. Its id, `k8`, is our own name for the latest revision's model.
pub const K8_TABLE: Table = Table {
    file: "amd64_events_k8.h",
    array: "amd64_k8_pe",
    id: "k8",
    description: "AMD K8 (Athlon 64, Opteron, Turion 64: family 0x0f)",
    family: 0x0f,
    models: &[],
    revisions: Some("pfmlib_amd64_k8.c"),
    counters: 4,
};

/// Every stepping but 0.
const FROM_STEPPING_1: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
/// Every stepping but 0 and 1.
const FROM_STEPPING_2: &[u32] = &[2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// Display models `first..=last` of family 0x0f, with the steppings (empty: any).
type ModelRange = (u32, u32, &'static [u32]);

/// The family-0x0f CPUs each revision PMU serves, as libpfm4's `amd64_get_revision`
/// (`lib/pfmlib_amd64.c`) decides by display model and stepping: (first model, last model,
/// steppings, empty for any). The rules are disjoint and cover every model, so the order of
/// the models does not matter.
const DETECTION: &[(&str, &[ModelRange])] = &[
    // Models 0x0-0xf are revision C but for model 4 stepping 0 and model 5 steppings 0 and 1;
    // models no case names are revision B.
    (
        "amd64_k8_revb",
        &[
            (0x4, 0x4, &[0]),
            (0x5, 0x5, &[0, 1]),
            (0x90, 0xbf, &[]),
            (0xd0, 0xff, &[]),
        ],
    ),
    (
        "amd64_k8_revc",
        &[
            (0x0, 0x3, &[]),
            (0x4, 0x4, FROM_STEPPING_1),
            (0x5, 0x5, FROM_STEPPING_2),
            (0x6, 0xf, &[]),
        ],
    ),
    ("amd64_k8_revd", &[(0x10, 0x1f, &[])]),
    ("amd64_k8_reve", &[(0x20, 0x3f, &[])]),
    ("amd64_k8_revf", &[(0x40, 0x5f, &[]), (0xc0, 0xcf, &[])]),
    ("amd64_k8_revg", &[(0x60, 0x8f, &[])]),
];

/// The K8 models from the libpfm4 snapshot at `root`, oldest revision first: one per run of
/// revision PMUs with the same table, with `k8` an alias of the latest.
///
/// # Errors
/// As [`crate::libpfm4::models`]; also a revision PMU no detection rule places.
pub fn k8_models(root: &Path, commit: &str) -> Result<Vec<GenModel>, GenError> {
    let t = &K8_TABLE;
    let table = crate::cparse::read_table(root, t.file, "amd64_entry_t", "amd64_umask_t", t.array)?;
    let revisions = Revisions::read(root)?;
    let source = t.revisions.unwrap_or_default();
    let mut pmus = revisions.pmus(root, source)?;
    pmus.sort_by_key(|p| p.number);
    let mut models: Vec<(GenModel, Vec<String>)> = Vec::new();
    for pmu in &pmus {
        let model = model_on(&table, commit, t, Some((&revisions, pmu.number)))?;
        match models.last_mut() {
            Some((last, names))
                if last.events == model.events && last.left_out == model.left_out =>
            {
                names.push(pmu.name.clone());
            }
            _ => models.push((model, vec![pmu.name.clone()])),
        }
    }
    let count = models.len();
    models
        .into_iter()
        .enumerate()
        .map(|(i, (mut model, mut names))| {
            model.signatures = names
                .iter()
                .map(|name| signatures(source, name))
                .collect::<Result<Vec<_>, _>>()?
                .concat();
            model.signatures.sort();
            let letters: Vec<String> = names
                .iter()
                .map(|n| n.rsplit("rev").next().unwrap_or(n).to_ascii_uppercase())
                .collect();
            model.description = format!(
                "AMD K8 revision{} {} (Athlon 64, Opteron, Turion 64: family 0x0f) core PMU",
                if letters.len() > 1 { "s" } else { "" },
                letters.join(" and ")
            );
            model.id = names.pop().unwrap_or_default();
            if i + 1 == count {
                names.push(t.id.to_string());
            }
            model.model_aliases = names;
            Ok(model)
        })
        .collect()
}

/// The match rules of revision PMU `name`.
fn signatures(source: &str, name: &str) -> Result<Vec<Signature>, GenError> {
    let (_, rules) = DETECTION.iter().find(|(n, _)| *n == name).ok_or_else(|| {
        GenError::Data(format!(
            "lib/{source}: revision PMU `{name}` has no detection rule (see amd64_get_revision)"
        ))
    })?;
    Ok(rules
        .iter()
        .map(|&(first, last, steppings)| Signature {
            vendor: "amd",
            family: K8_TABLE.family,
            model: Some(first),
            last_model: Some(last),
            steppings: steppings.to_vec(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The revision libpfm4's `amd64_get_revision` gives family 0x0f model `model` stepping
    /// `stepping`, written out as its `switch` reads.
    fn libpfm4_revision(model: u32, stepping: u32) -> &'static str {
        match model >> 4 {
            0 if (model == 5 && stepping < 2) || (model == 4 && stepping == 0) => "amd64_k8_revb",
            0 => "amd64_k8_revc",
            1 => "amd64_k8_revd",
            2 | 3 => "amd64_k8_reve",
            4 | 5 | 0xc => "amd64_k8_revf",
            6..=8 => "amd64_k8_revg",
            _ => "amd64_k8_revb",
        }
    }

    #[test]
    fn every_model_and_stepping_has_libpfm4s_revision_and_one_only() {
        for model in 0..=0xff {
            for stepping in 0..=0xf {
                let matching: Vec<&str> = DETECTION
                    .iter()
                    .filter(|(_, rules)| {
                        rules.iter().any(|&(first, last, steppings)| {
                            (first..=last).contains(&model)
                                && (steppings.is_empty() || steppings.contains(&stepping))
                        })
                    })
                    .map(|(name, _)| *name)
                    .collect();
                assert_eq!(
                    matching,
                    [libpfm4_revision(model, stepping)],
                    "model {model:#x} stepping {stepping}"
                );
            }
        }
    }
}
