//! How a run's agent reaches its model: the run's own model proxy (its
//! recording, its token, its budgets) and the address the agent is given.

use super::context::{infra, put, Context, Failed, Job};
use crate::experiment::adapters;
use crate::experiment::adapters::confined::Reach;
use crate::experiment::db::Status;
use crate::experiment::model_proxy::{self, ModelProxy, Serving};
use std::path::Path;
use std::sync::Arc;

/// How a run's agent reaches its model: the run's proxy (see
/// [`model_proxy`]), listening in each confined turn, or on the host's
/// loopback for the whole run when turns are unconfined.
pub(super) struct ModelWay {
    pub(super) proxy: Arc<ModelProxy>,
    /// The path of the model's `base_url`, after the proxy's address.
    base_path: String,
    /// The unconfined run's listener.
    loopback: Option<Serving>,
}

impl ModelWay {
    /// The run's proxy: live against the experiment's model with the real
    /// key, answering from `ctx.replay`'s recording of the same run first.
    pub(super) fn new(
        ctx: &Context,
        job: &Job,
        workspace: &Path,
        model: &crate::experiment::file::Model,
        hooked: bool,
    ) -> Result<ModelWay, Failed> {
        let exp = ctx.experiment;
        let (origin, base_path) =
            model_proxy::split_base_url(&model.base_url).map_err(|e| infra("model", e))?;
        // Requests name the run's places; another output directory's run
        // names its own, which compare equal.
        let places = |run: &Path, out: &Path| {
            let work = out.join("work");
            let mut paths = Vec::new();
            for (path, name) in [
                (run.to_path_buf(), "$RUN"),
                (
                    work.join(workspace.file_name().unwrap_or_default()),
                    "$WORKSPACE",
                ),
                (work, "$WORK"),
                (out.to_path_buf(), "$OUT"),
            ] {
                let mut spellings = vec![path.to_string_lossy().into_owned()];
                spellings.extend(
                    path.canonicalize()
                        .map(|p| p.to_string_lossy().into_owned()),
                );
                for spelling in spellings {
                    // As Claude Code names a project after it, too.
                    let slug: String = spelling
                        .chars()
                        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                        .collect();
                    paths.push((slug, name));
                    paths.push((spelling, name));
                }
            }
            model_proxy::replay::Normalizer::new(paths)
        };
        let replay = match ctx.replay {
            None => None,
            Some(old) => {
                let old_run = crate::experiment::layout::run_dir(old, &job.key);
                let file = old_run.join(model_proxy::RECORD_FILE);
                if file.is_file() {
                    let exchanges =
                        model_proxy::exchange::read_all(&file).map_err(|e| infra("replay", e))?;
                    Some(model_proxy::replay::Recording::new(
                        exchanges,
                        places(&old_run, old),
                    ))
                } else if ctx.replay_then_live {
                    None
                } else {
                    return Err(Failed {
                        status: Status::ReplayDiverged,
                        class: "replay_diverged",
                        message: format!("{}: no recording of this run to replay", file.display()),
                    });
                }
            }
        };
        let upstream =
            (ctx.replay.is_none() || ctx.replay_then_live).then(|| model_proxy::Upstream {
                origin,
                key: model
                    .api_key_env
                    .as_ref()
                    .and_then(|v| std::env::var(v).ok()),
            });
        let record = job.dir.join(model_proxy::RECORD_FILE);
        put(&record, "").map_err(|e| infra("output", e))?;
        let proxy = ModelProxy::new(model_proxy::Settings {
            upstream,
            replay,
            record,
            price: model.price,
            max_tokens: exp.budget.tokens,
            max_cost: exp.budget.cost,
            spending: ctx.spending.clone(),
            normalizer: places(&job.dir, ctx.out),
            verdict_log: hooked.then(|| adapters::hooked::verdict_log(&job.dir)),
        })
        .map_err(|e| infra("model", format!("a token for the run: {e}")))?;
        let loopback = if ctx.confine_agents {
            None
        } else {
            Some(
                proxy
                    .serve_on_loopback()
                    .map_err(|e| infra("model", format!("the model proxy: {e}")))?,
            )
        };
        Ok(ModelWay {
            proxy,
            base_path,
            loopback,
        })
    }

    /// The base URL the agent is given.
    pub(super) fn url(&self, reach: Option<&Reach>) -> String {
        match (&self.loopback, reach) {
            (Some(serving), _) => format!("http://{}{}", serving.addr, self.base_path),
            (None, Some(reach)) => reach.model_url(&self.base_path).unwrap_or_default(),
            (None, None) => String::new(),
        }
    }
}
