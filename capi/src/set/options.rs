//! A set's options (`counterhal_set_option`): grouped, pinned, inherit, exclusive, the
//! domain its events without one of their own count, and whether that domain is strict.

use facade::{Domain, OpenOptions, Target as Attach};

use super::{Set, State, domain, option};
use crate::{CResult, Failure, code};

/// The message of an unknown option.
const OPTIONS: &str = "use a COUNTERHAL_OPTION_* constant (GROUPED 0, PINNED 1, INHERIT 2, EXCLUSIVE 3, DOMAIN 4, \
     STRICT_DOMAIN 5)";

/// `value` of an on-off option: 0 or 1.
fn on_off(value: i32) -> CResult<bool> {
    match value {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(Failure::new(
            code::INVALID_ARGUMENT,
            format!("option value {other}: use 0 (off) or 1 (on)"),
        )),
    }
}

impl Set {
    /// `value` as the domain of `options`: `None` for 0, else the mask's levels, refused
    /// where they are not a mask of [`domain`] bits or not what the backend filters.
    fn domain(&self, value: i32) -> CResult<Option<Domain>> {
        if value == domain::DEFAULT {
            return Ok(None);
        }
        let bits = u8::try_from(value)
            .ok()
            .filter(|bits| i32::from(*bits) & !domain::ALL == 0)
            .ok_or_else(|| {
                Failure::new(
                    code::INVALID_ARGUMENT,
                    format!(
                        "domain {value}: use 0 (the default) or COUNTERHAL_DOMAIN_USER (1), \
                         _KERNEL (2) and _HYPERVISOR (4) or-ed together"
                    ),
                )
            })?;
        let domain = Domain::from_bits_truncate(bits);
        let filters = self.inner.chosen.capabilities().domains();
        if !filters.contains(domain) {
            let names: Vec<&str> = filters.intersection(Domain::LEVELS).names().collect();
            return Err(Failure::new(
                code::UNSUPPORTED,
                format!(
                    "the {} backend cannot count the domain {value} alone (it filters {})",
                    self.inner.chosen.name(),
                    names.join(", ")
                ),
            ));
        }
        Ok(Some(domain))
    }

    /// Sets `option` (an [`option`] constant) to `value` (0 or 1; a [`domain`] mask for
    /// [`option::DOMAIN`]). Refused while running; with events in the set, refused when they
    /// do not open together under the new options (the set keeps the old ones), and otherwise
    /// each event takes the domain it counts under them (user space only where the kernel is
    /// refused and no domain asked for).
    pub(crate) fn set_option(&mut self, which: i32, value: i32) -> CResult<()> {
        if matches!(self.state, State::Running(_)) {
            return Err(Failure::new(
                code::STATE,
                "the set is running: stop it before changing its options",
            ));
        }
        let mut options: OpenOptions = self.options;
        match which {
            option::GROUPED => options.grouped = on_off(value)?,
            option::PINNED => options.pinned = on_off(value)?,
            option::EXCLUSIVE => options.exclusive = on_off(value)?,
            option::DOMAIN => options.domain = self.domain(value)?,
            option::STRICT_DOMAIN => options.strict_domain = on_off(value)?,
            option::INHERIT => {
                let on = on_off(value)?;
                if on && !matches!(self.attach, Attach::ThisThread | Attach::Thread(_)) {
                    return Err(Failure::new(
                        code::INVALID_ARGUMENT,
                        "COUNTERHAL_OPTION_INHERIT applies to a thread target (THIS_THREAD, \
                         THREAD): a PROCESS target counts what its threads create already, \
                         and CPUs count everything on them",
                    ));
                }
                options.inherit = on;
            }
            other => {
                return Err(Failure::new(
                    code::INVALID_ARGUMENT,
                    format!("unknown option {other}: {OPTIONS}"),
                ));
            }
        }
        if !self.requested.is_empty() {
            let opened = self.open_all(&options)?;
            self.counted_as(&opened);
        }
        self.options = options;
        self.changed();
        Ok(())
    }

    /// The value of `option` (an [`option`] constant): 0 or 1, or the [`domain`] mask.
    pub(crate) fn option(&self, which: i32) -> CResult<i32> {
        let options = &self.options;
        match which {
            option::GROUPED => Ok(i32::from(options.grouped)),
            option::PINNED => Ok(i32::from(options.pinned)),
            option::INHERIT => Ok(i32::from(options.inherit)),
            option::EXCLUSIVE => Ok(i32::from(options.exclusive)),
            option::DOMAIN => Ok(options.domain.map_or(domain::DEFAULT, |d| {
                i32::from(d.intersection(Domain::LEVELS).bits())
            })),
            option::STRICT_DOMAIN => Ok(i32::from(options.strict_domain)),
            other => Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!("unknown option {other}: {OPTIONS}"),
            )),
        }
    }
}
