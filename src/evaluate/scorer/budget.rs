//! What a check may still spend: the session's rejections (the skill's
//! `max_iterations` per round, the request's cap) and the time left until
//! its deadline.

use crate::evaluate::state::HarnessState;
use std::time::{Duration, Instant};

/// `wait`, cut to what is left until `deadline`.
pub(crate) fn wait_within(wait: Duration, deadline: Option<Instant>) -> Duration {
    deadline.map_or(wait, |end| {
        wait.min(end.saturating_duration_since(Instant::now()))
    })
}
/// Spend one rejection of a session, if its budget has one left: the
/// skill's `max_iterations` per round (a new base commit starts one), the
/// request's `max_rejections` for the whole session, `locked` of which were
/// given while another check held the session (see
/// [`crate::evaluate::state::count_locked_rejection`]). `false` when none is
/// left, and the finish is accepted with `budget_exhausted`.
pub(super) fn spend_rejection(
    h: &mut HarnessState,
    max_iterations: u32,
    cap: Option<u32>,
    locked: u32,
) -> bool {
    let capped = cap.is_some_and(|cap| h.session_rejections.saturating_add(locked) >= cap);
    if h.rejections >= max_iterations || capped {
        return false;
    }
    h.rejections = h.rejections.saturating_add(1);
    h.session_rejections = h.session_rejections.saturating_add(1);
    true
}
