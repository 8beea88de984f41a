#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

#[cfg(unix)]
mod child;
#[cfg(unix)]
mod signals;
#[cfg(unix)]
#[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
mod sys;

#[cfg(unix)]
pub use child::{
    ChildExit, Launch, WaitingChild, command_for, exit_code_for, is_child_of_this_process,
};
#[cfg(unix)]
pub use signals::ForwardSignals;

/// Runs `hook` when the process exits through `exit` (a return from `main` included), after
/// the hooks registered later; false when the C library has no room for it. The hook must not
/// unwind (catch panics inside it).
#[cfg(unix)]
pub fn at_exit(hook: extern "C" fn()) -> bool {
    sys::at_exit(hook)
}
