//! The cases: each a generic function over a [`Subject`] returning an [`Outcome`], in rooms
//! by what they check.

#[macro_use]
mod measure;
mod counting;
mod errors;
mod groups;
mod hardware;
mod hygiene;
mod multiplexing;
mod restart;

pub use counting::{
    counts_increase_under_work, exact_counts, generalized_events_open, linearity,
    read_after_disable_is_stable, read_after_stop_equals_stop, reset_gives_zero,
    user_and_kernel_modifiers_split_the_count,
};
pub use errors::{
    bad_modifier_is_invalid, dropping_a_group_frees_its_counters, missing_device,
    short_read_buffer_is_invalid_input, too_many_events, unclaimed_target_is_unsupported,
    unknown_event_is_invalid,
};
pub use groups::{
    group_members_consistent, group_read_in_order, scaling_of_live_readings,
    scaling_of_recorded_readings,
};
pub use hardware::{branch_loop, instructions_loop};
pub use hygiene::{open_close_hygiene, threads_count_independently};
pub use multiplexing::multiplexing_time_shares_events;
pub use restart::{
    reset_between_windows_counts_each_window, restarted_group_counts_every_window,
    restarted_sampler_reads_every_member,
};

use crate::{Outcome, Subject};

/// One case of the suite.
pub struct Case<S> {
    /// Its name, as printed and reported.
    pub name: &'static str,
    /// Whether it checks real hardware counts (skipped on machines without a PMU, made fatal by
    /// `COUNTERHAL_REQUIRE=hardware`).
    pub hardware: bool,
    /// The check.
    pub run: fn(&S) -> Outcome,
}

/// Every case, in the order they run.
pub fn all<S: Subject>() -> Vec<Case<S>> {
    macro_rules! case {
        ($name:ident) => {
            Case {
                name: stringify!($name),
                hardware: false,
                run: $name::<S>,
            }
        };
        (hardware $name:ident) => {
            Case {
                name: stringify!($name),
                hardware: true,
                run: $name::<S>,
            }
        };
    }
    vec![
        case!(generalized_events_open),
        case!(counts_increase_under_work),
        case!(read_after_disable_is_stable),
        case!(reset_gives_zero),
        case!(read_after_stop_equals_stop),
        case!(exact_counts),
        case!(linearity),
        case!(group_read_in_order),
        case!(group_members_consistent),
        case!(restarted_group_counts_every_window),
        case!(reset_between_windows_counts_each_window),
        case!(restarted_sampler_reads_every_member),
        case!(scaling_of_recorded_readings),
        case!(scaling_of_live_readings),
        case!(unknown_event_is_invalid),
        case!(bad_modifier_is_invalid),
        case!(too_many_events),
        case!(multiplexing_time_shares_events),
        case!(dropping_a_group_frees_its_counters),
        case!(short_read_buffer_is_invalid_input),
        case!(unclaimed_target_is_unsupported),
        case!(user_and_kernel_modifiers_split_the_count),
        case!(missing_device),
        case!(open_close_hygiene),
        case!(threads_count_independently),
        case!(hardware instructions_loop),
        case!(hardware branch_loop),
    ]
}
