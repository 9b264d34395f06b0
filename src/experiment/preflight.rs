//! The pre-flight beside the runs: before an instance's runs are made (or
//! graded), its golden patch must resolve it, else the instance is broken
//! and its runs are not made. Outcomes kept from an earlier output (see
//! `preflight_cache.rs`) are known at once; the other pre-flights run on the
//! same workers as the runs, so agents start as soon as their own instance
//! has passed, not once every instance has. A worker takes a pre-flight
//! when none is running, else a run whose instance passed, else the next
//! pre-flight; a run of an instance still being checked waits.

use crate::experiment::db::{self, Db};
use crate::experiment::{
    graders::Graders, instances::Ready, outcome::ExperimentError, outcome::Progress,
    preflight_cache,
};
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{Condvar, Mutex};

/// What became of the runs handed to [`make`].
pub(crate) struct Made {
    /// Instances whose golden patch did not resolve them.
    pub broken: Vec<db::Broken>,
    /// Runs made (the others were of broken instances).
    pub made: usize,
}

/// Where an instance's pre-flight stands.
#[derive(Clone, Copy, PartialEq)]
enum Check {
    Waiting,
    Passed,
    Broken,
}

/// The work not yet taken.
struct Queue {
    preflights: VecDeque<usize>,
    runs: VecDeque<usize>,
    checks: BTreeMap<String, Check>,
    checking: usize,
    broken: Vec<db::Broken>,
    failure: Option<ExperimentError>,
}

enum Task {
    Preflight(usize),
    Run(usize),
    Done,
}

/// Marks an instance's pre-flight over (broken) when dropped while its
/// thread unwinds, so no worker waits for it forever.
struct Unwinding<'a> {
    queue: &'a Mutex<Queue>,
    changed: &'a Condvar,
    id: &'a str,
    instance_of: &'a [&'a str],
}

impl Drop for Unwinding<'_> {
    fn drop(&mut self) {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.checking -= 1;
        let (id, instance_of) = (self.id, self.instance_of);
        q.runs.retain(|&i| instance_of[i] != id);
        q.checks.insert(id.to_string(), Check::Broken);
        drop(q);
        self.changed.notify_all();
    }
}

/// Make run `i` with `make(i)` for each `i` below `instance_of.len()` (run
/// `i` is of instance `instance_of[i]`) on as many threads as `graders`
/// has workers, each
/// instance's pre-flight before its runs; runs of broken instances are not
/// made (each is given back to `graders`). `progress` is told what will be
/// made out of `total` runs once the kept outcomes are known, and of each
/// instance found broken later.
#[allow(clippy::too_many_arguments)]
pub(crate) fn make(
    instances: &[Ready],
    instance_of: &[&str],
    graders: &Graders,
    db: &Db,
    out: &Path,
    progress: &dyn Progress,
    total: usize,
    make: impl Fn(usize) + Sync,
) -> Result<Made, ExperimentError> {
    let wanted: Vec<&Ready> = instances
        .iter()
        .filter(|r| instance_of.contains(&r.instance.id.as_str()))
        .collect();
    let cache = preflight_cache::PreflightCache::open();
    let environment = format!("{:?} unconfined={}", graders.env, graders.unconfined_runs);
    let dir = |ready: &Ready| {
        out.join("preflight")
            .join(crate::sys::path_name::slug(&ready.instance.id))
    };
    let mut queue = Queue {
        preflights: VecDeque::new(),
        runs: VecDeque::new(),
        checks: BTreeMap::new(),
        checking: 0,
        broken: Vec::new(),
        failure: None,
    };
    // Kept outcomes first: the start line counts what they rule out.
    for (w, ready) in wanted.iter().enumerate() {
        let id = ready.instance.id.clone();
        match cache.kept(ready, &environment, &dir(ready)) {
            Some(outcome) => {
                db.set_preflight(&id, outcome.as_ref())?;
                let check = if outcome.is_some() {
                    Check::Broken
                } else {
                    Check::Passed
                };
                queue.broken.extend(outcome);
                queue.checks.insert(id, check);
            }
            None => {
                queue.checks.insert(id, Check::Waiting);
                queue.preflights.push_back(w);
            }
        }
    }
    for (i, id) in instance_of.iter().enumerate() {
        if queue.checks.get(*id) == Some(&Check::Broken) {
            graders.done(id);
        } else {
            queue.runs.push_back(i);
        }
    }
    let not_made = instance_of.len() - queue.runs.len();
    progress.start(total, queue.runs.len(), not_made, queue.preflights.len());
    let queue = Mutex::new(queue);
    let changed = Condvar::new();
    let lock = || queue.lock().unwrap_or_else(|p| p.into_inner());
    let next = || {
        let mut q = lock();
        loop {
            if q.checking == 0 {
                if let Some(w) = q.preflights.pop_front() {
                    q.checking += 1;
                    return Task::Preflight(w);
                }
            }
            let runnable = q.runs.iter().position(|&i| {
                q.checks
                    .get(instance_of[i])
                    .is_none_or(|c| *c == Check::Passed)
            });
            if let Some(at) = runnable {
                return Task::Run(q.runs.remove(at).expect("a position in the queue"));
            }
            if let Some(w) = q.preflights.pop_front() {
                q.checking += 1;
                return Task::Preflight(w);
            }
            if q.runs.is_empty() {
                return Task::Done;
            }
            // Every run left waits for a pre-flight under way.
            q = changed.wait(q).unwrap_or_else(|p| p.into_inner());
        }
    };
    let work = || loop {
        match next() {
            Task::Done => break,
            Task::Run(i) => make(i),
            Task::Preflight(w) => {
                let ready = wanted[w];
                let id = ready.instance.id.as_str();
                // A pre-flight that panics still lets the workers waiting for
                // it go on (its instance counted broken); the panic then
                // reaches the caller through the scope.
                let unwinding = Unwinding {
                    queue: &queue,
                    changed: &changed,
                    id,
                    instance_of,
                };
                let outcome = cache.grade(ready, &environment, &dir(ready), || {
                    graders.preflight(ready, &dir(ready))
                });
                std::mem::forget(unwinding);
                let stored = db.set_preflight(id, outcome.as_ref());
                let mut q = lock();
                q.checking -= 1;
                if let Err(e) = stored {
                    q.failure.get_or_insert(e.into());
                }
                let check = match outcome {
                    Some(b) => {
                        let before = q.runs.len();
                        q.runs.retain(|&i| instance_of[i] != id);
                        for _ in q.runs.len()..before {
                            graders.done(id);
                        }
                        progress.broken(&b, before - q.runs.len());
                        q.broken.push(b);
                        Check::Broken
                    }
                    None => Check::Passed,
                };
                q.checks.insert(id.to_string(), check);
                drop(q);
                changed.notify_all();
            }
        }
    };
    let spawned = graders.workers.clamp(1, instance_of.len().max(1)) - 1;
    std::thread::scope(|s| {
        for _ in 0..spawned {
            s.spawn(work);
        }
        work();
    });
    let queue = queue.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Some(e) = queue.failure {
        return Err(e);
    }
    let made = instance_of.len()
        - instance_of
            .iter()
            .filter(|id| queue.checks.get(**id) == Some(&Check::Broken))
            .count();
    Ok(Made {
        broken: queue.broken,
        made,
    })
}
