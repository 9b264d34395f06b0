//! PluggableCritic: a host for verify-and-feedback critics at a coding agent's
//! finish boundary.
//!
//! A *skill* (a directory with `critic.yaml` and WebAssembly detectors) judges
//! a [`Finish`] (the agent's events and the working tree's patch) into a
//! [`Verdict`]: accept, or reject with the follow-up prompt the agent gets as
//! its next turn. The layers, top down (see `docs/architecture.md`):
//!
//! * [`frontend`]: front-ends' entry points. A [`CheckRequest`] names one check;
//!   [`frontend::oneshot`] runs it in a process that exits after it (`critic
//!   check`), [`Service`] keeps skills and runtimes warm across many (`critic
//!   serve`).
//! * [`evaluate`]: the [`Critic`] trait and [`SkillCritic`], which scores a
//!   skill's signals, counts rounds per session and composes the follow-up.
//! * [`skill`]: the manifest. [`agents`]: transcripts of each agent into
//!   normalized events. [`workspace`]: the git work tree and its patch.
//! * [`detector`]: detectors behind one call interface, WebAssembly
//!   components on a [`Runtime`]; [`host`]: what a detector may call, each
//!   capability granted or denied, and the scratch copies `run` uses.
//! * [`grading`]: whether a patch resolves a SWE-bench-style instance, as
//!   SWE-bench decides it (records, environments, test commands, log
//!   formats, status rules, scratch and container back ends).
//! * [`mpe`]: Mutation Patch Evaluation (`critic mpe`), which runs generated
//!   tests against pools of wrong fixes; [`experiment`]: arms of critics
//!   run over a dataset (`critic experiment`). Both grade through [`grading`].
//!
//! A program judges finishes through a [`Service`], which loads each skill
//! once and reloads it when it changes on disk:
//!
//! ```no_run
//! use pluggable_critic::{CheckRequest, Service};
//! use pluggable_critic::frontend::HostSettings;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let service = Service::new(HostSettings::default())?;
//! let mut request = CheckRequest::new("skills/ran-tests", "events.jsonl");
//! request.workspace = "path/to/repo".into();
//! request.session = "run-1".into();
//! let verdict = service.check(&request)?;
//! if let Some(followup) = &verdict.followup {
//!     println!("next user turn: {followup}");
//! }
//! # Ok(())
//! # }
//! ```
//!
//! A program with its own idea of a finish implements [`Critic`], or builds a
//! [`SkillCritic`] and a [`Finish`] itself.

pub mod agents;
pub mod detector;
pub mod evaluate;
pub mod experiment;
pub mod frontend;
pub mod grading;
pub mod host;
pub mod mpe;
mod report_html;
pub mod sandbox;
pub mod skill;
mod sys;
pub mod workspace;

pub use detector::wasm::Runtime;
pub use evaluate::error::Error;
pub use evaluate::scorer::SkillCritic;
pub use evaluate::verdict::Verdict;
pub use evaluate::{decide, Critic, Finish};
pub use frontend::service::Service;
pub use frontend::CheckRequest;
pub use skill::Skill;
pub use sys::bounded_read::read_regular_file;
pub use sys::interrupt::cleanup_on_signals;
