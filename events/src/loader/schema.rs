//! The `events.toml` schema as serde reads it, with the spans errors point at: the one reader
//! of events files, the shipped ones (read when the crate is built, `build/models.rs`) and a
//! user's.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileDoc {
    #[serde(default)]
    pub(super) cpu: Vec<Spanned<CpuDoc>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CpuDoc {
    /// A model id, or a list of the ids of models loaded before that the table changes.
    pub(super) id: Spanned<toml::Value>,
    pub(super) description: Option<String>,
    pub(super) aliases: Option<Vec<Spanned<String>>>,
    pub(super) encoder: Option<Spanned<String>>,
    #[serde(rename = "match")]
    pub(super) matches: Option<Vec<Spanned<MatchDoc>>>,
    pub(super) pmu: Option<Spanned<PmuDoc>>,
    pub(super) hybrid: Option<Spanned<HybridDoc>>,
    #[serde(default)]
    pub(super) event: Vec<Spanned<EventDoc>>,
    pub(super) generalized: Option<BTreeMap<Spanned<String>, Spanned<toml::Value>>>,
    /// Expressions, or presets in PAPI's form (`{ papi = "...", natives = [...] }`).
    pub(super) presets: Option<BTreeMap<Spanned<String>, Spanned<toml::Value>>>,
    /// Other spellings of events: `"EVENT:UNIT_MASK" = "CANONICAL.NAME"`.
    pub(super) event_aliases: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MatchDoc {
    pub(super) vendor: Spanned<String>,
    pub(super) family: Spanned<toml::Value>,
    pub(super) model: Option<Spanned<toml::Value>>,
    pub(super) stepping: Option<Spanned<toml::Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HybridDoc {
    pub(super) core_type: Spanned<i64>,
    pub(super) native_model: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PmuDoc {
    pub(super) general_counters: Spanned<i64>,
    pub(super) counter_width: Spanned<i64>,
    #[serde(default)]
    pub(super) fixed_counters: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) fixed_width: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) tsx: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EventDoc {
    pub(super) name: Spanned<Cow<'static, str>>,
    pub(super) code: Spanned<i64>,
    #[serde(default)]
    pub(super) desc: String,
    pub(super) umask: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) umasks: Vec<Spanned<UmaskDoc>>,
    pub(super) counters: Option<Spanned<Vec<i64>>>,
    pub(super) fixed: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) flags: Vec<Spanned<Cow<'static, str>>>,
    pub(super) extra_reg: Option<Spanned<i64>>,
    pub(super) extra_value: Option<Spanned<toml::Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UmaskDoc {
    pub(super) name: Spanned<Cow<'static, str>>,
    pub(super) code: Spanned<i64>,
    #[serde(default)]
    pub(super) desc: String,
    #[serde(default)]
    pub(super) default: bool,
    pub(super) cmask: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) edge: bool,
    #[serde(default)]
    pub(super) inv: bool,
    pub(super) fixed: Option<Spanned<i64>>,
    pub(super) event: Option<Spanned<i64>>,
    pub(super) counters: Option<Spanned<Vec<i64>>>,
    pub(super) group: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) precise: bool,
    #[serde(default)]
    pub(super) deprecated: bool,
    #[serde(default)]
    pub(super) any: bool,
    pub(super) extra_reg: Option<Spanned<i64>>,
    pub(super) extra_value: Option<Spanned<toml::Value>>,
    pub(super) umask_ext: Option<Spanned<i64>>,
    /// Bits ORed into the event's extra register (a register-bit mask).
    pub(super) extra_bits: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub(super) alone_in_group: bool,
    #[serde(default)]
    pub(super) excludes_later_groups: bool,
    #[serde(default)]
    pub(super) excludes_other_groups: bool,
    #[serde(default)]
    pub(super) group_may_be_empty: bool,
    /// The register-bit masks it stands for when named.
    #[serde(default)]
    pub(super) same_as: Vec<Spanned<Cow<'static, str>>>,
}
