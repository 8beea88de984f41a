//! What most programs need, for a glob import: `use counterhal::prelude::*;`.
//!
//! It holds the face: [`open_default`], the [`Chosen`] backend it returns, a [`Target`],
//! [`OpenOptions`], the [`EventSet`] that [`Chosen::open_named`] opens (and the
//! [`EventSetBuilder`] that gathers one), its [`Reading`]s, and the traits whose methods they
//! need ([`Backend`], [`Group`]).
//!
//! ```no_run
//! use counterhal::prelude::*;
//!
//! let backend = open_default(None)?;
//! let mut set = backend.open_named(&["page-faults"], &Target::this_thread(),
//!                                  &OpenOptions::default())?;
//! set.enable()?;
//! set.disable()?;
//! let readings = set.read_to_vec()?;
//! println!("{} on {}: {}", set.events()[0].name, backend.label(), readings[0].value);
//! # Ok::<(), counterhal::Error>(())
//! ```

pub use crate::{
    AnyGroup, Backend, Chosen, Context, Error, ErrorKind, EventSet, EventSetBuilder, Group,
    OpenOptions, Reading, Result, Target, online_cpus, open_default, query,
};
#[cfg(unix)]
pub use crate::{CommandCount, CountedCommand, Follow, count_command};
