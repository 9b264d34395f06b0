//! Skill mode: runs a skill's signals on a finish and scores them.
//!
//! Hard gates run in manifest order and the first one that fires ends the
//! evaluation (score 0, later signals are not run). Otherwise the score is
//! `1 - fired soft weight / total soft weight`, and the finish is accepted iff
//! `score >= threshold`. Rejections are counted per session; once the skill's
//! `max_iterations` rejections are spent, the next finish is accepted with
//! `budget_exhausted`, so the agent loop always ends.

use crate::capabilities::{Capability, Grants};
use crate::critic::{Critic, Finish};
use crate::detector::Detector;
use crate::manifest::{OnError, Signal, SignalKind, Skill};
use crate::runtime::{CallContext, CallLimits, DetectorError, Runtime};
use crate::state::{StateStore, DEFAULT_LOCK_TIMEOUT};
use crate::verdict::{SignalResult, SignalStatus, Verdict};
use crate::Error;
use critic_sdk::{DetectorOutput, SkillInfo, API_VERSION};
use serde::Serialize;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Options for building a [`SkillCritic`].
#[derive(Debug, Clone)]
pub struct HarnessOptions {
    /// Capabilities the user denies.
    pub deny: Vec<Capability>,
    /// Load native detectors.
    pub allow_native: bool,
    /// How long to wait for a concurrent check on the same session.
    pub lock_timeout: Duration,
}

impl Default for HarnessOptions {
    fn default() -> Self {
        Self {
            deny: Vec::new(),
            allow_native: false,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
        }
    }
}

/// A skill with its detectors loaded, ready to evaluate finishes.
pub struct SkillCritic {
    skill: Skill,
    detectors: Vec<Detector>,
    grants: Grants,
    state: StateStore,
    lock_timeout: Duration,
}

/// The part of a detector's input shared by all signals, serialized once.
#[derive(Serialize)]
struct SharedInput<'a> {
    api_version: &'a str,
    skill: &'a SkillInfo,
    iteration: u32,
    session: &'a str,
    events: &'a [critic_sdk::Event],
    patch: &'a critic_sdk::Patch,
}

#[derive(Serialize)]
struct SignalInput<'a> {
    signal: &'a str,
    config: &'a Value,
    state: &'a Value,
}

impl SkillCritic {
    /// Load every detector of `skill`; errors name the signal and file.
    pub fn new(
        skill: Skill,
        runtime: &Runtime,
        state: StateStore,
        options: &HarnessOptions,
    ) -> Result<SkillCritic, Error> {
        let detectors = skill
            .manifest
            .signals
            .iter()
            .map(|s| {
                Detector::load(runtime, &s.detector_path, options.allow_native).map_err(|source| {
                    Error::Detector {
                        manifest: skill.manifest_path.clone(),
                        line: s.position.line,
                        signal: s.name.clone(),
                        source,
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let grants = Grants::new(&skill.manifest.capabilities, &options.deny);
        Ok(SkillCritic {
            skill,
            detectors,
            grants,
            state,
            lock_timeout: options.lock_timeout,
        })
    }

    /// The loaded skill.
    pub fn skill(&self) -> &Skill {
        &self.skill
    }

    fn info(&self) -> SkillInfo {
        SkillInfo {
            name: self.skill.manifest.name.clone(),
            version: self.skill.manifest.version.clone(),
        }
    }

    fn limits(&self, signal: &Signal) -> CallLimits {
        let l = self.skill.manifest.limits;
        CallLimits {
            timeout: signal.timeout,
            memory_bytes: signal.memory_bytes,
            output_bytes: l.output_bytes,
            stdio_bytes: l.stdio_bytes,
        }
    }
}

/// Error text shown to the agent when a fail-closed signal could not run.
fn error_followup(signal: &str, error: &str) -> String {
    format!(
        "The critic's check `{signal}` could not run ({error}), and this skill treats that as a \
         failure. If your work is complete, finish again; if the problem persists, tell the user."
    )
}

impl Critic for SkillCritic {
    fn evaluate(&self, finish: &Finish) -> Result<Verdict, Error> {
        let started = Instant::now();
        let m = &self.skill.manifest;
        let info = self.info();
        let mut session = self.state.open(
            &m.name,
            &finish.session,
            &finish.instance_key(),
            self.lock_timeout,
        )?;
        let iteration = session.harness.iteration + 1;
        let shared = serde_json::to_string(&SharedInput {
            api_version: API_VERSION,
            skill: &info,
            iteration,
            session: &finish.session,
            events: &finish.events,
            patch: &finish.patch,
        })
        .map_err(|e| Error::Internal(format!("cannot encode detector input: {e}")))?;
        // `shared` is a JSON object; each signal's fields are spliced in before
        // its closing brace, so the events are encoded once for all signals.
        let prefix = &shared[..shared.len() - 1];

        let mut results = Vec::with_capacity(m.signals.len());
        let mut new_states = Vec::new();
        let mut gate_fired = false;
        for (signal, detector) in m.signals.iter().zip(&self.detectors) {
            if gate_fired {
                results.push(skipped(signal));
                continue;
            }
            let state = session.signal_state(&signal.name)?;
            let tail = serde_json::to_string(&SignalInput {
                signal: &signal.name,
                config: &signal.config,
                state: &state,
            })
            .map_err(|e| Error::Internal(format!("cannot encode detector input: {e}")))?;
            let input = format!("{prefix},{}", &tail[1..]);
            let ctx = CallContext {
                skill: m.name.clone(),
                signal: signal.name.clone(),
                grants: self.grants.clone(),
                workspace: finish.workspace.clone(),
            };
            let call_started = Instant::now();
            let outcome =
                detector
                    .call(&input, &self.limits(signal), &ctx)
                    .and_then(|(json, _report)| {
                        serde_json::from_str::<DetectorOutput>(&json)
                            .map_err(|e| DetectorError::BadOutput(e.to_string()))
                    });
            let duration_ms = call_started.elapsed().as_secs_f64() * 1000.0;
            let result = match outcome {
                Ok(out) => {
                    if let Some(s) = out.state {
                        new_states.push((signal.name.clone(), s));
                    }
                    SignalResult {
                        followup_text: out.followup_text.filter(|_| out.triggered),
                        metadata: out.metadata,
                        duration_ms,
                        compile_cache: detector.cache_outcome(),
                        ..SignalResult::new(
                            &signal.name,
                            signal.kind,
                            signal.weight,
                            if out.triggered {
                                SignalStatus::Triggered
                            } else {
                                SignalStatus::Passed
                            },
                        )
                    }
                }
                Err(e) => {
                    let error = format!("signal {:?} ({}): {e}", signal.name, signal.detector);
                    tracing::warn!("{error}");
                    let triggered = signal.on_error == OnError::FailClosed;
                    SignalResult {
                        triggered,
                        followup_text: triggered
                            .then(|| error_followup(&signal.name, &e.to_string())),
                        error: Some(error),
                        duration_ms,
                        compile_cache: detector.cache_outcome(),
                        ..SignalResult::new(
                            &signal.name,
                            signal.kind,
                            signal.weight,
                            SignalStatus::Error,
                        )
                    }
                }
            };
            gate_fired = result.triggered && signal.kind == SignalKind::HardGate;
            results.push(result);
        }

        let score = score(&results, gate_fired);
        let mut accepted = score >= m.threshold;
        let mut budget_exhausted = false;
        if !accepted {
            if session.harness.rejections >= m.max_iterations {
                accepted = true;
                budget_exhausted = true;
            } else {
                session.harness.rejections += 1;
            }
        }
        session.harness.iteration = iteration;
        for (name, state) in new_states {
            session.save_signal(&name, state)?;
        }
        session.save_harness()?;

        let message = message(
            &results,
            score,
            m.threshold,
            accepted,
            budget_exhausted,
            m.max_iterations,
        );
        let followup = (!accepted).then(|| self.compose_followup(&results));
        let mut metadata = json!({
            "patch": {
                "base": finish.patch.base,
                "files": finish.patch.files.len(),
                "test_files": finish.patch.test_files().count(),
                "source_files": finish.patch.source_files().count(),
            },
            "events": finish.events.len(),
            "rejections": session.harness.rejections,
            "capabilities": self.grants.effective().iter().map(|c| c.name()).collect::<Vec<_>>(),
        });
        metadata["evaluate_ms"] = json!(started.elapsed().as_secs_f64() * 1000.0);
        Ok(Verdict {
            accepted,
            score,
            threshold: m.threshold,
            message,
            followup,
            iteration,
            max_iterations: m.max_iterations,
            budget_exhausted,
            skill: info,
            session: finish.session.clone(),
            signals: results,
            warnings: std::mem::take(&mut session.warnings),
            metadata,
        })
    }
}

impl SkillCritic {
    /// The default follow-up: the fired signals' texts in manifest order,
    /// framed by the manifest's header and footer.
    fn compose_followup(&self, results: &[SignalResult]) -> String {
        let style = &self.skill.manifest.followup;
        let sep = style.separator.as_deref().unwrap_or("\n\n");
        let mut parts: Vec<&str> = Vec::new();
        if let Some(h) = &style.header {
            parts.push(h);
        }
        let texts: Vec<&str> = results
            .iter()
            .filter(|r| r.triggered)
            .filter_map(|r| r.followup_text.as_deref())
            .collect();
        if texts.is_empty() {
            parts.push(crate::critic::GENERIC_FOLLOWUP);
        }
        parts.extend(texts);
        if let Some(f) = &style.footer {
            parts.push(f);
        }
        parts.join(sep)
    }
}

fn skipped(signal: &Signal) -> SignalResult {
    SignalResult::new(
        &signal.name,
        signal.kind,
        signal.weight,
        SignalStatus::Skipped,
    )
}

/// 0 when a gate fired; else 1 minus the fired share of soft weight.
fn score(results: &[SignalResult], gate_fired: bool) -> f64 {
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

fn message(
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
            "accepted because the rejection budget ran out (max_iterations = {max_iterations}); it would have been rejected ({})",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn result(kind: SignalKind, weight: f64, triggered: bool) -> SignalResult {
        let status = if triggered {
            SignalStatus::Triggered
        } else {
            SignalStatus::Passed
        };
        SignalResult::new("s", kind, weight, status)
    }

    #[test]
    fn score_is_the_unfired_share_of_soft_weight() {
        let r = vec![
            result(SignalKind::HardGate, 0.0, false),
            result(SignalKind::Soft, 1.0, true),
            result(SignalKind::Soft, 3.0, false),
        ];
        assert_eq!(score(&r, false), 0.75);
        assert_eq!(score(&r, true), 0.0);
        assert_eq!(score(&r[..1], false), 1.0);
    }
}
