//! The capabilities a build leaves out with a Cargo feature (`sampling`, `cgroup-counter`,
//! `command`):
//! the backend still answers for them, with an error naming the feature, so that a caller is
//! told what to build rather than that Linux cannot do it.

use counterhal_hal::{Error, EventRequest, Result};

use crate::LinuxBackend;

/// A build without the `sampling` feature: asking to sample names it.
#[cfg(not(feature = "sampling"))]
impl counterhal_hal::SamplingCapability for LinuxBackend {
    fn open_sampler(
        &self,
        _: &[EventRequest],
        _: &counterhal_hal::BackendTarget,
        _: &counterhal_hal::SampleOptions,
    ) -> Result<counterhal_hal::BoxedSampler> {
        Err(left_out("sampling", "sampling"))
    }

    fn overflow_signal(&self) -> Option<i32> {
        None
    }
}

/// A build without the `cgroup-counter` feature: asking for the counter names it.
#[cfg(not(feature = "cgroup-counter"))]
impl counterhal_hal::CgroupCapability for LinuxBackend {
    fn open_cgroup_counter(
        &self,
        _: &[EventRequest],
        _: &[u32],
        _: counterhal_hal::CgroupCounterOptions,
    ) -> Result<counterhal_hal::BoxedCgroupCounter> {
        Err(left_out("counting per cgroup", "cgroup-counter"))
    }
}

/// A build without the `cgroup-counter` feature (which holds the BPF loader): asking for a
/// shared counter names it.
#[cfg(not(feature = "cgroup-counter"))]
impl counterhal_hal::SharedCapability for LinuxBackend {
    fn open_shared_counter(
        &self,
        _: &EventRequest,
        _: counterhal_hal::SharedScope,
        _: &[u32],
        _: Option<&std::path::Path>,
    ) -> Result<counterhal_hal::BoxedSharedCounter> {
        Err(left_out(
            "counting through shared leaders",
            "cgroup-counter",
        ))
    }
}

/// The error for `what`, left out of this build with `feature`.
pub(crate) fn left_out(what: &str, feature: &str) -> Error {
    Error::unsupported(format!(
        "{what} is left out of this build of the linux backend: it needs counterhal's `{feature}` feature"
    ))
    .with_hint(format!(
        "`{feature}` is on by default; `default-features = false, features = [\"linux\"]` leaves it out"
    ))
}
