//! What most programs need, for a glob import: `use counterhal::prelude::*;`.
//!
//! The traits come in so that their methods work on whatever [`open_default`] returns;
//! [`DynBackend`]'s methods carry a `dyn_` prefix, so nothing here competes with
//! [`Backend`]'s.
//!
//! ```no_run
//! use counterhal::prelude::*;
//!
//! let backend = open_default(None)?;
//! let mut set = backend.open_named(&["page-faults"], &Target::ThisThread,
//!                                  &OpenOptions::default())?;
//! set.enable()?;
//! set.disable()?;
//! let readings = set.read_to_vec()?;
//! println!("{} on {}: {}", set.events()[0].name, backend.label(), readings[0].value);
//! # Ok::<(), counterhal::Error>(())
//! ```

pub use crate::{
    AnyBackend, Attach, Backend, Chosen, Context, DynBackend, Error, ErrorKind, EventSet,
    EventSetBuilder, Group, MultiSet, OpenOptions, Reading, Result, Target, online_cpus,
    open_default, query,
};
#[cfg(unix)]
pub use crate::{CommandCount, CountedCommand, Follow, count_command};
