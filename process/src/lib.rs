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
    ChildExit, WaitingChild, belongs_to_another_user, exit_code_for, is_child_of_this_process,
    owner_of,
};
#[cfg(unix)]
pub use signals::ForwardSignals;
