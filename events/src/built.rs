//! What this build of the database holds: the parts its Cargo features put in (the shipped
//! models of each architecture, the metrics, a user's events file), as constants the compiler
//! can leave the unbuilt parts' code out by.

use crate::model::EncoderKind;

/// The Cargo feature of this crate a shipped model needs: its architecture's.
pub(crate) fn feature_of(encoder: EncoderKind) -> &'static str {
    match encoder {
        EncoderKind::Armv8 => "arm-models",
        _ => "x86-models",
    }
}

/// Whether this build holds the shipped models of `feature` (the feature names itself: a
/// build may hold one part of the models, its index holding the other's too).
pub(crate) fn feature_built(feature: &str) -> bool {
    const BUILT: [(&str, bool); 2] = [
        ("x86-models", cfg!(feature = "x86-models")),
        ("arm-models", cfg!(feature = "arm-models")),
    ];
    BUILT.iter().any(|&(part, built)| part == feature && built)
}

/// The features of the shipped models this build leaves out (`x86-models`, `arm-models`).
pub(crate) fn models_left_out() -> Vec<&'static str> {
    ["x86-models", "arm-models"]
        .into_iter()
        .filter(|feature| !feature_built(feature))
        .collect()
}

/// What would give a name that needs a CPU model one: a model named or detected, and where
/// this build leaves shipped models out, the features that bring them (a build of neither
/// can do nothing else: it holds no model to name or to detect).
pub(crate) fn model_hint() -> String {
    let named = "give --cpu-model (e.g. --cpu-model skl) or run on a detected CPU";
    match models_left_out()[..] {
        [] => named.to_string(),
        [one] => format!(
            "{named}; this build leaves out the `{one}` CPU models: enable the `{one}` feature \
             of counterhal for them"
        ),
        ref all => format!(
            "this build holds no CPU model: enable the {} of counterhal",
            all.iter()
                .map(|feature| format!("`{feature}` feature"))
                .collect::<Vec<_>>()
                .join(" or the ")
        ),
    }
}

/// Whether this build holds the shipped metrics (the `metrics` feature; the tables' writer
/// compiles the metrics' code without them).
#[cfg(any(feature = "metrics", feature = "table-writer"))]
pub(crate) const METRICS_BUILT: bool = cfg!(feature = "metrics");

/// Whether this build can hold a CPU model: shipped ones (`x86-models`, `arm-models`) or the
/// user's (`events-file`). Without, the resolver's code for a model's events is left out of
/// the binary (it is seen to have no model).
pub(crate) const MODELS_BUILT: bool = cfg!(any(
    feature = "x86-models",
    feature = "arm-models",
    feature = "events-file"
));
