//! What most programs need, for a glob import: `use counterhal::prelude::*;`.
//!
//! It holds the face: [`Setup`] and its shorthand [`open_default`], the [`Chosen`] backend
//! they return, a [`Target`] and [`Domain`], the [`EventSet`] that [`Chosen::open_named`]
//! opens (and the [`EventSetBuilder`] that gathers one), its [`Reading`]s, the sampler's
//! options, and the traits whose methods these need ([`Group`](crate::Group), [`Sampler`](crate::Sampler)), imported
//! without their names so that a glob import of another crate's `Group` does not clash.
//!
//! It holds no name the standard library's `std::io`, `std::fmt` or `std::fs` exports: the
//! error types are [`counterhal::Error`](crate::Error), [`counterhal::ErrorKind`](crate::ErrorKind)
//! and [`counterhal::Result`](crate::Result), and the options of an open are
//! [`counterhal::OpenOptions`](crate::OpenOptions), named by their path or imported by name
//! (`&Default::default()` where the defaults do, as below: a first program needs only this
//! glob import), so that `use std::io::*;` (or `std::fmt::*`, `std::fs::*`) beside the prelude leaves `Result`,
//! `Error`, `ErrorKind` and `OpenOptions` the standard library's, not ambiguous.
//!
//! ```no_run
//! use counterhal::prelude::*;
//!
//! let backend = open_default()?;
//! let mut set = backend.open_named(&["page-faults"], &Target::this_thread(),
//!                                  &Default::default())?;
//! set.enable()?;
//! set.disable()?;
//! let readings = set.read_to_vec()?;
//! println!("{} on {}: {}", set.events()[0].name, backend.label(), readings[0].value);
//! # Ok::<(), counterhal::Error>(())
//! ```

pub use crate::attach::{Place, Target, online_cpus};
pub use crate::chosen::Chosen;
#[cfg(all(unix, feature = "command"))]
pub use crate::command::CommandCount;
pub use crate::group::AnyGroup;
pub use crate::sampling::AnySampler;
pub use crate::set::{EventSetBuilder, query};
pub use crate::setup::{Setup, open_default};
pub use counterhal_hal::{Domain, EventSet, Reading, Record, SampleFields, SampleOptions};
pub use counterhal_hal::{Group as _, Sampler as _};
