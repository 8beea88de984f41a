//! How a backend crate offers itself to the facade's registry: one [`Registration`] value per
//! crate, with the facts the faces print and the functions that make the backend.

use std::path::Path;
use std::sync::Arc;

use counterhal_system::System;

use crate::dynamic::DynBackend;
use crate::error::Result;

/// A backend made at run time, boxed (what a [`Registration`] makes).
pub type BoxedBackend = Box<dyn DynBackend + Send + Sync>;

/// What a backend is made with: the event database names resolve in (`Db`, the events
/// crate's, which this crate does not know), the system whose facts it reads and the setup's
/// choices.
#[non_exhaustive]
pub struct Given<'a, Db> {
    /// The event database.
    pub database: &'a Arc<Db>,
    /// The database's CPU model names resolve for (`None`: none matched this CPU).
    pub cpu_model: Option<&'a str>,
    /// Whether resolving a tracepoint may mount tracefs where the system has not.
    pub mount_tracefs: bool,
    /// The system the backend reads its facts from (its PMUs, tracefs, cgroups, `/proc`):
    /// the one the program started with, handed down.
    pub system: &'a System,
}

impl<'a, Db> Given<'a, Db> {
    /// What a backend is made with.
    pub fn new(
        database: &'a Arc<Db>,
        cpu_model: Option<&'a str>,
        mount_tracefs: bool,
        system: &'a System,
    ) -> Self {
        Given {
            database,
            cpu_model,
            mount_tracefs,
            system,
        }
    }
}

impl<Db> Given<'_, Db> {
    /// What `probe` (a backend crate's `probe(database, cpu_model)`) makes with this, boxed:
    /// a registration's [`probe`](Registration::probe) in one line.
    ///
    /// # Errors
    /// As `probe`.
    pub fn make<B>(&self, probe: fn(Arc<Db>, Option<String>) -> Result<B>) -> Result<BoxedBackend>
    where
        B: DynBackend + Send + Sync + 'static,
    {
        let backend = probe(Arc::clone(self.database), self.cpu_model.map(str::to_owned))?;
        Ok(Box::new(backend))
    }
}

/// A registration's [`probe`](Registration::probe) where its crate leaves its backend out of
/// this build: the backend's device is another system's, and the build leaves out its model.
///
/// # Errors
/// Always [`ErrorKind::Unsupported`](crate::error::ErrorKind::Unsupported), naming the feature that
/// brings the model.
pub fn left_out<Db>(_: &Given<'_, Db>) -> Result<BoxedBackend> {
    Err(left_out_error())
}

/// Why a registration left out of this build makes nothing.
fn left_out_error() -> crate::error::Error {
    crate::error::Error::unsupported(
        "this backend's device is another system's, and its device model is left out of this \
         build: it needs counterhal's `device-models` feature",
    )
}

/// As [`left_out`], a registration's [`model`](Registration::model).
///
/// # Errors
/// As [`left_out`].
pub fn left_out_model<Db>(_: &Arc<Db>, _: &str) -> Result<BoxedBackend> {
    Err(left_out_error())
}

/// One backend crate, as it registers itself (its `REGISTRATION`): the facade's registry is
/// the list of these. Where the backend's device exists is the crate's business: off those
/// systems its functions still exist and say why they cannot make it.
pub struct Registration<Db> {
    /// The name the command line and reports use, its Cargo feature in the facade.
    pub name: &'static str,
    /// What it counts through, in a few words.
    pub interface: &'static str,
    /// What it reaches through that interface, in one line (README.md's table of systems).
    pub reaches: &'static str,
    /// Where it was verified on this project's machines, in one line (README.md's table).
    pub verified: &'static str,
    /// The operating systems (as `std::env::consts::OS` names them) where its real device
    /// exists.
    pub systems: &'static [&'static str],
    /// Makes the backend over the real device.
    pub probe: fn(&Given<'_, Db>) -> Result<BoxedBackend>,
    /// Makes the backend over a model of its device, for the database's CPU model named,
    /// where the backend has models: what it would program, shown where the device is absent.
    #[allow(clippy::type_complexity, reason = "a function's type, read here alone")]
    pub model: Option<fn(&Arc<Db>, &str) -> Result<BoxedBackend>>,
    /// Makes the backend over the PMUs and tracepoints of a sysfs tree (its root, as `/sys`
    /// is), resolving names without opening anything, where the backend reads such a tree.
    pub sysfs: Option<fn(&Given<'_, Db>, &Path) -> BoxedBackend>,
}

impl<Db> std::fmt::Debug for Registration<Db> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("name", &self.name)
            .field("interface", &self.interface)
            .field("systems", &self.systems)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    /// A registration left out of a build names the facade's feature that brings the model
    /// back (the root Cargo.toml's `device-models`), for both of its functions.
    #[test]
    fn a_left_out_registration_names_the_feature_that_brings_it() {
        let database = std::sync::Arc::new(());
        let system = counterhal_system::System::host();
        let given = super::Given::new(&database, None, false, &system);
        for error in [
            super::left_out(&given).err(),
            super::left_out_model(&database, "skl").err(),
        ] {
            let error = error.expect("a left-out registration makes nothing");
            assert_eq!(error.kind(), crate::error::ErrorKind::Unsupported);
            assert!(error.message().contains("`device-models`"), "{error}");
        }
    }
}
