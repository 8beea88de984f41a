//! What libpapi asks of the operating system beneath the library: the overflow signal held
//! back on a thread (`signals`), a value published once for reads without a lock
//! (`published`: an atomic pointer to a box never freed), and the two C libraries found at
//! run time, libpfm4 opened with `dlopen` for its events' descriptions (`pfm`) and libsde's
//! tools interface looked up in the process (`sde`). It imports nothing of the crate: the
//! library above calls down into it, and the C interface (the `abi` module) sits on top of
//! both.
//!
//! # Safety
//! Each module says what its calls assume (`signals`: valid signal sets; `published`: a
//! pointer published once and never freed; `pfm` and `sde`: functions called through the
//! pointers `dlsym` gave, with the C signatures of libpfm4's `perfmon/pfmlib.h` and PAPI
//! 7.0's `sde_lib_ti.h`), and every `unsafe {}` has its `// SAFETY:` line.

pub(crate) mod pfm;
pub(crate) mod published;
pub(crate) mod sde;
pub(crate) mod signals;
