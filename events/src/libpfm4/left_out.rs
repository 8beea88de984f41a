//! libpfm4's grammar in a build without the `x86-models` feature: its tables are the x86
//! models' (`src/libpfm4/table.rs` reads none without them), so no string is libpfm4's to
//! resolve, and the parser and encoders are not compiled. The entry points the resolver and
//! the faces call answer as the full module does with no table.

use counterhal_hal::{Accepts, ResolvedEvent};

use crate::database::Database;
use crate::error::EventError;
use crate::model::CpuModel;

/// As the full module's: None, libpfm4 has no table in this build.
pub(crate) fn route(
    _: &Database,
    _: Option<&CpuModel>,
    _: &str,
    _: &Accepts,
) -> Option<Result<ResolvedEvent, EventError>> {
    None
}

/// As the full module's: None, libpfm4 has no table in this build.
pub(crate) fn not_found(_: Option<&CpuModel>, _: &str) -> Option<EventError> {
    None
}

impl Database {
    /// Where `text` on CPU model `cpu` means something else to libpfm4: never in this build,
    /// which has no x86 model and no libpfm4 table.
    pub fn libpfm4_difference(&self, _cpu: &str, _text: &str) -> Option<String> {
        None
    }

    /// How many of libpfm4's tables this process has looked up: none in this build.
    #[doc(hidden)]
    pub fn libpfm4_tables_parsed() -> usize {
        0
    }

    /// The names of libpfm4's x86 core PMUs whose tables are shipped: none in this build.
    pub fn libpfm4_pmus() -> impl Iterator<Item = &'static str> {
        std::iter::empty()
    }
}
