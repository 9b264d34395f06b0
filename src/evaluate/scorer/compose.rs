//! A verdict's words and numbers from its signals' results: the score,
//! the one-line message, the follow-up; and the verdict a finish gets when
//! no signal could judge it (unjudged).

use super::budget::{spend_rejection, wait_within};
use crate::evaluate::error::Error;
use crate::evaluate::redact;
use crate::evaluate::request::CheckRequest;
use crate::evaluate::state::StateStore;
use crate::evaluate::verdict::{SignalResult, SignalStatus, Verdict};
use crate::skill::{Signal, SignalKind, Skill};
use critic_sdk::SkillInfo;
use serde_json::json;
use std::time::Instant;

/// What a verdict no signal gave needs of the skill it is given for.
#[derive(Clone, Copy)]
pub(crate) struct Standing<'a> {
    /// The skill's name, which keys its state.
    pub name: &'a str,
    /// Its version, for the verdict.
    pub version: &'a str,
    /// Its threshold, for the verdict.
    pub threshold: f64,
    /// Its rejections per round (`max_iterations`).
    pub max_iterations: u32,
}
impl Standing<'_> {
    /// The skill as a verdict names it.
    pub fn info(&self) -> SkillInfo {
        SkillInfo {
            name: self.name.to_string(),
            version: self.version.to_string(),
        }
    }
}
impl<'a> From<&'a Skill> for Standing<'a> {
    fn from(skill: &'a Skill) -> Standing<'a> {
        let m = &skill.manifest;
        Standing {
            name: &m.name,
            version: &m.version,
            threshold: m.threshold,
            max_iterations: m.max_iterations,
        }
    }
}
/// Why a finish was not judged: what its verdict says.
pub(crate) struct Unjudged<'a> {
    /// What the agent changed (`metadata.cause`): `workspace`,
    /// `transcript`, `state` or `misplaced`.
    pub cause: &'a str,
    /// The problem, for the verdict's message.
    pub problem: &'a str,
    /// What the agent is told.
    pub followup: String,
}
/// The verdict on a finish the critic could not judge because of something
/// the agent can cause (see [`crate::frontend::unjudged`]): counted in
/// `request`'s session and rejected with `followup`, like any rejection,
/// until the budget is spent; then accepted with `budget_exhausted`, so
/// the loop still ends. No signal ran. `fallback_instance` names the
/// session's instance when it has none yet (the work tree that would tell
/// it is broken; a recorded one is kept, so the count is not reset). The
/// wait for the session's lock ends by `deadline`.
pub(crate) fn unjudged_verdict(
    skill: Standing<'_>,
    state: &StateStore,
    request: &CheckRequest,
    deadline: Option<Instant>,
    fallback_instance: &str,
    why: Unjudged<'_>,
) -> Result<Verdict, Error> {
    let Unjudged {
        cause,
        problem,
        followup,
    } = why;
    let mut session = state.open_current_instance(
        skill.name,
        &request.session,
        fallback_instance,
        wait_within(request.lock_timeout, deadline),
    )?;
    let locked = session.locked_rejections();
    let h = &mut session.harness;
    h.iteration = h.iteration.saturating_add(1);
    let iteration = h.iteration;
    let budget_exhausted =
        !spend_rejection(h, skill.max_iterations, request.max_rejections, locked);
    session.save_harness()?;
    let max_iterations = request
        .max_rejections
        .map_or(skill.max_iterations, |cap| cap.min(skill.max_iterations));
    // The problem names files of the agent's; it should quote none of
    // them, and what looks like a secret goes anyway.
    let mut hidden = 0;
    let followup = redacted(followup, &mut hidden);
    let followup = match hidden {
        0 => followup,
        _ => format!("{followup}\n\n{}", redact::NOTICE),
    };
    let message = if budget_exhausted {
        format!(
            "accepted UNCHECKED because the rejection budget ran out ({max_iterations} \
             rejections); the finish could not be judged: {problem}"
        )
    } else {
        format!("rejected: the finish could not be judged: {problem}")
    };
    Ok(Verdict {
        accepted: budget_exhausted,
        score: 0.0,
        threshold: skill.threshold,
        message,
        followup: (!budget_exhausted).then_some(followup),
        iteration,
        max_iterations,
        budget_exhausted,
        skill: skill.info(),
        session: request.session.clone(),
        signals: Vec::new(),
        warnings: std::mem::take(&mut session.warnings),
        metadata: json!({
            "unjudged": problem,
            "cause": cause,
            "rejections": session.harness.rejections,
        }),
    })
}
pub(super) fn skipped(signal: &Signal) -> SignalResult {
    SignalResult::new(
        &signal.name,
        signal.kind,
        signal.weight,
        SignalStatus::Skipped,
    )
}
/// 0 when a gate fired; else 1 minus the fired share of soft weight.
pub(super) fn score(results: &[SignalResult], gate_fired: bool) -> f64 {
    if gate_fired {
        return 0.0;
    }
    let soft = results.iter().filter(|r| r.kind == SignalKind::Soft);
    let (total, fired) = soft.fold((0.0, 0.0), |(t, f), r| {
        (t + r.weight, f + if r.triggered { r.weight } else { 0.0 })
    });
    if total == 0.0 {
        1.0
    } else {
        1.0 - fired / total
    }
}
pub(super) fn message(
    results: &[SignalResult],
    score: f64,
    threshold: f64,
    accepted: bool,
    budget_exhausted: bool,
    max_iterations: u32,
) -> String {
    let fired: Vec<&str> = results
        .iter()
        .filter(|r| r.triggered)
        .map(|r| r.name.as_str())
        .collect();
    let gate = results
        .iter()
        .find(|r| r.triggered && r.kind == SignalKind::HardGate)
        .map(|r| r.name.as_str());
    if budget_exhausted {
        return format!(
            "accepted because the rejection budget ran out ({max_iterations} rejections); it would have been rejected ({})",
            fired.join(", ")
        );
    }
    match (accepted, gate) {
        (false, Some(g)) => format!("rejected by hard gate {g}"),
        (false, None) => format!(
            "rejected: score {score:.2} < threshold {threshold:.2} (fired: {})",
            fired.join(", ")
        ),
        (true, _) if fired.is_empty() => format!("accepted: all {} signals passed", results.len()),
        (true, _) => format!(
            "accepted: score {score:.2} >= threshold {threshold:.2} (fired: {})",
            fired.join(", ")
        ),
    }
}

/// `text` with its secrets replaced by markers, counted in `hidden`.
pub(super) fn redacted(text: String, hidden: &mut usize) -> String {
    let found = redact::redact(&text);
    *hidden += found.count;
    match found.count {
        0 => text,
        _ => found.text.into_owned(),
    }
}
