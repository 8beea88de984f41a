//! Finding hwpmc: the real system call on FreeBSD, a model of it anywhere.

use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hal::{Error, Result};

use crate::backend::{HwpmcBackend, model_config_for};

/// The backend over the real hwpmc(4) (FreeBSD only): `modfind("hwpmc")`, `modstat`, the
/// version handshake, GETCPUINFO.
///
/// `cpu` names the event database's CPU model (the facade passes the detected one).
///
/// # Errors
/// [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported) on any OS but FreeBSD,
/// and on a 32-bit FreeBSD (the structures are amd64's);
/// [`ErrorKind::DeviceMissing`](counterhal_hal::ErrorKind::DeviceMissing) when the module is
/// not loaded; as [`HwpmcBackend::from_device`] otherwise.
pub fn probe(db: Arc<Database>, cpu: Option<String>) -> Result<HwpmcBackend> {
    #[cfg(all(target_os = "freebsd", not(target_pointer_width = "64")))]
    {
        let _ = (db, cpu);
        Err(Error::unsupported(
            "this build of the hwpmc backend knows amd64's structures only, and this FreeBSD is 32-bit",
        ))
    }
    #[cfg(all(target_os = "freebsd", target_pointer_width = "64"))]
    {
        use crate::errno::{Operation, map_errno};
        let device =
            crate::device::RealDevice::open().map_err(|e| map_errno(&Operation::FindModule, e))?;
        HwpmcBackend::from_device(db, cpu, Box::new(device))
    }
    #[cfg(not(target_os = "freebsd"))]
    {
        let _ = (db, cpu);
        Err(Error::unsupported(format!(
            "hwpmc(4) is FreeBSD's and this is {}",
            std::env::consts::OS
        ))
        .with_hint("HwpmcBackend::with_model runs the driver model anywhere"))
    }
}

/// The error of a module that is not loaded: `modfind` of a name no module has on FreeBSD
/// (ENOENT, mapped as a missing `hwpmc` is), the same mapping elsewhere.
pub fn missing_module_error() -> Error {
    use crate::errno::{Errno, Operation, map_errno};
    #[cfg(target_os = "freebsd")]
    let errno = match crate::sys::find_syscall("counterhal-no-such-module") {
        Err(errno) => errno,
        Ok(_) => Errno::EEXIST,
    };
    #[cfg(not(target_os = "freebsd"))]
    let errno = Errno::ENOENT;
    map_errno(&Operation::FindModule, errno)
}

/// A backend over a model of the machine database model `id` describes (an Intel model for
/// an Intel table, an AMD one for an AMD table), resolving names against `id`.
///
/// # Errors
/// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) for an id the database
/// lacks; [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported) for a P5 or P6
/// table.
pub fn model_for(db: Arc<Database>, id: &str) -> Result<HwpmcBackend> {
    let config = model_config_for(&db, id)?;
    let id = counterhal_x86::named_model(&db, id)?.id.clone();
    HwpmcBackend::with_model_as(db, config, &id).map(|(backend, _)| backend)
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_hal::ErrorKind;

    #[test]
    fn a_missing_module_is_a_missing_device_with_the_fix() {
        let error = missing_module_error();
        assert_eq!(error.kind(), ErrorKind::DeviceMissing);
        assert!(error.hint().unwrap().contains("kldload hwpmc"), "{error}");
    }

    #[cfg(not(target_os = "freebsd"))]
    #[test]
    fn off_freebsd_the_probe_says_so() {
        let db = Arc::new(Database::shipped().unwrap());
        let error = probe(db, None).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported);
        assert!(error.message().contains("FreeBSD"), "{error}");
    }

    #[test]
    fn models_follow_the_database_vendor() {
        let db = Arc::new(Database::shipped().unwrap());
        let intel = model_for(Arc::clone(&db), "skl").unwrap();
        assert_eq!(intel.pmu(), crate::Pmu::Intel);
        let amd = model_for(Arc::clone(&db), "amd64_fam17h_zen2").unwrap();
        assert_eq!(amd.pmu(), crate::Pmu::Amd);
        assert_eq!(amd.counters(), 6);
        let p6 = model_for(Arc::clone(&db), "p6").unwrap_err();
        assert_eq!(p6.kind(), ErrorKind::Unsupported);
        assert_eq!(
            model_for(db, "no-such-cpu").unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }
}
