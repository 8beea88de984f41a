//! A value published once for reads without a lock: an atomic pointer to a box that is never
//! freed, so that a reader (a signal handler's included) neither waits nor takes a lock, as a
//! `OnceLock` would while another thread or the interrupted one makes its value.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, Ordering};

/// A value made at the first read that finds none, then the same for the process (never
/// freed: the one libpapi has is its static's).
pub struct Published<T> {
    value: AtomicPtr<T>,
    /// Shared between threads as a `&T` is (`Sync` where `T` is).
    _value: PhantomData<T>,
}

impl<T> Published<T> {
    /// None yet.
    pub const fn new() -> Self {
        Published {
            value: AtomicPtr::new(std::ptr::null_mut()),
            _value: PhantomData,
        }
    }

    /// The value, made by `make` where none is published yet. Two first readers at once may
    /// both make one: the first published is kept, the other dropped unseen.
    pub fn get_or_publish(&self, make: impl FnOnce() -> T) -> &T {
        let found = self.value.load(Ordering::Acquire);
        if !found.is_null() {
            // SAFETY: a non-null pointer here is a leaked box, published once and never freed
            // or written again while `self` lives.
            return unsafe { &*found };
        }
        let made = Box::into_raw(Box::new(make()));
        match self.value.compare_exchange(
            std::ptr::null_mut(),
            made,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: `made` is the box just published, never freed while `self` lives.
            Ok(_) => unsafe { &*made },
            Err(first) => {
                // SAFETY: `made` came from Box::into_raw above and was never published.
                drop(unsafe { Box::from_raw(made) });
                // SAFETY: as for `found`.
                unsafe { &*first }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Published;

    /// The first value made is the one every later read gets.
    #[test]
    fn the_first_value_stays() {
        let published = Published::new();
        let first: *const String = published.get_or_publish(|| "first".to_string());
        let again = published.get_or_publish(|| "second".to_string());
        assert_eq!(again, "first");
        assert!(std::ptr::eq(first, again));
    }
}
