//! `critic state`: list, show and reset the sessions the critic keeps for a
//! workspace (their finish counts and each signal's round state), so that
//! a skill's author can start a session over instead of wearing out its
//! budget.

use crate::cli::common::Output;
use crate::evaluate::state::{default_root, SessionRecord, StateStore};
use crate::evaluate::verdict::escape_terminal;
use std::path::PathBuf;
use std::time::Duration;

/// `critic state`'s flags.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: StateCommand,
}

/// Where the sessions are: the state directory given, else the workspace's
/// default one (what `critic check` uses without `--state-dir`).
#[derive(clap::Args)]
struct Place {
    /// The workspace whose sessions these are.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// The state directory (as given to `critic check --state-dir`).
    #[arg(long)]
    state_dir: Option<PathBuf>,
}

impl Place {
    fn store(&self) -> anyhow::Result<StateStore> {
        let root = match &self.state_dir {
            Some(dir) => dir.clone(),
            None => {
                if !self.workspace.is_dir() {
                    anyhow::bail!(
                        "--workspace {}: no such directory",
                        self.workspace.display()
                    );
                }
                default_root(&self.workspace).ok_or_else(|| {
                    anyhow::anyhow!(
                        "no state directory: set XDG_STATE_HOME or HOME, or pass --state-dir"
                    )
                })?
            }
        };
        Ok(StateStore::new(root))
    }
}

#[derive(clap::Subcommand)]
enum StateCommand {
    /// List the sessions: skill, session, finishes judged, rejections.
    List {
        #[command(flatten)]
        place: Place,
        /// Print as JSON or text.
        #[arg(long, value_enum, default_value = "text")]
        output: Output,
    },
    /// Show one session's record and the files of its signals' state.
    Show {
        /// The session id.
        session: String,
        /// Only this skill's session (default: every skill's).
        #[arg(long)]
        skill: Option<String>,
        #[command(flatten)]
        place: Place,
    },
    /// Forget a session (its count and its signals' state), or every one with --all.
    Reset {
        /// The session id.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        session: Option<String>,
        /// Every session of the workspace.
        #[arg(long)]
        all: bool,
        /// Only this skill's session (default: every skill's).
        #[arg(long)]
        skill: Option<String>,
        /// Seconds to wait for a check that holds the session.
        #[arg(long, default_value_t = 30)]
        lock_timeout: u64,
        #[command(flatten)]
        place: Place,
    },
}

/// The sessions of `store` named `session` (all when `None`) of `skill`
/// (all when `None`).
fn matching(store: &StateStore, session: Option<&str>, skill: Option<&str>) -> Vec<SessionRecord> {
    store
        .sessions()
        .into_iter()
        .filter(|r| session.is_none_or(|s| r.harness.session == s))
        .filter(|r| skill.is_none_or(|s| r.harness.skill == s))
        .collect()
}

fn shown(text: &str) -> String {
    escape_terminal(text, false).into_owned()
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.command {
        StateCommand::List { place, output } => {
            let store = place.store()?;
            let sessions = store.sessions();
            match output {
                Output::Json => {
                    let rows: Vec<_> = sessions
                        .iter()
                        .map(|r| {
                            serde_json::json!({
                                "skill": r.harness.skill,
                                "session": r.harness.session,
                                "finishes": r.harness.iteration,
                                "rejections": r.harness.rejections,
                                "session_rejections": r.harness.session_rejections,
                                "dir": r.dir,
                            })
                        })
                        .collect();
                    println!("{}", serde_json::to_string_pretty(&rows)?);
                }
                Output::Text if sessions.is_empty() => {
                    println!("no sessions in {}", store.root().display())
                }
                Output::Text => {
                    println!("sessions in {}:", store.root().display());
                    for r in &sessions {
                        println!(
                            "  {} / {}: {} finishes judged, {} rejected",
                            shown(&r.harness.skill),
                            shown(&r.harness.session),
                            r.harness.iteration,
                            r.harness.session_rejections.max(r.harness.rejections)
                        );
                    }
                }
            }
            Ok(crate::cli::common::EXIT_ACCEPT)
        }
        StateCommand::Show {
            session,
            skill,
            place,
        } => {
            let store = place.store()?;
            let found = matching(&store, Some(&session), skill.as_deref());
            if found.is_empty() {
                anyhow::bail!(
                    "no session {:?} in {} (`critic state list` shows them)",
                    shown(&session),
                    store.root().display()
                );
            }
            for r in found {
                println!("{}", serde_json::to_string_pretty(&r.harness)?);
                let mut files: Vec<String> = std::fs::read_dir(&r.dir)?
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("signal-"))
                    .collect();
                files.sort();
                println!("signal state: {}", files.join(", "));
                println!("in {}", r.dir.display());
            }
            Ok(crate::cli::common::EXIT_ACCEPT)
        }
        StateCommand::Reset {
            session,
            all,
            skill,
            lock_timeout,
            place,
        } => {
            let store = place.store()?;
            let wanted = if all { None } else { session.as_deref() };
            let found = matching(&store, wanted, skill.as_deref());
            if found.is_empty() {
                anyhow::bail!(
                    "no such session in {} (`critic state list` shows them)",
                    store.root().display()
                );
            }
            for r in found {
                store.reset(
                    &r.harness.skill,
                    &r.harness.session,
                    Duration::from_secs(lock_timeout),
                )?;
                println!(
                    "reset {} / {}",
                    shown(&r.harness.skill),
                    shown(&r.harness.session)
                );
            }
            Ok(crate::cli::common::EXIT_ACCEPT)
        }
    }
}
